/*
 * codegen_body.c -- one function's body: IR instructions -> LLVM IR.  gen_body
 * is the table of contents: one line per target-neutral op calling its
 * lowering (structure and variables here; arithmetic, vectors, fragments,
 * plain memory in codegen_arith.c); every other op goes to the target's
 * cg_target_op (NVPTX: nvptx_ops.c).  Structured regions (if / for / while,
 * break / continue, early return) become basic blocks; line info comes from
 * the IR's loc records.  The compile driver is codegen_llvm.c.
 */
#include "codegen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int terminated(cg *g) {
  LLVMBasicBlockRef bb = LLVMGetInsertBlock(g->B);
  return LLVMGetBasicBlockTerminator(bb) != NULL;
}

/* after ret/break/continue: later instructions go into an unreachable block */
static void dead_block(cg *g) { LLVMPositionBuilderAtEnd(g->B, cg_newbb(g, "dead")); }

static void br(cg *g, LLVMBasicBlockRef to) {
  if (!terminated(g)) LLVMBuildBr(g->B, to);
}

/* ---- line info ------------------------------------------------------------------------------ */
/* A relative file name (a Lua chunk loaded as "spec/k.lua") is resolved against the
   working directory, so the PTX's .file names an absolute path that profilers and
   compute-sanitizer can open from anywhere; the disk cache's key has the working
   directory when lineinfo is on (cache.c).  Chunk names that are no file ("[string ...]",
   "=host", "?") stay as they are. */
LLVMMetadataRef cg_di_file(cg *g, const char *path_in) {
  /* PTX's .file takes a plain quoted string: a chunk named by its source text
     ([string "..."]) may hold quotes, backslashes and control characters */
  char path[1024];
  size_t pn = 0;
  for (const char *c = path_in; *c && pn + 1 < sizeof path; c++)
    path[pn++] = *c == '"' ? '\'' : *c == '\\' ? '/' : (unsigned char)*c < 32 ? ' ' : *c;
  path[pn] = 0;
  if (!path[0] || strchr("[=?", path[0])) return LLVMDIBuilderCreateFile(g->dib, path, pn, "", 0);
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  size_t dl = slash ? (size_t)(slash - path) : 0;
  char cwd[4096], dir[8192];
  if (path[0] != '/' && getcwd(cwd, sizeof cwd)) {
    int n = snprintf(dir, sizeof dir, "%s%s%.*s", cwd, slash ? "/" : "", (int)dl, path);
    if (n > 0 && (size_t)n < sizeof dir) return LLVMDIBuilderCreateFile(g->dib, name, strlen(name), dir, (size_t)n);
  }
  return LLVMDIBuilderCreateFile(g->dib, name, strlen(name), slash ? path : "", dl);
}

void cg_begin_debug_func(cg *g) {
  ir_func *f = g->f;
  int32_t file = 0, line = 0;
  for (int32_t r = 1; r < f->ninst && !file; r++)
    if (f->inst[r].file) { file = f->inst[r].file; line = f->inst[r].line; }
  LLVMMetadataRef df = file ? cg_di_file(g, ir_strget(g->ir, file)) : g->cu_file;
  LLVMMetadataRef sty = LLVMDIBuilderCreateSubroutineType(g->dib, df, NULL, 0, LLVMDIFlagZero);
  const char *nm = ir_strget(g->ir, f->name);
  g->sp = LLVMDIBuilderCreateFunction(g->dib, df, nm, strlen(nm), nm, strlen(nm), df, (unsigned)line, sty,
                                      f->kind != CUTE_FN_KERNEL, 1, (unsigned)line, LLVMDIFlagZero, 1);
  LLVMSetSubprogram(g->F, g->sp);
  memset(g->scope_of, 0, sizeof *g->scope_of * (size_t)g->ir->nstrs);
  if (file) g->scope_of[file] = g->sp;
}

