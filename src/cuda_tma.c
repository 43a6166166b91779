/*
 * cuda_tma.c -- TMA tensor maps (CUtensorMap, sm_90): the argument checks
 * that the driver documents for cuTensorMapEncodeTiled / Im2col, made here
 * before the driver is called (so they work, and are tested, without one),
 * then the encode through the driver table of cudadef.h.
 */
#include "core.h"
#include "cute_cuda.h"
#include "cudadef.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int cute_cuda_tma_fns_(void **tiled, void **im2col, cute_err *err);

static const int elem_bytes[13] = {1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4};
static const char *const dtype_names[13] = {
    "UINT8",   "UINT16",   "UINT32",      "INT32",    "UINT64",       "INT64", "FLOAT16",
    "FLOAT32", "FLOAT64",  "BFLOAT16",    "FLOAT32_FTZ", "TFLOAT32",   "TFLOAT32_FTZ"};
static const int swizzle_span[4] = {0, 32, 64, 128};

int cute_tensor_map_elem_bytes(int dtype) {
  return dtype >= 0 && dtype < 13 ? elem_bytes[dtype] : 0;
}

#define BAD(...) return cute_err_setf(err, CUTE_E_ARG, "cute_tensor_map: " __VA_ARGS__)

/* Checks shared by tiled and im2col maps; box: check box_dim too. */
static int check(const cute_tensor_map_args *a, int box, cute_err *err) {
  if (!a) BAD("the argument record is NULL");
  int eb = cute_tensor_map_elem_bytes(a->dtype);
  if (!eb) BAD("dtype = %d is not a CU_TENSOR_MAP_DATA_TYPE_* value (0..12)", a->dtype);
  if (a->rank < 1 || a->rank > 5) BAD("rank = %d: a tensor map has 1 to 5 dimensions", a->rank);
  if (a->interleave < 0 || a->interleave > 2)
    BAD("interleave = %d: expected NONE (0), 16B (1) or 32B (2)", a->interleave);
  if (a->swizzle < 0 || a->swizzle > 3)
    BAD("swizzle = %d: expected NONE (0), 32B (1), 64B (2) or 128B (3)", a->swizzle);
  if (a->l2_promotion < 0 || a->l2_promotion > 3)
    BAD("l2_promotion = %d: expected NONE (0), 64B (1), 128B (2) or 256B (3)", a->l2_promotion);
  if (a->oob_fill < 0 || a->oob_fill > 1)
    BAD("oob_fill = %d: expected NONE (0, zeros) or NAN_REQUEST_ZERO_FMA (1)", a->oob_fill);
  if (a->oob_fill == 1 && a->dtype <= 5)
    BAD("oob_fill = NAN_REQUEST_ZERO_FMA needs a floating-point dtype, got %s", dtype_names[a->dtype]);
  if (a->interleave != 0 && a->rank < 3)
    BAD("rank = %d: an interleaved layout needs at least 3 dimensions", a->rank);
  unsigned addr_align = a->interleave == 2 ? 32 : 16;
  if (a->global_address % addr_align)
    BAD("global_address 0x%llx is not %u-byte aligned", (unsigned long long)a->global_address, addr_align);
  for (int i = 0; i < a->rank; i++) {
    uint64_t d = a->global_dim[i];
    if (d == 0 || d > (1ull << 32))
      BAD("global_dim[%d] = %llu: must be 1 to 2^32", i, (unsigned long long)d);
    if (a->element_strides[i] < 1 || a->element_strides[i] > 8)
      BAD("element_strides[%d] = %u: must be 1 to 8", i, a->element_strides[i]);
  }
  unsigned smul = a->interleave == 2 ? 32 : 16;
  for (int i = 0; i + 1 < a->rank; i++) {
    uint64_t s = a->global_strides[i];
    if (s % smul)
      BAD("global_strides[%d] = %llu bytes (dimension %d): must be a multiple of %u bytes", i,
          (unsigned long long)s, i + 1, smul);
    if (s >= (1ull << 40))
      BAD("global_strides[%d] = %llu bytes: must be below 2^40", i, (unsigned long long)s);
  }
  if (!box) return CUTE_OK;
  for (int i = 0; i < a->rank; i++)
    if (a->box_dim[i] < 1 || a->box_dim[i] > 256)
      BAD("box_dim[%d] = %u: must be 1 to 256", i, a->box_dim[i]);
  uint64_t inner = (uint64_t)a->box_dim[0] * (unsigned)eb;
  if (a->interleave == 0) {
    if (inner % 16)
      BAD("box_dim[0] = %u %s elements = %llu bytes: the inner box must be a multiple of 16 bytes",
          a->box_dim[0], dtype_names[a->dtype], (unsigned long long)inner);
    if (a->swizzle && inner > (uint64_t)swizzle_span[a->swizzle])
      BAD("box_dim[0] = %u %s elements = %llu bytes: a %dB swizzle allows at most %d bytes in the "
          "inner box dimension", a->box_dim[0], dtype_names[a->dtype], (unsigned long long)inner,
          swizzle_span[a->swizzle], swizzle_span[a->swizzle]);
  } else if (a->interleave == 1 && a->swizzle == 3) {
    BAD("swizzle = 128B cannot be used with interleave = 16B");
  }
  return CUTE_OK;
}

