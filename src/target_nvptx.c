/* target_nvptx.c -- the NVPTX target (target.h): the triple, the table of
 * architectures (and which compute capability maps to which), the target
 * machine cache, libdevice, the kernel ABI (ptx_kernel calling convention,
 * !nvvm.annotations: kernel, maxntidx, minctasm, maxnreg) and the f32
 * denormal / fast-math function attributes that the NVPTX back end reads. */
#include "target.h"
#include "backend.h"
#include "compile_opts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TRIPLE "nvptx64-nvidia-cuda"

/* ---- architectures ------------------------------------------------------------------
   LLVM 19's NVPTX processors (anything else makes LLVM print "not a
   recognized processor" on stderr), with the compute capability of each and
   LLVM's default PTX version for it. */
static const struct { const char *name; int cc, ptx; } archs[] = {
    {"sm_60", 60, 63}, {"sm_61", 61, 63}, {"sm_62", 62, 63}, {"sm_70", 70, 63}, {"sm_72", 72, 63},
    {"sm_75", 75, 63}, {"sm_80", 80, 70}, {"sm_86", 86, 70}, {"sm_87", 87, 70}, {"sm_89", 89, 70},
    {"sm_90", 90, 78}, {"sm_90a", 90, 78},
};
#define NARCH (int)(sizeof archs / sizeof archs[0])
static const int ptxv[] = {32, 40, 41, 42, 43, 50, 60, 61, 62, 63, 64, 65, 70, 71, 72, 73, 74,
                           75, 76, 77, 78, 80, 81, 82, 83, 84, 85};

static int arch_index(const char *a) {
  for (int i = 0; a && i < NARCH; i++)
    if (!strcmp(a, archs[i].name)) return i;
  return -1;
}
int cute_arch_supported(const char *arch) { return arch_index(arch) >= 0; }
static char arch_list[160];
static pthread_once_t arch_list_once = PTHREAD_ONCE_INIT;
static void make_arch_list(void) {
  for (int i = 0; i < NARCH; i++) {
    size_t n = strlen(arch_list);
    snprintf(arch_list + n, sizeof arch_list - n, "%s%s", i ? ", " : "", archs[i].name);
  }
}
const char *cute_arch_list(void) {
  pthread_once(&arch_list_once, make_arch_list);
  return arch_list;
}
int target_ptx_version_ok(int v) {
  for (size_t i = 0; i < sizeof ptxv / sizeof ptxv[0]; i++)
    if (ptxv[i] == v) return 1;
  return 0;
}
const char *target_ptx_versions(void) { return "32 .. 85, e.g. 78 for 7.8"; }
int target_default_ptx(const char *arch) {
  int i = arch_index(arch);
  return i < 0 ? 78 : archs[i].ptx;
}

/* The one rule from a device's compute capability to a target: the device's
   own processor (9.x: the arch-specific sm_90a), the newest one below it for
   a minor version LLVM does not know, and for a device newer than every
   target here the portable sm_90 that the driver JIT compiles for it. */
const char *cute_arch_for_cc(int major, int minor, int *portable) {
  if (portable) *portable = 0;
  int cc = major * 10 + minor;
  if (major < 6 || minor < 0 || minor > 9) return NULL;
  if (major == 9 && minor == 0) return "sm_90a";
  if (major >= 10 || cc > 90) {
    if (portable) *portable = 1;
    return "sm_90";
  }
  const char *best = NULL;
  for (int i = 0; i < NARCH; i++)
    if (archs[i].cc <= cc && archs[i].cc / 10 == major && !strchr(archs[i].name + 3, 'a')) best = archs[i].name;
  return best;
}

/* Instructions only the arch-specific sm_90a has (PTX ISA: "requires
   sm_90a"); on any other target they are a clear error at lowering, never a
   late ptxas or driver-JIT failure. */
static const char *const sm90a_only[] = {"wgmma.", "setmaxnreg."};