static void set_debug_loc(cg *g, const ir_inst *in) {
  LLVMMetadataRef scope = g->sp;
  if (in->file && in->file < g->ir->nstrs) {
    if (!g->scope_of[in->file])
      g->scope_of[in->file] = LLVMDIBuilderCreateLexicalBlockFile(g->dib, g->sp, cg_di_file(g, ir_strget(g->ir, in->file)), 0);
    scope = g->scope_of[in->file];
  }
  LLVMSetCurrentDebugLocation2(g->B, LLVMDIBuilderCreateDebugLocation(g->C, in->file ? (unsigned)in->line : 0, 0, scope, NULL));
}

/* ---- loop metadata (unroll hints) --------------------------------------------------------- */
void cg_loop_md(cg *g, LLVMValueRef brinst, int64_t unroll) {
  if (!unroll) return;
  LLVMMetadataRef prop;
  if (unroll > 0) {
    LLVMMetadataRef ops[2] = {LLVMMDStringInContext2(g->C, "llvm.loop.unroll.count", 22),
                              LLVMValueAsMetadata(LLVMConstInt(g->ti32, (unsigned long long)unroll, 0))};
    prop = LLVMMDNodeInContext2(g->C, ops, 2);
  } else {
    const char *s = unroll == CUTE_UNROLL_FULL ? "llvm.loop.unroll.full" : "llvm.loop.unroll.disable";
    LLVMMetadataRef ms = LLVMMDStringInContext2(g->C, s, strlen(s));
    prop = LLVMMDNodeInContext2(g->C, &ms, 1);
  }
  LLVMMetadataRef tmp = LLVMTemporaryMDNode(g->C, NULL, 0);
  LLVMMetadataRef ops[2] = {tmp, prop};
  LLVMMetadataRef node = LLVMMDNodeInContext2(g->C, ops, 2);
  LLVMMetadataReplaceAllUsesWith(tmp, node);
  unsigned kind = LLVMGetMDKindIDInContext(g->C, "llvm.loop", 9);
  LLVMSetMetadata(brinst, kind, LLVMMetadataAsValue(g->C, node));
}

/* ---- structure -------------------------------------------------------------------------- */
static ctl *top_ctl(cg *g) { return g->ncs ? &g->cs[g->ncs - 1] : NULL; }

static LLVMValueRef lower_for(cg *g, const cg_op *o) {
  const int32_t *a = o->a;
  ctl c = {0};
  c.opener = o->r;
  c.op = IR_FOR;
  c.pre = LLVMGetInsertBlock(g->B);
  c.head = cg_newbb(g, "for.head");
  c.body = cg_newbb(g, "for.body");
  c.latch = cg_newbb(g, "for.latch");
  c.exitb = cg_newbb(g, "for.exit");
  br(g, c.head);
  LLVMPositionBuilderAtEnd(g->B, c.head);
  c.iv = LLVMBuildPhi(g->B, o->T, "i");
  LLVMValueRef lo = o->x;
  LLVMAddIncoming(c.iv, &lo, &c.pre, 1);
  /* iv < hi for a positive step, iv > hi for a negative one (signed types);
     a runtime step picks by its sign (0: no iteration; cute.range asserts it is not 0) */
  LLVMValueRef cond;
  if (a[2] < 0 || !o->sg) {
    int neg = a[2] < 0 && o->sg && g->f->cst[-a[2]].bits < 0;
    LLVMIntPredicate p = neg ? LLVMIntSGT : o->sg ? LLVMIntSLT : LLVMIntULT;
    cond = LLVMBuildICmp(g->B, p, c.iv, o->y, "");
  } else {
    LLVMValueRef st = cg_val(g, a[2]), zero = LLVMConstNull(o->T);
    LLVMValueRef up = LLVMBuildAnd(g->B, LLVMBuildICmp(g->B, LLVMIntSGT, st, zero, ""),
                                   LLVMBuildICmp(g->B, LLVMIntSLT, c.iv, o->y, ""), "");
    LLVMValueRef down = LLVMBuildAnd(g->B, LLVMBuildICmp(g->B, LLVMIntSLT, st, zero, ""),
                                     LLVMBuildICmp(g->B, LLVMIntSGT, c.iv, o->y, ""), "");
    cond = LLVMBuildOr(g->B, up, down, "");
  }
  LLVMBuildCondBr(g->B, cond, c.body, c.exitb);
  LLVMPositionBuilderAtEnd(g->B, c.body);
  g->cs[g->ncs++] = c;
  return c.iv;
}

