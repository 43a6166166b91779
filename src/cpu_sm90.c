/* cpu_sm90.c -- Hopper (sm_90) instructions on the CPU target
 * (docs/CPU_TARGET.md, "Hopper (sm_90)"): mbarriers (a 64-bit word of the
 * engine's own format), wgmma.mma_async per warp (each warp computes its 16
 * rows of the warpgroup's 64), TMA (the CPU target's tensor-map record,
 * cp.async.bulk.tensor tile and im2col modes, swizzles, OOB fill,
 * multicast), bulk copies, clusters (mapa, barrier.cluster, special
 * registers), elect.sync, setmaxnreg and the proxy fences.  Asynchronous
 * operations are performed when they are issued: a legal schedule (their
 * completion mechanisms -- mbarrier transactions, wait_group -- still hold). */
#include "cpu_sm90.h"
#include "cute_cuda.h"
#include "cute_cpu.h"
#include "core.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the asm texts that are several PTX instructions ------------------------------------ */

static const char WAIT_LOOP[] = "{\n.reg .pred P1;\nLAB_WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [$0], $1;\n"
                                "@!P1 bra LAB_WAIT;\n}";

/* tmpl, or buf holding the one-instruction form this file's parsers read:
   the mbarrier wait loop -> mbarrier.wait.parity (internal); wgmma's
   setp + wgmma -> wgmma with the scale-d register in place of the predicate;
   elect.sync's d|p -> d, p; mov of a cluster special register ->
   mov.u32.sreg.NAME; a TMA's [map, {coords}] -> [map], {coords};
   warpgroup.fence_operand's comment -> mov.fence_operand */
const char *cpu_sm90_rewrite(const char *tmpl, char *buf, size_t cap) {
  if (!strcmp(tmpl, WAIT_LOOP)) {
    snprintf(buf, cap, "mbarrier.wait.parity.shared::cta.b64 [$0], $1;");
    return buf;
  }
  static const char setp[] = "{\n.reg .pred p;\nsetp.ne.b32 p, $";
  if (!strncmp(tmpl, setp, sizeof setp - 1)) {
    const char *q = tmpl + sizeof setp - 1;
    int n = 0;
    while (*q >= '0' && *q <= '9') n = n * 10 + (*q++ - '0');
    if (strncmp(q, ", 0;\n", 5)) return tmpl;
    q += 5;
    const char *e = strstr(q, ";\n}");
    const char *pp = strstr(q, ", p,");
    if (!pp) pp = strstr(q, ", p;");
    if (!e || !pp || pp > e || (size_t)(e - q) + 16 >= cap) return tmpl;
    snprintf(buf, cap, "%.*s, $%d%.*s;", (int)(pp - q), q, n, (int)(e - pp - 3), pp + 3);
    return buf;
  }
  if (!strncmp(tmpl, "elect.sync _|$", 14)) {
    snprintf(buf, cap, "elect.sync _, %s", tmpl + 13);
    return buf;
  }
  if (!strncmp(tmpl, "mov.u32 $0, %", 13) && strstr(tmpl, "cluster")) {
    const char *nm = tmpl + 13;
    size_t l = strcspn(nm, ";");
    snprintf(buf, cap, "mov.u32.sreg.%.*s $0;", (int)l, nm);
    return buf;
  }
  if (!strcmp(tmpl, "// warpgroup.fence_operand")) {
    snprintf(buf, cap, "mov.fence_operand;");
    return buf;
  }
  if ((!strncmp(tmpl, "cp.async.bulk.tensor", 20) || !strncmp(tmpl, "cp.reduce.async.bulk.tensor", 27)) &&
      strlen(tmpl) + 1 < cap) {
    size_t k = 0;
    int inbr = 0;
    for (const char *q = tmpl; *q; q++) {
      if (*q == '[') inbr = 1;
      if (inbr && q[0] == ',' && q[1] == ' ' && q[2] == '{') { buf[k++] = ']'; inbr = 2; }
      if (inbr == 2 && q[0] == '}' && q[1] == ']') { buf[k++] = '}'; q++; inbr = 0; continue; }
      if (*q == ']') inbr = 0;
      buf[k++] = *q;
    }
    buf[k] = 0;
    return buf;
  }
  return tmpl;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static int need_full(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const char *what) {
  if (w->mask == w->all && w->all == 0xffffffffu) return 0;
  return cpu_fail(L, in, "%s needs all 32 threads of the warp (.sync.aligned); active lanes 0x%08x in warp %d", what,
                  w->mask, w->index);
}

static int wid(const cpu_launch *L, const cpu_warp *w) { return L->sm90->cur * L->sm90->nw + w->index; }

/* a 32-bit shared::cta / shared::cluster address of lane t -> its CTA and host bytes */
static int cl_addr(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, uint32_t a, size_t n, int cluster, int *rank,
                   uint8_t **p) {
  cpu_sm90 *S = L->sm90;
  uint32_t off = a - (uint32_t)(uintptr_t)S->base;
  size_t r = off / S->stride, o = off % S->stride;
  if (r >= (size_t)S->nb || o + n > L->smem_size || (!cluster && (int)r != S->cur))
    return cpu_fail(L, in, "shared%s address 0x%08x: %zu bytes outside %s (thread (%u,%u,%u))",
                    cluster ? "::cluster" : "::cta", a, n,
                    cluster ? "the shared memory of the cluster's CTAs" : "the block's shared memory",
                    w->tid[0][t], w->tid[1][t], w->tid[2][t]);
  if (rank) *rank = (int)r;
  *p = S->base + r * S->stride + o;
  return 0;
}

static uint32_t opnd32(const cpu_warp *w, const cpu_asm_op *a, int gi, int j, int t) {
  const cpu_item *it = &a->it[a->g[gi].first + j];
  if (it->kind == CPU_IT_IMM) return (uint32_t)it->v;
  return (uint32_t)cpu_opnd_u64(w, &a->op[it->v], t);
}
static int item_imm(const cpu_asm_op *a, int gi, int j, int64_t *v) {
  const cpu_item *it = &a->it[a->g[gi].first + j];
  *v = it->v;
  return it->kind == CPU_IT_IMM;
}

/* ---- mbarriers ---------------------------------------------------------------------------- */
/* The 64-bit word: pending arrivals (bits 0-19), expected arrivals (20-39),
   tx-count (40-60, two's complement), initialised (62), phase parity (63). */
#define MB_INIT (1ull << 62)
static uint64_t mb_pack(uint32_t pend, uint32_t expc, int32_t tx, unsigned phase) {
  return (uint64_t)(pend & 0xFFFFF) | (uint64_t)(expc & 0xFFFFF) << 20 | (uint64_t)((uint32_t)tx & 0x1FFFFF) << 40 | MB_INIT |
         (uint64_t)(phase & 1) << 63;
}
static int32_t mb_tx(uint64_t x) { int32_t v = (int32_t)(x >> 40 & 0x1FFFFF); return v & 0x100000 ? v - 0x200000 : v; }

enum { MB_INITOP, MB_ARRIVE, MB_ARRIVE_TX, MB_EXPECT_TX, MB_TRYWAIT, MB_WAIT };

/* arrivals and a tx change on the mbarrier at p (rank: its CTA, for messages) */
static int mb_update(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, uint8_t *p, uint32_t arrive, int64_t dtx) {
  uint64_t x;
  memcpy(&x, p, 8);
  uint32_t off = (uint32_t)((p - L->sm90->base) % L->sm90->stride);
  if (!(x & MB_INIT))
    return cpu_fail(L, in, "mbarrier at shared offset %u used before mbarrier.init (thread (%u,%u,%u))", off,
                    w ? w->tid[0][t] : 0, w ? w->tid[1][t] : 0, w ? w->tid[2][t] : 0);
  uint32_t pend = (uint32_t)(x & 0xFFFFF), expc = (uint32_t)(x >> 20 & 0xFFFFF);
  int64_t tx = mb_tx(x) + dtx;
  unsigned ph = (unsigned)(x >> 63);
  if (tx > 0xFFFFF || tx < -0xFFFFF)
    return cpu_fail(L, in, "mbarrier at shared offset %u: tx-count %lld outside the PTX ISA's range +-(2^20-1)", off,
                    (long long)tx);
  if (arrive > pend)
    return cpu_fail(L, in, "mbarrier at shared offset %u: %u arrivals where %u of the phase's %u are pending (more "
                    "arrivals than the count given to mbarrier.init)", off, arrive, pend, expc);
  pend -= arrive;
  if (pend == 0 && tx == 0) { ph ^= 1; pend = expc; }
  x = mb_pack(pend, expc, (int32_t)tx, ph);
  memcpy(p, &x, 8);
  L->sm90->events++;
  return 0;
}

static int run_mbarrier(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  int kind = a->m, cluster = a->flags & 1;
  int ga = kind == MB_ARRIVE || kind == MB_ARRIVE_TX || kind == MB_TRYWAIT ? 1 : 0;
  uint32_t notdone = 0;
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(w->mask >> t & 1)) continue;
    uint8_t *p;
    int rc = cl_addr(L, in, w, t, (uint32_t)cpu_opnd_u64(w, cpu_asm_opnd(a, ga, 0), t), 8, cluster, NULL, &p);
    if (rc) return rc;
    uint64_t x;
    memcpy(&x, p, 8);
    switch (kind) {
    case MB_INITOP: {
      uint32_t c = opnd32(w, a, 1, 0, t);
      if (c < 1 || c > 0xFFFFF) return cpu_fail(L, in, "mbarrier.init: count %u outside 1 .. 2^20-1", c);
      x = mb_pack(c, c, 0, 0);
      memcpy(p, &x, 8);
      L->sm90->events++;
      break;
    }
    case MB_ARRIVE: rc = mb_update(L, in, w, t, p, 1, 0); break;
    case MB_ARRIVE_TX: rc = mb_update(L, in, w, t, p, 1, opnd32(w, a, 2, 0, t)); break;
    case MB_EXPECT_TX: rc = mb_update(L, in, w, t, p, 0, opnd32(w, a, 1, 0, t)); break;
    default: { /* try_wait / wait: the phase of parity P completed once the current phase's parity differs */
      if (!(x & MB_INIT)) rc = mb_update(L, in, w, t, p, 0, 0); /* the error */
      uint32_t par = opnd32(w, a, kind == MB_TRYWAIT ? 2 : 1, 0, t) & 1;
      if ((unsigned)(x >> 63) == par) notdone |= 1u << t;
    }
    }
    if (rc) return rc;
  }
  if (kind != MB_TRYWAIT && kind != MB_WAIT) return 0;
  uint8_t *to = &L->sm90->timed_out[wid(L, w)];
  if (notdone && !(kind == MB_TRYWAIT && *to)) {
    w->state = CPU_WAIT;
    w->bar_id = kind == MB_TRYWAIT ? CPU_BAR_TRYWAIT : CPU_BAR_MBAR;
    return CPU_SUSPEND;
  }
  *to = 0;
  if (kind == MB_TRYWAIT) {
    const cpu_opnd *o = cpu_asm_opnd(a, 0, 0);
    for (int t = 0; t < CPU_LANES; t++)
      if (w->mask >> t & 1) *cpu_opnd_at(w, o, t) = !(notdone >> t & 1);
  }
  return 0;
}

