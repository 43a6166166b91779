/* ir_check.c -- type inference, per-instruction checks and the verifier.
 * The builder runs the same checks as each instruction is appended; the
 * verifier replays them over whole functions (IR built with checks off, or
 * parsed) and adds the end-of-function checks (terminators, open regions). */
#include "ir.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ir_fmt_ref(cute_ir *ir, ir_func *f, int32_t ref, char *buf, size_t cap) {
  if (ref > 0) {
    snprintf(buf, cap, "%%%d", ref);
  } else if (ref < 0 && -ref < f->ncst) {
    ir_const *c = &f->cst[-ref];
    if (ir_scalar_class(c->type) == 3)
      snprintf(buf, cap, "%.9g:%s", ir_const_as_double(c->type, c->bits), ir_type_str(ir, c->type));
    else if (c->type == CUTE_T_U64)
      snprintf(buf, cap, "%llu:u64", (unsigned long long)c->bits);
    else
      snprintf(buf, cap, "%lld:%s", (long long)c->bits, ir_type_str(ir, c->type));
  } else {
    snprintf(buf, cap, "?%d", ref);
  }
}

static int32_t ptr_elem(const cute_ir *ir, int32_t t, int *space) {
  if (!ir_type_valid(ir, t) || ir->types[t].kind != CUTE_T_PTR) return 0;
  if (space) *space = ir->types[t].n;
  return ir->types[t].elem;
}

static int is_kind(const cute_ir *ir, int32_t t, int kind) {
  return ir_type_valid(ir, t) && ir->types[t].kind == kind;
}

static int is_scalar_num(int32_t t) {
  int c = ir_scalar_class(t);
  return c >= 1 && c <= 3;
}

/* ":<line>: " of the builder's current location (one static buffer: error paths only) */
static const char *loc_line(cute_ir *ir) {
  static __thread char b[24];
  snprintf(b, sizeof b, ":%d: ", ir->loc_line);
  return b;
}

int32_t ir_infer_type(cute_ir *ir, ir_func *f, int op, int nargs, const int32_t *args, int64_t imm,
                      int64_t imm2) {
  int32_t t0 = nargs > 0 ? ir_vtype(f, args[0]) : 0;
  switch (op) {
  case IR_FOR: case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MIN:
  case IR_MAX: case IR_MULHI: case IR_AND: case IR_OR: case IR_XOR: case IR_SHL: case IR_SHR:
  case IR_NEG: case IR_ABS: case IR_NOT: case IR_FMA: case IR_SQRT: case IR_RSQRT: case IR_RCP:
  case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2: case IR_SIN: case IR_COS: case IR_TANH:
  case IR_ERF: case IR_POW: case IR_FLOOR: case IR_CEIL: case IR_TRUNC: case IR_ROUND:
  case IR_BREV: case IR_GEP: case IR_SHFL: case IR_VGET: case IR_INSERT:
    return t0;
  case IR_SELECT: return nargs > 1 ? ir_vtype(f, args[1]) : 0;
  case IR_POPC: case IR_CLZ: case IR_PRMT: return CUTE_T_U32;
  case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE: case IR_ISNAN:
    return CUTE_T_I1;
  case IR_LOAD: case IR_ATOM: case IR_CAS: { int32_t e = ptr_elem(ir, t0, NULL); return e ? e : t0; }
  case IR_EXTRACT: return is_kind(ir, t0, CUTE_T_VEC) || is_kind(ir, t0, CUTE_T_ARR) ? ir->types[t0].elem : t0;
  case IR_PARAMADDR: return ir_type_get(ir, CUTE_T_PTR, CUTE_AS_GENERIC, CUTE_T_U8);
  case IR_VEC:
    if (nargs >= 2 && is_scalar_num(t0) && (nargs == 2 || nargs == 4 || nargs == 8))
      return cute_ir_t_vec(ir, t0, nargs);
    ir_fail(ir, CUTE_E_ARG, "%s%svec: give the vector type explicitly (%d operands)", ir_strget(ir, ir->loc_file),
            ir->loc_file ? loc_line(ir) : "", nargs);
    return 0;
  case IR_SREG: return imm == CUTE_SREG_CLOCK64 || imm == CUTE_SREG_GLOBALTIMER ? CUTE_T_U64 : CUTE_T_U32;
  case IR_VOTE: return imm == CUTE_VOTE_BALLOT ? CUTE_T_U32 : CUTE_T_I1;
  case IR_CALL: return imm > 0 && imm < ir->nfuncs ? ir->funcs[imm].ret : CUTE_T_VOID;
  default:
    if (!(ir_ops[op].flags & OF_RES)) return CUTE_T_VOID;
    ir_fail(ir, CUTE_E_ARG, "%s%s%s: needs an explicit result type", ir_strget(ir, ir->loc_file),
            ir->loc_file ? loc_line(ir) : "", ir_ops[op].name);
    return 0;
  }
}

/* ---- per-instruction checks ----------------------------------------------------- */
typedef struct chk {
  cute_ir *ir;
  ir_func *f;
  int32_t ref;
  ir_inst *in;
  const int32_t *a;
  char *msg;
  size_t cap;
} chk;

