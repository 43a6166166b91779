/* core.h -- internal helpers shared by every subsystem (hidden symbols). */
#ifndef CUTE_CORE_H
#define CUTE_CORE_H

#include "cute.h"
#include <stdarg.h>

/* The one C error formatter: sets err (when not NULL) to code and the
   printf-formatted message and returns code, so a failing path reads
   `return cute_err_setf(err, CUTE_E_ARG, "op: ...", ...)`.  The message is
   always NUL-terminated; one too long for err->msg is cut and ends in "...".
   The arguments may point into err->msg itself (prefixing an earlier
   message is safe).  Never prints, never aborts. */
int cute_err_setf(cute_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int cute_err_vsetf(cute_err *err, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
