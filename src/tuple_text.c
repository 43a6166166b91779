/* tuple_text.c -- values as text: the formatter (cute_format and the message
 * helpers sb_/fmt_) and the parser of CuTe notation (cute_parse). */
#include "tuple.h"

#include <stdio.h>
#include <string.h>

/* ---- formatting ---------------------------------------------------------------- */

void sb_puts(sbuf *b, const char *s) {
  if (!s[0]) return;
  if (!s[1] && b->cap > 0 && b->len < b->cap - 1) { /* common: one char */
    b->p[b->len++] = s[0];
    b->p[b->len] = 0;
    return;
  }
  size_t l = strlen(s);
  if (b->cap > 0 && b->len < b->cap - 1) {
    size_t room = b->cap - 1 - b->len;
    size_t k = l < room ? l : room;
    memcpy(b->p + b->len, s, k);
    b->p[b->len + k] = 0;
  }
  b->len += l;
}

void sb_printf(sbuf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  sb_puts(b, tmp);
}

static void sb_int(sbuf *b, int64_t x) {
  char t[24];
  int k = 23;
  uint64_t u = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
  t[k] = 0;
  do { t[--k] = (char)('0' + u % 10); u /= 10; } while (u);
  if (x < 0) t[--k] = '-';
  sb_puts(b, t + k);
}

void fmt_sub(sbuf *b, const cute_value *v, int i, int mode) {
  const cute_node *nd = &v->node[i];
  switch (nd->kind) {
  case CUTE_N_INT:
    if (mode == 3) { sb_int(b, nd->a); sb_puts(b, ":"); sb_int(b, nd->b); }
    else sb_int(b, mode == 2 ? nd->b : nd->a);
    return;
  case CUTE_N_UNDER:
    sb_puts(b, "_");
    return;
  case CUTE_N_LAYOUT:
    fmt_sub(b, v, i + 1, 3);
    return;
  case CUTE_N_TUPLE:
    if (mode == 3) {
      fmt_sub(b, v, i, 1);
      sb_puts(b, ":");
      fmt_sub(b, v, i, 2);
      return;
    }
    sb_puts(b, "(");
    for (int k = 0, j = i + 1; k < nd->a; k++, j += v->node[j].span) {
      if (k) sb_puts(b, ",");
      fmt_sub(b, v, j, mode);
    }
    sb_puts(b, ")");
    return;
  default:
    sb_puts(b, "?");
  }
}

void fmt_value(sbuf *b, const cute_value *v) {
  if (!v) { sb_puts(b, "<null>"); return; }
  if (v->type == CUTE_V_NONE) return;
  if (cv_check(v, NULL, NULL)) {
    /* shapes <= 0 still print (results of complement can carry them) */
    if (!cv_layout_tree_ok(v)) { sb_puts(b, "<invalid>"); return; }
  }
  switch (v->type) {
  case CUTE_V_INT: sb_int(b, v->node[0].a); return;
  case CUTE_V_UNDER: sb_puts(b, "_"); return;
  case CUTE_V_TUPLE: fmt_sub(b, v, 0, 0); return;
  case CUTE_V_TILER: fmt_sub(b, v, 0, 4); return;
  case CUTE_V_LAYOUT: fmt_sub(b, v, 0, 3); return;
  case CUTE_V_COMPOSED:
    sb_printf(b, "Sw<%d,%d,%d> o %lld o ", (int)v->sw_b, (int)v->sw_m, (int)v->sw_s,
              (long long)v->offset);
    fmt_sub(b, v, 0, 3);
    return;
  case CUTE_V_SWIZZLE:
    sb_printf(b, "Sw<%d,%d,%d>", (int)v->sw_b, (int)v->sw_m, (int)v->sw_s);
    return;
  default: sb_puts(b, "<none>");
  }
}

const char *fmt_tmp(char *buf, size_t cap, const cute_value *v, int i, int mode) {
  sbuf b = {buf, cap, 0};
  if (cap) buf[0] = 0;
  fmt_sub(&b, v, i, mode);
  return buf;
}

