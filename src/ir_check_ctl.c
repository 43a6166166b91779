/* ir_check_ctl.c -- per-op checks: structure (parameters, loops, ifs, region markers,
 * terminators), calls and variables.
 * One chk_* function per line of the table in ir_check.c (see ir_check.h). */
#include "ir_check.h"

#include <stdlib.h>
#include <string.h>

static const ir_open *innermost_loop(const ir_func *f, const ir_scope *sc) {
  for (int i = sc->n - 1; i >= 0; i--) {
    int op = f->inst[sc->s[i].opener].op;
    if (op == IR_FOR) return &sc->s[i];
    if (op == IR_WHILE && sc->s[i].cur != sc->s[i].opener) return &sc->s[i];
  }
  return NULL;
}

int chk_param(chk *c) {
  CHK_LOCALS;
  if (ref > f->nparams && f->nparams != ref - 1) return bad(c, "parameters must come first");
  return 0;
}

int chk_for(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0)) || is_kind(ir, T(0), CUTE_T_VEC)) return bad(c, "bounds must be scalar integers");
  if (same_args(c, 0, 2)) return 1;
  if (t != T(0)) return bad(c, "result type %s differs from the bounds' type", TS(t));
  if (in->imm < -2) return bad(c, "bad unroll hint %lld", (long long)in->imm);
  return 0;
}

int chk_if(chk *c) {
  CHK_LOCALS;
  if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
  if (t != CUTE_T_VOID && ((is_kind(ir, t, CUTE_T_PTR) == 0 && ir_tsize(ir, t) == 0) || is_kind(ir, t, CUTE_T_BYTES)))
    return bad(c, "bad result type");
  return 0;
}

int chk_do(chk *c) {
  CHK_LOCALS;
  if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
  return 0;
}

int chk_marker(chk *c) {
  CHK_LOCALS;
  if (t != CUTE_T_VOID) return bad(c, "has no result");
  return 0;
}

int chk_yield(chk *c) {
  CHK_LOCALS;
  const ir_open *top = sc->n ? &sc->s[sc->n - 1] : NULL;
  if (!top || f->inst[top->opener].op != IR_IF || f->inst[top->opener].type == CUTE_T_VOID)
    return bad(c, "yield outside an if with a result");
  if (T(0) != f->inst[top->opener].type)
    return bad(c, "yields %s but the if (%%%d) has type %s", TS(T(0)), top->opener, TS(f->inst[top->opener].type));
  return 0;
}

int chk_loop_exit(chk *c) {
  CHK_LOCALS;
  if (!innermost_loop(f, sc)) return bad(c, "not inside a loop body");
  return 0;
}

int chk_ret(chk *c) {
  CHK_LOCALS;
  if (f->ret == CUTE_T_VOID && n) return bad(c, "function %s returns void", ir_strget(ir, f->name));
  if (f->ret != CUTE_T_VOID && (!n || T(0) != f->ret))
    return bad(c, "function %s returns %s", ir_strget(ir, f->name), TS(f->ret));
  return 0;
}

int chk_call(chk *c) {
  CHK_LOCALS;
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

int chk_var(chk *c) {
  CHK_LOCALS;
  if (t == CUTE_T_VOID) return bad(c, "variable needs a type");
  if (is_kind(ir, t, CUTE_T_BYTES)) return bad(c, "%s is a parameter type, not a variable type", TS(t));
  if (n && T(0) != t) return bad(c, "initial value is not %s", TS(t));
  return 0;
}

int chk_var_access(chk *c) {
  CHK_LOCALS;
  if (a[0] <= 0 || f->inst[a[0]].op != IR_VAR) return bad(c, "first operand is not a variable");
  if (in->op == IR_VGET && t != f->inst[a[0]].type) return bad(c, "result type must be %s", TS(f->inst[a[0]].type));
  if (in->op == IR_VSET && T(1) != f->inst[a[0]].type)
    return bad(c, "type mismatch: variable %%%d is %s", a[0], TS(f->inst[a[0]].type));
  return 0;
}
