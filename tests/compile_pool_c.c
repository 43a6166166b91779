/* compile_pool_c.c -- the compile pool (include/cute_compile_pool.h) from C.
 *   build/test_compile_pool_c [-v]
 * Builds a set of kernels of different sizes and options, compiles them one
 * after the other with cute_compile, then through a pool of 1, 2 and 4
 * workers, and checks that every job's PTX is the sequential one's, that a
 * failing job reports its own error without disturbing the others, that a
 * result is taken once, and that freeing a pool with queued jobs drops them.
 * Prints the sequential and parallel wall times and their ratio (not
 * asserted: the machine may be loaded); prints "N passed, N failed". */
#include "cute_compile_pool.h"
#include "cute_ir.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int verbose;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* y[i] = a polynomial of x[i] of degree `terms` with a `unroll`-times
   unrolled loop around it: enough code that LLVM's O3 takes a while */
static cute_ir *build_poly(int terms, int unroll) {
  cute_ir *ir = cute_ir_new();
  char name[32];
  snprintf(name, sizeof name, "poly_%d_%d", terms, unroll);
  int32_t pf = cute_ir_t_ptr(ir, CUTE_T_F32, CUTE_AS_GLOBAL);
  cute_ir_func(ir, name, CUTE_FN_KERNEL, CUTE_T_VOID);
  cute_ir_set_loc(ir, "poly.lua", 1);
  int32_t x = cute_ir_param(ir, pf, "x", CUTE_P_NOALIAS | CUTE_P_READONLY, 16);
  int32_t y = cute_ir_param(ir, pf, "y", CUTE_P_NOALIAS, 16);
  int32_t n = cute_ir_param(ir, CUTE_T_U32, "n", 0, 0);
  int32_t tid = cute_ir_sreg(ir, CUTE_SREG_TID_X);
  int32_t gid = cute_ir_op2(ir, CUTE_IR_ADD, cute_ir_op2(ir, CUTE_IR_MUL, cute_ir_sreg(ir, CUTE_SREG_CTAID_X),
                                                         cute_ir_sreg(ir, CUTE_SREG_NTID_X)), tid);
  int32_t iv = cute_ir_for(ir, gid, n, cute_ir_const_int(ir, CUTE_T_U32, 65536), unroll);
  int32_t v = cute_ir_load(ir, cute_ir_gep(ir, x, iv), CUTE_HINT_NC, 4);
  int32_t acc = cute_ir_const_float(ir, CUTE_T_F32, 1.0);
  for (int k = 0; k < terms; k++) {
    cute_ir_set_loc(ir, "poly.lua", 2 + k);
    acc = cute_ir_op2(ir, CUTE_IR_MUL, acc, v);
    acc = cute_ir_op2(ir, CUTE_IR_ADD, acc, cute_ir_const_float(ir, CUTE_T_F32, 1.0 / (k + 2)));
    if (k % 7 == 3) acc = cute_ir_math(ir, CUTE_IR_SQRT, acc, 1);
  }
  cute_ir_store(ir, cute_ir_gep(ir, y, iv), acc, 0, 4);
  cute_ir_end(ir);
  cute_ir_ret(ir, 0);
  return ir;
}

/* a module the verifier rejects: an add of a value outside its region */
static cute_ir *build_bad(void) {
  cute_ir *ir = cute_ir_new();
  cute_err e;
  cute_ir_parse(ir, "kernel @bad() {\n  %1 = sreg u32 reg=tid.x\n  if 1:i1 {\n    %3 = add u32 %1, %1\n  }\n"
                    "  %5 = add u32 %3, %3\n  ret\n}\n", &e);
  return ir;
}

enum { NJOBS = 12 };
static cute_ir *irs[NJOBS];
static cute_compile_opts *opts[NJOBS];
static char *seq_ptx[NJOBS];

static char *dup_s(const char *s) {
  char *p = s ? malloc(strlen(s) + 1) : NULL;
  if (p) strcpy(p, s);
  return p;
}

static void setup(void) {
  static const char *const archs[3] = {"sm_80", "sm_90a", "sm_89"};
  for (int i = 0; i < NJOBS; i++) {
    irs[i] = build_poly(150 + 40 * i, 1 + i % 4);
    opts[i] = cute_compile_opts_new();
    cute_err e;
    /* (no disk cache: every job compiles) */
    CHECK(!cute_compile_opts_set(opts[i], "arch", archs[i % 3], &e) &&
              !cute_compile_opts_set(opts[i], "opt_level", i % 5 == 4 ? "2" : "3", &e) &&
              !cute_compile_opts_set(opts[i], "cache", "false", &e) && !cute_compile_opts_set(opts[i], "keep", "ptx", &e),
          "options %d: %s", i, e.msg);
  }
}

