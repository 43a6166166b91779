/* cpu_ops.c -- the CPU target's pure ops over a warp's 32 lanes: arithmetic,
 * compares, select, conversions with the GPU's rounding, math (host libm),
 * bits, vectors, gep (docs/CPU_TARGET.md).  f32 math is IEEE single (float),
 * f16/bf16 arithmetic is computed wider and rounded to nearest even. */
#include "cpu.h"
#include <fenv.h>
#include <math.h>
#include <string.h>

#define N_MAX (CPU_LANES * 8)

/* ---- f16 / bf16 -------------------------------------------------------------------- */

/* x rounded to a float of e exponent and m mantissa bits (rnd: 0/1 nearest
   even, 2 toward zero, 3 down, 4 up); NaN -> the canonical 0x7fff */
static uint16_t to_small(double x, int e, int m, int rnd) {
  uint16_t sign = signbit(x) ? (uint16_t)(1u << (e + m)) : 0;
  uint16_t expmask = (uint16_t)(((1u << e) - 1) << m);
  if (isnan(x)) return 0x7fff;
  double a = fabs(x);
  if (isinf(a)) return sign | expmask;
  if (a == 0) return sign;
  int bias = (1 << (e - 1)) - 1, emin = 1 - bias, emax = bias, ex;
  frexp(a, &ex);
  ex -= 1;
  if (ex < emin) ex = emin;
  double q = ldexp(a, m - ex), r;
  int neg = sign != 0;
  switch (rnd) {
  case 2: r = trunc(q); break;
  case 3: r = neg ? ceil(q) : floor(q); break;
  case 4: r = neg ? floor(q) : ceil(q); break;
  default: r = nearbyint(q); break;
  }
  uint64_t s = (uint64_t)r;
  if (s >= (2ull << m)) { s >>= 1; ex++; }
  uint16_t maxfin = (uint16_t)(expmask - (1u << m) + ((1u << m) - 1));
  if (ex > emax) {
    int to_inf = rnd <= 1 || (rnd == 3 && neg) || (rnd == 4 && !neg);
    return sign | (to_inf ? expmask : maxfin);
  }
  if (s < (1ull << m)) return sign | (uint16_t)s; /* subnormal */
  return sign | (uint16_t)(((uint64_t)(ex + bias) << m) | (s & ((1ull << m) - 1)));
}
uint16_t cpu_f2h(double x, int rnd) { return to_small(x, 5, 10, rnd); }
uint16_t cpu_f2bf(double x, int rnd) { return to_small(x, 8, 7, rnd); }
float cpu_h2f(uint16_t h) {
  int e = h >> 10 & 31, m = h & 1023;
  float s = (h & 0x8000) ? -1.0f : 1.0f;
  if (e == 31) return m ? NAN : s * INFINITY;
  if (e == 0) return s * ldexpf((float)m, -24);
  return s * ldexpf((float)(m | 1024), e - 25);
}
float cpu_bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- element reads and writes for conversions --------------------------------------- */

static int is_sint(int k) { return k == CUTE_T_I8 || k == CUTE_T_I16 || k == CUTE_T_I32 || k == CUTE_T_I64; }
static int is_uint(int k) { return k == CUTE_T_U8 || k == CUTE_T_U16 || k == CUTE_T_U32 || k == CUTE_T_U64 || k == CUTE_T_I1; }
static int is_flt(int k) { return k == CUTE_T_F16 || k == CUTE_T_BF16 || k == CUTE_T_F32 || k == CUTE_T_F64 || k == CUTE_T_TF32; }

