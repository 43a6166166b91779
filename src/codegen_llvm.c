/*
 * codegen_llvm.c -- the target-neutral lowering stages behind backend.h:
 * IR -> LLVM module (C API only) -> LLVMVerifyModule (cg_lower), linking
 * the target's libraries and the option link's files (cg_link), the pass
 * pipeline default<On> (cg_optimise) and emission (cg_emit).  Function
 * bodies are in codegen_body.c, op lowering in codegen_ops.c; the target
 * (triple, target machine, kernel ABI, libdevice) is reached through the
 * hook table of target.h only.
 *
 * Lowering in short
 *  - kernels: the target's kernel ABI (NVPTX: ptx_kernel calling convention +
 *    !nvvm.annotations); device functions: internal linkage.
 *  - structured regions become basic blocks; for-loops keep the induction
 *    variable in a phi; var/vget/vset are allocas in the entry block that
 *    mem2reg/SROA promote (O1+); unroll hints are !llvm.loop metadata.
 *  - .nc loads: !invariant.load on a global pointer (ld.global.nc); other
 *    cache hints, scoped atomics, f16x2/bf16x2 atomics, named barriers,
 *    tanh.approx, rounding-mode conversions: inline PTX.
 *  - accurate math: libdevice (__nv_*), linked by the target.
 * A compile owns everything it touches: a private LLVMContext and module, and
 * a target machine of its thread's own (target_nvptx.c), so compiles in
 * several threads (the compile pool, compile_pool.c) need no lock.
 */
#include "backend.h"
#include "target.h"

#include <llvm-c/IRReader.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- generator state: see codegen.h ---------------------------------------- */
int cg_fail(cg *g, const ir_inst *in, const char *fmt, ...) {
  if (g->failed) return 1;
  g->failed = 1;
  char lb[256], m[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  snprintf(g->err, g->errcap, "%scodegen: %s", in ? ir_locstr(g->ir, in, lb, sizeof lb) : "", m);
  return 1;
}

static void diag_handler(LLVMDiagnosticInfoRef di, void *ctx) {
  cg *g = ctx;
  LLVMDiagnosticSeverity sev = LLVMGetDiagInfoSeverity(di);
  if (sev != LLVMDSError) return;
  char *d = LLVMGetDiagInfoDescription(di);
  if (!g->diag_err) snprintf(g->diag, sizeof g->diag, "%s", d ? d : "?");
  g->diag_err = 1;
  LLVMDisposeMessage(d);
}

LLVMTypeRef cg_type(cg *g, int32_t t) {
  if (g->ty[t]) return g->ty[t];
  ir_type *ty = &g->ir->types[t];
  LLVMTypeRef r = NULL;
  switch (ty->kind) {
  case CUTE_T_VOID: r = g->tvoid; break;
  case CUTE_T_I1: r = g->ti1; break;
  case CUTE_T_I8: case CUTE_T_U8: r = g->ti8; break;
  case CUTE_T_I16: case CUTE_T_U16: r = g->ti16; break;
  case CUTE_T_I32: case CUTE_T_U32: r = g->ti32; break;
  case CUTE_T_I64: case CUTE_T_U64: r = g->ti64; break;
  case CUTE_T_F16: r = g->tf16; break;
  case CUTE_T_BF16: r = g->tbf16; break;
  case CUTE_T_F32: r = g->tf32; break;
  case CUTE_T_F64: r = g->tf64; break;
  case CUTE_T_TF32: r = g->ti32; break;                         /* the f32 bits, low 13 zero */
  case CUTE_T_F8E4M3: case CUTE_T_F8E5M2: r = g->ti8; break;
  case CUTE_T_VEC: r = LLVMVectorType(cg_type(g, ty->elem), ty->n); break;
  case CUTE_T_PTR: r = LLVMPointerTypeInContext(g->C, ty->n); break;
  case CUTE_T_ARR: r = LLVMArrayType2(cg_type(g, ty->elem), (uint64_t)ty->n); break;
  case CUTE_T_BYTES: r = LLVMArrayType2(g->ti8, (uint64_t)ty->n); break;
  }
  return g->ty[t] = r;
}

LLVMValueRef cg_val(cg *g, int32_t r) {
  if (r > 0) return g->val[r];
  int32_t k = -r;
  if (g->cval[k]) return g->cval[k];
  ir_const *c = &g->f->cst[k];
  LLVMTypeRef t = cg_type(g, c->type);
  LLVMValueRef v;
  if (ir_scalar_class(c->type) == 3) {
    int bits = ir_bits(c->type);
    v = LLVMConstBitCast(LLVMConstInt(LLVMIntTypeInContext(g->C, (unsigned)bits), (unsigned long long)c->bits, 0), t);
  } else {
    v = LLVMConstInt(t, (unsigned long long)c->bits, ir_is_signed(g->ir, c->type));
  }
  return g->cval[k] = v;
}


LLVMValueRef cg_intr(cg *g, const ir_inst *in, const char *name, LLVMTypeRef *tys, int ntys,
                         LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id) { cg_fail(g, in, "LLVM 19 has no intrinsic %s", name); return NULL; }
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->M, id, tys, (size_t)ntys);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->C, id, tys, (size_t)ntys);
  return LLVMBuildCall2(g->B, fty, fn, args, (unsigned)nargs, "");
}


