/* layout.c -- core layout algebra: coalesce, filter, composition, complement,
 * inverses, crd2idx/idx2crd, slice, compact strides and IntTuple arithmetic.
 *
 * The algorithms mirror CuTe C++ (include/cute/layout.hpp, int_tuple.hpp)
 * evaluated with static integers: every `if constexpr` on a static value
 * becomes a run-time test here.
 */
#include "layout.h"

#include <string.h>

int lay_cap_err(lctx *c) {
  return lerr(c, CUTE_E_CAPACITY, "result has more than %d nodes", CV_MAX);
}
#define TRYB(x) do { if (x) return lay_cap_err(c); } while (0)

/* ---- flat lists ------------------------------------------------------------ */

void fl_flatten(flat *f, const cute_value *v, int i) {
  f->tup = nd_is_tuple(v, i);
  f->n = 0;
  for (int k = i; k < i + v->node[i].span; k++)
    if (v->node[k].kind == CUTE_N_INT) {
      f->s[f->n] = v->node[k].a;
      f->d[f->n] = v->node[k].b;
      f->n++;
    }
}

int fl_emit(lctx *c, cute_value *o, const flat *f) {
  if (!f->tup) {
    TRYB(nb_leaf(o, f->s[0], f->d[0]));
    return 0;
  }
  int t;
  TRYB(nb_open(o, &t));
  for (int k = 0; k < f->n; k++) TRYB(nb_leaf(o, f->s[k], f->d[k]));
  nb_close(o, t);
  return 0;
}

static const char *fl_fmt(char *buf, size_t cap, const flat *f) {
  sbuf b = {buf, cap, 0};
  buf[0] = 0;
  if (!f->tup) {
    sb_printf(&b, "%lld:%lld", (long long)f->s[0], (long long)f->d[0]);
    return buf;
  }
  sb_puts(&b, "(");
  for (int k = 0; k < f->n; k++) sb_printf(&b, k ? ",%lld" : "%lld", (long long)f->s[k]);
  sb_puts(&b, "):(");
  for (int k = 0; k < f->n; k++) sb_printf(&b, k ? ",%lld" : "%lld", (long long)f->d[k]);
  sb_puts(&b, ")");
  return buf;
}

/* ---- scalar helpers ---------------------------------------------------------- */

int lay_product(lctx *c, const cute_value *v, int i, int64_t *out) {
  int64_t p = 1;
  for (int k = i; k < i + v->node[i].span; k++)
    if (v->node[k].kind == CUTE_N_INT) TRY(ck_mul(c, p, v->node[k].a, &p));
  *out = p;
  return 0;
}

static int ck_abs(lctx *c, int64_t x, int64_t *r) {
  *r = 0;
  if (x == INT64_MIN) return lerr(c, CUTE_E_OVERFLOW, "64-bit overflow in |%lld|", (long long)x);
  *r = x < 0 ? -x : x;
  return 0;
}

static int ck_div(lctx *c, int64_t a, int64_t b, int64_t *q) {
  *q = 0;
  if (b == 0) return lerr(c, CUTE_E_DOMAIN, "division of %lld by zero", (long long)a);
  if (b == -1 && a == INT64_MIN)
    return lerr(c, CUTE_E_OVERFLOW, "64-bit overflow in %lld/-1", (long long)a);
  *q = a / b;
  return 0;
}

static int64_t smod(int64_t a, int64_t b) { return b == -1 ? 0 : a % b; } /* b != 0 */

static int cd_int(lctx *c, int64_t a, int64_t b, int64_t *r) {
  int64_t t = 0;
  *r = 0;
  if (b == 0) return lerr(c, CUTE_E_DOMAIN, "division of %lld by zero", (long long)a);
  TRY(ck_add(c, a, b, &t));
  TRY(ck_add(c, t, -1, &t));
  return ck_div(c, t, b, r);
}

static int sd_int(lctx *c, int64_t a, int64_t b, int64_t *r) {
  *r = 0;
  if (b == 0)
    return lerr(c, CUTE_E_DOMAIN, "shape_div of %lld by zero", (long long)a);
  if (smod(a, b) != 0 && smod(b, a) != 0)
    return lerr(c, CUTE_E_DOMAIN, "%lld and %lld do not divide each other",
                (long long)a, (long long)b);
  return cd_int(c, a, b, r); /* CuTe: (a + b - 1) / b once divisibility holds */
}

