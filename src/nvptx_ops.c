/* nvptx_ops.c -- the NVPTX target's op lowering: nvptx_op (target.h's op hook) is its table
 * of contents (one line per op that gen_body leaves to the target: special
 * registers, barriers, fences, shuffles, votes, atomics, printf/assert/trap,
 * shared/local memory, inline PTX with fragments, by-value parameter
 * addresses, conversions and math through nvptx_lower.c).  A second target
 * fills its own op hook in its cute_target. */
#include "codegen.h"
#include "target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static LLVMValueRef shfl32(cg *g, const ir_inst *in, LLVMValueRef v, int isf, LLVMValueRef lane, LLVMValueRef mask) {
  static const char *const mn[] = {"idx", "up", "down", "bfly"};
  char nm[64];
  snprintf(nm, sizeof nm, "llvm.nvvm.shfl.sync.%s.%s", mn[in->imm], isf ? "f32" : "i32");
  int w = (int)in->imm2;
  unsigned cval = (unsigned)((32 - w) << 8) | (in->imm == CUTE_SHFL_UP ? 0u : 0x1fu);
  LLVMValueRef args[4] = {mask, v, lane, LLVMConstInt(g->ti32, cval, 0)};
  return cg_intr(g, in, nm, NULL, 0, args, 4);
}

static LLVMValueRef cg_shfl(cg *g, const ir_inst *in, const int32_t *a) {
  int32_t t = TY(a[0]);
  LLVMValueRef v = cg_val(g, a[0]), lane = cg_val(g, a[1]), mask = cg_val(g, a[2]);
  if (t == CUTE_T_F32) return shfl32(g, in, v, 1, lane, mask);
  if (ir_tsize(g->ir, t) == 4) {
    LLVMValueRef r = shfl32(g, in, t == CUTE_T_I32 || t == CUTE_T_U32 ? v : LLVMBuildBitCast(g->B, v, g->ti32, ""), 0, lane, mask);
    return r && t != CUTE_T_I32 && t != CUTE_T_U32 ? LLVMBuildBitCast(g->B, r, cg_type(g, t), "") : r;
  }
  LLVMTypeRef v2 = LLVMVectorType(g->ti32, 2);
  LLVMValueRef bv = LLVMBuildBitCast(g->B, v, v2, "");
  LLVMValueRef out = LLVMGetPoison(v2);
  for (unsigned i = 0; i < 2; i++) {
    LLVMValueRef idx = LLVMConstInt(g->ti32, i, 0);
    LLVMValueRef r = shfl32(g, in, LLVMBuildExtractElement(g->B, bv, idx, ""), 0, lane, mask);
    if (!r) return NULL;
    out = LLVMBuildInsertElement(g->B, out, r, idx, "");
  }
  return LLVMBuildBitCast(g->B, out, cg_type(g, t), "");
}

static LLVMValueRef cg_sreg(cg *g, const ir_inst *in) {
  static const char *const names[] = {IR_SREG_NAMES};
  char nm[80], part[32];
  snprintf(part, sizeof part, "%s", names[in->imm]);
  for (char *p = part; *p; p++) if (*p == '_') *p = '.';
  snprintf(nm, sizeof nm, "llvm.nvvm.read.ptx.sreg.%s", part);
  return cg_intr(g, in, nm, NULL, 0, NULL, 0);
}


/* ---- inline PTX with fragments ---------------------------------------------------------- */
/* An asm operand in a register: vectors travel as integers of their size. */
static LLVMValueRef asm_in(cg *g, int32_t t, LLVMValueRef v) {
  if (g->ir->types[t].kind != CUTE_T_VEC) return v;
  return LLVMBuildBitCast(g->B, v, LLVMIntTypeInContext(g->C, (unsigned)ir_tsize(g->ir, t) * 8), "");
}
static LLVMTypeRef asm_ty(cg *g, int32_t t) {
  return g->ir->types[t].kind == CUTE_T_VEC ? LLVMIntTypeInContext(g->C, (unsigned)ir_tsize(g->ir, t) * 8) : cg_type(g, t);
}

