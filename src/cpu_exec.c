/* cpu_exec.c -- the CPU target's interpreter: preparing a kernel, running a
 * warp's structured control flow with active masks, barriers between the
 * warps of a block, the grid (docs/CPU_TARGET.md). */
#include "cpu.h"
#include "cpu_sm90.h"
#include "core.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE_OFF ((size_t)-1)

int cpu_fail(cpu_launch *L, const cpu_ins *in, const char *fmt, ...) {
  if (L->failed) return CUTE_E_CUDA;
  L->failed = 1;
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const ir_inst *ii = in ? &L->p->f->inst[in->ref] : NULL;
  const char *file = ii && ii->file ? ir_strget(L->p->ir, ii->file) : "?";
  return cute_err_setf(L->err, CUTE_E_CUDA, "cute (cpu target): kernel %s: %s at %s:%d (block (%u,%u,%u))",
                       L->p->name, what, file, ii ? ii->line : 0, L->ctaid[0], L->ctaid[1], L->ctaid[2]);
}

static int unsupported(cute_cpu_prog *p, int32_t r, cute_err *err) {
  const ir_inst *ii = &p->f->inst[r];
  const char *file = ii->file ? ir_strget(p->ir, ii->file) : "?";
  return cute_err_setf(err, CUTE_E_UNSUPPORTED,
                       "cute (cpu target): kernel %s: op %s at %s:%d is not supported on the CPU target yet",
                       p->name, ir_ops[ii->op].name, file, ii->line);
}

/* the scalar kind of a type's elements (vectors: their lane type; pointers: 0) */
static int elem_kind(const cute_ir *ir, int32_t t, int *nel) {
  *nel = 1;
  if (t <= 0 || t >= ir->ntypes) return 0;
  const ir_type *ty = &ir->types[t];
  if (ty->kind == CUTE_T_VEC) { *nel = ty->n; return ty->elem; }
  if (ty->kind == CUTE_T_ARR) { int en; int k = elem_kind(ir, ty->elem, &en); *nel = ty->n; return k; } /* fragments */
  if (t <= CUTE_T_F8E5M2) return t;
  return 0;
}

static int type_ok(const cute_ir *ir, int32_t t) {
  if (t <= 0 || t >= ir->ntypes) return 1; /* none */
  return ir->types[t].kind != CUTE_T_BYTES; /* by-value bytes: parameters and param.addr only */
}
static int is_bytes(const cute_ir *ir, int32_t t) { return t > 0 && t < ir->ntypes && ir->types[t].kind == CUTE_T_BYTES; }

static size_t align_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

static void prog_free(cute_cpu_prog *p) {
  if (!p) return;
  cpu_asm_free(p);
  for (int i = 0; i < p->ncallee; i++) prog_free(p->callee[i]);
  free(p->callee);
  free(p->ins); free(p->off); free(p->cbuf); free(p->cvp); free(p->out); free(p->taken); free(p->loc);
  free(p);
}
void cute_cpu_prog_free(cute_cpu_prog *p) { prog_free(p); }

int cute_cpu_prog_static_smem(const cute_cpu_prog *p) { return p ? (int)p->static_smem : 0; }
int cute_cpu_prog_nparams(const cute_cpu_prog *p) { return p ? p->nparams : 0; }
int cute_cpu_prog_dyn_smem(const cute_cpu_prog *p) { return p ? p->f->dynsmem : 0; }
uint64_t cute_cpu_prog_executed(const cute_cpu_prog *p) { return p ? p->executed : 0; }

/* the regions: jump targets of openers and markers, and each instruction's
   skip (the closer of its region); 0 or an error */
static int link_regions(cute_cpu_prog *p, cute_err *err) {
  int32_t stack[CPU_MAXDEPTH];
  int sp = 0;
  for (int32_t r = 1; r < p->n; r++) {
    cpu_ins *in = &p->ins[r];
    int op = in->op;
    if (op == IR_ELSE || op == IR_DO || op == IR_END) {
      if (sp == 0) return cute_err_setf(err, CUTE_E_VERIFY, "cute (cpu target): kernel %s: unbalanced regions", p->name);
      p->ins[stack[sp - 1]].jump = r; /* opener or marker -> this marker */
      if (op == IR_END) sp--;
      else stack[sp - 1] = r;
    }
    if (op == IR_IF || op == IR_FOR || op == IR_WHILE) {
      if (sp >= CPU_MAXDEPTH)
        return cute_err_setf(err, CUTE_E_UNSUPPORTED, "cute (cpu target): kernel %s: regions nest deeper than %d",
                             p->name, CPU_MAXDEPTH);
      stack[sp++] = r;
    }
  }
  /* the skip of every instruction: the marker that closes the region it is in
     (for markers: the region after them; END: the enclosing one) */
  sp = 0;
  for (int32_t r = 1; r < p->n; r++) {
    cpu_ins *in = &p->ins[r];
    int op = in->op;
    if (op == IR_END) sp--;
    if (op == IR_ELSE || op == IR_DO) { stack[sp - 1] = r; in->skip = in->jump; continue; }
    in->skip = sp > 0 ? p->ins[stack[sp - 1]].jump : p->n;
    if (op == IR_IF || op == IR_FOR || op == IR_WHILE) stack[sp++] = r;
  }
  return 0;
}

