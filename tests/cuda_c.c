/*
 * cuda_c.c -- C test of the CUDA runtime layer (include/cute_cuda.h).
 *
 *   cc -std=gnu11 -Wall -Wextra -Werror -Iinclude src/core.c src/cuda.c tests/cuda_c.c \
 *      -ldl -lpthread -o build/cuda_c && build/cuda_c
 *
 * Without a driver: every call fails cleanly with "no CUDA driver" (no
 * crash), error formatting and argument checks are exercised; the GPU part
 * is reported as skipped.  With a GPU: devices, memory round trips, streams,
 * events, a hand-written PTX kernel (launch, attributes, occupancy, JIT error
 * log, cluster launch) and the launch-overhead comparison raw vs wrapper.
 * Last line: "N passed, N failed"; exit status 1 on any failure.
 */
#include "cute_cuda.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed, skipped;

static void check(int ok, const char *what, const cute_err *e) {
  if (ok) {
    passed++;
    printf("  ok    %s\n", what);
  } else {
    failed++;
    printf("  FAIL  %s\n", what);
    if (e) printf("        (last error %d: %s)\n", e->code, e->msg);
  }
}

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

/* y[i] += 1.0f for i < n */
static const char *PTX_ADD1 =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry add1(.param .u64 p_y, .param .u32 p_n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .f32 %f<3>;\n"
    "  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p_y];\n"
    "  ld.param.u32 %r1, [p_n];\n"
    "  mov.u32 %r2, %ctaid.x;\n"
    "  mov.u32 %r3, %ntid.x;\n"
    "  mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %p1, %r5, %r1;\n"
    "  @%p1 bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mul.wide.u32 %rd3, %r5, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.f32 %f1, [%rd4];\n"
    "  add.f32 %f2, %f1, 0f3F800000;\n"
    "  st.global.f32 [%rd4], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    "\n"
    ".visible .entry noop()\n"
    "{\n"
    "  ret;\n"
    "}\n";

/* ---- threads: the lazy init races, and a fresh thread launches a kernel
   loaded by another (its first call has no current context). ---- */
enum { NTHREADS = 8 };
static void *g_noop;  /* set by gpu_tests */
static int thread_status[NTHREADS];

static void *thread_main(void *arg) {
  int i = (int)(intptr_t)arg;
  cute_err e;
  if (g_noop) {
    int s = cute_cuda_launch(g_noop, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, &e);
    if (!s) s = cute_cuda_synchronize(&e);
    uint64_t p = 0;
    if (!s) s = cute_cuda_malloc(&p, 1 << 20, &e);
    if (!s) s = cute_cuda_memset_d32(p, (unsigned)i, 1 << 18, NULL, 0, &e);
    unsigned v = 0;
    if (!s) s = cute_cuda_memcpy_dtoh(&v, p + 4096, 4, &e);
    if (!s && v != (unsigned)i) s = -1;
    if (!s) s = cute_cuda_free(p, &e);
    thread_status[i] = s;
  } else {
    thread_status[i] = cute_cuda_init(&e);
  }
  return NULL;
}

static void run_threads(void) {
  pthread_t th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++)
    pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
  for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
}

/* The number of threads whose status differs from want. */
static int thread_mismatches(int want) {
  int bad = 0;
  for (int i = 0; i < NTHREADS; i++) bad += thread_status[i] != want;
  return bad;
}

/* The several-device calls (src/cuda_peer.c) without a driver: clean
   CUTE_E_UNSUPPORTED, outs untouched. */
