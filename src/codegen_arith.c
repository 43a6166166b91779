/* codegen_arith.c -- target-neutral lowering of arithmetic, comparisons,
 * select, bitcasts, bit counts, vectors and fragments, plain loads and stores
 * and gep (one function per line of gen_body's table, codegen_body.c); the
 * integer shift/division guards.  Ops that need the target (conversions with
 * rounding, math, cache hints...) go through cg_target_op. */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- integer shifts, division and remainder: defined for every input ------------------
 * LLVM makes a shift by >= the width poison and division by zero or INT_MIN / -1
 * undefined behaviour, which the optimiser exploits (a store of such a value is
 * deleted).  The DSL's rule (docs/DSL.md "Arithmetic rules", lua/cute/arith.lua)
 * is PTX's: shift amounts are unsigned and clamp (shl, unsigned shr: 0; signed
 * shr: sign fill); x / 0 = -1 (all bits), x rem 0 = x, MIN / -1 = MIN, MIN rem -1
 * = 0.  Constant operands fold the guards away. */

/* the integer constant c in T (a scalar or a splat of a vector's lanes) */
static LLVMValueRef icst(LLVMTypeRef T, unsigned long long c) {
  if (LLVMGetTypeKind(T) == LLVMVectorTypeKind) {
    unsigned n = LLVMGetVectorSize(T);
    LLVMValueRef e[16], one = LLVMConstInt(LLVMGetElementType(T), c, 0);
    for (unsigned i = 0; i < n && i < 16; i++) e[i] = one;
    return LLVMConstVector(e, n < 16 ? n : 16);
  }
  return LLVMConstInt(T, c, 0);
}

static unsigned int_width(LLVMTypeRef T) {
  return LLVMGetIntTypeWidth(LLVMGetTypeKind(T) == LLVMVectorTypeKind ? LLVMGetElementType(T) : T);
}

LLVMValueRef cg_shift(cg *g, int op, int sg, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef T = LLVMTypeOf(x);
  unsigned bits = int_width(T);
  LLVMValueRef big = LLVMBuildICmp(g->B, LLVMIntUGE, y, icst(T, bits), "");
  LLVMValueRef amt = LLVMBuildSelect(g->B, big, icst(T, bits - 1), y, "");
  if (op == IR_SHR && sg) return LLVMBuildAShr(g->B, x, amt, "");
  LLVMValueRef r = op == IR_SHL ? LLVMBuildShl(g->B, x, amt, "") : LLVMBuildLShr(g->B, x, amt, "");
  return LLVMBuildSelect(g->B, big, LLVMConstNull(T), r, "");
}

LLVMValueRef cg_divrem(cg *g, int op, int sg, LLVMValueRef x, LLVMValueRef y) {
  LLVMTypeRef T = LLVMTypeOf(x);
  unsigned bits = int_width(T);
  LLVMValueRef ones = LLVMConstAllOnes(T);
  LLVMValueRef z = LLVMBuildICmp(g->B, LLVMIntEQ, y, LLVMConstNull(T), ""), bad = z;
  if (sg) {
    LLVMValueRef mn = LLVMBuildICmp(g->B, LLVMIntEQ, x, icst(T, 1ull << (bits - 1)), "");
    LLVMValueRef m1 = LLVMBuildICmp(g->B, LLVMIntEQ, y, ones, "");
    bad = LLVMBuildOr(g->B, z, LLVMBuildAnd(g->B, mn, m1, ""), "");
  }
  LLVMValueRef d = LLVMBuildSelect(g->B, bad, icst(T, 1), y, "");
  if (op == IR_DIV) {
    LLVMValueRef q = sg ? LLVMBuildSDiv(g->B, x, d, "") : LLVMBuildUDiv(g->B, x, d, "");
    return LLVMBuildSelect(g->B, z, ones, q, "");
  }
  LLVMValueRef r = sg ? LLVMBuildSRem(g->B, x, d, "") : LLVMBuildURem(g->B, x, d, "");
  return LLVMBuildSelect(g->B, z, x, r, "");
}