static int prog_build(struct cute_ir *ir, int32_t fi, int depth, cute_cpu_prog **out, cute_err *err);

/* call: the device function prepared as a program of its own (its parameters'
   slots are the caller's arguments'); 0 or an error */
static int prep_call(cute_cpu_prog *p, cpu_ins *in, cute_err *err) {
  cute_cpu_prog *c = NULL, **q;
  if (p->depth >= 16) return unsupported(p, in->ref, err); /* (recursion) */
  int rc = prog_build(p->ir, (int32_t)in->imm, p->depth + 1, &c, err);
  if (rc) return rc;
  if (c->static_smem || c->f->dynsmem) { prog_free(c); return unsupported(p, in->ref, err); }
  if (!(q = realloc(p->callee, sizeof *q * (size_t)(p->ncallee + 1)))) {
    prog_free(c);
    return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory");
  }
  p->callee = q;
  q[p->ncallee] = c;
  in->aux = p->ncallee++;
  return 0;
}

int cute_cpu_prog_new(struct cute_ir *ir, const char *name, cute_cpu_prog **out, cute_err *err) {
  if (out) *out = NULL;
  if (!ir || !out) return cute_err_setf(err, CUTE_E_ARG, "cute_cpu_prog_new: NULL argument");
  int32_t fi = 0;
  for (int32_t i = 1; i < ir->nfuncs && !fi; i++)
    if (ir->funcs[i].kind == CUTE_FN_KERNEL && (!name || !strcmp(ir_strget(ir, ir->funcs[i].name), name))) fi = i;
  if (!fi) return cute_err_setf(err, CUTE_E_ARG, "cute (cpu target): no kernel %s in the IR", name ? name : "");
  return prog_build(ir, fi, 0, out, err);
}

