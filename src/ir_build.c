/* ir_build.c -- the builder: functions and their parameters, instructions
 * (ir_emit: operand refs, inferred result type, the per-op checks of
 * ir_check.c, region nesting) and the typed entry points of include/cute_ir.h. */
#include "ir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- functions -------------------------------------------------------------------------- */
int32_t cute_ir_func(cute_ir *ir, const char *name, int kind, int32_t ret) {
  if (!ir || ir->err_code) return 0;
  if (!name || !*name) { ir_fail(ir, CUTE_E_ARG, "func: empty name"); return 0; }
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '$') || (p == name && *p >= '0' && *p <= '9')) {
      ir_fail(ir, CUTE_E_ARG, "func: bad name '%s' (letters, digits, _ and $; not starting with a digit)", name);
      return 0;
    }
  if (kind != CUTE_FN_KERNEL && kind != CUTE_FN_DEVICE) {
    ir_fail(ir, CUTE_E_ARG, "func %s: bad kind %d", name, kind);
    return 0;
  }
  if (ret == 0) ret = CUTE_T_VOID;
  if (!ir_type_valid(ir, ret) || (kind == CUTE_FN_KERNEL && ret != CUTE_T_VOID) ||
      ir->types[ret].kind == CUTE_T_ARR || ir->types[ret].kind == CUTE_T_BYTES) {
    ir_fail(ir, CUTE_E_ARG, "func %s: bad return type (kernels return void; functions return scalars, vectors or pointers)", name);
    return 0;
  }
  for (int32_t i = 1; i < ir->nfuncs; i++)
    if (!strcmp(ir_strget(ir, ir->funcs[i].name), name)) {
      ir_fail(ir, CUTE_E_ARG, "func: '%s' is already defined", name);
      return 0;
    }
  if (ir->nfuncs >= ir->capfuncs) {
    int32_t nc = ir->capfuncs * 2;
    ir_func *p = realloc(ir->funcs, sizeof *p * (size_t)nc);
    if (!p) { ir_fail(ir, CUTE_E_NOMEM, "out of memory"); return 0; }
    ir->funcs = p;
    ir->capfuncs = nc;
  }
  ir_func *f = &ir->funcs[ir->nfuncs];
  memset(f, 0, sizeof *f);
  f->name = ir_str(ir, name, strlen(name));
  f->kind = kind;
  f->ret = ret;
  f->ninst = 1;
  f->ncst = 1;
  ir->cur = ir->nfuncs;
  return ir->nfuncs++;
}

int cute_ir_func_select(cute_ir *ir, int32_t fn) {
  if (!ir) return CUTE_E_STATE;
  if (ir->err_code) return ir->err_code;
  if (fn <= 0 || fn >= ir->nfuncs) return ir_fail(ir, CUTE_E_ARG, "func_select: no function %d", fn);
  ir->cur = fn;
  return 0;
}
int32_t cute_ir_func_count(cute_ir *ir) { return ir ? ir->nfuncs - 1 : 0; }
const char *cute_ir_func_name(cute_ir *ir, int32_t fn) {
  return ir && fn > 0 && fn < ir->nfuncs ? ir_strget(ir, ir->funcs[fn].name) : NULL;
}