int cg_arch_feature_check(cg *g, const ir_inst *in, const char *ptx) {
  if (!ptx || g->arch_specific) return 0;
  for (size_t i = 0; i < sizeof sm90a_only / sizeof sm90a_only[0]; i++) {
    const char *p = strstr(ptx, sm90a_only[i]);
    if (!p) continue;
    size_t n = strcspn(p, " \t;{");
    return cg_fail(g, in, "'%.*s' needs the arch-specific target sm_90a; the target is %s", (int)(n < 60 ? n : 60), p,
                   g->arch);
  }
  return 0;
}

static int nvptx_arch_ok(const char *arch) { return arch_index(arch) >= 0; }

/* ---- the target machine cache: one per thread ------------------------------------------ */

/* An LLVM target machine is not safe to use from two threads at once (its
   subtargets are made lazily, the pass pipeline and emission read and write
   its state), while separate machines with separate LLVMContexts compile in
   parallel.  So each thread keeps its own small cache of machines per (arch,
   PTX version, level): the Lua thread, the warm-up thread and the compile
   pool's workers (compile_pool.c) never share one, and the code generator
   needs no lock.  When a thread exits (the key's destructor) its machines go
   to a shared list of spares, which a thread without a machine of that kind
   takes from before it makes one: the warm-up thread's machine (warmup.c)
   so serves the Lua thread's first compile, and a pool's workers serve the
   next pool's.  Past TM_MAX (and SPARE_MAX spares) a machine belongs to the
   compile that made it (cg->own_tm) and is disposed with it. */
#define TM_MAX 16
typedef struct tm_cache {
  int n;
  struct { LLVMTargetMachineRef tm; char cpu[32], feat[32]; int level; } e[TM_MAX];
} tm_cache;
static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;
static pthread_key_t tm_key;
static int tm_key_ok;

#define SPARE_MAX 64
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static int spare_n;
static struct { LLVMTargetMachineRef tm; char cpu[32], feat[32]; int level; } spare[SPARE_MAX];

static void tm_cache_free(void *p) {
  tm_cache *c = p;
  pthread_mutex_lock(&spare_lock);
  for (int i = 0; c && i < c->n; i++) {
    if (spare_n < SPARE_MAX) {
      int j = spare_n++;
      spare[j].tm = c->e[i].tm;
      memcpy(spare[j].cpu, c->e[i].cpu, sizeof spare[j].cpu);
      memcpy(spare[j].feat, c->e[i].feat, sizeof spare[j].feat);
      spare[j].level = c->e[i].level;
    } else {
      LLVMDisposeTargetMachine(c->e[i].tm);
    }
  }
  pthread_mutex_unlock(&spare_lock);
  free(c);
}

/* a spare machine of this kind, now the caller's (NULL: none) */
static LLVMTargetMachineRef take_spare(const char *cpu, const char *feat, int level) {
  LLVMTargetMachineRef tm = NULL;
  pthread_mutex_lock(&spare_lock);
  for (int i = 0; i < spare_n && !tm; i++)
    if (!strcmp(spare[i].cpu, cpu) && !strcmp(spare[i].feat, feat) && spare[i].level == level) {
      tm = spare[i].tm;
      spare[i] = spare[--spare_n];
    }
  pthread_mutex_unlock(&spare_lock);
  return tm;
}
static void nvptx_init(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  tm_key_ok = pthread_key_create(&tm_key, tm_cache_free) == 0;
}

