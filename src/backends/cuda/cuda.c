/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cuda.c — the CUDA backend: fills bt__backend_iface over the CUDA driver API, compiling with
 * NVRTC.
 *
 * The driver (libcuda.so.1, or only $BLOCKTUNE_CUDA_LIBRARY when set) is opened with bt__dl_open
 * and every cu* entry point is resolved by its exported, versioned name (cuda_api.h); nothing
 * links against the toolkit. NVRTC is loaded independently (nvrtc.c): a machine with a driver but
 * no NVRTC lists its GPUs and fails only compile().
 *
 * An opened device is the GPU's primary context, retained once per opening, and a non-blocking
 * stream. Because the stream does not order with the legacy NULL stream, every copy and fill goes
 * through the *Async entry points on that stream; buf_write and buf_read then wait for the stream,
 * so they are synchronous for the caller and see every launch enqueued before them. Each entry
 * point pushes the primary context on the calling thread and pops it on return, so a bt_device
 * may move between threads (one at a time, as backend.h asks) and other CUDA code on the thread
 * keeps its own current context.
 *
 * Errors: "cuFunction: CUDA_ERROR_NAME (code): the driver's description" in the diag. Faults that
 * poison the context are handled as cuda.h describes: the GPU's slot is marked lost, shared by
 * every bt__bdev of it, and later calls fail with BT_LAUNCH before reaching the driver.
 *
 * Compiled blobs are a small container (magic, target sm, size, checksum) around the CUBIN, so
 * that a truncated or foreign cache entry is refused with BT_CORRUPT before it reaches the driver.
 * A blob of a compile with names also carries the names it resolved (the source's spelling and the
 * binary's: "matmul<float, 4>" and "_Z6matmulIfLi4EEvPT_"), so that a module loaded from it, from
 * the kernel cache too, finds C++ kernels and __constant__ symbols by the names the spec uses.
 * A Triton kernel's blob carries its launch metadata (tmeta.h), and its launches follow Triton's
 * convention (the parameters in Triton's order with the scratch pointers, which the function
 * owns; the grid's x times num_ctas; its shared memory; cuLaunchKernelEx for a cluster).
 */
#include "backends/cuda/cuda.h"

#include "backends/cuda/blob.h"

#include "backends/cuda/cuda_api.h"
#include "backends/cuda/tmeta.h"
#include "backends/cuda/nvrtc.h"
#include "core/kdesc.h"
#include "core/util.h"
#include "platform/dl.h"

#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Registers: CUDA allocates them per warp in units of 256, at most 255 per thread, on every
 * architecture the backend supports (sm_50 and later). */
#define BT__CU_MAX_REGS_PER_THREAD 255
#define BT__CU_REG_ALLOC_UNIT 256
/* Launches with more arguments than this take a heap array for the parameter pointers. */
#define BT__CU_STACK_ARGS 32
/* Graph-timed launches capture at most this many launches. */
#define BT__CU_MAX_GRAPH_REPS 100000

/* ============================================================================================
 * The function table, the context, the objects
 * ========================================================================================== */

typedef struct cu_api {
#define BT__CU_MEMBER(ret, name, sym, params) ret(*name) params;
    BT__CU_REQUIRED(BT__CU_MEMBER)
    BT__CU_OPTIONAL(BT__CU_MEMBER)
#undef BT__CU_MEMBER
#define BT__CU_MEMBER2(ret, name, sym1, sym2, params) ret(*name) params;
    BT__CU_FALLBACK(BT__CU_MEMBER2)
#undef BT__CU_MEMBER2
} cu_api;

/* One GPU, shared by every opening of it: the primary context's users and whether it is lost. */
typedef struct cu_slot {
    CUdevice dev;
    pthread_mutex_t lock;
    int opens;          /* bt__bdevs holding a reference on the primary context */
    int lost;           /* a sticky error poisoned the primary context */
    char lost_msg[768]; /* the first such error */
} cu_slot;

/* The backend context: the driver and the GPUs. */
typedef struct cu_ctx {
    void *lib;
    cu_api api;
    int driver_version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
    int ndev;
    cu_slot *slots;
} cu_ctx;

struct bt__bdev {
    cu_ctx *cx;
    const cu_api *api;
    cu_slot *slot;
    CUdevice dev;
    CUcontext ctx;
    CUstream stream;
    int borrowed_ctx;    /* ctx is the caller's (device_wrap): never retained, released or synced */
    CUstream checked;    /* the last caller stream found to belong to ctx (launch_on) */
    int cc_major, cc_minor;
    int warp;
    int max_threads;  /* per block */
    int max_block[3];
    int max_grid[3];
    size_t smem_default; /* per block without opt-in (48 KiB) */
    size_t smem_optin;   /* per block with opt-in */
    size_t flush_bytes;
    CUdeviceptr flush_buf; /* allocated by the first flush_cache */
    uint32_t flush_count;
    int flush_write;        /* BLOCKTUNE_CUDA_FLUSH=write: the fill flush (cu_flush_cache) */
    CUmodule flush_mod;     /* the read sweep (flush_ptx), loaded by the first flush_cache */
    CUfunction flush_fn;
    unsigned flush_blocks;  /* its grid: 4 blocks of 512 threads per multiprocessor */
};

struct bt__bbuf {
    CUdeviceptr ptr;
    size_t size;
    int borrowed; /* the caller's memory (buf_wrap): never freed here */
};

/* A Triton kernel's scratch area (global_scratch or profile_scratch): one buffer per function,
 * grown to the largest launch; a grown one's predecessors stay allocated until the module is
 * freed, since launches in flight may still use them. */
typedef struct cu_scratch {
    CUdeviceptr ptr;   /* aligned */
    uint64_t cap;      /* usable bytes from ptr */
    CUdeviceptr *allocs; /* every allocation made, the current one last */
    int nallocs;
} cu_scratch;

struct bt__bfn {
    /* what a launch reads, together */
    CUfunction fn;
    const bt__tmeta *tm; /* a Triton kernel's launch convention (its module's), else NULL */
    size_t dyn_limit; /* the function's current MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int max_threads;  /* res.max_threads_per_block */
    char *name;
    bt__kres res;
    size_t static_smem;
    pthread_mutex_t scratch_lock;
    cu_scratch scratch[2];
    int non_portable;    /* CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED was set */
    struct bt__bfn *next;
};

/* A module owns the functions taken from it (the vtable has no function_free), the names the
 * compile resolved (nnames pairs "as written\0in the binary\0" back to back in names) and, for a
 * Triton kernel, its launch metadata (the blob's section). */
struct bt__bmod {
    CUmodule mod;
    bt__bfn *fns;
    char *names;
    uint32_t nnames;
    bt__tmeta *tmeta;
};

struct bt__btimer {
    CUevent start, end;
    int recorded; /* 1 once a launch was recorded between start and end */
};

const char *bt__cuda_arch_name(int cc_major, int cc_minor)
{
    switch (cc_major) {
    case 3:
        return "kepler";
    case 5:
        return "maxwell";
    case 6:
        return "pascal";
    case 7:
        return cc_minor >= 5 ? "turing" : "volta";
    case 8:
        return cc_minor == 9 ? "ada" : "ampere";
    case 9:
        return "hopper";
    case 10:
    case 11:
    case 12:
        return "blackwell";
    default:
        return "unknown";
    }
}

/* ============================================================================================
 * Errors
 * ========================================================================================== */

/* Names of the codes cuda_api.h declares, for drivers (and the toolkit's stub) that cannot name
 * their own errors. */
static const struct {
    int code;
    const char *name;
} cu_errors[] = {
#define E(n) {n, #n}
    E(CUDA_SUCCESS),
    E(CUDA_ERROR_INVALID_VALUE),
    E(CUDA_ERROR_OUT_OF_MEMORY),
    E(CUDA_ERROR_NOT_INITIALIZED),
    E(CUDA_ERROR_DEINITIALIZED),
    E(CUDA_ERROR_STUB_LIBRARY),
    E(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER),
    E(CUDA_ERROR_DEVICE_UNAVAILABLE),
    E(CUDA_ERROR_NO_DEVICE),
    E(CUDA_ERROR_INVALID_DEVICE),
    E(CUDA_ERROR_INVALID_IMAGE),
    E(CUDA_ERROR_INVALID_CONTEXT),
    E(CUDA_ERROR_NO_BINARY_FOR_GPU),
    E(CUDA_ERROR_ECC_UNCORRECTABLE),
    E(CUDA_ERROR_INVALID_PTX),
    E(CUDA_ERROR_NVLINK_UNCORRECTABLE),
    E(CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
    E(CUDA_ERROR_CONTAINED),
    E(CUDA_ERROR_INVALID_HANDLE),
    E(CUDA_ERROR_NOT_FOUND),
    E(CUDA_ERROR_NOT_READY),
    E(CUDA_ERROR_ILLEGAL_ADDRESS),
    E(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
    E(CUDA_ERROR_LAUNCH_TIMEOUT),
    E(CUDA_ERROR_CONTEXT_IS_DESTROYED),
    E(CUDA_ERROR_ASSERT),
    E(CUDA_ERROR_HARDWARE_STACK_ERROR),
    E(CUDA_ERROR_ILLEGAL_INSTRUCTION),
    E(CUDA_ERROR_MISALIGNED_ADDRESS),
    E(CUDA_ERROR_INVALID_ADDRESS_SPACE),
    E(CUDA_ERROR_INVALID_PC),
    E(CUDA_ERROR_LAUNCH_FAILED),
    E(CUDA_ERROR_TENSOR_MEMORY_LEAK),
    E(CUDA_ERROR_NOT_PERMITTED),
    E(CUDA_ERROR_NOT_SUPPORTED),
    E(CUDA_ERROR_MPS_CLIENT_TERMINATED),
    E(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
    E(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED),
    E(CUDA_ERROR_EXTERNAL_DEVICE),
    E(CUDA_ERROR_UNKNOWN),
#undef E
};

const char *bt__cuda_error_name(int code)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(cu_errors); i++)
        if (cu_errors[i].code == code)
            return cu_errors[i].name;
    return "CUDA_ERROR_UNKNOWN_CODE";
}

/* "CUDA_ERROR_NAME (code): description" of r into buf, from the driver's own tables (our table
 * for the name when the driver has none). */
static const char *cu_describe(const cu_api *a, CUresult r, char *buf, size_t size)
{
    const char *name = NULL, *text = NULL;
    if (a && a->cuGetErrorName && a->cuGetErrorName(r, &name) != CUDA_SUCCESS)
        name = NULL;
    if (a && a->cuGetErrorString && a->cuGetErrorString(r, &text) != CUDA_SUCCESS)
        text = NULL;
    if (!name)
        name = bt__cuda_error_name(r);
    if (name && text)
        snprintf(buf, size, "%s (%d): %s", name, (int)r, text);
    else
        snprintf(buf, size, "%s (%d)", name, (int)r);
    return buf;
}

/* Whether r leaves the context unusable for the rest of the process (cuda.h). */
static int is_sticky(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
        return 1;
    default:
        return 0;
    }
}

/* The bt_status a failing call maps to when the call site has no better idea: device memory
 * exhaustion is BT_RESOURCES (the config asked too much of the device), the rest BT_BACKEND. */
static bt_status cu_status(CUresult r)
{
    return r == CUDA_ERROR_OUT_OF_MEMORY ? BT_RESOURCES : BT_BACKEND;
}

/* Marks d's GPU lost after msg, unless it already is (the first error is the one kept). */
static void mark_lost(bt__bdev *d, const char *msg)
{
    pthread_mutex_lock(&d->slot->lock);
    if (!d->slot->lost) {
        snprintf(d->slot->lost_msg, sizeof d->slot->lost_msg, "%s", msg);
        __atomic_store_n(&d->slot->lost, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&d->slot->lock);
}

/* Writes "fn: CUDA_ERROR_NAME (code): description" into diag. A sticky r marks d's GPU lost and
 * returns BT_LAUNCH; otherwise returns st. d may be NULL (no context involved). */
static bt_status cu_fail(bt__bdev *d, const cu_api *a, bt_diag *diag, bt_status st,
                         const char *fn, CUresult r)
{
    char desc[400], msg[600];
    snprintf(msg, sizeof msg, "%s: %s", fn, cu_describe(a, r, desc, sizeof desc));
    bt__diag_set(diag, "%s", msg);
    if (d && is_sticky(r)) {
        mark_lost(d, msg);
        return BT_LAUNCH;
    }
    return st;
}

/* BT_LAUNCH with "context lost after ..." when d's GPU is lost, else BT_OK. */
static bt_status check_lost(bt__bdev *d, bt_diag *diag)
{
    if (!__atomic_load_n(&d->slot->lost, __ATOMIC_ACQUIRE))
        return BT_OK; /* the launch path's case: no lock */
    bt_status st = BT_OK;
    pthread_mutex_lock(&d->slot->lock);
    if (d->slot->lost) {
        bt__diag_set(diag, "context lost after %s", d->slot->lost_msg);
        st = BT_LAUNCH;
    }
    pthread_mutex_unlock(&d->slot->lock);
    return st;
}

/* Makes d's context current on this thread (push); every successful enter is paired with leave.
 * Fails without touching the driver when the GPU is lost. */
static bt_status enter(bt__bdev *d, bt_diag *diag)
{
    bt_status st = check_lost(d, diag);
    if (st != BT_OK)
        return st;
    CUcontext ctx = __atomic_load_n(&d->ctx, __ATOMIC_ACQUIRE);
    if (!ctx) {
        bt__diag_set(diag, "the device was reopened after a fault: this belonged to its old "
                           "context, which is gone");
        return BT_LAUNCH;
    }
    CUresult r = d->api->cuCtxPushCurrent(ctx);
    return r == CUDA_SUCCESS ? BT_OK : cu_fail(d, d->api, diag, BT_BACKEND, "cuCtxPushCurrent", r);
}

static void leave(bt__bdev *d)
{
    CUcontext popped = NULL;
    (void)d->api->cuCtxPopCurrent(&popped);
}

/* enter for the launch paths: when d's context is already current on this thread (an engine
 * launching from the thread its CUDA runtime set up) nothing is pushed, and *pushed says whether
 * leave_launch must pop. Saves the push and pop of every launch on a caller's stream. */
static bt_status enter_launch(bt__bdev *d, bool *pushed, bt_diag *diag)
{
    CUcontext cur = NULL, ctx = __atomic_load_n(&d->ctx, __ATOMIC_ACQUIRE);
    *pushed = false;
    if (ctx && d->api->cuCtxGetCurrent && d->api->cuCtxGetCurrent(&cur) == CUDA_SUCCESS &&
        cur == ctx)
        return check_lost(d, diag);
    bt_status st = enter(d, diag);
    *pushed = st == BT_OK;
    return st;
}

static void leave_launch(bt__bdev *d, bool pushed)
{
    if (pushed)
        leave(d);
}

/* ============================================================================================
 * Load and device list
 * ========================================================================================== */

static void cu_unload(void *ctx)
{
    cu_ctx *cx = ctx;
    if (!cx)
        return;
    for (int i = 0; i < cx->ndev; i++)
        pthread_mutex_destroy(&cx->slots[i].lock);
    free(cx->slots);
    bt__dl_close(cx->lib);
    free(cx);
}

/* Loads the driver, initialises it and lists the GPUs. BT_NO_BACKEND, with the reason in diag,
 * when there is no driver, it is the toolkit's stub, too old, or sees no GPU. */
static bt_status cu_load(void **ctx, bt_diag *diag)
{
    *ctx = NULL;
    cu_ctx *cx = calloc(1, sizeof *cx);
    if (!cx)
        return BT_NOMEM;
    bt_diag dd = {0};
    const char *env = getenv(BT__CUDA_LIBRARY_ENV);
    if (env && *env) {
        const char *names[] = {env, NULL};
        cx->lib = bt__dl_open(names, NULL, &dd);
    } else {
        /* Only the loader's path: the toolkit's lib64/stubs/libcuda.so must never be picked. */
        const char *names[] = {"libcuda.so.1", NULL};
        cx->lib = bt__dl_open(names, NULL, &dd);
    }
    if (!cx->lib) {
        if (env && *env)
            bt__diag_set(diag, "cannot load the CUDA driver from $%s: %s", BT__CUDA_LIBRARY_ENV,
                         dd.msg);
        else
            bt__diag_set(diag, "no CUDA driver (libcuda.so.1): %s", dd.msg);
        free(cx);
        return BT_NO_BACKEND;
    }
    cu_api *a = &cx->api;
#define BT__CU_RESOLVE(ret, name, sym, params)                                                     \
    a->name = (ret(*) params)bt__dl_sym(cx->lib, sym, NULL);                                       \
    if (!a->name) {                                                                                \
        bt__diag_set(diag, "the CUDA driver lacks %s (a driver older than CUDA 11.4?)", sym);      \
        cu_unload(cx);                                                                             \
        return BT_NO_BACKEND;                                                                      \
    }
    BT__CU_REQUIRED(BT__CU_RESOLVE)
#undef BT__CU_RESOLVE
#define BT__CU_RESOLVE_OPT(ret, name, sym, params)                                                 \
    a->name = (ret(*) params)bt__dl_sym(cx->lib, sym, NULL);
    BT__CU_OPTIONAL(BT__CU_RESOLVE_OPT)
#undef BT__CU_RESOLVE_OPT
#define BT__CU_RESOLVE_FB(ret, name, sym1, sym2, params)                                           \
    a->name = (ret(*) params)bt__dl_sym(cx->lib, sym1, NULL);                                      \
    if (!a->name)                                                                                  \
        a->name = (ret(*) params)bt__dl_sym(cx->lib, sym2, NULL);
    BT__CU_FALLBACK(BT__CU_RESOLVE_FB)
#undef BT__CU_RESOLVE_FB
    if (!a->cuEventElapsedTime) {
        bt__diag_set(diag, "the CUDA driver lacks cuEventElapsedTime");
        cu_unload(cx);
        return BT_NO_BACKEND;
    }

    CUresult r = a->cuInit(0);
    if (r != CUDA_SUCCESS) {
        cu_fail(NULL, a, diag, BT_NO_BACKEND, "cuInit", r);
        if (r == CUDA_ERROR_STUB_LIBRARY)
            bt__diag_prefix(diag, "the CUDA library loaded is the toolkit's stub, not a driver: ");
        else if (r == CUDA_ERROR_NO_DEVICE)
            bt__diag_prefix(diag, "the CUDA driver sees no GPU: ");
        cu_unload(cx);
        return BT_NO_BACKEND;
    }
    if ((r = a->cuDriverGetVersion(&cx->driver_version)) != CUDA_SUCCESS) {
        cu_fail(NULL, a, diag, BT_NO_BACKEND, "cuDriverGetVersion", r);
        cu_unload(cx);
        return BT_NO_BACKEND;
    }
    int n = 0;
    if ((r = a->cuDeviceGetCount(&n)) != CUDA_SUCCESS) {
        cu_fail(NULL, a, diag, BT_NO_BACKEND, "cuDeviceGetCount", r);
        cu_unload(cx);
        return BT_NO_BACKEND;
    }
    if (n <= 0) {
        bt__diag_set(diag, "the CUDA driver (%d.%d) sees no GPU", cx->driver_version / 1000,
                     cx->driver_version % 1000 / 10);
        cu_unload(cx);
        return BT_NO_BACKEND;
    }
    cx->slots = calloc((size_t)n, sizeof *cx->slots);
    if (!cx->slots) {
        cu_unload(cx);
        return BT_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        if ((r = a->cuDeviceGet(&cx->slots[i].dev, i)) != CUDA_SUCCESS) {
            cu_fail(NULL, a, diag, BT_NO_BACKEND, "cuDeviceGet", r);
            cu_unload(cx);
            return BT_NO_BACKEND;
        }
        pthread_mutex_init(&cx->slots[i].lock, NULL);
        cx->ndev = i + 1;
    }
    *ctx = cx;
    return BT_OK;
}

static int cu_device_count(void *ctx) { return ctx ? ((cu_ctx *)ctx)->ndev : 0; }

/* The kernel module's version ("580.159.03") from /proc/driver/nvidia/version into buf; 0 when
 * it cannot be read (containers, sandboxes). */
static int kernel_module_version(char *buf, size_t size)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "NVRM version:", 13) != 0)
            continue;
        /* The first token shaped like digits.digits[.digits]. */
        char *save = NULL;
        for (char *tok = strtok_r(line + 13, " \t\n", &save); tok;
             tok = strtok_r(NULL, " \t\n", &save)) {
            int dots = 0, ok = isdigit((unsigned char)tok[0]);
            for (char *c = tok; ok && *c; c++) {
                if (*c == '.')
                    dots++;
                else if (!isdigit((unsigned char)*c))
                    ok = 0;
            }
            if (ok && dots >= 1) {
                snprintf(buf, size, "%s", tok);
                found = 1;
                break;
            }
        }
    }
    fclose(f);
    return found;
}