/* asm: fragment operands are passed element by element (extractvalue), a
   fragment or multi-output vector result comes back as a struct of its
   elements; none of it touches memory. */
static LLVMValueRef cg_asm(cg *g, const ir_inst *in, const int32_t *a) {
  cute_ir *ir = g->ir;
  const char *cons = ir_strget(ir, (int32_t)in->imm2);
  int nout = 0;
  for (const char *p = cons; *p; p++)
    if (*p == '=' && (p == cons || p[-1] == ',')) nout++;
  int32_t t = in->type;
  int kind = ir->types[t].kind;
  /* a fragment always comes back as a struct of its elements (even of one) */
  int multi = kind == CUTE_T_ARR || (kind == CUTE_T_VEC && nout > 1) ? ir->types[t].n : 0;
  if (kind == CUTE_T_ARR && nout != ir->types[t].n) multi = -1;
  if (multi < 0 || (!multi && nout != (t != CUTE_T_VOID))) {
    cg_fail(g, in, "asm: %d outputs for a %s result", nout, ir_type_str(ir, t));
    return NULL;
  }
  int nargs = 0;
  for (int i = 0; i < in->nargs; i++) {
    int32_t at = ir_vtype(g->f, a[i]);
    nargs += ir->types[at].kind == CUTE_T_ARR ? ir->types[at].n : 1;
  }
  LLVMValueRef *args = malloc(sizeof *args * (size_t)(nargs + 1));
  LLVMTypeRef *ft = malloc(sizeof *ft * (size_t)(multi + 1));
  if (!args || !ft) { free(args); free(ft); cg_fail(g, in, "out of memory"); return NULL; }
  int k = 0;
  for (int i = 0; i < in->nargs; i++) {
    int32_t at = ir_vtype(g->f, a[i]);
    LLVMValueRef v = cg_val(g, a[i]);
    if (ir->types[at].kind == CUTE_T_ARR)
      for (int e = 0; e < ir->types[at].n; e++)
        args[k++] = asm_in(g, ir->types[at].elem, LLVMBuildExtractValue(g->B, v, (unsigned)e, ""));
    else
      args[k++] = asm_in(g, at, v);
  }
  int32_t et = multi ? ir->types[t].elem : t;
  LLVMTypeRef rt = multi || t == CUTE_T_VOID ? g->tvoid : asm_ty(g, t);
  if (multi) {
    for (int i = 0; i < multi; i++) ft[i] = asm_ty(g, et);
    rt = LLVMStructTypeInContext(g->C, ft, (unsigned)multi, 0);
  }
  LLVMValueRef call = cg_iasm(g, rt, ir_strget(ir, (int32_t)in->imm), cons, args, nargs, 1);
  LLVMValueRef res = NULL;
  LLVMTypeRef T = cg_type(g, t);
  if (multi) {
    res = LLVMGetPoison(T);
    for (int i = 0; i < multi; i++) {
      LLVMValueRef e = LLVMBuildExtractValue(g->B, call, (unsigned)i, "");
      if (ir->types[et].kind == CUTE_T_VEC) e = LLVMBuildBitCast(g->B, e, cg_type(g, et), "");
      res = kind == CUTE_T_ARR ? LLVMBuildInsertValue(g->B, res, e, (unsigned)i, "")
                               : LLVMBuildInsertElement(g->B, res, e, LLVMConstInt(g->ti32, (unsigned)i, 0), "");
    }
  } else if (t != CUTE_T_VOID) {
    res = kind == CUTE_T_VEC ? LLVMBuildBitCast(g->B, call, T, "") : call;
  }
  free(args);
  free(ft);
  return res;
}

