/*
 * cute_cuda.h -- the CUDA driver runtime of cuteluajit: devices, contexts,
 * streams, events, memory, modules, kernel launch.
 *
 * libcuda.so.1 is opened with dlopen on first use (never linked); no CUDA
 * header is needed to build or use this API.  Without a driver every call
 * fails cleanly with CUTE_E_UNSUPPORTED and "no CUDA driver: dlopen(...)".
 *
 * Conventions (as in cute.h)
 *  - Fallible functions return 0 (CUTE_OK) or a CUTE_E_* code with a message
 *    in *err (err may be NULL).  Driver failures are CUTE_E_CUDA and the
 *    message reads "<call>: <CUDA_ERROR_NAME> (<code>): <driver text>
 *    [hint: ...]".  Nothing here exits, aborts or prints.
 *  - Handles (module, function, stream, event) are opaque void pointers owned
 *    by the caller, released with the matching destroy/unload/free call.
 *    A NULL stream is the legacy default stream.
 *  - Device addresses are uint64_t.
 *  - Every call that needs a context makes the calling thread's current
 *    device's primary context current (device 0 unless cute_cuda_set_device
 *    chose another in this thread).  Lazy initialisation is thread-safe.
 */
#ifndef CUTE_CUDA_H
#define CUTE_CUDA_H

#include "cute.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_cuda.h */
/* CUdevice_attribute values (for cute_cuda_device_attribute). */
enum {
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CUTE_CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY = 9,
  CUTE_CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
  CUTE_CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13,
  CUTE_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CUTE_CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
  CUTE_CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
  CUTE_CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
  CUTE_CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,
  CUTE_CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
  CUTE_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
  CUTE_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CUTE_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
  CUTE_CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
  CUTE_CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111,
  CUTE_CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH = 120
};

/* CUfunction_attribute values (cute_cuda_func_attribute / _set_attribute). */
enum {
  CUTE_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
  CUTE_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
  CUTE_CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
  CUTE_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
  CUTE_CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
  CUTE_CU_FUNC_ATTRIBUTE_PTX_VERSION = 5,
  CUTE_CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6,
  CUTE_CU_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7,
  CUTE_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
  CUTE_CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9,
  CUTE_CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
};

/* Flags: cuStreamCreate, cuEventCreate, cuMemHostAlloc. */
enum {
  CUTE_CU_STREAM_DEFAULT = 0,
  CUTE_CU_STREAM_NON_BLOCKING = 1,
  CUTE_CU_EVENT_DEFAULT = 0,
  CUTE_CU_EVENT_BLOCKING_SYNC = 1,
  CUTE_CU_EVENT_DISABLE_TIMING = 2,
  CUTE_CU_MEMHOSTALLOC_PORTABLE = 1,
  CUTE_CU_MEMHOSTALLOC_DEVICEMAP = 2,
  CUTE_CU_MEMHOSTALLOC_WRITECOMBINED = 4
};

/* Properties of one device (cute_cuda_device_props). */
typedef struct cute_cuda_device_info {
  char name[256];
  int ordinal;
  int cc_major, cc_minor;           /* compute capability                    */
  int sm_count;                     /* multiprocessors                        */
  int warp_size;
  int max_threads_per_block;
  int max_block_dim[3];
  int max_grid_dim[3];
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int regs_per_block, regs_per_sm;
  int smem_per_block;               /* default limit, bytes                   */
  int smem_per_block_optin;         /* with MAX_DYNAMIC_SHARED_SIZE raised    */
  int smem_per_sm;
  int smem_reserved_per_block;      /* used by the system per block           */
  int const_mem;
  int l2_size;                      /* bytes                                  */
  int clock_khz;                    /* SM clock (peak), kHz                   */
  int mem_clock_khz;
  int mem_bus_width;                /* bits                                   */
  int cluster_launch;               /* 1 if thread-block clusters are supported */
  int integrated;
  int pci_bus_id, pci_device_id;
  uint64_t total_mem;               /* bytes                                  */
} cute_cuda_device_info;

/* Attributes of one kernel (cute_cuda_func_attrs). */
typedef struct cute_cuda_func_info {
  int max_threads_per_block;        /* for this kernel (registers permitting) */
  int shared_size_bytes;            /* static shared memory                   */
  int const_size_bytes;
  int local_size_bytes;             /* per thread (spills, local arrays)      */
  int num_regs;                     /* per thread                             */
  int ptx_version;                  /* major*10+minor                         */
  int binary_version;               /* major*10+minor                         */
  int max_dynamic_shared_size_bytes;/* current opt-in limit                   */
} cute_cuda_func_info;