/* The hardware-table fields of device dev from the driver's attribute queries into *g (its name
 * already set): required attributes fail the device; the others (clock rates, which some drivers
 * and virtualised GPUs do not report) are left 0 for the hardware table to fill. v: the driver's
 * version. */
static bt_status query_props(const cu_api *a, CUdevice dev, int v, bt_gpu *g, bt_diag *diag)
{
    CUresult r;
    snprintf(g->vendor, sizeof g->vendor, "NVIDIA");
    static const struct {
        int attr;
        const char *name;
        int required;
    } attrs[] = {
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "COMPUTE_CAPABILITY_MAJOR", 1},
        {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "COMPUTE_CAPABILITY_MINOR", 1},
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "MULTIPROCESSOR_COUNT", 1},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, "WARP_SIZE", 1},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "MAX_THREADS_PER_BLOCK", 1},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "MAX_THREADS_PER_MULTIPROCESSOR", 1},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "MAX_BLOCKS_PER_MULTIPROCESSOR", 0},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "MAX_REGISTERS_PER_BLOCK", 1},
        {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "MAX_REGISTERS_PER_MULTIPROCESSOR",
         1},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "MAX_SHARED_MEMORY_PER_BLOCK", 1},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
         "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 0},
        {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
         "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 1},
        {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, "RESERVED_SHARED_MEMORY_PER_BLOCK",
         0},
        {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2_CACHE_SIZE", 1},
        {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "CLOCK_RATE", 0},
        {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, "MEMORY_CLOCK_RATE", 0},
        {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, "GLOBAL_MEMORY_BUS_WIDTH", 0},
    };
    int val[BT__ARRAY_LEN(attrs)];
    for (size_t i = 0; i < BT__ARRAY_LEN(attrs); i++) {
        val[i] = 0;
        r = a->cuDeviceGetAttribute(&val[i], attrs[i].attr, dev);
        if (r != CUDA_SUCCESS) {
            val[i] = 0;
            if (attrs[i].required) {
                char fn[96];
                snprintf(fn, sizeof fn, "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_%s)",
                         attrs[i].name);
                return cu_fail(NULL, a, diag, BT_BACKEND, fn, r);
            }
        }
    }
    int k = 0;
    g->cc_major = val[k++];
    g->cc_minor = val[k++];
    g->sm_count = val[k++];
    g->warp_size = val[k++];
    g->max_threads_per_block = val[k++];
    g->max_threads_per_sm = val[k++];
    g->max_blocks_per_sm = val[k++];
    g->regs_per_block = val[k++];
    g->regs_per_sm = val[k++];
    g->smem_per_block = val[k++];
    g->smem_per_block_optin = val[k++];
    g->smem_per_sm = val[k++];
    g->smem_reserved_per_block = val[k++];
    g->l2_bytes = val[k++];
    int clock_khz = val[k++], mem_clock_khz = val[k++], bus_bits = val[k++];
    if (g->smem_per_block_optin < g->smem_per_block)
        g->smem_per_block_optin = g->smem_per_block;
    g->max_warps_per_sm = g->warp_size > 0 ? g->max_threads_per_sm / g->warp_size : 0;
    g->max_regs_per_thread = BT__CU_MAX_REGS_PER_THREAD;
    g->reg_alloc_unit = BT__CU_REG_ALLOC_UNIT;
    g->clock_mhz = clock_khz / 1000.0;
    /* The theoretical peak of a double-data-rate bus: 2 transfers per reported memory clock
     * times the bus width (H100 SXM: 2 x 2619 MHz x 5120 bit = 3352 GB/s, its datasheet figure;
     * H200: 2 x 3201 MHz x 6144 bit = 4917 GB/s against 4.8 TB/s). Not a measurement: the
     * hardware table's value wins where the device has a row. */
    g->mem_bw_gbps = 2.0 * mem_clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    snprintf(g->arch, sizeof g->arch, "%s", bt__cuda_arch_name(g->cc_major, g->cc_minor));
    size_t total = 0;
    if ((r = a->cuDeviceTotalMem(&total, dev)) != CUDA_SUCCESS)
        return cu_fail(NULL, a, diag, BT_BACKEND, "cuDeviceTotalMem", r);
    g->mem_bytes = (int64_t)total;
    snprintf(g->source, sizeof g->source, "CUDA driver query (cuDeviceGetAttribute, CUDA %d.%d)",
             v / 1000, v % 1000 / 10);
    return BT_OK;
}

/* Fills *out from the driver's queries (no context needed). Fields the driver cannot tell stay
 * 0; the device layer merges the hardware table afterwards. */
