/* check.h -- the pass / fail counters of the C tests that link libcute
 * (tests/ir_c.c, host_c.c, compile_pool_c.c); included once, by the test's
 * only source file.
 *   CHECK(cond, fmt, ...)  counts a pass, or prints "FAIL file:line: cond:"
 *                          and the message and counts a failure; safe from
 *                          several threads (cond is evaluated under the lock)
 *   skipped                checks that could not run here (no ptxas, no GPU)
 *   check_done()           prints "N passed, N failed, N skipped", the line
 *                          tools/run_tests.sh reads, and returns the exit status */
#ifndef CUTE_TESTS_CHECK_H
#define CUTE_TESTS_CHECK_H

#include <pthread.h>
#include <stdio.h>

static int passed, failed, skipped;
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;

#define CHECK(cond, ...)                                     \
  do {                                                       \
    pthread_mutex_lock(&check_lock);                         \
    if (cond) passed++;                                      \
    else {                                                   \
      failed++;                                              \
      printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      printf(__VA_ARGS__);                                   \
      printf("\n");                                          \
    }                                                        \
    pthread_mutex_unlock(&check_lock);                       \
  } while (0)

static inline int check_done(void) {
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed != 0;
}

#endif
