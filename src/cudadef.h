/*
 * cudadef.h -- the CUDA driver API as cuteluajit uses it, written once.
 *
 *   CUTE_CUDA_FUNCS(X)   every driver entry point: X(field, symbol, fallback,
 *                        required, params).  `symbol` is the versioned name the
 *                        toolkit's cuda.h maps to (cuMemAlloc -> cuMemAlloc_v2);
 *                        `fallback` is tried when the driver lacks `symbol`
 *                        (older drivers), `required` = 0 marks features that
 *                        may be missing (the call then reports unsupported).
 *                        Every function returns CUresult.
 *   CUTE_CUDA_ERRORS(X)  CUresult codes we name and explain: X(NAME, value, hint).
 *                        Names come from cuGetErrorName when the driver is up;
 *                        this table is the fallback and the source of hints.
 *
 * No CUDA header is needed: the minimal driver types below are ABI-stable
 * (handles are opaque pointers, enums are ints).  tests/cuda_abi.c compiles
 * these tables against a real cuda.h (when one exists) and checks every
 * signature, enum value and struct offset.  Define CUTE_CUDADEF_NO_TYPES
 * before including this file to get the tables without the typedefs.
 */
#ifndef CUTE_CUDADEF_H
#define CUTE_CUDADEF_H

#include <stddef.h>

/* cuLaunchKernelEx configuration (cuda.h: CUlaunchConfig, CUlaunchAttribute).
   Tags differ from cuda.h's so tests/cuda_abi.c can compare the layouts. */
struct cute_cu_launch_attr {
  int id;                 /* CUlaunchAttributeID                     */
  char pad_[4];           /* 8 - sizeof(CUlaunchAttributeID)         */
  union {
    char pad[64];
    struct { unsigned x, y, z; } cluster_dim;
  } value;
};

struct cute_cu_launch_config {
  unsigned grid_x, grid_y, grid_z;
  unsigned block_x, block_y, block_z;
  unsigned smem;
  void *stream;                          /* CUstream */
  struct cute_cu_launch_attr *attrs;
  unsigned num_attrs;
};

#ifndef CUTE_CUDADEF_NO_TYPES
typedef int CUresult;
typedef int CUdevice;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef int CUjit_option;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef size_t (*CUoccupancyB2DSize)(int block_size);
typedef struct cute_cu_launch_config CUlaunchConfig;
typedef unsigned int cuuint32_t;
typedef unsigned long long cuuint64_t;
typedef struct { _Alignas(64) unsigned long long opaque[16]; } CUtensorMap;
typedef int CUtensorMapDataType;
typedef int CUtensorMapInterleave;
typedef int CUtensorMapSwizzle;
typedef int CUtensorMapL2promotion;
typedef int CUtensorMapFloatOOBfill;
typedef int CUpointer_attribute;
typedef struct CUipcMemHandle_st { char reserved[64]; } CUipcMemHandle;
#endif

/* Constants we pass to the driver (checked against cuda.h by tests/cuda_abi.c). */
enum {
  CUTE_CU_JIT_INFO_LOG_BUFFER = 3,
  CUTE_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
  CUTE_CU_JIT_ERROR_LOG_BUFFER = 5,
  CUTE_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CUTE_CU_JIT_LOG_VERBOSE = 12,
  CUTE_CU_JIT_GENERATE_LINE_INFO = 13,
  CUTE_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
  CUTE_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1,
  CUTE_CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CUTE_CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CUTE_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
  CUTE_CU_MEMORYTYPE_DEVICE = 2,
  CUTE_CU_IPC_HANDLE_SIZE = 64
};

