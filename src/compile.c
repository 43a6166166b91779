/* compile.c -- the compiler driver: cute_compile as a list of named stages
 * over one result record.
 *
 *   verify     the IR verifier (option verify); text: the IR
 *   lower      IR -> LLVM module, LLVM's verifier; text: the module (only when
 *              it or a later LLVM stage fails: printing it costs)
 *   link       the target's libraries (libdevice) and the option link; text: what was linked
 *   optimise   default<O{opt_level}>; text: the optimised module
 *   emit_ptx   text: the PTX
 *   assemble   ptxas (option use_ptxas); text: its -v report; the cubin bytes
 *   load_info  per-kernel registers, shared memory, spills; text: a summary
 *   sass       nvdisasm / cuobjdump (option keep has sass, or cute_compiled_sass)
 *
 * Every stage's text and time are kept, also when a later stage fails; the
 * option keep then drops the texts not asked for and dump_dir writes the
 * kept ones.  A ptxas error quotes the offending PTX line and the Lua
 * file:line of the op that produced it. */
#include "core.h"
#include "backend.h"
#include "cache.h"
#include "compile_opts.h"
#include "sha256.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { S_VERIFY, S_LOWER, S_LINK, S_OPTIMISE, S_EMIT, S_ASSEMBLE, S_INFO, S_SASS, S_N };
static const char *const stage_names[S_N] = {"verify",   "lower",    "link",      "optimise",
                                             "emit_ptx", "assemble", "load_info", "sass"};

typedef struct ck {
  char *name;
  cute_kernel_info info;
} ck;

struct cute_compiled {
  struct { double us; char *text; int ran; } st[S_N];
  int failed; /* stage index, -1: none */
  void *cubin;
  size_t cubin_size;
  ck *k;
  int nk;
  char arch[16];
  char *key;
  cute_compile_opts *o; /* a copy of the options compiled with */
  const char *cache_status; /* cute_compiled_cache_status */
  char cache_detail[1100];
  char cache_key[65];
};

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static char *dup_s(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}


void cute_compiled_free(cute_compiled *c) {
  if (!c) return;
  for (int i = 0; i < S_N; i++) free(c->st[i].text);
  free(c->cubin);
  for (int i = 0; i < c->nk; i++) free(c->k[i].name);
  free(c->k);
  free(c->key);
  cute_compile_opts_free(c->o);
  free(c);
}

/* ---- kernel info ------------------------------------------------------------------------- */
static int init_kernels(cute_ir *ir, cute_compiled *res) {
  for (int32_t i = 1; i < ir->nfuncs; i++)
    if (ir->funcs[i].kind == CUTE_FN_KERNEL) res->nk++;
  res->k = calloc((size_t)res->nk + 1, sizeof *res->k);
  if (!res->k) return 1;
  int nk = 0;
  for (int32_t i = 1; i < ir->nfuncs; i++) {
    ir_func *f = &ir->funcs[i];
    if (f->kind != CUTE_FN_KERNEL) continue;
    ck *k = &res->k[nk++];
    k->name = dup_s(ir_strget(ir, f->name));
    if (!k->name) return 1;
    int64_t smem = 0;
    for (int32_t r = 1; r < f->ninst; r++)
      if (f->inst[r].op == IR_SHARED) smem += f->inst[r].imm * ir_tsize(ir, ir->types[f->inst[r].type].elem);
    cute_kernel_info *ki = &k->info;
    ki->regs = ki->spill_stores = ki->spill_loads = ki->stack = ki->cmem = -1;
    ki->smem_static = (int32_t)smem;
    ki->smem_dynamic = f->dynsmem;
    ki->smem_optin = smem + f->dynsmem > 48 * 1024;
    ki->max_threads = f->maxntid ? f->maxntid : res->o->max_threads_per_block;
    ki->min_blocks = f->minctasm ? f->minctasm : res->o->min_blocks_per_sm;
  }
  return 0;
}

static char *info_text(cute_compiled *res) {
  ir_buf b = {0};
  for (int i = 0; i < res->nk; i++) {
    cute_kernel_info *ki = &res->k[i].info;
    ir_buf_printf(&b, "%s: regs %d, smem %d static + %d dynamic, spills %d/%d, stack %d, max_threads %d, min_blocks %d\n",
                  res->k[i].name, ki->regs, ki->smem_static, ki->smem_dynamic, ki->spill_stores, ki->spill_loads,
                  ki->stack, ki->max_threads, ki->min_blocks);
  }
  return b.p;
}

