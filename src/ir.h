/*
 * ir.h -- internal data structures of the kernel IR (see include/cute_ir.h).
 *
 * A function is a flat array of instructions in program order; regions are
 * delimited by opener instructions (FOR, IF, WHILE) and ELSE / DO / END
 * markers.  Every instruction records the ref of the region it lives in
 * (0: the function body), its source location and up to two immediates.
 * Constants live in a separate interned table addressed by negative refs.
 */
#ifndef CUTE_IR_INTERNAL_H
#define CUTE_IR_INTERNAL_H

#include "cute_ir.h"
#include "irdef.h"
#include <stdint.h>
#include <stddef.h>

#define IR_HIDDEN __attribute__((visibility("hidden")))

enum {
#define IR_OPENUM(id, name, mn, mx, k1, k2, fl, rt) IR_##id,
  IROPDEF(IR_OPENUM)
#undef IR_OPENUM
  IR_NOPS
};

enum {
#define IR_IKENUM(id, key, names, nn, str) id,
  IMMKDEF(IR_IKENUM)
#undef IR_IKENUM
  IK_COUNT_
};

typedef struct ir_opinfo {
  const char *name;
  int16_t min_args, max_args;
  uint8_t k1, k2, flags, res;
} ir_opinfo;
extern const ir_opinfo ir_ops[IR_NOPS] IR_HIDDEN;

typedef struct ir_immkind {
  const char *key;
  const char *const *names; /* NULL: integer */
  int nnames;
  int is_str;
} ir_immkind;
extern const ir_immkind ir_immk[IK_COUNT_] IR_HIDDEN;

typedef struct ir_type {
  int32_t kind;  /* CUTE_T_* */
  int32_t n;     /* vector lanes / pointer address space / array length / bytes size */
  int32_t elem;  /* element type (vector, pointer, array); bytes: alignment */
} ir_type;

typedef struct ir_inst {
  uint16_t op;
  uint16_t nargs;
  uint8_t state;   /* region openers: 0 unopened, 1 open, 2 closed; |4 construct ended */
  uint8_t pad_[3];
  int32_t type;
  int32_t args;    /* offset into the function's argument pool */
  int32_t region;  /* enclosing region (opener / ELSE ref), 0 = body */
  int32_t file;    /* string id of the source file (0: none) */
  int32_t line;
  int64_t imm, imm2;
} ir_inst;

typedef struct ir_const {
  int32_t type;
  int32_t pad_;
  int64_t bits;    /* integers sign/zero-extended; floats as their bit pattern */
} ir_const;

/* Open-region stack entry. */
typedef struct ir_open {
  int32_t opener;  /* FOR / IF / WHILE ref */
  int32_t cur;     /* current region id: opener, ELSE ref; DO ref for while bodies */
} ir_open;

typedef struct ir_scope {
  ir_open *s;
  int n, cap;
} ir_scope;

typedef struct ir_func {
  int32_t name;      /* string id */
  int kind;          /* CUTE_FN_* */
  int32_t ret;       /* return type */
  int nparams;
  int maxntid, minctasm, dynsmem;
  ir_inst *inst;     /* inst[0] unused */
  int32_t ninst, capinst;
  int32_t *pool;
  int32_t npool, cappool;
  ir_const *cst;     /* cst[0] unused; ref -k is cst[k] */
  int32_t ncst, capcst;
  int32_t *chash;    /* open addressing: const index, 0 empty */
  int32_t chcap;
  ir_scope scope;    /* builder's open regions */
} ir_func;

struct cute_ir {
  ir_type *types;    /* types[0] unused */
  int32_t ntypes, captypes;
  char **strs;       /* strs[0] = "" */
  int32_t nstrs, capstrs;
  int32_t *shash;
  int32_t shcap;
  ir_func *funcs;    /* funcs[0] unused */
  int32_t nfuncs, capfuncs;
  int32_t cur;
  int checks;
  int32_t loc_file, loc_line;
  int err_code;
  char err[1024];
  char *printbuf;
  char tname[4][160];
  int tname_i;
};

