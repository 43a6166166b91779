/* layout.h -- internal layout algebra (hidden symbols).
 *
 * Inputs are subtrees (value, node index); results are appended to an output
 * value `o` (preorder).  All arithmetic is overflow-checked; every division is
 * guarded.  Semantics follow CuTe C++ (layout.hpp / int_tuple.hpp) with all
 * integers static.
 */
#ifndef CUTE_LAYOUT_H
#define CUTE_LAYOUT_H

#include "tuple.h"

/* A flat list of modes; tup = 0 means a single integral mode (s:d). */
typedef struct flat {
  int n, tup;
  int64_t s[CV_MAX + 2], d[CV_MAX + 2];
} flat;

void fl_flatten(flat *f, const cute_value *v, int i);
int fl_emit(lctx *c, cute_value *o, const flat *f);

/* size / cosize / product of a subtree (layout shapes or IntTuple values) */
int lay_product(lctx *c, const cute_value *v, int i, int64_t *out);
int lay_cosize(lctx *c, const cute_value *v, int i, int64_t *out);

int lay_coalesce(lctx *c, const cute_value *v, int i, flat *out);
int lay_coalesce_x(lctx *c, const cute_value *v, int i, flat *out);
int lay_filter(lctx *c, const cute_value *v, int i, flat *out);
/* coalesce / filter with a profile (IntTuple subtree p, or NULL) */
int lay_coalesce_p(lctx *c, const cute_value *v, int i, const cute_value *p, int pi,
                   int filter, cute_value *o);

int lay_composition(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                    cute_value *o);
/* composition with a tiler element: node kinds LAYOUT / INT / UNDER / TUPLE */
int lay_tiler_rank_check(lctx *c, const cute_value *a, int ai, const cute_value *t, int ti);
int lay_compose_tiler(lctx *c, const cute_value *a, int ai, const cute_value *t, int ti,
                      cute_value *o);
/* cotarget: IntTuple subtree (ct, cti), or ct == NULL for cosize(filter(L)) */
int lay_complement(lctx *c, const cute_value *v, int i, const cute_value *ct, int cti,
                   cute_value *o);
int lay_complement_n(lctx *c, const cute_value *v, int i, int64_t n, cute_value *o);
int lay_right_inverse(lctx *c, const cute_value *v, int i, cute_value *o);
int lay_left_inverse(lctx *c, const cute_value *v, int i, cute_value *o);

int lay_crd2idx(lctx *c, const cute_value *crd, int ci, const cute_value *l, int li,
                int64_t *out);
int lay_idx2crd(lctx *c, const cute_value *idx, int ii, const cute_value *l, int li,
                cute_value *o);
int lay_slice(lctx *c, const cute_value *crd, int ci, const cute_value *t, int ti,
              cute_value *o);
/* compact strides: major 0 = left (col), 1 = right (row); emits a layout */
int lay_compact(lctx *c, const cute_value *shape, int si, int major, int64_t start,
                cute_value *o);

/* IntTuple arithmetic (emit IntTuples) */
int it_shape_div(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                 cute_value *o);
int it_ceil_div(lctx *c, const cute_value *a, int ai, const cute_value *b, int bi,
                cute_value *o);
int it_ceil_div_n(lctx *c, const cute_value *a, int ai, int64_t b, cute_value *o);
int it_prefix_product(lctx *c, const cute_value *a, int ai, const cute_value *init,
                      int ii, cute_value *o);

/* helpers for composite ops */
int lay_make_int(cute_value *o, int64_t n);              /* make_layout(n) */
int lay_pad(lctx *c, const cute_value *v, int i, int rank, cute_value *o); /* append<R> */
int lay_cap_err(lctx *c);

/* ---- composite operations (layout_compose.c) ------------------------------ */
/* kinds of divide / product */
enum { LO_LOGICAL, LO_ZIPPED, LO_TILED, LO_FLAT, LO_BLOCKED, LO_RAKED };
/* B: any value accepted as a tiler (LAYOUT, INT, TUPLE, TILER, UNDER) */
int lo_divide(lctx *c, int kind, const cute_value *A, const cute_value *B, cute_value *o);
int lo_product(lctx *c, int kind, const cute_value *A, const cute_value *B, cute_value *o);
/* make_ordered_layout(shape subtree, order subtree or NULL = col-major) */
int lo_ordered(lctx *c, const cute_value *sh, int si, const cute_value *ord, int oi,
               cute_value *o);
int lo_tile_to_shape(lctx *c, const cute_value *blk, const cute_value *shp,
                     const cute_value *ord, cute_value *o);
int lo_local_tile(lctx *c, const cute_value *L, const cute_value *T, const cute_value *crd,
                  cute_value *o, int64_t *off);
int lo_local_partition(lctx *c, const cute_value *L, const cute_value *thr,
                       const cute_value *idx, cute_value *o, int64_t *off);
/* max_common_layout (vec = 0) or max_common_vector (vec = 1, result in *n) */
int lo_max_common(lctx *c, const cute_value *A, const cute_value *B, int vec,
                  cute_value *o, int64_t *n);

/* ---- swizzles and composed layouts (layout_swizzle.c) ---------------------- */
/* an op function of the cute_op table (layout_api.c) */
typedef int lay_op_fn(lctx *c, int op, const cute_value *a, int na, cute_value *o,
                      cute_value *o2);
int64_t lsw_apply(int B, int M, int S, int64_t x); /* x ^ ((x & yyy) >> S) */
/* does this call take a swizzle or a composed layout (so lsw_op runs it)? */
int lsw_involved(int op, const cute_value *a, int na);
int lsw_op(lctx *c, int op, lay_op_fn *fn, const cute_value *a, int na, cute_value *o,
           cute_value *o2);

#endif