static int prog_build(struct cute_ir *ir, int32_t fi, int depth, cute_cpu_prog **out, cute_err *err) {
  cute_cpu_prog *p = calloc(1, sizeof *p);
  if (!p) return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory");
  p->ir = ir;
  p->depth = depth;
  p->f = &ir->funcs[fi];
  p->name = ir_strget(ir, p->f->name);
  p->n = p->f->ninst;
  p->ncst = p->f->ncst;
  p->nparams = p->f->nparams;
  p->ins = calloc((size_t)p->n + 1, sizeof *p->ins);
  p->off = calloc((size_t)p->n + 1, sizeof *p->off);
  p->cvp = calloc((size_t)p->ncst + 1, sizeof *p->cvp);
  if (!p->ins || !p->off || !p->cvp) { prog_free(p); return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory"); }
  int rc = 0;
  size_t boff = 0, soff = 0, loff = 0, dyn_al = 16;
  for (int32_t r = 1; r < p->n && !rc; r++) {
    const ir_inst *ii = &p->f->inst[r];
    cpu_ins *in = &p->ins[r];
    const int32_t *args = ir_args(p->f, ii);
    in->op = ii->op; in->ref = r; in->nargs = ii->nargs;
    in->imm = ii->imm; in->imm2 = ii->imm2;
    for (int k = 0; k < 3 && k < ii->nargs; k++) in->a[k] = args[k];
    int nel;
    in->sk = (uint8_t)elem_kind(ir, ii->type, &nel);
    in->nel = nel;
    in->size = ii->type > 0 && ii->type != CUTE_T_VOID ? ir_tsize(ir, ii->type) : 0;
    if (ii->nargs > 0) {
      int32_t at = ir_vtype(p->f, args[0]), an;
      in->ak = (uint8_t)elem_kind(ir, at, &an);
      in->asize = ir_tsize(ir, at);
      if (!type_ok(ir, at) && ii->op != IR_PARAMADDR) rc = unsupported(p, r, err);
    }
    if (ii->nargs > 1) {
      int bn;
      in->bk = (uint8_t)elem_kind(ir, ir_vtype(p->f, args[1]), &bn);
      in->bsize = ir_tsize(ir, ir_vtype(p->f, args[1]));
    }
    if (ii->op == IR_PARAM && is_bytes(ir, ii->type)) { /* by value: its slot holds its address */
      in->aux = 1;
      in->bsize = (int)ir_tsize(ir, ii->type); /* (the bytes param.addr may read: cpu_check.c) */
    }
    else if (!type_ok(ir, ii->type) || (ii->op == IR_PARAM && in->size > 8)) { rc = unsupported(p, r, err); break; }
    if (ii->op == IR_GEP || ii->op == IR_SHARED || ii->op == IR_LOCAL || ii->op == IR_DYNSHARED) {
      const ir_type *pt = &ir->types[ii->type];
      int es = ir_tsize(ir, pt->elem);
      if (ii->op == IR_GEP) in->aux = es;
      else if (ii->op == IR_SHARED) {
        size_t al = ii->imm2 > 0 ? (size_t)ii->imm2 : 16;
        soff = align_up(soff, al);
        in->aux = (int64_t)soff;
        soff += (size_t)es * (size_t)ii->imm;
      } else if (ii->op == IR_LOCAL) {
        size_t bytes = align_up((size_t)es * (size_t)ii->imm, 16);
        in->aux = (int64_t)loff;
        in->imm2 = (int64_t)bytes; /* a lane's stride */
        loff += bytes * CPU_LANES;
      }
    }
    if (ii->op == IR_DYNSHARED && ii->imm2 > 0 && (size_t)ii->imm2 > dyn_al) dyn_al = (size_t)ii->imm2; /* as the GPU's declaration */
    if (ii->op == IR_FOR && in->a[2] < 0) { /* a negative constant step counts down */
      const ir_const *c = &p->f->cst[-in->a[2]];
      in->aux = ir_scalar_class(c->type) == 1 && c->bits < 0;
    } else if (ii->op == IR_FOR && ir_scalar_class(ii->type) == 1)
      in->aux = 2; /* a runtime step of a signed loop: its sign picks < or > per lane (0: none) */
    if (ii->op == IR_ASM) rc = cpu_asm_prepare(p, in, err);
    else if (ii->op == IR_CALL) rc = prep_call(p, in, err);
    else if (ii->op != IR_PARAMADDR && !cpu_pure_ok(p, in) && !cpu_side_ok(p, in)) rc = unsupported(p, r, err);
    p->off[r] = NONE_OFF;
    if (in->size > 0 || ii->op == IR_FOR || ii->op == IR_VAR) {
      int sz = in->size > 0 ? in->size : 8;
      p->off[r] = boff;
      boff += align_up((size_t)sz * CPU_LANES, 64);
    }
  }
  if (rc) { prog_free(p); return rc; }
  p->static_smem = soff;
  p->dyn_off = align_up(soff, dyn_al);
  p->local_bytes = loff;
  p->bufbytes = boff + 64;
  /* constants, splatted */
  size_t cb = 0;
  for (int32_t k = 1; k < p->ncst; k++) cb += align_up((size_t)ir_tsize(ir, p->f->cst[k].type) * CPU_LANES + 1, 64);
  p->cbuf = aligned_alloc(64, align_up(cb + 64, 64));
  if (!p->cbuf) { prog_free(p); return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory"); }
  cb = 0;
  for (int32_t k = 1; k < p->ncst; k++) {
    const ir_const *c = &p->f->cst[k];
    int sz = ir_tsize(ir, c->type);
    uint8_t *s = p->cbuf + cb;
    for (int t = 0; t < CPU_LANES; t++) memcpy(s + (size_t)t * (size_t)sz, &c->bits, (size_t)(sz > 8 ? 8 : sz));
    p->cvp[k] = s;
    cb += align_up((size_t)sz * CPU_LANES + 1, 64);
  }
  rc = link_regions(p, err);
  if (rc) { prog_free(p); return rc; }
  cpu_check_prepare(p);
  *out = p;
  return 0;
}

const char *cute_cpu_take_output(cute_cpu_prog *p, size_t *len) {
  if (len) *len = 0;
  if (!p || !p->nout) return NULL;
  free(p->taken);
  p->taken = p->out;
  if (len) *len = p->nout;
  p->out = NULL; p->nout = p->capout = 0;
  return p->taken;
}

/* ---- one warp ------------------------------------------------------------------------- */

static inline int loop_dead(const cpu_warp *w, uint32_t *dead) {
  *dead = w->loop >= 0 ? (w->st[w->loop].brk | w->st[w->loop].cont) : 0;
  return 0;
}

/* iv < hi (or > when counting down) for the lanes of m, by the loop's type */
static uint32_t for_cond(const cpu_ins *in, const cpu_warp *w, uint32_t m) {
  const uint8_t *iv = w->vp[in->ref], *hi = w->vp[in->a[1]];
  uint32_t r = 0;
  const uint8_t *st = w->vp[in->a[2]];
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(m >> t & 1)) continue;
    int ok;
#define SIGNED_COND(T) do { T a = ((const T *)iv)[t], b = ((const T *)hi)[t], s = ((const T *)st)[t]; \
    int down = in->aux == 1 || (in->aux == 2 && s < 0); \
    ok = in->aux == 2 && s == 0 ? 0 : down ? a > b : a < b; } while (0)
    switch (in->sk) {
    case CUTE_T_I32: SIGNED_COND(int32_t); break;
    case CUTE_T_I64: SIGNED_COND(int64_t); break;
    case CUTE_T_U32: { uint32_t a = ((const uint32_t *)iv)[t], b = ((const uint32_t *)hi)[t]; ok = a < b; } break;
    case CUTE_T_U64: { uint64_t a = ((const uint64_t *)iv)[t], b = ((const uint64_t *)hi)[t]; ok = a < b; } break;
    case CUTE_T_I16: SIGNED_COND(int16_t); break;
    default: ok = 0;
    }
#undef SIGNED_COND
    r |= (uint32_t)ok << t;
  }
  return r;
}

