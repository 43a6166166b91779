/* layout_swizzle.c -- swizzles and composed layouts (Sw<B,M,S> o offset o L)
 * through the layout algebra, with CuTe C++ semantics (cute/layout_composed.hpp,
 * cute/swizzle_layout.hpp).
 *
 * cute_op (layout_api.c) hands every call with a SWIZZLE or COMPOSED argument to
 * lsw_op.  A composed layout is a function idx = Sw(offset + L(crd)); every op
 * that reshapes the domain (the coordinate side) acts on the inner layout L and
 * keeps the swizzle and offset outside:
 *   get, coalesce, filter, composition (composed o tiler), the divides, the
 *   products, tile_to_shape, append/prepend/group/flatten/select
 *     -> Sw o offset o op(L, ...)
 *   size, rank, depth, shape, cosize, complement (CuTe: of the inner layout),
 *   congruent / compatible / weakly_congruent -> op on L
 *   slice, slice_and_offset, local_tile, local_partition -> the slice's offset
 *     is folded into the composed offset (so the swizzle still sees the
 *     absolute index) and the returned offset is 0
 *   crd2idx [crd, composed] -> Sw(offset + L(crd))
 *   max_common_vector / max_common_layout -> the inner result, cut to 2^M
 *     elements (a vector never crosses a swizzle row) unless both operands
 *     carry the same swizzle
 *   composition(Sw, L) -> Sw o 0 o L; right/left_inverse(Sw) -> Sw (a swizzle
 *     is an involution)
 * The rest is a clear error naming the op and the value: stride and idx2crd
 * (CuTe has none for a composed layout), the inverses of a composed layout and
 * a layout composed after a swizzle (CuTe's answers L' o Sw put a layout after
 * the swizzle, which Sw o off o L cannot hold), a composed second operand of a
 * divide or product.
 */
#include "layout.h"

#include <string.h>

int64_t lsw_apply(int B, int M, int S, int64_t x) {
  if (B == 0 || S == 0) return x;
  uint64_t bit = ((uint64_t)1 << B) - 1;
  uint64_t yyy = bit << (M + (S > 0 ? S : 0));
  uint64_t ux = (uint64_t)x, t = ux & yyy;
  t = S > 0 ? t >> S : t << (-S);
  return (int64_t)(ux ^ t);
}

static int is_sw(const cute_value *v) {
  return v->type == CUTE_V_COMPOSED || v->type == CUTE_V_SWIZZLE;
}

int lsw_involved(int op, const cute_value *a, int na) {
  if (op == CUTE_OP_SWIZZLE || op == CUTE_OP_COMPOSED_LAYOUT) return 0;
  for (int k = 0; k < na; k++)
    if (is_sw(&a[k])) return 1;
  return 0;
}

static const char *kind_name(const cute_value *v) {
  return v->type == CUTE_V_SWIZZLE ? "a swizzle" : "a composed layout";
}

/* the inner layout L of Sw o off o L */
static void inner_of(const cute_value *v, cute_value *o) {
  memcpy(o, v, sizeof *o);
  o->type = CUTE_V_LAYOUT;
  o->sw_b = o->sw_m = o->sw_s = 0;
  o->offset = 0;
}

/* o (a LAYOUT) becomes Sw o off o o, with Sw from `from` */
static int rewrap(const cute_value *from, int64_t off, cute_value *o) {
  if (o->type != CUTE_V_LAYOUT) return 0;
  o->type = CUTE_V_COMPOSED;
  o->sw_b = from->sw_b;
  o->sw_m = from->sw_m;
  o->sw_s = from->sw_s;
  o->offset = off;
  return 0;
}

static int no_swizzle_here(lctx *c, const cute_value *a, int k, const char *role) {
  return lerr(c, CUTE_E_ARG, "argument %d is %s; %s", k + 1, kind_name(&a[k]), role);
}

/* The argument index of the layout an op acts on. */
static int layout_arg(int op) {
  switch (op) {
  case CUTE_OP_CRD2IDX:
  case CUTE_OP_IDX2CRD:
  case CUTE_OP_SLICE:
  case CUTE_OP_SLICE_AND_OFFSET:
    return 1;
  default:
    return 0;
  }
}

