/*
 * codegen_body.c -- one function's body: IR instructions -> LLVM IR, with
 * structured regions (if / for / while, break / continue, early return) as
 * basic blocks, line info (DWARF locations from the IR's loc records) and
 * the helpers the lowering shares.  Op cases that need more than a line call
 * into codegen_ops.c; the compile driver is codegen_llvm.c.
 */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add_call_attr(cg *g, LLVMValueRef call, const char *name) {
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->C, k, 0));
}

/* inline PTX; side: has side effects (and convergent) */
LLVMValueRef cg_iasm(cg *g, LLVMTypeRef ret, const char *tmpl, const char *cons, LLVMValueRef *args,
                         int nargs, int side) {
  LLVMTypeRef at0[20], *at = nargs > 20 ? malloc(sizeof *at * (size_t)nargs) : at0;
  if (!at) return NULL;
  for (int i = 0; i < nargs; i++) at[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, at, (unsigned)nargs, 0);
  if (at != at0) free(at);
  LLVMValueRef ia = LLVMGetInlineAsm(fty, tmpl, strlen(tmpl), cons, strlen(cons), side, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(g->B, fty, ia, args, (unsigned)nargs, "");
  if (side) add_call_attr(g, call, "convergent");
  return call;
}

static LLVMBasicBlockRef newbb(cg *g, const char *name) {
  return LLVMAppendBasicBlockInContext(g->C, g->F, name);
}

static int terminated(cg *g) {
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(g->B);
  return LLVMGetBasicBlockTerminator(bb) != NULL;
}

/* after ret/break/continue: later instructions go into an unreachable block */
static void dead_block(cg *g) { LLVMPositionBuilderAtEnd(g->B, newbb(g, "dead")); }

static void br(cg *g, LLVMBasicBlockRef to) {
  if (!terminated(g)) LLVMBuildBr(g->B, to);
}

static LLVMValueRef entry_alloca(cg *g, LLVMTypeRef t, int align) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->C);
  LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
  if (first) LLVMPositionBuilderBefore(b, first);
  else LLVMPositionBuilderAtEnd(b, g->entry);
  LLVMValueRef a = LLVMBuildAlloca(b, t, "");
  if (align) LLVMSetAlignment(a, (unsigned)align);
  LLVMDisposeBuilder(b);
  return a;
}

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
    LLVMValueRef buf = entry_alloca(g, st, 8);
    for (int i = 0; i < n; i++) LLVMBuildStore(g->B, fv[i], LLVMBuildStructGEP2(g->B, st, buf, (unsigned)i, ""));
    args[1] = buf;
  }
  (void)in;
  LLVMBuildCall2(g->B, LLVMGlobalGetValueType(g->vprintf), g->vprintf, args, 2, "");
}

/* ---- line info ------------------------------------------------------------------------------ */
LLVMMetadataRef cg_di_file(cg *g, const char *path) {
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  size_t dl = slash ? (size_t)(slash - path) : 0;
  return LLVMDIBuilderCreateFile(g->dib, name, strlen(name), slash ? path : "", dl);
}

void cg_begin_debug_func(cg *g) {
  ir_func *f = g->f;
  int32_t file = 0, line = 0;
  for (int32_t r = 1; r < f->ninst && !file; r++)
    if (f->inst[r].file) { file = f->inst[r].file; line = f->inst[r].line; }
  LLVMMetadataRef df = file ? cg_di_file(g, ir_strget(g->ir, file)) : g->cu_file;
  LLVMMetadataRef sty = LLVMDIBuilderCreateSubroutineType(g->dib, df, NULL, 0, LLVMDIFlagZero);
  const char *nm = ir_strget(g->ir, f->name);
  g->sp = LLVMDIBuilderCreateFunction(g->dib, df, nm, strlen(nm), nm, strlen(nm), df, (unsigned)line, sty,
                                      f->kind != CUTE_FN_KERNEL, 1, (unsigned)line, LLVMDIFlagZero, 1);
  LLVMSetSubprogram(g->F, g->sp);
  memset(g->scope_of, 0, sizeof *g->scope_of * (size_t)g->ir->nstrs);
  if (file) g->scope_of[file] = g->sp;
}

