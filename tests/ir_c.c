/* ir_c.c -- standalone C test of the kernel IR and the code generator.
 *   cc ... tests/ir_c.c -o ir_c && ./ir_c [-v]
 * Builds representative kernels through the C API, checks the printer,
 * parser round trip, verifier errors and the PTX (assembled by ptxas when
 * present, for sm_80 and sm_90a).  Prints "N passed, N failed". */
#include "cute_ir.h"
#include "cute_cache.h"
#include "check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int verbose;

/* c[i] = a[i] + b[i] with 16-byte read-only loads */
static void build_vadd(cute_ir *ir) {
  int32_t pf = cute_ir_t_ptr(ir, CUTE_T_F32, CUTE_AS_GLOBAL);
  cute_ir_func(ir, "vadd", CUTE_FN_KERNEL, CUTE_T_VOID);
  cute_ir_set_loc(ir, "vadd.lua", 1);
  int32_t a = cute_ir_param(ir, pf, "a", CUTE_P_NOALIAS | CUTE_P_READONLY, 16);
  int32_t b = cute_ir_param(ir, pf, "b", CUTE_P_NOALIAS | CUTE_P_READONLY, 16);
  int32_t c = cute_ir_param(ir, pf, "c", CUTE_P_NOALIAS, 16);
  int32_t n = cute_ir_param(ir, CUTE_T_I32, "n", 0, 0);
  cute_ir_launch_bounds(ir, 256, 2);
  cute_ir_set_loc(ir, "vadd.lua", 2);
  int32_t bid = cute_ir_sreg(ir, CUTE_SREG_CTAID_X);
  int32_t bdim = cute_ir_sreg(ir, CUTE_SREG_NTID_X);
  int32_t tid = cute_ir_sreg(ir, CUTE_SREG_TID_X);
  int32_t i = cute_ir_op2(ir, CUTE_IR_ADD, cute_ir_op2(ir, CUTE_IR_MUL, bid, bdim), tid);
  int32_t i4 = cute_ir_op2(ir, CUTE_IR_MUL, i, cute_ir_const_int(ir, CUTE_T_U32, 4));
  int32_t ii = cute_ir_cvt(ir, CUTE_T_I32, i4, 0);
  cute_ir_set_loc(ir, "vadd.lua", 3);
  cute_ir_if(ir, cute_ir_op2(ir, CUTE_IR_LT, ii, n), 0);
  int32_t v4 = cute_ir_t_vec(ir, CUTE_T_F32, 4);
  int32_t pv = cute_ir_t_ptr(ir, v4, CUTE_AS_GLOBAL);
  int32_t pa = cute_ir_op(ir, CUTE_IR_PTRCAST, pv, 1, (int32_t[]){cute_ir_gep(ir, a, ii)}, 0, 0);
  int32_t pb = cute_ir_op(ir, CUTE_IR_PTRCAST, pv, 1, (int32_t[]){cute_ir_gep(ir, b, ii)}, 0, 0);
  int32_t pc = cute_ir_op(ir, CUTE_IR_PTRCAST, pv, 1, (int32_t[]){cute_ir_gep(ir, c, ii)}, 0, 0);
  cute_ir_set_loc(ir, "vadd.lua", 4);
  int32_t s = cute_ir_op2(ir, CUTE_IR_ADD, cute_ir_load(ir, pa, CUTE_HINT_NC, 16), cute_ir_load(ir, pb, CUTE_HINT_NC, 16));
  cute_ir_store(ir, pc, s, CUTE_HINT_CS, 16);
  cute_ir_end(ir);
  cute_ir_ret(ir, 0);
}

