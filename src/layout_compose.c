/* layout_compose.c -- divides, products and the composite extras (tile_to_shape,
 * local_tile, local_partition, max_common_*), following CuTe C++ layout.hpp.
 */
#include "layout.h"

#include <string.h>

#define TRYB(x) do { if (x) return lay_cap_err(c); } while (0)

/* ---- logical divide / product on one layout tiler ------------------------------ */

/* logical_divide(A, B) = A o (B, complement(B, shape(coalesce(A)))) */
static int ld_layout(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                     cute_value *o) {
  flat C;
  TRY(lay_coalesce(c, a, ai, &C));
  cute_value ct, T;
  cv_init(&ct, CUTE_V_TUPLE);
  TRY(fl_emit(c, &ct, &C)); /* strides are ignored: only shapes are read */
  cv_init(&T, CUTE_V_LAYOUT);
  int t;
  TRYB(nb_open(&T, &t));
  TRYB(nb_copy(&T, b, bi));
  TRY(lay_complement(c, b, bi, &ct, 0, &T));
  nb_close(&T, t);
  return lay_composition(c, a, ai, &T, 0, o);
}

/* logical_product(A, B) = (A, complement(A, size(A)*cosize(B)) o B) */
static int lp_layout(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                     cute_value *o) {
  int64_t sz, cs, n;
  TRY(lay_product(c, a, ai, &sz));
  TRY(lay_cosize(c, b, bi, &cs));
  TRY(ck_mul(c, sz, cs, &n));
  cute_value T;
  cv_init(&T, CUTE_V_LAYOUT);
  TRY(lay_complement_n(c, a, ai, n, &T));
  int t;
  TRYB(nb_open(o, &t));
  TRYB(nb_copy(o, a, ai));
  TRY(lay_composition(c, &T, 0, b, bi, o));
  nb_close(o, t);
  return 0;
}

typedef int (*lay_fn)(lctx *, const cute_value *, int, const cute_value *, int,
                      cute_value *);

/* by-mode application over a tiler element (LAYOUT / INT / UNDER / TUPLE) */
static int by_mode(lctx *c, lay_fn f, const cute_value *a, int ai, const cute_value *t,
                   int ti, cute_value *o) {
  const cute_node *nd = &t->node[ti];
  switch (nd->kind) {
  case CUTE_N_LAYOUT:
    return f(c, a, ai, t, ti + 1, o);
  case CUTE_N_UNDER:
    TRYB(nb_copy(o, a, ai));
    return 0;
  case CUTE_N_INT: {
    cute_value L;
    cv_init(&L, CUTE_V_LAYOUT);
    TRYB(lay_make_int(&L, nd->a));
    return f(c, a, ai, &L, 0, o);
  }
  default: {
    int tr = (int)nd->a, ar = nd_rank(a, ai);
    TRY(lay_tiler_rank_check(c, a, ai, t, ti));
    int h;
    TRYB(nb_open(o, &h));
    for (int k = 0; k < ar; k++) {
      int ak = nd_child(a, ai, k);
      if (k < tr) TRY(by_mode(c, f, a, ak, t, nd_child(t, ti, k), o));
      else TRYB(nb_copy(o, a, ak));
    }
    nb_close(o, h);
    return 0;
  }
  }
}

static int apply_tiler(lctx *c, lay_fn f, const cute_value *A, const cute_value *B,
                       cute_value *o) {
  switch (B->type) {
  case CUTE_V_LAYOUT:
    return f(c, A, 0, B, 0, o);
  case CUTE_V_INT:
  case CUTE_V_TUPLE:
  case CUTE_V_TILER:
  case CUTE_V_UNDER:
    return by_mode(c, f, A, 0, B, 0, o);
  default:
    return lerr(c, CUTE_E_ARG, "tiler must be a layout, an integer, a tuple or _");
  }
}

/* ---- zip / unzip ----------------------------------------------------------------- */

