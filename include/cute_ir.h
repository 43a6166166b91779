/*
 * cute_ir.h -- public C API of the kernel IR (builder, printer, parser,
 * verifier); the compiler driver (IR -> LLVM -> PTX -> cubin) is in
 * cute_compile.h.
 *
 * Model
 *  - A cute_ir context owns everything built in it (types, functions, values,
 *    strings) and frees it all in cute_ir_free.  Input strings are copied.
 *  - Types are int32 refs (the scalar ones are the fixed CUTE_T_* values).
 *  - Values are int32 refs into the current function: instructions are
 *    1, 2, 3... in program order (parameters first), interned constants are
 *    negative, 0 means "none" or "error".  The printer shows ref N as %N.
 *  - Control flow is structured: regions opened by for/if/while and closed by
 *    cute_ir_end.  Mutable variables (var/vget/vset) carry values across
 *    iterations; the code generator turns them into registers.
 *  - The FIRST error sticks to the context (code, message with the operation,
 *    its operands and the "file:line" set by cute_ir_set_loc); every later
 *    builder call is a no-op returning 0.  Check once with cute_ir_status.
 *  - Nothing here exits, aborts or prints.
 */
#ifndef CUTE_IR_H
#define CUTE_IR_H

#include "cute.h"
#include "cute_compile.h" /* the compiler driver (was this header's "compile" section) */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_ir.h */
typedef struct cute_ir cute_ir;

/* Scalar type refs (fixed), and type kinds for vectors and pointers. */
enum {
  CUTE_T_VOID = 1, CUTE_T_I1 = 2,
  CUTE_T_I8 = 3, CUTE_T_I16 = 4, CUTE_T_I32 = 5, CUTE_T_I64 = 6,
  CUTE_T_U8 = 7, CUTE_T_U16 = 8, CUTE_T_U32 = 9, CUTE_T_U64 = 10,
  CUTE_T_F16 = 11, CUTE_T_BF16 = 12, CUTE_T_F32 = 13, CUTE_T_F64 = 14,
  /* storage-only floats (class CUTE_TC_XFLOAT): load, store, select, bitcast, cvt */
  CUTE_T_TF32 = 15, CUTE_T_F8E4M3 = 16, CUTE_T_F8E5M2 = 17,
  CUTE_T_VEC = 18, CUTE_T_PTR = 19,
  CUTE_T_ARR = 20,   /* register fragment: elem[n], elem a scalar number or vector */
  CUTE_T_BYTES = 21  /* opaque by-value kernel parameter: bytes<size,align> */
};

/* Address spaces (NVPTX numbering). */
enum {
  CUTE_AS_GENERIC = 0, CUTE_AS_GLOBAL = 1, CUTE_AS_SHARED = 3,
  CUTE_AS_CONST = 4, CUTE_AS_LOCAL = 5
};

