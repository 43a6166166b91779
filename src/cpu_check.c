/* cpu_check.c -- the CPU target's bounds checks (always on) and checking
 * mode (docs/CPU_TARGET.md, "Checking mode").
 *
 * Bounds: every load, store and atomic of a warp goes through cpu_access
 * (cpu.h): the active lanes' [min, max + size) against the range that the
 * same instruction hit last in this launch; on a miss each lane is placed:
 * the block's shared memory (static + dynamic bytes), its own local array,
 * or a range of the registry of device memory (the host driver registers
 * every tensor).  An access outside them is a launch error; nothing is
 * accessed.
 *
 * Checking mode (cute_cpu_prog_set_check): per shared byte the last write
 * and the reads of the current barrier epoch (thread, instruction, atomic?)
 * and whether the block wrote it; per local byte whether its lane wrote it;
 * at barriers, the lanes and warps that arrive.  The first finding is the
 * launch error. */
#include "cpu.h"
#include "cpu_sm90.h"
#include "core.h"
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the registry of device memory ------------------------------------------------------ */

typedef struct mem_range {
  uint64_t lo, hi;
  int refs;
  char what[96];
} mem_range;

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static mem_range *mem;
static int nmem, capmem;

/* the first range with lo > a */
static int upper(uint64_t a) {
  int l = 0, h = nmem;
  while (l < h) {
    int mid = (l + h) / 2;
    if (mem[mid].lo <= a) l = mid + 1;
    else h = mid;
  }
  return l;
}

int cute_cpu_mem_add(uint64_t base, uint64_t bytes, const char *what, cute_err *err) {
  if (!base) return cute_err_setf(err, CUTE_E_ARG, "cute_cpu_mem_add: base is NULL");
  if (base + bytes < base) return cute_err_setf(err, CUTE_E_ARG, "cute_cpu_mem_add: the range wraps around");
  int rc = 0;
  pthread_mutex_lock(&mem_mu);
  int i = upper(base);
  for (int j = i - 1; j >= 0 && mem[j].lo == base; j--)
    if (mem[j].hi == base + bytes) {
      mem[j].refs++;
      if (what) snprintf(mem[j].what, sizeof mem[j].what, "%s", what);
      goto done;
    }
  if (nmem == capmem) {
    int cap = capmem ? capmem * 2 : 64;
    mem_range *q = realloc(mem, (size_t)cap * sizeof *q);
    if (!q) { rc = cute_err_setf(err, CUTE_E_NOMEM, "cute_cpu_mem_add: out of memory"); goto done; }
    mem = q; capmem = cap;
  }
  memmove(mem + i + 1, mem + i, (size_t)(nmem - i) * sizeof *mem);
  mem[i].lo = base; mem[i].hi = base + bytes; mem[i].refs = 1;
  snprintf(mem[i].what, sizeof mem[i].what, "%s", what ? what : "");
  nmem++;
done:
  pthread_mutex_unlock(&mem_mu);
  return rc;
}

void cute_cpu_mem_remove(uint64_t base, uint64_t bytes) {
  pthread_mutex_lock(&mem_mu);
  for (int j = upper(base) - 1; j >= 0 && mem[j].lo == base; j--)
    if (mem[j].hi == base + bytes) {
      if (--mem[j].refs == 0) {
        memmove(mem + j, mem + j + 1, (size_t)(nmem - j - 1) * sizeof *mem);
        nmem--;
      }
      break;
    }
  pthread_mutex_unlock(&mem_mu);
}

int cute_cpu_mem_count(void) {
  pthread_mutex_lock(&mem_mu);
  int n = nmem;
  pthread_mutex_unlock(&mem_mu);
  return n;
}

/* the range holding [a, a + size) into *lo, *hi (under mem_mu); 0 when none */
static int mem_find(uint64_t a, uint64_t size, uint64_t *lo, uint64_t *hi) {
  for (int j = upper(a) - 1; j >= 0; j--)
    if (mem[j].hi >= a + size && a + size >= a) { *lo = mem[j].lo; *hi = mem[j].hi; return 1; }
  return 0;
}

