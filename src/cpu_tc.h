/* cpu_tc.h -- internal: inline PTX on the CPU target.  cpu_asm.c parses each
 * asm's text at preparation into a cpu_asm_op (one row of its table of PTX
 * instruction patterns); cpu_tc.c runs the tensor-core rows (mma.sync,
 * ldmatrix, stmatrix, cp.async) and holds the one memory helper every row's
 * access goes through (docs/CPU_TARGET.md, "Tensor cores"). */
#ifndef CUTE_CPU_TC_H
#define CUTE_CPU_TC_H

#include "cpu.h"

#define CPU_ASM_GROUPS 8

/* operand $N: lane t's bytes at vp[ref] + t * stride + off, size bytes */
typedef struct cpu_opnd { int32_t ref, off, stride, size; } cpu_opnd;

enum { CPU_IT_OP = 0, CPU_IT_IMM = 1, CPU_IT_SINK = 2 };
typedef struct cpu_item { int kind; int64_t v; } cpu_item;  /* CPU_IT_OP: v = N of $N */

enum { CPU_G_REG = 0, CPU_G_VEC = 1, CPU_G_ADDR = 2 };      /* x, {x, y}, [x] */
typedef struct cpu_group { int kind, first, count; } cpu_group;

typedef struct cpu_asm_op cpu_asm_op;
typedef int (*cpu_asm_run)(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a);

struct cpu_asm_op {
  cpu_asm_run run;
  int m, n, k;            /* mma: shape; ldmatrix/stmatrix: n matrices; cp.async: k bytes; ld/st: n bytes */
  int ta, tb, tc, td;     /* mma: element types (CUTE_T_*) of A, B, C, D */
  int flags;              /* CPU_F_* */
  int ngroups;
  cpu_group g[CPU_ASM_GROUPS];
  cpu_item *it; int nit;  /* the items of the groups, in text order */
  cpu_opnd *op; int nop;  /* the operands (constraint order: outputs, then inputs) */
  int nout;               /* op[0 .. nout-1] are the outputs */
  int16_t *lay;           /* mma: the fragment layouts, precomputed (cpu_tc.c) */
};
enum { CPU_F_SAT = 1, CPU_F_TRANS = 2, CPU_F_STORE = 4, CPU_F_WAITALL = 8 };

/* item j of group gi as its operand (NULL when it is not a $N) */
static inline const cpu_opnd *cpu_asm_opnd(const cpu_asm_op *a, int gi, int j) {
  const cpu_item *it = &a->it[a->g[gi].first + j];
  return it->kind == CPU_IT_OP ? &a->op[it->v] : NULL;
}
/* item j of group gi is a $N of an output (want_out) or of an input of size bytes */
static inline int cpu_asm_is(const cpu_asm_op *a, int gi, int j, int want_out, int size) {
  const cpu_item *it = &a->it[a->g[gi].first + j];
  return it->kind == CPU_IT_OP && (it->v < a->nout) == (want_out != 0) && a->op[it->v].size == size;
}
static inline uint8_t *cpu_opnd_at(const cpu_warp *w, const cpu_opnd *o, int t) {
  return w->vp[o->ref] + (size_t)t * (size_t)o->stride + (size_t)o->off;
}

/* cpu_tc.c: the rows' parsers (0: recognised) and runners */
IR_HIDDEN int cpu_tc_parse_mma(cpu_asm_op *a, const char *const *tok, int ntok);
IR_HIDDEN int cpu_tc_parse_matrix(cpu_asm_op *a, const char *const *tok, int ntok, int store);
IR_HIDDEN int cpu_tc_parse_movmatrix(cpu_asm_op *a, const char *const *tok, int ntok);
IR_HIDDEN int cpu_tc_parse_cpasync(cpu_asm_op *a, const char *const *tok, int ntok);
IR_HIDDEN int cpu_tc_parse_cpasync_group(cpu_asm_op *a, const char *const *tok, int ntok);
/* every access of memory by inline PTX: n bytes at host address addr for lane t
   (write: from buf; else into buf); 0 or a launch error (the checking mode's hook) */
IR_HIDDEN int cpu_tc_access(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, uint64_t addr, void *buf,
                            size_t n, int write);
/* a .shared operand (a 32-bit shared-window address, or 64-bit) -> host address; 0 or an error */
IR_HIDDEN int cpu_tc_shared(cpu_launch *L, const cpu_ins *in, cpu_warp *w, int t, const cpu_opnd *o, size_t n,
                            uint64_t *addr);
IR_HIDDEN uint64_t cpu_opnd_u64(const cpu_warp *w, const cpu_opnd *o, int t);

#endif
