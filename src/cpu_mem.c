/* cpu_mem.c -- the CPU target's ops with effects or per-thread state:
 * loads and stores (global memory = host pointers; shared memory = the
 * block's buffer; local = the warp's), special registers, shuffles and votes
 * over the 32 lanes, atomics, printf, assert, trap (docs/CPU_TARGET.md).
 * Every access of memory is checked first by cpu_access (cpu_check.c: bounds,
 * and the checking mode's tracking). */
#include "cpu.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rd_u(const uint8_t *p, int size) {
  switch (size) {
  case 1: return *p;
  case 2: return *(const uint16_t *)p;
  case 4: return *(const uint32_t *)p;
  default: return *(const uint64_t *)p;
  }
}

static uint32_t pred_mask(const uint8_t *c, uint32_t m) {
  uint32_t r = 0;
  for (int t = 0; t < CPU_LANES; t++) r |= (uint32_t)(c[t] & 1) << t;
  return r & m;
}

static uint32_t sreg(cpu_launch *L, cpu_warp *w, int which, int t) {
  switch (which) {
  case 0: case 1: case 2: return w->tid[which][t];
  case 3: case 4: case 5: return L->block[which - 3];
  case 6: case 7: case 8: return L->ctaid[which - 6];
  case 9: case 10: case 11: return L->grid[which - 9];
  case 12: return (uint32_t)t;
  case 13: return (uint32_t)w->index;
  case 14: return 64;
  case 15: return 0;
  case 16: return 1;
  case 20: return (1u << t) - 1;
  case 21: return t == 31 ? 0xffffffffu : (2u << t) - 1;
  case 22: return 1u << t;
  case 23: return ~((1u << t) - 1);
  case 24: return t == 31 ? 0 : ~((2u << t) - 1);
  default: return 0;
  }
}

static int shfl(const cpu_ins *in, cpu_warp *w) {
  const uint8_t *x = w->vp[in->a[0]], *b = w->vp[in->a[1]];
  uint8_t *d = w->vp[in->ref];
  int s = in->size, width = in->imm2 > 0 ? (int)in->imm2 : 32;
  uint32_t seg = (uint32_t)(32 - width), clamp = in->imm == 1 ? 0u : 0x1fu;
  for (int t = 0; t < CPU_LANES; t++) {
    uint32_t lane = (uint32_t)t, bv = ((const uint32_t *)b)[t];
    uint32_t minl = lane & seg, maxl = minl | (clamp & ~seg);
    int64_t j;
    int ok;
    switch (in->imm) {
    case 0: j = minl | (bv & 31 & ~seg); ok = j <= maxl; break;
    case 1: j = (int64_t)lane - bv; ok = j >= (int64_t)maxl; break;
    case 2: j = (int64_t)lane + bv; ok = j <= maxl; break;
    default: j = lane ^ (bv & 31); ok = j <= maxl; break;
    }
    if (!ok || j < 0 || j > 31) j = lane;
    memcpy(d + (size_t)t * (size_t)s, x + (size_t)j * (size_t)s, (size_t)s);
  }
  return 0;
}

static int vote(const cpu_ins *in, cpu_warp *w) {
  uint32_t mm = ((const uint32_t *)w->vp[in->a[0]])[__builtin_ctz(w->mask)];
  uint32_t m = w->mask & mm;
  uint32_t yes = pred_mask(w->vp[in->a[1]], m);
  uint8_t *d = w->vp[in->ref];
  if (in->imm == 3) { for (int t = 0; t < CPU_LANES; t++) ((uint32_t *)d)[t] = yes; return 0; }
  uint8_t r = in->imm == 0 ? yes == m : in->imm == 1 ? yes != 0 : (yes == 0 || yes == m);
  memset(d, r, CPU_LANES);
  return 0;
}

/* one atomic read-modify-write at p (lanes in order) */
#define ATOM_INT(T) do { T *q = (T *)ptr, x = *(const T *)xv, old = *q; T nv = old; \
    switch (op) { case 0: nv = (T)(old + x); break; case 1: nv = old < x ? old : x; break; \
    case 2: nv = old > x ? old : x; break; case 3: nv = old & x; break; case 4: nv = old | x; break; \
    case 5: nv = old ^ x; break; case 6: nv = x; break; \
    case 7: nv = old >= x ? 0 : (T)(old + 1); break; \
    default: nv = (old == 0 || old > x) ? x : (T)(old - 1); break; } \
    *q = nv; *(T *)dv = old; } while (0)

static int atom1(int k, int op, void *ptr, const uint8_t *xv, uint8_t *dv) {
  switch (k) {
  case CUTE_T_I32: ATOM_INT(int32_t); return 0;
  case CUTE_T_U32: ATOM_INT(uint32_t); return 0;
  case CUTE_T_I64: ATOM_INT(int64_t); return 0;
  case CUTE_T_U64: ATOM_INT(uint64_t); return 0;
  case CUTE_T_F32: { float *q = ptr, old = *q; if (op == 0) *q = old + *(const float *)xv; else *q = *(const float *)xv; *(float *)dv = old; return 0; }
  case CUTE_T_F64: { double *q = ptr, old = *q; if (op == 0) *q = old + *(const double *)xv; else *q = *(const double *)xv; *(double *)dv = old; return 0; }
  default: return 1;
  }
}

