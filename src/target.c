/* target.c -- the list of targets and the compile lock.  The target-neutral
 * lowering (codegen_llvm.c) finds a target here by arch and calls it only
 * through its hook table (target.h); each target is one file plus its op
 * files (NVPTX: target_nvptx.c, nvptx_ops.c, nvptx_lower.c, nvptx_abi.c).
 * Adding a target is one row below. */
#include "target.h"

#include <pthread.h>

static const cute_target *const targets[] = {&target_nvptx};

const cute_target *target_for_arch(const char *arch) {
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    if (targets[i]->arch_ok(arch)) return targets[i];
  return NULL;
}

/* LLVM's target machines and pass pipelines are shared between threads:
   target-machine creation, the passes and emission run under this lock;
   lowering runs concurrently */
static pthread_mutex_t tm_lock = PTHREAD_MUTEX_INITIALIZER;
void target_lock(void) { pthread_mutex_lock(&tm_lock); }
void target_unlock(void) { pthread_mutex_unlock(&tm_lock); }
