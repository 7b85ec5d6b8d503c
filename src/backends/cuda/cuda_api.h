/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda_api.h — our own declarations of the parts of the CUDA driver API and of NVRTC that the
 * CUDA backend calls (internal). The library never includes the toolkit's cuda.h or nvrtc.h and
 * never links libcuda or libnvrtc: both are opened with dlopen and every entry point is resolved
 * by name into the function-pointer types below, so blocktune builds on machines without CUDA.
 *
 * The names are CUDA's own, so that the backend reads like any driver-API program; the numbers
 * (enum values, signatures, exported symbol names) are those of CUDA 13.0's cuda.h and nvrtc.h,
 * which are ABI-stable across driver versions. Where cuda.h maps a name onto a versioned symbol
 * (cuMemAlloc -> cuMemAlloc_v2), the pointer type carries the unversioned name and the resolver
 * asks the library for the versioned symbol.
 */
#ifndef BT_BACKENDS_CUDA_CUDA_API_H
#define BT_BACKENDS_CUDA_CUDA_API_H

#if defined(CUDA_VERSION) || defined(__NVRTC_H__)
#error "cuda_api.h replaces the CUDA toolkit headers; do not include both"
#endif

#include <stddef.h>

/* ============================================================================================
 * Driver API types
 * ========================================================================================== */

typedef int CUresult;          /* an enum in cuda.h; int-sized on every ABI we build for */
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* 64-bit on every 64-bit host */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUuuid_st {
    char bytes[16];
} CUuuid;
typedef int CUdevice_attribute;
typedef int CUfunction_attribute;
typedef int CUstreamCaptureMode;
/* CUtensorMap: 128 opaque bytes, 64-byte aligned; the enums that describe one are ints. */
#define CU_TENSOR_MAP_NUM_QWORDS 16
typedef struct CUtensorMap_st {
    _Alignas(64) unsigned long long opaque[CU_TENSOR_MAP_NUM_QWORDS];
} CUtensorMap;
typedef unsigned int cuuint32_t;
typedef unsigned long long cuuint64_t;
enum {
    CU_TENSOR_MAP_DATA_TYPE_UINT8 = 0,
    CU_TENSOR_MAP_DATA_TYPE_UINT16 = 1,
    CU_TENSOR_MAP_DATA_TYPE_UINT32 = 2,
    CU_TENSOR_MAP_DATA_TYPE_INT32 = 3,
    CU_TENSOR_MAP_DATA_TYPE_UINT64 = 4,
    CU_TENSOR_MAP_DATA_TYPE_INT64 = 5,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT32 = 7,
    CU_TENSOR_MAP_DATA_TYPE_FLOAT64 = 8,
    CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9,
    CU_TENSOR_MAP_INTERLEAVE_NONE = 0,
    CU_TENSOR_MAP_SWIZZLE_NONE = 0,
    CU_TENSOR_MAP_SWIZZLE_32B = 1,
    CU_TENSOR_MAP_SWIZZLE_64B = 2,
    CU_TENSOR_MAP_SWIZZLE_128B = 3,
    CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3,
    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0 /* out-of-range elements read as zero */
};

/* CUresult values the backend names or treats specially (the full name/description comes from
 * cuGetErrorName/cuGetErrorString when the driver has them). */
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CUDA_ERROR_INVALID_PTX = 218,
    CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    CUDA_ERROR_CONTAINED = 226,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_TIMEOUT = 702,
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
    CUDA_ERROR_ASSERT = 710,
    CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CUDA_ERROR_INVALID_PC = 718,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_TENSOR_MEMORY_LEAK = 721,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_MPS_CLIENT_TERMINATED = 810,
    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901,
    CUDA_ERROR_EXTERNAL_DEVICE = 911,
    CUDA_ERROR_UNKNOWN = 999
};

/* CUdevice_attribute values. */
enum {
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK = 12,
    CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, /* kHz */
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
    CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,     /* kHz */
    CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37, /* bits */
    CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
    CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR = 82,
    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR = 106,
    CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK = 111
};

/* CUfunction_attribute values. */
enum {
    CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2,
    CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    CU_FUNC_ATTRIBUTE_NUM_REGS = 4,
    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
    CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
};

/* Flags. */
enum {
    CU_STREAM_NON_BLOCKING = 0x1,
    CU_EVENT_DEFAULT = 0x0,
    CU_EVENT_DISABLE_TIMING = 0x2,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1
};

/* cuPointerGetAttribute's attributes (CUpointer_attribute) and the special stream handles. */
enum {
    CU_POINTER_ATTRIBUTE_CONTEXT = 1,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
};
#define CU_STREAM_LEGACY ((CUstream)0x1)
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* ============================================================================================
 * Driver API entry points
 *
 * X(return type, name, exported symbol, parameter list). Required: the backend does not load
 * without any of them (every driver since CUDA 11.4 exports them all).
 * ========================================================================================== */