/* iv += step on the lanes of m; returns the lanes whose add overflowed the
   loop's type (they leave the loop, as the GPU's add.with.overflow exit) */
static uint32_t for_step(const cpu_ins *in, cpu_warp *w, uint32_t m) {
  uint8_t *iv = w->vp[in->ref];
  const uint8_t *st = w->vp[in->a[2]];
  uint32_t ov = 0;
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(m >> t & 1)) continue;
    int o = 0;
    switch (in->sk) {
    case CUTE_T_I16: { int16_t *p = (int16_t *)iv + t; o = __builtin_add_overflow(*p, ((const int16_t *)st)[t], p); } break;
    case CUTE_T_I32: { int32_t *p = (int32_t *)iv + t; o = __builtin_add_overflow(*p, ((const int32_t *)st)[t], p); } break;
    case CUTE_T_I64: { int64_t *p = (int64_t *)iv + t; o = __builtin_add_overflow(*p, ((const int64_t *)st)[t], p); } break;
    case CUTE_T_U32: { uint32_t *p = (uint32_t *)iv + t; o = __builtin_add_overflow(*p, ((const uint32_t *)st)[t], p); } break;
    case CUTE_T_U64: { uint64_t *p = (uint64_t *)iv + t; o = __builtin_add_overflow(*p, ((const uint64_t *)st)[t], p); } break;
    default: break;
    }
    ov |= (uint32_t)o << t;
  }
  return ov;
}

static void copy_lanes(uint8_t *d, const uint8_t *s, int size, uint32_t m) {
  if (m == 0xffffffffu) { memcpy(d, s, (size_t)size * CPU_LANES); return; }
  for (int t = 0; t < CPU_LANES; t++)
    if (m >> t & 1) memcpy(d + (size_t)t * (size_t)size, s + (size_t)t * (size_t)size, (size_t)size);
}

/* leave the innermost frame: the lanes that entered it, less those that left
   the kernel (and, inside a loop, those that broke or continued) */
static void pop_frame(cpu_warp *w, uint32_t keep_loop_dead) {
  cpu_frame *fr = &w->st[--w->sp];
  w->loop = fr->loop;
  uint32_t dead = 0;
  if (keep_loop_dead) loop_dead(w, &dead);
  w->mask = fr->saved & ~w->exited & ~dead;
}

static int run_warp(cpu_launch *L, cpu_warp *w);

/* call: the device function runs for the caller's active lanes in a warp of
   its own (its value buffer, its local memory), its result copied back */
static int run_call(cpu_launch *L, const cpu_ins *in, cpu_warp *w) {
  cute_cpu_prog *c = L->p->callee[in->aux];
  const ir_inst *ii = &L->p->f->inst[in->ref];
  const int32_t *args = ir_args(L->p->f, ii);
  cpu_warp *cw = calloc(1, sizeof *cw);
  uint8_t **vp = calloc((size_t)c->n + (size_t)c->ncst + 1, sizeof *vp);
  uint8_t *buf = aligned_alloc(64, align_up(c->bufbytes, 64));
  uint8_t *local = c->local_bytes ? aligned_alloc(64, align_up(c->local_bytes, 64)) : NULL;
  int rc = 0;
  if (!cw || !vp || !buf || (c->local_bytes && !local)) { rc = cpu_fail(L, in, "out of memory"); goto out; }
  memset(buf, 0, c->bufbytes);
  for (int32_t k = 1; k < c->ncst; k++) vp[c->ncst - k] = c->cvp[k];
  cw->vp = vp + c->ncst;
  for (int32_t r = 1; r < c->n; r++) cw->vp[r] = c->off[r] == NONE_OFF ? NULL : buf + c->off[r];
  for (int j = 0; j < c->nparams; j++) cw->vp[j + 1] = w->vp[args[j]];
  cw->buf = buf; cw->local = local;
  cw->ret = in->size > 0 ? w->vp[in->ref] : NULL;
  cw->index = w->index; cw->all = w->all; cw->mask = w->mask;
  cw->pc = 1; cw->loop = -1; cw->state = CPU_RUN;
  memcpy(cw->tid, w->tid, sizeof cw->tid);
  cpu_launch L2 = *L;
  L2.p = c;
  rc = run_warp(&L2, cw);
  L->async = L2.async; L->failed = L2.failed;
  if (!rc && cw->state == CPU_WAIT) rc = cpu_fail(L, in, "a barrier inside device function %s is not supported on the CPU target yet", c->name);
  if (c->nout) { /* its printf text, in order */
    size_t need = L->p->nout + c->nout + 1;
    if (need > L->p->capout) {
      char *q = realloc(L->p->out, need * 2);
      if (!q) { L->p->oom = 1; goto out; }
      L->p->out = q; L->p->capout = need * 2;
    }
    memcpy(L->p->out + L->p->nout, c->out, c->nout + 1);
    L->p->nout += c->nout;
    c->nout = 0;
  }
  L->p->oom |= c->oom;
out:
  free(cw); free(vp); free(buf); free(local);
  return rc;
}

