/* ir_const.c -- interned constants of the kernel IR: integers normalised to
 * their type, floats rounded to their type (f16/bf16 conversions here), one
 * ref per (type, bits) in each function. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- constants ---------------------------------------------------------------------- */
int64_t ir_norm_int(int32_t t, int64_t v) {
  switch (t) {
  case CUTE_T_I1: return v & 1;
  case CUTE_T_I8: return (int8_t)v;
  case CUTE_T_I16: return (int16_t)v;
  case CUTE_T_I32: return (int32_t)v;
  case CUTE_T_U8: return (uint8_t)v;
  case CUTE_T_U16: return (uint16_t)v;
  case CUTE_T_U32: return (uint32_t)v;
  default: return v;
  }
}

static uint16_t ir_f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t e = (int32_t)((x >> 23) & 0xff);
  uint32_t m = x & 0x7fffffu;
  if (e == 255) return (uint16_t)(sign | 0x7c00u | (m ? 0x200u | (m >> 13) : 0));
  int32_t he = e - 127 + 15;
  if (he >= 31) return (uint16_t)(sign | 0x7c00u);
  if (he <= 0) {
    if (he < -10) return (uint16_t)sign;
    m |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - he);
    uint32_t r = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ((uint32_t)he << 10) | (m >> 13), rem = m & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1))) r++;
  return (uint16_t)(sign | r);
}
static float ir_h2f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, x;
  if (e == 31) x = sign | 0x7f800000u | (m << 13);
  else if (e == 0) {
    float f = ldexpf((float)m, -24);
    return sign ? -f : f;
  } else x = sign | ((e - 15 + 127) << 23) | (m << 13);
  float f;
  memcpy(&f, &x, 4);
  return f;
}
static uint16_t ir_f2bf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  x += 0x7fffu + ((x >> 16) & 1);
  return (uint16_t)(x >> 16);
}
static float ir_bf2f(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

int64_t ir_float_bits(int32_t t, double v) {
  float f = (float)v;
  uint32_t u;
  switch (t) {
  case CUTE_T_F64: { int64_t b; memcpy(&b, &v, 8); return b; }
  case CUTE_T_F32: memcpy(&u, &f, 4); return u;
  case CUTE_T_F16: return ir_f2h(f);
  case CUTE_T_BF16: return ir_f2bf(f);
  default: return 0;
  }
}

double ir_const_as_double(int32_t t, int64_t bits) {
  switch (t) {
  case CUTE_T_F64: { double d; memcpy(&d, &bits, 8); return d; }
  case CUTE_T_F32: { uint32_t u = (uint32_t)bits; float f; memcpy(&f, &u, 4); return f; }
  case CUTE_T_F16: return ir_h2f((uint16_t)bits);
  case CUTE_T_BF16: return ir_bf2f((uint16_t)bits);
  case CUTE_T_U64: return (double)(uint64_t)bits;
  default: return (double)bits;
  }
}

static uint32_t ir_chash(int32_t t, int64_t bits) {
  uint64_t h = (uint64_t)bits * 0x9E3779B97F4A7C15ull ^ (uint64_t)t * 0xC2B2AE3D27D4EB4Full;
  return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

int32_t ir_const_bits(cute_ir *ir, int32_t t, int64_t bits) {
  ir_func *f = ir_curf(ir);
  if (!f) { ir_fail(ir, CUTE_E_STATE, "constant: no current function (call cute_ir_func first)"); return 0; }
  if ((f->ncst + 1) * 2 > f->chcap) {
    int32_t nc = f->chcap ? f->chcap * 2 : 64;
    int32_t *h = calloc((size_t)nc, sizeof *h);
    if (!h) { ir_fail(ir, CUTE_E_NOMEM, "out of memory"); return 0; }
    for (int32_t i = 1; i < f->ncst; i++) {
      uint32_t k = ir_chash(f->cst[i].type, f->cst[i].bits) & (uint32_t)(nc - 1);
      while (h[k]) k = (k + 1) & (uint32_t)(nc - 1);
      h[k] = i;
    }
    free(f->chash);
    f->chash = h;
    f->chcap = nc;
  }
  uint32_t k = ir_chash(t, bits) & (uint32_t)(f->chcap - 1);
  while (f->chash[k]) {
    ir_const *c = &f->cst[f->chash[k]];
    if (c->type == t && c->bits == bits) return -f->chash[k];
    k = (k + 1) & (uint32_t)(f->chcap - 1);
  }
  if (f->ncst == 0) f->ncst = 1;
  if (f->ncst >= f->capcst) {
    int32_t nc = f->capcst ? f->capcst * 2 : 32;
    ir_const *p = realloc(f->cst, sizeof *p * (size_t)nc);
    if (!p) { ir_fail(ir, CUTE_E_NOMEM, "out of memory"); return 0; }
    f->cst = p;
    f->capcst = nc;
  }
  f->cst[f->ncst] = (ir_const){t, 0, bits};
  f->chash[k] = f->ncst;
  return -(f->ncst++);
}

int32_t cute_ir_const_int(cute_ir *ir, int32_t t, int64_t v) {
  if (!ir || ir->err_code) return 0;
  if (ir_scalar_class(t) == 3) return ir_const_bits(ir, t, ir_float_bits(t, (double)v));
  if (ir_scalar_class(t) != 1 && ir_scalar_class(t) != 2 && t != CUTE_T_I1) {
    ir_fail(ir, CUTE_E_ARG, "const_int: type %s is not a scalar number", ir_type_str(ir, t));
    return 0;
  }
  return ir_const_bits(ir, t, ir_norm_int(t, v));
}

int32_t cute_ir_const_float(cute_ir *ir, int32_t t, double v) {
  if (!ir || ir->err_code) return 0;
  if (ir_scalar_class(t) != 3) {
    int c = ir_scalar_class(t);
    if (c == 1 || c == 2 || c == 4) {
      if (!(v == v) || v > 1.8e19 || v < -9.3e18) {
        ir_fail(ir, CUTE_E_ARG, "const_float: %g does not fit %s", v, ir_type_str(ir, t));
        return 0;
      }
      return cute_ir_const_int(ir, t, c == 2 && v >= 9.2e18 ? (int64_t)(uint64_t)v : (int64_t)v);
    }
    ir_fail(ir, CUTE_E_ARG, "const_float: type %s is not a scalar number", ir_type_str(ir, t));
    return 0;
  }
  return ir_const_bits(ir, t, ir_float_bits(t, v));
}

