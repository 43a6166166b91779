/* cpu_tc.c -- tensor-core instructions on the CPU target (docs/CPU_TARGET.md,
 * "Tensor cores"): mma.sync over the warp's fragments in the PTX ISA's
 * layouts, ldmatrix / stmatrix over the warp's row addresses, cp.async with
 * its groups (copies queued per thread, performed at wait_group / wait_all),
 * fp8 conversions.  Every memory access goes through cpu_tc_access. */
#include "cpu_tc.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- memory ------------------------------------------------------------------------------ */

/* one lane's access, through the bounds checks (and the checking mode) of cpu_check.c: the
   address space is generic (shared or a registered allocation), as the PTX's operand is an address */
int cpu_tc_access(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, uint64_t addr, void *buf, size_t n, int write) {
  uint64_t pa[CPU_LANES];
  pa[t] = addr;
  /* (one lane a call: the same-instruction store check, which reads the values, never applies) */
  int rc = cpu_access_slow(L, in, w, pa, 1u << t, (int)n, write ? CPU_ST : CPU_LD, NULL, addr, addr + n, CUTE_AS_GENERIC);
  if (rc) return rc;
  if (write) memcpy((void *)(uintptr_t)addr, buf, n);
  else memcpy(buf, (const void *)(uintptr_t)addr, n);
  return 0;
}

/* Shared addresses: the kernel turns a shared pointer (a host address here)
   into a 32-bit register as for the GPU's shared window; the block's buffer
   is smaller than 4 GiB, so the low 32 bits give the offset in it. */
int cpu_tc_shared(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, const cpu_opnd *o, size_t n, uint64_t *addr) {
  uint64_t base = (uint64_t)(uintptr_t)L->smem;
  uint32_t off = (uint32_t)cpu_opnd_u64(w, o, t) - (uint32_t)base;
  if ((uint64_t)off + n > L->smem_size)
    return cpu_fail(L, in, "shared address 0x%08x: %zu bytes at offset %u, outside the block's %zu bytes of shared memory "
                    "(thread (%u,%u,%u))", (uint32_t)cpu_opnd_u64(w, o, t), n, off, L->smem_size,
                    w->tid[0][t], w->tid[1][t], w->tid[2][t]);
  *addr = base + off;
  return 0;
}

static int need_full(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const char *what) {
  if (w->mask == 0xffffffffu) return 0;
  return cpu_fail(L, in, "%s needs all 32 threads of the warp (.sync.aligned); active lanes 0x%08x in warp %d", what,
                  w->mask, w->index);
}

/* ---- fp8 --------------------------------------------------------------------------------- */

/* e4m3 (E4M3FN: no infinities, S.1111.111 NaN, max 448) and e5m2 (IEEE-like, max 57344) */
double cpu_f82f(uint8_t b, int e5m2) {
  int mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  double s = (b & 0x80) ? -1.0 : 1.0;
  int a = b & 0x7f, e = a >> mb, m = a & ((1 << mb) - 1);
  if (e5m2 && e == 31) return m ? NAN : s * INFINITY;
  if (!e5m2 && a == 0x7f) return NAN;
  if (e == 0) return s * ldexp(m, 1 - bias - mb);
  return s * ldexp((1 << mb) + m, e - bias - mb);
}

/* cvt.rn.satfinite: to nearest even; beyond the largest finite value (inf too) +-max; NaN -> 0x7f */
uint8_t cpu_f2f8(double x, int e5m2) {
  int mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, emin = 1 - bias;
  double maxv = e5m2 ? 57344.0 : 448.0;
  uint8_t maxbits = e5m2 ? 0x7b : 0x7e;
  if (isnan(x)) return 0x7f;
  uint8_t s = signbit(x) ? 0x80 : 0;
  double a = fabs(x);
  if (a > maxv) return s | maxbits;
  int ex;
  frexp(a, &ex);
  int e = ex - 1 < emin ? emin : ex - 1;
  double q = ldexp(1.0, e - mb), r = nearbyint(a / q), v = r * q; /* the host rounds to nearest even */
  if (v > maxv) return s | maxbits;
  if (v == 0) return s;
  frexp(v, &ex);
  e = ex - 1;
  if (e < emin) return (uint8_t)(s | (uint8_t)(v / ldexp(1.0, emin - mb)));
  return (uint8_t)(s | (uint8_t)((e + bias) << mb) | (uint8_t)(v / ldexp(1.0, e - mb) - (1 << mb)));
}