static void peer_no_driver_tests(void) {
  cute_err e;
  int can = -7, dev = -7;
  uint64_t p = 77;
  char handle[64] = {0};
  check(cute_cuda_can_access_peer(0, 1, &can, &e) == CUTE_E_UNSUPPORTED && can == -7 &&
            has(e.msg, "no CUDA driver"),
        "can_access_peer without a driver: CUTE_E_UNSUPPORTED, out untouched", &e);
  check(cute_cuda_enable_peer_access(0, 1, &e) == CUTE_E_UNSUPPORTED && has(e.msg, "no CUDA driver"),
        "enable_peer_access without a driver: CUTE_E_UNSUPPORTED", &e);
  check(cute_cuda_memcpy_peer_async(4096, 1, 8192, 0, 16, NULL, &e) == CUTE_E_UNSUPPORTED,
        "memcpy_peer_async without a driver: CUTE_E_UNSUPPORTED", &e);
  check(cute_cuda_pointer_device(4096, &dev, &e) == CUTE_E_UNSUPPORTED && dev == -7,
        "pointer_device without a driver: CUTE_E_UNSUPPORTED, out untouched", &e);
  check(cute_cuda_ipc_get_handle(4096, handle, &e) == CUTE_E_UNSUPPORTED,
        "ipc_get_handle without a driver: CUTE_E_UNSUPPORTED", &e);
  check(cute_cuda_ipc_open_handle(handle, &p, &e) == CUTE_E_UNSUPPORTED && p == 77,
        "ipc_open_handle without a driver: CUTE_E_UNSUPPORTED, out untouched", &e);
  check(cute_cuda_ipc_close_handle(4096, NULL) == CUTE_E_UNSUPPORTED,
        "ipc_close_handle without a driver (NULL err allowed)", NULL);
}

/* With a GPU: argument checks, the device of an allocation, an IPC handle of it. */
static void peer_gpu_tests(void) {
  cute_err e;
  int n = 0, can = -1, dev = -1;
  cute_cuda_device_count(&n, &e);
  check(cute_cuda_can_access_peer(0, 0, &can, &e) == CUTE_OK && can == 1, "a device is its own peer", &e);
  check(cute_cuda_can_access_peer(0, n, &can, &e) == CUTE_E_ARG && has(e.msg, "does not exist"),
        "can_access_peer: a device past the count is CUTE_E_ARG", &e);
  check(cute_cuda_enable_peer_access(0, 0, &e) == CUTE_E_ARG && has(e.msg, "its own peer"),
        "enable_peer_access(0, 0) is CUTE_E_ARG", &e);
  uint64_t p = 0;
  char handle[64];
  if (cute_cuda_malloc(&p, 1 << 20, &e) != CUTE_OK) {
    check(0, "malloc for the peer tests", &e);
    return;
  }
  check(cute_cuda_pointer_device(p, &dev, &e) == CUTE_OK && dev == 0, "pointer_device of an allocation is 0", &e);
  check(cute_cuda_ipc_get_handle(p, handle, &e) == CUTE_OK, "ipc_get_handle of an allocation", &e);
  void *host = NULL;
  if (cute_cuda_host_alloc(&host, 4096, 0, &e) == CUTE_OK) {
    dev = 7;
    check(cute_cuda_pointer_device((uint64_t)(uintptr_t)host, &dev, &e) == CUTE_OK && dev == -1,
          "pointer_device of pinned host memory is -1 (every device's)", &e);
    cute_cuda_host_free(host, NULL);
  }
  check(cute_cuda_memcpy_peer_async(p + 4096, 0, p, 0, 4096, NULL, &e) == CUTE_OK &&
            cute_cuda_synchronize(&e) == CUTE_OK,
        "memcpy_peer_async within one device", &e);
  cute_cuda_free(p, NULL);
}