/* mbarrier.{init,arrive[.expect_tx],expect_tx,try_wait.parity}[.sem][.scope].shared[::cta|::cluster].b64,
   and the engine's mbarrier.wait.parity (cpu_sm90_rewrite) */
int cpu_sm90_parse_mbarrier(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok < 3 || strcmp(tok[ntok - 1], "b64")) return 1;
  int i = 2;
  if (!strcmp(tok[1], "init")) a->m = MB_INITOP;
  else if (!strcmp(tok[1], "arrive") && ntok > 2 && !strcmp(tok[2], "expect_tx")) { a->m = MB_ARRIVE_TX; i = 3; }
  else if (!strcmp(tok[1], "arrive")) a->m = MB_ARRIVE;
  else if (!strcmp(tok[1], "expect_tx")) a->m = MB_EXPECT_TX;
  else if (!strcmp(tok[1], "try_wait") && !strcmp(tok[2], "parity")) { a->m = MB_TRYWAIT; i = 3; }
  else if (!strcmp(tok[1], "wait") && !strcmp(tok[2], "parity")) { a->m = MB_WAIT; i = 3; }
  else return 1;
  for (; i < ntok - 1; i++) {
    static const char *const ok[] = { "release", "relaxed", "acquire", "cta", "cluster", "shared", "shared::cta" };
    int known = !strcmp(tok[i], "shared::cluster");
    if (known) a->flags |= 1;
    for (size_t j = 0; j < sizeof ok / sizeof *ok; j++) known |= !strcmp(tok[i], ok[j]);
    if (!known) return 1;
  }
  static const int ngroups[] = { 2, 2, 3, 2, 3, 2 };
  if (a->ngroups != ngroups[a->m]) return 1;
  int ga = a->m == MB_ARRIVE || a->m == MB_ARRIVE_TX || a->m == MB_TRYWAIT ? 1 : 0;
  if (a->g[ga].kind != CPU_G_ADDR || !cpu_asm_is(a, ga, 0, 0, 4)) return 1;
  if (a->m == MB_ARRIVE || a->m == MB_ARRIVE_TX) /* the state result: discarded */
    if (a->it[a->g[0].first].kind != CPU_IT_SINK) return 1;
  if (a->m == MB_TRYWAIT && !cpu_asm_is(a, 0, 0, 1, a->op[0].size)) return 1;
  for (int g = ga + 1; g < a->ngroups; g++)
    if (a->g[g].kind != CPU_G_REG || a->g[g].count != 1 || a->it[a->g[g].first].kind == CPU_IT_SINK) return 1;
  a->run = run_mbarrier;
  return 0;
}

/* ---- wgmma -------------------------------------------------------------------------------- */

static int wg_type(const char *s, int *bits) {
  static const struct { const char *n; int k, b; } t[] = {
    { "f16", CUTE_T_F16, 16 }, { "bf16", CUTE_T_BF16, 16 }, { "tf32", CUTE_T_TF32, 32 }, { "f32", CUTE_T_F32, 32 },
    { "s8", CUTE_T_I8, 8 }, { "u8", CUTE_T_U8, 8 }, { "s32", CUTE_T_I32, 32 }, { "e4m3", CUTE_T_F8E4M3, 8 },
    { "e5m2", CUTE_T_F8E5M2, 8 },
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(s, t[i].n)) { *bits = t[i].b; return t[i].k; }
  return 0;
}

static double elem_val(int k, const uint8_t *p) {
  switch (k) {
  case CUTE_T_F16: { uint16_t h; memcpy(&h, p, 2); return cpu_h2f(h); }
  case CUTE_T_BF16: { uint16_t h; memcpy(&h, p, 2); return cpu_bf2f(h); }
  case CUTE_T_TF32: { uint32_t u; float f; memcpy(&u, p, 4); u &= ~0x1fffu; memcpy(&f, &u, 4); return f; }
  case CUTE_T_I8: return (int8_t)*p;
  case CUTE_T_U8: return *p;
  default: return cpu_f82f(*p, k == CUTE_T_F8E5M2);
  }
}

/* element (mn, k) of a descriptor's canonical layout: its byte offset in shared
   memory (the swizzle applied to the offset: the block's memory is 1024-aligned) */
typedef struct wg_desc { uint32_t start, lbo, sbo; int B, mn_major; } wg_desc;
static uint32_t desc_off(const wg_desc *d, int mn, int k, int eb) {
  uint32_t RW = 16u << d->B, o;
  if (!d->mn_major) {
    uint32_t kb = (uint32_t)(k * eb);
    o = (uint32_t)(mn % 8) * RW + (uint32_t)(mn / 8) * d->sbo + kb % 16 + kb / 16 * d->lbo;
  } else if (d->B == 0) {
    uint32_t b = (uint32_t)(mn * eb);
    o = b % 16 + b / 16 * d->sbo + (uint32_t)(k % 8) * 16 + (uint32_t)(k / 8) * d->lbo;
  } else {
    uint32_t b = (uint32_t)(mn * eb);
    o = b % RW + b / RW * d->lbo + (uint32_t)(k % 8) * RW + (uint32_t)(k / 8) * d->sbo;
  }
  o += d->start;
  if (d->B) o ^= ((o >> 7) & ((1u << d->B) - 1)) << 4;
  return o;
}