size_t cute_format(const cute_value *v, char *buf, size_t cap) {
  sbuf b = {buf, buf ? cap : 0, 0};
  if (buf && cap) buf[0] = 0;
  fmt_value(&b, v);
  return b.len + 1;
}

/* ---- parser ------------------------------------------------------------------------ */

enum { P_INT, P_UNDER, P_TUPLE, P_LAYOUT };
#define PMAX (2 * CV_MAX + 8)

typedef struct pnode { int kind, span, beg, end; int64_t v; } pnode;

typedef struct parser {
  const char *s;
  int pos, n, depth;
  pnode nd[PMAX];
  cute_err *err;
} parser;

static void p_ws(parser *p) {
  while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' ||
         p->s[p->pos] == '\r')
    p->pos++;
}

static int p_unexpected(parser *p) {
  char c = p->s[p->pos];
  if (!c)
    return cute_err_setf(p->err, CUTE_E_PARSE,
                      "parse: unexpected end of input at column %d in \"%.400s\"",
                      p->pos + 1, p->s);
  if (c >= 32 && c < 127)
    return cute_err_setf(p->err, CUTE_E_PARSE,
                      "parse: unexpected '%c' at column %d in \"%.400s\"", c, p->pos + 1,
                      p->s);
  return cute_err_setf(p->err, CUTE_E_PARSE,
                    "parse: unexpected byte 0x%02x at column %d in \"%.400s\"",
                    (unsigned char)c, p->pos + 1, p->s);
}

static int p_push(parser *p, int kind) {
  if (p->n >= PMAX) return -1;
  pnode *x = &p->nd[p->n];
  x->kind = kind;
  x->span = 1;
  x->beg = p->pos;
  x->end = p->pos;
  x->v = 0;
  return p->n++;
}

static int p_cap(parser *p) {
  return cute_err_setf(p->err, CUTE_E_CAPACITY,
                    "parse: \"%.400s\" has more than %d nodes", p->s, CV_MAX);
}

static int p_int(parser *p, int64_t *out) {
  int neg = 0, start = p->pos;
  if (p->s[p->pos] == '-') { neg = 1; p->pos++; }
  if (p->s[p->pos] < '0' || p->s[p->pos] > '9') return p_unexpected(p);
  int64_t x = 0;
  while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
    int d = p->s[p->pos] - '0';
    if (__builtin_mul_overflow(x, (int64_t)10, &x) ||
        __builtin_sub_overflow(x, (int64_t)d, &x))
      return cute_err_setf(p->err, CUTE_E_OVERFLOW,
                        "parse: integer at column %d overflows 64 bits in \"%.400s\"",
                        start + 1, p->s);
    p->pos++;
  }
  if (!neg) {
    if (x == INT64_MIN)
      return cute_err_setf(p->err, CUTE_E_OVERFLOW,
                        "parse: integer at column %d overflows 64 bits in \"%.400s\"",
                        start + 1, p->s);
    x = -x;
  }
  *out = x;
  return 0;
}

static int p_term(parser *p);

static int p_atom(parser *p) {
  p_ws(p);
  char c = p->s[p->pos];
  if (c == '_') {
    int k = p_push(p, P_UNDER);
    if (k < 0) return p_cap(p);
    p->pos++;
    p->nd[k].end = p->pos;
    return 0;
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    int k = p_push(p, P_INT);
    if (k < 0) return p_cap(p);
    TRY(p_int(p, &p->nd[k].v));
    p->nd[k].end = p->pos;
    return 0;
  }
  if (c == '(') {
    int k = p_push(p, P_TUPLE);
    if (k < 0) return p_cap(p);
    if (++p->depth > CV_MAX) return p_cap(p);
    p->pos++;
    p_ws(p);
    if (p->s[p->pos] == ')') {
      p->pos++;
    } else {
      for (;;) {
        TRY(p_term(p));
        p_ws(p);
        if (p->s[p->pos] == ',') { p->pos++; continue; }
        if (p->s[p->pos] == ')') { p->pos++; break; }
        return p_unexpected(p);
      }
    }
    p->depth--;
    p->nd[k].span = p->n - k;
    p->nd[k].end = p->pos;
    return 0;
  }
  return p_unexpected(p);
}

