/* sha256.h -- internal: SHA-256 (FIPS 180-4), for the disk cache's keys and
 * entry checksums (src/cache.c).  cute_sha256_hex (include/cute_cache.h) is
 * the public form. */
#ifndef CUTE_SHA256_H
#define CUTE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "ir.h" /* IR_HIDDEN */

typedef struct sha256_ctx {
  uint32_t h[8];
  uint64_t len;      /* bytes hashed so far */
  unsigned char buf[64];
  size_t nbuf;
} sha256_ctx;

IR_HIDDEN void sha256_init(sha256_ctx *c);
IR_HIDDEN void sha256_update(sha256_ctx *c, const void *data, size_t n);
IR_HIDDEN void sha256_final(sha256_ctx *c, unsigned char out[32]);
IR_HIDDEN void sha256(const void *data, size_t n, unsigned char out[32]);
/* 64 lowercase hex digits and a NUL */
IR_HIDDEN void sha256_hex(const unsigned char d[32], char out[65]);

#endif