/* block reduction: warp shuffles + shared memory + named barrier + atomics */
static void build_reduce(cute_ir *ir) {
  int32_t pf = cute_ir_t_ptr(ir, CUTE_T_F32, CUTE_AS_GLOBAL);
  cute_ir_func(ir, "reduce", CUTE_FN_KERNEL, CUTE_T_VOID);
  cute_ir_set_loc(ir, "reduce.lua", 10);
  int32_t x = cute_ir_param(ir, pf, "x", CUTE_P_NOALIAS | CUTE_P_READONLY, 4);
  int32_t out = cute_ir_param(ir, pf, "out", 0, 0);
  int32_t n = cute_ir_param(ir, CUTE_T_U32, "n", 0, 0);
  cute_ir_launch_bounds(ir, 128, 0);
  int32_t sm = cute_ir_shared(ir, CUTE_T_F32, 32, 16);
  int32_t tid = cute_ir_sreg(ir, CUTE_SREG_TID_X);
  int32_t gid = cute_ir_op2(ir, CUTE_IR_ADD, cute_ir_op2(ir, CUTE_IR_MUL, cute_ir_sreg(ir, CUTE_SREG_CTAID_X),
                                                         cute_ir_sreg(ir, CUTE_SREG_NTID_X)), tid);
  int32_t zero = cute_ir_const_float(ir, CUTE_T_F32, 0.0);
  int32_t acc = cute_ir_var(ir, CUTE_T_F32, zero);
  cute_ir_set_loc(ir, "reduce.lua", 12);
  int32_t iv = cute_ir_for(ir, gid, n, cute_ir_const_int(ir, CUTE_T_U32, 65536), 4);
  int32_t v = cute_ir_load(ir, cute_ir_gep(ir, x, iv), CUTE_HINT_NC, 0);
  cute_ir_vset(ir, acc, cute_ir_op2(ir, CUTE_IR_ADD, cute_ir_vget(ir, acc), v));
  cute_ir_end(ir);
  cute_ir_set_loc(ir, "reduce.lua", 14);
  int32_t full = cute_ir_const_int(ir, CUTE_T_U32, 0xffffffff);
  int32_t s = cute_ir_vget(ir, acc);
  for (int off = 16; off >= 1; off /= 2) {
    int32_t o = cute_ir_shfl(ir, CUTE_SHFL_BFLY, s, cute_ir_const_int(ir, CUTE_T_U32, off), full, 32);
    s = cute_ir_op2(ir, CUTE_IR_ADD, s, o);
  }
  int32_t lane = cute_ir_sreg(ir, CUTE_SREG_LANEID);
  int32_t warp = cute_ir_op2(ir, CUTE_IR_SHR, tid, cute_ir_const_int(ir, CUTE_T_U32, 5));
  cute_ir_if(ir, cute_ir_op2(ir, CUTE_IR_EQ, lane, cute_ir_const_int(ir, CUTE_T_U32, 0)), 0);
  cute_ir_store(ir, cute_ir_gep(ir, sm, warp), s, 0, 0);
  cute_ir_end(ir);
  cute_ir_barrier(ir, 1, 128);
  cute_ir_if(ir, cute_ir_op2(ir, CUTE_IR_EQ, tid, cute_ir_const_int(ir, CUTE_T_U32, 0)), 0);
  int32_t t = cute_ir_load(ir, sm, 0, 0);
  cute_ir_atom(ir, CUTE_ATOM_ADD, sm, t, CUTE_SCOPE_GPU);
  cute_ir_atom(ir, CUTE_ATOM_ADD, out, t, CUTE_SCOPE_GPU);
  cute_ir_end(ir);
  cute_ir_ret(ir, 0);
}