/* the descriptor of lane 0 (warp-uniform) -> its fields, the start as an offset in the block's memory */
static int desc_read(cpu_launch *L, const cpu_ins *in, uint64_t v, int mn_major, wg_desc *d, const char *which) {
  static const int B[4] = { 0, 3, 2, 1 };
  uint32_t base18 = (uint32_t)(uintptr_t)L->smem & 0x3FFFF;
  d->start = (((uint32_t)(v & 0x3FFF) << 4) - base18) & 0x3FFFF;
  d->lbo = (uint32_t)(v >> 16 & 0x3FFF) << 4;
  d->sbo = (uint32_t)(v >> 32 & 0x3FFF) << 4;
  d->B = B[v >> 62];
  d->mn_major = mn_major;
  if (v >> 49 & 7)
    return cpu_fail(L, in, "wgmma: the %s descriptor's base offset %u is not supported on the CPU target (0 only)", which,
                    (unsigned)(v >> 49 & 7));
  return 0;
}

/* the warp's 16 rows of D = A B (+ D): the warpgroup's rows 16 (warp % 4) .. +15 */
static int run_wgmma(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  int rc = need_full(L, in, w, "wgmma.mma_async");
  if (rc) return rc;
  int N = a->n, K = a->k, q = w->index & 3, ints = a->ta == CUTE_T_I8 || a->ta == CUTE_T_U8;
  int ab = a->flags >> 8 & 0xff, bb = a->flags >> 16 & 0xff, rs = a->flags & 1;
  int ea = ab / 8, eb = bb / 8;
  double A[16][32], Bm[256][32]; /* (on the stack: launches may run in several threads) */
  int nacc = a->nout;
  /* A: from the registers (the mma fragment layout: lane t, register r, element j) or the descriptor */
  if (rs) {
    int p = 32 / ab;
    for (int t = 0; t < CPU_LANES; t++)
      for (int r = 0; r < 4; r++) {
        const uint8_t *reg = cpu_opnd_at(w, cpu_asm_opnd(a, 1, r), t);
        for (int j = 0; j < p; j++)
          A[(t >> 2) + 8 * (r & 1)][(r >> 1) * 4 * p + (t & 3) * p + j] = elem_val(a->ta, reg + j * ea);
      }
  } else {
    wg_desc d;
    if ((rc = desc_read(L, in, cpu_opnd_u64(w, cpu_asm_opnd(a, 1, 0), 0), a->flags >> 1 & 1, &d, "A"))) return rc;
    for (int r = 0; r < 16; r++)
      for (int k = 0; k < K; k++) {
        uint32_t o = desc_off(&d, 16 * q + r, k, ea);
        if (o + (uint32_t)ea > L->smem_size)
          return cpu_fail(L, in, "wgmma: A element (%d,%d) at shared offset %u is outside the block's %zu bytes",
                          16 * q + r, k, o, L->smem_size);
        A[r][k] = elem_val(a->ta, L->smem + o);
      }
  }
  wg_desc d;
  if ((rc = desc_read(L, in, cpu_opnd_u64(w, cpu_asm_opnd(a, 2, 0), 0), a->flags >> 2 & 1, &d, "B"))) return rc;
  for (int n = 0; n < N; n++)
    for (int k = 0; k < K; k++) {
      uint32_t o = desc_off(&d, n, k, eb);
      if (o + (uint32_t)eb > L->smem_size)
        return cpu_fail(L, in, "wgmma: B element (%d,%d) at shared offset %u is outside the block's %zu bytes", k, n, o,
                        L->smem_size);
      Bm[n][k] = elem_val(a->tb, L->smem + o);
    }
  double sa = a->flags & 8 ? -1 : 1, sb = a->flags & 16 ? -1 : 1;
  const cpu_opnd *sc = cpu_asm_opnd(a, 3, 0);
  for (int t = 0; t < CPU_LANES; t++) {
    int accum = (uint32_t)cpu_opnd_u64(w, sc, t) != 0;
    for (int i = 0; i < N / 2; i++) {
      int r = (t >> 2) + 8 * ((i >> 1) & 1), c = 8 * (i >> 2) + 2 * (t & 3) + (i & 1);
      int reg = a->tc == CUTE_T_F16 ? i / 2 : i;
      uint8_t *dp = cpu_opnd_at(w, &a->op[reg], t) + (a->tc == CUTE_T_F16 ? 2 * (i & 1) : 0);
      const uint8_t *cp = cpu_opnd_at(w, &a->op[nacc + reg], t) + (a->tc == CUTE_T_F16 ? 2 * (i & 1) : 0);
      if (ints) {
        int64_t s = 0;
        if (accum) { int32_t c0; memcpy(&c0, cp, 4); s = c0; }
        for (int k = 0; k < K; k++) s += (int64_t)A[r][k] * (int64_t)Bm[c][k];
        if (a->flags & 32) s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
        uint32_t u = (uint32_t)(uint64_t)s;
        memcpy(dp, &u, 4);
        continue;
      }
      double s = 0;
      if (accum) {
        if (a->tc == CUTE_T_F16) { uint16_t h; memcpy(&h, cp, 2); s = cpu_h2f(h); }
        else { float f; memcpy(&f, cp, 4); s = f; }
      }
      for (int k = 0; k < K; k++) s += sa * A[r][k] * sb * Bm[c][k];
      if (a->tc == CUTE_T_F16) { uint16_t h = cpu_f2h(s, 1); memcpy(dp, &h, 2); }
      else { float f = (float)s; memcpy(dp, &f, 4); }
    }
  }
  return 0;
}

static int run_wg_nop(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  (void)a;
  return need_full(L, in, w, "wgmma.fence / commit_group / wait_group");
}

/* wgmma.{fence,commit_group,wait_group}.sync.aligned, and
   wgmma.mma_async.sync.aligned.m64nNkK[.satfinite].D.A.B {d}, a|{a}, b, scale-d[, imm-scale-a, imm-scale-b[, tnsp-a], tnsp-b] */
