/* tuple.c -- node trees: errors, checked arithmetic, node access, validation,
 * builders and predicates.  Text (cute_parse, cute_format) is in tuple_text.c. */
#include "tuple.h"

#include <stdio.h>
#include <string.h>

/* ---- errors ----------------------------------------------------------------- */

int lerr(lctx *c, int code, const char *fmt, ...) {
  if (!c || !c->err) return code;
  char body[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  char buf[sizeof c->err->msg];
  sbuf b = {buf, sizeof buf, 0};
  sb_printf(&b, "%s: %s", c->op ? c->op : "cute", body);
  if (c->args && c->nargs > 0) {
    sb_printf(&b, " in %s(", c->op ? c->op : "op");
    for (int k = 0; k < c->nargs; k++) {
      if (k) sb_puts(&b, ", ");
      if (b.len > 900) { sb_puts(&b, "..."); break; }
      fmt_value(&b, &c->args[k]);
    }
    sb_puts(&b, ")");
  }
  return cute_err_setf(c->err, code, "%s", buf);
}

int ck_mul(lctx *c, int64_t a, int64_t b, int64_t *r) {
  if (__builtin_mul_overflow(a, b, r))
    return lerr(c, CUTE_E_OVERFLOW, "64-bit overflow computing %lld*%lld",
                (long long)a, (long long)b);
  return 0;
}

int ck_add(lctx *c, int64_t a, int64_t b, int64_t *r) {
  if (__builtin_add_overflow(a, b, r))
    return lerr(c, CUTE_E_OVERFLOW, "64-bit overflow computing %lld+%lld",
                (long long)a, (long long)b);
  return 0;
}

/* ---- node access -------------------------------------------------------------- */

int nd_child(const cute_value *v, int i, int k) {
  if (v->node[i].kind != CUTE_N_TUPLE) return k == 0 ? i : -1;
  if (k < 0 || k >= v->node[i].a) return -1;
  int j = i + 1;
  while (k-- > 0) j += v->node[j].span;
  return j;
}

/* ---- validation ------------------------------------------------------------- */

enum { AL_INT = 1, AL_TUPLE = 2, AL_UNDER = 4, AL_LAYOUT = 8 };

/* Returns 0 ok, 1 structure, 2 shape <= 0 (layout leaves) */
static int chk_tree(const cute_value *v, int i, int end, int allow, int layout,
                    int depth) {
  if (i < 0 || i >= end || depth > CV_MAX) return 1;
  const cute_node *nd = &v->node[i];
  if (nd->span < 1 || nd->span > end - i) return 1;
  switch (nd->kind) {
  case CUTE_N_INT:
    if (!(allow & AL_INT) || nd->span != 1) return 1;
    if (layout && nd->a <= 0) return 2;
    return 0;
  case CUTE_N_UNDER:
    return (!(allow & AL_UNDER) || nd->span != 1) ? 1 : 0;
  case CUTE_N_TUPLE: {
    if (!(allow & AL_TUPLE)) return 1;
    if (nd->a < 0 || nd->a >= CV_MAX) return 1;
    int stop = i + nd->span, j = i + 1, bad = 0;
    for (int64_t k = 0; k < nd->a; k++) {
      if (j >= stop) return 1;
      int r = chk_tree(v, j, stop, allow, layout, depth + 1);
      if (r == 1) return 1;
      if (r) bad = r;
      j += v->node[j].span;
    }
    if (j != stop) return 1;
    return bad;
  }
  case CUTE_N_LAYOUT: {
    if (!(allow & AL_LAYOUT)) return 1;
    if (nd->span < 2) return 1;
    int r = chk_tree(v, i + 1, i + nd->span, AL_INT | AL_TUPLE, 1, depth + 1);
    if (r) return r;
    if (v->node[i + 1].span != nd->span - 1) return 1;
    return 0;
  }
  default:
    return 1;
  }
}

int cv_swizzle_ok(int64_t B, int64_t M, int64_t S) {
  return B >= 0 && M >= 0 && B <= 62 && M <= 62 && S >= -62 && S <= 62 &&
         B + M + (S < 0 ? -S : S) <= 62;
}

static int chk_swz(const cute_value *v) { return !cv_swizzle_ok(v->sw_b, v->sw_m, v->sw_s); }

int cv_layout_tree_ok(const cute_value *v) {
  return (v->type == CUTE_V_LAYOUT || v->type == CUTE_V_COMPOSED) && v->n >= 1 &&
         v->n <= CV_MAX && chk_tree(v, 0, v->n, AL_INT | AL_TUPLE, 0, 0) == 0 &&
         v->node[0].span == v->n;
}

int cv_check(const cute_value *v, cute_err *err, const char *who) {
  if (!who) who = "cute";
  if (!v) return cute_err_setf(err, CUTE_E_ARG, "%s: NULL value", who);
  if (v->n < 0 || v->n > CV_MAX)
    return cute_err_setf(err, CUTE_E_ARG, "%s: malformed value (node count %d)", who,
                      (int)v->n);
  int r = 0, allow = 0, layout = 0;
  switch (v->type) {
  case CUTE_V_INT:
    if (v->n != 1 || v->node[0].kind != CUTE_N_INT || v->node[0].span != 1) r = 1;
    break;
  case CUTE_V_UNDER:
    if (v->n != 1 || v->node[0].kind != CUTE_N_UNDER || v->node[0].span != 1) r = 1;
    break;
  case CUTE_V_TUPLE: allow = AL_INT | AL_TUPLE | AL_UNDER; goto tree;
  case CUTE_V_TILER: allow = AL_INT | AL_TUPLE | AL_UNDER | AL_LAYOUT; goto tree;
  case CUTE_V_COMPOSED:
    if (chk_swz(v)) return cute_err_setf(err, CUTE_E_DOMAIN,
                                      "%s: invalid swizzle Sw<%d,%d,%d>", who,
                                      (int)v->sw_b, (int)v->sw_m, (int)v->sw_s);
    /* fallthrough */
  case CUTE_V_LAYOUT:
    allow = AL_INT | AL_TUPLE;
    layout = 1;
  tree:
    if (v->n < 1) { r = 1; break; }
    if ((v->type == CUTE_V_TUPLE || v->type == CUTE_V_TILER) &&
        v->node[0].kind != CUTE_N_TUPLE) { r = 1; break; }
    r = chk_tree(v, 0, v->n, allow, layout, 0);
    if (!r && v->node[0].span != v->n) r = 1;
    break;
  case CUTE_V_SWIZZLE:
    if (chk_swz(v)) return cute_err_setf(err, CUTE_E_DOMAIN,
                                      "%s: invalid swizzle Sw<%d,%d,%d>", who,
                                      (int)v->sw_b, (int)v->sw_m, (int)v->sw_s);
    break;
  default:
    return cute_err_setf(err, CUTE_E_ARG, "%s: malformed value (type %d)", who,
                      (int)v->type);
  }
  if (r == 1)
    return cute_err_setf(err, CUTE_E_ARG, "%s: malformed value (bad node tree)", who);
  if (r == 2) {
    char buf[400];
    sbuf b = {buf, sizeof buf, 0};
    buf[0] = 0;
    if (v->type == CUTE_V_LAYOUT || v->type == CUTE_V_COMPOSED) fmt_sub(&b, v, 0, 3);
    else fmt_sub(&b, v, 0, 4);
    return cute_err_setf(err, CUTE_E_DOMAIN,
                      "%s: layout %s has a zero or negative shape", who, buf);
  }
  return 0;
}

int cute_value_check(const cute_value *v, const char *who, cute_err *err) {
  if (err) { err->code = 0; err->msg[0] = 0; }
  return cv_check(v, err, who);
}

/* ---- builders ---------------------------------------------------------------- */

void cv_init(cute_value *o, int type) {
  o->type = type;
  o->n = 0;
  o->sw_b = o->sw_m = o->sw_s = 0;
  o->pad_ = 0;
  o->offset = 0;
}

int nb_leaf(cute_value *o, int64_t a, int64_t b) {
  if (o->n >= CV_MAX) return CUTE_E_CAPACITY;
  cute_node *nd = &o->node[o->n++];
  nd->kind = CUTE_N_INT;
  nd->span = 1;
  nd->a = a;
  nd->b = b;
  return 0;
}

int nb_under(cute_value *o) {
  if (o->n >= CV_MAX) return CUTE_E_CAPACITY;
  cute_node *nd = &o->node[o->n++];
  nd->kind = CUTE_N_UNDER;
  nd->span = 1;
  nd->a = nd->b = 0;
  return 0;
}

int nb_open(cute_value *o, int *idx) {
  if (o->n >= CV_MAX) return CUTE_E_CAPACITY;
  *idx = o->n;
  cute_node *nd = &o->node[o->n++];
  nd->kind = CUTE_N_TUPLE;
  nd->span = 1;
  nd->a = 0;
  nd->b = 0;
  return 0;
}

void nb_close(cute_value *o, int idx) {
  int k = 0, j = idx + 1;
  while (j < o->n) { k++; j += o->node[j].span; }
  o->node[idx].a = k;
  o->node[idx].span = o->n - idx;
}

int nb_copy(cute_value *o, const cute_value *s, int i) {
  int sp = s->node[i].span;
  if (o->n + sp > CV_MAX) return CUTE_E_CAPACITY;
  memcpy(&o->node[o->n], &s->node[i], (size_t)sp * sizeof(cute_node));
  o->n += sp;
  return 0;
}

/* ---- predicates ------------------------------------------------------------------ */

int nd_congruent(const cute_value *a, int i, const cute_value *b, int j) {
  int ta = nd_is_tuple(a, i), tb = nd_is_tuple(b, j);
  if (ta != tb) return 0;
  if (!ta) return 1;
  if (a->node[i].a != b->node[j].a) return 0;
  for (int k = 0, x = i + 1, y = j + 1; k < a->node[i].a;
       k++, x += a->node[x].span, y += b->node[y].span)
    if (!nd_congruent(a, x, b, y)) return 0;
  return 1;
}

int nd_weakly_congruent(const cute_value *a, int i, const cute_value *b, int j) {
  int ta = nd_is_tuple(a, i), tb = nd_is_tuple(b, j);
  if (!ta) return 1;
  if (!tb) return 0;
  if (a->node[i].a != b->node[j].a) return 0;
  for (int k = 0, x = i + 1, y = j + 1; k < a->node[i].a;
       k++, x += a->node[x].span, y += b->node[y].span)
    if (!nd_weakly_congruent(a, x, b, y)) return 0;
  return 1;
}

int nd_equal(const cute_value *a, int i, const cute_value *b, int j, int layout) {
  if (a->node[i].span != b->node[j].span) return 0;
  for (int k = 0; k < a->node[i].span; k++) {
    const cute_node *x = &a->node[i + k], *y = &b->node[j + k];
    if (x->kind != y->kind || x->a != y->a) return 0;
    if (layout && x->kind == CUTE_N_INT && x->b != y->b) return 0;
  }
  return 1;
}

int nd_depth(const cute_value *v, int i) {
  if (!nd_is_tuple(v, i)) return 0;
  int m = 0;
  for (int k = 0, j = i + 1; k < v->node[i].a; k++, j += v->node[j].span) {
    int d = nd_depth(v, j);
    if (d > m) m = d;
  }
  return 1 + m;
}

int nd_has_under(const cute_value *v, int i) {
  for (int k = 0; k < v->node[i].span; k++)
    if (v->node[i + k].kind == CUTE_N_UNDER) return 1;
  return 0;
}
