/* cpu.h -- internal: the CPU target's interpreter (include/cute_cpu.h).
 * cpu_exec.c: preparation, structured control flow by masks, barriers, the
 * grid; cpu_ops.c: arithmetic, compares, conversions, math, bits, vectors;
 * cpu_mem.c: memory, special registers, warp ops, atomics, printf.
 *
 * Values: every SSA value has a slot of 32 lanes, lane t's bytes at
 * slot + t * size (size: the type's bytes), so a warp-wide op is one loop
 * over 32 * elements.  Constants are pre-splatted slots shared by all warps;
 * pure ops compute every lane (inactive lanes' results are never read:
 * values are visible only inside their region); side effects (stores,
 * vset, atomics, printf, asserts) and loads honour the active mask. */
#ifndef CUTE_CPU_INTERNAL_H
#define CUTE_CPU_INTERNAL_H

#include "cute_cpu.h"
#include "ir.h"
#include <stdint.h>

#define CPU_LANES 32
#define CPU_MAXDEPTH 128

typedef struct cpu_ins {
  uint16_t op;
  uint8_t sk;      /* scalar kind (CUTE_T_*) of the result's elements (0: none) */
  uint8_t ak;      /* scalar kind of operand 0's elements */
  uint8_t bk;      /* scalar kind of operand 1's elements */
  int32_t nel;     /* elements per lane of the result (vector lanes; 1 scalar) */
  int32_t size;    /* result bytes per lane */
  int32_t asize;   /* operand 0's bytes per lane */
  int32_t bsize;   /* operand 1's bytes per lane */
  int32_t a[3];    /* the first three operands */
  int32_t nargs;
  int32_t jump;    /* IF: its ELSE or END; ELSE: END; FOR: END; WHILE: DO; DO: END */
  int32_t skip;    /* where a warp goes when no lane of this region is left: the region's closer */
  int64_t aux;     /* gep: element bytes; shared/local: offset; for: 1 when counting down */
  int64_t imm, imm2;
  int32_t ref;     /* the IR ref (the instruction's own index) */
} cpu_ins;

typedef struct cpu_frame {
  int32_t opener;  /* index of the IF / FOR / WHILE */
  int32_t loop;    /* the enclosing loop frame (-1 none) */
  uint32_t saved;  /* mask at entry */
  uint32_t other;  /* IF: the else lanes; loops: lanes still iterating */
  uint32_t brk, cont;
} cpu_frame;

enum { CPU_RUN = 0, CPU_WAIT = 1, CPU_DONE = 2 };

typedef struct cpu_warp {
  int32_t pc;
  uint32_t mask, exited, all;
  int state, bar_id, bar_count;
  int sp, loop;
  int index;                       /* warp index in its block */
  cpu_frame st[CPU_MAXDEPTH];
  uint8_t **vp;                    /* vp[ref] (negative refs: constants) */
  uint8_t *buf, *local;
  uint8_t *ret;                    /* a device function's result slot (NULL in a kernel) */
  uint32_t tid[3][CPU_LANES];
} cpu_warp;

struct cute_cpu_prog {
  cute_ir *ir;
  ir_func *f;
  const char *name;
  cpu_ins *ins;        /* ins[1 .. n-1] */
  int32_t n, ncst;
  int32_t nparams;
  size_t *off;         /* per ref >= 1: byte offset of its slot in a warp buffer (SIZE_MAX: none) */
  size_t bufbytes;     /* a warp's value buffer */
  uint8_t *cbuf;       /* constants, splatted */
  uint8_t **cvp;       /* cvp[k]: constant -k's slot */
  size_t static_smem, dyn_off, local_bytes;
  char *out; size_t nout, capout; int oom;
  char *taken;
  uint64_t executed;
  struct cpu_asm_op *asmv; int32_t nasm, capasm; /* parsed inline PTX (cpu_asm.c); ins->aux indexes it */
  struct cute_cpu_prog **callee; int32_t ncallee; int depth; /* device functions called (call: ins->aux) */
  int check;               /* checking mode: CUTE_CPU_CHECK_* bits (cpu_check.c) */
  int32_t nloc;            /* the local arrays (cpu_check.c): offset, lane stride, bytes */
  int64_t (*loc)[3];
};

/* a launch in progress */
typedef struct cpu_launch {
  cute_cpu_prog *p;
  unsigned grid[3], block[3], ctaid[3];
  uint8_t *smem;
  uint8_t *pbuf;       /* the parameters, splatted */
  uint64_t clock;
  cute_err *err;
  int failed;
  size_t smem_size;    /* bytes of the block's shared memory (static + dynamic) */
  struct cpu_async *async; /* cp.async copies not yet performed (cpu_tc.c) */
  /* bounds checks (cpu_check.c): the block's shared bytes; per instruction the range it hit last */
  uint64_t slo, shi;
  uint64_t (*hit)[2];
  struct cpu_chk *chk; /* checking mode's state (NULL: off) */
  void **params;       /* the launch's parameters (by-value bytes: what param.addr may read) */
  struct cpu_sm90 *sm90;   /* the cluster whose CTAs run together (cpu_sm90.c) */
} cpu_launch;