/* "op: <what> (%1: i32, %2: f32)" */
static int bad(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(chk *c, const char *fmt, ...) {
  ir_buf b = {0};
  char tmp[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  ir_buf_printf(&b, "%s: %s", ir_ops[c->in->op].name, tmp);
  if (c->in->nargs) {
    ir_buf_puts(&b, " (");
    for (int i = 0; i < c->in->nargs; i++) {
      char r[96];
      ir_fmt_ref(c->ir, c->f, c->a[i], r, sizeof r);
      ir_buf_printf(&b, "%s%s", i ? ", " : "", r);
      if (c->a[i] > 0) ir_buf_printf(&b, ": %s", ir_type_str(c->ir, ir_vtype(c->f, c->a[i])));
    }
    ir_buf_puts(&b, ")");
  }
  snprintf(c->msg, c->cap, "%s", b.p ? b.p : "error");
  free(b.p);
  return 1;
}

#define T(i) ir_vtype(c->f, c->a[i])
#define TS(t) ir_type_str(c->ir, (t))

static int same_args(chk *c, int from, int to) {
  for (int i = from + 1; i <= to; i++)
    if (T(i) != T(from)) return bad(c, "operand types differ");
  return 0;
}

static const ir_open *innermost_loop(const ir_func *f, const ir_scope *sc) {
  for (int i = sc->n - 1; i >= 0; i--) {
    int op = f->inst[sc->s[i].opener].op;
    if (op == IR_FOR) return &sc->s[i];
    if (op == IR_WHILE && sc->s[i].cur != sc->s[i].opener) return &sc->s[i];
  }
  return NULL;
}

static int valid_hint(int op, int64_t h) {
  if (op == IR_LOAD) return h == CUTE_HINT_NONE || (h >= CUTE_HINT_NC && h <= CUTE_HINT_CV) || h == CUTE_HINT_VOLATILE;
  return h == CUTE_HINT_NONE || h == CUTE_HINT_CS || h == CUTE_HINT_CG || h == CUTE_HINT_WB ||
         h == CUTE_HINT_WT || h == CUTE_HINT_VOLATILE;
}

/* Does a value of type t fit the NVPTX inline-asm constraint letter k?
   (LLVM aborts on some mismatches, so they are verifier errors.) */
static int asm_fits(const cute_ir *ir, char k, int32_t t) {
  int size = ir_tsize(ir, t), ptr = is_kind(ir, t, CUTE_T_PTR);
  switch (k) {
  case 'h': return t == CUTE_T_I16 || t == CUTE_T_U16 || t == CUTE_T_F16 || t == CUTE_T_BF16;
  case 'r': return size == 4 && !ptr && t != CUTE_T_I1;
  case 'l': return t == CUTE_T_I64 || t == CUTE_T_U64 || ptr;
  case 'f': return t == CUTE_T_F32;
  case 'd': return t == CUTE_T_F64;
  case 'b': return t == CUTE_T_I1;
  case 'n': return is_scalar_num(t) && ir_scalar_class(t) != 3;
  default: return 0;
  }
}

/* asm: constraints "=r,=r,r,l,n,0,~{memory}" (outputs first, one letter each:
   h r l f d b n; an input may be a digit N: tied to output N, same register),
   outputs matching the result (one per element of a fragment or lane of a
   multi-output vector), inputs matching the operands (a fragment operand stands
   for one input per element), at most CUTE_ASM_MAX_OPERANDS in all, and
   $N / ${N} / ${N:mod} / $$ in the template referring to existing operands. */
static int check_asm(chk *c) {
  cute_ir *ir = c->ir;
  ir_inst *in = c->in;
  const char *tmpl = ir_strget(ir, (int32_t)in->imm), *cons = ir_strget(ir, (int32_t)in->imm2);
  int32_t t = in->type;
  if (!*tmpl) return bad(c, "empty PTX text");
  char letters[CUTE_ASM_MAX_OPERANDS];
  int16_t tie[CUTE_ASM_MAX_OPERANDS];
  int nout = 0, nin = 0, n = 0;
  const char *p = cons;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len >= 3 && p[0] == '~' && p[1] == '{' && p[len - 1] == '}') {
      /* clobber */
    } else {
      int out = len == 2 && p[0] == '=';
      int digits = len > 0 && len <= 3 && strspn(p, "0123456789") >= len;
      char k = out ? p[1] : p[0];
      if (!digits && ((len != 1 && !out) || !strchr("hrlfdbn", k) || (out && k == 'n')))
        return bad(c, "bad constraint '%.*s' in \"%.200s\" (use =h =r =l =f =d =b outputs, h r l f d b n or a tied output number inputs, ~{memory})",
                   (int)len, p, cons);
      if (out && nin) return bad(c, "outputs must come before inputs in \"%.200s\"", cons);
      if (n >= CUTE_ASM_MAX_OPERANDS) return bad(c, "too many operands: more than %d in \"%.80s...\"", CUTE_ASM_MAX_OPERANDS, cons);
      tie[n] = -1;
      if (digits) {
        int k2 = atoi(p);
        if (k2 >= nout) return bad(c, "tied input '%.*s' does not name an output (there are %d)", (int)len, p, nout);
        tie[n] = (int16_t)k2;
        k = 'T';
      }
      letters[n++] = k;
      if (out) nout++;
      else nin++;
    }
    if (!e) break;
    p = e + 1;
    if (!*p) return bad(c, "empty constraint in \"%.200s\"", cons);
  }
  int arr = is_kind(ir, t, CUTE_T_ARR), vec = is_kind(ir, t, CUTE_T_VEC) && nout > 1;
  int want = t == CUTE_T_VOID ? 0 : arr || vec ? ir->types[t].n : 1;
  int32_t ot = arr || vec ? ir->types[t].elem : t;
  if (nout != want) return bad(c, "\"%.200s\" has %d outputs for a %s result (%d)", cons, nout, TS(t), want);
  for (int i = 0; i < nout; i++)
    if (!asm_fits(ir, letters[i], ot)) return bad(c, "output %d: '%c' does not hold %s", i, letters[i], TS(ot));
  int j = nout;
  for (int i = 0; i < in->nargs; i++) {
    int32_t at = T(i);
    int w = is_kind(ir, at, CUTE_T_ARR) ? ir->types[at].n : 1;
    int32_t et = w > 1 || is_kind(ir, at, CUTE_T_ARR) ? ir->types[at].elem : at;
    if (j + w > n) return bad(c, "\"%.200s\" has %d inputs, too few for the operands", cons, nin);
    for (int e = 0; e < w; e++, j++) {
      if (letters[j] == 'T') {
        if (et != ot) return bad(c, "operand %d: %s is tied to output %d of type %s", i + 1, TS(et), tie[j], TS(ot));
      } else if (!asm_fits(ir, letters[j], et)) {
        return bad(c, "operand %d%s: '%c' does not hold %s", i + 1, w > 1 ? " (an element)" : "", letters[j], TS(et));
      }
      if (letters[j] == 'n' && c->a[i] >= 0) return bad(c, "operand %d: 'n' needs a constant", i + 1);
    }
  }
  if (j != n) return bad(c, "\"%.200s\" has %d inputs for %d operand values", cons, nin, j - nout);
  for (const char *q = tmpl; *q; q++) {
    if (*q != '$') continue;
    q++;
    if (*q == '$') continue;
    int braces = *q == '{';
    if (braces) q++;
    if (*q < '0' || *q > '9') return bad(c, "bad $ in the PTX text (write $$ for a literal $)");
    long k = 0;
    while (*q >= '0' && *q <= '9' && k < 100000) k = k * 10 + (*q++ - '0');
    if (braces) {
      if (*q == ':') { q++; while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) q++; }
      if (*q != '}') return bad(c, "bad ${...} in the PTX text");
    } else {
      q--;
    }
    if (k >= n) return bad(c, "$%ld in the PTX text, but there are %d operands", k, n);
  }
  return 0;
}