static void add_attr(cg *g, LLVMValueRef fn, unsigned idx, const char *name, uint64_t v) {
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(g->C, k, v));
}

/* a device function without a body: a declaration, defined by a linked file */
static int is_decl(const ir_func *f) { return f->kind == CUTE_FN_DEVICE && f->ninst - 1 <= f->nparams; }

static int declare_funcs(cg *g) {
  cute_ir *ir = g->ir;
  for (int32_t fi = 1; fi < ir->nfuncs; fi++) {
    ir_func *f = &ir->funcs[fi];
    LLVMTypeRef pt[64];
    if (f->nparams > 64) return cg_fail(g, NULL, "%s: more than 64 parameters", ir_strget(ir, f->name));
    for (int i = 0; i < f->nparams; i++) pt[i] = g->tgt->param_type(g, f->inst[i + 1].type);
    g->fnty[fi] = LLVMFunctionType(cg_type(g, f->ret), pt, (unsigned)f->nparams, 0);
    LLVMValueRef fn = LLVMAddFunction(g->M, ir_strget(ir, f->name), g->fnty[fi]);
    g->fn[fi] = fn;
    for (int i = 0; i < f->nparams; i++) {
      ir_inst *p = &f->inst[i + 1];
      int flags = (int)(p->imm2 & 0xff), align = (int)(p->imm2 >> 8);
      if (p->imm) {
        const char *nm = ir_strget(ir, (int32_t)p->imm);
        LLVMSetValueName2(LLVMGetParam(fn, (unsigned)i), nm, strlen(nm));
      }
      if (flags & CUTE_P_NOALIAS) add_attr(g, fn, (unsigned)i + 1, "noalias", 0);
      if (flags & CUTE_P_READONLY) add_attr(g, fn, (unsigned)i + 1, "readonly", 0);
      if (align) add_attr(g, fn, (unsigned)i + 1, "align", (uint64_t)align);
    }
    if (f->kind == CUTE_FN_KERNEL) g->tgt->kernel_abi(g, fn, f);
    else if (!is_decl(f)) LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
    g->tgt->function_attrs(g, fn);
  }
  return 0;
}

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) { memcpy(p, s, n); p[n] = 0; }
  return p;
}

static char *module_text(cg *g) {
  char *txt = LLVMPrintModuleToString(g->M);
  char *r = txt ? dup_n(txt, strlen(txt)) : NULL;
  LLVMDisposeMessage(txt);
  return r;
}

char *cg_module_text(cg *g) { return g && g->M ? module_text(g) : NULL; }

/* an op gen_body leaves to the target: through its hook table */
LLVMValueRef cg_target_op(cg *g, const cg_op *o) { return g->tgt->op(g, o); }