static int not_pair(lctx *c, const cute_value *r, int ri) {
  char b1[300];
  return lerr(c, CUTE_E_RANK, "mode %s is not a (tile,rest) pair (tiler _ cannot be zipped)",
              fmt_tmp(b1, sizeof b1, r, ri, 3));
}

static int zip2_by(lctx *c, const cute_value *r, int ri, const cute_value *g, int gi,
                   cute_value *o) {
  if (!g || g->node[gi].kind != CUTE_N_TUPLE) {
    if (!nd_is_tuple(r, ri) || r->node[ri].a != 2) return not_pair(c, r, ri);
    TRYB(nb_copy(o, r, ri));
    return 0;
  }
  int GR = (int)g->node[gi].a, TR = nd_rank(r, ri);
  if (!nd_is_tuple(r, ri) || TR < GR) return not_pair(c, r, ri);
  cute_value S;
  cv_init(&S, CUTE_V_LAYOUT);
  int h, h0, h1, h2;
  TRYB(nb_open(&S, &h));
  for (int k = 0; k < GR; k++)
    TRY(zip2_by(c, r, nd_child(r, ri, k), g, nd_child(g, gi, k), &S));
  nb_close(&S, h);
  TRYB(nb_open(o, &h0));
  TRYB(nb_open(o, &h1));
  for (int k = 0; k < GR; k++) TRYB(nb_copy(o, &S, nd_child(&S, nd_child(&S, 0, k), 0)));
  nb_close(o, h1);
  TRYB(nb_open(o, &h2));
  for (int k = 0; k < GR; k++) TRYB(nb_copy(o, &S, nd_child(&S, nd_child(&S, 0, k), 1)));
  for (int k = GR; k < TR; k++) TRYB(nb_copy(o, r, nd_child(r, ri, k)));
  nb_close(o, h2);
  nb_close(o, h0);
  return 0;
}

/* unpack a rank-2 result: tiled (unpack mode 1) or flat (unpack both) */
static int unpack(lctx *c, const cute_value *Z, int both, cute_value *o) {
  int m0 = nd_child(Z, 0, 0), m1 = nd_child(Z, 0, 1);
  if (!both && nd_rank(Z, m1) == 1) { TRYB(nb_copy(o, Z, 0)); return 0; }
  int h;
  TRYB(nb_open(o, &h));
  int ms[2] = {m0, m1};
  for (int q = 0; q < 2; q++) {
    int m = ms[q];
    if ((q == 0 && !both) || nd_rank(Z, m) == 1) TRYB(nb_copy(o, Z, m));
    else
      for (int k = 0; k < nd_rank(Z, m); k++) TRYB(nb_copy(o, Z, nd_child(Z, m, k)));
  }
  nb_close(o, h);
  return 0;
}

static int zipped_kinds(lctx *c, int kind, const cute_value *Lv, const cute_value *B,
                        cute_value *o) {
  const cute_value *g = (B->type == CUTE_V_TUPLE || B->type == CUTE_V_TILER) ? B : NULL;
  if (kind == LO_ZIPPED) return zip2_by(c, Lv, 0, g, 0, o);
  cute_value Z;
  cv_init(&Z, CUTE_V_LAYOUT);
  TRY(zip2_by(c, Lv, 0, g, 0, &Z));
  return unpack(c, &Z, kind == LO_FLAT, o);
}

int lo_divide(lctx *c, int kind, const cute_value *A, const cute_value *B, cute_value *o) {
  if (kind == LO_LOGICAL) return apply_tiler(c, ld_layout, A, B, o);
  cute_value Lv;
  cv_init(&Lv, CUTE_V_LAYOUT);
  TRY(apply_tiler(c, ld_layout, A, B, &Lv));
  return zipped_kinds(c, kind, &Lv, B, o);
}

