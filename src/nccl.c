/*
 * nccl.c -- NCCL opened with dlopen on first use.  The entry points come from
 * the table in nccldef.h; the search order is the one include/cute_nccl.h
 * documents; every failed NCCL call becomes a cute_err with NCCL's own
 * message (ncclGetErrorString, and ncclGetLastError where the library has it).
 *
 * A loaded library is a table of function pointers published atomically;
 * loads and switches take a mutex, calls do not.  Tables are never freed (a
 * communicator of an earlier library may still be destroyed through it).
 */
#include "core.h"
#include "cute_nccl.h"
#include "nccldef.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_LOADS = 16, PATH_CAP = 1024, LIST_CAP = 8192 };

typedef struct nccl_table {
#define NC_FIELD(field, sym, req, ret, params) ret(*field) params;
  CUTE_NCCL_FUNCS(NC_FIELD)
#undef NC_FIELD
  int version;
  char path[PATH_CAP];
} nccl_table;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static nccl_table g_tables[MAX_LOADS];
static int g_nloads;
static _Atomic(nccl_table *) g_cur;
static atomic_int g_generation;

static const char *const k_lib_name = "libnccl.so.2";
static const char *const k_pkg_tail = "/nvidia/nccl/lib/libnccl.so.2";

/* ---- names and messages ---------------------------------------------------- */

const char *cute_nccl_result_name(int r) {
  switch (r) {
#define RES_NAME(name, value) case value: return #name;
    CUTE_NCCL_RESULTS(RES_NAME)
#undef RES_NAME
  default: return "ncclResult";
  }
}

const char *cute_nccl_error_string(int r) {
  nccl_table *t = atomic_load_explicit(&g_cur, memory_order_acquire);
  const char *s = t ? t->GetErrorString(r) : NULL;
  return s ? s : cute_nccl_result_name(r);
}

static void split_version(int code, int *maj, int *min, int *patch) {
  int major_unit = code >= 10000 ? 10000 : 1000; /* NCCL_VERSION: 2.9 and later use 10000 */
  *maj = code / major_unit;
  *min = (code % major_unit) / 100;
  *patch = code % 100;
}