/* ---- mma.sync ---------------------------------------------------------------------------- */

static int ptx_type(const char *s) {
  static const struct { const char *n; int k; } t[] = {
    { "f16", CUTE_T_F16 }, { "bf16", CUTE_T_BF16 }, { "tf32", CUTE_T_TF32 }, { "f32", CUTE_T_F32 }, { "f64", CUTE_T_F64 },
    { "s8", CUTE_T_I8 }, { "u8", CUTE_T_U8 }, { "s32", CUTE_T_I32 }, { "e4m3", CUTE_T_F8E4M3 }, { "e5m2", CUTE_T_F8E5M2 },
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(s, t[i].n)) return t[i].k;
  return 0;
}
static int tbits(int k) { return k == CUTE_T_TF32 || k == CUTE_T_F32 || k == CUTE_T_I32 ? 32 : k == CUTE_T_F64 ? 64 : k == CUTE_T_F16 || k == CUTE_T_BF16 ? 16 : 8; }
static int is_int8(int k) { return k == CUTE_T_I8 || k == CUTE_T_U8; }
static int is_fp8(int k) { return k == CUTE_T_F8E4M3 || k == CUTE_T_F8E5M2; }

/* element e (bits wide) of a lane's registers as a number (tf32: its top 19 bits) */
static double elem_f(int k, const uint8_t *p) {
  switch (k) {
  case CUTE_T_F16: return cpu_h2f(*(const uint16_t *)p);
  case CUTE_T_BF16: return cpu_bf2f(*(const uint16_t *)p);
  case CUTE_T_TF32: { uint32_t u; float f; memcpy(&u, p, 4); u &= ~0x1fffu; memcpy(&f, &u, 4); return f; }
  case CUTE_T_F32: return *(const float *)p;
  case CUTE_T_F64: return *(const double *)p;
  case CUTE_T_I8: return *(const int8_t *)p;
  case CUTE_T_U8: return *p;
  case CUTE_T_I32: return *(const int32_t *)p;
  default: return cpu_f82f(*p, k == CUTE_T_F8E5M2);
  }
}

/* the PTX ISA's fragment layouts (m16n8kK; m8n8k4 f64): element i of lane t
   of A (M x K), B (K x N), C/D (M x N) -> (row, col).  p: elements per 32-bit
   register; g = t / 4 (the group), q = t % 4 (the thread in it). */
static void lay_a(const cpu_asm_op *a, int t, int i, int *r, int *c) {
  int g = t >> 2, q = t & 3;
  if (a->m == 8) { *r = g; *c = q; return; }
  int p = 32 / tbits(a->ta), reg = i / p, j = i % p;
  *r = g + 8 * (reg & 1);
  *c = (reg >> 1) * 4 * p + q * p + j;
}
static void lay_b(const cpu_asm_op *a, int t, int i, int *r, int *c) {
  int g = t >> 2, q = t & 3;
  if (a->m == 8) { *r = q; *c = g; return; }
  int p = 32 / tbits(a->tb), reg = i / p, j = i % p;
  *r = reg * 4 * p + q * p + j;
  *c = g;
}
static void lay_c(const cpu_asm_op *a, int t, int i, int *r, int *c) {
  int g = t >> 2, q = t & 3;
  if (a->m == 8) { *r = g; *c = 2 * q + i; return; }
  *r = g + 8 * (i >> 1);
  *c = 2 * q + (i & 1);
}

