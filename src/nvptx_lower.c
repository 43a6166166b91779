/* nvptx_lower.c -- NVPTX lowering of the numeric and memory ops that need PTX
 * beyond plain LLVM: conversions with rounding modes, math (fast forms and
 * libdevice), loads and stores with cache operators, atomics with scopes.
 * Reached through cg_target_op (nvptx_ops.c). */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PTX type names for inline asm ------------------------------------------------- */
static const char *ptx_tname(int32_t t) {
  switch (t) {
  case CUTE_T_I8: return "s8"; case CUTE_T_I16: return "s16"; case CUTE_T_I32: return "s32";
  case CUTE_T_I64: return "s64"; case CUTE_T_U8: return "u8"; case CUTE_T_U16: return "u16";
  case CUTE_T_U32: return "u32"; case CUTE_T_U64: return "u64"; case CUTE_T_F16: return "f16";
  case CUTE_T_BF16: return "bf16"; case CUTE_T_F32: return "f32"; case CUTE_T_F64: return "f64";
  default: return "b32";
  }
}

/* value -> register form for asm: 8/16-bit -> i16 "h", f32 "f", f64 "d", 32 "r", 64 "l" */
static LLVMValueRef to_reg(cg *g, int32_t t, LLVMValueRef v, char *c) {
  switch (t) {
  case CUTE_T_F32: *c = 'f'; return v;
  case CUTE_T_F64: *c = 'd'; return v;
  case CUTE_T_F16: case CUTE_T_BF16: *c = 'h'; return LLVMBuildBitCast(g->B, v, g->ti16, "");
  case CUTE_T_I8: *c = 'h'; return LLVMBuildSExt(g->B, v, g->ti16, "");
  case CUTE_T_U8: *c = 'h'; return LLVMBuildZExt(g->B, v, g->ti16, "");
  case CUTE_T_I16: case CUTE_T_U16: *c = 'h'; return v;
  case CUTE_T_I64: case CUTE_T_U64: *c = 'l'; return v;
  default: *c = 'r'; return v;
  }
}
static LLVMTypeRef reg_type(cg *g, int32_t t, char *c) {
  switch (t) {
  case CUTE_T_F32: *c = 'f'; return g->tf32;
  case CUTE_T_F64: *c = 'd'; return g->tf64;
  case CUTE_T_I64: case CUTE_T_U64: *c = 'l'; return g->ti64;
  case CUTE_T_I32: case CUTE_T_U32: *c = 'r'; return g->ti32;
  default: *c = 'h'; return g->ti16;
  }
}
static LLVMValueRef from_reg(cg *g, int32_t t, LLVMValueRef v) {
  switch (t) {
  case CUTE_T_F16: case CUTE_T_BF16: return LLVMBuildBitCast(g->B, v, cg_type(g, t), "");
  case CUTE_T_I8: case CUTE_T_U8: return LLVMBuildTrunc(g->B, v, g->ti8, "");
  default: return v;
  }
}

/* ---- conversions ---------------------------------------------------------------- */
/* tf32 and fp8 (the checker allows f32 <-> tf32, f32/f16 -> fp8, fp8 -> f16/f32):
   cvt.rna.tf32.f32 (sm_80); fp8 pairs in PTX, cvt.rn.satfinite.e4m3x2.f32 d, a, b
   puts a in the high byte, b in the low one: a single value is packed with 0.0
   and the low byte taken; cvt.rn.f16x2.e4m3x2 widens the other way (sm_89) */
