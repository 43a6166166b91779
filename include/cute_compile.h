/*
 * cute_compile.h -- public C API of the compiler driver: compile options (one
 * table, set by name like libgccjit's setters), the stages of a compile
 * (verify, lower, link, optimise, emit_ptx, assemble, load_info, sass) and
 * the compiled result.  docs/COMPILE.md lists the options and the stages.
 *
 * Options
 *  - A cute_compile_opts holds every option of the table in
 *    src/compile_opts.h, each with its default until set.  Options are set
 *    by name from text ("3", "true", "sm_80", "ptx,sass"); an unknown name
 *    or an ill-typed value is CUTE_E_ARG with a message naming the option,
 *    the value and what was expected.
 *  - cute_compile_opts_apply_env gives every option not set explicitly the
 *    value of its environment variable (CUTE_ARCH, CUTE_OPT_LEVEL, ...):
 *    an explicit option beats the environment.
 *  - cute_compile_opts_key is the canonical text of every option that
 *    changes the binary (a specialisation / disk-cache key).
 *  - Nothing here exits, aborts or prints.
 */
#ifndef CUTE_COMPILE_H
#define CUTE_COMPILE_H

#include "cute.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_compile.h */
typedef struct cute_compiled cute_compiled;
typedef struct cute_compile_opts cute_compile_opts;
struct cute_ir; /* cute_ir.h */

/* ---- options ------------------------------------------------------------------ */
/* fields of cute_compile_opt_info */
enum { CUTE_OPT_NAME = 0, CUTE_OPT_TYPE = 1, CUTE_OPT_DEFAULT = 2, CUTE_OPT_ENV = 3, CUTE_OPT_DOC = 4,
       CUTE_OPT_BINARY = 5 /* "1" if the option changes the binary (is part of the key), else "0" */ };
/* where an option's value came from (cute_compile_opts_source) */
enum { CUTE_OPT_FROM_DEFAULT = 0, CUTE_OPT_FROM_USER = 1, CUTE_OPT_FROM_ENV = 2 };

/* A new option set holding the defaults (NULL: out of memory). */
cute_compile_opts *cute_compile_opts_new(void);
void cute_compile_opts_free(cute_compile_opts *o);
cute_compile_opts *cute_compile_opts_copy(const cute_compile_opts *o);
/* Set option name from text; value NULL resets it to its default.
   CUTE_E_ARG: unknown name (the message lists the valid ones) or a value of
   the wrong type or out of range. */
int cute_compile_opts_set(cute_compile_opts *o, const char *name, const char *value, cute_err *err);
/* Every option not set explicitly takes its environment variable, if set. */
int cute_compile_opts_apply_env(cute_compile_opts *o, cute_err *err);
/* Canonical text of option name (owned by o, valid until the next call on
   o); NULL for an unknown name. */
const char *cute_compile_opts_get(cute_compile_opts *o, const char *name);
/* CUTE_OPT_FROM_*, or -1 for an unknown name. */
int cute_compile_opts_source(const cute_compile_opts *o, const char *name);
/* "arch=sm_90a;opt_level=3;...": every option that changes the binary,
   owned by o (valid until o changes). */
const char *cute_compile_opts_key(cute_compile_opts *o);
/* Reflection over the option table: count, and field CUTE_OPT_* of option i
   (static strings; NULL out of range).  Types: "arch", "integer",
   "boolean", "string", "list". */
int cute_compile_opt_count(void);
const char *cute_compile_opt_info(int i, int field);

/* ---- architectures ------------------------------------------------------------ */
/* The target for a device of compute capability major.minor (a static
   string): 8.0 -> sm_80, 8.6 -> sm_86, 8.7 -> sm_87, 8.9 -> sm_89,
   9.0 -> sm_90a; a device newer than the newest target the code generator
   can emit gets the portable "sm_90" (*portable = 1: PTX for the driver's
   JIT, no arch-specific features).  NULL for a device older than sm_60. */
const char *cute_arch_for_cc(int major, int minor, int *portable);
/* 1 if the code generator can emit arch ("sm_80", ...), else 0. */
int cute_arch_supported(const char *arch);
/* The targets the code generator can emit, comma separated (static). */
const char *cute_arch_list(void);