/* element i of an operand group whose registers hold elements of bits each */
static uint8_t *grp_elem(const cpu_warp *w, const cpu_asm_op *a, int gi, int t, int i, int bits) {
  int per = bits >= 32 ? 1 : 32 / bits;
  const cpu_opnd *o = cpu_asm_opnd(a, gi, i / per);
  return cpu_opnd_at(w, o, t) + (size_t)(i % per) * (size_t)(bits / 8);
}

/* every lane's nel elements of operand group gi (type k) as numbers: out[t * nel + i] */
static void decode(const cpu_warp *w, const cpu_asm_op *a, int gi, int k, int nel, double *out) {
  int bits = tbits(k), per = bits >= 32 ? 1 : 32 / bits, nreg = (nel + per - 1) / per, eb = bits / 8;
  for (int r = 0; r < nreg; r++) {
    const cpu_opnd *o = cpu_asm_opnd(a, gi, r);
    const uint8_t *base = w->vp[o->ref] + o->off;
    for (int t = 0; t < CPU_LANES; t++) {
      const uint8_t *p = base + (size_t)t * (size_t)o->stride;
      double *d = out + t * nel + r * per;
      switch (k) {
      case CUTE_T_BF16: for (int j = 0; j < per; j++) d[j] = cpu_bf2f(((const uint16_t *)p)[j]); break;
      case CUTE_T_I8: for (int j = 0; j < per; j++) d[j] = ((const int8_t *)p)[j]; break;
      case CUTE_T_U8: for (int j = 0; j < per; j++) d[j] = p[j]; break;
      default: for (int j = 0; j < per; j++) d[j] = elem_f(k, p + j * eb); break;
      }
    }
  }
}

/* D = A B + C: each output is C + the sum over k (in increasing k) of the
   exact products, summed in f64 (integers: exactly in 64 bits) and rounded
   once to D's type (s32: wrapped, or clamped with .satfinite) */
static int run_mma(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  int rc = need_full(L, in, w, "mma.sync");
  if (rc) return rc;
  double A[16 * 32], Bt[8 * 32], Cm[16 * 8], Dm[16 * 8];
  double va[32 * 16], vb[32 * 8], vc[32 * 4];
  int M = a->m, N = a->n, K = a->k, ints = is_int8(a->ta);
  int na = M * K, nb = K * N, nc = M * N, db = tbits(a->td);
  const int16_t *la = a->lay, *lb = la + na, *lc = lb + nb;
  decode(w, a, 1, a->ta, na / 32, va);
  decode(w, a, 2, a->tb, nb / 32, vb);
  decode(w, a, 3, a->tc, nc / 32, vc);
  for (int i = 0; i < na; i++) A[la[i]] = va[i];
  for (int i = 0; i < nb; i++) Bt[lb[i]] = vb[i];
  for (int i = 0; i < nc; i++) Cm[lc[i]] = vc[i];
  for (int r = 0; r < M; r++)
    for (int c = 0; c < N; c++) {
      const double *ar = A + r * 32, *bc = Bt + c * 32;
      if (ints) { /* |a b| < 2^16, K <= 32: exact in f64 */
        int64_t s = (int64_t)Cm[r * 8 + c];
        for (int k = 0; k < K; k++) s += (int64_t)(ar[k] * bc[k]);
        if (a->flags & CPU_F_SAT) s = s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
        Dm[r * 8 + c] = (double)(int32_t)(uint32_t)(uint64_t)s;
        continue;
      }
      double s = Cm[r * 8 + c];
      for (int k = 0; k < K; k++) s += ar[k] * bc[k];
      Dm[r * 8 + c] = s;
    }
  /* outputs after all inputs are read: D may share registers with C */
  for (int i = 0; i < nc; i++) {
    int t = i / (nc / 32), e = i % (nc / 32);
    uint8_t *d = grp_elem(w, a, 0, t, e, db);
    double s = Dm[lc[i]];
    if (ints) { int32_t v = (int32_t)s; memcpy(d, &v, 4); }
    else if (a->td == CUTE_T_F32) { float f = (float)s; memcpy(d, &f, 4); }
    else if (a->td == CUTE_T_F64) memcpy(d, &s, 8);
    else { uint16_t h = cpu_f2h(s, 1); memcpy(d, &h, 2); }
  }
  return 0;
}