static void apply_ptxas_info(cute_compiled *res, const char *log) {
  ptxas_kinfo pk[64];
  int n = ptxas_parse(log, pk, 64);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < res->nk; j++)
      if (!strcmp(pk[i].name, res->k[j].name)) {
        cute_kernel_info *ki = &res->k[j].info;
        ki->regs = pk[i].regs;
        if (pk[i].smem >= 0) ki->smem_static = pk[i].smem;
        ki->spill_stores = pk[i].spill_st;
        ki->spill_loads = pk[i].spill_ld;
        ki->stack = pk[i].stack;
        ki->cmem = pk[i].cmem;
        ki->smem_optin = (int64_t)ki->smem_static + ki->smem_dynamic > 48 * 1024;
      }
}

/* ---- a ptxas error, explained ------------------------------------------------------------- */
/* line n (1-based) of text into buf, trimmed */
static int nth_line(const char *text, int n, char *buf, size_t cap) {
  const char *p = text;
  for (int i = 1; i < n && p; i++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p || !*p) return 1;
  while (*p == ' ' || *p == '\t') p++;
  size_t len = strcspn(p, "\n");
  while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r')) len--;
  snprintf(buf, cap, "%.*s", (int)(len < cap ? len : cap - 1), p);
  return 0;
}

/* the source location of PTX line n: the nearest .loc before it, its file
   from the .file table ("" when none) */
static void ptx_loc(const char *ptx, int n, char *out, size_t cap) {
  out[0] = 0;
  int file = -1, line = 0, ln = 1;
  for (const char *p = ptx; *p && ln < n; ln++) {
    const char *q = p;
    while (*q == ' ' || *q == '\t') q++;
    int f, l;
    if (!strncmp(q, ".loc", 4) && sscanf(q + 4, "%d %d", &f, &l) == 2 && l > 0) { file = f; line = l; }
    p = strchr(p, '\n');
    if (!p) break;
    p++;
  }
  if (file < 0) return;
  char key[32];
  snprintf(key, sizeof key, ".file\t%d \"", file);
  const char *fp = strstr(ptx, key);
  if (!fp) { snprintf(key, sizeof key, ".file %d \"", file); fp = strstr(ptx, key); }
  if (fp) {
    fp += strlen(key);
    size_t len = strcspn(fp, "\"");
    snprintf(out, cap, "%.*s:%d", (int)(len < 400 ? len : 400), fp, line);
  } else {
    snprintf(out, cap, "line %d", line);
  }
}

/* the PTX line of the same text in other (compiled with lineinfo), or 0 */
static int same_line(const char *other, const char *want) {
  char buf[512];
  for (int n = 1; !nth_line(other, n, buf, sizeof buf); n++)
    if (!strcmp(buf, want)) return n;
  return 0;
}

static void explain_ptxas(cute_ir *ir, cute_compiled *res, const char *log, char *msg, size_t cap) {
  const char *ptx = res->st[S_EMIT].text;
  const char *p = log ? strstr(log, ", line ") : NULL;
  int n = p ? atoi(p + 7) : 0;
  char src[512] = "", where[480] = "";
  if (!ptx || n <= 0 || nth_line(ptx, n, src, sizeof src)) return;
  ptx_loc(ptx, n, where, sizeof where);
  if (!where[0] && !res->o->lineinfo) {
    /* no .loc in this PTX: compile again with lineinfo to find the op */
    cute_compile_opts *o2 = cute_compile_opts_copy(res->o);
    cute_compiled *c2 = NULL;
    if (o2 && !cute_compile_opts_set(o2, "lineinfo", "true", NULL) && !cute_compile_opts_set(o2, "use_ptxas", "false", NULL) &&
        !cute_compile_opts_set(o2, "dump_dir", "", NULL) && !cute_compile_opts_set(o2, "keep", "ptx", NULL) &&
        !cute_compile_opts_set(o2, "cache", "false", NULL) &&
        !cute_compile(ir, o2, &c2, NULL)) {
      int m = same_line(c2->st[S_EMIT].text, src);
      if (m) ptx_loc(c2->st[S_EMIT].text, m, where, sizeof where);
    }
    cute_compiled_free(c2);
    cute_compile_opts_free(o2);
  }
  size_t len = strlen(msg);
  while (len && (msg[len - 1] == '\n' || msg[len - 1] == ' ')) msg[--len] = 0;
  snprintf(msg + len, cap - len, "\n  PTX line %d: %s%s%s", n, src, where[0] ? "\n  from the op at " : "", where);
}

