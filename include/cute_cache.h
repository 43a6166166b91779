/*
 * cute_cache.h -- public C API of the on-disk cache of compiled kernels
 * (docs/CACHE.md).  cute_compile (cute_compile.h) looks an entry up before its
 * code-generation stages and stores one after them when the option cache is
 * true (env CUTE_CACHE) and keep asks for no LLVM text; these functions
 * inspect and clear the cache, as `cuteluajit --cache list|stats|clear` does.
 *
 *  - The directory: $CUTE_CACHE_DIR, else $XDG_CACHE_HOME/cuteluajit, else
 *    ~/.cache/cuteluajit; created 0700.  A directory owned by another user
 *    or writable by group or others is refused (CUTE_E_STATE, the message
 *    says why and what to do): it is never read.
 *  - The size cap: $CUTE_CACHE_MAX_BYTES (bytes, or with a K, M or G suffix;
 *    default 1G; 0: no cap), least recently used entries evicted first.
 *  - Nothing here exits, aborts or prints.
 */
#ifndef CUTE_CACHE_H
#define CUTE_CACHE_H

#include "cute.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_cache.h */
struct cute_compiled; /* cute_compile.h */
typedef struct cute_cache_stats {
  int64_t entries;   /* valid-looking entry files (<64 hex>.cute)  */
  int64_t bytes;     /* their total size                            */
  int64_t cap;       /* the size cap (0: none)                      */
  int64_t temps;     /* temp files of writers (in flight or crashed) */
  char dir[1024];    /* the directory                               */
} cute_cache_stats;

/* SHA-256 of n bytes as 64 lowercase hex digits and a NUL into out. */
void cute_sha256_hex(const void *data, size_t n, char *out);
/* The cache directory into out (cap bytes), created 0700 if missing.
   CUTE_E_STATE when it is unsafe (owned by another user, writable by group or
   others, not a directory) or cannot be made; the message names it and why. */
int cute_cache_dir(char *out, size_t cap, cute_err *err);
/* The size cap in bytes from CUTE_CACHE_MAX_BYTES (0: none); CUTE_E_ARG
   naming the value when it is not a size. */
int cute_cache_max_bytes(int64_t *out, cute_err *err);
int cute_cache_stats_get(cute_cache_stats *out, cute_err *err);
/* One line per entry, least recently used first, after a header line:
   key prefix, size, age, arch, image (cubin/ptx), kernel names, and
   "corrupt" for an entry that fails verification.  *text is malloc'ed:
   free it with cute_cache_text_free. */
int cute_cache_list(char **text, cute_err *err);
void cute_cache_text_free(char *text);
/* Remove every entry, and temp files of crashed writers (older than 10
   minutes: others may be in flight); *removed = entries removed. */
int cute_cache_clear(int64_t *removed, cute_err *err);
/* Evict least recently used entries until the total is at most cap bytes
   (cap < 0: the configured cap); *removed = entries removed. */
int cute_cache_evict(int64_t cap, int64_t *removed, cute_err *err);
/* What the disk cache did for a compile: "hit", "stored", "off" (option
   cache false), "skipped" (keep asks for LLVM text, which entries do not
   hold; no kernels; a miss with verify false: only verified IR is stored), "refused" (unsafe directory or cap), "failed" (could not write), or
   "none" (a miss whose compile failed).  Static string. */
const char *cute_compiled_cache_status(struct cute_compiled *c);
/* Why (e.g. "checksum mismatch: rewritten", the refusal message), owned by
   c; "" when there is nothing to say. */
const char *cute_compiled_cache_detail(struct cute_compiled *c);
/* The entry's key (64 hex digits, owned by c), "" when the cache was not used. */
const char *cute_compiled_cache_key(struct cute_compiled *c);
/* Notes: small named records in the cache directory (cute.autotune's best
   configurations), <dir>/<name>.note; name is 1..100 of A-Z a-z 0-9 _ . -,
   not starting with '.'.  Written atomically (temp file, fsync, rename; mode
   0600), at most 16 MiB.  The directory's safety rules apply (an unsafe one
   is CUTE_E_STATE).  note_read copies at most cap bytes into buf; *len is the
   note's full size (read again with a larger buffer when it exceeds cap);
   *found is 0 (and 0 returned) when there is no such note; a note that is
   not a regular file owned by the user and closed to group and others is
   CUTE_E_STATE. */
int cute_cache_note_write(const char *name, const char *data, size_t n, cute_err *err);
int cute_cache_note_read(const char *name, char *buf, size_t cap, size_t *len, int *found, cute_err *err);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