int ir_check_inst(cute_ir *ir, ir_func *f, int32_t ref, ir_scope *sc, char *msg, size_t cap) {
  ir_inst *in = &f->inst[ref];
  chk cc = {ir, f, ref, in, ir_args(f, in), msg, cap}, *c = &cc;
  const int32_t *a = cc.a;
  int n = in->nargs;
  int32_t t = in->type;
  if (in->op >= IR_NOPS) return snprintf(msg, cap, "bad opcode %d", in->op), 1;
  const ir_opinfo *oi = &ir_ops[in->op];
  if (n < oi->min_args || n > oi->max_args) return bad(c, "takes %d..%d operands, got %d", oi->min_args, oi->max_args, n);
  if (!ir_type_valid(ir, t)) return bad(c, "bad result type");
  if (oi->flags & OF_RESV) return bad(c, "reserved op, not implemented yet");
  if ((oi->flags & OF_RES) && t == CUTE_T_VOID) return bad(c, "needs a result type");
  if (!(oi->flags & OF_RES) && t != CUTE_T_VOID && in->op != IR_IF && in->op != IR_CALL && in->op != IR_ASM)
    return bad(c, "has no result (type %s given)", TS(t));
  /* operands: defined before, visible here, with a value */
  for (int i = 0; i < n; i++) {
    int32_t v = a[i];
    if (v < 0) {
      if (-v >= f->ncst) return bad(c, "operand %d: bad constant ref", i + 1);
      continue;
    }
    if (v == 0 || v >= ref) return bad(c, "operand %d (%%%d) is used before it is defined", i + 1, v);
    ir_inst *d = &f->inst[v];
    if (d->type == CUTE_T_VOID) return bad(c, "operand %d (%%%d, %s) has no value", i + 1, v, ir_ops[d->op].name);
    int32_t r = d->region;
    if (r && (f->inst[r].state & 3) != 1) {
      char lb[200];
      ir_locstr(ir, d, lb, sizeof lb);
      return bad(c, "%%%d is used outside its region (defined %sinside the %s region opened at %%%d)",
                 v, lb, ir_ops[f->inst[r].op].name, r);
    }
    if (d->op == IR_FOR && (d->state & 3) != 1)
      return bad(c, "loop variable %%%d is used outside its loop", v);
    if (d->op == IR_IF && !(d->state & 4))
      return bad(c, "the result %%%d of an if is used before the if ends", v);
    if (d->op == IR_VAR && !((in->op == IR_VGET || in->op == IR_VSET) && i == 0))
      return bad(c, "variable %%%d used as a value (use vget)", v);
    if (is_kind(ir, d->type, CUTE_T_BYTES) && in->op != IR_PARAMADDR)
      return bad(c, "operand %d (%%%d, %s) is a by-value parameter: take its address with param.addr", i + 1, v, TS(d->type));
  }
  int sp = 0;
  switch (in->op) {
  case IR_PARAM:
    if (ref > f->nparams && f->nparams != ref - 1) return bad(c, "parameters must come first");
    return 0;
  case IR_FOR:
    if (!ir_is_int(ir, T(0)) || is_kind(ir, T(0), CUTE_T_VEC)) return bad(c, "bounds must be scalar integers");
    if (same_args(c, 0, 2)) return 1;
    if (t != T(0)) return bad(c, "result type %s differs from the bounds' type", TS(t));
    if (in->imm < -2) return bad(c, "bad unroll hint %lld", (long long)in->imm);
    return 0;
  case IR_IF:
    if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
    if (t != CUTE_T_VOID && ((is_kind(ir, t, CUTE_T_PTR) == 0 && ir_tsize(ir, t) == 0) || is_kind(ir, t, CUTE_T_BYTES)))
      return bad(c, "bad result type");
    return 0;
  case IR_DO:
    if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
    return 0;
  case IR_ELSE: case IR_WHILE: case IR_END:
    if (t != CUTE_T_VOID) return bad(c, "has no result");
    return 0;
  case IR_YIELD: {
    const ir_open *top = sc->n ? &sc->s[sc->n - 1] : NULL;
    if (!top || f->inst[top->opener].op != IR_IF || f->inst[top->opener].type == CUTE_T_VOID)
      return bad(c, "yield outside an if with a result");
    if (T(0) != f->inst[top->opener].type)
      return bad(c, "yields %s but the if (%%%d) has type %s", TS(T(0)), top->opener, TS(f->inst[top->opener].type));
    return 0;
  }
  case IR_BREAK: case IR_CONTINUE:
    if (!innermost_loop(f, sc)) return bad(c, "not inside a loop body");
    return 0;
  case IR_RET:
    if (f->ret == CUTE_T_VOID && n) return bad(c, "function %s returns void", ir_strget(ir, f->name));
    if (f->ret != CUTE_T_VOID && (!n || T(0) != f->ret))
      return bad(c, "function %s returns %s", ir_strget(ir, f->name), TS(f->ret));
    return 0;
  case IR_CALL: {
    if (in->imm <= 0 || in->imm >= ir->nfuncs) return bad(c, "no function %lld", (long long)in->imm);
    ir_func *g = &ir->funcs[in->imm];
    if (g->kind != CUTE_FN_DEVICE) return bad(c, "cannot call kernel %s", ir_strget(ir, g->name));
    if (n != g->nparams) return bad(c, "%s takes %d arguments, got %d", ir_strget(ir, g->name), g->nparams, n);
    for (int i = 0; i < n; i++)
      if (T(i) != g->inst[i + 1].type)
        return bad(c, "argument %d of %s must be %s", i + 1, ir_strget(ir, g->name), TS(g->inst[i + 1].type));
    if (t != g->ret) return bad(c, "result type must be %s", TS(g->ret));
    return 0;
  }
  case IR_VAR:
    if (t == CUTE_T_VOID) return bad(c, "variable needs a type");
    if (is_kind(ir, t, CUTE_T_BYTES)) return bad(c, "%s is a parameter type, not a variable type", TS(t));
    if (n && T(0) != t) return bad(c, "initial value is not %s", TS(t));
    return 0;
  case IR_VGET: case IR_VSET:
    if (a[0] <= 0 || f->inst[a[0]].op != IR_VAR) return bad(c, "first operand is not a variable");
    if (in->op == IR_VGET && t != f->inst[a[0]].type) return bad(c, "result type must be %s", TS(f->inst[a[0]].type));
    if (in->op == IR_VSET && T(1) != f->inst[a[0]].type)
      return bad(c, "type mismatch: variable %%%d is %s", a[0], TS(f->inst[a[0]].type));
    return 0;
  case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MIN: case IR_MAX:
    if (!ir_is_int(ir, T(0)) && !ir_is_float(ir, T(0))) return bad(c, "needs numbers");
    if (same_args(c, 0, 1)) return 1;
    break;
  case IR_MULHI:
    if (!ir_is_int(ir, T(0)) || is_kind(ir, T(0), CUTE_T_VEC) || ir_bits(T(0)) < 16) return bad(c, "needs 16..64-bit scalar integers");
    if (same_args(c, 0, 1)) return 1;
    break;
  case IR_AND: case IR_OR: case IR_XOR:
    if (!ir_is_int(ir, T(0)) && T(0) != CUTE_T_I1) return bad(c, "needs integers or i1");
    if (same_args(c, 0, 1)) return 1;
    break;
  case IR_SHL: case IR_SHR:
    if (!ir_is_int(ir, T(0))) return bad(c, "needs integers");
    if (same_args(c, 0, 1)) return 1;
    break;
  case IR_NEG:
    if (!ir_is_int(ir, T(0)) && !ir_is_float(ir, T(0))) return bad(c, "needs a number");
    break;
  case IR_ABS:
    if (!ir_is_float(ir, T(0)) && !ir_is_signed(ir, T(0))) return bad(c, "needs a signed integer or a float");
    break;
  case IR_NOT:
    if (!ir_is_int(ir, T(0)) && T(0) != CUTE_T_I1) return bad(c, "needs an integer or i1");
    break;
  case IR_FMA:
    if (!ir_is_float(ir, T(0))) return bad(c, "needs floats");
    if (same_args(c, 0, 2)) return 1;
    break;
  case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE:
    if (!is_scalar_num(T(0)) && !(T(0) == CUTE_T_I1 && (in->op == IR_EQ || in->op == IR_NE)) &&
        !is_kind(ir, T(0), CUTE_T_PTR))
      return bad(c, "needs scalar numbers");
    if (same_args(c, 0, 1)) return 1;
    if (t != CUTE_T_I1) return bad(c, "result must be i1");
    return 0;
  case IR_ISNAN:
    if (!is_scalar_num(T(0)) || !ir_is_float(ir, T(0))) return bad(c, "needs a scalar float");
    if (t != CUTE_T_I1) return bad(c, "result must be i1");
    return 0;
  case IR_SELECT:
    if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
    if (same_args(c, 1, 2)) return 1;
    if (t != T(1)) return bad(c, "result type %s differs from the operands'", TS(t));
    return 0;
  case IR_CVT: {
    int32_t s = T(0);
    int vs = is_kind(ir, s, CUTE_T_VEC), vt = is_kind(ir, t, CUTE_T_VEC);
    if (vs != vt || (vs && ir->types[s].n != ir->types[t].n)) return bad(c, "cannot convert %s to %s", TS(s), TS(t));
    int32_t ss = ir_scalar_of(ir, s), st = ir_scalar_of(ir, t);
    if (!(is_scalar_num(ss) || ss == CUTE_T_I1) || !(is_scalar_num(st) || st == CUTE_T_I1))
      return bad(c, "cannot convert %s to %s (use bitcast for pointers)", TS(s), TS(t));
    if (in->imm < 0 || in->imm > CUTE_RND_RP) return bad(c, "bad rounding mode %lld", (long long)in->imm);
    if (in->imm && (vs || st == CUTE_T_I1 || ss == CUTE_T_I1 || (ir_scalar_class(ss) != 3 && ir_scalar_class(st) != 3)))
      return bad(c, "a rounding mode needs a scalar conversion to or from a float");
    return 0;
  }
  case IR_BITCAST: {
    int32_t s = T(0);
    int ps = is_kind(ir, s, CUTE_T_PTR), pt = is_kind(ir, t, CUTE_T_PTR);
    if (ps && pt) return bad(c, "use ptrcast between pointers");
    if (is_kind(ir, s, CUTE_T_ARR) || is_kind(ir, t, CUTE_T_ARR)) return bad(c, "cannot bitcast a fragment (%s -> %s)", TS(s), TS(t));
    if ((ps && t != CUTE_T_I64 && t != CUTE_T_U64) || (pt && s != CUTE_T_I64 && s != CUTE_T_U64))
      return bad(c, "pointers bitcast to and from i64/u64 only");
    if (s == CUTE_T_I1 || t == CUTE_T_I1 || t == CUTE_T_VOID || ir_tsize(ir, s) != ir_tsize(ir, t))
      return bad(c, "cannot bitcast %s to %s (sizes differ)", TS(s), TS(t));
    return 0;
  }
  case IR_PTRCAST: {
    int ss = 0, ts = 0;
    if (!ptr_elem(ir, T(0), &ss) || !ptr_elem(ir, t, &ts)) return bad(c, "needs pointers (%s -> %s)", TS(T(0)), TS(t));
    if (ss != ts && ss != CUTE_AS_GENERIC && ts != CUTE_AS_GENERIC)
      return bad(c, "wrong address space: cannot cast %s to %s (only to or from generic)", TS(T(0)), TS(t));
    return 0;
  }
  case IR_SQRT: case IR_RSQRT: case IR_RCP: case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2:
  case IR_SIN: case IR_COS: case IR_TANH: case IR_ERF: case IR_POW:
    if (in->imm < 0 || in->imm > 1) return bad(c, "bad math mode %lld", (long long)in->imm);
    /* fallthrough */
  case IR_FLOOR: case IR_CEIL: case IR_TRUNC: case IR_ROUND:
    if (!is_scalar_num(T(0)) || !ir_is_float(ir, T(0))) return bad(c, "needs a scalar float");
    if (same_args(c, 0, n - 1)) return 1;
    break;
  case IR_POPC: case IR_CLZ:
    if (!is_scalar_num(T(0)) || !ir_is_int(ir, T(0)) || ir_bits(T(0)) < 32) return bad(c, "needs a 32- or 64-bit integer");
    if (t != CUTE_T_U32) return bad(c, "result must be u32");
    return 0;
  case IR_BREV:
    if (!is_scalar_num(T(0)) || !ir_is_int(ir, T(0)) || ir_bits(T(0)) < 32) return bad(c, "needs a 32- or 64-bit integer");
    break;
  case IR_PRMT:
    for (int i = 0; i < 3; i++)
      if (T(i) != CUTE_T_U32 && T(i) != CUTE_T_I32) return bad(c, "needs 32-bit integers");
    if (t != CUTE_T_U32) return bad(c, "result must be u32");
    return 0;
  case IR_EXTRACT:
    if (!is_kind(ir, T(0), CUTE_T_VEC) && !is_kind(ir, T(0), CUTE_T_ARR)) return bad(c, "needs a vector or a fragment");
    if (in->imm < 0 || in->imm >= ir->types[T(0)].n)
      return bad(c, "index %lld out of range 0..%d of %s", (long long)in->imm, ir->types[T(0)].n - 1, TS(T(0)));
    if (t != ir->types[T(0)].elem) return bad(c, "result type must be %s", TS(ir->types[T(0)].elem));
    return 0;
  case IR_INSERT:
    if (!is_kind(ir, T(0), CUTE_T_VEC) && !is_kind(ir, T(0), CUTE_T_ARR)) return bad(c, "needs a vector or a fragment");
    if (in->imm < 0 || in->imm >= ir->types[T(0)].n)
      return bad(c, "index %lld out of range 0..%d of %s", (long long)in->imm, ir->types[T(0)].n - 1, TS(T(0)));
    if (T(1) != ir->types[T(0)].elem) return bad(c, "value must be %s", TS(ir->types[T(0)].elem));
    break;
  case IR_VEC:
    if (!is_kind(ir, t, CUTE_T_VEC) && !is_kind(ir, t, CUTE_T_ARR)) return bad(c, "result must be a vector or fragment type");
    if (n != 1 && n != ir->types[t].n) return bad(c, "%s needs %d elements (or 1 to splat)", TS(t), ir->types[t].n);
    for (int i = 0; i < n; i++)
      if (T(i) != ir->types[t].elem) return bad(c, "wrong element type: element %d is %s, %s holds %s", i + 1, TS(T(i)), TS(t), TS(ir->types[t].elem));
    return 0;
  case IR_PARAMADDR: {
    int32_t v = a[0];
    if (v <= 0 || f->inst[v].op != IR_PARAM || !is_kind(ir, T(0), CUTE_T_BYTES))
      return bad(c, "operand must be a bytes parameter");
    if (!(f->inst[v].imm2 & CUTE_P_GRID_CONSTANT))
      return bad(c, "parameter %%%d is not grid_constant (its address would be a per-thread copy)", v);
    int sp2 = 0;
    if (!ptr_elem(ir, t, &sp2) || sp2 != CUTE_AS_GENERIC) return bad(c, "result must be a generic pointer, not %s", TS(t));
    return 0;
  }
  case IR_LOAD: case IR_STORE: {
    int32_t e = ptr_elem(ir, T(0), &sp);
    if (!e) return bad(c, "first operand must be a pointer");
    if (in->op == IR_LOAD && t != e) return bad(c, "result type must be %s", TS(e));
    if (in->op == IR_STORE && T(1) != e) return bad(c, "type mismatch: storing %s through %s", TS(T(1)), TS(T(0)));
    if (in->op == IR_STORE && sp == CUTE_AS_CONST) return bad(c, "wrong address space: store to const memory");
    if (!valid_hint(in->op, in->imm)) return bad(c, "bad cache hint %lld", (long long)in->imm);
    if (in->imm == CUTE_HINT_NC && sp != CUTE_AS_GLOBAL) return bad(c, "wrong address space: .nc loads need a global pointer");
    if (in->imm && in->imm != CUTE_HINT_VOLATILE && sp != CUTE_AS_GLOBAL && sp != CUTE_AS_GENERIC)
      return bad(c, "wrong address space: cache hints need a global or generic pointer");
    if (in->imm2 < 0 || in->imm2 > 256 || (in->imm2 & (in->imm2 - 1))) return bad(c, "bad alignment %lld", (long long)in->imm2);
    return 0;
  }
  case IR_GEP:
    if (!ptr_elem(ir, T(0), NULL)) return bad(c, "first operand must be a pointer");
    if (!ir_is_int(ir, T(1)) || is_kind(ir, T(1), CUTE_T_VEC)) return bad(c, "index must be a scalar integer");
    if (t != T(0)) return bad(c, "result type must be %s", TS(T(0)));
    return 0;
  case IR_SHARED: case IR_DYNSHARED: case IR_LOCAL: {
    int want = in->op == IR_LOCAL ? CUTE_AS_LOCAL : CUTE_AS_SHARED;
    int32_t e = ptr_elem(ir, t, &sp);
    if (!e || sp != want) return bad(c, "wrong address space: result must be ptr.%s.T", want == CUTE_AS_LOCAL ? "local" : "shared");
    if (in->op != IR_DYNSHARED && (in->imm <= 0 || in->imm * ir_tsize(ir, e) > (in->op == IR_LOCAL ? 512 * 1024 : 48 * 1024)))
      return bad(c, "bad size: %lld x %s (static shared memory is at most 48 KiB: use dynshared beyond)",
                 (long long)in->imm, TS(e));
    if (in->imm2 < 0 || in->imm2 > 1024 || (in->imm2 & (in->imm2 - 1))) return bad(c, "bad alignment %lld", (long long)in->imm2);
    return 0;
  }
  case IR_SREG:
    if (in->imm < 0 || in->imm >= CUTE_SREG_COUNT_) return bad(c, "bad special register %lld", (long long)in->imm);
    if (t != ((in->imm == CUTE_SREG_CLOCK64 || in->imm == CUTE_SREG_GLOBALTIMER) ? CUTE_T_U64 : CUTE_T_U32))
      return bad(c, "wrong result type %s", TS(t));
    return 0;
  case IR_BAR:
    if (in->imm < 0 || in->imm > 15) return bad(c, "barrier id %lld out of range 0..15", (long long)in->imm);
    if (in->imm2 < 0 || in->imm2 > 1024 || in->imm2 % 32) return bad(c, "thread count %lld must be a multiple of 32", (long long)in->imm2);
    return 0;
  case IR_FENCE:
    if (in->imm < 0 || in->imm > 2) return bad(c, "bad scope %lld", (long long)in->imm);
    return 0;
  case IR_SHFL: {
    int32_t v = T(0);
    int sz = ir_tsize(ir, v);
    if ((sz != 4 && sz != 8) || is_kind(ir, v, CUTE_T_PTR) || is_kind(ir, v, CUTE_T_ARR)) return bad(c, "value must be 32 or 64 bits");
    if (T(1) != CUTE_T_U32 && T(1) != CUTE_T_I32) return bad(c, "lane must be i32/u32");
    if (T(2) != CUTE_T_U32 && T(2) != CUTE_T_I32) return bad(c, "mask must be i32/u32");
    if (in->imm < 0 || in->imm > 3) return bad(c, "bad mode %lld", (long long)in->imm);
    if (in->imm2 < 1 || in->imm2 > 32 || (in->imm2 & (in->imm2 - 1))) return bad(c, "width %lld must be a power of two <= 32", (long long)in->imm2);
    break;
  }
  case IR_VOTE:
    if (T(0) != CUTE_T_U32 && T(0) != CUTE_T_I32) return bad(c, "mask must be i32/u32");
    if (T(1) != CUTE_T_I1) return bad(c, "predicate must be i1");
    if (in->imm < 0 || in->imm > 3) return bad(c, "bad mode %lld", (long long)in->imm);
    if (t != (in->imm == CUTE_VOTE_BALLOT ? CUTE_T_U32 : CUTE_T_I1)) return bad(c, "wrong result type");
    return 0;
  case IR_ATOM: case IR_CAS: {
    int32_t e = ptr_elem(ir, T(0), &sp);
    if (!e) return bad(c, "first operand must be a pointer");
    if (sp != CUTE_AS_GLOBAL && sp != CUTE_AS_SHARED && sp != CUTE_AS_GENERIC)
      return bad(c, "wrong address space: atomics need a global, shared or generic pointer");
    for (int i = 1; i < n; i++)
      if (T(i) != e) return bad(c, "type mismatch: operand %d is %s, memory is %s", i + 1, TS(T(i)), TS(e));
    if (t != e) return bad(c, "result type must be %s", TS(e));
    int64_t scope = in->op == IR_ATOM ? in->imm2 : in->imm;
    if (scope < 0 || scope > 2) return bad(c, "bad scope %lld", (long long)scope);
    int isint = ir_is_int(ir, e) && !is_kind(ir, e, CUTE_T_VEC), bits = ir_tsize(ir, e) * 8;
    if (in->op == IR_CAS) {
      if (!isint || (bits != 32 && bits != 64)) return bad(c, "needs a 32- or 64-bit integer");
      return 0;
    }
    int ok = 0;
    switch (in->imm) {
    case CUTE_ATOM_ADD:
      ok = (isint && (bits == 32 || bits == 64)) || e == CUTE_T_F32 || e == CUTE_T_F64 ||
           (is_kind(ir, e, CUTE_T_VEC) && ir->types[e].n == 2 &&
            (ir->types[e].elem == CUTE_T_F16 || ir->types[e].elem == CUTE_T_BF16));
      break;
    case CUTE_ATOM_MIN: case CUTE_ATOM_MAX: case CUTE_ATOM_AND: case CUTE_ATOM_OR: case CUTE_ATOM_XOR:
      ok = isint && (bits == 32 || bits == 64);
      break;
    case CUTE_ATOM_EXCH: ok = (bits == 32 || bits == 64) && !is_kind(ir, e, CUTE_T_VEC); break;
    case CUTE_ATOM_INC: case CUTE_ATOM_DEC: ok = e == CUTE_T_U32; break;
    default: return bad(c, "bad atomic op %lld", (long long)in->imm);
    }
    if (!ok) return bad(c, "%s is not supported on %s", ir_immk[IK_ATOM].names[in->imm], TS(e));
    return 0;
  }
  case IR_PRINTF:
    for (int i = 0; i < n; i++)
      if (!is_scalar_num(T(i)) && !is_kind(ir, T(i), CUTE_T_PTR) && T(i) != CUTE_T_I1)
        return bad(c, "argument %d must be a scalar or a pointer", i + 1);
    return 0;
  case IR_ASSERT:
    if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
    return 0;
  case IR_ASM:
    return check_asm(c);
  case IR_TRAP:
    return 0;
  default:
    return 0;
  }
  /* common tail for value-preserving ops: result type = first operand type */
  if (t != T(0)) return bad(c, "result type %s differs from the operand type %s", TS(t), TS(T(0)));
  return 0;
}

