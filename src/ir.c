/* ir.c -- kernel IR context: the op tables, strings, types, constants and
 * inspection (constants: ir_const.c).  Builder entry points are in ir_build.c, the checks in
 * ir_check*.c, the text form in ir_print.c / ir_parse.c.  Calls nothing in
 * those files. */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tables ------------------------------------------------------------ */
const ir_opinfo ir_ops[IR_NOPS] = {
#define IR_OPROW(id, name, mn, mx, k1, k2, fl, rt) {name, mn, mx, k1, k2, fl, rt},
    IROPDEF(IR_OPROW)
#undef IR_OPROW
};

static const char *const ir_hint_names[] = {IR_HINT_NAMES};
static const char *const ir_rnd_names[] = {IR_RND_NAMES};
static const char *const ir_math_names[] = {IR_MATH_NAMES};
static const char *const ir_sreg_names[] = {IR_SREG_NAMES};
static const char *const ir_scope_names[] = {IR_SCOPE_NAMES};
static const char *const ir_shfl_names[] = {IR_SHFL_NAMES};
static const char *const ir_vote_names[] = {IR_VOTE_NAMES};
static const char *const ir_atom_names[] = {IR_ATOM_NAMES};

#define IR_NN(a) ((int)(sizeof(a) / sizeof((a)[0])))
const ir_immkind ir_immk[IK_COUNT_] = {
#define IR_IKROW(id, key, names, nn, str) {key, names, nn, str},
    IMMKDEF(IR_IKROW)
#undef IR_IKROW
};

/* every row of src/irdef.h against the public enums of include/cute_ir.h */
_Static_assert((int)IR_NOPS == (int)CUTE_IR_OP_COUNT_, "irdef.h and cute_ir.h have different opcode counts");
#define IR_OPASSERT(id, name, mn, mx, k1, k2, fl, rt) \
  _Static_assert((int)IR_##id == (int)CUTE_IR_##id, "irdef.h and cute_ir.h differ at opcode " #id);
IROPDEF(IR_OPASSERT)
#undef IR_OPASSERT
enum {
  IRT_BASE_ = 0,
#define IR_TYENUM(id, name, bits, cls) IRT_##id,
  IRTYDEF(IR_TYENUM)
#undef IR_TYENUM
};
#define IR_TYASSERT(id, name, bits, cls) \
  _Static_assert((int)IRT_##id == (int)CUTE_T_##id, "irdef.h and cute_ir.h differ at type " #id);
IRTYDEF(IR_TYASSERT)
#undef IR_TYASSERT
_Static_assert(IR_NN(ir_hint_names) == CUTE_HINT_VOLATILE + 1, "hint names");
_Static_assert(IR_NN(ir_rnd_names) == CUTE_RND_RP + 1, "rounding names");
_Static_assert(IR_NN(ir_math_names) == CUTE_MATH_FAST + 1, "math names");
_Static_assert(IR_NN(ir_scope_names) == CUTE_SCOPE_SYS + 1, "scope names");
_Static_assert(IR_NN(ir_shfl_names) == CUTE_SHFL_BFLY + 1, "shfl names");
_Static_assert(IR_NN(ir_vote_names) == CUTE_VOTE_BALLOT + 1, "vote names");
_Static_assert(IR_NN(ir_atom_names) == CUTE_ATOM_DEC + 1, "atom names");
_Static_assert(IR_NN(ir_sreg_names) == CUTE_SREG_COUNT_, "sreg names");

static const struct { const char *name; int bits, cls; } ir_scalars[] = {
    {"?", 0, 0},
#define IR_TYROW(id, name, bits, cls) {name, bits, cls},
    IRTYDEF(IR_TYROW)
#undef IR_TYROW
};
static const char *const ir_space_names[] = {IR_SPACE_NAMES};

/* ---- growable buffer ------------------------------------------------------ */
void ir_buf_put(ir_buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t nc = b->cap ? b->cap * 2 : 1024;
    while (nc < b->n + n + 1) nc *= 2;
    char *p = realloc(b->p, nc);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = nc;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}
void ir_buf_puts(ir_buf *b, const char *s) { ir_buf_put(b, s, strlen(s)); }
void ir_buf_printf(ir_buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof tmp) { ir_buf_put(b, tmp, (size_t)n); return; }
  char *big = malloc((size_t)n + 1);
  if (!big) { b->oom = 1; return; }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  ir_buf_put(b, big, (size_t)n);
  free(big);
}
void ir_buf_quote(ir_buf *b, const char *s) {
  ir_buf_put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char t[8];
    if (*p == '"' || *p == '\\') { t[0] = '\\'; t[1] = (char)*p; ir_buf_put(b, t, 2); }
    else if (*p == '\n') ir_buf_put(b, "\\n", 2);
    else if (*p == '\t') ir_buf_put(b, "\\t", 2);
    else if (*p < 32 || *p >= 127) { snprintf(t, sizeof t, "\\x%02x", *p); ir_buf_put(b, t, 4); }
    else ir_buf_put(b, (const char *)p, 1);
  }
  ir_buf_put(b, "\"", 1);
}