static LLVMTargetMachineRef nvptx_machine(cg *g, char *msg, size_t cap) {
  char feat[32] = "";
  if (g->ptx_req) snprintf(feat, sizeof feat, "+ptx%d", g->ptx_req);
  const char *cpu = g->arch;
  int level = g->opt;
  pthread_once(&nvptx_once, nvptx_init);
  tm_cache *c = tm_key_ok ? pthread_getspecific(tm_key) : NULL;
  for (int i = 0; c && i < c->n; i++)
    if (!strcmp(c->e[i].cpu, cpu) && !strcmp(c->e[i].feat, feat) && c->e[i].level == level) return c->e[i].tm;
  LLVMTargetMachineRef tm = take_spare(cpu, feat, level);
  if (!tm) {
    LLVMTargetRef target;
    char *err = NULL;
    if (LLVMGetTargetFromTriple(TRIPLE, &target, &err)) {
      snprintf(msg, cap, "LLVM: no NVPTX target: %s", err ? err : "?");
      LLVMDisposeMessage(err);
      return NULL;
    }
    static const LLVMCodeGenOptLevel lv[4] = {LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
                                              LLVMCodeGenLevelAggressive};
    tm = LLVMCreateTargetMachine(target, TRIPLE, cpu, feat, lv[level & 3], LLVMRelocDefault, LLVMCodeModelDefault);
  }
  if (!tm) {
    snprintf(msg, cap, "LLVM: cannot create a target machine for %s %s", cpu, feat);
    return NULL;
  }
  if (!c && tm_key_ok && (c = calloc(1, sizeof *c)) && pthread_setspecific(tm_key, c)) {
    free(c);
    c = NULL;
  }
  if (!c || c->n == TM_MAX) {
    g->own_tm = tm;
    return tm;
  }
  int i = c->n++;
  c->e[i].tm = tm;
  snprintf(c->e[i].cpu, sizeof c->e[i].cpu, "%s", cpu);
  snprintf(c->e[i].feat, sizeof c->e[i].feat, "%s", feat);
  c->e[i].level = level;
  return tm;
}

/* ---- module, kernels, functions ----------------------------------------------------------- */
static void nvptx_module_setup(cg *g) {
  LLVMValueRef flag = LLVMConstInt(g->ti32, g->ftz ? 1 : 0, 0);
  LLVMAddModuleFlag(g->M, LLVMModuleFlagBehaviorOverride, "nvvm-reflect-ftz", 16, LLVMValueAsMetadata(flag));
}

static void annotate(cg *g, LLVMValueRef fn, const char *key, int v) {
  LLVMMetadataRef ops[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->C, key, strlen(key)),
                            LLVMValueAsMetadata(LLVMConstInt(g->ti32, (unsigned)v, 0))};
  LLVMAddNamedMetadataOperand(g->M, "nvvm.annotations", LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, ops, 3)));
}

/* launch bounds: the kernel's own (cute_ir_launch_bounds) else the options' */
static void launch_bounds(const cg *g, const ir_func *f, int *maxntid, int *minctasm) {
  *maxntid = f->maxntid ? f->maxntid : g->o->max_threads_per_block;
  *minctasm = f->minctasm ? f->minctasm : g->o->min_blocks_per_sm;
}

static void nvptx_kernel_abi(cg *g, LLVMValueRef fn, const ir_func *f) {
  LLVMSetFunctionCallConv(fn, LLVMPTXKernelCallConv);
  annotate(g, fn, "kernel", 1);
  nvptx_kernel_params(g, fn, (int32_t)(f - g->ir->funcs)); /* by-value (grid_constant) parameters */
  int maxntid, minctasm;
  launch_bounds(g, f, &maxntid, &minctasm);
  if (maxntid) annotate(g, fn, "maxntidx", maxntid);
  if (minctasm) annotate(g, fn, "minctasm", minctasm);
  if (g->o->max_registers) annotate(g, fn, "maxnreg", g->o->max_registers);
}

