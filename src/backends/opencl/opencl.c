/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opencl.c — the OpenCL backend: fills bt__backend_iface over the OpenCL ICD loader.
 *
 * The loader (libOpenCL.so.1, then libOpenCL.so, or only $BLOCKTUNE_OPENCL_LIBRARY when set) is
 * opened with bt__dl_open and every cl* entry point is resolved into a function-pointer table; the
 * Khronos headers give types and constants only, the library never links -lOpenCL. Devices are all
 * devices of all platforms, flattened in platform order then device order ("opencl:N").
 *
 * An opened device is one cl_context holding that device and one in-order command queue with
 * profiling enabled. Every CL status that is not CL_SUCCESS becomes a bt_status with
 * "clFunction: CL_ERROR_NAME (code)" in the diag.
 *
 * Compiled blobs are a small container (magic, kind, size, checksum) around the device binary, so
 * that a truncated or foreign cache entry is refused with BT_CORRUPT before it reaches the driver;
 * a device that cannot return a binary gets a source container instead, rebuilt at load time.
 *
 * Threading: compile() may run on several threads at once on the same device (OpenCL makes
 * program creation and building on one context thread-safe). A cl_kernel is not safe for
 * concurrent clSetKernelArg + enqueue, so each bt__bfn carries a mutex held across a launch:
 * concurrent launches of the same function are serialised, launches of different ones are not.
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include "backends/opencl/opencl.h"
#include "core/util.h"
#include "platform/dl.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Vendor extension queries (cl_nv_device_attribute_query, cl_amd_device_attribute_query,
 * cl_khr_device_uuid); defined here so that the code does not depend on cl_ext.h's version. */
#define BT__CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV 0x4000
#define BT__CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV 0x4001
#define BT__CL_DEVICE_REGISTERS_PER_BLOCK_NV 0x4002
#define BT__CL_DEVICE_WARP_SIZE_NV 0x4003
#define BT__CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
#define BT__CL_DEVICE_UUID_KHR 0x106A
#define BT__CL_UUID_SIZE 16

/* ============================================================================================
 * Error names
 * ========================================================================================== */

/* clang-format off */
#define E(n) {n, #n}
/* clang-format on */
static const struct {
    int code;
    const char *name;
} ocl_errors[] = {
    E(CL_SUCCESS),
    E(CL_DEVICE_NOT_FOUND),
    E(CL_DEVICE_NOT_AVAILABLE),
    E(CL_COMPILER_NOT_AVAILABLE),
    E(CL_MEM_OBJECT_ALLOCATION_FAILURE),
    E(CL_OUT_OF_RESOURCES),
    E(CL_OUT_OF_HOST_MEMORY),
    E(CL_PROFILING_INFO_NOT_AVAILABLE),
    E(CL_MEM_COPY_OVERLAP),
    E(CL_IMAGE_FORMAT_MISMATCH),
    E(CL_IMAGE_FORMAT_NOT_SUPPORTED),
    E(CL_BUILD_PROGRAM_FAILURE),
    E(CL_MAP_FAILURE),
    E(CL_MISALIGNED_SUB_BUFFER_OFFSET),
    E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
    E(CL_COMPILE_PROGRAM_FAILURE),
    E(CL_LINKER_NOT_AVAILABLE),
    E(CL_LINK_PROGRAM_FAILURE),
    E(CL_DEVICE_PARTITION_FAILED),
    E(CL_KERNEL_ARG_INFO_NOT_AVAILABLE),
    E(CL_INVALID_VALUE),
    E(CL_INVALID_DEVICE_TYPE),
    E(CL_INVALID_PLATFORM),
    E(CL_INVALID_DEVICE),
    E(CL_INVALID_CONTEXT),
    E(CL_INVALID_QUEUE_PROPERTIES),
    E(CL_INVALID_COMMAND_QUEUE),
    E(CL_INVALID_HOST_PTR),
    E(CL_INVALID_MEM_OBJECT),
    E(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
    E(CL_INVALID_IMAGE_SIZE),
    E(CL_INVALID_SAMPLER),
    E(CL_INVALID_BINARY),
    E(CL_INVALID_BUILD_OPTIONS),
    E(CL_INVALID_PROGRAM),
    E(CL_INVALID_PROGRAM_EXECUTABLE),
    E(CL_INVALID_KERNEL_NAME),
    E(CL_INVALID_KERNEL_DEFINITION),
    E(CL_INVALID_KERNEL),
    E(CL_INVALID_ARG_INDEX),
    E(CL_INVALID_ARG_VALUE),
    E(CL_INVALID_ARG_SIZE),
    E(CL_INVALID_KERNEL_ARGS),
    E(CL_INVALID_WORK_DIMENSION),
    E(CL_INVALID_WORK_GROUP_SIZE),
    E(CL_INVALID_WORK_ITEM_SIZE),
    E(CL_INVALID_GLOBAL_OFFSET),
    E(CL_INVALID_EVENT_WAIT_LIST),
    E(CL_INVALID_EVENT),
    E(CL_INVALID_OPERATION),
    E(CL_INVALID_GL_OBJECT),
    E(CL_INVALID_BUFFER_SIZE),
    E(CL_INVALID_MIP_LEVEL),
    E(CL_INVALID_GLOBAL_WORK_SIZE),
    E(CL_INVALID_PROPERTY),
    E(CL_INVALID_IMAGE_DESCRIPTOR),
    E(CL_INVALID_COMPILER_OPTIONS),
    E(CL_INVALID_LINKER_OPTIONS),
    E(CL_INVALID_DEVICE_PARTITION_COUNT),
    E(CL_INVALID_PIPE_SIZE),
    E(CL_INVALID_DEVICE_QUEUE),
    E(CL_INVALID_SPEC_ID),
    E(CL_MAX_SIZE_RESTRICTION_EXCEEDED),
#undef E
    /* Extension codes met in practice (cl_ext.h, cl_gl.h, vendor drivers). */
    {-1000, "CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
    {-1057, "CL_DEVICE_PARTITION_FAILED_EXT"},
    {-1058, "CL_INVALID_PARTITION_COUNT_EXT"},
    {-1059, "CL_INVALID_PARTITION_NAME_EXT"},
    {-1121, "CL_CONTEXT_TERMINATED_KHR"},
    {-1138, "CL_INVALID_COMMAND_BUFFER_KHR"},
    {-1139, "CL_INVALID_SYNC_POINT_WAIT_LIST_KHR"},
    {-1140, "CL_INCOMPATIBLE_COMMAND_QUEUE_KHR"},
    {-1141, "CL_INVALID_MUTABLE_COMMAND_KHR"},
    {-1142, "CL_INVALID_SEMAPHORE_KHR"},
};

const char *bt__cl_error_name(int code)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(ocl_errors); i++)
        if (ocl_errors[i].code == code)
            return ocl_errors[i].name;
    return "CL_UNKNOWN_ERROR";
}

/* The bt_status a failing CL call maps to when the call site has no better idea. */
static bt_status ocl_status(cl_int err)
{
    switch (err) {
    case CL_OUT_OF_HOST_MEMORY:
        return BT_NOMEM;
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return BT_RESOURCES;
    default:
        return BT_BACKEND;
    }
}

/* Writes "fn: NAME (code)" into diag and returns st. */
static bt_status ocl_fail(bt_diag *diag, bt_status st, const char *fn, cl_int err)
{
    bt__diag_set(diag, "%s: %s (%d)", fn, bt__cl_error_name(err), (int)err);
    return st;
}

/* ============================================================================================
 * The function table
 * ========================================================================================== */

