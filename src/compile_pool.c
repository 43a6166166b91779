/* compile_pool.c -- cute_compile on worker threads (include/cute_compile_pool.h).
 *
 * A queue of jobs (IR borrowed, options copied) under one mutex; workers are
 * started as jobs arrive, up to the pool's limit, and take the lowest queued
 * index, run cute_compile with the lock released, and store the result.  The
 * caller's thread waits on a condition variable with a timeout, so it can
 * show progress.  Everything cute_compile touches is the compile's own (its
 * LLVMContext, module, the thread's target machine, its temp files and pipes)
 * or guarded where it is shared (libdevice's bytes, the tool search, the
 * cache directory's atomic renames): see docs/AUTOTUNE.md, "Thread safety".
 */
#include "cute_compile_pool.h"
#include "cute_ir.h"
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* LLVM's passes recurse over the module: give workers a stack as large as a
   main thread's usual one, whatever the process's default */
#define WORKER_STACK (16u << 20)

typedef struct job {
  cute_ir *ir;
  cute_compile_opts *o;
  cute_compiled *out;
  int state; /* 0 queued, 1 running, 2 done, 3 dropped */
  int rc, worker;
  double us;
  char msg[sizeof(((cute_err *)0)->msg)];
} job;

struct cute_compile_pool {
  pthread_mutex_t mu;
  pthread_cond_t work, done;
  job *jobs;
  int njobs, cap, next, ndone;
  int limit, nthreads, closing;
  pthread_t *threads;
};

typedef struct { cute_compile_pool *p; int index; } worker_arg;

int cute_compile_pool_cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)(n > 1024 ? 1024 : n) : 1;
}

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void *worker_main(void *arg) {
  worker_arg wa = *(worker_arg *)arg;
  free(arg);
  cute_compile_pool *p = wa.p;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!p->closing && p->next >= p->njobs) pthread_cond_wait(&p->work, &p->mu);
    if (p->closing) break;
    int i = p->next++;
    job *j = &p->jobs[i];
    j->state = 1;
    j->worker = wa.index;
    cute_ir *ir = j->ir;
    cute_compile_opts *o = j->o;
    pthread_mutex_unlock(&p->mu);
    cute_err e = {0};
    cute_compiled *out = NULL;
    double t = now_us();
    int rc = cute_compile(ir, o, &out, &e);
    t = now_us() - t;
    pthread_mutex_lock(&p->mu);
    j = &p->jobs[i]; /* (the array may have grown meanwhile) */
    j->out = out;
    j->rc = rc;
    j->us = t;
    memcpy(j->msg, e.msg, sizeof j->msg);
    j->msg[sizeof j->msg - 1] = 0;
    j->state = 2;
    p->ndone++;
    pthread_cond_broadcast(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

cute_compile_pool *cute_compile_pool_new(int workers, cute_err *err) {
  cute_compile_pool *p = calloc(1, sizeof *p);
  if (!p) { cute_err_setf(err, CUTE_E_NOMEM, "compile pool: out of memory"); return NULL; }
  p->limit = workers > 0 ? (workers > 1024 ? 1024 : workers) : cute_compile_pool_cpus();
  p->threads = calloc((size_t)p->limit, sizeof *p->threads);
  if (!p->threads) {
    free(p);
    cute_err_setf(err, CUTE_E_NOMEM, "compile pool: out of memory");
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->work, NULL);
  /* (timed waits on the monotonic clock: a change of the wall clock does not
     stretch or cut a wait) */
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->done, &ca);
  pthread_condattr_destroy(&ca);
  return p;
}

int cute_compile_pool_workers(cute_compile_pool *p) { return p ? p->limit : 0; }

/* one more worker (called with the lock held); 0 or an errno */
static int start_worker(cute_compile_pool *p) {
  worker_arg *wa = malloc(sizeof *wa);
  if (!wa) return ENOMEM;
  wa->p = p;
  wa->index = p->nthreads;
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, WORKER_STACK);
  /* the new thread inherits this mask: every signal blocked, so that SIGINT
     and friends are delivered to the caller's threads, never to a worker */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(&p->threads[p->nthreads], &at, worker_main, wa);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&at);
  if (rc) { free(wa); return rc; }
  p->nthreads++;
  return 0;
}