/* if/else with a result, while loop, bf16 conversion, math, device function */
static void build_misc(cute_ir *ir) {
  int32_t pf = cute_ir_t_ptr(ir, CUTE_T_F32, CUTE_AS_GLOBAL);
  int32_t pb = cute_ir_t_ptr(ir, CUTE_T_BF16, CUTE_AS_GLOBAL);
  int32_t sq = cute_ir_func(ir, "square", CUTE_FN_DEVICE, CUTE_T_F32);
  int32_t p0 = cute_ir_param(ir, CUTE_T_F32, "x", 0, 0);
  cute_ir_ret(ir, cute_ir_op2(ir, CUTE_IR_MUL, p0, p0));
  cute_ir_func(ir, "misc", CUTE_FN_KERNEL, CUTE_T_VOID);
  cute_ir_set_loc(ir, "misc.lua", 20);
  int32_t x = cute_ir_param(ir, pf, "x", 0, 0);
  int32_t y = cute_ir_param(ir, pb, "y", 0, 0);
  int32_t tid = cute_ir_sreg(ir, CUTE_SREG_TID_X);
  int32_t v = cute_ir_load(ir, cute_ir_gep(ir, x, tid), 0, 0);
  int32_t c = cute_ir_op2(ir, CUTE_IR_GT, v, cute_ir_const_float(ir, CUTE_T_F32, 0.0));
  int32_t r = cute_ir_if(ir, c, CUTE_T_F32);
  cute_ir_yield(ir, cute_ir_math(ir, CUTE_IR_SQRT, v, 0));
  cute_ir_else(ir);
  cute_ir_yield(ir, cute_ir_math(ir, CUTE_IR_EXP2, v, 1));
  cute_ir_end(ir);
  int32_t k = cute_ir_var(ir, CUTE_T_I32, cute_ir_const_int(ir, CUTE_T_I32, 0));
  cute_ir_while(ir);
  int32_t kc = cute_ir_op2(ir, CUTE_IR_LT, cute_ir_vget(ir, k), cute_ir_const_int(ir, CUTE_T_I32, 3));
  cute_ir_do(ir, kc);
  cute_ir_vset(ir, k, cute_ir_op2(ir, CUTE_IR_ADD, cute_ir_vget(ir, k), cute_ir_const_int(ir, CUTE_T_I32, 1)));
  cute_ir_end(ir);
  int32_t kf = cute_ir_cvt(ir, CUTE_T_F32, cute_ir_vget(ir, k), 0);
  int32_t args[1] = {cute_ir_op2(ir, CUTE_IR_ADD, r, kf)};
  int32_t sqv = cute_ir_call(ir, sq, 1, args);
  int32_t bf = cute_ir_cvt(ir, CUTE_T_BF16, sqv, 0);
  int32_t bz = cute_ir_cvt(ir, CUTE_T_BF16, sqv, CUTE_RND_RZ);
  cute_ir_store(ir, cute_ir_gep(ir, y, tid), bf, 0, 0);
  cute_ir_store(ir, cute_ir_gep(ir, y, cute_ir_op2(ir, CUTE_IR_ADD, tid, cute_ir_const_int(ir, CUTE_T_U32, 1))), bz, 0, 0);
  cute_ir_ret(ir, 0);
}

/* fragments through the C API: an f32[64] carried by a var through a for,
   sliced, through one asm with 130 operands (64 outputs, 64 tied inputs, two
   64-bit inputs), and a bytes<128,64> grid_constant parameter read through
   param.addr */
static void build_frag(cute_ir *ir) {
  cute_ir_func(ir, "frag", CUTE_FN_KERNEL, CUTE_T_VOID);
  int32_t out = cute_ir_param(ir, cute_ir_t_ptr(ir, CUTE_T_F32, CUTE_AS_GLOBAL), "out", 0, 0);
  int32_t blob = cute_ir_param(ir, cute_ir_t_bytes(ir, 128, 64), "desc", CUTE_P_GRID_CONSTANT, 0);
  int32_t F = cute_ir_t_array(ir, CUTE_T_F32, 64);
  int32_t z = cute_ir_const_float(ir, CUTE_T_F32, 0.5);
  int32_t acc = cute_ir_var(ir, F, cute_ir_op(ir, CUTE_IR_VEC, F, 1, &z, 0, 0));
  int32_t pa = cute_ir_op(ir, CUTE_IR_PARAMADDR, 0, 1, &blob, 0, 0);
  int32_t d = cute_ir_op(ir, CUTE_IR_BITCAST, CUTE_T_U64, 1, &pa, 0, 0);
  cute_ir_for(ir, cute_ir_const_int(ir, CUTE_T_I32, 0), cute_ir_const_int(ir, CUTE_T_I32, 8),
              cute_ir_const_int(ir, CUTE_T_I32, 1), 0);
  int32_t cur = cute_ir_vget(ir, acc);
  int32_t e5 = cute_ir_op(ir, CUTE_IR_EXTRACT, 0, 1, &cur, 5, 0);
  int32_t ins[2] = {cur, cute_ir_op2(ir, CUTE_IR_ADD, e5, z)};
  cur = cute_ir_op(ir, CUTE_IR_INSERT, 0, 2, ins, 9, 0);
  static char cons[1024], tmpl[2048];
  int n = 0, m = 0;
  for (int i = 0; i < 64; i++) n += snprintf(cons + n, sizeof cons - (size_t)n, "=f,");
  for (int i = 0; i < 64; i++) n += snprintf(cons + n, sizeof cons - (size_t)n, "%d,", i);
  snprintf(cons + n, sizeof cons - (size_t)n, "l,l");
  for (int i = 0; i < 64; i++) m += snprintf(tmpl + m, sizeof tmpl - (size_t)m, "add.f32 $%d, $%d, 0f3F800000; ", i, i);
  snprintf(tmpl + m, sizeof tmpl - (size_t)m, "{ .reg .b64 t; add.s64 t, $128, $129; }");
  int32_t aa[3] = {cur, d, d};
  cute_ir_vset(ir, acc, cute_ir_asm(ir, F, tmpl, cons, 3, aa));
  cute_ir_end(ir);
  int32_t fin = cute_ir_vget(ir, acc);
  for (int i = 0; i < 64; i++)
    cute_ir_store(ir, cute_ir_gep(ir, out, cute_ir_const_int(ir, CUTE_T_I32, i)),
                  cute_ir_op(ir, CUTE_IR_EXTRACT, 0, 1, &fin, i, 0), 0, 0);
  cute_ir_ret(ir, 0);
}