/* ---- compile ------------------------------------------------------------------ */
typedef struct cute_kernel_info {
  int32_t regs;          /* ptxas: registers per thread (-1 unknown)     */
  int32_t smem_static;   /* static shared bytes (IR; ptxas if it ran)    */
  int32_t smem_dynamic;  /* bytes declared with cute_ir_dyn_smem          */
  int32_t smem_optin;    /* 1: static+dynamic > 48 KiB, raise the limit   */
  int32_t spill_stores;  /* ptxas: bytes                                  */
  int32_t spill_loads;
  int32_t stack;         /* ptxas: stack frame bytes                      */
  int32_t cmem;          /* ptxas: cmem[0] bytes                          */
  int32_t max_threads;   /* launch bounds (0 unset)                       */
  int32_t min_blocks;
} cute_kernel_info;

/* Per-stage times (a summary of cute_compiled_stage_time_us). */
typedef struct cute_compile_times {
  double verify_us, build_us, llvm_verify_us, link_us, opt_us, emit_us, ptxas_us, total_us;
} cute_compile_times;

/* Compile every function of ir with options o (NULL: the defaults; the
   environment is read only through cute_compile_opts_apply_env).  *out is
   owned by the caller (cute_compiled_free) and holds, even on error, every
   stage that ran: its text and time, and which stage failed. */
int cute_compile(struct cute_ir *ir, const cute_compile_opts *o, cute_compiled **out, cute_err *err);
void cute_compiled_free(cute_compiled *c);
/* Stages in order: verify, lower, link, optimise, emit_ptx, assemble,
   load_info, sass.  Text owned by c: NULL when the stage did not run, kept
   no text, or was not kept (option keep). */
int cute_compiled_stage_count(cute_compiled *c);
const char *cute_compiled_stage_name(cute_compiled *c, int i);
double cute_compiled_stage_time_us(cute_compiled *c, int i);
const char *cute_compiled_stage_text(cute_compiled *c, int i);
/* 1 if stage i ran (successfully or not), else 0. */
int cute_compiled_stage_ran(cute_compiled *c, int i);
/* Name of the stage that failed (NULL: none). */
const char *cute_compiled_failed_stage(cute_compiled *c);
/* The target compiled for, and the options key (owned by c). */
const char *cute_compiled_arch(cute_compiled *c);
const char *cute_compiled_key(cute_compiled *c);
/* Disassemble the cubin (assembling it first if the compile did not) with
   nvdisasm or cuobjdump: the text of stage "sass".  CUTE_E_UNSUPPORTED with
   the places searched when neither tool is found. */
const char *cute_compiled_sass(cute_compiled *c, cute_err *err);
/* Stage texts by meaning (owned by c; NULL if absent). */
const char *cute_compiled_ir_text(cute_compiled *c);
const char *cute_compiled_llvm_ir(cute_compiled *c);
const char *cute_compiled_ptx(cute_compiled *c);
/* ptxas's -v report, owned by c. */
const char *cute_compiled_ptxas_log(cute_compiled *c);
/* Cubin bytes owned by c (NULL and *size 0 if ptxas did not run: then load the PTX,
   the driver JITs it). */
const void *cute_compiled_cubin(cute_compiled *c, size_t *size);
/* 1 if a cubin was produced, 0 if the PTX is left for the driver JIT. */
int cute_compiled_has_cubin(cute_compiled *c);
int cute_compiled_kernel_count(cute_compiled *c);
/* Name of kernel i, owned by c. */
const char *cute_compiled_kernel_name(cute_compiled *c, int i);
/* Info for kernel name (NULL: the first kernel); CUTE_E_ARG if unknown. */
int cute_compiled_info(cute_compiled *c, const char *kernel, cute_kernel_info *out);
void cute_compiled_times(cute_compiled *c, cute_compile_times *out);
/* Path of the ptxas found (NULL if none), owned by the library. */
const char *cute_ptxas_path(void);
/* Path of nvdisasm or cuobjdump (NULL if none); cute_disassembler_searched
   says where it looked. */
const char *cute_disassembler_path(void);
const char *cute_disassembler_searched(void);
/* Start initialising the code generator for arch (NULL: the default arch)
   in a background thread, so that the first real compile finds it warm.
   Returns at once; only the first call does anything. */
void cute_compile_warmup(const char *arch);
/* Wait for a warm-up started by cute_compile_warmup (no-op otherwise).  Must
   run before exit() while a warm-up may be under way: lua_close of a state
   that loaded cute does it, and so does cuteluajit; a C host that calls exit()
   without lua_close calls it first. */
void cute_compile_warmup_wait(void);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