/* ---- errors ------------------------------------------------------------------ */
int ir_fail(cute_ir *ir, int code, const char *fmt, ...) {
  if (ir->err_code) return ir->err_code;
  ir->err_code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ir->err, sizeof ir->err, fmt, ap);
  va_end(ap);
  return code;
}

/* ---- strings (interned) ---------------------------------------------------------- */
static uint32_t ir_hash(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
  return h;
}

int32_t ir_str(cute_ir *ir, const char *s, size_t len) {
  if (!s) return 0;
  if (len == 0) return 0;
  if ((ir->nstrs + 1) * 2 > ir->shcap) {
    int32_t nc = ir->shcap ? ir->shcap * 2 : 64;
    int32_t *h = calloc((size_t)nc, sizeof *h);
    if (!h) return -1;
    for (int32_t i = 1; i < ir->nstrs; i++) {
      uint32_t k = ir_hash(ir->strs[i], strlen(ir->strs[i])) & (uint32_t)(nc - 1);
      while (h[k]) k = (k + 1) & (uint32_t)(nc - 1);
      h[k] = i;
    }
    free(ir->shash);
    ir->shash = h;
    ir->shcap = nc;
  }
  uint32_t k = ir_hash(s, len) & (uint32_t)(ir->shcap - 1);
  while (ir->shash[k]) {
    const char *t = ir->strs[ir->shash[k]];
    if (strlen(t) == len && !memcmp(t, s, len)) return ir->shash[k];
    k = (k + 1) & (uint32_t)(ir->shcap - 1);
  }
  if (ir->nstrs >= ir->capstrs) {
    int32_t nc = ir->capstrs * 2;
    char **p = realloc(ir->strs, sizeof *p * (size_t)nc);
    if (!p) return -1;
    ir->strs = p;
    ir->capstrs = nc;
  }
  char *c = malloc(len + 1);
  if (!c) return -1;
  memcpy(c, s, len);
  c[len] = 0;
  ir->strs[ir->nstrs] = c;
  ir->shash[k] = ir->nstrs;
  return ir->nstrs++;
}

const char *ir_strget(const cute_ir *ir, int32_t id) {
  return id > 0 && id < ir->nstrs ? ir->strs[id] : "";
}

/* ---- context ------------------------------------------------------------------ */
cute_ir *cute_ir_new(void) {
  cute_ir *ir = calloc(1, sizeof *ir);
  if (!ir) return NULL;
  ir->checks = 1;
  ir->captypes = 64;
  ir->types = calloc((size_t)ir->captypes, sizeof *ir->types);
  ir->capstrs = 64;
  ir->strs = calloc((size_t)ir->capstrs, sizeof *ir->strs);
  ir->capfuncs = 8;
  ir->funcs = calloc((size_t)ir->capfuncs, sizeof *ir->funcs);
  if (!ir->types || !ir->strs || !ir->funcs) { cute_ir_free(ir); return NULL; }
  ir->strs[0] = calloc(1, 1);
  ir->nstrs = 1;
  ir->nfuncs = 1;
  for (int k = CUTE_T_VOID; k <= CUTE_T_F8E5M2; k++) ir->types[k].kind = k;
  ir->ntypes = CUTE_T_F8E5M2 + 1;
  return ir;
}

static void ir_func_free(ir_func *f) {
  free(f->inst);
  free(f->pool);
  free(f->cst);
  free(f->chash);
  free(f->scope.s);
}