static int p_term(parser *p) {
  p_ws(p);
  int k = p_push(p, P_LAYOUT);
  if (k < 0) return p_cap(p);
  TRY(p_atom(p));
  p_ws(p);
  if (p->s[p->pos] == ':') {
    p->pos++;
    TRY(p_atom(p));
    p->nd[k].span = p->n - k;
    p->nd[k].end = p->pos;
    return 0;
  }
  /* plain atom: drop the placeholder */
  memmove(&p->nd[k], &p->nd[k + 1], (size_t)(p->n - k - 1) * sizeof(pnode));
  p->n--;
  return 0;
}

static int pn_has(const parser *p, int i, int kind) {
  for (int k = 0; k < p->nd[i].span; k++)
    if (p->nd[i + k].kind == kind) return 1;
  return 0;
}

static int pn_congruent(const parser *p, int i, int j) {
  if (p->nd[i].kind != p->nd[j].kind) return 0;
  if (p->nd[i].kind != P_TUPLE) return 1;
  int ci = 0, cj = 0;
  int x = i + 1, y = j + 1;
  while (x < i + p->nd[i].span && y < j + p->nd[j].span) {
    if (!pn_congruent(p, x, y)) return 0;
    x += p->nd[x].span;
    y += p->nd[y].span;
    ci++, cj++;
  }
  return x == i + p->nd[i].span && y == j + p->nd[j].span;
}

/* emit merged layout from shape subtree i and stride subtree j */
static int pn_emit_layout(parser *p, int i, int j, cute_value *o) {
  if (p->nd[i].kind == P_INT) {
    if (nb_leaf(o, p->nd[i].v, p->nd[j].v)) return p_cap(p);
    return 0;
  }
  int t;
  if (nb_open(o, &t)) return p_cap(p);
  int x = i + 1, y = j + 1;
  while (x < i + p->nd[i].span) {
    TRY(pn_emit_layout(p, x, y, o));
    x += p->nd[x].span;
    y += p->nd[y].span;
  }
  nb_close(o, t);
  return 0;
}

static int pn_layout(parser *p, int k, cute_value *o) {
  int sh = k + 1, st = sh + p->nd[sh].span;
  int sl = p->nd[sh].end - p->nd[sh].beg, tl = p->nd[st].end - p->nd[st].beg;
  if (pn_has(p, sh, P_UNDER) || pn_has(p, st, P_UNDER) || pn_has(p, sh, P_LAYOUT) ||
      pn_has(p, st, P_LAYOUT))
    return cute_err_setf(p->err, CUTE_E_PARSE,
                      "parse: layout %.*s:%.*s may contain only integers in \"%.300s\"",
                      sl, p->s + p->nd[sh].beg, tl, p->s + p->nd[st].beg, p->s);
  if (!pn_congruent(p, sh, st))
    return cute_err_setf(p->err, CUTE_E_RANK,
                      "parse: shape %.*s and stride %.*s are not congruent in \"%.300s\"",
                      sl, p->s + p->nd[sh].beg, tl, p->s + p->nd[st].beg, p->s);
  for (int q = sh; q < sh + p->nd[sh].span; q++)
    if (p->nd[q].kind == P_INT && p->nd[q].v <= 0)
      return cute_err_setf(p->err, CUTE_E_DOMAIN,
                        "parse: shape %lld in layout %.*s:%.*s must be positive",
                        (long long)p->nd[q].v, sl, p->s + p->nd[sh].beg, tl,
                        p->s + p->nd[st].beg);
  return pn_emit_layout(p, sh, st, o);
}