static int fl_cosize(lctx *c, const flat *f, int64_t *out) {
  int64_t acc = 1;
  for (int k = 0; k < f->n; k++) {
    int64_t ad = 0, t = 0;
    TRY(ck_abs(c, f->d[k], &ad));
    TRY(ck_add(c, f->s[k], -1, &t));
    TRY(ck_mul(c, t, ad, &t));
    TRY(ck_add(c, acc, t, &acc));
  }
  *out = acc;
  return 0;
}

int lay_cosize(lctx *c, const cute_value *v, int i, int64_t *out) {
  flat f;
  fl_flatten(&f, v, i);
  return fl_cosize(c, &f, out);
}

/* ---- coalesce ------------------------------------------------------------------- */

/* CuTe's bw_coalesce: walk old modes [0, I] backwards onto the new stack whose
   initial content is the single integral mode ns:nd. */
static int bw_coalesce(lctx *c, const int64_t *os, const int64_t *od, int I, int64_t ns,
                       int64_t nd, flat *out) {
  int64_t S[CV_MAX + 2], D[CV_MAX + 2];
  int h = CV_MAX + 1, cnt = 1;
  S[h] = ns;
  D[h] = nd;
  for (int k = I; k >= 0; k--) {
    if (os[k] == 1) continue;
    if (cnt == 1 && S[h] == 1) {
      S[h] = os[k];
      D[h] = od[k];
      continue;
    }
    int64_t p;
    if (!__builtin_mul_overflow(os[k], od[k], &p) && p == D[h]) {
      TRY(ck_mul(c, os[k], S[h], &S[h]));
      D[h] = od[k];
    } else {
      h--;
      S[h] = os[k];
      D[h] = od[k];
      cnt++;
    }
  }
  out->n = cnt;
  out->tup = cnt > 1;
  if (cnt == 1 && S[h] == 1) {
    out->s[0] = 1;
    out->d[0] = 0;
    return 0;
  }
  memcpy(out->s, &S[h], (size_t)cnt * sizeof(int64_t));
  memcpy(out->d, &D[h], (size_t)cnt * sizeof(int64_t));
  return 0;
}

static int fl_coalesce(lctx *c, flat *f, int x) {
  flat r;
  if (f->n == 0) {
    f->n = 1;
    f->tup = 0;
    f->s[0] = 1;
    f->d[0] = 0;
    return 0;
  }
  int R = f->n;
  int64_t ns = f->s[R - 1];
  if (x && ns == 1) ns = 2; /* coalesce_x: keep the last mode extendable */
  TRY(bw_coalesce(c, f->s, f->d, R - 2, ns, f->d[R - 1], &r));
  f->n = r.n;
  f->tup = r.tup;
  memcpy(f->s, r.s, (size_t)r.n * sizeof(int64_t));
  memcpy(f->d, r.d, (size_t)r.n * sizeof(int64_t));
  return 0;
}

int lay_coalesce(lctx *c, const cute_value *v, int i, flat *out) {
  fl_flatten(out, v, i);
  return fl_coalesce(c, out, 0);
}

int lay_coalesce_x(lctx *c, const cute_value *v, int i, flat *out) {
  fl_flatten(out, v, i);
  return fl_coalesce(c, out, 1);
}

int lay_filter(lctx *c, const cute_value *v, int i, flat *out) {
  fl_flatten(out, v, i);
  for (int k = 0; k < out->n; k++)
    if (out->d[k] == 0) out->s[k] = 1;
  return fl_coalesce(c, out, 0);
}