void cute_ir_free(cute_ir *ir) {
  if (!ir) return;
  for (int32_t i = 1; i < ir->nfuncs; i++) ir_func_free(&ir->funcs[i]);
  free(ir->funcs);
  for (int32_t i = 0; i < ir->nstrs; i++) free(ir->strs[i]);
  free(ir->strs);
  free(ir->shash);
  free(ir->types);
  free(ir->printbuf);
  free(ir);
}

int cute_ir_status(cute_ir *ir, cute_err *err) {
  if (!ir) {
    if (err) { err->code = CUTE_E_STATE; snprintf(err->msg, sizeof err->msg, "cute_ir: NULL context"); }
    return CUTE_E_STATE;
  }
  if (err) {
    err->code = ir->err_code;
    snprintf(err->msg, sizeof err->msg, "%.1000s", ir->err);
  }
  return ir->err_code;
}

const char *cute_ir_error(cute_ir *ir) { return ir ? ir->err : "NULL context"; }
void cute_ir_set_checks(cute_ir *ir, int on) { if (ir) ir->checks = on != 0; }

void cute_ir_set_loc(cute_ir *ir, const char *file, int line) {
  if (!ir || ir->err_code) return;
  if (!file) ir->loc_file = 0;
  else if (!(ir->loc_file > 0 && !strcmp(ir->strs[ir->loc_file], file)))
    ir->loc_file = ir_str(ir, file, strlen(file));
  if (ir->loc_file < 0) { ir->loc_file = 0; ir_fail(ir, CUTE_E_NOMEM, "out of memory"); }
  ir->loc_line = line;
}

/* ---- types ----------------------------------------------------------------------- */
int ir_scalar_class(int32_t t) { return t >= CUTE_T_VOID && t <= CUTE_T_F8E5M2 ? ir_scalars[t].cls : 0; }
int ir_bits(int32_t t) { return t >= CUTE_T_VOID && t <= CUTE_T_F8E5M2 ? ir_scalars[t].bits : 0; }

int ir_type_valid(const cute_ir *ir, int32_t t) { return t > 0 && t < ir->ntypes; }

int32_t ir_scalar_of(const cute_ir *ir, int32_t t) {
  if (!ir_type_valid(ir, t)) return 0;
  return ir->types[t].kind == CUTE_T_VEC ? ir->types[t].elem : t;
}
int ir_is_int(const cute_ir *ir, int32_t t) {
  int c = ir_scalar_class(ir_scalar_of(ir, t));
  return c == 1 || c == 2;
}
int ir_is_float(const cute_ir *ir, int32_t t) { return ir_scalar_class(ir_scalar_of(ir, t)) == 3; }
int ir_is_signed(const cute_ir *ir, int32_t t) { return ir_scalar_class(ir_scalar_of(ir, t)) == 1; }

int ir_tsize(const cute_ir *ir, int32_t t) {
  if (!ir_type_valid(ir, t)) return 0;
  const ir_type *ty = &ir->types[t];
  if (ty->kind == CUTE_T_PTR) return 8;
  if (ty->kind == CUTE_T_VEC || ty->kind == CUTE_T_ARR) return ty->n * ir_tsize(ir, ty->elem);
  if (ty->kind == CUTE_T_BYTES) return ty->n;
  if (ty->kind == CUTE_T_I1) return 1;
  return ir_bits(t) / 8;
}

int32_t ir_type_get(cute_ir *ir, int kind, int n, int32_t elem) {
  if (kind >= CUTE_T_VOID && kind <= CUTE_T_F8E5M2) return kind;
  for (int32_t i = CUTE_T_F8E5M2 + 1; i < ir->ntypes; i++)
    if (ir->types[i].kind == kind && ir->types[i].n == n && ir->types[i].elem == elem) return i;
  if (ir->ntypes >= ir->captypes) {
    int32_t nc = ir->captypes * 2;
    ir_type *p = realloc(ir->types, sizeof *p * (size_t)nc);
    if (!p) { ir_fail(ir, CUTE_E_NOMEM, "out of memory"); return 0; }
    ir->types = p;
    ir->captypes = nc;
  }
  ir->types[ir->ntypes] = (ir_type){kind, n, elem};
  return ir->ntypes++;
}

