/*
 * cuda_peer.c -- several devices in one process and between processes: peer
 * access between primary contexts, copies across devices, the device of a
 * pointer, CUDA IPC memory handles, and streams with a priority (the scheduler runs the
 * blocks of a higher-priority stream's kernels first).  The driver table and the primary
 * contexts come from cuda.c (cute_cuda_table_, cute_cuda_primary_ctx_).
 */
#include "core.h"
#include "cute_cuda.h"
#include "cudadef.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int cute_cuda_table_(const struct cute_cu_table **out, cute_err *err);
int cute_cuda_primary_ctx_(int ordinal, CUcontext *out, cute_err *err);

enum { CU_PEER_ALREADY_ENABLED = 704 };

/* The table, after checking that `ordinal` names a device (fn: for the message). */
static int device_ok(const char *fn, int ordinal, const struct cute_cu_table **cu, cute_err *err) {
  int s = cute_cuda_table_(cu, err), n = 0;
  if (s) return s;
  if ((s = cute_cuda_device_count(&n, err))) return s;
  if (ordinal < 0 || ordinal >= n)
    return cute_err_setf(err, CUTE_E_ARG, "%s: device %d does not exist (%d device%s)", fn, ordinal, n,
                         n == 1 ? "" : "s");
  return CUTE_OK;
}

int cute_cuda_can_access_peer(int dev, int peer, int *out, cute_err *err) {
  const struct cute_cu_table *cu;
  int s;
  if ((s = device_ok("cute_cuda_can_access_peer", dev, &cu, err))) return s;
  if ((s = device_ok("cute_cuda_can_access_peer", peer, &cu, err))) return s;
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_can_access_peer: out is NULL");
  if (dev == peer) {
    *out = 1;
    return CUTE_OK;
  }
  CUdevice d, p;
  CUresult r = cu->DeviceGet(&d, dev);
  if (!r) r = cu->DeviceGet(&p, peer);
  if (!r) r = cu->DeviceCanAccessPeer(out, d, p);
  if (r) return cute_cuda_format_error(r, "cuDeviceCanAccessPeer", err);
  return CUTE_OK;
}

int cute_cuda_enable_peer_access(int dev, int peer, cute_err *err) {
  const struct cute_cu_table *cu;
  int s;
  if ((s = device_ok("cute_cuda_enable_peer_access", dev, &cu, err))) return s;
  if ((s = device_ok("cute_cuda_enable_peer_access", peer, &cu, err))) return s;
  if (dev == peer)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_enable_peer_access: device %d is its own peer", dev);
  CUcontext dctx, pctx, saved = NULL;
  if ((s = cute_cuda_primary_ctx_(dev, &dctx, err))) return s;
  if ((s = cute_cuda_primary_ctx_(peer, &pctx, err))) return s;
  CUresult r = cu->CtxGetCurrent(&saved);
  if (!r) r = cu->CtxSetCurrent(dctx);
  if (r) return cute_cuda_format_error(r, "cuCtxSetCurrent", err);
  r = cu->CtxEnablePeerAccess(pctx, 0);
  CUresult r2 = cu->CtxSetCurrent(saved);
  if (r == CU_PEER_ALREADY_ENABLED) r = 0;
  if (r) {
    char call[96];
    snprintf(call, sizeof call, "cuCtxEnablePeerAccess(device %d -> device %d)", dev, peer);
    return cute_cuda_format_error(r, call, err);
  }
  return r2 ? cute_cuda_format_error(r2, "cuCtxSetCurrent", err) : CUTE_OK;
}

int cute_cuda_memcpy_peer_async(uint64_t dst, int dst_dev, uint64_t src, int src_dev, size_t bytes,
                                void *stream, cute_err *err) {
  const struct cute_cu_table *cu;
  int s;
  if ((s = device_ok("cute_cuda_memcpy_peer_async", dst_dev, &cu, err))) return s;
  if ((s = device_ok("cute_cuda_memcpy_peer_async", src_dev, &cu, err))) return s;
  CUcontext dctx, sctx;
  if ((s = cute_cuda_primary_ctx_(dst_dev, &dctx, err))) return s;
  if ((s = cute_cuda_primary_ctx_(src_dev, &sctx, err))) return s;
  CUresult r = cu->MemcpyPeerAsync(dst, dctx, src, sctx, bytes, stream);
  if (!r) return CUTE_OK;
  char call[160];
  snprintf(call, sizeof call, "cuMemcpyPeerAsync(0x%llx on device %d <- 0x%llx on device %d, %zu bytes)",
           (unsigned long long)dst, dst_dev, (unsigned long long)src, src_dev, bytes);
  return cute_cuda_format_error(r, call, err);
}

