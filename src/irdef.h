/*
 * irdef.h -- the kernel IR's tables, written once and expanded where needed
 * (builder, printer, parser, verifier, code generator).
 *
 * IROP(ID, "name", min_args, max_args, imm_kind, imm2_kind, flags, result)
 *   imm_kind / imm2_kind say what the instruction's two immediates mean (IK_*
 *   below): they are printed as key=value after the operands.
 *   flags: OF_RES   has a result (type not void) as a rule
 *          OF_REGION opens a region (closed by END; IF/FOR/WHILE)
 *          OF_TERM  ends the control flow of its region (ret/break/yield...)
 *          OF_SIDE  has a side effect (kept even if unused)
 *          OF_RESV  reserved slot: parsed and printed, not generated yet
 *   result: the inferred result type (when the builder is given none):
 *          RT_NONE  void, or explicit for OF_RES ops   RT_A0 / RT_A1  operand 0's / 1's type
 *          RT_I1 / RT_U32  that scalar     RT_PELEM  operand 0's pointee
 *          RT_ELEM  operand 0's vector lane / fragment element
 *          RT_FN    the op's own rule (ir_infer_type's switch)
 * The enum order is the public CUTE_IR_* numbering (include/cute_ir.h): append,
 * never reorder; src/ir.c static-asserts every row.
 */
#ifndef CUTE_IRDEF_H
#define CUTE_IRDEF_H