/* X(return type, name, parameter list). Required entry points: load fails without any of them. */
#define BT__CL_REQUIRED(X)                                                                         \
    X(cl_int, clGetPlatformIDs, (cl_uint, cl_platform_id *, cl_uint *))                            \
    X(cl_int, clGetPlatformInfo, (cl_platform_id, cl_platform_info, size_t, void *, size_t *))     \
    X(cl_int, clGetDeviceIDs,                                                                      \
      (cl_platform_id, cl_device_type, cl_uint, cl_device_id *, cl_uint *))                        \
    X(cl_int, clGetDeviceInfo, (cl_device_id, cl_device_info, size_t, void *, size_t *))           \
    X(cl_context, clCreateContext,                                                                 \
      (const cl_context_properties *, cl_uint, const cl_device_id *,                               \
       void(CL_CALLBACK *)(const char *, const void *, size_t, void *), void *, cl_int *))         \
    X(cl_int, clReleaseContext, (cl_context))                                                      \
    X(cl_command_queue, clCreateCommandQueue,                                                      \
      (cl_context, cl_device_id, cl_command_queue_properties, cl_int *))                           \
    X(cl_int, clReleaseCommandQueue, (cl_command_queue))                                           \
    X(cl_mem, clCreateBuffer, (cl_context, cl_mem_flags, size_t, void *, cl_int *))                \
    X(cl_int, clReleaseMemObject, (cl_mem))                                                        \
    X(cl_int, clEnqueueWriteBuffer,                                                                \
      (cl_command_queue, cl_mem, cl_bool, size_t, size_t, const void *, cl_uint, const cl_event *, \
       cl_event *))                                                                                \
    X(cl_int, clEnqueueReadBuffer,                                                                 \
      (cl_command_queue, cl_mem, cl_bool, size_t, size_t, void *, cl_uint, const cl_event *,       \
       cl_event *))                                                                                \
    X(cl_int, clEnqueueFillBuffer,                                                                 \
      (cl_command_queue, cl_mem, const void *, size_t, size_t, size_t, cl_uint, const cl_event *,  \
       cl_event *))                                                                                \
    X(cl_int, clEnqueueCopyBuffer,                                                                 \
      (cl_command_queue, cl_mem, cl_mem, size_t, size_t, size_t, cl_uint, const cl_event *,        \
       cl_event *))                                                                                \
    X(cl_program, clCreateProgramWithSource,                                                       \
      (cl_context, cl_uint, const char **, const size_t *, cl_int *))                              \
    X(cl_program, clCreateProgramWithBinary,                                                       \
      (cl_context, cl_uint, const cl_device_id *, const size_t *, const unsigned char **,          \
       cl_int *, cl_int *))                                                                        \
    X(cl_int, clBuildProgram,                                                                      \
      (cl_program, cl_uint, const cl_device_id *, const char *,                                    \
       void(CL_CALLBACK *)(cl_program, void *), void *))                                           \
    X(cl_int, clGetProgramInfo, (cl_program, cl_program_info, size_t, void *, size_t *))           \
    X(cl_int, clGetProgramBuildInfo,                                                               \
      (cl_program, cl_device_id, cl_program_build_info, size_t, void *, size_t *))                 \
    X(cl_int, clReleaseProgram, (cl_program))                                                      \
    X(cl_kernel, clCreateKernel, (cl_program, const char *, cl_int *))                             \
    X(cl_int, clReleaseKernel, (cl_kernel))                                                        \
    X(cl_int, clGetKernelWorkGroupInfo,                                                            \
      (cl_kernel, cl_device_id, cl_kernel_work_group_info, size_t, void *, size_t *))              \
    X(cl_int, clSetKernelArg, (cl_kernel, cl_uint, size_t, const void *))                          \
    X(cl_int, clEnqueueNDRangeKernel,                                                              \
      (cl_command_queue, cl_kernel, cl_uint, const size_t *, const size_t *, const size_t *,       \
       cl_uint, const cl_event *, cl_event *))                                                     \
    X(cl_int, clWaitForEvents, (cl_uint, const cl_event *))                                        \
    X(cl_int, clGetEventProfilingInfo, (cl_event, cl_profiling_info, size_t, void *, size_t *))    \
    X(cl_int, clGetEventInfo, (cl_event, cl_event_info, size_t, void *, size_t *))                 \
    X(cl_int, clReleaseEvent, (cl_event))                                                          \
    X(cl_int, clFinish, (cl_command_queue))

/* Optional entry points: NULL when the loader lacks them. */
#define BT__CL_OPTIONAL(X)                                                                         \
    X(cl_command_queue, clCreateCommandQueueWithProperties,                                        \
      (cl_context, cl_device_id, const cl_queue_properties *, cl_int *))                           \
    X(cl_int, clGetContextInfo, (cl_context, cl_context_info, size_t, void *, size_t *))           \
    X(cl_int, clGetMemObjectInfo, (cl_mem, cl_mem_info, size_t, void *, size_t *))                 \
    X(cl_int, clGetCommandQueueInfo,                                                               \
      (cl_command_queue, cl_command_queue_info, size_t, void *, size_t *))                         \
    X(cl_int, clRetainContext, (cl_context))                                                       \
    X(cl_int, clRetainCommandQueue, (cl_command_queue))                                            \
    X(cl_int, clEnqueueMarkerWithWaitList,                                                         \
      (cl_command_queue, cl_uint, const cl_event *, cl_event *))                                   \
    X(cl_int, clEnqueueBarrierWithWaitList,                                                        \
      (cl_command_queue, cl_uint, const cl_event *, cl_event *))

typedef struct ocl_api {
#define BT__CL_MEMBER(ret, name, params) ret(CL_API_CALL *name) params;
    BT__CL_REQUIRED(BT__CL_MEMBER)
    BT__CL_OPTIONAL(BT__CL_MEMBER)
#undef BT__CL_MEMBER
} ocl_api;

/* One device of the flattened list. */
typedef struct ocl_devref {
    cl_platform_id platform;
    cl_device_id device;
    int platform_major; /* the platform's OpenCL version, for the queue-creation entry point */
} ocl_devref;

/* The backend context: the loader and the device list. */
typedef struct ocl_ctx {
    void *lib;
    ocl_api api;
    int ndev;
    ocl_devref *devs;
} ocl_ctx;

/* ============================================================================================
 * Objects
 * ========================================================================================== */

struct bt__bdev {
    ocl_ctx *cx;
    const ocl_api *api;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    cl_command_queue user_q; /* the caller's queue (device_wrap), retained: launch_on's default */
    size_t max_wg;
    size_t max_items[3];
    cl_ulong local_mem;
    size_t flush_bytes;   /* size of the cache-flush buffer */
    cl_mem flush_buf;     /* allocated by the first flush_cache */
    uint32_t flush_count; /* changes the fill pattern at each flush */
};

struct bt__bbuf {
    cl_mem mem;
    size_t size;
    int borrowed; /* the caller's cl_mem (buf_wrap): never released here */
};

struct bt__bfn {
    cl_kernel k;
    char *name;
    size_t wg_max;         /* CL_KERNEL_WORK_GROUP_SIZE */
    cl_ulong static_local; /* CL_KERNEL_LOCAL_MEM_SIZE */
    bt__kres res;
    pthread_mutex_t lock; /* held across clSetKernelArg + enqueue */
    struct bt__bfn *next;
};

/* A module owns the functions taken from it (the vtable has no function_free). */
struct bt__bmod {
    cl_program prog;
    bt__bfn *fns;
};

struct bt__btimer {
    cl_event ev; /* the last timed launch, NULL before the first */
};

/* ============================================================================================
 * Load and device list
 * ========================================================================================== */

static void ocl_unload(void *ctx)
{
    ocl_ctx *cx = ctx;
    if (!cx)
        return;
    free(cx->devs);
    bt__dl_close(cx->lib);
    free(cx);
}

/* Parses the "X.Y" after "OpenCL " in a version string; 0 when it cannot. */
static int ocl_version_major(const char *v)
{
    int major = 0, minor = 0;
    if (sscanf(v, "OpenCL %d.%d", &major, &minor) != 2)
        return 0;
    return major;
}

/* Loads the ICD loader and lists every device of every platform. Returns BT_NO_BACKEND (reason in
 * diag) when the library, an entry point, any platform or any device is missing. *ctx is freed by
 * ocl_unload. */
static bt_status ocl_load(void **ctx, bt_diag *diag)
{
    *ctx = NULL;
    const char *env = getenv(BT__OPENCL_LIBRARY_ENV);
    const char *defaults[] = {"libOpenCL.so.1", "libOpenCL.so", NULL};
    const char *override[] = {env, NULL};
    const char *const *names = (env && *env) ? override : defaults;

    ocl_ctx *cx = calloc(1, sizeof *cx);
    if (!cx)
        return BT_NOMEM;
    bt_diag dd = {0};
    cx->lib = bt__dl_open(names, NULL, &dd);
    if (!cx->lib) {
        if (env && *env)
            bt__diag_set(diag, "cannot load %s=%s: %s", BT__OPENCL_LIBRARY_ENV, env, dd.msg);
        else
            bt__diag_set(diag, "no OpenCL ICD loader (libOpenCL.so.1): %s", dd.msg);
        free(cx);
        return BT_NO_BACKEND;
    }
#define BT__CL_RESOLVE(ret, name, params)                                                          \
    cx->api.name = (ret(CL_API_CALL *) params)bt__dl_sym(cx->lib, #name, &dd);                     \
    if (!cx->api.name) {                                                                           \
        bt__diag_set(diag, "the OpenCL library lacks %s (a loader older than OpenCL 1.2?)",        \
                     #name);                                                                       \
        ocl_unload(cx);                                                                            \
        return BT_NO_BACKEND;                                                                      \
    }
    BT__CL_REQUIRED(BT__CL_RESOLVE)
#undef BT__CL_RESOLVE
#define BT__CL_RESOLVE_OPT(ret, name, params)                                                      \
    cx->api.name = (ret(CL_API_CALL *) params)bt__dl_sym(cx->lib, #name, NULL);
    BT__CL_OPTIONAL(BT__CL_RESOLVE_OPT)
#undef BT__CL_RESOLVE_OPT

    const ocl_api *a = &cx->api;
    cl_uint nplat = 0;
    cl_int err = a->clGetPlatformIDs(0, NULL, &nplat);
    if (err == CL_SUCCESS && nplat == 0)
        err = -1001; /* CL_PLATFORM_NOT_FOUND_KHR, what ICD loaders return for "no vendor ICD" */
    if (err != CL_SUCCESS) {
        ocl_fail(diag, BT_NO_BACKEND, "clGetPlatformIDs", err);
        bt__diag_prefix(diag,
                        "no OpenCL platform (is a vendor ICD listed in /etc/OpenCL/vendors?): ");
        ocl_unload(cx);
        return BT_NO_BACKEND;
    }
    cl_platform_id *plats = calloc(nplat, sizeof *plats);
    if (!plats) {
        ocl_unload(cx);
        return BT_NOMEM;
    }
    err = a->clGetPlatformIDs(nplat, plats, NULL);
    if (err != CL_SUCCESS) {
        free(plats);
        ocl_unload(cx);
        return ocl_fail(diag, BT_NO_BACKEND, "clGetPlatformIDs", err);
    }
    for (cl_uint p = 0; p < nplat; p++) {
        char ver[256] = "";
        if (a->clGetPlatformInfo(plats[p], CL_PLATFORM_VERSION, sizeof ver - 1, ver, NULL) !=
            CL_SUCCESS)
            ver[0] = '\0';
        cl_uint n = 0;
        err = a->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n);
        if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && n == 0))
            continue; /* a platform without devices is simply empty */
        if (err != CL_SUCCESS) {
            free(plats);
            ocl_unload(cx);
            return ocl_fail(diag, BT_NO_BACKEND, "clGetDeviceIDs", err);
        }
        cl_device_id *ids = calloc(n, sizeof *ids);
        ocl_devref *grown = realloc(cx->devs, (size_t)(cx->ndev + (int)n) * sizeof *grown);
        if (!ids || !grown) {
            free(ids);
            if (grown)
                cx->devs = grown;
            free(plats);
            ocl_unload(cx);
            return BT_NOMEM;
        }
        cx->devs = grown;
        err = a->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, n, ids, NULL);
        if (err != CL_SUCCESS) {
            free(ids);
            free(plats);
            ocl_unload(cx);
            return ocl_fail(diag, BT_NO_BACKEND, "clGetDeviceIDs", err);
        }
        for (cl_uint i = 0; i < n; i++)
            cx->devs[cx->ndev++] = (ocl_devref){plats[p], ids[i], ocl_version_major(ver)};
        free(ids);
    }
    free(plats);
    if (cx->ndev == 0) {
        bt__diag_set(diag, "%u OpenCL platform%s but no device", (unsigned)nplat,
                     nplat == 1 ? "" : "s");
        ocl_unload(cx);
        return BT_NO_BACKEND;
    }
    *ctx = cx;
    return BT_OK;
}