/* ---- dump_dir -------------------------------------------------------------------------------- */
static uint32_t fnv(uint32_t h, const char *s) {
  for (; s && *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static int write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wbe");
  if (!f) return 1;
  int bad = fwrite(data, 1, n, f) != n;
  return fclose(f) || bad;
}

/* every kept stage as <dir>/<kernel>-<8 hex of hash(key, IR)>.<ext> */
static int dump(cute_compiled *res, char *msg, size_t cap) {
  const char *dir = res->o->dump_dir;
  if (!dir || !*dir) return 0;
  if (mkdir(dir, 0777) && errno != EEXIST) {
    snprintf(msg, cap, "dump_dir '%.400s': cannot create it: %s", dir, strerror(errno));
    return CUTE_E_ARG;
  }
  uint32_t h = fnv(fnv(2166136261u, res->key), res->st[S_VERIFY].text);
  char base[900];
  snprintf(base, sizeof base, "%.500s/%.200s-%08x", dir, res->nk ? res->k[0].name : "cute", (unsigned)h);
  static const struct { int keep, stage; const char *ext; } files[] = {
      {KEEP_IR, S_VERIFY, "ir"}, {KEEP_LLVM, S_OPTIMISE, "ll"}, {KEEP_PTX, S_EMIT, "ptx"}, {KEEP_SASS, S_SASS, "sass"}};
  char path[1000];
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    int s = files[i].stage;
    const char *t = res->st[s].text;
    if (s == S_OPTIMISE && !t) t = res->st[S_LOWER].text;
    if (!(res->o->keep_mask & files[i].keep) || !t) continue;
    snprintf(path, sizeof path, "%s.%s", base, files[i].ext);
    if (write_file(path, t, strlen(t))) goto fail;
  }
  if ((res->o->keep_mask & KEEP_CUBIN) && res->cubin) {
    snprintf(path, sizeof path, "%s.cubin", base);
    if (write_file(path, res->cubin, res->cubin_size)) goto fail;
  }
  return 0;
fail:
  snprintf(msg, cap, "dump_dir: cannot write %.800s: %s", path, strerror(errno));
  return CUTE_E_ARG;
}

/* drop the texts keep does not ask for (the loadable image stays) */
static void apply_keep(cute_compiled *res) {
  int k = res->o->keep_mask;
  if (!(k & KEEP_IR)) { free(res->st[S_VERIFY].text); res->st[S_VERIFY].text = NULL; }
  if (!(k & KEEP_LLVM)) {
    free(res->st[S_LOWER].text);
    free(res->st[S_OPTIMISE].text);
    res->st[S_LOWER].text = res->st[S_OPTIMISE].text = NULL;
  }
  if (!(k & KEEP_PTX) && res->cubin) { free(res->st[S_EMIT].text); res->st[S_EMIT].text = NULL; }
}

/* ---- the stages ------------------------------------------------------------------------------ */
static int run_sass(cute_compiled *res, char *msg, size_t cap) {
  const void *bin = res->cubin;
  size_t size = res->cubin_size;
  void *own = NULL;
  char *log = NULL;
  if (!bin) {
    const char *ptxas = ptxas_find();
    if (!ptxas) { snprintf(msg, cap, "sass: needs a cubin, and no ptxas was found to assemble one"); return CUTE_E_UNSUPPORTED; }
    if (!res->st[S_EMIT].text) { snprintf(msg, cap, "sass: no PTX to assemble"); return CUTE_E_STATE; }
    if (ptxas_run(ptxas, res->st[S_EMIT].text, res->arch, res->o->ptxas_options, res->o->lineinfo, &own, &size, &log,
                  msg, cap)) {
      free(log);
      return CUTE_E_PTXAS;
    }
    free(log);
    bin = own;
  }
  char *text = NULL;
  int rc = sass_run(bin, size, res->o->lineinfo, &text, msg, cap);
  free(own);
  if (!rc) { free(res->st[S_SASS].text); res->st[S_SASS].text = text; }
  return rc;
}

/* ---- the disk cache (cache.c) ---------------------------------------------------------------- */
/* Look the compile up: 0 the cache is not used (status says why), 1 a miss
   (dir and key set: store after the stages), 2 a hit (res filled). */
