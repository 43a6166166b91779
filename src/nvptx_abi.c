/* nvptx_abi.c -- the NVPTX kernel ABI beyond plain parameters: by-value
 * (bytes) parameters as byval + grid_constant, the PTX ISA version the IR's
 * features need, and PTX parameter names taken from the IR. */
#include "codegen.h"
#include "target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- kernel ABI: by-value parameters ------------------------------------------------ */
/* LLVM type of a parameter: a bytes<N,A> parameter is a byval pointer. */
LLVMTypeRef nvptx_param_type(cg *g, int32_t t) {
  return g->ir->types[t].kind == CUTE_T_BYTES ? g->tptr : cg_type(g, t);
}

/* byval([N x i8]) align A on every bytes parameter of kernel fi (PTX:
   .param .align A .b8 name[N]); the grid_constant ones are listed in one
   !nvvm.annotations "grid_constant" entry (1-based), so that their address is
   the parameter itself (cvta.param) rather than a local copy. */
void nvptx_kernel_params(cg *g, LLVMValueRef fn, int32_t fi) {
  ir_func *f = &g->ir->funcs[fi];
  LLVMMetadataRef idx[64];
  int nidx = 0;
  for (int i = 0; i < f->nparams && i < 64; i++) {
    ir_inst *p = &f->inst[i + 1];
    ir_type *ty = &g->ir->types[p->type];
    if (ty->kind != CUTE_T_BYTES) continue;
    unsigned kb = LLVMGetEnumAttributeKindForName("byval", 5), ka = LLVMGetEnumAttributeKindForName("align", 5);
    LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateTypeAttribute(g->C, kb, cg_type(g, p->type)));
    LLVMAddAttributeAtIndex(fn, (unsigned)i + 1, LLVMCreateEnumAttribute(g->C, ka, (uint64_t)ty->elem));
    if (p->imm2 & CUTE_P_GRID_CONSTANT) idx[nidx++] = LLVMValueAsMetadata(LLVMConstInt(g->ti32, (unsigned)i + 1, 0));
  }
  if (!nidx) return;
  LLVMMetadataRef ops[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(g->C, "grid_constant", 13),
                            LLVMMDNodeInContext2(g->C, idx, (size_t)nidx)};
  LLVMAddNamedMetadataOperand(g->M, "nvvm.annotations", LLVMMetadataAsValue(g->C, LLVMMDNodeInContext2(g->C, ops, 3)));
}

/* ---- PTX parameter names ---------------------------------------------------------------- */
static int ptx_idc(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}
static int valid_ident(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9') || strlen(s) > 64) return 0;
  for (; *s; s++)
    if (!ptx_idc(*s) || *s == '$') return 0;
  return 1;
}

/* The PTX with every kernel parameter named after its IR name: LLVM's
   "<kernel>_param_<i>" becomes "<kernel>_param_<name>" where the name is an
   identifier, unique among the kernel's parameters.  malloc'ed; NULL if out
   of memory. */
char *nvptx_ptx_param_names(cute_ir *ir, const char *ptx) {
  ir_buf b = {0};
  const char *p = ptx;
  while (*p) {
    const char *u = strstr(p, "_param_");
    if (!u) { ir_buf_puts(&b, p); break; }
    const char *st = u;
    while (st > p && ptx_idc(st[-1])) st--;
    const char *num = u + 7, *q = num;
    long idx = 0;
    while (*q >= '0' && *q <= '9' && idx < 100000) idx = idx * 10 + (*q++ - '0');
    const char *nm = NULL;
    if (q > num && !ptx_idc(*q) && (st == ptx || !ptx_idc(st[-1]))) {
      for (int32_t fi = 1; fi < ir->nfuncs && !nm; fi++) {
        ir_func *f = &ir->funcs[fi];
        const char *fn = ir_strget(ir, f->name);
        if (f->kind != CUTE_FN_KERNEL || strlen(fn) != (size_t)(u - st) || strncmp(fn, st, (size_t)(u - st)) ||
            idx >= f->nparams)
          continue;
        const char *cand = ir_strget(ir, (int32_t)f->inst[idx + 1].imm);
        int uniq = valid_ident(cand);
        for (int j = 1; j <= f->nparams && uniq; j++)
          if (j != idx + 1 && f->inst[j].imm == f->inst[idx + 1].imm) uniq = 0;
        if (uniq) nm = cand;
      }
    }
    if (nm) {
      ir_buf_put(&b, p, (size_t)(num - p));
      ir_buf_puts(&b, nm);
    } else {
      ir_buf_put(&b, p, (size_t)(q - p));
    }
    p = q;
  }
  if (b.oom) { free(b.p); return NULL; }
  if (!b.p) { b.p = malloc(1); if (b.p) b.p[0] = 0; }
  return b.p;
}

int nvptx_min_ptx(cute_ir *ir) {
  for (int32_t fi = 1; fi < ir->nfuncs; fi++)
    for (int i = 1; i <= ir->funcs[fi].nparams; i++)
      if (ir->funcs[fi].inst[i].imm2 & CUTE_P_GRID_CONSTANT) return 77;
  return 0;
}