static LLVMValueRef lower_if(cg *g, const cg_op *o) {
  ctl c = {0};
  c.opener = o->r;
  c.op = IR_IF;
  c.body = cg_newbb(g, "then");
  c.elseb = cg_newbb(g, "else");
  c.exitb = cg_newbb(g, "endif");
  LLVMBuildCondBr(g->B, o->x, c.body, c.elseb);
  LLVMPositionBuilderAtEnd(g->B, c.body);
  g->cs[g->ncs++] = c;
  return NULL;
}

static LLVMValueRef lower_else(cg *g, const cg_op *o) {
  ctl *top = top_ctl(g);
  top->then_end = LLVMGetInsertBlock(g->B);
  br(g, top->exitb);
  LLVMPositionBuilderAtEnd(g->B, top->elseb);
  top->elseb = NULL;
  return NULL;
}

static LLVMValueRef lower_while(cg *g, const cg_op *o) {
  ctl c = {0};
  c.opener = o->r;
  c.op = IR_WHILE;
  c.head = cg_newbb(g, "while.head");
  c.body = cg_newbb(g, "while.body");
  c.exitb = cg_newbb(g, "while.exit");
  br(g, c.head);
  LLVMPositionBuilderAtEnd(g->B, c.head);
  g->cs[g->ncs++] = c;
  return NULL;
}

static LLVMValueRef lower_do(cg *g, const cg_op *o) {
  ctl *top = top_ctl(g);
  LLVMBuildCondBr(g->B, o->x, top->body, top->exitb);
  LLVMPositionBuilderAtEnd(g->B, top->body);
  top->latch = top->head;
  return NULL;
}

/* the last instruction of a branch (else: elseb cleared) */
static LLVMValueRef lower_yield(cg *g, const cg_op *o) {
  ctl *top = top_ctl(g);
  if (!top->elseb) top->else_val = o->x;
  else top->then_val = o->x;
  return NULL;
}

static void end_for(cg *g, ctl *c) {
  ir_func *f = g->f;
  br(g, c->latch);
  LLVMPositionBuilderAtEnd(g->B, c->latch);
  /* iv + step must not wrap (a grid-stride loop near 2^31 - 1 would go on
     from a negative index): a step of +-1 cannot overflow past a bound that
     iv has not reached (nsw add); any other step leaves the loop on overflow */
  int32_t sref = ir_args(f, &f->inst[c->opener])[2];
  LLVMValueRef st = cg_val(g, sref), next, b;
  int sg = ir_is_signed(g->ir, f->inst[c->opener].type);
  int unit = sref < 0 && (f->cst[-sref].bits == 1 || (sg && f->cst[-sref].bits == -1));
  if (unit) {
    next = sg ? LLVMBuildNSWAdd(g->B, c->iv, st, "") : LLVMBuildNUWAdd(g->B, c->iv, st, "");
    LLVMAddIncoming(c->iv, &next, &c->latch, 1);
    b = LLVMBuildBr(g->B, c->head);
  } else {
    LLVMTypeRef IT = LLVMTypeOf(c->iv);
    LLVMValueRef ov = cg_intr(g, &f->inst[c->opener], sg ? "llvm.sadd.with.overflow" : "llvm.uadd.with.overflow",
                              &IT, 1, (LLVMValueRef[]){c->iv, st}, 2);
    if (!ov) return;
    next = LLVMBuildExtractValue(g->B, ov, 0, "");
    LLVMValueRef ovf = LLVMBuildExtractValue(g->B, ov, 1, "");
    LLVMAddIncoming(c->iv, &next, &c->latch, 1);
    b = LLVMBuildCondBr(g->B, ovf, c->exitb, c->head);
  }
  cg_loop_md(g, b, f->inst[c->opener].imm);
  LLVMPositionBuilderAtEnd(g->B, c->exitb);
}