static int cache_lookup(cute_compiled *res, char *dir, size_t dcap, unsigned char key[32]) {
  cute_compile_opts *o = res->o;
  res->cache_status = "off";
  if (!o->cache) return 0;
  /* entries hold no LLVM text: a compile that keeps it runs every stage */
  if (o->keep_mask & KEEP_LLVM) { res->cache_status = "skipped"; return 0; }
  /* (a module of device functions only: nothing to load, nothing kept) */
  if (!res->nk) { res->cache_status = "skipped"; return 0; }
  cute_err e = {0};
  if (cute_cache_dir(dir, dcap, &e) || cute_cache_max_bytes(&(int64_t){0}, &e)) {
    res->cache_status = "refused";
    snprintf(res->cache_detail, sizeof res->cache_detail, "%s", e.msg);
    return 0;
  }
  double t = now_us();
  cache_key(res->st[S_VERIFY].text, o, key);
  sha256_hex(key, res->cache_key);
  cache_entry ce;
  char why[200];
  if (cache_read(dir, key, &ce, why, sizeof why)) {
    if (strcmp(why, "absent")) snprintf(res->cache_detail, sizeof res->cache_detail, "%s: rewritten", why);
    return 1;
  }
  /* the entry must be for this compile's kernels, arch and image kind */
  int ok = ce.nk == res->nk && !strcmp(ce.arch, res->arch) && (!ce.cubin == !o->use_ptxas);
  for (int i = 0; ok && i < res->nk; i++) ok = !strcmp(ce.k[i].name, res->k[i].name);
  if (!ok) {
    cache_entry_clear(&ce);
    snprintf(res->cache_detail, sizeof res->cache_detail, "entry does not match the compile: rewritten");
    return 1;
  }
  for (int i = 0; i < res->nk; i++) res->k[i].info = ce.k[i].info;
  res->st[S_EMIT].text = ce.ptx;
  res->st[S_ASSEMBLE].text = ce.ptxas_log;
  res->st[S_INFO].text = ce.info_text;
  res->cubin = ce.cubin;
  res->cubin_size = ce.cubin_size;
  ce.ptx = ce.ptxas_log = ce.info_text = NULL;
  ce.cubin = NULL;
  cache_entry_clear(&ce);
  res->cache_status = "hit";
  res->st[S_VERIFY].us = now_us() - t; /* (the time of the key and the read) */
  return 2;
}

static void cache_store(cute_compiled *res, const char *dir, const unsigned char key[32]) {
  cache_entry ce = {0};
  snprintf(ce.arch, sizeof ce.arch, "%s", res->arch);
  ce.ptx = res->st[S_EMIT].text;
  ce.cubin = res->cubin;
  ce.cubin_size = res->cubin_size;
  ce.ptxas_log = res->st[S_ASSEMBLE].text;
  ce.info_text = res->st[S_INFO].text;
  ce.nk = res->nk;
  cache_kernel ks[res->nk + 1];
  for (int i = 0; i < res->nk; i++) ks[i].name = res->k[i].name, ks[i].info = res->k[i].info;
  ce.k = ks;
  char msg[500];
  if (!ce.ptx || cache_write(dir, key, &ce, msg, sizeof msg)) {
    res->cache_status = "failed";
    snprintf(res->cache_detail, sizeof res->cache_detail, "%s", ce.ptx ? msg : "no PTX");
  } else {
    res->cache_status = "stored";
  }
}

static int finish(cute_compiled *res, int rc, char *msg, cute_err *err); /* msg: 2040 bytes */

