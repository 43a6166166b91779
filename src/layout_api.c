/* layout_api.c -- the public layout API: cute_op through a table of contents
 * (one row per op: name, arity, function), the op functions, the reflection
 * calls (cute_op_name / _lookup / _arity) and the crd2idx fast paths.
 *
 * Argument conventions (values are cute_value; "int" = CUTE_V_INT, "tuple" =
 * CUTE_V_TUPLE, "tiler" = a LAYOUT, INT, TUPLE, TILER or UNDER value):
 *   size/rank/depth [L or IntTuple]   cosize/shape/stride [L]   get [L|tuple, i]
 *   crd2idx [crd, shape, stride] or [crd, L]; crd int, tuple (may hold _ = 0)
 *   idx2crd [idx, shape] | [idx, shape, stride] | [idx, L]; stride int = start
 *   coalesce/filter [L] | [L, profile]   composition [A, tiler]
 *   complement [L] | [L, cotarget int|tuple]   right/left_inverse [L]
 *   *_divide, logical/zipped/tiled/flat_product [A, tiler]
 *   blocked/raked_product [A, B]: B a layout, an int n (= n:1) or a tuple of
 *     ints (= its compact column-major layout)
 *   shape_div/ceil_div [a, b]   prefix_product [a] | [a, init]
 *   slice [crd, L|IntTuple]   slice_and_offset [crd, L] -> out, out2 = offset
 *   swizzle [B, M, S, x] | [Sw, x]   composed_layout [Sw o off o L, crd]
 * Extras:
 *   make_layout_left/right [shape]: compact column-/row-major (size-1 modes
 *     get stride 0, as CuTe's compact_major).
 *   make_ordered_layout [shape, order]: CuTe compact_order; order is an int or
 *     a tuple that is a prefix of the shape's profile (order leaves may cover
 *     whole sub-shapes, which are then laid out column-major).
 *   make_identity_layout [shape]: CuTe's identity layout maps a coordinate to
 *     itself (strides are basis elements 1@0, 1@1, ...).  cute_value has no
 *     basis strides, so we represent it by the compact column-major layout over
 *     the shape, i.e. the layout that maps a coordinate to its colexicographic
 *     index; idx2crd of that index with the shape recovers the coordinate.
 *   append/prepend [L, x] | [L, x, n]: add x as a new last/first mode, or pad
 *     with copies of x up to rank n (unchanged if rank(L) == n).  For a layout
 *     L, x is a layout or an int n (= make_layout(n)); for an IntTuple, x is an
 *     int, tuple or _.
 *   group [L|tuple, b, e]: modes [b, e) become one nested mode.
 *   flatten [L|IntTuple]   select [L|tuple, i | (i, j, ...)] -> tuple of modes
 *   max_common_layout [A, B] -> layout   max_common_vector [A, B] -> int
 *   tile_to_shape [block, shape] | [block, shape, order]
 *   local_tile [L, tiler, crd] -> out = the tile of zipped_divide(L, tiler) at
 *     rest coordinate crd (crd int, or a tuple padded with _ to the rank of
 *     the rest mode), out2 = its offset.  As CuTe's inner_partition: the
 *     slice is (repeat<R0>(_), crd) with R0 = rank of the tile mode, so a
 *     rank-1 tile mode comes back wrapped as a 1-tuple.
 *   local_partition [L, thr_layout, thr_idx] -> CuTe outer_partition:
 *     zipped_divide(L, product_each(shape(thr)))(thr.get_flat_coord(idx), _...),
 *     out2 = offset.
 *   congruent/compatible/weakly_congruent [a, b] (layouts compare shapes) -> int 0/1
 */
#include "layout.h"

#include <stdio.h>
#include <string.h>

#define TRYB(x) do { if (x) return lay_cap_err(c); } while (0)

/* ---- argument helpers ------------------------------------------------------------ */

enum {
  M_INT = 1 << CUTE_V_INT, M_TUPLE = 1 << CUTE_V_TUPLE, M_LAYOUT = 1 << CUTE_V_LAYOUT,
  M_COMPOSED = 1 << CUTE_V_COMPOSED, M_SWIZZLE = 1 << CUTE_V_SWIZZLE,
  M_TILER = 1 << CUTE_V_TILER, M_UNDER = 1 << CUTE_V_UNDER
};

static const char *type_name(int t) {
  switch (t) {
  case CUTE_V_INT: return "an integer";
  case CUTE_V_TUPLE: return "a tuple";
  case CUTE_V_LAYOUT: return "a layout";
  case CUTE_V_COMPOSED: return "a composed layout";
  case CUTE_V_SWIZZLE: return "a swizzle";
  case CUTE_V_TILER: return "a tiler";
  case CUTE_V_UNDER: return "_";
  default: return "nothing";
  }
}

static int want(lctx *c, const cute_value *args, int k, int mask, const char *what) {
  if (!(mask & (1 << args[k].type)))
    return lerr(c, CUTE_E_ARG, "argument %d must be %s, got %s", k + 1, what,
                type_name(args[k].type));
  return 0;
}

/* IntTuple used as a shape: no "_", every value > 0 */
static int want_shape(lctx *c, const cute_value *args, int k) {
  TRY(want(c, args, k, M_INT | M_TUPLE, "a shape (integer or tuple)"));
  const cute_value *v = &args[k];
  for (int q = 0; q < v->n; q++) {
    if (v->node[q].kind == CUTE_N_UNDER)
      return lerr(c, CUTE_E_ARG, "argument %d: _ is not allowed in a shape", k + 1);
    if (v->node[q].kind == CUTE_N_INT && v->node[q].a <= 0)
      return lerr(c, CUTE_E_DOMAIN, "argument %d: shape %lld must be positive", k + 1,
                  (long long)v->node[q].a);
  }
  return 0;
}

