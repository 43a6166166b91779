/* tuple.h -- internal helpers on cute_value node trees (hidden symbols).
 *
 * A subtree is addressed by (value, node index).  Leaves of a layout carry
 * shape in a and stride in b; leaves of an IntTuple carry the value in a.
 * Builders append to a cute_value in preorder and report CUTE_E_CAPACITY
 * when the 128-node array is full.  Nothing here allocates.
 */
#ifndef CUTE_TUPLE_H
#define CUTE_TUPLE_H

#include "core.h"
#include <stdarg.h>
#include <stdint.h>

#define CV_MAX 128

/* ---- error context ----------------------------------------------------- */
/* One per public call: the op name and its operands (for messages). */
typedef struct lctx {
  cute_err *err;
  const char *op;
  const cute_value *args;
  int nargs;
} lctx;

/* Set err (code + "op: message in op(args)") and return code.  Messages
   without the operand suffix go straight to cute_err_setf (core.h). */
int lerr(lctx *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TRY(x) do { int r_ = (x); if (r_) return r_; } while (0)

/* ---- checked arithmetic ------------------------------------------------ */
int ck_mul(lctx *c, int64_t a, int64_t b, int64_t *r);
int ck_add(lctx *c, int64_t a, int64_t b, int64_t *r);

/* ---- node access --------------------------------------------------------- */
static inline int nd_is_tuple(const cute_value *v, int i) {
  return v->node[i].kind == CUTE_N_TUPLE;
}
/* rank: children of a tuple, 1 for anything else */
static inline int nd_rank(const cute_value *v, int i) {
  return v->node[i].kind == CUTE_N_TUPLE ? (int)v->node[i].a : 1;
}
/* index of child k of node i; a non-tuple is its own child 0; -1 if none */
int nd_child(const cute_value *v, int i, int k);
/* skip CUTE_N_LAYOUT wrappers */
static inline int nd_unwrap(const cute_value *v, int i) {
  while (v->node[i].kind == CUTE_N_LAYOUT) i++;
  return i;
}

/* ---- validation ---------------------------------------------------------- */
/* Structural check of a whole value (kinds, spans, bounds, shapes > 0 in
   layouts).  Returns 0 or sets err. */
int cv_check(const cute_value *v, cute_err *err, const char *who);
/* Sw<B,M,S> is usable: 0 <= B, M <= 62, |S| <= 62 and B + M + |S| <= 62. */
int cv_swizzle_ok(int64_t B, int64_t M, int64_t S);
/* v is a LAYOUT or COMPOSED value with a well-formed tree; unlike cv_check,
   shapes <= 0 pass (results of complement carry them when printed). */
int cv_layout_tree_ok(const cute_value *v);

/* ---- builders -------------------------------------------------------------- */
void cv_init(cute_value *o, int type);
int nb_leaf(cute_value *o, int64_t a, int64_t b);
int nb_under(cute_value *o);
int nb_open(cute_value *o, int *idx);
void nb_close(cute_value *o, int idx);            /* fixes a (children) and span */
int nb_copy(cute_value *o, const cute_value *s, int i); /* copy subtree */

/* ---- formatting (tuple_text.c) ----------------------------------------------- */
/* Append text of a subtree.  mode: 0 = IntTuple (a), 1 = layout shape (a),
   2 = layout stride (b), 3 = full layout "shape:stride", 4 = tiler element. */
typedef struct sbuf { char *p; size_t cap, len; } sbuf;
void sb_puts(sbuf *b, const char *s);
void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fmt_sub(sbuf *b, const cute_value *v, int i, int mode);
void fmt_value(sbuf *b, const cute_value *v);
/* Format a subtree into a static-size buffer (for messages). */
const char *fmt_tmp(char *buf, size_t cap, const cute_value *v, int i, int mode);

/* ---- tree predicates ------------------------------------------------------ */
int nd_congruent(const cute_value *a, int i, const cute_value *b, int j);
int nd_weakly_congruent(const cute_value *a, int i, const cute_value *b, int j);
int nd_equal(const cute_value *a, int i, const cute_value *b, int j, int layout);
int nd_depth(const cute_value *v, int i);
int nd_has_under(const cute_value *v, int i);

#endif