/* printf: one conversion at a time with the argument of its type */
static void out_put(cute_cpu_prog *p, const char *s, size_t n) {
  if (p->oom) return;
  if (p->nout + n + 1 > p->capout) {
    size_t cap = p->capout ? p->capout * 2 : 4096;
    while (cap < p->nout + n + 1) cap *= 2;
    char *q = realloc(p->out, cap);
    if (!q) { p->oom = 1; return; }
    p->out = q; p->capout = cap;
  }
  memcpy(p->out + p->nout, s, n);
  p->nout += n;
  p->out[p->nout] = 0;
}

static void do_printf(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t) {
  cute_cpu_prog *p = L->p;
  const ir_inst *ii = &p->f->inst[in->ref];
  const int32_t *args = ir_args(p->f, ii);
  const char *f = ir_strget(p->ir, (int32_t)in->imm);
  int ai = 0;
  char buf[512], spec[64];
  while (*f) {
    const char *pc = strchr(f, '%');
    if (!pc) { out_put(p, f, strlen(f)); break; }
    out_put(p, f, (size_t)(pc - f));
    if (pc[1] == '%') { out_put(p, "%", 1); f = pc + 2; continue; }
    size_t k = 1;
    while (pc[k] && strchr("-+ #0123456789.*hlLqjzt", pc[k])) k++;
    char conv = pc[k];
    if (!conv) { out_put(p, pc, k); break; }
    /* the spec without length modifiers, then ours */
    size_t sn = 0;
    for (size_t i = 0; i < k && sn < sizeof spec - 4; i++)
      if (!strchr("hlLqjzt", pc[i])) spec[sn++] = pc[i];
    f = pc + k + 1;
    if (ai >= ii->nargs) { out_put(p, pc, k + 1); continue; }
    int32_t a = args[ai++];
    int32_t at = ir_vtype(p->f, a);
    int sz = ir_tsize(p->ir, at);
    const uint8_t *v = w->vp[a] + (size_t)t * (size_t)sz;
    int cls = at <= CUTE_T_F8E5M2 ? ir_scalar_class(at) : 2;
    int n;
    if (strchr("eEfFgGaA", conv)) {
      double x = at == CUTE_T_F32 ? *(const float *)v : at == CUTE_T_F64 ? *(const double *)v
               : at == CUTE_T_F16 ? cpu_h2f(*(const uint16_t *)v) : at == CUTE_T_BF16 ? cpu_bf2f(*(const uint16_t *)v) : 0;
      spec[sn] = conv; spec[sn + 1] = 0;
      n = snprintf(buf, sizeof buf, spec, x);
    } else if (conv == 'p') {
      spec[sn] = 'p'; spec[sn + 1] = 0;
      n = snprintf(buf, sizeof buf, spec, (void *)(uintptr_t)rd_u(v, sz));
    } else if (conv == 's') {
      n = snprintf(buf, sizeof buf, "(string)");
    } else {
      uint64_t u = rd_u(v, sz);
      int64_t s = cls == 1 ? (sz == 1 ? (int8_t)u : sz == 2 ? (int16_t)u : sz == 4 ? (int32_t)u : (int64_t)u) : (int64_t)u;
      /* device printf promotes ints narrower than 32 bits to 32, and reads
         %d as 32 bits unless 'l' was given */
      int is64 = sz == 8;
      spec[sn] = 'l'; spec[sn + 1] = 'l'; spec[sn + 2] = conv; spec[sn + 3] = 0;
      if (!is64 && conv != 'c') s = strchr("di", conv) ? (int64_t)(int32_t)s : (int64_t)(uint32_t)s;
      if (conv == 'c') { spec[sn] = 'c'; spec[sn + 1] = 0; n = snprintf(buf, sizeof buf, spec, (int)s); }
      else n = snprintf(buf, sizeof buf, spec, (long long)s);
    }
    if (n > 0) out_put(p, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
  }
}

int cpu_side_ok(const cute_cpu_prog *p, const cpu_ins *in) {
  (void)p;
  switch (in->op) {
  case IR_LOAD: case IR_STORE: case IR_SHARED: case IR_DYNSHARED: case IR_LOCAL:
  case IR_FENCE: case IR_PRINTF: case IR_TRAP: case IR_ASSERT: case IR_SREG: case IR_VOTE:
  /* the control ops run_warp handles itself */
  case IR_PARAM: case IR_FOR: case IR_IF: case IR_ELSE: case IR_WHILE: case IR_DO: case IR_END:
  case IR_YIELD: case IR_BREAK: case IR_CONTINUE: case IR_RET: case IR_VAR: case IR_VGET: case IR_VSET:
  case IR_BAR:
    return 1;
  case IR_SHFL: return in->size == 4 || in->size == 8;
  case IR_ATOM: return in->nel == 1 && (in->sk == CUTE_T_I32 || in->sk == CUTE_T_U32 || in->sk == CUTE_T_I64 ||
                       in->sk == CUTE_T_U64 || ((in->sk == CUTE_T_F32 || in->sk == CUTE_T_F64) && (in->imm == 0 || in->imm == 6)));
  case IR_CAS: return in->size == 4 || in->size == 8;
  default: return 0;
  }
}

int cpu_side(cpu_launch *L, const cpu_ins *in, cpu_warp *w) {
  uint8_t *d = in->size > 0 ? w->vp[in->ref] : NULL;
  uint32_t m = w->mask;
  switch (in->op) {
  case IR_LOAD: {
    const uint64_t *pa = (const uint64_t *)w->vp[in->a[0]];
    int s = in->size, rc = cpu_access(L, in, w, pa, m, s, CPU_LD, NULL);
    if (rc) return rc;
    if (s == 4) { for (int t = 0; t < CPU_LANES; t++) if (m >> t & 1) memcpy(d + 4 * t, (const void *)(uintptr_t)pa[t], 4); }
    else for (int t = 0; t < CPU_LANES; t++) if (m >> t & 1) memcpy(d + (size_t)t * (size_t)s, (const void *)(uintptr_t)pa[t], (size_t)s);
    return 0;
  }
  case IR_STORE: {
    const uint64_t *pa = (const uint64_t *)w->vp[in->a[0]];
    const uint8_t *x = w->vp[in->a[1]];
    int s = in->bsize, rc = cpu_access(L, in, w, pa, m, s, CPU_ST, x);
    if (rc) return rc;
    for (int t = 0; t < CPU_LANES; t++) if (m >> t & 1) memcpy((void *)(uintptr_t)pa[t], x + (size_t)t * (size_t)s, (size_t)s);
    return 0;
  }
  case IR_SHARED: case IR_DYNSHARED: {
    uint64_t a = (uint64_t)(uintptr_t)L->smem + (uint64_t)(in->op == IR_SHARED ? (size_t)in->aux : L->p->dyn_off);
    for (int t = 0; t < CPU_LANES; t++) ((uint64_t *)d)[t] = a;
    return 0;
  }
  case IR_LOCAL: {
    uint64_t a = (uint64_t)(uintptr_t)w->local + (uint64_t)in->aux;
    for (int t = 0; t < CPU_LANES; t++) ((uint64_t *)d)[t] = a + (uint64_t)t * (uint64_t)in->imm2;
    return 0;
  }
  case IR_SREG: {
    int which = (int)in->imm;
    if (which == 17 || which == 18 || which == 19) {
      L->clock += 1;
      for (int t = 0; t < CPU_LANES; t++) {
        if (in->size == 8) ((uint64_t *)d)[t] = L->clock; else ((uint32_t *)d)[t] = (uint32_t)L->clock;
      }
      return 0;
    }
    for (int t = 0; t < CPU_LANES; t++) ((uint32_t *)d)[t] = sreg(L, w, which, t);
    return 0;
  }
  case IR_FENCE: return 0;
  case IR_SHFL: return shfl(in, w);
  case IR_VOTE: return vote(in, w);
  case IR_ATOM: case IR_CAS: {
    const uint64_t *pa = (const uint64_t *)w->vp[in->a[0]];
    const uint8_t *x = w->vp[in->a[1]];
    int s = in->size, rc = cpu_access(L, in, w, pa, m, s, CPU_AT, NULL);
    if (rc) return rc;
    for (int t = 0; t < CPU_LANES; t++) {
      if (!(m >> t & 1)) continue;
      void *q = (void *)(uintptr_t)pa[t];
      if (in->op == IR_CAS) {
        const uint8_t *nv = w->vp[in->a[2]];
        uint64_t old = rd_u(q, s), cmp = rd_u(x + (size_t)t * (size_t)s, s);
        if (old == cmp) memcpy(q, nv + (size_t)t * (size_t)s, (size_t)s);
        memcpy(d + (size_t)t * (size_t)s, &old, (size_t)s);
      } else atom1(in->sk, (int)in->imm, q, x + (size_t)t * (size_t)s, d + (size_t)t * (size_t)s);
    }
    return 0;
  }
  case IR_PRINTF:
    for (int t = 0; t < CPU_LANES; t++) if (m >> t & 1) do_printf(L, in, w, t);
    return 0;
  case IR_ASSERT: {
    uint32_t bad = m & ~pred_mask(w->vp[in->a[0]], m);
    if (!bad) return 0;
    int t = __builtin_ctz(bad);
    return cpu_fail(L, in, "assertion failed: %s (thread (%u,%u,%u))", ir_strget(L->p->ir, (int32_t)in->imm),
                    w->tid[0][t], w->tid[1][t], w->tid[2][t]);
  }
  case IR_TRAP:
    return cpu_fail(L, in, "trap (thread (%u,%u,%u))", w->tid[0][__builtin_ctz(m)], w->tid[1][__builtin_ctz(m)],
                    w->tid[2][__builtin_ctz(m)]);
  default:
    return cpu_fail(L, in, "op %s is not supported on the CPU target yet", ir_ops[in->op].name);
  }
}