/* tiler argument: a layout, _, or ints / tuples / layouts whose integer
   tiles are positive */
static int want_tiler(lctx *c, const cute_value *args, int k) {
  TRY(want(c, args, k, M_LAYOUT | M_INT | M_TUPLE | M_TILER | M_UNDER,
           "a layout, an integer, a tuple or a tiler"));
  const cute_value *v = &args[k];
  if (v->type == CUTE_V_LAYOUT) return 0;
  for (int q = 0; q < v->n; q++)
    if (v->node[q].kind == CUTE_N_INT && v->node[q].a <= 0)
      return lerr(c, CUTE_E_DOMAIN, "argument %d: tile size %lld must be positive", k + 1,
                  (long long)v->node[q].a);
  return 0;
}

static int want_ints(lctx *c, const cute_value *args, int k) {
  TRY(want(c, args, k, M_INT | M_TUPLE, "an integer or a tuple"));
  if (nd_has_under(&args[k], 0))
    return lerr(c, CUTE_E_ARG, "argument %d: _ is not allowed here", k + 1);
  return 0;
}

static void set_int(cute_value *o, int64_t x) {
  cv_init(o, CUTE_V_INT);
  nb_leaf(o, x, 0);
}

/* after emitting an IntTuple: type from the root */
static void fix_it_type(cute_value *o) {
  o->type = (o->n > 0 && o->node[0].kind == CUTE_N_TUPLE) ? CUTE_V_TUPLE : CUTE_V_INT;
  if (o->n > 0 && o->node[0].kind == CUTE_N_UNDER) o->type = CUTE_V_UNDER;
}

/* emit shape (which = 0) or stride (which = 1) of a layout as an IntTuple */
static int emit_part(lctx *c, const cute_value *L, int which, cute_value *o) {
  cv_init(o, CUTE_V_TUPLE);
  TRYB(nb_copy(o, L, 0));
  for (int k = 0; k < o->n; k++) {
    if (which && o->node[k].kind == CUTE_N_INT) o->node[k].a = o->node[k].b;
    o->node[k].b = 0;
  }
  fix_it_type(o);
  return 0;
}

/* merge shape and stride IntTuples into a layout */
static int merge_layout(lctx *c, const cute_value *sh, const cute_value *st, cute_value *o) {
  if (!nd_congruent(sh, 0, st, 0)) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "shape %s and stride %s are not congruent",
                fmt_tmp(b1, sizeof b1, sh, 0, 0), fmt_tmp(b2, sizeof b2, st, 0, 0));
  }
  cv_init(o, CUTE_V_LAYOUT);
  TRYB(nb_copy(o, sh, 0));
  for (int k = 0; k < o->n; k++)
    o->node[k].b = o->node[k].kind == CUTE_N_INT ? st->node[k].a : 0;
  return 0;
}

static int swz_ok(lctx *c, int64_t B, int64_t M, int64_t S) {
  if (!cv_swizzle_ok(B, M, S))
    return lerr(c, CUTE_E_DOMAIN, "invalid swizzle Sw<%lld,%lld,%lld>", (long long)B,
                (long long)M, (long long)S);
  return 0;
}

static int compatible(const cute_value *a, int i, const cute_value *b, int j) {
  int ta = nd_is_tuple(a, i), tb = nd_is_tuple(b, j);
  if (ta && tb) {
    if (a->node[i].a != b->node[j].a) return 0;
    for (int k = 0; k < a->node[i].a; k++)
      if (!compatible(a, nd_child(a, i, k), b, nd_child(b, j, k))) return 0;
    return 1;
  }
  if (ta) return 0;
  int64_t p = 1;
  for (int k = j; k < j + b->node[j].span; k++)
    if (b->node[k].kind == CUTE_N_INT && __builtin_mul_overflow(p, b->node[k].a, &p))
      return 0;
  return a->node[i].a == p;
}

/* append / prepend x to L (optionally up to rank n) */
static int append_modes(lctx *c, const cute_value *L, const cute_value *X, int has_n,
                        int64_t n, int front, cute_value *o) {
  int r = nd_rank(L, 0);
  int64_t target = has_n ? n : (int64_t)r + 1;
  if (target < r || target > CV_MAX)
    return lerr(c, CUTE_E_RANK, "cannot %s to rank %lld a value of rank %d",
                front ? "prepend" : "append", (long long)target, r);
  if (has_n && target == r) { TRYB(nb_copy(o, L, 0)); return 0; }
  int h;
  TRYB(nb_open(o, &h));
  if (front)
    for (int64_t k = r; k < target; k++) TRYB(nb_copy(o, X, 0));
  for (int k = 0; k < r; k++) TRYB(nb_copy(o, L, nd_child(L, 0, k)));
  if (!front)
    for (int64_t k = r; k < target; k++) TRYB(nb_copy(o, X, 0));
  nb_close(o, h);
  return 0;
}

/* ---- the op functions: one per op or family, each checks its own arguments ---------- */

/* Every op function: the op's code (for families), its arguments, the result
   and, for ops that return an offset too, out2 (may be NULL). */
typedef lay_op_fn op_fn;

static int want_layout(lctx *c, const cute_value *a, int k) {
  return want(c, a, k, M_LAYOUT, "a layout");
}