/* emit an IntTuple or tiler element */
static int pn_emit(parser *p, int k, cute_value *o) {
  switch (p->nd[k].kind) {
  case P_INT:
    if (nb_leaf(o, p->nd[k].v, 0)) return p_cap(p);
    return 0;
  case P_UNDER:
    if (nb_under(o)) return p_cap(p);
    return 0;
  case P_LAYOUT: {
    if (o->n >= CV_MAX) return p_cap(p);
    int w = o->n++;
    o->node[w].kind = CUTE_N_LAYOUT;
    o->node[w].a = 1;
    o->node[w].b = 0;
    TRY(pn_layout(p, k, o));
    o->node[w].span = o->n - w;
    return 0;
  }
  default: {
    int t;
    if (nb_open(o, &t)) return p_cap(p);
    for (int x = k + 1; x < k + p->nd[k].span; x += p->nd[x].span)
      TRY(pn_emit(p, x, o));
    nb_close(o, t);
    return 0;
  }
  }
}

int cute_parse(const char *text, cute_value *out, cute_err *err) {
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "parse: NULL output");
  cv_init(out, CUTE_V_NONE);
  if (!text) return cute_err_setf(err, CUTE_E_ARG, "parse: NULL text");
  parser P;
  parser *p = &P;
  p->s = text;
  p->pos = 0;
  p->n = 0;
  p->depth = 0;
  p->err = err;
  p_ws(p);
  /* "Sw<B,M,S>" as CuTe C++ prints a swizzle; "S<B,M,S>" as CuTe DSL does */
  if (strncmp(text + p->pos, "Sw<", 3) == 0 || strncmp(text + p->pos, "S<", 2) == 0) {
    int64_t bms[3], off = 0;
    p->pos += text[p->pos + 1] == 'w' ? 3 : 2;
    for (int k = 0; k < 3; k++) {
      p_ws(p);
      TRY(p_int(p, &bms[k]));
      p_ws(p);
      if (p->s[p->pos] != (k < 2 ? ',' : '>')) return p_unexpected(p);
      p->pos++;
    }
    for (int k = 0; k < 3; k++)
      if (bms[k] < -62 || bms[k] > 62)
        return cute_err_setf(err, CUTE_E_DOMAIN, "parse: invalid swizzle in \"%.400s\"",
                          text);
    out->sw_b = (int32_t)bms[0];
    out->sw_m = (int32_t)bms[1];
    out->sw_s = (int32_t)bms[2];
    if (!cv_swizzle_ok(out->sw_b, out->sw_m, out->sw_s))
      return cute_err_setf(err, CUTE_E_DOMAIN, "parse: invalid swizzle Sw<%d,%d,%d> in \"%.400s\"",
                        (int)bms[0], (int)bms[1], (int)bms[2], text);
    p_ws(p);
    if (!p->s[p->pos]) { out->type = CUTE_V_SWIZZLE; return 0; }
    if (p->s[p->pos] != 'o') return p_unexpected(p);
    p->pos++;
    p_ws(p);
    TRY(p_int(p, &off));
    p_ws(p);
    if (p->s[p->pos] != 'o') return p_unexpected(p);
    p->pos++;
    int start = p->pos;
    TRY(p_term(p));
    p_ws(p);
    if (p->s[p->pos]) return p_unexpected(p);
    if (p->nd[0].kind != P_LAYOUT)
      return cute_err_setf(err, CUTE_E_PARSE,
                        "parse: composed layout needs a layout after the offset, got "
                        "\"%.300s\"", text + start);
    TRY(pn_layout(p, 0, out));
    out->type = CUTE_V_COMPOSED;
    out->offset = off;
    return 0;
  }
  TRY(p_term(p));
  p_ws(p);
  if (p->s[p->pos]) {
    cv_init(out, CUTE_V_NONE);
    return p_unexpected(p);
  }
  int rc = 0;
  switch (p->nd[0].kind) {
  case P_LAYOUT:
    rc = pn_layout(p, 0, out);
    out->type = CUTE_V_LAYOUT;
    break;
  case P_INT:
    rc = pn_emit(p, 0, out);
    out->type = CUTE_V_INT;
    break;
  case P_UNDER:
    rc = pn_emit(p, 0, out);
    out->type = CUTE_V_UNDER;
    break;
  default:
    rc = pn_emit(p, 0, out);
    out->type = pn_has(p, 0, P_LAYOUT) ? CUTE_V_TILER : CUTE_V_TUPLE;
  }
  if (rc) cv_init(out, CUTE_V_NONE);
  return rc;
}