/* ---- driver, devices, contexts ---------------------------------------- */
/* 1 if the driver loads, initialises and has at least one device, else 0
   (the reason is left in *err, if given; nothing is raised). */
int cute_cuda_available(cute_err *err);
/* Load and initialise the driver now (otherwise done on first use). */
int cute_cuda_init(cute_err *err);
/* CUDA version of the driver, e.g. 13000 for 13.0. */
int cute_cuda_driver_version(int *out, cute_err *err);
int cute_cuda_device_count(int *out, cute_err *err);
int cute_cuda_device_props(int ordinal, cute_cuda_device_info *out, cute_err *err);
/* One CUdevice_attribute (CUTE_CU_DEVICE_ATTRIBUTE_* or any driver value). */
int cute_cuda_device_attribute(int ordinal, int attr, int *out, cute_err *err);
/* Retain the device's primary context (once per process) and make it current
   in the calling thread; later calls from this thread use that device. */
int cute_cuda_set_device(int ordinal, cute_err *err);
int cute_cuda_get_device(int *ordinal, cute_err *err);
/* Wait for all work of the current context (cuCtxSynchronize). */
int cute_cuda_synchronize(cute_err *err);
/* Free and total device memory of the current device, bytes. */
int cute_cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes, cute_err *err);
/* Name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"); from the driver when it is
   loaded, else from a built-in table; "CUDA_ERROR_<code>" if unknown. */
const char *cute_cuda_error_name(int cuda_result);
/* Fill *err as a failed driver call `call` returning cuda_result would
   (message with name, text and hint); returns CUTE_E_CUDA (CUTE_OK for 0). */
int cute_cuda_format_error(int cuda_result, const char *call, cute_err *err);

/* ---- streams and events ------------------------------------------------ */
int cute_cuda_stream_create(void **out, unsigned flags, cute_err *err);
int cute_cuda_stream_destroy(void *stream, cute_err *err);
/* A stream of the current device with a scheduling priority (cuStreamCreateWithPriority:
   a lower number is a higher priority; the driver clamps it into the range below). */
int cute_cuda_stream_create_priority(void **out, unsigned flags, int priority, cute_err *err);
/* The current device's stream priorities (cuCtxGetStreamPriorityRange): *least (e.g. 0,
   the default) and *greatest (e.g. -5, the most urgent). */
int cute_cuda_stream_priority_range(int *least, int *greatest, cute_err *err);
int cute_cuda_stream_synchronize(void *stream, cute_err *err);
/* *done = 1 if all work on the stream has completed, 0 if not yet. */
int cute_cuda_stream_query(void *stream, int *done, cute_err *err);
/* Make later work on `stream` wait for `event`. */
int cute_cuda_stream_wait_event(void *stream, void *event, cute_err *err);
int cute_cuda_event_create(void **out, unsigned flags, cute_err *err);
int cute_cuda_event_destroy(void *event, cute_err *err);
int cute_cuda_event_record(void *event, void *stream, cute_err *err);
int cute_cuda_event_synchronize(void *event, cute_err *err);
int cute_cuda_event_query(void *event, int *done, cute_err *err);
/* Milliseconds between two recorded, completed events. */
int cute_cuda_event_elapsed_ms(void *start, void *end, float *ms, cute_err *err);

/* ---- memory ------------------------------------------------------------- */
int cute_cuda_malloc(uint64_t *dptr, size_t bytes, cute_err *err);
/* Freeing 0 is a no-op. */
int cute_cuda_free(uint64_t dptr, cute_err *err);
/* Page-locked host memory (cuMemHostAlloc flags CUTE_CU_MEMHOSTALLOC_*). */
int cute_cuda_host_alloc(void **out, size_t bytes, unsigned flags, cute_err *err);
int cute_cuda_host_free(void *p, cute_err *err);
/* Set n 8/16/32-bit elements.  stream NULL and async 0: synchronous calls. */
int cute_cuda_memset_d8(uint64_t dptr, unsigned value, size_t n, void *stream, int async,
                        cute_err *err);
int cute_cuda_memset_d16(uint64_t dptr, unsigned value, size_t n, void *stream, int async,
                         cute_err *err);
int cute_cuda_memset_d32(uint64_t dptr, unsigned value, size_t n, void *stream, int async,
                         cute_err *err);