#define IROPDEF(_) \
  /* structure */ \
  _(PARAM,     "param",     0, 0,  IK_INT,    IK_NONE,  OF_RES, RT_NONE ) \
  _(FOR,       "for",       3, 3,  IK_UNROLL, IK_NONE,  OF_RES | OF_REGION, RT_A0   ) \
  _(IF,        "if",        1, 1,  IK_NONE,   IK_NONE,  OF_REGION, RT_NONE ) \
  _(ELSE,      "else",      0, 0,  IK_NONE,   IK_NONE,  0, RT_NONE ) \
  _(WHILE,     "while",     0, 0,  IK_NONE,   IK_NONE,  OF_REGION, RT_NONE ) \
  _(DO,        "do",        1, 1,  IK_NONE,   IK_NONE,  0, RT_NONE ) \
  _(END,       "end",       0, 0,  IK_NONE,   IK_NONE,  0, RT_NONE ) \
  _(YIELD,     "yield",     1, 1,  IK_NONE,   IK_NONE,  OF_TERM, RT_NONE ) \
  _(BREAK,     "break",     0, 0,  IK_NONE,   IK_NONE,  OF_TERM, RT_NONE ) \
  _(CONTINUE,  "continue",  0, 0,  IK_NONE,   IK_NONE,  OF_TERM, RT_NONE ) \
  _(RET,       "ret",       0, 1,  IK_NONE,   IK_NONE,  OF_TERM, RT_NONE ) \
  _(CALL,      "call",      0, 16, IK_FN,     IK_NONE,  OF_SIDE, RT_FN   ) \
  _(VAR,       "var",       0, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_NONE ) \
  _(VGET,      "vget",      1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(VSET,      "vset",      2, 2,  IK_NONE,   IK_NONE,  OF_SIDE, RT_NONE ) \
  /* arithmetic: same-typed operands (scalars or vectors) */ \
  _(ADD,       "add",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(SUB,       "sub",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(MUL,       "mul",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(DIV,       "div",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(REM,       "rem",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(MIN,       "min",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(MAX,       "max",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(MULHI,     "mulhi",     2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(AND,       "and",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(OR,        "or",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(XOR,       "xor",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(SHL,       "shl",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(SHR,       "shr",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(NEG,       "neg",       1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(ABS,       "abs",       1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(NOT,       "not",       1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(FMA,       "fma",       3, 3,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  /* comparisons -> i1 (signedness from the operand type; floats ordered, ne unordered) */ \
  _(EQ,        "eq",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(NE,        "ne",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(LT,        "lt",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(LE,        "le",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(GT,        "gt",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(GE,        "ge",        2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(ISNAN,     "isnan",     1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_I1   ) \
  _(SELECT,    "select",    3, 3,  IK_NONE,   IK_NONE,  OF_RES, RT_A1   ) \
  /* conversions */ \
  _(CVT,       "cvt",       1, 1,  IK_RND,    IK_NONE,  OF_RES, RT_NONE ) \
  _(BITCAST,   "bitcast",   1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_NONE ) \
  _(PTRCAST,   "ptrcast",   1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_NONE ) \
  /* math on floats (f16/bf16 computed in f32) */ \
  _(SQRT,      "sqrt",      1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(RSQRT,     "rsqrt",     1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(RCP,       "rcp",       1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(EXP,       "exp",       1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(EXP2,      "exp2",      1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(LOG,       "log",       1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(LOG2,      "log2",      1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(SIN,       "sin",       1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(COS,       "cos",       1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(TANH,      "tanh",      1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(ERF,       "erf",       1, 1,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(POW,       "pow",       2, 2,  IK_MATH,   IK_NONE,  OF_RES, RT_A0   ) \
  _(FLOOR,     "floor",     1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(CEIL,      "ceil",      1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(TRUNC,     "trunc",     1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(ROUND,     "round",     1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  /* bits */ \
  _(POPC,      "popc",      1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_U32  ) \
  _(CLZ,       "clz",       1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_U32  ) \
  _(BREV,      "brev",      1, 1,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(PRMT,      "prmt",      3, 3,  IK_NONE,   IK_NONE,  OF_RES, RT_U32  ) \
  /* vectors */ \
  _(EXTRACT,   "extract",   1, 1,  IK_LANE,   IK_NONE,  OF_RES, RT_ELEM ) \
  _(INSERT,    "insert",    2, 2,  IK_LANE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(VEC,       "vec",       1, 256,  IK_NONE,   IK_NONE,  OF_RES, RT_FN   ) \
  /* memory */ \
  _(LOAD,      "load",      1, 1,  IK_HINT,   IK_ALIGN, OF_RES, RT_PELEM) \
  _(STORE,     "store",     2, 2,  IK_HINT,   IK_ALIGN, OF_SIDE, RT_NONE ) \
  _(GEP,       "gep",       2, 2,  IK_NONE,   IK_NONE,  OF_RES, RT_A0   ) \
  _(SHARED,    "shared",    0, 0,  IK_COUNT,  IK_ALIGN, OF_RES, RT_NONE ) \
  _(DYNSHARED, "dynshared", 0, 0,  IK_NONE,   IK_ALIGN, OF_RES, RT_NONE ) \
  _(LOCAL,     "local",     0, 0,  IK_COUNT,  IK_ALIGN, OF_RES, RT_NONE ) \
  /* GPU */ \
  _(SREG,      "sreg",      0, 0,  IK_SREG,   IK_NONE,  OF_RES, RT_FN   ) \
  _(BAR,       "bar",       0, 0,  IK_BARID,  IK_COUNT, OF_SIDE, RT_NONE ) \
  _(FENCE,     "fence",     0, 0,  IK_SCOPE,  IK_NONE,  OF_SIDE, RT_NONE ) \
  _(SHFL,      "shfl",      3, 3,  IK_SHFL,   IK_WIDTH, OF_RES | OF_SIDE, RT_A0   ) \
  _(VOTE,      "vote",      2, 2,  IK_VOTE,   IK_NONE,  OF_RES | OF_SIDE, RT_FN   ) \
  _(ATOM,      "atom",      2, 2,  IK_ATOM,   IK_SCOPE, OF_RES | OF_SIDE, RT_PELEM) \
  _(CAS,       "cas",       3, 3,  IK_SCOPE,  IK_NONE,  OF_RES | OF_SIDE, RT_PELEM) \
  _(PRINTF,    "printf",    0, 15, IK_STR,    IK_NONE,  OF_SIDE, RT_NONE ) \
  _(TRAP,      "trap",      0, 0,  IK_NONE,   IK_NONE,  OF_SIDE, RT_NONE ) \
  _(ASSERT,    "assert",    1, 1,  IK_STR,    IK_NONE,  OF_SIDE, RT_NONE ) \
  _(ASM,       "asm",       0, 512,IK_STR,    IK_CONS,  OF_SIDE, RT_NONE ) \
  /* reserved for tensor-core / async-copy work (LLVM 19 intrinsics exist; \
     wgmma and TMA will be inline PTX) */ \
  _(MMA,       "mma",       0, 16, IK_INT,    IK_NONE,  OF_RESV, RT_NONE ) \
  _(LDMATRIX,  "ldmatrix",  0, 16, IK_INT,    IK_NONE,  OF_RESV, RT_NONE ) \
  _(CPASYNC,   "cp.async",  0, 16, IK_INT,    IK_NONE,  OF_RESV, RT_NONE ) \
  _(CPCOMMIT,  "cp.async.commit", 0, 16, IK_INT, IK_NONE, OF_RESV, RT_NONE ) \
  _(CPWAIT,    "cp.async.wait", 0, 16, IK_INT, IK_NONE,  OF_RESV, RT_NONE ) \
  _(MBARINIT,  "mbarrier.init", 0, 16, IK_INT, IK_NONE,  OF_RESV, RT_NONE ) \
  _(MBARARRIVE,"mbarrier.arrive", 0, 16, IK_INT, IK_NONE, OF_RESV, RT_NONE ) \
  _(MBARWAIT,  "mbarrier.wait", 0, 16, IK_INT, IK_NONE,  OF_RESV, RT_NONE ) \
  /* by-value parameters: the generic address of a grid_constant bytes parameter */ \
  _(PARAMADDR, "param.addr", 1, 1, IK_NONE,  IK_NONE,  OF_RES, RT_FN   )

enum { OF_RES = 1, OF_REGION = 2, OF_TERM = 4, OF_SIDE = 8, OF_RESV = 16 };
enum { RT_NONE, RT_A0, RT_A1, RT_I1, RT_U32, RT_PELEM, RT_ELEM, RT_FN };

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
  _(F64,  "f64",  64, 3) \
  _(TF32,   "tf32",   32, 5) \
  _(F8E4M3, "f8e4m3", 8,  5) \
  _(F8E5M2, "f8e5m2", 8,  5)

#define IR_SPACE_NAMES "generic", "global", "", "shared", "const", "local"

#endif
