/* warmup.c -- initialise the LLVM NVPTX back end in the background.
 *
 * A process's first compile pays for LLVM's one-time set-up (target
 * registration, the target machine, pass pipelines: ~5 ms of a ~10 ms first
 * compile).  cute_compile_warmup compiles a tiny kernel on a detached thread
 * with the default options a launch uses; when the thread exits its target
 * machine becomes a spare (target_nvptx.c) that the user's first compile
 * takes.  Compiles in different threads share nothing (each has its own
 * context and machine), so a compile that starts while the warm-up runs
 * simply proceeds beside it; cute_compile_warmup_wait joins the thread
 * before the process or the Lua state can go away. */
#include "cute_ir.h"
#include "compile_opts.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t warm_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t warm_thread;
static int warm_started;
static char warm_arch[32];

static void *warm_main(void *arg) {
  (void)arg;
  cute_ir *ir = cute_ir_new();
  if (!ir) return NULL;
  cute_ir_func(ir, "cute_warmup", CUTE_FN_KERNEL, CUTE_T_VOID);
  int32_t pt = cute_ir_t_ptr(ir, CUTE_T_F32, CUTE_AS_GLOBAL);
  int32_t a = cute_ir_param(ir, pt, "a", CUTE_P_NOALIAS, 16);
  int32_t b = cute_ir_param(ir, pt, "b", CUTE_P_NOALIAS, 16);
  int32_t tid = cute_ir_sreg(ir, CUTE_SREG_TID_X);
  int32_t i = cute_ir_cvt(ir, CUTE_T_I32, tid, 0);
  int32_t lim = cute_ir_const_int(ir, CUTE_T_I32, 64);
  int32_t c = cute_ir_op2(ir, CUTE_IR_LT, i, lim);
  cute_ir_if(ir, c, 0);
  int32_t x = cute_ir_load(ir, cute_ir_gep(ir, a, i), 0, 4);
  int32_t y = cute_ir_op2(ir, CUTE_IR_MUL, x, x);
  cute_ir_store(ir, cute_ir_gep(ir, b, i), y, 0, 4);
  cute_ir_end(ir);
  cute_ir_ret(ir, 0);
  cute_compile_opts *o = cute_compile_opts_new();
  cute_compiled *out = NULL;
  /* (never the disk cache: a hit would leave LLVM cold) */
  if (o && cute_compile_opts_set(o, "arch", warm_arch, NULL) == 0 && cute_compile_opts_set(o, "cache", "false", NULL) == 0 &&
      cute_ir_status(ir, NULL) == 0)
    cute_compile(ir, o, &out, NULL);
  cute_compiled_free(out);
  cute_compile_opts_free(o);
  cute_ir_free(ir);
  return NULL;
}

/* Wait for the warm-up to finish (idempotent, any thread but the warm-up's).
 * Called before the process can exit: by main() and lua_close (the Lua side
 * holds a finaliser), by the os.exit wrapper of lua/cute/init.lua, and last by
 * an atexit handler.  The atexit handler alone is not enough: LLVM creates
 * function-local statics during the warm-up compile, whose destructors are
 * registered after the handler and so run before it, while the thread may
 * still use them ("double free or corruption" at exit). */
void cute_compile_warmup_wait(void) {
  pthread_mutex_lock(&warm_lock);
  if (warm_started == 1) {
    warm_started = 2;
    pthread_join(warm_thread, NULL);
  }
  pthread_mutex_unlock(&warm_lock);
}

void cute_compile_warmup(const char *arch) {
  pthread_mutex_lock(&warm_lock);
  if (!warm_started) {
    snprintf(warm_arch, sizeof warm_arch, "%s", arch && *arch ? arch : CUTE_DEFAULT_ARCH);
    if (pthread_create(&warm_thread, NULL, warm_main, NULL) == 0) {
      warm_started = 1;
      atexit(cute_compile_warmup_wait);
    } else {
      warm_started = 2; /* no thread: never try again */
    }
  }
  pthread_mutex_unlock(&warm_lock);
}