static void no_driver_tests(const cute_err *why) {
  printf("no GPU: %s\n", why->msg);
  cute_err e;
  uint64_t p = 0;
  check(cute_cuda_malloc(&p, 16, &e) == CUTE_E_UNSUPPORTED && has(e.msg, "no CUDA driver") &&
            has(e.msg, "libcuda.so.1"),
        "cute_cuda_malloc fails with 'no CUDA driver'", &e);
  check(cute_cuda_init(&e) == CUTE_E_UNSUPPORTED && e.code == CUTE_E_UNSUPPORTED,
        "cute_cuda_init reports CUTE_E_UNSUPPORTED", &e);
  int n = -1;
  check(cute_cuda_device_count(&n, &e) == CUTE_E_UNSUPPORTED && n == -1,
        "device_count fails, leaves out untouched", &e);
  check(cute_cuda_synchronize(NULL) == CUTE_E_UNSUPPORTED, "NULL err is allowed", NULL);
  void *m = (void *)1;
  check(cute_cuda_module_load(PTX_ADD1, 0, 1, &m, NULL, 0, &e) == CUTE_E_UNSUPPORTED &&
            m == NULL,
        "module_load fails and clears the out handle", &e);
  int dummy = 0;
  void *params[1] = {&dummy};
  check(cute_cuda_launch((void *)&dummy, 1, 1, 1, 1, 1, 1, 0, NULL, params, &e) ==
                CUTE_E_UNSUPPORTED &&
            has(e.msg, "no CUDA driver"),
        "launch without a driver fails cleanly (never touches the function)", &e);
  check(cute_cuda_free(0, &e) == CUTE_OK, "free(0) is a no-op even without a driver", &e);
  float ms = 0;
  check(cute_cuda_event_elapsed_ms(NULL, NULL, &ms, &e) != CUTE_OK, "event_elapsed fails", &e);
  peer_no_driver_tests();
}