int lay_coalesce_p(lctx *c, const cute_value *v, int i, const cute_value *p, int pi,
                   int filter, cute_value *o) {
  if (!p || !nd_is_tuple(p, pi)) {
    flat f;
    TRY(filter ? lay_filter(c, v, i, &f) : lay_coalesce(c, v, i, &f));
    return fl_emit(c, o, &f);
  }
  int pr = nd_rank(p, pi), lr = nd_rank(v, i);
  if (pr > lr) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "profile %s has rank %d but layout %s has rank %d",
                fmt_tmp(b1, sizeof b1, p, pi, 0), pr, fmt_tmp(b2, sizeof b2, v, i, 3), lr);
  }
  int t;
  TRYB(nb_open(o, &t));
  for (int k = 0; k < lr; k++) {
    int ck = nd_child(v, i, k);
    if (k < pr) TRY(lay_coalesce_p(c, v, ck, p, nd_child(p, pi, k), filter, o));
    else TRYB(nb_copy(o, v, ck));
  }
  nb_close(o, t);
  return 0;
}

/* ---- composition ------------------------------------------------------------------ */

static int comp_int(lctx *c, const flat *L, int64_t rs, int64_t rd, cute_value *o) {
  if (rd == 0) { TRYB(nb_leaf(o, rs, 0)); return 0; }
  if (!L->tup) {
    int64_t d;
    TRY(ck_mul(c, rd, L->d[0], &d));
    TRYB(nb_leaf(o, rs, d));
    return 0;
  }
  int R = L->n, rn = 0;
  int64_t res_s[CV_MAX + 2], res_d[CV_MAX + 2];
  int64_t rest_s = rs, rest_d = rd;
  for (int k = 0; k < R - 1; k++) {
    int64_t cs = L->s[k], cd = L->d[k];
    char b1[400];
    if (cs <= 0)
      return lerr(c, CUTE_E_DOMAIN, "shape %lld of %s is not positive", (long long)cs,
                  fl_fmt(b1, sizeof b1, L));
    if (!(rest_d % cs == 0 || rest_d < cs))
      return lerr(c, CUTE_E_ADMISSIBLE,
                  "inadmissible: stride %lld is neither a multiple of nor less than "
                  "shape %lld (mode %d of coalesced A %s) while composing %lld:%lld",
                  (long long)rest_d, (long long)cs, k, fl_fmt(b1, sizeof b1, L),
                  (long long)rs, (long long)rd);
    int64_t ad = 0, next_shape = 0, next_stride = 0;
    TRY(ck_abs(c, rest_d, &ad));
    TRY(cd_int(c, cs, ad, &next_shape));
    TRY(cd_int(c, ad, cs, &next_stride));
    if (rest_d < 0) next_stride = -next_stride;
    if (next_shape == 1 || rest_s == 1) {
      rest_d = next_stride;
      continue;
    }
    int64_t ns = next_shape < rest_s ? next_shape : rest_s;
    if (ns == 0)
      return lerr(c, CUTE_E_DOMAIN, "zero shape while composing %lld:%lld", (long long)rs,
                  (long long)rd);
    if (smod(rest_s, ns) != 0)
      return lerr(c, CUTE_E_ADMISSIBLE,
                  "inadmissible: shape %lld is not divisible by %lld (mode %d of "
                  "coalesced A %s) while composing %lld:%lld",
                  (long long)rest_s, (long long)ns, k, fl_fmt(b1, sizeof b1, L),
                  (long long)rs, (long long)rd);
    res_s[rn] = ns;
    TRY(ck_mul(c, rest_d, cd, &res_d[rn]));
    rn++;
    TRY(ck_div(c, rest_s, ns, &rest_s));
    rest_d = next_stride;
  }
  int64_t ld;
  TRY(ck_mul(c, rest_d, L->d[R - 1], &ld));
  if (rn == 0) { TRYB(nb_leaf(o, rest_s, ld)); return 0; }
  if (rest_s == 1 && rn == 1) { TRYB(nb_leaf(o, res_s[0], res_d[0])); return 0; }
  int t;
  TRYB(nb_open(o, &t));
  for (int k = 0; k < rn; k++) TRYB(nb_leaf(o, res_s[k], res_d[k]));
  if (rest_s != 1) TRYB(nb_leaf(o, rest_s, ld));
  nb_close(o, t);
  return 0;
}