static int ocl_device_count(void *ctx)
{
    return ctx ? ((ocl_ctx *)ctx)->ndev : 0;
}

/* Reads a string device/platform property into buf (truncated, trimmed of surrounding spaces,
 * which some vendors pad names with). Returns the CL status. */
static cl_int ocl_str(const ocl_api *a, cl_device_id dev, cl_platform_id plat, cl_uint param,
                      char *buf, size_t size)
{
    size_t need = 0;
    cl_int err = dev ? a->clGetDeviceInfo(dev, param, 0, NULL, &need)
                     : a->clGetPlatformInfo(plat, param, 0, NULL, &need);
    if (err != CL_SUCCESS)
        return err;
    char *tmp = calloc(need + 1, 1);
    if (!tmp)
        return CL_OUT_OF_HOST_MEMORY;
    err = dev ? a->clGetDeviceInfo(dev, param, need, tmp, NULL)
              : a->clGetPlatformInfo(plat, param, need, tmp, NULL);
    if (err == CL_SUCCESS) {
        const char *s = tmp;
        while (isspace((unsigned char)*s))
            s++;
        snprintf(buf, size, "%s", s);
        size_t len = strlen(buf);
        while (len && isspace((unsigned char)buf[len - 1]))
            buf[--len] = '\0';
    }
    free(tmp);
    return err;
}

/* Reads a fixed-size device property. */
static cl_int ocl_dev(const ocl_api *a, cl_device_id dev, cl_uint param, void *out, size_t size)
{
    return a->clGetDeviceInfo(dev, param, size, out, NULL);
}

/* Whether the space-separated extension list `exts` names `ext` as a whole word. */
static int has_ext(const char *exts, const char *ext)
{
    size_t n = strlen(ext);
    for (const char *p = exts; (p = strstr(p, ext)) != NULL; p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return 1;
    return 0;
}

/* The device's extension string, malloc'd (empty on failure). */
static char *ocl_extensions(const ocl_api *a, cl_device_id dev)
{
    size_t need = 0;
    char *s = NULL;
    if (a->clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &need) == CL_SUCCESS) {
        s = calloc(need + 1, 1);
        if (s && a->clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, need, s, NULL) != CL_SUCCESS)
            s[0] = '\0';
    }
    return s ? s : bt__strdup("");
}