/* blocked / raked: R = max ranks, pad both, logical product, zip the halves */
static int rank_sensitive(lctx *c, int raked, const cute_value *A, const cute_value *B,
                          cute_value *o) {
  int ra = nd_rank(A, 0), rb = nd_rank(B, 0), R = ra > rb ? ra : rb;
  cute_value PA, PB, P;
  cv_init(&PA, CUTE_V_LAYOUT);
  cv_init(&PB, CUTE_V_LAYOUT);
  cv_init(&P, CUTE_V_LAYOUT);
  TRY(lay_pad(c, A, 0, R, &PA));
  TRY(lay_pad(c, B, 0, R, &PB));
  TRY(lp_layout(c, &PA, 0, &PB, 0, &P));
  int x = nd_child(&P, 0, raked ? 1 : 0), y = nd_child(&P, 0, raked ? 0 : 1);
  int h;
  TRYB(nb_open(o, &h));
  if (nd_is_tuple(&P, x)) {
    for (int j = 0; j < nd_rank(&P, x); j++) {
      int yj = nd_child(&P, y, j), h2;
      if (yj < 0) return lerr(c, CUTE_E_RANK, "cannot zip modes of different ranks");
      TRYB(nb_open(o, &h2));
      TRYB(nb_copy(o, &P, nd_child(&P, x, j)));
      TRYB(nb_copy(o, &P, yj));
      nb_close(o, h2);
    }
  } else {
    int h2;
    TRYB(nb_open(o, &h2));
    TRYB(nb_copy(o, &P, x));
    TRYB(nb_copy(o, &P, y));
    nb_close(o, h2);
  }
  nb_close(o, h);
  return 0;
}

int lo_product(lctx *c, int kind, const cute_value *A, const cute_value *B, cute_value *o) {
  if (kind == LO_BLOCKED || kind == LO_RAKED) {
    cute_value T;
    const cute_value *Bl = B;
    if (B->type == CUTE_V_INT || B->type == CUTE_V_TUPLE) {
      if (nd_has_under(B, 0))
        return lerr(c, CUTE_E_ARG, "the tiler of a rank-sensitive product must be a layout");
      cv_init(&T, CUTE_V_LAYOUT);
      TRY(lay_compact(c, B, 0, 0, 1, &T));
      Bl = &T;
    } else if (B->type != CUTE_V_LAYOUT) {
      return lerr(c, CUTE_E_ARG, "the tiler of a rank-sensitive product must be a layout");
    }
    return rank_sensitive(c, kind == LO_RAKED, A, Bl, o);
  }
  if (kind == LO_LOGICAL) return apply_tiler(c, lp_layout, A, B, o);
  cute_value Lv;
  cv_init(&Lv, CUTE_V_LAYOUT);
  TRY(apply_tiler(c, lp_layout, A, B, &Lv));
  return zipped_kinds(c, kind, &Lv, B, o);
}

/* ---- make_ordered_layout ---------------------------------------------------------------- */

/* order leaves paired with the product of the shape subtree they cover */
typedef struct ordset { int n; int64_t ord[CV_MAX], prod[CV_MAX]; } ordset;

static int ord_collect(lctx *c, const cute_value *sh, int si, const cute_value *od, int oi,
                       ordset *S) {
  if (!nd_is_tuple(od, oi)) {
    if (S->n >= CV_MAX) return lay_cap_err(c);
    S->ord[S->n] = od->node[oi].a;
    TRY(lay_product(c, sh, si, &S->prod[S->n]));
    S->n++;
    return 0;
  }
  if (!nd_is_tuple(sh, si) || sh->node[si].a != od->node[oi].a) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "order %s does not match shape %s",
                fmt_tmp(b1, sizeof b1, od, oi, 0), fmt_tmp(b2, sizeof b2, sh, si, 0));
  }
  for (int k = 0; k < od->node[oi].a; k++)
    TRY(ord_collect(c, sh, nd_child(sh, si, k), od, nd_child(od, oi, k), S));
  return 0;
}

