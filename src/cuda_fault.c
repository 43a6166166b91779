/*
 * cuda_fault.c -- after a kernel faults: the primary context reset that
 * recovers the device, and the driver calls behind the fault record a failing
 * cute.assert_ writes (mapped page-locked host memory whose device address a
 * module global holds).  The Lua side (lua/cute/fault.lua, docs/FAULTS.md)
 * decides when to reset and what becomes stale.  The driver table comes from
 * cuda.c (cute_cuda_table_), as in cuda_peer.c.
 */
#include "core.h"
#include "cute_cuda.h"
#include "cudadef.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int cute_cuda_table_(const struct cute_cu_table **out, cute_err *err);
void cute_cuda_forget_ctx_(int ordinal);

int cute_cuda_device_reset(int ordinal, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = cute_cuda_table_(&cu, err), n = 0, cur = 0;
  if (s) return s;
  if ((s = cute_cuda_device_count(&n, err))) return s;
  if (ordinal < 0 || ordinal >= n)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_device_reset: device %d does not exist (%d device%s)",
                         ordinal, n, n == 1 ? "" : "s");
  if ((s = cute_cuda_get_device(&cur, err))) cur = ordinal;
  cute_cuda_warmup_wait(); /* (the JIT warm-up thread must not be inside the context) */
  CUdevice dev;
  CUresult r = cu->DeviceGet(&dev, ordinal);
  if (r) return cute_cuda_format_error(r, "cuDeviceGet", err);
  r = cu->DevicePrimaryCtxReset(dev);
  if (r) {
    char call[64];
    snprintf(call, sizeof call, "cuDevicePrimaryCtxReset(device %d)", ordinal);
    return cute_cuda_format_error(r, call, err);
  }
  /* our one retain is dropped and taken again at the next use: a fresh context */
  cu->DevicePrimaryCtxRelease(dev);
  cute_cuda_forget_ctx_(ordinal);
  return cute_cuda_set_device(cur, err);
}

int cute_cuda_module_global(void *module, const char *name, uint64_t *dptr, size_t *bytes,
                            cute_err *err) {
  const struct cute_cu_table *cu;
  int s = cute_cuda_table_(&cu, err);
  if (s) return s;
  if (!module || !name || !dptr)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_module_global: module, name or out is NULL");
  CUdeviceptr p = 0;
  size_t sz = 0;
  CUresult r = cu->ModuleGetGlobal(&p, &sz, (CUmodule)module, name);
  if (r) {
    char call[200];
    snprintf(call, sizeof call, "cuModuleGetGlobal(%.150s)", name);
    return cute_cuda_format_error(r, call, err);
  }
  *dptr = p;
  if (bytes) *bytes = sz;
  return CUTE_OK;
}

int cute_cuda_module_global_set(void *module, const char *name, const void *src, size_t bytes,
                                cute_err *err) {
  uint64_t p = 0;
  size_t sz = 0;
  int s = cute_cuda_module_global(module, name, &p, &sz, err);
  if (s) return s;
  if (bytes > sz)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_module_global_set: %zu bytes into %s of %zu bytes", bytes,
                         name, sz);
  return cute_cuda_memcpy_htod(p, src, bytes, err);
}

int cute_cuda_host_device_pointer(void *host, uint64_t *dptr, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = cute_cuda_table_(&cu, err);
  if (s) return s;
  if (!host || !dptr) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_host_device_pointer: pointer or out is NULL");
  CUdeviceptr p = 0;
  CUresult r = cu->MemHostGetDevicePointer(&p, host, 0);
  if (r) return cute_cuda_format_error(r, "cuMemHostGetDevicePointer", err);
  *dptr = p;
  return CUTE_OK;
}