static int64_t rd_int(int k, const uint8_t *p) {
  switch (k) {
  case CUTE_T_I8: return *(const int8_t *)p;
  case CUTE_T_I16: return *(const int16_t *)p;
  case CUTE_T_I32: return *(const int32_t *)p;
  case CUTE_T_I64: return *(const int64_t *)p;
  case CUTE_T_U8: case CUTE_T_I1: return *p;
  case CUTE_T_U16: return *(const uint16_t *)p;
  case CUTE_T_U32: return *(const uint32_t *)p;
  default: return (int64_t)*(const uint64_t *)p;
  }
}
static double rd_flt(int k, const uint8_t *p) {
  switch (k) {
  case CUTE_T_F16: return cpu_h2f(*(const uint16_t *)p);
  case CUTE_T_BF16: return cpu_bf2f(*(const uint16_t *)p);
  case CUTE_T_F32: case CUTE_T_TF32: return *(const float *)p;
  default: return *(const double *)p;
  }
}
static int ksize(int k) { return k == CUTE_T_I1 ? 1 : ir_bits(k) / 8; }
static void wr_int(int k, uint8_t *p, uint64_t v) {
  switch (ksize(k)) {
  case 1: *p = (uint8_t)(k == CUTE_T_I1 ? (v & 1) : v); break;
  case 2: *(uint16_t *)p = (uint16_t)v; break;
  case 4: *(uint32_t *)p = (uint32_t)v; break;
  default: *(uint64_t *)p = v; break;
  }
}
static void wr_flt(int k, uint8_t *p, double v, int rnd) {
  switch (k) {
  case CUTE_T_F16: *(uint16_t *)p = cpu_f2h(v, rnd); break;
  case CUTE_T_BF16: *(uint16_t *)p = cpu_f2bf(v, rnd); break;
  case CUTE_T_F32:
    if (rnd >= 2) {
      int old = fegetround();
      fesetround(rnd == 2 ? FE_TOWARDZERO : rnd == 3 ? FE_DOWNWARD : FE_UPWARD);
      volatile double vv = v;
      *(float *)p = (float)vv;
      fesetround(old);
    } else *(float *)p = (float)v;
    break;
  default: *(double *)p = v; break;
  }
}
/* float -> integer: rounding by rnd (none: toward zero), saturating, NaN -> 0 */
static void wr_f2i(int k, uint8_t *p, double v, int rnd) {
  if (isnan(v)) { wr_int(k, p, 0); return; }
  v = rnd == 1 ? nearbyint(v) : rnd == 3 ? floor(v) : rnd == 4 ? ceil(v) : trunc(v);
  int bits = k == CUTE_T_I1 ? 1 : ir_bits(k);
  if (is_sint(k)) {
    double lo = -ldexp(1, bits - 1), hi = ldexp(1, bits - 1);
    int64_t r = v <= lo ? (int64_t)(bits == 64 ? INT64_MIN : (int64_t)lo) : v >= hi ? (bits == 64 ? INT64_MAX : (int64_t)hi - 1) : (int64_t)v;
    wr_int(k, p, (uint64_t)r);
  } else {
    double hi = ldexp(1, bits);
    uint64_t r = v <= 0 ? 0 : v >= hi ? (bits == 64 ? UINT64_MAX : (uint64_t)hi - 1) : (uint64_t)v;
    wr_int(k, p, r);
  }
}

