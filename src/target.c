/* target.c -- the list of targets.  The target-neutral
 * lowering (codegen_llvm.c) finds a target here by arch and calls it only
 * through its hook table (target.h); each target is one file plus its op
 * files (NVPTX: target_nvptx.c, nvptx_ops.c, nvptx_lower.c, nvptx_abi.c).
 * Adding a target is one row below. */
#include "target.h"

static const cute_target *const targets[] = {&target_nvptx};

const cute_target *target_for_arch(const char *arch) {
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    if (targets[i]->arch_ok(arch)) return targets[i];
  return NULL;
}