/* ---- printf, assert, trap ----------------------------------------------------------------- */
static LLVMValueRef global_string(cg *g, const char *s) {
  size_t n = strlen(s);
  LLVMValueRef init = LLVMConstStringInContext2(g->C, s, n, 0);
  LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->M, LLVMTypeOf(init), ".str", 1);
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMPrivateLinkage);
  LLVMSetUnnamedAddress(gv, LLVMGlobalUnnamedAddr);
  LLVMSetAlignment(gv, 1);
  return LLVMConstAddrSpaceCast(gv, g->tptr);
}

/* vprintf(fmt, packed args) */
static void emit_printf(cg *g, const ir_inst *in, const char *fmt, const int32_t *a, int n) {
  if (!g->vprintf) {
    LLVMTypeRef pt[2] = {g->tptr, g->tptr};
    g->vprintf = LLVMAddFunction(g->M, "vprintf", LLVMFunctionType(g->ti32, pt, 2, 0));
  }
  LLVMValueRef args[2] = {global_string(g, fmt), LLVMConstPointerNull(g->tptr)};
  if (n > 0) {
    LLVMTypeRef ft[16];
    LLVMValueRef fv[16];
    for (int i = 0; i < n && i < 16; i++) {
      int32_t t = TY(a[i]);
      LLVMValueRef v = cg_val(g, a[i]);
      if (g->ir->types[t].kind == CUTE_T_PTR) {
        if (g->ir->types[t].n != 0) v = LLVMBuildAddrSpaceCast(g->B, v, g->tptr, "");
      } else if (ir_scalar_class(t) == 3) {
        if (t != CUTE_T_F64) v = LLVMBuildFPExt(g->B, v, g->tf64, "");
      } else if (t == CUTE_T_I1 || ir_bits(t) < 32) {
        if (t != CUTE_T_I1 && ir_is_signed(g->ir, t)) v = LLVMBuildSExt(g->B, v, g->ti32, "");
        else v = LLVMBuildZExt(g->B, v, g->ti32, "");
      }
      fv[i] = v;
      ft[i] = LLVMTypeOf(v);
    }
    LLVMTypeRef st = LLVMStructTypeInContext(g->C, ft, (unsigned)n, 0);
    LLVMValueRef buf = cg_entry_alloca(g, st, 8);
    for (int i = 0; i < n; i++) LLVMBuildStore(g->B, fv[i], LLVMBuildStructGEP2(g->B, st, buf, (unsigned)i, ""));
    args[1] = buf;
  }
  (void)in;
  LLVMBuildCall2(g->B, LLVMGlobalGetValueType(g->vprintf), g->vprintf, args, 2, "");
}


static LLVMValueRef nv_printf(cg *g, const cg_op *o) {
  emit_printf(g, o->in, ir_strget(g->ir, (int32_t)o->in->imm), o->a, o->in->nargs);
  return NULL;
}
static LLVMValueRef nv_trap(cg *g, const cg_op *o) {
  cg_intr(g, o->in, "llvm.trap", NULL, 0, NULL, 0);
  return NULL;
}
/* The fault record (docs/FAULTS.md): the module global cute_fault_rec holds
   the device address of the host's cute_fault_record (0: none).  The first
   failing assertion claims it (state 0 -> 1), writes its IR ref, Lua line,
   thread and block, fences at system scope and sets state 2; only the failing
   path runs any of it. */