/* ---- the generator ------------------------------------------------------------------------ */
cg *cg_new(cute_ir *ir, const cute_compile_opts *o, const char *arch, char *msg, size_t cap) {
  cg *g = calloc(1, sizeof *g);
  if (!g) { snprintf(msg, cap, "out of memory"); return NULL; }
  g->ir = ir;
  g->o = o;
  g->err = msg;
  g->errcap = cap;
  g->arch = arch;
  g->tgt = target_for_arch(arch);
  g->arch_specific = arch[strlen(arch) - 1] == 'a';
  g->sm = atoi(arch + 3);
  g->ptx_req = o->ptx_version;
  g->ptx = o->ptx_version ? o->ptx_version : g->tgt ? g->tgt->default_version(arch) : 0;
  g->opt = o->opt_level;
  g->fast_math = o->fast_math;
  g->ftz = o->ftz || o->fast_math;
  g->assertions = o->enable_assertions;
  return g;
}

void cg_free(cg *g) {
  if (!g) return;
  if (g->dib) LLVMDisposeDIBuilder(g->dib);
  free(g->scope_of);
  if (g->B) LLVMDisposeBuilder(g->B);
  if (g->M) LLVMDisposeModule(g->M);
  if (g->C) LLVMContextDispose(g->C);
  free(g->ty);
  free(g->fn);
  free(g->fnty);
  if (g->own_tm) LLVMDisposeTargetMachine(g->own_tm);
  free(g);
}

static int diag_rc(cg *g) {
  if (!g->diag_err) return 0;
  if (!g->failed) snprintf(g->err, g->errcap, "LLVM: %.900s", g->diag);
  return CUTE_E_LLVM;
}

