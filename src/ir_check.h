/* ir_check.h -- internal: the per-op checks of the kernel IR.  src/ir_check.c
 * holds the table of contents (ir_check_inst: operands, then one line per op
 * calling a chk_* function of a family file), the verifier and type inference;
 * the families are ir_check_ctl.c (structure, variables, calls), ir_check_arith.c
 * (arithmetic, conversions, math, bits, vectors and fragments), ir_check_mem.c
 * (memory, parameters) and ir_check_gpu.c (special registers, synchronisation,
 * warp ops, atomics, printf/assert, inline PTX); the helpers they share are in
 * ir_check_util.c.  Layering: ir_check -> families -> ir_check_util -> ir. */
#ifndef CUTE_IR_CHECK_H
#define CUTE_IR_CHECK_H

#include "ir.h"

typedef struct chk {
  cute_ir *ir;
  ir_func *f;
  int32_t ref;
  ir_inst *in;
  const int32_t *a;
  char *msg;
  size_t cap;
  ir_scope *sc;
} chk;

/* the locals every chk_* function may use */
#define CHK_LOCALS                                                                                  \
  cute_ir *ir = c->ir; ir_func *f = c->f; ir_inst *in = c->in; const int32_t *a = c->a;            \
  int n = in->nargs; int32_t t = in->type; int sp = 0; ir_scope *sc = c->sc; int32_t ref = c->ref;  \
  (void)ir; (void)f; (void)in; (void)a; (void)n; (void)t; (void)sp; (void)sc; (void)ref

#define T(i) ir_vtype(c->f, c->a[i])
#define TS(t) ir_type_str(c->ir, (t))

static inline int32_t ptr_elem(const cute_ir *ir, int32_t t, int *space) {
  if (!ir_type_valid(ir, t) || ir->types[t].kind != CUTE_T_PTR) return 0;
  if (space) *space = ir->types[t].n;
  return ir->types[t].elem;
}
static inline int is_kind(const cute_ir *ir, int32_t t, int kind) {
  return ir_type_valid(ir, t) && ir->types[t].kind == kind;
}
static inline int is_scalar_num(int32_t t) {
  int c = ir_scalar_class(t);
  return c >= 1 && c <= 3;
}

/* ir_check_util.c */
/* "op: <what> (%1: i32, %2: f32)" into c->msg; returns 1 */
IR_HIDDEN int bad(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
IR_HIDDEN int same_args(chk *c, int from, int to);  /* operands from..to share a type */
IR_HIDDEN int same_result(chk *c);                  /* result type = operand 0's */

/* ir_check_ctl.c */
IR_HIDDEN int chk_param(chk *c);
IR_HIDDEN int chk_for(chk *c);
IR_HIDDEN int chk_if(chk *c);
IR_HIDDEN int chk_do(chk *c);
IR_HIDDEN int chk_marker(chk *c);
IR_HIDDEN int chk_yield(chk *c);
IR_HIDDEN int chk_loop_exit(chk *c);
IR_HIDDEN int chk_ret(chk *c);
IR_HIDDEN int chk_call(chk *c);
IR_HIDDEN int chk_var(chk *c);
IR_HIDDEN int chk_var_access(chk *c);

/* ir_check_arith.c */
IR_HIDDEN int chk_arith(chk *c);
IR_HIDDEN int chk_mulhi(chk *c);
IR_HIDDEN int chk_logic(chk *c);
IR_HIDDEN int chk_shift(chk *c);
IR_HIDDEN int chk_neg(chk *c);
IR_HIDDEN int chk_abs(chk *c);
IR_HIDDEN int chk_not(chk *c);
IR_HIDDEN int chk_fma(chk *c);
IR_HIDDEN int chk_cmp(chk *c);
IR_HIDDEN int chk_isnan(chk *c);
IR_HIDDEN int chk_select(chk *c);
IR_HIDDEN int chk_cvt(chk *c);
IR_HIDDEN int chk_bitcast(chk *c);
IR_HIDDEN int chk_ptrcast(chk *c);
IR_HIDDEN int chk_math(chk *c);
IR_HIDDEN int chk_round(chk *c);
IR_HIDDEN int chk_count_bits(chk *c);
IR_HIDDEN int chk_brev(chk *c);
IR_HIDDEN int chk_prmt(chk *c);
IR_HIDDEN int chk_extract(chk *c);
IR_HIDDEN int chk_insert(chk *c);
IR_HIDDEN int chk_vec(chk *c);

/* ir_check_mem.c */
IR_HIDDEN int chk_param_addr(chk *c);
IR_HIDDEN int chk_access(chk *c);
IR_HIDDEN int chk_gep(chk *c);
IR_HIDDEN int chk_alloc(chk *c);

/* ir_check_gpu.c */
IR_HIDDEN int chk_sreg(chk *c);
IR_HIDDEN int chk_bar(chk *c);
IR_HIDDEN int chk_fence(chk *c);
IR_HIDDEN int chk_shfl(chk *c);
IR_HIDDEN int chk_vote(chk *c);
IR_HIDDEN int chk_atom(chk *c);
IR_HIDDEN int chk_printf(chk *c);
IR_HIDDEN int chk_assert(chk *c);
IR_HIDDEN int chk_asm(chk *c);
IR_HIDDEN int chk_none(chk *c);

#endif