static int cvt(const cpu_ins *in, uint8_t *d, const uint8_t *a) {
  int sk = in->ak, dk = in->sk, rnd = (int)in->imm;
  int ss = ksize(sk), ds = ksize(dk), n = CPU_LANES * in->nel;
  if (sk == CUTE_T_F32 && dk == CUTE_T_F32 && rnd == 0) { memcpy(d, a, (size_t)n * 4); return 0; }
  if (sk == CUTE_T_I32 && dk == CUTE_T_F32 && rnd <= 1) {
    for (int i = 0; i < n; i++) ((float *)d)[i] = (float)((const int32_t *)a)[i];
    return 0;
  }
  if (sk == CUTE_T_U32 && dk == CUTE_T_I32) { memcpy(d, a, (size_t)n * 4); return 0; }
  for (int i = 0; i < n; i++) {
    const uint8_t *s = a + (size_t)i * (size_t)ss;
    uint8_t *t = d + (size_t)i * (size_t)ds;
    if (dk == CUTE_T_I1) /* to a predicate: x != 0 (NaN -> 1), as the GPU's setp */
      *t = is_flt(sk) ? rd_flt(sk, s) != 0 : rd_int(sk, s) != 0;
    else if (dk >= CUTE_T_F8E4M3) *t = cpu_f2f8(rd_flt(sk, s), dk == CUTE_T_F8E5M2);
    else if (sk >= CUTE_T_F8E4M3) wr_flt(dk, t, cpu_f82f(*s, sk == CUTE_T_F8E5M2), 1);
    else if (dk == CUTE_T_TF32) { /* cvt.rna.tf32.f32: to nearest, ties away, low 13 bits cleared */
      uint32_t u;
      memcpy(&u, s, 4);
      if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;
      memcpy(t, &u, 4);
    } else if (is_flt(sk) && is_flt(dk)) {
      double v = rd_flt(sk, s);
      if (sk == dk && rnd) v = rnd == 1 ? nearbyint(v) : rnd == 2 ? trunc(v) : rnd == 3 ? floor(v) : ceil(v);
      wr_flt(dk, t, v, sk == dk ? 1 : rnd);
    } else if (is_flt(sk)) wr_f2i(dk, t, rd_flt(sk, s), rnd);
    else if (is_flt(dk)) {
      int64_t v = rd_int(sk, s);
      if (sk == CUTE_T_U64 && v < 0) {
        if (dk == CUTE_T_F32 && rnd <= 1) *(float *)t = (float)(uint64_t)v;
        else wr_flt(dk, t, (double)(uint64_t)v, rnd);
      } else if (dk == CUTE_T_F32 && rnd <= 1) *(float *)t = (float)v;
      else wr_flt(dk, t, (double)v, rnd);
    } else wr_int(dk, t, (uint64_t)rd_int(sk, s));
  }
  return 0;
}

/* ---- arithmetic -------------------------------------------------------------------- */

#define LOOP2(T, E) do { T *D = (T *)d; const T *A = (const T *)a, *B = (const T *)b; \
    for (int i = 0; i < n; i++) { T x = A[i], y = B[i]; (void)y; D[i] = (T)(E); } } while (0)
#define LOOPC(T, E) do { uint8_t *D = d; const T *A = (const T *)a, *B = (const T *)b; \
    for (int i = 0; i < n; i++) { T x = A[i], y = B[i]; (void)y; D[i] = (uint8_t)(E); } } while (0)