static int comp_impl(lctx *c, const flat *L, const cute_value *b, int bi, cute_value *o) {
  const cute_node *nd = &b->node[bi];
  if (nd->kind == CUTE_N_TUPLE) {
    int t;
    TRYB(nb_open(o, &t));
    for (int k = 0, j = bi + 1; k < nd->a; k++, j += b->node[j].span)
      TRY(comp_impl(c, L, b, j, o));
    nb_close(o, t);
    return 0;
  }
  return comp_int(c, L, nd->a, nd->b, o);
}

int lay_composition(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                    cute_value *o) {
  flat L;
  TRY(lay_coalesce_x(c, a, ai, &L));
  return comp_impl(c, &L, b, bi, o);
}

/* A by-mode tiler may not have more modes than the layout it tiles. */
int lay_tiler_rank_check(lctx *c, const cute_value *a, int ai, const cute_value *t, int ti) {
  int tr = (int)t->node[ti].a, ar = nd_rank(a, ai);
  if (tr <= ar) return 0;
  char b1[300], b2[300];
  return lerr(c, CUTE_E_RANK, "tiler %s has rank %d but layout %s has rank %d",
              fmt_tmp(b1, sizeof b1, t, ti, 4), tr, fmt_tmp(b2, sizeof b2, a, ai, 3), ar);
}

int lay_compose_tiler(lctx *c, const cute_value *a, int ai, const cute_value *t, int ti,
                      cute_value *o) {
  const cute_node *nd = &t->node[ti];
  switch (nd->kind) {
  case CUTE_N_LAYOUT:
    return lay_composition(c, a, ai, t, ti + 1, o);
  case CUTE_N_UNDER:
    TRYB(nb_copy(o, a, ai));
    return 0;
  case CUTE_N_INT: {
    flat L;
    TRY(lay_coalesce_x(c, a, ai, &L));
    return comp_int(c, &L, nd->a, 1, o);
  }
  default: {
    int tr = (int)nd->a;
    TRY(lay_tiler_rank_check(c, a, ai, t, ti));
    int h;
    TRYB(nb_open(o, &h));
    for (int k = 0; k < tr; k++)
      TRY(lay_compose_tiler(c, a, nd_child(a, ai, k), t, nd_child(t, ti, k), o));
    nb_close(o, h);
    return 0;
  }
  }
}

/* ---- complement --------------------------------------------------------------------- */

static int complement_core(lctx *c, const flat *F, const cute_value *ct, int cti,
                           int64_t ctn, cute_value *o) {
  char b1[400];
  if (!F->tup && F->d[0] == 0) {
    int64_t P = ctn;
    if (ct) TRY(lay_product(c, ct, cti, &P));
    TRYB(nb_leaf(o, P, P == 1 ? 0 : 1));
    return 0;
  }
  int R = F->n, m = R;
  int64_t sh[CV_MAX + 2], st[CV_MAX + 2], rs[CV_MAX + 2], rd[CV_MAX + 2];
  memcpy(sh, F->s, (size_t)R * sizeof(int64_t));
  memcpy(st, F->d, (size_t)R * sizeof(int64_t));
  rd[0] = 1;
  for (int i = 0; i < R - 1; i++) {
    int mi = 0;
    for (int k = 1; k < m; k++)
      if (st[k] < st[mi]) mi = k;
    int64_t mn = st[mi], ns;
    TRY(ck_div(c, mn, rd[i], &ns));
    if (ns == 0)
      return lerr(c, CUTE_E_ADMISSIBLE,
                  "layout %s is not injective (stride %lld is covered by stride %lld)",
                  fl_fmt(b1, sizeof b1, F), (long long)mn, (long long)rd[i]);
    TRY(ck_mul(c, mn, sh[mi], &rd[i + 1]));
    rs[i] = ns;
    memmove(&sh[mi], &sh[mi + 1], (size_t)(m - mi - 1) * sizeof(int64_t));
    memmove(&st[mi], &st[mi + 1], (size_t)(m - mi - 1) * sizeof(int64_t));
    m--;
  }
  int64_t ns, nst, rest;
  TRY(ck_div(c, st[0], rd[R - 1], &ns));
  if (ns == 0)
    return lerr(c, CUTE_E_ADMISSIBLE,
                "layout %s is not injective (stride %lld is covered by stride %lld)",
                fl_fmt(b1, sizeof b1, F), (long long)st[0], (long long)rd[R - 1]);
  rs[R - 1] = ns;
  TRY(ck_mul(c, st[0], sh[0], &nst));
  if (ct) {
    cute_value tmp;
    cv_init(&tmp, CUTE_V_TUPLE);
    TRY(it_ceil_div_n(c, ct, cti, nst, &tmp));
    TRY(lay_product(c, &tmp, 0, &rest));
  } else {
    TRY(cd_int(c, ctn, nst, &rest));
  }
  rs[R] = rest;
  rd[R] = rest == 1 ? 0 : nst;
  flat G;
  G.n = R + 1;
  G.tup = 1;
  memcpy(G.s, rs, (size_t)(R + 1) * sizeof(int64_t));
  memcpy(G.d, rd, (size_t)(R + 1) * sizeof(int64_t));
  TRY(fl_coalesce(c, &G, 0));
  return fl_emit(c, o, &G);
}