/* Opcodes (same order as src/irdef.h). */
enum {
  CUTE_IR_PARAM, CUTE_IR_FOR, CUTE_IR_IF, CUTE_IR_ELSE, CUTE_IR_WHILE, CUTE_IR_DO,
  CUTE_IR_END, CUTE_IR_YIELD, CUTE_IR_BREAK, CUTE_IR_CONTINUE, CUTE_IR_RET,
  CUTE_IR_CALL, CUTE_IR_VAR, CUTE_IR_VGET, CUTE_IR_VSET,
  CUTE_IR_ADD, CUTE_IR_SUB, CUTE_IR_MUL, CUTE_IR_DIV, CUTE_IR_REM, CUTE_IR_MIN,
  CUTE_IR_MAX, CUTE_IR_MULHI, CUTE_IR_AND, CUTE_IR_OR, CUTE_IR_XOR, CUTE_IR_SHL,
  CUTE_IR_SHR, CUTE_IR_NEG, CUTE_IR_ABS, CUTE_IR_NOT, CUTE_IR_FMA,
  CUTE_IR_EQ, CUTE_IR_NE, CUTE_IR_LT, CUTE_IR_LE, CUTE_IR_GT, CUTE_IR_GE,
  CUTE_IR_ISNAN, CUTE_IR_SELECT,
  CUTE_IR_CVT, CUTE_IR_BITCAST, CUTE_IR_PTRCAST,
  CUTE_IR_SQRT, CUTE_IR_RSQRT, CUTE_IR_RCP, CUTE_IR_EXP, CUTE_IR_EXP2, CUTE_IR_LOG,
  CUTE_IR_LOG2, CUTE_IR_SIN, CUTE_IR_COS, CUTE_IR_TANH, CUTE_IR_ERF, CUTE_IR_POW,
  CUTE_IR_FLOOR, CUTE_IR_CEIL, CUTE_IR_TRUNC, CUTE_IR_ROUND,
  CUTE_IR_POPC, CUTE_IR_CLZ, CUTE_IR_BREV, CUTE_IR_PRMT,
  CUTE_IR_EXTRACT, CUTE_IR_INSERT, CUTE_IR_VEC,
  CUTE_IR_LOAD, CUTE_IR_STORE, CUTE_IR_GEP, CUTE_IR_SHARED, CUTE_IR_DYNSHARED,
  CUTE_IR_LOCAL,
  CUTE_IR_SREG, CUTE_IR_BAR, CUTE_IR_FENCE, CUTE_IR_SHFL, CUTE_IR_VOTE,
  CUTE_IR_ATOM, CUTE_IR_CAS, CUTE_IR_PRINTF, CUTE_IR_TRAP, CUTE_IR_ASSERT,
  CUTE_IR_ASM,
  CUTE_IR_MMA, CUTE_IR_LDMATRIX, CUTE_IR_CPASYNC, CUTE_IR_CPCOMMIT, CUTE_IR_CPWAIT,
  CUTE_IR_MBARINIT, CUTE_IR_MBARARRIVE, CUTE_IR_MBARWAIT,
  CUTE_IR_PARAMADDR,
  CUTE_IR_OP_COUNT_
};

/* Immediate values. */
enum { CUTE_HINT_NONE = 0, CUTE_HINT_NC = 1, CUTE_HINT_CS = 2, CUTE_HINT_CG = 3,
       CUTE_HINT_CA = 4, CUTE_HINT_LU = 5, CUTE_HINT_CV = 6, CUTE_HINT_WB = 7,
       CUTE_HINT_WT = 8, CUTE_HINT_VOLATILE = 9 };
enum { CUTE_RND_DEFAULT = 0, CUTE_RND_RN = 1, CUTE_RND_RZ = 2, CUTE_RND_RM = 3,
       CUTE_RND_RP = 4 };
enum { CUTE_MATH_ACCURATE = 0, CUTE_MATH_FAST = 1 };
enum { CUTE_SREG_TID_X, CUTE_SREG_TID_Y, CUTE_SREG_TID_Z,
       CUTE_SREG_NTID_X, CUTE_SREG_NTID_Y, CUTE_SREG_NTID_Z,
       CUTE_SREG_CTAID_X, CUTE_SREG_CTAID_Y, CUTE_SREG_CTAID_Z,
       CUTE_SREG_NCTAID_X, CUTE_SREG_NCTAID_Y, CUTE_SREG_NCTAID_Z,
       CUTE_SREG_LANEID, CUTE_SREG_WARPID, CUTE_SREG_NWARPID, CUTE_SREG_SMID,
       CUTE_SREG_NSMID, CUTE_SREG_CLOCK, CUTE_SREG_CLOCK64, CUTE_SREG_GLOBALTIMER,
       CUTE_SREG_LANEMASK_LT, CUTE_SREG_LANEMASK_LE, CUTE_SREG_LANEMASK_EQ,
       CUTE_SREG_LANEMASK_GE, CUTE_SREG_LANEMASK_GT, CUTE_SREG_COUNT_ };