static int ord_emit(lctx *c, const cute_value *sh, int si, const cute_value *od, int oi,
                    const ordset *S, cute_value *o) {
  if (!nd_is_tuple(od, oi)) {
    int64_t me = od->node[oi].a, d = 1;
    for (int k = 0; k < S->n; k++)
      if (S->ord[k] < me) TRY(ck_mul(c, d, S->prod[k], &d));
    return lay_compact(c, sh, si, 0, d, o);
  }
  int h;
  TRYB(nb_open(o, &h));
  for (int k = 0; k < od->node[oi].a; k++)
    TRY(ord_emit(c, sh, nd_child(sh, si, k), od, nd_child(od, oi, k), S, o));
  nb_close(o, h);
  return 0;
}

int lo_ordered(lctx *c, const cute_value *sh, int si, const cute_value *ord, int oi,
               cute_value *o) {
  if (!ord) return lay_compact(c, sh, si, 0, 1, o);
  ordset S;
  S.n = 0;
  TRY(ord_collect(c, sh, si, ord, oi, &S));
  return ord_emit(c, sh, si, ord, oi, &S, o);
}

/* ---- tile_to_shape ------------------------------------------------------------------------- */

int lo_tile_to_shape(lctx *c, const cute_value *blk, const cute_value *shp,
                     const cute_value *ord, cute_value *o) {
  int R = nd_rank(shp, 0);
  if (nd_rank(blk, 0) > R) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "block %s has a higher rank than target shape %s",
                fmt_tmp(b1, sizeof b1, blk, 0, 3), fmt_tmp(b2, sizeof b2, shp, 0, 0));
  }
  cute_value PB, PS, OL;
  cv_init(&PB, CUTE_V_LAYOUT);
  cv_init(&PS, CUTE_V_TUPLE);
  cv_init(&OL, CUTE_V_LAYOUT);
  TRY(lay_pad(c, blk, 0, R, &PB));
  int h; /* product_each wraps: an integer target gives a 1-tuple product shape */
  TRYB(nb_open(&PS, &h));
  for (int k = 0; k < R; k++) {
    int64_t bs, ts, q;
    TRY(lay_product(c, &PB, nd_child(&PB, 0, k), &bs));
    TRY(lay_product(c, shp, nd_child(shp, 0, k), &ts));
    if (bs == 0 || ts % bs != 0) {
      char b1[300], b2[300];
      return lerr(c, CUTE_E_DOMAIN, "block shape %s does not divide the target shape %s",
                  fmt_tmp(b1, sizeof b1, &PB, 0, 1), fmt_tmp(b2, sizeof b2, shp, 0, 0));
    }
    q = ts / bs;
    TRYB(nb_leaf(&PS, q, 0));
  }
  nb_close(&PS, h);
  TRY(lo_ordered(c, &PS, 0, ord, 0, &OL));
  return rank_sensitive(c, 0, &PB, &OL, o);
}

/* ---- local_tile / local_partition ---------------------------------------------------------- */

static int slice_off(lctx *c, const cute_value *crd, const cute_value *Z, cute_value *o,
                     int64_t *off) {
  cv_init(o, CUTE_V_LAYOUT);
  TRY(lay_slice(c, crd, 0, Z, 0, o));
  return lay_crd2idx(c, crd, 0, Z, 0, off);
}

static int push_unders(lctx *c, cute_value *o, int n) {
  if (n == 1) { TRYB(nb_under(o)); return 0; }
  int h;
  TRYB(nb_open(o, &h));
  for (int k = 0; k < n; k++) TRYB(nb_under(o));
  nb_close(o, h);
  return 0;
}

/* CuTe inner_partition: zipped_divide(L, T)(repeat<R0>(_), append<R1>(crd, _))
   for a tuple crd, (repeat<R0>(_), crd) for an integer crd */
