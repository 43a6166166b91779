/*
 * cuda.c -- the CUDA driver API, opened with dlopen("libcuda.so.1") on first
 * use.  The entry points come from the table in cudadef.h; every failed
 * driver call becomes a cute_err naming the call, the CUDA error and, for the
 * common ones, what to do about it.
 *
 * Contexts: each device's primary context is retained once per process; a
 * thread makes it current on its first call (device 0 unless
 * cute_cuda_set_device chose another).  The launch path is a cached function
 * pointer and one predictable branch.
 */
#include "core.h"
#include "cute_cuda.h"
#include "cudadef.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { CU_ERR_INVALID_VALUE = 1, CU_ERR_INVALID_CONTEXT = 201, CU_ERR_NO_BINARY = 209,
       CU_ERR_NOT_READY = 600 };
enum { MAX_DEVICES = 64 };

static struct cute_cu_table cu;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_status = CUTE_E_STATE;  /* result of the one-time init */
static char g_msg[sizeof(((cute_err *)0)->msg)];
static atomic_int g_ready;           /* 1 once the driver is up: the launch fast path */
static atomic_int g_names;           /* 1 once cuGetErrorName/String are resolved */

static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext g_primary[MAX_DEVICES];
static int g_cluster[MAX_DEVICES];   /* CLUSTER_LAUNCH attribute + 1 (0: not queried) */

static __thread CUcontext t_ctx;     /* primary context made current in this thread */
static __thread int t_dev;           /* its ordinal */

/* ---- errors --------------------------------------------------------------- */


static const char *table_name(int r) {
  switch (r) {
#define ERR_NAME(name, value, hint) case value: return #name;
    CUTE_CUDA_ERRORS(ERR_NAME)
#undef ERR_NAME
  default: return NULL;
  }
}

static const char *table_hint(int r) {
  switch (r) {
#define ERR_HINT(name, value, hint) case value: return hint;
    CUTE_CUDA_ERRORS(ERR_HINT)
#undef ERR_HINT
  default: return "";
  }
}

const char *cute_cuda_error_name(int r) {
  const char *name = NULL;
  if (atomic_load_explicit(&g_names, memory_order_acquire) && cu.GetErrorName(r, &name) == 0 &&
      name)
    return name;
  name = table_name(r);
  if (name) return name;
  static __thread char buf[32];
  snprintf(buf, sizeof buf, "CUDA_ERROR_%d", r);
  return buf;
}

static const char *error_text(int r) {
  const char *s = NULL;
  if (atomic_load_explicit(&g_names, memory_order_acquire) && cu.GetErrorString(r, &s) == 0 &&
      s)
    return s;
  return "";
}

/* Hint for result r of `call`: call-specific first, then the table. */
static const char *pick_hint(int r, const char *call) {
  if (r == CU_ERR_INVALID_VALUE && strncmp(call, "cuLaunchKernel", 14) == 0)
    return "check grid/block dims and shared memory: at most 1024 threads per block and "
           "the kernel's max_threads_per_block, grid y/z at most 65535, dynamic shared "
           "memory above 48 KiB needs set_max_dynamic_smem first";
  if (r == CU_ERR_INVALID_VALUE && strncmp(call, "cuFuncSetAttribute", 18) == 0)
    return "the value is above the device limit (for shared memory: the opt-in limit "
           "minus the kernel's static shared memory)";
  return table_hint(r);
}

/* Message "<call>: NAME (r): text[; <extra>][\n  hint: ...]" into err.
   `extra` (may be NULL) is inserted before the hint, e.g. a JIT log. */
static int cuda_fail_ex(CUresult r, cute_err *err, const char *extra, const char *call) {
  if (!err) return CUTE_E_CUDA;
  const char *hint = pick_hint(r, call);
  char hint_buf[400];
  if (r == CU_ERR_NO_BINARY && t_ctx) {
    int maj = 0, min = 0;
    CUdevice d;
    if (cu.DeviceGet(&d, t_dev) == 0 &&
        cu.DeviceGetAttribute(&maj, CUTE_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) == 0 &&
        cu.DeviceGetAttribute(&min, CUTE_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) == 0) {
      snprintf(hint_buf, sizeof hint_buf, "%s; this device is sm_%d%d", hint, maj, min);
      hint = hint_buf;
    }
  }
  const char *text = error_text(r);
  char head[512];
  snprintf(head, sizeof head, "%s: %s (%d)%s%s", call, cute_cuda_error_name(r), r,
           *text ? ": " : "", text);
  char tail[sizeof hint_buf + 16] = "";
  if (*hint) snprintf(tail, sizeof tail, "\n  hint: %s", hint);
  size_t cap = sizeof err->msg, used = strlen(head) + strlen(tail);
  int room = used + 1 < cap ? (int)(cap - used - 1) : 0;
  const char *ell = "";
  if (extra && (int)strlen(extra) > room) {
    room = room > 4 ? room - 4 : 0;
    ell = " ...";
  }
  err->code = CUTE_E_CUDA;
  snprintf(err->msg, cap, "%s%.*s%s%s", head, extra ? room : 0, extra ? extra : "", ell, tail);
  return CUTE_E_CUDA;
}

