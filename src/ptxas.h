/* ptxas.h -- internal: NVIDIA's command-line tools as subprocesses: ptxas
 * (PTX -> cubin, and its -v report) and the disassemblers (nvdisasm or
 * cuobjdump: cubin -> SASS).  Nothing here prints or exits. */
#ifndef CUTE_PTXAS_H
#define CUTE_PTXAS_H

#include "ir.h"

typedef struct ptxas_kinfo {
  char name[128];
  int regs, smem, spill_st, spill_ld, stack, cmem;
} ptxas_kinfo;

/* CUTE_PTXAS, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin (cached); NULL: none. */
IR_HIDDEN const char *ptxas_find(void);
/* Assemble ptx for arch with -O3 -v (and -lineinfo) plus the space-separated
   extra options (an -O among them replaces -O3).  On success *cubin and *log
   (malloc'ed: the -v report); on failure *log holds ptxas's output and msg
   says what failed.  Returns 0 or nonzero. */
IR_HIDDEN int ptxas_run(const char *ptxas, const char *ptx, const char *arch, const char *extra, int lineinfo,
                        void **cubin, size_t *cubin_size, char **log, char *msg, size_t cap);
IR_HIDDEN int ptxas_parse(const char *log, ptxas_kinfo *k, int cap);
/* Disassemble a cubin to text (*out malloc'ed).  CUTE_E_UNSUPPORTED when no
   disassembler is found (msg lists where it looked).  lineinfo: nvdisasm runs with
   --print-line-info and each line marker is followed by its source line's text
   (sass_lines.c); cuobjdump prints no line info. */
IR_HIDDEN int sass_run(const void *cubin, size_t size, int lineinfo, char **out, char *msg, size_t cap);
/* sass with the text of the source line after each nvdisasm "//## File" marker
   (malloc'ed; NULL when out of memory) */
IR_HIDDEN char *sass_with_source(const char *sass);

#endif