#define CL_TRY_STR(param, field)                                                                   \
    do {                                                                                           \
        cl_int e_ = ocl_str(a, r->device, NULL, param, field, sizeof field);                       \
        if (e_ != CL_SUCCESS)                                                                      \
            return ocl_fail(diag, ocl_status(e_), "clGetDeviceInfo(" #param ")", e_);              \
    } while (0)
#define CL_TRY_DEV(param, var)                                                                     \
    do {                                                                                           \
        cl_int e_ = ocl_dev(a, r->device, param, &(var), sizeof(var));                             \
        if (e_ != CL_SUCCESS)                                                                      \
            return ocl_fail(diag, ocl_status(e_), "clGetDeviceInfo(" #param ")", e_);              \
    } while (0)

/* Fills *out from the device's queries. Fields it cannot tell stay 0 (the device layer merges the
 * hardware table afterwards). */
static bt_status ocl_device_info(void *ctx, int idx, bt_device_info *out, bt_diag *diag)
{
    ocl_ctx *cx = ctx;
    memset(out, 0, sizeof *out);
    if (!cx || idx < 0 || idx >= cx->ndev) {
        bt__diag_set(diag, "no OpenCL device %d (there are %d)", idx, cx ? cx->ndev : 0);
        return BT_NO_DEVICE;
    }
    const ocl_api *a = &cx->api;
    const ocl_devref *r = &cx->devs[idx];
    snprintf(out->id, sizeof out->id, "opencl:%d", idx);
    snprintf(out->backend, sizeof out->backend, "opencl");
    out->index = idx;
    CL_TRY_STR(CL_DEVICE_NAME, out->name);
    CL_TRY_STR(CL_DEVICE_VENDOR, out->vendor);
    CL_TRY_STR(CL_DEVICE_VERSION, out->api_version);
    CL_TRY_STR(CL_DRIVER_VERSION, out->driver_version);
    CL_TRY_STR(CL_DEVICE_OPENCL_C_VERSION, out->compiler_version);
    cl_int e = ocl_str(a, NULL, r->platform, CL_PLATFORM_NAME, out->platform, sizeof out->platform);
    if (e != CL_SUCCESS)
        return ocl_fail(diag, ocl_status(e), "clGetPlatformInfo(CL_PLATFORM_NAME)", e);

    cl_device_type type = 0;
    cl_uint cu = 0, clock = 0;
    size_t wg = 0;
    cl_ulong local = 0, cache = 0, global = 0;
    CL_TRY_DEV(CL_DEVICE_TYPE, type);
    CL_TRY_DEV(CL_DEVICE_MAX_COMPUTE_UNITS, cu);
    CL_TRY_DEV(CL_DEVICE_MAX_WORK_GROUP_SIZE, wg);
    CL_TRY_DEV(CL_DEVICE_LOCAL_MEM_SIZE, local);
    CL_TRY_DEV(CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, cache);
    CL_TRY_DEV(CL_DEVICE_GLOBAL_MEM_SIZE, global);
    CL_TRY_DEV(CL_DEVICE_MAX_CLOCK_FREQUENCY, clock);
    out->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;

    bt_gpu *g = &out->props;
    snprintf(g->name, sizeof g->name, "%.*s", (int)sizeof g->name - 1, out->name);
    snprintf(g->vendor, sizeof g->vendor, "%.*s", (int)sizeof g->vendor - 1, out->vendor);
    g->sm_count = (int)cu;
    g->max_threads_per_block = wg > (size_t)INT32_MAX ? INT32_MAX : (int)wg;
    g->smem_per_block = g->smem_per_block_optin = (int64_t)local;
    g->l2_bytes = (int64_t)cache;
    g->mem_bytes = (int64_t)global;
    g->clock_mhz = clock;
    snprintf(g->source, sizeof g->source, "OpenCL device query (%s)", out->platform);

    char *exts = ocl_extensions(a, r->device);
    if (!exts)
        return BT_NOMEM;
    /* Warp size: the vendor's own query where there is one (NVIDIA warp, AMD wavefront);
     * otherwise 32 for GPUs — the common SIMD width of NVIDIA, Apple and most Intel/Mali
     * schedulers, and what the model's rules assume — and 1 for CPUs and accelerators, whose
     * work-items are not executed in lock-step groups the model could reason about. */
    cl_uint v = 0;
    if (has_ext(exts, "cl_nv_device_attribute_query")) {
        if (ocl_dev(a, r->device, BT__CL_DEVICE_WARP_SIZE_NV, &v, sizeof v) == CL_SUCCESS)
            g->warp_size = (int)v;
        if (ocl_dev(a, r->device, BT__CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV, &v, sizeof v) ==
            CL_SUCCESS)
            g->cc_major = (int)v;
        if (ocl_dev(a, r->device, BT__CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV, &v, sizeof v) ==
            CL_SUCCESS)
            g->cc_minor = (int)v;
        if (ocl_dev(a, r->device, BT__CL_DEVICE_REGISTERS_PER_BLOCK_NV, &v, sizeof v) == CL_SUCCESS)
            g->regs_per_block = (int)v;
    } else if (has_ext(exts, "cl_amd_device_attribute_query")) {
        if (ocl_dev(a, r->device, BT__CL_DEVICE_WAVEFRONT_WIDTH_AMD, &v, sizeof v) == CL_SUCCESS)
            g->warp_size = (int)v;
    }
    if (g->warp_size <= 0)
        g->warp_size = out->is_gpu ? 32 : 1;
    if (has_ext(exts, "cl_khr_device_uuid")) {
        unsigned char u[BT__CL_UUID_SIZE];
        if (ocl_dev(a, r->device, BT__CL_DEVICE_UUID_KHR, u, sizeof u) == CL_SUCCESS)
            snprintf(out->uuid, sizeof out->uuid,
                     "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                     u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                     u[13], u[14], u[15]);
    }
    free(exts);
    return BT_OK;
}

/* ============================================================================================
 * Device open / close
 * ========================================================================================== */

/* Size of the host's largest CPU cache from sysfs, 0 when unknown. */
static size_t host_llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        unsigned long long n = 0;
        char unit = 0;
        int got = fscanf(f, "%llu%c", &n, &unit);
        fclose(f);
        if (got < 1)
            continue;
        if (got == 2 && (unit == 'K' || unit == 'k'))
            n <<= 10;
        else if (got == 2 && (unit == 'M' || unit == 'm'))
            n <<= 20;
        else if (got == 2 && (unit == 'G' || unit == 'g'))
            n <<= 30;
        if ((size_t)n > best)
            best = (size_t)n;
    }
    return best;
}

/* The size of the buffer flush_cache writes: twice the last-level cache, because a write of
 * exactly the cache's size leaves lines behind under non-LRU replacement, at least 2 MiB, and at
 * most an eighth of the device's memory and its largest allocation. CPU devices often report the
 * L2 of one core as CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, while the data a kernel reads back would sit
 * in the shared L3: below 8 MiB on a CPU we read the host's largest cache level from sysfs instead.
 */
static size_t flush_size(const ocl_api *a, cl_device_id dev)
{
    cl_ulong cache = 0, global = 0, max_alloc = 0;
    cl_device_type type = 0;
    (void)ocl_dev(a, dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, &cache, sizeof cache);
    (void)ocl_dev(a, dev, CL_DEVICE_GLOBAL_MEM_SIZE, &global, sizeof global);
    (void)ocl_dev(a, dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &max_alloc, sizeof max_alloc);
    (void)ocl_dev(a, dev, CL_DEVICE_TYPE, &type, sizeof type);
    size_t llc = (size_t)cache;
    if ((type & CL_DEVICE_TYPE_CPU) && llc < ((size_t)8 << 20)) {
        size_t host = host_llc_bytes();
        if (host > llc)
            llc = host;
    }
    size_t bytes = 2 * llc;
    if (bytes < ((size_t)2 << 20))
        bytes = (size_t)2 << 20;
    if (global && bytes > global / 8)
        bytes = (size_t)(global / 8);
    if (max_alloc && bytes > max_alloc)
        bytes = (size_t)max_alloc;
    return bytes & ~(size_t)3; /* a whole number of 4-byte patterns */
}

/* The device's work-item limits of the first three dimensions (a device may report more). */
static cl_int max_item_sizes(const ocl_api *a, cl_device_id dev, size_t out[3])
{
    cl_uint dims = 0;
    cl_int err = ocl_dev(a, dev, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, &dims, sizeof dims);
    if (err != CL_SUCCESS)
        return err;
    size_t *all = calloc(dims > 3 ? dims : 3, sizeof *all);
    if (!all)
        return CL_OUT_OF_HOST_MEMORY;
    for (int i = 0; i < 3; i++)
        all[i] = 1; /* dimensions the device lacks take blocks of 1 only */
    err = ocl_dev(a, dev, CL_DEVICE_MAX_WORK_ITEM_SIZES, all, dims * sizeof *all);
    memcpy(out, all, 3 * sizeof *all);
    free(all);
    return err;
}

static void ocl_device_close(bt__bdev *d)
{
    if (!d)
        return;
    const ocl_api *a = d->api;
    if (d->q)
        a->clFinish(d->q);
    if (d->flush_buf)
        a->clReleaseMemObject(d->flush_buf);
    if (d->q)
        a->clReleaseCommandQueue(d->q);
    if (d->user_q) /* the reference device_wrap took; the caller's queue is never finished here */
        a->clReleaseCommandQueue(d->user_q);
    if (d->ctx)
        a->clReleaseContext(d->ctx);
    free(d);
}

/* Opens device idx: a context of its own (or the caller's, user_ctx, with a reference taken)
 * and an in-order queue with profiling. Freed by ocl_device_close. */
static bt_status open_in(void *ctx, int idx, cl_context user_ctx, bt__bdev **out, bt_diag *diag)
{
    *out = NULL;
    ocl_ctx *cx = ctx;
    if (!cx || idx < 0 || idx >= cx->ndev) {
        bt__diag_set(diag, "no OpenCL device %d (there are %d)", idx, cx ? cx->ndev : 0);
        return BT_NO_DEVICE;
    }
    const ocl_api *a = &cx->api;
    const ocl_devref *r = &cx->devs[idx];
    bt__bdev *d = calloc(1, sizeof *d);
    if (!d)
        return BT_NOMEM;
    d->cx = cx;
    d->api = a;
    d->dev = r->device;

    cl_int err = CL_SUCCESS;
    const char *fn = NULL;
    if ((err = ocl_dev(a, d->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, &d->max_wg, sizeof d->max_wg)))
        fn = "clGetDeviceInfo(CL_DEVICE_MAX_WORK_GROUP_SIZE)";
    else if ((err = max_item_sizes(a, d->dev, d->max_items)))
        fn = "clGetDeviceInfo(CL_DEVICE_MAX_WORK_ITEM_SIZES)";
    else if ((err =
                  ocl_dev(a, d->dev, CL_DEVICE_LOCAL_MEM_SIZE, &d->local_mem, sizeof d->local_mem)))
        fn = "clGetDeviceInfo(CL_DEVICE_LOCAL_MEM_SIZE)";
    if (fn) {
        ocl_device_close(d);
        return ocl_fail(diag, ocl_status(err), fn, err);
    }
    d->flush_bytes = flush_size(a, d->dev);

    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)r->platform, 0};
    if (user_ctx && a->clRetainContext(user_ctx) == CL_SUCCESS)
        d->ctx = user_ctx;
    else if (user_ctx)
        err = CL_INVALID_CONTEXT;
    else
        d->ctx = a->clCreateContext(props, 1, &d->dev, NULL, NULL, &err);
    if (!d->ctx || err != CL_SUCCESS) {
        d->ctx = NULL;
        ocl_device_close(d);
        return ocl_fail(diag, ocl_status(err ? err : CL_INVALID_CONTEXT), "clCreateContext",
                        err ? err : CL_INVALID_CONTEXT);
    }
    /* clCreateCommandQueue is deprecated from 2.0 on but still exported by every ICD loader; the
     * 2.0 entry point is used where the platform has it. */
    if (r->platform_major >= 2 && a->clCreateCommandQueueWithProperties) {
        cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
        d->q = a->clCreateCommandQueueWithProperties(d->ctx, d->dev, qp, &err);
        fn = "clCreateCommandQueueWithProperties";
    } else {
        d->q = a->clCreateCommandQueue(d->ctx, d->dev, CL_QUEUE_PROFILING_ENABLE, &err);
        fn = "clCreateCommandQueue";
    }
    if (!d->q || err != CL_SUCCESS) {
        d->q = NULL;
        ocl_device_close(d);
        return ocl_fail(diag, ocl_status(err), fn, err ? err : CL_INVALID_COMMAND_QUEUE);
    }
    *out = d;
    return BT_OK;
}

static bt_status ocl_device_open(void *ctx, int idx, bt__bdev **out, bt_diag *diag)
{
    return open_in(ctx, idx, NULL, out, diag);
}

/* ============================================================================================
 * Buffers
 * ========================================================================================== */

static bt_status ocl_buf_alloc(bt__bdev *d, size_t bytes, bt__bbuf **out, bt_diag *diag)
{
    *out = NULL;
    if (bytes == 0) {
        bt__diag_set(diag, "buffer of 0 bytes");
        return BT_INVALID_ARG;
    }
    bt__bbuf *b = calloc(1, sizeof *b);
    if (!b)
        return BT_NOMEM;
    cl_int err = CL_SUCCESS;
    b->mem = d->api->clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (!b->mem || err != CL_SUCCESS) {
        free(b);
        bt_status st =
            ocl_fail(diag, err == CL_INVALID_BUFFER_SIZE ? BT_RESOURCES : ocl_status(err),
                     "clCreateBuffer", err);
        bt__diag_prefix(diag, "%zu bytes: ", bytes);
        return st;
    }
    b->size = bytes;
    *out = b;
    return BT_OK;
}

static void ocl_buf_free(bt__bdev *d, bt__bbuf *b)
{
    if (!b)
        return;
    if (b->mem && !b->borrowed)
        d->api->clReleaseMemObject(b->mem);
    free(b);
}

/* BT_INVALID_ARG unless [off, off+n) lies inside b. */
static bt_status check_range(const bt__bbuf *b, size_t off, size_t n, const char *what,
                             bt_diag *diag)
{
    if (!b) {
        bt__diag_set(diag, "%s: NULL buffer", what);
        return BT_INVALID_ARG;
    }
    if (off > b->size || n > b->size - off) {
        bt__diag_set(diag, "%s: bytes [%zu, %zu) outside a buffer of %zu bytes", what, off, off + n,
                     b->size);
        return BT_INVALID_ARG;
    }
    return BT_OK;
}

