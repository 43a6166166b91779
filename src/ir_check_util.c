/* ir_check_util.c -- helpers shared by the per-op checks (src/ir_check.h). */
#include "ir_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void ir_fmt_ref(cute_ir *ir, ir_func *f, int32_t ref, char *buf, size_t cap) {
  if (ref > 0) {
    snprintf(buf, cap, "%%%d", ref);
  } else if (ref < 0 && -ref < f->ncst) {
    ir_const *c = &f->cst[-ref];
    if (ir_scalar_class(c->type) == 3)
      snprintf(buf, cap, "%.9g:%s", ir_const_as_double(c->type, c->bits), ir_type_str(ir, c->type));
    else if (c->type == CUTE_T_U64)
      snprintf(buf, cap, "%llu:u64", (unsigned long long)c->bits);
    else
      snprintf(buf, cap, "%lld:%s", (long long)c->bits, ir_type_str(ir, c->type));
  } else {
    snprintf(buf, cap, "?%d", ref);
  }
}

/* "op: <what> (%1: i32, %2: f32)" */
int bad(chk *c, const char *fmt, ...) {
  ir_buf b = {0};
  char tmp[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  ir_buf_printf(&b, "%s: %s", ir_ops[c->in->op].name, tmp);
  if (c->in->nargs) {
    ir_buf_puts(&b, " (");
    for (int i = 0; i < c->in->nargs; i++) {
      char r[96];
      ir_fmt_ref(c->ir, c->f, c->a[i], r, sizeof r);
      ir_buf_printf(&b, "%s%s", i ? ", " : "", r);
      if (c->a[i] > 0) ir_buf_printf(&b, ": %s", ir_type_str(c->ir, ir_vtype(c->f, c->a[i])));
    }
    ir_buf_puts(&b, ")");
  }
  snprintf(c->msg, c->cap, "%s", b.p ? b.p : "error");
  free(b.p);
  return 1;
}

int same_args(chk *c, int from, int to) {
  for (int i = from + 1; i <= to; i++)
    if (T(i) != T(from)) return bad(c, "operand types differ");
  return 0;
}

int same_result(chk *c) {
  if (c->in->type != T(0))
    return bad(c, "result type %s differs from the operand type %s", TS(c->in->type), TS(T(0)));
  return 0;
}