/* size / rank / depth [L or IntTuple] */
static int op_measure(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  int64_t x;
  TRY(want(c, a, 0, M_LAYOUT | M_INT | M_TUPLE | M_COMPOSED, "a layout or an IntTuple"));
  if (op == CUTE_OP_SIZE) {
    if (nd_has_under(&a[0], 0)) return lerr(c, CUTE_E_ARG, "_ has no size");
    TRY(lay_product(c, a, 0, &x));
  } else {
    x = op == CUTE_OP_RANK ? nd_rank(a, 0) : nd_depth(a, 0);
  }
  set_int(o, x);
  return 0;
}

static int op_cosize(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                     cute_value *o2) {
  int64_t x;
  TRY(want(c, a, 0, M_LAYOUT | M_COMPOSED, "a layout"));
  TRY(lay_cosize(c, a, 0, &x));
  set_int(o, x);
  return 0;
}

/* shape / stride [L] */
static int op_part(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                   cute_value *o2) {
  TRY(want(c, a, 0, M_LAYOUT | M_COMPOSED, "a layout"));
  return emit_part(c, a, op == CUTE_OP_STRIDE, o);
}

static int op_get(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                  cute_value *o2) {
  TRY(want(c, a, 0, M_LAYOUT | M_TUPLE | M_TILER | M_INT, "a layout or a tuple"));
  TRY(want(c, a, 1, M_INT, "an integer"));
  int64_t i = a[1].node[0].a;
  int r = nd_rank(a, 0);
  if (i < 0 || i >= r) {
    char b1[300];
    return lerr(c, CUTE_E_RANK, "mode %lld is out of range for %s of rank %d", (long long)i,
                fmt_tmp(b1, sizeof b1, a, 0, a[0].type == CUTE_V_LAYOUT ? 3 : 0), r);
  }
  int ci = nd_child(a, 0, (int)i);
  if (a[0].type == CUTE_V_TILER && a[0].node[ci].kind == CUTE_N_LAYOUT) {
    cv_init(o, CUTE_V_LAYOUT);
    TRYB(nb_copy(o, a, ci + 1));
    return 0;
  }
  cv_init(o, a[0].type);
  TRYB(nb_copy(o, a, ci));
  if (a[0].type != CUTE_V_LAYOUT) {
    fix_it_type(o);
    for (int k = 0; k < o->n; k++)
      if (o->node[k].kind == CUTE_N_LAYOUT) o->type = CUTE_V_TILER;
  }
  return 0;
}

/* crd2idx [crd, L] | [crd, shape, stride] */
static int op_crd2idx(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  cute_value L;
  int64_t x;
  TRY(want(c, a, 0, M_INT | M_TUPLE | M_UNDER, "a coordinate"));
  if (na == 2) {
    TRY(want_layout(c, a, 1));
    TRY(lay_crd2idx(c, a, 0, &a[1], 0, &x));
  } else {
    TRY(want_shape(c, a, 1));
    TRY(want_ints(c, a, 2));
    TRY(merge_layout(c, &a[1], &a[2], &L));
    TRY(lay_crd2idx(c, a, 0, &L, 0, &x));
  }
  set_int(o, x);
  return 0;
}

/* idx2crd [idx, L] | [idx, shape] | [idx, shape, stride]; an int stride = start */
static int op_idx2crd(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  cute_value L;
  TRY(want_ints(c, a, 0));
  if (na == 2 && a[1].type == CUTE_V_LAYOUT) {
    L = a[1];
  } else {
    TRY(want_shape(c, a, 1));
    if (na == 3) TRY(want_ints(c, a, 2));
    if (na == 3 && nd_is_tuple(&a[2], 0)) {
      TRY(merge_layout(c, &a[1], &a[2], &L));
    } else {
      cv_init(&L, CUTE_V_LAYOUT);
      TRY(lay_compact(c, &a[1], 0, 0, na == 3 ? a[2].node[0].a : 1, &L));
    }
  }
  cv_init(o, CUTE_V_TUPLE);
  TRY(lay_idx2crd(c, a, 0, &L, 0, o));
  fix_it_type(o);
  return 0;
}

/* coalesce / filter [L] | [L, profile] */
static int op_coalesce(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                       cute_value *o2) {
  TRY(want_layout(c, a, 0));
  if (na == 2) TRY(want_ints(c, a, 1));
  cv_init(o, CUTE_V_LAYOUT);
  return lay_coalesce_p(c, a, 0, na == 2 ? &a[1] : NULL, 0, op == CUTE_OP_FILTER, o);
}

static int op_composition(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                          cute_value *o2) {
  TRY(want_layout(c, a, 0));
  TRY(want_tiler(c, a, 1));
  cv_init(o, CUTE_V_LAYOUT);
  if (a[1].type == CUTE_V_LAYOUT) return lay_composition(c, a, 0, &a[1], 0, o);
  return lay_compose_tiler(c, a, 0, &a[1], 0, o);
}

static int op_complement(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                         cute_value *o2) {
  TRY(want_layout(c, a, 0));
  cv_init(o, CUTE_V_LAYOUT);
  if (na == 1) return lay_complement(c, a, 0, NULL, 0, o);
  TRY(want_shape(c, a, 1));
  return lay_complement(c, a, 0, &a[1], 0, o);
}