static bt_status cu_device_info(void *ctx, int idx, bt_device_info *out, bt_diag *diag)
{
    cu_ctx *cx = ctx;
    memset(out, 0, sizeof *out);
    if (!cx || idx < 0 || idx >= cx->ndev) {
        bt__diag_set(diag, "no CUDA device %d (there are %d)", idx, cx ? cx->ndev : 0);
        return BT_NO_DEVICE;
    }
    const cu_api *a = &cx->api;
    CUdevice dev = cx->slots[idx].dev;
    snprintf(out->id, sizeof out->id, "cuda:%d", idx);
    snprintf(out->backend, sizeof out->backend, "cuda");
    out->index = idx;
    CUresult r = a->cuDeviceGetName(out->name, (int)sizeof out->name - 1, dev);
    if (r != CUDA_SUCCESS)
        return cu_fail(NULL, a, diag, BT_BACKEND, "cuDeviceGetName", r);
    out->name[sizeof out->name - 1] = '\0';
    snprintf(out->vendor, sizeof out->vendor, "NVIDIA");
    snprintf(out->platform, sizeof out->platform, "CUDA");
    int v = cx->driver_version;
    snprintf(out->api_version, sizeof out->api_version, "CUDA %d.%d", v / 1000, v % 1000 / 10);
    if (!kernel_module_version(out->driver_version, sizeof out->driver_version))
        snprintf(out->driver_version, sizeof out->driver_version, "%d (cuDriverGetVersion)", v);
    int nv_major = 0, nv_minor = 0;
    if (bt__nvrtc_version(&nv_major, &nv_minor, NULL) == BT_OK)
        snprintf(out->compiler_version, sizeof out->compiler_version, "NVRTC %d.%d", nv_major,
                 nv_minor);
    else
        snprintf(out->compiler_version, sizeof out->compiler_version, "NVRTC not found");
    if (a->cuDeviceGetUuid) {
        CUuuid u;
        if (a->cuDeviceGetUuid(&u, dev) == CUDA_SUCCESS) {
            const unsigned char *b = (const unsigned char *)u.bytes;
            snprintf(out->uuid, sizeof out->uuid,
                     "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                     b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                     b[13], b[14], b[15]);
        }
    }
    out->is_gpu = 1;

    bt_gpu *g = &out->props;
    snprintf(g->name, sizeof g->name, "%.*s", (int)sizeof g->name - 1, out->name);
    return query_props(a, dev, v, g, diag);
}

/* ============================================================================================
 * Device open / close
 * ========================================================================================== */

/* Drops d's reference on the primary context; the last one of a lost GPU clears the mark, since
 * the driver destroys the context with it and a later open gets a fresh one (or the driver's own
 * refusal). */
static void release_primary(bt__bdev *d)
{
    cu_slot *s = d->slot;
    pthread_mutex_lock(&s->lock);
    if (!d->borrowed_ctx)
        (void)d->api->cuDevicePrimaryCtxRelease(d->dev);
    if (--s->opens == 0 && s->lost) {
        __atomic_store_n(&s->lost, 0, __ATOMIC_RELEASE);
        s->lost_msg[0] = '\0';
    }
    pthread_mutex_unlock(&s->lock);
}

/* Gives back what d holds on the GPU: its stream, the flush sweep, its reference on the
 * primary context (a fault's reopen needs the last one dropped for a fresh context). d stays
 * readable: its context reads NULL, so every later call through it fails cleanly (enter), and
 * launches in flight in other threads meet the driver's "context destroyed", never freed memory.
 * A second call does nothing. */
static void cu_device_release(bt__bdev *d)
{
    const cu_api *a = d->api;
    CUcontext ctx = __atomic_exchange_n(&d->ctx, NULL, __ATOMIC_ACQ_REL);
    if (!ctx)
        return;
    int lost = check_lost(d, NULL) != BT_OK;
    if (a->cuCtxPushCurrent(ctx) == CUDA_SUCCESS) {
        /* On a lost context these fail; they still release the driver's bookkeeping. */
        if (d->stream && !lost)
            (void)a->cuStreamSynchronize(d->stream);
        if (d->flush_buf)
            (void)a->cuMemFree(d->flush_buf);
        if (d->flush_mod)
            (void)a->cuModuleUnload(d->flush_mod);
        if (d->stream)
            (void)a->cuStreamDestroy(d->stream);
        leave(d);
    }
    d->flush_buf = 0;
    d->flush_mod = NULL;
    release_primary(d);
}

static void cu_device_close(bt__bdev *d)
{
    if (!d)
        return;
    cu_device_release(d);
    free(d);
}

static bt_status cu_attr(bt__bdev *d, int attr, const char *name, int *out, bt_diag *diag)
{
    CUresult r = d->api->cuDeviceGetAttribute(out, attr, d->dev);
    if (r == CUDA_SUCCESS)
        return BT_OK;
    char fn[96];
    snprintf(fn, sizeof fn, "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_%s)", name);
    return cu_fail(NULL, d->api, diag, BT_BACKEND, fn, r);
}

/* Opens GPU idx: a reference on its primary context (or, with user_ctx, the caller's context,
 * borrowed) and a non-blocking stream of its own. Freed by cu_device_close. */
static bt_status open_in(void *ctx, int idx, CUcontext user_ctx, bt__bdev **out, bt_diag *diag)
{
    *out = NULL;
    cu_ctx *cx = ctx;
    if (!cx || idx < 0 || idx >= cx->ndev) {
        bt__diag_set(diag, "no CUDA device %d (there are %d)", idx, cx ? cx->ndev : 0);
        return BT_NO_DEVICE;
    }
    const cu_api *a = &cx->api;
    bt__bdev *d = calloc(1, sizeof *d);
    if (!d)
        return BT_NOMEM;
    d->cx = cx;
    d->api = a;
    d->slot = &cx->slots[idx];
    d->dev = d->slot->dev;

    bt_status st = BT_OK;
    int l2 = 0, optin = 0, smem = 0;
#define ATTR(name, var)                                                                            \
    if (st == BT_OK)                                                                               \
    st = cu_attr(d, CU_DEVICE_ATTRIBUTE_##name, #name, &(var), diag)
    ATTR(COMPUTE_CAPABILITY_MAJOR, d->cc_major);
    ATTR(COMPUTE_CAPABILITY_MINOR, d->cc_minor);
    ATTR(WARP_SIZE, d->warp);
    ATTR(MAX_THREADS_PER_BLOCK, d->max_threads);
    ATTR(MAX_BLOCK_DIM_X, d->max_block[0]);
    ATTR(MAX_BLOCK_DIM_Y, d->max_block[1]);
    ATTR(MAX_BLOCK_DIM_Z, d->max_block[2]);
    ATTR(MAX_GRID_DIM_X, d->max_grid[0]);
    ATTR(MAX_GRID_DIM_Y, d->max_grid[1]);
    ATTR(MAX_GRID_DIM_Z, d->max_grid[2]);
    ATTR(MAX_SHARED_MEMORY_PER_BLOCK, smem);
    ATTR(L2_CACHE_SIZE, l2);
#undef ATTR
    if (st != BT_OK) {
        free(d);
        return st;
    }
    if (a->cuDeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                d->dev) != CUDA_SUCCESS ||
        optin < smem)
        optin = smem;
    d->smem_default = (size_t)smem;
    d->smem_optin = (size_t)optin;
    size_t total = 0;
    (void)a->cuDeviceTotalMem(&total, d->dev);
    /* Twice the L2, as the OpenCL backend does: a write of exactly the cache's size leaves lines
     * behind under its non-LRU replacement. At least 2 MiB, at most an eighth of the memory. */
    size_t fb = 2 * (size_t)(l2 > 0 ? l2 : 0);
    if (fb < ((size_t)2 << 20))
        fb = (size_t)2 << 20;
    if (total && fb > total / 8)
        fb = total / 8;
    d->flush_bytes = fb & ~(size_t)15;
    const char *fm = getenv("BLOCKTUNE_CUDA_FLUSH");
    if (fm && *fm && strcmp(fm, "read") && strcmp(fm, "write")) {
        bt__diag_set(diag, "BLOCKTUNE_CUDA_FLUSH='%.40s': expected 'read' (the default: the cache "
                     "flush leaves L2 clean) or 'write' (a fill that leaves it dirty)", fm);
        free(d);
        return BT_INVALID_ARG;
    }
    d->flush_write = fm && !strcmp(fm, "write");

    /* The primary context, under the slot's lock so that the lost mark and the reference count
     * change together. */
    pthread_mutex_lock(&d->slot->lock);
    if (d->slot->lost) {
        bt__diag_set(diag, "context lost after %s (close every device of this GPU, or start a new "
                     "process, to get it back)", d->slot->lost_msg);
        pthread_mutex_unlock(&d->slot->lock);
        free(d);
        return BT_LAUNCH;
    }
    d->borrowed_ctx = user_ctx != NULL;
    CUresult r = user_ctx ? CUDA_SUCCESS : a->cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
    if (user_ctx)
        d->ctx = user_ctx;
    if (r == CUDA_SUCCESS)
        d->slot->opens++;
    pthread_mutex_unlock(&d->slot->lock);
    if (r != CUDA_SUCCESS) {
        d->ctx = NULL;
        st = cu_fail(NULL, a, diag, cu_status(r), "cuDevicePrimaryCtxRetain", r);
        free(d);
        return is_sticky(r) ? BT_LAUNCH : st;
    }
    if ((st = enter(d, diag)) != BT_OK) {
        cu_device_close(d);
        return st;
    }
    r = a->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING);
    leave(d);
    if (r != CUDA_SUCCESS) {
        d->stream = NULL;
        st = cu_fail(d, a, diag, cu_status(r), "cuStreamCreate", r);
        cu_device_close(d);
        return st;
    }
    *out = d;
    return BT_OK;
}

static bt_status cu_device_open(void *ctx, int idx, bt__bdev **out, bt_diag *diag)
{
    return open_in(ctx, idx, NULL, out, diag);
}

/* ============================================================================================
 * Buffers
 * ========================================================================================== */

static bt_status cu_buf_alloc(bt__bdev *d, size_t bytes, bt__bbuf **out, bt_diag *diag)
{
    *out = NULL;
    if (bytes == 0) {
        bt__diag_set(diag, "buffer of 0 bytes");
        return BT_INVALID_ARG;
    }
    bt__bbuf *b = calloc(1, sizeof *b);
    if (!b)
        return BT_NOMEM;
    bt_status st = enter(d, diag);
    if (st != BT_OK) {
        free(b);
        return st;
    }
    CUresult r = d->api->cuMemAlloc(&b->ptr, bytes);
    leave(d);
    if (r != CUDA_SUCCESS) {
        free(b);
        st = cu_fail(d, d->api, diag, cu_status(r), "cuMemAlloc", r);
        bt__diag_prefix(diag, "%zu bytes: ", bytes);
        return st;
    }
    b->size = bytes;
    *out = b;
    return BT_OK;
}

/* Frees b; on a lost context only the host side can be released (the driver refuses the rest and
 * frees it with the context). */
static void cu_buf_free(bt__bdev *d, bt__bbuf *b)
{
    if (!b)
        return;
    if (b->ptr && !b->borrowed && enter(d, NULL) == BT_OK) {
        (void)d->api->cuMemFree(b->ptr);
        leave(d);
    }
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
        bt__diag_set(diag, "%s: bytes [%zu, %zu) outside a buffer of %zu bytes", what, off,
                     off + n, b->size);
        return BT_INVALID_ARG;
    }
    return BT_OK;
}

/* Waits for d's stream (inside enter/leave). */
static bt_status stream_sync(bt__bdev *d, bt_diag *diag)
{
    CUresult r = d->api->cuStreamSynchronize(d->stream);
    return r == CUDA_SUCCESS ? BT_OK
                             : cu_fail(d, d->api, diag, BT_LAUNCH, "cuStreamSynchronize", r);
}

/* Copies n bytes from src into b at off, after everything enqueued before, and waits for it. */
static bt_status cu_buf_write(bt__bdev *d, bt__bbuf *b, size_t off, const void *src, size_t n,
                              bt_diag *diag)
{
    bt_status st = check_range(b, off, n, "buf_write", diag);
    if (st != BT_OK || n == 0 || (st = enter(d, diag)) != BT_OK)
        return st;
    CUresult r = d->api->cuMemcpyHtoDAsync(b->ptr + off, src, n, d->stream);
    st = r == CUDA_SUCCESS ? stream_sync(d, diag)
                           : cu_fail(d, d->api, diag, cu_status(r), "cuMemcpyHtoDAsync", r);
    leave(d);
    return st;
}

/* Copies n bytes of b at off into dst, after everything enqueued before (a kernel that faulted
 * is reported here). */
static bt_status cu_buf_read(bt__bdev *d, bt__bbuf *b, size_t off, void *dst, size_t n,
                             bt_diag *diag)
{
    bt_status st = check_range(b, off, n, "buf_read", diag);
    if (st != BT_OK || n == 0 || (st = enter(d, diag)) != BT_OK)
        return st;
    CUresult r = d->api->cuMemcpyDtoHAsync(dst, b->ptr + off, n, d->stream);
    st = r == CUDA_SUCCESS ? stream_sync(d, diag)
                           : cu_fail(d, d->api, diag, cu_status(r), "cuMemcpyDtoHAsync", r);
    leave(d);
    return st;
}

/* Host staging chunk of an 8-byte fill; the rest of the range is filled by doubling copies. */
#define BT__CU_FILL_CHUNK ((size_t)1 << 20)

/* Fills [off, off+n) of b with an 8-byte pattern whose halves differ: the first chunk (at most
 * 1 MiB) from a host staging buffer, then copies of the filled prefix onto the rest, doubling it
 * each time (each copy reads only bytes already written, so they never overlap). */
static bt_status fill8(bt__bdev *d, bt__bbuf *b, size_t off, size_t n, const void *pattern,
                       bt_diag *diag)
{
    const cu_api *a = d->api;
    size_t chunk = n < BT__CU_FILL_CHUNK ? n : BT__CU_FILL_CHUNK;
    unsigned char *host = malloc(chunk);
    if (!host)
        return BT_NOMEM;
    for (size_t i = 0; i < chunk; i += 8)
        memcpy(host + i, pattern, 8);
    CUresult r = a->cuMemcpyHtoDAsync(b->ptr + off, host, chunk, d->stream);
    /* Wait before freeing the staging buffer: the copy from pageable memory may still read it. */
    bt_status st = r == CUDA_SUCCESS ? stream_sync(d, diag)
                                     : cu_fail(d, a, diag, cu_status(r), "cuMemcpyHtoDAsync", r);
    free(host);
    for (size_t done = chunk; st == BT_OK && done < n;) {
        size_t c = done < n - done ? done : n - done;
        r = a->cuMemcpyDtoDAsync(b->ptr + off + done, b->ptr + off, c, d->stream);
        if (r != CUDA_SUCCESS)
            st = cu_fail(d, a, diag, cu_status(r), "cuMemcpyDtoDAsync (buf_fill)", r);
        done += c;
    }
    return st;
}