int cute_compile(cute_ir *ir, const cute_compile_opts *oin, cute_compiled **out, cute_err *err) {
  if (out) *out = NULL;
  if (!ir || !out) return cute_err_setf(err, CUTE_E_STATE, "compile: NULL context or out");
  if (ir->err_code) return cute_ir_status(ir, err);
  cute_compiled *res = calloc(1, sizeof *res);
  if (!res) return cute_err_setf(err, CUTE_E_NOMEM, "out of memory");
  *out = res;
  res->failed = -1;
  res->o = cute_compile_opts_copy(oin);
  const char *key = res->o ? cute_compile_opts_key(res->o) : NULL;
  if (!key || !(res->key = dup_s(key))) return cute_err_setf(err, CUTE_E_NOMEM, "out of memory");
  cute_compile_opts *o = res->o;
  snprintf(res->arch, sizeof res->arch, "%s", o->arch);
  char msg[2040] = "";
  if (ir->nfuncs <= 1) return cute_err_setf(err, CUTE_E_ARG, "compile: no functions");
  if (init_kernels(ir, res)) return cute_err_setf(err, CUTE_E_NOMEM, "out of memory");
  int rc = 0, s = S_VERIFY;
  double t = now_us();
  res->st[S_VERIFY].text = ir_print_all(ir);
  if (!res->st[S_VERIFY].text) return cute_err_setf(err, CUTE_E_NOMEM, "out of memory");
  /* the disk cache: a hit skips every stage up to load_info */
  char cdir[1024];
  unsigned char ckey[32];
  int use_cache = cache_lookup(res, cdir, sizeof cdir, ckey);
  if (use_cache == 2) return finish(res, 0, msg, err);
  /* verify */
  res->st[S_VERIFY].ran = 1;
  for (int32_t i = 1; o->verify && i < ir->nfuncs && !rc; i++)
    if (ir_verify_func(ir, i, msg, sizeof msg)) rc = CUTE_E_VERIFY;
  res->st[S_VERIFY].us = now_us() - t;
  /* lower, link, optimise, emit_ptx: the code generator */
  static int (*const llvm_stage[4])(cg *, char **) = {cg_lower, cg_link, cg_optimise, cg_emit};
  cg *g = NULL;
  if (!rc && !(g = cg_new(ir, o, res->arch, msg, sizeof msg))) rc = CUTE_E_NOMEM;
  for (s = S_LOWER; !rc && s <= S_EMIT; s++) {
    t = now_us();
    res->st[s].ran = 1;
    /* the optimised module is printed only when kept (printing it costs up to a tenth
       of the compile of a large kernel: docs/HOPPER.md "Compile time") */
    int skip_text = s == S_OPTIMISE && !(o->keep_mask & KEEP_LLVM);
    rc = llvm_stage[s - S_LOWER](g, skip_text ? NULL : &res->st[s].text);
    res->st[s].us = now_us() - t;
    if (rc) break;
  }
  /* the module is printed once on success (after optimise); when link or
     optimise fails, as it stands then */
  if (rc && (s == S_LINK || s == S_OPTIMISE) && !res->st[S_LOWER].text) res->st[S_LOWER].text = cg_module_text(g);
  cg_free(g);
  /* assemble */
  if (!rc && o->use_ptxas) {
    s = S_ASSEMBLE;
    const char *ptxas = ptxas_find();
    t = now_us();
    res->st[s].ran = 1;
    if (!ptxas) {
      snprintf(msg, sizeof msg, "use_ptxas: no ptxas found (searched CUTE_PTXAS, $CUDA_HOME/bin, PATH, "
                                "/usr/local/cuda/bin); set use_ptxas = false to load PTX through the driver JIT");
      rc = CUTE_E_UNSUPPORTED;
    } else if (ptxas_run(ptxas, res->st[S_EMIT].text, res->arch, o->ptxas_options, o->lineinfo, &res->cubin,
                         &res->cubin_size, &res->st[s].text, msg, sizeof msg)) {
      rc = CUTE_E_PTXAS;
      explain_ptxas(ir, res, res->st[s].text, msg, sizeof msg);
    }
    res->st[s].us = now_us() - t;
  }
  /* load_info */
  if (!rc) {
    s = S_INFO;
    t = now_us();
    res->st[s].ran = 1;
    if (res->st[S_ASSEMBLE].text) apply_ptxas_info(res, res->st[S_ASSEMBLE].text);
    res->st[s].text = info_text(res);
    res->st[s].us = now_us() - t;
  }
  /* only verified IR is stored: a hit skips the verifier (verify is not in the key) */
  if (!rc && use_cache && o->verify) cache_store(res, cdir, ckey);
  else if (!rc && use_cache) res->cache_status = "skipped";
  if (rc && use_cache) res->cache_status = "none"; /* (a miss whose compile failed: nothing stored) */
  if (rc) res->failed = s;
  return finish(res, rc, msg, err);
}

/* the last steps of every compile (a cache hit too): sass, dump_dir, keep */
static int finish(cute_compiled *res, int rc, char *msg, cute_err *err) {
  if (!rc && (res->o->keep_mask & KEEP_SASS)) {
    double t = now_us();
    res->st[S_SASS].ran = 1;
    rc = run_sass(res, msg, 2040);
    res->st[S_SASS].us = now_us() - t;
    if (rc) res->failed = S_SASS;
  }
  char dmsg[1000];
  int drc = dump(res, dmsg, sizeof dmsg);
  apply_keep(res);
  if (rc) return cute_err_setf(err, rc, "%s", msg);
  if (drc) return cute_err_setf(err, drc, "%s", dmsg);
  if (err) { err->code = 0; err->msg[0] = 0; }
  return 0;
}

