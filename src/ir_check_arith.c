/* ir_check_arith.c -- per-op checks: arithmetic, comparisons, select, conversions, math, bit
 * ops, vectors and fragments (extract/insert/vec).
 * One chk_* function per line of the table in ir_check.c (see ir_check.h). */
#include "ir_check.h"

#include <stdlib.h>
#include <string.h>

int chk_arith(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0)) && !ir_is_float(ir, T(0))) return bad(c, "needs numbers");
  if (same_args(c, 0, 1)) return 1;
  return same_result(c);
}

int chk_mulhi(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0)) || is_kind(ir, T(0), CUTE_T_VEC) || ir_bits(T(0)) < 16) return bad(c, "needs 16..64-bit scalar integers");
  if (same_args(c, 0, 1)) return 1;
  return same_result(c);
}

int chk_logic(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0)) && T(0) != CUTE_T_I1) return bad(c, "needs integers or i1");
  if (same_args(c, 0, 1)) return 1;
  return same_result(c);
}

int chk_shift(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0))) return bad(c, "needs integers");
  if (same_args(c, 0, 1)) return 1;
  return same_result(c);
}

int chk_neg(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0)) && !ir_is_float(ir, T(0))) return bad(c, "needs a number");
  return same_result(c);
}

int chk_abs(chk *c) {
  CHK_LOCALS;
  if (!ir_is_float(ir, T(0)) && !ir_is_signed(ir, T(0))) return bad(c, "needs a signed integer or a float");
  return same_result(c);
}

int chk_not(chk *c) {
  CHK_LOCALS;
  if (!ir_is_int(ir, T(0)) && T(0) != CUTE_T_I1) return bad(c, "needs an integer or i1");
  return same_result(c);
}

int chk_fma(chk *c) {
  CHK_LOCALS;
  if (!ir_is_float(ir, T(0))) return bad(c, "needs floats");
  if (same_args(c, 0, 2)) return 1;
  return same_result(c);
}

int chk_cmp(chk *c) {
  CHK_LOCALS;
  if (!is_scalar_num(T(0)) && !(T(0) == CUTE_T_I1 && (in->op == IR_EQ || in->op == IR_NE)) &&
      !is_kind(ir, T(0), CUTE_T_PTR))
    return bad(c, "needs scalar numbers");
  if (same_args(c, 0, 1)) return 1;
  if (t != CUTE_T_I1) return bad(c, "result must be i1");
  return 0;
}

int chk_isnan(chk *c) {
  CHK_LOCALS;
  if (!is_scalar_num(T(0)) || !ir_is_float(ir, T(0))) return bad(c, "needs a scalar float");
  if (t != CUTE_T_I1) return bad(c, "result must be i1");
  return 0;
}

int chk_select(chk *c) {
  CHK_LOCALS;
  if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
  if (same_args(c, 1, 2)) return 1;
  if (t != T(1)) return bad(c, "result type %s differs from the operands'", TS(t));
  return 0;
}

/* tf32 and fp8 (class XFLOAT): f32 -> tf32 (cvt.rna, no rounding mode given), tf32 -> f32,
   f32/f16 -> fp8 (rn, satfinite), fp8 -> f16/f32; scalars only */
static int chk_cvt_xfloat(chk *c, int32_t ss, int32_t st) {
  CHK_LOCALS;
  int32_t s = T(0);
  int f8s = ss == CUTE_T_F8E4M3 || ss == CUTE_T_F8E5M2, f8t = st == CUTE_T_F8E4M3 || st == CUTE_T_F8E5M2;
  int ok = (ss == CUTE_T_F32 && st == CUTE_T_TF32) || (ss == CUTE_T_TF32 && st == CUTE_T_F32) ||
           ((ss == CUTE_T_F32 || ss == CUTE_T_F16) && f8t) || (f8s && (st == CUTE_T_F32 || st == CUTE_T_F16));
  if (!ok || s != ss) return bad(c, "cannot convert %s to %s (tf32 converts from and to f32, fp8 from f32/f16 and to f16/f32)", TS(s), TS(t));
  if (in->imm < 0 || in->imm > CUTE_RND_RP) return bad(c, "bad rounding mode %lld", (long long)in->imm);
  if (st == CUTE_T_TF32 && in->imm) return bad(c, "cvt to tf32 rounds to nearest, ties away (cvt.rna): no rounding mode");
  if (in->imm && in->imm != CUTE_RND_RN) return bad(c, "fp8 conversions round to nearest even (rn) only");
  return 0;
}