static cute_compiled *compile(cute_ir *ir, const char *arch, int ptxas, cute_err *e) {
  cute_compile_opts *o = cute_compile_opts_new();
  cute_compiled *c = NULL;
  int rc = cute_compile_opts_set(o, "arch", arch, e);
  if (!rc) rc = cute_compile_opts_set(o, "use_ptxas", ptxas && cute_ptxas_path() ? "true" : "false", e);
  if (!rc) rc = cute_compile(ir, o, &c, e);
  cute_compile_opts_free(o);
  if (rc && verbose && c && cute_compiled_llvm_ir(c)) printf("%s\n", cute_compiled_llvm_ir(c));
  if (rc) { cute_compiled_free(c); return NULL; }
  return c;
}

static void test_kernel(const char *name, void (*build)(cute_ir *), const char *const *expect) {
  cute_ir *ir = cute_ir_new();
  cute_err e;
  build(ir);
  int st = cute_ir_status(ir, &e);
  CHECK(st == 0, "%s: build: %s", name, e.msg);
  if (st) { cute_ir_free(ir); return; }
  CHECK(cute_ir_verify(ir, &e) == 0, "%s: verify: %s", name, e.msg);
  const char *txt = cute_ir_print(ir);
  if (verbose) printf("%s\n", txt);
  /* parse(print) == print */
  cute_ir *ir2 = cute_ir_new();
  int pr = cute_ir_parse(ir2, txt, &e);
  CHECK(pr == 0, "%s: parse: %s", name, e.msg);
  if (!pr) CHECK(!strcmp(cute_ir_print(ir2), txt), "%s: round trip differs:\n%s", name, cute_ir_print(ir2));
  cute_ir_free(ir2);
  const char *archs[2] = {"sm_80", "sm_90a"};
  for (int k = 0; k < 2; k++) {
    cute_compiled *c = compile(ir, archs[k], 1, &e);
    CHECK(c != NULL, "%s %s: compile: %s", name, archs[k], e.msg);
    if (!c) continue;
    const char *ptx = cute_compiled_ptx(c);
    if (verbose && k == 1) printf("%s\n", ptx);
    for (int i = 0; expect && expect[i]; i++)
      CHECK(strstr(ptx, expect[i]) != NULL, "%s %s: PTX lacks '%s'", name, archs[k], expect[i]);
    if (cute_ptxas_path()) {
      CHECK(cute_compiled_has_cubin(c), "%s %s: no cubin", name, archs[k]);
      cute_kernel_info ki;
      CHECK(cute_compiled_info(c, name, &ki) == 0 && ki.regs > 0, "%s: ptxas info missing", name);
      if (verbose) printf("%s %s: regs %d smem %d spills %d/%d stack %d\n", name, archs[k], ki.regs, ki.smem_static,
                          ki.spill_stores, ki.spill_loads, ki.stack);
    } else {
      skipped++; /* no ptxas: PTX checked, not assembled */
    }
    cute_compiled_free(c);
  }
  cute_ir_free(ir);
}

