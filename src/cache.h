/* cache.h -- internal: the on-disk cache of compiled kernels (cache.c), as
 * cute_compile (compile.c) uses it: the key of a compile, reading an entry
 * (verified: any failure is a miss, never an error) and writing one
 * atomically.  docs/CACHE.md describes the format and the rules. */
#ifndef CUTE_CACHE_INTERNAL_H
#define CUTE_CACHE_INTERNAL_H

#include "cute_cache.h"
#include "cute_compile.h"
#include "ir.h" /* IR_HIDDEN */

typedef struct cache_kernel {
  char *name;
  cute_kernel_info info;
} cache_kernel;

/* what an entry holds (strings NUL-terminated, owned by the entry) */
typedef struct cache_entry {
  char arch[16];
  char *ptx;          /* always */
  void *cubin;        /* NULL: the PTX goes to the driver's JIT */
  size_t cubin_size;
  char *ptxas_log;    /* NULL when ptxas did not run */
  char *info_text;    /* the load_info stage's text */
  int nk;
  cache_kernel *k;
} cache_entry;

/* the key of compiling ir_text with o: SHA-256 over a format tag, the
   library's version, ABI and build identity, LLVM's version, the options key,
   ptxas (path and file identity) when use_ptxas, libdevice's candidates and
   the files of option link (their contents), then the IR text */
IR_HIDDEN void cache_key(const char *ir_text, cute_compile_opts *o, unsigned char key[32]);
/* the entry of key in dir: 0 and *e filled (a hit; its time stamp is
   refreshed for LRU), else 1 with why ("absent", "checksum mismatch", ...) */
IR_HIDDEN int cache_read(const char *dir, const unsigned char key[32], cache_entry *e, char *why, size_t cap);
/* write e as the entry of key: temp file in dir, fsync, rename; then evict
   down to the cap.  0, or nonzero with msg. */
IR_HIDDEN int cache_write(const char *dir, const unsigned char key[32], const cache_entry *e, char *msg, size_t cap);
IR_HIDDEN void cache_entry_clear(cache_entry *e);

#endif