/* X(field, symbol, fallback, required, params) */
#define CUTE_CUDA_FUNCS(X) \
  X(Init, cuInit, cuInit, 1, (unsigned int flags)) \
  X(DriverGetVersion, cuDriverGetVersion, cuDriverGetVersion, 1, (int *version)) \
  X(GetErrorName, cuGetErrorName, cuGetErrorName, 1, (CUresult error, const char **str)) \
  X(GetErrorString, cuGetErrorString, cuGetErrorString, 1, (CUresult error, const char **str)) \
  X(DeviceGetCount, cuDeviceGetCount, cuDeviceGetCount, 1, (int *count)) \
  X(DeviceGet, cuDeviceGet, cuDeviceGet, 1, (CUdevice *device, int ordinal)) \
  X(DeviceGetName, cuDeviceGetName, cuDeviceGetName, 1, (char *name, int len, CUdevice dev)) \
  X(DeviceGetAttribute, cuDeviceGetAttribute, cuDeviceGetAttribute, 1, \
    (int *pi, CUdevice_attribute attrib, CUdevice dev)) \
  X(DeviceTotalMem, cuDeviceTotalMem_v2, cuDeviceTotalMem_v2, 1, (size_t *bytes, CUdevice dev)) \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 1, \
    (CUcontext *pctx, CUdevice dev)) \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease_v2, 1, \
    (CUdevice dev)) \
  X(DevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset_v2, 1, (CUdevice dev)) \
  X(CtxSetCurrent, cuCtxSetCurrent, cuCtxSetCurrent, 1, (CUcontext ctx)) \
  X(CtxGetCurrent, cuCtxGetCurrent, cuCtxGetCurrent, 1, (CUcontext *pctx)) \
  X(CtxSynchronize, cuCtxSynchronize, cuCtxSynchronize, 1, (void)) \
  X(MemGetInfo, cuMemGetInfo_v2, cuMemGetInfo_v2, 1, (size_t *free_bytes, size_t *total_bytes)) \
  X(MemAlloc, cuMemAlloc_v2, cuMemAlloc_v2, 1, (CUdeviceptr *dptr, size_t bytes)) \
  X(MemFree, cuMemFree_v2, cuMemFree_v2, 1, (CUdeviceptr dptr)) \
  X(MemHostAlloc, cuMemHostAlloc, cuMemHostAlloc, 1, (void **pp, size_t bytes, unsigned int flags)) \
  X(MemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, cuMemHostGetDevicePointer_v2, 1, \
    (CUdeviceptr *pdptr, void *p, unsigned int flags)) \
  X(MemFreeHost, cuMemFreeHost, cuMemFreeHost, 1, (void *p)) \
  X(MemcpyHtoD, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2, 1, \
    (CUdeviceptr dst, const void *src, size_t bytes)) \
  X(MemcpyDtoH, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2, 1, (void *dst, CUdeviceptr src, size_t bytes)) \
  X(MemcpyDtoD, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2, 1, \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes)) \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2, 1, \
    (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream)) \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2, 1, \
    (void *dst, CUdeviceptr src, size_t bytes, CUstream stream)) \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2, 1, \
    (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream)) \
  X(MemsetD8, cuMemsetD8_v2, cuMemsetD8_v2, 1, (CUdeviceptr dst, unsigned char v, size_t n)) \
  X(MemsetD16, cuMemsetD16_v2, cuMemsetD16_v2, 1, (CUdeviceptr dst, unsigned short v, size_t n)) \
  X(MemsetD32, cuMemsetD32_v2, cuMemsetD32_v2, 1, (CUdeviceptr dst, unsigned int v, size_t n)) \
  X(MemsetD8Async, cuMemsetD8Async, cuMemsetD8Async, 1, \
    (CUdeviceptr dst, unsigned char v, size_t n, CUstream stream)) \
  X(MemsetD16Async, cuMemsetD16Async, cuMemsetD16Async, 1, \
    (CUdeviceptr dst, unsigned short v, size_t n, CUstream stream)) \
  X(MemsetD32Async, cuMemsetD32Async, cuMemsetD32Async, 1, \
    (CUdeviceptr dst, unsigned int v, size_t n, CUstream stream)) \
  X(StreamCreate, cuStreamCreate, cuStreamCreate, 1, (CUstream *pstream, unsigned int flags)) \
  X(StreamCreateWithPriority, cuStreamCreateWithPriority, cuStreamCreateWithPriority, 1, \
    (CUstream *pstream, unsigned int flags, int priority)) \
  X(CtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, 1, \
    (int *least, int *greatest)) \
  X(StreamDestroy, cuStreamDestroy_v2, cuStreamDestroy_v2, 1, (CUstream stream)) \
  X(StreamSynchronize, cuStreamSynchronize, cuStreamSynchronize, 1, (CUstream stream)) \
  X(StreamQuery, cuStreamQuery, cuStreamQuery, 1, (CUstream stream)) \
  X(StreamWaitEvent, cuStreamWaitEvent, cuStreamWaitEvent, 1, \
    (CUstream stream, CUevent event, unsigned int flags)) \
  X(EventCreate, cuEventCreate, cuEventCreate, 1, (CUevent *pevent, unsigned int flags)) \
  X(EventDestroy, cuEventDestroy_v2, cuEventDestroy_v2, 1, (CUevent event)) \
  X(EventRecord, cuEventRecord, cuEventRecord, 1, (CUevent event, CUstream stream)) \
  X(EventSynchronize, cuEventSynchronize, cuEventSynchronize, 1, (CUevent event)) \
  X(EventQuery, cuEventQuery, cuEventQuery, 1, (CUevent event)) \
  X(EventElapsedTime, cuEventElapsedTime_v2, cuEventElapsedTime, 1, \
    (float *ms, CUevent start, CUevent end)) \
  X(ModuleLoadDataEx, cuModuleLoadDataEx, cuModuleLoadDataEx, 1, \
    (CUmodule *module, const void *image, unsigned int num_options, CUjit_option *options, \
     void **option_values)) \
  X(ModuleGetGlobal, cuModuleGetGlobal_v2, cuModuleGetGlobal_v2, 1, \
    (CUdeviceptr *dptr, size_t *bytes, CUmodule module, const char *name)) \
  X(ModuleUnload, cuModuleUnload, cuModuleUnload, 1, (CUmodule module)) \
  X(ModuleGetFunction, cuModuleGetFunction, cuModuleGetFunction, 1, \
    (CUfunction *fn, CUmodule module, const char *name)) \
  X(FuncGetAttribute, cuFuncGetAttribute, cuFuncGetAttribute, 1, \
    (int *pi, CUfunction_attribute attrib, CUfunction fn)) \
  X(FuncSetAttribute, cuFuncSetAttribute, cuFuncSetAttribute, 1, \
    (CUfunction fn, CUfunction_attribute attrib, int value)) \
  X(OccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor, \
    cuOccupancyMaxActiveBlocksPerMultiprocessor, 1, \
    (int *num_blocks, CUfunction fn, int block_size, size_t dynamic_smem)) \
  X(OccupancyMaxPotentialBlockSize, cuOccupancyMaxPotentialBlockSize, \
    cuOccupancyMaxPotentialBlockSize, 1, \
    (int *min_grid_size, int *block_size, CUfunction fn, CUoccupancyB2DSize smem_of_block, \
     size_t dynamic_smem, int block_size_limit)) \
  X(LaunchKernel, cuLaunchKernel, cuLaunchKernel, 1, \
    (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, \
     unsigned int by, unsigned int bz, unsigned int smem, CUstream stream, void **params, \
     void **extra)) \
  X(LaunchKernelEx, cuLaunchKernelEx, cuLaunchKernelEx, 0, \
    (const CUlaunchConfig *config, CUfunction fn, void **params, void **extra)) \
  X(TensorMapEncodeTiled, cuTensorMapEncodeTiled, cuTensorMapEncodeTiled, 0, \
    (CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *global_address, \
     const cuuint64_t *global_dim, const cuuint64_t *global_strides, const cuuint32_t *box_dim, \
     const cuuint32_t *element_strides, CUtensorMapInterleave interleave, \
     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)) \
  X(TensorMapEncodeIm2col, cuTensorMapEncodeIm2col, cuTensorMapEncodeIm2col, 0, \
    (CUtensorMap *map, CUtensorMapDataType dtype, cuuint32_t rank, void *global_address, \
     const cuuint64_t *global_dim, const cuuint64_t *global_strides, const int *lower, \
     const int *upper, cuuint32_t channels_per_pixel, cuuint32_t pixels_per_column, \
     const cuuint32_t *element_strides, CUtensorMapInterleave interleave, \
     CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob)) \
  X(DeviceCanAccessPeer, cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 1, \
    (int *can_access, CUdevice dev, CUdevice peer)) \
  X(CtxEnablePeerAccess, cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 1, \
    (CUcontext peer, unsigned int flags)) \
  X(MemcpyPeerAsync, cuMemcpyPeerAsync, cuMemcpyPeerAsync, 1, \
    (CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, size_t bytes, \
     CUstream stream)) \
  X(PointerGetAttribute, cuPointerGetAttribute, cuPointerGetAttribute, 1, \
    (void *data, CUpointer_attribute attribute, CUdeviceptr ptr)) \
  X(IpcGetMemHandle, cuIpcGetMemHandle, cuIpcGetMemHandle, 0, \
    (CUipcMemHandle *handle, CUdeviceptr ptr)) \
  X(IpcOpenMemHandle, cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 0, \
    (CUdeviceptr *ptr, CUipcMemHandle handle, unsigned int flags)) \
  X(IpcCloseMemHandle, cuIpcCloseMemHandle, cuIpcCloseMemHandle, 0, (CUdeviceptr ptr))