/* "<call>: NAME (r): text[; last error: ...]" */
static int nccl_fail(const nccl_table *t, ncclResult_t r, ncclComm_t comm, cute_err *err,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int nccl_fail(const nccl_table *t, ncclResult_t r, ncclComm_t comm, cute_err *err,
                     const char *fmt, ...) {
  if (!err) return CUTE_E_CUDA;
  char call[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(call, sizeof call, fmt, ap);
  va_end(ap);
  const char *text = t->GetErrorString(r);
  const char *last = t->GetLastError ? t->GetLastError(comm) : NULL;
  return cute_err_setf(err, CUTE_E_CUDA, "%s: %s (%d): %s%s%s", call, cute_nccl_result_name(r),
                       r, text ? text : "", last && *last ? "; last error: " : "",
                       last && *last ? last : "");
}

/* ---- loading ------------------------------------------------------------------- */

/* dlopen `path` into t; 0, or -1 with the reason in why */
static int open_table(const char *path, nccl_table *t, char *why, size_t cap) {
  if (strchr(path, '/') && access(path, F_OK) != 0) {
    snprintf(why, cap, "not found");
    return -1;
  }
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    size_t n = strlen(path);
    if (e && strncmp(e, path, n) == 0 && strncmp(e + n, ": ", 2) == 0) e += n + 2; /* no repeat */
    snprintf(why, cap, "%s", e ? e : "dlopen failed");
    return -1;
  }
  memset(t, 0, sizeof *t);
  void *p;
#define NC_RESOLVE(field, sym, req, ret, params)                          \
  p = dlsym(lib, #sym);                                                  \
  if (!p && (req)) {                                                     \
    snprintf(why, cap, "loaded, but it has no %s (not NCCL 2.7 or newer)", #sym); \
    dlclose(lib);                                                        \
    return -1;                                                           \
  }                                                                      \
  memcpy(&t->field, &p, sizeof p);
  CUTE_NCCL_FUNCS(NC_RESOLVE)
#undef NC_RESOLVE
  int v = 0;
  ncclResult_t r = t->GetVersion(&v);
  if (r != 0) {
    snprintf(why, cap, "ncclGetVersion failed: %s (%d)", cute_nccl_result_name(r), r);
    dlclose(lib);
    return -1;
  }
  t->version = v;
  snprintf(t->path, sizeof t->path, "%s", path);
  return 0;
}

/* load path and publish it (under g_lock); 0, or -1 with the reason in why */
static int try_path(const char *path, char *why, size_t cap) {
  if (g_nloads >= MAX_LOADS) {
    snprintf(why, cap, "%d libraries loaded already (the limit)", MAX_LOADS);
    return -1;
  }
  nccl_table *t = &g_tables[g_nloads];
  if (open_table(path, t, why, cap) != 0) return -1;
  g_nloads++;
  atomic_store_explicit(&g_cur, t, memory_order_release);
  atomic_fetch_add(&g_generation, 1);
  return 0;
}

static void append(char *buf, size_t cap, size_t *used, int *n, const char *line) {
  int w = snprintf(buf + *used, cap - *used, "%s\n", line);
  if (w < 0 || (size_t)w >= cap - *used) { /* truncated: keep the buffer terminated */
    *used = cap - 1;
    return;
  }
  *used += (size_t)w;
  (*n)++;
}

/* every file matching dir_pattern + k_pkg_tail, or the pattern when none does */
static void append_glob(char *buf, size_t cap, size_t *used, int *n, const char *prefix,
                        const char *dir_pattern) {
  char pat[PATH_CAP];
  if (snprintf(pat, sizeof pat, "%s%s%s", prefix, dir_pattern, k_pkg_tail) >= (int)sizeof pat)
    return;
  glob_t g;
  if (glob(pat, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) append(buf, cap, used, n, g.gl_pathv[i]);
  } else {
    append(buf, cap, used, n, pat);
  }
  globfree(&g);
}

static void append_env(char *buf, size_t cap, size_t *used, int *n, const char *var,
                       const char *dir_pattern) {
  const char *v = getenv(var);
  if (v && *v) append_glob(buf, cap, used, n, v, dir_pattern);
}

int cute_nccl_search_list(char *buf, size_t cap) {
  if (!buf || cap == 0) return 0;
  size_t used = 0;
  int n = 0;
  buf[0] = '\0';
  const char *env = getenv("CUTE_NCCL_LIB");
  if (env && *env) {
    append(buf, cap, &used, &n, env);
    return n;
  }
  append(buf, cap, &used, &n, k_lib_name);
  append_env(buf, cap, &used, &n, "VIRTUAL_ENV", "/lib/python3*/site-packages");
  append_env(buf, cap, &used, &n, "CONDA_PREFIX", "/lib/python3*/site-packages");
  append_env(buf, cap, &used, &n, "HOME", "/.local/lib/python3*/site-packages");
  append_glob(buf, cap, &used, &n, "", "/usr/local/lib/python3*/dist-packages");
  append_glob(buf, cap, &used, &n, "", "/usr/local/lib/python3*/site-packages");
  append_glob(buf, cap, &used, &n, "", "/usr/lib/python3/dist-packages");
  append_glob(buf, cap, &used, &n, "", "/usr/lib/python3*/site-packages");
  return n;
}

/* step 4: the directories python3 reports; 0 when one had the library */
static int try_python(char *tried, size_t cap, size_t *used) {
  FILE *p = popen("python3 -c 'import site, sys; "
                  "print(\"\\n\".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))'"
                  " 2>/dev/null",
                  "r");
  int found = -1, dirs = 0;
  char line[PATH_CAP], path[PATH_CAP + 64], why[256];
  if (p) {
    while (found != 0 && fgets(line, sizeof line, p)) {
      line[strcspn(line, "\n")] = '\0';
      if (!*line || snprintf(path, sizeof path, "%s%s", line, k_pkg_tail) >= (int)sizeof path)
        continue;
      dirs++;
      if (access(path, F_OK) != 0) continue;
      found = try_path(path, why, sizeof why);
      if (found != 0) {
        int w = snprintf(tried + *used, cap - *used, "\n  %s: %s", path, why);
        if (w > 0 && (size_t)w < cap - *used) *used += (size_t)w;
      }
    }
    pclose(p);
  }
  if (found != 0) {
    int w = snprintf(tried + *used, cap - *used,
                     "\n  python3's site-packages and sys.path (%d directories): %s", dirs,
                     dirs ? "no nvidia/nccl/lib/libnccl.so.2" : "python3 did not run");
    if (w > 0 && (size_t)w < cap - *used) *used += (size_t)w;
  }
  return found;
}

/* the search of cute_nccl_load(NULL); under g_lock */
static int search_and_load(cute_err *err) {
  static char list[LIST_CAP];
  static char tried[LIST_CAP];
  char why[512];
  size_t used = 0;
  tried[0] = '\0';
  cute_nccl_search_list(list, sizeof list);
  const char *env = getenv("CUTE_NCCL_LIB");
  for (char *line = list, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    if (strchr(line, '*')) {
      snprintf(why, sizeof why, "no match");
    } else if (try_path(line, why, sizeof why) == 0) {
      return CUTE_OK;
    }
    int w = snprintf(tried + used, sizeof tried - used, "\n  %s%s: %s",
                     env && *env ? "CUTE_NCCL_LIB=" : "", line, why);
    if (w > 0 && (size_t)w < sizeof tried - used) used += (size_t)w;
  }
  if (env && *env)
    return cute_err_setf(err, CUTE_E_UNSUPPORTED,
                         "cannot load NCCL:%s\n(CUTE_NCCL_LIB names the library to use; unset it "
                         "to search the library path and python site-packages)",
                         tried);
  if (try_python(tried, sizeof tried, &used) == 0) return CUTE_OK;
  return cute_err_setf(err, CUTE_E_UNSUPPORTED,
                       "no NCCL library (libnccl.so.2) found; tried:%s\nset CUTE_NCCL_LIB to "
                       "its path, or install NCCL (e.g. the nvidia-nccl-cu12 wheel, which "
                       "PyTorch brings)",
                       tried);
}

int cute_nccl_load(const char *path, cute_err *err) {
  nccl_table *cur = atomic_load_explicit(&g_cur, memory_order_acquire);
  if (cur && !path) return CUTE_OK;
  pthread_mutex_lock(&g_lock);
  int rc = CUTE_OK;
  cur = atomic_load_explicit(&g_cur, memory_order_acquire);
  if (!path) {
    if (!cur) rc = search_and_load(err);
  } else if (!cur || strcmp(cur->path, path) != 0) {
    char why[512];
    if (try_path(path, why, sizeof why) != 0)
      rc = cute_err_setf(err, CUTE_E_UNSUPPORTED, "cannot load NCCL from %s: %s", path, why);
  }
  pthread_mutex_unlock(&g_lock);
  return rc;
}

void cute_nccl_unload(void) {
  pthread_mutex_lock(&g_lock);
  atomic_store_explicit(&g_cur, NULL, memory_order_release);
  pthread_mutex_unlock(&g_lock);
}

int cute_nccl_generation(void) {
  return atomic_load_explicit(&g_cur, memory_order_acquire) ? atomic_load(&g_generation) : 0;
}

const char *cute_nccl_library(void) {
  nccl_table *t = atomic_load_explicit(&g_cur, memory_order_acquire);
  return t ? t->path : "";
}

static nccl_table *table(cute_err *err) {
  nccl_table *t = atomic_load_explicit(&g_cur, memory_order_acquire);
  if (t) return t;
  if (cute_nccl_load(NULL, err) != CUTE_OK) return NULL;
  return atomic_load_explicit(&g_cur, memory_order_acquire);
}

int cute_nccl_version(int *code, cute_err *err) {
  nccl_table *t = table(err);
  if (!t) return CUTE_E_UNSUPPORTED;
  if (code) *code = t->version;
  return CUTE_OK;
}

/* ---- communicators ----------------------------------------------------------------- */

#define TABLE_OR_FAIL(t)                                  \
  nccl_table *t = table(err);                             \
  if (!t) return CUTE_E_UNSUPPORTED

int cute_nccl_unique_id(void *id, cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclUniqueId u;
  memset(&u, 0, sizeof u);
  ncclResult_t r = t->GetUniqueId(&u);
  if (r != 0) return nccl_fail(t, r, NULL, err, "ncclGetUniqueId");
  memcpy(id, &u, sizeof u);
  return CUTE_OK;
}

int cute_nccl_comm_init_all(void **comms, int n, const int *devs, cute_err *err) {
  TABLE_OR_FAIL(t);
  if (!comms || n < 1 || !devs)
    return cute_err_setf(err, CUTE_E_ARG, "ncclCommInitAll: %d devices (need at least 1)", n);
  ncclResult_t r = t->CommInitAll((ncclComm_t *)comms, n, devs);
  if (r != 0) return nccl_fail(t, r, NULL, err, "ncclCommInitAll(%d devices)", n);
  return CUTE_OK;
}

int cute_nccl_comm_init_rank(void **comm, int nranks, const void *id, int rank, cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclUniqueId u;
  memcpy(&u, id, sizeof u);
  ncclComm_t c = NULL;
  ncclResult_t r = t->CommInitRank(&c, nranks, u, rank);
  if (r != 0)
    return nccl_fail(t, r, NULL, err, "ncclCommInitRank(nranks=%d, rank=%d)", nranks, rank);
  *comm = c;
  return CUTE_OK;
}

int cute_nccl_comm_destroy(void *comm, cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclResult_t r = t->CommDestroy((ncclComm_t)comm);
  return r ? nccl_fail(t, r, NULL, err, "ncclCommDestroy") : CUTE_OK;
}

int cute_nccl_comm_abort(void *comm, cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclResult_t r = t->CommAbort((ncclComm_t)comm);
  return r ? nccl_fail(t, r, NULL, err, "ncclCommAbort") : CUTE_OK;
}

int cute_nccl_comm_info(void *comm, int *rank, int *nranks, int *device, cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclComm_t c = (ncclComm_t)comm;
  ncclResult_t r;
  if (rank && (r = t->CommUserRank(c, rank)) != 0)
    return nccl_fail(t, r, c, err, "ncclCommUserRank");
  if (nranks && (r = t->CommCount(c, nranks)) != 0)
    return nccl_fail(t, r, c, err, "ncclCommCount");
  if (device && (r = t->CommCuDevice(c, device)) != 0)
    return nccl_fail(t, r, c, err, "ncclCommCuDevice");
  return CUTE_OK;
}

int cute_nccl_comm_async_error(void *comm, int *result, cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclResult_t a = 0;
  ncclResult_t r = t->CommGetAsyncError((ncclComm_t)comm, &a);
  if (r != 0) return nccl_fail(t, r, (ncclComm_t)comm, err, "ncclCommGetAsyncError");
  *result = a;
  return CUTE_OK;
}

/* ---- collectives ----------------------------------------------------------------------- */

/* dtype and op (-1: none) known, and in the loaded library */
static int check_types(const nccl_table *t, const char *call, int dtype, int op, cute_err *err) {
  if (dtype < CUTE_NCCL_INT8 || dtype > CUTE_NCCL_FLOAT8E5M2)
    return cute_err_setf(err, CUTE_E_ARG, "%s: datatype %d is not an ncclDataType_t", call, dtype);
  if (op != -1 && (op < CUTE_NCCL_SUM || op > CUTE_NCCL_AVG))
    return cute_err_setf(err, CUTE_E_ARG, "%s: op %d is not a built-in ncclRedOp_t", call, op);
  int maj, min, patch, lmaj, lmin, lpatch;
  split_version(t->version, &lmaj, &lmin, &lpatch);
#define NC_MIN(name, is_op, value, need)                                                      \
  if ((is_op ? op : dtype) == value && t->version < need) {                                  \
    split_version(need, &maj, &min, &patch);                                                 \
    return cute_err_setf(err, CUTE_E_UNSUPPORTED,                                            \
                         "%s: %s needs NCCL %d.%d.%d or newer; %s is NCCL %d.%d.%d", call,   \
                         #name, maj, min, patch, t->path, lmaj, lmin, lpatch);               \
  }
  CUTE_NCCL_MIN_VERSION(NC_MIN)
#undef NC_MIN
  return CUTE_OK;
}

#define PTR(x) ((void *)(uintptr_t)(x))

int cute_nccl_all_reduce(uint64_t send, uint64_t recv, size_t count, int dtype, int op,
                         void *comm, void *stream, cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclAllReduce", dtype, op, err);
  if (rc) return rc;
  ncclResult_t r = t->AllReduce(PTR(send), PTR(recv), count, dtype, op, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclAllReduce(count=%zu)", count) : CUTE_OK;
}

int cute_nccl_all_gather(uint64_t send, uint64_t recv, size_t count, int dtype, void *comm,
                         void *stream, cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclAllGather", dtype, -1, err);
  if (rc) return rc;
  ncclResult_t r = t->AllGather(PTR(send), PTR(recv), count, dtype, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclAllGather(sendcount=%zu)", count) : CUTE_OK;
}

int cute_nccl_reduce_scatter(uint64_t send, uint64_t recv, size_t count, int dtype, int op,
                             void *comm, void *stream, cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclReduceScatter", dtype, op, err);
  if (rc) return rc;
  ncclResult_t r = t->ReduceScatter(PTR(send), PTR(recv), count, dtype, op, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclReduceScatter(recvcount=%zu)", count) : CUTE_OK;
}

int cute_nccl_broadcast(uint64_t send, uint64_t recv, size_t count, int dtype, int root,
                        void *comm, void *stream, cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclBroadcast", dtype, -1, err);
  if (rc) return rc;
  ncclResult_t r = t->Broadcast(PTR(send), PTR(recv), count, dtype, root, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclBroadcast(count=%zu, root=%d)", count, root)
           : CUTE_OK;
}

int cute_nccl_reduce(uint64_t send, uint64_t recv, size_t count, int dtype, int op, int root,
                     void *comm, void *stream, cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclReduce", dtype, op, err);
  if (rc) return rc;
  ncclResult_t r = t->Reduce(PTR(send), PTR(recv), count, dtype, op, root, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclReduce(count=%zu, root=%d)", count, root) : CUTE_OK;
}

int cute_nccl_send(uint64_t buf, size_t count, int dtype, int peer, void *comm, void *stream,
                   cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclSend", dtype, -1, err);
  if (rc) return rc;
  ncclResult_t r = t->Send(PTR(buf), count, dtype, peer, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclSend(count=%zu, peer=%d)", count, peer) : CUTE_OK;
}

int cute_nccl_recv(uint64_t buf, size_t count, int dtype, int peer, void *comm, void *stream,
                   cute_err *err) {
  TABLE_OR_FAIL(t);
  int rc = check_types(t, "ncclRecv", dtype, -1, err);
  if (rc) return rc;
  ncclResult_t r = t->Recv(PTR(buf), count, dtype, peer, comm, stream);
  return r ? nccl_fail(t, r, comm, err, "ncclRecv(count=%zu, peer=%d)", count, peer) : CUTE_OK;
}

int cute_nccl_group_start(cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclResult_t r = t->GroupStart();
  return r ? nccl_fail(t, r, NULL, err, "ncclGroupStart") : CUTE_OK;
}

int cute_nccl_group_end(cute_err *err) {
  TABLE_OR_FAIL(t);
  ncclResult_t r = t->GroupEnd();
  return r ? nccl_fail(t, r, NULL, err, "ncclGroupEnd") : CUTE_OK;
}
