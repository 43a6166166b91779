/* backend.h -- internal: what the compiler driver (compile.c) calls in the
 * code generator, one function per stage, over an opaque state; and the
 * target facts that need no LLVM types (arch names, PTX versions).  The
 * driver includes no llvm-c header. */
#ifndef CUTE_BACKEND_H
#define CUTE_BACKEND_H

#include "ir.h"
#include "cute_compile.h"

typedef struct cg cg;
struct cute_compile_opts;

/* A generator for ir under options o for arch; errors go to msg (cap bytes).
   NULL: out of memory (msg says so). */
IR_HIDDEN cg *cg_new(cute_ir *ir, const struct cute_compile_opts *o, const char *arch, char *msg, size_t cap);
IR_HIDDEN void cg_free(cg *g);
/* The stages (0 or a CUTE_E_* code with msg set).  Each may leave text:
   *text malloc'ed (the caller frees). */
IR_HIDDEN int cg_lower(cg *g, char **text);      /* IR -> LLVM module, LLVM verifier; text: the module when rejected */
IR_HIDDEN int cg_link(cg *g, char **text);       /* target libraries (libdevice) and option link; text: what was linked */
IR_HIDDEN int cg_optimise(cg *g, char **text);   /* pass pipeline; text (NULL: not printed): the optimised module */
IR_HIDDEN int cg_emit(cg *g, char **text);       /* text: the PTX */
/* the module as it is now (malloc'ed; NULL before lowering) */
IR_HIDDEN char *cg_module_text(cg *g);

/* ---- target facts (target_nvptx.c) --------------------------------------------------- */
IR_HIDDEN int target_ptx_version_ok(int v);
IR_HIDDEN const char *target_ptx_versions(void);   /* "32 .. 85" */
IR_HIDDEN int target_default_ptx(const char *arch); /* LLVM's default PTX version for arch */

/* ---- external tools (ptxas.h) ----------------------------------------------------------- */
#include "ptxas.h"

#endif