#define NEAR ((uint64_t)1 << 20) /* an address this close to a range is described from it */

/* where a global access of size bytes at a is, relative to the registered ranges */
static void mem_describe(uint64_t a, uint64_t size, char *buf, size_t n) {
  pthread_mutex_lock(&mem_mu);
  int i = upper(a) - 1; /* the range starting at or below a, nearest first */
  const mem_range *below = NULL, *above = i + 1 < nmem ? &mem[i + 1] : NULL;
  for (int j = i; j >= 0 && !below; j--) if (mem[j].hi > a || j == i) below = &mem[j];
  uint64_t db = below && a >= below->hi ? a - below->hi : 0, da = above ? above->lo - a : 0;
  if (a < 4096) snprintf(buf, n, "a null pointer");
  else if (below && a < below->hi)
    snprintf(buf, n, "its last %" PRIu64 " bytes past the end of a %" PRIu64 "-byte global allocation%s%s",
             a + size - below->hi, below->hi - below->lo, below->what[0] ? ": " : "", below->what);
  else if (below && db < NEAR && (!above || db <= da))
    snprintf(buf, n, "%" PRIu64 " bytes past the end of a %" PRIu64 "-byte global allocation%s%s", db,
             below->hi - below->lo, below->what[0] ? ": " : "", below->what);
  else if (above && da < NEAR)
    snprintf(buf, n, "%" PRIu64 " bytes before the start of a %" PRIu64 "-byte global allocation%s%s", da,
             above->hi - above->lo, above->what[0] ? ": " : "", above->what);
  else
    snprintf(buf, n, "not device memory: no tensor of the CPU target holds it (host memory the driver did not "
             "allocate must be registered: cute.target_cpu.register)");
  pthread_mutex_unlock(&mem_mu);
}

/* ---- preparing a kernel ------------------------------------------------------------------ */

/* Is ref r a pointer at a constant byte offset into a local or shared array
   (its own, as a lane sees it)?  *off, *bytes: the offset and the array's
   bytes; 0 when not known. */
static int static_ptr(const cute_cpu_prog *p, int32_t r, int64_t *off, int64_t *bytes, int depth) {
  if (r <= 0 || r >= p->n || depth > 8) return 0;
  const cpu_ins *in = &p->ins[r];
  if (in->op == IR_LOCAL || in->op == IR_SHARED) {
    const ir_type *pt = &p->ir->types[p->f->inst[r].type];
    *off = 0;
    *bytes = (int64_t)ir_tsize(p->ir, pt->elem) * in->imm;
    return 1;
  }
  if (in->op == IR_PTRCAST) return static_ptr(p, in->a[0], off, bytes, depth + 1);
  if (in->op != IR_GEP || in->a[1] >= 0 || !static_ptr(p, in->a[0], off, bytes, depth + 1)) return 0;
  const ir_const *c = &p->f->cst[-in->a[1]];
  int64_t k = c->bits; /* (integers: sign- or zero-extended by their type) */
  if (k < -((int64_t)1 << 40) || k > ((int64_t)1 << 40)) return 0;
  *off += k * in->aux;
  return 1;
}

void cpu_check_prepare(cute_cpu_prog *p) {
  int nloc = 0;
  for (int32_t r = 1; r < p->n; r++) {
    cpu_ins *in = &p->ins[r];
    if (in->op == IR_LOAD || in->op == IR_STORE || in->op == IR_ATOM || in->op == IR_CAS) {
      /* aux: the pointer's address space, | CPU_INBOUNDS when a constant offset into a
         local or static shared array proves every access in bounds */
      int32_t pt = ir_vtype(p->f, in->a[0]);
      int64_t off, bytes, size = in->op == IR_STORE ? in->bsize : in->size;
      in->aux = pt > 0 && pt < p->ir->ntypes && p->ir->types[pt].kind == CUTE_T_PTR ? p->ir->types[pt].n : 0;
      if (static_ptr(p, in->a[0], &off, &bytes, 0) && off >= 0 && off + size <= bytes) in->aux |= CPU_INBOUNDS;
    }
    nloc += in->op == IR_LOCAL;
  }
  p->loc = nloc ? calloc((size_t)nloc, sizeof *p->loc) : NULL;
  p->nloc = 0;
  for (int32_t r = 1; r < p->n && p->loc; r++) {
    const cpu_ins *in = &p->ins[r];
    if (in->op != IR_LOCAL) continue;
    const ir_type *pt = &p->ir->types[p->f->inst[r].type];
    int64_t *l = p->loc[p->nloc++];
    l[0] = in->aux; l[1] = in->imm2; l[2] = (int64_t)ir_tsize(p->ir, pt->elem) * in->imm;
  }
}