int cute_compile_pool_submit(cute_compile_pool *p, cute_ir *ir, const cute_compile_opts *o, cute_err *err) {
  if (!p || !ir) return cute_err_setf(err, CUTE_E_STATE, "compile pool: submit: NULL %s", p ? "IR" : "pool"), -1;
  cute_compile_opts *oc = o ? cute_compile_opts_copy(o) : cute_compile_opts_new();
  if (!oc) return cute_err_setf(err, CUTE_E_NOMEM, "compile pool: out of memory"), -1;
  pthread_mutex_lock(&p->mu);
  if (p->njobs == p->cap) {
    int nc = p->cap ? 2 * p->cap : 16;
    job *nj = realloc(p->jobs, (size_t)nc * sizeof *nj);
    if (!nj) {
      pthread_mutex_unlock(&p->mu);
      cute_compile_opts_free(oc);
      return cute_err_setf(err, CUTE_E_NOMEM, "compile pool: out of memory"), -1;
    }
    p->jobs = nj;
    p->cap = nc;
  }
  int i = p->njobs;
  memset(&p->jobs[i], 0, sizeof p->jobs[i]);
  p->jobs[i].ir = ir;
  p->jobs[i].o = oc;
  p->jobs[i].worker = -1;
  /* a worker per queued job, up to the limit */
  int queued = p->njobs + 1 - p->next, busy = p->next - p->ndone, idle = p->nthreads - busy;
  if (idle < queued && p->nthreads < p->limit) {
    int rc = start_worker(p);
    if (rc && !p->nthreads) {
      pthread_mutex_unlock(&p->mu);
      cute_compile_opts_free(oc);
      return cute_err_setf(err, CUTE_E_STATE, "compile pool: cannot start a worker thread: %s", strerror(rc)), -1;
    }
  }
  p->njobs++;
  pthread_cond_signal(&p->work);
  pthread_mutex_unlock(&p->mu);
  return i;
}

int cute_compile_pool_wait(cute_compile_pool *p, int timeout_ms) {
  if (!p) return 0;
  pthread_mutex_lock(&p->mu);
  if (timeout_ms < 0) {
    while (p->ndone < p->njobs) pthread_cond_wait(&p->done, &p->mu);
  } else if (timeout_ms > 0) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    while (p->ndone < p->njobs)
      if (pthread_cond_timedwait(&p->done, &p->mu, &until) == ETIMEDOUT) break;
  }
  int n = p->ndone;
  pthread_mutex_unlock(&p->mu);
  return n;
}

int cute_compile_pool_done(cute_compile_pool *p, int i) {
  if (!p) return 0;
  pthread_mutex_lock(&p->mu);
  int d = i >= 0 && i < p->njobs && p->jobs[i].state == 2;
  pthread_mutex_unlock(&p->mu);
  return d;
}

int cute_compile_pool_result(cute_compile_pool *p, int i, cute_compiled **out, cute_err *err) {
  if (out) *out = NULL;
  if (!p) return cute_err_setf(err, CUTE_E_STATE, "compile pool: result: NULL pool");
  pthread_mutex_lock(&p->mu);
  if (i < 0 || i >= p->njobs || p->jobs[i].state != 2) {
    int n = p->njobs;
    pthread_mutex_unlock(&p->mu);
    if (i < 0 || i >= n) return cute_err_setf(err, CUTE_E_STATE, "compile pool: result: no job %d (%d submitted)", i, n);
    return cute_err_setf(err, CUTE_E_STATE, "compile pool: result: job %d has not finished", i);
  }
  job *j = &p->jobs[i];
  int rc = j->rc;
  if (out) {
    *out = j->out;
    j->out = NULL;
  }
  if (rc) cute_err_setf(err, rc, "%s", j->msg);
  else if (err) { err->code = 0; err->msg[0] = 0; }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

double cute_compile_pool_job_us(cute_compile_pool *p, int i) {
  if (!p) return 0;
  pthread_mutex_lock(&p->mu);
  double us = i >= 0 && i < p->njobs && p->jobs[i].state == 2 ? p->jobs[i].us : 0;
  pthread_mutex_unlock(&p->mu);
  return us;
}

int cute_compile_pool_job_worker(cute_compile_pool *p, int i) {
  if (!p) return -1;
  pthread_mutex_lock(&p->mu);
  int w = i >= 0 && i < p->njobs && p->jobs[i].state == 2 ? p->jobs[i].worker : -1;
  pthread_mutex_unlock(&p->mu);
  return w;
}

void cute_compile_pool_free(cute_compile_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  /* queued jobs are dropped; running ones finish (a compile cannot be cut) */
  for (int i = p->next; i < p->njobs; i++) p->jobs[i].state = 3;
  p->next = p->njobs;
  p->closing = 1;
  pthread_cond_broadcast(&p->work);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->nthreads; i++) pthread_join(p->threads[i], NULL);
  for (int i = 0; i < p->njobs; i++) {
    cute_compiled_free(p->jobs[i].out);
    cute_compile_opts_free(p->jobs[i].o);
  }
  pthread_cond_destroy(&p->work);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  free(p->jobs);
  free(p->threads);
  free(p);
}