int32_t cute_ir_t_vec(cute_ir *ir, int32_t elem, int lanes) {
  if (!ir || ir->err_code) return 0;
  int c = ir_scalar_class(elem);
  if (c < 1 || c == CUTE_TC_BOOL || c > CUTE_TC_XFLOAT || (lanes != 2 && lanes != 4 && lanes != 8)) {
    ir_fail(ir, CUTE_E_ARG, "vector type: need 2, 4 or 8 lanes of an int or float scalar (got %d x %s)",
            lanes, ir_type_valid(ir, elem) ? cute_ir_type_name(ir, elem) : "?");
    return 0;
  }
  if (ir_bits(elem) * lanes > 128) {
    ir_fail(ir, CUTE_E_ARG, "vector type: %d x %s is wider than 16 bytes", lanes, ir_scalars[elem].name);
    return 0;
  }
  return ir_type_get(ir, CUTE_T_VEC, lanes, elem);
}

int32_t cute_ir_t_ptr(cute_ir *ir, int32_t elem, int space) {
  if (!ir || ir->err_code) return 0;
  if (!ir_type_valid(ir, elem) || elem == CUTE_T_VOID || elem == CUTE_T_I1) {
    ir_fail(ir, CUTE_E_ARG, "pointer type: bad element type %d", elem);
    return 0;
  }
  if (ir->types[elem].kind == CUTE_T_ARR || ir->types[elem].kind == CUTE_T_BYTES) {
    ir_fail(ir, CUTE_E_ARG, "pointer type: %s is a register value or parameter type, not a memory element type "
            "(point to its element type)", ir_type_str(ir, elem));
    return 0;
  }
  int depth = 0;
  for (int32_t e = elem; ir->types[e].kind == CUTE_T_PTR; e = ir->types[e].elem) depth++;
  if (depth >= 4) {
    ir_fail(ir, CUTE_E_ARG, "pointer type: pointers nest at most 4 deep");
    return 0;
  }
  if (space != 0 && space != 1 && space != 3 && space != 4 && space != 5) {
    ir_fail(ir, CUTE_E_ARG, "pointer type: bad address space %d", space);
    return 0;
  }
  return ir_type_get(ir, CUTE_T_PTR, space, elem);
}

int32_t cute_ir_t_array(cute_ir *ir, int32_t elem, int n) {
  if (!ir || ir->err_code) return 0;
  int c = ir_scalar_class(elem), vec = ir_type_valid(ir, elem) && ir->types[elem].kind == CUTE_T_VEC;
  if (!(c >= 1 && c <= 3) && !vec) {
    ir_fail(ir, CUTE_E_ARG, "array type: element type %s must be a scalar number or a vector",
            ir_type_valid(ir, elem) ? ir_type_str(ir, elem) : "?");
    return 0;
  }
  if (n < 1 || n > CUTE_ARR_MAX) {
    ir_fail(ir, CUTE_E_ARG, "array type: length %d of %s[] out of range 1..%d", n, ir_type_str(ir, elem), CUTE_ARR_MAX);
    return 0;
  }
  return ir_type_get(ir, CUTE_T_ARR, n, elem);
}

int32_t cute_ir_t_bytes(cute_ir *ir, int size, int align) {
  if (!ir || ir->err_code) return 0;
  if (size < 1 || size > CUTE_BYTES_MAX || align < 1 || align > 256 || (align & (align - 1))) {
    ir_fail(ir, CUTE_E_ARG, "bytes type: bytes<%d,%d>: size must be 1..%d and align a power of two 1..256",
            size, align, CUTE_BYTES_MAX);
    return 0;
  }
  return ir_type_get(ir, CUTE_T_BYTES, size, align);
}

int cute_ir_type_kind(cute_ir *ir, int32_t t) {
  return ir && ir_type_valid(ir, t) ? ir->types[t].kind : 0;
}
int32_t cute_ir_type_elem(cute_ir *ir, int32_t t, int *n) {
  if (!ir || !ir_type_valid(ir, t) || ir->types[t].kind < CUTE_T_VEC) { if (n) *n = 0; return 0; }
  if (n) *n = ir->types[t].n;
  if (ir->types[t].kind == CUTE_T_BYTES) return 0;
  return ir->types[t].elem;
}
int cute_ir_type_size(cute_ir *ir, int32_t t) { return ir ? ir_tsize(ir, t) : 0; }