/* ---- arithmetic ----------------------------------------------------------------------- */
LLVMValueRef cg_op_add(cg *g, const cg_op *o) {
  return o->isf ? LLVMBuildFAdd(g->B, o->x, o->y, "") : LLVMBuildAdd(g->B, o->x, o->y, "");
}
LLVMValueRef cg_op_sub(cg *g, const cg_op *o) {
  return o->isf ? LLVMBuildFSub(g->B, o->x, o->y, "") : LLVMBuildSub(g->B, o->x, o->y, "");
}
LLVMValueRef cg_op_mul(cg *g, const cg_op *o) {
  return o->isf ? LLVMBuildFMul(g->B, o->x, o->y, "") : LLVMBuildMul(g->B, o->x, o->y, "");
}
/* integers: guarded, see cg_divrem */
LLVMValueRef cg_op_divrem(cg *g, const cg_op *o) {
  int div = o->in->op == IR_DIV;
  if (o->isf) return div ? LLVMBuildFDiv(g->B, o->x, o->y, "") : LLVMBuildFRem(g->B, o->x, o->y, "");
  return cg_divrem(g, o->in->op, o->sg, o->x, o->y);
}
LLVMValueRef cg_op_minmax(cg *g, const cg_op *o) {
  int mn = o->in->op == IR_MIN;
  const char *n = o->isf ? (mn ? "llvm.minnum" : "llvm.maxnum") : mn ? (o->sg ? "llvm.smin" : "llvm.umin") : (o->sg ? "llvm.smax" : "llvm.umax");
  LLVMValueRef args[2] = {o->x, o->y};
  LLVMTypeRef T = o->T;
  return cg_intr(g, o->in, n, &T, 1, args, 2);
}
LLVMValueRef cg_op_mulhi(cg *g, const cg_op *o) {
  int bits = ir_bits(o->t0);
  LLVMTypeRef W = LLVMIntTypeInContext(g->C, (unsigned)bits * 2);
  LLVMValueRef wx = o->sg ? LLVMBuildSExt(g->B, o->x, W, "") : LLVMBuildZExt(g->B, o->x, W, "");
  LLVMValueRef wy = o->sg ? LLVMBuildSExt(g->B, o->y, W, "") : LLVMBuildZExt(g->B, o->y, W, "");
  LLVMValueRef m = LLVMBuildMul(g->B, wx, wy, "");
  return LLVMBuildTrunc(g->B, LLVMBuildLShr(g->B, m, LLVMConstInt(W, (unsigned)bits, 0), ""), o->T, "");
}
LLVMValueRef cg_op_logic(cg *g, const cg_op *o) {
  switch (o->in->op) {
  case IR_AND: return LLVMBuildAnd(g->B, o->x, o->y, "");
  case IR_OR: return LLVMBuildOr(g->B, o->x, o->y, "");
  default: return LLVMBuildXor(g->B, o->x, o->y, "");
  }
}
/* clamped, see cg_shift */
LLVMValueRef cg_op_shift(cg *g, const cg_op *o) { return cg_shift(g, o->in->op, o->sg, o->x, o->y); }
LLVMValueRef cg_op_neg(cg *g, const cg_op *o) {
  return o->isf ? LLVMBuildFNeg(g->B, o->x, "") : LLVMBuildNeg(g->B, o->x, "");
}
LLVMValueRef cg_op_not(cg *g, const cg_op *o) { return LLVMBuildNot(g->B, o->x, ""); }
LLVMValueRef cg_op_abs(cg *g, const cg_op *o) {
  LLVMTypeRef T = o->T;
  LLVMValueRef args[2] = {o->x, LLVMConstInt(g->ti1, 0, 0)};
  return o->isf ? cg_intr(g, o->in, "llvm.fabs", &T, 1, args, 1) : cg_intr(g, o->in, "llvm.abs", &T, 1, args, 2);
}
LLVMValueRef cg_op_fma(cg *g, const cg_op *o) {
  LLVMTypeRef T = o->T;
  LLVMValueRef args[3] = {o->x, o->y, cg_val(g, o->a[2])};
  return cg_intr(g, o->in, "llvm.fma", &T, 1, args, 3);
}

/* ---- comparisons and select ------------------------------------------------------------- */
LLVMValueRef cg_op_cmp(cg *g, const cg_op *o) {
  int k = o->in->op - IR_EQ;
  static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
  static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
  static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
  if (o->isf) return LLVMBuildFCmp(g->B, fp[k], o->x, o->y, "");
  return LLVMBuildICmp(g->B, o->sg ? sp[k] : up[k], o->x, o->y, "");
}
LLVMValueRef cg_op_isnan(cg *g, const cg_op *o) { return LLVMBuildFCmp(g->B, LLVMRealUNO, o->x, o->x, ""); }
LLVMValueRef cg_op_select(cg *g, const cg_op *o) { return LLVMBuildSelect(g->B, o->x, o->y, cg_val(g, o->a[2]), ""); }