#ifndef CUTE_CUDADEF_NO_TYPES
/* The resolved driver table (src/cuda.c fills it; cuda_peer.c reads it). */
struct cute_cu_table {
#define CUTE_CU_FIELD(field, sym, alt, req, params) CUresult(*field) params;
  CUTE_CUDA_FUNCS(CUTE_CU_FIELD)
#undef CUTE_CU_FIELD
};
#endif

/* X(NAME, value, hint); hint "" when there is nothing useful to add. */
#define CUTE_CUDA_ERRORS(X) \
  X(CUDA_SUCCESS, 0, "") \
  X(CUDA_ERROR_INVALID_VALUE, 1, "an argument is out of range") \
  X(CUDA_ERROR_OUT_OF_MEMORY, 2, \
    "the GPU is out of memory: free tensors you no longer need (t:free()) or allocate less") \
  X(CUDA_ERROR_NOT_INITIALIZED, 3, "the driver is not initialized (cuInit)") \
  X(CUDA_ERROR_DEINITIALIZED, 4, "the driver is shutting down") \
  X(CUDA_ERROR_NO_DEVICE, 100, \
    "no CUDA-capable device is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES") \
  X(CUDA_ERROR_INVALID_DEVICE, 101, "no device with that ordinal: see cute.device_count()") \
  X(CUDA_ERROR_DEVICE_NOT_LICENSED, 102, "") \
  X(CUDA_ERROR_INVALID_IMAGE, 200, \
    "the module image is neither a valid cubin nor NUL-terminated PTX text") \
  X(CUDA_ERROR_INVALID_CONTEXT, 201, \
    "no current CUDA context in this thread, or a handle from another context") \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209, \
    "the kernel was compiled for another architecture: compile for this device's sm_XY " \
    "(cute.device().cc) or load PTX instead of a cubin") \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222, \
    "the PTX .version is newer than this driver supports: update the driver or target an " \
    "older PTX ISA") \
  X(CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221, "the driver's PTX JIT compiler is not available") \
  X(CUDA_ERROR_INVALID_PTX, 218, \
    "the driver's PTX JIT rejected the PTX: see the JIT log above (wrong .target for this " \
    "device? syntax error?)") \
  X(CUDA_ERROR_INVALID_HANDLE, 400, \
    "a stale or foreign handle (freed stream/event/module, or one from another context)") \
  X(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, 217, \
    "these two devices cannot address each other's memory (cute.can_access_peer)") \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, 704, "") \
  X(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, 705, \
    "a kernel or copy addressed another device's memory: cute.enable_peer_access(peer) first") \
  X(CUDA_ERROR_NOT_FOUND, 500, \
    "no such symbol: is the kernel an .entry (not .func) and is its name unmangled?") \
  X(CUDA_ERROR_NOT_READY, 600, "the work is still running") \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, 700, \
    "the kernel faulted: an out-of-bounds access? CUTE_TARGET=cpu or compute-sanitizer finds the " \
    "line; CUDA keeps this error for the life of the process: restart it (docs/FAULTS.md)") \
  X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701, \
    "too many registers or threads for this block size: use a smaller block, or see " \
    "fn:attributes().num_regs") \
  X(CUDA_ERROR_LAUNCH_TIMEOUT, 702, "the kernel ran too long (display watchdog)") \
  X(CUDA_ERROR_LAUNCH_FAILED, 719, \
    "the kernel faulted: an out-of-bounds access? run under compute-sanitizer; or it trapped " \
    "(cute.arch.trap); CUDA keeps this error for the life of the process: restart it " \
    "(docs/FAULTS.md)") \
  X(CUDA_ERROR_MISALIGNED_ADDRESS, 716, \
    "the kernel faulted on a misaligned access: check pointer/vector alignment; run under " \
    "compute-sanitizer") \
  X(CUDA_ERROR_ILLEGAL_INSTRUCTION, 715, "the kernel executed an illegal instruction") \
  X(CUDA_ERROR_HARDWARE_STACK_ERROR, 714, "stack overflow or corruption in the kernel") \
  X(CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, 720, "") \
  X(CUDA_ERROR_NOT_PERMITTED, 800, "") \
  X(CUDA_ERROR_NOT_SUPPORTED, 801, "the device or driver does not support this operation") \
  X(CUDA_ERROR_UNKNOWN, 999, "")

#endif