int lay_complement(lctx *c, const cute_value *v, int i, const cute_value *ct, int cti,
                   cute_value *o) {
  flat F;
  TRY(lay_filter(c, v, i, &F));
  if (ct) return complement_core(c, &F, ct, cti, 0, o);
  int64_t cs;
  TRY(fl_cosize(c, &F, &cs));
  return complement_core(c, &F, NULL, 0, cs, o);
}

int lay_complement_n(lctx *c, const cute_value *v, int i, int64_t n, cute_value *o) {
  flat F;
  TRY(lay_filter(c, v, i, &F));
  return complement_core(c, &F, NULL, 0, n, o);
}

/* ---- inverses ------------------------------------------------------------------------ */

static int inv_prep(lctx *c, const cute_value *v, int i, flat *C, int64_t *pre, int *ord) {
  TRY(lay_coalesce(c, v, i, C));
  int R = C->n;
  pre[0] = 1;
  for (int k = 0; k < R; k++) TRY(ck_mul(c, pre[k], C->s[k], &pre[k + 1]));
  /* CuTe's SortByKey is an exchange sort on (stride, index) pairs; it is not
     stable, and ties (non-injective layouts) follow its exact swap order. */
  for (int k = 0; k < R; k++) ord[k] = k;
  for (int a = 0; a < R; a++)
    for (int b = a + 1; b < R; b++)
      if (C->d[ord[b]] < C->d[ord[a]]) {
        int t = ord[a];
        ord[a] = ord[b];
        ord[b] = t;
      }
  return 0;
}

int lay_right_inverse(lctx *c, const cute_value *v, int i, cute_value *o) {
  flat C, G;
  int64_t pre[CV_MAX + 2];
  int ord[CV_MAX + 2];
  TRY(inv_prep(c, v, i, &C, pre, ord));
  G.tup = 1;
  G.n = 1;
  G.s[0] = 1;
  G.d[0] = 0;
  int64_t cur = 1;
  for (int q = 0; q < C.n; q++) {
    int k = ord[q];
    if (C.d[k] != cur) continue;
    G.s[G.n] = C.s[k];
    G.d[G.n] = pre[k];
    G.n++;
    TRY(ck_mul(c, C.s[k], C.d[k], &cur));
  }
  TRY(fl_coalesce(c, &G, 0));
  return fl_emit(c, o, &G);
}

int lay_left_inverse(lctx *c, const cute_value *v, int i, cute_value *o) {
  flat C, G;
  int64_t pre[CV_MAX + 2];
  int ord[CV_MAX + 2];
  TRY(inv_prep(c, v, i, &C, pre, ord));
  int64_t rd[CV_MAX + 3];
  int rn = 0;
  int64_t sz = 1;
  rd[0] = 0;
  for (int q = 0; q < C.n; q++) {
    int k = ord[q];
    int64_t d = C.d[k];
    if (d == 0) continue;
    if (smod(d, sz) != 0) {
      char b1[400];
      return lerr(c, CUTE_E_ADMISSIBLE,
                  "left inverse divisibility condition fails: stride %lld is not a "
                  "multiple of %lld in coalesced layout %s",
                  (long long)d, (long long)sz, fl_fmt(b1, sizeof b1, &C));
    }
    int64_t qv;
    TRY(ck_div(c, d, sz, &qv));
    G.s[rn] = qv;
    rd[rn + 1] = pre[k];
    rn++;
    TRY(ck_mul(c, sz, qv, &sz));
  }
  G.s[rn] = C.s[ord[C.n - 1]];
  G.n = rn + 1;
  G.tup = 1;
  memcpy(G.d, rd, (size_t)(rn + 1) * sizeof(int64_t));
  TRY(fl_coalesce(c, &G, 0));
  return fl_emit(c, o, &G);
}