static bt_status ocl_buf_write(bt__bdev *d, bt__bbuf *b, size_t off, const void *src, size_t n,
                               bt_diag *diag)
{
    bt_status st = check_range(b, off, n, "buf_write", diag);
    if (st != BT_OK || n == 0)
        return st;
    cl_int err = d->api->clEnqueueWriteBuffer(d->q, b->mem, CL_TRUE, off, n, src, 0, NULL, NULL);
    return err ? ocl_fail(diag, ocl_status(err), "clEnqueueWriteBuffer", err) : BT_OK;
}

static bt_status ocl_buf_read(bt__bdev *d, bt__bbuf *b, size_t off, void *dst, size_t n,
                              bt_diag *diag)
{
    bt_status st = check_range(b, off, n, "buf_read", diag);
    if (st != BT_OK || n == 0)
        return st;
    cl_int err = d->api->clEnqueueReadBuffer(d->q, b->mem, CL_TRUE, off, n, dst, 0, NULL, NULL);
    /* An earlier failed kernel surfaces here on some drivers. */
    return err ? ocl_fail(diag, ocl_status(err), "clEnqueueReadBuffer", err) : BT_OK;
}

static bt_status ocl_buf_fill(bt__bdev *d, bt__bbuf *b, size_t off, size_t n, const void *pattern,
                              size_t pattern_size, bt_diag *diag)
{
    bt_status st = check_range(b, off, n, "buf_fill", diag);
    if (st != BT_OK)
        return st;
    if (!pattern ||
        (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 && pattern_size != 8)) {
        bt__diag_set(diag, "buf_fill: pattern size %zu (must be 1, 2, 4 or 8)", pattern_size);
        return BT_INVALID_ARG;
    }
    if (off % pattern_size || n % pattern_size) {
        bt__diag_set(diag,
                     "buf_fill: offset %zu and size %zu must be multiples of the %zu-byte "
                     "pattern",
                     off, n, pattern_size);
        return BT_INVALID_ARG;
    }
    if (n == 0)
        return BT_OK;
    cl_int err =
        d->api->clEnqueueFillBuffer(d->q, b->mem, pattern, pattern_size, off, n, 0, NULL, NULL);
    return err ? ocl_fail(diag, ocl_status(err), "clEnqueueFillBuffer", err) : BT_OK;
}

static bt_status ocl_buf_copy(bt__bdev *d, bt__bbuf *dst, bt__bbuf *src, size_t n, bt_diag *diag)
{
    bt_status st = check_range(dst, 0, n, "buf_copy (destination)", diag);
    if (st == BT_OK)
        st = check_range(src, 0, n, "buf_copy (source)", diag);
    if (st != BT_OK || n == 0)
        return st;
    if (dst == src) {
        bt__diag_set(diag, "buf_copy: source and destination are the same buffer");
        return BT_INVALID_ARG;
    }
    cl_int err = d->api->clEnqueueCopyBuffer(d->q, src->mem, dst->mem, 0, 0, n, 0, NULL, NULL);
    return err ? ocl_fail(diag, ocl_status(err), "clEnqueueCopyBuffer", err) : BT_OK;
}

/* ============================================================================================
 * Compile and load
 * ========================================================================================== */

/* Blob container: header then payload. kind 0: the device binary; kind 1: "options\0source"
 * (devices that return no binary). The checksum is FNV-1a of the payload. */
#define BLOB_MAGIC "BTCLBIN1"
enum { BLOB_BINARY = 0, BLOB_SOURCE = 1 };
typedef struct blob_hdr {
    char magic[8];
    uint32_t kind;
    uint32_t reserved;
    uint64_t size;
    uint64_t hash;
} blob_hdr;

/* Returns the program's build log, malloc'd ("" when there is none or it cannot be read). */
static char *build_log(const ocl_api *a, cl_program p, cl_device_id dev)
{
    size_t need = 0;
    char *log = NULL;
    if (a->clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &need) == CL_SUCCESS &&
        need > 0) {
        log = calloc(need + 1, 1);
        if (log &&
            a->clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, need, log, NULL) != CL_SUCCESS)
            log[0] = '\0';
    }
    if (!log)
        return bt__strdup("");
    /* Drop trailing blank lines some compilers leave. */
    size_t len = strlen(log);
    while (len && isspace((unsigned char)log[len - 1]))
        log[--len] = '\0';
    return log;
}

/* Stores "prefix\nlog" (or just the one that is non-empty) into *logp; takes ownership of raw. */
static void set_log(char **logp, const char *prefix, char *raw)
{
    if (!logp) {
        free(raw);
        return;
    }
    if (!prefix || !*prefix) {
        *logp = raw ? raw : bt__strdup("");
        return;
    }
    bt__sbuf b = {0};
    bt__sbuf_printf(&b, "%s%s%s", prefix, raw && *raw ? "\n" : "", raw ? raw : "");
    free(raw);
    *logp = b.s ? b.s : bt__strdup("");
}

/* Wraps a payload into a malloc'd blob. */
static bt_status make_blob(uint32_t kind, const void *p1, size_t n1, const void *p2, size_t n2,
                           bt__blob *out)
{
    blob_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, BLOB_MAGIC, 8);
    h.kind = kind;
    h.size = n1 + n2;
    unsigned char *data = malloc(sizeof h + n1 + n2);
    if (!data)
        return BT_NOMEM;
    if (n1)
        memcpy(data + sizeof h, p1, n1);
    if (n2)
        memcpy(data + sizeof h + n1, p2, n2);
    h.hash = bt__fnv1a(data + sizeof h, n1 + n2, BT__FNV_SEED);
    memcpy(data, &h, sizeof h);
    out->data = data;
    out->size = sizeof h + n1 + n2;
    return BT_OK;
}

/* Builds req's source with its defines + options into *out (a blob container); OpenCL C names
 * kernels as written, so req->names need no resolving. Thread-safe: each call uses its own
 * cl_program on the shared context. *log always receives a malloc'd log. */
static bt_status ocl_compile(bt__bdev *d, const bt__compile_req *req, bt__blob *out, char **log)
{
    out->data = NULL;
    out->size = 0;
    if (log)
        *log = NULL;
    const ocl_api *a = d->api;
    const char *src = req->src, *options = req->options;
    const char *const *defines = req->defines;
    int ndefines = req->ndefines;
    if (!src) {
        set_log(log, "compile: NULL source", NULL);
        return BT_INVALID_ARG;
    }
    if (req->target) {
        char msg[160];
        snprintf(msg, sizeof msg, "compile: OpenCL builds for the device itself, not for the "
                 "target '%.60s'", req->target);
        set_log(log, msg, NULL);
        return BT_UNSUPPORTED;
    }
    /* "-D NAME=value" per define; OpenCL has no portable quoting, so whitespace is refused. */
    bt__sbuf opts = {0};
    for (int i = 0; i < ndefines; i++) {
        const char *def = defines[i];
        int bad = !def || !*def || *def == '=';
        for (const char *c = def; !bad && *c; c++)
            bad = isspace((unsigned char)*c);
        if (bad) {
            char msg[256];
            snprintf(msg, sizeof msg, "compile: define %d '%s' is not NAME=value without spaces", i,
                     def ? def : "(null)");
            set_log(log, msg, NULL);
            bt__sbuf_free(&opts);
            return BT_INVALID_ARG;
        }
        bt__sbuf_printf(&opts, "%s-D %s", opts.len ? " " : "", def);
    }
    if (options && *options)
        bt__sbuf_printf(&opts, "%s%s", opts.len ? " " : "", options);
    bt__sbuf_printf(&opts, "%s", "");
    if (opts.oom) {
        bt__sbuf_free(&opts);
        set_log(log, NULL, NULL);
        return BT_NOMEM;
    }

    cl_int err = CL_SUCCESS;
    cl_program p = a->clCreateProgramWithSource(d->ctx, 1, &src, NULL, &err);
    char prefix[160];
    if (!p || err != CL_SUCCESS) {
        snprintf(prefix, sizeof prefix, "clCreateProgramWithSource: %s (%d)",
                 bt__cl_error_name(err), (int)err);
        set_log(log, prefix, NULL);
        bt__sbuf_free(&opts);
        return ocl_status(err);
    }
    err = a->clBuildProgram(p, 1, &d->dev, opts.s, NULL, NULL);
    char *raw = build_log(a, p, d->dev);
    if (err != CL_SUCCESS) {
        snprintf(prefix, sizeof prefix, "clBuildProgram: %s (%d)", bt__cl_error_name(err),
                 (int)err);
        if (err == CL_INVALID_BUILD_OPTIONS || err == CL_INVALID_COMPILER_OPTIONS)
            snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix),
                     " with options '%.80s'", opts.s);
        set_log(log, prefix, raw);
        a->clReleaseProgram(p);
        bt__sbuf_free(&opts);
        return (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ||
                err == CL_INVALID_COMPILER_OPTIONS || err == CL_COMPILE_PROGRAM_FAILURE)
                   ? BT_COMPILE
                   : ocl_status(err);
    }

    /* One device in the context, so one binary. */
    size_t bin_size = 0;
    bt_status st = BT_OK;
    err = a->clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof bin_size, &bin_size, NULL);
    if (err != CL_SUCCESS) {
        snprintf(prefix, sizeof prefix, "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES): %s (%d)",
                 bt__cl_error_name(err), (int)err);
        st = ocl_status(err);
    } else if (bin_size == 0) {
        /* No binary from this device: keep the source and options, rebuilt at load. */
        prefix[0] = '\0';
        st = make_blob(BLOB_SOURCE, opts.s, strlen(opts.s) + 1, src, strlen(src), out);
    } else {
        unsigned char *bin = malloc(bin_size);
        if (!bin) {
            prefix[0] = '\0';
            st = BT_NOMEM;
        } else {
            err = a->clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL);
            if (err != CL_SUCCESS) {
                snprintf(prefix, sizeof prefix, "clGetProgramInfo(CL_PROGRAM_BINARIES): %s (%d)",
                         bt__cl_error_name(err), (int)err);
                st = ocl_status(err);
            } else {
                prefix[0] = '\0';
                st = make_blob(BLOB_BINARY, bin, bin_size, NULL, 0, out);
            }
            free(bin);
        }
    }
    a->clReleaseProgram(p);
    bt__sbuf_free(&opts);
    set_log(log, st == BT_OK ? NULL : prefix, raw);
    return st;
}

