/* ir_parse.c -- reads the printer's text format (ir_print.c) back into a
 * context through the builder, so parse(print(ir)) == print(ir).
 * Two passes: function headers (so calls may name later functions), then
 * bodies.  Text value numbers are mapped to the refs the builder returns.
 * Errors: CUTE_E_PARSE with "line N: ...", or the builder's own error. */
#include "ir.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pmap {
  int64_t *key;
  int32_t *val;
  int32_t cap, n;
} pmap;

typedef struct ps {
  cute_ir *ir;
  const char *src;
  const char *p;   /* cursor */
  int line;        /* 1-based line of the cursor */
  char msg[900];
  int bad;
  pmap m;
  int64_t *pn;     /* text numbers of every function's parameters, in order */
  int npn, cappn;
} ps;

static int perr(ps *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(ps *s, const char *fmt, ...) {
  if (s->bad) return 1;
  s->bad = 1;
  char t[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t, sizeof t, fmt, ap);
  va_end(ap);
  snprintf(s->msg, sizeof s->msg, "parse: line %d: %s", s->line, t);
  return 1;
}

/* ---- value map -------------------------------------------------------------- */
static void map_clear(pmap *m) {
  free(m->key);
  free(m->val);
  memset(m, 0, sizeof *m);
}
static int map_put(pmap *m, int64_t k, int32_t v) {
  if ((m->n + 1) * 2 > m->cap) {
    int32_t nc = m->cap ? m->cap * 2 : 64;
    int64_t *nk = malloc(sizeof *nk * (size_t)nc);
    int32_t *nv = malloc(sizeof *nv * (size_t)nc);
    if (!nk || !nv) { free(nk); free(nv); return 1; }
    for (int32_t i = 0; i < nc; i++) nk[i] = -1;
    for (int32_t i = 0; i < m->cap; i++)
      if (m->key[i] >= 0) {
        uint32_t h = (uint32_t)(m->key[i] * 2654435761u) & (uint32_t)(nc - 1);
        while (nk[h] >= 0) h = (h + 1) & (uint32_t)(nc - 1);
        nk[h] = m->key[i];
        nv[h] = m->val[i];
      }
    free(m->key);
    free(m->val);
    m->key = nk;
    m->val = nv;
    m->cap = nc;
  }
  uint32_t h = (uint32_t)(k * 2654435761u) & (uint32_t)(m->cap - 1);
  while (m->key[h] >= 0 && m->key[h] != k) h = (h + 1) & (uint32_t)(m->cap - 1);
  if (m->key[h] < 0) m->n++;
  m->key[h] = k;
  m->val[h] = v;
  return 0;
}
static int32_t map_get(const pmap *m, int64_t k) {
  if (!m->cap) return 0;
  uint32_t h = (uint32_t)(k * 2654435761u) & (uint32_t)(m->cap - 1);
  while (m->key[h] >= 0) {
    if (m->key[h] == k) return m->val[h];
    h = (h + 1) & (uint32_t)(m->cap - 1);
  }
  return 0;
}

/* ---- lexing ------------------------------------------------------------------ */
static void skip_ws(ps *s) {
  for (;;) {
    while (*s->p == ' ' || *s->p == '\t' || *s->p == '\r') s->p++;
    if (*s->p == ';') while (*s->p && *s->p != '\n') s->p++;
    else return;
  }
}
static int at_eol(ps *s) {
  skip_ws(s);
  return *s->p == '\n' || *s->p == 0;
}
static void next_line(ps *s) {
  while (*s->p && *s->p != '\n') s->p++;
  if (*s->p == '\n') { s->p++; s->line++; }
}
static int accept(ps *s, const char *tok) {
  skip_ws(s);
  size_t n = strlen(tok);
  if (strncmp(s->p, tok, n)) return 0;
  s->p += n;
  return 1;
}
static int is_idc(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '$';
}
static int ident(ps *s, char *out, size_t cap) {
  skip_ws(s);
  size_t n = 0;
  while (is_idc(s->p[n])) n++;
  if (!n || n >= cap) return 0;
  memcpy(out, s->p, n);
  out[n] = 0;
  s->p += n;
  return 1;
}
static int integer(ps *s, int64_t *v) {
  skip_ws(s);
  char *e;
  errno = 0;
  long long x = strtoll(s->p, &e, 0);
  if (e == s->p || errno) return 0;
  *v = x;
  s->p = e;
  return 1;
}
/* "..." with C escapes, into a malloc'ed string */
static char *string(ps *s) {
  skip_ws(s);
  if (*s->p != '"') { perr(s, "expected a string"); return NULL; }
  s->p++;
  ir_buf b = {0};
  ir_buf_put(&b, "", 0);
  while (*s->p && *s->p != '"' && *s->p != '\n') {
    char c = *s->p++;
    if (c == '\\') {
      char e = *s->p++;
      if (e == 'n') c = '\n';
      else if (e == 't') c = '\t';
      else if (e == '"' || e == '\\') c = e;
      else if (e == 'x') {
        int v = 0, k = 0;
        while (k < 2 && ((*s->p >= '0' && *s->p <= '9') || (*s->p >= 'a' && *s->p <= 'f') || (*s->p >= 'A' && *s->p <= 'F'))) {
          char h = *s->p++;
          v = v * 16 + (h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
          k++;
        }
        if (!k || !v) { free(b.p); perr(s, "bad \\x escape"); return NULL; }
        c = (char)v;
      } else { free(b.p); perr(s, "bad escape \\%c", e ? e : '0'); return NULL; }
    }
    ir_buf_put(&b, &c, 1);
  }
  if (*s->p != '"') { free(b.p); perr(s, "unterminated string"); return NULL; }
  s->p++;
  if (b.oom) { free(b.p); perr(s, "out of memory"); return NULL; }
  return b.p;
}
static int32_t type(ps *s) {
  skip_ws(s);
  const char *e;
  int32_t t = ir_type_from_text(s->ir, s->p, &e);
  if (!t || is_idc(*e)) { perr(s, "expected a type at '%.20s'", s->p); return 0; }
  s->p = e;
  return t;
}

/* %N or value:type */
static int32_t operand(ps *s) {
  skip_ws(s);
  if (*s->p == '%') {
    s->p++;
    int64_t n;
    if (!(*s->p >= '0' && *s->p <= '9') || !integer(s, &n) || n < 0) { perr(s, "bad value name"); return 0; }
    int32_t r = map_get(&s->m, n);
    if (!r) perr(s, "%%%lld is not defined", (long long)n);
    return r;
  }
  const char *start = s->p;
  while (*s->p && *s->p != ':' && *s->p != ',' && *s->p != ' ' && *s->p != '\n' && *s->p != '{') s->p++;
  size_t len = (size_t)(s->p - start);
  if (*s->p != ':' || !len || len > 80) { perr(s, "expected an operand (%%N or value:type) at '%.20s'", start); return 0; }
  char lit[96];
  memcpy(lit, start, len);
  lit[len] = 0;
  s->p++;
  int32_t t = type(s);
  if (!t) return 0;
  int cls = ir_scalar_class(t);
  char *e;
  errno = 0;
  if (cls == 3) {
    int64_t bits;
    if (!strncmp(lit, "0x", 2) || !strncmp(lit, "0X", 2)) {
      bits = (int64_t)strtoull(lit, &e, 16);
      int nb = ir_bits(t);
      if (nb < 64 && ((uint64_t)bits >> nb)) { perr(s, "%s does not fit %s", lit, ir_type_str(s->ir, t)); return 0; }
    } else {
      double d = strtod(lit, &e);
      bits = ir_float_bits(t, d);
    }
    if (*e || errno) { perr(s, "bad float literal '%s'", lit); return 0; }
    return ir_const_bits(s->ir, t, bits);
  }
  if (cls == 1 || cls == 2 || cls == 4) {
    int64_t v;
    if (lit[0] == '-') v = strtoll(lit, &e, 0);
    else v = (int64_t)strtoull(lit, &e, 0);
    if (*e || errno) { perr(s, "bad integer literal '%s'", lit); return 0; }
    return ir_const_bits(s->ir, t, ir_norm_int(t, v));
  }
  perr(s, "constants of type %s are not allowed", ir_type_str(s->ir, t));
  return 0;
}

/* key=value for the immediates of op */
static int immediate(ps *s, int op, int64_t *imm, int64_t *imm2) {
  char key[32];
  if (!ident(s, key, sizeof key) || *s->p != '=') return perr(s, "expected key=value at '%.20s'", s->p);
  s->p++;
  const ir_opinfo *oi = &ir_ops[op];
  int kinds[2] = {oi->k1, oi->k2};
  for (int i = 0; i < 2; i++) {
    if (kinds[i] == IK_NONE || strcmp(ir_immk[kinds[i]].key, key)) continue;
    const ir_immkind *k = &ir_immk[kinds[i]];
    int64_t v = 0;
    if (k->is_str) {
      char *str = string(s);
      if (!str) return 1;
      v = ir_str(s->ir, str, strlen(str));
      free(str);
      if (v < 0) return perr(s, "out of memory");
    } else if (kinds[i] == IK_FN) {
      char nm[256];
      if (!accept(s, "@") || !ident(s, nm, sizeof nm)) return perr(s, "expected fn=@name");
      for (int32_t f = 1; f < s->ir->nfuncs; f++)
        if (!strcmp(ir_strget(s->ir, s->ir->funcs[f].name), nm)) v = f;
      if (!v) return perr(s, "no function @%s", nm);
    } else if (k->names && !(*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))) {
      char nm[32];
      if (!ident(s, nm, sizeof nm)) return perr(s, "bad value for %s", key);
      v = -1;
      for (int j = 0; j < k->nnames; j++)
        if (*k->names[j] && !strcmp(k->names[j], nm)) v = j;
      if (v < 0) return perr(s, "unknown %s '%s'", key, nm);
    } else if (kinds[i] == IK_UNROLL && accept(s, "full")) {
      v = CUTE_UNROLL_FULL;
    } else if (kinds[i] == IK_UNROLL && accept(s, "disable")) {
      v = CUTE_UNROLL_DISABLE;
    } else if (!integer(s, &v)) {
      return perr(s, "bad value for %s", key);
    }
    if (i == 0) *imm = v;
    else *imm2 = v;
    return 0;
  }
  return perr(s, "%s has no attribute '%s'", oi->name, key);
}

/* ---- headers ----------------------------------------------------------------------- */
static int header(ps *s) {
  cute_ir *ir = s->ir;
  char kw[16], name[256];
  if (!ident(s, kw, sizeof kw)) return perr(s, "expected kernel or func");
  int kind = !strcmp(kw, "kernel") ? CUTE_FN_KERNEL : !strcmp(kw, "func") ? CUTE_FN_DEVICE : -1;
  if (kind < 0) return perr(s, "expected kernel or func, got '%s'", kw);
  if (!accept(s, "@") || !ident(s, name, sizeof name)) return perr(s, "expected @name");
  if (!accept(s, "(")) return perr(s, "expected (");
  /* parameters are parsed twice: the return type is needed before the function exists */
  const char *pstart = s->p;
  int depth = 1;
  while (*s->p && *s->p != '\n' && depth) {
    if (*s->p == '"') { while (*++s->p && *s->p != '"' && *s->p != '\n') if (*s->p == '\\' && s->p[1]) s->p++; }
    else if (*s->p == '(') depth++;
    else if (*s->p == ')') depth--;
    if (*s->p && *s->p != '\n') s->p++;
  }
  if (depth) return perr(s, "expected ) after the parameters");
  int32_t ret = CUTE_T_VOID;
  if (accept(s, "->") && !(ret = type(s))) return 1;
  const char *after = s->p;
  if (!cute_ir_func(ir, name, kind, ret)) return 1;
  s->p = pstart;
  if (!accept(s, ")")) {
    for (;;) {
      int64_t n;
      if (!accept(s, "%") || !integer(s, &n)) return perr(s, "expected %%N: type");
      if (!accept(s, ":")) return perr(s, "expected : after %%%lld", (long long)n);
      int32_t t = type(s);
      if (!t) return 1;
      int flags = 0;
      int64_t align = 0;
      char *pname = NULL;
      for (;;) {
        skip_ws(s);
        if (accept(s, "noalias")) flags |= CUTE_P_NOALIAS;
        else if (accept(s, "readonly")) flags |= CUTE_P_READONLY;
        else if (accept(s, "grid_constant")) flags |= CUTE_P_GRID_CONSTANT;
        else if (accept(s, "align=")) { if (!integer(s, &align) || align < 0 || align > 4096) { free(pname); return perr(s, "bad align"); } }
        else if (*s->p == '"') { free(pname); if (!(pname = string(s))) return 1; }
        else break;
      }
      int32_t r = cute_ir_param(ir, t, pname, flags, (int)align);
      free(pname);
      if (!r) return 1;
      if (s->npn >= s->cappn) {
        int nc = s->cappn ? s->cappn * 2 : 32;
        int64_t *np = realloc(s->pn, sizeof *np * (size_t)nc);
        if (!np) return perr(s, "out of memory");
        s->pn = np;
        s->cappn = nc;
      }
      s->pn[s->npn++] = n;
      if (accept(s, ")")) break;
      if (!accept(s, ",")) return perr(s, "expected , or )");
    }
  }
  s->p = after;
  int64_t maxntid = 0, minctasm = 0;
  for (;;) {
    int64_t v;
    if (accept(s, "maxntid=")) { if (!integer(s, &v) || v < 0 || v > 1024) return perr(s, "bad maxntid"); maxntid = v; }
    else if (accept(s, "minctasm=")) { if (!integer(s, &v) || v < 0 || v > 64) return perr(s, "bad minctasm"); minctasm = v; }
    else if (accept(s, "dynsmem=")) { if (!integer(s, &v) || v < 0 || v > 1 << 20) return perr(s, "bad dynsmem"); if (cute_ir_dyn_smem(ir, (int)v)) return 1; }
    else break;
  }
  if ((maxntid || minctasm) && cute_ir_launch_bounds(ir, (int)maxntid, (int)minctasm)) return 1;
  if (!accept(s, "{") || !at_eol(s)) return perr(s, "expected { at the end of the header");
  return 0;
}

/* ---- bodies ------------------------------------------------------------------------ */
static int body_line(ps *s, int *depth) {
  cute_ir *ir = s->ir;
  skip_ws(s);
  if (*s->p == '\n' || !*s->p) return 0;
  if (*s->p == '}') {
    s->p++;
    if (accept(s, "else")) {
      if (!accept(s, "{")) return perr(s, "expected {");
      if (!cute_ir_else(ir)) return 1;
    } else if (accept(s, "do")) {
      int32_t c = operand(s);
      if (!c) return 1;
      if (!accept(s, "{")) return perr(s, "expected {");
      if (!cute_ir_do(ir, c)) return 1;
    } else {
      if (*depth == 0) { *depth = -1; return at_eol(s) ? 0 : perr(s, "junk after }"); }
      if (!cute_ir_end(ir)) return 1;
      (*depth)--;
    }
    return at_eol(s) ? 0 : perr(s, "junk after }");
  }
  if (accept(s, "loc ")) {
    char *file = string(s);
    if (!file) return 1;
    int64_t line;
    if (!integer(s, &line) || line < 0 || line > 0x7fffffff) { free(file); return perr(s, "bad loc line"); }
    cute_ir_set_loc(ir, *file ? file : NULL, (int)line);
    free(file);
    return at_eol(s) ? 0 : perr(s, "junk after loc");
  }
  int64_t name = -1;
  if (*s->p == '%') {
    s->p++;
    if (!integer(s, &name) || name < 0) return perr(s, "bad value name");
    if (!accept(s, "=")) return perr(s, "expected =");
  }
  char opn[40];
  if (!ident(s, opn, sizeof opn)) return perr(s, "expected an op name at '%.20s'", s->p);
  int op = cute_ir_op_lookup(opn);
  if (op < 0 || op == IR_PARAM || op == IR_ELSE || op == IR_DO || op == IR_END)
    return perr(s, "unknown op '%s'", opn);
  int32_t t = CUTE_T_VOID;
  if (name >= 0 && !(t = type(s))) return 1;
  int32_t args[CUTE_ASM_MAX_OPERANDS];
  int n = 0;
  int64_t imm = 0, imm2 = 0;
  skip_ws(s);
  if (*s->p == '%' || *s->p == '-' || (*s->p >= '0' && *s->p <= '9')) {
    for (;;) {
      if (n >= CUTE_ASM_MAX_OPERANDS) return perr(s, "too many operands (at most %d)", CUTE_ASM_MAX_OPERANDS);
      if (!(args[n++] = operand(s))) return 1;
      if (!accept(s, ",")) break;
    }
  }
  int open = 0;
  while (!at_eol(s)) {
    if (accept(s, "{")) { open = 1; if (!at_eol(s)) return perr(s, "junk after {"); break; }
    if (immediate(s, op, &imm, &imm2)) return 1;
  }
  if (open != !!(ir_ops[op].flags & OF_REGION)) return perr(s, open ? "%s does not open a region" : "expected { after %s", opn);
  if (n < ir_ops[op].min_args || n > ir_ops[op].max_args)
    return perr(s, "%s takes %d..%d operands, got %d", opn, ir_ops[op].min_args, ir_ops[op].max_args, n);
  int32_t r = ir_emit(ir, op, t, n, args, imm, imm2);
  if (!r) return 1;
  if (open) (*depth)++;
  if (name >= 0 && map_put(&s->m, name, r)) return perr(s, "out of memory");
  return 0;
}

int cute_ir_parse(cute_ir *ir, const char *text, cute_err *err) {
  if (!ir || !text) {
    if (err) { err->code = CUTE_E_STATE; snprintf(err->msg, sizeof err->msg, "parse: NULL argument"); }
    return CUTE_E_STATE;
  }
  if (ir->err_code) return cute_ir_status(ir, err);
  ps S = {0}, *s = &S;
  s->ir = ir;
  s->src = text;
  int32_t first = ir->nfuncs;
  /* pass 1: headers */
  s->p = text;
  s->line = 1;
  int32_t nf = 0;
  while (*s->p && !s->bad && !ir->err_code) {
    skip_ws(s);
    if (!strncmp(s->p, "kernel", 6) || !strncmp(s->p, "func", 4)) {
      map_clear(&s->m);
      if (header(s)) break;
      nf++;
    }
    next_line(s);
  }
  /* pass 2: bodies */
  int32_t fi = first;
  int pn = 0;
  s->p = text;
  s->line = 1;
  while (*s->p && !s->bad && !ir->err_code) {
    skip_ws(s);
    if (*s->p == '\n' || !*s->p) { next_line(s); continue; }
    if (strncmp(s->p, "kernel", 6) && strncmp(s->p, "func", 4)) { perr(s, "expected kernel or func at '%.20s'", s->p); break; }
    map_clear(&s->m);
    if (fi >= ir->nfuncs) { perr(s, "function headers changed between passes"); break; }
    ir_func *f = &ir->funcs[fi];
    for (int i = 1; i <= f->nparams && pn < s->npn; i++)
      if (map_put(&s->m, s->pn[pn++], i)) { perr(s, "out of memory"); break; }
    cute_ir_func_select(ir, fi);
    cute_ir_set_loc(ir, NULL, 0);
    next_line(s);
    int depth = 0;
    while (*s->p && depth >= 0 && !s->bad && !ir->err_code) {
      if (body_line(s, &depth)) break;
      next_line(s);
    }
    if (!s->bad && !ir->err_code && depth >= 0) perr(s, "missing } at the end of function %s", ir_strget(ir, f->name));
    fi++;
  }
  map_clear(&s->m);
  free(s->pn);
  cute_ir_set_loc(ir, NULL, 0);
  if (ir->err_code) {
    if (err) {
      err->code = ir->err_code;
      snprintf(err->msg, sizeof err->msg, "parse: line %d: %.900s", s->line, ir->err);
    }
    return ir->err_code;
  }
  if (s->bad) {
    ir_fail(ir, CUTE_E_PARSE, "%s", s->msg);
    if (err) { err->code = CUTE_E_PARSE; snprintf(err->msg, sizeof err->msg, "%s", s->msg); }
    return CUTE_E_PARSE;
  }
  (void)nf;
  if (err) { err->code = 0; err->msg[0] = 0; }
  return 0;
}