enum { CUTE_SCOPE_GPU = 0, CUTE_SCOPE_CTA = 1, CUTE_SCOPE_SYS = 2 };
enum { CUTE_SHFL_IDX = 0, CUTE_SHFL_UP = 1, CUTE_SHFL_DOWN = 2, CUTE_SHFL_BFLY = 3 };
enum { CUTE_VOTE_ALL = 0, CUTE_VOTE_ANY = 1, CUTE_VOTE_UNI = 2, CUTE_VOTE_BALLOT = 3 };
enum { CUTE_ATOM_ADD = 0, CUTE_ATOM_MIN = 1, CUTE_ATOM_MAX = 2, CUTE_ATOM_AND = 3,
       CUTE_ATOM_OR = 4, CUTE_ATOM_XOR = 5, CUTE_ATOM_EXCH = 6, CUTE_ATOM_INC = 7,
       CUTE_ATOM_DEC = 8 };
/* for-loop unroll hint: >0 count, 0 none. */
enum { CUTE_UNROLL_NONE = 0, CUTE_UNROLL_FULL = -1, CUTE_UNROLL_DISABLE = -2 };
/* Function kinds and parameter flags. */
enum { CUTE_FN_KERNEL = 0, CUTE_FN_DEVICE = 1 };
enum { CUTE_P_NOALIAS = 1, CUTE_P_READONLY = 2,
       CUTE_P_GRID_CONSTANT = 4 /* bytes parameter whose address param.addr takes */ };
/* Limits of the fragment model (docs/IR.md, "Fragments and wide values"). */
enum { CUTE_ARR_MAX = 256,        /* elements of a fragment type             */
       CUTE_BYTES_MAX = 4096,     /* size of a by-value bytes parameter      */
       CUTE_ASM_MAX_OPERANDS = 512 /* inline-PTX operands after expansion    */ };

/* ---- context ------------------------------------------------------------ */
/* New empty context, owned by the caller (free with cute_ir_free); NULL if out of memory. */
cute_ir *cute_ir_new(void);
/* Frees the context and everything built in it; NULL is ignored. */
void cute_ir_free(cute_ir *ir);
/* The sticky error: returns its code (0 if none) and copies it into err (may be NULL). */
int cute_ir_status(cute_ir *ir, cute_err *err);
/* The sticky error message, owned by the context ("" if none). */
const char *cute_ir_error(cute_ir *ir);
/* Builder checks on (1, default) or off (0: only arity/ref range is checked, so
   malformed IR reaches the verifier; used by tests and the fuzzer). */
void cute_ir_set_checks(cute_ir *ir, int on);
/* Current source location recorded by every following instruction; file is copied. */
void cute_ir_set_loc(cute_ir *ir, const char *file, int line);

/* ---- types (interned; refs stay valid for the context's life) ------------ */
int32_t cute_ir_t_vec(cute_ir *ir, int32_t elem, int lanes);
int32_t cute_ir_t_ptr(cute_ir *ir, int32_t elem, int space);
/* Register fragment elem[n] (printed "f32[128]", "f16x2[4]"): elem a scalar number or a
   vector, 1 <= n <= CUTE_ARR_MAX.  A value, never in memory: built by vec, sliced by
   extract/insert (constant index), carried by var, passed whole to and from asm. */
int32_t cute_ir_t_array(cute_ir *ir, int32_t elem, int n);
/* Opaque by-value kernel parameter of size bytes aligned to align (a power of two
   <= 256), printed "bytes<128,64>"; PTX: .param .align A .b8 name[N]. */
int32_t cute_ir_t_bytes(cute_ir *ir, int size, int align);
/* kind: CUTE_T_* of a type ref (scalars are their own kind); 0 if invalid. */
int cute_ir_type_kind(cute_ir *ir, int32_t t);
/* Element type of a vector, pointer or array (0 otherwise); lanes, address space or
   length into *n (bytes: 0, size into *n). */
int32_t cute_ir_type_elem(cute_ir *ir, int32_t t, int *n);
/* Size in bytes (pointers 8, i1 1). */
int cute_ir_type_size(cute_ir *ir, int32_t t);
/* Type name ("ptr.global.f32"), owned by the context, valid until the next call. */
const char *cute_ir_type_name(cute_ir *ir, int32_t t);
/* Parse a type name; 0 (and a sticky error) if malformed. */
int32_t cute_ir_type_parse(cute_ir *ir, const char *name);