/* cpu_exec.c */
IR_HIDDEN int cpu_fail(cpu_launch *L, const cpu_ins *in, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* cpu_ops.c: the pure ops (every lane); nonzero when op is not one of them */
IR_HIDDEN int cpu_pure(const cute_cpu_prog *p, const cpu_ins *in, cpu_warp *w);
IR_HIDDEN int cpu_pure_ok(const cute_cpu_prog *p, const cpu_ins *in); /* supported? */
IR_HIDDEN uint16_t cpu_f2h(double x, int rnd);
IR_HIDDEN uint16_t cpu_f2bf(double x, int rnd);
IR_HIDDEN float cpu_h2f(uint16_t h);
IR_HIDDEN float cpu_bf2f(uint16_t h);
/* cpu_mem.c: memory, sregs, warp ops, atomics, printf, assert; 0 or an error */
IR_HIDDEN int cpu_side(cpu_launch *L, const cpu_ins *in, cpu_warp *w);
IR_HIDDEN int cpu_side_ok(const cute_cpu_prog *p, const cpu_ins *in);

/* cpu_asm.c: inline PTX parsed at preparation into internal ops (docs/CPU_TARGET.md,
   "Tensor cores"); cpu_tc.c: tensor-core ops, cp.async, fp8 */
IR_HIDDEN int cpu_asm_prepare(cute_cpu_prog *p, cpu_ins *in, cute_err *err); /* IR_ASM: 0 or an error */
IR_HIDDEN int cpu_asm_exec(cpu_launch *L, const cpu_ins *in, cpu_warp *w);    /* IR_ASM, IR_PARAMADDR */
IR_HIDDEN void cpu_asm_free(cute_cpu_prog *p);
IR_HIDDEN void cpu_async_reset(cpu_launch *L, int free_all);  /* a block begins / the launch ends */
IR_HIDDEN uint8_t cpu_f2f8(double x, int e5m2);   /* cvt.rn.satfinite.{e4m3,e5m2} */
IR_HIDDEN double cpu_f82f(uint8_t b, int e5m2);   /* exact */
/* cpu_check.c: bounds checks of every access (kind: CPU_LD, CPU_ST, CPU_AT; x: a store's
   values, NULL else); 0 or the launch error (nothing accessed), and the checking mode */
enum { CPU_LD = 0, CPU_ST = 1, CPU_AT = 2, CPU_INBOUNDS = 0x100 };
IR_HIDDEN int cpu_access_slow(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const uint64_t *pa, uint32_t m,
                              int size, int kind, const uint8_t *x, uint64_t lo, uint64_t hi, int as);
static inline int cpu_access(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const uint64_t *pa, uint32_t m,
                             int size, int kind, const uint8_t *x) {
  if (!m || ((in->aux & CPU_INBOUNDS) && !L->chk)) return 0;
  /* hit: the range [h0, h0 + n + size - 1) this instruction hit last as h0, n (0: none); the
     lanes' offsets from h0 OR-ed (>= each of them) below n: all in (one vectorised loop) */
  const uint64_t *h = L->hit[in->ref];
  uint64_t acc = 0, h0 = h[0];
  if (m == 0xffffffffu) for (int t = 0; t < CPU_LANES; t++) acc |= pa[t] - h0;
  else for (int t = 0; t < CPU_LANES; t++) acc |= (pa[t] - h0) & (0 - (uint64_t)(m >> t & 1));
  if (acc < h[1]) return 0;
  uint64_t lo = UINT64_MAX, hi = 0; /* exactly: the lowest and highest lane */
  for (int t = 0; t < CPU_LANES; t++) {
    uint64_t a = (m >> t & 1) ? pa[t] : lo, b = (m >> t & 1) ? pa[t] : hi;
    lo = a < lo ? a : lo; hi = b > hi ? b : hi;
  }
  if (lo >= h0 && hi - h0 < h[1]) return 0;
  return cpu_access_slow(L, in, w, pa, m, size, kind, x, lo, hi + (uint64_t)size, (int)(in->aux & 0xff));
}
IR_HIDDEN void cpu_check_prepare(cute_cpu_prog *p);
IR_HIDDEN int cpu_check_begin(cpu_launch *L, int nw, size_t shared_bytes);
IR_HIDDEN void cpu_check_block(cpu_launch *L);
IR_HIDDEN void cpu_check_epoch(cpu_launch *L); /* a barrier was released */
IR_HIDDEN void cpu_check_end(cpu_launch *L);
IR_HIDDEN int cpu_check_bar(cpu_launch *L, const cpu_ins *in, cpu_warp *w);
IR_HIDDEN int cpu_check_release(cpu_launch *L, cpu_warp *ws, int nw);

#endif