static void assert_record(cg *g, const cg_op *o) {
  const ir_inst *in = o->in;
  LLVMValueRef gv = LLVMGetNamedGlobal(g->M, "cute_fault_rec");
  if (!gv) {
    gv = LLVMAddGlobalInAddressSpace(g->M, g->ti64, "cute_fault_rec", 1);
    LLVMSetInitializer(gv, LLVMConstInt(g->ti64, 0, 0));
    LLVMSetAlignment(gv, 8);
  }
  LLVMValueRef a = LLVMBuildLoad2(g->B, g->ti64, gv, "");
  LLVMSetVolatile(a, 1);
  LLVMBasicBlockRef claim = cg_newbb(g, "assert.claim"), write = cg_newbb(g, "assert.write"),
                    done = cg_newbb(g, "assert.report");
  LLVMBuildCondBr(g->B, LLVMBuildICmp(g->B, LLVMIntNE, a, LLVMConstInt(g->ti64, 0, 0), ""), claim, done);
  LLVMPositionBuilderAtEnd(g->B, claim);
  LLVMValueRef rec = LLVMBuildIntToPtr(g->B, a, g->tptr, "");
  LLVMValueRef x = LLVMBuildAtomicCmpXchg(g->B, rec, LLVMConstInt(g->ti32, 0, 0), LLVMConstInt(g->ti32, 1, 0),
                                          LLVMAtomicOrderingMonotonic, LLVMAtomicOrderingMonotonic, 0);
  LLVMValueRef won = LLVMBuildICmp(g->B, LLVMIntEQ, LLVMBuildExtractValue(g->B, x, 0, ""), LLVMConstInt(g->ti32, 0, 0), "");
  LLVMBuildCondBr(g->B, won, write, done);
  LLVMPositionBuilderAtEnd(g->B, write);
  static const char *const sregs[6] = {"tid.x", "tid.y", "tid.z", "ctaid.x", "ctaid.y", "ctaid.z"};
  LLVMValueRef v[8] = {LLVMConstInt(g->ti32, (unsigned long long)o->r, 0), LLVMConstInt(g->ti32, (unsigned long long)in->line, 0)};
  for (int i = 0; i < 6; i++) {
    char nm[64];
    snprintf(nm, sizeof nm, "llvm.nvvm.read.ptx.sreg.%s", sregs[i]);
    v[2 + i] = cg_intr(g, in, nm, NULL, 0, NULL, 0);
  }
  static const unsigned slot[8] = {1, 2, 4, 5, 6, 7, 8, 9}; /* cute_fault_record: ref, line, (pad), tid[3], ctaid[3] */
  for (int i = 0; i < 8; i++) {
    LLVMValueRef idx = LLVMConstInt(g->ti32, slot[i], 0);
    LLVMSetVolatile(LLVMBuildStore(g->B, v[i], LLVMBuildGEP2(g->B, g->ti32, rec, &idx, 1, "")), 1);
  }
  LLVMTypeRef fty = LLVMFunctionType(g->tvoid, NULL, 0, 0);
  LLVMValueRef fence = LLVMGetInlineAsm(fty, "membar.sys;", 11, "~{memory}", 9, 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(g->B, fty, fence, NULL, 0, ""); /* (LLVM 19's NVPTX selects no system-scope fence) */
  LLVMSetVolatile(LLVMBuildStore(g->B, LLVMConstInt(g->ti32, 2, 0), rec), 1);
  LLVMBuildBr(g->B, done);
  LLVMPositionBuilderAtEnd(g->B, done);
}

/* a failed assertion records itself (assert_record), prints "file:line:
   assertion failed: msg" and ends its thread (exit; not trap: a trap leaves the
   process's CUDA context with a sticky error that no reset clears, measured by
   tools/sticky_probe.py; the host raises the recorded failure at its next
   synchronize or copy back, docs/FAULTS.md).  Barriers do not wait for exited
   threads (PTX ISA, exit). */
static LLVMValueRef nv_assert(cg *g, const cg_op *o) {
  const ir_inst *in = o->in;
  cute_ir *ir = g->ir;
  if (!g->assertions) return NULL; /* enable_assertions = false: compiled out */
  LLVMBasicBlockRef fail = cg_newbb(g, "assert.fail"), ok = cg_newbb(g, "assert.ok");
  LLVMBuildCondBr(g->B, o->x, ok, fail);
  LLVMPositionBuilderAtEnd(g->B, fail);
  assert_record(g, o);
  char msg[600];
  if (in->file)
    snprintf(msg, sizeof msg, "%s:%d: assertion failed: %s\n", ir_strget(ir, in->file), in->line, ir_strget(ir, (int32_t)in->imm));
  else
    snprintf(msg, sizeof msg, "assertion failed: %s\n", ir_strget(ir, (int32_t)in->imm));
  emit_printf(g, in, msg, NULL, 0);
  LLVMTypeRef fty = LLVMFunctionType(g->tvoid, NULL, 0, 0);
  LLVMValueRef ex = LLVMGetInlineAsm(fty, "exit;", 5, "~{memory}", 9, 1, 0, LLVMInlineAsmDialectATT, 0);
  LLVMBuildCall2(g->B, fty, ex, NULL, 0, "");
  LLVMBuildUnreachable(g->B);
  LLVMPositionBuilderAtEnd(g->B, ok);
  return NULL;
}

/* ---- shared and local memory -------------------------------------------------------------- */
static LLVMValueRef nv_shared(cg *g, const cg_op *o) {
  const ir_inst *in = o->in;
  int32_t et = g->ir->types[in->type].elem;
  LLVMTypeRef at = LLVMArrayType2(cg_type(g, et), (uint64_t)in->imm);
  char nm[160];
  snprintf(nm, sizeof nm, "%s_smem%d", ir_strget(g->ir, g->f->name), o->r);
  LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->M, at, nm, CUTE_AS_SHARED);
  LLVMSetInitializer(gv, LLVMGetUndef(at));
  LLVMSetLinkage(gv, LLVMInternalLinkage);
  int al = cg_natural_align(g, et);
  if (in->imm2 > al) al = (int)in->imm2;
  LLVMSetAlignment(gv, (unsigned)al);
  return gv;
}
static LLVMValueRef nv_dynshared(cg *g, const cg_op *o) {
  if (!g->dynsmem) {
    LLVMTypeRef at = LLVMArrayType2(g->ti8, 0);
    g->dynsmem = LLVMAddGlobalInAddressSpace(g->M, at, "cute_dyn_smem", CUTE_AS_SHARED);
    LLVMSetLinkage(g->dynsmem, LLVMExternalLinkage);
    LLVMSetAlignment(g->dynsmem, 16);
  }
  if (o->in->imm2 > (int64_t)LLVMGetAlignment(g->dynsmem)) LLVMSetAlignment(g->dynsmem, (unsigned)o->in->imm2);
  return g->dynsmem;
}
static LLVMValueRef nv_local(cg *g, const cg_op *o) {
  int32_t et = g->ir->types[o->in->type].elem;
  int al = cg_natural_align(g, et);
  if (o->in->imm2 > al) al = (int)o->in->imm2;
  LLVMValueRef av = cg_entry_alloca(g, LLVMArrayType2(cg_type(g, et), (uint64_t)o->in->imm), al);
  return LLVMBuildAddrSpaceCast(g->B, av, o->T, "");
}
/* the byval pointer of a grid_constant bytes parameter: NVPTX makes it cvta.param */
static LLVMValueRef nv_param_addr(cg *g, const cg_op *o) { return o->x; }