/* the layouts as tables: A (r * 32 + c), B transposed (c * 32 + r), C (r * 8 + c),
   each indexed by t * (elements per lane) + i */
static int make_lay(cpu_asm_op *a) {
  int na = a->m * a->k, nb = a->k * a->n, nc = a->m * a->n;
  a->lay = malloc(sizeof *a->lay * (size_t)(na + nb + nc));
  if (!a->lay) return -1;
  int16_t *la = a->lay, *lb = la + na, *lc = lb + nb;
  for (int t = 0; t < CPU_LANES; t++) {
    int r, c;
    for (int i = 0; i < na / 32; i++) { lay_a(a, t, i, &r, &c); la[t * (na / 32) + i] = (int16_t)(r * 32 + c); }
    for (int i = 0; i < nb / 32; i++) { lay_b(a, t, i, &r, &c); lb[t * (nb / 32) + i] = (int16_t)(c * 32 + r); }
    for (int i = 0; i < nc / 32; i++) { lay_c(a, t, i, &r, &c); lc[t * (nc / 32) + i] = (int16_t)(r * 8 + c); }
  }
  return 0;
}

/* mma.sync.aligned.mMnNkK.row.col[.satfinite].D.A.B.C {d..}, {a..}, {b..}, {c..} */
int cpu_tc_parse_mma(cpu_asm_op *a, const char *const *tok, int ntok) {
  int i = 1;
  if (ntok < 3 || strcmp(tok[1], "sync") || strcmp(tok[2], "aligned")) return 1;
  i = 3;
  if (i >= ntok || sscanf(tok[i], "m%dn%dk%d", &a->m, &a->n, &a->k) != 3) return 1;
  i++;
  if (i + 1 >= ntok || strcmp(tok[i], "row") || strcmp(tok[i + 1], "col")) return 1;
  i += 2;
  if (i < ntok && !strcmp(tok[i], "satfinite")) { a->flags |= CPU_F_SAT; i++; }
  if (ntok - i != 4) return 1;
  a->td = ptx_type(tok[i]); a->ta = ptx_type(tok[i + 1]); a->tb = ptx_type(tok[i + 2]); a->tc = ptx_type(tok[i + 3]);
  int ta = a->ta, tb = a->tb, tc = a->tc, td = a->td;
  if (!ta || !tb || !tc || !td) return 1;
  /* the shapes and types of the PTX ISA's mma.sync the engine runs */
  int ok;
  if (a->m == 8) ok = a->n == 8 && a->k == 4 && ta == CUTE_T_F64 && tb == ta && tc == ta && td == ta;
  else {
    int kb = a->k * tbits(ta);
    ok = a->m == 16 && a->n == 8 && (kb == 128 || kb == 256) && tbits(ta) == tbits(tb);
    if (is_int8(ta)) ok = ok && is_int8(tb) && tc == CUTE_T_I32 && td == CUTE_T_I32;
    else if (is_fp8(ta)) ok = ok && is_fp8(tb) && kb == 256 && (tc == CUTE_T_F32 || tc == CUTE_T_F16) && (td == CUTE_T_F32 || td == CUTE_T_F16);
    else if (ta == CUTE_T_F16) ok = ok && tb == ta && (tc == CUTE_T_F32 || tc == CUTE_T_F16) && (td == CUTE_T_F32 || td == CUTE_T_F16);
    else if (ta == CUTE_T_BF16 || ta == CUTE_T_TF32) ok = ok && tb == ta && tc == CUTE_T_F32 && td == CUTE_T_F32;
    else ok = 0;
    if ((a->flags & CPU_F_SAT) && !is_int8(ta)) ok = 0;
  }
  if (!ok || a->ngroups != 4) return 1;
  /* register counts and sizes */
  int regbytes = a->m == 8 ? 8 : 4;
  int want[4] = { a->m * a->n / 32 * tbits(td) / 8 / regbytes, a->m * a->k / 32 * tbits(ta) / 8 / regbytes,
                  a->k * a->n / 32 * tbits(tb) / 8 / regbytes, a->m * a->n / 32 * tbits(tc) / 8 / regbytes };
  for (int g = 0; g < 4; g++) {
    if (a->g[g].kind != CPU_G_VEC || a->g[g].count != want[g]) return 1;
    for (int j = 0; j < want[g]; j++)
      if (!cpu_asm_is(a, g, j, g == 0, regbytes)) return 1;
  }
  if (make_lay(a)) return 1;
  a->run = run_mma;
  return 0;
}

