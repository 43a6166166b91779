/* cpu_sm90.h -- internal: Hopper (sm_90) instructions on the CPU target
 * (docs/CPU_TARGET.md, "Hopper (sm_90)"): wgmma, TMA, mbarriers, clusters.
 * cpu_asm.c hands the asm text to cpu_sm90_rewrite first (the multi-line
 * forms the Lua side emits become one internal instruction) and has rows for
 * the families whose parsers are here; cpu_exec.c runs the CTAs of a cluster
 * together and asks cpu_sm90_wake about warps waiting on mbarriers. */
#ifndef CUTE_CPU_SM90_H
#define CUTE_CPU_SM90_H

#include "cpu_tc.h"

/* an op returns CPU_SUSPEND after setting w->state = CPU_WAIT: the warp waits
   (w->pc unchanged: the op runs again when the warp is woken) */
#define CPU_SUSPEND 1000
/* w->bar_id of a warp waiting in this file's ops */
enum { CPU_BAR_MBAR = -1, CPU_BAR_TRYWAIT = -2, CPU_BAR_CLUSTER = -3 };

/* the CTAs of a cluster: CTA r's shared memory at base + r * stride */
typedef struct cpu_sm90 {
  int nb, nw, cur;              /* CTAs in the cluster, warps per CTA, the CTA whose warp runs */
  unsigned cdim[3], cid[3];     /* the cluster's shape, and its index in the grid */
  uint8_t *base; size_t stride;
  size_t shbytes;                /* a CTA's shared bytes (the bounds checks: cpu_check.c) */
  unsigned (*ctaid)[3];         /* per CTA */
  struct cpu_async **async;     /* per CTA (cpu_tc.c's cp.async queue) */
  int *bar_arrived;             /* per CTA, per named barrier: threads arrived by bar.arrive */
  uint32_t *cl_arrived;         /* per warp of the cluster: lanes arrived at barrier.cluster */
  uint8_t *cl_wait;             /* per warp: 1 + the phase it arrived in (0: not arrived) */
  uint8_t *timed_out;           /* per warp: its try_wait answers with the barrier's state */
  uint32_t cl_phase;
  uint64_t events, stall, ev_seen;       /* mbarrier / cluster-barrier state changes; rounds without one */
} cpu_sm90;

IR_HIDDEN const char *cpu_sm90_rewrite(const char *tmpl, char *buf, size_t cap);
IR_HIDDEN int cpu_sm90_parse_mbarrier(cpu_asm_op *a, const char *const *tok, int ntok);
IR_HIDDEN int cpu_sm90_parse_wgmma(cpu_asm_op *a, const char *const *tok, int ntok);
IR_HIDDEN int cpu_sm90_parse_bulk(cpu_asm_op *a, const char *const *tok, int ntok);
IR_HIDDEN int cpu_sm90_parse_misc(cpu_asm_op *a, const char *const *tok, int ntok);

/* cpu_exec.c's hooks */
IR_HIDDEN void cpu_sm90_enter(cpu_launch *L, int rank);          /* the CTA whose warps run next */
IR_HIDDEN int *cpu_sm90_bar_arrivals(cpu_launch *L, int rank);   /* int[16] */
/* after a scheduling round: wake the warps waiting here; 0: go on, else a
   launch error (a wait that can never complete) */
IR_HIDDEN int cpu_sm90_wake(cpu_launch *L, cpu_warp *ws, int progress);

#endif