/* Run warp w until it waits at a barrier, finishes or fails. */
static int run_warp(cpu_launch *L, cpu_warp *w) {
  cute_cpu_prog *p = L->p;
  const cpu_ins *ins = p->ins;
  const int32_t n = p->n;
  uint64_t exec = 0;
  int rc = 0;
  while (w->pc < n) {
    const cpu_ins *in = &ins[w->pc];
    exec += (uint64_t)__builtin_popcount(w->mask);
    switch (in->op) {
    case IR_IF: {
      const uint8_t *c = w->vp[in->a[0]];
      uint32_t yes = 0;
      for (int t = 0; t < CPU_LANES; t++) yes |= (uint32_t)(c[t] & 1) << t;
      cpu_frame *fr = &w->st[w->sp++];
      fr->opener = w->pc; fr->loop = w->loop; fr->saved = w->mask;
      fr->other = w->mask & ~yes; fr->brk = fr->cont = 0;
      w->mask &= yes;
      w->pc = w->mask ? w->pc + 1 : in->jump;
      continue;
    }
    case IR_ELSE: {
      w->mask = w->st[w->sp - 1].other;
      w->pc = w->mask ? w->pc + 1 : in->jump;
      continue;
    }
    case IR_FOR: {
      copy_lanes(w->vp[in->ref], w->vp[in->a[0]], in->size, 0xffffffffu);
      cpu_frame *fr = &w->st[w->sp];
      fr->opener = w->pc; fr->loop = w->loop; fr->saved = w->mask; fr->brk = fr->cont = 0;
      fr->other = for_cond(in, w, w->mask);
      w->loop = w->sp++;
      w->mask = fr->other;
      if (w->mask) { w->pc++; continue; }
      pop_frame(w, 0);
      w->pc = in->jump + 1;
      break;
    }
    case IR_WHILE: {
      cpu_frame *fr = &w->st[w->sp];
      fr->opener = w->pc; fr->loop = w->loop; fr->saved = w->mask; fr->other = w->mask; fr->brk = fr->cont = 0;
      w->loop = w->sp++;
      w->pc++;
      continue;
    }
    case IR_DO: {
      cpu_frame *fr = &w->st[w->sp - 1];
      const uint8_t *c = w->vp[in->a[0]];
      uint32_t yes = 0;
      for (int t = 0; t < CPU_LANES; t++) yes |= (uint32_t)(c[t] & 1) << t;
      fr->other = w->mask & yes;
      w->mask = fr->other;
      if (w->mask) { w->pc++; continue; }
      pop_frame(w, 0);
      w->pc = in->jump + 1;
      break;
    }
    case IR_END: {
      cpu_frame *fr = &w->st[w->sp - 1];
      const cpu_ins *op = &ins[fr->opener];
      if (op->op == IR_IF) {
        pop_frame(w, 1);
        w->pc++;
        break;
      }
      fr->other &= ~fr->brk & ~w->exited;
      fr->cont = 0;
      if (op->op == IR_FOR) {
        uint32_t ov = for_step(op, w, fr->other);
        fr->other = for_cond(op, w, fr->other & ~ov);
      }
      if (fr->other) { w->mask = fr->other; w->pc = fr->opener + 1; continue; }
      pop_frame(w, 0);
      w->pc++;
      break;
    }
    case IR_YIELD: {
      const cpu_ins *op = &ins[w->st[w->sp - 1].opener];
      copy_lanes(w->vp[op->ref], w->vp[in->a[0]], op->size, w->mask);
      w->pc++;
      continue;
    }
    case IR_BREAK: w->st[w->loop].brk |= w->mask; w->mask = 0; break;
    case IR_CONTINUE: w->st[w->loop].cont |= w->mask; w->mask = 0; break;
    case IR_RET:
      if (in->nargs && w->ret) copy_lanes(w->ret, w->vp[in->a[0]], in->asize, w->mask);
      w->exited |= w->mask; w->mask = 0; break;
    case IR_VAR:
      if (in->nargs > 0) copy_lanes(w->vp[in->ref], w->vp[in->a[0]], in->size, w->mask);
      w->pc++;
      continue;
    case IR_VGET: copy_lanes(w->vp[in->ref], w->vp[in->a[0]], in->size, 0xffffffffu); w->pc++; continue;
    case IR_VSET: copy_lanes(w->vp[in->a[0]], w->vp[in->a[1]], ins[in->a[0]].size, w->mask); w->pc++; continue;
    case IR_PARAM: w->pc++; continue;
    case IR_CALL:
      rc = run_call(L, in, w);
      if (rc) { p->executed += exec; return rc; }
      w->pc++;
      continue;
    case IR_ASM: case IR_PARAMADDR: /* cpu_asm.c */
      rc = cpu_asm_exec(L, in, w);
      if (rc == CPU_SUSPEND) { p->executed += exec; return 0; } /* waits (cpu_sm90.c) */
      if (rc) { p->executed += exec; return rc; }
      w->pc++;
      continue;
    case IR_BAR:
      if ((rc = cpu_check_bar(L, in, w))) { p->executed += exec; return rc; }
      w->state = CPU_WAIT;
      w->bar_id = (int)in->imm;
      w->bar_count = (int)in->imm2;
      w->pc++;
      p->executed += exec;
      return 0;
    default:
      if (cpu_pure(p, in, w) == 0) { w->pc++; continue; }
      rc = cpu_side(L, in, w);
      if (rc) { p->executed += exec; return rc; }
      w->pc++;
      continue;
    }
    /* after a construct ends or a terminator: no lane left in this region? */
    while (w->mask == 0 && w->pc < n) {
      const cpu_ins *cur = &ins[w->pc];
      if (cur->op == IR_ELSE || cur->op == IR_END || cur->op == IR_DO) break; /* handled by the loop */
      w->pc = cur->skip;
    }
  }
  p->executed += exec;
  w->state = CPU_DONE;
  return 0;
}