int cg_lower(cg *g, char **text) {
  cute_ir *ir = g->ir;
  char *msg = g->err;
  size_t cap = g->errcap;
  if (!g->tgt) { snprintf(msg, cap, "arch '%.40s': no target emits it", g->arch); return CUTE_E_UNSUPPORTED; }
  int prc = g->tgt->prepare(g, msg, cap);
  if (prc) return prc;
  g->tm = g->tgt->machine(g, msg, cap); /* (this thread's own: target_nvptx.c) */
  if (!g->tm) return CUTE_E_LLVM;
  g->C = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(g->C, diag_handler, g);
  g->M = LLVMModuleCreateWithNameInContext("cute", g->C);
  g->B = LLVMCreateBuilderInContext(g->C);
  LLVMSetTarget(g->M, g->tgt->triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(g->tm);
  LLVMSetModuleDataLayout(g->M, dl);
  LLVMDisposeTargetData(dl);
  g->tvoid = LLVMVoidTypeInContext(g->C);
  g->ti1 = LLVMInt1TypeInContext(g->C);
  g->ti8 = LLVMInt8TypeInContext(g->C);
  g->ti16 = LLVMInt16TypeInContext(g->C);
  g->ti32 = LLVMInt32TypeInContext(g->C);
  g->ti64 = LLVMInt64TypeInContext(g->C);
  g->tf16 = LLVMHalfTypeInContext(g->C);
  g->tbf16 = LLVMBFloatTypeInContext(g->C);
  g->tf32 = LLVMFloatTypeInContext(g->C);
  g->tf64 = LLVMDoubleTypeInContext(g->C);
  g->tptr = LLVMPointerTypeInContext(g->C, 0);
  g->ty = calloc((size_t)ir->ntypes, sizeof *g->ty);
  g->fn = calloc((size_t)ir->nfuncs, sizeof *g->fn);
  g->fnty = calloc((size_t)ir->nfuncs, sizeof *g->fnty);
  if (!g->ty || !g->fn || !g->fnty) { snprintf(msg, cap, "out of memory"); return CUTE_E_NOMEM; }
  g->tgt->module_setup(g);
  if (g->o->lineinfo) {
    g->scope_of = calloc((size_t)ir->nstrs + 1, sizeof *g->scope_of);
    if (!g->scope_of) { snprintf(msg, cap, "out of memory"); return CUTE_E_NOMEM; }
    g->dib = LLVMCreateDIBuilder(g->M);
    int32_t first = 0;
    for (int32_t fi = 1; fi < ir->nfuncs && !first; fi++)
      for (int32_t r = 1; r < ir->funcs[fi].ninst && !first; r++) first = ir->funcs[fi].inst[r].file;
    g->cu_file = first ? cg_di_file(g, ir_strget(ir, first)) : LLVMDIBuilderCreateFile(g->dib, "cute", 4, "", 0);
    /* DebugDirectivesOnly (3): .file/.loc, no DWARF sections (what clang -lineinfo does for CUDA) */
    LLVMDIBuilderCreateCompileUnit(g->dib, LLVMDWARFSourceLanguageC, g->cu_file, "cuteluajit", 10, 1, "", 0, 0, "", 0,
                                   (LLVMDWARFEmissionKind)3, 0, 0, 0, "", 0, "", 0);
    LLVMAddModuleFlag(g->M, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                      LLVMValueAsMetadata(LLVMConstInt(g->ti32, LLVMDebugMetadataVersion(), 0)));
  }
  if (declare_funcs(g)) return CUTE_E_LLVM;
  int rc = 0;
  for (int32_t fi = 1; fi < ir->nfuncs && !rc; fi++) {
    ir_func *f = &ir->funcs[fi];
    if (is_decl(f)) continue;
    g->f = f;
    g->fi = fi;
    g->F = g->fn[fi];
    g->val = calloc((size_t)f->ninst + 1, sizeof *g->val);
    g->cval = calloc((size_t)f->ncst + 1, sizeof *g->cval);
    g->cs = calloc((size_t)f->ninst + 1, sizeof *g->cs);
    g->ncs = 0;
    if (!g->val || !g->cval || !g->cs) { snprintf(msg, cap, "out of memory"); rc = CUTE_E_NOMEM; }
    else {
      if (g->dib) cg_begin_debug_func(g);
      if (cg_gen_body(g)) rc = CUTE_E_LLVM;
      LLVMSetCurrentDebugLocation2(g->B, NULL);
    }
    free(g->val);
    free(g->cval);
    free(g->cs);
    g->val = g->cval = NULL;
    g->cs = NULL;
  }
  if (g->dib) LLVMDIBuilderFinalize(g->dib);
  if (rc) return rc;
  char *vm = NULL;
  if (LLVMVerifyModule(g->M, LLVMReturnStatusAction, &vm)) {
    *text = module_text(g);
    snprintf(msg, cap, "LLVM verifier: %s", vm ? vm : "?");
    LLVMDisposeMessage(vm);
    return CUTE_E_LLVM;
  }
  LLVMDisposeMessage(vm);
  return diag_rc(g);
}

/* one file of the option link: LLVM text (.ll) or bitcode (anything else);
   PTX cannot be linked into an LLVM module */
static int link_file(cg *g, const char *path, ir_buf *log) {
  size_t n = strlen(path);
  if (n > 4 && !strcmp(path + n - 4, ".ptx"))
    return snprintf(g->err, g->errcap, "link: '%.400s' is PTX; link LLVM bitcode (.bc) or LLVM text (.ll) files", path),
           CUTE_E_UNSUPPORTED;
  LLVMMemoryBufferRef mb = NULL;
  char *em = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &em)) {
    snprintf(g->err, g->errcap, "link: cannot read '%.400s': %.300s", path, em ? em : "?");
    LLVMDisposeMessage(em);
    return CUTE_E_ARG;
  }
  LLVMModuleRef m = NULL;
  int bad;
  if (n > 3 && !strcmp(path + n - 3, ".ll")) {
    bad = LLVMParseIRInContext(g->C, mb, &m, &em); /* takes mb */
  } else {
    bad = LLVMParseBitcodeInContext2(g->C, mb, &m);
    LLVMDisposeMemoryBuffer(mb);
  }
  if (bad) {
    snprintf(g->err, g->errcap, "link: cannot parse '%.400s': %.500s", path, em ? em : g->diag);
    LLVMDisposeMessage(em);
    return CUTE_E_LLVM;
  }
  LLVMSetTarget(m, g->tgt->triple);
  LLVMSetDataLayout(m, LLVMGetDataLayoutStr(g->M));
  g->diag_err = 0;
  if (LLVMLinkModules2(g->M, m)) {
    snprintf(g->err, g->errcap, "link: linking '%.400s' failed: %.500s", path, g->diag);
    return CUTE_E_LLVM;
  }
  ir_buf_printf(log, "%s\n", path);
  return 0;
}