int cpu_sm90_parse_wgmma(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok < 4 || strcmp(tok[2], "sync") || strcmp(tok[3], "aligned")) return 1;
  if (!strcmp(tok[1], "fence") || !strcmp(tok[1], "commit_group")) {
    if (ntok != 4 || a->ngroups) return 1;
    a->run = run_wg_nop;
    return 0;
  }
  if (!strcmp(tok[1], "wait_group")) {
    int64_t n;
    if (ntok != 4 || a->ngroups != 1 || !item_imm(a, 0, 0, &n) || n < 0 || n > 7) return 1;
    a->run = run_wg_nop;
    return 0;
  }
  if (strcmp(tok[1], "mma_async") || ntok < 8) return 1;
  int m, i = 5;
  if (sscanf(tok[4], "m%dn%dk%d", &m, &a->n, &a->k) != 3 || m != 64 || a->n < 8 || a->n > 256 || a->n % 8) return 1;
  if (!strcmp(tok[i], "satfinite")) { a->flags |= 32; i++; }
  if (ntok - i != 3) return 1;
  int db, ab, bb;
  a->tc = wg_type(tok[i], &db); a->ta = wg_type(tok[i + 1], &ab); a->tb = wg_type(tok[i + 2], &bb);
  if (!a->tc || !a->ta || !a->tb || ab != bb || a->k * ab != 256) return 1;
  int ints = a->ta == CUTE_T_I8 || a->ta == CUTE_T_U8, sixteen = ab == 16;
  if (ints != (a->tb == CUTE_T_I8 || a->tb == CUTE_T_U8) || ints != (a->tc == CUTE_T_I32)) return 1;
  if ((a->flags & 32) && !ints) return 1;
  if (ints && a->n > 24 && a->n % 16) return 1;
  a->flags |= ab << 8 | bb << 16;
  int nacc = a->tc == CUTE_T_F16 ? a->n / 4 : a->n / 2;
  if (a->ngroups < 4 || a->g[0].kind != CPU_G_VEC || a->g[0].count != nacc || a->nout != nacc) return 1;
  for (int j = 0; j < nacc; j++) if (!cpu_asm_is(a, 0, j, 1, 4)) return 1;
  if (a->nop < 2 * nacc) return 1;
  int rs = a->g[1].kind == CPU_G_VEC;
  if (rs) {
    if (a->g[1].count != 4) return 1;
    for (int j = 0; j < 4; j++) if (!cpu_asm_is(a, 1, j, 0, 4)) return 1;
    a->flags |= 1;
  } else if (a->g[1].kind != CPU_G_REG || !cpu_asm_is(a, 1, 0, 0, 8)) return 1;
  if (a->g[2].kind != CPU_G_REG || !cpu_asm_is(a, 2, 0, 0, 8) || a->g[3].kind != CPU_G_REG || !cpu_asm_is(a, 3, 0, 0, 4))
    return 1;
  /* the immediates: scale-a, scale-b (not for integers), tnsp-a (16-bit, A in shared memory), tnsp-b (16-bit) */
  int want = ints ? 0 : sixteen ? (rs ? 3 : 4) : 2;
  if (a->ngroups != 4 + want) return 1;
  int64_t v[4];
  for (int g = 0; g < want; g++)
    if (a->g[4 + g].count != 1 || !item_imm(a, 4 + g, 0, &v[g])) return 1;
  if (want) {
    if ((v[0] != 1 && v[0] != -1) || (v[1] != 1 && v[1] != -1)) return 1;
    if (v[0] < 0) a->flags |= 8;
    if (v[1] < 0) a->flags |= 16;
  }
  if (sixteen) {
    int64_t ta = rs ? 0 : v[2], tb = rs ? v[2] : v[3];
    if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1)) return 1;
    a->flags |= (int)ta << 1 | (int)tb << 2;
  }
  a->run = run_wgmma;
  return 0;
}

/* ---- TMA: the CPU target's tensor map ---------------------------------------------------- */

#define TMAP_MAGIC 0x4d545043u /* "CPTM" */
typedef struct tmap {
  uint32_t magic;
  uint8_t rank, mode, eb, swizzle;   /* mode 0: tiled, 1: im2col */
  uint8_t interleave, oob_fill, dtype, pad;
  uint16_t cpp, ppc;                 /* im2col: channels per pixel, pixels per column */
  uint64_t base;
  int64_t dim[5];
  int64_t stride[4];                 /* bytes, of dimensions 1 .. rank-1 */
  uint16_t box[5];
  uint8_t es[5], pad2;
  int16_t lower[3], upper[3];
} tmap;
_Static_assert(sizeof(tmap) <= 128, "a tensor map is 128 bytes");

static int tmap_fill(void *map, const cute_tensor_map_args *a, int box, cute_err *err) {
  if (!map) return cute_err_setf(err, CUTE_E_ARG, "cute_tensor_map (cpu target): map is NULL");
  int rc = box ? cute_tensor_map_check(a, err) : 0;
  if (rc) return rc;
  tmap m;
  memset(&m, 0, sizeof m);
  m.magic = TMAP_MAGIC;
  m.rank = (uint8_t)a->rank; m.eb = (uint8_t)cute_tensor_map_elem_bytes(a->dtype); m.swizzle = (uint8_t)a->swizzle;
  m.interleave = (uint8_t)a->interleave; m.oob_fill = (uint8_t)a->oob_fill; m.dtype = (uint8_t)a->dtype;
  m.base = a->global_address;
  for (int i = 0; i < a->rank && i < 5; i++) {
    m.dim[i] = (int64_t)a->global_dim[i];
    m.box[i] = (uint16_t)a->box_dim[i];
    m.es[i] = (uint8_t)a->element_strides[i];
    if (i < 4) m.stride[i] = (int64_t)a->global_strides[i];
  }
  memset(map, 0, 128);
  memcpy(map, &m, sizeof m);
  return 0;
}

int cute_cpu_tensor_map_encode_tiled(void *map, const cute_tensor_map_args *a, cute_err *err) {
  return tmap_fill(map, a, 1, err);
}

int cute_cpu_tensor_map_encode_im2col(void *map, const cute_tensor_map_args *a, const int *lower, const int *upper,
                                      uint32_t channels_per_pixel, uint32_t pixels_per_column, cute_err *err) {
  if (!a || a->rank < 3 || a->rank > 5)
    return cute_err_setf(err, CUTE_E_ARG, "cute_tensor_map: rank = %d: an im2col map has 3 to 5 dimensions", a ? a->rank : 0);
  if (!lower || !upper) return cute_err_setf(err, CUTE_E_ARG, "cute_tensor_map: the pixel box corners are NULL");
  if (channels_per_pixel < 1 || channels_per_pixel > 256 || pixels_per_column < 1 || pixels_per_column > 1024)
    return cute_err_setf(err, CUTE_E_ARG, "cute_tensor_map: channels_per_pixel = %u (1 to 256), pixels_per_column = %u "
                         "(1 to 1024)", channels_per_pixel, pixels_per_column);
  cute_tensor_map_args b = *a;
  for (int i = 0; i < 5; i++) b.box_dim[i] = 1;
  b.box_dim[0] = channels_per_pixel < 256 ? channels_per_pixel : 256;
  int rc = cute_tensor_map_check(&b, err);
  if (rc) return rc;
  int lim = a->rank == 3 ? 32768 : a->rank == 4 ? 128 : 16;
  for (int i = 0; i < a->rank - 2; i++)
    if (lower[i] < -lim || lower[i] >= lim || upper[i] < -lim || upper[i] >= lim)
      return cute_err_setf(err, CUTE_E_ARG, "cute_tensor_map: pixel box corner %d (%d, %d): must be in [%d, %d) for rank %d",
                           i, lower[i], upper[i], -lim, lim, a->rank);
  if ((rc = tmap_fill(map, a, 0, err))) return rc;
  tmap m;
  memcpy(&m, map, sizeof m);
  m.mode = 1; m.cpp = (uint16_t)channels_per_pixel; m.ppc = (uint16_t)pixels_per_column;
  for (int i = 0; i < a->rank - 2; i++) { m.lower[i] = (int16_t)lower[i]; m.upper[i] = (int16_t)upper[i]; }
  memcpy(map, &m, sizeof m);
  return 0;
}

static int tmap_get(cpu_launch *L, const cpu_ins *in, uint64_t addr, tmap *m) {
  if (!addr) return cpu_fail(L, in, "cp.async.bulk.tensor: the tensor map's address is 0");
  memcpy(m, (const void *)(uintptr_t)addr, sizeof *m);
  if (m->magic != TMAP_MAGIC)
    return cpu_fail(L, in, "cp.async.bulk.tensor: the tensor map at 0x%llx is not one the CPU target encoded (make the "
                    "TMA atom while the CPU target is in use)", (unsigned long long)addr);
  if (m->interleave) return cpu_fail(L, in, "cp.async.bulk.tensor: interleaved tensor maps are not supported on the CPU target yet");
  return 0;
}

/* the swizzle of a TMA box's shared image (on the offset in the block's memory) */
static uint32_t swz(uint32_t o, int s) { return s ? o ^ (((o >> 7) & ((1u << s) - 1)) << 4) : o; }

static void oob_value(const tmap *m, uint8_t *v) {
  memset(v, 0, 8);
  if (m->oob_fill != 1) return;
  switch (m->dtype) { /* NaN for the floating-point types (CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) */
  case 6: case 9: v[0] = 0xff; v[1] = 0x7f; break;
  case 7: case 10: case 11: case 12: v[0] = v[1] = v[2] = 0xff; v[3] = 0x7f; break;
  case 8: memset(v, 0xff, 7); v[7] = 0x7f; break;
  }
}