/* ---- ldmatrix / stmatrix ----------------------------------------------------------------- */

/* m8n8 b16 matrices: matrix i's row r at the address of lane 8i + r; lane t
   holds row t/4, elements 2(t%4) and 2(t%4)+1 (.trans: the transposed matrix) */
static int run_matrix(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  const char *what = a->flags & CPU_F_STORE ? "stmatrix" : "ldmatrix";
  int rc = need_full(L, in, w, what);
  if (rc) return rc;
  int store = (a->flags & CPU_F_STORE) != 0, gaddr = store ? 0 : 1, gregs = store ? 1 : 0;
  const cpu_opnd *ao = cpu_asm_opnd(a, gaddr, 0);
  uint64_t rows[32];
  for (int l = 0; l < 8 * a->n; l++)
    if ((rc = cpu_tc_shared(L, in, w, l, ao, 16, &rows[l]))) return rc;
  for (int i = 0; i < a->n; i++) {
    const cpu_opnd *ro = cpu_asm_opnd(a, gregs, i);
    for (int t = 0; t < CPU_LANES; t++) {
      uint8_t *reg = cpu_opnd_at(w, ro, t);
      int r = t >> 2, q = t & 3;
      if (!(a->flags & CPU_F_TRANS)) {
        rc = cpu_tc_access(L, in, w, t, rows[8 * i + r] + (uint64_t)q * 4, reg, 4, store);
        if (rc) return rc;
        continue;
      }
      for (int j = 0; j < 2; j++) {
        rc = cpu_tc_access(L, in, w, t, rows[8 * i + 2 * q + j] + (uint64_t)r * 2, reg + 2 * j, 2, store);
        if (rc) return rc;
      }
    }
  }
  return 0;
}

/* {ldmatrix,stmatrix}.sync.aligned.m8n8.x{1,2,4}[.trans].shared[::cta].b16 */
int cpu_tc_parse_matrix(cpu_asm_op *a, const char *const *tok, int ntok, int store) {
  if (ntok < 7 || strcmp(tok[1], "sync") || strcmp(tok[2], "aligned") || strcmp(tok[3], "m8n8")) return 1;
  if (sscanf(tok[4], "x%d", &a->n) != 1 || (a->n != 1 && a->n != 2 && a->n != 4)) return 1;
  int i = 5;
  if (!strcmp(tok[i], "trans")) { a->flags |= CPU_F_TRANS; i++; }
  if (i + 2 != ntok || strncmp(tok[i], "shared", 6) || (tok[i][6] && strcmp(tok[i] + 6, "::cta")) || strcmp(tok[i + 1], "b16"))
    return 1;
  int gaddr = store ? 0 : 1, gregs = store ? 1 : 0;
  if (a->ngroups != 2 || a->g[gaddr].kind != CPU_G_ADDR || a->g[gaddr].count != 1 || a->g[gregs].kind != CPU_G_VEC ||
      a->g[gregs].count != a->n)
    return 1;
  if (!cpu_asm_is(a, gaddr, 0, 0, 4) && !cpu_asm_is(a, gaddr, 0, 0, 8)) return 1;
  for (int j = 0; j < a->n; j++)
    if (!cpu_asm_is(a, gregs, j, !store, 4)) return 1;
  if (store) a->flags |= CPU_F_STORE;
  a->run = run_matrix;
  return 0;
}