/* Enqueues a fill of n bytes at off with a 1, 2, 4 or 8-byte pattern (cuMemsetD8/16/32Async;
 * 8-byte patterns with differing halves through fill8, which waits for the stream once). */
static bt_status cu_buf_fill(bt__bdev *d, bt__bbuf *b, size_t off, size_t n, const void *pattern,
                             size_t pattern_size, bt_diag *diag)
{
    bt_status st = check_range(b, off, n, "buf_fill", diag);
    if (st != BT_OK)
        return st;
    if (!pattern || (pattern_size != 1 && pattern_size != 2 && pattern_size != 4 &&
                     pattern_size != 8)) {
        bt__diag_set(diag, "buf_fill: pattern size %zu (must be 1, 2, 4 or 8)", pattern_size);
        return BT_INVALID_ARG;
    }
    if (off % pattern_size || n % pattern_size) {
        bt__diag_set(diag, "buf_fill: offset %zu and size %zu must be multiples of the %zu-byte "
                     "pattern", off, n, pattern_size);
        return BT_INVALID_ARG;
    }
    if (n == 0 || (st = enter(d, diag)) != BT_OK)
        return st;
    const cu_api *a = d->api;
    CUresult r = CUDA_SUCCESS;
    const char *fn = NULL;
    uint32_t w[2] = {0, 0};
    if (pattern_size == 8)
        memcpy(w, pattern, 8);
    if (pattern_size == 1) {
        r = a->cuMemsetD8Async(b->ptr + off, *(const unsigned char *)pattern, n, d->stream);
        fn = "cuMemsetD8Async";
    } else if (pattern_size == 2) {
        uint16_t v;
        memcpy(&v, pattern, 2);
        r = a->cuMemsetD16Async(b->ptr + off, v, n / 2, d->stream);
        fn = "cuMemsetD16Async";
    } else if (pattern_size == 4 || w[0] == w[1]) {
        uint32_t v;
        memcpy(&v, pattern, 4);
        r = a->cuMemsetD32Async(b->ptr + off, v, n / 4, d->stream);
        fn = "cuMemsetD32Async";
    } else {
        st = fill8(d, b, off, n, pattern, diag);
    }
    if (fn && r != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), fn, r);
    leave(d);
    return st;
}

/* Enqueues a copy of the first n bytes of src onto dst. */
static bt_status cu_buf_copy(bt__bdev *d, bt__bbuf *dst, bt__bbuf *src, size_t n, bt_diag *diag)
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
    if ((st = enter(d, diag)) != BT_OK)
        return st;
    CUresult r = d->api->cuMemcpyDtoDAsync(dst->ptr, src->ptr, n, d->stream);
    leave(d);
    return r == CUDA_SUCCESS ? BT_OK
                             : cu_fail(d, d->api, diag, cu_status(r), "cuMemcpyDtoDAsync", r);
}

/* ============================================================================================
 * Compile and load
 * ========================================================================================== */

/* The name the binary has for `name` (a kernel, or "&symbol") in m's table; name itself when the
 * compile did not resolve it. */
static const char *lowered_name(const bt__bmod *m, const char *name)
{
    const char *p = m->names;
    for (uint32_t i = 0; p && i < m->nnames; i++) {
        const char *low = p + strlen(p) + 1;
        if (!strcmp(p, name))
            return low;
        p = low + strlen(low) + 1;
    }
    return name;
}

/* The compute capability and variant a compile for d builds: d's own for a NULL target, else the
 * target named ("sm_90a"), which must be d's. BT_UNSUPPORTED (reason in msg) otherwise. */
static bt_status compile_target(const bt__bdev *d, const char *target, int *major, int *minor,
                                bool *arch_specific, char *msg, size_t size)
{
    *major = d->cc_major;
    *minor = d->cc_minor;
    *arch_specific = false;
    if (!target)
        return BT_OK;
    int tmaj, tmin;
    if (!bt__nvrtc_target_parse(target, &tmaj, &tmin, arch_specific)) {
        snprintf(msg, size, "CUDA compile: '%s' is not a target name (sm_XY or sm_XYa)", target);
        return BT_UNSUPPORTED;
    }
    if (tmaj != d->cc_major || tmin != d->cc_minor) {
        snprintf(msg, size, "CUDA compile: the target %s needs compute capability %d.%d; the "
                 "device is %d.%d", target, tmaj, tmin, d->cc_major, d->cc_minor);
        return BT_UNSUPPORTED;
    }
    return BT_OK;
}

/* Compiles req for d's compute capability, or the target it names, with NVRTC (nvrtc.h gives the
 * options), resolving req->names (backend.h: compile). Thread-safe; does not touch the context,
 * so it works on a lost device too. *out is a blob container; *log always gets a malloc'd log. */
static bt_status cu_compile(bt__bdev *d, const bt__compile_req *req, bt__blob *out, char **log)
{
    out->data = NULL;
    out->size = 0;
    if (req->lang && !strcmp(req->lang, "triton"))
        return bt__cuda_triton_compile(d->cc_major, d->cc_minor, d->smem_optin, req, out, log);
    bt__blob cubin = {0};
    bt_diag diag = {0};
    char **low = NULL;
    const char *const *names = req->names;
    int nnames = req->names ? req->nnames : 0;
    int major, minor;
    bool arch_specific;
    char msg[256];
    bt_status st = compile_target(d, req->target, &major, &minor, &arch_specific, msg, sizeof msg);
    if (st != BT_OK) {
        if (log)
            *log = bt__strdup(msg);
        return st;
    }
    st = bt__nvrtc_compile_named(req->src, req->defines, req->ndefines, req->options, major, minor,
                                 arch_specific, names, nnames, &low, &cubin, log, &diag);
    if (st != BT_OK)
        return st;
    st = bt__cuda_blob_pack(major * 10 + minor, arch_specific, names, (const char *const *)low,
                            nnames, NULL, &cubin, out);
    bt__nvrtc_names_free(low, nnames);
    return st;
}

/* A device of GPU g for cu_compile alone (backend.h: offline_device): the compute capability and
 * the shared memory a Triton compile plans with, from the table; no driver, no context. */
static bt_status cu_offline_device(const bt_gpu *g, bt__bdev **out, bt_diag *diag)
{
    *out = NULL;
    bt_status st = bt__cuda_offline_check(g, diag);
    if (st != BT_OK)
        return st;
    bt__bdev *d = calloc(1, sizeof *d);
    if (!d)
        return BT_NOMEM;
    d->cc_major = g->cc_major;
    d->cc_minor = g->cc_minor;
    d->warp = g->warp_size > 0 ? g->warp_size : 32;
    d->smem_optin = g->smem_per_block_optin > 0 ? (size_t)g->smem_per_block_optin : 0;
    *out = d;
    return BT_OK;
}

static void cu_offline_free(bt__bdev *d) { free(d); }

/* Loads a blob made by cu_compile into d's context. BT_CORRUPT for a blob that is not one (bad
 * magic, size or checksum) or that the driver refuses (built for another architecture). Freed by
 * cu_module_free. */
static bt_status cu_module_load(bt__bdev *d, const void *bin, size_t size, bt__bmod **out,
                                bt_diag *diag)
{
    *out = NULL;
    blob_hdr h;
    size_t hlen;
    bt_status st = bt__cuda_blob_check(bin, size, &h, &hlen, diag);
    if (st)
        return st;
    const unsigned char *names = (const unsigned char *)bin + hlen;
    const unsigned char *payload = names + h.names_bytes + h.meta_bytes;
    bt__bmod *m = calloc(1, sizeof *m);
    if (!m)
        return BT_NOMEM;
    if (h.meta_bytes) { /* a Triton kernel: its launch convention (NUL-padded text) */
        const char *text = (const char *)names + h.names_bytes;
        if (!(m->tmeta = malloc(sizeof *m->tmeta))) {
            free(m);
            return BT_NOMEM;
        }
        st = bt__tmeta_parse(text, strnlen(text, h.meta_bytes), m->tmeta, diag);
        if (st != BT_OK) {
            free(m->tmeta);
            free(m);
            return st;
        }
    }
    if (h.nnames) {
        if (!(m->names = malloc(h.names_bytes))) {
            free(m->tmeta);
            free(m);
            return BT_NOMEM;
        }
        memcpy(m->names, names, h.names_bytes);
        m->nnames = h.nnames;
    }
    /* The driver reads the ELF image in place: give it an aligned copy when the blob is not. */
    void *copy = NULL;
    const void *image = payload;
    if ((uintptr_t)payload % 8 != 0) {
        copy = malloc((size_t)h.size);
        if (!copy) {
            free(m->tmeta);
            free(m->names);
            free(m);
            return BT_NOMEM;
        }
        memcpy(copy, payload, (size_t)h.size);
        image = copy;
    }
    st = enter(d, diag);
    if (st != BT_OK) {
        free(copy);
        free(m->tmeta);
        free(m->names);
        free(m);
        return st;
    }
    CUresult r = d->api->cuModuleLoadData(&m->mod, image);
    leave(d);
    free(copy);
    if (r != CUDA_SUCCESS) {
        free(m->tmeta);
        free(m->names);
        free(m);
        int corrupt = r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
                      r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
        st = cu_fail(d, d->api, diag, corrupt ? BT_CORRUPT : cu_status(r), "cuModuleLoadData", r);
        if (corrupt)
            bt__diag_prefix(diag, "the device (sm_%d%d) refused the binary built for sm_%u%s: ",
                            d->cc_major, d->cc_minor, (unsigned)h.sm,
                            (h.flags & BLOB_SM_A) ? "a" : "");
        return st;
    }
    *out = m;
    return BT_OK;
}

/* Frees f's scratch areas (inside enter/leave, or with the context lost: host memory only). */
static void scratch_free(bt__bdev *d, bt__bfn *f, bool entered)
{
    for (int w = 0; w < 2; w++) {
        cu_scratch *s = &f->scratch[w];
        for (int i = 0; i < s->nallocs && entered; i++)
            (void)d->api->cuMemFree(s->allocs[i]);
        free(s->allocs);
        memset(s, 0, sizeof *s);
    }
    pthread_mutex_destroy(&f->scratch_lock);
}

static void cu_module_free(bt__bdev *d, bt__bmod *m)
{
    if (!m)
        return;
    bool entered = enter(d, NULL) == BT_OK;
    for (bt__bfn *f = m->fns, *next; f; f = next) {
        next = f->next;
        scratch_free(d, f, entered);
        free(f->name);
        free(f);
    }
    if (m->mod && entered)
        (void)d->api->cuModuleUnload(m->mod);
    if (entered)
        leave(d);
    free(m->tmeta);
    free(m->names);
    free(m);
}

/* Returns the kernel `entry` of m (looked up once, then the same bt__bfn, owned by m) and its
 * resources from the driver. BT_NOT_FOUND when the module has no such kernel. */
static bt_status cu_function_get(bt__bdev *d, bt__bmod *m, const char *entry, bt__bfn **out,
                                 bt__kres *res, bt_diag *diag)
{
    *out = NULL;
    if (!m || !entry) {
        bt__diag_set(diag, "function_get: NULL module or entry name");
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
    bt_status st = enter(d, diag);
    if (st != BT_OK) {
        free(f->name);
        free(f);
        return st;
    }
    const cu_api *a = d->api;
    const char *low = lowered_name(m, entry);
    CUresult r = a->cuModuleGetFunction(&f->fn, m->mod, low);
    if (r != CUDA_SUCCESS) {
        leave(d);
        free(f->name);
        free(f);
        st = cu_fail(d, a, diag, r == CUDA_ERROR_NOT_FOUND ? BT_NOT_FOUND : cu_status(r),
                     "cuModuleGetFunction", r);
        if (r == CUDA_ERROR_NOT_FOUND && low != entry)
            bt__diag_prefix(diag, "no kernel '%s' ('%s') in the module: ", entry, low);
        else if (r == CUDA_ERROR_NOT_FOUND)
            bt__diag_prefix(diag, "no kernel '%s' in the module (a C++ name is found when the "
                            "module was compiled with it as a name to resolve; else declare it "
                            "extern \"C\"): ", entry);
        return st;
    }
    static const struct {
        int attr;
        const char *name;
    } attrs[] = {
        {CU_FUNC_ATTRIBUTE_NUM_REGS, "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_NUM_REGS)"},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
         "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)"},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
         "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)"},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
         "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)"},
        {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
         "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)"},
    };
    int v[BT__ARRAY_LEN(attrs)];
    for (size_t i = 0; i < BT__ARRAY_LEN(attrs); i++) {
        r = a->cuFuncGetAttribute(&v[i], attrs[i].attr, f->fn);
        if (r != CUDA_SUCCESS) {
            leave(d);
            free(f->name);
            free(f);
            return cu_fail(d, a, diag, cu_status(r), attrs[i].name, r);
        }
    }
    leave(d);
    f->res.regs_per_thread = v[0];
    f->res.local_bytes = v[1];
    f->res.static_smem = v[2];
    f->res.max_threads_per_block = v[3];
    f->max_threads = v[3];
    f->res.preferred_multiple = d->warp;
    f->res.spill_bytes = -1; /* the driver tells local memory, not what of it is spills */
    f->static_smem = (size_t)v[2];
    f->dyn_limit = (size_t)v[4];
    f->tm = m->tmeta;
    if (f->tm) { /* its shared memory is all dynamic, the kernel's own: reported as the block's */
        snprintf(f->res.compiler, sizeof f->res.compiler, "Triton %s", f->tm->triton_version);
        f->res.static_smem += f->tm->shared;
    }
    pthread_mutex_init(&f->scratch_lock, NULL);
    f->next = m->fns;
    m->fns = f;
    if (res)
        *res = f->res;
    *out = f;
    return BT_OK;
}