/* ---- region nesting --------------------------------------------------------------- */
int ir_scope_step(cute_ir *ir, ir_func *f, int32_t ref, ir_scope *sc, char *msg, size_t cap) {
  ir_inst *in = &f->inst[ref];
  int op = in->op;
  ir_open *top = sc->n ? &sc->s[sc->n - 1] : NULL;
  switch (op) {
  case IR_FOR: case IR_IF: case IR_WHILE:
    if (sc->n >= sc->cap) {
      int nc = sc->cap ? sc->cap * 2 : 16;
      ir_open *p = realloc(sc->s, sizeof *p * (size_t)nc);
      if (!p) return snprintf(msg, cap, "out of memory"), 1;
      sc->s = p;
      sc->cap = nc;
    }
    sc->s[sc->n++] = (ir_open){ref, ref};
    in->state = 1;
    return 0;
  case IR_ELSE:
    if (!top || f->inst[top->opener].op != IR_IF || top->cur != top->opener)
      return snprintf(msg, cap, "else: not directly after the then-branch of an if"), 1;
    if (f->inst[top->opener].type != CUTE_T_VOID && (ref - 1 <= top->opener || f->inst[ref - 1].op != IR_YIELD ||
                                                      f->inst[ref - 1].region != top->opener))
      return snprintf(msg, cap, "else: missing terminator: the then-branch of if %%%d must end with yield", top->opener), 1;
    f->inst[top->opener].state = 2;
    in->state = 1;
    top->cur = ref;
    return 0;
  case IR_DO:
    if (!top || f->inst[top->opener].op != IR_WHILE || top->cur != top->opener)
      return snprintf(msg, cap, "do: not directly inside a while's condition"), 1;
    in->state = 1;
    top->cur = ref;
    return 0;
  case IR_END: {
    if (!top) return snprintf(msg, cap, "end: no open region"), 1;
    ir_inst *o = &f->inst[top->opener];
    if (o->op == IR_WHILE && top->cur == top->opener)
      return snprintf(msg, cap, "end: while %%%d has no do (condition)", top->opener), 1;
    if (o->op == IR_IF && o->type != CUTE_T_VOID) {
      if (top->cur == top->opener)
        return snprintf(msg, cap, "end: if %%%d has a result and needs an else branch", top->opener), 1;
      if (ref - 1 <= top->cur || f->inst[ref - 1].op != IR_YIELD || f->inst[ref - 1].region != top->cur)
        return snprintf(msg, cap, "end: missing terminator: the else-branch of if %%%d must end with yield", top->opener), 1;
    }
    f->inst[top->cur].state = 2;
    o->state = 2 | 4;
    sc->n--;
    return 0;
  }
  default:
    return 0;
  }
}