/* movmatrix.sync.aligned.m8n8.trans.b16 d, a: the 8 x 8 b16 matrix held as
   ldmatrix holds it (lane t: row t/4, elements 2(t%4), 2(t%4)+1) transposed */
static int run_movmatrix(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  int rc = need_full(L, in, w, "movmatrix");
  if (rc) return rc;
  const cpu_opnd *d = cpu_asm_opnd(a, 0, 0), *s = cpu_asm_opnd(a, 1, 0);
  uint16_t m[8][8];
  for (int t = 0; t < CPU_LANES; t++) memcpy(&m[t >> 2][2 * (t & 3)], cpu_opnd_at(w, s, t), 4);
  for (int t = 0; t < CPU_LANES; t++) {
    uint16_t v[2] = { m[2 * (t & 3)][t >> 2], m[2 * (t & 3) + 1][t >> 2] };
    memcpy(cpu_opnd_at(w, d, t), v, 4);
  }
  return 0;
}

int cpu_tc_parse_movmatrix(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok != 6 || strcmp(tok[1], "sync") || strcmp(tok[2], "aligned") || strcmp(tok[3], "m8n8") ||
      strcmp(tok[4], "trans") || strcmp(tok[5], "b16"))
    return 1;
  if (a->ngroups != 2 || a->g[0].kind != CPU_G_REG || a->g[1].kind != CPU_G_REG || !cpu_asm_is(a, 0, 0, 1, 4) ||
      !cpu_asm_is(a, 1, 0, 0, 4))
    return 1;
  a->run = run_movmatrix;
  return 0;
}

/* ---- cp.async ---------------------------------------------------------------------------- */

/* Copies are queued per thread at issue (the source read then, through
   cpu_tc_access) and written to shared memory when the thread's wait_group /
   wait_all covers their group, so a kernel that reads the destination
   without waiting sees the old contents, as a GPU may show it. */
typedef struct cpu_copy { uint64_t dst; uint32_t group; int16_t thread; uint8_t n, pad; uint8_t data[16]; } cpu_copy;
struct cpu_async {
  cpu_copy *q; size_t n, cap;
  uint32_t committed[1024]; /* per thread of the block: groups committed */
};

void cpu_async_reset(cpu_launch *L, int free_all) {
  struct cpu_async *s = L->async;
  if (!s) return;
  if (free_all) { free(s->q); free(s); L->async = NULL; return; }
  s->n = 0; /* a block's copies never outlive it */
  memset(s->committed, 0, sizeof s->committed);
}

static struct cpu_async *async_state(cpu_launch *L) {
  if (!L->async) L->async = calloc(1, sizeof *L->async);
  return L->async;
}

static int run_cpasync(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  struct cpu_async *s = async_state(L);
  if (!s) return cpu_fail(L, in, "out of memory");
  const cpu_opnd *dst = cpu_asm_opnd(a, 0, 0), *src = cpu_asm_opnd(a, 1, 0);
  const cpu_opnd *ss = a->ngroups == 4 ? cpu_asm_opnd(a, 3, 0) : NULL;
  int64_t ssimm = a->ngroups == 4 && !ss ? a->it[a->g[3].first].v : a->k;
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(w->mask >> t & 1)) continue;
    if (s->n == s->cap) {
      size_t nc = s->cap ? s->cap * 2 : 256;
      cpu_copy *q = realloc(s->q, sizeof *q * nc);
      if (!q) return cpu_fail(L, in, "out of memory");
      s->q = q; s->cap = nc;
    }
    cpu_copy *c = &s->q[s->n];
    memset(c, 0, sizeof *c);
    int rc = cpu_tc_shared(L, in, w, t, dst, (size_t)a->k, &c->dst);
    if (rc) return rc;
    uint64_t n = ss ? cpu_opnd_u64(w, ss, t) & 0xffffffffu : (uint64_t)ssimm;
    if (n > (uint64_t)a->k) n = (uint64_t)a->k; /* (a larger src-size is undefined in PTX) */
    if (n && (rc = cpu_tc_access(L, in, w, t, cpu_opnd_u64(w, src, t), c->data, (size_t)n, 0))) return rc;
    c->thread = (int16_t)(w->index * CPU_LANES + t);
    c->group = s->committed[c->thread];
    c->n = (uint8_t)a->k;
    s->n++;
  }
  return 0;
}