/* Builds a program from a blob made by ocl_compile. BT_CORRUPT for a blob that is not one (bad
 * magic, size or checksum) or that the device refuses (CL_INVALID_BINARY: another device or
 * driver). Freed by ocl_module_free. */
static bt_status ocl_module_load(bt__bdev *d, const void *bin, size_t size, bt__bmod **out,
                                 bt_diag *diag)
{
    *out = NULL;
    const ocl_api *a = d->api;
    blob_hdr h;
    if (!bin || size < sizeof h) {
        bt__diag_set(diag, "module_load: blob of %zu bytes is too short", size);
        return BT_CORRUPT;
    }
    memcpy(&h, bin, sizeof h);
    const unsigned char *payload = (const unsigned char *)bin + sizeof h;
    if (memcmp(h.magic, BLOB_MAGIC, 8) != 0) {
        bt__diag_set(diag, "module_load: not a blocktune OpenCL binary (bad magic)");
        return BT_CORRUPT;
    }
    if (h.size != size - sizeof h || (h.kind != BLOB_BINARY && h.kind != BLOB_SOURCE)) {
        bt__diag_set(diag,
                     "module_load: truncated or malformed binary (%zu bytes, header says "
                     "%llu + %zu, kind %u)",
                     size, (unsigned long long)h.size, sizeof h, (unsigned)h.kind);
        return BT_CORRUPT;
    }
    if (bt__fnv1a(payload, (size_t)h.size, BT__FNV_SEED) != h.hash) {
        bt__diag_set(diag, "module_load: binary checksum mismatch");
        return BT_CORRUPT;
    }
    bt__bmod *m = calloc(1, sizeof *m);
    if (!m)
        return BT_NOMEM;
    cl_int err = CL_SUCCESS;
    const char *opts = "";
    char *src_copy = NULL;
    if (h.kind == BLOB_BINARY) {
        size_t n = (size_t)h.size;
        cl_int bin_status = CL_SUCCESS;
        m->prog = a->clCreateProgramWithBinary(d->ctx, 1, &d->dev, &n, &payload, &bin_status, &err);
        if (err == CL_SUCCESS && bin_status != CL_SUCCESS)
            err = bin_status;
        if (!m->prog || err != CL_SUCCESS) {
            if (m->prog)
                a->clReleaseProgram(m->prog);
            free(m);
            bt_status st = ocl_fail(diag, err == CL_INVALID_BINARY ? BT_CORRUPT : ocl_status(err),
                                    "clCreateProgramWithBinary", err);
            if (err == CL_INVALID_BINARY)
                bt__diag_prefix(diag, "the device refused the binary (built for another device or "
                                      "driver?): ");
            return st;
        }
    } else {
        /* "options\0source": copy to have a NUL after the source. */
        size_t olen = strnlen((const char *)payload, (size_t)h.size);
        if (olen == (size_t)h.size) {
            free(m);
            bt__diag_set(diag, "module_load: malformed source container");
            return BT_CORRUPT;
        }
        src_copy = malloc((size_t)h.size + 1);
        if (!src_copy) {
            free(m);
            return BT_NOMEM;
        }
        memcpy(src_copy, payload, (size_t)h.size);
        src_copy[h.size] = '\0';
        opts = src_copy;
        const char *src = src_copy + olen + 1;
        m->prog = a->clCreateProgramWithSource(d->ctx, 1, &src, NULL, &err);
        if (!m->prog || err != CL_SUCCESS) {
            free(src_copy);
            free(m);
            return ocl_fail(diag, ocl_status(err), "clCreateProgramWithSource", err);
        }
    }
    err = a->clBuildProgram(m->prog, 1, &d->dev, opts, NULL, NULL);
    if (err != CL_SUCCESS) {
        char *log = build_log(a, m->prog, d->dev);
        bt__diag_set(diag, "clBuildProgram: %s (%d)%s%.800s", bt__cl_error_name(err), (int)err,
                     log && *log ? ": " : "", log ? log : "");
        free(log);
        free(src_copy);
        a->clReleaseProgram(m->prog);
        free(m);
        return err == CL_BUILD_PROGRAM_FAILURE ? BT_COMPILE : ocl_status(err);
    }
    free(src_copy);
    *out = m;
    return BT_OK;
}

static void ocl_module_free(bt__bdev *d, bt__bmod *m)
{
    if (!m)
        return;
    for (bt__bfn *f = m->fns, *next; f; f = next) {
        next = f->next;
        d->api->clReleaseKernel(f->k);
        pthread_mutex_destroy(&f->lock);
        free(f->name);
        free(f);
    }
    if (m->prog)
        d->api->clReleaseProgram(m->prog);
    free(m);
}

/* Returns the kernel `entry` of m (created once, then the same bt__bfn, owned by m) and its
 * resources. BT_NOT_FOUND when the module has no such kernel. */
static bt_status ocl_function_get(bt__bdev *d, bt__bmod *m, const char *entry, bt__bfn **out,
                                  bt__kres *res, bt_diag *diag)
{
    *out = NULL;
    const ocl_api *a = d->api;
    if (!entry) {
        bt__diag_set(diag, "function_get: NULL entry name");
        return BT_INVALID_ARG;
    }
    for (bt__bfn *f = m->fns; f; f = f->next) {
        if (!strcmp(f->name, entry)) {
            if (res)
                *res = f->res;
            *out = f;
            return BT_OK;
        }
    }
    bt__bfn *f = calloc(1, sizeof *f);
    if (!f || !(f->name = bt__strdup(entry))) {
        free(f);
        return BT_NOMEM;
    }
    cl_int err = CL_SUCCESS;
    f->k = a->clCreateKernel(m->prog, entry, &err);
    if (!f->k || err != CL_SUCCESS) {
        free(f->name);
        free(f);
        if (err == CL_INVALID_KERNEL_NAME) {
            bt__diag_set(diag,
                         "clCreateKernel: CL_INVALID_KERNEL_NAME (%d): no kernel '%s' in "
                         "the module",
                         (int)err, entry);
            return BT_NOT_FOUND;
        }
        return ocl_fail(diag, ocl_status(err), "clCreateKernel", err);
    }
    size_t pref = 0;
    cl_ulong priv = 0;
    const char *fn = NULL;
    if ((err = a->clGetKernelWorkGroupInfo(f->k, d->dev, CL_KERNEL_WORK_GROUP_SIZE,
                                           sizeof f->wg_max, &f->wg_max, NULL)))
        fn = "clGetKernelWorkGroupInfo(CL_KERNEL_WORK_GROUP_SIZE)";
    else if ((err = a->clGetKernelWorkGroupInfo(f->k, d->dev, CL_KERNEL_LOCAL_MEM_SIZE,
                                                sizeof f->static_local, &f->static_local, NULL)))
        fn = "clGetKernelWorkGroupInfo(CL_KERNEL_LOCAL_MEM_SIZE)";
    else if ((err = a->clGetKernelWorkGroupInfo(f->k, d->dev,
                                                CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                                sizeof pref, &pref, NULL)))
        fn = "clGetKernelWorkGroupInfo(CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE)";
    else if ((err = a->clGetKernelWorkGroupInfo(f->k, d->dev, CL_KERNEL_PRIVATE_MEM_SIZE,
                                                sizeof priv, &priv, NULL)))
        fn = "clGetKernelWorkGroupInfo(CL_KERNEL_PRIVATE_MEM_SIZE)";
    if (fn || pthread_mutex_init(&f->lock, NULL) != 0) {
        a->clReleaseKernel(f->k);
        free(f->name);
        free(f);
        return fn ? ocl_fail(diag, ocl_status(err), fn, err) : BT_INTERNAL;
    }
    f->res.regs_per_thread = -1; /* OpenCL does not tell */
    f->res.local_bytes = (int64_t)priv;
    f->res.static_smem = (int64_t)f->static_local;
    f->res.max_threads_per_block = f->wg_max > (size_t)INT32_MAX ? INT32_MAX : (int)f->wg_max;
    f->res.preferred_multiple = (int)pref;
    f->res.spill_bytes = -1;
    f->next = m->fns;
    m->fns = f;
    if (res)
        *res = f->res;
    *out = f;
    return BT_OK;
}

/* ============================================================================================
 * Launch and timing
 * ========================================================================================== */