/* ---- synchronisation and warp ops ------------------------------------------------------------ */
static LLVMValueRef nv_bar(cg *g, const cg_op *o) {
  const ir_inst *in = o->in;
  if (!in->imm && !in->imm2) { cg_intr(g, in, "llvm.nvvm.barrier0", NULL, 0, NULL, 0); return NULL; }
  char tmpl[64];
  if (in->imm2) snprintf(tmpl, sizeof tmpl, "bar.sync %d, %d;", (int)in->imm, (int)in->imm2);
  else snprintf(tmpl, sizeof tmpl, "bar.sync %d;", (int)in->imm);
  cg_iasm(g, g->tvoid, tmpl, "~{memory}", NULL, 0, 1);
  return NULL;
}
static LLVMValueRef nv_fence(cg *g, const cg_op *o) {
  static const char *const fn[] = {"llvm.nvvm.membar.gl", "llvm.nvvm.membar.cta", "llvm.nvvm.membar.sys"};
  cg_intr(g, o->in, fn[o->in->imm], NULL, 0, NULL, 0);
  return NULL;
}
static LLVMValueRef nv_shfl(cg *g, const cg_op *o) {
  if (g->sm < 70) { cg_fail(g, o->in, "shfl.sync needs sm_70 or newer (target sm_%d)", g->sm); return NULL; }
  return cg_shfl(g, o->in, o->a);
}
static LLVMValueRef nv_vote(cg *g, const cg_op *o) {
  if (g->sm < 70) { cg_fail(g, o->in, "vote.sync needs sm_70 or newer (target sm_%d)", g->sm); return NULL; }
  static const char *const vn[] = {"llvm.nvvm.vote.all.sync", "llvm.nvvm.vote.any.sync",
                                   "llvm.nvvm.vote.uni.sync", "llvm.nvvm.vote.ballot.sync"};
  LLVMValueRef args[2] = {o->x, o->y};
  return cg_intr(g, o->in, vn[o->in->imm], NULL, 0, args, 2);
}
static LLVMValueRef nv_prmt(cg *g, const cg_op *o) {
  LLVMValueRef args[3] = {o->x, o->y, cg_val(g, o->a[2])};
  return cg_intr(g, o->in, "llvm.nvvm.prmt", NULL, 0, args, 3);
}