static int cuda_fail(CUresult r, cute_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cuda_fail(CUresult r, cute_err *err, const char *fmt, ...) {
  char call[300];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(call, sizeof call, fmt, ap);
  va_end(ap);
  return cuda_fail_ex(r, err, NULL, call);
}

int cute_cuda_format_error(int r, const char *call, cute_err *err) {
  if (r == 0) return CUTE_OK;
  return cuda_fail_ex(r, err, NULL, call ? call : "cuda");
}

/* ---- init and contexts ------------------------------------------------------ */

static void do_init(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    g_status = CUTE_E_UNSUPPORTED;
    snprintf(g_msg, sizeof g_msg, "no CUDA driver: dlopen(libcuda.so.1) failed: %s",
             e ? e : "unknown error");
    return;
  }
  void *p;
#define CU_RESOLVE(field, sym, alt, req, params)                                     \
  p = dlsym(lib, #sym);                                                               \
  if (!p && strcmp(#sym, #alt) != 0) p = dlsym(lib, #alt);                            \
  if (!p && (req)) {                                                                  \
    g_status = CUTE_E_UNSUPPORTED;                                                    \
    snprintf(g_msg, sizeof g_msg,                                                     \
             "CUDA driver too old: libcuda.so.1 has no %s; update the NVIDIA driver", \
             #sym);                                                                   \
    memset(&cu, 0, sizeof cu);                                                        \
    return;                                                                           \
  }                                                                                   \
  memcpy(&cu.field, &p, sizeof p);
  CUTE_CUDA_FUNCS(CU_RESOLVE)
#undef CU_RESOLVE
  atomic_store_explicit(&g_names, 1, memory_order_release);
  CUresult r = cu.Init(0);
  if (r != 0) {
    cute_err e;
    cuda_fail(r, &e, "cuInit(0)");
    g_status = CUTE_E_CUDA;
    memcpy(g_msg, e.msg, sizeof g_msg);
    return;
  }
  g_status = CUTE_OK;
  atomic_store_explicit(&g_ready, 1, memory_order_release);
}

static int ensure_driver(cute_err *err) {
  pthread_once(&g_once, do_init);
  if (g_status == CUTE_OK) return CUTE_OK;
  if (err) {
    err->code = g_status;
    memcpy(err->msg, g_msg, sizeof err->msg);
  }
  return g_status;
}

static int device_count(int *n, cute_err *err) {
  CUresult r = cu.DeviceGetCount(n);
  return r ? cuda_fail(r, err, "cuDeviceGetCount") : CUTE_OK;
}

static int check_ordinal(const char *fn, int ordinal, CUdevice *dev, cute_err *err) {
  int n = 0, s = device_count(&n, err);
  if (s) return s;
  if (ordinal < 0 || ordinal >= n || ordinal >= MAX_DEVICES)
    return cute_err_setf(err, CUTE_E_ARG, "%s: device %d does not exist (%d device%s)", fn,
                   ordinal, n, n == 1 ? "" : "s");
  CUresult r = cu.DeviceGet(dev, ordinal);
  return r ? cuda_fail(r, err, "cuDeviceGet(%d)", ordinal) : CUTE_OK;
}

/* ---- compiler warm-up when a context first appears ------------------------
 * A process that opens a GPU context is about to compile kernels: load and
 * exercise the driver's PTX JIT (its first use in a process costs ~8 ms) on a
 * background thread.  (The code generator's warm-up is started by the kernel
 * layer, cute.kernel: the driver layer does not reach into the compiler.)
 * CUTE_NO_WARMUP=1 turns it off.  The thread is joined at exit, before the
 * driver is torn down. */

static pthread_t g_warm_thread;
static int g_warm_started, g_warm_running;
static CUcontext g_warm_ctx;
static char g_warm_ptx[512];

static void *jit_warm_main(void *arg) {
  (void)arg;
  if (cu.CtxSetCurrent(g_warm_ctx) != 0) return NULL;
  CUmodule m = NULL;
  if (cu.ModuleLoadDataEx(&m, g_warm_ptx, 0, NULL, NULL) == 0 && m) cu.ModuleUnload(m);
  return NULL;
}

/* Join the JIT warm-up (idempotent; 1 started, 2 joined).  Like the LLVM
   warm-up (src/warmup.c) it must not run into exit(): lua_close, os.exit and
   cuteluajit's main join it first (cute_cuda_warmup_wait); the atexit handler
   is the last resort. */
static pthread_mutex_t g_warm_lock = PTHREAD_MUTEX_INITIALIZER;
void cute_cuda_warmup_wait(void) {
  pthread_mutex_lock(&g_warm_lock);
  if (g_warm_started == 1 && g_warm_running) {
    g_warm_running = 0;
    pthread_join(g_warm_thread, NULL);
  }
  pthread_mutex_unlock(&g_warm_lock);
}
static void warm_join(void) { cute_cuda_warmup_wait(); }

static void start_warmup(CUcontext ctx, CUdevice dev) {
  if (g_warm_started || getenv("CUTE_NO_WARMUP")) return;
  g_warm_started = 1;
  int major = 0, minor = 0;
  if (cu.DeviceGetAttribute(&major, CUTE_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != 0 ||
      cu.DeviceGetAttribute(&minor, CUTE_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != 0)
    return;
  /* the oldest PTX ISA that knows the device's target (sm_89/sm_90: 7.8,
     sm_100/sm_120: 8.7), else the driver refuses the module and nothing warms */
  int cc = major * 10 + minor;
  int v = cc >= 100 ? 87 : cc >= 89 ? 78 : cc >= 87 ? 74 : cc >= 86 ? 71 : 70;
  snprintf(g_warm_ptx, sizeof g_warm_ptx,
           ".version %d.%d\n.target sm_%d%d\n.address_size 64\n"
           ".visible .entry cute_jit_warmup(.param .u64 p)\n{\n  ret;\n}\n", v / 10, v % 10, major, minor);
  g_warm_ctx = ctx;
  pthread_mutex_lock(&g_warm_lock);
  if (pthread_create(&g_warm_thread, NULL, jit_warm_main, NULL) == 0) {
    g_warm_running = 1;
    atexit(warm_join);
  }
  pthread_mutex_unlock(&g_warm_lock);
}

static int set_device(int ordinal, cute_err *err) {
  CUdevice dev;
  int s = check_ordinal("cute_cuda_set_device", ordinal, &dev, err);
  if (s) return s;
  CUresult r = 0;
  pthread_mutex_lock(&g_ctx_lock);
  CUcontext ctx = g_primary[ordinal];
  if (!ctx) {
    r = cu.DevicePrimaryCtxRetain(&ctx, dev);
    if (r == 0) {
      g_primary[ordinal] = ctx;
      int v = 0;
      if (cu.DeviceGetAttribute(&v, CUTE_CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, dev) != 0) v = 0;
      g_cluster[ordinal] = v + 1;
      start_warmup(ctx, dev);
    }
  }
  pthread_mutex_unlock(&g_ctx_lock);
  if (r) return cuda_fail(r, err, "cuDevicePrimaryCtxRetain(device %d)", ordinal);
  r = cu.CtxSetCurrent(ctx);
  if (r) return cuda_fail(r, err, "cuCtxSetCurrent(device %d)", ordinal);
  t_ctx = ctx;
  t_dev = ordinal;
  return CUTE_OK;
}

/* cuda_fault.c, after cuDevicePrimaryCtxReset + Release: the next use retains it anew. */
void cute_cuda_forget_ctx_(int ordinal) {
  pthread_mutex_lock(&g_ctx_lock), g_primary[ordinal] = NULL, pthread_mutex_unlock(&g_ctx_lock);
  if (t_dev == ordinal) t_ctx = NULL;
}

/* Driver up and a context current in this thread. */
static int ensure_ctx(cute_err *err) {
  int s = ensure_driver(err);
  if (s) return s;
  if (__builtin_expect(t_ctx != NULL, 1)) return CUTE_OK;
  return set_device(t_dev, err);
}

int cute_cuda_init(cute_err *err) { return ensure_driver(err); }

/* For cuda_peer.c: the driver table once the driver is up, and a device's
   primary context (retained as cute_cuda_set_device does; not made current). */
int cute_cuda_table_(const struct cute_cu_table **out, cute_err *err) {
  int s = ensure_driver(err);
  if (!s) *out = &cu;
  return s;
}
int cute_cuda_primary_ctx_(int ordinal, CUcontext *out, cute_err *err) {
  int s = ensure_ctx(err), prev = t_dev;
  if (!s && ordinal != prev) s = set_device(ordinal, err);
  if (!s) *out = g_primary[ordinal];
  if (!s && ordinal != prev) s = set_device(prev, err);
  return s;
}

/* The driver's tensor-map encoders for cuda_tma.c (NULL where the driver has none). */
int cute_cuda_tma_fns_(void **tiled, void **im2col, cute_err *err) {
  int s = ensure_driver(err);
  if (s) return s;
  memcpy(tiled, &cu.TensorMapEncodeTiled, sizeof *tiled);
  memcpy(im2col, &cu.TensorMapEncodeIm2col, sizeof *im2col);
  return CUTE_OK;
}

int cute_cuda_available(cute_err *err) {
  if (ensure_driver(err)) return 0;
  int n = 0;
  if (device_count(&n, err)) return 0;
  if (n <= 0) {
    cute_err_setf(err, CUTE_E_UNSUPPORTED, "CUDA driver loaded but it sees no device");
    return 0;
  }
  return 1;
}

int cute_cuda_driver_version(int *out, cute_err *err) {
  int s = ensure_driver(err);
  if (s) return s;
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_driver_version: out is NULL");
  CUresult r = cu.DriverGetVersion(out);
  return r ? cuda_fail(r, err, "cuDriverGetVersion") : CUTE_OK;
}

int cute_cuda_device_count(int *out, cute_err *err) {
  int s = ensure_driver(err);
  if (s) return s;
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_device_count: out is NULL");
  return device_count(out, err);
}

int cute_cuda_device_attribute(int ordinal, int attr, int *out, cute_err *err) {
  int s = ensure_driver(err);
  if (s) return s;
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_device_attribute: out is NULL");
  CUdevice dev;
  if ((s = check_ordinal("cute_cuda_device_attribute", ordinal, &dev, err))) return s;
  CUresult r = cu.DeviceGetAttribute(out, attr, dev);
  return r ? cuda_fail(r, err, "cuDeviceGetAttribute(attribute %d, device %d)", attr, ordinal)
           : CUTE_OK;
}

int cute_cuda_device_props(int ordinal, cute_cuda_device_info *out, cute_err *err) {
  int s = ensure_driver(err);
  if (s) return s;
  if (!out) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_device_props: out is NULL");
  CUdevice dev;
  if ((s = check_ordinal("cute_cuda_device_props", ordinal, &dev, err))) return s;
  memset(out, 0, sizeof *out);
  out->ordinal = ordinal;
  CUresult r = cu.DeviceGetName(out->name, (int)sizeof out->name - 1, dev);
  if (r) return cuda_fail(r, err, "cuDeviceGetName(device %d)", ordinal);
  size_t total = 0;
  r = cu.DeviceTotalMem(&total, dev);
  if (r) return cuda_fail(r, err, "cuDeviceTotalMem(device %d)", ordinal);
  out->total_mem = total;
  static const struct { int attr; size_t off; } attrs[] = {
#define A(name, field) {CUTE_CU_DEVICE_ATTRIBUTE_##name, offsetof(cute_cuda_device_info, field)}
    A(COMPUTE_CAPABILITY_MAJOR, cc_major), A(COMPUTE_CAPABILITY_MINOR, cc_minor),
    A(MULTIPROCESSOR_COUNT, sm_count), A(WARP_SIZE, warp_size),
    A(MAX_THREADS_PER_BLOCK, max_threads_per_block),
    A(MAX_BLOCK_DIM_X, max_block_dim[0]), A(MAX_BLOCK_DIM_Y, max_block_dim[1]),
    A(MAX_BLOCK_DIM_Z, max_block_dim[2]), A(MAX_GRID_DIM_X, max_grid_dim[0]),
    A(MAX_GRID_DIM_Y, max_grid_dim[1]), A(MAX_GRID_DIM_Z, max_grid_dim[2]),
    A(MAX_THREADS_PER_MULTIPROCESSOR, max_threads_per_sm),
    A(MAX_BLOCKS_PER_MULTIPROCESSOR, max_blocks_per_sm),
    A(MAX_REGISTERS_PER_BLOCK, regs_per_block), A(MAX_REGISTERS_PER_MULTIPROCESSOR, regs_per_sm),
    A(MAX_SHARED_MEMORY_PER_BLOCK, smem_per_block),
    A(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, smem_per_block_optin),
    A(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, smem_per_sm),
    A(RESERVED_SHARED_MEMORY_PER_BLOCK, smem_reserved_per_block),
    A(TOTAL_CONSTANT_MEMORY, const_mem), A(L2_CACHE_SIZE, l2_size),
    A(CLOCK_RATE, clock_khz), A(MEMORY_CLOCK_RATE, mem_clock_khz),
    A(GLOBAL_MEMORY_BUS_WIDTH, mem_bus_width), A(CLUSTER_LAUNCH, cluster_launch),
    A(INTEGRATED, integrated), A(PCI_BUS_ID, pci_bus_id), A(PCI_DEVICE_ID, pci_device_id),
#undef A
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    r = cu.DeviceGetAttribute(&v, attrs[i].attr, dev);
    /* Attributes newer than the driver read as 0 rather than failing. */
    if (r == CU_ERR_INVALID_VALUE) v = 0;
    else if (r)
      return cuda_fail(r, err, "cuDeviceGetAttribute(attribute %d, device %d)", attrs[i].attr,
                       ordinal);
    memcpy((char *)out + attrs[i].off, &v, sizeof v);
  }
  return CUTE_OK;
}

int cute_cuda_set_device(int ordinal, cute_err *err) {
  int s = ensure_driver(err);
  return s ? s : set_device(ordinal, err);
}

int cute_cuda_get_device(int *ordinal, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  if (!ordinal) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_get_device: out is NULL");
  *ordinal = t_dev;
  return CUTE_OK;
}

int cute_cuda_synchronize(cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.CtxSynchronize();
  return r ? cuda_fail(r, err, "cuCtxSynchronize") : CUTE_OK;
}

int cute_cuda_mem_info(uint64_t *free_bytes, uint64_t *total_bytes, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  size_t f = 0, t = 0;
  CUresult r = cu.MemGetInfo(&f, &t);
  if (r) return cuda_fail(r, err, "cuMemGetInfo");
  if (free_bytes) *free_bytes = f;
  if (total_bytes) *total_bytes = t;
  return CUTE_OK;
}

/* ---- streams and events --------------------------------------------------------- */

#define NEED(cond, fn, what) \
  if (!(cond)) return cute_err_setf(err, CUTE_E_ARG, "%s: %s", fn, what)

int cute_cuda_stream_create(void **out, unsigned flags, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(out, "cute_cuda_stream_create", "out is NULL");
  CUstream st = NULL;
  CUresult r = cu.StreamCreate(&st, flags);
  if (r) return cuda_fail(r, err, "cuStreamCreate(flags %u)", flags);
  *out = st;
  return CUTE_OK;
}

int cute_cuda_stream_destroy(void *stream, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(stream, "cute_cuda_stream_destroy", "cannot destroy the default (NULL) stream");
  CUresult r = cu.StreamDestroy(stream);
  return r ? cuda_fail(r, err, "cuStreamDestroy") : CUTE_OK;
}

int cute_cuda_stream_synchronize(void *stream, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.StreamSynchronize(stream);
  return r ? cuda_fail(r, err, "cuStreamSynchronize") : CUTE_OK;
}

int cute_cuda_stream_query(void *stream, int *done, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(done, "cute_cuda_stream_query", "out is NULL");
  CUresult r = cu.StreamQuery(stream);
  if (r && r != CU_ERR_NOT_READY) return cuda_fail(r, err, "cuStreamQuery");
  *done = r == 0;
  return CUTE_OK;
}

int cute_cuda_stream_wait_event(void *stream, void *event, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(event, "cute_cuda_stream_wait_event", "event is NULL");
  CUresult r = cu.StreamWaitEvent(stream, event, 0);
  return r ? cuda_fail(r, err, "cuStreamWaitEvent") : CUTE_OK;
}

int cute_cuda_event_create(void **out, unsigned flags, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(out, "cute_cuda_event_create", "out is NULL");
  CUevent ev = NULL;
  CUresult r = cu.EventCreate(&ev, flags);
  if (r) return cuda_fail(r, err, "cuEventCreate(flags %u)", flags);
  *out = ev;
  return CUTE_OK;
}

int cute_cuda_event_destroy(void *event, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(event, "cute_cuda_event_destroy", "event is NULL");
  CUresult r = cu.EventDestroy(event);
  return r ? cuda_fail(r, err, "cuEventDestroy") : CUTE_OK;
}

int cute_cuda_event_record(void *event, void *stream, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(event, "cute_cuda_event_record", "event is NULL");
  CUresult r = cu.EventRecord(event, stream);
  return r ? cuda_fail(r, err, "cuEventRecord") : CUTE_OK;
}

int cute_cuda_event_synchronize(void *event, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(event, "cute_cuda_event_synchronize", "event is NULL");
  CUresult r = cu.EventSynchronize(event);
  return r ? cuda_fail(r, err, "cuEventSynchronize") : CUTE_OK;
}

int cute_cuda_event_query(void *event, int *done, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(event && done, "cute_cuda_event_query", "event or out is NULL");
  CUresult r = cu.EventQuery(event);
  if (r && r != CU_ERR_NOT_READY) return cuda_fail(r, err, "cuEventQuery");
  *done = r == 0;
  return CUTE_OK;
}

int cute_cuda_event_elapsed_ms(void *start, void *end, float *ms, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(start && end && ms, "cute_cuda_event_elapsed_ms", "an event or out is NULL");
  CUresult r = cu.EventElapsedTime(ms, start, end);
  return r ? cuda_fail(r, err, "cuEventElapsedTime") : CUTE_OK;
}

/* ---- memory ----------------------------------------------------------------------- */

int cute_cuda_malloc(uint64_t *dptr, size_t bytes, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(dptr, "cute_cuda_malloc", "out is NULL");
  NEED(bytes > 0, "cute_cuda_malloc", "cannot allocate 0 bytes");
  CUdeviceptr p = 0;
  CUresult r = cu.MemAlloc(&p, bytes);
  if (r) return cuda_fail(r, err, "cuMemAlloc(%zu bytes)", bytes);
  *dptr = p;
  return CUTE_OK;
}

int cute_cuda_free(uint64_t dptr, cute_err *err) {
  if (!dptr) return CUTE_OK;
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.MemFree(dptr);
  return r ? cuda_fail(r, err, "cuMemFree(0x%llx)", (unsigned long long)dptr) : CUTE_OK;
}

int cute_cuda_host_alloc(void **out, size_t bytes, unsigned flags, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(out, "cute_cuda_host_alloc", "out is NULL");
  NEED(bytes > 0, "cute_cuda_host_alloc", "cannot allocate 0 bytes");
  void *p = NULL;
  CUresult r = cu.MemHostAlloc(&p, bytes, flags);
  if (r) return cuda_fail(r, err, "cuMemHostAlloc(%zu bytes, flags %u)", bytes, flags);
  *out = p;
  return CUTE_OK;
}

int cute_cuda_host_free(void *p, cute_err *err) {
  if (!p) return CUTE_OK;
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.MemFreeHost(p);
  return r ? cuda_fail(r, err, "cuMemFreeHost(%p)", p) : CUTE_OK;
}

int cute_cuda_memset_d8(uint64_t dptr, unsigned value, size_t n, void *stream, int async,
                        cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = async ? cu.MemsetD8Async(dptr, (unsigned char)value, n, stream)
                     : cu.MemsetD8(dptr, (unsigned char)value, n);
  return r ? cuda_fail(r, err, "cuMemsetD8%s(0x%llx, %u, %zu)", async ? "Async" : "",
                       (unsigned long long)dptr, value, n)
           : CUTE_OK;
}

int cute_cuda_memset_d16(uint64_t dptr, unsigned value, size_t n, void *stream, int async,
                         cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = async ? cu.MemsetD16Async(dptr, (unsigned short)value, n, stream)
                     : cu.MemsetD16(dptr, (unsigned short)value, n);
  return r ? cuda_fail(r, err, "cuMemsetD16%s(0x%llx, %u, %zu)", async ? "Async" : "",
                       (unsigned long long)dptr, value, n)
           : CUTE_OK;
}

int cute_cuda_memset_d32(uint64_t dptr, unsigned value, size_t n, void *stream, int async,
                         cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = async ? cu.MemsetD32Async(dptr, value, n, stream) : cu.MemsetD32(dptr, value, n);
  return r ? cuda_fail(r, err, "cuMemsetD32%s(0x%llx, %u, %zu)", async ? "Async" : "",
                       (unsigned long long)dptr, value, n)
           : CUTE_OK;
}

int cute_cuda_memcpy_htod(uint64_t dst, const void *src, size_t bytes, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(src || !bytes, "cute_cuda_memcpy_htod", "source is NULL");
  CUresult r = cu.MemcpyHtoD(dst, src, bytes);
  return r ? cuda_fail(r, err, "cuMemcpyHtoD(0x%llx, %p, %zu bytes)", (unsigned long long)dst,
                       src, bytes)
           : CUTE_OK;
}

int cute_cuda_memcpy_dtoh(void *dst, uint64_t src, size_t bytes, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(dst || !bytes, "cute_cuda_memcpy_dtoh", "destination is NULL");
  CUresult r = cu.MemcpyDtoH(dst, src, bytes);
  return r ? cuda_fail(r, err, "cuMemcpyDtoH(%p, 0x%llx, %zu bytes)", dst,
                       (unsigned long long)src, bytes)
           : CUTE_OK;
}

int cute_cuda_memcpy_dtod(uint64_t dst, uint64_t src, size_t bytes, cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.MemcpyDtoD(dst, src, bytes);
  return r ? cuda_fail(r, err, "cuMemcpyDtoD(0x%llx, 0x%llx, %zu bytes)",
                       (unsigned long long)dst, (unsigned long long)src, bytes)
           : CUTE_OK;
}

int cute_cuda_memcpy_htod_async(uint64_t dst, const void *src, size_t bytes, void *stream,
                                cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(src || !bytes, "cute_cuda_memcpy_htod_async", "source is NULL");
  CUresult r = cu.MemcpyHtoDAsync(dst, src, bytes, stream);
  return r ? cuda_fail(r, err, "cuMemcpyHtoDAsync(0x%llx, %p, %zu bytes)",
                       (unsigned long long)dst, src, bytes)
           : CUTE_OK;
}

int cute_cuda_memcpy_dtoh_async(void *dst, uint64_t src, size_t bytes, void *stream,
                                cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  NEED(dst || !bytes, "cute_cuda_memcpy_dtoh_async", "destination is NULL");
  CUresult r = cu.MemcpyDtoHAsync(dst, src, bytes, stream);
  return r ? cuda_fail(r, err, "cuMemcpyDtoHAsync(%p, 0x%llx, %zu bytes)", dst,
                       (unsigned long long)src, bytes)
           : CUTE_OK;
}

int cute_cuda_memcpy_dtod_async(uint64_t dst, uint64_t src, size_t bytes, void *stream,
                                cute_err *err) {
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.MemcpyDtoDAsync(dst, src, bytes, stream);
  return r ? cuda_fail(r, err, "cuMemcpyDtoDAsync(0x%llx, 0x%llx, %zu bytes)",
                       (unsigned long long)dst, (unsigned long long)src, bytes)
           : CUTE_OK;
}

/* ---- modules and kernels ------------------------------------------------------------ */

static int is_elf(const unsigned char *p) {
  return p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F';
}

int cute_cuda_module_load(const void *image, size_t size, int is_ptx, void **module,
                          char *info_log, size_t info_cap, cute_err *err) {
  NEED(image && module, "cute_cuda_module_load", "image or out is NULL");
  *module = NULL;
  if (info_log && info_cap) info_log[0] = 0;
  int s = ensure_ctx(err);
  if (s) return s;
  const unsigned char *img = image;
  int elf = (size == 0 || size >= 4) && is_elf(img);
  if (is_ptx < 0) is_ptx = !elf;
  if (is_ptx && elf)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_module_load: the image is an ELF cubin, "
                                    "not PTX text (pass is_ptx = 0)");
  char *copy = NULL;
  if (is_ptx && size > 0 && !memchr(img, 0, size)) {
    copy = malloc(size + 1);
    if (!copy) return cute_err_setf(err, CUTE_E_NOMEM, "cute_cuda_module_load: out of host memory");
    memcpy(copy, img, size);
    copy[size] = 0;
    img = (const unsigned char *)copy;
  }
  if (is_ptx && size == 0) size = strlen((const char *)img);
  char elog[8192];
  elog[0] = 0;
  CUjit_option opts[6] = {CUTE_CU_JIT_ERROR_LOG_BUFFER, CUTE_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[6] = {elog, (void *)(uintptr_t)sizeof elog};
  unsigned nopt = 2;
  /* PTX compiled with lineinfo carries .loc directives: the JIT keeps them as ptxas
     -lineinfo would (profilers and compute-sanitizer name the source lines) */
  if (is_ptx && strstr((const char *)img, "\t.loc\t")) {
    opts[nopt] = CUTE_CU_JIT_GENERATE_LINE_INFO;
    vals[nopt++] = (void *)(uintptr_t)1;
  }
  if (info_log && info_cap > 1) {
    opts[nopt] = CUTE_CU_JIT_INFO_LOG_BUFFER;
    vals[nopt++] = info_log;
    opts[nopt] = CUTE_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES;
    vals[nopt++] = (void *)(uintptr_t)(info_cap > 0xffffffffu ? 0xffffffffu : info_cap);
    opts[nopt] = CUTE_CU_JIT_LOG_VERBOSE;
    vals[nopt++] = (void *)(uintptr_t)1;
  }
  CUmodule m = NULL;
  CUresult r = cu.ModuleLoadDataEx(&m, img, nopt, opts, vals);
  free(copy);
  if (info_log && info_cap) info_log[info_cap - 1] = 0;
  if (r) {
    elog[sizeof elog - 1] = 0;
    size_t n = strlen(elog);
    while (n && (elog[n - 1] == '\n' || elog[n - 1] == ' ')) elog[--n] = 0;
    char call[96];
    snprintf(call, sizeof call, "cuModuleLoadDataEx(%s, %zu bytes)", is_ptx ? "PTX" : "cubin",
             size);
    char extra[sizeof elog + 32];
    snprintf(extra, sizeof extra, "\n  JIT log: %s", elog);
    return cuda_fail_ex(r, err, n ? extra : NULL, call);
  }
  *module = m;
  return CUTE_OK;
}

int cute_cuda_module_unload(void *module, cute_err *err) {
  if (!module) return CUTE_OK;
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.ModuleUnload(module);
  return r ? cuda_fail(r, err, "cuModuleUnload") : CUTE_OK;
}

int cute_cuda_module_get_function(void *module, const char *name, void **fn, cute_err *err) {
  NEED(module && name && fn, "cute_cuda_module_get_function", "module, name or out is NULL");
  *fn = NULL;
  int s = ensure_ctx(err);
  if (s) return s;
  CUfunction f = NULL;
  CUresult r = cu.ModuleGetFunction(&f, module, name);
  if (r) return cuda_fail(r, err, "cuModuleGetFunction(\"%.200s\")", name);
  *fn = f;
  return CUTE_OK;
}

int cute_cuda_func_attribute(void *fn, int attr, int *out, cute_err *err) {
  NEED(fn && out, "cute_cuda_func_attribute", "function or out is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.FuncGetAttribute(out, attr, fn);
  return r ? cuda_fail(r, err, "cuFuncGetAttribute(attribute %d)", attr) : CUTE_OK;
}

int cute_cuda_func_attrs(void *fn, cute_cuda_func_info *out, cute_err *err) {
  NEED(fn && out, "cute_cuda_func_attrs", "function or out is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  static const struct { int attr; size_t off; } attrs[] = {
#define A(name, field) {CUTE_CU_FUNC_ATTRIBUTE_##name, offsetof(cute_cuda_func_info, field)}
    A(MAX_THREADS_PER_BLOCK, max_threads_per_block), A(SHARED_SIZE_BYTES, shared_size_bytes),
    A(CONST_SIZE_BYTES, const_size_bytes), A(LOCAL_SIZE_BYTES, local_size_bytes),
    A(NUM_REGS, num_regs), A(PTX_VERSION, ptx_version), A(BINARY_VERSION, binary_version),
    A(MAX_DYNAMIC_SHARED_SIZE_BYTES, max_dynamic_shared_size_bytes),
#undef A
  };
  memset(out, 0, sizeof *out);
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    CUresult r = cu.FuncGetAttribute(&v, attrs[i].attr, fn);
    if (r) return cuda_fail(r, err, "cuFuncGetAttribute(attribute %d)", attrs[i].attr);
    memcpy((char *)out + attrs[i].off, &v, sizeof v);
  }
  return CUTE_OK;
}

int cute_cuda_func_set_attribute(void *fn, int attr, int value, cute_err *err) {
  NEED(fn, "cute_cuda_func_set_attribute", "function is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.FuncSetAttribute(fn, attr, value);
  return r ? cuda_fail(r, err, "cuFuncSetAttribute(attribute %d, value %d)", attr, value)
           : CUTE_OK;
}

int cute_cuda_func_set_max_dynamic_smem(void *fn, int bytes, cute_err *err) {
  NEED(fn, "cute_cuda_func_set_max_dynamic_smem", "function is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  if (bytes < 0)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_func_set_max_dynamic_smem: %d bytes is negative",
                   bytes);
  CUresult r = cu.FuncSetAttribute(fn, CUTE_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   bytes);
  if (!r) return CUTE_OK;
  int optin = 0, stat = 0;
  CUdevice d;
  if (cu.DeviceGet(&d, t_dev) == 0)
    cu.DeviceGetAttribute(&optin, CUTE_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d);
  cu.FuncGetAttribute(&stat, CUTE_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn);
  return cuda_fail(r, err,
                   "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %d): the device allows at "
                   "most %d bytes of shared memory per block (opt-in), of which the kernel's "
                   "static shared memory uses %d, leaving %d",
                   bytes, optin, stat, optin - stat);
}

int cute_cuda_occupancy_max_active_blocks(void *fn, int block_size, size_t dynamic_smem,
                                          int *out, cute_err *err) {
  NEED(fn && out, "cute_cuda_occupancy_max_active_blocks", "function or out is NULL");
  NEED(block_size > 0, "cute_cuda_occupancy_max_active_blocks", "block size must be positive");
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.OccupancyMaxActiveBlocksPerMultiprocessor(out, fn, block_size, dynamic_smem);
  return r ? cuda_fail(r, err, "cuOccupancyMaxActiveBlocksPerMultiprocessor(block %d, smem %zu)",
                       block_size, dynamic_smem)
           : CUTE_OK;
}

int cute_cuda_occupancy_max_potential_block_size(void *fn, size_t dynamic_smem,
                                                 int block_limit, int *min_grid,
                                                 int *block_size, cute_err *err) {
  NEED(fn && min_grid && block_size, "cute_cuda_occupancy_max_potential_block_size",
       "function or out is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.OccupancyMaxPotentialBlockSize(min_grid, block_size, fn, NULL, dynamic_smem,
                                                 block_limit);
  return r ? cuda_fail(r, err, "cuOccupancyMaxPotentialBlockSize(smem %zu, limit %d)",
                       dynamic_smem, block_limit)
           : CUTE_OK;
}

/* ---- launch ----------------------------------------------------------------------------- */

/* The rare path of cute_cuda_launch: no driver yet, NULL function, no context
   in this thread (retried once), or a driver error to explain. */
static __attribute__((noinline, cold)) int
launch_slow(CUresult r, void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
            unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
            cute_err *err) {
  if (!fn) return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_launch: function is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  if (r < 0 || r == CU_ERR_INVALID_CONTEXT) {  /* not tried yet, or tried without a context */
    r = cu.LaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, NULL);
    if (!r) return CUTE_OK;
  }
  char call[300];
  int n = snprintf(call, sizeof call, "cuLaunchKernel(grid (%u,%u,%u), block (%u,%u,%u), smem %u)",
                   gx, gy, gz, bx, by, bz, smem);
  if (r == CU_ERR_INVALID_VALUE && n > 0 && n < (int)sizeof call) {
    /* Say which limit was crossed, where we can tell. */
    int maxt = 0, maxdyn = 0;
    unsigned long long threads = (unsigned long long)bx * by * bz;
    cu.FuncGetAttribute(&maxt, CUTE_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
    cu.FuncGetAttribute(&maxdyn, CUTE_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn);
    if (!gx || !gy || !gz || !bx || !by || !bz)
      snprintf(call + n, sizeof call - n, ": a grid or block dimension is 0");
    else if (maxt > 0 && threads > (unsigned long long)maxt)
      snprintf(call + n, sizeof call - n, ": %llu threads per block, the kernel allows %d",
               threads, maxt);
    else if (maxdyn >= 0 && smem > (unsigned)maxdyn)
      snprintf(call + n, sizeof call - n,
               ": %u bytes of dynamic shared memory, the kernel allows %d "
               "(raise it with set_max_dynamic_smem)", smem, maxdyn);
  }
  return cuda_fail_ex(r, err, NULL, call);
}

int cute_cuda_launch(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                     unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                     cute_err *err) {
  if (__builtin_expect(!atomic_load_explicit(&g_ready, memory_order_acquire) || !fn, 0))
    return launch_slow(-1, fn, gx, gy, gz, bx, by, bz, smem, stream, params, err);
  CUresult r = cu.LaunchKernel(fn, gx, gy, gz, bx, by, bz, smem, stream, params, NULL);
  if (__builtin_expect(r != 0, 0))
    return launch_slow(r, fn, gx, gy, gz, bx, by, bz, smem, stream, params, err);
  return CUTE_OK;
}

int cute_cuda_launch_cluster(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned cx, unsigned cy, unsigned cz,
                             unsigned smem, void *stream, void **params, cute_err *err) {
  if (cx == 1 && cy == 1 && cz == 1)
    return cute_cuda_launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, err);
  NEED(fn, "cute_cuda_launch_cluster", "function is NULL");
  int s = ensure_ctx(err);
  if (s) return s;
  if (!cx || !cy || !cz)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_launch_cluster: cluster (%u,%u,%u) has a 0 "
                   "dimension", cx, cy, cz);
  if (!cu.LaunchKernelEx)
    return cute_err_setf(err, CUTE_E_UNSUPPORTED, "cute_cuda_launch_cluster: this CUDA driver has no "
                   "cuLaunchKernelEx (thread-block clusters need CUDA 12.0 or newer)");
  if (g_cluster[t_dev] == 1)
    return cute_err_setf(err, CUTE_E_UNSUPPORTED, "cute_cuda_launch_cluster: device %d does not "
                   "support thread-block clusters (they need sm_90 or newer)", t_dev);
  if (gx % cx || gy % cy || gz % cz)
    return cute_err_setf(err, CUTE_E_ARG, "cute_cuda_launch_cluster: grid (%u,%u,%u) is not a "
                   "multiple of the cluster (%u,%u,%u)", gx, gy, gz, cx, cy, cz);
  struct cute_cu_launch_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CUTE_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attr.value.cluster_dim.x = cx;
  attr.value.cluster_dim.y = cy;
  attr.value.cluster_dim.z = cz;
  CUlaunchConfig cfg = {gx, gy, gz, bx, by, bz, smem, stream, &attr, 1};
  CUresult r = cu.LaunchKernelEx(&cfg, fn, params, NULL);
  return r ? cuda_fail(r, err, "cuLaunchKernelEx(grid (%u,%u,%u), block (%u,%u,%u), cluster "
                       "(%u,%u,%u), smem %u)", gx, gy, gz, bx, by, bz, cx, cy, cz, smem)
           : CUTE_OK;
}

double cute_cuda_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, cute_err *);

static int bench(int raw, void *fn, int n, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                 unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                 double *elapsed_us, double *enqueue_us, cute_err *err) {
  const char *name = raw ? "cute_cuda_bench_raw_launch" : "cute_cuda_bench_launch";
  NEED(fn && elapsed_us, name, "function or out is NULL");
  if (n < 0) return cute_err_setf(err, CUTE_E_ARG, "%s: n = %d is negative", name, n);
  int s = ensure_ctx(err);
  if (s) return s;
  CUresult r = cu.StreamSynchronize(stream);
  if (r) return cuda_fail(r, err, "cuStreamSynchronize");
  double t0 = cute_cuda_now_us();
  if (raw) {
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **) = cu.LaunchKernel;
    for (int i = 0; i < n; i++) {
      r = launch(fn, gx, gy, gz, bx, by, bz, smem, stream, params, NULL);
      if (r) return cuda_fail(r, err, "cuLaunchKernel (launch %d of %d)", i + 1, n);
    }
  } else {
    /* Through an opaque pointer: measures the call as a host program makes it. */
    volatile launch_fn vf = cute_cuda_launch;
    launch_fn f = vf;
    for (int i = 0; i < n; i++)
      if ((s = f(fn, gx, gy, gz, bx, by, bz, smem, stream, params, err))) return s;
  }
  double t1 = cute_cuda_now_us();
  r = cu.StreamSynchronize(stream);
  double t2 = cute_cuda_now_us();
  if (r) return cuda_fail(r, err, "cuStreamSynchronize (after %d launches)", n);
  *elapsed_us = t2 - t0;
  if (enqueue_us) *enqueue_us = t1 - t0;
  return CUTE_OK;
}

int cute_cuda_bench_raw_launch(void *fn, int n, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned smem,
                               void *stream, void **params, double *elapsed_us,
                               double *enqueue_us, cute_err *err) {
  return bench(1, fn, n, gx, gy, gz, bx, by, bz, smem, stream, params, elapsed_us, enqueue_us,
               err);
}

int cute_cuda_bench_launch(void *fn, int n, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                           unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                           double *elapsed_us, double *enqueue_us, cute_err *err) {
  return bench(0, fn, n, gx, gy, gz, bx, by, bz, smem, stream, params, elapsed_us, enqueue_us,
               err);
}
