/* core.c -- version and status names shared by every subsystem. */
#include "cute.h"
#include <stddef.h>

const char *cute_version(void) { return "cuteluajit 0.1.0"; }

const char *cute_status_name(int code) {
  static const char *const names[] = {
    "CUTE_OK", "CUTE_E_PARSE", "CUTE_E_ARG", "CUTE_E_RANK", "CUTE_E_DOMAIN",
    "CUTE_E_ADMISSIBLE", "CUTE_E_OVERFLOW", "CUTE_E_CAPACITY", "CUTE_E_STATE",
    "CUTE_E_LLVM", "CUTE_E_PTXAS", "CUTE_E_CUDA", "CUTE_E_NOMEM", "CUTE_E_VERIFY",
    "CUTE_E_UNSUPPORTED"};
  if (code < 0 || code >= (int)(sizeof names / sizeof names[0])) return "CUTE_E_UNKNOWN";
  return names[code];
}