int ir_type_fmt(const cute_ir *ir, int32_t t, char *buf, size_t cap) {
  if (!ir_type_valid(ir, t)) return snprintf(buf, cap, "?");
  const ir_type *ty = &ir->types[t];
  if (ty->kind == CUTE_T_VEC) return snprintf(buf, cap, "%sx%d", ir_scalars[ty->elem].name, ty->n);
  if (ty->kind == CUTE_T_BYTES) return snprintf(buf, cap, "bytes<%d,%d>", ty->n, ty->elem);
  if (ty->kind == CUTE_T_ARR) {
    int n = ir_type_fmt(ir, ty->elem, buf, cap);
    if (n < 0 || (size_t)n >= cap) return n;
    return n + snprintf(buf + n, cap - (size_t)n, "[%d]", ty->n);
  }
  if (ty->kind == CUTE_T_PTR) {
    int n = snprintf(buf, cap, "ptr.%s.", ir_space_names[ty->n]);
    if (n < 0 || (size_t)n >= cap) return n;
    return n + ir_type_fmt(ir, ty->elem, buf + n, cap - (size_t)n);
  }
  return snprintf(buf, cap, "%s", ir_scalars[ty->kind].name);
}

const char *ir_type_str(cute_ir *ir, int32_t t) {
  char *b = ir->tname[ir->tname_i++ & 3];
  ir_type_fmt(ir, t, b, sizeof ir->tname[0]);
  return b;
}
const char *cute_ir_type_name(cute_ir *ir, int32_t t) { return ir ? ir_type_str(ir, t) : "?"; }

static int32_t type_from_text(cute_ir *ir, const char *s, const char **end, int depth);
static int read_num(const char **p, int *v) {
  int n = 0, k = 0;
  while (**p >= '0' && **p <= '9' && n < 100000) n = n * 10 + (*(*p)++ - '0'), k++;
  *v = n;
  return k > 0;
}
/* "bytes<N,A>" or an element type followed by "[N]" (fragment) */
int32_t ir_type_from_text(cute_ir *ir, const char *s, const char **end) {
  *end = s;
  if (!strncmp(s, "bytes<", 6)) {
    const char *p = s + 6;
    int size, align;
    if (!read_num(&p, &size) || *p++ != ',' || !read_num(&p, &align) || *p++ != '>') return 0;
    if (size < 1 || size > CUTE_BYTES_MAX || align < 1 || align > 256 || (align & (align - 1))) return 0;
    int32_t t = ir_type_get(ir, CUTE_T_BYTES, size, align);
    if (t) *end = p;
    return t;
  }
  const char *e;
  int32_t t = type_from_text(ir, s, &e, 0);
  if (!t || *e != '[') { if (t) *end = e; return t; }
  if (ir->types[t].kind == CUTE_T_PTR || !(ir_scalar_class(ir_scalar_of(ir, t)) >= 1 && ir_scalar_class(ir_scalar_of(ir, t)) <= 3))
    return 0;
  const char *p = e + 1;
  int n;
  if (!read_num(&p, &n) || *p != ']' || n < 1 || n > CUTE_ARR_MAX) return 0;
  int32_t a = ir_type_get(ir, CUTE_T_ARR, n, t);
  if (a) *end = p + 1;
  return a;
}
static int32_t type_from_text(cute_ir *ir, const char *s, const char **end, int depth) {
  *end = s;
  if (!strncmp(s, "ptr.", 4)) {
    if (depth >= 4) return 0; /* pointers to pointers, at most 4 deep */
    const char *p = s + 4;
    for (int sp = 0; sp < 6; sp++) {
      size_t l = strlen(ir_space_names[sp]);
      if (l && !strncmp(p, ir_space_names[sp], l) && p[l] == '.') {
        const char *e;
        int32_t el = type_from_text(ir, p + l + 1, &e, depth + 1);
        if (!el) return 0;
        int32_t t = ir_type_get(ir, CUTE_T_PTR, sp, el);
        if (t) *end = e;
        return t;
      }
    }
    return 0;
  }
  size_t n = 0;
  while ((s[n] >= 'a' && s[n] <= 'z' && s[n] != 'x') || (s[n] >= '0' && s[n] <= '9')) n++;
  int32_t sc = 0;
  for (int k = CUTE_T_VOID; k <= CUTE_T_F8E5M2; k++)
    if (strlen(ir_scalars[k].name) == n && !strncmp(s, ir_scalars[k].name, n)) sc = k;
  if (!sc) return 0;
  const char *p = s + n;
  if (*p == 'x' && p[1] >= '0' && p[1] <= '9') {
    int lanes = 0;
    p++;
    while (*p >= '0' && *p <= '9' && lanes < 1000) lanes = lanes * 10 + (*p++ - '0');
    int c = ir_scalar_class(sc);
    if (c < 1 || c == CUTE_TC_BOOL || c > CUTE_TC_XFLOAT || (lanes != 2 && lanes != 4 && lanes != 8) ||
        ir_bits(sc) * lanes > 128)
      return 0;
    int32_t t = ir_type_get(ir, CUTE_T_VEC, lanes, sc);
    if (t) *end = p;
    return t;
  }
  *end = p;
  return sc;
}