static LLVMValueRef cvt_xfloat(cg *g, const ir_inst *in, int32_t st, int32_t sf, LLVMValueRef v) {
  int f8t = st == CUTE_T_F8E4M3 || st == CUTE_T_F8E5M2;
  const char *f8 = (st == CUTE_T_F8E5M2 || sf == CUTE_T_F8E5M2) ? "e5m2x2" : "e4m3x2";
  char tmpl[96];
  if (sf == CUTE_T_TF32) return LLVMBuildBitCast(g->B, v, g->tf32, "");
  if (st == CUTE_T_TF32) {
    if (g->sm < 80) {
      cg_fail(g, in, "cvt f32 -> tf32 needs sm_80 or newer (target sm_%d)", g->sm);
      return LLVMGetUndef(g->ti32);
    }
    /* the low 13 bits cleared: the tf32 value as an f32 bit pattern whatever the
       hardware leaves there (tf32 -> f32 is then a bitcast) */
    LLVMValueRef r = cg_iasm(g, g->ti32, "cvt.rna.tf32.f32 $0, $1;", "=r,f", &v, 1, 0);
    return LLVMBuildAnd(g->B, r, LLVMConstInt(g->ti32, 0xffffe000u, 0), "");
  }
  if (g->sm < 89) {
    const char *a = "", *b = "";
    cute_ir_scalar_info(sf, &a, NULL, NULL);
    cute_ir_scalar_info(st, &b, NULL, NULL);
    cg_fail(g, in, "cvt %s -> %s (fp8) needs sm_89 or newer (target sm_%d)", a, b, g->sm);
    return LLVMGetUndef(cg_type(g, st));
  }
  if (f8t) {
    LLVMValueRef r;
    if (sf == CUTE_T_F32) {
      LLVMValueRef a[2] = {LLVMConstReal(g->tf32, 0.0), v};
      snprintf(tmpl, sizeof tmpl, "cvt.rn.satfinite.%s.f32 $0, $1, $2;", f8);
      r = cg_iasm(g, g->ti16, tmpl, "=h,f,f", a, 2, 0);
    } else { /* f16: packed with +0.0 in the high half */
      LLVMValueRef x = LLVMBuildZExt(g->B, LLVMBuildBitCast(g->B, v, g->ti16, ""), g->ti32, "");
      snprintf(tmpl, sizeof tmpl, "cvt.rn.satfinite.%s.f16x2 $0, $1;", f8);
      r = cg_iasm(g, g->ti16, tmpl, "=h,r", &x, 1, 0);
    }
    return LLVMBuildTrunc(g->B, r, g->ti8, "");
  }
  LLVMValueRef x = LLVMBuildZExt(g->B, v, g->ti16, "");
  snprintf(tmpl, sizeof tmpl, "cvt.rn.f16x2.%s $0, $1;", f8);
  LLVMValueRef h = cg_iasm(g, g->ti32, tmpl, "=r,h", &x, 1, 0);
  h = LLVMBuildBitCast(g->B, LLVMBuildTrunc(g->B, h, g->ti16, ""), g->tf16, "");
  return st == CUTE_T_F32 ? LLVMBuildFPExt(g->B, h, g->tf32, "") : h; /* exact */
}