/* ---- functions ----------------------------------------------------------- */
/* Start a function (kind CUTE_FN_*; ret CUTE_T_VOID for kernels) and make it
   current; returns its index (>= 1).  Add parameters before instructions. */
int32_t cute_ir_func(cute_ir *ir, const char *name, int kind, int32_t ret);
/* Make function fn current again (to continue building it). */
int cute_ir_func_select(cute_ir *ir, int32_t fn);
int32_t cute_ir_func_count(cute_ir *ir);
/* Name of function fn, owned by the context. */
const char *cute_ir_func_name(cute_ir *ir, int32_t fn);
/* Add a parameter to the current function; returns its value ref.
   flags: CUTE_P_*; align: pointee alignment in bytes (0: none); name may be NULL. */
int32_t cute_ir_param(cute_ir *ir, int32_t type, const char *name, int flags, int align);
/* Launch bounds of the current kernel (0 = unset). */
int cute_ir_launch_bounds(cute_ir *ir, int max_threads, int min_blocks);
/* Dynamic shared memory bytes the current kernel will be launched with (recorded
   in the compile result; > 48 KiB needs the runtime opt-in). */
int cute_ir_dyn_smem(cute_ir *ir, int bytes);

/* ---- values -------------------------------------------------------------- */
/* Interned constants of type t (integers truncated to t, floats rounded to t). */
int32_t cute_ir_const_int(cute_ir *ir, int32_t t, int64_t v);
int32_t cute_ir_const_float(cute_ir *ir, int32_t t, double v);
/* Generic builder entry: op CUTE_IR_*, result type (0: inferred), operands,
   two immediates (see docs/IR.md).  Returns the result ref (0 on error). */
int32_t cute_ir_op(cute_ir *ir, int op, int32_t type, int nargs, const int32_t *args,
                   int64_t imm, int64_t imm2);
/* Convenience forms of cute_ir_op. */
int32_t cute_ir_op1(cute_ir *ir, int op, int32_t a);
int32_t cute_ir_op2(cute_ir *ir, int op, int32_t a, int32_t b);
int32_t cute_ir_op3(cute_ir *ir, int op, int32_t a, int32_t b, int32_t c);
int32_t cute_ir_cvt(cute_ir *ir, int32_t type, int32_t a, int rnd);
int32_t cute_ir_load(cute_ir *ir, int32_t ptr, int hint, int align);
int32_t cute_ir_store(cute_ir *ir, int32_t ptr, int32_t val, int hint, int align);
int32_t cute_ir_gep(cute_ir *ir, int32_t ptr, int32_t index);
int32_t cute_ir_sreg(cute_ir *ir, int reg);
int32_t cute_ir_math(cute_ir *ir, int op, int32_t a, int fast);
int32_t cute_ir_var(cute_ir *ir, int32_t type, int32_t init);
int32_t cute_ir_vget(cute_ir *ir, int32_t var);
int32_t cute_ir_vset(cute_ir *ir, int32_t var, int32_t val);
int32_t cute_ir_shared(cute_ir *ir, int32_t elem, int64_t count, int align);
int32_t cute_ir_dyn_shared(cute_ir *ir, int32_t elem, int align);
int32_t cute_ir_local(cute_ir *ir, int32_t elem, int64_t count, int align);
int32_t cute_ir_barrier(cute_ir *ir, int id, int nthreads);
int32_t cute_ir_fence(cute_ir *ir, int scope);
int32_t cute_ir_shfl(cute_ir *ir, int mode, int32_t val, int32_t lane, int32_t mask, int width);
int32_t cute_ir_vote(cute_ir *ir, int mode, int32_t mask, int32_t pred);
int32_t cute_ir_atom(cute_ir *ir, int aop, int32_t ptr, int32_t val, int scope);
int32_t cute_ir_cas(cute_ir *ir, int32_t ptr, int32_t cmp, int32_t val, int scope);
int32_t cute_ir_call(cute_ir *ir, int32_t fn, int nargs, const int32_t *args);
/* printf: fmt copied; args promoted like C varargs (f32 -> f64, small ints -> 32 bit). */
int32_t cute_ir_printf(cute_ir *ir, const char *fmt, int nargs, const int32_t *args);
int32_t cute_ir_assert(cute_ir *ir, int32_t cond, const char *msg);
/* Inline PTX: operands are $0.. (outputs first), constraints as LLVM ("=r,r,l");
   a vector result type with N "=" constraints returns N outputs as lanes. */