int cute_cuda_memcpy_htod(uint64_t dst, const void *src, size_t bytes, cute_err *err);
int cute_cuda_memcpy_dtoh(void *dst, uint64_t src, size_t bytes, cute_err *err);
int cute_cuda_memcpy_dtod(uint64_t dst, uint64_t src, size_t bytes, cute_err *err);
/* Asynchronous on `stream` (host memory should be pinned to overlap). */
int cute_cuda_memcpy_htod_async(uint64_t dst, const void *src, size_t bytes, void *stream,
                                cute_err *err);
int cute_cuda_memcpy_dtoh_async(void *dst, uint64_t src, size_t bytes, void *stream,
                                cute_err *err);
int cute_cuda_memcpy_dtod_async(uint64_t dst, uint64_t src, size_t bytes, void *stream,
                                cute_err *err);

/* ---- several devices (src/cuda_peer.c; docs/MULTIGPU.md) ----------------- */
/* *out = 1 if kernels and copies on device `dev` can address `peer`'s memory
   (1 for dev == peer). */
int cute_cuda_can_access_peer(int dev, int peer, int *out, cute_err *err);
/* Let device dev's primary context address peer's memory (cuCtxEnablePeerAccess;
   already enabled is success).  The calling thread's current device is kept. */
int cute_cuda_enable_peer_access(int dev, int peer, cute_err *err);
/* Copy bytes from src (memory of device src_dev) to dst (of dst_dev) on
   stream (NULL: the default stream), through both primary contexts. */
int cute_cuda_memcpy_peer_async(uint64_t dst, int dst_dev, uint64_t src, int src_dev, size_t bytes,
                                void *stream, cute_err *err);
/* The ordinal of the device whose memory ptr is (cuPointerGetAttribute); -1
   for pinned host and managed memory, which every device addresses. */
int cute_cuda_pointer_device(uint64_t ptr, int *ordinal, cute_err *err);
/* CUDA IPC: the 64-byte handle of the allocation starting at ptr; opening a
   handle from another process in the current device's context (peer access
   enabled lazily), and closing it.  CUTE_E_UNSUPPORTED on drivers without IPC. */
int cute_cuda_ipc_get_handle(uint64_t ptr, void *handle64, cute_err *err);
int cute_cuda_ipc_open_handle(const void *handle64, uint64_t *ptr, cute_err *err);
int cute_cuda_ipc_close_handle(uint64_t ptr, cute_err *err);

/* ---- modules and kernels ----------------------------------------------- */
/* Load a cubin (ELF) or PTX image.  is_ptx: 1 PTX, 0 cubin, -1 detect (ELF
   magic means cubin).  size: image bytes (PTX need not be NUL-terminated
   within size; it is copied when it is not).  The driver JIT's error log is
   appended to the error message; its info log goes to info_log (may be NULL,
   info_cap bytes, NUL-terminated). */
int cute_cuda_module_load(const void *image, size_t size, int is_ptx, void **module,
                          char *info_log, size_t info_cap, cute_err *err);
int cute_cuda_module_unload(void *module, cute_err *err);
int cute_cuda_module_get_function(void *module, const char *name, void **fn, cute_err *err);
int cute_cuda_func_attribute(void *fn, int attr, int *out, cute_err *err);
int cute_cuda_func_attrs(void *fn, cute_cuda_func_info *out, cute_err *err);
int cute_cuda_func_set_attribute(void *fn, int attr, int value, cute_err *err);
/* Raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (needed above 48 KiB);
   the message names the device's opt-in limit when bytes exceeds it. */
int cute_cuda_func_set_max_dynamic_smem(void *fn, int bytes, cute_err *err);
/* Resident blocks per SM for a block size and dynamic shared memory. */
int cute_cuda_occupancy_max_active_blocks(void *fn, int block_size, size_t dynamic_smem,
                                          int *out, cute_err *err);
/* Block size with the best occupancy (block_limit 0: no limit) and the grid
   size that fills the device with it. */
int cute_cuda_occupancy_max_potential_block_size(void *fn, size_t dynamic_smem,
                                                 int block_limit, int *min_grid,
                                                 int *block_size, cute_err *err);

/* ---- launch -------------------------------------------------------------- */
/* cuLaunchKernel through a cached pointer: no allocation, scalars and
   pointers only (the LuaJIT-compiled fast path).  params: one pointer per
   kernel parameter, pointing at its value. */
int cute_cuda_launch(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                     unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                     cute_err *err);
/* With thread-block cluster dimensions (cuLaunchKernelEx and
   CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION); CUTE_E_UNSUPPORTED where the
   device or driver has no clusters.  cx=cy=cz=1 is a plain launch. */
int cute_cuda_launch_cluster(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned cx, unsigned cy, unsigned cz,
                             unsigned smem, void *stream, void **params, cute_err *err);
