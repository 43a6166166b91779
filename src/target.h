/* target.h -- internal: the target seam.  The target-neutral lowering
 * (codegen_llvm.c, codegen_body.c, codegen_arith.c) calls the target only
 * through this hook table; a target fills one (target_nvptx.c: NVIDIA PTX).
 * A second target (a CPU one is planned) fills its own table instead of
 * editing the lowering. */
#ifndef CUTE_TARGET_H
#define CUTE_TARGET_H

#include "codegen.h"

typedef struct cute_target {
  const char *name;   /* "nvptx" */
  const char *triple; /* LLVM target triple */
  /* 1 if arch ("sm_80", ...) is a processor of this target */
  int (*arch_ok)(const char *arch);
  /* the target machine for g->arch, g->ptx, g->opt: the calling thread's own
     (cached per thread, never shared between threads at once); NULL with msg set */
  LLVMTargetMachineRef (*machine)(cg *g, char *msg, size_t cap);
  /* module-wide set-up after the data layout (module flags) */
  void (*module_setup)(cg *g);
  /* a kernel's ABI and annotations (calling convention, launch bounds) */
  void (*kernel_abi)(cg *g, LLVMValueRef fn, const ir_func *f);
  /* attributes every defined function gets (denormal mode, fast math) */
  void (*function_attrs)(cg *g, LLVMValueRef fn);
  /* link the target's libraries the module needs (libdevice); text: what
     was linked, appended to *log */
  int (*link_libraries)(cg *g, ir_buf *log, char *msg, size_t cap);
  /* passes that run before default<On> ("" or "a,b,") */
  const char *(*pre_passes)(cg *g);
  /* lower one op that gen_body leaves to the target (special registers,
     barriers, shuffles, atomics, math, asm...: the target's op table) */
  LLVMValueRef (*op)(cg *g, const cg_op *o);
  /* the ISA version an arch gets when none is asked for (0: none) */
  int (*default_version)(const char *arch);
  /* checks and settings from the module's content before the machine is
     made (NVPTX: grid_constant parameters need PTX 7.7); 0 or a CUTE_E_* */
  int (*prepare)(cg *g, char *msg, size_t cap);
  /* the LLVM type a kernel parameter of IR type t is passed as */
  LLVMTypeRef (*param_type)(cg *g, int32_t t);
  /* the emitted text, rewritten (NVPTX: parameter names from the IR);
     malloc'ed, NULL when out of memory */
  char *(*finish_text)(cg *g, const char *text);
} cute_target;

/* the targets (target.c: the list; one file per target) */
IR_HIDDEN extern const cute_target target_nvptx;
/* the target that emits arch (NULL: none) */
IR_HIDDEN const cute_target *target_for_arch(const char *arch);

/* the NVPTX target's parts in other files: its op table (nvptx_ops.c) and its
   kernel ABI (nvptx_abi.c): the LLVM type of a parameter, the byval /
   grid_constant attributes of kernel fi's bytes parameters, the PTX ISA
   version the IR's features need (77 with grid_constant parameters; 0: any),
   and the PTX with "<kernel>_param_<i>" renamed after the IR's parameter
   names (malloc'ed) */
IR_HIDDEN LLVMValueRef nvptx_op(cg *g, const cg_op *o);
IR_HIDDEN LLVMTypeRef nvptx_param_type(cg *g, int32_t t);
IR_HIDDEN void nvptx_kernel_params(cg *g, LLVMValueRef fn, int32_t fi);
IR_HIDDEN int nvptx_min_ptx(cute_ir *ir);
IR_HIDDEN char *nvptx_ptx_param_names(cute_ir *ir, const char *ptx);

#endif