int32_t cute_ir_param(cute_ir *ir, int32_t type, const char *name, int flags, int align) {
  if (!ir || ir->err_code) return 0;
  ir_func *f = ir_curf(ir);
  if (!f) { ir_fail(ir, CUTE_E_STATE, "param: no current function"); return 0; }
  if (f->ninst != f->nparams + 1) {
    ir_fail(ir, CUTE_E_STATE, "param: parameters must come before the first instruction of %s",
            ir_strget(ir, f->name));
    return 0;
  }
  if (!ir_type_valid(ir, type) || type == CUTE_T_VOID) {
    ir_fail(ir, CUTE_E_ARG, "param %d of %s: bad type", f->nparams, ir_strget(ir, f->name));
    return 0;
  }
  int kind = ir->types[type].kind;
  if (kind == CUTE_T_ARR) {
    ir_fail(ir, CUTE_E_ARG, "param %d (%s) of %s: a fragment type %s cannot be a parameter", f->nparams,
            name ? name : "", ir_strget(ir, f->name), ir_type_str(ir, type));
    return 0;
  }
  if (kind == CUTE_T_BYTES && f->kind != CUTE_FN_KERNEL) {
    ir_fail(ir, CUTE_E_ARG, "param %d (%s) of %s: bytes parameters are for kernels only", f->nparams,
            name ? name : "", ir_strget(ir, f->name));
    return 0;
  }
  if ((flags & ~7) || align < 0 || (align & (align - 1)) || align > 4096 ||
      (((flags & 3) || align) && kind != CUTE_T_PTR) || ((flags & CUTE_P_GRID_CONSTANT) && kind != CUTE_T_BYTES)) {
    ir_fail(ir, CUTE_E_ARG, "param %d (%s) of %s: noalias/readonly/align need a pointer, align a power of two, "
            "grid_constant a bytes type", f->nparams, name ? name : "", ir_strget(ir, f->name));
    return 0;
  }
  int32_t nm = name && *name ? ir_str(ir, name, strlen(name)) : 0;
  int32_t r = ir_emit(ir, IR_PARAM, type, 0, NULL, nm, (int64_t)flags | ((int64_t)align << 8));
  if (r) f->nparams++;
  return r;
}

int cute_ir_launch_bounds(cute_ir *ir, int max_threads, int min_blocks) {
  if (!ir) return CUTE_E_STATE;
  if (ir->err_code) return ir->err_code;
  ir_func *f = ir_curf(ir);
  if (!f || f->kind != CUTE_FN_KERNEL)
    return ir_fail(ir, CUTE_E_STATE, "launch_bounds: the current function is not a kernel");
  if (max_threads < 0 || max_threads > 1024 || min_blocks < 0 || min_blocks > 64)
    return ir_fail(ir, CUTE_E_ARG, "launch_bounds(%d, %d): out of range (max threads 1..1024)",
                   max_threads, min_blocks);
  f->maxntid = max_threads;
  f->minctasm = min_blocks;
  return 0;
}

int cute_ir_dyn_smem(cute_ir *ir, int bytes) {
  if (!ir) return CUTE_E_STATE;
  if (ir->err_code) return ir->err_code;
  ir_func *f = ir_curf(ir);
  if (!f || f->kind != CUTE_FN_KERNEL)
    return ir_fail(ir, CUTE_E_STATE, "dyn_smem: the current function is not a kernel");
  if (bytes < 0 || bytes > 256 * 1024)
    return ir_fail(ir, CUTE_E_ARG, "dyn_smem(%d): out of range (0..262144)", bytes);
  f->dynsmem = bytes;
  return 0;
}

