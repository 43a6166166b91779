/*
 * codegen_llvm.c -- IR -> LLVM module (C API only) -> LLVMVerifyModule ->
 * default<On> passes -> PTX -> cubin (ptxas, when present).
 * With codegen_body.c (function bodies) and codegen_ops.c (op lowering) the
 * only files that include llvm-c headers.
 *
 * Lowering in short
 *  - kernels: ptx_kernel calling convention + !nvvm.annotations "kernel",
 *    maxntidx / minctasm; device functions: internal linkage.
 *  - structured regions become basic blocks; for-loops keep the induction
 *    variable in a phi; var/vget/vset are allocas in the entry block that
 *    mem2reg/SROA promote (O1+); unroll hints are !llvm.loop metadata.
 *  - .nc loads: !invariant.load on a global pointer (ld.global.nc); other
 *    cache hints, scoped atomics, f16x2/bf16x2 atomics, named barriers,
 *    tanh.approx, rounding-mode conversions: inline PTX.
 *  - accurate math: libdevice (__nv_*), linked from the CUDA toolkit.
 * The target machine is cached across compiles (guarded by a mutex).
 */
#include "codegen.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRIPLE "nvptx64-nvidia-cuda"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* ---- compile result ------------------------------------------------------- */
typedef struct ck {
  char *name;
  cute_kernel_info info;
} ck;

struct cute_compiled {
  char *ir_text, *llvm_ir, *ptx, *ptxas_log;
  void *cubin;
  size_t cubin_size;
  ck *k;
  int nk;
  cute_compile_times t;
};

/* ---- target machine cache -------------------------------------------------- */
static pthread_mutex_t tm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { LLVMTargetMachineRef tm; char cpu[32], feat[32]; int level; } tm_cache[4];
static int tm_next, targets_ready;

static LLVMTargetMachineRef get_tm(const char *cpu, const char *feat, int level, char *msg, size_t cap) {
  for (int i = 0; i < 4; i++)
    if (tm_cache[i].tm && !strcmp(tm_cache[i].cpu, cpu) && !strcmp(tm_cache[i].feat, feat) &&
        tm_cache[i].level == level)
      return tm_cache[i].tm;
  if (!targets_ready) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    targets_ready = 1;
  }
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(TRIPLE, &target, &err)) {
    snprintf(msg, cap, "LLVM: no NVPTX target: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return NULL;
  }
  static const LLVMCodeGenOptLevel lv[4] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess,
                                            LLVMCodeGenLevelDefault, LLVMCodeGenLevelAggressive};
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, TRIPLE, cpu, feat, lv[level & 3],
                                                    LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) { snprintf(msg, cap, "LLVM: cannot create a target machine for %s %s", cpu, feat); return NULL; }
  int i = tm_next++ & 3;
  if (tm_cache[i].tm) LLVMDisposeTargetMachine(tm_cache[i].tm);
  tm_cache[i].tm = tm;
  snprintf(tm_cache[i].cpu, sizeof tm_cache[i].cpu, "%s", cpu);
  snprintf(tm_cache[i].feat, sizeof tm_cache[i].feat, "%s", feat);
  tm_cache[i].level = level;
  return tm;
}

/* libdevice bitcode, read once (kept for the life of the process). */
static char *libdevice_bytes;
static size_t libdevice_size;
static char libdevice_path[512];

static const char *find_libdevice(const char *given) {
  static char p[512];
  if (given && *given) return access(given, R_OK) == 0 ? given : NULL;
  const char *ch = getenv("CUDA_HOME");
  if (!ch || !*ch) ch = getenv("CUDA_PATH");
  if (ch && *ch) {
    snprintf(p, sizeof p, "%s/nvvm/libdevice/libdevice.10.bc", ch);
    if (access(p, R_OK) == 0) return p;
  }
  snprintf(p, sizeof p, "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  return access(p, R_OK) == 0 ? p : NULL;
}

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

static void annotate(cg *g, LLVMValueRef fn, const char *key, int v) {
  LLVMMetadataRef ops[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->C, key, strlen(key)),
                            LLVMValueAsMetadata(LLVMConstInt(g->ti32, (unsigned)v, 0))};
  LLVMAddNamedMetadataOperand(g->M, "nvvm.annotations",
                              LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, ops, 3)));
}

