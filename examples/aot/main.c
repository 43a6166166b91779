/* A C program that runs kernels exported by examples/aot/export_vadd.lua
   (docs/EXPORT.md).  It links kernels.c and libcuda only: no LuaJIT, no LLVM,
   no CUDA headers.
     build/cuteluajit examples/aot/export_vadd.lua build/aot
     cc -std=c11 -Wall -Werror -Ibuild/aot examples/aot/main.c build/aot/kernels.c -o build/aot/main \
        -l:libcuda.so.1
     build/aot/main [n]
   Prints "ok n=<n> max_err=<e>" and exits 0 when C = A + B and X = 2 * X match
   the CPU on random data; otherwise prints what failed and exits 1. */
#include "kernels.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* the few driver entry points this program calls itself (libcuda's symbols) */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
extern int cuInit(unsigned flags);
extern int cuDeviceGet(CUdevice *dev, int ordinal);
extern int cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
extern int cuDevicePrimaryCtxRelease_v2(CUdevice dev);
extern int cuCtxSetCurrent(CUcontext ctx);
extern int cuCtxSynchronize(void);
extern int cuMemAlloc_v2(CUdeviceptr *p, size_t bytes);
extern int cuMemFree_v2(CUdeviceptr p);
extern int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes);
extern int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes);

#define CHECK(call)                                                  \
  do {                                                               \
    int st_ = (call);                                                \
    if (st_ != 0) {                                                  \
      fprintf(stderr, "%s failed: CUresult %d\n", #call, st_);       \
      return 1;                                                      \
    }                                                                \
  } while (0)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 100003;
  const int nx = 4096; /* scale was exported for a fixed 4096-float tensor */
  size_t bytes = (size_t)n * sizeof(float);
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  float x[4096], x0[4096];
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr dA, dB, dC, dX;
  unsigned seed = 12345;
  double max_err = 0;
  int i;
  cute_aot_dim3 block = { 256, 1, 1 }, grid = { 0, 1, 1 };
  if (!a || !b || !c || n <= 0) return 1;
  for (i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    a[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    seed = seed * 1103515245u + 12345u;
    b[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  for (i = 0; i < nx; i++) x0[i] = x[i] = (float)i - 2048.0f;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(kernels_load());
  CHECK(cuMemAlloc_v2(&dA, bytes));
  CHECK(cuMemAlloc_v2(&dB, bytes));
  CHECK(cuMemAlloc_v2(&dC, bytes));
  CHECK(cuMemAlloc_v2(&dX, sizeof x));
  CHECK(cuMemcpyHtoD_v2(dA, a, bytes));
  CHECK(cuMemcpyHtoD_v2(dB, b, bytes));
  CHECK(cuMemcpyHtoD_v2(dX, x, sizeof x));
  grid.x = (unsigned)((n + 255) / 256);
  CHECK(vadd_launch(NULL, grid, block, 0, dA, n, dB, n, dC, n, n));
  grid.x = (unsigned)((nx + 255) / 256);
  CHECK(scale_launch(NULL, grid, block, 0, dX, nx, 2.0f));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH_v2(c, dC, bytes));
  CHECK(cuMemcpyDtoH_v2(x, dX, sizeof x));
  for (i = 0; i < n; i++) {
    float ref = a[i] + b[i]; /* one IEEE f32 add, as the GPU's add.rn.f32: exact agreement */
    double e = fabs((double)c[i] - (double)ref);
    if (!(e <= max_err)) max_err = e; /* (a NaN counts as an error) */
  }
  for (i = 0; i < nx; i++) {
    if (x[i] != 2.0f * x0[i]) {
      printf("scale: x[%d] = %g, expected %g\n", i, x[i], 2.0f * x0[i]);
      return 1;
    }
  }
  CHECK(cuMemFree_v2(dA));
  CHECK(cuMemFree_v2(dB));
  CHECK(cuMemFree_v2(dC));
  CHECK(cuMemFree_v2(dX));
  CHECK(kernels_unload());
  CHECK(cuDevicePrimaryCtxRelease_v2(dev));
  free(a); free(b); free(c);
  if (max_err != 0) {
    printf("vadd: max_err=%g\n", max_err);
    return 1;
  }
  printf("ok n=%d max_err=%g\n", n, max_err);
  return 0;
}
