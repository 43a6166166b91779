/* core.c -- version, status names and the error formatter shared by every
 * subsystem. */
#include "core.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* "cuteluajit MAJOR.MINOR.PATCH", from the one definition in include/cute.h
   (enum constants, which the preprocessor cannot stringify: formatted once). */
static char version_text[48];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static void version_init(void) {
  snprintf(version_text, sizeof version_text, "cuteluajit %d.%d.%d", CUTE_VERSION_MAJOR,
           CUTE_VERSION_MINOR, CUTE_VERSION_PATCH);
}

const char *cute_version(void) {
  pthread_once(&version_once, version_init);
  return version_text;
}

int cute_abi_version(void) { return CUTE_ABI; }

const char *cute_status_name(int code) {
  static const char *const names[] = {
    "CUTE_OK", "CUTE_E_PARSE", "CUTE_E_ARG", "CUTE_E_RANK", "CUTE_E_DOMAIN",
    "CUTE_E_ADMISSIBLE", "CUTE_E_OVERFLOW", "CUTE_E_CAPACITY", "CUTE_E_STATE",
    "CUTE_E_LLVM", "CUTE_E_PTXAS", "CUTE_E_CUDA", "CUTE_E_NOMEM", "CUTE_E_VERIFY",
    "CUTE_E_UNSUPPORTED", "CUTE_E_LUA"};
  if (code < 0 || code >= (int)(sizeof names / sizeof names[0])) return "CUTE_E_UNKNOWN";
  return names[code];
}

int cute_err_vsetf(cute_err *err, int code, const char *fmt, va_list ap) {
  if (!err) return code;
  char buf[sizeof err->msg]; /* the arguments may point into err->msg */
  int n = fmt ? vsnprintf(buf, sizeof buf, fmt, ap) : 0;
  if (n < 0) n = 0, buf[0] = 0; /* an encoding error: keep the code, no text */
  if ((size_t)n >= sizeof buf) memcpy(buf + sizeof buf - 4, "...", 4);
  err->code = code;
  memcpy(err->msg, buf, sizeof buf);
  return code;
}

int cute_err_setf(cute_err *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  cute_err_vsetf(err, code, fmt, ap);
  va_end(ap);
  return code;
}