static void expect_verify_error(const char *what, const char *text, const char *needle) {
  cute_ir *ir = cute_ir_new();
  cute_err e;
  cute_ir_set_checks(ir, 0);
  int rc = cute_ir_parse(ir, text, &e);
  if (rc == 0) rc = cute_ir_verify(ir, &e);
  CHECK(rc != 0 && strstr(e.msg, needle), "%s: expected an error containing '%s', got %d '%s'", what, needle, rc, e.msg);
  cute_ir_free(ir);
}

/* the compile-option table through the C API, and the architecture rule */
static void test_compile_opts(void) {
  cute_err e;
  cute_compile_opts *o = cute_compile_opts_new();
  CHECK(o != NULL, "cute_compile_opts_new");
  if (!o) return;
  CHECK(cute_compile_opts_set(o, "nonsense", "1", &e) == CUTE_E_ARG && strstr(e.msg, "unknown; valid options: arch, opt_level"),
        "unknown option: '%s'", e.msg);
  CHECK(cute_compile_opts_set(o, "opt_level", "9", &e) == CUTE_E_ARG &&
            !strcmp(e.msg, "compile option 'opt_level': expected an integer 0..3, got '9'"),
        "opt_level 9: '%s'", e.msg);
  CHECK(cute_compile_opts_set(o, "arch", "sm_100a", &e) != 0 && strstr(e.msg, "sm_100a"), "arch sm_100a: '%s'", e.msg);
  CHECK(cute_compile_opts_set(o, "opt_level", "1", &e) == 0, "opt_level 1: %s", e.msg);
  CHECK(!strcmp(cute_compile_opts_get(o, "opt_level"), "1"), "get opt_level");
  CHECK(!strcmp(cute_compile_opts_get(o, "arch"), "sm_90a"), "default arch");
  /* an explicit option beats the environment; the others take it */
  setenv("CUTE_OPT_LEVEL", "2", 1);
  setenv("CUTE_MAX_REGISTERS", "64", 1);
  CHECK(cute_compile_opts_apply_env(o, &e) == 0, "apply_env: %s", e.msg);
  CHECK(!strcmp(cute_compile_opts_get(o, "opt_level"), "1"), "explicit opt_level lost to the environment");
  CHECK(!strcmp(cute_compile_opts_get(o, "max_registers"), "64"), "max_registers from CUTE_MAX_REGISTERS");
  CHECK(cute_compile_opts_source(o, "max_registers") == CUTE_OPT_FROM_ENV, "source of max_registers");
  setenv("CUTE_FTZ", "perhaps", 1);
  CHECK(cute_compile_opts_apply_env(o, &e) == CUTE_E_ARG && strstr(e.msg, "(from CUTE_FTZ)"), "bad env: '%s'", e.msg);
  unsetenv("CUTE_OPT_LEVEL");
  unsetenv("CUTE_MAX_REGISTERS");
  unsetenv("CUTE_FTZ");
  const char *key = cute_compile_opts_key(o);
  CHECK(key && strstr(key, "opt_level=1") && strstr(key, "max_registers=64") && !strstr(key, "keep="), "key '%s'",
        key ? key : "(null)");
  int n = cute_compile_opt_count(), found = 0;
  for (int i = 0; i < n; i++) {
    const char *env = cute_compile_opt_info(i, CUTE_OPT_ENV);
    CHECK(env && !strncmp(env, "CUTE_", 5), "option %d env", i);
    found += !strcmp(cute_compile_opt_info(i, CUTE_OPT_NAME), "use_ptxas");
  }
  CHECK(found == 1 && cute_compile_opt_info(n, CUTE_OPT_NAME) == NULL, "reflection");
  cute_compile_opts_free(o);
  static const struct { int major, minor; const char *arch; int portable; } rule[] = {
      {8, 0, "sm_80", 0}, {8, 6, "sm_86", 0}, {8, 9, "sm_89", 0}, {9, 0, "sm_90a", 0},
      {10, 0, "sm_90", 1}, {12, 0, "sm_90", 1}, {5, 0, NULL, 0}};
  for (size_t i = 0; i < sizeof rule / sizeof rule[0]; i++) {
    int portable = -1;
    const char *a = cute_arch_for_cc(rule[i].major, rule[i].minor, &portable);
    CHECK((a == NULL && rule[i].arch == NULL) || (a && rule[i].arch && !strcmp(a, rule[i].arch)),
          "cc %d.%d -> %s", rule[i].major, rule[i].minor, a ? a : "(null)");
    CHECK(portable == rule[i].portable, "cc %d.%d portable %d", rule[i].major, rule[i].minor, portable);
  }
}