/* The status a failed enqueue maps to: a config the device cannot run is BT_RESOURCES (normal in
 * a tuner), bad arguments BT_INVALID_ARG, anything else BT_LAUNCH. */
static bt_status launch_status(cl_int err)
{
    switch (err) {
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
        return BT_RESOURCES;
    case CL_OUT_OF_HOST_MEMORY:
        return BT_NOMEM;
    case CL_INVALID_KERNEL_ARGS:
    case CL_INVALID_ARG_INDEX:
    case CL_INVALID_ARG_VALUE:
    case CL_INVALID_ARG_SIZE:
    case CL_INVALID_MEM_OBJECT:
        return BT_INVALID_ARG;
    default:
        return BT_LAUNCH;
    }
}

static bt_status set_args(bt__bdev *d, bt__bfn *f, const bt__karg *args, int nargs,
                          cl_ulong *local_total, bt_diag *diag)
{
    const ocl_api *a = d->api;
    *local_total = 0;
    for (int i = 0; i < nargs; i++) {
        const bt__karg *g = &args[i];
        cl_int err;
        switch (g->kind) {
        case BT__ARG_BUF:
            if (!g->u.buf) {
                bt__diag_set(diag, "launch of %s: argument %d is a NULL buffer", f->name, i);
                return BT_INVALID_ARG;
            }
            err = a->clSetKernelArg(f->k, (cl_uint)i, sizeof(cl_mem), &g->u.buf->mem);
            break;
        case BT__ARG_I32:
            err = a->clSetKernelArg(f->k, (cl_uint)i, sizeof g->u.i32, &g->u.i32);
            break;
        case BT__ARG_I64:
            err = a->clSetKernelArg(f->k, (cl_uint)i, sizeof g->u.i64, &g->u.i64);
            break;
        case BT__ARG_F32:
            err = a->clSetKernelArg(f->k, (cl_uint)i, sizeof g->u.f32, &g->u.f32);
            break;
        case BT__ARG_F64:
            err = a->clSetKernelArg(f->k, (cl_uint)i, sizeof g->u.f64, &g->u.f64);
            break;
        case BT__ARG_LOCAL:
            *local_total += g->u.local_bytes;
            err = a->clSetKernelArg(f->k, (cl_uint)i, g->u.local_bytes, NULL);
            break;
        default:
            bt__diag_set(diag, "launch of %s: argument %d has unknown kind %d", f->name, i,
                         (int)g->kind);
            return BT_INVALID_ARG;
        }
        if (err != CL_SUCCESS) {
            bt_status st = ocl_fail(diag, launch_status(err), "clSetKernelArg", err);
            bt__diag_prefix(diag, "launch of %s, argument %d: ", f->name, i);
            return st;
        }
    }
    return BT_OK;
}

/* Enqueues f over grid x block work-groups. dyn_smem is ignored: OpenCL passes dynamic local
 * memory as BT__ARG_LOCAL arguments. Not re-entrant per function in the CL sense, so f's mutex is
 * held from the first clSetKernelArg to the enqueue. With a timer, the launch's event is kept in
 * it (replacing the previous one; a failed launch leaves it empty). */
static bt_status launch_in(bt__bdev *d, cl_command_queue q, bt__bfn *f, const uint32_t grid[3],
                           const uint32_t block[3], const bt__karg *args, int nargs,
                           bt__btimer *timer, bt_diag *diag)
{
    const ocl_api *a = d->api;
    size_t global[3], local[3], threads = 1;
    cl_uint dims = 1;
    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0) {
            bt__diag_set(diag,
                         "launch of %s: grid (%u,%u,%u) and block (%u,%u,%u) must be "
                         "positive",
                         f->name, grid[0], grid[1], grid[2], block[0], block[1], block[2]);
            return BT_INVALID_ARG;
        }
        global[i] = (size_t)grid[i] * block[i];
        local[i] = block[i];
        threads *= block[i];
        if (grid[i] > 1 || block[i] > 1)
            dims = (cl_uint)i + 1;
        if (local[i] > d->max_items[i]) {
            bt__diag_set(diag, "launch of %s: block dimension %d is %u, above the device's %zu",
                         f->name, i, block[i], d->max_items[i]);
            return BT_RESOURCES;
        }
    }
    if (threads > f->wg_max) {
        bt__diag_set(diag,
                     "launch of %s: block of %zu work-items, above the kernel's "
                     "CL_KERNEL_WORK_GROUP_SIZE %zu",
                     f->name, threads, f->wg_max);
        return BT_RESOURCES;
    }

    pthread_mutex_lock(&f->lock);
    cl_ulong local_total = 0;
    bt_status st = set_args(d, f, args, nargs, &local_total, diag);
    if (st == BT_OK && local_total + f->static_local > d->local_mem) {
        bt__diag_set(diag,
                     "launch of %s: %llu bytes of local memory (%llu dynamic + %llu static),"
                     " above the device's %llu",
                     f->name, (unsigned long long)(local_total + f->static_local),
                     (unsigned long long)local_total, (unsigned long long)f->static_local,
                     (unsigned long long)d->local_mem);
        st = BT_RESOURCES;
    }
    cl_event ev = NULL;
    if (st == BT_OK) {
        cl_int err = a->clEnqueueNDRangeKernel(q, f->k, dims, NULL, global, local, 0, NULL,
                                               timer ? &ev : NULL);
        if (err != CL_SUCCESS) {
            st = ocl_fail(diag, launch_status(err), "clEnqueueNDRangeKernel", err);
            bt__diag_prefix(diag, "launch of %s, block (%u,%u,%u): ", f->name, block[0], block[1],
                            block[2]);
            ev = NULL;
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (timer) {
        /* A failed launch leaves the timer empty, so that reading it cannot report the previous
         * launch's time. */
        if (timer->ev)
            a->clReleaseEvent(timer->ev);
        timer->ev = ev;
    }
    return st;
}

static bt_status ocl_launch(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                            const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                            int nargs, bt__btimer *timer, bt_diag *diag)
{
    (void)dyn_smem;
    return launch_in(d, d->q, f, grid, block, args, nargs, timer, diag);
}

static bt_status ocl_timer_create(bt__bdev *d, bt__btimer **out, bt_diag *diag)
{
    (void)d;
    (void)diag;
    *out = calloc(1, sizeof **out);
    return *out ? BT_OK : BT_NOMEM;
}

static void ocl_timer_free(bt__bdev *d, bt__btimer *t)
{
    if (!t)
        return;
    if (t->ev)
        d->api->clReleaseEvent(t->ev);
    free(t);
}

/* Waits for the timed launch and returns its device time in ms (END - START of the event). */
static bt_status ocl_timer_read(bt__bdev *d, bt__btimer *t, double *ms, bt_diag *diag)
{
    const ocl_api *a = d->api;
    *ms = 0;
    if (!t || !t->ev) {
        bt__diag_set(diag, "timer_read: the timer recorded no launch");
        return BT_INVALID_ARG;
    }
    cl_int err = a->clWaitForEvents(1, &t->ev);
    if (err != CL_SUCCESS)
        return ocl_fail(
            diag, err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST ? BT_LAUNCH : ocl_status(err),
            "clWaitForEvents", err);
    cl_ulong start = 0, end = 0;
    err = a->clGetEventProfilingInfo(t->ev, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(diag, ocl_status(err),
                        "clGetEventProfilingInfo(CL_PROFILING_COMMAND_START)", err);
    err = a->clGetEventProfilingInfo(t->ev, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(diag, ocl_status(err), "clGetEventProfilingInfo(CL_PROFILING_COMMAND_END)",
                        err);
    *ms = end > start ? (double)(end - start) / 1e6 : 0.0;
    return BT_OK;
}

/* Fills the flush buffer (allocated on first use, see flush_size) with a pattern that changes at
 * every call, so that no layer can skip the write as redundant. Not timed; the in-order queue
 * makes the next launch start after it. */
static bt_status ocl_flush_cache(bt__bdev *d, bt_diag *diag)
{
    const ocl_api *a = d->api;
    cl_int err = CL_SUCCESS;
    if (!d->flush_buf) {
        d->flush_buf = a->clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, d->flush_bytes, NULL, &err);
        if (!d->flush_buf || err != CL_SUCCESS) {
            d->flush_buf = NULL;
            bt_status st = ocl_fail(diag, ocl_status(err), "clCreateBuffer", err);
            bt__diag_prefix(diag, "flush_cache buffer of %zu bytes: ", d->flush_bytes);
            return st;
        }
    }
    uint32_t pattern = 0x9e3779b9u * ++d->flush_count;
    err = a->clEnqueueFillBuffer(d->q, d->flush_buf, &pattern, sizeof pattern, 0, d->flush_bytes, 0,
                                 NULL, NULL);
    return err ? ocl_fail(diag, ocl_status(err), "clEnqueueFillBuffer (flush_cache)", err) : BT_OK;
}

/* CL_RUNNING once the device runs it (PoCL sets it after compiling the binary for the launch),
 * CL_COMPLETE or an error once it ended. */
static int ocl_timer_started(bt__bdev *d, bt__btimer *t)
{
    cl_int s = CL_QUEUED;
    if (!t || !t->ev ||
        d->api->clGetEventInfo(t->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL))
        return 0;
    return s <= CL_RUNNING;
}

/* Waits for the queue. Some drivers (NVIDIA's) report a kernel that faulted as CL_OUT_OF_RESOURCES
 * at the next synchronisation: that is a failed launch, not a config the device cannot hold. */
static bt_status ocl_sync(bt__bdev *d, bt_diag *diag)
{
    cl_int err = d->api->clFinish(d->q);
    return err ? ocl_fail(diag, err == CL_OUT_OF_RESOURCES ? BT_LAUNCH : ocl_status(err),
                          "clFinish", err)
               : BT_OK;
}


/* ============================================================================================
 * Embedding: the caller's context, device, queue and cl_mem (references taken are dropped at
 * close; nothing of the caller's is released below its own count, finished or waited for)
 * ========================================================================================== */

static bool has_embed_api(const ocl_api *a)
{
    return a->clGetContextInfo && a->clGetMemObjectInfo && a->clGetCommandQueueInfo &&
           a->clRetainContext && a->clRetainCommandQueue && a->clEnqueueMarkerWithWaitList &&
           a->clEnqueueBarrierWithWaitList;
}

/* Whether cl_context c holds device dev. */
static bool context_has(const ocl_api *a, cl_context c, cl_device_id dev)
{
    cl_device_id devs[64];
    size_t got = 0;
    if (a->clGetContextInfo(c, CL_CONTEXT_DEVICES, sizeof devs, devs, &got) != CL_SUCCESS)
        return false;
    for (size_t i = 0; i < got / sizeof *devs; i++)
        if (devs[i] == dev)
            return true;
    return false;
}

/* The context a queue belongs to (NULL when it is not a queue). */
static cl_context queue_context(const ocl_api *a, cl_command_queue q)
{
    cl_context c = NULL;
    return a->clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof c, &c, NULL) == CL_SUCCESS ? c
                                                                                           : NULL;
}

/* native: cl_context, cl_device_id, cl_command_queue (may be NULL). */
static bt_status ocl_device_wrap(void *ctx, int ordinal, void *const native[3], bt__bdev **out,
                                 int *idx, bt_diag *diag)
{
    (void)ordinal;
    *out = NULL;
    *idx = -1;
    ocl_ctx *cx = ctx;
    const ocl_api *a = &cx->api;
    cl_context c = (cl_context)native[0];
    cl_device_id dev = (cl_device_id)native[1];
    cl_command_queue q = (cl_command_queue)native[2];
    if (!has_embed_api(a)) {
        bt__diag_set(diag, "the OpenCL loader lacks OpenCL 1.2's entry points that wrapping needs");
        return BT_UNSUPPORTED;
    }
    if (!c || !dev) {
        bt__diag_set(diag, "wrapping an OpenCL device needs its cl_context and cl_device_id");
        return BT_INVALID_ARG;
    }
    for (int i = 0; i < cx->ndev; i++)
        if (cx->devs[i].device == dev)
            *idx = i;
    if (*idx < 0) {
        bt__diag_set(diag, "cl_device_id %p is none of the %d devices the OpenCL loader lists",
                     (void *)dev, cx->ndev);
        return BT_NO_DEVICE;
    }
    if (!context_has(a, c, dev)) {
        bt__diag_set(diag, "cl_context %p does not hold cl_device_id %p", (void *)c, (void *)dev);
        return BT_INVALID_ARG;
    }
    if (q && queue_context(a, q) != c) {
        bt__diag_set(diag, "cl_command_queue %p belongs to another context than %p", (void *)q,
                     (void *)c);
        return BT_INVALID_ARG;
    }
    bt_status st = open_in(ctx, *idx, c, out, diag);
    if (st == BT_OK && q && a->clRetainCommandQueue(q) == CL_SUCCESS)
        (*out)->user_q = q;
    return st;
}

static bt_status ocl_buf_wrap(bt__bdev *d, uint64_t native, size_t bytes, bt__bbuf **out,
                              bt_diag *diag)
{
    *out = NULL;
    const ocl_api *a = d->api;
    cl_mem m = (cl_mem)(uintptr_t)native;
    cl_context c = NULL;
    size_t size = 0;
    if (!m || !bytes || !a->clGetMemObjectInfo) {
        bt__diag_set(diag, "wrapping cl_mem %p of %zu bytes: NULL, 0 bytes, or a loader without "
                     "clGetMemObjectInfo", (void *)m, bytes);
        return BT_INVALID_ARG;
    }
    cl_int err = a->clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof c, &c, NULL);
    if (!err)
        err = a->clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL);
    if (err) {
        bt_status st = ocl_fail(diag, BT_INVALID_ARG, "clGetMemObjectInfo", err);
        bt__diag_prefix(diag, "%p is not a cl_mem: ", (void *)m);
        return st;
    }
    if (c != d->ctx) {
        bt__diag_set(diag, "cl_mem %p belongs to another context (%p) than the device's (%p)",
                     (void *)m, (void *)c, (void *)d->ctx);
        return BT_INVALID_ARG;
    }
    if (bytes > size) {
        bt__diag_set(diag, "cl_mem %p holds %zu bytes, fewer than the %zu bytes given", (void *)m,
                     size, bytes);
        return BT_INVALID_ARG;
    }
    bt__bbuf *b = calloc(1, sizeof *b);
    if (!b)
        return BT_NOMEM;
    b->mem = m;
    b->size = bytes;
    b->borrowed = 1;
    *out = b;
    return BT_OK;
}

