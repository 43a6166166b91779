/*
 * cute.h -- public C API of cuteluajit: the core (errors, version) and CuTe's
 * layout algebra on hierarchical integer tuples.
 *
 * Everything between the CDEF markers is parsed unmodified by LuaJIT's
 * ffi.cdef (the build extracts it into lua/cute/cdef.lua), so it holds plain
 * C declarations only: no macros, no preprocessor lines.
 *
 * Conventions
 *  - Every fallible function returns an int status: 0 (CUTE_OK) on success,
 *    a CUTE_E_* code otherwise, with a message in the caller's cute_err.
 *    The message names the operation and shows the offending operands in
 *    CuTe notation.  Nothing here exits, aborts or prints.
 *  - Values are plain structs owned by the caller (no heap, no handles):
 *    a cute_value holds an IntTuple, a Layout, a ComposedLayout, a Swizzle
 *    or a tiler as a preorder array of nodes.
 *  - Indices, coordinates and mode numbers are 0-based.
 */
#ifndef CUTE_H
#define CUTE_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute.h */
enum {
  CUTE_OK = 0,
  CUTE_E_PARSE = 1,     /* malformed text                                 */
  CUTE_E_ARG = 2,       /* wrong kind / number of arguments               */
  CUTE_E_RANK = 3,      /* rank or congruence mismatch                    */
  CUTE_E_DOMAIN = 4,    /* value outside the op's domain (zero shape, ...) */
  CUTE_E_ADMISSIBLE = 5,/* composition / complement / divide not defined  */
  CUTE_E_OVERFLOW = 6,  /* 64-bit integer overflow                        */
  CUTE_E_CAPACITY = 7,  /* value too large for CUTE_MAX_NODES             */
  CUTE_E_STATE = 8,     /* API misuse (bad handle, wrong order of calls)  */
  CUTE_E_LLVM = 9,      /* LLVM rejected something                        */
  CUTE_E_PTXAS = 10,    /* ptxas failed                                   */
  CUTE_E_CUDA = 11,     /* CUDA driver error                              */
  CUTE_E_NOMEM = 12,
  CUTE_E_VERIFY = 13,   /* IR verifier                                    */
  CUTE_E_UNSUPPORTED = 14,
  CUTE_E_LUA = 15       /* a Lua error (embedding: message and traceback) */
};

/* Error out-parameter: code and a NUL-terminated message. */
typedef struct cute_err {
  int code;
  char msg[1020];
} cute_err;

/* This build's version and ABI number, written once, here.  The library
   reports them (cute_version() = "cuteluajit 0.1.0", cute_abi_version() =
   CUTE_ABI) and the Lua modules, whose ffi.cdef is the CDEF blocks of
   include/cute*.h, compare CUTE_ABI with the loaded library's at load
   (lua/cute/ffi.lua): a libcute.so of another build is refused with both
   versions and its path.  Bump CUTE_ABI with every change to a CDEF block
   that an older library or older Lua modules would not match. */
enum {
  CUTE_VERSION_MAJOR = 0, CUTE_VERSION_MINOR = 1, CUTE_VERSION_PATCH = 0,
  CUTE_ABI = 2
};
const char *cute_version(void);
int cute_abi_version(void);
const char *cute_status_name(int code);

/* ---- values ------------------------------------------------------------ */
enum { CUTE_MAX_NODES = 128 };

/* Node kinds of the preorder tree. */
enum {
  CUTE_N_INT = 0,    /* leaf. IntTuple: a = value. Layout: a = shape, b = stride */
  CUTE_N_TUPLE = 1,  /* a = number of children; the children follow in preorder  */
  CUTE_N_UNDER = 2,  /* leaf "_"                                                 */
  CUTE_N_LAYOUT = 3  /* tiler element that is a whole layout: one child follows,
                        the layout's own tree (leaf or tuple with shape/stride)  */
};

/* Value types. */
enum {
  CUTE_V_NONE = 0,
  CUTE_V_INT = 1,      /* a single integer: node[0] is an INT leaf             */
  CUTE_V_TUPLE = 2,    /* an IntTuple whose root is a TUPLE (may contain "_")  */
  CUTE_V_LAYOUT = 3,   /* shape:stride, nodes carry both (a = shape, b = stride) */
  CUTE_V_COMPOSED = 4, /* Sw<sw_b,sw_m,sw_s> o offset o layout (nodes = layout) */
  CUTE_V_SWIZZLE = 5,  /* Sw<sw_b,sw_m,sw_s>, no nodes                          */
  CUTE_V_TILER = 6,    /* root TUPLE whose children are LAYOUT, INT, UNDER or
                          nested TUPLE elements                                 */
  CUTE_V_UNDER = 7     /* a lone "_"                                            */
};

typedef struct cute_node {
  int32_t kind;   /* CUTE_N_* */
  int32_t span;   /* number of nodes in this subtree, itself included */
  int64_t a;
  int64_t b;
} cute_node;

typedef struct cute_value {
  int32_t type;   /* CUTE_V_* */
  int32_t n;      /* nodes used */
  int32_t sw_b, sw_m, sw_s;
  int32_t pad_;
  int64_t offset; /* COMPOSED: the offset between swizzle and layout */
  cute_node node[128];
} cute_value;