#define BT__CU_REQUIRED(X)                                                                         \
    X(CUresult, cuInit, "cuInit", (unsigned int flags))                                            \
    X(CUresult, cuDriverGetVersion, "cuDriverGetVersion", (int *version))                          \
    X(CUresult, cuDeviceGetCount, "cuDeviceGetCount", (int *count))                                \
    X(CUresult, cuDeviceGet, "cuDeviceGet", (CUdevice * dev, int ordinal))                         \
    X(CUresult, cuDeviceGetName, "cuDeviceGetName", (char *name, int len, CUdevice dev))           \
    X(CUresult, cuDeviceGetAttribute, "cuDeviceGetAttribute",                                      \
      (int *value, CUdevice_attribute attr, CUdevice dev))                                         \
    X(CUresult, cuDeviceTotalMem, "cuDeviceTotalMem_v2", (size_t * bytes, CUdevice dev))           \
    X(CUresult, cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                              \
      (CUcontext * ctx, CUdevice dev))                                                             \
    X(CUresult, cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", (CUdevice dev))         \
    X(CUresult, cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext ctx))                          \
    X(CUresult, cuCtxPopCurrent, "cuCtxPopCurrent_v2", (CUcontext * ctx))                          \
    X(CUresult, cuStreamCreate, "cuStreamCreate", (CUstream * stream, unsigned int flags))         \
    X(CUresult, cuStreamDestroy, "cuStreamDestroy_v2", (CUstream stream))                          \
    X(CUresult, cuStreamSynchronize, "cuStreamSynchronize", (CUstream stream))                     \
    X(CUresult, cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr * ptr, size_t bytes))                    \
    X(CUresult, cuMemFree, "cuMemFree_v2", (CUdeviceptr ptr))                                      \
    X(CUresult, cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2",                                         \
      (CUdeviceptr dst, const void *src, size_t bytes, CUstream stream))                           \
    X(CUresult, cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2",                                         \
      (void *dst, CUdeviceptr src, size_t bytes, CUstream stream))                                 \
    X(CUresult, cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2",                                         \
      (CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream))                           \
    X(CUresult, cuMemsetD8Async, "cuMemsetD8Async",                                                \
      (CUdeviceptr dst, unsigned char value, size_t count, CUstream stream))                       \
    X(CUresult, cuMemsetD16Async, "cuMemsetD16Async",                                              \
      (CUdeviceptr dst, unsigned short value, size_t count, CUstream stream))                      \
    X(CUresult, cuMemsetD32Async, "cuMemsetD32Async",                                              \
      (CUdeviceptr dst, unsigned int value, size_t count, CUstream stream))                        \
    X(CUresult, cuModuleLoadData, "cuModuleLoadData", (CUmodule * mod, const void *image))         \
    X(CUresult, cuModuleUnload, "cuModuleUnload", (CUmodule mod))                                  \
    X(CUresult, cuModuleGetFunction, "cuModuleGetFunction",                                        \
      (CUfunction * fn, CUmodule mod, const char *name))                                           \
    X(CUresult, cuFuncGetAttribute, "cuFuncGetAttribute",                                          \
      (int *value, CUfunction_attribute attr, CUfunction fn))                                      \
    X(CUresult, cuFuncSetAttribute, "cuFuncSetAttribute",                                          \
      (CUfunction fn, CUfunction_attribute attr, int value))                                       \
    X(CUresult, cuLaunchKernel, "cuLaunchKernel",                                                  \
      (CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,          \
       unsigned int by, unsigned int bz, unsigned int shared_bytes, CUstream stream,               \
       void **params, void **extra))                                                               \
    X(CUresult, cuEventCreate, "cuEventCreate", (CUevent * ev, unsigned int flags))                \
    X(CUresult, cuEventDestroy, "cuEventDestroy_v2", (CUevent ev))                                 \
    X(CUresult, cuEventRecord, "cuEventRecord", (CUevent ev, CUstream stream))                     \
    X(CUresult, cuEventSynchronize, "cuEventSynchronize", (CUevent ev))

/* cuLaunchKernelEx (CUDA 11.8+): a launch with attributes (Triton's clusters, cooperative grids,
 * programmatic dependent launch). */
typedef int CUlaunchAttributeID;
enum {
    CU_LAUNCH_ATTRIBUTE_COOPERATIVE = 2,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4,
    CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE = 5,
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6
};
enum { CU_CLUSTER_SCHEDULING_POLICY_SPREAD = 1 };
typedef union CUlaunchAttributeValue {
    char pad[64];
    int cooperative;
    struct {
        unsigned int x, y, z;
    } clusterDim;
    int clusterSchedulingPolicyPreference;
    int programmaticStreamSerializationAllowed;
} CUlaunchAttributeValue;
typedef struct CUlaunchAttribute {
    CUlaunchAttributeID id;
    char pad[8 - sizeof(CUlaunchAttributeID)];
    CUlaunchAttributeValue value;
} CUlaunchAttribute;
typedef struct CUlaunchConfig {
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    CUstream hStream;
    CUlaunchAttribute *attrs;
    unsigned int numAttrs;
} CUlaunchConfig;
_Static_assert(sizeof(CUlaunchAttribute) == 72, "CUlaunchAttribute is 72 bytes in cuda.h");

