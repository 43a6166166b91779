/* codegen.h -- internal: the LLVM code generator's state and the helpers
 * shared by codegen_llvm.c (module, types, the lowering stages), codegen_body.c
 * (function bodies: the table of contents of target-neutral ops, structured
 * regions, line info), codegen_arith.c (target-neutral op lowering),
 * codegen_util.c (helpers), the targets behind target.h (target_nvptx.c: the
 * machine, arch table, libdevice, annotations) and the NVPTX target's op
 * files: nvptx_ops.c (its op table: GPU ops), nvptx_lower.c (conversions,
 * math, cache hints, atomics) and nvptx_abi.c (by-value parameters, PTX
 * names).  Only these files include llvm-c headers. */
#ifndef CUTE_CODEGEN_H
#define CUTE_CODEGEN_H

#include "ir.h"
#include "compile_opts.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Linker.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

/* ---- generator state ---------------------------------------------------------- */
typedef struct ctl {
  int32_t opener;
  int op;
  LLVMBasicBlockRef head, body, latch, exitb, elseb, then_end;
  LLVMValueRef iv, then_val, else_val, pre_val;
  LLVMBasicBlockRef pre;
} ctl;

typedef struct cg {
  cute_ir *ir;
  const cute_compile_opts *o;
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMTypeRef *ty;  /* per IR type */
  LLVMTypeRef tvoid, ti1, ti8, ti16, ti32, ti64, tf16, tbf16, tf32, tf64, tptr;
  LLVMValueRef *fn;
  LLVMTypeRef *fnty;
  /* per function */
  ir_func *f;
  int32_t fi;
  LLVMValueRef F;
  LLVMValueRef *val;
  LLVMValueRef *cval;
  LLVMBasicBlockRef entry;
  ctl *cs;
  int ncs;
  LLVMValueRef dynsmem;
  LLVMValueRef vprintf;
  int need_libdevice, ftz;
  int sm;           /* 80 for sm_80, 90 for sm_90a */
  int ptx;          /* PTX ISA version (requested, or LLVM's default for sm) */
  /* compile options (compile_opts.h) as the lowering reads them */
  const struct cute_target *tgt;
  LLVMTargetMachineRef tm, own_tm; /* own_tm: not cached, disposed with the generator */
  const char *arch; /* "sm_90a" */
  int arch_specific; /* an "a" target (sm_90a) */
  int ptx_req;       /* ptx_version asked for (0: the arch's default) */
  int opt;           /* opt_level */
  int fast_math, assertions;
  char *err;
  size_t errcap;
  int failed;
  char diag[1024];
  int diag_err;
  /* line info (CUTE_C_LINEINFO) */
  LLVMDIBuilderRef dib;
  LLVMMetadataRef cu_file, sp, *scope_of; /* scope_of[string id]: per-file scope in this function */
} cg;


/* type of value ref r in the function being generated */
#define TY(r) ir_vtype(g->f, (r))

/* shared helpers (codegen_llvm.c) */
int cg_fail(cg *g, const ir_inst *in, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
LLVMTypeRef cg_type(cg *g, int32_t t);
LLVMValueRef cg_val(cg *g, int32_t r);
LLVMValueRef cg_intr(cg *g, const ir_inst *in, const char *name, LLVMTypeRef *tys, int ntys,
                         LLVMValueRef *args, int nargs);

/* arch-specific features (target_nvptx.c): fails (returns 1) when the inline
   PTX text uses an instruction the target lacks, e.g. wgmma on sm_90 */
int cg_arch_feature_check(cg *g, const ir_inst *in, const char *ptx);

/* one instruction being lowered: gen_body fills it, the lowering functions read it */
typedef struct cg_op {
  int32_t r;          /* its ref */
  const ir_inst *in;
  const int32_t *a;   /* operand refs */
  LLVMValueRef x, y;  /* operands 0 and 1 (NULL if absent) */
  int32_t t0;         /* operand 0's IR type (0 if none) */
  int isf, sg;        /* operand 0 is a float / a signed integer (or vectors of them) */
  LLVMTypeRef T;      /* the result's LLVM type */
} cg_op;

/* function bodies and line info (codegen_body.c): gen_body is the table of
   contents, one line per target-neutral op; every other op goes to the
   target's cg_target_op */
int cg_gen_body(cg *g);
LLVMMetadataRef cg_di_file(cg *g, const char *path);
void cg_begin_debug_func(cg *g);
void cg_loop_md(cg *g, LLVMValueRef brinst, int64_t unroll);

/* helpers of the lowering files (codegen_util.c) */
LLVMBasicBlockRef cg_newbb(cg *g, const char *name);
LLVMValueRef cg_entry_alloca(cg *g, LLVMTypeRef t, int align);
int cg_natural_align(cg *g, int32_t t);
/* inline PTX; side: has side effects (and convergent) */
LLVMValueRef cg_iasm(cg *g, LLVMTypeRef ret, const char *tmpl, const char *cons, LLVMValueRef *args,
                     int nargs, int side);

/* target-neutral op lowering (codegen_arith.c), one function per table line */
LLVMValueRef cg_shift(cg *g, int op, int sg, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_divrem(cg *g, int op, int sg, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_op_add(cg *g, const cg_op *o);
LLVMValueRef cg_op_sub(cg *g, const cg_op *o);
LLVMValueRef cg_op_mul(cg *g, const cg_op *o);
LLVMValueRef cg_op_divrem(cg *g, const cg_op *o);
LLVMValueRef cg_op_minmax(cg *g, const cg_op *o);
LLVMValueRef cg_op_mulhi(cg *g, const cg_op *o);
LLVMValueRef cg_op_logic(cg *g, const cg_op *o);
LLVMValueRef cg_op_shift(cg *g, const cg_op *o);
LLVMValueRef cg_op_neg(cg *g, const cg_op *o);
LLVMValueRef cg_op_not(cg *g, const cg_op *o);
LLVMValueRef cg_op_abs(cg *g, const cg_op *o);
LLVMValueRef cg_op_fma(cg *g, const cg_op *o);
LLVMValueRef cg_op_cmp(cg *g, const cg_op *o);
LLVMValueRef cg_op_isnan(cg *g, const cg_op *o);
LLVMValueRef cg_op_select(cg *g, const cg_op *o);
LLVMValueRef cg_op_bitcast(cg *g, const cg_op *o);
LLVMValueRef cg_op_ptrcast(cg *g, const cg_op *o);
LLVMValueRef cg_op_count_bits(cg *g, const cg_op *o);
LLVMValueRef cg_op_brev(cg *g, const cg_op *o);
LLVMValueRef cg_op_extract(cg *g, const cg_op *o);
LLVMValueRef cg_op_insert(cg *g, const cg_op *o);
LLVMValueRef cg_op_vec(cg *g, const cg_op *o);
LLVMValueRef cg_op_access(cg *g, const cg_op *o);
LLVMValueRef cg_op_gep(cg *g, const cg_op *o);

/* an op gen_body leaves to the target: g->tgt->op (codegen_llvm.c); the NVPTX
   lowering helpers below live in nvptx_lower.c */
LLVMValueRef cg_target_op(cg *g, const cg_op *o);
LLVMValueRef cg_cvt(cg *g, const ir_inst *in, int32_t to, int32_t from, LLVMValueRef v, int rnd);
LLVMValueRef cg_math(cg *g, const ir_inst *in, int op, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_access(cg *g, const ir_inst *in, int32_t t, int sp, LLVMValueRef p, LLVMValueRef val);
LLVMValueRef cg_atom(cg *g, const ir_inst *in, const int32_t *a);


#endif
