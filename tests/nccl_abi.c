/*
 * nccl_abi.c -- src/nccldef.h and include/cute_nccl.h against a real nccl.h:
 * every signature in CUTE_NCCL_FUNCS, every result code, data type and
 * reduction op we hard-code, and the size of ncclUniqueId.  The checks are
 * compile-time: it compiles or it fails.  Built by make only when nccl.h is
 * found (NCCL_INC, default /usr/local/cuda/include); tools/run_tests.sh runs
 * it (it prints how many declarations were checked) or counts it as skipped.
 *
 *   cc -std=gnu11 -Wall -Werror -Iinclude -I/usr/local/cuda/include tests/nccl_abi.c
 */
#include <nccl.h>
#include <stdio.h>
#define CUTE_NCCLDEF_NO_TYPES
#include "../src/nccldef.h"
#include "cute_nccl.h"

/* Signatures: NCCL's declaration and ours must be compatible function types
   (same return and parameter types; nothing is linked). */
#define CHECK_FN(field, sym, req, ret, params) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&sym), ret(*) params), #sym);
CUTE_NCCL_FUNCS(CHECK_FN)

#define CHECK_RES(name, value) _Static_assert(name == value, #name);
CUTE_NCCL_RESULTS(CHECK_RES)

#define CHECK_MIN(name, is_op, value, version) _Static_assert(name == value, #name);
CUTE_NCCL_MIN_VERSION(CHECK_MIN)

#define EQ(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs);
EQ(CUTE_NCCL_UNIQUE_ID_BYTES, NCCL_UNIQUE_ID_BYTES)
EQ(CUTE_NCCL_UNIQUE_ID_BYTES, sizeof(ncclUniqueId))
EQ(CUTE_NCCL_INT8, ncclInt8)
EQ(CUTE_NCCL_UINT8, ncclUint8)
EQ(CUTE_NCCL_INT32, ncclInt32)
EQ(CUTE_NCCL_UINT32, ncclUint32)
EQ(CUTE_NCCL_INT64, ncclInt64)
EQ(CUTE_NCCL_UINT64, ncclUint64)
EQ(CUTE_NCCL_FLOAT16, ncclFloat16)
EQ(CUTE_NCCL_FLOAT32, ncclFloat32)
EQ(CUTE_NCCL_FLOAT64, ncclFloat64)
EQ(CUTE_NCCL_BFLOAT16, ncclBfloat16)
EQ(CUTE_NCCL_FLOAT8E4M3, ncclFloat8e4m3)
EQ(CUTE_NCCL_FLOAT8E5M2, ncclFloat8e5m2)
EQ(CUTE_NCCL_FLOAT8E5M2 + 1, ncclNumTypes)
EQ(CUTE_NCCL_SUM, ncclSum)
EQ(CUTE_NCCL_PROD, ncclProd)
EQ(CUTE_NCCL_MAX, ncclMax)
EQ(CUTE_NCCL_MIN, ncclMin)
EQ(CUTE_NCCL_AVG, ncclAvg)
EQ(CUTE_NCCL_AVG + 1, ncclNumOps)
EQ(sizeof(ncclResult_t), sizeof(int))
EQ(sizeof(ncclDataType_t), sizeof(int))
EQ(sizeof(ncclRedOp_t), sizeof(int))

#define COUNT1(...) +1
int main(void) {
  int fns = 0 CUTE_NCCL_FUNCS(COUNT1), res = 0 CUTE_NCCL_RESULTS(COUNT1);
  int mins = 0 CUTE_NCCL_MIN_VERSION(COUNT1);
  printf("nccl.h %d.%d.%d: %d signatures, %d result codes, %d versioned values, 24 constants\n",
         NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, fns, res, mins);
  printf("%d passed, 0 failed\n", fns + res + mins + 24);
  return 0;
}
