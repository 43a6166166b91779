/*
 * cuda_abi.c -- compile-only check of src/cudadef.h and include/cute_cuda.h
 * against a real cuda.h: every driver signature in CUTE_CUDA_FUNCS, every
 * error code in CUTE_CUDA_ERRORS, every enum value we hard-code, and the
 * cuLaunchKernelEx struct layouts.  Nothing to run; it compiles or it fails:
 *
 *   cc -std=gnu11 -Wall -Werror -fsyntax-only -Iinclude -I/usr/local/cuda/include tests/cuda_abi.c
 *
 * (spec/runtime_spec.lua runs this when a cuda.h is present.)
 */
#include <cuda.h>
#include <stddef.h>
#define CUTE_CUDADEF_NO_TYPES
#include "../src/cudadef.h"
#include "cute_cuda.h"

/* Signatures: taking the address of the toolkit's declaration into a pointer
   of our signature fails to compile (-Werror) unless the types agree. */
#define CHECK_FN(field, sym, alt, req, params) \
  CUresult (*chk_##field) params = &sym; \
  CUresult (*chk_alt_##field) params = &alt;
CUTE_CUDA_FUNCS(CHECK_FN)

#define CHECK_ERR(name, value, hint) _Static_assert(name == value, #name);
CUTE_CUDA_ERRORS(CHECK_ERR)

#define EQ(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours " != " #theirs);
EQ(CUTE_CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER)
EQ(CUTE_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
EQ(CUTE_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER)
EQ(CUTE_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
EQ(CUTE_CU_JIT_LOG_VERBOSE, CU_JIT_LOG_VERBOSE)
EQ(CUTE_CU_JIT_GENERATE_LINE_INFO, CU_JIT_GENERATE_LINE_INFO)
EQ(CUTE_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
EQ(CUTE_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
EQ(CUTE_CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
EQ(CUTE_CU_POINTER_ATTRIBUTE_IS_MANAGED, CU_POINTER_ATTRIBUTE_IS_MANAGED)
EQ(CUTE_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
EQ(CUTE_CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE)
EQ(CUTE_CU_IPC_HANDLE_SIZE, CU_IPC_HANDLE_SIZE)
_Static_assert(sizeof(CUipcMemHandle) == CUTE_CU_IPC_HANDLE_SIZE, "IPC handle size");

#define DA(x) EQ(CUTE_CU_DEVICE_ATTRIBUTE_##x, CU_DEVICE_ATTRIBUTE_##x)
DA(MAX_THREADS_PER_BLOCK) DA(MAX_BLOCK_DIM_X) DA(MAX_BLOCK_DIM_Y) DA(MAX_BLOCK_DIM_Z)
DA(MAX_GRID_DIM_X) DA(MAX_GRID_DIM_Y) DA(MAX_GRID_DIM_Z) DA(MAX_SHARED_MEMORY_PER_BLOCK)
DA(TOTAL_CONSTANT_MEMORY) DA(WARP_SIZE) DA(MAX_REGISTERS_PER_BLOCK) DA(CLOCK_RATE)
DA(MULTIPROCESSOR_COUNT) DA(INTEGRATED) DA(PCI_BUS_ID) DA(PCI_DEVICE_ID)
DA(MEMORY_CLOCK_RATE) DA(GLOBAL_MEMORY_BUS_WIDTH) DA(L2_CACHE_SIZE)
DA(MAX_THREADS_PER_MULTIPROCESSOR) DA(COMPUTE_CAPABILITY_MAJOR) DA(COMPUTE_CAPABILITY_MINOR)
DA(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR) DA(MAX_REGISTERS_PER_MULTIPROCESSOR)
DA(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN) DA(MAX_BLOCKS_PER_MULTIPROCESSOR)
DA(RESERVED_SHARED_MEMORY_PER_BLOCK) DA(CLUSTER_LAUNCH)

#define FA(x) EQ(CUTE_CU_FUNC_ATTRIBUTE_##x, CU_FUNC_ATTRIBUTE_##x)
FA(MAX_THREADS_PER_BLOCK) FA(SHARED_SIZE_BYTES) FA(CONST_SIZE_BYTES) FA(LOCAL_SIZE_BYTES)
FA(NUM_REGS) FA(PTX_VERSION) FA(BINARY_VERSION) FA(CACHE_MODE_CA)
FA(MAX_DYNAMIC_SHARED_SIZE_BYTES) FA(PREFERRED_SHARED_MEMORY_CARVEOUT)
FA(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)

EQ(CUTE_CU_STREAM_DEFAULT, CU_STREAM_DEFAULT)
EQ(CUTE_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING)
EQ(CUTE_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT)
EQ(CUTE_CU_EVENT_BLOCKING_SYNC, CU_EVENT_BLOCKING_SYNC)
EQ(CUTE_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING)
EQ(CUTE_CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE)
EQ(CUTE_CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_DEVICEMAP)
EQ(CUTE_CU_MEMHOSTALLOC_WRITECOMBINED, CU_MEMHOSTALLOC_WRITECOMBINED)

/* Struct layouts for cuLaunchKernelEx. */
#define SAME_OFF(a, fa, b, fb) \
  _Static_assert(offsetof(a, fa) == offsetof(b, fb), #a "." #fa);
_Static_assert(sizeof(struct cute_cu_launch_attr) == sizeof(CUlaunchAttribute), "attr size");
SAME_OFF(struct cute_cu_launch_attr, id, CUlaunchAttribute, id)
SAME_OFF(struct cute_cu_launch_attr, value, CUlaunchAttribute, value)
SAME_OFF(struct cute_cu_launch_attr, value.cluster_dim.x, CUlaunchAttribute, value.clusterDim.x)
SAME_OFF(struct cute_cu_launch_attr, value.cluster_dim.y, CUlaunchAttribute, value.clusterDim.y)
SAME_OFF(struct cute_cu_launch_attr, value.cluster_dim.z, CUlaunchAttribute, value.clusterDim.z)
_Static_assert(sizeof(struct cute_cu_launch_config) == sizeof(CUlaunchConfig), "config size");
SAME_OFF(struct cute_cu_launch_config, grid_x, CUlaunchConfig, gridDimX)
SAME_OFF(struct cute_cu_launch_config, grid_y, CUlaunchConfig, gridDimY)
SAME_OFF(struct cute_cu_launch_config, grid_z, CUlaunchConfig, gridDimZ)
SAME_OFF(struct cute_cu_launch_config, block_x, CUlaunchConfig, blockDimX)
SAME_OFF(struct cute_cu_launch_config, block_y, CUlaunchConfig, blockDimY)
SAME_OFF(struct cute_cu_launch_config, block_z, CUlaunchConfig, blockDimZ)
SAME_OFF(struct cute_cu_launch_config, smem, CUlaunchConfig, sharedMemBytes)
SAME_OFF(struct cute_cu_launch_config, stream, CUlaunchConfig, hStream)
SAME_OFF(struct cute_cu_launch_config, attrs, CUlaunchConfig, attrs)
SAME_OFF(struct cute_cu_launch_config, num_attrs, CUlaunchConfig, numAttrs)
_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "CUdeviceptr");
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult");
_Static_assert(sizeof(CUdevice_attribute) == sizeof(int), "CUdevice_attribute");
_Static_assert(sizeof(CUjit_option) == sizeof(int), "CUjit_option");