/* ---- blocks and the grid ----------------------------------------------------------- */

static void warp_init(cpu_launch *L, cpu_warp *w, unsigned nthreads) {
  unsigned bx = L->block[0], by = L->block[1];
  w->pc = 1; w->sp = 0; w->loop = -1; w->exited = 0; w->state = CPU_RUN;
  uint32_t all = 0;
  for (int t = 0; t < CPU_LANES; t++) {
    unsigned lin = (unsigned)w->index * CPU_LANES + (unsigned)t;
    if (lin < nthreads) all |= 1u << t;
    w->tid[0][t] = lin % bx;
    w->tid[1][t] = lin / bx % by;
    w->tid[2][t] = lin / (bx * by);
  }
  w->all = w->mask = all;
}

/* release the warps waiting at barriers that are complete (arr: threads that
   arrived by bar.arrive, per barrier id); 0 when none was */
static int release(cpu_warp *ws, int nw, int *arr) {
  int live = 0, any = 0;
  for (int i = 0; i < nw; i++) live += ws[i].state != CPU_DONE;
  for (int i = 0; i < nw; i++) {
    if (ws[i].state != CPU_WAIT || ws[i].bar_id < 0) continue; /* (negative: cpu_sm90.c's waits) */
    int id = ws[i].bar_id, count = ws[i].bar_count, waiting = 0;
    for (int j = 0; j < nw; j++) waiting += ws[j].state == CPU_WAIT && ws[j].bar_id == id;
    if (count > 0 ? waiting * CPU_LANES + arr[id & 15] >= count : waiting == live) {
      int left = count > 0 ? (count - arr[id & 15] + CPU_LANES - 1) / CPU_LANES : waiting;
      if (count > 0) arr[id & 15] = 0;
      for (int j = 0; j < nw && left > 0; j++)
        if (ws[j].state == CPU_WAIT && ws[j].bar_id == id) { ws[j].state = CPU_RUN; left--; }
      any = 1;
    }
  }
  return any;
}