static int declare_funcs(cg *g) {
  cute_ir *ir = g->ir;
  for (int32_t fi = 1; fi < ir->nfuncs; fi++) {
    ir_func *f = &ir->funcs[fi];
    LLVMTypeRef pt[64];
    if (f->nparams > 64) return cg_fail(g, NULL, "%s: more than 64 parameters", ir_strget(ir, f->name));
    for (int i = 0; i < f->nparams; i++) pt[i] = cg_param_type(g, f->inst[i + 1].type);
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
    if (f->kind == CUTE_FN_KERNEL) {
      LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
      annotate(g, fn, "kernel", 1);
      cg_kernel_params(g, fn, fi);
      if (f->maxntid) annotate(g, fn, "maxntidx", f->maxntid);
      if (f->minctasm) annotate(g, fn, "minctasm", f->minctasm);
    } else {
      LLVMSetLinkage(fn, LLVMInternalLinkage);
    }
    add_attr(g, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  }
  return 0;
}

static int link_libdevice(cg *g, char *msg, size_t cap) {
  const char *path = find_libdevice(g->o ? g->o->libdevice : NULL);
  if (!path) {
    snprintf(msg, cap, "accurate math (%s) needs libdevice: set CUDA_HOME to a CUDA toolkit with nvvm/libdevice/libdevice.10.bc, or use fast math",
             "__nv_* functions");
    return CUTE_E_UNSUPPORTED;
  }
  if (!libdevice_bytes || strcmp(path, libdevice_path)) {
    FILE *fp = fopen(path, "rb");
    char *data = NULL;
    long n = -1;
    if (fp && !fseek(fp, 0, SEEK_END) && (n = ftell(fp)) > 0 && !fseek(fp, 0, SEEK_SET)) {
      data = malloc((size_t)n);
      if (data && fread(data, 1, (size_t)n, fp) != (size_t)n) { free(data); data = NULL; }
    }
    if (fp) fclose(fp);
    if (!data) {
      snprintf(msg, cap, "cannot read libdevice %s", path);
      return CUTE_E_LLVM;
    }
    free(libdevice_bytes);
    libdevice_bytes = data;
    libdevice_size = (size_t)n;
    snprintf(libdevice_path, sizeof libdevice_path, "%s", path);
  }
  /* Lazy module over the cached bytes; every definition becomes linkonce_odr so
     the linker pulls in only what our __nv_* declarations reach. */
  LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRange(libdevice_bytes, libdevice_size, "libdevice", 0);
  LLVMModuleRef ld = NULL;
  if (LLVMGetBitcodeModuleInContext2(g->C, mb, &ld)) {
    LLVMDisposeMemoryBuffer(mb);
    snprintf(msg, cap, "cannot parse libdevice %.400s%s%.500s", path, g->diag_err ? ": " : "", g->diag);
    return CUTE_E_LLVM;
  }
  for (LLVMValueRef fn = LLVMGetFirstFunction(ld); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn) && LLVMGetLinkage(fn) == LLVMExternalLinkage) LLVMSetLinkage(fn, LLVMLinkOnceODRLinkage);
  LLVMSetTarget(ld, TRIPLE);
  LLVMSetDataLayout(ld, LLVMGetDataLayoutStr(g->M));
  if (LLVMLinkModules2(g->M, ld)) {
    snprintf(msg, cap, "linking libdevice failed: %.900s", g->diag);
    return CUTE_E_LLVM;
  }
  for (LLVMValueRef fn = LLVMGetFirstFunction(g->M); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn) || LLVMGetFunctionCallConv(fn) == LLVMPTXKernelCallConv) continue;
    LLVMSetLinkage(fn, LLVMInternalLinkage);
  }
  for (LLVMValueRef gv = LLVMGetFirstGlobal(g->M); gv; gv = LLVMGetNextGlobal(gv))
    if (!LLVMIsDeclaration(gv) && LLVMGetLinkage(gv) == LLVMExternalLinkage) LLVMSetLinkage(gv, LLVMInternalLinkage);
  return 0;
}

static char *dup_n(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) { memcpy(p, s, n); p[n] = 0; }
  return p;
}

static int err_out(cute_err *err, int code, const char *msg) {
  if (err) {
    err->code = code;
    snprintf(err->msg, sizeof err->msg, "%s", msg);
  }
  return code;
}

void cute_compiled_free(cute_compiled *c) {
  if (!c) return;
  free(c->ir_text);
  free(c->llvm_ir);
  free(c->ptx);
  free(c->ptxas_log);
  free(c->cubin);
  for (int i = 0; i < c->nk; i++) free(c->k[i].name);
  free(c->k);
  free(c);
}