/* ---- verifier ------------------------------------------------------------------------- */
int ir_verify_func(cute_ir *ir, int32_t fi, char *msg, size_t cap) {
  ir_func *f = &ir->funcs[fi];
  const char *fname = ir_strget(ir, f->name);
  ir_scope sc = {0};
  char m[768], lb[256];
  int rc = 0;
  for (int32_t r = 1; r < f->ninst; r++) f->inst[r].state = 0;
  for (int32_t r = 1; r < f->ninst && !rc; r++) {
    ir_inst *in = &f->inst[r];
    int32_t expect = sc.n ? sc.s[sc.n - 1].cur : 0;
    if (in->region != expect) {
      snprintf(m, sizeof m, "%s: instruction %%%d is recorded in region %d but sits in region %d",
               in->op < IR_NOPS ? ir_ops[in->op].name : "?", r, in->region, expect);
      rc = 1;
    } else if (in->op == IR_PARAM && r > f->nparams) {
      snprintf(m, sizeof m, "param: %%%d after the first instruction", r);
      rc = 1;
    } else if (in->op != IR_PARAM && r <= f->nparams) {
      snprintf(m, sizeof m, "%%%d: expected a parameter", r);
      rc = 1;
    } else {
      rc = ir_check_inst(ir, f, r, &sc, m, sizeof m) || ir_scope_step(ir, f, r, &sc, m, sizeof m);
    }
    if (rc) snprintf(msg, cap, "%sin %s: %s", ir_locstr(ir, in, lb, sizeof lb), fname, m);
  }
  if (!rc && sc.n) {
    ir_inst *o = &f->inst[sc.s[sc.n - 1].opener];
    snprintf(msg, cap, "%sin %s: missing end: the %s opened at %%%d is not closed", ir_locstr(ir, o, lb, sizeof lb),
             fname, ir_ops[o->op].name, sc.s[sc.n - 1].opener);
    rc = 1;
  }
  if (!rc) {
    int32_t last = f->ninst - 1;
    if (last <= f->nparams || f->inst[last].op != IR_RET) {
      snprintf(msg, cap, "%sin %s: missing terminator: the function must end with ret",
               last > 0 ? ir_locstr(ir, &f->inst[last], lb, sizeof lb) : "", fname);
      rc = 1;
    }
  }
  free(sc.s);
  /* restore the builder's view (all replayed states are final states) */
  return rc;
}

int cute_ir_verify(cute_ir *ir, cute_err *err) {
  if (!ir) {
    if (err) { err->code = CUTE_E_STATE; snprintf(err->msg, sizeof err->msg, "verify: NULL context"); }
    return CUTE_E_STATE;
  }
  if (ir->err_code) return cute_ir_status(ir, err);
  char msg[1020];
  if (ir->nfuncs <= 1) {
    if (err) { err->code = CUTE_E_VERIFY; snprintf(err->msg, sizeof err->msg, "verify: no functions"); }
    return CUTE_E_VERIFY;
  }
  for (int32_t i = 1; i < ir->nfuncs; i++) {
    if (ir_verify_func(ir, i, msg, sizeof msg)) {
      if (err) { err->code = CUTE_E_VERIFY; snprintf(err->msg, sizeof err->msg, "%s", msg); }
      return CUTE_E_VERIFY;
    }
  }
  if (err) { err->code = 0; err->msg[0] = 0; }
  return 0;
}