/* ---- coordinates ------------------------------------------------------------------------ */

static int crd_int(lctx *c, int64_t x, const cute_value *l, int li, int64_t *out) {
  const cute_node *nd = &l->node[li];
  if (nd->kind != CUTE_N_TUPLE) return ck_mul(c, x, nd->b, out);
  int64_t acc = 0, r;
  int R = (int)nd->a;
  for (int k = 0, j = li + 1; k < R; k++, j += l->node[j].span) {
    if (k == R - 1) {
      TRY(crd_int(c, x, l, j, &r));
    } else {
      int64_t p, q;
      TRY(lay_product(c, l, j, &p));
      if (p == 0) return lerr(c, CUTE_E_DOMAIN, "zero shape in layout");
      TRY(ck_div(c, x, p, &q));
      TRY(crd_int(c, smod(x, p), l, j, &r));
      x = q;
    }
    TRY(ck_add(c, acc, r, &acc));
  }
  *out = acc;
  return 0;
}

int lay_crd2idx(lctx *c, const cute_value *crd, int ci, const cute_value *l, int li,
                int64_t *out) {
  const cute_node *cn = &crd->node[ci];
  if (cn->kind == CUTE_N_UNDER) { *out = 0; return 0; }
  if (cn->kind == CUTE_N_INT) return crd_int(c, cn->a, l, li, out);
  int cr = (int)cn->a, lr = nd_rank(l, li);
  if (!nd_is_tuple(l, li) || cr != lr) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "coordinate %s has rank %d but shape %s has rank %d",
                fmt_tmp(b1, sizeof b1, crd, ci, 0), cr, fmt_tmp(b2, sizeof b2, l, li, 1),
                nd_is_tuple(l, li) ? lr : 0);
  }
  int64_t acc = 0, r;
  for (int k = 0, x = ci + 1, y = li + 1; k < cr;
       k++, x += crd->node[x].span, y += l->node[y].span) {
    TRY(lay_crd2idx(c, crd, x, l, y, &r));
    TRY(ck_add(c, acc, r, &acc));
  }
  *out = acc;
  return 0;
}

static int idx_int(lctx *c, int64_t x, const cute_value *l, int li, cute_value *o) {
  const cute_node *nd = &l->node[li];
  if (nd->kind == CUTE_N_TUPLE) {
    int t;
    TRYB(nb_open(o, &t));
    for (int k = 0, j = li + 1; k < nd->a; k++, j += l->node[j].span)
      TRY(idx_int(c, x, l, j, o));
    nb_close(o, t);
    return 0;
  }
  if (nd->a == 1) { TRYB(nb_leaf(o, 0, 0)); return 0; }
  if (nd->b == 0)
    return lerr(c, CUTE_E_DOMAIN, "stride 0 with shape %lld cannot be inverted",
                (long long)nd->a);
  if (nd->a == 0) return lerr(c, CUTE_E_DOMAIN, "zero shape");
  int64_t q;
  TRY(ck_div(c, x, nd->b, &q));
  TRYB(nb_leaf(o, smod(q, nd->a), 0));
  return 0;
}

int lay_idx2crd(lctx *c, const cute_value *idx, int ii, const cute_value *l, int li,
                cute_value *o) {
  const cute_node *in = &idx->node[ii];
  if (in->kind == CUTE_N_INT) return idx_int(c, in->a, l, li, o);
  if (in->kind != CUTE_N_TUPLE) return lerr(c, CUTE_E_ARG, "index must be an integer or tuple");
  int ir = (int)in->a, lr = nd_rank(l, li);
  if (!nd_is_tuple(l, li) || ir != lr) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "index %s has rank %d but shape %s has rank %d",
                fmt_tmp(b1, sizeof b1, idx, ii, 0), ir, fmt_tmp(b2, sizeof b2, l, li, 1),
                nd_is_tuple(l, li) ? lr : 0);
  }
  int t;
  TRYB(nb_open(o, &t));
  for (int k = 0, x = ii + 1, y = li + 1; k < ir;
       k++, x += idx->node[x].span, y += l->node[y].span)
    TRY(lay_idx2crd(c, idx, x, l, y, o));
  nb_close(o, t);
  return 0;
}