/* one integer width: ST signed, UT unsigned, BITS; sgn: the kind is signed */
#define INT_OPS(ST, UT, BITS, WT, UWT) \
  if (sgn) switch (op) { \
    case IR_DIV: LOOP2(ST, y == 0 ? (ST)-1 : (y == -1 ? (ST)(0 - (UT)x) : x / y)); return 0; \
    case IR_REM: LOOP2(ST, y == 0 ? x : (y == -1 ? 0 : x % y)); return 0; \
    case IR_MIN: LOOP2(ST, x < y ? x : y); return 0; \
    case IR_MAX: LOOP2(ST, x > y ? x : y); return 0; \
    case IR_SHR: LOOP2(ST, (UT)y >= BITS ? (x < 0 ? -1 : 0) : x >> (UT)y); return 0; \
    case IR_MULHI: LOOP2(ST, ((WT)x * (WT)y) >> BITS); return 0; \
    case IR_ABS: LOOP2(ST, x < 0 ? (ST)(0 - (UT)x) : x); return 0; \
    case IR_EQ: LOOPC(ST, x == y); return 0; case IR_NE: LOOPC(ST, x != y); return 0; \
    case IR_LT: LOOPC(ST, x < y); return 0; case IR_LE: LOOPC(ST, x <= y); return 0; \
    case IR_GT: LOOPC(ST, x > y); return 0; case IR_GE: LOOPC(ST, x >= y); return 0; \
    default: break; \
  } else switch (op) { \
    case IR_DIV: LOOP2(UT, y == 0 ? (UT)~(UT)0 : x / y); return 0; \
    case IR_REM: LOOP2(UT, y == 0 ? x : x % y); return 0; \
    case IR_MIN: LOOP2(UT, x < y ? x : y); return 0; \
    case IR_MAX: LOOP2(UT, x > y ? x : y); return 0; \
    case IR_SHR: LOOP2(UT, y >= BITS ? 0 : x >> y); return 0; \
    case IR_MULHI: LOOP2(UT, ((UWT)x * (UWT)y) >> BITS); return 0; \
    case IR_ABS: LOOP2(UT, x); return 0; \
    case IR_EQ: LOOPC(UT, x == y); return 0; case IR_NE: LOOPC(UT, x != y); return 0; \
    case IR_LT: LOOPC(UT, x < y); return 0; case IR_LE: LOOPC(UT, x <= y); return 0; \
    case IR_GT: LOOPC(UT, x > y); return 0; case IR_GE: LOOPC(UT, x >= y); return 0; \
    default: break; \
  } \
  switch (op) { \
    case IR_ADD: LOOP2(UT, x + y); return 0; \
    case IR_SUB: LOOP2(UT, x - y); return 0; \
    case IR_MUL: LOOP2(UT, x * y); return 0; \
    case IR_AND: LOOP2(UT, x & y); return 0; \
    case IR_OR: LOOP2(UT, x | y); return 0; \
    case IR_XOR: LOOP2(UT, x ^ y); return 0; \
    case IR_SHL: LOOP2(UT, y >= BITS ? 0 : x << y); return 0; \
    case IR_NEG: LOOP2(UT, 0 - x); return 0; \
    case IR_NOT: LOOP2(UT, ~x); return 0; \
    default: return 1; \
  }

static int int_op(int op, int k, uint8_t *d, const uint8_t *a, const uint8_t *b, int n) {
  int sgn = is_sint(k);
  if (!b) b = a; /* unary ops read y harmlessly */
  switch (ksize(k)) {
  case 1:
    if (k == CUTE_T_I1) switch (op) {
      case IR_AND: LOOP2(uint8_t, x & y); return 0;
      case IR_OR: LOOP2(uint8_t, x | y); return 0;
      case IR_XOR: LOOP2(uint8_t, x ^ y); return 0;
      case IR_NOT: LOOP2(uint8_t, x ^ 1); return 0;
      case IR_EQ: LOOPC(uint8_t, x == y); return 0;
      case IR_NE: LOOPC(uint8_t, x != y); return 0;
      default: return 1;
    }
    { INT_OPS(int8_t, uint8_t, 8, int32_t, uint32_t) }
  case 2: { INT_OPS(int16_t, uint16_t, 16, int32_t, uint32_t) }
  case 4: { INT_OPS(int32_t, uint32_t, 32, int64_t, uint64_t) }
  default: { INT_OPS(int64_t, uint64_t, 64, __int128, unsigned __int128) }
  }
}

