/* ir_check_mem.c -- per-op checks: loads and stores, gep, shared/local arrays and the address
 * of a by-value parameter.
 * One chk_* function per line of the table in ir_check.c (see ir_check.h). */
#include "ir_check.h"

#include <stdlib.h>
#include <string.h>

static int valid_hint(int op, int64_t h) {
  if (op == IR_LOAD) return h == CUTE_HINT_NONE || (h >= CUTE_HINT_NC && h <= CUTE_HINT_CV) || h == CUTE_HINT_VOLATILE;
  return h == CUTE_HINT_NONE || h == CUTE_HINT_CS || h == CUTE_HINT_CG || h == CUTE_HINT_WB ||
         h == CUTE_HINT_WT || h == CUTE_HINT_VOLATILE;
}

int chk_param_addr(chk *c) {
  CHK_LOCALS;
  int32_t v = a[0];
  if (v <= 0 || f->inst[v].op != IR_PARAM || !is_kind(ir, T(0), CUTE_T_BYTES))
    return bad(c, "operand must be a bytes parameter");
  if (!(f->inst[v].imm2 & CUTE_P_GRID_CONSTANT))
    return bad(c, "parameter %%%d is not grid_constant (its address would be a per-thread copy)", v);
  int sp2 = 0;
  if (!ptr_elem(ir, t, &sp2) || sp2 != CUTE_AS_GENERIC) return bad(c, "result must be a generic pointer, not %s", TS(t));
  return 0;
}

int chk_access(chk *c) {
  CHK_LOCALS;
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

int chk_gep(chk *c) {
  CHK_LOCALS;
  if (!ptr_elem(ir, T(0), NULL)) return bad(c, "first operand must be a pointer");
  if (!ir_is_int(ir, T(1)) || is_kind(ir, T(1), CUTE_T_VEC)) return bad(c, "index must be a scalar integer");
  if (t != T(0)) return bad(c, "result type must be %s", TS(T(0)));
  return 0;
}

int chk_alloc(chk *c) {
  CHK_LOCALS;
  int want = in->op == IR_LOCAL ? CUTE_AS_LOCAL : CUTE_AS_SHARED;
  int32_t e = ptr_elem(ir, t, &sp);
  if (!e || sp != want) return bad(c, "wrong address space: result must be ptr.%s.T", want == CUTE_AS_LOCAL ? "local" : "shared");
  if (in->op != IR_DYNSHARED && (in->imm <= 0 || in->imm * ir_tsize(ir, e) > (in->op == IR_LOCAL ? 512 * 1024 : 48 * 1024)))
    return bad(c, "bad size: %lld x %s (static shared memory is at most 48 KiB: use dynshared beyond)",
               (long long)in->imm, TS(e));
  if (in->imm2 < 0 || in->imm2 > 1024 || (in->imm2 & (in->imm2 - 1))) return bad(c, "bad alignment %lld", (long long)in->imm2);
  return 0;
}
