/*
 * nccl_stub.c -- a stand-in NCCL for the specs without a GPU (make builds it
 * as build/libnccl_stub.so; spec/nccl_spec.lua loads it with nccl.load).
 * Each call appends one line to a log with its arguments exactly as NCCL
 * would receive them (function, buffers, count, datatype, op, root, peer,
 * comm, stream); nothing is computed.  Arguments that NCCL rejects (a root
 * or peer outside the communicator, an unknown datatype) return
 * ncclInvalidArgument with a message for ncclGetLastError, as NCCL does.
 *   cute_nccl_stub_log()    the log so far ("" after a reset)
 *   cute_nccl_stub_reset()  empties it; communicators made later count from 0
 * The version reported is $CUTE_NCCL_STUB_VERSION (a version code), else 22809;
 * ncclCommInitRank sleeps $CUTE_NCCL_STUB_INIT_MS milliseconds when set (as
 * NCCL's waits for the other ranks).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct stub_comm {
  int rank, nranks, device;
} stub_comm;
typedef struct { char internal[128]; } stub_id;

static char g_log[1 << 16];
static size_t g_used;
static char g_last[256];
static int g_ids;
static stub_comm g_comms[64];
static int g_ncomms;

#define API __attribute__((visibility("default")))

API const char *cute_nccl_stub_log(void) { return g_log; }
/* (communicators are numbered from 0 again after a reset) */
API void cute_nccl_stub_reset(void) { g_used = 0; g_log[0] = '\0'; g_last[0] = '\0'; g_ncomms = 0; }

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(g_log + g_used, sizeof g_log - g_used, fmt, ap);
  va_end(ap);
  if (w > 0 && (size_t)w < sizeof g_log - g_used) g_used += (size_t)w;
}

static int invalid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int invalid(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_last, sizeof g_last, fmt, ap);
  va_end(ap);
  return 4; /* ncclInvalidArgument */
}

static int comm_index(const stub_comm *c) { return c ? (int)(c - g_comms) : -1; }

API int ncclGetVersion(int *v) {
  const char *e = getenv("CUTE_NCCL_STUB_VERSION");
  *v = e && *e ? atoi(e) : 22809;
  return 0;
}

API const char *ncclGetErrorString(int r) {
  return r == 4 ? "invalid argument (stub)" : r == 0 ? "no error" : "stub error";
}

API const char *ncclGetLastError(void *comm) { return g_last; }

API int ncclGetUniqueId(stub_id *id) {
  g_ids++;
  for (int i = 0; i < 128; i++) id->internal[i] = (char)(i * 7 + g_ids);
  logf_("ncclGetUniqueId\n");
  return 0;
}

static stub_comm *new_comm(int rank, int nranks, int device) {
  if (g_ncomms >= 64) return NULL;
  stub_comm *c = &g_comms[g_ncomms++];
  c->rank = rank, c->nranks = nranks, c->device = device;
  return c;
}

API int ncclCommInitAll(stub_comm **comms, int ndev, const int *devs) {
  if (ndev < 1 || ndev > 8) return invalid("stub: ncclCommInitAll: ndev %d", ndev);
  logf_("ncclCommInitAll ndev=%d devs=", ndev);
  for (int i = 0; i < ndev; i++) {
    comms[i] = new_comm(i, ndev, devs[i]);
    logf_("%s%d", i ? "," : "", devs[i]);
  }
  logf_("\n");
  return 0;
}

API int ncclCommInitRank(stub_comm **comm, int nranks, stub_id id, int rank) {
  if (rank < 0 || rank >= nranks)
    return invalid("stub: ncclCommInitRank: rank %d of %d", rank, nranks);
  /* NCCL returns once every rank joined: $CUTE_NCCL_STUB_INIT_MS stands for that wait */
  const char *ms = getenv("CUTE_NCCL_STUB_INIT_MS");
  if (ms && *ms) usleep((useconds_t)atoi(ms) * 1000);
  *comm = new_comm(rank, nranks, rank);
  logf_("ncclCommInitRank nranks=%d rank=%d id0=%d id127=%d comm=%d\n", nranks, rank,
        id.internal[0], id.internal[127], comm_index(*comm));
  return 0;
}