/* element j (linear, dimension 0 fastest) of the box at coordinates c: its global
   address, or 0 when it lies outside the tensor */
static uint64_t box_elem(const tmap *m, const int64_t *c, const uint32_t *bx, uint64_t j, int64_t *crd) {
  uint64_t a = m->base;
  int in = 1;
  for (int i = 0; i < m->rank; i++) {
    int64_t x = c[i] + (int64_t)(j % bx[i]);
    j /= bx[i];
    if (crd) crd[i] = x;
    if (x < 0 || x >= m->dim[i]) in = 0;
    a += (uint64_t)x * (uint64_t)(i ? m->stride[i - 1] : m->eb);
  }
  return in ? a : 0;
}

/* im2col: pixel p of the column that starts at (c, w, h, d, n): the pixels walk
   the bounding box (lower .. dim - 1 + upper per spatial dimension) by the
   traversal strides (the element strides), W fastest, then H, D, N; the
   element read is channel c + ch of the pixel plus the im2col offsets */
static uint64_t im2col_elem(const tmap *m, const int64_t *c, const int32_t *offs, uint32_t p, uint32_t ch) {
  int r = m->rank, ns = r - 2;
  int64_t at[5], carry = p;
  at[0] = c[0] + ch;
  for (int i = 1; i <= ns; i++) {
    int64_t lo = m->lower[i - 1], hi = m->dim[i] - 1 + m->upper[i - 1], st = m->es[i] ? m->es[i] : 1;
    int64_t cnt = hi < lo ? 1 : (hi - lo) / st + 1;
    int64_t k = (c[i] - lo) / st + carry;   /* the start's position in the box, then p pixels on */
    at[i] = lo + k % cnt * st + (c[i] - lo) % st + offs[i - 1];
    carry = k / cnt;
  }
  at[r - 1] = c[r - 1] + carry;
  uint64_t a = m->base;
  for (int i = 0; i < r; i++) {
    if (at[i] < 0 || at[i] >= m->dim[i]) return 0;
    a += (uint64_t)at[i] * (uint64_t)(i ? m->stride[i - 1] : m->eb);
  }
  return a;
}

enum { BK_TENSOR_LOAD, BK_TENSOR_STORE, BK_LOAD, BK_STORE, BK_COMMIT, BK_WAIT };

static int reduce_elem(int op, int dtype, uint8_t *g, const uint8_t *s, int eb) {
  /* add/min/max on the integer and float types; and/or/xor/inc/dec on integers */
  double x, y, r;
  int isf = dtype == 6 || dtype == 7 || dtype == 8 || dtype == 9 || dtype == 10;
  if (isf) {
    if (dtype == 6) { uint16_t h; memcpy(&h, g, 2); x = cpu_h2f(h); memcpy(&h, s, 2); y = cpu_h2f(h); }
    else if (dtype == 9) { uint16_t h; memcpy(&h, g, 2); x = cpu_bf2f(h); memcpy(&h, s, 2); y = cpu_bf2f(h); }
    else if (dtype == 8) { memcpy(&x, g, 8); memcpy(&y, s, 8); }
    else { float f; memcpy(&f, g, 4); x = f; memcpy(&f, s, 4); y = f; }
    r = op == 0 ? x + y : op == 1 ? (y < x ? y : x) : op == 2 ? (y > x ? y : x) : NAN;
    if (isnan(r) && op > 2) return 1;
    if (dtype == 6) { uint16_t h = cpu_f2h(r, 1); memcpy(g, &h, 2); }
    else if (dtype == 9) { uint16_t h = cpu_f2bf(r, 1); memcpy(g, &h, 2); }
    else if (dtype == 8) memcpy(g, &r, 8);
    else { float f = (float)r; memcpy(g, &f, 4); }
    return 0;
  }
  int sgn = dtype == 3 || dtype == 5;
  uint64_t u = 0, v = 0;
  memcpy(&u, g, (size_t)eb); memcpy(&v, s, (size_t)eb);
  int64_t su = eb == 4 ? (int64_t)(int32_t)u : (int64_t)u, sv = eb == 4 ? (int64_t)(int32_t)v : (int64_t)v;
  uint64_t o;
  switch (op) {
  case 0: o = u + v; break;
  case 1: o = sgn ? (uint64_t)(sv < su ? sv : su) : (v < u ? v : u); break;
  case 2: o = sgn ? (uint64_t)(sv > su ? sv : su) : (v > u ? v : u); break;
  case 3: o = u >= v ? 0 : u + 1; break;           /* inc */
  case 4: o = (u == 0 || u > v) ? v : u - 1; break; /* dec */
  case 5: o = u & v; break;
  case 6: o = u | v; break;
  default: o = u ^ v;
  }
  memcpy(g, &o, (size_t)eb);
  return 0;
}

static int run_bulk(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  int kind = a->m;
  if (kind == BK_COMMIT || kind == BK_WAIT) return 0; /* copies are done when issued */
  cpu_sm90 *S = L->sm90;
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(w->mask >> t & 1)) continue;
    int rc, rank;
    uint8_t *sp, *bar = NULL;
    if (kind == BK_LOAD || kind == BK_STORE) {
      uint32_t n = opnd32(w, a, 2, 0, t);
      int gs = kind == BK_LOAD ? 0 : 1;
      if (n % 16) return cpu_fail(L, in, "cp.async.bulk: size %u is not a multiple of 16", n);
      uint64_t g = cpu_opnd_u64(w, cpu_asm_opnd(a, kind == BK_LOAD ? 1 : 0, 0), t);
      if ((rc = cl_addr(L, in, w, t, opnd32(w, a, gs, 0, t), n, kind == BK_LOAD, &rank, &sp))) return rc;
      if (kind == BK_STORE) { if ((rc = cpu_tc_access(L, in, w, t, g, sp, n, 1))) return rc; continue; }
      uint32_t mask = a->ngroups == 5 ? opnd32(w, a, 4, 0, t) & 0xffff : 1u << rank;
      uint32_t soff = (uint32_t)(sp - S->base - (size_t)rank * S->stride), boff;
      if ((rc = cl_addr(L, in, w, t, opnd32(w, a, 3, 0, t), 8, 1, NULL, &bar))) return rc;
      boff = (uint32_t)((bar - S->base) % S->stride);
      for (int r = 0; r < S->nb; r++) {
        if (!(mask >> r & 1)) continue;
        if ((rc = cpu_tc_access(L, in, w, t, g, S->base + (size_t)r * S->stride + soff, n, 0))) return rc;
        if ((rc = mb_update(L, in, w, t, S->base + (size_t)r * S->stride + boff, 0, -(int64_t)n))) return rc;
      }
      if (mask >> S->nb) return cpu_fail(L, in, "cp.async.bulk: multicast mask 0x%x names CTAs beyond the cluster's %d", mask, S->nb);
      continue;
    }
    /* tensors */
    int st = kind == BK_TENSOR_STORE;
    tmap m;
    if ((rc = tmap_get(L, in, cpu_opnd_u64(w, cpu_asm_opnd(a, st ? 0 : 1, 0), t), &m))) return rc;
    int d = a->n;
    if (d != m.rank) return cpu_fail(L, in, "cp.async.bulk.tensor.%dd with a rank-%d tensor map", d, m.rank);
    if ((a->flags & 2) != (m.mode ? 2 : 0))
      return cpu_fail(L, in, "cp.async.bulk.tensor: a %s instruction with a%s tensor map", a->flags & 2 ? "im2col" : "tile",
                      m.mode ? "n im2col" : " tiled");
    int64_t c[5];
    for (int i = 0; i < d; i++) c[i] = (int32_t)opnd32(w, a, st ? 1 : 2, i, t);
    uint32_t bx[5];
    uint64_t nel = 1;
    for (int i = 0; i < d; i++) {
      if (m.es[i] != 1 && !m.mode) return cpu_fail(L, in, "cp.async.bulk.tensor: element strides other than 1 are not supported on the CPU target yet");
      bx[i] = m.mode ? 1 : m.box[i];
    }
    int32_t offs[3] = { 0, 0, 0 };
    if (m.mode) {
      bx[0] = m.cpp; bx[1] = m.ppc;
      for (int i = 0; i < d - 2; i++) offs[i] = (int32_t)(opnd32(w, a, 4, i, t) & 0xffff);
    }
    for (int i = 0; i < (m.mode ? 2 : d); i++) nel *= bx[i];
    uint64_t bytes = nel * m.eb;
    if ((rc = cl_addr(L, in, w, t, opnd32(w, a, st ? 2 : 0, 0, t), bytes, !st, &rank, &sp))) return rc;
    uint32_t soff = (uint32_t)(sp - S->base - (size_t)rank * S->stride);
    uint8_t fill[8];
    oob_value(&m, fill);
    if (st) {
      int red = a->k;
      for (uint64_t j = 0; j < nel; j++) {
        uint64_t g = box_elem(&m, c, bx, j, NULL);
        if (!g) continue;
        const uint8_t *s = L->smem + swz(soff + (uint32_t)(j * m.eb), m.swizzle);
        if (red < 0) { if ((rc = cpu_tc_access(L, in, w, t, g, (void *)s, m.eb, 1))) return rc; continue; }
        uint8_t cur[8];
        if ((rc = cpu_tc_access(L, in, w, t, g, cur, m.eb, 0))) return rc;
        if (reduce_elem(red, m.dtype, cur, s, m.eb))
          return cpu_fail(L, in, "cp.reduce.async.bulk.tensor: this reduction of a floating-point tensor");
        if ((rc = cpu_tc_access(L, in, w, t, g, cur, m.eb, 1))) return rc;
      }
      continue;
    }
    uint32_t mask = a->flags & 4 ? opnd32(w, a, a->ngroups - 1, 0, t) & 0xffff : 1u << rank;
    if (mask >> S->nb) return cpu_fail(L, in, "cp.async.bulk.tensor: multicast mask 0x%x names CTAs beyond the cluster's %d", mask, S->nb);
    if ((rc = cl_addr(L, in, w, t, opnd32(w, a, 3, 0, t), 8, 1, NULL, &bar))) return rc;
    uint32_t boff = (uint32_t)((bar - S->base) % S->stride);
    uint8_t v[8];
    for (uint64_t j = 0; j < nel; j++) {
      uint64_t g = m.mode ? im2col_elem(&m, c, offs, (uint32_t)(j / m.cpp), (uint32_t)(j % m.cpp)) : box_elem(&m, c, bx, j, NULL);
      if (g) { if ((rc = cpu_tc_access(L, in, w, t, g, v, m.eb, 0))) return rc; }
      else memcpy(v, fill, 8);
      uint32_t o = swz(soff + (uint32_t)(j * m.eb), m.swizzle);
      for (int r = 0; r < S->nb; r++)
        if (mask >> r & 1) memcpy(S->base + (size_t)r * S->stride + o, v, m.eb);
    }
    for (int r = 0; r < S->nb; r++)
      if ((mask >> r & 1) && (rc = mb_update(L, in, w, t, S->base + (size_t)r * S->stride + boff, 0, -(int64_t)bytes)))
        return rc;
  }
  return 0;
}

