/* compile_opts.h -- internal: THE table of compile options.  One row per
 * option generates the struct below, the setters and their validation, the
 * canonical key text, the reflection API and the environment variables
 * (compile_opts.c); docs/COMPILE.md lists the same rows (a spec checks it).
 *
 *   X(name, type, lo, hi, default, env, binary, doc)
 *     type    ARCH (a target name), INT (lo..hi), PTXV (a PTX ISA version),
 *             BOOL, STR, LIST (comma separated), KEEP (a list of stages)
 *     binary  1 if the option changes the binary: part of the key
 * Names follow the CuTe DSL's compile options. */
#ifndef CUTE_COMPILE_OPTS_H
#define CUTE_COMPILE_OPTS_H

#include "cute_compile.h"

/* The one place that names the default target (a device's own comes first:
   the Lua side sets arch from the device, cute_arch_for_cc). */
#define CUTE_DEFAULT_ARCH "sm_90a"

#define CUTE_COMPILE_OPTS(X)                                                                                      \
  X(arch, ARCH, 0, 0, CUTE_DEFAULT_ARCH, "CUTE_ARCH", 1,                                                          \
    "target: sm_80, sm_86, sm_87, sm_89, sm_90, sm_90a (also sm_60..sm_75); default: the device's, else sm_90a") \
  X(opt_level, INT, 0, 3, "3", "CUTE_OPT_LEVEL", 1, "LLVM optimisation level: default<O0> .. default<O3>")        \
  X(ptx_version, PTXV, 0, 0, "0", "CUTE_PTX_VERSION", 1, "PTX ISA version, e.g. 78 for 7.8; 0: the arch's default") \
  X(ptxas_options, STR, 0, 0, "", "CUTE_PTXAS_OPTIONS", 1, "extra ptxas command-line options, space separated")   \
  X(use_ptxas, BOOL, 0, 0, "false", "CUTE_USE_PTXAS", 1,                                                         \
    "assemble a cubin with ptxas; false: the driver JIT compiles the PTX")                                       \
  X(lineinfo, BOOL, 0, 0, "false", "CUTE_LINEINFO", 1, "Lua file:line as .file/.loc in the PTX; ptxas -lineinfo")  \
  X(enable_assertions, BOOL, 0, 0, "true", "CUTE_ENABLE_ASSERTIONS", 1,                                           \
    "keep device-side cute.assert_ checks; false: compiled out")                                                 \
  X(fast_math, BOOL, 0, 0, "false", "CUTE_FAST_MATH", 1,                                                          \
    "approximate f32 div, sqrt, exp, log, sin, cos (div.approx, sqrt.approx, ex2.approx); implies ftz")          \
  X(ftz, BOOL, 0, 0, "false", "CUTE_FTZ", 1, "flush f32 denormals to zero (add.ftz, mul.ftz, div.ftz, sqrt.ftz)") \
  X(max_registers, INT, 0, 255, "0", "CUTE_MAX_REGISTERS", 1, "registers per thread at most (.maxnreg); 0: no limit") \
  X(min_blocks_per_sm, INT, 0, 64, "0", "CUTE_MIN_BLOCKS_PER_SM", 1,                                              \
    "launch bound: blocks resident per SM at least (.minnctapersm); 0: none")                                    \
  X(max_threads_per_block, INT, 0, 1024, "0", "CUTE_MAX_THREADS_PER_BLOCK", 1,                                    \
    "launch bound: threads per block at most (.maxntid); 0: none")                                               \
  X(link, LIST, 0, 0, "", "CUTE_LINK", 1, "LLVM bitcode (.bc) or text (.ll) files linked into the module")        \
  X(libdevice, STR, 0, 0, "", "CUTE_LIBDEVICE", 1,                                                                \
    "libdevice.10.bc path; default: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda")                                    \
  X(verify, BOOL, 0, 0, "true", "CUTE_VERIFY", 0, "run the IR verifier before lowering")                          \
  X(keep, KEEP, 0, 0, "ir,llvm,ptx,cubin", "CUTE_KEEP", 0,                                                       \
    "stages kept on the result: any of ir, llvm, ptx, cubin, sass (the loadable image is always kept)")          \
  X(dump_dir, STR, 0, 0, "", "CUTE_DUMP_DIR", 0, "directory where every kept stage is written as <kernel>-<hash>.<ext>") \
  X(cache, BOOL, 0, 0, "true", "CUTE_CACHE", 0,                                                                 \
    "use the on-disk cache of compiled kernels (docs/CACHE.md); false: compile every time")

/* storage of each type */
#define COPT_CT_ARCH char *
#define COPT_CT_INT int
#define COPT_CT_PTXV int
#define COPT_CT_BOOL int
#define COPT_CT_STR char *
#define COPT_CT_LIST char *
#define COPT_CT_KEEP char *

enum {
#define X(n, ...) COPT_##n,
  CUTE_COMPILE_OPTS(X)
#undef X
  COPT_COUNT_
};

/* bits of cute_compile_opts.keep_mask */
enum { KEEP_IR = 1, KEEP_LLVM = 2, KEEP_PTX = 4, KEEP_CUBIN = 8, KEEP_SASS = 16 };

struct cute_compile_opts {
#define X(n, T, ...) COPT_CT_##T n;
  CUTE_COMPILE_OPTS(X)
#undef X
  unsigned char src[COPT_COUNT_]; /* CUTE_OPT_FROM_* */
  int keep_mask;                  /* keep, parsed */
  char *getbuf, *keybuf;
};

#endif
