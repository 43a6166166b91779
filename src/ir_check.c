/* ir_check.c -- type inference, per-instruction checks and the verifier.
 * The builder runs the same checks as each instruction is appended; the
 * verifier replays them over whole functions (IR built with checks off, or
 * parsed) and adds the end-of-function checks (terminators, open regions). */
#include "ir_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ":<line>: " of the builder's current location (one static buffer: error paths only) */
static const char *loc_line(cute_ir *ir) {
  static __thread char b[24];
  snprintf(b, sizeof b, ":%d: ", ir->loc_line);
  return b;
}

/* result type of op for the builder when none is given: the RT_* column of
   src/irdef.h, and one line per op with a rule of its own (RT_FN) */
static int32_t infer_fn(cute_ir *ir, int op, int nargs, int32_t t0, int64_t imm) {
  switch (op) {
  case IR_VEC: return is_scalar_num(t0) && (nargs == 2 || nargs == 4 || nargs == 8) ? cute_ir_t_vec(ir, t0, nargs) : 0;
  case IR_SREG: return imm == CUTE_SREG_CLOCK64 || imm == CUTE_SREG_GLOBALTIMER ? CUTE_T_U64 : CUTE_T_U32;
  case IR_VOTE: return imm == CUTE_VOTE_BALLOT ? CUTE_T_U32 : CUTE_T_I1;
  case IR_CALL: return imm > 0 && imm < ir->nfuncs ? ir->funcs[imm].ret : CUTE_T_VOID;
  case IR_PARAMADDR: return ir_type_get(ir, CUTE_T_PTR, CUTE_AS_GENERIC, CUTE_T_U8);
  default: return 0;
  }
}

int32_t ir_infer_type(cute_ir *ir, ir_func *f, int op, int nargs, const int32_t *args, int64_t imm,
                      int64_t imm2) {
  int32_t t0 = nargs > 0 ? ir_vtype(f, args[0]) : 0, r = 0;
  switch (ir_ops[op].res) {
  case RT_A0: return t0;
  case RT_A1: return nargs > 1 ? ir_vtype(f, args[1]) : 0;
  case RT_I1: return CUTE_T_I1;
  case RT_U32: return CUTE_T_U32;
  case RT_PELEM: r = ptr_elem(ir, t0, NULL); return r ? r : t0;
  case RT_ELEM: return is_kind(ir, t0, CUTE_T_VEC) || is_kind(ir, t0, CUTE_T_ARR) ? ir->types[t0].elem : t0;
  case RT_FN: r = infer_fn(ir, op, nargs, t0, imm); break;
  default: if (!(ir_ops[op].flags & OF_RES)) return CUTE_T_VOID; break;
  }
  if (r || ir->err_code) return r;
  ir_fail(ir, CUTE_E_ARG, "%s%s%s: %s", ir_strget(ir, ir->loc_file), ir->loc_file ? loc_line(ir) : "",
          ir_ops[op].name, op == IR_VEC ? "give the vector or fragment type explicitly" : "needs an explicit result type");
  return 0;
}

/* ---- the table of contents: one line per op (families: ir_check_*.c) ---------- */
static int check_op(chk *c) {
  switch (c->in->op) {
  case IR_PARAM: return chk_param(c);
  case IR_FOR: return chk_for(c);
  case IR_IF: return chk_if(c);
  case IR_DO: return chk_do(c);
  case IR_ELSE: case IR_WHILE: case IR_END: return chk_marker(c);
  case IR_YIELD: return chk_yield(c);
  case IR_BREAK: case IR_CONTINUE: return chk_loop_exit(c);
  case IR_RET: return chk_ret(c);
  case IR_CALL: return chk_call(c);
  case IR_VAR: return chk_var(c);
  case IR_VGET: case IR_VSET: return chk_var_access(c);
  case IR_ADD: case IR_SUB: case IR_MUL: case IR_DIV: case IR_REM: case IR_MIN: case IR_MAX: return chk_arith(c);
  case IR_MULHI: return chk_mulhi(c);
  case IR_AND: case IR_OR: case IR_XOR: return chk_logic(c);
  case IR_SHL: case IR_SHR: return chk_shift(c);
  case IR_NEG: return chk_neg(c);
  case IR_ABS: return chk_abs(c);
  case IR_NOT: return chk_not(c);
  case IR_FMA: return chk_fma(c);
  case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE: return chk_cmp(c);
  case IR_ISNAN: return chk_isnan(c);
  case IR_SELECT: return chk_select(c);
  case IR_CVT: return chk_cvt(c);
  case IR_BITCAST: return chk_bitcast(c);
  case IR_PTRCAST: return chk_ptrcast(c);
  case IR_SQRT: case IR_RSQRT: case IR_RCP: case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2:
  case IR_SIN: case IR_COS: case IR_TANH: case IR_ERF: case IR_POW: return chk_math(c);
  case IR_FLOOR: case IR_CEIL: case IR_TRUNC: case IR_ROUND: return chk_round(c);
  case IR_POPC: case IR_CLZ: return chk_count_bits(c);
  case IR_BREV: return chk_brev(c);
  case IR_PRMT: return chk_prmt(c);
  case IR_EXTRACT: return chk_extract(c);
  case IR_INSERT: return chk_insert(c);
  case IR_VEC: return chk_vec(c);
  case IR_PARAMADDR: return chk_param_addr(c);
  case IR_LOAD: case IR_STORE: return chk_access(c);
  case IR_GEP: return chk_gep(c);
  case IR_SHARED: case IR_DYNSHARED: case IR_LOCAL: return chk_alloc(c);
  case IR_SREG: return chk_sreg(c);
  case IR_BAR: return chk_bar(c);
  case IR_FENCE: return chk_fence(c);
  case IR_SHFL: return chk_shfl(c);
  case IR_VOTE: return chk_vote(c);
  case IR_ATOM: case IR_CAS: return chk_atom(c);
  case IR_PRINTF: return chk_printf(c);
  case IR_ASSERT: return chk_assert(c);
  case IR_ASM: return chk_asm(c);
  case IR_TRAP: return chk_none(c);
  default: return 0;
  }
}

int ir_check_inst(cute_ir *ir, ir_func *f, int32_t ref, ir_scope *sc, char *msg, size_t cap) {
  ir_inst *in = &f->inst[ref];
  chk cc = {ir, f, ref, in, ir_args(f, in), msg, cap, sc}, *c = &cc;
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
  return check_op(c);
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
    /* (a device function without a body is a declaration: the option link defines it) */
    int decl = last <= f->nparams && f->kind == CUTE_FN_DEVICE;
    if (!decl && (last <= f->nparams || f->inst[last].op != IR_RET)) {
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