void cute_cpu_prog_set_check(cute_cpu_prog *p, int flags) { if (p) p->check = flags & CUTE_CPU_CHECK_ALL; }

/* ---- the checking mode's state ----------------------------------------------------------- */

typedef struct shb {     /* one shared byte */
  uint32_t wep, rep;     /* barrier epoch of the last write, of the reads (0: none) */
  uint32_t wseq;         /* the warp access that wrote it last */
  int32_t wref, rref;    /* their instructions */
  uint16_t wthr, rthr;   /* their threads (linear in the block) */
  uint8_t wat, rat;      /* atomic? (reads: all of them) */
  uint8_t rmulti, init;  /* read by several warps in the epoch; written in this block */
  uint8_t wmulti;        /* written (atomically) by several warps in the epoch */
} shb;

struct cpu_chk {
  uint32_t epoch, seq;
  size_t nsh;
  shb *sh;
  uint8_t *linit;        /* per local byte of each warp: written by its lane */
  size_t nlinit;
};

int cpu_check_begin(cpu_launch *L, int nw, size_t shared_bytes) {
  const cute_cpu_prog *p = L->p;
  L->hit = calloc((size_t)p->n + 1, sizeof *L->hit);
  if (!L->hit) return cute_err_setf(L->err, CUTE_E_NOMEM, "cute (cpu target): kernel %s: out of memory", p->name);
  if (!p->check) return 0;
  struct cpu_chk *c = calloc(1, sizeof *c);
  if (!c) return cute_err_setf(L->err, CUTE_E_NOMEM, "cute (cpu target): kernel %s: out of memory", p->name);
  L->chk = c;
  c->nsh = shared_bytes;
  c->nlinit = p->local_bytes * (size_t)nw;
  c->sh = calloc(c->nsh + 1, sizeof *c->sh);
  c->linit = calloc(c->nlinit + 1, 1);
  if (!c->sh || !c->linit)
    return cute_err_setf(L->err, CUTE_E_NOMEM, "cute (cpu target): kernel %s: out of memory for the checking mode",
                         p->name);
  return 0;
}

void cpu_check_block(cpu_launch *L) {
  struct cpu_chk *c = L->chk;
  if (!c) return;
  memset(c->sh, 0, c->nsh * sizeof *c->sh);
  memset(c->linit, 0, c->nlinit);
  c->epoch = 1;
}

void cpu_check_epoch(cpu_launch *L) { if (L->chk) L->chk->epoch++; }

void cpu_check_end(cpu_launch *L) {
  free(L->hit);
  L->hit = NULL;
  if (!L->chk) return;
  free(L->chk->sh); free(L->chk->linit); free(L->chk);
  L->chk = NULL;
}

/* ---- reports ----------------------------------------------------------------------------- */

static const char *kind_name(int kind) { return kind == CPU_LD ? "load" : kind == CPU_ST ? "store" : "atomic"; }

static void thr_xyz(const cpu_launch *L, unsigned lin, unsigned xyz[3]) {
  xyz[0] = lin % L->block[0];
  xyz[1] = lin / L->block[0] % L->block[1];
  xyz[2] = lin / (L->block[0] * L->block[1]);
}

static void where(const cpu_launch *L, int32_t ref, char *buf, size_t n) {
  const ir_inst *ii = &L->p->f->inst[ref];
  snprintf(buf, n, "%s:%d", ii->file ? ir_strget(L->p->ir, ii->file) : "?", ii->line);
}