/* Optional entry points (NULL when absent): error names, the UUID, graph capture, tensor maps
 * (CUDA 12+), launches with attributes. The two-name ones are resolved from the first symbol, else the second (older
 * drivers). */
#define BT__CU_OPTIONAL(X)                                                                         \
    X(CUresult, cuGetErrorName, "cuGetErrorName", (CUresult err, const char **str))                \
    X(CUresult, cuGetErrorString, "cuGetErrorString", (CUresult err, const char **str))            \
    X(CUresult, cuStreamBeginCapture, "cuStreamBeginCapture_v2",                                   \
      (CUstream stream, CUstreamCaptureMode mode))                                                 \
    X(CUresult, cuStreamEndCapture, "cuStreamEndCapture", (CUstream stream, CUgraph * graph))      \
    X(CUresult, cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",                        \
      (CUgraphExec * exec, CUgraph graph, unsigned long long flags))                               \
    X(CUresult, cuGraphLaunch, "cuGraphLaunch", (CUgraphExec exec, CUstream stream))               \
    X(CUresult, cuGraphExecDestroy, "cuGraphExecDestroy", (CUgraphExec exec))                      \
    X(CUresult, cuGraphDestroy, "cuGraphDestroy", (CUgraph graph))                                \
    X(CUresult, cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",                                  \
      (CUtensorMap * map, int dtype, cuuint32_t rank, void *addr, const cuuint64_t *dims,          \
       const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *elem_strides,           \
       int interleave, int swizzle, int l2_promotion, int oob_fill))                               \
    X(CUresult, cuModuleGetGlobal, "cuModuleGetGlobal_v2",                                         \
      (CUdeviceptr * ptr, size_t *bytes, CUmodule mod, const char *name))                           \
    X(CUresult, cuPointerGetAttribute, "cuPointerGetAttribute",                                    \
      (void *data, int attribute, CUdeviceptr ptr))                                                \
    X(CUresult, cuCtxGetDevice, "cuCtxGetDevice", (CUdevice * dev))                                \
    X(CUresult, cuStreamGetCtx, "cuStreamGetCtx", (CUstream stream, CUcontext * ctx))              \
    X(CUresult, cuCtxGetCurrent, "cuCtxGetCurrent", (CUcontext * ctx))                             \
    X(CUresult, cuLaunchKernelEx, "cuLaunchKernelEx",                                              \
      (const CUlaunchConfig *config, CUfunction fn, void **params, void **extra))                  \
    X(CUresult, cuStreamWaitEvent, "cuStreamWaitEvent",                                            \
      (CUstream stream, CUevent ev, unsigned int flags))

#define BT__CU_FALLBACK(X)                                                                         \
    X(CUresult, cuDeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid",                          \
      (CUuuid * uuid, CUdevice dev))                                                               \
    X(CUresult, cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime",                 \
      (float *ms, CUevent start, CUevent end))

/* ============================================================================================
 * NVRTC
 * ========================================================================================== */

typedef int nvrtcResult;
typedef struct _nvrtcProgram *nvrtcProgram;

enum {
    NVRTC_SUCCESS = 0,
    NVRTC_ERROR_OUT_OF_MEMORY = 1,
    NVRTC_ERROR_PROGRAM_CREATION_FAILURE = 2,
    NVRTC_ERROR_INVALID_INPUT = 3,
    NVRTC_ERROR_INVALID_PROGRAM = 4,
    NVRTC_ERROR_INVALID_OPTION = 5,
    NVRTC_ERROR_COMPILATION = 6,
    NVRTC_ERROR_BUILTIN_OPERATION_FAILURE = 7,
    NVRTC_ERROR_INTERNAL_ERROR = 11
};

/* X(return type, name, parameter list): exported under their own names. */
#define BT__NVRTC_REQUIRED(X)                                                                      \
    X(const char *, nvrtcGetErrorString, (nvrtcResult r))                                          \
    X(nvrtcResult, nvrtcVersion, (int *major, int *minor))                                         \
    X(nvrtcResult, nvrtcCreateProgram,                                                             \
      (nvrtcProgram * prog, const char *src, const char *name, int nheaders,                       \
       const char *const *headers, const char *const *include_names))                              \
    X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * prog))                                     \
    X(nvrtcResult, nvrtcCompileProgram,                                                            \
      (nvrtcProgram prog, int noptions, const char *const *options))                               \
    X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *size))                           \
    X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin))                                \
    X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t *size))                      \
    X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log))

#define BT__NVRTC_OPTIONAL(X)                                                                      \
    X(nvrtcResult, nvrtcGetNumSupportedArchs, (int *n))                                            \
    X(nvrtcResult, nvrtcGetSupportedArchs, (int *archs))                                           \
    X(nvrtcResult, nvrtcAddNameExpression, (nvrtcProgram prog, const char *name_expression))       \
    X(nvrtcResult, nvrtcGetLoweredName,                                                            \
      (nvrtcProgram prog, const char *name_expression, const char **lowered_name))

#endif