/* every job through a pool of `workers`; returns the wall time in ms */
static double run_pool(int workers, int with_bad) {
  cute_err e;
  cute_compile_pool *p = cute_compile_pool_new(workers, &e);
  CHECK(p != NULL, "pool_new: %s", e.msg);
  if (!p) return 0;
  CHECK(cute_compile_pool_workers(p) == workers, "workers %d", cute_compile_pool_workers(p));
  cute_ir *bad = with_bad ? build_bad() : NULL;
  double t = now_ms();
  int bad_index = -1;
  for (int i = 0; i < NJOBS; i++) {
    int k = cute_compile_pool_submit(p, irs[i], opts[i], &e);
    CHECK(k == i + (bad_index >= 0), "submit %d -> %d (%s)", i, k, e.msg);
    if (bad && i == NJOBS / 2) bad_index = cute_compile_pool_submit(p, bad, opts[0], &e);
  }
  int total = NJOBS + (bad != NULL);
  /* poll as a progress display would, then wait for the rest */
  int seen = cute_compile_pool_wait(p, 0);
  CHECK(seen >= 0 && seen <= total, "wait(0) = %d", seen);
  while (cute_compile_pool_wait(p, 20) < total) {}
  t = now_ms() - t;
  CHECK(cute_compile_pool_wait(p, -1) == total, "all done");
  for (int i = 0, k = 0; i < total; i++) {
    cute_compiled *c = NULL;
    int rc = cute_compile_pool_result(p, i, &c, &e);
    CHECK(cute_compile_pool_done(p, i) == 1, "done(%d)", i);
    CHECK(cute_compile_pool_job_worker(p, i) >= 0 && cute_compile_pool_job_worker(p, i) < workers, "worker of %d", i);
    if (i == bad_index) {
      CHECK(rc == CUTE_E_VERIFY && strstr(e.msg, "outside its region"), "bad job: rc %d '%s'", rc, e.msg);
      /* (the IR carries the parser's error: cute_compile refuses it before any stage) */
      CHECK(c == NULL, "bad job: no result");
    } else {
      CHECK(rc == 0, "job %d: %s", i, e.msg);
      CHECK(cute_compile_pool_job_us(p, i) > 0, "job %d time", i);
      const char *ptx = c ? cute_compiled_ptx(c) : NULL;
      CHECK(ptx && seq_ptx[k] && !strcmp(ptx, seq_ptx[k]), "workers %d: job %d: PTX differs from the sequential compile",
            workers, i);
      k++;
    }
    cute_compiled_free(c);
    cute_compiled *again = (cute_compiled *)1;
    CHECK(cute_compile_pool_result(p, i, &again, &e) == rc && again == NULL, "result %d taken once", i);
  }
  CHECK(cute_compile_pool_result(p, total, NULL, &e) == CUTE_E_STATE && strstr(e.msg, "no job"), "out of range: %s", e.msg);
  cute_compile_pool_free(p);
  cute_ir_free(bad);
  return t;
}

int main(int argc, char **argv) {
  verbose = argc > 1 && !strcmp(argv[1], "-v");
  setup();
  /* (one compile first: LLVM's one-time set-up is not part of either figure) */
  {
    cute_compiled *c = NULL;
    cute_err e;
    cute_compile(irs[0], opts[0], &c, &e);
    cute_compiled_free(c);
  }
  double t = now_ms();
  for (int i = 0; i < NJOBS; i++) {
    cute_compiled *c = NULL;
    cute_err e;
    int rc = cute_compile(irs[i], opts[i], &c, &e);
    CHECK(rc == 0, "sequential %d: %s", i, e.msg);
    seq_ptx[i] = dup_s(cute_compiled_ptx(c));
    cute_compiled_free(c);
  }
  double seq = now_ms() - t;
  double p1 = run_pool(1, 1);
  double p2 = run_pool(2, 1);
  double p4 = run_pool(4, 0);
  printf("compile pool: %d kernels: sequential %.0f ms; pool of 1: %.0f ms, 2: %.0f ms (%.2fx), 4: %.0f ms (%.2fx) "
         "on %d CPUs (x: over the pool of 1)\n", NJOBS, seq, p1, p2, p1 / p2, p4, p1 / p4, cute_compile_pool_cpus());

  /* a pool freed with jobs queued: the running ones finish, the rest are
     dropped, nothing leaks (ASan) and nothing is left running */
  {
    cute_err e;
    cute_compile_pool *p = cute_compile_pool_new(1, &e);
    for (int i = 0; i < NJOBS; i++) cute_compile_pool_submit(p, irs[i], opts[i], &e);
    CHECK(cute_compile_pool_result(p, NJOBS - 1, NULL, &e) == CUTE_E_STATE && strstr(e.msg, "not finished"), "%s", e.msg);
    cute_compile_pool_free(p);
    passed++;
  }
  /* argument errors */
  {
    cute_err e;
    CHECK(cute_compile_pool_submit(NULL, irs[0], NULL, &e) == -1 && strstr(e.msg, "NULL pool"), "%s", e.msg);
    cute_compile_pool *p = cute_compile_pool_new(0, &e);
    CHECK(p && cute_compile_pool_workers(p) == cute_compile_pool_cpus(), "default workers");
    CHECK(cute_compile_pool_submit(p, NULL, NULL, &e) == -1 && strstr(e.msg, "NULL IR"), "%s", e.msg);
    CHECK(cute_compile_pool_wait(p, -1) == 0, "empty pool waits for nothing");
    cute_compile_pool_free(p);
    cute_compile_pool_free(NULL);
  }
  for (int i = 0; i < NJOBS; i++) {
    free(seq_ptx[i]);
    cute_compile_opts_free(opts[i]);
    cute_ir_free(irs[i]);
  }
  if (verbose) printf("(verbose: nothing more to show)\n");
  return check_done();
}
