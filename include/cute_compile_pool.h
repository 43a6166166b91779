/*
 * cute_compile_pool.h -- compiles in parallel: a pool of worker threads that
 * run cute_compile (LLVM's passes and PTX emission, ptxas when use_ptxas,
 * the disk cache's lookup and store) off the caller's thread.
 *
 * The caller builds IR (in Lua: traces a kernel) on its own thread, submits
 * each module with its options, and collects the results; it may poll
 * (cute_compile_pool_wait with a timeout) to show progress meanwhile.  A job's
 * result is exactly what cute_compile on the caller's thread gives (the same
 * PTX text): compiles in different threads share no mutable state
 * (docs/AUTOTUNE.md, "Thread safety").
 *
 * Ownership: the pool copies the options; the IR is borrowed and must stay
 * alive and unchanged until its job has finished (cute_compile_pool_wait says
 * so) or the pool is freed.  A result (cute_compiled) is moved to the caller
 * by cute_compile_pool_result.  One thread drives a pool (submit, wait,
 * result, free); the workers are the pool's own.  Nothing here exits, aborts
 * or prints; worker threads block every signal (a Ctrl-C reaches the
 * caller's thread).
 */
#ifndef CUTE_COMPILE_POOL_H
#define CUTE_COMPILE_POOL_H

#include "cute_compile.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_compile_pool.h */
typedef struct cute_compile_pool cute_compile_pool;

/* The number of processors online (at least 1): the default worker count. */
int cute_compile_pool_cpus(void);
/* A pool of up to `workers` threads (0 or less: cute_compile_pool_cpus()),
   started as jobs arrive.  NULL with err set when out of memory. */
cute_compile_pool *cute_compile_pool_new(int workers, cute_err *err);
/* Wait for the running jobs, drop the queued ones, join the workers, free
   every result not taken.  NULL is a no-op. */
void cute_compile_pool_free(cute_compile_pool *p);
/* The pool's worker limit. */
int cute_compile_pool_workers(cute_compile_pool *p);
/* Queue a compile of ir with options o (copied; NULL: the defaults).
   Returns the job's index (0, 1, ... in submission order), or -1 with err set
   (out of memory, or a thread could not be started and none runs). */
int cute_compile_pool_submit(cute_compile_pool *p, struct cute_ir *ir, const cute_compile_opts *o, cute_err *err);
/* Wait until every job submitted has finished or timeout_ms passed (< 0:
   no limit; 0: just look).  Returns the number of finished jobs. */
int cute_compile_pool_wait(cute_compile_pool *p, int timeout_ms);
/* 1 if job i has finished, else 0 (also for an index out of range). */
int cute_compile_pool_done(cute_compile_pool *p, int i);
/* The result of finished job i: cute_compile's status (0 or a CUTE_E_*) with
   its message in err; *out gets the compiled result (the caller frees it;
   NULL when already taken or when cute_compile made none).  A job that has
   not finished, or an index out of range, is CUTE_E_STATE. */
int cute_compile_pool_result(cute_compile_pool *p, int i, cute_compiled **out, cute_err *err);
/* Job i's compile wall time in microseconds (0 until it finished), and the
   index of the worker that ran it (-1 until then). */
double cute_compile_pool_job_us(cute_compile_pool *p, int i);
int cute_compile_pool_job_worker(cute_compile_pool *p, int i);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