int lo_local_tile(lctx *c, const cute_value *L, const cute_value *T, const cute_value *crd,
                  cute_value *o, int64_t *off) {
  cute_value Z, K;
  cv_init(&Z, CUTE_V_LAYOUT);
  TRY(lo_divide(c, LO_ZIPPED, L, T, &Z));
  int m0 = nd_child(&Z, 0, 0), m1 = nd_child(&Z, 0, 1);
  int R0 = nd_rank(&Z, m0), R1 = nd_rank(&Z, m1);
  cv_init(&K, CUTE_V_TUPLE);
  int h;
  TRYB(nb_open(&K, &h));
  TRY(push_unders(c, &K, R0));
  if (crd->type == CUTE_V_TUPLE && nd_rank(crd, 0) < R1) {
    int h2;
    TRYB(nb_open(&K, &h2));
    for (int k = 0; k < nd_rank(crd, 0); k++) TRYB(nb_copy(&K, crd, nd_child(crd, 0, k)));
    for (int k = nd_rank(crd, 0); k < R1; k++) TRYB(nb_under(&K));
    nb_close(&K, h2);
  } else {
    TRYB(nb_copy(&K, crd, 0));
  }
  nb_close(&K, h);
  return slice_off(c, &K, &Z, o, off);
}

int lo_local_partition(lctx *c, const cute_value *L, const cute_value *thr,
                       const cute_value *idx, cute_value *o, int64_t *off) {
  /* tiler = product_each(shape(thr)); coord = thr.get_flat_coord(idx) */
  cute_value T, H, K, Z, CL;
  cv_init(&T, CUTE_V_TUPLE);
  cv_init(&H, CUTE_V_TUPLE);
  cv_init(&K, CUTE_V_TUPLE);
  cv_init(&Z, CUTE_V_LAYOUT);
  TRY(lay_idx2crd(c, idx, 0, thr, 0, &H));
  int R = nd_rank(thr, 0), tup = nd_is_tuple(thr, 0), ht = 0, hc = 0, hk;
  TRYB(nb_open(&K, &hk)); /* K = (coord, _...) */
  if (tup) {
    TRYB(nb_open(&T, &ht));
    TRYB(nb_open(&K, &hc));
  }
  for (int k = 0; k < R; k++) {
    int tk = nd_child(thr, 0, k);
    int64_t p, fc;
    TRY(lay_product(c, thr, tk, &p));
    TRYB(nb_leaf(&T, p, 0));
    cv_init(&CL, CUTE_V_LAYOUT);
    TRY(lay_compact(c, thr, tk, 0, 1, &CL));
    TRY(lay_crd2idx(c, &H, nd_child(&H, 0, k), &CL, 0, &fc));
    TRYB(nb_leaf(&K, fc, 0));
  }
  if (tup) {
    nb_close(&T, ht);
    nb_close(&K, hc);
    T.type = CUTE_V_TUPLE;
  } else {
    T.type = CUTE_V_INT;
  }
  TRY(lo_divide(c, LO_ZIPPED, L, &T, &Z));
  TRY(push_unders(c, &K, nd_rank(&Z, nd_child(&Z, 0, 1))));
  nb_close(&K, hk);
  return slice_off(c, &K, &Z, o, off);
}

/* ---- max_common_layout / vector -------------------------------------------------------------- */

int lo_max_common(lctx *c, const cute_value *A, const cute_value *B, int vec,
                  cute_value *o, int64_t *n) {
  cute_value inv, comp, one;
  cv_init(&inv, CUTE_V_LAYOUT);
  cv_init(&comp, CUTE_V_LAYOUT);
  TRY(lay_right_inverse(c, B, 0, &inv));
  TRY(lay_composition(c, A, 0, &inv, 0, &comp));
  flat F;
  TRY(lay_coalesce(c, &comp, 0, &F));
  int ok = F.d[0] == 1;
  if (vec) {
    *n = ok ? F.s[0] : 1;
    return 0;
  }
  if (!ok) { TRYB(nb_leaf(o, 1, 0)); return 0; }
  cv_init(&one, CUTE_V_LAYOUT);
  TRYB(nb_leaf(&one, F.s[0], 1));
  return lay_composition(c, &inv, 0, &one, 0, o);
}