int32_t ir_emit(cute_ir *ir, int op, int32_t type, int nargs, const int32_t *args, int64_t imm,
                int64_t imm2) {
  if (!ir || ir->err_code) return 0;
  ir_func *f = ir_curf(ir);
  char lb[256];
#define LB() (ir->loc_file ? (snprintf(lb, sizeof lb, "%s:%d: ", ir_strget(ir, ir->loc_file), ir->loc_line), lb) : "")
  if (op < 0 || op >= IR_NOPS) { ir_fail(ir, CUTE_E_ARG, "%sop: bad opcode %d", LB(), op); return 0; }
  const ir_opinfo *oi = &ir_ops[op];
  if (!f) { ir_fail(ir, CUTE_E_STATE, "%s%s: no current function", LB(), oi->name); return 0; }
  if (nargs < oi->min_args || nargs > oi->max_args || (nargs && !args)) {
    ir_fail(ir, CUTE_E_ARG, "%s%s: takes %d..%d operands, got %d", LB(), oi->name, oi->min_args,
            oi->max_args, nargs);
    return 0;
  }
  for (int i = 0; i < nargs; i++) {
    int32_t a = args[i];
    if (a == 0 || a >= f->ninst || -a >= f->ncst) {
      ir_fail(ir, CUTE_E_ARG, "%s%s: operand %d is not a value of function %s (ref %d)", LB(),
              oi->name, i + 1, ir_strget(ir, f->name), a);
      return 0;
    }
  }
  if (op == IR_PARAM && f->ninst != f->nparams + 1) {
    ir_fail(ir, CUTE_E_STATE, "%sparam: after the first instruction", LB());
    return 0;
  }
  if (type == 0) {
    type = ir_infer_type(ir, f, op, nargs, args, imm, imm2);
    if (ir->err_code) return 0;
  }
  if (!ir_type_valid(ir, type)) {
    ir_fail(ir, CUTE_E_ARG, "%s%s: bad result type %d", LB(), oi->name, type);
    return 0;
  }
  if (f->ninst >= f->capinst) {
    int32_t nc = f->capinst ? f->capinst * 2 : 64;
    ir_inst *p = realloc(f->inst, sizeof *p * (size_t)nc);
    if (!p) { ir_fail(ir, CUTE_E_NOMEM, "out of memory"); return 0; }
    f->inst = p;
    f->capinst = nc;
  }
  if (f->npool + nargs > f->cappool) {
    int32_t nc = f->cappool ? f->cappool * 2 : 128;
    while (nc < f->npool + nargs) nc *= 2;
    int32_t *p = realloc(f->pool, sizeof *p * (size_t)nc);
    if (!p) { ir_fail(ir, CUTE_E_NOMEM, "out of memory"); return 0; }
    f->pool = p;
    f->cappool = nc;
  }
  int32_t ref = f->ninst;
  ir_inst *in = &f->inst[ref];
  memset(in, 0, sizeof *in);
  in->op = (uint16_t)op;
  in->nargs = (uint16_t)nargs;
  in->type = type;
  in->args = f->npool;
  in->region = f->scope.n ? f->scope.s[f->scope.n - 1].cur : 0;
  in->file = ir->loc_file;
  in->line = ir->loc_line;
  in->imm = imm;
  in->imm2 = imm2;
  if (nargs) memcpy(f->pool + f->npool, args, sizeof *args * (size_t)nargs);
  f->ninst++;
  f->npool += nargs;
  char msg[768];
  if (ir->checks && ir_check_inst(ir, f, ref, &f->scope, msg, sizeof msg)) {
    f->ninst--;
    f->npool -= nargs;
    ir_fail(ir, CUTE_E_VERIFY, "%s%s", LB(), msg);
    return 0;
  }
  if (ir_scope_step(ir, f, ref, &f->scope, msg, sizeof msg)) {
    f->ninst--;
    f->npool -= nargs;
    ir_fail(ir, CUTE_E_VERIFY, "%s%s", LB(), msg);
    return 0;
  }
  return ref;
#undef LB
}