/* commit_group (k = -1), wait_group N (k = N), wait_all (commit, then wait 0) */
static int run_cpgroup(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  struct cpu_async *s = async_state(L);
  if (!s) return cpu_fail(L, in, "out of memory");
  int commit = a->k < 0 || (a->flags & CPU_F_WAITALL), wait = a->k >= 0;
  for (int t = 0; t < CPU_LANES; t++)
    if ((w->mask >> t & 1) && commit) s->committed[w->index * CPU_LANES + t]++;
  if (!wait) return 0;
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    cpu_copy *c = &s->q[i];
    int t = c->thread - w->index * CPU_LANES;
    int mine = t >= 0 && t < CPU_LANES && (w->mask >> t & 1);
    if (mine && (int64_t)c->group < (int64_t)s->committed[c->thread] - a->k) {
      int rc = cpu_tc_access(L, in, w, t, c->dst, c->data, c->n, 1);
      if (rc) return rc;
      continue;
    }
    s->q[k++] = *c;
  }
  s->n = k;
  return 0;
}

/* cp.async.{ca,cg}.shared[::cta].global[.L2::...] [dst], [src], N[, src-size] */
int cpu_tc_parse_cpasync(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok < 4 || (strcmp(tok[2], "ca") && strcmp(tok[2], "cg"))) return 1;
  if (strncmp(tok[3], "shared", 6) || (tok[3][6] && strcmp(tok[3] + 6, "::cta"))) return 1;
  if (ntok < 5 || strcmp(tok[4], "global")) return 1;
  for (int i = 5; i < ntok; i++)
    if (strncmp(tok[i], "L2::", 4)) return 1; /* cache hints only */
  if (a->ngroups < 3 || a->ngroups > 4 || a->g[0].kind != CPU_G_ADDR || a->g[1].kind != CPU_G_ADDR ||
      a->g[2].kind != CPU_G_REG || a->g[0].count != 1 || a->g[1].count != 1 || a->g[2].count != 1)
    return 1;
  const cpu_item *n = &a->it[a->g[2].first];
  const cpu_opnd *d = cpu_asm_opnd(a, 0, 0), *s = cpu_asm_opnd(a, 1, 0);
  if (n->kind != CPU_IT_IMM || (n->v != 4 && n->v != 8 && n->v != 16) || !d || !s || s->size != 8 || (d->size != 4 && d->size != 8))
    return 1;
  if (!strcmp(tok[2], "cg") && n->v != 16) return 1;
  if (a->ngroups == 4) {
    const cpu_item *z = &a->it[a->g[3].first];
    if (a->g[3].kind != CPU_G_REG || a->g[3].count != 1 || z->kind == CPU_IT_SINK) return 1;
    if (z->kind == CPU_IT_OP && a->op[z->v].size != 4) return 1;
  }
  a->k = (int)n->v;
  a->run = run_cpasync;
  return 0;
}

int cpu_tc_parse_cpasync_group(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok != 3) return 1;
  if (!strcmp(tok[2], "commit_group") && a->ngroups == 0) a->k = -1;
  else if (!strcmp(tok[2], "wait_all") && a->ngroups == 0) { a->k = 0; a->flags |= CPU_F_WAITALL; }
  else if (!strcmp(tok[2], "wait_group") && a->ngroups == 1 && a->g[0].count == 1 && a->it[a->g[0].first].kind == CPU_IT_IMM &&
           a->it[a->g[0].first].v >= 0)
    a->k = (int)a->it[a->g[0].first].v;
  else return 1;
  a->run = run_cpgroup;
  return 0;
}