static void driver_independent_tests(void) {
  cute_err e;
  check(cute_cuda_format_error(0, "x", &e) == CUTE_OK, "format_error(0) is OK", NULL);
  check(cute_cuda_format_error(209, "cuModuleLoadDataEx", &e) == CUTE_E_CUDA &&
            e.code == CUTE_E_CUDA && has(e.msg, "cuModuleLoadDataEx: ") &&
            has(e.msg, "CUDA_ERROR_NO_BINARY_FOR_GPU (209)") &&
            has(e.msg, "compiled for another architecture"),
        "NO_BINARY_FOR_GPU: name, call and architecture hint", &e);
  check(cute_cuda_format_error(218, "cuModuleLoadDataEx", &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_INVALID_PTX") && has(e.msg, "JIT"),
        "INVALID_PTX hint", &e);
  check(cute_cuda_format_error(2, "cuMemAlloc(1 bytes)", &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_OUT_OF_MEMORY") && has(e.msg, "out of memory"),
        "OUT_OF_MEMORY hint", &e);
  check(cute_cuda_format_error(700, "cuCtxSynchronize", &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_ILLEGAL_ADDRESS") && has(e.msg, "compute-sanitizer") &&
            has(e.msg, "out-of-bounds"),
        "ILLEGAL_ADDRESS hint", &e);
  check(cute_cuda_format_error(719, "cuCtxSynchronize", &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_LAUNCH_FAILED") && has(e.msg, "the kernel faulted"),
        "LAUNCH_FAILED hint", &e);
  check(cute_cuda_format_error(1, "cuLaunchKernel(grid (1,1,1))", &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_INVALID_VALUE") &&
            has(e.msg, "check grid/block dims and shared memory"),
        "INVALID_VALUE on launch: dims hint", &e);
  check(cute_cuda_format_error(1, "cuMemsetD8", &e) == CUTE_E_CUDA &&
            !has(e.msg, "grid/block"),
        "INVALID_VALUE elsewhere: no launch hint", &e);
  check(strcmp(cute_cuda_error_name(2), "CUDA_ERROR_OUT_OF_MEMORY") == 0 &&
            strcmp(cute_cuda_error_name(123456), "CUDA_ERROR_123456") == 0,
        "error names (table and unknown)", NULL);
  cute_err *none = NULL;
  check(cute_cuda_format_error(2, "x", none) == CUTE_E_CUDA, "format_error with NULL err", NULL);
  /* NULL function: argument error before anything touches the driver. */
  check(cute_cuda_launch(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, &e) == CUTE_E_ARG &&
            has(e.msg, "function is NULL"),
        "launch(NULL fn) is an argument error", &e);
  check(cute_cuda_now_us() > 0, "now_us", NULL);
}

static void gpu_tests(void) {
  cute_err e;
  int n = 0, drv = 0;
  check(cute_cuda_device_count(&n, &e) == 0 && n > 0, "device_count > 0", &e);
  check(cute_cuda_driver_version(&drv, &e) == 0 && drv >= 11000, "driver version >= 11.0", &e);
  cute_cuda_device_info p;
  check(cute_cuda_device_props(0, &p, &e) == 0, "device_props(0)", &e);
  printf("  device 0: %s sm_%d%d, %d SMs, smem/block %d (opt-in %d), smem/SM %d, L2 %d, "
         "%.1f GiB, clock %d kHz, clusters %d; driver %d\n",
         p.name, p.cc_major, p.cc_minor, p.sm_count, p.smem_per_block, p.smem_per_block_optin,
         p.smem_per_sm, p.l2_size, p.total_mem / 1073741824.0, p.clock_khz, p.cluster_launch,
         drv);
  check(p.cc_major >= 3 && p.sm_count > 0 && p.warp_size == 32 &&
            p.max_threads_per_block >= 512 && p.smem_per_block == 49152 &&
            p.smem_per_block_optin >= p.smem_per_block && p.smem_per_sm >= p.smem_per_block &&
            p.l2_size > 0 && p.total_mem > (1ull << 30) && p.clock_khz > 0 &&
            p.max_block_dim[0] == 1024 && p.max_grid_dim[0] == 2147483647,
        "device properties are sane", &e);
  check(cute_cuda_device_props(n, &p, &e) == CUTE_E_ARG && has(e.msg, "does not exist"),
        "device_props(count) is an argument error", &e);
  check(cute_cuda_set_device(0, &e) == 0, "set_device(0)", &e);

  /* memory */
  enum { N = 1 << 20 };
  float *h = malloc(N * sizeof(float)), *g = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) h[i] = (float)(i % 1000) * 0.25f;
  uint64_t d = 0, d2 = 0;
  check(cute_cuda_malloc(&d, N * sizeof(float), &e) == 0 && d != 0, "malloc 4 MiB", &e);
  check(cute_cuda_malloc(&d2, N * sizeof(float), &e) == 0, "malloc second buffer", &e);
  check(cute_cuda_memcpy_htod(d, h, N * sizeof(float), &e) == 0, "memcpy htod", &e);
  check(cute_cuda_memcpy_dtod(d2, d, N * sizeof(float), &e) == 0, "memcpy dtod", &e);
  memset(g, 0, N * sizeof(float));
  check(cute_cuda_memcpy_dtoh(g, d2, N * sizeof(float), &e) == 0 &&
            memcmp(g, h, N * sizeof(float)) == 0,
        "round trip host -> device -> device -> host", &e);
  check(cute_cuda_memset_d32(d2, 0x3f800000u, N, NULL, 0, &e) == 0 &&
            cute_cuda_memcpy_dtoh(g, d2, 4 * sizeof(float), &e) == 0 && g[0] == 1.0f &&
            g[3] == 1.0f,
        "memset_d32 (1.0f)", &e);
  uint64_t fr = 0, tot = 0;
  check(cute_cuda_mem_info(&fr, &tot, &e) == 0 && fr > 0 && tot >= fr, "mem_info", &e);
  uint64_t huge = 0;
  check(cute_cuda_malloc(&huge, (size_t)1 << 50, &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_OUT_OF_MEMORY") && has(e.msg, "cuMemAlloc"),
        "a 1 PiB malloc fails with OUT_OF_MEMORY", &e);

  /* streams, events, pinned memory, async copies */
  void *s = NULL, *e0 = NULL, *e1 = NULL, *pin = NULL;
  check(cute_cuda_stream_create(&s, CUTE_CU_STREAM_NON_BLOCKING, &e) == 0 && s, "stream", &e);
  check(cute_cuda_event_create(&e0, 0, &e) == 0 && cute_cuda_event_create(&e1, 0, &e) == 0,
        "events", &e);
  check(cute_cuda_host_alloc(&pin, N * sizeof(float), 0, &e) == 0 && pin, "pinned alloc", &e);
  memcpy(pin, h, N * sizeof(float));
  check(cute_cuda_event_record(e0, s, &e) == 0 &&
            cute_cuda_memcpy_htod_async(d2, pin, N * sizeof(float), s, &e) == 0 &&
            cute_cuda_memset_d8(d, 0, N * sizeof(float), s, 1, &e) == 0 &&
            cute_cuda_memcpy_dtod_async(d, d2, N * sizeof(float), s, &e) == 0 &&
            cute_cuda_event_record(e1, s, &e) == 0,
        "async copies and memset on a stream", &e);
  memset(pin, 0, N * sizeof(float));
  check(cute_cuda_memcpy_dtoh_async(pin, d, N * sizeof(float), s, &e) == 0 &&
            cute_cuda_stream_synchronize(s, &e) == 0 &&
            memcmp(pin, h, N * sizeof(float)) == 0,
        "async round trip through pinned memory", &e);
  float ms = -1;
  int done = 0;
  check(cute_cuda_event_synchronize(e1, &e) == 0 && cute_cuda_event_query(e1, &done, &e) == 0 &&
            done == 1 && cute_cuda_event_elapsed_ms(e0, e1, &ms, &e) == 0 && ms > 0,
        "event elapsed time > 0", &e);
  check(cute_cuda_stream_query(s, &done, &e) == 0 && done == 1, "stream query", &e);

  /* module, function, launch */
  void *mod = NULL, *fn = NULL, *noop = NULL;
  char info[4096];
  check(cute_cuda_module_load(PTX_ADD1, strlen(PTX_ADD1), -1, &mod, info, sizeof info, &e) ==
                0 && mod,
        "load PTX module (detected as PTX)", &e);
  printf("  JIT info log: %s\n", info);
  check(cute_cuda_module_get_function(mod, "add1", &fn, &e) == 0 && fn, "get_function add1", &e);
  check(cute_cuda_module_get_function(mod, "noop", &noop, &e) == 0, "get_function noop", &e);
  void *bad = NULL;
  check(cute_cuda_module_get_function(mod, "nope", &bad, &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_NOT_FOUND") && has(e.msg, "nope"),
        "get_function of a missing name: NOT_FOUND", &e);
  unsigned nn = N;
  void *params[2] = {&d, &nn};
  check(cute_cuda_launch(fn, N / 256, 1, 1, 256, 1, 1, 0, s, params, &e) == 0 &&
            cute_cuda_stream_synchronize(s, &e) == 0 &&
            cute_cuda_memcpy_dtoh(g, d, N * sizeof(float), &e) == 0,
        "launch add1 on a stream", &e);
  int good = 1;
  for (int i = 0; i < N; i++) good &= g[i] == h[i] + 1.0f;
  check(good, "add1 added 1 to every element", NULL);
  check(cute_cuda_launch(fn, 1, 1, 1, 2048, 1, 1, 0, NULL, params, &e) == CUTE_E_CUDA &&
            has(e.msg, "CUDA_ERROR_INVALID_VALUE") && has(e.msg, "grid/block") &&
            has(e.msg, "2048 threads"),
        "launch with 2048 threads: INVALID_VALUE with the dims hint", &e);
  printf("        %s\n", e.msg);
  cute_cuda_func_info fa;
  check(cute_cuda_func_attrs(fn, &fa, &e) == 0 && fa.num_regs > 0 &&
            fa.max_threads_per_block >= 256 && fa.ptx_version == 80 && fa.binary_version >= 50,
        "function attributes", &e);
  int blocks = 0, mingrid = 0, bs = 0;
  check(cute_cuda_occupancy_max_active_blocks(fn, 256, 0, &blocks, &e) == 0 && blocks > 0,
        "occupancy: active blocks per SM", &e);
  check(cute_cuda_occupancy_max_potential_block_size(fn, 0, 0, &mingrid, &bs, &e) == 0 &&
            bs > 0 && mingrid > 0,
        "occupancy: potential block size", &e);
  check(cute_cuda_func_set_max_dynamic_smem(fn, p.smem_per_block_optin, &e) == 0 &&
            cute_cuda_func_attribute(fn, CUTE_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     &blocks, &e) == 0 &&
            blocks == p.smem_per_block_optin,
        "raise max dynamic shared memory to the opt-in limit", &e);
  check(cute_cuda_func_set_max_dynamic_smem(fn, p.smem_per_block_optin + 4096, &e) ==
                CUTE_E_CUDA && has(e.msg, "opt-in"),
        "above the opt-in limit: explained error", &e);
  if (p.cluster_launch) {
    check(cute_cuda_launch_cluster(fn, N / 256, 1, 1, 256, 1, 1, 2, 1, 1, 0, NULL, params, &e) ==
                  0 && cute_cuda_synchronize(&e) == 0,
          "cluster launch (2,1,1)", &e);
    check(cute_cuda_launch_cluster(fn, 3, 1, 1, 256, 1, 1, 2, 1, 1, 0, NULL, params, &e) ==
              CUTE_E_ARG,
          "cluster launch: grid not a multiple of the cluster", &e);
  }

  /* JIT error log */
  const char *bad_ptx = ".version 8.0\n.target sm_80\n.address_size 64\n"
                        ".visible .entry broken()\n{\n  frobnicate.u32 %r1;\n  ret;\n}\n";
  void *m2 = NULL;
  int rc = cute_cuda_module_load(bad_ptx, strlen(bad_ptx), 1, &m2, NULL, 0, &e);
  check(rc == CUTE_E_CUDA && has(e.msg, "CUDA_ERROR_INVALID_PTX") && has(e.msg, "JIT log") &&
            has(e.msg, "frobnicate"),
        "bad PTX: INVALID_PTX with the JIT error log", &e);
  printf("        %s\n", e.msg);

  g_noop = noop;
  run_threads();
  check(thread_mismatches(0) == 0,
        "8 threads: launch from a thread without a context, alloc/memset/copy/free", NULL);

  /* launch overhead: raw cuLaunchKernel loop vs cute_cuda_launch */
  double raw = 0, wrap = 0, rq = 0, wq = 0;
  cute_cuda_bench_raw_launch(noop, 1000, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, &raw, &rq, &e);
  check(cute_cuda_bench_raw_launch(noop, 10000, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, &raw, &rq,
                                   &e) == 0 &&
            cute_cuda_bench_launch(noop, 10000, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, &wrap, &wq,
                                   &e) == 0,
        "launch benchmarks", &e);
  printf("  launch overhead (10000 noop launches): raw %.2f us/launch (enqueue %.2f), "
         "cute_cuda_launch %.2f us/launch (enqueue %.2f), ratio %.3f\n",
         raw / 1e4, rq / 1e4, wrap / 1e4, wq / 1e4, wrap / raw);

  check(cute_cuda_module_unload(mod, &e) == 0, "module unload", &e);
  check(cute_cuda_event_destroy(e0, &e) == 0 && cute_cuda_event_destroy(e1, &e) == 0 &&
            cute_cuda_stream_destroy(s, &e) == 0 && cute_cuda_host_free(pin, &e) == 0 &&
            cute_cuda_free(d, &e) == 0 && cute_cuda_free(d2, &e) == 0,
        "release everything", &e);
  check(cute_cuda_stream_destroy(NULL, &e) == CUTE_E_ARG, "destroying the NULL stream", &e);
  free(h);
  free(g);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("cuda_c: CUDA runtime layer test\n");
  driver_independent_tests();
  /* Racing first calls: every thread sees the same init result. */
  run_threads();
  cute_err why;
  cute_err init_err;
  int want = cute_cuda_init(&init_err);
  check(thread_mismatches(want) == 0, "8 threads race the lazy init and agree on its result",
        &init_err);
  if (cute_cuda_available(&why)) {
    gpu_tests();
    peer_gpu_tests();
  } else {
    check(has(why.msg, "no CUDA driver") || why.code != CUTE_OK,
          "cute_cuda_available is 0 with a reason", &why);
    no_driver_tests(&why);
    printf("  skip  GPU tests (no usable CUDA driver/device)\n");
    skipped++;
  }
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