/* ir.c (constants: ir_const.c) */
IR_HIDDEN int32_t ir_str(cute_ir *ir, const char *s, size_t len);
IR_HIDDEN const char *ir_strget(const cute_ir *ir, int32_t id);
IR_HIDDEN int ir_fail(cute_ir *ir, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
IR_HIDDEN int32_t ir_type_get(cute_ir *ir, int kind, int n, int32_t elem);
IR_HIDDEN int ir_type_valid(const cute_ir *ir, int32_t t);
IR_HIDDEN int ir_tsize(const cute_ir *ir, int32_t t);
IR_HIDDEN int ir_scalar_class(int32_t t);   /* IRTY class of a scalar type ref */
IR_HIDDEN int ir_is_int(const cute_ir *ir, int32_t t);   /* scalar or vector of int */
IR_HIDDEN int ir_is_float(const cute_ir *ir, int32_t t); /* scalar or vector of float */
IR_HIDDEN int ir_is_signed(const cute_ir *ir, int32_t t);
IR_HIDDEN int32_t ir_scalar_of(const cute_ir *ir, int32_t t); /* vec -> elem */
IR_HIDDEN int ir_bits(int32_t scalar);
IR_HIDDEN const char *ir_type_str(cute_ir *ir, int32_t t);
IR_HIDDEN int ir_type_fmt(const cute_ir *ir, int32_t t, char *buf, size_t cap);
IR_HIDDEN int32_t ir_type_from_text(cute_ir *ir, const char *s, const char **end);
IR_HIDDEN int64_t ir_norm_int(int32_t t, int64_t v);
IR_HIDDEN double ir_const_as_double(int32_t t, int64_t bits);
IR_HIDDEN int64_t ir_float_bits(int32_t t, double v);
IR_HIDDEN int32_t ir_const_bits(cute_ir *ir, int32_t t, int64_t bits);
IR_HIDDEN int32_t ir_vtype(const ir_func *f, int32_t ref);
IR_HIDDEN const char *ir_locstr(cute_ir *ir, const ir_inst *in, char *buf, size_t cap);
/* ir_build.c: append an instruction to the current function (checks, scope) */
IR_HIDDEN int32_t ir_emit(cute_ir *ir, int op, int32_t type, int nargs, const int32_t *args,
                          int64_t imm, int64_t imm2);
static inline ir_func *ir_curf(cute_ir *ir) {
  return ir->cur > 0 && ir->cur < ir->nfuncs ? &ir->funcs[ir->cur] : NULL;
}
static inline const int32_t *ir_args(const ir_func *f, const ir_inst *in) {
  return f->pool + in->args;
}

/* ir_check.c */
/* Check instruction ref of f (operands, types, regions) given the scope state;
   writes a message and returns nonzero on error. */
IR_HIDDEN int ir_check_inst(cute_ir *ir, ir_func *f, int32_t ref, ir_scope *sc, char *msg,
                            size_t cap);
/* Update the scope state after instruction ref; nonzero + msg on a nesting error. */
IR_HIDDEN int ir_scope_step(cute_ir *ir, ir_func *f, int32_t ref, ir_scope *sc, char *msg,
                            size_t cap);
IR_HIDDEN int32_t ir_infer_type(cute_ir *ir, ir_func *f, int op, int nargs, const int32_t *args,
                                int64_t imm, int64_t imm2);
IR_HIDDEN int ir_verify_func(cute_ir *ir, int32_t fi, char *msg, size_t cap);
IR_HIDDEN void ir_fmt_ref(cute_ir *ir, ir_func *f, int32_t ref, char *buf, size_t cap);

/* ir_print.c */
IR_HIDDEN char *ir_print_all(cute_ir *ir); /* malloc'ed */

/* growable buffer */
typedef struct ir_buf {
  char *p;
  size_t n, cap;
  int oom;
} ir_buf;
IR_HIDDEN void ir_buf_put(ir_buf *b, const char *s, size_t n);
IR_HIDDEN void ir_buf_puts(ir_buf *b, const char *s);
IR_HIDDEN void ir_buf_printf(ir_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
IR_HIDDEN void ir_buf_quote(ir_buf *b, const char *s);

#endif
