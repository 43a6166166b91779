/* ir_print.c -- the IR's stable text form (read back by ir_parse.c).
 *
 *   kernel @name(%1: ptr.global.f32 noalias readonly align=16 "a", %2: i32) maxntid=256 {
 *     loc "file.lua" 3
 *     %3 = sreg u32 reg=tid.x
 *     %4 = add u32 %3, 1:u32
 *     for ... {  /  if %c {  } else {  }  /  while {  } do %c {  }
 *     ret
 *   }
 *
 * Values print as %ref (refs are stable), constants inline as value:type.
 * Immediates print as key=value after the operands when not zero (enumerated
 * ones whose zero has a name always print).  A loc line precedes every
 * instruction whose source location differs from the previous one.
 */
#include "ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_type(cute_ir *ir, ir_buf *b, int32_t t) {
  char tb[160];
  ir_type_fmt(ir, t, tb, sizeof tb);
  ir_buf_puts(b, tb);
}

static void put_operand(cute_ir *ir, ir_func *f, ir_buf *b, int32_t r) {
  if (r > 0) { ir_buf_printf(b, "%%%d", r); return; }
  if (r == 0 || -r >= f->ncst) { ir_buf_puts(b, "?"); return; }
  ir_const *c = &f->cst[-r];
  int cls = ir_scalar_class(c->type);
  if (cls == 3) {
    double d = ir_const_as_double(c->type, c->bits);
    if (isfinite(d)) {
      char tmp[64];
      snprintf(tmp, sizeof tmp, c->type == CUTE_T_F64 ? "%.17g" : "%.9g", d);
      /* make sure it reads back as a float literal, not as an integer */
      ir_buf_puts(b, tmp);
      if (!strpbrk(tmp, ".eni")) ir_buf_puts(b, ".0");
    } else {
      int bits = ir_bits(c->type);
      ir_buf_printf(b, "0x%0*llx", bits / 4,
                    (unsigned long long)c->bits & (bits == 64 ? ~0ull : ((1ull << bits) - 1)));
    }
  } else if (c->type == CUTE_T_U64) {
    ir_buf_printf(b, "%llu", (unsigned long long)c->bits);
  } else {
    ir_buf_printf(b, "%lld", (long long)c->bits);
  }
  ir_buf_puts(b, ":");
  put_type(ir, b, c->type);
}

static void put_imm(cute_ir *ir, ir_buf *b, int kind, int64_t v) {
  const ir_immkind *k = &ir_immk[kind];
  if (kind == IK_NONE) return;
  if (k->is_str) {
    if (!v) return;
    ir_buf_printf(b, " %s=", k->key);
    ir_buf_quote(b, ir_strget(ir, (int32_t)v));
    return;
  }
  if (k->names) {
    if (v >= 0 && v < k->nnames) {
      if (!*k->names[v]) return;
      ir_buf_printf(b, " %s=%s", k->key, k->names[v]);
    } else {
      ir_buf_printf(b, " %s=%lld", k->key, (long long)v);
    }
    return;
  }
  if (!v) return;
  if (kind == IK_FN) {
    ir_buf_printf(b, " fn=@%s", v > 0 && v < ir->nfuncs ? ir_strget(ir, ir->funcs[v].name) : "?");
  } else if (kind == IK_UNROLL && v == CUTE_UNROLL_FULL) {
    ir_buf_puts(b, " unroll=full");
  } else if (kind == IK_UNROLL && v == CUTE_UNROLL_DISABLE) {
    ir_buf_puts(b, " unroll=disable");
  } else {
    ir_buf_printf(b, " %s=%lld", k->key, (long long)v);
  }
}

static void indent(ir_buf *b, int d) {
  for (int i = 0; i < d; i++) ir_buf_put(b, "  ", 2);
}