/* Raises f's dynamic shared memory limit to bytes (needed above the default 48 KiB per block,
 * up to the device's opt-in maximum minus the kernel's static shared memory). */
static bt_status set_dyn_smem(bt__bdev *d, bt__bfn *f, size_t bytes, bt_diag *diag)
{
    if (bytes > d->smem_optin || f->static_smem > d->smem_optin - bytes) {
        bt__diag_set(diag, "%s: %zu bytes of dynamic shared memory + %zu static, above the "
                     "device's %zu per block", f->name, bytes, f->static_smem, d->smem_optin);
        return BT_RESOURCES;
    }
    CUresult r =
        d->api->cuFuncSetAttribute(f->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   (int)bytes);
    if (r != CUDA_SUCCESS) {
        bt_status st =
            cu_fail(d, d->api, diag,
                    r == CUDA_ERROR_INVALID_VALUE ? BT_RESOURCES : cu_status(r),
                    "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)", r);
        bt__diag_prefix(diag, "%s, %zu bytes: ", f->name, bytes);
        return st;
    }
    f->dyn_limit = bytes;
    return BT_OK;
}

static bt_status cu_function_set_dyn_smem(bt__bdev *d, bt__bfn *f, size_t bytes, bt_diag *diag)
{
    if (!f) {
        bt__diag_set(diag, "function_set_dyn_smem: NULL function");
        return BT_INVALID_ARG;
    }
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    st = set_dyn_smem(d, f, bytes, diag);
    leave(d);
    return st;
}

/* ============================================================================================
 * Launch and timing
 * ========================================================================================== */

/* The status a failed cuLaunchKernel maps to: a config the device cannot run (too many registers
 * or threads for the kernel, too much shared memory) is BT_RESOURCES, normal in a tuner. */
static bt_status launch_status(CUresult r)
{
    switch (r) {
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_OUT_OF_MEMORY:
        return BT_RESOURCES;
    default:
        return BT_LAUNCH;
    }
}

/* What one launch gives the driver: the grid, the dynamic shared memory, the parameters and
 * their values, after a Triton kernel's convention where the function has one. */
typedef struct cu_frame {
    uint32_t grid[3];
    size_t dyn;
    void **params;
    uint64_t tvals[BT__TMETA_MAX_PARAMS];
    void *tparams[BT__TMETA_MAX_PARAMS];
} cu_frame;

/* f's scratch area `which` with at least `bytes` usable, aligned to `align`, into *out (inside
 * enter/leave). */
static bt_status scratch_get(bt__bdev *d, bt__bfn *f, int which, uint64_t bytes, uint64_t align,
                             CUdeviceptr *out, bt_diag *diag)
{
    cu_scratch *s = &f->scratch[which];
    pthread_mutex_lock(&f->scratch_lock);
    bt_status st = BT_OK;
    if (s->cap < bytes) {
        uint64_t want = bytes > 2 * s->cap ? bytes : 2 * s->cap;
        uint64_t extra = align > 256 ? align - 1 : 0; /* cuMemAlloc aligns to 256 */
        CUdeviceptr p = 0;
        CUdeviceptr *grown = realloc(s->allocs, (size_t)(s->nallocs + 1) * sizeof *grown);
        CUresult r = grown ? d->api->cuMemAlloc(&p, (size_t)(want + extra)) : CUDA_SUCCESS;
        if (grown)
            s->allocs = grown;
        if (!grown) {
            st = BT_NOMEM;
        } else if (r != CUDA_SUCCESS) {
            st = cu_fail(d, d->api, diag, cu_status(r), "cuMemAlloc", r);
            bt__diag_prefix(diag, "%s: %llu bytes of Triton %s: ", f->name,
                            (unsigned long long)want, which ? "profile_scratch" : "global_scratch");
        } else {
            s->allocs[s->nallocs++] = p;
            s->ptr = extra ? (p + extra) / align * align : p;
            s->cap = want;
        }
    }
    *out = s->ptr;
    pthread_mutex_unlock(&f->scratch_lock);
    return st;
}

/* A Triton kernel's launch (tmeta.h) into fr: the grid times num_ctas, its shared memory, the
 * parameters in Triton's order with the scratch pointers. Inside enter/leave. */
static bt_status triton_frame(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                              const uint32_t block[3], const bt__karg *args, int nargs,
                              cu_frame *fr, bt_diag *diag)
{
    const bt__tmeta *tm = f->tm;
    bt_status st = bt__tmeta_grid(tm, f->name, grid, block, fr->grid, diag);
    if (st != BT_OK)
        return st;
    fr->dyn = tm->shared;
    uint64_t scratch[2] = {0, 0};
    for (int w = 0; w < 2 && st == BT_OK; w++) {
        uint64_t bytes = bt__tmeta_scratch_bytes(tm, w, grid);
        CUdeviceptr p = 0;
        if (bytes && (st = scratch_get(d, f, w, bytes, tm->scratch_align[w], &p, diag)) == BT_OK)
            scratch[w] = p;
    }
    uint64_t addr[BT__TMETA_MAX_PARAMS + BT__TMETA_MAX_CONSTS] = {0};
    if (nargs > (int)BT__ARRAY_LEN(addr)) {
        bt__diag_set(diag, "launch of %s: %d arguments, more than a Triton kernel takes", f->name,
                     nargs);
        return BT_INVALID_ARG;
    }
    for (int i = 0; i < nargs && st == BT_OK; i++) {
        if (args[i].kind == BT__ARG_BUF && !args[i].u.buf) {
            bt__diag_set(diag, "launch of %s: argument %d is a NULL buffer", f->name, i);
            return BT_INVALID_ARG;
        }
        addr[i] = args[i].kind == BT__ARG_BUF ? args[i].u.buf->ptr : 0;
    }
    int np = 0;
    if (st == BT_OK)
        st = bt__tmeta_params(tm, f->name, args, nargs, addr, scratch, fr->tvals, fr->tparams,
                              &np, diag);
    fr->params = fr->tparams;
    if (st == BT_OK && tm->num_ctas > 8 && !f->non_portable) { /* 16 CTAs: as Triton does */
        CUresult r = d->api->cuFuncSetAttribute(
            f->fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        if (r != CUDA_SUCCESS)
            return cu_fail(d, d->api, diag, BT_RESOURCES,
                           "cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED)",
                           r);
        f->non_portable = 1;
    }
    return st;
}

/* grid x block with dyn_smem bytes against d's and f's limits (f's dynamic shared memory limit
 * raised on the way when needed). */
static bt_status check_geometry(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                                const uint32_t block[3], size_t dyn_smem, bt_diag *diag)
{
    uint64_t threads = 1;
    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0) {
            bt__diag_set(diag, "launch of %s: grid (%u,%u,%u) and block (%u,%u,%u) must be "
                         "positive", f->name, grid[0], grid[1], grid[2], block[0], block[1],
                         block[2]);
            return BT_INVALID_ARG;
        }
        if (block[i] > (uint32_t)d->max_block[i]) {
            bt__diag_set(diag, "launch of %s: block dimension %d is %u, above the device's %d",
                         f->name, i, block[i], d->max_block[i]);
            return BT_RESOURCES;
        }
        if (grid[i] > (uint32_t)d->max_grid[i]) {
            bt__diag_set(diag, "launch of %s: grid dimension %d is %u, above the device's %d",
                         f->name, i, grid[i], d->max_grid[i]);
            return BT_RESOURCES;
        }
        threads *= block[i];
    }
    if (threads > (uint64_t)f->max_threads) {
        bt__diag_set(diag, "launch of %s: block of %llu threads, above the kernel's limit of %d "
                     "(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: its %d registers per thread or "
                     "its __launch_bounds__)", f->name, (unsigned long long)threads,
                     f->res.max_threads_per_block, f->res.regs_per_thread);
        return BT_RESOURCES;
    }
    if (dyn_smem > f->dyn_limit) {
        bt_status st = set_dyn_smem(d, f, dyn_smem, diag);
        if (st != BT_OK) {
            bt__diag_prefix(diag, "launch of ");
            return st;
        }
    }
    return BT_OK;
}

/* Checks a launch of f against the device's and the kernel's limits, raising f's dynamic shared
 * memory limit when the launch needs it, and fills fr: the grid and dynamic shared memory, and
 * params[i] pointing at each argument's value (the CUdeviceptr inside a buffer, the scalar inside
 * args) — for a Triton kernel, its own convention (triton_frame). Called inside enter/leave. */
static bt_status prepare_launch(bt__bdev *d, bt__bfn *f, const uint32_t grid_in[3],
                                const uint32_t block[3], size_t dyn_in, const bt__karg *args,
                                int nargs, void **params, cu_frame *fr, bt_diag *diag)
{
    memcpy(fr->grid, grid_in, sizeof fr->grid);
    fr->dyn = dyn_in;
    fr->params = nargs ? params : NULL;
    if (nargs < 0 || (nargs > 0 && !args)) {
        bt__diag_set(diag, "launch of %s: %d arguments at %p", f->name, nargs, (const void *)args);
        return BT_INVALID_ARG;
    }
    if (f->tm) {
        bt_status st = triton_frame(d, f, grid_in, block, args, nargs, fr, diag);
        if (st != BT_OK)
            return st;
    }
    bt_status gst = check_geometry(d, f, fr->grid, block, fr->dyn, diag);
    if (gst != BT_OK)
        return gst;
    for (int i = 0, np = 0; i < nargs && !f->tm; i++) {
        const bt__karg *g = &args[i];
        switch (g->kind) {
        case BT__ARG_NONE: /* constant memory, filled by module_set_global: no parameter */
            break;
        case BT__ARG_BUF:
            if (!g->u.buf) {
                bt__diag_set(diag, "launch of %s: argument %d is a NULL buffer", f->name, i);
                return BT_INVALID_ARG;
            }
            params[np++] = &g->u.buf->ptr;
            break;
        case BT__ARG_I32:
            params[np++] = (void *)&g->u.i32;
            break;
        case BT__ARG_I64:
            params[np++] = (void *)&g->u.i64;
            break;
        case BT__ARG_F32:
            params[np++] = (void *)&g->u.f32;
            break;
        case BT__ARG_F64:
            params[np++] = (void *)&g->u.f64;
            break;
        case BT__ARG_TMAP:
            if (!g->u.tmap || ((uintptr_t)g->u.tmap & 63)) {
                bt__diag_set(diag, "launch of %s: tensor map argument %d is NULL or not 64-byte "
                             "aligned", f->name, i);
                return BT_INVALID_ARG;
            }
            params[np++] = (void *)g->u.tmap; /* cuLaunchKernel copies the 128 bytes */
            break;
        case BT__ARG_LOCAL:
            bt__diag_set(diag, "launch of %s: argument %d is BT__ARG_LOCAL, which only OpenCL "
                         "has; CUDA takes dynamic shared memory as the launch's dyn_smem",
                         f->name, i);
            return BT_INVALID_ARG;
        default:
            bt__diag_set(diag, "launch of %s: argument %d has unknown kind %d", f->name, i,
                         (int)g->kind);
            return BT_INVALID_ARG;
        }
    }
    return BT_OK;
}

/* A Triton kernel's launch with attributes (cuLaunchKernelEx), as Triton's launcher makes it:
 * a cluster of num_ctas CTAs spread over SMs, a cooperative grid, programmatic dependent launch. */