/* cp.async.bulk[.tensor.Nd] loads (shared::cluster.global[.im2col].mbarrier::complete_tx::bytes[.multicast::cluster]),
   stores (global.shared::cta.bulk_group), commit_group, wait_group[.read] N; cp.reduce.async.bulk.tensor */
int cpu_sm90_parse_bulk(cpu_asm_op *a, const char *const *tok, int ntok) {
  int red = !strcmp(tok[1], "reduce"), i = red ? 3 : 2;
  a->k = -1;
  if (ntok <= i || strcmp(tok[i - 1], "async") || strcmp(tok[i], "bulk")) return 1;
  i++;
  if (!red && ntok == 4 && !strcmp(tok[3], "commit_group") && !a->ngroups) { a->m = BK_COMMIT; a->run = run_bulk; return 0; }
  if (!red && ntok >= 4 && !strcmp(tok[3], "wait_group") && (ntok == 4 || (ntok == 5 && !strcmp(tok[4], "read")))) {
    int64_t n;
    if (a->ngroups != 1 || !item_imm(a, 0, 0, &n) || n < 0 || n > 63) return 1;
    a->m = BK_WAIT; a->run = run_bulk;
    return 0;
  }
  int tensor = i < ntok && !strcmp(tok[i], "tensor");
  if (tensor) {
    if (++i >= ntok || sscanf(tok[i], "%dd", &a->n) != 1 || a->n < 1 || a->n > 5) return 1;
    i++;
  }
  if (i + 1 >= ntok) return 1;
  int load = !strcmp(tok[i], "shared::cluster") && !strcmp(tok[i + 1], "global");
  int store = !strcmp(tok[i], "global") && !strcmp(tok[i + 1], "shared::cta");
  if (!load && !store) return 1;
  if (red && !(tensor && store)) return 1;
  for (i += 2; i < ntok; i++) {
    static const char *const rn[] = { "add", "min", "max", "inc", "dec", "and", "or", "xor" };
    int k = -1;
    for (int j = 0; j < 8; j++) if (!strcmp(tok[i], rn[j])) k = j;
    if (red && k >= 0) { a->k = k; continue; }
    if (load && !strcmp(tok[i], "mbarrier::complete_tx::bytes")) continue;
    if (load && tensor && !strcmp(tok[i], "im2col")) { a->flags |= 2; continue; }
    if (load && !strcmp(tok[i], "multicast::cluster")) { a->flags |= 4; continue; }
    if (store && (!strcmp(tok[i], "bulk_group") || (red && !strcmp(tok[i], "tile")))) continue;
    return 1;
  }
  if (red && a->k < 0) return 1;
  int mc = (a->flags & 4) != 0, im = (a->flags & 2) != 0;
  if (!tensor) {
    a->m = load ? BK_LOAD : BK_STORE;
    if (a->ngroups != (load ? 4 + mc : 3) || a->g[0].kind != CPU_G_ADDR || a->g[1].kind != CPU_G_ADDR) return 1;
    if (load && a->g[3].kind != CPU_G_ADDR) return 1;
    a->run = run_bulk;
    return 0;
  }
  a->m = load ? BK_TENSOR_LOAD : BK_TENSOR_STORE;
  if (load) {
    if (a->ngroups != 4 + im + mc || a->g[0].kind != CPU_G_ADDR || a->g[1].kind != CPU_G_ADDR || a->g[2].kind != CPU_G_VEC ||
        a->g[2].count != a->n || a->g[3].kind != CPU_G_ADDR)
      return 1;
    if (im && (a->g[4].kind != CPU_G_VEC || a->g[4].count != a->n - 2)) return 1;
  } else if (a->ngroups != 3 || a->g[0].kind != CPU_G_ADDR || a->g[1].kind != CPU_G_VEC || a->g[1].count != a->n ||
             a->g[2].kind != CPU_G_ADDR)
    return 1;
  a->run = run_bulk;
  return 0;
}

/* ---- clusters, warps, fences ------------------------------------------------------------- */

enum { MS_ELECT, MS_NOP, MS_MAPA32, MS_MAPA64, MS_SREG, MS_FENCEOP, MS_CLARRIVE, MS_CLWAIT, MS_BARSYNC, MS_BARARRIVE,
       MS_SETMAXNREG, MS_CVT2 };

static uint32_t sreg_val(cpu_launch *L, int which) {
  cpu_sm90 *S = L->sm90;
  int c = which % 3;
  switch (which / 3) {
  case 0: return (unsigned)S->cur % S->cdim[0] * (c == 0) + (unsigned)S->cur / S->cdim[0] % S->cdim[1] * (c == 1) +
                 (unsigned)S->cur / (S->cdim[0] * S->cdim[1]) * (c == 2);      /* cluster_ctaid */
  case 1: return S->cdim[c];                                                      /* cluster_nctaid */
  case 2: return S->cid[c];                                                       /* clusterid */
  case 3: return L->grid[c] / S->cdim[c];                                         /* nclusterid */
  default: return which == 12 ? (uint32_t)S->cur : (uint32_t)S->nb;               /* cluster_ctarank, _nctarank */
  }
}