/* ---- casts and bits ---------------------------------------------------------------------- */
LLVMValueRef cg_op_bitcast(cg *g, const cg_op *o) {
  cute_ir *ir = g->ir;
  if (ir->types[o->t0].kind == CUTE_T_PTR) return LLVMBuildPtrToInt(g->B, o->x, o->T, "");
  if (ir->types[o->in->type].kind == CUTE_T_PTR) return LLVMBuildIntToPtr(g->B, o->x, o->T, "");
  return LLVMBuildBitCast(g->B, o->x, o->T, "");
}
LLVMValueRef cg_op_ptrcast(cg *g, const cg_op *o) {
  cute_ir *ir = g->ir;
  return ir->types[o->t0].n != ir->types[o->in->type].n ? LLVMBuildAddrSpaceCast(g->B, o->x, o->T, "") : o->x;
}
LLVMValueRef cg_op_count_bits(cg *g, const cg_op *o) {
  int popc = o->in->op == IR_POPC;
  LLVMTypeRef xt = LLVMTypeOf(o->x);
  LLVMValueRef args[2] = {o->x, LLVMConstInt(g->ti1, 0, 0)};
  LLVMValueRef res = cg_intr(g, o->in, popc ? "llvm.ctpop" : "llvm.ctlz", &xt, 1, args, popc ? 1 : 2);
  if (res && ir_bits(o->t0) == 64) res = LLVMBuildTrunc(g->B, res, g->ti32, "");
  return res;
}
LLVMValueRef cg_op_brev(cg *g, const cg_op *o) {
  LLVMTypeRef T = o->T;
  LLVMValueRef x = o->x;
  return cg_intr(g, o->in, "llvm.bitreverse", &T, 1, &x, 1);
}

/* ---- vectors and fragments (fragments are LLVM arrays: extractvalue / insertvalue) ----- */
static int is_frag(cg *g, int32_t t) { return g->ir->types[t].kind == CUTE_T_ARR; }
LLVMValueRef cg_op_extract(cg *g, const cg_op *o) {
  if (is_frag(g, o->t0)) return LLVMBuildExtractValue(g->B, o->x, (unsigned)o->in->imm, "");
  return LLVMBuildExtractElement(g->B, o->x, LLVMConstInt(g->ti32, (unsigned long long)o->in->imm, 0), "");
}
LLVMValueRef cg_op_insert(cg *g, const cg_op *o) {
  if (is_frag(g, o->t0)) return LLVMBuildInsertValue(g->B, o->x, o->y, (unsigned)o->in->imm, "");
  return LLVMBuildInsertElement(g->B, o->x, o->y, LLVMConstInt(g->ti32, (unsigned long long)o->in->imm, 0), "");
}
/* from one value per element, or a splat of one */
LLVMValueRef cg_op_vec(cg *g, const cg_op *o) {
  int n = g->ir->types[o->in->type].n, arr = is_frag(g, o->in->type);
  LLVMValueRef res = LLVMGetPoison(o->T);
  for (int i = 0; i < n; i++) {
    LLVMValueRef e = cg_val(g, o->a[o->in->nargs == 1 ? 0 : i]);
    res = arr ? LLVMBuildInsertValue(g->B, res, e, (unsigned)i, "")
              : LLVMBuildInsertElement(g->B, res, e, LLVMConstInt(g->ti32, (unsigned)i, 0), "");
  }
  return res;
}

/* ---- plain memory ---------------------------------------------------------------------- */
/* load/store: plain, volatile or .nc (invariant.load); other cache operators are the target's */
LLVMValueRef cg_op_access(cg *g, const cg_op *o) {
  const ir_inst *in = o->in;
  if (in->imm && in->imm != CUTE_HINT_NC && in->imm != CUTE_HINT_VOLATILE) return cg_target_op(g, o);
  int32_t et = g->ir->types[o->t0].elem;
  int al = in->imm2 ? (int)in->imm2 : cg_natural_align(g, et);
  LLVMValueRef m = in->op == IR_LOAD ? LLVMBuildLoad2(g->B, o->T, o->x, "") : LLVMBuildStore(g->B, o->y, o->x);
  LLVMSetAlignment(m, (unsigned)al);
  if (in->imm == CUTE_HINT_VOLATILE) LLVMSetVolatile(m, 1);
  if (in->imm == CUTE_HINT_NC) {
    unsigned kind = LLVMGetMDKindIDInContext(g->C, "invariant.load", 14);
    LLVMSetMetadata(m, kind, LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, NULL, 0)));
  }
  return in->op == IR_LOAD ? m : NULL;
}
LLVMValueRef cg_op_gep(cg *g, const cg_op *o) {
  LLVMValueRef idx = o->y;
  int32_t it = TY(o->a[1]);
  if (ir_bits(it) < 64)
    idx = ir_is_signed(g->ir, it) ? LLVMBuildSExt(g->B, o->y, g->ti64, "") : LLVMBuildZExt(g->B, o->y, g->ti64, "");
  return LLVMBuildInBoundsGEP2(g->B, cg_type(g, g->ir->types[o->t0].elem), o->x, &idx, 1, "");
}