static CUresult launch_ex(bt__bdev *d, CUstream stream, const bt__bfn *f, const uint32_t block[3],
                          const cu_frame *fr)
{
    const bt__tmeta *tm = f->tm;
    CUlaunchAttribute at[4];
    memset(at, 0, sizeof at);
    unsigned n = 0;
    if (tm->pdl) {
        at[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        at[n++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (tm->cooperative) {
        at[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
        at[n++].value.cooperative = 1;
    }
    if (tm->num_ctas != 1) {
        at[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        at[n].value.clusterDim.x = (unsigned)tm->num_ctas;
        at[n].value.clusterDim.y = 1;
        at[n++].value.clusterDim.z = 1;
        at[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
        at[n++].value.clusterSchedulingPolicyPreference = CU_CLUSTER_SCHEDULING_POLICY_SPREAD;
    }
    CUlaunchConfig c = {fr->grid[0], fr->grid[1], fr->grid[2], block[0], block[1], block[2],
                        (unsigned)fr->dyn, stream, at, n};
    return d->api->cuLaunchKernelEx(&c, f->fn, fr->params, NULL);
}

/* The status and message of a launch the driver refused with r. */
static bt_status launch_failed(bt__bdev *d, const bt__bfn *f, const uint32_t block[3],
                               const cu_frame *fr, bool ex, CUresult r, bt_diag *diag)
{
    bt_status st = cu_fail(d, d->api, diag, launch_status(r),
                           ex ? "cuLaunchKernelEx" : "cuLaunchKernel", r);
    bt__diag_prefix(diag, "launch of %s, grid (%u,%u,%u), block (%u,%u,%u), %zu bytes dynamic "
                    "shared memory: ", f->name, fr->grid[0], fr->grid[1], fr->grid[2], block[0],
                    block[1], block[2], fr->dyn);
    return st;
}

/* One launch on `stream` as fr says (cuLaunchKernel, or cuLaunchKernelEx for a Triton kernel
 * that needs attributes); errors carry the kernel and block. */
static bt_status launch_one(bt__bdev *d, CUstream stream, bt__bfn *f, const uint32_t block[3],
                            const cu_frame *fr, bt_diag *diag)
{
    const uint32_t *grid = fr->grid;
    bool ex = f->tm && (f->tm->num_ctas != 1 || f->tm->cooperative || f->tm->pdl);
    if (ex && !d->api->cuLaunchKernelEx) {
        bt__diag_set(diag, "launch of %s: the Triton kernel needs cuLaunchKernelEx (num_ctas %d), "
                     "which this CUDA driver lacks (CUDA 11.8 or later has it)", f->name,
                     f->tm->num_ctas);
        return BT_UNSUPPORTED;
    }
    CUresult r = ex ? launch_ex(d, stream, f, block, fr)
                    : d->api->cuLaunchKernel(f->fn, grid[0], grid[1], grid[2], block[0], block[1],
                                             block[2], (unsigned int)fr->dyn, stream, fr->params,
                                             NULL);
    return r == CUDA_SUCCESS ? BT_OK : launch_failed(d, f, block, fr, ex, r, diag);
}

/* A launch on stream s (one of d's context, not the legacy or per-thread stream, which resolve
 * through the current context) without asking the driver which context is current: function
 * and stream both belong to d's context, so the launch runs there whatever is current (CUDA 13
 * on the H200 runs it with another context current, or none: bench/ctx_probe.c), and a driver
 * that refuses instead (CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_HANDLE; the mock does
 * with none current) enqueues nothing, and the launch is made again the usual way. Only for a
 * launch that needs no other driver call on its way (not a Triton kernel, whose scratch may
 * grow; dynamic shared memory within the function's limit). Returns true when it is done (st:
 * its status); false when the caller must launch the usual way, d's context made current. */
/* Whether a launch on s may go the fast way (launch_fast, cu_launch_rec): a stream of d's context
 * (not the legacy or per-thread one), a context that is there and not lost. */
static bool fast_way(const bt__bdev *d, CUstream s)
{
    return s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD &&
           !__atomic_load_n(&d->slot->lost, __ATOMIC_ACQUIRE) &&
           __atomic_load_n(&d->ctx, __ATOMIC_ACQUIRE);
}

/* The fast way's driver answer r: false when the context current is not d's (nothing was
 * enqueued: the usual way says what is wrong, if anything), else true with its status in *st. */
static bool fast_outcome(bt__bdev *d, const bt__bfn *f, const uint32_t block[3],
                         const cu_frame *fr, CUresult r, bt_status *st, bt_diag *diag)
{
    if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_INVALID_HANDLE)
        return false;
    *st = r == CUDA_SUCCESS ? BT_OK : launch_failed(d, f, block, fr, false, r, diag);
    return true;
}

static bool launch_fast(bt__bdev *d, CUstream s, bt__bfn *f, const uint32_t grid[3],
                        const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                        int nargs, void **params, bt_status *st, bt_diag *diag)
{
    if (f->tm || dyn_smem > f->dyn_limit || nargs > BT__CU_STACK_ARGS || !fast_way(d, s))
        return false;
    cu_frame fr;
    if ((*st = prepare_launch(d, f, grid, block, dyn_smem, args, nargs, params, &fr, diag)))
        return true;
    CUresult r = d->api->cuLaunchKernel(f->fn, fr.grid[0], fr.grid[1], fr.grid[2], block[0],
                                        block[1], block[2], (unsigned int)fr.dyn, s, fr.params,
                                        NULL);
    return fast_outcome(d, f, block, &fr, r, st, diag);
}

static bt_status check_stream(bt__bdev *d, CUstream s, bt_diag *diag);

/* A dispatch entry's launch prepared once (backend.h: launch_rec_make): all that cuLaunchKernel
 * takes but the buffers' device pointers, which launch_rec sets per launch. */
typedef struct cu_lrec {
    CUfunction fn;
    bt__bfn *f;
    uint32_t grid[3], block[3];
    unsigned dyn;
    int nparams, nbuf;
    int8_t buf_param[BT__CU_STACK_ARGS]; /* the parameter of the j-th buffer argument */
    void *params[BT__CU_STACK_ARGS];     /* a scalar's points into vals */
    uint64_t vals[BT__CU_STACK_ARGS];
} cu_lrec;
_Static_assert(sizeof(cu_lrec) <= BT__LREC_BYTES, "a CUDA launch record fits a dispatch entry");
_Static_assert(sizeof(((bt__karg *)0)->u) == sizeof(uint64_t), "a scalar fills a record slot");

static bt_status cu_launch_rec_make(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                                    const uint32_t block[3], size_t dyn_smem,
                                    const bt__karg *args, int nargs, void *rec, bt_diag *diag)
{
    cu_lrec *r = rec;
    if (!f || f->tm || nargs < 0 || nargs > BT__CU_STACK_ARGS || (nargs && !args) ||
        dyn_smem > f->dyn_limit)
        return BT_UNSUPPORTED; /* Triton's convention, or a limit to raise: the usual launch */
    bt_status st = check_geometry(d, f, grid, block, dyn_smem, diag);
    if (st != BT_OK)
        return st;
    memset(r, 0, sizeof *r);
    r->fn = f->fn;
    r->f = f;
    memcpy(r->grid, grid, sizeof r->grid);
    memcpy(r->block, block, sizeof r->block);
    r->dyn = (unsigned)dyn_smem;
    for (int i = 0; i < nargs; i++) {
        const bt__karg *g = &args[i];
        int np = r->nparams;
        switch (g->kind) {
        case BT__ARG_NONE:
            continue;
        case BT__ARG_BUF:
            r->buf_param[r->nbuf++] = (int8_t)np;
            break;
        case BT__ARG_I32: /* the value's bytes where the union keeps them: at its start */
        case BT__ARG_I64:
        case BT__ARG_F32:
        case BT__ARG_F64:
            memcpy(&r->vals[np], &g->u, sizeof r->vals[np]);
            break;
        default: /* tensor maps (encoded per launch), OpenCL's local memory */
            return BT_UNSUPPORTED;
        }
        r->params[np] = &r->vals[np];
        r->nparams++;
    }
    return BT_OK;
}

/* A prepared launch: the record's parameters with the buffers' device pointers, one driver call
 * (as launch_fast: false when the usual way must do it). */
static bool cu_launch_rec(bt__bdev *d, void *stream, const void *rec, bt__bbuf *const *bufs,
                          bt_status *st, bt_diag *diag)
{
    const cu_lrec *r = rec;
    CUstream s = stream ? (CUstream)stream : d->stream;
    if (!fast_way(d, s))
        return false;
    if (stream && (*st = check_stream(d, s, diag)) != BT_OK)
        return true;
    void *params[BT__CU_STACK_ARGS];
    memcpy(params, r->params, sizeof *params * (size_t)r->nparams);
    for (int j = 0; j < r->nbuf; j++)
        params[r->buf_param[j]] = &bufs[j]->ptr;
    CUresult res = d->api->cuLaunchKernel(r->fn, r->grid[0], r->grid[1], r->grid[2], r->block[0],
                                          r->block[1], r->block[2], r->dyn, s,
                                          r->nparams ? params : NULL, NULL);
    if (res == CUDA_SUCCESS) {
        *st = BT_OK;
        return true;
    }
    cu_frame fr = {{r->grid[0], r->grid[1], r->grid[2]}, r->dyn, params, {0}, {0}};
    return fast_outcome(d, r->f, r->block, &fr, res, st, diag);
}

/* Enqueues f over grid x block on d's stream with dyn_smem bytes of dynamic shared memory (the
 * function's limit is raised on the way when needed). CUDA cannot check the arguments against
 * the kernel's signature: the caller must pass them in order with the kernel's types. With a
 * timer, events recorded just before and after the launch time it alone; a failed launch leaves
 * the timer empty. Asynchronous: a kernel that faults is reported by the next call that waits. */
static bt_status cu_launch(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                           const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                           int nargs, bt__btimer *timer, bt_diag *diag)
{
    if (!f || !grid || !block) {
        bt__diag_set(diag, "launch: NULL function, grid or block");
        return BT_INVALID_ARG;
    }
    if (timer)
        timer->recorded = 0;
    void *stack_params[BT__CU_STACK_ARGS];
    void **params = stack_params;
    bt_status st;
    if (!timer && launch_fast(d, d->stream, f, grid, block, dyn_smem, args, nargs, params, &st,
                              diag))
        return st;
    if (nargs > BT__CU_STACK_ARGS && !(params = malloc((size_t)nargs * sizeof *params)))
        return BT_NOMEM;
    bool pushed;
    st = enter_launch(d, &pushed, diag);
    if (st != BT_OK) {
        if (params != stack_params)
            free(params);
        return st;
    }
    const cu_api *a = d->api;
    cu_frame fr;
    st = prepare_launch(d, f, grid, block, dyn_smem, args, nargs, params, &fr, diag);
    CUresult r;
    if (st == BT_OK && timer && (r = a->cuEventRecord(timer->start, d->stream)) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), "cuEventRecord (start)", r);
    if (st == BT_OK)
        st = launch_one(d, d->stream, f, block, &fr, diag);
    if (st == BT_OK && timer) {
        if ((r = a->cuEventRecord(timer->end, d->stream)) != CUDA_SUCCESS)
            st = cu_fail(d, a, diag, cu_status(r), "cuEventRecord (end)", r);
        else
            timer->recorded = 1;
    }
    leave_launch(d, pushed);
    if (params != stack_params)
        free(params);
    return st;
}

static void cu_timer_free(bt__bdev *d, bt__btimer *t)
{
    if (!t)
        return;
    if ((t->start || t->end) && enter(d, NULL) == BT_OK) {
        if (t->start)
            (void)d->api->cuEventDestroy(t->start);
        if (t->end)
            (void)d->api->cuEventDestroy(t->end);
        leave(d);
    }
    free(t);
}

/* A pair of timing events; freed by cu_timer_free. */
static bt_status cu_timer_create(bt__bdev *d, bt__btimer **out, bt_diag *diag)
{
    *out = NULL;
    bt__btimer *t = calloc(1, sizeof *t);
    if (!t)
        return BT_NOMEM;
    bt_status st = enter(d, diag);
    if (st != BT_OK) {
        free(t);
        return st;
    }
    CUresult r = d->api->cuEventCreate(&t->start, CU_EVENT_DEFAULT);
    if (r == CUDA_SUCCESS)
        r = d->api->cuEventCreate(&t->end, CU_EVENT_DEFAULT);
    leave(d);
    if (r != CUDA_SUCCESS) {
        st = cu_fail(d, d->api, diag, cu_status(r), "cuEventCreate", r);
        cu_timer_free(d, t);
        return st;
    }
    *out = t;
    return BT_OK;
}

/* Waits for the timed launch and returns its device time in ms (cuEventElapsedTime, resolution
 * about half a microsecond). A kernel that faulted is reported here (BT_LAUNCH). */
static bt_status cu_timer_read(bt__bdev *d, bt__btimer *t, double *ms, bt_diag *diag)
{
    *ms = 0;
    if (!t || !t->recorded) {
        bt__diag_set(diag, "timer_read: the timer recorded no launch");
        return BT_INVALID_ARG;
    }
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    const cu_api *a = d->api;
    CUresult r = a->cuEventSynchronize(t->end);
    float f = 0;
    if (r != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, BT_LAUNCH, "cuEventSynchronize", r);
    else if ((r = a->cuEventElapsedTime(&f, t->start, t->end)) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), "cuEventElapsedTime", r);
    leave(d);
    if (st == BT_OK)
        *ms = f > 0 ? (double)f : 0.0;
    return st;
}

/* The cache flush. What a kernel measured "cold" should find in L2 is none of its own data and
 * nothing it must write back: the read sweep (the default) reads a buffer of twice the L2 (filled
 * once, when it is allocated) with a tiny kernel, which evicts what the previous runs left and
 * leaves L2 full of clean lines. The fill (BLOCKTUNE_CUDA_FLUSH=write, what this backend did
 * before) writes the buffer with cuMemsetD32Async instead, which evicts the same but leaves up to
 * an L2 of dirty lines that the measured kernel then writes back to memory while it runs: a
 * handicap of up to L2 / bandwidth (~14 us on an H200) for a kernel that streams more than L2
 * (bench/NOTES.md 24). The kernel is PTX, compiled by the driver (no NVRTC needed): each thread
 * XORs 16-byte chunks i, i + threads, ... (L2-only loads) and stores the result only when it
 * equals `key`, which it never does (every word of the buffer is the same, an even number of
 * them per chunk), so nothing is written and nothing can be left out. */
static const char flush_ptx[] =
    "// blocktune's cache flush: a read sweep (src/backends/cuda/cuda.c)\n"
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry bt_flush_read(.param .u64 buf, .param .u64 chunks, .param .u64 sink,\n"
    "                              .param .u32 key)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<12>;\n"
    "    .reg .b64 %rd<10>;\n"
    "    ld.param.u64 %rd1, [buf];\n"
    "    ld.param.u64 %rd2, [chunks];\n"
    "    mov.u32 %r1, %ctaid.x;\n"
    "    mov.u32 %r2, %ntid.x;\n"
    "    mov.u32 %r3, %tid.x;\n"
    "    mov.u32 %r4, %nctaid.x;\n"
    "    mul.wide.u32 %rd3, %r1, %r2;\n"
    "    cvt.u64.u32 %rd4, %r3;\n"
    "    add.u64 %rd5, %rd3, %rd4;\n"
    "    mul.wide.u32 %rd6, %r4, %r2;\n"
    "    mov.u32 %r10, 0;\n"
    "LOOP:\n"
    "    setp.ge.u64 %p, %rd5, %rd2;\n"
    "    @%p bra DONE;\n"
    "    shl.b64 %rd7, %rd5, 4;\n"
    "    add.u64 %rd8, %rd1, %rd7;\n"
    "    ld.global.cg.v4.u32 {%r5, %r6, %r7, %r8}, [%rd8];\n"
    "    xor.b32 %r10, %r10, %r5;\n"
    "    xor.b32 %r10, %r10, %r6;\n"
    "    xor.b32 %r10, %r10, %r7;\n"
    "    xor.b32 %r10, %r10, %r8;\n"
    "    add.u64 %rd5, %rd5, %rd6;\n"
    "    bra.uni LOOP;\n"
    "DONE:\n"
    "    ld.param.u32 %r11, [key];\n"
    "    setp.ne.u32 %p, %r10, %r11;\n"
    "    @%p bra END;\n"
    "    ld.param.u64 %rd9, [sink];\n"
    "    st.global.u32 [%rd9], %r10;\n"
    "END:\n"
    "    ret;\n"
    "}\n";

/* The first flush: the buffer (twice the L2), its one fill, and for the read sweep its kernel
 * and grid. */
static bt_status flush_setup(bt__bdev *d, bt_diag *diag)
{
    const cu_api *a = d->api;
    CUresult r = a->cuMemAlloc(&d->flush_buf, d->flush_bytes);
    if (r != CUDA_SUCCESS) {
        d->flush_buf = 0;
        bt_status st = cu_fail(d, a, diag, cu_status(r), "cuMemAlloc", r);
        bt__diag_prefix(diag, "flush_cache buffer of %zu bytes: ", d->flush_bytes);
        return st;
    }
    if (d->flush_write)
        return BT_OK;
    int sms = 0;
    const char *call = "cuMemsetD32Async (flush_cache)";
    r = a->cuMemsetD32Async(d->flush_buf, 0x9e3779b9u, d->flush_bytes / 4, d->stream);
    if (r == CUDA_SUCCESS) {
        call = "cuModuleLoadData (flush_cache's read sweep)";
        r = a->cuModuleLoadData(&d->flush_mod, flush_ptx);
        if (r != CUDA_SUCCESS)
            d->flush_mod = NULL;
    }
    if (r == CUDA_SUCCESS) {
        call = "cuModuleGetFunction (flush_cache's read sweep)";
        r = a->cuModuleGetFunction(&d->flush_fn, d->flush_mod, "bt_flush_read");
    }
    if (r == CUDA_SUCCESS) {
        call = "cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)";
        r = a->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d->dev);
    }
    if (r != CUDA_SUCCESS) {
        bt_status st = cu_fail(d, a, diag, cu_status(r), call, r);
        if (d->flush_mod)
            (void)a->cuModuleUnload(d->flush_mod);
        (void)a->cuMemFree(d->flush_buf);
        d->flush_mod = NULL, d->flush_fn = NULL, d->flush_buf = 0;
        return st;
    }
    d->flush_blocks = 4u * (unsigned)(sms > 0 ? sms : 1);
    return BT_OK;
}

/* Enqueues the cache flush (above): the read sweep, or with BLOCKTUNE_CUDA_FLUSH=write a 32-bit
 * fill of the buffer with a value that changes at every call so that no layer can skip it as
 * redundant. Not timed; the stream orders the next launch after it. */
static bt_status cu_flush_cache(bt__bdev *d, bt_diag *diag)
{
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    const cu_api *a = d->api;
    if (!d->flush_buf)
        st = flush_setup(d, diag);
    if (st == BT_OK && d->flush_write) {
        uint32_t pattern = 0x9e3779b9u * ++d->flush_count;
        CUresult r = a->cuMemsetD32Async(d->flush_buf, pattern, d->flush_bytes / 4, d->stream);
        if (r != CUDA_SUCCESS)
            st = cu_fail(d, a, diag, cu_status(r), "cuMemsetD32Async (flush_cache)", r);
    } else if (st == BT_OK) {
        unsigned long long chunks = d->flush_bytes / 16;
        CUdeviceptr buf = d->flush_buf;
        unsigned key = 1; /* never the XOR of the sweep (0) */
        void *params[] = {&buf, &chunks, &buf, &key};
        CUresult r = a->cuLaunchKernel(d->flush_fn, d->flush_blocks, 1, 1, 512, 1, 1, 0,
                                       d->stream, params, NULL);
        if (r != CUDA_SUCCESS)
            st = cu_fail(d, a, diag, cu_status(r), "cuLaunchKernel (flush_cache's read sweep)", r);
    }
    leave(d);
    return st;
}

/* Waits for everything enqueued on d's stream; a kernel that faulted is reported here. */
static bt_status cu_sync(bt__bdev *d, bt_diag *diag)
{
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    st = stream_sync(d, diag);
    leave(d);
    return st;
}

/* Captures reps launches of f into a CUDA graph, replays it once untimed (the first replay
 * uploads it), then times one replay with events: *ms_per_launch is that time / reps. Launch
 * overhead disappears from the figure, which is what very short kernels need. BT_UNSUPPORTED
 * when the driver lacks graph capture. */
static bt_status cu_launch_graph_timed(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                                       const uint32_t block[3], size_t dyn_smem,
                                       const bt__karg *args, int nargs, int reps,
                                       double *ms_per_launch, bt_diag *diag)
{
    const cu_api *a = d->api;
    if (ms_per_launch)
        *ms_per_launch = 0;
    if (!f || !grid || !block || !ms_per_launch || reps < 1 || reps > BT__CU_MAX_GRAPH_REPS) {
        bt__diag_set(diag, "launch_graph_timed: NULL argument or reps %d outside [1, %d]", reps,
                     BT__CU_MAX_GRAPH_REPS);
        return BT_INVALID_ARG;
    }
    if (!a->cuStreamBeginCapture || !a->cuStreamEndCapture || !a->cuGraphInstantiateWithFlags ||
        !a->cuGraphLaunch || !a->cuGraphExecDestroy || !a->cuGraphDestroy) {
        bt__diag_set(diag, "launch_graph_timed: the CUDA driver lacks graph capture (needs "
                     "CUDA 11.4 or later)");
        return BT_UNSUPPORTED;
    }
    void *stack_params[BT__CU_STACK_ARGS];
    void **params = stack_params;
    if (nargs > BT__CU_STACK_ARGS && !(params = malloc((size_t)nargs * sizeof *params)))
        return BT_NOMEM;
    bt_status st = enter(d, diag);
    if (st != BT_OK) {
        if (params != stack_params)
            free(params);
        return st;
    }
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUevent ev[2] = {NULL, NULL};
    CUresult r;
    cu_frame fr;
    st = prepare_launch(d, f, grid, block, dyn_smem, args, nargs, params, &fr, diag);
    if (st == BT_OK &&
        (r = a->cuStreamBeginCapture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) !=
            CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), "cuStreamBeginCapture", r);
    else if (st == BT_OK) {
        for (int i = 0; i < reps && st == BT_OK; i++)
            st = launch_one(d, d->stream, f, block, &fr, diag);
        /* End the capture also after a failed launch, so that the stream is usable again. */
        r = a->cuStreamEndCapture(d->stream, &graph);
        if (st == BT_OK && r != CUDA_SUCCESS)
            st = cu_fail(d, a, diag, cu_status(r), "cuStreamEndCapture", r);
    }
    if (st == BT_OK && (r = a->cuGraphInstantiateWithFlags(&exec, graph, 0)) != CUDA_SUCCESS) {
        exec = NULL;
        st = cu_fail(d, a, diag, launch_status(r), "cuGraphInstantiateWithFlags", r);
    }
    for (int i = 0; i < 2 && st == BT_OK; i++)
        if ((r = a->cuEventCreate(&ev[i], CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
            ev[i] = NULL;
            st = cu_fail(d, a, diag, cu_status(r), "cuEventCreate", r);
        }
    if (st == BT_OK && (r = a->cuGraphLaunch(exec, d->stream)) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, BT_LAUNCH, "cuGraphLaunch (warm-up)", r);
    if (st == BT_OK && (r = a->cuEventRecord(ev[0], d->stream)) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), "cuEventRecord (start)", r);
    if (st == BT_OK && (r = a->cuGraphLaunch(exec, d->stream)) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, BT_LAUNCH, "cuGraphLaunch", r);
    if (st == BT_OK && (r = a->cuEventRecord(ev[1], d->stream)) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), "cuEventRecord (end)", r);
    if (st == BT_OK && (r = a->cuEventSynchronize(ev[1])) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, BT_LAUNCH, "cuEventSynchronize", r);
    float ms = 0;
    if (st == BT_OK && (r = a->cuEventElapsedTime(&ms, ev[0], ev[1])) != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), "cuEventElapsedTime", r);
    if (st == BT_OK)
        *ms_per_launch = ms > 0 ? (double)ms / reps : 0.0;
    for (int i = 0; i < 2; i++)
        if (ev[i])
            (void)a->cuEventDestroy(ev[i]);
    if (exec)
        (void)a->cuGraphExecDestroy(exec);
    if (graph)
        (void)a->cuGraphDestroy(graph);
    leave(d);
    if (params != stack_params)
        free(params);
    return st;
}


/* A tiled tensor map over buf (TMA). The driver checks what the hardware needs (16-byte aligned
 * base and strides, box sizes, swizzle span) and says only CUDA_ERROR_INVALID_VALUE, so the
 * common mistakes are named here first. */
static bt_status cu_tmap_encode(bt__bdev *d, bt__bbuf *buf, const bt__tmap_req *q, void *out,
                                bt_diag *diag)
{
    const cu_api *a = d->api;
    if (!a->cuTensorMapEncodeTiled) {
        bt__diag_set(diag, "tensor maps need cuTensorMapEncodeTiled (a CUDA 12 or newer driver)");
        return BT_UNSUPPORTED;
    }
    int dt;
    switch (q->dtype) {
    case BT__DT_FP16: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT16; break;
    case BT__DT_BF16: dt = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16; break;
    case BT__DT_FP32: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT32; break;
    case BT__DT_FP64: dt = CU_TENSOR_MAP_DATA_TYPE_FLOAT64; break;
    case BT__DT_FP8:
    case BT__DT_INT8: dt = CU_TENSOR_MAP_DATA_TYPE_UINT8; break;
    case BT__DT_INT32: dt = CU_TENSOR_MAP_DATA_TYPE_INT32; break;
    case BT__DT_INT64: dt = CU_TENSOR_MAP_DATA_TYPE_INT64; break;
    default:
        bt__diag_set(diag, "tensor map: unsupported element type %d", q->dtype);
        return BT_INVALID_ARG;
    }
    if (q->rank < 1 || q->rank > BT__TMAP_MAX_RANK || !buf || ((uintptr_t)out & 63)) {
        bt__diag_set(diag, "tensor map: rank %d (1..%d), buffer %p, output %p (64-byte aligned)",
                     q->rank, BT__TMAP_MAX_RANK, (void *)buf, out);
        return BT_INVALID_ARG;
    }
    cuuint64_t dims[BT__TMAP_MAX_RANK], strides[BT__TMAP_MAX_RANK];
    cuuint32_t box[BT__TMAP_MAX_RANK], es[BT__TMAP_MAX_RANK];
    for (int i = 0; i < q->rank; i++) {
        dims[i] = q->dims[i];
        box[i] = q->box[i];
        es[i] = 1;
        if (i > 0)
            strides[i - 1] = q->strides[i];
        if (!q->dims[i] || q->dims[i] > (1ull << 32)) {
            bt__diag_set(diag, "tensor map: dimension %d has %llu elements (1..2^32)", i,
                         (unsigned long long)q->dims[i]);
            return BT_INVALID_ARG;
        }
        if (!q->box[i] || q->box[i] > 256) {
            bt__diag_set(diag, "tensor map: box dimension %d is %u elements (1..256)", i, q->box[i]);
            return BT_INVALID_ARG;
        }
        if (i > 0 && q->strides[i] % 16) {
            bt__diag_set(diag, "tensor map: the stride of dimension %d is %llu bytes, not a "
                         "multiple of 16 (TMA needs 16-byte aligned rows)", i,
                         (unsigned long long)q->strides[i]);
            return BT_INVALID_ARG;
        }
    }
    uint64_t inner = (uint64_t)q->box[0] * (uint64_t)q->elem_bytes;
    if (inner % 16 || (q->swizzle && inner > (uint64_t)q->swizzle)) {
        bt__diag_set(diag, "tensor map: the box's inner extent is %llu bytes: it must be a multiple "
                     "of 16%s", (unsigned long long)inner,
                     q->swizzle ? " and at most the swizzle span" : "");
        return BT_INVALID_ARG;
    }
    if (buf->ptr & 15) {
        bt__diag_set(diag, "tensor map: the buffer's address is not 16-byte aligned");
        return BT_INVALID_ARG;
    }
    int sw = q->swizzle == 0 ? CU_TENSOR_MAP_SWIZZLE_NONE : q->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
             : q->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : q->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : -1;
    if (sw < 0) {
        bt__diag_set(diag, "tensor map: swizzle %d (0, 32, 64 or 128 bytes)", q->swizzle);
        return BT_INVALID_ARG;
    }
    bt_status st = enter(d, diag); /* the driver wants the buffer's context current */
    if (st != BT_OK)
        return st;
    CUresult r = a->cuTensorMapEncodeTiled((CUtensorMap *)out, dt, (cuuint32_t)q->rank,
                                           (void *)(uintptr_t)buf->ptr, dims, strides, box, es,
                                           CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                           CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        st = cu_fail(NULL, a, diag, BT_INVALID_ARG, "cuTensorMapEncodeTiled", r);
    leave(d);
    return st;
}

/* Copies bytes of buf into m's global `symbol` (a __constant__ array) on d's stream. */
static bt_status cu_module_set_global(bt__bdev *d, bt__bmod *m, const char *symbol,
                                      bt__bbuf *buf, size_t bytes, bt_diag *diag)
{
    if (!m || !symbol || !buf || bytes > buf->size) {
        bt__diag_set(diag, "module_set_global: no module, symbol or buffer, or %zu bytes from a "
                     "buffer of %zu", bytes, buf ? buf->size : 0);
        return BT_INVALID_ARG;
    }
    const cu_api *a = d->api;
    if (!a->cuModuleGetGlobal) {
        bt__diag_set(diag, "this CUDA driver lacks cuModuleGetGlobal: constant memory cannot be "
                     "filled");
        return BT_UNSUPPORTED;
    }
    char key[300];
    snprintf(key, sizeof key, "&%s", symbol);
    const char *low = lowered_name(m, key);
    if (low == key)
        low = symbol;
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    CUdeviceptr ptr = 0;
    size_t have = 0;
    CUresult r = a->cuModuleGetGlobal(&ptr, &have, m->mod, low);
    if (r == CUDA_ERROR_NOT_FOUND) {
        leave(d);
        bt__diag_set(diag, "no __constant__ symbol '%s' in the module (declare it at namespace "
                     "scope: __constant__ float %s[N];)", symbol, symbol);
        return BT_NOT_FOUND;
    }
    if (r != CUDA_SUCCESS) {
        leave(d);
        return cu_fail(d, a, diag, cu_status(r), "cuModuleGetGlobal", r);
    }
    if (have < bytes) {
        leave(d);
        bt__diag_set(diag, "__constant__ '%s' holds %zu bytes, the argument has %zu: make the "
                     "array as large as the data", symbol, have, bytes);
        return BT_INVALID_ARG;
    }
    r = bytes ? a->cuMemcpyDtoDAsync(ptr, buf->ptr, bytes, d->stream) : CUDA_SUCCESS;
    leave(d);
    return r == CUDA_SUCCESS ? BT_OK : cu_fail(d, a, diag, cu_status(r), "cuMemcpyDtoDAsync", r);
}


/* ============================================================================================
 * Embedding: the caller's context, memory and streams (never freed, destroyed or synchronised)
 * ========================================================================================== */

/* A caller's context (native[0]; NULL: the primary context of `ordinal`, retained and released
 * like device_open's) with a stream of blocktune's own in it for tuning. */
static bt_status cu_device_wrap(void *ctx, int ordinal, void *const native[3], bt__bdev **out,
                                int *idx, bt_diag *diag)
{
    *out = NULL;
    cu_ctx *cx = ctx;
    CUcontext user = native ? (CUcontext)native[0] : NULL;
    *idx = ordinal;
    if (!user)
        return open_in(ctx, ordinal, NULL, out, diag);
    const cu_api *a = &cx->api;
    if (!a->cuCtxGetDevice) {
        bt__diag_set(diag, "this CUDA driver lacks cuCtxGetDevice: wrap the primary context "
                     "(cu_context NULL) instead");
        return BT_UNSUPPORTED;
    }
    CUdevice dev = -1;
    CUresult r = a->cuCtxPushCurrent(user);
    if (r == CUDA_SUCCESS) {
        r = a->cuCtxGetDevice(&dev);
        CUcontext popped;
        (void)a->cuCtxPopCurrent(&popped);
    }
    if (r != CUDA_SUCCESS) {
        cu_fail(NULL, a, diag, BT_INVALID_ARG, "cuCtxGetDevice", r);
        bt__diag_prefix(diag, "wrapping CUDA context %p: ", (void *)user);
        return BT_INVALID_ARG;
    }
    int found = -1;
    for (int i = 0; i < cx->ndev; i++)
        if (cx->slots[i].dev == dev)
            found = i;
    if (found < 0 || (ordinal >= 0 && ordinal != found)) {
        bt__diag_set(diag, "CUDA context %p belongs to device %d, not to device %d as asked",
                     (void *)user, found, ordinal);
        return BT_INVALID_ARG;
    }
    *idx = found;
    return open_in(ctx, found, user, out, diag);
}

/* One pointer attribute of p (inside enter/leave). */
static CUresult ptr_attr(bt__bdev *d, void *data, int attr, CUdeviceptr p)
{
    return d->api->cuPointerGetAttribute(data, attr, p);
}

/* Device memory of the caller: refused unless it is memory of d's device and context that holds
 * `bytes` bytes from ptr on. */
static bt_status cu_buf_wrap(bt__bdev *d, uint64_t native, size_t bytes, bt__bbuf **out,
                             bt_diag *diag)
{
    *out = NULL;
    const cu_api *a = d->api;
    CUdeviceptr p = (CUdeviceptr)native;
    if (!p || !bytes) {
        bt__diag_set(diag, "wrapping device memory 0x%llx of %zu bytes: NULL pointer or 0 bytes",
                     (unsigned long long)p, bytes);
        return BT_INVALID_ARG;
    }
    if (!a->cuPointerGetAttribute) {
        bt__diag_set(diag, "this CUDA driver lacks cuPointerGetAttribute: blocktune cannot check "
                     "that 0x%llx is memory of this device", (unsigned long long)p);
        return BT_UNSUPPORTED;
    }
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    int ordinal = -1;
    CUcontext owner = NULL;
    CUdeviceptr start = 0;
    size_t range = 0;
    CUresult r = ptr_attr(d, &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
    if (r == CUDA_SUCCESS)
        r = ptr_attr(d, &owner, CU_POINTER_ATTRIBUTE_CONTEXT, p);
    if (r == CUDA_SUCCESS)
        r = ptr_attr(d, &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
    if (r == CUDA_SUCCESS)
        r = ptr_attr(d, &range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
    leave(d);
    int mine = (int)(d->slot - d->cx->slots);
    if (r != CUDA_SUCCESS) {
        cu_fail(NULL, a, diag, BT_INVALID_ARG, "cuPointerGetAttribute", r);
        bt__diag_prefix(diag, "0x%llx is not device memory the driver knows: ",
                        (unsigned long long)p);
        return BT_INVALID_ARG;
    }
    if (ordinal != mine || (owner && owner != d->ctx)) {
        bt__diag_set(diag, "0x%llx is memory of CUDA device %d%s, not of device %d and this "
                     "context: blocktune launches only on memory of the device it wraps",
                     (unsigned long long)p, ordinal,
                     ordinal == mine ? " in another context" : "", mine);
        return BT_INVALID_ARG;
    }
    if (p < start || bytes > range || p - start > range - bytes) {
        bt__diag_set(diag, "0x%llx + %zu bytes runs past its allocation (%zu bytes from 0x%llx)",
                     (unsigned long long)p, bytes, range, (unsigned long long)start);
        return BT_INVALID_ARG;
    }
    bt__bbuf *b = calloc(1, sizeof *b);
    if (!b)
        return BT_NOMEM;
    b->ptr = p;
    b->size = bytes;
    b->borrowed = 1;
    *out = b;
    return BT_OK;
}

/* Refuses a caller's stream of another context (remembering the last one that passed). */
static bt_status check_stream(bt__bdev *d, CUstream s, bt_diag *diag)
{
    if (s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ||
        __atomic_load_n(&d->checked, __ATOMIC_RELAXED) == s)
        return BT_OK;
    if (!d->api->cuStreamGetCtx)
        return BT_OK; /* an old driver: the launch itself refuses a foreign stream */
    CUcontext c = NULL;
    CUresult r = d->api->cuStreamGetCtx(s, &c);
    if (r != CUDA_SUCCESS)
        return cu_fail(NULL, d->api, diag, BT_INVALID_ARG, "cuStreamGetCtx", r);
    if (c != __atomic_load_n(&d->ctx, __ATOMIC_ACQUIRE)) {
        bt__diag_set(diag, "stream %p belongs to another CUDA context than the device's",
                     (void *)s);
        return BT_INVALID_ARG;
    }
    __atomic_store_n(&d->checked, s, __ATOMIC_RELAXED);
    return BT_OK;
}

static bt_status cu_launch_on(bt__bdev *d, void *stream, bt__bfn *f, const uint32_t grid[3],
                              const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                              int nargs, bt_diag *diag)
{
    if (!stream)
        return cu_launch(d, f, grid, block, dyn_smem, args, nargs, NULL, diag);
    if (!f || !grid || !block || nargs > BT__CU_STACK_ARGS) {
        bt__diag_set(diag, "launch: NULL function, grid or block, or %d arguments", nargs);
        return BT_INVALID_ARG;
    }
    void *params[BT__CU_STACK_ARGS];
    bt_status st = check_stream(d, (CUstream)stream, diag);
    if (st != BT_OK ||
        launch_fast(d, (CUstream)stream, f, grid, block, dyn_smem, args, nargs, params, &st, diag))
        return st;
    bool pushed;
    st = enter_launch(d, &pushed, diag);
    if (st != BT_OK)
        return st;
    cu_frame fr;
    st = prepare_launch(d, f, grid, block, dyn_smem, args, nargs, params, &fr, diag);
    if (st == BT_OK)
        st = launch_one(d, (CUstream)stream, f, block, &fr, diag);
    leave_launch(d, pushed);
    return st;
}

/* d's stream waits for what `stream` holds so far: an event recorded there, no host wait. */
static bt_status cu_stream_wait(bt__bdev *d, void *stream, bt_diag *diag)
{
    const cu_api *a = d->api;
    if (!stream)
        return BT_OK;
    if (!a->cuStreamWaitEvent) {
        bt__diag_set(diag, "this CUDA driver lacks cuStreamWaitEvent");
        return BT_UNSUPPORTED;
    }
    bt_status st = enter(d, diag);
    if (st != BT_OK)
        return st;
    CUevent ev = NULL;
    CUresult r = a->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
    const char *fn = "cuEventCreate";
    if (r == CUDA_SUCCESS && (r = a->cuEventRecord(ev, (CUstream)stream)) != CUDA_SUCCESS)
        fn = "cuEventRecord";
    else if (r == CUDA_SUCCESS && (r = a->cuStreamWaitEvent(d->stream, ev, 0)) != CUDA_SUCCESS)
        fn = "cuStreamWaitEvent";
    if (ev)
        (void)a->cuEventDestroy(ev);
    if (r != CUDA_SUCCESS)
        st = cu_fail(d, a, diag, cu_status(r), fn, r);
    leave(d);
    return st;
}

static void *cu_function_native(bt__bfn *f) { return f ? (void *)f->fn : NULL; }

/* The CUBIN (or PTX) inside a blob: after the header, the name table and the Triton section. */
static bt_status cu_blob_image(const void *bin, size_t size, const void **image, size_t *isize,
                               bt_diag *diag)
{
    blob_hdr h;
    size_t hlen = 0;
    bt_status st = bt__cuda_blob_check(bin, size, &h, &hlen, diag);
    if (st != BT_OK)
        return st;
    *image = (const unsigned char *)bin + hlen + h.names_bytes + h.meta_bytes;
    *isize = (size_t)h.size;
    return BT_OK;
}

static int cu_device_lost(bt__bdev *d) { return d->slot->lost; }

static const char *const cu_languages[] = {"cuda", "triton", NULL};

const bt__backend_iface bt__backend_cuda = {
    .api_version = BT__BACKEND_API_VERSION,
    .name = "cuda",
    .languages = cu_languages,
    .load = cu_load,
    .unload = cu_unload,
    .device_count = cu_device_count,
    .device_info = cu_device_info,
    .device_open = cu_device_open,
    .device_close = cu_device_close,
    .device_release = cu_device_release,
    .buf_alloc = cu_buf_alloc,
    .buf_free = cu_buf_free,
    .buf_write = cu_buf_write,
    .buf_read = cu_buf_read,
    .buf_fill = cu_buf_fill,
    .buf_copy = cu_buf_copy,
    .compile = cu_compile,
    .module_load = cu_module_load,
    .module_free = cu_module_free,
    .function_get = cu_function_get,
    .function_set_dyn_smem = cu_function_set_dyn_smem,
    .launch = cu_launch,
    .timer_create = cu_timer_create,
    .timer_free = cu_timer_free,
    .timer_read = cu_timer_read,
    .flush_cache = cu_flush_cache,
    .sync = cu_sync,
    .launch_graph_timed = cu_launch_graph_timed,
    .device_lost = cu_device_lost,
    .tmap_encode = cu_tmap_encode,
    .module_set_global = cu_module_set_global,
    .device_wrap = cu_device_wrap,
    .buf_wrap = cu_buf_wrap,
    .launch_on = cu_launch_on,
    .stream_wait = cu_stream_wait,
    .function_native = cu_function_native,
    .blob_image = cu_blob_image,
    .offline_target = bt__cuda_offline_target,
    .offline_compile = bt__cuda_offline_compile,
    .offline_device = cu_offline_device,
    .launch_rec_make = cu_launch_rec_make,
    .launch_rec = cu_launch_rec,
    .offline_free = cu_offline_free,
    .occupancy = bt__cuda_occupancy_of,
    .xcompiler_id = bt__cuda_xcompiler_id,
    .xcompiler_start = bt__cuda_xcompiler_start,
    .xcompiler_times = bt__cuda_xcompiler_times,
};