/* the CTAs of one cluster (L->sm90), their warps ws[rank * nw + i], run together */
static int run_cluster(cpu_launch *L, cpu_warp *ws, int nw, unsigned nthreads) {
  cpu_sm90 *S = L->sm90;
  int nb = S->nb;
  for (int b = 0; b < nb; b++) {
    cpu_sm90_enter(L, b);
    cpu_async_reset(L, 0);
    for (int i = 0; i < nw; i++) warp_init(L, &ws[b * nw + i], nthreads);
    cpu_check_block(L);
  }
  memset(S->bar_arrived, 0, sizeof *S->bar_arrived * 16 * (size_t)nb);
  memset(S->cl_arrived, 0, sizeof *S->cl_arrived * (size_t)(nb * nw));
  memset(S->cl_wait, 0, (size_t)(nb * nw));
  memset(S->timed_out, 0, (size_t)(nb * nw));
  S->stall = 0;
  for (;;) {
    int running = 0, progress = 0;
    for (int b = 0; b < nb; b++) {
      cpu_sm90_enter(L, b);
      for (int i = 0; i < nw; i++) {
        cpu_warp *w = &ws[b * nw + i];
        if (w->state != CPU_RUN) continue;
        running = 1;
        int32_t pc0 = w->pc;
        uint64_t e0 = L->p->executed;
        int rc = run_warp(L, w);
        if (rc) return rc;
        /* a wait retried in vain is no progress */
        if (!(w->state == CPU_WAIT && w->bar_id < 0 && w->pc == pc0 && L->p->executed - e0 <= CPU_LANES)) progress = 1;
      }
    }
    int done = 1;
    for (int i = 0; i < nb * nw; i++) done &= ws[i].state == CPU_DONE;
    if (done) return 0;
    for (int b = 0; b < nb; b++) {
      cpu_sm90_enter(L, b);
      int rc = cpu_check_release(L, ws + b * nw, nw), rel = rc ? 0 : release(ws + b * nw, nw, cpu_sm90_bar_arrivals(L, b));
      if (rc) return rc;
      if (rel && L->chk) cpu_check_epoch(L);
      progress |= rel;
    }
    int rc = cpu_sm90_wake(L, ws, progress);
    if (rc) return rc;
    int any = 0;
    for (int i = 0; i < nb * nw; i++) any |= ws[i].state == CPU_RUN;
    if (!any && !running) {
      char msg[256];
      int k = 0;
      const cpu_ins *at = NULL;
      for (int i = 0; i < nb * nw && k < 200; i++)
        if (ws[i].state == CPU_WAIT) {
          k += snprintf(msg + k, sizeof msg - (size_t)k, " warp %d at barrier %d;", i % nw, ws[i].bar_id);
          if (!at) { at = &L->p->ins[ws[i].pc - 1]; cpu_sm90_enter(L, i / nw); }
        }
      return cpu_fail(L, at, "a barrier that can never complete (some warps finished or wait elsewhere:%s)", msg);
    }
  }
}

int cute_cpu_launch(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                    unsigned smem, void *stream, void **params, cute_err *err) {
  return cute_cpu_launch_cluster(fn, gx, gy, gz, bx, by, bz, 1, 1, 1, smem, stream, params, err);
}