/* compiles on several threads at once (each with its own context and target
   machine: no lock) give the PTX of the same compiles one after the other */
typedef struct par_job {
  const char *arch, *opt;
  char *ptx;
} par_job;

static void *par_main(void *arg) {
  par_job *j = arg;
  cute_ir *ir = cute_ir_new();
  build_misc(ir);
  cute_compile_opts *o = cute_compile_opts_new();
  cute_compiled *c = NULL;
  cute_err e;
  if (!cute_compile_opts_set(o, "arch", j->arch, &e) && !cute_compile_opts_set(o, "opt_level", j->opt, &e) &&
      !cute_compile(ir, o, &c, &e)) {
    const char *p = cute_compiled_ptx(c);
    j->ptx = malloc(strlen(p) + 1);
    if (j->ptx) strcpy(j->ptx, p);
  }
  cute_compiled_free(c);
  cute_compile_opts_free(o);
  cute_ir_free(ir);
  return NULL;
}

static void test_parallel_compiles(void) {
  enum { N = 8 };
  static const char *const archs[4] = {"sm_80", "sm_90a", "sm_86", "sm_89"};
  static const char *const opts[2] = {"3", "1"};
  par_job seq[N], par[N];
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    seq[i] = (par_job){archs[i % 4], opts[i / 4], NULL};
    par[i] = seq[i];
    par_main(&seq[i]);
  }
  int started = 0;
  for (int i = 0; i < N; i++) started += pthread_create(&th[i], NULL, par_main, &par[i]) == 0;
  CHECK(started == N, "started %d threads", started);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < started; i++) {
    CHECK(seq[i].ptx && par[i].ptx && !strcmp(seq[i].ptx, par[i].ptx), "parallel compile %d (%s O%s) differs", i,
          seq[i].arch, seq[i].opt);
    free(seq[i].ptx);
    free(par[i].ptx);
  }
}

/* the disk cache from C (docs/CACHE.md): a compile that keeps no LLVM text is
   stored, then hit; 8 threads compiling one kernel into one directory all get
   its PTX; an unsafe directory is refused with a message and compiling goes on */
typedef struct cache_job {
  const char *status;
  char *ptx;
} cache_job;

static cute_compiled *cache_compile(const char *keep, cute_err *e) {
  cute_ir *ir = cute_ir_new();
  build_vadd(ir);
  cute_compile_opts *o = cute_compile_opts_new();
  cute_compiled *c = NULL;
  if (cute_compile_opts_set(o, "keep", keep, e) || cute_compile_opts_set(o, "use_ptxas", "false", e) ||
      cute_compile(ir, o, &c, e)) {
    cute_compiled_free(c);
    c = NULL;
  }
  cute_compile_opts_free(o);
  cute_ir_free(ir);
  return c;
}

static void *cache_main(void *arg) {
  cache_job *j = arg;
  cute_err e;
  cute_compiled *c = cache_compile("ptx", &e);
  if (c) {
    j->status = cute_compiled_cache_status(c);
    j->ptx = strdup(cute_compiled_ptx(c));
  }
  cute_compiled_free(c);
  return NULL;
}