/* builds, optimizes and emits under the TM lock */
static int compile_llvm(cute_ir *ir, const cute_compile_opts *o, cute_compiled *res, char *msg, size_t cap) {
  const char *arch = o && o->arch && *o->arch ? o->arch : "sm_90a";
  int opt = o ? o->opt_level : 3;
  if (opt < 0) opt = 0;
  if (opt > 3) opt = 3;
  char feat[32] = "";
  if (o && o->ptx_version) snprintf(feat, sizeof feat, "+ptx%d", o->ptx_version);
  /* LLVM 19's NVPTX processors and PTX features (anything else would make LLVM
     print "not a recognized processor" on stderr) */
  static const char *const cpus[] = {"sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80",
                                     "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};
  static const int ptxv[] = {32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74, 75, 76, 77, 78,
                             80, 81, 82, 83, 84, 85};
  int known = 0;
  for (size_t i = 0; i < sizeof cpus / sizeof cpus[0]; i++) known |= !strcmp(arch, cpus[i]);
  if (!known) {
    snprintf(msg, cap, "arch '%.40s' is not supported (LLVM 19: sm_60 .. sm_90, sm_90a)", arch);
    return CUTE_E_UNSUPPORTED;
  }
  if (o && o->ptx_version) {
    known = 0;
    for (size_t i = 0; i < sizeof ptxv / sizeof ptxv[0]; i++) known |= o->ptx_version == ptxv[i];
    if (!known) {
      snprintf(msg, cap, "PTX version %d is not supported by LLVM 19 (32 .. 85, e.g. 78 for 7.8)", o->ptx_version);
      return CUTE_E_UNSUPPORTED;
    }
  }
  int need_ptx = cg_min_ptx(ir); /* e.g. grid_constant parameters: cvta.param, PTX 7.7, sm_70 */
  if (need_ptx && (atoi(arch + 3) < 70 || (o && o->ptx_version && o->ptx_version < need_ptx))) {
    snprintf(msg, cap, "grid_constant parameters need sm_70 and PTX %d.%d or newer (arch %s, PTX %d)", need_ptx / 10,
             need_ptx % 10, arch, o ? o->ptx_version : 0);
    return CUTE_E_UNSUPPORTED;
  }
  if (need_ptx && !(o && o->ptx_version) && atoi(arch + 3) < 90) snprintf(feat, sizeof feat, "+ptx%d", need_ptx);
  double t0 = now_us();
  LLVMTargetMachineRef tm = get_tm(arch, feat, opt, msg, cap);
  if (!tm) return CUTE_E_LLVM;
  cg G = {0}, *g = &G;
  g->ir = ir;
  g->o = o;
  g->err = msg;
  g->errcap = cap;
  g->ftz = o && (o->flags & CUTE_C_FTZ);
  g->sm = atoi(arch + 3);
  g->ptx = o && o->ptx_version ? o->ptx_version : g->sm >= 90 ? 78 : need_ptx ? need_ptx : g->sm >= 80 ? 70 : 63;
  g->C = LLVMContextCreate();
  LLVMContextSetDiagnosticHandler(g->C, diag_handler, g);
  g->M = LLVMModuleCreateWithNameInContext("cute", g->C);
  g->B = LLVMCreateBuilderInContext(g->C);
  LLVMSetTarget(g->M, TRIPLE);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
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
  int rc = 0;
  if (!g->ty || !g->fn || !g->fnty) { snprintf(msg, cap, "out of memory"); rc = CUTE_E_NOMEM; goto out; }
  {
    LLVMValueRef flag = LLVMConstInt(g->ti32, g->ftz ? 1 : 0, 0);
    LLVMAddModuleFlag(g->M, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16, LLVMValueAsMetadata(flag));
  }
  if (o && (o->flags & CUTE_C_LINEINFO)) {
    g->scope_of = calloc((size_t)ir->nstrs + 1, sizeof *g->scope_of);
    if (!g->scope_of) { snprintf(msg, cap, "out of memory"); rc = CUTE_E_NOMEM; goto out; }
    g->dib = LLVMCreateDIBuilder(g->M);
    int32_t first = 0;
    for (int32_t fi = 1; fi < ir->nfuncs && !first; fi++)
      for (int32_t r = 1; r < ir->funcs[fi].ninst && !first; r++) first = ir->funcs[fi].inst[r].file;
    g->cu_file = first ? cg_di_file(g, ir_strget(ir, first)) : LLVMDIBuilderCreateFile(g->dib, "cute", 4, "", 0);
    /* DebugDirectivesOnly (3): .file/.loc, no DWARF sections (what clang -lineinfo does for CUDA) */
    LLVMDIBuilderCreateCompileUnit(g->dib, LLVMDWARFSourceLanguageC, g->cu_file, "cuteluajit", 10, 1, "", 0, 0,
                                   "", 0, (LLVMDWARFEmissionKind)3, 0, 0, 0, "", 0, "", 0);
    LLVMAddModuleFlag(g->M, LLVMModuleFlagBehaviorWarning, "Debug Info Version", 18,
                      LLVMValueAsMetadata(LLVMConstInt(g->ti32, LLVMDebugMetadataVersion(), 0)));
  }
  if (declare_funcs(g)) { rc = CUTE_E_LLVM; goto out; }
  for (int32_t fi = 1; fi < ir->nfuncs && !rc; fi++) {
    ir_func *f = &ir->funcs[fi];
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
  }
  if (g->dib) LLVMDIBuilderFinalize(g->dib);
  if (rc) goto out;
  double t1 = now_us();
  res->t.build_us = t1 - t0;
  char *vm = NULL;
  if (LLVMVerifyModule(g->M, LLVMReturnStatusAction, &vm)) {
    snprintf(msg, cap, "LLVM verifier: %s", vm ? vm : "?");
    char *txt = LLVMPrintModuleToString(g->M);
    res->llvm_ir = txt ? dup_n(txt, strlen(txt)) : NULL;
    LLVMDisposeMessage(txt);
    LLVMDisposeMessage(vm);
    rc = CUTE_E_LLVM;
    goto out;
  }
  LLVMDisposeMessage(vm);
  double t2 = now_us();
  res->t.llvm_verify_us = t2 - t1;
  if (g->need_libdevice && (rc = link_libdevice(g, msg, cap))) goto out;
  double t3 = now_us();
  res->t.link_us = t3 - t2;
  {
    char pipeline[96];
    snprintf(pipeline, sizeof pipeline, "%sdefault<O%d>", g->need_libdevice ? "function(nvvm-reflect),globaldce," : "", opt);
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(g->M, pipeline, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
      char *em = LLVMGetErrorMessage(e);
      snprintf(msg, cap, "LLVM passes (%s): %s", pipeline, em);
      LLVMDisposeErrorMessage(em);
      rc = CUTE_E_LLVM;
      goto out;
    }
  }
  double t4 = now_us();
  res->t.opt_us = t4 - t3;
  {
    char *txt = LLVMPrintModuleToString(g->M);
    res->llvm_ir = txt ? dup_n(txt, strlen(txt)) : NULL;
    LLVMDisposeMessage(txt);
  }
  {
    LLVMMemoryBufferRef buf = NULL;
    char *em = NULL;
    g->diag_err = 0;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, g->M, LLVMAssemblyFile, &em, &buf) || g->diag_err) {
      snprintf(msg, cap, "LLVM PTX emission: %.900s", em ? em : g->diag);
      LLVMDisposeMessage(em);
      if (buf) LLVMDisposeMemoryBuffer(buf);
      rc = CUTE_E_LLVM;
      goto out;
    }
    char *raw = dup_n(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
    LLVMDisposeMemoryBuffer(buf);
    res->ptx = raw ? cg_ptx_param_names(ir, raw) : NULL;
    free(raw);
  }
  res->t.emit_us = now_us() - t4;
out:
  if (!rc && g->diag_err) {
    snprintf(msg, cap, "LLVM: %.900s", g->diag);
    rc = CUTE_E_LLVM;
  }
  if (g->dib) LLVMDisposeDIBuilder(g->dib);
  free(g->scope_of);
  LLVMDisposeBuilder(g->B);
  LLVMDisposeModule(g->M);
  LLVMContextDispose(g->C);
  free(g->ty);
  free(g->fn);
  free(g->fnty);
  return rc;
}