LLVMValueRef cg_cvt(cg *g, const ir_inst *in, int32_t to, int32_t from, LLVMValueRef v, int rnd) {
  cute_ir *ir = g->ir;
  LLVMTypeRef T = cg_type(g, to);
  if (to == from && !rnd) return v;
  int32_t st = ir_scalar_of(ir, to), sf = ir_scalar_of(ir, from);
  if (ir_scalar_class(st) == CUTE_TC_XFLOAT || ir_scalar_class(sf) == CUTE_TC_XFLOAT) return cvt_xfloat(g, in, st, sf, v);
  int ct = ir_scalar_class(st), cf = ir_scalar_class(sf);
  if (rnd && ((sf == CUTE_T_BF16 && g->sm < 90) ||
              (ct == 3 && cf == 3 && st != sf && ir_bits(st) == 16 && ir_bits(sf) == 16))) {
    /* no direct cvt (bf16 sources before sm_90, f16 <-> bf16): widen exactly to f32 first */
    return cg_cvt(g, in, to, CUTE_T_F32, LLVMBuildFPExt(g->B, v, g->tf32, ""), rnd);
  }
  /* before sm_90 there is no cvt to bf16 from f64 or integers: via f32 (directed
     roundings compose exactly, rn may round twice) */
  if (rnd && st == CUTE_T_BF16 && (sf == CUTE_T_F64 || cf != 3) && g->sm < 90)
    return cg_cvt(g, in, to, CUTE_T_F32, cg_cvt(g, in, CUTE_T_F32, from, v, rnd), rnd);
  if (rnd && st == CUTE_T_BF16 && g->sm < 80) {
    /* no cvt to bf16 before sm_80: rn is LLVM's own conversion, rz truncates the bits */
    if (sf != CUTE_T_F32) v = cg_cvt(g, in, CUTE_T_F32, from, v, rnd == CUTE_RND_RN ? 0 : rnd);
    if (rnd == CUTE_RND_RN) return LLVMBuildFPTrunc(g->B, v, T, "");
    if (rnd == CUTE_RND_RZ) {
      LLVMValueRef bits = LLVMBuildLShr(g->B, LLVMBuildBitCast(g->B, v, g->ti32, ""), LLVMConstInt(g->ti32, 16, 0), "");
      LLVMValueRef h = LLVMBuildTrunc(g->B, bits, g->ti16, "");
      LLVMValueRef nan = LLVMBuildFCmp(g->B, LLVMRealUNO, v, v, "");
      h = LLVMBuildSelect(g->B, nan, LLVMConstInt(g->ti16, 0x7fc0, 0), h, "");
      return LLVMBuildBitCast(g->B, h, T, "");
    }
    cg_fail(g, in, "cvt to bf16 with rounding %s needs sm_80 or newer (target sm_%d)", rnd == CUTE_RND_RM ? "rm" : "rp", g->sm);
    return LLVMGetUndef(T);
  }
  if (rnd) {
    static const char *const rn[] = {"", "rn", "rz", "rm", "rp"};
    char tmpl[96], cons[16], c1, c2;
    int fint = ct != 3; /* float -> int: .rni etc. */
    int same_float = ct == 3 && cf == 3 && ir_bits(st) >= ir_bits(sf);
    if (same_float) { /* widening: exact, or rounding to integral */
      snprintf(tmpl, sizeof tmpl, "cvt.%si.%s.%s $0, $1;", rn[rnd], ptx_tname(st), ptx_tname(sf));
      if (st == sf) {
        LLVMValueRef r = to_reg(g, sf, v, &c2);
        reg_type(g, st, &c1);
        snprintf(cons, sizeof cons, "=%c,%c", c1, c2);
        return from_reg(g, st, cg_iasm(g, LLVMTypeOf(r), tmpl, cons, &r, 1, 0));
      }
      return LLVMBuildFPExt(g->B, v, T, "");
    }
    snprintf(tmpl, sizeof tmpl, "cvt.%s%s.%s.%s $0, $1;", rn[rnd], fint ? "i" : "", ptx_tname(st), ptx_tname(sf));
    LLVMValueRef r = to_reg(g, sf, v, &c2);
    if (ir_bits(sf) == 8) /* widened to 16 */
      snprintf(tmpl, sizeof tmpl, "cvt.%s%s.%s.%s $0, $1;", rn[rnd], fint ? "i" : "", ptx_tname(st),
               ir_is_signed(ir, sf) ? "s16" : "u16");
    LLVMTypeRef rt = reg_type(g, st, &c1);
    if (ir_bits(st) == 8)
      snprintf(tmpl, sizeof tmpl, "cvt.%s%s.%s.%s $0, $1;", rn[rnd], fint ? "i" : "",
               ir_is_signed(ir, st) ? "s16" : "u16", ptx_tname(sf));
    snprintf(cons, sizeof cons, "=%c,%c", c1, c2);
    LLVMValueRef res = cg_iasm(g, rt, tmpl, cons, &r, 1, 0);
    if (fint && ir_bits(st) == 8) { /* cvt saturated to 16 bits: clamp to the 8-bit range */
      int s8 = ir_is_signed(ir, st);
      LLVMValueRef hi = LLVMConstInt(g->ti16, s8 ? 127 : 255, 0), lo = LLVMConstInt(g->ti16, s8 ? (unsigned long long)-128 : 0, 1);
      res = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, s8 ? LLVMIntSGT : LLVMIntUGT, res, hi, ""), hi, res, "");
      if (s8) res = LLVMBuildSelect(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, res, lo, ""), lo, res, "");
    }
    return from_reg(g, st, res);
  }
  if (sf == CUTE_T_I1) {
    if (ct == 3) return LLVMBuildUIToFP(g->B, v, T, "");
    return LLVMBuildZExt(g->B, v, T, "");
  }
  if (st == CUTE_T_I1) {
    if (cf == 3) return LLVMBuildFCmp(g->B, LLVMRealUNE, v, LLVMConstNull(cg_type(g, from)), "");
    return LLVMBuildICmp(g->B, LLVMIntNE, v, LLVMConstNull(cg_type(g, from)), "");
  }
  if (ct != 3 && cf != 3) {
    int bt = ir_bits(st), bf = ir_bits(sf);
    if (bt == bf) return v;
    if (bt < bf) return LLVMBuildTrunc(g->B, v, T, "");
    return cf == 1 ? LLVMBuildSExt(g->B, v, T, "") : LLVMBuildZExt(g->B, v, T, "");
  }
  if (ct == 3 && cf != 3) return cf == 1 ? LLVMBuildSIToFP(g->B, v, T, "") : LLVMBuildUIToFP(g->B, v, T, "");
  if (ct != 3 && cf == 3) {
    /* float -> int saturates to the type's range, NaN -> 0 (PTX cvt.rzi semantics);
       a bare fptosi/fptoui would be poison out of range.  16-bit floats widen
       exactly to f32 first. */
    LLVMTypeRef src = cg_type(g, from);
    if (ir_bits(sf) == 16) {
      src = ir->types[from].kind == CUTE_T_VEC ? LLVMVectorType(g->tf32, ir->types[from].n) : g->tf32;
      v = LLVMBuildFPExt(g->B, v, src, "");
    }
    LLVMTypeRef tys[2] = {T, src};
    return cg_intr(g, in, ct == 1 ? "llvm.fptosi.sat" : "llvm.fptoui.sat", tys, 2, &v, 1);
  }
  /* float -> float */
  if (ir_bits(st) > ir_bits(sf)) return LLVMBuildFPExt(g->B, v, T, "");
  if (ir_bits(st) < ir_bits(sf)) return LLVMBuildFPTrunc(g->B, v, T, "");
  /* f16 <-> bf16 (lane-wise for vectors) */
  (void)in;
  LLVMTypeRef mid = ir->types[to].kind == CUTE_T_VEC ? LLVMVectorType(g->tf32, ir->types[to].n) : g->tf32;
  return LLVMBuildFPTrunc(g->B, LLVMBuildFPExt(g->B, v, mid, ""), T, "");
}