static int oob(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, uint64_t a, int size, int kind, const char *why) {
  return cpu_fail(L, in, "out-of-bounds %s of %d bytes at 0x%" PRIx64 " (%s) (thread (%u,%u,%u))", kind_name(kind),
                  size, a, why, w->tid[0][t], w->tid[1][t], w->tid[2][t]);
}

/* ---- shared memory in checking mode ------------------------------------------------------- */

static int race(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, int kind, int size, uint64_t off, int b,
                const char *prev, unsigned pthr, int32_t pref) {
  unsigned o[3];
  char at[300];
  thr_xyz(L, pthr, o);
  where(L, pref, at, sizeof at);
  char byte[64] = "";
  if (size > 1) snprintf(byte, sizeof byte, " (its byte %d)", b);
  return cpu_fail(L, in, "shared-memory race: %s of %d bytes at shared offset %" PRIu64 "%s after %s of the same "
                  "byte by thread (%u,%u,%u) at %s with no barrier between them (thread (%u,%u,%u))", kind_name(kind),
                  size, off, byte, prev, o[0], o[1], o[2], at, w->tid[0][t], w->tid[1][t], w->tid[2][t]);
}

static int shared_access(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const uint64_t *pa, uint32_t m, int size,
                         int kind, const uint8_t *x) {
  struct cpu_chk *c = L->chk;
  int flags = L->p->check, W = w->index;
  uint32_t E = c->epoch, seq = ++c->seq;
  int rd = kind != CPU_ST, wr = kind != CPU_LD, at = kind == CPU_AT;
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(m >> t & 1)) continue;
    unsigned thr = (unsigned)W * CPU_LANES + (unsigned)t;
    uint64_t off = pa[t] - L->slo;
    for (int b = 0; b < size; b++) {
      shb *s = &c->sh[off + (uint64_t)b];
      if (rd && (flags & CUTE_CPU_CHECK_INIT) && !s->init)
        return cpu_fail(L, in, "uninitialised %s of %d bytes at shared offset %" PRIu64 ": no thread of the block "
                        "wrote byte %" PRIu64 " before (thread (%u,%u,%u))", kind_name(kind), size, off,
                        off + (uint64_t)b, w->tid[0][t], w->tid[1][t], w->tid[2][t]);
      if (flags & CUTE_CPU_CHECK_RACE) {
        int other_w = s->wep == E && (s->wmulti || s->wthr / CPU_LANES != (unsigned)W) && !(at && s->wat);
        if (other_w) return race(L, in, w, t, kind, size, off, b, s->wat ? "an atomic" : "a store", s->wthr, s->wref);
        if (wr && s->rep == E && (s->rmulti || s->rthr / CPU_LANES != (unsigned)W) && !(at && s->rat))
          return race(L, in, w, t, kind, size, off, b, s->rat ? "an atomic" : "a load", s->rthr, s->rref);
        if (kind == CPU_ST && s->wep == E && s->wseq == seq && s->wthr != thr) {
          int t2 = s->wthr % CPU_LANES;
          uint64_t b2 = pa[t] + (uint64_t)b - pa[t2];
          if (x[(size_t)t2 * (size_t)size + b2] != x[(size_t)t * (size_t)size + (size_t)b])
            return race(L, in, w, t, kind, size, off, b, "a store (of another value, in the same instruction)",
                        s->wthr, s->wref);
        }
      }
      if (rd) {
        if (s->rep != E) { s->rep = E; s->rthr = (uint16_t)thr; s->rref = in->ref; s->rat = (uint8_t)at; s->rmulti = 0; }
        else {
          if (s->rthr / CPU_LANES != (unsigned)W) { s->rmulti = 1; s->rthr = (uint16_t)thr; s->rref = in->ref; }
          s->rat &= (uint8_t)at;
        }
      }
      if (wr) {
        int other = s->wep == E && s->wthr / CPU_LANES != (unsigned)W;
        s->wmulti = s->wep == E && (s->wmulti || other);
        if (!other || !s->wmulti) { s->wthr = (uint16_t)thr; s->wref = in->ref; } /* (keep another warp's for reports) */
        s->wep = E; s->wseq = seq; s->wat = (uint8_t)at; s->init = 1;
      }
    }
  }
  return 0;
}

