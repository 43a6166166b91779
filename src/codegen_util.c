/* codegen_util.c -- helpers shared by the lowering files: blocks, entry-block
 * allocas, natural alignment and inline PTX calls. */
#include "codegen.h"

#include <stdlib.h>
#include <string.h>

LLVMBasicBlockRef cg_newbb(cg *g, const char *name) { return LLVMAppendBasicBlockInContext(g->C, g->F, name); }

LLVMValueRef cg_entry_alloca(cg *g, LLVMTypeRef t, int align) {
  LLVMBuilderRef b = LLVMCreateBuilderInContext(g->C);
  LLVMValueRef first = LLVMGetFirstInstruction(g->entry);
  if (first) LLVMPositionBuilderBefore(b, first);
  else LLVMPositionBuilderAtEnd(b, g->entry);
  LLVMValueRef a = LLVMBuildAlloca(b, t, "");
  if (align) LLVMSetAlignment(a, (unsigned)align);
  LLVMDisposeBuilder(b);
  return a;
}

int cg_natural_align(cg *g, int32_t t) {
  int s = ir_tsize(g->ir, t);
  return s > 16 ? 16 : s < 1 ? 1 : s;
}


static void add_call_attr(cg *g, LLVMValueRef call, const char *name) {
  unsigned k = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(g->C, k, 0));
}

LLVMValueRef cg_iasm(cg *g, LLVMTypeRef ret, const char *tmpl, const char *cons, LLVMValueRef *args,
                     int nargs, int side) {
  LLVMTypeRef at0[20], *at = nargs > 20 ? malloc(sizeof *at * (size_t)nargs) : at0;
  if (!at) { cg_fail(g, NULL, "out of memory"); return NULL; }
  for (int i = 0; i < nargs; i++) at[i] = LLVMTypeOf(args[i]);
  LLVMTypeRef fty = LLVMFunctionType(ret, at, (unsigned)nargs, 0);
  if (at != at0) free(at);
  LLVMValueRef ia = LLVMGetInlineAsm(fty, tmpl, strlen(tmpl), cons, strlen(cons), side, 0,
                                     LLVMInlineAsmDialectATT, 0);
  LLVMValueRef call = LLVMBuildCall2(g->B, fty, ia, args, (unsigned)nargs, "");
  if (side) add_call_attr(g, call, "convergent");
  return call;
}
