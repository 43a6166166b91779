/*
 * irdef.h -- the kernel IR's tables, written once and expanded where needed
 * (builder, printer, parser, verifier, code generator).
 *
 * IROP(ID, "name", min_args, max_args, imm_kind, imm2_kind, flags)
 *   imm_kind / imm2_kind say what the instruction's two immediates mean (IK_*
 *   below): they are printed as key=value after the operands.
 *   flags: OF_RES   has a result (type not void) as a rule
 *          OF_REGION opens a region (closed by END; IF/FOR/WHILE)
 *          OF_TERM  ends the control flow of its region (ret/break/yield...)
 *          OF_SIDE  has a side effect (kept even if unused)
 *          OF_RESV  reserved slot: parsed and printed, not generated yet
 * The enum order is the public CUTE_OP_* numbering: append, never reorder.
 */
#ifndef CUTE_IRDEF_H
#define CUTE_IRDEF_H

#define IROPDEF(_) \
  /* structure */ \
  _(PARAM,     "param",     0, 0,  IK_INT,    IK_NONE,  OF_RES) \
  _(FOR,       "for",       3, 3,  IK_UNROLL, IK_NONE,  OF_RES | OF_REGION) \
  _(IF,        "if",        1, 1,  IK_NONE,   IK_NONE,  OF_REGION) \
  _(ELSE,      "else",      0, 0,  IK_NONE,   IK_NONE,  0) \
  _(WHILE,     "while",     0, 0,  IK_NONE,   IK_NONE,  OF_REGION) \
  _(DO,        "do",        1, 1,  IK_NONE,   IK_NONE,  0) \
  _(END,       "end",       0, 0,  IK_NONE,   IK_NONE,  0) \
  _(YIELD,     "yield",     1, 1,  IK_NONE,   IK_NONE,  OF_TERM) \
  _(BREAK,     "break",     0, 0,  IK_NONE,   IK_NONE,  OF_TERM) \
  _(CONTINUE,  "continue",  0, 0,  IK_NONE,   IK_NONE,  OF_TERM) \
  _(RET,       "ret",       0, 1,  IK_NONE,   IK_NONE,  OF_TERM) \
  _(CALL,      "call",      0, 16, IK_FN,     IK_NONE,  OF_SIDE) \
  _(VAR,       "var",       0, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(VGET,      "vget",      1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(VSET,      "vset",      2, 2,  IK_NONE,   IK_NONE,  OF_SIDE) \
  /* arithmetic: same-typed operands (scalars or vectors) */ \
  _(ADD,       "add",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(SUB,       "sub",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(MUL,       "mul",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(DIV,       "div",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(REM,       "rem",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(MIN,       "min",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(MAX,       "max",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(MULHI,     "mulhi",     2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(AND,       "and",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(OR,        "or",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(XOR,       "xor",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(SHL,       "shl",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(SHR,       "shr",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(NEG,       "neg",       1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(ABS,       "abs",       1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(NOT,       "not",       1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(FMA,       "fma",       3, 3,  IK_NONE,   IK_NONE,  OF_RES) \
  /* comparisons -> i1 (signedness from the operand type; floats ordered, ne unordered) */ \
  _(EQ,        "eq",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(NE,        "ne",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(LT,        "lt",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(LE,        "le",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(GT,        "gt",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(GE,        "ge",        2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(ISNAN,     "isnan",     1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(SELECT,    "select",    3, 3,  IK_NONE,   IK_NONE,  OF_RES) \
  /* conversions */ \
  _(CVT,       "cvt",       1, 1,  IK_RND,    IK_NONE,  OF_RES) \
  _(BITCAST,   "bitcast",   1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(PTRCAST,   "ptrcast",   1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  /* math on floats (f16/bf16 computed in f32) */ \
  _(SQRT,      "sqrt",      1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(RSQRT,     "rsqrt",     1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(RCP,       "rcp",       1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(EXP,       "exp",       1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(EXP2,      "exp2",      1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(LOG,       "log",       1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(LOG2,      "log2",      1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(SIN,       "sin",       1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(COS,       "cos",       1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(TANH,      "tanh",      1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(ERF,       "erf",       1, 1,  IK_MATH,   IK_NONE,  OF_RES) \
  _(POW,       "pow",       2, 2,  IK_MATH,   IK_NONE,  OF_RES) \
  _(FLOOR,     "floor",     1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(CEIL,      "ceil",      1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(TRUNC,     "trunc",     1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(ROUND,     "round",     1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  /* bits */ \
  _(POPC,      "popc",      1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(CLZ,       "clz",       1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(BREV,      "brev",      1, 1,  IK_NONE,   IK_NONE,  OF_RES) \
  _(PRMT,      "prmt",      3, 3,  IK_NONE,   IK_NONE,  OF_RES) \
  /* vectors */ \
  _(EXTRACT,   "extract",   1, 1,  IK_LANE,   IK_NONE,  OF_RES) \
  _(INSERT,    "insert",    2, 2,  IK_LANE,   IK_NONE,  OF_RES) \
  _(VEC,       "vec",       1, 256,  IK_NONE,   IK_NONE,  OF_RES) \
  /* memory */ \
  _(LOAD,      "load",      1, 1,  IK_HINT,   IK_ALIGN, OF_RES) \
  _(STORE,     "store",     2, 2,  IK_HINT,   IK_ALIGN, OF_SIDE) \
  _(GEP,       "gep",       2, 2,  IK_NONE,   IK_NONE,  OF_RES) \
  _(SHARED,    "shared",    0, 0,  IK_COUNT,  IK_ALIGN, OF_RES) \
  _(DYNSHARED, "dynshared", 0, 0,  IK_NONE,   IK_ALIGN, OF_RES) \
  _(LOCAL,     "local",     0, 0,  IK_COUNT,  IK_ALIGN, OF_RES) \
  /* GPU */ \
  _(SREG,      "sreg",      0, 0,  IK_SREG,   IK_NONE,  OF_RES) \
  _(BAR,       "bar",       0, 0,  IK_BARID,  IK_COUNT, OF_SIDE) \
  _(FENCE,     "fence",     0, 0,  IK_SCOPE,  IK_NONE,  OF_SIDE) \
  _(SHFL,      "shfl",      3, 3,  IK_SHFL,   IK_WIDTH, OF_RES | OF_SIDE) \
  _(VOTE,      "vote",      2, 2,  IK_VOTE,   IK_NONE,  OF_RES | OF_SIDE) \
  _(ATOM,      "atom",      2, 2,  IK_ATOM,   IK_SCOPE, OF_RES | OF_SIDE) \
  _(CAS,       "cas",       3, 3,  IK_SCOPE,  IK_NONE,  OF_RES | OF_SIDE) \
  _(PRINTF,    "printf",    0, 15, IK_STR,    IK_NONE,  OF_SIDE) \
  _(TRAP,      "trap",      0, 0,  IK_NONE,   IK_NONE,  OF_SIDE) \
  _(ASSERT,    "assert",    1, 1,  IK_STR,    IK_NONE,  OF_SIDE) \
  _(ASM,       "asm",       0, 512,IK_STR,    IK_CONS,  OF_SIDE) \
  /* reserved for tensor-core / async-copy work (LLVM 19 intrinsics exist; \
     wgmma and TMA will be inline PTX) */ \
  _(MMA,       "mma",       0, 16, IK_INT,    IK_NONE,  OF_RESV) \
  _(LDMATRIX,  "ldmatrix",  0, 16, IK_INT,    IK_NONE,  OF_RESV) \
  _(CPASYNC,   "cp.async",  0, 16, IK_INT,    IK_NONE,  OF_RESV) \
  _(CPCOMMIT,  "cp.async.commit", 0, 16, IK_INT, IK_NONE, OF_RESV) \
  _(CPWAIT,    "cp.async.wait", 0, 16, IK_INT, IK_NONE,  OF_RESV) \
  _(MBARINIT,  "mbarrier.init", 0, 16, IK_INT, IK_NONE,  OF_RESV) \
  _(MBARARRIVE,"mbarrier.arrive", 0, 16, IK_INT, IK_NONE, OF_RESV) \
  _(MBARWAIT,  "mbarrier.wait", 0, 16, IK_INT, IK_NONE,  OF_RESV) \
  /* by-value parameters: the generic address of a grid_constant bytes parameter */ \
  _(PARAMADDR, "param.addr", 1, 1, IK_NONE,  IK_NONE,  OF_RES)

enum { OF_RES = 1, OF_REGION = 2, OF_TERM = 4, OF_SIDE = 8, OF_RESV = 16 };

/* Immediate kinds: IMMK(ID, "key", value-name list or NULL, number of names, is_string) */
#define IMMKDEF(_) \
  _(IK_NONE,   "",       NULL,            0, 0) \
  _(IK_INT,    "n",      NULL,            0, 0) \
  _(IK_COUNT,  "count",  NULL,            0, 0) \
  _(IK_ALIGN,  "align",  NULL,            0, 0) \
  _(IK_LANE,   "lane",   NULL,            0, 0) \
  _(IK_WIDTH,  "width",  NULL,            0, 0) \
  _(IK_BARID,  "id",     NULL,            0, 0) \
  _(IK_UNROLL, "unroll", NULL,            0, 0) \
  _(IK_FN,     "fn",     NULL,            0, 0) \
  _(IK_STR,    "str",    NULL,            0, 1) \
  _(IK_CONS,   "cons",   NULL,            0, 1) \
  _(IK_HINT,   "hint",   ir_hint_names,   IR_NN(ir_hint_names), 0) \
  _(IK_RND,    "rnd",    ir_rnd_names,    IR_NN(ir_rnd_names), 0) \
  _(IK_MATH,   "math",   ir_math_names,   IR_NN(ir_math_names), 0) \
  _(IK_SREG,   "reg",    ir_sreg_names,   IR_NN(ir_sreg_names), 0) \
  _(IK_SCOPE,  "scope",  ir_scope_names,  IR_NN(ir_scope_names), 0) \
  _(IK_SHFL,   "mode",   ir_shfl_names,   IR_NN(ir_shfl_names), 0) \
  _(IK_VOTE,   "mode",   ir_vote_names,   IR_NN(ir_vote_names), 0) \
  _(IK_ATOM,   "op",     ir_atom_names,   IR_NN(ir_atom_names), 0)

/* Value names of the enumerated immediates (index = public enum value). */
#define IR_HINT_NAMES   "", "nc", "cs", "cg", "ca", "lu", "cv", "wb", "wt", "volatile"
#define IR_RND_NAMES    "", "rn", "rz", "rm", "rp"
#define IR_MATH_NAMES   "accurate", "fast"
#define IR_SREG_NAMES   "tid.x", "tid.y", "tid.z", "ntid.x", "ntid.y", "ntid.z", \
                        "ctaid.x", "ctaid.y", "ctaid.z", "nctaid.x", "nctaid.y", "nctaid.z", \
                        "laneid", "warpid", "nwarpid", "smid", "nsmid", "clock", "clock64", \
                        "globaltimer", "lanemask_lt", "lanemask_le", "lanemask_eq", \
                        "lanemask_ge", "lanemask_gt"
#define IR_SCOPE_NAMES  "gpu", "cta", "sys"
#define IR_SHFL_NAMES   "idx", "up", "down", "bfly"
#define IR_VOTE_NAMES   "all", "any", "uni", "ballot"
#define IR_ATOM_NAMES   "add", "min", "max", "and", "or", "xor", "exch", "inc", "dec"

/* Scalar types: IRTY(ID, "name", bits, class) ; class: 1 signed int, 2 unsigned
   int, 3 float, 4 bool, 0 void.  ID order = CUTE_T_* values. */
#define IRTYDEF(_) \
  _(VOID, "void", 0,  0) \
  _(I1,   "i1",   1,  4) \
  _(I8,   "i8",   8,  1) \
  _(I16,  "i16",  16, 1) \
  _(I32,  "i32",  32, 1) \
  _(I64,  "i64",  64, 1) \
  _(U8,   "u8",   8,  2) \
  _(U16,  "u16",  16, 2) \
  _(U32,  "u32",  32, 2) \
  _(U64,  "u64",  64, 2) \
  _(F16,  "f16",  16, 3) \
  _(BF16, "bf16", 16, 3) \
  _(F32,  "f32",  32, 3) \
  _(F64,  "f64",  64, 3)

#define IR_SPACE_NAMES "generic", "global", "", "shared", "const", "local"

#endif