/* ---- math ------------------------------------------------------------------------------- */
static LLVMValueRef libdev(cg *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n) {
  LLVMValueRef fn = LLVMGetNamedFunction(g->M, name);
  LLVMTypeRef pt[2] = {t, t};
  LLVMTypeRef fty = LLVMFunctionType(t, pt, (unsigned)n, 0);
  if (!fn) fn = LLVMAddFunction(g->M, name, fty);
  g->need_libdevice = 1;
  return LLVMBuildCall2(g->B, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef fconst(cg *g, LLVMTypeRef t, double d) { return LLVMConstReal(t, d); }

LLVMValueRef cg_math(cg *g, const ir_inst *in, int op, LLVMValueRef x, LLVMValueRef y) {
  int32_t t = in->type;
  int fast = in->imm == CUTE_MATH_FAST || g->fast_math; /* (the option fast_math: every op) */
  if (t == CUTE_T_F16 || t == CUTE_T_BF16) {
    x = LLVMBuildFPExt(g->B, x, g->tf32, "");
    if (y) y = LLVMBuildFPExt(g->B, y, g->tf32, "");
    ir_inst tmp = *in;
    tmp.type = CUTE_T_F32;
    LLVMValueRef r = cg_math(g, &tmp, op, x, y);
    return r ? LLVMBuildFPTrunc(g->B, r, cg_type(g, t), "") : NULL;
  }
  LLVMTypeRef T = cg_type(g, t);
  int d = t == CUTE_T_F64;
  LLVMValueRef args[2] = {x, y};
  const char *f = g->ftz ? "ftz." : "";
  char nm[64];
  if (op == IR_FLOOR || op == IR_CEIL || op == IR_TRUNC || op == IR_ROUND) {
    const char *n = op == IR_FLOOR ? "llvm.floor" : op == IR_CEIL ? "llvm.ceil" : op == IR_TRUNC ? "llvm.trunc" : "llvm.rint";
    return cg_intr(g, in, n, &T, 1, args, 1);
  }
  if (op == IR_SQRT) {
    if (fast && !d) { snprintf(nm, sizeof nm, "llvm.nvvm.sqrt.approx.%sf", f); return cg_intr(g, in, nm, NULL, 0, args, 1); }
    return cg_intr(g, in, "llvm.sqrt", &T, 1, args, 1);
  }
  if (op == IR_RSQRT) {
    if (fast) {
      snprintf(nm, sizeof nm, "llvm.nvvm.rsqrt.approx.%s%s", d ? "" : f, d ? "d" : "f");
      return cg_intr(g, in, nm, NULL, 0, args, 1);
    }
    LLVMValueRef s = cg_intr(g, in, "llvm.sqrt", &T, 1, args, 1);
    return s ? LLVMBuildFDiv(g->B, fconst(g, T, 1.0), s, "") : NULL;
  }
  if (op == IR_RCP) {
    if (fast) return cg_intr(g, in, d ? "llvm.nvvm.rcp.approx.ftz.d" : "llvm.nvvm.rcp.approx.ftz.f", NULL, 0, args, 1);
    return LLVMBuildFDiv(g->B, fconst(g, T, 1.0), x, "");
  }
  if (fast && !d) {
    const double LOG2E = 1.4426950408889634, LN2 = 0.6931471805599453;
    switch (op) {
    case IR_EXP2: snprintf(nm, sizeof nm, "llvm.nvvm.ex2.approx.%sf", f); return cg_intr(g, in, nm, NULL, 0, args, 1);
    case IR_EXP:
      args[0] = LLVMBuildFMul(g->B, x, fconst(g, T, LOG2E), "");
      snprintf(nm, sizeof nm, "llvm.nvvm.ex2.approx.%sf", f);
      return cg_intr(g, in, nm, NULL, 0, args, 1);
    case IR_LOG2: snprintf(nm, sizeof nm, "llvm.nvvm.lg2.approx.%sf", f); return cg_intr(g, in, nm, NULL, 0, args, 1);
    case IR_LOG: {
      snprintf(nm, sizeof nm, "llvm.nvvm.lg2.approx.%sf", f);
      LLVMValueRef l = cg_intr(g, in, nm, NULL, 0, args, 1);
      return l ? LLVMBuildFMul(g->B, l, fconst(g, T, LN2), "") : NULL;
    }
    case IR_SIN: snprintf(nm, sizeof nm, "llvm.nvvm.sin.approx.%sf", f); return cg_intr(g, in, nm, NULL, 0, args, 1);
    case IR_COS: snprintf(nm, sizeof nm, "llvm.nvvm.cos.approx.%sf", f); return cg_intr(g, in, nm, NULL, 0, args, 1);
    case IR_TANH:
      if (g->sm < 75 || g->ptx < 70) break; /* tanh.approx: sm_75 and PTX 7.0, else libdevice */
      return cg_iasm(g, T, "tanh.approx.f32 $0, $1;", "=f,f", args, 1, 0);
    case IR_POW: {
      snprintf(nm, sizeof nm, "llvm.nvvm.lg2.approx.%sf", f);
      LLVMValueRef l = cg_intr(g, in, nm, NULL, 0, args, 1);
      if (!l) return NULL;
      args[0] = LLVMBuildFMul(g->B, y, l, "");
      snprintf(nm, sizeof nm, "llvm.nvvm.ex2.approx.%sf", f);
      return cg_intr(g, in, nm, NULL, 0, args, 1);
    }
    case IR_ERF: {
      /* Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7) with ex2.approx */
      LLVMValueRef ax = cg_intr(g, in, "llvm.fabs", &T, 1, args, 1);
      LLVMValueRef tt = LLVMBuildFDiv(g->B, fconst(g, T, 1.0),
                                      LLVMBuildFAdd(g->B, fconst(g, T, 1.0), LLVMBuildFMul(g->B, ax, fconst(g, T, 0.3275911), ""), ""), "");
      static const double c[5] = {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592};
      LLVMValueRef p = fconst(g, T, c[0]);
      for (int i = 1; i < 5; i++) p = LLVMBuildFAdd(g->B, LLVMBuildFMul(g->B, p, tt, ""), fconst(g, T, c[i]), "");
      p = LLVMBuildFMul(g->B, p, tt, "");
      LLVMValueRef e = LLVMBuildFMul(g->B, LLVMBuildFMul(g->B, ax, ax, ""), fconst(g, T, -LOG2E), "");
      snprintf(nm, sizeof nm, "llvm.nvvm.ex2.approx.%sf", f);
      e = cg_intr(g, in, nm, NULL, 0, &e, 1);
      if (!e) return NULL;
      LLVMValueRef r = LLVMBuildFSub(g->B, fconst(g, T, 1.0), LLVMBuildFMul(g->B, p, e, ""), "");
      LLVMValueRef cp[2] = {r, x};
      return cg_intr(g, in, "llvm.copysign", &T, 1, cp, 2);
    }
    default: break;
    }
  }
  static const struct { int op; const char *n; } ld[] = {
      {IR_EXP, "exp"}, {IR_EXP2, "exp2"}, {IR_LOG, "log"}, {IR_LOG2, "log2"}, {IR_SIN, "sin"},
      {IR_COS, "cos"}, {IR_TANH, "tanh"}, {IR_ERF, "erf"}, {IR_POW, "pow"}};
  for (size_t i = 0; i < sizeof ld / sizeof ld[0]; i++)
    if (ld[i].op == op) {
      snprintf(nm, sizeof nm, "__nv_%s%s", ld[i].n, d ? "" : "f");
      return libdev(g, nm, T, args, op == IR_POW ? 2 : 1);
    }
  cg_fail(g, in, "no lowering for %s", ir_ops[op].name);
  return NULL;
}

/* ---- memory -------------------------------------------------------------------------- */
static const char *space_sfx(int sp) {
  return sp == CUTE_AS_GLOBAL ? ".global" : sp == CUTE_AS_SHARED ? ".shared" : sp == CUTE_AS_LOCAL ? ".local" : "";
}

/* load/store with a cache operator through inline PTX, moving bits as b32 lanes */
LLVMValueRef cg_access(cg *g, const ir_inst *in, int32_t t, int sp, LLVMValueRef p, LLVMValueRef val) {
  static const char *const hn[] = {"", "nc", "cs", "cg", "ca", "lu", "cv", "wb", "wt", "volatile"};
  int size = ir_tsize(g->ir, t);
  int lanes = size >= 4 ? size / 4 : 1;
  const char *bt = size >= 4 ? "b32" : size == 2 ? "b16" : "b8";
  LLVMTypeRef lty = size >= 4 ? g->ti32 : g->ti16;
  char tmpl[160], cons[64], vec[8];
  snprintf(vec, sizeof vec, lanes > 1 ? ".v%d" : "", lanes);
  const char *op = in->op == IR_LOAD ? "ld" : "st";
  const char *h = hn[in->imm];
  ir_buf rb = {0};
  for (int i = 0; i < lanes; i++) ir_buf_printf(&rb, "%s$%d", i ? "," : "", in->op == IR_LOAD ? i : i + 1);
  char regs[96];
  snprintf(regs, sizeof regs, lanes > 1 ? "{%s}" : "%s", rb.p ? rb.p : "");
  free(rb.p);
  if (in->op == IR_LOAD) {
    snprintf(tmpl, sizeof tmpl, "%s%s.%s%s.%s %s, [$%d];", op, space_sfx(sp), h, vec, bt, regs, lanes);
    size_t k = 0;
    for (int i = 0; i < lanes; i++) k += (size_t)snprintf(cons + k, sizeof cons - k, "=%c,", size >= 4 ? 'r' : 'h');
    snprintf(cons + k, sizeof cons - k, "l,~{memory}");
    LLVMTypeRef rt = lty;
    if (lanes > 1) {
      LLVMTypeRef f[4] = {lty, lty, lty, lty};
      rt = LLVMStructTypeInContext(g->C, f, (unsigned)lanes, 0);
    }
    LLVMValueRef r = cg_iasm(g, rt, tmpl, cons, &p, 1, 1);
    LLVMValueRef bits;
    if (lanes > 1) {
      bits = LLVMGetPoison(LLVMVectorType(g->ti32, (unsigned)lanes));
      for (int i = 0; i < lanes; i++)
        bits = LLVMBuildInsertElement(g->B, bits, LLVMBuildExtractValue(g->B, r, (unsigned)i, ""),
                                      LLVMConstInt(g->ti32, (unsigned)i, 0), "");
    } else {
      bits = r;
      if (size == 1) bits = LLVMBuildTrunc(g->B, r, g->ti8, "");
    }
    return LLVMBuildBitCast(g->B, bits, cg_type(g, t), "");
  }
  snprintf(tmpl, sizeof tmpl, "%s%s.%s%s.%s [$0], %s;", op, space_sfx(sp), h, vec, bt, regs);
  LLVMValueRef args[5];
  args[0] = p;
  size_t k = (size_t)snprintf(cons, sizeof cons, "l");
  if (lanes > 1) {
    LLVMValueRef bv = LLVMBuildBitCast(g->B, val, LLVMVectorType(g->ti32, (unsigned)lanes), "");
    for (int i = 0; i < lanes; i++) {
      args[i + 1] = LLVMBuildExtractElement(g->B, bv, LLVMConstInt(g->ti32, (unsigned)i, 0), "");
      k += (size_t)snprintf(cons + k, sizeof cons - k, ",r");
    }
  } else {
    LLVMValueRef bv = LLVMBuildBitCast(g->B, val, size == 1 ? g->ti8 : size == 2 ? g->ti16 : g->ti32, "");
    if (size == 1) bv = LLVMBuildZExt(g->B, bv, g->ti16, "");
    args[1] = bv;
    k += (size_t)snprintf(cons + k, sizeof cons - k, ",%c", size >= 4 ? 'r' : 'h');
  }
  snprintf(cons + k, sizeof cons - k, ",~{memory}");
  cg_iasm(g, g->tvoid, tmpl, cons, args, lanes + 1, 1);
  return NULL;
}

LLVMValueRef cg_atom(cg *g, const ir_inst *in, const int32_t *a) {
  int32_t pt = TY(a[0]);
  int sp = g->ir->types[pt].n;
  int32_t e = g->ir->types[pt].elem;
  int scope = (int)(in->op == IR_ATOM ? in->imm2 : in->imm);
  int isvec = g->ir->types[e].kind == CUTE_T_VEC;
  LLVMValueRef p = cg_val(g, a[0]);
  if (isvec && g->ir->types[e].elem == CUTE_T_BF16 && g->sm < 90) {
    cg_fail(g, in, "atom add on bf16x2 needs sm_90 or newer (target sm_%d)", g->sm);
    return NULL;
  }
  if (scope == CUTE_SCOPE_GPU && !isvec) {
    if (in->op == IR_CAS) {
      LLVMValueRef x = LLVMBuildAtomicCmpXchg(g->B, p, cg_val(g, a[1]), cg_val(g, a[2]), LLVMAtomicOrderingMonotonic,
                                              LLVMAtomicOrderingMonotonic, 0);
      return LLVMBuildExtractValue(g->B, x, 0, "");
    }
    int fl = ir_scalar_class(e) == 3, sg = ir_is_signed(g->ir, e);
    LLVMAtomicRMWBinOp op;
    switch (in->imm) {
    case CUTE_ATOM_ADD: op = fl ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd; break;
    case CUTE_ATOM_MIN: op = sg ? LLVMAtomicRMWBinOpMin : LLVMAtomicRMWBinOpUMin; break;
    case CUTE_ATOM_MAX: op = sg ? LLVMAtomicRMWBinOpMax : LLVMAtomicRMWBinOpUMax; break;
    case CUTE_ATOM_AND: op = LLVMAtomicRMWBinOpAnd; break;
    case CUTE_ATOM_OR: op = LLVMAtomicRMWBinOpOr; break;
    case CUTE_ATOM_XOR: op = LLVMAtomicRMWBinOpXor; break;
    case CUTE_ATOM_EXCH: op = LLVMAtomicRMWBinOpXchg; break;
    case CUTE_ATOM_INC: op = LLVMAtomicRMWBinOpUIncWrap; break;
    default: op = LLVMAtomicRMWBinOpUDecWrap; break;
    }
    LLVMValueRef v = cg_val(g, a[1]);
    if (op == LLVMAtomicRMWBinOpUIncWrap || op == LLVMAtomicRMWBinOpUDecWrap) {
      /* PTX atom.inc/dec wrap at the operand: map to the intrinsic-free asm path */
      goto asm_path;
    }
    return LLVMBuildAtomicRMW(g->B, op, p, v, LLVMAtomicOrderingMonotonic, 0);
  }
asm_path:;
  static const char *const sc[] = {".gpu", ".cta", ".sys"};
  static const char *const on[] = {"add", "min", "max", "and", "or", "xor", "exch", "inc", "dec"};
  char tmpl[128], cons[48], c;
  int bits = ir_tsize(g->ir, e) * 8;
  const char *tn;
  if (isvec) tn = g->ir->types[e].elem == CUTE_T_F16 ? "noftz.f16x2" : "noftz.bf16x2";
  else if (in->op == IR_CAS || in->imm == CUTE_ATOM_EXCH || in->imm == CUTE_ATOM_AND || in->imm == CUTE_ATOM_OR ||
           in->imm == CUTE_ATOM_XOR)
    tn = bits == 64 ? "b64" : "b32";
  else if (ir_scalar_class(e) == 3) tn = ptx_tname(e);
  else if (in->imm == CUTE_ATOM_ADD) tn = bits == 64 ? "u64" : "u32";
  else tn = ptx_tname(e);
  LLVMTypeRef rt;
  if (isvec) { rt = g->ti32; c = 'r'; }
  else rt = reg_type(g, e, &c);
  if (in->op == IR_CAS) {
    snprintf(tmpl, sizeof tmpl, "atom%s%s.cas.%s $0, [$1], $2, $3;", sc[scope], space_sfx(sp), tn);
    snprintf(cons, sizeof cons, "=%c,l,%c,%c,~{memory}", c, c, c);
    LLVMValueRef args[3] = {p, cg_val(g, a[1]), cg_val(g, a[2])};
    return cg_iasm(g, rt, tmpl, cons, args, 3, 1);
  }
  snprintf(tmpl, sizeof tmpl, "atom%s%s.%s.%s $0, [$1], $2;", sc[scope], space_sfx(sp), on[in->imm], tn);
  snprintf(cons, sizeof cons, "=%c,l,%c,~{memory}", c, c);
  LLVMValueRef v = cg_val(g, a[1]);
  if (isvec) v = LLVMBuildBitCast(g->B, v, g->ti32, "");
  LLVMValueRef args[2] = {p, v};
  LLVMValueRef r = cg_iasm(g, rt, tmpl, cons, args, 2, 1);
  return isvec ? LLVMBuildBitCast(g->B, r, cg_type(g, e), "") : r;
}