/* Parse CuTe notation (see shared oracle README): an int, an IntTuple, a
   Layout, "_", a composed layout "Sw<B,M,S> o off o L", or a tiler tuple that
   mixes layouts, ints and "_".  A tuple containing a layout is a TILER; a tuple
   of ints/"_" only is a TUPLE. */
int cute_parse(const char *text, cute_value *out, cute_err *err);

/* Canonical text without spaces (composed: "Sw<B,M,S> o off o L").  Writes at
   most cap bytes including the NUL; returns the full length needed. */
size_t cute_format(const cute_value *v, char *buf, size_t cap);

/* Check that v is well formed (node count within node[], every span and child
   count consistent, known kinds and types, valid swizzle, positive shapes):
   0, or an error whose message starts with who ("cute.size: argument 1").
   Every entry point below checks its arguments this way itself. */
int cute_value_check(const cute_value *v, const char *who, cute_err *err);

/* ---- layout algebra ---------------------------------------------------- */
/* Operation codes for cute_op, one per oracle op plus the extras. */
enum {
  CUTE_OP_SIZE, CUTE_OP_COSIZE, CUTE_OP_RANK, CUTE_OP_DEPTH,
  CUTE_OP_SHAPE, CUTE_OP_STRIDE, CUTE_OP_GET,
  CUTE_OP_CRD2IDX, CUTE_OP_IDX2CRD,
  CUTE_OP_COALESCE, CUTE_OP_FILTER,
  CUTE_OP_COMPOSITION, CUTE_OP_COMPLEMENT,
  CUTE_OP_RIGHT_INVERSE, CUTE_OP_LEFT_INVERSE,
  CUTE_OP_LOGICAL_DIVIDE, CUTE_OP_ZIPPED_DIVIDE, CUTE_OP_TILED_DIVIDE,
  CUTE_OP_FLAT_DIVIDE,
  CUTE_OP_LOGICAL_PRODUCT, CUTE_OP_ZIPPED_PRODUCT, CUTE_OP_TILED_PRODUCT,
  CUTE_OP_FLAT_PRODUCT, CUTE_OP_BLOCKED_PRODUCT, CUTE_OP_RAKED_PRODUCT,
  CUTE_OP_SHAPE_DIV, CUTE_OP_CEIL_DIV, CUTE_OP_PREFIX_PRODUCT,
  CUTE_OP_SLICE, CUTE_OP_SLICE_AND_OFFSET,
  CUTE_OP_SWIZZLE, CUTE_OP_COMPOSED_LAYOUT,
  /* extras */
  CUTE_OP_MAKE_LAYOUT_LEFT,    /* [shape]                  compact col-major   */
  CUTE_OP_MAKE_LAYOUT_RIGHT,   /* [shape]                  compact row-major   */
  CUTE_OP_MAKE_ORDERED_LAYOUT, /* [shape, order]                               */
  CUTE_OP_MAKE_IDENTITY_LAYOUT,/* [shape]  (shape):(1@0,1@1..) flattened as
                                  compact col-major over the coordinate space */
  CUTE_OP_APPEND,              /* [L, x] or [L, x, n]                          */
  CUTE_OP_PREPEND,             /* [L, x] or [L, x, n]                          */
  CUTE_OP_GROUP,               /* [L, begin, end]                              */
  CUTE_OP_FLATTEN,             /* [L or IntTuple]                              */
  CUTE_OP_SELECT,              /* [L, modes tuple]                             */
  CUTE_OP_MAX_COMMON_LAYOUT,   /* [A, B]                                       */
  CUTE_OP_MAX_COMMON_VECTOR,   /* [A, B]                                       */
  CUTE_OP_TILE_TO_SHAPE,       /* [block, shape] or [block, shape, order]      */
  CUTE_OP_LOCAL_TILE,          /* [L, tiler, crd]                              */
  CUTE_OP_LOCAL_PARTITION,     /* [L, thr_layout, thr_idx]                     */
  CUTE_OP_CONGRUENT,           /* [a, b] -> 0/1                                */
  CUTE_OP_COMPATIBLE,          /* [a, b] -> 0/1                                */
  CUTE_OP_WEAKLY_CONGRUENT,    /* [a, b] -> 0/1                                */
  CUTE_OP_COUNT_
};

/* Name of an op ("logical_divide"), or NULL; and the reverse lookup (-1 if
   unknown).  cute_op_arity: the numbers of arguments op accepts (either
   pointer may be NULL); 0, or CUTE_E_ARG for an unknown op.  The Lua
   bindings read names and arities from here. */
const char *cute_op_name(int op);
int cute_op_lookup(const char *name);
int cute_op_arity(int op, int *min_args, int *max_args);

/* Apply op to nargs arguments.  Results: *out, and for slice_and_offset the
   offset in out2 (a CUTE_V_INT).  out/out2 may not alias args. */
int cute_op(int op, const cute_value *args, int nargs,
            cute_value *out, cute_value *out2, cute_err *err);

/* Fast paths for the hot cases (no cute_value result).  crd holds one integer
   per top-level mode (n == rank), or a single integer (n == 1) split
   colexicographically. */
int cute_layout_crd2idx(const cute_value *L, const int64_t *crd, int n,
                        int64_t *out, cute_err *err);
/* Flattened view of a layout's leaves (at most cap): returns the number of
   leaves, or -1 if cap is too small or L is not a well-formed layout. */
int cute_layout_leaves(const cute_value *L, int64_t *shape, int64_t *stride,
                       int cap);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