/* float ops on float or double lanes; math: host libm */
#define FLT_OPS(T, SUF) switch (op) { \
    case IR_ADD: LOOP2(T, x + y); return 0; \
    case IR_SUB: LOOP2(T, x - y); return 0; \
    case IR_MUL: LOOP2(T, x * y); return 0; \
    case IR_DIV: LOOP2(T, x / y); return 0; \
    case IR_REM: LOOP2(T, fmod##SUF(x, y)); return 0; \
    case IR_MIN: LOOP2(T, fmin##SUF(x, y)); return 0; \
    case IR_MAX: LOOP2(T, fmax##SUF(x, y)); return 0; \
    case IR_POW: LOOP2(T, pow##SUF(x, y)); return 0; \
    case IR_NEG: LOOP2(T, -x); return 0; \
    case IR_ABS: LOOP2(T, fabs##SUF(x)); return 0; \
    case IR_SQRT: LOOP2(T, sqrt##SUF(x)); return 0; \
    case IR_RSQRT: LOOP2(T, (T)1 / sqrt##SUF(x)); return 0; \
    case IR_RCP: LOOP2(T, (T)1 / x); return 0; \
    case IR_EXP: LOOP2(T, exp##SUF(x)); return 0; \
    case IR_EXP2: LOOP2(T, exp2##SUF(x)); return 0; \
    case IR_LOG: LOOP2(T, log##SUF(x)); return 0; \
    case IR_LOG2: LOOP2(T, log2##SUF(x)); return 0; \
    case IR_SIN: LOOP2(T, sin##SUF(x)); return 0; \
    case IR_COS: LOOP2(T, cos##SUF(x)); return 0; \
    case IR_TANH: LOOP2(T, tanh##SUF(x)); return 0; \
    case IR_ERF: LOOP2(T, erf##SUF(x)); return 0; \
    case IR_FLOOR: LOOP2(T, floor##SUF(x)); return 0; \
    case IR_CEIL: LOOP2(T, ceil##SUF(x)); return 0; \
    case IR_TRUNC: LOOP2(T, trunc##SUF(x)); return 0; \
    case IR_ROUND: LOOP2(T, nearbyint##SUF(x)); return 0; \
    case IR_EQ: LOOPC(T, x == y); return 0; case IR_NE: LOOPC(T, x != y); return 0; \
    case IR_LT: LOOPC(T, x < y); return 0; case IR_LE: LOOPC(T, x <= y); return 0; \
    case IR_GT: LOOPC(T, x > y); return 0; case IR_GE: LOOPC(T, x >= y); return 0; \
    case IR_ISNAN: LOOPC(T, x != x); return 0; \
    default: return 1; }

static int is_math(int op) { return op >= IR_SQRT && op <= IR_ROUND; }

static int flt_op(int op, int k, uint8_t *d, const uint8_t *a, const uint8_t *b, const uint8_t *c, int n) {
  if (!b) b = a;
  if (k == CUTE_T_F32) {
    if (op == IR_FMA) {
      const float *A = (const float *)a, *B = (const float *)b, *Cc = (const float *)c;
      for (int i = 0; i < n; i++) ((float *)d)[i] = fmaf(A[i], B[i], Cc[i]);
      return 0;
    }
    FLT_OPS(float, f)
  }
  if (k == CUTE_T_F64) {
    if (op == IR_FMA) {
      const double *A = (const double *)a, *B = (const double *)b, *Cc = (const double *)c;
      for (int i = 0; i < n; i++) ((double *)d)[i] = fma(A[i], B[i], Cc[i]);
      return 0;
    }
    FLT_OPS(double, )
  }
  /* f16 / bf16: widened (math in f32, arithmetic in f64: one rounding) */
  double x[N_MAX], y[N_MAX], z[N_MAX];
  double r[N_MAX];
  int cmp = op >= IR_EQ && op <= IR_ISNAN;
  for (int i = 0; i < n; i++) {
    x[i] = rd_flt(k, a + 2 * i); y[i] = rd_flt(k, b + 2 * i); z[i] = c ? rd_flt(k, c + 2 * i) : 0;
  }
  if (op == IR_FMA) for (int i = 0; i < n; i++) r[i] = fma(x[i], y[i], z[i]);
  else if (is_math(op) || op == IR_POW) {
    float fx[N_MAX] = { 0 }, fy[N_MAX] = { 0 }, fr[N_MAX];
    for (int i = 0; i < n; i++) { fx[i] = (float)x[i]; fy[i] = (float)y[i]; }
    if (flt_op(op, CUTE_T_F32, (uint8_t *)fr, (uint8_t *)fx, (uint8_t *)fy, NULL, n)) return 1;
    for (int i = 0; i < n; i++) r[i] = fr[i];
  } else {
    uint8_t tmp[N_MAX * 8];
    if (flt_op(op, CUTE_T_F64, cmp ? d : tmp, (uint8_t *)x, (uint8_t *)y, NULL, n)) return 1;
    if (cmp) return 0;
    memcpy(r, tmp, (size_t)n * 8);
  }
  for (int i = 0; i < n; i++) ((uint16_t *)d)[i] = k == CUTE_T_F16 ? cpu_f2h(r[i], 1) : cpu_f2bf(r[i], 1);
  return 0;
}

/* ---- bits and vectors ----------------------------------------------------------------- */

static uint32_t prmt(uint32_t a, uint32_t b, uint32_t sel) {
  uint8_t src[8];
  for (int i = 0; i < 4; i++) { src[i] = (uint8_t)(a >> (8 * i)); src[4 + i] = (uint8_t)(b >> (8 * i)); }
  uint32_t r = 0;
  for (int i = 0; i < 4; i++) {
    unsigned s = sel >> (4 * i) & 15;
    uint8_t v = src[s & 7];
    if (s & 8) v = (v & 0x80) ? 0xff : 0;
    r |= (uint32_t)v << (8 * i);
  }
  return r;
}

static int bits_op(const cpu_ins *in, uint8_t *d, const uint8_t *a, const uint8_t *b, const uint8_t *c) {
  int w = in->asize;
  for (int t = 0; t < CPU_LANES; t++) {
    uint64_t x = w == 8 ? ((const uint64_t *)a)[t] : w == 4 ? ((const uint32_t *)a)[t]
               : w == 2 ? ((const uint16_t *)a)[t] : a[t];
    switch (in->op) {
    case IR_POPC: ((uint32_t *)d)[t] = (uint32_t)__builtin_popcountll(x); break;
    case IR_CLZ: ((uint32_t *)d)[t] = x ? (uint32_t)(__builtin_clzll(x) - (64 - 8 * w)) : (uint32_t)(8 * w); break;
    case IR_BREV: {
      uint64_t r = 0;
      for (int i = 0; i < 8 * w; i++) r |= (x >> i & 1) << (8 * w - 1 - i);
      wr_int(in->sk, d + (size_t)t * (size_t)w, r);
      break;
    }
    default:
      ((uint32_t *)d)[t] = prmt((uint32_t)x, ((const uint32_t *)b)[t], ((const uint32_t *)c)[t]);
    }
  }
  return 0;
}

int cpu_pure_ok(const cute_cpu_prog *p, const cpu_ins *in) {
  (void)p;
  int op = in->op, k = in->ak;
  int vec_ok = in->nel <= 8;
  if (op >= IR_ADD && op <= IR_FMA) {
    if (!vec_ok) return 0;
    if (is_flt(k) && k != CUTE_T_TF32) return op != IR_MULHI && op != IR_AND && op != IR_OR && op != IR_XOR && op != IR_SHL && op != IR_SHR && op != IR_NOT;
    return (is_sint(k) || is_uint(k)) && op != IR_FMA;
  }
  if (op >= IR_EQ && op <= IR_ISNAN) return in->asize == ksize(k) && k && k != CUTE_T_TF32 && (is_flt(k) || op != IR_ISNAN);
  if (op == IR_SELECT) return 1;
  if (op == IR_CVT) {
    if (in->sk >= CUTE_T_F8E4M3 || k >= CUTE_T_F8E4M3) /* fp8: from / to f32 and f16 (cpu_tc.c) */
      { int o = in->sk >= CUTE_T_F8E4M3 ? k : in->sk; return in->nel == 1 && in->imm <= 1 && (o == CUTE_T_F32 || o == CUTE_T_F16); }
    if (!k || !in->sk) return 0;
    if (in->sk == CUTE_T_TF32) return k == CUTE_T_F32 && in->imm == 0;
    if (k == CUTE_T_TF32) return in->sk == CUTE_T_F32;
    return in->nel == 1 || in->imm == 0;
  }
  if (op == IR_BITCAST || op == IR_PTRCAST || op == IR_GEP) return 1;
  if (op >= IR_SQRT && op <= IR_ROUND) return is_flt(k) && k != CUTE_T_TF32 && in->nel == 1;
  if (op == IR_POPC || op == IR_CLZ || op == IR_BREV) return is_sint(k) || (is_uint(k) && k != CUTE_T_I1);
  if (op == IR_PRMT) return 1;
  if (op == IR_EXTRACT || op == IR_INSERT || op == IR_VEC) return 1;
  return 0;
}

int cpu_pure(const cute_cpu_prog *p, const cpu_ins *in, cpu_warp *w) {
  (void)p;
  int op = in->op;
  uint8_t *d = w->vp[in->ref];
  const uint8_t *a = in->nargs > 0 ? w->vp[in->a[0]] : NULL;
  const uint8_t *b = in->nargs > 1 ? w->vp[in->a[1]] : NULL;
  const uint8_t *c = in->nargs > 2 ? w->vp[in->a[2]] : NULL;
  int k = in->ak, n = CPU_LANES * in->nel;
  if ((op >= IR_ADD && op <= IR_ISNAN) || (op >= IR_SQRT && op <= IR_ROUND)) {
    if (op >= IR_EQ && op <= IR_ISNAN) n = CPU_LANES;
    else n = CPU_LANES * (in->asize / ksize(k));
    return is_flt(k) ? flt_op(op, k, d, a, b, c, n) : int_op(op, k, d, a, b, n);
  }
  switch (op) {
  case IR_SELECT: {
    int s = in->size;
    if (s == 4) {
      for (int t = 0; t < CPU_LANES; t++) ((uint32_t *)d)[t] = a[t] ? ((const uint32_t *)b)[t] : ((const uint32_t *)c)[t];
    } else {
      for (int t = 0; t < CPU_LANES; t++)
        memcpy(d + (size_t)t * (size_t)s, (a[t] ? b : c) + (size_t)t * (size_t)s, (size_t)s);
    }
    return 0;
  }
  case IR_CVT: return cvt(in, d, a);
  case IR_BITCAST: case IR_PTRCAST: memcpy(d, a, (size_t)in->size * CPU_LANES); return 0;
  case IR_GEP: {
    int64_t es = in->aux;
    int ik = in->bk, is = ksize(ik);
    if (ik == CUTE_T_I32)
      for (int t = 0; t < CPU_LANES; t++) ((uint64_t *)d)[t] = ((const uint64_t *)a)[t] + (uint64_t)((int64_t)((const int32_t *)b)[t] * es);
    else
      for (int t = 0; t < CPU_LANES; t++) ((uint64_t *)d)[t] = ((const uint64_t *)a)[t] + (uint64_t)(rd_int(ik, b + (size_t)t * (size_t)is) * es);
    return 0;
  }
  case IR_POPC: case IR_CLZ: case IR_BREV: case IR_PRMT: return bits_op(in, d, a, b, c);
  case IR_EXTRACT: {
    int es = in->size, s = in->asize;
    for (int t = 0; t < CPU_LANES; t++) memcpy(d + (size_t)t * (size_t)es, a + (size_t)t * (size_t)s + (size_t)in->imm * (size_t)es, (size_t)es);
    return 0;
  }
  case IR_INSERT: {
    int s = in->size, es = in->bsize; /* (an element of a vector, or of a fragment) */
    memcpy(d, a, (size_t)s * CPU_LANES);
    for (int t = 0; t < CPU_LANES; t++) memcpy(d + (size_t)t * (size_t)s + (size_t)in->imm * (size_t)es, b + (size_t)t * (size_t)es, (size_t)es);
    return 0;
  }
  case IR_VEC: {
    int s = in->size, es = s / in->nel;
    const ir_inst *ii = &p->f->inst[in->ref];
    const int32_t *args = ir_args(p->f, ii);
    for (int e = 0; e < in->nel; e++) {
      const uint8_t *src = w->vp[args[ii->nargs == 1 ? 0 : e]];
      for (int t = 0; t < CPU_LANES; t++) memcpy(d + (size_t)t * (size_t)s + (size_t)e * (size_t)es, src + (size_t)t * (size_t)es, (size_t)es);
    }
    return 0;
  }
  default: return 1;
  }
}
