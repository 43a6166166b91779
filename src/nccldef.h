/*
 * nccldef.h -- the NCCL API as cuteluajit uses it, written once (the style of
 * src/cudadef.h).
 *
 *   CUTE_NCCL_FUNCS(X)    every entry point: X(field, symbol, required, ret,
 *                         params).  required = 0 marks functions that older
 *                         libraries lack (the field is then NULL and callers
 *                         do without: older libraries lack ncclGetLastError).
 *   CUTE_NCCL_RESULTS(X)  ncclResult_t codes: X(name, value).
 *   CUTE_NCCL_MIN_VERSION(X)  data types and ops newer than NCCL 2.7 (the
 *                         oldest with send/recv): X(name, is_op, value,
 *                         version code of the first library that has it).
 *
 * No NCCL header is needed: handles are opaque pointers, enums are ints and
 * ncclUniqueId is 128 bytes passed by value.  tests/nccl_abi.c compiles
 * these tables against a real nccl.h (when one exists) and checks every
 * signature and value.  Define CUTE_NCCLDEF_NO_TYPES before including this
 * file to get the tables without the typedefs.
 */
#ifndef CUTE_NCCLDEF_H
#define CUTE_NCCLDEF_H

#include <stddef.h>

#ifndef CUTE_NCCLDEF_NO_TYPES
typedef int ncclResult_t;
typedef int ncclDataType_t;
typedef int ncclRedOp_t;
typedef struct ncclComm *ncclComm_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct { char internal[128]; } ncclUniqueId;
#endif

/* X(field, symbol, required, ret, params) */
#define CUTE_NCCL_FUNCS(X) \
  X(GetVersion, ncclGetVersion, 1, ncclResult_t, (int *version)) \
  X(GetErrorString, ncclGetErrorString, 1, const char *, (ncclResult_t result)) \
  X(GetLastError, ncclGetLastError, 0, const char *, (ncclComm_t comm)) \
  X(GetUniqueId, ncclGetUniqueId, 1, ncclResult_t, (ncclUniqueId *unique_id)) \
  X(CommInitAll, ncclCommInitAll, 1, ncclResult_t, (ncclComm_t *comm, int ndev, const int *devlist)) \
  X(CommInitRank, ncclCommInitRank, 1, ncclResult_t, \
    (ncclComm_t *comm, int nranks, ncclUniqueId comm_id, int rank)) \
  X(CommDestroy, ncclCommDestroy, 1, ncclResult_t, (ncclComm_t comm)) \
  X(CommAbort, ncclCommAbort, 1, ncclResult_t, (ncclComm_t comm)) \
  X(CommGetAsyncError, ncclCommGetAsyncError, 1, ncclResult_t, \
    (ncclComm_t comm, ncclResult_t *async_error)) \
  X(CommCount, ncclCommCount, 1, ncclResult_t, (const ncclComm_t comm, int *count)) \
  X(CommCuDevice, ncclCommCuDevice, 1, ncclResult_t, (const ncclComm_t comm, int *device)) \
  X(CommUserRank, ncclCommUserRank, 1, ncclResult_t, (const ncclComm_t comm, int *rank)) \
  X(AllReduce, ncclAllReduce, 1, ncclResult_t, \
    (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) \
  X(AllGather, ncclAllGather, 1, ncclResult_t, \
    (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, \
     ncclComm_t comm, cudaStream_t stream)) \
  X(ReduceScatter, ncclReduceScatter, 1, ncclResult_t, \
    (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, \
     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) \
  X(Broadcast, ncclBroadcast, 1, ncclResult_t, \
    (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, \
     ncclComm_t comm, cudaStream_t stream)) \
  X(Reduce, ncclReduce, 1, ncclResult_t, \
    (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)) \
  X(Send, ncclSend, 1, ncclResult_t, \
    (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
     cudaStream_t stream)) \
  X(Recv, ncclRecv, 1, ncclResult_t, \
    (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
     cudaStream_t stream)) \
  X(GroupStart, ncclGroupStart, 1, ncclResult_t, (void)) \
  X(GroupEnd, ncclGroupEnd, 1, ncclResult_t, (void))

/* X(name, value) */
#define CUTE_NCCL_RESULTS(X) \
  X(ncclSuccess, 0) \
  X(ncclUnhandledCudaError, 1) \
  X(ncclSystemError, 2) \
  X(ncclInternalError, 3) \
  X(ncclInvalidArgument, 4) \
  X(ncclInvalidUsage, 5) \
  X(ncclRemoteError, 6) \
  X(ncclInProgress, 7)

/* X(name, is_op, value, first version code): values checked against nccl.h */
#define CUTE_NCCL_MIN_VERSION(X) \
  X(ncclBfloat16, 0, 9, 21000) \
  X(ncclFloat8e4m3, 0, 10, 22400) \
  X(ncclFloat8e5m2, 0, 11, 22400) \
  X(ncclAvg, 1, 4, 21000)

#endif