int cg_link(cg *g, char **text) {
  ir_buf log = {0};
  int rc = g->tgt->link_libraries(g, &log, g->err, g->errcap);
  const char *l = g->o->link;
  char path[1024];
  while (!rc && l && *l) {
    const char *e = strchr(l, ',');
    size_t n = e ? (size_t)(e - l) : strlen(l);
    snprintf(path, sizeof path, "%.*s", (int)(n < sizeof path ? n : sizeof path - 1), l);
    rc = link_file(g, path, &log);
    l = e ? e + 1 : NULL;
  }
  if (!rc) {
    /* what was linked in is private to the module: only kernels stay visible */
    for (LLVMValueRef fn = LLVMGetFirstFunction(g->M); fn; fn = LLVMGetNextFunction(fn)) {
      if (LLVMIsDeclaration(fn) || LLVMGetFunctionCallConv(fn) == LLVMPTXKernelCallConv) continue;
      LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    for (LLVMValueRef gv = LLVMGetFirstGlobal(g->M); gv; gv = LLVMGetNextGlobal(gv)) {
      size_t gl; /* (cute_fault_rec stays visible: the host sets it, docs/FAULTS.md) */
      if (!LLVMIsDeclaration(gv) && LLVMGetLinkage(gv) == LLVMExternalLinkage &&
          strcmp(LLVMGetValueName2(gv, &gl), "cute_fault_rec"))
        LLVMSetLinkage(gv, LLVMInternalLinkage);
    }
    /* an undefined function left (not an intrinsic) would fail late, in ptxas or the JIT */
    for (LLVMValueRef fn = LLVMGetFirstFunction(g->M); fn && !rc; fn = LLVMGetNextFunction(fn)) {
      size_t nl;
      const char *nm = LLVMGetValueName2(fn, &nl);
      if (LLVMIsDeclaration(fn) && !LLVMGetIntrinsicID(fn) && strcmp(nm, "vprintf") && strncmp(nm, "__nvvm_", 7) &&
          LLVMGetFirstUse(fn)) {
        snprintf(g->err, g->errcap, "link: function '%.200s' is called but not defined (link its bitcode with the option link)", nm);
        rc = CUTE_E_LLVM;
      }
    }
  }
  *text = log.p;
  return rc;
}

int cg_optimise(cg *g, char **text) {
  char pipeline[128];
  snprintf(pipeline, sizeof pipeline, "%sdefault<O%d>", g->tgt->pre_passes(g), g->opt);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(g->M, pipeline, g->tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    char *em = LLVMGetErrorMessage(e);
    snprintf(g->err, g->errcap, "LLVM passes (%s): %s", pipeline, em);
    LLVMDisposeErrorMessage(em);
    return CUTE_E_LLVM;
  }
  if (text) *text = module_text(g);
  return diag_rc(g);
}

int cg_emit(cg *g, char **text) {
  LLVMMemoryBufferRef buf = NULL;
  char *em = NULL;
  g->diag_err = 0;
  int bad = LLVMTargetMachineEmitToMemoryBuffer(g->tm, g->M, LLVMAssemblyFile, &em, &buf);
  if (bad || g->diag_err) {
    snprintf(g->err, g->errcap, "LLVM PTX emission: %.900s", em ? em : g->diag);
    LLVMDisposeMessage(em);
    if (buf) LLVMDisposeMemoryBuffer(buf);
    return CUTE_E_LLVM;
  }
  char *raw = dup_n(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
  LLVMDisposeMemoryBuffer(buf);
  *text = raw ? g->tgt->finish_text(g, raw) : NULL;
  free(raw);
  return *text ? 0 : CUTE_E_NOMEM;
}