/* right_inverse / left_inverse [L] */
static int op_inverse(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  TRY(want_layout(c, a, 0));
  cv_init(o, CUTE_V_LAYOUT);
  return op == CUTE_OP_RIGHT_INVERSE ? lay_right_inverse(c, a, 0, o)
                                     : lay_left_inverse(c, a, 0, o);
}

/* the divide and product families pass op - first code as their LO_* kind */
_Static_assert(CUTE_OP_ZIPPED_DIVIDE - CUTE_OP_LOGICAL_DIVIDE == LO_ZIPPED &&
                   CUTE_OP_TILED_DIVIDE - CUTE_OP_LOGICAL_DIVIDE == LO_TILED &&
                   CUTE_OP_FLAT_DIVIDE - CUTE_OP_LOGICAL_DIVIDE == LO_FLAT && LO_LOGICAL == 0,
               "divide codes in LO_* order");
_Static_assert(CUTE_OP_ZIPPED_PRODUCT - CUTE_OP_LOGICAL_PRODUCT == LO_ZIPPED &&
                   CUTE_OP_TILED_PRODUCT - CUTE_OP_LOGICAL_PRODUCT == LO_TILED &&
                   CUTE_OP_FLAT_PRODUCT - CUTE_OP_LOGICAL_PRODUCT == LO_FLAT &&
                   CUTE_OP_BLOCKED_PRODUCT - CUTE_OP_LOGICAL_PRODUCT == LO_BLOCKED &&
                   CUTE_OP_RAKED_PRODUCT - CUTE_OP_LOGICAL_PRODUCT == LO_RAKED,
               "product codes in LO_* order");

/* logical / zipped / tiled / flat_divide [A, tiler] */
static int op_divide(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                     cute_value *o2) {
  TRY(want_layout(c, a, 0));
  TRY(want_tiler(c, a, 1));
  cv_init(o, CUTE_V_LAYOUT);
  return lo_divide(c, op - CUTE_OP_LOGICAL_DIVIDE, &a[0], &a[1], o);
}

/* logical / zipped / tiled / flat / blocked / raked_product [A, tiler] */
static int op_product(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  TRY(want_layout(c, a, 0));
  TRY(want_tiler(c, a, 1));
  cv_init(o, CUTE_V_LAYOUT);
  return lo_product(c, op - CUTE_OP_LOGICAL_PRODUCT, &a[0], &a[1], o);
}

/* shape_div / ceil_div [a, b] */
static int op_int_div(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  TRY(want_ints(c, a, 0));
  TRY(want_ints(c, a, 1));
  cv_init(o, CUTE_V_TUPLE);
  TRY(op == CUTE_OP_SHAPE_DIV ? it_shape_div(c, a, 0, &a[1], 0, o)
                              : it_ceil_div(c, a, 0, &a[1], 0, o));
  fix_it_type(o);
  return 0;
}

static int op_prefix_product(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                             cute_value *o2) {
  TRY(want_ints(c, a, 0));
  if (na == 2) TRY(want_ints(c, a, 1));
  cv_init(o, CUTE_V_TUPLE);
  TRY(it_prefix_product(c, a, 0, na == 2 ? &a[1] : NULL, 0, o));
  fix_it_type(o);
  return 0;
}