/* ---- the slow path of cpu_access ------------------------------------------------------------ */

/* is [a, a + size) lane t's own local array?  1 yes, 0 no, -1 not local memory */
static int local_ok(const cpu_launch *L, const cpu_warp *w, int t, uint64_t a, int size, uint64_t *lin) {
  const cute_cpu_prog *p = L->p;
  uint64_t base = (uint64_t)(uintptr_t)w->local;
  if (!w->local || a < base || a >= base + p->local_bytes) return -1;
  uint64_t o = a - base;
  *lin = o;
  for (int k = 0; k < p->nloc; k++) {
    const int64_t *l = p->loc[k];
    if (o < (uint64_t)l[0] || o >= (uint64_t)l[0] + (uint64_t)l[1] * CPU_LANES) continue;
    uint64_t r = o - (uint64_t)l[0];
    return r / (uint64_t)l[1] == (uint64_t)t && r % (uint64_t)l[1] + (uint64_t)size <= (uint64_t)l[2];
  }
  return 0;
}

/* a load inside a by-value bytes parameter of this launch (param.addr) */
static int in_bytes_param(const cpu_launch *L, uint64_t a, uint64_t size) {
  for (int j = 0; j < L->p->nparams; j++) {
    const cpu_ins *pi = &L->p->ins[j + 1];
    uint64_t b = (uint64_t)(uintptr_t)L->params[j];
    if (pi->aux && a >= b && a + size <= b + (uint64_t)pi->bsize) return 1;
  }
  return 0;
}

/* inside the shared bytes of one CTA of the launch's cluster (distributed shared memory) */
static int in_cluster_smem(const cpu_launch *L, uint64_t a, uint64_t size) {
  const cpu_sm90 *S = L->sm90;
  if (!S || !S->base || S->nb < 2) return 0;
  uint64_t b = (uint64_t)(uintptr_t)S->base;
  if (a < b || a + size > b + S->stride * (uint64_t)S->nb) return 0;
  uint64_t off = (a - b) % S->stride;
  return off + size <= S->shbytes;
}

int cpu_access_slow(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const uint64_t *pa, uint32_t m, int size,
                    int kind, const uint8_t *x, uint64_t lo, uint64_t hi, int as) {
  uint64_t *hit = L->hit[in->ref];
  (void)lo; (void)hi;
  int global = 0, shared = 0;
  uint64_t glo = 0, ghi = 0;
  char why[400];
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(m >> t & 1)) continue;
    uint64_t a = pa[t], lin = 0;
    if (as == CUTE_AS_SHARED || (as == CUTE_AS_GENERIC && a >= L->slo && a < L->shi)) {
      if (a >= L->slo && a + (uint64_t)size <= L->shi && a + (uint64_t)size > a) { shared = 1; continue; }
      uint64_t n = L->shi - L->slo;
      if (a >= L->shi) snprintf(why, sizeof why, "%" PRIu64 " bytes past the end of the block's %" PRIu64
                                " bytes of shared memory", a - L->shi, n);
      else snprintf(why, sizeof why, "%" PRIu64 " bytes before the start of the block's %" PRIu64
                    " bytes of shared memory", L->slo - a, n);
      if (a >= L->slo && a < L->shi) snprintf(why, sizeof why, "its last %" PRIu64 " bytes past the end of the block's %" PRIu64
                               " bytes of shared memory", a + (uint64_t)size - L->shi, n);
      return oob(L, in, w, t, a, size, kind, why);
    }
    int lok = as == CUTE_AS_GLOBAL ? -1 : local_ok(L, w, t, a, size, &lin);
    if (lok == 1) {
      if (!L->chk || !(L->p->check & CUTE_CPU_CHECK_INIT)) continue;
      uint8_t *li = L->chk->linit + L->p->local_bytes * (size_t)w->index + lin;
      if (kind == CPU_ST) { memset(li, 1, (size_t)size); continue; }
      for (int b = 0; b < size; b++)
        if (!li[b]) return cpu_fail(L, in, "uninitialised load of %d bytes of thread (%u,%u,%u)'s local array: "
                                    "byte %d was never written (thread (%u,%u,%u))", size, w->tid[0][t], w->tid[1][t],
                                    w->tid[2][t], b, w->tid[0][t], w->tid[1][t], w->tid[2][t]);
      continue;
    }
    if (lok == 0 || as == CUTE_AS_LOCAL) {
      snprintf(why, sizeof why, "outside thread (%u,%u,%u)'s local arrays", w->tid[0][t], w->tid[1][t], w->tid[2][t]);
      return oob(L, in, w, t, a, size, kind, why);
    }
    if (global && a >= glo && a + (uint64_t)size <= ghi) continue;
    if (kind == CPU_LD && in_bytes_param(L, a, (uint64_t)size)) continue;
    if (in_cluster_smem(L, a, (uint64_t)size)) continue; /* another CTA's shared memory (mapa) */
    pthread_mutex_lock(&mem_mu);
    int found = mem_find(a, (uint64_t)size, &glo, &ghi);
    pthread_mutex_unlock(&mem_mu);
    if (!found) {
      mem_describe(a, (uint64_t)size, why, sizeof why);
      return oob(L, in, w, t, a, size, kind, why);
    }
    global++;
  }
  /* (the range, as cpu_access keeps it: base, and how many lane addresses are in bounds) */
  if (global == 1 && !shared) { hit[0] = glo; hit[1] = ghi - glo - (uint64_t)size + 1; }
  else if (shared && !global && !L->chk) { hit[0] = L->slo; hit[1] = L->shi - L->slo - (uint64_t)size + 1; }
  if (shared && L->chk) {
    if (global) return 0; /* (a generic access over two spaces: not tracked) */
    return shared_access(L, in, w, pa, m, size, kind, x);
  }
  return 0;
}

