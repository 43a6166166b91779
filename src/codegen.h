/* codegen.h -- internal: the LLVM code generator's state and the helpers
 * shared by codegen_llvm.c (module, types, the lowering stages), target_*.c
 * (the targets behind target.h), codegen_body.c
 * (function bodies, structured regions, line info) and codegen_ops.c
 * (conversions, math, memory, atomics, shuffles, special registers).  Only
 * these files include llvm-c headers. */
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
LLVMValueRef cg_iasm(cg *g, LLVMTypeRef ret, const char *tmpl, const char *cons, LLVMValueRef *args,
                         int nargs, int side);

/* arch-specific features (target_nvptx.c): fails (returns 1) when the inline
   PTX text uses an instruction the target lacks, e.g. wgmma on sm_90 */
int cg_arch_feature_check(cg *g, const ir_inst *in, const char *ptx);

/* function bodies and line info (codegen_body.c) */
int cg_gen_body(cg *g);
LLVMMetadataRef cg_di_file(cg *g, const char *path);
void cg_begin_debug_func(cg *g);

/* op lowering (codegen_ops.c) */
LLVMValueRef cg_cvt(cg *g, const ir_inst *in, int32_t to, int32_t from, LLVMValueRef v, int rnd);
LLVMValueRef cg_shift(cg *g, int op, int sg, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_divrem(cg *g, int op, int sg, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_math(cg *g, const ir_inst *in, int op, LLVMValueRef x, LLVMValueRef y);
int cg_natural_align(cg *g, int32_t t);
LLVMValueRef cg_access(cg *g, const ir_inst *in, int32_t t, int sp, LLVMValueRef p, LLVMValueRef val);
LLVMValueRef cg_atom(cg *g, const ir_inst *in, const int32_t *a);
LLVMValueRef cg_shfl(cg *g, const ir_inst *in, const int32_t *a);
void cg_loop_md(cg *g, LLVMValueRef brinst, int64_t unroll);
LLVMValueRef cg_sreg(cg *g, const ir_inst *in);

#endif