API int ncclCommDestroy(stub_comm *c) { logf_("ncclCommDestroy comm=%d\n", comm_index(c)); return 0; }
API int ncclCommAbort(stub_comm *c) { logf_("ncclCommAbort comm=%d\n", comm_index(c)); return 0; }
API int ncclCommGetAsyncError(stub_comm *c, int *r) { *r = 0; return 0; }
API int ncclCommCount(const stub_comm *c, int *n) { *n = c->nranks; return 0; }
API int ncclCommCuDevice(const stub_comm *c, int *d) { *d = c->device; return 0; }
API int ncclCommUserRank(const stub_comm *c, int *r) { *r = c->rank; return 0; }

static int bad_type(const char *fn, int dtype) {
  return dtype < 0 || dtype > 11 ? invalid("stub: %s: datatype %d", fn, dtype) : 0;
}

static void log_call(const char *fn, const void *send, const void *recv, size_t count, int dtype,
                     const char *extra, const stub_comm *c, const void *stream) {
  logf_("%s send=%#jx recv=%#jx count=%zu dtype=%d%s comm=%d stream=%#jx\n", fn,
        (uintmax_t)(uintptr_t)send, (uintmax_t)(uintptr_t)recv, count, dtype, extra,
        comm_index(c), (uintmax_t)(uintptr_t)stream);
}

API int ncclAllReduce(const void *s, void *r, size_t n, int dt, int op, stub_comm *c, void *st) {
  if (bad_type("ncclAllReduce", dt)) return 4;
  char x[32];
  snprintf(x, sizeof x, " op=%d", op);
  log_call("ncclAllReduce", s, r, n, dt, x, c, st);
  return 0;
}

API int ncclAllGather(const void *s, void *r, size_t n, int dt, stub_comm *c, void *st) {
  if (bad_type("ncclAllGather", dt)) return 4;
  log_call("ncclAllGather", s, r, n, dt, "", c, st);
  return 0;
}

API int ncclReduceScatter(const void *s, void *r, size_t n, int dt, int op, stub_comm *c,
                          void *st) {
  if (bad_type("ncclReduceScatter", dt)) return 4;
  char x[32];
  snprintf(x, sizeof x, " op=%d", op);
  log_call("ncclReduceScatter", s, r, n, dt, x, c, st);
  return 0;
}

API int ncclBroadcast(const void *s, void *r, size_t n, int dt, int root, stub_comm *c,
                      void *st) {
  if (root < 0 || root >= c->nranks)
    return invalid("stub: Broadcast: invalid root %d (nranks %d)", root, c->nranks);
  char x[32];
  snprintf(x, sizeof x, " root=%d", root);
  log_call("ncclBroadcast", s, r, n, dt, x, c, st);
  return 0;
}

API int ncclReduce(const void *s, void *r, size_t n, int dt, int op, int root, stub_comm *c,
                   void *st) {
  if (root < 0 || root >= c->nranks)
    return invalid("stub: Reduce: invalid root %d (nranks %d)", root, c->nranks);
  char x[48];
  snprintf(x, sizeof x, " op=%d root=%d", op, root);
  log_call("ncclReduce", s, r, n, dt, x, c, st);
  return 0;
}

API int ncclSend(const void *s, size_t n, int dt, int peer, stub_comm *c, void *st) {
  if (peer < 0 || peer >= c->nranks) return invalid("stub: Send: invalid peer %d", peer);
  char x[32];
  snprintf(x, sizeof x, " peer=%d", peer);
  log_call("ncclSend", s, NULL, n, dt, x, c, st);
  return 0;
}

API int ncclRecv(void *r, size_t n, int dt, int peer, stub_comm *c, void *st) {
  if (peer < 0 || peer >= c->nranks) return invalid("stub: Recv: invalid peer %d", peer);
  char x[32];
  snprintf(x, sizeof x, " peer=%d", peer);
  log_call("ncclRecv", NULL, r, n, dt, x, c, st);
  return 0;
}

API int ncclGroupStart(void) { logf_("ncclGroupStart\n"); return 0; }
API int ncclGroupEnd(void) { logf_("ncclGroupEnd\n"); return 0; }
