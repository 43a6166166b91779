/*
 * cute_host.h -- run cuteluajit kernels from C without writing Lua glue: load
 * a Lua file of kernels, get a kernel by name, compile it to text or launch
 * it with device pointers (DLTensor), scalars and a CUDA stream.  Errors are
 * strings in a cute_err, with the Lua traceback.  docs/EMBED.md.
 *
 *   cc app.c $(pkg-config --cflags --libs cuteluajit)
 *
 *   cute_err e;
 *   cute_host *h = cute_host_new(&e);
 *   cute_host_load_file(h, "kernels.lua", &e);      // returns {vadd = cute.kernel(...)}
 *   cute_host_kernel *k;
 *   cute_host_get_kernel(h, "vadd", &k, &e);
 *   int64_t n = 1 << 20;
 *   DLTensor a = {(void *)dA, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &n, NULL, 0};  // ... b, c
 *   cute_host_arg args[] = {cute_arg_tensor(&a), cute_arg_tensor(&b), cute_arg_tensor(&c),
 *                           cute_arg_i32((int32_t)n)};
 *   cute_host_launch_cfg cfg = {{(unsigned)(n / 256), 1, 1}, {256, 1, 1}, 0, stream};
 *   if (cute_host_launch(k, &cfg, args, 4, &e)) fprintf(stderr, "%s\n", e.msg);
 *   cute_host_free(h);
 *
 * Contexts: kernels run in the device's primary context, the one the CUDA
 * runtime (cudaSetDevice, cudaMalloc, cudaStream_t) uses, so pointers and
 * streams of the host's own runtime code work as they are.
 *
 * Threads: a cute_host is one lua_State; use it from one thread at a time.
 * Several hosts (one per thread) compile and launch in parallel
 * (tests/host_c.c runs several at once).
 *
 * Every function returns 0 (CUTE_OK) or a CUTE_E_* code with a message in
 * *err (err may be NULL); nothing here exits, aborts or prints.
 */
#ifndef CUTE_HOST_H
#define CUTE_HOST_H

#include "cute.h"
#include "cute_dlpack.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

struct lua_State;
typedef struct cute_host cute_host;
typedef struct cute_host_kernel cute_host_kernel;

/* Argument kinds.  Runtime scalars are kernel parameters (one binary for
   every value); CONST_* are compile-time constants (a binary per value, as a
   plain Lua number or boolean argument). */
enum {
  CUTE_ARG_TENSOR = 1,      /* tensor: a DLTensor (data NULL: compile-only, no launch) */
  CUTE_ARG_INT32 = 2,       /* i: cute.Int32   */
  CUTE_ARG_INT64 = 3,       /* i: cute.Int64   */
  CUTE_ARG_UINT32 = 4,      /* i: cute.Uint32  */
  CUTE_ARG_FLOAT32 = 5,     /* f: cute.Float32 */
  CUTE_ARG_FLOAT64 = 6,     /* f: cute.Float64 */
  CUTE_ARG_CONST_INT = 7,   /* i: a Lua number (|i| < 2^53) */
  CUTE_ARG_CONST_FLOAT = 8, /* f: a Lua number */
  CUTE_ARG_CONST_BOOL = 9   /* i != 0: a Lua boolean */
};

typedef struct cute_host_arg {
  int kind;                 /* CUTE_ARG_* */
  const DLTensor *tensor;   /* CUTE_ARG_TENSOR: read during the call only */
  int64_t i;
  double f;
} cute_host_arg;

typedef struct cute_host_launch_cfg {
  unsigned grid[3];         /* 0 counts as 1 */
  unsigned block[3];
  unsigned smem;            /* dynamic shared memory bytes; 0: what the kernel declares */
  void *stream;             /* CUstream / cudaStream_t; NULL: the default stream */
} cute_host_launch_cfg;

static inline cute_host_arg cute_arg_tensor(const DLTensor *t) {
  cute_host_arg a = {CUTE_ARG_TENSOR, t, 0, 0.0}; return a;
}
static inline cute_host_arg cute_arg_i32(int32_t v) { cute_host_arg a = {CUTE_ARG_INT32, 0, v, 0.0}; return a; }
static inline cute_host_arg cute_arg_i64(int64_t v) { cute_host_arg a = {CUTE_ARG_INT64, 0, v, 0.0}; return a; }
static inline cute_host_arg cute_arg_u32(uint32_t v) { cute_host_arg a = {CUTE_ARG_UINT32, 0, v, 0.0}; return a; }
static inline cute_host_arg cute_arg_f32(float v) { cute_host_arg a = {CUTE_ARG_FLOAT32, 0, 0, v}; return a; }
static inline cute_host_arg cute_arg_f64(double v) { cute_host_arg a = {CUTE_ARG_FLOAT64, 0, 0, v}; return a; }
static inline cute_host_arg cute_arg_const_int(int64_t v) { cute_host_arg a = {CUTE_ARG_CONST_INT, 0, v, 0.0}; return a; }
static inline cute_host_arg cute_arg_const_float(double v) { cute_host_arg a = {CUTE_ARG_CONST_FLOAT, 0, 0, v}; return a; }
static inline cute_host_arg cute_arg_const_bool(int v) { cute_host_arg a = {CUTE_ARG_CONST_BOOL, 0, v != 0, 0.0}; return a; }

/* A new host: its own lua_State with the standard libraries and `cute`
   loaded (global `cute`).  NULL with the reason in *err. */
cute_host *cute_host_new(cute_err *err);
/* Close the lua_State (waits for background compiler warm-up); frees every
   kernel handle of h.  NULL: no-op. */
void cute_host_free(cute_host *h);
/* The host's lua_State, for hosts that also want to run Lua themselves. */
struct lua_State *cute_host_lua(cute_host *h);

/* Run a Lua file.  Its kernels are found by name afterwards: the fields of
   the table it returns, else its global variables, that are cute.kernel
   objects. */
int cute_host_load_file(cute_host *h, const char *path, cute_err *err);
/* The same for Lua source text; chunkname names it in errors ("kernels"). */
int cute_host_load_string(cute_host *h, const char *code, const char *chunkname, cute_err *err);

/* The kernel called name (owned by h, valid until cute_host_free).
   CUTE_E_ARG naming the kernels that exist when there is none. */
int cute_host_get_kernel(cute_host *h, const char *name, cute_host_kernel **out, cute_err *err);

/* Launch k on args (traced, compiled and loaded on first use of this
   argument signature; cached after).  Asynchronous on cfg->stream. */
int cute_host_launch(cute_host_kernel *k, const cute_host_launch_cfg *cfg, const cute_host_arg *args,
                     int nargs, cute_err *err);

/* The text of one compile stage for args, without launching (no GPU needed
   for "ir", "llvm", "ptx"): stage is "ir", "llvm", "ptx" or "sass"; arch
   NULL for the default target (CUTE_ARCH, else the GPU's, else sm_90a) or
   e.g. "sm_90a".  *text is malloc'ed: free() it. */
int cute_host_compile(cute_host_kernel *k, const char *stage, const char *arch,
                      const cute_host_arg *args, int nargs, char **text, cute_err *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
