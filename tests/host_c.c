/* host_c.c -- C test of the embedding API: cute_lua_pcall, the host API
 * (include/cute_host.h), DLPack structs and shared ownership
 * (include/cute_dlpack.h), and one lua_State per thread: HOST_THREADS
 * threads (default 4), each with its own cute_host, compile kernels to PTX
 * at the same time, with the disk cache off and then on, and must get the
 * PTX a single thread gets.  No GPU needed (with one, the host API launches
 * too, and every thread also launches on its own stream).  Prints "N passed, N failed". */
#include "cute_host.h"
#include "cute_lua.h"
#include "cute_cuda.h"
#include "check.h"

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- DLPack struct layouts (DLPack 1.1, LP64) ------------------------------ */
static void test_layouts(void) {
  CHECK(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4, "DLDevice %zu DLDataType %zu", sizeof(DLDevice), sizeof(DLDataType));
  CHECK(sizeof(DLTensor) == 48, "sizeof DLTensor %zu", sizeof(DLTensor));
  CHECK(offsetof(DLTensor, device) == 8 && offsetof(DLTensor, ndim) == 16 && offsetof(DLTensor, dtype) == 20 &&
            offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 && offsetof(DLTensor, byte_offset) == 40,
        "DLTensor offsets");
  CHECK(sizeof(DLManagedTensor) == 64 && offsetof(DLManagedTensor, manager_ctx) == 48 &&
            offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor layout (size %zu)", sizeof(DLManagedTensor));
  CHECK(sizeof(DLManagedTensorVersioned) == 80 && offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
            offsetof(DLManagedTensorVersioned, deleter) == 16 && offsetof(DLManagedTensorVersioned, flags) == 24 &&
            offsetof(DLManagedTensorVersioned, dl_tensor) == 32,
        "DLManagedTensorVersioned layout (size %zu)", sizeof(DLManagedTensorVersioned));
  CHECK(sizeof(cute_host_arg) == 32, "cute_host_arg is %zu bytes (host.lua's cdef says 32)", sizeof(cute_host_arg));
}

/* ---- ownership in C --------------------------------------------------------- */
static int foreign_deleted;
static void foreign_deleter(DLManagedTensor *self) { foreign_deleted++; (void)self; }

static void test_ownership(void) {
  cute_err e;
  int64_t shape[2] = {3, 5};
  DLTensor v = {(void *)0x10000, {kDLCUDA, 0}, 2, {kDLFloat, 32, 1}, shape, NULL, 0};
  int live0 = cute_dl_live_exports();
  cute_dl_owner *o = cute_dl_owner_device(0);   /* address 0: the last release frees nothing */
  CHECK(o && cute_dl_owner_refs(o) == 1, "a new owner holds one reference");
  DLManagedTensor *m = cute_dl_export(&v, o, 0, 0, &e);
  CHECK(m && cute_dl_owner_refs(o) == 2 && cute_dl_live_exports() == live0 + 1, "an export retains the owner");
  if (m) {
    CHECK(m->dl_tensor.strides && m->dl_tensor.strides[0] == 5 && m->dl_tensor.strides[1] == 1,
          "NULL strides are written out row-major");
    CHECK(m->dl_tensor.shape != shape && m->dl_tensor.shape[1] == 5, "the shape is copied");
    m->deleter(m);
  }
  CHECK(cute_dl_owner_refs(o) == 1 && cute_dl_live_exports() == live0, "the deleter releases the owner");
  DLManagedTensorVersioned *mv = cute_dl_export(&v, o, 1, DLPACK_FLAG_BITMASK_READ_ONLY, &e);
  CHECK(mv && mv->version.major == 1 && mv->flags == DLPACK_FLAG_BITMASK_READ_ONLY &&
            mv->dl_tensor.ndim == 2 && mv->dl_tensor.dtype.bits == 32, "a versioned export");
  cute_dl_owner_release(o);                       /* the export still holds it */
  CHECK(cute_dl_owner_refs(o) == 1, "the export keeps the owner");
  if (mv) cute_dl_delete(mv, 1);
  CHECK(cute_dl_live_exports() == live0, "every export deleted");

  DLManagedTensor foreign = {v, NULL, foreign_deleter};
  cute_dl_owner *f = cute_dl_owner_managed(&foreign, 0);
  cute_dl_owner_retain(f);
  cute_dl_owner_release(f);
  CHECK(foreign_deleted == 0, "an owner with references left keeps the foreign tensor");
  cute_dl_owner_release(f);
  CHECK(foreign_deleted == 1, "the last release calls the foreign deleter once");

  v.ndim = -1;
  CHECK(cute_dl_export(&v, NULL, 0, 0, &e) == NULL && e.code == CUTE_E_ARG && strstr(e.msg, "ndim -1"),
        "a bad ndim is an error naming it: %s", e.msg);
}

/* ---- cute_lua_pcall --------------------------------------------------------- */
static void test_pcall(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  cute_err e;
  lua_pushcfunction(L, luaopen_cute);
  CHECK(cute_lua_pcall(L, 0, 1, &e) == 0, "luaopen_cute under cute_lua_pcall: %s", e.msg);
  lua_setglobal(L, "cute");
  int top = lua_gettop(L);
  /* no tail calls: their frames would not be in the traceback */
  luaL_loadstring(L, "local function inner() local l = cute.make_layout({4, 2}, {1, {2, 3}}); return l end\n"
                     "local function outer() local l = inner(); return l end\nlocal l = outer(); return l");
  int st = cute_lua_pcall(L, 0, 1, &e);
  CHECK(st == CUTE_E_LUA && e.code == CUTE_E_LUA, "a Lua error is CUTE_E_LUA (%d)", st);
  CHECK(strstr(e.msg, "make_layout") && strstr(e.msg, "stack traceback:") && strstr(e.msg, "inner"),
        "the message names the op and carries the traceback: %s", e.msg);
  CHECK(lua_gettop(L) == top, "the stack is as before the call (%d, %d)", lua_gettop(L), top);
  lua_newtable(L);
  lua_pushcfunction(L, (lua_CFunction)lua_error);
  lua_insert(L, -2);
  st = cute_lua_pcall(L, 1, 0, &e);
  CHECK(st == CUTE_E_LUA && strstr(e.msg, "error object is a table"), "a non-string error: %s", e.msg);
  CHECK(strcmp(cute_status_name(CUTE_E_LUA), "CUTE_E_LUA") == 0, "status name");
  lua_close(L);
}

/* ---- the host API ------------------------------------------------------------- */
static const char *kernels_lua =
    "local scale = cute.kernel(function(A, B, s)\n"
    "  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()\n"
    "  B[i] = A[i] * s + 1\n"
    "end, {cache = CACHE})\n"
    "local axpy = cute.kernel(function(X, Y, a, n)\n"
    "  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()\n"
    "  if i < n then Y[i] = a * X[i] + Y[i] end\n"
    "end, {cache = CACHE})\n"
    "return {scale = scale, axpy = axpy}\n";

static char *kernels_source(int cache) {
  char *s = malloc(strlen(kernels_lua) + 64);
  snprintf(s, strlen(kernels_lua) + 64, "local CACHE = %s\n%s", cache ? "true" : "false", kernels_lua);
  return s;
}

static int64_t n1024 = 1024;
static DLTensor spec_f32 = {NULL, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &n1024, NULL, 0};

/* the PTX of kernel variant v (0..5) in host h; NULL on error (message in e) */
static char *variant_ptx(cute_host *h, int v, cute_err *e) {
  cute_host_kernel *k;
  if (cute_host_get_kernel(h, v < 3 ? "scale" : "axpy", &k, e)) return NULL;
  char *ptx = NULL;
  if (v < 3) {
    cute_host_arg a[3] = {cute_arg_tensor(&spec_f32), cute_arg_tensor(&spec_f32), cute_arg_const_float(0.5 + v)};
    cute_host_compile(k, "ptx", "sm_80", a, 3, &ptx, e);
  } else {
    cute_host_arg a[4] = {cute_arg_tensor(&spec_f32), cute_arg_tensor(&spec_f32), cute_arg_f32(2.0f),
                          cute_arg_i32(1000 + v)};
    cute_host_compile(k, "ptx", v == 3 ? "sm_80" : v == 4 ? "sm_86" : "sm_90a", a, 4, &ptx, e);
  }
  return ptx;
}

static void test_host(void) {
  cute_err e;
  cute_host *h = cute_host_new(&e);
  CHECK(h != NULL, "cute_host_new: %s", e.msg);
  if (!h) return;
  char *src = kernels_source(0);
  CHECK(cute_host_load_string(h, src, "kernels", &e) == 0, "load_string: %s", e.msg);
  free(src);
  cute_host_kernel *k = NULL;
  CHECK(cute_host_get_kernel(h, "scale", &k, &e) == 0 && k, "get_kernel scale: %s", e.msg);
  cute_host_kernel *k2 = NULL;
  cute_host_get_kernel(h, "scale", &k2, &e);
  CHECK(k2 == k, "the same kernel by the same name: the same handle");
  int st = cute_host_get_kernel(h, "nope", &k, &e);
  CHECK(st == CUTE_E_LUA && k == NULL && strstr(e.msg, "no kernel named 'nope'") && strstr(e.msg, "axpy, scale"),
        "an unknown kernel names the ones there are: %s", e.msg);
  char *ptx = variant_ptx(h, 0, &e);
  CHECK(ptx && strstr(ptx, ".entry") && strstr(ptx, ".target sm_80"), "PTX through the host API: %s", ptx ? "" : e.msg);
  free(ptx);
  cute_host_get_kernel(h, "scale", &k, &e);
  cute_host_arg a[3] = {cute_arg_tensor(&spec_f32), cute_arg_tensor(&spec_f32), cute_arg_const_float(2)};
  char *ir = NULL;
  CHECK(cute_host_compile(k, "ir", NULL, a, 3, &ir, &e) == 0 && ir && strstr(ir, "kernel @"), "the IR: %s", ir ? "" : e.msg);
  free(ir);
  char *text = NULL;
  st = cute_host_compile(k, "asm", NULL, a, 3, &text, &e);
  CHECK(st == CUTE_E_LUA && text == NULL && strstr(e.msg, "stage 'asm'"), "a bad stage: %s", e.msg);
  st = cute_host_compile(k, "ptx", NULL, a, 2, &text, &e);
  CHECK(st == CUTE_E_LUA && strstr(e.msg, "expected 3 arguments (A, B, s), got 2"), "too few arguments: %s", e.msg);
  DLTensor cpu = spec_f32;
  cpu.data = (void *)0x1000;
  cpu.device.device_type = kDLCPU;
  cute_host_arg bad[3] = {cute_arg_tensor(&cpu), cute_arg_tensor(&spec_f32), cute_arg_const_float(2)};
  cute_host_launch_cfg cfg = {{4, 1, 1}, {256, 1, 1}, 0, NULL};
  st = cute_host_launch(k, &cfg, bad, 3, &e);
  CHECK(st == CUTE_E_LUA && strstr(e.msg, "kDLCPU"), "a CPU tensor cannot be launched on: %s", e.msg);
  st = cute_host_launch(k, &cfg, a, 3, &e);
  CHECK(st == CUTE_E_LUA && strstr(e.msg, "data is NULL"), "a description without memory is not launched: %s", e.msg);
  st = cute_host_load_file(h, "/nonexistent/kernels.lua", &e);
  CHECK(st == CUTE_E_ARG && strstr(e.msg, "/nonexistent/kernels.lua"), "a missing file: %s", e.msg);
  st = cute_host_load_string(h, "local k = cute.kernel(function(X) X[0] = X[0] + nil end)\n"
                                "return {k = k}\n", "broken", &e);
  CHECK(st == 0, "a kernel with a bug loads (it is traced at its first use): %s", e.msg);
  cute_host_get_kernel(h, "k", &k, &e);
  st = cute_host_compile(k, "ptx", NULL, a, 1, &text, &e);
  CHECK(st == CUTE_E_LUA && strstr(e.msg, "broken:1:") && strstr(e.msg, "stack traceback:"),
        "a trace error points at the chunk's line, with a traceback: %s", e.msg);
  CHECK(cute_host_load_string(h, "return 1 +", "syntax", &e) == CUTE_E_ARG && strstr(e.msg, "syntax:1:"),
        "a syntax error: %s", e.msg);

  /* DLPack round trip through Lua: a foreign tensor in, a cute export out */
  int64_t shape[2] = {16, 8}, strides[2] = {8, 1};
  DLManagedTensor foreign = {{(void *)0x7f0000000000, {kDLCUDA, 0}, 2, {kDLBfloat, 16, 1}, shape, strides, 256},
                             NULL, foreign_deleter};
  int before = foreign_deleted;
  lua_State *L = cute_host_lua(h);
  luaL_loadstring(L, "local p = ...\n"
                     "local t = cute.from_dlpack(p)\n"
                     "assert(t.dtype == cute.bfloat16 and t.shape[1] == 16 and t.strides[1] == 8, 'import')\n"
                     "assert(tonumber(t.ptr) == 0x7f0000000000 + 256, 'byte_offset')\n"
                     "local out = t:to_dlpack({versioned = true})\n"
                     "t:free()\n"
                     "return out");
  lua_pushlightuserdata(L, &foreign);
  st = cute_lua_pcall(L, 1, 1, &e);
  CHECK(st == 0, "DLPack in and out in Lua: %s", e.msg);
  if (st == 0) {
    DLManagedTensorVersioned *out = *(DLManagedTensorVersioned **)lua_topointer(L, -1);
    lua_pop(L, 1);
    CHECK(foreign_deleted == before, "the foreign tensor lives while an export of it does");
    CHECK(out && out->dl_tensor.dtype.code == kDLBfloat && out->dl_tensor.shape[0] == 16 &&
              (uintptr_t)out->dl_tensor.data == 0x7f0000000000 + 256, "the export describes the same memory");
    if (out) out->deleter(out);
    CHECK(foreign_deleted == before + 1, "deleting the export releases the foreign tensor");
  }
  /* a launch on a GPU host (no GPU: the error comes back as a message) */
  if (cute_cuda_available(NULL)) {
    uint64_t dA = 0, dB = 0;
    cute_cuda_malloc(&dA, 1024 * 4, &e);
    cute_cuda_malloc(&dB, 1024 * 4, &e);
    float host[1024];
    for (int i = 0; i < 1024; i++) host[i] = (float)i;
    cute_cuda_memcpy_htod(dA, host, sizeof host, &e);
    DLTensor A = spec_f32, B = spec_f32;
    A.data = (void *)(uintptr_t)dA;
    B.data = (void *)(uintptr_t)dB;
    void *stream = NULL;
    cute_cuda_stream_create(&stream, CUTE_CU_STREAM_NON_BLOCKING, &e);
    cute_host_arg la[3] = {cute_arg_tensor(&A), cute_arg_tensor(&B), cute_arg_const_float(3)};
    cute_host_launch_cfg c = {{4, 0, 0}, {256, 0, 0}, 0, stream};
    cute_host_get_kernel(h, "scale", &k, &e);
    st = cute_host_launch(k, &c, la, 3, &e);
    CHECK(st == 0, "launch on a stream: %s", e.msg);
    cute_cuda_stream_synchronize(stream, &e);
    cute_cuda_memcpy_dtoh(host, dB, sizeof host, &e);
    CHECK(host[10] == 31.0f && host[1023] == 3070.0f, "B = 3A + 1 (%g, %g)", host[10], host[1023]);
    cute_cuda_stream_destroy(stream, &e);
    cute_cuda_free(dA, &e);
    cute_cuda_free(dB, &e);
  } else {
    /* the configuration and arguments are converted, then the driver's absence is the error */
    DLTensor A = spec_f32, B = spec_f32;
    A.data = (void *)0x7f0000000000;
    B.data = (void *)0x7f0000100000;
    cute_host_arg la[3] = {cute_arg_tensor(&A), cute_arg_tensor(&B), cute_arg_const_float(3)};
    cute_host_launch_cfg c = {{4, 0, 0}, {256, 0, 0}, 0, NULL};
    cute_host_get_kernel(h, "scale", &k, &e);
    st = cute_host_launch(k, &c, la, 3, &e);
    CHECK(st == CUTE_E_LUA && strstr(e.msg, "CUDA"), "without a GPU a launch is an error message: %s", e.msg);
    printf("launch without a GPU: %.200s\n", e.msg);
    skipped++;
    printf("skip: a launch on a GPU (no GPU)\n");
  }
  cute_host_free(h);
}

/* ---- one lua_State per thread ------------------------------------------------- */
enum { NVARIANTS = 6 };
static char *reference[NVARIANTS];
static int use_cache;

typedef struct { int id; int ok; } worker;

static void *work(void *arg) {
  worker *w = arg;
  cute_err e;
  cute_host *h = cute_host_new(&e);
  CHECK(h != NULL, "thread %d: cute_host_new: %s", w->id, e.msg);
  if (!h) return NULL;
  char *src = kernels_source(use_cache);
  CHECK(cute_host_load_string(h, src, "kernels", &e) == 0, "thread %d: load: %s", w->id, e.msg);
  free(src);
  w->ok = 1;
  for (int r = 0; r < NVARIANTS; r++) {
    int v = (r + w->id) % NVARIANTS;             /* each thread in another order */
    char *ptx = variant_ptx(h, v, &e);
    if (!ptx || !reference[v] || strcmp(ptx, reference[v]) != 0) {
      w->ok = 0;
      printf("thread %d variant %d: %s\n", w->id, v, ptx ? "PTX differs from one thread's" : e.msg);
    }
    free(ptx);
  }
  /* with a GPU: each thread launches on its own stream and checks its result */
  if (cute_cuda_available(NULL)) {
    enum { N = 1024 };
    float in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = (float)i;
    uint64_t dA = 0, dB = 0;
    void *stream = NULL;
    cute_host_kernel *k = NULL;
    int bad = cute_cuda_malloc(&dA, sizeof in, &e) || cute_cuda_malloc(&dB, sizeof in, &e) ||
              cute_cuda_memcpy_htod(dA, in, sizeof in, &e) ||
              cute_cuda_stream_create(&stream, CUTE_CU_STREAM_NON_BLOCKING, &e) ||
              cute_host_get_kernel(h, "scale", &k, &e);
    DLTensor A = spec_f32, B = spec_f32;
    A.data = (void *)(uintptr_t)dA;
    B.data = (void *)(uintptr_t)dB;
    cute_host_arg la[3] = {cute_arg_tensor(&A), cute_arg_tensor(&B), cute_arg_const_float(w->id + 1)};
    cute_host_launch_cfg c = {{N / 256, 1, 1}, {256, 1, 1}, 0, stream};
    if (!bad) bad = cute_host_launch(k, &c, la, 3, &e) || cute_cuda_stream_synchronize(stream, &e) ||
                    cute_cuda_memcpy_dtoh(out, dB, sizeof out, &e);
    int right = !bad;
    for (int i = 0; right && i < N; i++) right = out[i] == in[i] * (float)(w->id + 1) + 1.0f;
    CHECK(right, "thread %d: its own launch on its own stream: %s", w->id, bad ? e.msg : "wrong values");
    if (stream) cute_cuda_stream_destroy(stream, NULL);
    cute_cuda_free(dA, NULL);
    cute_cuda_free(dB, NULL);
  }
  cute_host_free(h);
  return NULL;
}

static void test_threads(int nthreads, int cache) {
  cute_err e;
  use_cache = cache;
  cute_host *h = cute_host_new(&e);
  if (!h) { CHECK(0, "cute_host_new: %s", e.msg); return; }
  char *src = kernels_source(0);
  cute_host_load_string(h, src, "kernels", &e);
  free(src);
  double t0 = now_s();
  for (int v = 0; v < NVARIANTS; v++) {
    free(reference[v]);
    reference[v] = variant_ptx(h, v, &e);
    CHECK(reference[v] != NULL, "reference variant %d: %s", v, e.msg);
  }
  double t_one = now_s() - t0;
  cute_host_free(h);
  pthread_t th[64];
  worker w[64];
  t0 = now_s();
  for (int i = 0; i < nthreads; i++) {
    w[i].id = i;
    w[i].ok = 0;
    pthread_create(&th[i], NULL, work, &w[i]);
  }
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  double t_all = now_s() - t0;
  int all = 1;
  for (int i = 0; i < nthreads; i++) all &= w[i].ok;
  CHECK(all, "%d threads, each with its own lua_State, compile the PTX one thread compiles (disk cache %s)",
        nthreads, cache ? "on" : "off");
  printf("threads: %d x %d compiles in %.2f s (one thread: %d in %.2f s), disk cache %s\n", nthreads,
         NVARIANTS, t_all, NVARIANTS, t_one, cache ? "on" : "off");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int nthreads = getenv("HOST_THREADS") ? atoi(getenv("HOST_THREADS")) : 4;
  if (nthreads < 1 || nthreads > 64) nthreads = 4;
  /* a private disk cache, unless the caller chose one */
  char dir[] = "/tmp/cute_host_c.XXXXXX";
  int own_dir = getenv("CUTE_CACHE_DIR") == NULL && mkdtemp(dir) != NULL;
  if (own_dir) setenv("CUTE_CACHE_DIR", dir, 1);
  test_layouts();
  test_ownership();
  test_pcall();
  test_host();
  test_threads(nthreads, 0);
  test_threads(nthreads, 1);
  for (int v = 0; v < NVARIANTS; v++) free(reference[v]);
  if (own_dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
  }
  return check_done();
}