/* ---- barriers in checking mode -------------------------------------------------------------- */

int cpu_check_bar(cpu_launch *L, const cpu_ins *in, cpu_warp *w) {
  if (!L->chk || !(L->p->check & CUTE_CPU_CHECK_SYNC)) return 0;
  uint32_t live = w->all & ~w->exited, miss = live & ~w->mask;
  if (!miss) return 0;
  int t = __builtin_ctz(miss), a = __builtin_ctz(w->mask);
  return cpu_fail(L, in, "barrier divergence: barrier %d reached by %d of warp %d's %d live threads; thread "
                  "(%u,%u,%u) is on another path (thread (%u,%u,%u))", (int)in->imm, __builtin_popcount(w->mask),
                  w->index, __builtin_popcount(live), w->tid[0][t], w->tid[1][t], w->tid[2][t], w->tid[0][a],
                  w->tid[1][a], w->tid[2][a]);
}

/* before the barriers are released: the warps waiting at one block-wide
   barrier (no thread count) wait at one instruction (warps that finished, by `return` or at the kernel's end,
   are not waited for: the engine's rule and the GPU's) */
int cpu_check_release(cpu_launch *L, cpu_warp *ws, int nw) {
  if (!L->chk || !(L->p->check & CUTE_CPU_CHECK_SYNC)) return 0;
  for (int i = 0; i < nw; i++) {
    if (ws[i].state != CPU_WAIT) continue;
    const cpu_ins *bi = &L->p->ins[ws[i].pc - 1];
    for (int j = 0; j < nw; j++) {
      char at[300];
      const cpu_warp *o = &ws[j];
      if (o->state == CPU_WAIT && o->bar_id == ws[i].bar_id && o->pc != ws[i].pc && ws[i].bar_count == 0 &&
          o->bar_count == 0) {
        where(L, o->pc - 1, at, sizeof at);
        return cpu_fail(L, bi, "barrier divergence: warp %d waits at barrier %d here, warp %d at another barrier "
                        "instruction at %s (thread (%u,%u,%u))", i, ws[i].bar_id, j, at, ws[i].tid[0][0],
                        ws[i].tid[1][0], ws[i].tid[2][0]);
      }
    }
  }
  return 0;
}