static void set_debug_loc(cg *g, const ir_inst *in) {
  LLVMMetadataRef scope = g->sp;
  if (in->file && in->file < g->ir->nstrs) {
    if (!g->scope_of[in->file])
      g->scope_of[in->file] = LLVMDIBuilderCreateLexicalBlockFile(g->dib, g->sp, cg_di_file(g, ir_strget(g->ir, in->file)), 0);
    scope = g->scope_of[in->file];
  }
  LLVMSetCurrentDebugLocation2(g->B, LLVMDIBuilderCreateDebugLocation(g->C, in->file ? (unsigned)in->line : 0, 0, scope, NULL));
}

/* ---- one function ----------------------------------------------------------------------- */
int cg_gen_body(cg *g) {
  ir_func *f = g->f;
  cute_ir *ir = g->ir;
  g->entry = newbb(g, "entry");
  LLVMBasicBlockRef start = newbb(g, "start");
  LLVMPositionBuilderAtEnd(g->B, start);
  for (int i = 1; i <= f->nparams; i++) g->val[i] = LLVMGetParam(g->F, (unsigned)(i - 1));
  for (int32_t r = f->nparams + 1; r < f->ninst && !g->failed; r++) {
    ir_inst *in = &f->inst[r];
    const int32_t *a = ir_args(f, in);
    LLVMValueRef x = in->nargs > 0 ? cg_val(g, a[0]) : NULL, y = in->nargs > 1 ? cg_val(g, a[1]) : NULL;
    int32_t t0 = in->nargs > 0 ? TY(a[0]) : 0;
    int isf = ir_is_float(ir, t0), sg = ir_is_signed(ir, t0);
    LLVMTypeRef T = cg_type(g, in->type);
    LLVMValueRef res = NULL;
    ctl *top = g->ncs ? &g->cs[g->ncs - 1] : NULL;
    if (g->dib) set_debug_loc(g, in);
    switch (in->op) {
    case IR_FOR: {
      ctl c = {0};
      c.opener = r;
      c.op = IR_FOR;
      c.pre = LLVMGetInsertBlock(g->B);
      c.head = newbb(g, "for.head");
      c.body = newbb(g, "for.body");
      c.latch = newbb(g, "for.latch");
      c.exitb = newbb(g, "for.exit");
      br(g, c.head);
      LLVMPositionBuilderAtEnd(g->B, c.head);
      c.iv = LLVMBuildPhi(g->B, T, "i");
      LLVMValueRef lo = x;
      LLVMAddIncoming(c.iv, &lo, &c.pre, 1);
      /* iv < hi for a positive step, iv > hi for a negative one (signed types);
         a runtime step picks by its sign (0: no iteration; cute.range asserts it is not 0) */
      LLVMValueRef cond;
      if (a[2] < 0 || !sg) {
        int neg = a[2] < 0 && sg && f->cst[-a[2]].bits < 0;
        LLVMIntPredicate p = neg ? LLVMIntSGT : sg ? LLVMIntSLT : LLVMIntULT;
        cond = LLVMBuildICmp(g->B, p, c.iv, y, "");
      } else {
        LLVMValueRef st = cg_val(g, a[2]), zero = LLVMConstNull(T);
        LLVMValueRef up = LLVMBuildAnd(g->B, LLVMBuildICmp(g->B, LLVMIntSGT, st, zero, ""),
                                       LLVMBuildICmp(g->B, LLVMIntSLT, c.iv, y, ""), "");
        LLVMValueRef down = LLVMBuildAnd(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, st, zero, ""),
                                         LLVMBuildICmp(g->B, LLVMIntSGT, c.iv, y, ""), "");
        cond = LLVMBuildOr(g->B, up, down, "");
      }
      LLVMBuildCondBr(g->B, cond, c.body, c.exitb);
      LLVMPositionBuilderAtEnd(g->B, c.body);
      g->cs[g->ncs++] = c;
      res = c.iv;
      break;
    }
    case IR_IF: {
      ctl c = {0};
      c.opener = r;
      c.op = IR_IF;
      c.body = newbb(g, "then");
      c.elseb = newbb(g, "else");
      c.exitb = newbb(g, "endif");
      LLVMBuildCondBr(g->B, x, c.body, c.elseb);
      LLVMPositionBuilderAtEnd(g->B, c.body);
      g->cs[g->ncs++] = c;
      break;
    }
    case IR_ELSE:
      top->then_end = LLVMGetInsertBlock(g->B);
      br(g, top->exitb);
      LLVMPositionBuilderAtEnd(g->B, top->elseb);
      top->elseb = NULL;
      break;
    case IR_WHILE: {
      ctl c = {0};
      c.opener = r;
      c.op = IR_WHILE;
      c.head = newbb(g, "while.head");
      c.body = newbb(g, "while.body");
      c.exitb = newbb(g, "while.exit");
      br(g, c.head);
      LLVMPositionBuilderAtEnd(g->B, c.head);
      g->cs[g->ncs++] = c;
      break;
    }
    case IR_DO:
      LLVMBuildCondBr(g->B, x, top->body, top->exitb);
      LLVMPositionBuilderAtEnd(g->B, top->body);
      top->latch = top->head;
      break;
    case IR_YIELD: /* the last instruction of a branch (else: elseb cleared) */
      if (!top->elseb) top->else_val = x;
      else top->then_val = x;
      break;
    case IR_END: {
      ctl c = *top;
      g->ncs--;
      if (c.op == IR_FOR) {
        br(g, c.latch);
        LLVMPositionBuilderAtEnd(g->B, c.latch);
        /* iv + step must not wrap (a grid-stride loop near 2^31 - 1 would go on
           from a negative index): a step of +-1 cannot overflow past a bound that
           iv has not reached (nsw add); any other step leaves the loop on overflow */
        int32_t sref = ir_args(f, &f->inst[c.opener])[2];
        LLVMValueRef st = cg_val(g, sref), next, b;
        int sg = ir_is_signed(ir, f->inst[c.opener].type);
        int unit = sref < 0 && (f->cst[-sref].bits == 1 || (sg && f->cst[-sref].bits == -1));
        if (unit) {
          next = sg ? LLVMBuildNSWAdd(g->B, c.iv, st, "") : LLVMBuildNUWAdd(g->B, c.iv, st, "");
          LLVMAddIncoming(c.iv, &next, &c.latch, 1);
          b = LLVMBuildBr(g->B, c.head);
        } else {
          LLVMTypeRef IT = LLVMTypeOf(c.iv);
          LLVMValueRef ov = cg_intr(g, &f->inst[c.opener], sg ? "llvm.sadd.with.overflow" : "llvm.uadd.with.overflow",
                                    &IT, 1, (LLVMValueRef[]){c.iv, st}, 2);
          if (!ov) return 1;
          next = LLVMBuildExtractValue(g->B, ov, 0, "");
          LLVMValueRef o = LLVMBuildExtractValue(g->B, ov, 1, "");
          LLVMAddIncoming(c.iv, &next, &c.latch, 1);
          b = LLVMBuildCondBr(g->B, o, c.exitb, c.head);
        }
        cg_loop_md(g, b, f->inst[c.opener].imm);
        LLVMPositionBuilderAtEnd(g->B, c.exitb);
      } else if (c.op == IR_WHILE) {
        br(g, c.head);
        LLVMPositionBuilderAtEnd(g->B, c.exitb);
      } else {
        LLVMBasicBlockRef last = LLVMGetInsertBlock(g->B);
        br(g, c.exitb);
        if (c.elseb) { /* no else branch */
          LLVMPositionBuilderAtEnd(g->B, c.elseb);
          LLVMBuildBr(g->B, c.exitb);
        }
        LLVMPositionBuilderAtEnd(g->B, c.exitb);
        ir_inst *o = &f->inst[c.opener];
        if (o->type != CUTE_T_VOID) {
          LLVMValueRef phi = LLVMBuildPhi(g->B, cg_type(g, o->type), "");
          LLVMValueRef vals[2] = {c.then_val, c.else_val};
          LLVMBasicBlockRef bbs[2] = {c.then_end, last};
          LLVMAddIncoming(phi, vals, bbs, 2);
          g->val[c.opener] = phi;
        }
      }
      break;
    }
    case IR_BREAK: case IR_CONTINUE: {
      ctl *lp = NULL;
      for (int i = g->ncs - 1; i >= 0 && !lp; i--)
        if (g->cs[i].op != IR_IF) lp = &g->cs[i];
      br(g, in->op == IR_BREAK ? lp->exitb : lp->latch);
      dead_block(g);
      break;
    }
    case IR_RET:
      if (!terminated(g)) {
        if (x) LLVMBuildRet(g->B, x);
        else LLVMBuildRetVoid(g->B);
      }
      dead_block(g);
      break;
    case IR_CALL: {
      LLVMValueRef args[16];
      for (int i = 0; i < in->nargs; i++) args[i] = cg_val(g, a[i]);
      res = LLVMBuildCall2(g->B, g->fnty[in->imm], g->fn[in->imm], args, in->nargs, "");
      break;
    }
    case IR_VAR: {
      res = entry_alloca(g, T, cg_natural_align(g, in->type));
      if (x) LLVMBuildStore(g->B, x, res);
      break;
    }
    case IR_VGET: res = LLVMBuildLoad2(g->B, T, x, ""); break;
    case IR_VSET: LLVMBuildStore(g->B, y, x); break;
    case IR_ADD: res = isf ? LLVMBuildFAdd(g->B, x, y, "") : LLVMBuildAdd(g->B, x, y, ""); break;
    case IR_SUB: res = isf ? LLVMBuildFSub(g->B, x, y, "") : LLVMBuildSub(g->B, x, y, ""); break;
    case IR_MUL: res = isf ? LLVMBuildFMul(g->B, x, y, "") : LLVMBuildMul(g->B, x, y, ""); break;
    case IR_DIV: /* integers: guarded, see cg_divrem */
      res = isf ? LLVMBuildFDiv(g->B, x, y, "") : cg_divrem(g, IR_DIV, sg, x, y);
      break;
    case IR_REM:
      res = isf ? LLVMBuildFRem(g->B, x, y, "") : cg_divrem(g, IR_REM, sg, x, y);
      break;
    case IR_MIN: case IR_MAX: {
      const char *n = isf ? (in->op == IR_MIN ? "llvm.minnum" : "llvm.maxnum")
                          : in->op == IR_MIN ? (sg ? "llvm.smin" : "llvm.umin") : (sg ? "llvm.smax" : "llvm.umax");
      LLVMValueRef args[2] = {x, y};
      res = cg_intr(g, in, n, &T, 1, args, 2);
      break;
    }
    case IR_MULHI: {
      int bits = ir_bits(t0);
      LLVMTypeRef W = LLVMIntTypeInContext(g->C, (unsigned)bits * 2);
      LLVMValueRef wx = sg ? LLVMBuildSExt(g->B, x, W, "") : LLVMBuildZExt(g->B, x, W, "");
      LLVMValueRef wy = sg ? LLVMBuildSExt(g->B, y, W, "") : LLVMBuildZExt(g->B, y, W, "");
      LLVMValueRef m = LLVMBuildMul(g->B, wx, wy, "");
      res = LLVMBuildTrunc(g->B, LLVMBuildLShr(g->B, m, LLVMConstInt(W, (unsigned)bits, 0), ""), T, "");
      break;
    }
    case IR_AND: res = LLVMBuildAnd(g->B, x, y, ""); break;
    case IR_OR: res = LLVMBuildOr(g->B, x, y, ""); break;
    case IR_XOR: res = LLVMBuildXor(g->B, x, y, ""); break;
    case IR_SHL: case IR_SHR: res = cg_shift(g, in->op, sg, x, y); break; /* clamped, see cg_shift */
    case IR_NEG: res = isf ? LLVMBuildFNeg(g->B, x, "") : LLVMBuildNeg(g->B, x, ""); break;
    case IR_NOT: res = LLVMBuildNot(g->B, x, ""); break;
    case IR_ABS:
      if (isf) res = cg_intr(g, in, "llvm.fabs", &T, 1, &x, 1);
      else {
        LLVMValueRef args[2] = {x, LLVMConstInt(g->ti1, 0, 0)};
        res = cg_intr(g, in, "llvm.abs", &T, 1, args, 2);
      }
      break;
    case IR_FMA: {
      LLVMValueRef args[3] = {x, y, cg_val(g, a[2])};
      res = cg_intr(g, in, "llvm.fma", &T, 1, args, 3);
      break;
    }
    case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE: {
      int k = in->op - IR_EQ;
      if (isf) {
        static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT, LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
        res = LLVMBuildFCmp(g->B, fp[k], x, y, "");
      } else {
        static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
        static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
        res = LLVMBuildICmp(g->B, sg ? sp[k] : up[k], x, y, "");
      }
      break;
    }
    case IR_ISNAN: res = LLVMBuildFCmp(g->B, LLVMRealUNO, x, x, ""); break;
    case IR_SELECT: res = LLVMBuildSelect(g->B, x, y, cg_val(g, a[2]), ""); break;
    case IR_CVT: res = cg_cvt(g, in, in->type, t0, x, (int)in->imm); break;
    case IR_BITCAST:
      if (ir->types[t0].kind == CUTE_T_PTR) res = LLVMBuildPtrToInt(g->B, x, T, "");
      else if (ir->types[in->type].kind == CUTE_T_PTR) res = LLVMBuildIntToPtr(g->B, x, T, "");
      else res = LLVMBuildBitCast(g->B, x, T, "");
      break;
    case IR_PTRCAST:
      res = ir->types[t0].n != ir->types[in->type].n ? LLVMBuildAddrSpaceCast(g->B, x, T, "") : x;
      break;
    case IR_SQRT: case IR_RSQRT: case IR_RCP: case IR_EXP: case IR_EXP2: case IR_LOG: case IR_LOG2:
    case IR_SIN: case IR_COS: case IR_TANH: case IR_ERF: case IR_POW: case IR_FLOOR: case IR_CEIL:
    case IR_TRUNC: case IR_ROUND:
      res = cg_math(g, in, in->op, x, y);
      break;
    case IR_POPC: case IR_CLZ: {
      LLVMTypeRef xt = LLVMTypeOf(x);
      LLVMValueRef args[2] = {x, LLVMConstInt(g->ti1, 0, 0)};
      res = cg_intr(g, in, in->op == IR_POPC ? "llvm.ctpop" : "llvm.ctlz", &xt, 1, args, in->op == IR_POPC ? 1 : 2);
      if (res && ir_bits(t0) == 64) res = LLVMBuildTrunc(g->B, res, g->ti32, "");
      break;
    }
    case IR_BREV: res = cg_intr(g, in, "llvm.bitreverse", &T, 1, &x, 1); break;
    case IR_PRMT: {
      LLVMValueRef args[3] = {x, y, cg_val(g, a[2])};
      res = cg_intr(g, in, "llvm.nvvm.prmt", NULL, 0, args, 3);
      break;
    }
    case IR_EXTRACT:
      res = ir->types[t0].kind == CUTE_T_ARR ? LLVMBuildExtractValue(g->B, x, (unsigned)in->imm, "")
                                             : LLVMBuildExtractElement(g->B, x, LLVMConstInt(g->ti32, (unsigned long long)in->imm, 0), "");
      break;
    case IR_INSERT:
      res = ir->types[t0].kind == CUTE_T_ARR ? LLVMBuildInsertValue(g->B, x, y, (unsigned)in->imm, "")
                                             : LLVMBuildInsertElement(g->B, x, y, LLVMConstInt(g->ti32, (unsigned long long)in->imm, 0), "");
      break;
    case IR_VEC: {
      int n = ir->types[in->type].n, arr = ir->types[in->type].kind == CUTE_T_ARR;
      res = LLVMGetPoison(T);
      for (int i = 0; i < n; i++) {
        LLVMValueRef e = cg_val(g, a[in->nargs == 1 ? 0 : i]);
        res = arr ? LLVMBuildInsertValue(g->B, res, e, (unsigned)i, "")
                  : LLVMBuildInsertElement(g->B, res, e, LLVMConstInt(g->ti32, (unsigned)i, 0), "");
      }
      break;
    }
    case IR_LOAD: case IR_STORE: {
      int sp = ir->types[t0].n;
      int32_t et = ir->types[t0].elem;
      int al = in->imm2 ? (int)in->imm2 : cg_natural_align(g, et);
      if (in->imm && in->imm != CUTE_HINT_NC && in->imm != CUTE_HINT_VOLATILE) {
        res = cg_access(g, in, et, sp, x, y);
        break;
      }
      LLVMValueRef m = in->op == IR_LOAD ? LLVMBuildLoad2(g->B, T, x, "") : LLVMBuildStore(g->B, y, x);
      LLVMSetAlignment(m, (unsigned)al);
      if (in->imm == CUTE_HINT_VOLATILE) LLVMSetVolatile(m, 1);
      if (in->imm == CUTE_HINT_NC) {
        unsigned kind = LLVMGetMDKindIDInContext(g->C, "invariant.load", 14);
        LLVMSetMetadata(m, kind, LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, NULL, 0)));
      }
      if (in->op == IR_LOAD) res = m;
      break;
    }
    case IR_GEP: {
      LLVMValueRef idx = y;
      int32_t it = TY(a[1]);
      if (ir_bits(it) < 64) idx = ir_is_signed(ir, it) ? LLVMBuildSExt(g->B, y, g->ti64, "") : LLVMBuildZExt(g->B, y, g->ti64, "");
      res = LLVMBuildInBoundsGEP2(g->B, cg_type(g, ir->types[t0].elem), x, &idx, 1, "");
      break;
    }
    case IR_SHARED: {
      int32_t et = ir->types[in->type].elem;
      LLVMTypeRef at = LLVMArrayType2(cg_type(g, et), (uint64_t)in->imm);
      char nm[160];
      snprintf(nm, sizeof nm, "%s_smem%d", ir_strget(ir, f->name), r);
      LLVMValueRef gv = LLVMAddGlobalInAddressSpace(g->M, at, nm, CUTE_AS_SHARED);
      LLVMSetInitializer(gv, LLVMGetUndef(at));
      LLVMSetLinkage(gv, LLVMInternalLinkage);
      int al = cg_natural_align(g, et);
      if (in->imm2 > al) al = (int)in->imm2;
      LLVMSetAlignment(gv, (unsigned)al);
      res = gv;
      break;
    }
    case IR_DYNSHARED: {
      if (!g->dynsmem) {
        LLVMTypeRef at = LLVMArrayType2(g->ti8, 0);
        g->dynsmem = LLVMAddGlobalInAddressSpace(g->M, at, "cute_dyn_smem", CUTE_AS_SHARED);
        LLVMSetLinkage(g->dynsmem, LLVMExternalLinkage);
        LLVMSetAlignment(g->dynsmem, 16);
      }
      if (in->imm2 > (int64_t)LLVMGetAlignment(g->dynsmem)) LLVMSetAlignment(g->dynsmem, (unsigned)in->imm2);
      res = g->dynsmem;
      break;
    }
    case IR_LOCAL: {
      int32_t et = ir->types[in->type].elem;
      int al = cg_natural_align(g, et);
      if (in->imm2 > al) al = (int)in->imm2;
      LLVMValueRef av = entry_alloca(g, LLVMArrayType2(cg_type(g, et), (uint64_t)in->imm), al);
      res = LLVMBuildAddrSpaceCast(g->B, av, T, "");
      break;
    }
    case IR_SREG: res = cg_sreg(g, in); break;
    case IR_BAR:
      if (!in->imm && !in->imm2) cg_intr(g, in, "llvm.nvvm.barrier0", NULL, 0, NULL, 0);
      else {
        char tmpl[64];
        if (in->imm2) snprintf(tmpl, sizeof tmpl, "bar.sync %d, %d;", (int)in->imm, (int)in->imm2);
        else snprintf(tmpl, sizeof tmpl, "bar.sync %d;", (int)in->imm);
        cg_iasm(g, g->tvoid, tmpl, "~{memory}", NULL, 0, 1);
      }
      break;
    case IR_FENCE: {
      static const char *const fn[] = {"llvm.nvvm.membar.gl", "llvm.nvvm.membar.cta", "llvm.nvvm.membar.sys"};
      cg_intr(g, in, fn[in->imm], NULL, 0, NULL, 0);
      break;
    }
    case IR_SHFL:
      if (g->sm < 70) { cg_fail(g, in, "shfl.sync needs sm_70 or newer (target sm_%d)", g->sm); break; }
      res = cg_shfl(g, in, a);
      break;
    case IR_VOTE: {
      if (g->sm < 70) { cg_fail(g, in, "vote.sync needs sm_70 or newer (target sm_%d)", g->sm); break; }
      static const char *const vn[] = {"llvm.nvvm.vote.all.sync", "llvm.nvvm.vote.any.sync",
                                       "llvm.nvvm.vote.uni.sync", "llvm.nvvm.vote.ballot.sync"};
      LLVMValueRef args[2] = {x, y};
      res = cg_intr(g, in, vn[in->imm], NULL, 0, args, 2);
      break;
    }
    case IR_ATOM: case IR_CAS: res = cg_atom(g, in, a); break;
    case IR_PRINTF: emit_printf(g, in, ir_strget(ir, (int32_t)in->imm), a, in->nargs); break;
    case IR_TRAP: cg_intr(g, in, "llvm.trap", NULL, 0, NULL, 0); break;
    case IR_ASSERT: {
      LLVMBasicBlockRef fail = newbb(g, "assert.fail"), ok = newbb(g, "assert.ok");
      LLVMBuildCondBr(g->B, x, ok, fail);
      LLVMPositionBuilderAtEnd(g->B, fail);
      char msg[600];
      if (in->file)
        snprintf(msg, sizeof msg, "%s:%d: assertion failed: %s\n", ir_strget(ir, in->file), in->line, ir_strget(ir, (int32_t)in->imm));
      else
        snprintf(msg, sizeof msg, "assertion failed: %s\n", ir_strget(ir, (int32_t)in->imm));
      emit_printf(g, in, msg, NULL, 0);
      cg_intr(g, in, "llvm.trap", NULL, 0, NULL, 0);
      LLVMBuildUnreachable(g->B);
      LLVMPositionBuilderAtEnd(g->B, ok);
      break;
    }
    case IR_ASM: res = cg_asm(g, in, a); break;
    case IR_PARAMADDR: res = x; break; /* the byval pointer: NVPTX makes it cvta.param (grid_constant) */
    default:
      cg_fail(g, in, "%s is not supported by the code generator yet", ir_ops[in->op].name);
      break;
    }
    if (g->failed) return 1;
    if (in->type != CUTE_T_VOID && !res && in->op != IR_IF) {
      cg_fail(g, in, "%s produced no value", ir_ops[in->op].name);
      return 1;
    }
    g->val[r] = res ? res : g->val[r];
  }
  if (!terminated(g)) {
    if (f->ret == CUTE_T_VOID) LLVMBuildRetVoid(g->B);
    else LLVMBuildUnreachable(g->B);
  }
  LLVMPositionBuilderAtEnd(g->B, g->entry);
  LLVMBuildBr(g->B, start);
  return 0;
}