/* barrier.cluster: complete when every thread of the cluster arrived or exited */
static void cl_check(cpu_launch *L, cpu_warp *ws) {
  cpu_sm90 *S = L->sm90;
  int n = S->nb * S->nw, any = 0;
  for (int i = 0; i < n; i++) {
    uint32_t gone = ws[i].state == CPU_DONE ? ws[i].all : ws[i].exited;
    if (((S->cl_arrived[i] | gone) & ws[i].all) != ws[i].all) return;
    any |= S->cl_arrived[i] != 0;
  }
  if (!any) return;
  for (int i = 0; i < n; i++) S->cl_arrived[i] = 0;
  S->cl_phase++;
  S->events++;
}

static int run_misc(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  cpu_sm90 *S = L->sm90;
  int rc;
  switch (a->m) {
  case MS_NOP: return 0;
  case MS_SETMAXNREG: return need_full(L, in, w, "setmaxnreg");
  case MS_CVT2: { /* d = {hi: cvt(a), lo: cvt(b)} */
    const cpu_opnd *o = cpu_asm_opnd(a, 0, 0), *x = cpu_asm_opnd(a, 1, 0), *y = cpu_asm_opnd(a, 2, 0);
    for (int t = 0; t < CPU_LANES; t++) {
      float fa, fb;
      memcpy(&fa, cpu_opnd_at(w, x, t), 4);
      memcpy(&fb, cpu_opnd_at(w, y, t), 4);
      if (a->k & 1) { fa = fa < 0 ? 0 : fa; fb = fb < 0 ? 0 : fb; } /* .relu (NaN stays NaN) */
      uint16_t hi = a->n ? cpu_f2bf(fa, 1) : cpu_f2h(fa, 1), lo = a->n ? cpu_f2bf(fb, 1) : cpu_f2h(fb, 1);
      uint32_t v = (uint32_t)hi << 16 | lo;
      memcpy(cpu_opnd_at(w, o, t), &v, 4);
    }
    return 0;
  }
  case MS_ELECT: {
    const cpu_opnd *o = cpu_asm_opnd(a, 1, 0);
    uint32_t mm = opnd32(w, a, 2, 0, 0) & w->mask;
    int first = mm ? __builtin_ctz(mm) : -1;
    for (int t = 0; t < CPU_LANES; t++)
      if (w->mask >> t & 1) *cpu_opnd_at(w, o, t) = t == first;
    return 0;
  }
  case MS_MAPA32: case MS_MAPA64: {
    const cpu_opnd *o = cpu_asm_opnd(a, 0, 0);
    for (int t = 0; t < CPU_LANES; t++) {
      if (!(w->mask >> t & 1)) continue;
      uint32_t r = opnd32(w, a, 2, 0, t);
      uint64_t x = cpu_opnd_u64(w, cpu_asm_opnd(a, 1, 0), t), own = (uint64_t)(uintptr_t)L->smem;
      if (r >= (uint32_t)S->nb)
        return cpu_fail(L, in, "mapa: CTA rank %u outside the cluster's %d CTAs (thread (%u,%u,%u))", r, S->nb,
                        w->tid[0][t], w->tid[1][t], w->tid[2][t]);
      if (a->m == MS_MAPA32) {
        uint8_t *p;
        if ((rc = cl_addr(L, in, w, t, (uint32_t)x, 1, 1, NULL, &p))) return rc;
        uint32_t off = (uint32_t)((size_t)(p - S->base) % S->stride);
        uint32_t v = (uint32_t)(uintptr_t)S->base + (uint32_t)(r * S->stride) + off;
        memcpy(cpu_opnd_at(w, o, t), &v, 4);
      } else {
        if (x < own || x >= own + L->smem_size)
          return cpu_fail(L, in, "mapa.u64: address 0x%llx is not in the block's shared memory (thread (%u,%u,%u))",
                          (unsigned long long)x, w->tid[0][t], w->tid[1][t], w->tid[2][t]);
        uint64_t v = (uint64_t)(uintptr_t)S->base + r * S->stride + (x - own);
        memcpy(cpu_opnd_at(w, o, t), &v, 8);
      }
    }
    return 0;
  }
  case MS_SREG: {
    const cpu_opnd *o = cpu_asm_opnd(a, 0, 0);
    uint32_t v = sreg_val(L, a->k);
    for (int t = 0; t < CPU_LANES; t++) memcpy(cpu_opnd_at(w, o, t), &v, 4);
    return 0;
  }
  case MS_FENCEOP:
    for (int i = 0; i < a->nout; i++)
      for (int t = 0; t < CPU_LANES; t++) memcpy(cpu_opnd_at(w, &a->op[i], t), cpu_opnd_at(w, &a->op[a->nout + i], t), (size_t)a->op[i].size);
    return 0;
  case MS_CLARRIVE: {
    int i = wid(L, w);
    if (S->cl_wait[i]) return cpu_fail(L, in, "barrier.cluster.arrive twice without barrier.cluster.wait (warp %d)", w->index);
    S->cl_arrived[i] |= w->mask;
    S->cl_wait[i] = (uint8_t)(1 + (S->cl_phase & 1));
    S->events++;
    return 0;
  }
  case MS_CLWAIT: {
    int i = wid(L, w);
    if (!S->cl_wait[i]) return cpu_fail(L, in, "barrier.cluster.wait without barrier.cluster.arrive (warp %d)", w->index);
    if ((uint8_t)(1 + (S->cl_phase & 1)) == S->cl_wait[i]) { w->state = CPU_WAIT; w->bar_id = CPU_BAR_CLUSTER; return CPU_SUSPEND; }
    S->cl_wait[i] = 0;
    return 0;
  }
  default: { /* bar.sync / bar.arrive id[, count] */
    uint32_t id = opnd32(w, a, 0, 0, 0), n = a->ngroups > 1 ? opnd32(w, a, 1, 0, 0) : 0;
    if (id > 15 || n % 32 || n > 1024)
      return cpu_fail(L, in, "bar: barrier %u with %u threads (ids 0..15, a multiple of 32 threads)", id, n);
    if (a->m == MS_BARARRIVE) {
      int *arr = cpu_sm90_bar_arrivals(L, S->cur);
      arr[id] += CPU_LANES;
      if ((uint32_t)arr[id] >= n) arr[id] -= (int)n; /* complete without a waiting warp */
      return 0;
    }
    w->state = CPU_WAIT; w->bar_id = (int)id; w->bar_count = (int)n;
    w->pc++;
    return CPU_SUSPEND;
  }
  }
}