/* ---- the result ------------------------------------------------------------------------------ */
int cute_compiled_stage_count(cute_compiled *c) { return c ? S_N : 0; }
const char *cute_compiled_stage_name(cute_compiled *c, int i) { return c && i >= 0 && i < S_N ? stage_names[i] : NULL; }
double cute_compiled_stage_time_us(cute_compiled *c, int i) { return c && i >= 0 && i < S_N ? c->st[i].us : 0; }
const char *cute_compiled_stage_text(cute_compiled *c, int i) { return c && i >= 0 && i < S_N ? c->st[i].text : NULL; }
int cute_compiled_stage_ran(cute_compiled *c, int i) { return c && i >= 0 && i < S_N ? c->st[i].ran : 0; }
const char *cute_compiled_failed_stage(cute_compiled *c) { return c && c->failed >= 0 ? stage_names[c->failed] : NULL; }
const char *cute_compiled_arch(cute_compiled *c) { return c ? c->arch : NULL; }
const char *cute_compiled_key(cute_compiled *c) { return c ? c->key : NULL; }
const char *cute_compiled_cache_status(cute_compiled *c) { return c && c->cache_status ? c->cache_status : "none"; }
const char *cute_compiled_cache_detail(cute_compiled *c) { return c ? c->cache_detail : ""; }
const char *cute_compiled_cache_key(cute_compiled *c) { return c ? c->cache_key : ""; }

const char *cute_compiled_sass(cute_compiled *c, cute_err *err) {
  if (!c || !c->o) { cute_err_setf(err, CUTE_E_STATE, "sass: no compiled result"); return NULL; }
  if (c->st[S_SASS].text) return c->st[S_SASS].text;
  char msg[1200];
  double t = now_us();
  c->st[S_SASS].ran = 1;
  int rc = run_sass(c, msg, sizeof msg);
  c->st[S_SASS].us = now_us() - t;
  if (rc) { cute_err_setf(err, rc, "%s", msg); return NULL; }
  return c->st[S_SASS].text;
}

const char *cute_compiled_ir_text(cute_compiled *c) { return c ? c->st[S_VERIFY].text : NULL; }
const char *cute_compiled_llvm_ir(cute_compiled *c) {
  return c ? (c->st[S_OPTIMISE].text ? c->st[S_OPTIMISE].text : c->st[S_LOWER].text) : NULL;
}
const char *cute_compiled_ptx(cute_compiled *c) { return c ? c->st[S_EMIT].text : NULL; }
const char *cute_compiled_ptxas_log(cute_compiled *c) { return c ? c->st[S_ASSEMBLE].text : NULL; }
const void *cute_compiled_cubin(cute_compiled *c, size_t *size) {
  if (size) *size = c ? c->cubin_size : 0;
  return c ? c->cubin : NULL;
}
int cute_compiled_has_cubin(cute_compiled *c) { return c && c->cubin != NULL; }
int cute_compiled_kernel_count(cute_compiled *c) { return c ? c->nk : 0; }
const char *cute_compiled_kernel_name(cute_compiled *c, int i) { return c && i >= 0 && i < c->nk ? c->k[i].name : NULL; }
int cute_compiled_info(cute_compiled *c, const char *kernel, cute_kernel_info *out) {
  if (!c || !out) return CUTE_E_STATE;
  for (int i = 0; i < c->nk; i++)
    if (!kernel || !strcmp(kernel, c->k[i].name)) { *out = c->k[i].info; return 0; }
  return CUTE_E_ARG;
}
void cute_compiled_times(cute_compiled *c, cute_compile_times *out) {
  if (!out) return;
  memset(out, 0, sizeof *out);
  if (!c) return;
  out->verify_us = c->st[S_VERIFY].us;
  out->build_us = c->st[S_LOWER].us;
  out->link_us = c->st[S_LINK].us;
  out->opt_us = c->st[S_OPTIMISE].us;
  out->emit_us = c->st[S_EMIT].us;
  out->ptxas_us = c->st[S_ASSEMBLE].us;
  for (int i = 0; i < S_N; i++) out->total_us += c->st[i].us;
}