int32_t cute_ir_asm(cute_ir *ir, int32_t type, const char *ptx, const char *constraints,
                    int nargs, const int32_t *args);

/* ---- structured control flow ---------------------------------------------- */
/* for (iv = lo; iv < hi; iv += step): returns iv (visible inside only). */
int32_t cute_ir_for(cute_ir *ir, int32_t lo, int32_t hi, int32_t step, int unroll);
/* if cond (type: result type, CUTE_T_VOID or 0 for none; a result needs an
   else and a yield at the end of both branches).  Returns the if's result. */
int32_t cute_ir_if(cute_ir *ir, int32_t cond, int32_t type);
int32_t cute_ir_else(cute_ir *ir);
/* while: cute_ir_while, the condition's instructions, cute_ir_do(cond), body, end. */
int32_t cute_ir_while(cute_ir *ir);
int32_t cute_ir_do(cute_ir *ir, int32_t cond);
int32_t cute_ir_yield(cute_ir *ir, int32_t val);
int32_t cute_ir_end(cute_ir *ir);
int32_t cute_ir_ret(cute_ir *ir, int32_t val);

/* ---- inspection ------------------------------------------------------------ */
int32_t cute_ir_value_type(cute_ir *ir, int32_t v);
int cute_ir_value_op(cute_ir *ir, int32_t v);
/* Number of refs (instructions) in the current function, constants excluded. */
int32_t cute_ir_count(cute_ir *ir);
const char *cute_ir_op_name(int op);
int cute_ir_op_lookup(const char *name);
/* Operand count range of op (-1 if op is unknown). */
int cute_ir_op_arity(int op, int *min_args, int *max_args);
/* Key of immediate slot 0/1 of op as printed ("hint", "align", "mode"...), NULL if unused. */
const char *cute_ir_imm_key(int op, int slot);
/* Value of a named immediate ("nc", "bfly", "tid.x", "full"...) of slot 0/1 of op;
   0 and *out on success, -1 if the name is unknown there. */
int cute_ir_imm_lookup(int op, int slot, const char *name, int64_t *out);
/* The scalar type table (src/irdef.h), for the Lua dtype table: for a scalar type ref t
   (CUTE_T_VOID..CUTE_T_F8E5M2) its name ("f32"), bits and class CUTE_TC_* into the non-NULL
   out-pointers and 0; -1 if t is not a scalar type. */
enum { CUTE_TC_NONE = 0, CUTE_TC_SINT = 1, CUTE_TC_UINT = 2, CUTE_TC_FLOAT = 3, CUTE_TC_BOOL = 4,
       CUTE_TC_XFLOAT = 5 /* tf32, fp8: no arithmetic, converted through cvt */ };
int cute_ir_scalar_info(int32_t t, const char **name, int *bits, int *cls);
/* Name of address space CUTE_AS_* ("generic", "global", ...); NULL if there is no such space. */
const char *cute_ir_space_name(int space);

/* ---- text ------------------------------------------------------------------- */
/* The whole context as text, owned by the context, valid until the next print. */
const char *cute_ir_print(cute_ir *ir);
/* Parse text (the printer's format) into ir, which should be empty. */
int cute_ir_parse(cute_ir *ir, const char *text, cute_err *err);
/* Verify every function; 0 or CUTE_E_VERIFY with "file:line: message". */
int cute_ir_verify(cute_ir *ir, cute_err *err);

/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
