/* host.c -- a C application that runs a Lua kernel through the host API
 * (include/cute_host.h) without writing any Lua itself: it loads
 * kernels.lua, gets `saxpy` by name, prints its PTX (no GPU needed) and, when
 * a GPU is present, runs it on device buffers and a stream it owns.
 *
 * Build against an installed cuteluajit with pkg-config only:
 *   make install PREFIX=$HOME/.local
 *   PKG_CONFIG_PATH=$HOME/.local/lib/pkgconfig make -C examples/embed
 *   examples/embed/host examples/embed/kernels.lua
 * A host with the CUDA runtime would pass its cudaMalloc pointers and its
 * cudaStream_t the same way: kernels run in the primary context, the
 * runtime's.  Prints "N passed, N failed" (make test runs it). */
#include <cute_host.h>
#include <cute_cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, const char *detail) {
  printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, ok || !detail ? "" : ": ", ok || !detail ? "" : detail);
  if (ok) passed++; else failed++;
}

int main(int argc, char **argv) {
  const char *file = argc > 1 ? argv[1] : "kernels.lua";
  cute_err e;
  cute_host *h = cute_host_new(&e);
  if (!h) {
    printf("FAIL cute_host_new: %s\n0 passed, 1 failed\n", e.msg);
    return 1;
  }
  check(cute_host_load_file(h, file, &e) == 0, "load the kernel file", e.msg);
  cute_host_kernel *saxpy = NULL;
  check(cute_host_get_kernel(h, "saxpy", &saxpy, &e) == 0, "get the kernel saxpy", e.msg);
  if (!saxpy) goto done;

  /* compile only: a DLTensor without data describes the argument */
  int64_t n = 1 << 20;
  DLTensor x = {NULL, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &n, NULL, 0};
  cute_host_arg spec[4] = {cute_arg_tensor(&x), cute_arg_tensor(&x), cute_arg_f32(2.0f), cute_arg_i32((int32_t)n)};
  char *ptx = NULL;
  int st = cute_host_compile(saxpy, "ptx", "sm_80", spec, 4, &ptx, &e);
  check(st == 0 && strstr(ptx, ".visible .entry"), "PTX for sm_80", e.msg);
  if (ptx) {
    const char *entry = strstr(ptx, ".visible .entry");
    printf("  %.*s\n", entry ? (int)strcspn(entry, "(") : 0, entry ? entry : "");
    free(ptx);
  }

  /* errors come back as text, with the Lua traceback */
  cute_host_kernel *none = NULL;
  st = cute_host_get_kernel(h, "sgemm", &none, &e);
  check(st != 0 && strstr(e.msg, "no kernel named 'sgemm'"), "an unknown kernel is an error message", e.msg);

  if (!cute_cuda_available(&e)) {
    printf("no GPU (%s): launch skipped\n", e.msg);
    goto done;
  }
  {
    size_t bytes = (size_t)n * sizeof(float);
    float *hx = malloc(bytes), *hy = malloc(bytes);
    for (int64_t i = 0; i < n; i++) { hx[i] = (float)(i % 1000); hy[i] = 1.0f; }
    uint64_t dx = 0, dy = 0;
    void *stream = NULL;
    int bad = cute_cuda_malloc(&dx, bytes, &e) || cute_cuda_malloc(&dy, bytes, &e) ||
              cute_cuda_memcpy_htod(dx, hx, bytes, &e) || cute_cuda_memcpy_htod(dy, hy, bytes, &e) ||
              cute_cuda_stream_create(&stream, CUTE_CU_STREAM_NON_BLOCKING, &e);
    check(!bad, "device buffers and a stream", e.msg);
    DLTensor X = x, Y = x;
    X.data = (void *)(uintptr_t)dx;
    Y.data = (void *)(uintptr_t)dy;
    cute_host_arg args[4] = {cute_arg_tensor(&X), cute_arg_tensor(&Y), cute_arg_f32(2.0f), cute_arg_i32((int32_t)n)};
    cute_host_launch_cfg cfg = {{(unsigned)(n / 256), 1, 1}, {256, 1, 1}, 0, stream};
    st = bad ? 1 : cute_host_launch(saxpy, &cfg, args, 4, &e);
    check(st == 0, "launch saxpy on the host's stream", e.msg);
    if (st == 0 && cute_cuda_stream_synchronize(stream, &e) == 0 &&
        cute_cuda_memcpy_dtoh(hy, dy, bytes, &e) == 0) {
      int ok = 1;
      for (int64_t i = 0; i < n; i++) ok &= hy[i] == 2.0f * (float)(i % 1000) + 1.0f;
      check(ok, "y = 2x + 1 on every element", NULL);
    }
    cute_cuda_stream_destroy(stream, NULL);
    cute_cuda_free(dx, NULL);
    cute_cuda_free(dy, NULL);
    free(hx);
    free(hy);
  }
done:
  cute_host_free(h);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