/* ---- conversions, math, cache-hinted memory, atomics (nvptx_lower.c) -------------------------- */
static LLVMValueRef nv_cvt(cg *g, const cg_op *o) { return cg_cvt(g, o->in, o->in->type, o->t0, o->x, (int)o->in->imm); }
static LLVMValueRef nv_math(cg *g, const cg_op *o) { return cg_math(g, o->in, o->in->op, o->x, o->y); }
static LLVMValueRef nv_access(cg *g, const cg_op *o) {
  return cg_access(g, o->in, g->ir->types[o->t0].elem, g->ir->types[o->t0].n, o->x, o->y);
}
static LLVMValueRef nv_atom(cg *g, const cg_op *o) { return cg_atom(g, o->in, o->a); }
static LLVMValueRef nv_sreg(cg *g, const cg_op *o) { return cg_sreg(g, o->in); }
/* (arch-specific instructions on a target without them: cg_arch_feature_check fails) */
static LLVMValueRef nv_asm(cg *g, const cg_op *o) {
  if (cg_arch_feature_check(g, o->in, ir_strget(g->ir, (int32_t)o->in->imm))) return NULL;
  return cg_asm(g, o->in, o->a);
}

/* ---- the table of contents: one line per op gen_body leaves to the target ----------------------- */
LLVMValueRef nvptx_op(cg *g, const cg_op *o) {
  switch (o->in->op) {
  case IR_CVT: return nv_cvt(g, o);
  case IR_SQRT: case IR_RSQRT: case IR_RCP: case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2:
  case IR_SIN: case IR_COS: case IR_TANH: case IR_ERF: case IR_POW: case IR_FLOOR: case IR_CEIL:
  case IR_TRUNC: case IR_ROUND: return nv_math(g, o);
  case IR_PRMT: return nv_prmt(g, o);
  case IR_LOAD: case IR_STORE: return nv_access(g, o);
  case IR_SHARED: return nv_shared(g, o);
  case IR_DYNSHARED: return nv_dynshared(g, o);
  case IR_LOCAL: return nv_local(g, o);
  case IR_PARAMADDR: return nv_param_addr(g, o);
  case IR_SREG: return nv_sreg(g, o);
  case IR_BAR: return nv_bar(g, o);
  case IR_FENCE: return nv_fence(g, o);
  case IR_SHFL: return nv_shfl(g, o);
  case IR_VOTE: return nv_vote(g, o);
  case IR_ATOM: case IR_CAS: return nv_atom(g, o);
  case IR_PRINTF: return nv_printf(g, o);
  case IR_TRAP: return nv_trap(g, o);
  case IR_ASSERT: return nv_assert(g, o);
  case IR_ASM: return nv_asm(g, o);
  default:
    cg_fail(g, o->in, "%s is not supported by the code generator yet", ir_ops[o->in->op].name);
    return NULL;
  }
}