int cute_cpu_launch_cluster(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned cx, unsigned cy, unsigned cz, unsigned smem, void *stream, void **params,
                            cute_err *err) {
  (void)stream;
  cute_cpu_prog *p = fn;
  if (!p) return cute_err_setf(err, CUTE_E_ARG, "cute_cpu_launch: no program");
  unsigned long long nthreads = (unsigned long long)bx * by * bz;
  if (!gx || !gy || !gz || !nthreads || nthreads > 1024)
    return cute_err_setf(err, CUTE_E_ARG, "cute (cpu target): kernel %s: grid (%u,%u,%u), block (%u,%u,%u): "
                         "a block has 1 to 1024 threads", p->name, gx, gy, gz, bx, by, bz);
  unsigned long long ncta = (unsigned long long)cx * cy * cz;
  if (!ncta || ncta > 16 || gx % cx || gy % cy || gz % cz)
    return cute_err_setf(err, CUTE_E_ARG, "cute (cpu target): kernel %s: cluster (%u,%u,%u) with grid (%u,%u,%u): a "
                         "cluster has 1 to 16 CTAs and divides the grid", p->name, cx, cy, cz, gx, gy, gz);
  int nb = (int)ncta;
  cpu_launch L = { .p = p, .grid = { gx, gy, gz }, .block = { bx, by, bz }, .err = err };
  cpu_sm90 S = { .nb = nb, .cdim = { cx, cy, cz } };
  L.sm90 = &S;
  int nw = (int)((nthreads + CPU_LANES - 1) / CPU_LANES), nwc = nw * nb;
  S.nw = nw;
  size_t shbytes = p->dyn_off + smem + 16;
  S.stride = align_up(shbytes, 1024);
  cpu_warp *ws = calloc((size_t)nwc, sizeof *ws);
  uint8_t *bufs = aligned_alloc(64, align_up(p->bufbytes * (size_t)nwc, 64));
  uint8_t *locals = p->local_bytes ? aligned_alloc(64, align_up(p->local_bytes * (size_t)nwc, 64)) : NULL;
  uint8_t **vps = calloc((size_t)nwc * ((size_t)p->n + (size_t)p->ncst + 1), sizeof *vps);
  S.base = aligned_alloc(1024, S.stride * (size_t)nb);
  S.ctaid = calloc((size_t)nb, sizeof *S.ctaid);
  S.async = calloc((size_t)nb, sizeof *S.async);
  S.bar_arrived = calloc((size_t)nb * 16, sizeof *S.bar_arrived);
  S.cl_arrived = calloc((size_t)nwc, sizeof *S.cl_arrived);
  S.cl_wait = calloc((size_t)nwc, 1);
  S.timed_out = calloc((size_t)nwc, 1);
  L.pbuf = aligned_alloc(64, align_up((size_t)(p->nparams + 1) * 8 * CPU_LANES, 64));
  int rc = 0;
  if (!ws || !bufs || !vps || !S.base || !L.pbuf || (p->local_bytes && !locals) || !S.ctaid || !S.async ||
      !S.bar_arrived || !S.cl_arrived || !S.cl_wait || !S.timed_out) {
    rc = cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): kernel %s: out of memory", p->name);
    goto out;
  }
  L.smem = S.base;
  L.params = params;
  memset(bufs, 0, p->bufbytes * (size_t)nwc);
  /* the parameters, splatted */
  for (int j = 0; j < p->nparams; j++) {
    int sz = p->ins[j + 1].size;
    const void *src = params[j];
    if (p->ins[j + 1].aux) { src = &params[j]; sz = 8; } /* by-value bytes: their address (param.addr) */
    for (int t = 0; t < CPU_LANES; t++) memcpy(L.pbuf + (size_t)j * 8 * CPU_LANES + (size_t)t * (size_t)sz, src, (size_t)sz);
  }
  for (int i = 0; i < nwc; i++) {
    cpu_warp *w = &ws[i];
    w->index = i % nw;
    w->buf = bufs + p->bufbytes * (size_t)i;
    w->local = locals ? locals + p->local_bytes * (size_t)i : NULL;
    uint8_t **vp = vps + (size_t)i * ((size_t)p->n + (size_t)p->ncst + 1);
    for (int32_t k = 1; k < p->ncst; k++) vp[p->ncst - k] = p->cvp[k];
    w->vp = vp + p->ncst;
    for (int32_t r = 1; r < p->n; r++)
      w->vp[r] = p->off[r] == NONE_OFF ? NULL : w->buf + p->off[r];
    for (int j = 0; j < p->nparams; j++) w->vp[j + 1] = L.pbuf + (size_t)j * 8 * CPU_LANES;
  }
  memset(S.base, 0, S.stride * (size_t)nb);
  L.smem_size = p->dyn_off + smem;
  /* bounds checks: the current CTA's shared bytes (cpu_sm90_enter moves them); checking mode: one CTA a cluster */
  S.shbytes = smem ? p->dyn_off + smem : p->static_smem;
  if (p->check && nb > 1) {
    rc = cute_err_setf(err, CUTE_E_ARG, "cute (cpu target): kernel %s: the checking mode (check = true, CUTE_CHECK) "
                       "does not support clusters of %d CTAs yet (bounds checks still apply without it)", p->name, nb);
    goto out;
  }
  if ((rc = cpu_check_begin(&L, nw, S.shbytes))) goto out;
  for (unsigned z = 0; z < gz && !rc; z += cz)
    for (unsigned y = 0; y < gy && !rc; y += cy)
      for (unsigned x = 0; x < gx && !rc; x += cx) {
        S.cid[0] = x / cx; S.cid[1] = y / cy; S.cid[2] = z / cz;
        for (int r = 0; r < nb; r++) {
          S.ctaid[r][0] = x + (unsigned)r % cx;
          S.ctaid[r][1] = y + (unsigned)r / cx % cy;
          S.ctaid[r][2] = z + (unsigned)r / (cx * cy);
        }
        rc = run_cluster(&L, ws, nw, (unsigned)nthreads);
      }
  if (!rc && p->oom) rc = cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): kernel %s: out of memory for printf output", p->name);
out:
  if (S.async) {
    S.async[S.cur] = L.async;
    for (int r = 0; r < nb; r++) { L.async = S.async[r]; cpu_async_reset(&L, 1); }
  } else cpu_async_reset(&L, 1);
  cpu_check_end(&L);
  free(ws); free(bufs); free(locals); free(vps); free(S.base); free(L.pbuf);
  free(S.ctaid); free(S.async); free(S.bar_arrived); free(S.cl_arrived); free(S.cl_wait); free(S.timed_out);
  return rc;
}