int32_t cute_ir_type_parse(cute_ir *ir, const char *name) {
  if (!ir || ir->err_code || !name) return 0;
  const char *e;
  int32_t t = ir_type_from_text(ir, name, &e);
  if (!t || *e) { ir_fail(ir, CUTE_E_PARSE, "bad type name '%.100s'", name); return 0; }
  return t;
}

/* ---- instructions ---------------------------------------------------------------------- */
int32_t ir_vtype(const ir_func *f, int32_t ref) {
  if (ref > 0 && ref < f->ninst) return f->inst[ref].type;
  if (ref < 0 && -ref < f->ncst) return f->cst[-ref].type;
  return 0;
}

const char *ir_locstr(cute_ir *ir, const ir_inst *in, char *buf, size_t cap) {
  if (!in || !in->file) { if (cap) buf[0] = 0; return buf; }
  snprintf(buf, cap, "%s:%d: ", ir_strget(ir, in->file), in->line);
  return buf;
}

/* ---- inspection ------------------------------------------------------------------------- */
int32_t cute_ir_value_type(cute_ir *ir, int32_t v) {
  ir_func *f = ir ? ir_curf(ir) : NULL;
  return f ? ir_vtype(f, v) : 0;
}
int cute_ir_value_op(cute_ir *ir, int32_t v) {
  ir_func *f = ir ? ir_curf(ir) : NULL;
  return f && v > 0 && v < f->ninst ? f->inst[v].op : -1;
}
int32_t cute_ir_count(cute_ir *ir) {
  ir_func *f = ir ? ir_curf(ir) : NULL;
  return f ? f->ninst - 1 : 0;
}
const char *cute_ir_op_name(int op) { return op >= 0 && op < IR_NOPS ? ir_ops[op].name : NULL; }
int cute_ir_op_lookup(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < IR_NOPS; i++)
    if (!strcmp(ir_ops[i].name, name)) return i;
  return -1;
}

int cute_ir_op_arity(int op, int *min_args, int *max_args) {
  if (op < 0 || op >= IR_NOPS) return -1;
  if (min_args) *min_args = ir_ops[op].min_args;
  if (max_args) *max_args = ir_ops[op].max_args;
  return 0;
}
const char *cute_ir_imm_key(int op, int slot) {
  if (op < 0 || op >= IR_NOPS || slot < 0 || slot > 1) return NULL;
  int k = slot ? ir_ops[op].k2 : ir_ops[op].k1;
  return k == IK_NONE ? NULL : ir_immk[k].key;
}
int cute_ir_imm_lookup(int op, int slot, const char *name, int64_t *out) {
  if (op < 0 || op >= IR_NOPS || slot < 0 || slot > 1 || !name) return -1;
  int k = slot ? ir_ops[op].k2 : ir_ops[op].k1;
  if (k == IK_UNROLL && !strcmp(name, "full")) { if (out) *out = CUTE_UNROLL_FULL; return 0; }
  if (k == IK_UNROLL && !strcmp(name, "disable")) { if (out) *out = CUTE_UNROLL_DISABLE; return 0; }
  for (int i = 0; i < ir_immk[k].nnames; i++)
    if (!strcmp(ir_immk[k].names[i], name)) { if (out) *out = i; return 0; }
  return -1;
}
int cute_ir_scalar_info(int32_t t, const char **name, int *bits, int *cls) {
  if (t < CUTE_T_VOID || t > CUTE_T_F8E5M2) return -1;
  if (name) *name = ir_scalars[t].name;
  if (bits) *bits = ir_scalars[t].bits;
  if (cls) *cls = ir_scalars[t].cls;
  return 0;
}
const char *cute_ir_space_name(int space) {
  if (space < 0 || space >= (int)(sizeof ir_space_names / sizeof *ir_space_names)) return NULL;
  return ir_space_names[space][0] ? ir_space_names[space] : NULL;
}