/* Benchmarks: n back-to-back launches of fn then a stream synchronize; the
   raw variant calls cuLaunchKernel directly (the baseline), the other goes
   through cute_cuda_launch.  elapsed_us: wall time of launches + sync;
   enqueue_us (may be NULL): of the launches alone. */
int cute_cuda_bench_raw_launch(void *fn, int n, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned smem,
                               void *stream, void **params, double *elapsed_us,
                               double *enqueue_us, cute_err *err);
int cute_cuda_bench_launch(void *fn, int n, unsigned gx, unsigned gy, unsigned gz,
                           unsigned bx, unsigned by, unsigned bz, unsigned smem,
                           void *stream, void **params, double *elapsed_us,
                           double *enqueue_us, cute_err *err);
/* Monotonic clock in microseconds (for benchmarks written in Lua). */
double cute_cuda_now_us(void);
/* Wait for the driver-JIT warm-up thread that the first context starts
   (no-op otherwise; idempotent).  Must run before exit() while it may be under
   way: lua_close of a state that loaded cute does it, and so do os.exit and
   cuteluajit; a C host that calls exit() without lua_close calls it first. */
void cute_cuda_warmup_wait(void);

/* ---- TMA tensor maps (sm_90) -------------------------------------------- */
/* The arguments of cuTensorMapEncodeTiled, dimension 0 innermost.  Enum
   values are the driver's: dtype CU_TENSOR_MAP_DATA_TYPE_* (UINT8 = 0 ..
   TFLOAT32_FTZ = 12), interleave NONE/16B/32B = 0/1/2, swizzle
   NONE/32B/64B/128B = 0..3, l2_promotion NONE/64B/128B/256B = 0..3,
   oob_fill NONE (zeros) / NAN_REQUEST_ZERO_FMA = 0/1.  global_strides[i] is
   the byte stride of dimension i + 1. */
typedef struct cute_tensor_map_args {
  int dtype;
  int rank;
  uint64_t global_address;
  uint64_t global_dim[5];
  uint64_t global_strides[4];
  uint32_t box_dim[5];
  uint32_t element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
} cute_tensor_map_args;
/* Bytes per element of a CU_TENSOR_MAP_DATA_TYPE_* value (0: unknown). */
int cute_tensor_map_elem_bytes(int dtype);
/* The checks the driver documents for cuTensorMapEncodeTiled, without a
   driver: 0, or CUTE_E_ARG with a message naming the argument and value. */
int cute_tensor_map_check(const cute_tensor_map_args *a, cute_err *err);
/* Check, then encode into map (128 bytes, 64-byte aligned) through the
   driver's cuTensorMapEncodeTiled (CUTE_E_UNSUPPORTED when it has none). */
int cute_tensor_map_encode_tiled(void *map, const cute_tensor_map_args *a, cute_err *err);
/* cuTensorMapEncodeIm2col: a's box_dim is unused; lower/upper: rank - 2
   corners each; channels_per_pixel: 1..256, pixels_per_column: 1..1024 (the Lua side caps both at 256: one TMA box). */
int cute_tensor_map_encode_im2col(void *map, const cute_tensor_map_args *a, const int *lower,
                                  const int *upper, uint32_t channels_per_pixel,
                                  uint32_t pixels_per_column, cute_err *err);
/* ---- faults and recovery (src/cuda_fault.c, docs/FAULTS.md) ------------- */
/* Reset device `ordinal`'s primary context after a sticky fault
   (cuDevicePrimaryCtxReset, then release and retain it anew): every module,
   stream, event and allocation of it is gone; the calling thread's current
   device is made current again. */
int cute_cuda_device_reset(int ordinal, cute_err *err);
/* The device address and size of module global `name` (cuModuleGetGlobal). */
int cute_cuda_module_global(void *module, const char *name, uint64_t *dptr, size_t *bytes,
                            cute_err *err);
/* Write `bytes` from src into module global `name` (a cuMemcpyHtoD). */
int cute_cuda_module_global_set(void *module, const char *name, const void *src, size_t bytes,
                                cute_err *err);
/* The device address of mapped page-locked host memory (cuMemHostGetDevicePointer). */
int cute_cuda_host_device_pointer(void *host, uint64_t *dptr, cute_err *err);
/* The fault record a kernel's failing cute.assert_ writes before it traps
   (mapped page-locked host memory; state: 0 empty, 1 being written, 2 written). */
typedef struct cute_fault_record {
  int32_t state, ref, line, pad;
  uint32_t tid[3], ctaid[3];
} cute_fault_record;
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