static void test_disk_cache(void) {
  char base[] = "/tmp/cute-cache-test-XXXXXX", dir[200], cmd[300];
  CHECK(mkdtemp(base) != NULL, "mkdtemp");
  snprintf(dir, sizeof dir, "%s/cache", base);
  setenv("CUTE_CACHE_DIR", dir, 1);
  cute_err e;
  cute_compiled *c1 = cache_compile("ptx", &e), *c2 = cache_compile("ptx", &e), *c3 = cache_compile("ptx,llvm", &e);
  CHECK(c1 && c2 && c3, "compiles: %s", e.msg);
  if (c1 && c2 && c3) {
    CHECK(!strcmp(cute_compiled_cache_status(c1), "stored"), "first: %s %s", cute_compiled_cache_status(c1),
          cute_compiled_cache_detail(c1));
    CHECK(!strcmp(cute_compiled_cache_status(c2), "hit"), "second: %s", cute_compiled_cache_status(c2));
    CHECK(!strcmp(cute_compiled_ptx(c1), cute_compiled_ptx(c2)), "the hit's PTX differs");
    CHECK(!strcmp(cute_compiled_cache_key(c1), cute_compiled_cache_key(c2)) && strlen(cute_compiled_cache_key(c1)) == 64,
          "keys");
    CHECK(!strcmp(cute_compiled_cache_status(c3), "skipped") && cute_compiled_llvm_ir(c3), "keep llvm: %s",
          cute_compiled_cache_status(c3));
    cute_kernel_info a, b;
    CHECK(!cute_compiled_info(c1, "vadd", &a) && !cute_compiled_info(c2, "vadd", &b) && a.max_threads == 256 &&
          b.max_threads == 256 && b.min_blocks == 2, "kernel info of the hit");
  }
  cute_cache_stats st;
  CHECK(cute_cache_stats_get(&st, &e) == 0 && st.entries == 1 && st.bytes > 0 && !strcmp(st.dir, dir), "stats: %s",
        e.msg);
  int64_t removed = -1;
  CHECK(cute_cache_clear(&removed, &e) == 0 && removed == 1, "clear: %lld", (long long)removed);
  /* threads of one process: one entry, one PTX */
  enum { N = 8 };
  cache_job jobs[N] = {{0}};
  pthread_t th[N];
  int started = 0;
  for (int i = 0; i < N; i++) started += pthread_create(&th[i], NULL, cache_main, &jobs[i]) == 0;
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  CHECK(started == N, "started %d threads", started);
  for (int i = 0; i < started; i++) {
    CHECK(jobs[i].ptx && c1 && !strcmp(jobs[i].ptx, cute_compiled_ptx(c1)), "thread %d: PTX", i);
    CHECK(jobs[i].status && (!strcmp(jobs[i].status, "stored") || !strcmp(jobs[i].status, "hit")), "thread %d: %s", i,
          jobs[i].status ? jobs[i].status : "(none)");
    free(jobs[i].ptx);
  }
  CHECK(cute_cache_stats_get(&st, &e) == 0 && st.entries == 1 && st.temps == 0, "after threads: %lld entries",
        (long long)st.entries);
  /* group-writable: refused, the compile goes on */
  chmod(dir, 0770);
  cute_compiled *c4 = cache_compile("ptx", &e);
  CHECK(c4 && !strcmp(cute_compiled_cache_status(c4), "refused") &&
            strstr(cute_compiled_cache_detail(c4), "writable by its group"),
        "refused: %s", c4 ? cute_compiled_cache_detail(c4) : e.msg);
  CHECK(cute_cache_stats_get(&st, &e) == CUTE_E_STATE && strstr(e.msg, dir), "stats of an unsafe dir: %s", e.msg);
  cute_compiled_free(c1);
  cute_compiled_free(c2);
  cute_compiled_free(c3);
  cute_compiled_free(c4);
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  CHECK(system(cmd) == 0, "%s", cmd);
  unsetenv("CUTE_CACHE_DIR");
}

