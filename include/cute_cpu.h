/*
 * cute_cpu.h -- the CPU execution target's engine: an interpreter of the
 * kernel IR (docs/CPU_TARGET.md).
 *
 * A program (cute_cpu_prog) is one kernel of a cute_ir prepared for
 * execution; a launch runs it over a grid with CUDA's semantics: blocks one
 * after another, the warps of a block interleaved at barriers, the 32 lanes
 * of a warp in lock-step (structured control flow by active masks), global
 * memory = host pointers, per-block static + dynamic shared memory.
 *
 * Conventions (as in cute.h): fallible functions return 0 or a CUTE_E_* code
 * with a message in *err; nothing here exits, aborts or prints (cute.printf
 * output is collected and handed to the caller: cute_cpu_take_output).
 * A program borrows its cute_ir: keep the IR alive while the program is.
 */
#ifndef CUTE_CPU_H
#define CUTE_CPU_H

#include "cute.h"
#include "cute_ir.h" /* (the CDEF part names struct cute_ir: cute_ir.h comes later in cdef.lua) */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_cpu.h */
typedef struct cute_cpu_prog cute_cpu_prog;

/* Prepare kernel `name` of ir (NULL: the first kernel).  An op or type the
   engine does not implement is CUTE_E_UNSUPPORTED with the message
   "cute (cpu target): kernel K: op OP at FILE:LINE is not supported on the
   CPU target yet". */
int cute_cpu_prog_new(struct cute_ir *ir, const char *name, cute_cpu_prog **out, cute_err *err);
void cute_cpu_prog_free(cute_cpu_prog *p);
/* bytes of static shared memory the kernel declares, and its parameter count */
int cute_cpu_prog_static_smem(const cute_cpu_prog *p);
int cute_cpu_prog_nparams(const cute_cpu_prog *p);
/* bytes of dynamic shared memory the kernel's IR asks for (its dynsmem=) */
int cute_cpu_prog_dyn_smem(const cute_cpu_prog *p);

/* Run the program over grid (gx, gy, gz) x block (bx, by, bz) with smem
   bytes of dynamic shared memory; params[j] points at parameter j's value
   (cute_cuda_launch's convention: fn is the cute_cpu_prog, stream ignored).
   An assertion, a trap or a barrier that can never complete is an error
   naming the kernel, the block and the Lua line. */
int cute_cpu_launch(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                    unsigned bz, unsigned smem, void *stream, void **params, cute_err *err);

/* The same with clusters of (cx, cy, cz) CTAs (cute_cuda_launch_cluster's
   convention): the CTAs of a cluster run together (distributed shared memory,
   barrier.cluster, multicast). */
int cute_cpu_launch_cluster(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned cx, unsigned cy, unsigned cz, unsigned smem, void *stream,
                            void **params, cute_err *err);
struct cute_tensor_map_args;
/* The CPU target's TMA tensor maps (a 128-byte record of the engine's own
   format; arguments as cute_tensor_map_encode_tiled / _im2col's). */
int cute_cpu_tensor_map_encode_tiled(void *map, const struct cute_tensor_map_args *a, cute_err *err);
int cute_cpu_tensor_map_encode_im2col(void *map, const struct cute_tensor_map_args *a, const int *lower,
                                      const int *upper, uint32_t channels_per_pixel,
                                      uint32_t pixels_per_column, cute_err *err);

/* The cute.printf output of the launches so far (NUL-terminated, *len bytes;
   NULL when none); the next call starts empty.  The pointer stays valid until
   the next launch or cute_cpu_prog_free. */
const char *cute_cpu_take_output(cute_cpu_prog *p, size_t *len);

/* thread-instructions executed by the program's launches so far (per lane) */
uint64_t cute_cpu_prog_executed(const cute_cpu_prog *p);

/* Bounds checks (always on): a kernel's global loads, stores and atomics
   must fall inside memory registered here (the host driver registers every
   tensor it allocates and every view of host memory; `what` names it in
   errors, NULL none).  Ranges may nest; a range added twice is counted.
   An access outside every range, or out of the block's shared memory or a
   thread's local array, is a launch error naming the access; nothing is
   accessed. */
int cute_cpu_mem_add(uint64_t base, uint64_t bytes, const char *what, cute_err *err);
void cute_cpu_mem_remove(uint64_t base, uint64_t bytes);
/* allocations registered now (tests) */
int cute_cpu_mem_count(void);

/* Checking mode of a program's later launches: races on shared memory
   between barriers, barrier divergence, uninitialised shared/local reads;
   the first finding is a launch error (docs/CPU_TARGET.md, "Checking mode"). */
enum { CUTE_CPU_CHECK_RACE = 1, CUTE_CPU_CHECK_SYNC = 2, CUTE_CPU_CHECK_INIT = 4, CUTE_CPU_CHECK_ALL = 7 };
void cute_cpu_prog_set_check(cute_cpu_prog *p, int flags);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