static void end_if(cg *g, ctl *c) {
  LLVMBasicBlockRef last = LLVMGetInsertBlock(g->B);
  br(g, c->exitb);
  if (c->elseb) { /* no else branch */
    LLVMPositionBuilderAtEnd(g->B, c->elseb);
    LLVMBuildBr(g->B, c->exitb);
  }
  LLVMPositionBuilderAtEnd(g->B, c->exitb);
  ir_inst *o = &g->f->inst[c->opener];
  if (o->type != CUTE_T_VOID) {
    LLVMValueRef phi = LLVMBuildPhi(g->B, cg_type(g, o->type), "");
    LLVMValueRef vals[2] = {c->then_val, c->else_val};
    LLVMBasicBlockRef bbs[2] = {c->then_end, last};
    LLVMAddIncoming(phi, vals, bbs, 2);
    g->val[c->opener] = phi;
  }
}

static LLVMValueRef lower_end(cg *g, const cg_op *o) {
  ctl c = *top_ctl(g);
  g->ncs--;
  if (c.op == IR_FOR) end_for(g, &c);
  else if (c.op == IR_WHILE) { br(g, c.head); LLVMPositionBuilderAtEnd(g->B, c.exitb); }
  else end_if(g, &c);
  return NULL;
}

static LLVMValueRef lower_loop_exit(cg *g, const cg_op *o) {
  ctl *lp = NULL;
  for (int i = g->ncs - 1; i >= 0 && !lp; i--)
    if (g->cs[i].op != IR_IF) lp = &g->cs[i];
  br(g, o->in->op == IR_BREAK ? lp->exitb : lp->latch);
  dead_block(g);
  return NULL;
}

static LLVMValueRef lower_ret(cg *g, const cg_op *o) {
  if (!terminated(g)) {
    if (o->x) LLVMBuildRet(g->B, o->x);
    else LLVMBuildRetVoid(g->B);
  }
  dead_block(g);
  return NULL;
}

static LLVMValueRef lower_call(cg *g, const cg_op *o) {
  LLVMValueRef args[16];
  for (int i = 0; i < o->in->nargs; i++) args[i] = cg_val(g, o->a[i]);
  return LLVMBuildCall2(g->B, g->fnty[o->in->imm], g->fn[o->in->imm], args, o->in->nargs, "");
}

/* variables are entry-block allocas; SROA/mem2reg make them registers (O1+) */
static LLVMValueRef lower_var(cg *g, const cg_op *o) {
  LLVMValueRef v = cg_entry_alloca(g, o->T, cg_natural_align(g, o->in->type));
  if (o->x) LLVMBuildStore(g->B, o->x, v);
  return v;
}
static LLVMValueRef lower_vget(cg *g, const cg_op *o) { return LLVMBuildLoad2(g->B, o->T, o->x, ""); }
static LLVMValueRef lower_vset(cg *g, const cg_op *o) { LLVMBuildStore(g->B, o->y, o->x); return NULL; }