int main(int argc, char **argv) {
  verbose = argc > 1 && !strcmp(argv[1], "-v");
  static const char *const vadd_x[] = {"ld.global.nc.v4.f32", ".maxntid 256", ".minnctapersm 2", "st.global.cs.v4.b32", NULL};
  static const char *const red_x[] = {"shfl.sync.bfly.b32", "bar.sync 1, 128", "atom.shared.add.f32", "atom.global.add.f32", NULL};
  static const char *const misc_x[] = {"cvt.rn.bf16.f32", "cvt.rz.bf16.f32", "sqrt.rn.f32", "ex2.approx", NULL};
  test_kernel("vadd", build_vadd, vadd_x);
  test_kernel("reduce", build_reduce, red_x);
  test_kernel("misc", build_misc, misc_x);
  test_compile_opts();
  test_parallel_compiles();
  test_disk_cache();
  static const char *const frag_x[] = {".param .align 64 .b8 frag_param_desc[128]", "cvta.param", ".param .u64 frag_param_out", NULL};
  test_kernel("frag", build_frag, frag_x);

  /* sticky builder errors with location */
  {
    cute_ir *ir = cute_ir_new();
    cute_err e;
    cute_ir_func(ir, "k", CUTE_FN_KERNEL, 0);
    cute_ir_set_loc(ir, "user.lua", 42);
    int32_t a = cute_ir_const_int(ir, CUTE_T_I32, 1), b = cute_ir_const_float(ir, CUTE_T_F32, 2.0);
    int32_t r = cute_ir_op2(ir, CUTE_IR_ADD, a, b);
    CHECK(r == 0, "mismatched add returned %d", r);
    CHECK(cute_ir_op2(ir, CUTE_IR_ADD, a, a) == 0, "calls after an error must be no-ops");
    cute_ir_status(ir, &e);
    CHECK(e.code == CUTE_E_VERIFY && strstr(e.msg, "user.lua:42") && strstr(e.msg, "add"), "msg '%s'", e.msg);
    cute_ir_free(ir);
  }
  expect_verify_error("region", "kernel @k() {\n  %1 = sreg u32 reg=tid.x\n  if 1:i1 {\n    %3 = add u32 %1, %1\n  }\n  %5 = add u32 %3, %3\n  ret\n}\n", "outside its region");
  expect_verify_error("terminator", "kernel @k() {\n  %1 = sreg u32 reg=tid.x\n}\n", "missing terminator");
  expect_verify_error("types", "kernel @k(%1: i32) {\n  %2 = add i32 %1, 1.0:f32\n  ret\n}\n", "operand types differ");
  expect_verify_error("space", "kernel @k(%1: ptr.global.f32) {\n  %2 = ptrcast ptr.shared.f32 %1\n  ret\n}\n", "wrong address space");
  expect_verify_error("loc", "kernel @k(%1: i32) {\n  loc \"t.lua\" 7\n  %2 = add i32 %1, 1.0:f32\n  ret\n}\n", "t.lua:7");

  /* reflection of the scalar type table and the address spaces (cute.dtype reads these) */
  {
    cute_ir *ir = cute_ir_new();
    for (int32_t t = CUTE_T_I1; t <= CUTE_T_F64; t++) {
      const char *name = NULL;
      int bits = -1, cls = -1;
      CHECK(cute_ir_scalar_info(t, &name, &bits, &cls) == 0 && name, "scalar_info(%d)", (int)t);
      if (!name) continue;
      CHECK(!strcmp(name, cute_ir_type_name(ir, t)), "scalar_info(%d) name %s", (int)t, name);
      CHECK(cute_ir_type_size(ir, t) == (bits < 8 ? 1 : bits / 8), "scalar_info(%d) bits %d", (int)t, bits);
      CHECK(cls >= CUTE_TC_SINT && cls <= CUTE_TC_BOOL, "scalar_info(%d) class %d", (int)t, cls);
    }
    CHECK(cute_ir_scalar_info(CUTE_T_VEC, NULL, NULL, NULL) == -1, "vec is no scalar");
    CHECK(cute_ir_scalar_info(-3, NULL, NULL, NULL) == -1, "negative ref");
    CHECK(!strcmp(cute_ir_space_name(CUTE_AS_SHARED), "shared") && !strcmp(cute_ir_space_name(CUTE_AS_GLOBAL), "global"),
          "space names");
    CHECK(cute_ir_space_name(2) == NULL && cute_ir_space_name(-1) == NULL && cute_ir_space_name(99) == NULL,
          "no space 2, -1, 99");
    cute_ir_free(ir);
  }

  if (skipped) printf("ptxas not found: %d assemblies skipped\n", skipped);
  return check_done();
}