int32_t cute_ir_op(cute_ir *ir, int op, int32_t type, int nargs, const int32_t *args, int64_t imm,
                   int64_t imm2) {
  if (op == IR_PARAM) {
    if (ir) ir_fail(ir, CUTE_E_ARG, "op: use cute_ir_param for parameters");
    return 0;
  }
  return ir_emit(ir, op, type, nargs, args, imm, imm2);
}
int32_t cute_ir_op1(cute_ir *ir, int op, int32_t a) { return cute_ir_op(ir, op, 0, 1, &a, 0, 0); }
int32_t cute_ir_op2(cute_ir *ir, int op, int32_t a, int32_t b) {
  int32_t v[2] = {a, b};
  return cute_ir_op(ir, op, 0, 2, v, 0, 0);
}
int32_t cute_ir_op3(cute_ir *ir, int op, int32_t a, int32_t b, int32_t c) {
  int32_t v[3] = {a, b, c};
  return cute_ir_op(ir, op, 0, 3, v, 0, 0);
}
int32_t cute_ir_cvt(cute_ir *ir, int32_t type, int32_t a, int rnd) {
  return ir_emit(ir, IR_CVT, type ? type : -1, 1, &a, rnd, 0);
}
int32_t cute_ir_load(cute_ir *ir, int32_t ptr, int hint, int align) {
  return ir_emit(ir, IR_LOAD, 0, 1, &ptr, hint, align);
}
int32_t cute_ir_store(cute_ir *ir, int32_t ptr, int32_t val, int hint, int align) {
  int32_t v[2] = {ptr, val};
  return ir_emit(ir, IR_STORE, CUTE_T_VOID, 2, v, hint, align);
}
int32_t cute_ir_gep(cute_ir *ir, int32_t ptr, int32_t index) {
  int32_t v[2] = {ptr, index};
  return ir_emit(ir, IR_GEP, 0, 2, v, 0, 0);
}
int32_t cute_ir_sreg(cute_ir *ir, int reg) { return ir_emit(ir, IR_SREG, 0, 0, NULL, reg, 0); }
int32_t cute_ir_math(cute_ir *ir, int op, int32_t a, int fast) {
  return ir_emit(ir, op, 0, 1, &a, fast, 0);
}
int32_t cute_ir_var(cute_ir *ir, int32_t type, int32_t init) {
  if (!type && ir && !ir->err_code && init) { ir_func *f = ir_curf(ir); if (f) type = ir_vtype(f, init); }
  return ir_emit(ir, IR_VAR, type ? type : -1, init ? 1 : 0, &init, 0, 0);
}
int32_t cute_ir_vget(cute_ir *ir, int32_t var) { return ir_emit(ir, IR_VGET, 0, 1, &var, 0, 0); }
int32_t cute_ir_vset(cute_ir *ir, int32_t var, int32_t val) {
  int32_t v[2] = {var, val};
  return ir_emit(ir, IR_VSET, CUTE_T_VOID, 2, v, 0, 0);
}
int32_t cute_ir_shared(cute_ir *ir, int32_t elem, int64_t count, int align) {
  if (!ir || ir->err_code) return 0;
  int32_t pt = cute_ir_t_ptr(ir, elem, CUTE_AS_SHARED);
  return pt ? ir_emit(ir, IR_SHARED, pt, 0, NULL, count, align) : 0;
}
int32_t cute_ir_dyn_shared(cute_ir *ir, int32_t elem, int align) {
  if (!ir || ir->err_code) return 0;
  int32_t pt = cute_ir_t_ptr(ir, elem, CUTE_AS_SHARED);
  return pt ? ir_emit(ir, IR_DYNSHARED, pt, 0, NULL, 0, align) : 0;
}
int32_t cute_ir_local(cute_ir *ir, int32_t elem, int64_t count, int align) {
  if (!ir || ir->err_code) return 0;
  int32_t pt = cute_ir_t_ptr(ir, elem, CUTE_AS_LOCAL);
  return pt ? ir_emit(ir, IR_LOCAL, pt, 0, NULL, count, align) : 0;
}
int32_t cute_ir_barrier(cute_ir *ir, int id, int nthreads) {
  return ir_emit(ir, IR_BAR, CUTE_T_VOID, 0, NULL, id, nthreads);
}
int32_t cute_ir_fence(cute_ir *ir, int scope) {
  return ir_emit(ir, IR_FENCE, CUTE_T_VOID, 0, NULL, scope, 0);
}
int32_t cute_ir_shfl(cute_ir *ir, int mode, int32_t val, int32_t lane, int32_t mask, int width) {
  int32_t v[3] = {val, lane, mask};
  return ir_emit(ir, IR_SHFL, 0, 3, v, mode, width ? width : 32);
}
int32_t cute_ir_vote(cute_ir *ir, int mode, int32_t mask, int32_t pred) {
  int32_t v[2] = {mask, pred};
  return ir_emit(ir, IR_VOTE, 0, 2, v, mode, 0);
}
int32_t cute_ir_atom(cute_ir *ir, int aop, int32_t ptr, int32_t val, int scope) {
  int32_t v[2] = {ptr, val};
  return ir_emit(ir, IR_ATOM, 0, 2, v, aop, scope);
}
int32_t cute_ir_cas(cute_ir *ir, int32_t ptr, int32_t cmp, int32_t val, int scope) {
  int32_t v[3] = {ptr, cmp, val};
  return ir_emit(ir, IR_CAS, 0, 3, v, scope, 0);
}
int32_t cute_ir_call(cute_ir *ir, int32_t fn, int nargs, const int32_t *args) {
  if (!ir || ir->err_code) return 0;
  if (fn <= 0 || fn >= ir->nfuncs) { ir_fail(ir, CUTE_E_ARG, "call: no function %d", fn); return 0; }
  return ir_emit(ir, IR_CALL, ir->funcs[fn].ret, nargs, args, fn, 0);
}
int32_t cute_ir_printf(cute_ir *ir, const char *fmt, int nargs, const int32_t *args) {
  if (!ir || ir->err_code) return 0;
  int32_t s = ir_str(ir, fmt ? fmt : "", fmt ? strlen(fmt) : 0);
  return ir_emit(ir, IR_PRINTF, CUTE_T_VOID, nargs, args, s, 0);
}
int32_t cute_ir_assert(cute_ir *ir, int32_t cond, const char *msg) {
  if (!ir || ir->err_code) return 0;
  int32_t s = ir_str(ir, msg ? msg : "", msg ? strlen(msg) : 0);
  return ir_emit(ir, IR_ASSERT, CUTE_T_VOID, 1, &cond, s, 0);
}
int32_t cute_ir_asm(cute_ir *ir, int32_t type, const char *ptx, const char *constraints, int nargs,
                    const int32_t *args) {
  if (!ir || ir->err_code) return 0;
  int32_t s = ir_str(ir, ptx ? ptx : "", ptx ? strlen(ptx) : 0);
  int32_t c = ir_str(ir, constraints ? constraints : "", constraints ? strlen(constraints) : 0);
  return ir_emit(ir, IR_ASM, type ? type : CUTE_T_VOID, nargs, args, s, c);
}
int32_t cute_ir_for(cute_ir *ir, int32_t lo, int32_t hi, int32_t step, int unroll) {
  int32_t v[3] = {lo, hi, step};
  return ir_emit(ir, IR_FOR, 0, 3, v, unroll, 0);
}
int32_t cute_ir_if(cute_ir *ir, int32_t cond, int32_t type) {
  return ir_emit(ir, IR_IF, type ? type : CUTE_T_VOID, 1, &cond, 0, 0);
}
int32_t cute_ir_else(cute_ir *ir) { return ir_emit(ir, IR_ELSE, CUTE_T_VOID, 0, NULL, 0, 0); }
int32_t cute_ir_while(cute_ir *ir) { return ir_emit(ir, IR_WHILE, CUTE_T_VOID, 0, NULL, 0, 0); }
int32_t cute_ir_do(cute_ir *ir, int32_t cond) { return ir_emit(ir, IR_DO, CUTE_T_VOID, 1, &cond, 0, 0); }
int32_t cute_ir_yield(cute_ir *ir, int32_t val) { return ir_emit(ir, IR_YIELD, CUTE_T_VOID, 1, &val, 0, 0); }
int32_t cute_ir_end(cute_ir *ir) { return ir_emit(ir, IR_END, CUTE_T_VOID, 0, NULL, 0, 0); }
int32_t cute_ir_ret(cute_ir *ir, int32_t val) {
  return ir_emit(ir, IR_RET, CUTE_T_VOID, val ? 1 : 0, &val, 0, 0);
}