int chk_cvt(chk *c) {
  CHK_LOCALS;
  int32_t s = T(0);
  int vs = is_kind(ir, s, CUTE_T_VEC), vt = is_kind(ir, t, CUTE_T_VEC);
  if (vs != vt || (vs && ir->types[s].n != ir->types[t].n)) return bad(c, "cannot convert %s to %s", TS(s), TS(t));
  int32_t ss = ir_scalar_of(ir, s), st = ir_scalar_of(ir, t);
  if (ir_scalar_class(ss) == CUTE_TC_XFLOAT || ir_scalar_class(st) == CUTE_TC_XFLOAT) return chk_cvt_xfloat(c, ss, st);
  if (!(is_scalar_num(ss) || ss == CUTE_T_I1) || !(is_scalar_num(st) || st == CUTE_T_I1))
    return bad(c, "cannot convert %s to %s (use bitcast for pointers)", TS(s), TS(t));
  if (in->imm < 0 || in->imm > CUTE_RND_RP) return bad(c, "bad rounding mode %lld", (long long)in->imm);
  if (in->imm && (vs || st == CUTE_T_I1 || ss == CUTE_T_I1 || (ir_scalar_class(ss) != 3 && ir_scalar_class(st) != 3)))
    return bad(c, "a rounding mode needs a scalar conversion to or from a float");
  return 0;
}

int chk_bitcast(chk *c) {
  CHK_LOCALS;
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

int chk_ptrcast(chk *c) {
  CHK_LOCALS;
  int ss = 0, ts = 0;
  if (!ptr_elem(ir, T(0), &ss) || !ptr_elem(ir, t, &ts)) return bad(c, "needs pointers (%s -> %s)", TS(T(0)), TS(t));
  if (ss != ts && ss != CUTE_AS_GENERIC && ts != CUTE_AS_GENERIC)
    return bad(c, "wrong address space: cannot cast %s to %s (only to or from generic)", TS(T(0)), TS(t));
  return 0;
}

int chk_math(chk *c) {
  CHK_LOCALS;
  if (in->imm < 0 || in->imm > 1) return bad(c, "bad math mode %lld", (long long)in->imm);
  return chk_round(c);
}

int chk_round(chk *c) {
  CHK_LOCALS;
  if (!is_scalar_num(T(0)) || !ir_is_float(ir, T(0))) return bad(c, "needs a scalar float");
  if (same_args(c, 0, n - 1)) return 1;
  return same_result(c);
}

int chk_count_bits(chk *c) {
  CHK_LOCALS;
  if (!is_scalar_num(T(0)) || !ir_is_int(ir, T(0)) || ir_bits(T(0)) < 32) return bad(c, "needs a 32- or 64-bit integer");
  if (t != CUTE_T_U32) return bad(c, "result must be u32");
  return 0;
}

int chk_brev(chk *c) {
  CHK_LOCALS;
  if (!is_scalar_num(T(0)) || !ir_is_int(ir, T(0)) || ir_bits(T(0)) < 32) return bad(c, "needs a 32- or 64-bit integer");
  return same_result(c);
}

int chk_prmt(chk *c) {
  CHK_LOCALS;
  for (int i = 0; i < 3; i++)
    if (T(i) != CUTE_T_U32 && T(i) != CUTE_T_I32) return bad(c, "needs 32-bit integers");
  if (t != CUTE_T_U32) return bad(c, "result must be u32");
  return 0;
}

int chk_extract(chk *c) {
  CHK_LOCALS;
  if (!is_kind(ir, T(0), CUTE_T_VEC) && !is_kind(ir, T(0), CUTE_T_ARR)) return bad(c, "needs a vector or a fragment");
  if (in->imm < 0 || in->imm >= ir->types[T(0)].n)
    return bad(c, "index %lld out of range 0..%d of %s", (long long)in->imm, ir->types[T(0)].n - 1, TS(T(0)));
  if (t != ir->types[T(0)].elem) return bad(c, "result type must be %s", TS(ir->types[T(0)].elem));
  return 0;
}

int chk_insert(chk *c) {
  CHK_LOCALS;
  if (!is_kind(ir, T(0), CUTE_T_VEC) && !is_kind(ir, T(0), CUTE_T_ARR)) return bad(c, "needs a vector or a fragment");
  if (in->imm < 0 || in->imm >= ir->types[T(0)].n)
    return bad(c, "index %lld out of range 0..%d of %s", (long long)in->imm, ir->types[T(0)].n - 1, TS(T(0)));
  if (T(1) != ir->types[T(0)].elem) return bad(c, "value must be %s", TS(ir->types[T(0)].elem));
  return same_result(c);
}

int chk_vec(chk *c) {
  CHK_LOCALS;
  if (!is_kind(ir, t, CUTE_T_VEC) && !is_kind(ir, t, CUTE_T_ARR)) return bad(c, "result must be a vector or fragment type");
  if (n != 1 && n != ir->types[t].n) return bad(c, "%s needs %d elements (or 1 to splat)", TS(t), ir->types[t].n);
  for (int i = 0; i < n; i++)
    if (T(i) != ir->types[t].elem) return bad(c, "wrong element type: element %d is %s, %s holds %s", i + 1, TS(T(i)), TS(t), TS(ir->types[t].elem));
  return 0;
}