int cute_compile(cute_ir *ir, const cute_compile_opts *o, cute_compiled **out, cute_err *err) {
  if (out) *out = NULL;
  if (!ir || !out) return err_out(err, CUTE_E_STATE, "compile: NULL context or out");
  if (ir->err_code) return cute_ir_status(ir, err);
  double t0 = now_us();
  cute_compiled *res = calloc(1, sizeof *res);
  if (!res) return err_out(err, CUTE_E_NOMEM, "out of memory");
  *out = res;
  char msg[1020];
  if (ir->nfuncs <= 1) return err_out(err, CUTE_E_ARG, "compile: no functions");
  if (!(o && (o->flags & CUTE_C_NO_VERIFY))) {
    for (int32_t i = 1; i < ir->nfuncs; i++)
      if (ir_verify_func(ir, i, msg, sizeof msg)) return err_out(err, CUTE_E_VERIFY, msg);
  }
  res->ir_text = ir_print_all(ir);
  double t1 = now_us();
  res->t.verify_us = t1 - t0;
  /* kernels */
  for (int32_t i = 1; i < ir->nfuncs; i++)
    if (ir->funcs[i].kind == CUTE_FN_KERNEL) res->nk++;
  res->k = calloc((size_t)res->nk + 1, sizeof *res->k);
  if (!res->k) return err_out(err, CUTE_E_NOMEM, "out of memory");
  int nk = 0;
  for (int32_t i = 1; i < ir->nfuncs; i++) {
    ir_func *f = &ir->funcs[i];
    if (f->kind != CUTE_FN_KERNEL) continue;
    ck *k = &res->k[nk++];
    const char *nm = ir_strget(ir, f->name);
    k->name = dup_n(nm, strlen(nm));
    int64_t smem = 0;
    for (int32_t r = 1; r < f->ninst; r++)
      if (f->inst[r].op == IR_SHARED) {
        int32_t et = ir->types[f->inst[r].type].elem;
        smem += f->inst[r].imm * ir_tsize(ir, et);
      }
    k->info.regs = -1;
    k->info.spill_stores = k->info.spill_loads = k->info.stack = k->info.cmem = -1;
    k->info.smem_static = (int32_t)smem;
    k->info.smem_dynamic = f->dynsmem;
    k->info.smem_optin = smem + f->dynsmem > 48 * 1024;
    k->info.max_threads = f->maxntid;
    k->info.min_blocks = f->minctasm;
  }
  pthread_mutex_lock(&tm_lock);
  int rc = compile_llvm(ir, o, res, msg, sizeof msg);
  pthread_mutex_unlock(&tm_lock);
  if (rc) { res->t.total_us = now_us() - t0; return err_out(err, rc, msg); }
  const char *ptxas = (o && (o->flags & CUTE_C_NO_PTXAS)) ? NULL : ptxas_find();
  if (ptxas) {
    double t5 = now_us();
    const char *arch = o && o->arch && *o->arch ? o->arch : "sm_90a";
    int popt = o && o->ptxas_opt > 0 ? o->ptxas_opt - 1 : 3;
    rc = ptxas_run(ptxas, res->ptx, arch, popt, o && (o->flags & CUTE_C_LINEINFO), &res->cubin, &res->cubin_size,
                   &res->ptxas_log, msg, sizeof msg);
    res->t.ptxas_us = now_us() - t5;
    if (rc) { res->t.total_us = now_us() - t0; return err_out(err, CUTE_E_PTXAS, msg); }
    ptxas_kinfo pk[64];
    int n = ptxas_parse(res->ptxas_log, pk, 64);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < res->nk; j++)
        if (!strcmp(pk[i].name, res->k[j].name)) {
          cute_kernel_info *ki = &res->k[j].info;
          ki->regs = pk[i].regs;
          if (pk[i].smem >= 0) ki->smem_static = pk[i].smem;
          ki->spill_stores = pk[i].spill_st;
          ki->spill_loads = pk[i].spill_ld;
          ki->stack = pk[i].stack;
          ki->cmem = pk[i].cmem;
          ki->smem_optin = (int64_t)ki->smem_static + ki->smem_dynamic > 48 * 1024;
        }
  }
  res->t.total_us = now_us() - t0;
  if (err) { err->code = 0; err->msg[0] = 0; }
  return 0;
}