/* slice [crd, L|IntTuple] / slice_and_offset [crd, L] (offset in o2) */
static int op_slice(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                    cute_value *o2) {
  int64_t x;
  TRY(want(c, a, 0, M_INT | M_TUPLE | M_UNDER, "a coordinate"));
  int lay = a[1].type == CUTE_V_LAYOUT;
  if (op == CUTE_OP_SLICE_AND_OFFSET) TRY(want_layout(c, a, 1));
  else TRY(want(c, a, 1, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  cv_init(o, lay ? CUTE_V_LAYOUT : CUTE_V_TUPLE);
  TRY(lay_slice(c, a, 0, &a[1], 0, o));
  if (!lay) fix_it_type(o);
  if (op == CUTE_OP_SLICE_AND_OFFSET) {
    TRY(lay_crd2idx(c, a, 0, &a[1], 0, &x));
    if (o2) set_int(o2, x);
  }
  return 0;
}

/* swizzle [B, M, S, x] | [Sw, x] */
static int op_swizzle(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  int64_t B, M, S, x;
  if (na == 2) {
    TRY(want(c, a, 0, M_SWIZZLE | M_COMPOSED, "a swizzle"));
    TRY(want(c, a, 1, M_INT, "an integer"));
    B = a[0].sw_b, M = a[0].sw_m, S = a[0].sw_s, x = a[1].node[0].a;
  } else {
    if (na != 4) return lerr(c, CUTE_E_ARG, "swizzle takes [B, M, S, x] or [Sw, x]");
    for (int k = 0; k < 4; k++) TRY(want(c, a, k, M_INT, "an integer"));
    B = a[0].node[0].a, M = a[1].node[0].a, S = a[2].node[0].a, x = a[3].node[0].a;
  }
  TRY(swz_ok(c, B, M, S));
  set_int(o, lsw_apply((int)B, (int)M, (int)S, x));
  return 0;
}

/* composed_layout [Sw o off o L, crd] -> the swizzled index */
static int op_composed_layout(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                              cute_value *o2) {
  int64_t x;
  TRY(want(c, a, 0, M_COMPOSED | M_LAYOUT, "a composed layout"));
  TRY(want(c, a, 1, M_INT | M_TUPLE, "a coordinate"));
  TRY(lay_crd2idx(c, &a[1], 0, a, 0, &x));
  if (a[0].type == CUTE_V_COMPOSED) {
    TRY(ck_add(c, x, a[0].offset, &x));
    TRY(swz_ok(c, a[0].sw_b, a[0].sw_m, a[0].sw_s));
    x = lsw_apply(a[0].sw_b, a[0].sw_m, a[0].sw_s, x);
  }
  set_int(o, x);
  return 0;
}

/* make_layout_left / make_layout_right / make_identity_layout [shape] */
static int op_compact(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  TRY(want_shape(c, a, 0));
  cv_init(o, CUTE_V_LAYOUT);
  return lay_compact(c, a, 0, op == CUTE_OP_MAKE_LAYOUT_RIGHT, 1, o);
}

static int op_make_ordered_layout(lctx *c, int op, const cute_value *a, int na,
                                  cute_value *o, cute_value *o2) {
  TRY(want_shape(c, a, 0));
  TRY(want_ints(c, a, 1));
  cv_init(o, CUTE_V_LAYOUT);
  return lo_ordered(c, a, 0, &a[1], 0, o);
}

/* append / prepend [L, x] | [L, x, n] */
static int op_append(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                     cute_value *o2) {
  cute_value X;
  int lay = a[0].type == CUTE_V_LAYOUT;
  TRY(want(c, a, 0, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  if (lay) {
    TRY(want(c, a, 1, M_LAYOUT | M_INT, "a layout"));
    if (a[1].type == CUTE_V_INT) {
      if (a[1].node[0].a <= 0) return lerr(c, CUTE_E_DOMAIN, "shape must be positive");
      cv_init(&X, CUTE_V_LAYOUT);
      TRYB(lay_make_int(&X, a[1].node[0].a));
    } else {
      X = a[1];
    }
  } else {
    TRY(want(c, a, 1, M_INT | M_TUPLE | M_UNDER, "an IntTuple"));
    X = a[1];
  }
  if (na == 3) TRY(want(c, a, 2, M_INT, "an integer rank"));
  cv_init(o, lay ? CUTE_V_LAYOUT : CUTE_V_TUPLE);
  TRY(append_modes(c, a, &X, na == 3, na == 3 ? a[2].node[0].a : 0, op == CUTE_OP_PREPEND, o));
  if (!lay) fix_it_type(o);
  return 0;
}

/* group [L|tuple, b, e]: modes [b, e) become one nested mode */
static int op_group(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                    cute_value *o2) {
  TRY(want(c, a, 0, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  TRY(want(c, a, 1, M_INT, "an integer"));
  TRY(want(c, a, 2, M_INT, "an integer"));
  int r = nd_rank(a, 0);
  int64_t b = a[1].node[0].a, e = a[2].node[0].a;
  if (b < 0 || e < b || e > r)
    return lerr(c, CUTE_E_RANK, "mode range [%lld,%lld) is invalid for rank %d", (long long)b,
                (long long)e, r);
  int h, g;
  cv_init(o, a[0].type == CUTE_V_LAYOUT ? CUTE_V_LAYOUT : CUTE_V_TUPLE);
  TRYB(nb_open(o, &h));
  for (int k = 0; k <= r; k++) {
    if (k == b) TRYB(nb_open(o, &g)); /* b == e: an empty group at position b */
    if (k == e) nb_close(o, g);
    if (k < r) TRYB(nb_copy(o, a, nd_child(a, 0, k)));
  }
  nb_close(o, h);
  return 0;
}

static int op_flatten(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2) {
  TRY(want(c, a, 0, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  int lay = a[0].type == CUTE_V_LAYOUT;
  cv_init(o, lay ? CUTE_V_LAYOUT : a[0].type);
  if (!nd_is_tuple(a, 0)) {
    TRYB(nb_copy(o, a, 0));
    return 0;
  }
  int h;
  TRYB(nb_open(o, &h));
  for (int k = 0; k < a[0].n; k++)
    if (a[0].node[k].kind != CUTE_N_TUPLE) TRYB(nb_copy(o, a, k));
  nb_close(o, h);
  return 0;
}

static int op_select(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                     cute_value *o2) {
  TRY(want(c, a, 0, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  TRY(want_ints(c, a, 1));
  int r = nd_rank(a, 0), h;
  cv_init(o, a[0].type == CUTE_V_LAYOUT ? CUTE_V_LAYOUT : CUTE_V_TUPLE);
  TRYB(nb_open(o, &h));
  for (int k = 0; k < a[1].n; k++) {
    if (a[1].node[k].kind != CUTE_N_INT) continue;
    int64_t m = a[1].node[k].a;
    if (m < 0 || m >= r)
      return lerr(c, CUTE_E_RANK, "mode %lld is out of range for rank %d", (long long)m, r);
    TRYB(nb_copy(o, a, nd_child(a, 0, (int)m)));
  }
  nb_close(o, h);
  return 0;
}

/* max_common_layout / max_common_vector [A, B] */
static int op_max_common(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                         cute_value *o2) {
  int64_t x;
  TRY(want_layout(c, a, 0));
  TRY(want_layout(c, a, 1));
  cv_init(o, CUTE_V_LAYOUT);
  TRY(lo_max_common(c, &a[0], &a[1], op == CUTE_OP_MAX_COMMON_VECTOR, o, &x));
  if (op == CUTE_OP_MAX_COMMON_VECTOR) set_int(o, x);
  return 0;
}

static int op_tile_to_shape(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                            cute_value *o2) {
  TRY(want_layout(c, a, 0));
  TRY(want_shape(c, a, 1));
  if (na == 3) TRY(want_ints(c, a, 2));
  cv_init(o, CUTE_V_LAYOUT);
  return lo_tile_to_shape(c, &a[0], &a[1], na == 3 ? &a[2] : NULL, o);
}

static int op_local_tile(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                         cute_value *o2) {
  int64_t x;
  TRY(want_layout(c, a, 0));
  TRY(want_tiler(c, a, 1));
  TRY(want(c, a, 2, M_INT | M_TUPLE, "a coordinate"));
  TRY(lo_local_tile(c, &a[0], &a[1], &a[2], o, &x));
  if (o2) set_int(o2, x);
  return 0;
}

static int op_local_partition(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                              cute_value *o2) {
  int64_t x;
  TRY(want_layout(c, a, 0));
  TRY(want(c, a, 1, M_LAYOUT, "a thread layout"));
  TRY(want(c, a, 2, M_INT, "an integer thread index"));
  TRY(lo_local_partition(c, &a[0], &a[1], &a[2], o, &x));
  if (o2) set_int(o2, x);
  return 0;
}

/* congruent / compatible / weakly_congruent [a, b] -> 0/1 */
static int op_relation(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                       cute_value *o2) {
  int64_t x;
  TRY(want(c, a, 0, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  TRY(want(c, a, 1, M_LAYOUT | M_INT | M_TUPLE, "a layout or an IntTuple"));
  if (op == CUTE_OP_CONGRUENT) {
    x = nd_congruent(a, 0, &a[1], 0);
  } else if (op == CUTE_OP_WEAKLY_CONGRUENT) {
    x = nd_weakly_congruent(a, 0, &a[1], 0);
  } else {
    if (nd_has_under(a, 0) || nd_has_under(&a[1], 0)) return lerr(c, CUTE_E_ARG, "_ has no size");
    x = compatible(a, 0, &a[1], 0);
  }
  set_int(o, x);
  return 0;
}

/* ---- the table of contents --------------------------------------------------------------- */

/* X(name, code, min args, max args, function) -- one row per op */
#define CUTE_OP_LIST(X)                                                             \
  X(size, CUTE_OP_SIZE, 1, 1, op_measure)                                           \
  X(cosize, CUTE_OP_COSIZE, 1, 1, op_cosize)                                        \
  X(rank, CUTE_OP_RANK, 1, 1, op_measure)                                           \
  X(depth, CUTE_OP_DEPTH, 1, 1, op_measure)                                         \
  X(shape, CUTE_OP_SHAPE, 1, 1, op_part)                                            \
  X(stride, CUTE_OP_STRIDE, 1, 1, op_part)                                          \
  X(get, CUTE_OP_GET, 2, 2, op_get)                                                 \
  X(crd2idx, CUTE_OP_CRD2IDX, 2, 3, op_crd2idx)                                     \
  X(idx2crd, CUTE_OP_IDX2CRD, 2, 3, op_idx2crd)                                     \
  X(coalesce, CUTE_OP_COALESCE, 1, 2, op_coalesce)                                  \
  X(filter, CUTE_OP_FILTER, 1, 2, op_coalesce)                                      \
  X(composition, CUTE_OP_COMPOSITION, 2, 2, op_composition)                         \
  X(complement, CUTE_OP_COMPLEMENT, 1, 2, op_complement)                            \
  X(right_inverse, CUTE_OP_RIGHT_INVERSE, 1, 1, op_inverse)                         \
  X(left_inverse, CUTE_OP_LEFT_INVERSE, 1, 1, op_inverse)                           \
  X(logical_divide, CUTE_OP_LOGICAL_DIVIDE, 2, 2, op_divide)                        \
  X(zipped_divide, CUTE_OP_ZIPPED_DIVIDE, 2, 2, op_divide)                          \
  X(tiled_divide, CUTE_OP_TILED_DIVIDE, 2, 2, op_divide)                            \
  X(flat_divide, CUTE_OP_FLAT_DIVIDE, 2, 2, op_divide)                              \
  X(logical_product, CUTE_OP_LOGICAL_PRODUCT, 2, 2, op_product)                     \
  X(zipped_product, CUTE_OP_ZIPPED_PRODUCT, 2, 2, op_product)                       \
  X(tiled_product, CUTE_OP_TILED_PRODUCT, 2, 2, op_product)                         \
  X(flat_product, CUTE_OP_FLAT_PRODUCT, 2, 2, op_product)                           \
  X(blocked_product, CUTE_OP_BLOCKED_PRODUCT, 2, 2, op_product)                     \
  X(raked_product, CUTE_OP_RAKED_PRODUCT, 2, 2, op_product)                         \
  X(shape_div, CUTE_OP_SHAPE_DIV, 2, 2, op_int_div)                                 \
  X(ceil_div, CUTE_OP_CEIL_DIV, 2, 2, op_int_div)                                   \
  X(prefix_product, CUTE_OP_PREFIX_PRODUCT, 1, 2, op_prefix_product)                \
  X(slice, CUTE_OP_SLICE, 2, 2, op_slice)                                           \
  X(slice_and_offset, CUTE_OP_SLICE_AND_OFFSET, 2, 2, op_slice)                     \
  X(swizzle, CUTE_OP_SWIZZLE, 2, 4, op_swizzle)                                     \
  X(composed_layout, CUTE_OP_COMPOSED_LAYOUT, 2, 2, op_composed_layout)             \
  X(make_layout_left, CUTE_OP_MAKE_LAYOUT_LEFT, 1, 1, op_compact)                   \
  X(make_layout_right, CUTE_OP_MAKE_LAYOUT_RIGHT, 1, 1, op_compact)                 \
  X(make_ordered_layout, CUTE_OP_MAKE_ORDERED_LAYOUT, 2, 2, op_make_ordered_layout) \
  X(make_identity_layout, CUTE_OP_MAKE_IDENTITY_LAYOUT, 1, 1, op_compact)           \
  X(append, CUTE_OP_APPEND, 2, 3, op_append)                                        \
  X(prepend, CUTE_OP_PREPEND, 2, 3, op_append)                                      \
  X(group, CUTE_OP_GROUP, 3, 3, op_group)                                           \
  X(flatten, CUTE_OP_FLATTEN, 1, 1, op_flatten)                                     \
  X(select, CUTE_OP_SELECT, 2, 2, op_select)                                        \
  X(max_common_layout, CUTE_OP_MAX_COMMON_LAYOUT, 2, 2, op_max_common)              \
  X(max_common_vector, CUTE_OP_MAX_COMMON_VECTOR, 2, 2, op_max_common)              \
  X(tile_to_shape, CUTE_OP_TILE_TO_SHAPE, 2, 3, op_tile_to_shape)                   \
  X(local_tile, CUTE_OP_LOCAL_TILE, 3, 3, op_local_tile)                            \
  X(local_partition, CUTE_OP_LOCAL_PARTITION, 3, 3, op_local_partition)             \
  X(congruent, CUTE_OP_CONGRUENT, 2, 2, op_relation)                                \
  X(compatible, CUTE_OP_COMPATIBLE, 2, 2, op_relation)                              \
  X(weakly_congruent, CUTE_OP_WEAKLY_CONGRUENT, 2, 2, op_relation)

typedef struct op_info {
  const char *name;
  int min, max;
  op_fn *fn;
} op_info;

/* Indexed by code.  Every public code has exactly one row: the row count equals
   CUTE_OP_COUNT_, and a code listed twice is an initializer override, which
   -Werror (-Woverride-init, in -Wextra) rejects. */
static const op_info op_table[CUTE_OP_COUNT_] = {
#define X(n, code, mn, mx, f) [code] = {#n, mn, mx, f},
    CUTE_OP_LIST(X)
#undef X
};
#define X(n, code, mn, mx, f) +1
_Static_assert(0 CUTE_OP_LIST(X) == CUTE_OP_COUNT_, "one CUTE_OP_LIST row per CUTE_OP_* code");
#undef X
#define X(n, code, mn, mx, f) _Static_assert(mn >= 1 && mn <= mx && mx <= 4, #n ": arity 1..4");
CUTE_OP_LIST(X)
#undef X

static const op_info *op_find(int op) {
  return op >= 0 && op < CUTE_OP_COUNT_ && op_table[op].fn ? &op_table[op] : NULL;
}

const char *cute_op_name(int op) {
  const op_info *p = op_find(op);
  return p ? p->name : NULL;
}

int cute_op_lookup(const char *name) {
  if (!name) return -1;
  for (int k = 0; k < CUTE_OP_COUNT_; k++)
    if (op_table[k].name && strcmp(op_table[k].name, name) == 0) return k;
  return -1;
}

int cute_op_arity(int op, int *min_args, int *max_args) {
  const op_info *p = op_find(op);
  if (!p) return CUTE_E_ARG;
  if (min_args) *min_args = p->min;
  if (max_args) *max_args = p->max;
  return 0;
}

int cute_op(int op, const cute_value *args, int nargs, cute_value *out, cute_value *out2,
            cute_err *err) {
  const op_info *info = op_find(op);
  if (err) { err->code = 0; err->msg[0] = 0; }
  if (!info) return cute_err_setf(err, CUTE_E_ARG, "cute_op: unknown op %d", op);
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "%s: NULL output", info->name);
  cv_init(out, CUTE_V_NONE);
  if (out2) cv_init(out2, CUTE_V_NONE);
  if (nargs < info->min || nargs > info->max)
    return cute_err_setf(err, CUTE_E_ARG, "%s: takes %d..%d arguments, got %d", info->name,
                         info->min, info->max, nargs);
  if (!args) return cute_err_setf(err, CUTE_E_ARG, "%s: NULL arguments", info->name);
  uintptr_t lo = (uintptr_t)args, hi = (uintptr_t)(args + nargs);
  if (out == out2 || ((uintptr_t)out >= lo && (uintptr_t)out < hi) ||
      (out2 && (uintptr_t)out2 >= lo && (uintptr_t)out2 < hi))
    return cute_err_setf(err, CUTE_E_ARG, "%s: outputs may not alias the arguments", info->name);
  for (int k = 0; k < nargs; k++) {
    if (cv_check(&args[k], NULL, NULL) == 0) continue;
    char who[64];
    snprintf(who, sizeof who, "%s: argument %d", info->name, k + 1);
    return cv_check(&args[k], err, who);
  }
  lctx C = {err, info->name, args, nargs};
  int rc = lsw_involved(op, args, nargs) ? lsw_op(&C, op, info->fn, args, nargs, out, out2)
                                         : info->fn(&C, op, args, nargs, out, out2);
  if (rc) {
    cv_init(out, CUTE_V_NONE);
    if (out2) cv_init(out2, CUTE_V_NONE);
  }
  return rc;
}

/* ---- fast paths ---------------------------------------------------------------------------- */

/* bounded walk: integer coordinate x into subtree i (checks spans as it goes) */
static int fast_int(const cute_value *L, int i, int end, int64_t x, int64_t *out, int depth) {
  if (i < 0 || i >= end || depth > CV_MAX) return 1;
  const cute_node *nd = &L->node[i];
  if (nd->span < 1 || nd->span > end - i) return 1;
  if (nd->kind == CUTE_N_INT) return __builtin_mul_overflow(x, nd->b, out) ? 2 : 0;
  if (nd->kind != CUTE_N_TUPLE || nd->a < 0) return 1;
  int64_t acc = 0, r;
  int stop = i + nd->span, j = i + 1;
  for (int64_t k = 0; k < nd->a; k++) {
    if (j >= stop) return 1;
    if (k == nd->a - 1) {
      int e = fast_int(L, j, stop, x, &r, depth + 1);
      if (e) return e;
    } else {
      int64_t p = 1;
      int sp = L->node[j].span;
      if (sp < 1 || sp > stop - j) return 1;
      if (sp == 1 && L->node[j].kind != CUTE_N_INT && L->node[j].kind != CUTE_N_TUPLE)
        return 1;
      for (int q = j; q < j + sp; q++)
        if (L->node[q].kind == CUTE_N_INT) {
          if (L->node[q].a <= 0) return 3;
          if (__builtin_mul_overflow(p, L->node[q].a, &p)) return 2;
        }
      int64_t q, m;
      if (x >= 0 && (p & (p - 1)) == 0) { /* power of two: shifts */
        int sh = __builtin_ctzll((unsigned long long)p);
        q = x >> sh;
        m = x & (p - 1);
      } else {
        q = x / p;
        m = x % p;
      }
      const cute_node *ch = &L->node[j];
      if (ch->kind == CUTE_N_INT) {
        if (__builtin_mul_overflow(m, ch->b, &r)) return 2;
      } else {
        int e = fast_int(L, j, stop, m, &r, depth + 1);
        if (e) return e;
      }
      x = q;
    }
    if (__builtin_add_overflow(acc, r, &acc)) return 2;
    j += L->node[j].span;
  }
  *out = acc;
  return 0;
}

int cute_layout_crd2idx(const cute_value *L, const int64_t *crd, int n, int64_t *out,
                        cute_err *err) {
  if (!L || !out || (n > 0 && !crd))
    return cute_err_setf(err, CUTE_E_ARG, "crd2idx: NULL argument");
  if ((L->type != CUTE_V_LAYOUT && L->type != CUTE_V_COMPOSED) || L->n < 1 ||
      L->n > CV_MAX || L->node[0].span != L->n)
    return cute_err_setf(err, CUTE_E_ARG, "crd2idx: argument is not a valid layout");
  const cute_node *root = &L->node[0];
  int rank = root->kind == CUTE_N_TUPLE ? (int)root->a : 1, e = 0;
  int64_t acc = 0;
  if (n == 1 && (root->kind != CUTE_N_TUPLE || rank != 1)) {
    e = fast_int(L, 0, L->n, crd[0], &acc, 0);
  } else if (n == rank && root->kind == CUTE_N_TUPLE) {
    int j = 1, end = L->n;
    for (int k = 0; k < n && !e; k++) {
      int64_t r;
      if (j >= end) { e = 1; break; }
      const cute_node *nd = &L->node[j];
      if (nd->kind == CUTE_N_INT && nd->span == 1) {
        if (__builtin_mul_overflow(crd[k], nd->b, &r)) e = 2;
        j++;
      } else {
        e = fast_int(L, j, end, crd[k], &r, 0);
        if (!e) j += nd->span;
      }
      if (!e && __builtin_add_overflow(acc, r, &acc)) e = 2;
    }
  } else {
    return cute_err_setf(err, CUTE_E_RANK,
                      "crd2idx: %d coordinates for a layout of rank %d", n, rank);
  }
  if (e == 1) return cute_err_setf(err, CUTE_E_ARG, "crd2idx: malformed layout");
  if (e == 2) return cute_err_setf(err, CUTE_E_OVERFLOW, "crd2idx: 64-bit overflow");
  if (e == 3) return cute_err_setf(err, CUTE_E_DOMAIN, "crd2idx: zero or negative shape");
  if (L->type == CUTE_V_COMPOSED) {
    int B = L->sw_b, M = L->sw_m, S = L->sw_s;
    if (!cv_swizzle_ok(B, M, S))
      return cute_err_setf(err, CUTE_E_DOMAIN, "crd2idx: invalid swizzle");
    if (__builtin_add_overflow(acc, L->offset, &acc))
      return cute_err_setf(err, CUTE_E_OVERFLOW, "crd2idx: 64-bit overflow");
    acc = lsw_apply(B, M, S, acc);
  }
  *out = acc;
  return 0;
}

int cute_layout_leaves(const cute_value *L, int64_t *shape, int64_t *stride, int cap) {
  if (!L || L->n < 1 || L->n > CV_MAX || cap < 0) return -1;
  if (L->type != CUTE_V_LAYOUT && L->type != CUTE_V_COMPOSED) return -1;
  int rc = cv_check(L, NULL, NULL); /* a zero shape is still a well-formed tree */
  if (rc && rc != CUTE_E_DOMAIN) return -1;
  int cnt = 0;
  for (int k = 0; k < L->n; k++) {
    if (L->node[k].kind != CUTE_N_INT) continue;
    if (cnt >= cap) return -1;
    if (shape) shape[cnt] = L->node[k].a;
    if (stride) stride[cnt] = L->node[k].b;
    cnt++;
  }
  return cnt;
}