static bt_status ocl_launch_on(bt__bdev *d, void *stream, bt__bfn *f, const uint32_t grid[3],
                               const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                               int nargs, bt_diag *diag)
{
    (void)dyn_smem;
    cl_command_queue q = stream ? (cl_command_queue)stream : d->user_q ? d->user_q : d->q;
    if (q != d->q && q != d->user_q && queue_context(d->api, q) != d->ctx) {
        bt__diag_set(diag, "cl_command_queue %p belongs to another context than the device's",
                     (void *)q);
        return BT_INVALID_ARG;
    }
    return launch_in(d, q, f, grid, block, args, nargs, NULL, diag);
}

/* d's queue waits for what `stream` (a queue) holds so far: a marker there, a barrier here. */
static bt_status ocl_stream_wait(bt__bdev *d, void *stream, bt_diag *diag)
{
    const ocl_api *a = d->api;
    cl_command_queue q = stream ? (cl_command_queue)stream : d->user_q;
    if (!q || q == d->q)
        return BT_OK;
    if (!has_embed_api(a)) {
        bt__diag_set(diag, "the OpenCL loader lacks clEnqueueMarkerWithWaitList");
        return BT_UNSUPPORTED;
    }
    cl_event ev = NULL;
    cl_int err = a->clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
    if (!err)
        err = a->clEnqueueBarrierWithWaitList(d->q, 1, &ev, NULL);
    if (ev)
        a->clReleaseEvent(ev);
    return err ? ocl_fail(diag, ocl_status(err), "clEnqueueMarkerWithWaitList", err) : BT_OK;
}

static void *ocl_function_native(bt__bfn *f) { return f ? (void *)f->k : NULL; }

/* The payload of a blob: the program binary, or "options\0source" for a source container. */
static bt_status ocl_blob_image(const void *bin, size_t size, const void **image, size_t *isize,
                                bt_diag *diag)
{
    blob_hdr h;
    if (!bin || size < sizeof h || memcmp(bin, BLOB_MAGIC, 8)) {
        bt__diag_set(diag, "not a blocktune OpenCL binary (%zu bytes)", size);
        return BT_CORRUPT;
    }
    memcpy(&h, bin, sizeof h);
    if (h.size != size - sizeof h) {
        bt__diag_set(diag, "truncated OpenCL binary (%zu bytes, header says %llu)", size,
                     (unsigned long long)h.size);
        return BT_CORRUPT;
    }
    *image = (const unsigned char *)bin + sizeof h;
    *isize = (size_t)h.size;
    return BT_OK;
}
static const char *const ocl_languages[] = {"opencl", NULL};

const bt__backend_iface bt__backend_opencl = {
    .api_version = BT__BACKEND_API_VERSION,
    .name = "opencl",
    .languages = ocl_languages,
    .load = ocl_load,
    .unload = ocl_unload,
    .device_count = ocl_device_count,
    .device_info = ocl_device_info,
    .device_open = ocl_device_open,
    .device_close = ocl_device_close,
    .buf_alloc = ocl_buf_alloc,
    .buf_free = ocl_buf_free,
    .buf_write = ocl_buf_write,
    .buf_read = ocl_buf_read,
    .buf_fill = ocl_buf_fill,
    .buf_copy = ocl_buf_copy,
    .compile = ocl_compile,
    .module_load = ocl_module_load,
    .module_free = ocl_module_free,
    .function_get = ocl_function_get,
    .function_set_dyn_smem = NULL, /* OpenCL local memory is sized per launch by its arguments */
    .launch = ocl_launch,
    .timer_create = ocl_timer_create,
    .timer_free = ocl_timer_free,
    .timer_read = ocl_timer_read,
    .flush_cache = ocl_flush_cache,
    .sync = ocl_sync,
    .launch_graph_timed = NULL, /* OpenCL has no graph capture */
    .device_wrap = ocl_device_wrap,
    .buf_wrap = ocl_buf_wrap,
    .launch_on = ocl_launch_on,
    .stream_wait = ocl_stream_wait,
    .function_native = ocl_function_native,
    .blob_image = ocl_blob_image,
    .timer_started = ocl_timer_started,
};