const char *cute_compiled_ir_text(cute_compiled *c) { return c ? c->ir_text : NULL; }
const char *cute_compiled_llvm_ir(cute_compiled *c) { return c ? c->llvm_ir : NULL; }
const char *cute_compiled_ptx(cute_compiled *c) { return c ? c->ptx : NULL; }
const char *cute_compiled_ptxas_log(cute_compiled *c) { return c ? c->ptxas_log : NULL; }
const void *cute_compiled_cubin(cute_compiled *c, size_t *size) {
  if (size) *size = c ? c->cubin_size : 0;
  return c ? c->cubin : NULL;
}
int cute_compiled_has_cubin(cute_compiled *c) { return c && c->cubin != NULL; }
int cute_compiled_kernel_count(cute_compiled *c) { return c ? c->nk : 0; }
const char *cute_compiled_kernel_name(cute_compiled *c, int i) {
  return c && i >= 0 && i < c->nk ? c->k[i].name : NULL;
}
int cute_compiled_info(cute_compiled *c, const char *kernel, cute_kernel_info *out) {
  if (!c || !out) return CUTE_E_STATE;
  for (int i = 0; i < c->nk; i++)
    if (!kernel || !strcmp(kernel, c->k[i].name)) { *out = c->k[i].info; return 0; }
  return CUTE_E_ARG;
}
void cute_compiled_times(cute_compiled *c, cute_compile_times *out) {
  if (!out) return;
  if (!c) { memset(out, 0, sizeof *out); return; }
  *out = c->t;
}
