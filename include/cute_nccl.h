/*
 * cute_nccl.h -- NCCL, the collective communication library, as cuteluajit
 * uses it: communicators over the GPUs of one process or across processes,
 * all-reduce, all-gather, reduce-scatter, broadcast, reduce, send/recv, group
 * calls (docs/NCCL.md).
 *
 * libnccl.so.2 is opened with dlopen on first use (never linked); no NCCL or
 * CUDA header is needed to build or use this API.  cute_nccl_load(NULL, err)
 * searches, in this order:
 *   1. $CUTE_NCCL_LIB when set and non-empty (then nothing else: it names
 *      the library to use);
 *   2. dlopen("libnccl.so.2"): LD_LIBRARY_PATH, the ld.so cache, ...;
 *   3. nvidia/nccl/lib/libnccl.so.2 under the site-packages of an installed
 *      PyTorch (python3.N: every version found): $VIRTUAL_ENV and $CONDA_PREFIX
 *      lib/python3.N/site-packages, ~/.local/lib/python3.N/site-packages,
 *      /usr/local/lib/python3.N/{dist,site}-packages,
 *      /usr/lib/python3/dist-packages, /usr/lib/python3.N/{dist,site}-packages;
 *   4. the site-packages directories that `python3 -c 'import site ...'`
 *      reports (slow: only when everything above failed).
 * When every place fails the message lists each one with dlopen's reason.
 *
 * Conventions (as in cute.h and cute_cuda.h)
 *  - Fallible functions return 0 (CUTE_OK) or a CUTE_E_* code with a message
 *    in *err (err may be NULL).  No library: CUTE_E_UNSUPPORTED.  A failed
 *    NCCL call: CUTE_E_CUDA, message "<call>: <ncclResultName> (<code>):
 *    <ncclGetErrorString>[; <ncclGetLastError>]".  Nothing here exits,
 *    aborts or prints.
 *  - Communicators are opaque pointers (ncclComm_t); device buffers are
 *    uint64_t addresses; streams are CUstream (NULL: the legacy default).
 *  - Loading is lazy and thread-safe.
 */
#ifndef CUTE_NCCL_H
#define CUTE_NCCL_H

#include "cute.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_nccl.h */
enum { CUTE_NCCL_UNIQUE_ID_BYTES = 128 };

/* ncclDataType_t values (tests/nccl_abi.c checks them against nccl.h). */
enum {
  CUTE_NCCL_INT8 = 0,
  CUTE_NCCL_UINT8 = 1,
  CUTE_NCCL_INT32 = 2,
  CUTE_NCCL_UINT32 = 3,
  CUTE_NCCL_INT64 = 4,
  CUTE_NCCL_UINT64 = 5,
  CUTE_NCCL_FLOAT16 = 6,
  CUTE_NCCL_FLOAT32 = 7,
  CUTE_NCCL_FLOAT64 = 8,
  CUTE_NCCL_BFLOAT16 = 9,
  CUTE_NCCL_FLOAT8E4M3 = 10,
  CUTE_NCCL_FLOAT8E5M2 = 11
};

/* ncclRedOp_t values. */
enum {
  CUTE_NCCL_SUM = 0,
  CUTE_NCCL_PROD = 1,
  CUTE_NCCL_MAX = 2,
  CUTE_NCCL_MIN = 3,
  CUTE_NCCL_AVG = 4
};

/* ---- the library ------------------------------------------------------- */
/* Load NCCL: path NULL searches (see above), a path loads exactly that file.
   Once loaded, cute_nccl_load(NULL) returns at once; a path other than the
   loaded one switches to it (communicators of the earlier library must not
   be used after that). */
int cute_nccl_load(const char *path, cute_err *err);
/* Forget the loaded library (it stays mapped): the next use loads again. */
void cute_nccl_unload(void);
/* How many times a library was loaded (a switch increments it); 0: none. */
int cute_nccl_generation(void);
/* Path or name the library was loaded from; "" when none is loaded. */
const char *cute_nccl_library(void);
/* The places steps 1-3 would try, one per line, into buf (cap bytes,
   NUL-terminated, truncated to fit); returns how many. */
int cute_nccl_search_list(char *buf, size_t cap);
/* ncclGetVersion: e.g. 22809 for 2.28.9 (loads the library if needed). */
int cute_nccl_version(int *code, cute_err *err);
/* ncclGetErrorString of an ncclResult_t (loaded library; else a built-in
   name) and the name of the result ("ncclInvalidArgument"). */
const char *cute_nccl_error_string(int result);
const char *cute_nccl_result_name(int result);

/* ---- communicators ------------------------------------------------------- */
/* A new unique id (CUTE_NCCL_UNIQUE_ID_BYTES bytes) into id. */
int cute_nccl_unique_id(void *id, cute_err *err);
/* ncclCommInitAll: comms[k] on devs[k], k < n. */
int cute_nccl_comm_init_all(void **comms, int n, const int *devs, cute_err *err);
/* ncclCommInitRank on the calling thread's current device. */
int cute_nccl_comm_init_rank(void **comm, int nranks, const void *id, int rank,
                             cute_err *err);
int cute_nccl_comm_destroy(void *comm, cute_err *err);
int cute_nccl_comm_abort(void *comm, cute_err *err);
/* Rank, number of ranks and CUDA device of a communicator (any may be NULL). */
int cute_nccl_comm_info(void *comm, int *rank, int *nranks, int *device, cute_err *err);
/* ncclCommGetAsyncError: *result is the pending asynchronous error (0: none);
   the call fails (with NCCL's message) only when asking fails. */
int cute_nccl_comm_async_error(void *comm, int *result, cute_err *err);

/* ---- collectives, point to point, groups ----------------------------- */
/* count: elements per rank as NCCL counts them (all_gather: send count;
   reduce_scatter: receive count); dtype CUTE_NCCL_*, op CUTE_NCCL_SUM ... */
int cute_nccl_all_reduce(uint64_t send, uint64_t recv, size_t count, int dtype, int op,
                         void *comm, void *stream, cute_err *err);
int cute_nccl_all_gather(uint64_t send, uint64_t recv, size_t count, int dtype, void *comm,
                         void *stream, cute_err *err);
int cute_nccl_reduce_scatter(uint64_t send, uint64_t recv, size_t count, int dtype, int op,
                             void *comm, void *stream, cute_err *err);
int cute_nccl_broadcast(uint64_t send, uint64_t recv, size_t count, int dtype, int root,
                        void *comm, void *stream, cute_err *err);
int cute_nccl_reduce(uint64_t send, uint64_t recv, size_t count, int dtype, int op, int root,
                     void *comm, void *stream, cute_err *err);
int cute_nccl_send(uint64_t buf, size_t count, int dtype, int peer, void *comm, void *stream,
                   cute_err *err);
int cute_nccl_recv(uint64_t buf, size_t count, int dtype, int peer, void *comm, void *stream,
                   cute_err *err);
int cute_nccl_group_start(cute_err *err);
int cute_nccl_group_end(cute_err *err);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