int cpu_sm90_parse_misc(cpu_asm_op *a, const char *const *tok, int ntok) {
  a->run = run_misc;
  if (!strcmp(tok[0], "elect")) {
    a->m = MS_ELECT;
    return !(ntok == 2 && !strcmp(tok[1], "sync") && a->ngroups == 3 && a->it[a->g[0].first].kind == CPU_IT_SINK &&
             cpu_asm_is(a, 1, 0, 1, a->op[0].size) && a->g[2].kind == CPU_G_REG && a->g[2].count == 1);
  }
  if (!strcmp(tok[0], "cvt")) { /* cvt.rn[.relu].{f16x2,bf16x2}.f32 d, a, b */
    a->m = MS_CVT2;
    int i = 2;
    if (ntok < 4 || strcmp(tok[1], "rn")) return 1;
    if (!strcmp(tok[i], "relu")) { a->k = 1; i++; }
    if (i + 2 != ntok || strcmp(tok[i + 1], "f32") || (strcmp(tok[i], "f16x2") && strcmp(tok[i], "bf16x2"))) return 1;
    a->n = !strcmp(tok[i], "bf16x2");
    return !(a->ngroups == 3 && cpu_asm_is(a, 0, 0, 1, 4) && cpu_asm_is(a, 1, 0, 0, 4) && cpu_asm_is(a, 2, 0, 0, 4));
  }
  if (!strcmp(tok[0], "setmaxnreg")) {
    int64_t n;
    a->m = MS_SETMAXNREG;
    return !(ntok == 5 && (!strcmp(tok[1], "inc") || !strcmp(tok[1], "dec")) && !strcmp(tok[2], "sync") &&
             !strcmp(tok[3], "aligned") && !strcmp(tok[4], "u32") && a->ngroups == 1 && item_imm(a, 0, 0, &n) && n >= 24 &&
             n <= 256 && n % 8 == 0);
  }
  if (!strcmp(tok[0], "fence")) { /* fence.proxy.{alias,async[.global|.shared::{cta,cluster}]}, fence.mbarrier_init.release.cluster */
    a->m = MS_NOP;
    if (a->ngroups) return 1;
    if (ntok == 4 && !strcmp(tok[1], "mbarrier_init") && !strcmp(tok[2], "release") && !strcmp(tok[3], "cluster")) return 0;
    if (ntok < 3 || strcmp(tok[1], "proxy")) return 1;
    if (ntok == 3) return strcmp(tok[2], "alias") && strcmp(tok[2], "async");
    return !(ntok == 4 && !strcmp(tok[2], "async") &&
             (!strcmp(tok[3], "global") || !strcmp(tok[3], "shared::cta") || !strcmp(tok[3], "shared::cluster")));
  }
  if (!strcmp(tok[0], "prefetch")) {
    a->m = MS_NOP;
    return !(ntok == 2 && !strcmp(tok[1], "tensormap") && a->ngroups == 1 && a->g[0].kind == CPU_G_ADDR);
  }
  if (!strcmp(tok[0], "mapa")) {
    int u32 = ntok == 3 && !strcmp(tok[1], "shared::cluster") && !strcmp(tok[2], "u32");
    int u64 = ntok == 2 && !strcmp(tok[1], "u64");
    a->m = u32 ? MS_MAPA32 : MS_MAPA64;
    return !((u32 || u64) && a->ngroups == 3 && cpu_asm_is(a, 0, 0, 1, u32 ? 4 : 8) && cpu_asm_is(a, 1, 0, 0, u32 ? 4 : 8) &&
             a->g[2].kind == CPU_G_REG);
  }
  if (!strcmp(tok[0], "mov") && ntok == 2 && !strcmp(tok[1], "fence_operand")) {
    a->m = MS_FENCEOP;
    if (a->ngroups || a->nop != 2 * a->nout) return 1;
    for (int i = 0; i < a->nout; i++) if (a->op[i].size != a->op[a->nout + i].size) return 1;
    return 0;
  }
  if (!strcmp(tok[0], "mov") && ntok >= 4 && !strcmp(tok[1], "u32") && !strcmp(tok[2], "sreg")) {
    static const char *const nm[] = { "cluster_ctaid", "cluster_nctaid", "clusterid", "nclusterid" };
    a->m = MS_SREG;
    a->k = -1;
    if (ntok == 4 && !strcmp(tok[3], "cluster_ctarank")) a->k = 12;
    else if (ntok == 4 && !strcmp(tok[3], "cluster_nctarank")) a->k = 13;
    else if (ntok == 5 && strlen(tok[4]) == 1 && tok[4][0] >= 'x' && tok[4][0] <= 'z')
      for (int i = 0; i < 4; i++) if (!strcmp(tok[3], nm[i])) a->k = 3 * i + (tok[4][0] - 'x');
    return !(a->k >= 0 && a->ngroups == 1 && cpu_asm_is(a, 0, 0, 1, 4));
  }
  if (!strcmp(tok[0], "barrier") && ntok >= 4 && !strcmp(tok[1], "cluster") && !strcmp(tok[ntok - 1], "aligned") && !a->ngroups) {
    if (!strcmp(tok[2], "arrive") && (ntok == 4 || (ntok == 5 && (!strcmp(tok[3], "relaxed") || !strcmp(tok[3], "release")))))
      { a->m = MS_CLARRIVE; return 0; }
    if (!strcmp(tok[2], "wait") && (ntok == 4 || (ntok == 5 && !strcmp(tok[3], "acquire")))) { a->m = MS_CLWAIT; return 0; }
    return 1;
  }
  if (!strcmp(tok[0], "bar")) {
    if (ntok == 3 && !strcmp(tok[1], "warp") && !strcmp(tok[2], "sync")) { a->m = MS_NOP; return a->ngroups != 1; }
    if (ntok != 2 || (strcmp(tok[1], "sync") && strcmp(tok[1], "arrive"))) return 1;
    a->m = !strcmp(tok[1], "sync") ? MS_BARSYNC : MS_BARARRIVE;
    if (a->ngroups < 1 || a->ngroups > 2 || (a->m == MS_BARARRIVE && a->ngroups != 2)) return 1;
    for (int g = 0; g < a->ngroups; g++)
      if (a->g[g].kind != CPU_G_REG || a->g[g].count != 1 || a->it[a->g[g].first].kind == CPU_IT_SINK) return 1;
    return 0;
  }
  return 1;
}

/* ---- the scheduler's hooks ------------------------------------------------------------- */

void cpu_sm90_enter(cpu_launch *L, int rank) {
  cpu_sm90 *S = L->sm90;
  S->async[S->cur] = L->async;
  S->cur = rank;
  L->smem = S->base + (size_t)rank * S->stride;
  L->slo = (uint64_t)(uintptr_t)L->smem; /* (the bounds checks follow the CTA) */
  L->shi = L->slo + S->shbytes;
  memcpy(L->ctaid, S->ctaid[rank], sizeof L->ctaid);
  L->async = S->async[rank];
}

int *cpu_sm90_bar_arrivals(cpu_launch *L, int rank) { return L->sm90->bar_arrived + 16 * rank; }

int cpu_sm90_wake(cpu_launch *L, cpu_warp *ws, int progress) {
  cpu_sm90 *S = L->sm90;
  int n = S->nb * S->nw, waiting = 0, trying = 0;
  uint64_t ev = S->events;
  cl_check(L, ws);
  if (S->events != ev) progress = 1;
  for (int i = 0; i < n; i++)
    if (ws[i].state == CPU_WAIT && ws[i].bar_id < 0) { waiting++; trying += ws[i].bar_id == CPU_BAR_TRYWAIT; }
  if (!waiting) return 0;
  if (!progress) {
    /* nothing moved: a try_wait's time limit passes (it answers false); a wait cannot complete */
    if (S->events != S->ev_seen) { S->ev_seen = S->events; S->stall = 0; }
    if (trying && S->stall++ < 100000) {
      for (int i = 0; i < n; i++)
        if (ws[i].state == CPU_WAIT && ws[i].bar_id == CPU_BAR_TRYWAIT) { ws[i].state = CPU_RUN; S->timed_out[i] = 1; }
      return 0;
    }
    char msg[320];
    int k = 0;
    const cpu_ins *at = NULL;
    for (int i = 0; i < n && k < 240; i++) {
      if (ws[i].state != CPU_WAIT) continue;
      const cpu_ins *wi = ws[i].bar_id < 0 ? &L->p->ins[ws[i].pc] : &L->p->ins[ws[i].pc - 1];
      if (!at && ws[i].bar_id < 0) { at = wi; cpu_sm90_enter(L, i / S->nw); }
      const char *what = ws[i].bar_id == CPU_BAR_CLUSTER ? "barrier.cluster.wait" : ws[i].bar_id < 0 ? "an mbarrier wait" : "barrier";
      k += snprintf(msg + k, sizeof msg - (size_t)k, " CTA %d warp %d at %s", i / S->nw, i % S->nw, what);
      if (ws[i].bar_id >= 0) k += snprintf(msg + k, sizeof msg - (size_t)k, " %d", ws[i].bar_id);
      k += snprintf(msg + k, sizeof msg - (size_t)k, ";");
    }
    return cpu_fail(L, at, "a wait that can never complete (no thread can arrive any more:%s)", msg);
  }
  for (int i = 0; i < n; i++)
    if (ws[i].state == CPU_WAIT && ws[i].bar_id < 0) ws[i].state = CPU_RUN;
  return 0;
}