static void print_func(cute_ir *ir, int32_t fi, ir_buf *b) {
  ir_func *f = &ir->funcs[fi];
  ir_buf_printf(b, "%s @%s(", f->kind == CUTE_FN_KERNEL ? "kernel" : "func", ir_strget(ir, f->name));
  for (int i = 1; i <= f->nparams && i < f->ninst; i++) {
    ir_inst *p = &f->inst[i];
    ir_buf_printf(b, "%s%%%d: ", i > 1 ? ", " : "", i);
    put_type(ir, b, p->type);
    int flags = (int)(p->imm2 & 0xff), align = (int)(p->imm2 >> 8);
    if (flags & CUTE_P_NOALIAS) ir_buf_puts(b, " noalias");
    if (flags & CUTE_P_READONLY) ir_buf_puts(b, " readonly");
    if (flags & CUTE_P_GRID_CONSTANT) ir_buf_puts(b, " grid_constant");
    if (align) ir_buf_printf(b, " align=%d", align);
    if (p->imm) { ir_buf_puts(b, " "); ir_buf_quote(b, ir_strget(ir, (int32_t)p->imm)); }
  }
  ir_buf_puts(b, ")");
  if (f->ret != CUTE_T_VOID) { ir_buf_puts(b, " -> "); put_type(ir, b, f->ret); }
  if (f->maxntid) ir_buf_printf(b, " maxntid=%d", f->maxntid);
  if (f->minctasm) ir_buf_printf(b, " minctasm=%d", f->minctasm);
  if (f->dynsmem) ir_buf_printf(b, " dynsmem=%d", f->dynsmem);
  ir_buf_puts(b, " {\n");
  int depth = 1;
  int32_t lfile = 0, lline = 0;
  for (int32_t r = f->nparams + 1; r < f->ninst; r++) {
    ir_inst *in = &f->inst[r];
    if (in->op >= IR_NOPS) continue;
    const ir_opinfo *oi = &ir_ops[in->op];
    const int32_t *a = ir_args(f, in);
    int d = depth;
    if (in->op == IR_ELSE || in->op == IR_DO || in->op == IR_END) d = depth > 1 ? depth - 1 : 1;
    if (in->file != lfile || in->line != lline) {
      indent(b, d);
      ir_buf_puts(b, "loc ");
      ir_buf_quote(b, ir_strget(ir, in->file));
      ir_buf_printf(b, " %d\n", in->line);
      lfile = in->file;
      lline = in->line;
    }
    indent(b, d);
    switch (in->op) {
    case IR_ELSE: ir_buf_puts(b, "} else {\n"); continue;
    case IR_END:
      ir_buf_puts(b, "}\n");
      depth = d;
      continue;
    case IR_DO:
      ir_buf_puts(b, "} do ");
      put_operand(ir, f, b, a[0]);
      ir_buf_puts(b, " {\n");
      continue;
    default: break;
    }
    if (in->type != CUTE_T_VOID) ir_buf_printf(b, "%%%d = ", r);
    ir_buf_puts(b, oi->name);
    if (in->type != CUTE_T_VOID) { ir_buf_puts(b, " "); put_type(ir, b, in->type); }
    for (int i = 0; i < in->nargs; i++) {
      ir_buf_puts(b, i ? ", " : " ");
      put_operand(ir, f, b, a[i]);
    }
    put_imm(ir, b, oi->k1, in->imm);
    put_imm(ir, b, oi->k2, in->imm2);
    if (oi->flags & OF_REGION) {
      ir_buf_puts(b, " {");
      depth++;
    }
    ir_buf_puts(b, "\n");
  }
  /* unclosed regions (IR under construction) print their closing braces */
  while (depth > 1) { depth--; indent(b, depth); ir_buf_puts(b, "} ; unclosed\n"); }
  ir_buf_puts(b, "}\n");
}

char *ir_print_all(cute_ir *ir) {
  ir_buf b = {0};
  for (int32_t i = 1; i < ir->nfuncs; i++) {
    if (i > 1) ir_buf_puts(&b, "\n");
    print_func(ir, i, &b);
  }
  if (!b.p) ir_buf_puts(&b, "");
  if (b.oom) { free(b.p); return NULL; }
  return b.p;
}

const char *cute_ir_print(cute_ir *ir) {
  if (!ir) return "";
  char *s = ir_print_all(ir);
  if (!s) return "";
  free(ir->printbuf);
  ir->printbuf = s;
  return s;
}