int cute_tensor_map_check(const cute_tensor_map_args *a, cute_err *err) { return check(a, 1, err); }

static int prepare(void *map, const cute_tensor_map_args *a, int box, void **tiled, void **im2col,
                   cuuint64_t dim[5], cuuint64_t str[4], cuuint32_t es[5], cute_err *err) {
  if (!map) BAD("map is NULL");
  if ((uintptr_t)map % 64) BAD("map %p is not 64-byte aligned", map);
  int s = check(a, box, err);
  if (s) return s;
  s = cute_cuda_tma_fns_(tiled, im2col, err);
  if (s) return s;
  for (int i = 0; i < 5; i++) {
    dim[i] = a->global_dim[i];
    es[i] = a->element_strides[i];
  }
  for (int i = 0; i < 4; i++) str[i] = a->global_strides[i];
  return CUTE_OK;
}

int cute_tensor_map_encode_tiled(void *map, const cute_tensor_map_args *a, cute_err *err) {
  void *tiled, *im2col;
  cuuint64_t dim[5], str[4];
  cuuint32_t es[5], bx[5];
  int s = prepare(map, a, 1, &tiled, &im2col, dim, str, es, err);
  if (s) return s;
  if (!tiled)
    return cute_err_setf(err, CUTE_E_UNSUPPORTED, "cute_tensor_map_encode_tiled: this CUDA driver has "
                         "no cuTensorMapEncodeTiled (TMA needs CUDA 12.0 or newer)");
  for (int i = 0; i < 5; i++) bx[i] = a->box_dim[i];
  CUresult (*f)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                const cuuint64_t *, const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave,
                CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  memcpy(&f, &tiled, sizeof f);
  CUresult r = f((CUtensorMap *)map, a->dtype, (cuuint32_t)a->rank, (void *)(uintptr_t)a->global_address,
                 dim, str, bx, es, a->interleave, a->swizzle, a->l2_promotion, a->oob_fill);
  if (r) {
    char call[96];
    snprintf(call, sizeof call, "cuTensorMapEncodeTiled(rank %d, box %ux%u..)", a->rank, bx[0], bx[1]);
    return cute_cuda_format_error(r, call, err);
  }
  return CUTE_OK;
}

int cute_tensor_map_encode_im2col(void *map, const cute_tensor_map_args *a, const int *lower,
                                  const int *upper, uint32_t channels_per_pixel,
                                  uint32_t pixels_per_column, cute_err *err) {
  void *tiled, *im2col;
  cuuint64_t dim[5], str[4];
  cuuint32_t es[5];
  if (a && (a->rank < 3 || a->rank > 5))
    BAD("rank = %d: an im2col map has 3 to 5 dimensions", a->rank);
  if (!lower || !upper) BAD("the pixel box corners are NULL");
  if (channels_per_pixel < 1 || channels_per_pixel > 256)
    BAD("channels_per_pixel = %u: must be 1 to 256", channels_per_pixel);
  if (pixels_per_column < 1 || pixels_per_column > 1024)
    BAD("pixels_per_column = %u: must be 1 to 1024", pixels_per_column);
  int s = prepare(map, a, 0, &tiled, &im2col, dim, str, es, err);
  if (s) return s;
  int lim = a->rank == 3 ? 32768 : a->rank == 4 ? 128 : 16;
  for (int i = 0; i < a->rank - 2; i++)
    if (lower[i] < -lim || lower[i] >= lim || upper[i] < -lim || upper[i] >= lim)
      BAD("pixel box corner %d (%d, %d): must be in [%d, %d) for rank %d", i, lower[i], upper[i], -lim,
          lim, a->rank);
  if (!im2col)
    return cute_err_setf(err, CUTE_E_UNSUPPORTED, "cute_tensor_map_encode_im2col: this CUDA driver has "
                         "no cuTensorMapEncodeIm2col (TMA needs CUDA 12.0 or newer)");
  CUresult (*f)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *,
                const cuuint64_t *, const int *, const int *, cuuint32_t, cuuint32_t,
                const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  memcpy(&f, &im2col, sizeof f);
  CUresult r = f((CUtensorMap *)map, a->dtype, (cuuint32_t)a->rank, (void *)(uintptr_t)a->global_address,
                 dim, str, lower, upper, channels_per_pixel, pixels_per_column, es, a->interleave,
                 a->swizzle, a->l2_promotion, a->oob_fill);
  return r ? cute_cuda_format_error(r, "cuTensorMapEncodeIm2col", err) : CUTE_OK;
}