int lsw_op(lctx *c, int op, lay_op_fn *fn, const cute_value *a, int na, cute_value *o,
           cute_value *o2) {
  cute_value b[4];
  int li = layout_arg(op);
  const cute_value *S = &a[li];

  /* ---- the swizzle as a function on its own ---- */
  if (op == CUTE_OP_RIGHT_INVERSE || op == CUTE_OP_LEFT_INVERSE) {
    if (a[0].type == CUTE_V_SWIZZLE) {
      memcpy(o, &a[0], sizeof *o);
      return 0;
    }
    return lerr(c, CUTE_E_ARG,
                "the inverse of a composed layout Sw o off o L is L' o Sw (a layout after "
                "a swizzle), which a composed layout cannot hold; invert the inner layout "
                "and apply the swizzle (its own inverse) first");
  }
  if (op == CUTE_OP_COMPOSITION && a[0].type == CUTE_V_SWIZZLE) {
    if (a[1].type == CUTE_V_LAYOUT) {
      memcpy(o, &a[1], sizeof *o);
      return rewrap(&a[0], 0, o);
    }
    return lerr(c, CUTE_E_ARG,
                "a swizzle composes with a layout (Sw o L), got %s as argument 2",
                is_sw(&a[1]) ? kind_name(&a[1]) : "a tiler");
  }
  if (op == CUTE_OP_COMPOSITION && a[1].type != CUTE_V_LAYOUT && is_sw(&a[1]))
    return no_swizzle_here(c, a, 1,
                           "composition(A, Sw o ...) puts a layout after a swizzle, which a "
                           "composed layout (Sw o off o L) cannot hold");

  /* ---- every other op acts on the inner layout of argument li ---- */
  for (int k = 0; k < na; k++) {
    if (!is_sw(&a[k])) continue;
    if (a[k].type == CUTE_V_SWIZZLE)
      return no_swizzle_here(c, a, k,
                             "a swizzle has no shape; make a composed layout with "
                             "cute.make_composed_layout(sw, offset, layout)");
    int relation = op == CUTE_OP_CONGRUENT || op == CUTE_OP_COMPATIBLE ||
                   op == CUTE_OP_WEAKLY_CONGRUENT || op == CUTE_OP_MAX_COMMON_VECTOR ||
                   op == CUTE_OP_MAX_COMMON_LAYOUT;
    int product = op >= CUTE_OP_LOGICAL_PRODUCT && op <= CUTE_OP_RAKED_PRODUCT;
    if (k != li && product)
      return no_swizzle_here(c, a, k,
                             "a product with a swizzled tiler (CuTe re-derives a swizzle for it) is "
                             "not supported: take the product with the inner layout "
                             "(cute.inner_layout) and swizzle the result");
    if (k != li && !relation)
      return no_swizzle_here(c, a, k, "only the layout operand of this op may be swizzled");
  }
  for (int k = 0; k < na && k < 4; k++) {
    if (a[k].type == CUTE_V_COMPOSED) inner_of(&a[k], &b[k]);
    else memcpy(&b[k], &a[k], sizeof b[k]);
  }

  switch (op) {
  /* the domain side: same swizzle and offset around the new inner layout */
  case CUTE_OP_GET:
  case CUTE_OP_COALESCE:
  case CUTE_OP_FILTER:
  case CUTE_OP_COMPOSITION:
  case CUTE_OP_LOGICAL_DIVIDE:
  case CUTE_OP_ZIPPED_DIVIDE:
  case CUTE_OP_TILED_DIVIDE:
  case CUTE_OP_FLAT_DIVIDE:
  case CUTE_OP_LOGICAL_PRODUCT:
  case CUTE_OP_ZIPPED_PRODUCT:
  case CUTE_OP_TILED_PRODUCT:
  case CUTE_OP_FLAT_PRODUCT:
  case CUTE_OP_BLOCKED_PRODUCT:
  case CUTE_OP_RAKED_PRODUCT:
  case CUTE_OP_TILE_TO_SHAPE:
  case CUTE_OP_APPEND:
  case CUTE_OP_PREPEND:
  case CUTE_OP_GROUP:
  case CUTE_OP_FLATTEN:
  case CUTE_OP_SELECT:
    TRY(fn(c, op, b, na, o, o2));
    return rewrap(S, S->offset, o);

  /* queries of the inner layout */
  case CUTE_OP_SIZE:
  case CUTE_OP_RANK:
  case CUTE_OP_DEPTH:
  case CUTE_OP_SHAPE:
  case CUTE_OP_COSIZE:
  case CUTE_OP_COMPLEMENT:
  case CUTE_OP_CONGRUENT:
  case CUTE_OP_COMPATIBLE:
  case CUTE_OP_WEAKLY_CONGRUENT:
    return fn(c, op, b, na, o, o2);

  /* the slice offset goes into the composed offset (slice: CuTe's slice is the
     layout of slice_and_offset) */
  case CUTE_OP_SLICE: {
    cute_value off;
    int64_t x;
    TRY(fn(c, CUTE_OP_SLICE_AND_OFFSET, b, na, o, &off));
    TRY(ck_add(c, S->offset, off.node[0].a, &x));
    return rewrap(S, x, o);
  }
  case CUTE_OP_SLICE_AND_OFFSET:
  case CUTE_OP_LOCAL_TILE:
  case CUTE_OP_LOCAL_PARTITION: {
    cute_value off;
    int64_t x;
    TRY(fn(c, op, b, na, o, &off));
    TRY(ck_add(c, S->offset, off.node[0].a, &x));
    TRY(rewrap(S, x, o));
    if (o2) {
      cv_init(o2, CUTE_V_INT);
      if (nb_leaf(o2, 0, 0)) return lay_cap_err(c);
    }
    return 0;
  }

  case CUTE_OP_CRD2IDX: {
    if (na != 2)
      return lerr(c, CUTE_E_ARG, "crd2idx takes (crd, composed layout) for a composed layout");
    TRY(fn(c, op, b, na, o, o2));
    int64_t x;
    TRY(ck_add(c, o->node[0].a, S->offset, &x));
    o->node[0].a = lsw_apply(S->sw_b, S->sw_m, S->sw_s, x);
    return 0;
  }

  case CUTE_OP_MAX_COMMON_VECTOR:
  case CUTE_OP_MAX_COMMON_LAYOUT: {
    /* CuTe: the inner layouts' answer, cut to 2^M of each swizzle (not when
       both operands have the same swizzle: it cancels); the offset is assumed
       to be a multiple of 2^M */
    cute_value n, full, tile;
    TRY(fn(c, CUTE_OP_MAX_COMMON_VECTOR, b, na, &n, o2));
    int64_t v = n.node[0].a, base = INT64_MAX;
    int same = a[0].type == CUTE_V_COMPOSED && a[1].type == CUTE_V_COMPOSED &&
               a[0].sw_b == a[1].sw_b && a[0].sw_m == a[1].sw_m && a[0].sw_s == a[1].sw_s;
    for (int k = 0; k < 2 && !same; k++)
      if (a[k].type == CUTE_V_COMPOSED && ((int64_t)1 << a[k].sw_m) < base)
        base = (int64_t)1 << a[k].sw_m;
    if (base < v) v = base;
    if (op == CUTE_OP_MAX_COMMON_VECTOR) {
      cv_init(o, CUTE_V_INT);
      if (nb_leaf(o, v, 0)) return lay_cap_err(c);
      return 0;
    }
    TRY(fn(c, CUTE_OP_MAX_COMMON_LAYOUT, b, na, &full, o2));
    if (v >= n.node[0].a) {
      memcpy(o, &full, sizeof *o);
      return 0;
    }
    /* the common layout truncated to its first v elements */
    cv_init(&tile, CUTE_V_LAYOUT);
    if (lay_make_int(&tile, v)) return lay_cap_err(c);
    cv_init(o, CUTE_V_LAYOUT);
    return lay_composition(c, &full, 0, &tile, 0, o);
  }

  default:
    return lerr(c, CUTE_E_ARG,
                "not defined for %s (CuTe has no %s of a swizzled layout)",
                kind_name(S), c->op);
  }
}