static void str_attr(cg *g, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(g->C, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

/* NVPTX reads the f32 denormal mode (add.ftz, mul.ftz, div.full.ftz,
   sqrt.rn.ftz) and unsafe-fp-math (div.approx, sqrt.approx) per function. */
static void nvptx_function_attrs(cg *g, LLVMValueRef fn) {
  if (g->ftz) str_attr(g, fn, "denormal-fp-math-f32", "preserve-sign,preserve-sign");
  if (g->fast_math) {
    str_attr(g, fn, "unsafe-fp-math", "true");
    str_attr(g, fn, "approx-func-fp-math", "true");
    str_attr(g, fn, "no-signed-zeros-fp-math", "true");
  }
}

static const char *nvptx_pre_passes(cg *g) { return g->need_libdevice ? "function(nvvm-reflect),globaldce," : ""; }

/* ---- libdevice ------------------------------------------------------------------------------ */
/* read once (kept for the life of the process) */
static pthread_mutex_t ld_lock = PTHREAD_MUTEX_INITIALIZER;
static char *libdevice_bytes;
static size_t libdevice_size;
static char libdevice_path[512];

static const char *find_libdevice(const char *given, char *p, size_t cap) {
  if (given && *given) return access(given, R_OK) == 0 ? given : NULL;
  const char *ch = getenv("CUDA_HOME");
  if (!ch || !*ch) ch = getenv("CUDA_PATH");
  if (ch && *ch) {
    snprintf(p, cap, "%.400s/nvvm/libdevice/libdevice.10.bc", ch);
    if (access(p, R_OK) == 0) return p;
  }
  snprintf(p, cap, "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  return access(p, R_OK) == 0 ? p : NULL;
}

static int load_libdevice(const char *path, char *msg, size_t cap) {
  if (libdevice_bytes && !strcmp(path, libdevice_path)) return 0;
  FILE *fp = fopen(path, "rbe");
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
  /* (the bytes of another path stay: a compile may still be reading them) */
  libdevice_bytes = data;
  libdevice_size = (size_t)n;
  snprintf(libdevice_path, sizeof libdevice_path, "%s", path);
  return 0;
}

static int nvptx_link_libraries(cg *g, ir_buf *log, char *msg, size_t cap) {
  if (!g->need_libdevice) return 0;
  char pbuf[512];
  const char *path = find_libdevice(g->o->libdevice, pbuf, sizeof pbuf);
  if (!path) {
    snprintf(msg, cap, "accurate math (__nv_* functions) needs libdevice: set CUDA_HOME to a CUDA toolkit with "
                       "nvvm/libdevice/libdevice.10.bc, the option libdevice, or use fast math");
    return CUTE_E_UNSUPPORTED;
  }
  pthread_mutex_lock(&ld_lock);
  int rc = load_libdevice(path, msg, cap);
  /* a lazy module over the cached bytes (which stay: they are never freed
     while a path is in use) */
  LLVMMemoryBufferRef mb =
      rc ? NULL : LLVMCreateMemoryBufferWithMemoryRange(libdevice_bytes, libdevice_size, "libdevice", 0);
  pthread_mutex_unlock(&ld_lock);
  if (rc) return rc;
  LLVMModuleRef ld = NULL;
  if (LLVMGetBitcodeModuleInContext2(g->C, mb, &ld)) {
    LLVMDisposeMemoryBuffer(mb);
    snprintf(msg, cap, "cannot parse libdevice %.400s%s%.500s", path, g->diag_err ? ": " : "", g->diag);
    return CUTE_E_LLVM;
  }
  /* every definition linkonce_odr: the linker pulls in only what our __nv_*
     declarations reach */
  for (LLVMValueRef fn = LLVMGetFirstFunction(ld); fn; fn = LLVMGetNextFunction(fn))
    if (!LLVMIsDeclaration(fn) && LLVMGetLinkage(fn) == LLVMExternalLinkage) LLVMSetLinkage(fn, LLVMLinkOnceODRLinkage);
  LLVMSetTarget(ld, TRIPLE);
  LLVMSetDataLayout(ld, LLVMGetDataLayoutStr(g->M));
  if (LLVMLinkModules2(g->M, ld)) {
    snprintf(msg, cap, "linking libdevice failed: %.900s", g->diag);
    return CUTE_E_LLVM;
  }
  ir_buf_printf(log, "libdevice %s\n", path);
  return 0;
}

/* grid_constant parameters (cvta.param) need sm_70 and PTX 7.7: raised when
   no version was asked for, an error when a lower one was */
/* fp8 cvt (e4m3x2/e5m2x2) on sm_89 needs PTX 8.1 (sm_90 has it from 7.8): raised when
   no version was asked for */
static int uses_fp8_cvt(const cute_ir *ir) {
  for (int32_t fi = 1; fi < ir->nfuncs; fi++)
    for (int32_t i = 1; i < ir->funcs[fi].ninst; i++) {
      const ir_inst *in = &ir->funcs[fi].inst[i];
      if (in->op != IR_CVT) continue;
      int32_t r = ir_args(&ir->funcs[fi], in)[0], a = r > 0 ? ir->funcs[fi].inst[r].type : 0;
      for (int k = 0; k < 2; k++) {
        int32_t t = k ? in->type : a;
        if (t == CUTE_T_F8E4M3 || t == CUTE_T_F8E5M2) return 1;
      }
    }
  return 0;
}

/* an fp8 mma.sync (inline PTX of cute.gemm's MmaFP8Op atoms) and a wgmma of mixed integer types
   (s8 x u8, lua/cute/warpgroup.lua) need PTX 8.4: raised when no version was asked for */
static int uses_fp8_mma(const cute_ir *ir) {
  for (int32_t fi = 1; fi < ir->nfuncs; fi++)
    for (int32_t i = 1; i < ir->funcs[fi].ninst; i++) {
      const ir_inst *in = &ir->funcs[fi].inst[i];
      if (in->op != IR_ASM) continue;
      const char *t = ir_strget(ir, (int32_t)in->imm);
      if (t && strstr(t, "mma.sync") && (strstr(t, ".e4m3") || strstr(t, ".e5m2"))) return 1;
      if (t && strstr(t, "wgmma.mma_async") && (strstr(t, ".s8.u8") || strstr(t, ".u8.s8"))) return 1;
    }
  return 0;
}

/* Hopper instructions that PTX 7.8 (sm_90's default) lacks, written as inline PTX by
   cute.arch (elect, expect_tx, fence.proxy.async, bulk copies, remote mbarrier
   arrives, setmaxnreg, wgmma): PTX 8.0, raised when no version was asked for */
static const char *const ptx80_only[] = {"elect.sync", "expect_tx", "fence.proxy.async", "fence.mbarrier_init",
                                         "cp.async.bulk", "shared::cluster.b64", "setmaxnreg.", "wgmma.",
                                         "cp.reduce.async.bulk", "prefetch.tensormap"};
static int uses_ptx80(const cute_ir *ir) {
  for (int32_t fi = 1; fi < ir->nfuncs; fi++)
    for (int32_t i = 1; i < ir->funcs[fi].ninst; i++) {
      const ir_inst *in = &ir->funcs[fi].inst[i];
      if (in->op != IR_ASM) continue;
      const char *t = ir_strget(ir, (int32_t)in->imm);
      for (size_t k = 0; t && k < sizeof ptx80_only / sizeof ptx80_only[0]; k++)
        if (strstr(t, ptx80_only[k])) return 1;
    }
  return 0;
}

static int nvptx_prepare(cg *g, char *msg, size_t cap) {
  if (!g->ptx_req && g->ptx < 84 && uses_fp8_mma(g->ir)) g->ptx_req = g->ptx = 84;
  if (g->sm >= 90 && !g->ptx_req && g->ptx < 80 && uses_ptx80(g->ir)) g->ptx_req = g->ptx = 80;
  if (g->sm == 89 && !g->ptx_req && g->ptx < 81 && uses_fp8_cvt(g->ir)) g->ptx_req = g->ptx = 81;
  int need = nvptx_min_ptx(g->ir);
  if (!need) return 0;
  if (g->sm < 70 || (g->ptx_req && g->ptx_req < need)) {
    snprintf(msg, cap, "grid_constant parameters need sm_70 and PTX %d.%d or newer (arch %s, PTX %d)", need / 10,
             need % 10, g->arch, g->ptx_req);
    return CUTE_E_UNSUPPORTED;
  }
  if (!g->ptx_req && g->ptx < need) g->ptx_req = g->ptx = need;
  return 0;
}

/* kernel parameters named as in Lua (<kernel>_param_<name>) */
static char *nvptx_finish_text(cg *g, const char *text) { return nvptx_ptx_param_names(g->ir, text); }

const cute_target target_nvptx = {
    .name = "nvptx",
    .triple = TRIPLE,
    .arch_ok = nvptx_arch_ok,
    .machine = nvptx_machine,
    .module_setup = nvptx_module_setup,
    .kernel_abi = nvptx_kernel_abi,
    .function_attrs = nvptx_function_attrs,
    .link_libraries = nvptx_link_libraries,
    .pre_passes = nvptx_pre_passes,
    .op = nvptx_op,
    .default_version = target_default_ptx,
    .prepare = nvptx_prepare,
    .param_type = nvptx_param_type,
    .finish_text = nvptx_finish_text,
};