/* ---- slice -------------------------------------------------------------------------------- */

static int slice_rank_err(lctx *c, const cute_value *crd, int ci, const cute_value *t,
                          int ti) {
  char b1[300], b2[300];
  return lerr(c, CUTE_E_RANK, "coordinate %s does not match the profile of %s",
              fmt_tmp(b1, sizeof b1, crd, ci, 0), fmt_tmp(b2, sizeof b2, t, ti, 1));
}

static int slice_into(lctx *c, const cute_value *crd, int ci, const cute_value *t, int ti,
                      cute_value *o) {
  if (!nd_is_tuple(t, ti) || t->node[ti].a != crd->node[ci].a)
    return slice_rank_err(c, crd, ci, t, ti);
  for (int k = 0, x = ci + 1, y = ti + 1; k < crd->node[ci].a;
       k++, x += crd->node[x].span, y += t->node[y].span) {
    int kind = crd->node[x].kind;
    if (kind == CUTE_N_TUPLE) TRY(slice_into(c, crd, x, t, y, o));
    else if (kind == CUTE_N_UNDER) TRYB(nb_copy(o, t, y));
  }
  return 0;
}

int lay_slice(lctx *c, const cute_value *crd, int ci, const cute_value *t, int ti,
              cute_value *o) {
  int kind = crd->node[ci].kind;
  if (kind == CUTE_N_UNDER) { TRYB(nb_copy(o, t, ti)); return 0; }
  int h;
  TRYB(nb_open(o, &h));
  if (kind == CUTE_N_TUPLE) TRY(slice_into(c, crd, ci, t, ti, o));
  nb_close(o, h);
  return 0;
}

/* ---- compact strides ------------------------------------------------------------------------ */

int lay_compact(lctx *c, const cute_value *shape, int si, int major, int64_t start,
                cute_value *o) {
  int base = o->n;
  TRYB(nb_copy(o, shape, si));
  int sp = shape->node[si].span;
  int64_t cur = start;
  for (int q = 0; q < sp; q++) {
    int k = major ? base + sp - 1 - q : base + q;
    cute_node *nd = &o->node[k];
    if (nd->kind == CUTE_N_TUPLE) { nd->b = 0; continue; }
    nd->b = nd->a == 1 ? 0 : cur;
    TRY(ck_mul(c, cur, nd->a, &cur));
  }
  return 0;
}

int lay_make_int(cute_value *o, int64_t n) { return nb_leaf(o, n, n == 1 ? 0 : 1); }

int lay_pad(lctx *c, const cute_value *v, int i, int rank, cute_value *o) {
  int r = nd_rank(v, i);
  if (r == rank) { TRYB(nb_copy(o, v, i)); return 0; }
  if (r > rank) {
    char b1[300];
    return lerr(c, CUTE_E_RANK, "layout %s has rank %d > %d", fmt_tmp(b1, sizeof b1, v, i, 3),
                r, rank);
  }
  int t;
  TRYB(nb_open(o, &t));
  if (!nd_is_tuple(v, i)) TRYB(nb_copy(o, v, i));
  else
    for (int k = 0; k < r; k++) TRYB(nb_copy(o, v, nd_child(v, i, k)));
  for (int k = r; k < rank; k++) TRYB(nb_leaf(o, 1, 0));
  nb_close(o, t);
  return 0;
}

/* ---- IntTuple arithmetic ------------------------------------------------------------------------ */

typedef int (*int_fn)(lctx *, int64_t, int64_t, int64_t *);