/* ---- the table of contents: one line per target-neutral op --------------------------------- */
static LLVMValueRef lower(cg *g, const cg_op *o) {
  switch (o->in->op) {
  case IR_FOR: return lower_for(g, o);
  case IR_IF: return lower_if(g, o);
  case IR_ELSE: return lower_else(g, o);
  case IR_WHILE: return lower_while(g, o);
  case IR_DO: return lower_do(g, o);
  case IR_YIELD: return lower_yield(g, o);
  case IR_END: return lower_end(g, o);
  case IR_BREAK: case IR_CONTINUE: return lower_loop_exit(g, o);
  case IR_RET: return lower_ret(g, o);
  case IR_CALL: return lower_call(g, o);
  case IR_VAR: return lower_var(g, o);
  case IR_VGET: return lower_vget(g, o);
  case IR_VSET: return lower_vset(g, o);
  case IR_ADD: return cg_op_add(g, o);
  case IR_SUB: return cg_op_sub(g, o);
  case IR_MUL: return cg_op_mul(g, o);
  case IR_DIV: case IR_REM: return cg_op_divrem(g, o);
  case IR_MIN: case IR_MAX: return cg_op_minmax(g, o);
  case IR_MULHI: return cg_op_mulhi(g, o);
  case IR_AND: case IR_OR: case IR_XOR: return cg_op_logic(g, o);
  case IR_SHL: case IR_SHR: return cg_op_shift(g, o);
  case IR_NEG: return cg_op_neg(g, o);
  case IR_NOT: return cg_op_not(g, o);
  case IR_ABS: return cg_op_abs(g, o);
  case IR_FMA: return cg_op_fma(g, o);
  case IR_EQ: case IR_NE: case IR_LT: case IR_LE: case IR_GT: case IR_GE: return cg_op_cmp(g, o);
  case IR_ISNAN: return cg_op_isnan(g, o);
  case IR_SELECT: return cg_op_select(g, o);
  case IR_BITCAST: return cg_op_bitcast(g, o);
  case IR_PTRCAST: return cg_op_ptrcast(g, o);
  case IR_POPC: case IR_CLZ: return cg_op_count_bits(g, o);
  case IR_BREV: return cg_op_brev(g, o);
  case IR_EXTRACT: return cg_op_extract(g, o);
  case IR_INSERT: return cg_op_insert(g, o);
  case IR_VEC: return cg_op_vec(g, o);
  case IR_LOAD: case IR_STORE: return cg_op_access(g, o);
  case IR_GEP: return cg_op_gep(g, o);
  default: return cg_target_op(g, o);
  }
}

/* ---- one function ----------------------------------------------------------------------- */
int cg_gen_body(cg *g) {
  ir_func *f = g->f;
  cute_ir *ir = g->ir;
  g->entry = cg_newbb(g, "entry");
  LLVMBasicBlockRef start = cg_newbb(g, "start");
  LLVMPositionBuilderAtEnd(g->B, start);
  for (int i = 1; i <= f->nparams; i++) g->val[i] = LLVMGetParam(g->F, (unsigned)(i - 1));
  for (int32_t r = f->nparams + 1; r < f->ninst && !g->failed; r++) {
    ir_inst *in = &f->inst[r];
    cg_op o = {r, in, ir_args(f, in), NULL, NULL, 0, 0, 0, cg_type(g, in->type)};
    o.x = in->nargs > 0 ? cg_val(g, o.a[0]) : NULL;
    o.y = in->nargs > 1 ? cg_val(g, o.a[1]) : NULL;
    o.t0 = in->nargs > 0 ? TY(o.a[0]) : 0;
    o.isf = ir_is_float(ir, o.t0);
    o.sg = ir_is_signed(ir, o.t0);
    if (g->dib) set_debug_loc(g, in);
    LLVMValueRef res = lower(g, &o);
    if (g->failed) return 1;
    if (in->type != CUTE_T_VOID && !res && in->op != IR_IF) {
      cg_fail(g, in, "%s produced no value", ir_ops[in->op].name);
      return 1;
    }
    g->val[r] = res ? res : g->val[r];
  }
  if (!terminated(g)) {
    if (f->ret == CUTE_T_VOID) LLVMBuildRetVoid(g->B);
    else LLVMBuildUnreachable(g->B);
  }
  LLVMPositionBuilderAtEnd(g->B, g->entry);
  LLVMBuildBr(g->B, start);
  return 0;
}