/* The table with a context current in this thread (IPC and pointer queries). */
static int with_ctx(const struct cute_cu_table **cu, cute_err *err) {
  int cur, s = cute_cuda_table_(cu, err);
  return s ? s : cute_cuda_get_device(&cur, err);
}

int cute_cuda_pointer_device(uint64_t ptr, int *ordinal, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = with_ctx(&cu, err);
  if (s) return s;
  if (!ordinal) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_pointer_device: out is NULL");
  /* memory of one device only: host (pinned) and managed memory are every device's */
  unsigned long long type = 0, managed = 0;
  int dev = -1;
  CUresult r = cu->PointerGetAttribute(&type, CUTE_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (!r) r = cu->PointerGetAttribute(&managed, CUTE_CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
  if (!r && (unsigned)type == CUTE_CU_MEMORYTYPE_DEVICE && !(unsigned)managed)
    r = cu->PointerGetAttribute(&dev, CUTE_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  if (!r) {
    *ordinal = dev;
    return CUTE_OK;
  }
  char call[96];
  snprintf(call, sizeof call, "cuPointerGetAttribute(DEVICE_ORDINAL, 0x%llx)", (unsigned long long)ptr);
  return cute_cuda_format_error(r, call, err);
}

static int no_ipc(const struct cute_cu_table *cu, const char *fn, cute_err *err) {
  if (cu->IpcGetMemHandle && cu->IpcOpenMemHandle && cu->IpcCloseMemHandle) return CUTE_OK;
  return cute_err_setf(err, CUTE_E_UNSUPPORTED, "%s: this CUDA driver has no IPC memory handles", fn);
}

int cute_cuda_ipc_get_handle(uint64_t ptr, void *handle, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = with_ctx(&cu, err);
  if (!s) s = no_ipc(cu, "cute_cuda_ipc_get_handle", err);
  if (s) return s;
  if (!handle || !ptr)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_ipc_get_handle: the pointer or the handle is NULL");
  CUipcMemHandle h;
  CUresult r = cu->IpcGetMemHandle(&h, ptr);
  if (r) {
    char call[64];
    snprintf(call, sizeof call, "cuIpcGetMemHandle(0x%llx)", (unsigned long long)ptr);
    return cute_cuda_format_error(r, call, err);
  }
  memcpy(handle, &h, sizeof h);
  return CUTE_OK;
}

int cute_cuda_ipc_open_handle(const void *handle, uint64_t *ptr, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = with_ctx(&cu, err);
  if (!s) s = no_ipc(cu, "cute_cuda_ipc_open_handle", err);
  if (s) return s;
  if (!handle || !ptr)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_ipc_open_handle: the handle or out is NULL");
  CUipcMemHandle h;
  memcpy(&h, handle, sizeof h);
  CUdeviceptr p = 0;
  CUresult r = cu->IpcOpenMemHandle(&p, h, CUTE_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  if (r) return cute_cuda_format_error(r, "cuIpcOpenMemHandle", err);
  *ptr = p;
  return CUTE_OK;
}

int cute_cuda_ipc_close_handle(uint64_t ptr, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = with_ctx(&cu, err);
  if (!s) s = no_ipc(cu, "cute_cuda_ipc_close_handle", err);
  if (s) return s;
  CUresult r = cu->IpcCloseMemHandle(ptr);
  if (!r) return CUTE_OK;
  char call[64];
  snprintf(call, sizeof call, "cuIpcCloseMemHandle(0x%llx)", (unsigned long long)ptr);
  return cute_cuda_format_error(r, call, err);
}

/* ---- stream priorities (the current device; streams of a chosen device go through
   cute.stream's on_device) ---------------------------------------------------- */
int cute_cuda_stream_create_priority(void **out, unsigned flags, int priority, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = with_ctx(&cu, err);
  if (s) return s;
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_stream_create_priority: out is NULL");
  CUstream st = NULL;
  CUresult r = cu->StreamCreateWithPriority(&st, flags, priority);
  if (r) {
    char call[80];
    snprintf(call, sizeof call, "cuStreamCreateWithPriority(flags %u, priority %d)", flags, priority);
    return cute_cuda_format_error(r, call, err);
  }
  *out = st;
  return CUTE_OK;
}

int cute_cuda_stream_priority_range(int *least, int *greatest, cute_err *err) {
  const struct cute_cu_table *cu;
  int s = with_ctx(&cu, err);
  if (s) return s;
  if (!least || !greatest)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_stream_priority_range: an out pointer is NULL");
  CUresult r = cu->CtxGetStreamPriorityRange(least, greatest);
  return r ? cute_cuda_format_error(r, "cuCtxGetStreamPriorityRange", err) : CUTE_OK;
}