/* fold of a tuple by an integer: r_k = f(a_k, rest); rest = f(rest, product(a_k)) */
static int it_fold_n(lctx *c, int_fn f, const cute_value *a, int ai, int64_t b,
                     cute_value *o) {
  const cute_node *nd = &a->node[ai];
  if (nd->kind != CUTE_N_TUPLE) {
    int64_t r;
    TRY(f(c, nd->a, b, &r));
    TRYB(nb_leaf(o, r, 0));
    return 0;
  }
  int t;
  int64_t rest = b;
  TRYB(nb_open(o, &t));
  for (int k = 0, j = ai + 1; k < nd->a; k++, j += a->node[j].span) {
    int64_t p;
    TRY(it_fold_n(c, f, a, j, rest, o));
    TRY(lay_product(c, a, j, &p));
    TRY(f(c, rest, p, &rest));
  }
  nb_close(o, t);
  return 0;
}

int it_ceil_div_n(lctx *c, const cute_value *a, int ai, int64_t b, cute_value *o) {
  return it_fold_n(c, cd_int, a, ai, b, o);
}

static int it_binop(lctx *c, int_fn f, int pad, const cute_value *a, int ai,
                    const cute_value *b, int bi, cute_value *o) {
  int ta = nd_is_tuple(a, ai), tb = nd_is_tuple(b, bi);
  if (ta && tb) {
    int ra = nd_rank(a, ai), rb = nd_rank(b, bi);
    if (pad ? ra < rb : ra != rb) {
      char b1[300], b2[300];
      return lerr(c, CUTE_E_RANK, "%s has rank %d but %s has rank %d",
                  fmt_tmp(b1, sizeof b1, a, ai, 0), ra, fmt_tmp(b2, sizeof b2, b, bi, 0), rb);
    }
    int t;
    TRYB(nb_open(o, &t));
    for (int k = 0; k < ra; k++) {
      if (k < rb) TRY(it_binop(c, f, pad, a, nd_child(a, ai, k), b, nd_child(b, bi, k), o));
      else TRY(it_fold_n(c, f, a, nd_child(a, ai, k), 1, o));
    }
    nb_close(o, t);
    return 0;
  }
  int64_t bv;
  TRY(lay_product(c, b, bi, &bv));
  return it_fold_n(c, f, a, ai, bv, o);
}

int it_shape_div(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                 cute_value *o) {
  return it_binop(c, sd_int, 0, a, ai, b, bi, o);
}

int it_ceil_div(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                cute_value *o) {
  return it_binop(c, cd_int, 1, a, ai, b, bi, o);
}

static int it_pp_n(lctx *c, const cute_value *a, int ai, int64_t init, cute_value *o) {
  const cute_node *nd = &a->node[ai];
  if (nd->kind != CUTE_N_TUPLE) { TRYB(nb_leaf(o, init, 0)); return 0; }
  int t;
  TRYB(nb_open(o, &t));
  for (int k = 0, j = ai + 1; k < nd->a; k++, j += a->node[j].span) {
    int64_t p;
    TRY(it_pp_n(c, a, j, init, o));
    TRY(lay_product(c, a, j, &p));
    TRY(ck_mul(c, init, p, &init));
  }
  nb_close(o, t);
  return 0;
}

int it_prefix_product(lctx *c, const cute_value *a, int ai, const cute_value *init, int ii,
                      cute_value *o) {
  if (!init) return it_pp_n(c, a, ai, 1, o);
  int ta = nd_is_tuple(a, ai), ti = nd_is_tuple(init, ii);
  if (!ta) { TRYB(nb_copy(o, init, ii)); return 0; }
  if (!ti) return it_pp_n(c, a, ai, init->node[ii].a, o);
  if (nd_rank(a, ai) != nd_rank(init, ii)) {
    char b1[300], b2[300];
    return lerr(c, CUTE_E_RANK, "%s and init %s have different ranks",
                fmt_tmp(b1, sizeof b1, a, ai, 0), fmt_tmp(b2, sizeof b2, init, ii, 0));
  }
  int t;
  TRYB(nb_open(o, &t));
  for (int k = 0; k < nd_rank(a, ai); k++)
    TRY(it_prefix_product(c, a, nd_child(a, ai, k), init, nd_child(init, ii, k), o));
  nb_close(o, t);
  return 0;
}
