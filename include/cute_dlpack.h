/*
 * cute_dlpack.h -- DLPack (https://dmlc.github.io/dlpack/) for cuteluajit:
 * the exchange structs of DLPack 1.1 and the shared ownership behind
 * cute.from_dlpack / t:to_dlpack (docs/EMBED.md).
 *
 * The struct definitions below follow the DLPack 1.1 specification field by
 * field (same names, order and sizes: DLTensor 48 bytes, DLManagedTensor 64,
 * DLManagedTensorVersioned 80 on LP64; spec/dlpack_spec.lua and
 * tests/host_c.c check the offsets).  They sit behind dlpack.h's own include
 * guard, so a host that includes <dlpack/dlpack.h> first uses its
 * definitions and one that includes this header first gets ours; both are
 * the same ABI.
 *
 * Ownership: a cute_dl_owner holds device memory for every party that
 * shares it (a cute tensor, each DLPack export of it); each holder releases
 * it once and the last release frees the memory (cuMemFree) or, for memory
 * imported from another framework, calls that framework's deleter.  The
 * reference count is atomic: a consumer may call a deleter from any thread.
 * Nothing here exits, aborts or prints.
 */
#ifndef CUTE_DLPACK_H
#define CUTE_DLPACK_H

#include "cute.h"

#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 1
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#define DLPACK_DLL
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#define DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED (1UL << 2UL)
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

/* where the memory lives (int32_t in the struct) */
#ifdef __cplusplus
typedef enum : int32_t {
#else
typedef enum {
#endif
  kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLOpenCL = 4, kDLVulkan = 7, kDLMetal = 8,
  kDLVPI = 9, kDLROCM = 10, kDLROCMHost = 11, kDLExtDev = 12, kDLCUDAManaged = 13,
  kDLOneAPI = 14, kDLWebGPU = 15, kDLHexagon = 16, kDLMAIA = 17, kDLTrn = 18
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

/* element type codes (uint8_t in DLDataType) */
typedef enum {
  kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U, kDLOpaqueHandle = 3U, kDLBfloat = 4U,
  kDLComplex = 5U, kDLBool = 6U, kDLFloat8_e3m4 = 7U, kDLFloat8_e4m3 = 8U,
  kDLFloat8_e4m3b11fnuz = 9U, kDLFloat8_e4m3fn = 10U, kDLFloat8_e4m3fnuz = 11U,
  kDLFloat8_e5m2 = 12U, kDLFloat8_e5m2fnuz = 13U, kDLFloat8_e8m0fnu = 14U,
  kDLFloat6_e2m3fn = 15U, kDLFloat6_e3m2fn = 16U, kDLFloat4_e2m1fn = 17U
} DLDataTypeCode;

typedef struct {
  uint8_t code;     /* DLDataTypeCode */
  uint8_t bits;     /* of one lane */
  uint16_t lanes;   /* 1 for scalars */
} DLDataType;

/* A view of memory; owns nothing.  Strides are in elements (NULL: compact
   row-major, allowed before DLPack 1.0). */
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;   /* DLPACK_FLAG_BITMASK_* */
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#ifdef __cplusplus
}
#endif
#endif /* DLPACK_DLPACK_H_ */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* CDEF BEGIN cute_dlpack.h */
typedef struct cute_dl_owner cute_dl_owner;

/* An owner of device memory from cute_cuda_malloc, holding one reference
   (NULL: out of memory).  The last release frees the memory. */
cute_dl_owner *cute_dl_owner_device(uint64_t dptr);
/* An owner of an imported DLManagedTensor (versioned 0) or
   DLManagedTensorVersioned (versioned 1), holding one reference; the last
   release calls its deleter (if it has one).  NULL: out of memory. */
cute_dl_owner *cute_dl_owner_managed(void *managed, int versioned);
void cute_dl_owner_retain(cute_dl_owner *o);
/* Drop one reference (NULL: no-op). */
void cute_dl_owner_release(cute_dl_owner *o);
/* Current reference count (for tests and diagnostics). */
int cute_dl_owner_refs(const cute_dl_owner *o);

/* A new DLManagedTensor (versioned 0) or DLManagedTensorVersioned (versioned
   1, version 1.1, flags as given) describing view, a DLTensor: its shape and
   strides are copied (strides NULL: compact row-major written out), owner is
   retained (NULL: the export owns nothing).  The consumer calls its deleter
   once; the deleter may run on any thread.  NULL with CUTE_E_ARG (bad ndim,
   negative extent) or CUTE_E_NOMEM in *err. */
void *cute_dl_export(const void *view, cute_dl_owner *owner, int versioned, uint64_t flags,
                     cute_err *err);
/* Call the deleter of a DLManagedTensor / DLManagedTensorVersioned, if it
   has one (for a producer that keeps one it did not hand over). */
void cute_dl_delete(void *managed, int versioned);
/* Exports made by cute_dl_export whose deleter has not run yet. */
int cute_dl_live_exports(void);
/* CDEF END */

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
