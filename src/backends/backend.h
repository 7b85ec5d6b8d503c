/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.h — the interface every compute backend fills (internal).
 *
 * A backend (OpenCL, CUDA) is a vtable of plain functions filled with designated initialisers and
 * registered in backend.c's table. The runtime it wraps is loaded with dlopen at bt__backend_load
 * time, so the library builds and runs where it is absent: load then fails with BT_NO_BACKEND and
 * the backend is not listed.
 *
 * Identity: a backend says which source languages it compiles (`languages`: a kernel's sources are
 * keyed by language, kdesc.h, and a kernel on this backend takes the first of these it has) and,
 * through compile requests, which target it builds for (NULL: the device's own architecture; a
 * kernel may name one, such as CUDA's "sm_90a"). Nothing above the backends' folders knows a
 * backend by name.
 *
 * Objects (all opaque to the core): a device (bt__bdev), buffers, compiled modules, functions
 * (kernels inside a module) and timers. Compilation is split from loading so that it can run on a
 * thread pool and be cached on disk: compile() turns source + defines into a binary blob and must
 * be safe to call from several threads at once on the same device; module_load() and everything
 * else is called from one thread at a time per device.
 *
 * Offline entries (optional) work without a device and without load(): offline_target and
 * offline_compile compile for a GPU of the hardware table (`plan --exact`), offline_device makes
 * a compile-only device of such a GPU (`blocktune precompile`), occupancy applies the
 * backend's occupancy rules to a compiled function's resources on a GPU description. The
 * xcompiler entries (optional) are for a language compiled in another process (CUDA's "triton"):
 * its identity for the kernel cache's key, its start ahead of need, what it cost.
 *
 * Errors: every function returns a bt_status and, where it takes a diag, writes the native error
 * (e.g. "clEnqueueNDRangeKernel: CL_INVALID_WORK_GROUP_SIZE (-54)") into diag->msg. Nothing aborts.
 */
#ifndef BT_BACKENDS_BACKEND_H
#define BT_BACKENDS_BACKEND_H

#include "blocktune.h"
#include "core/kdesc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BT__BACKEND_API_VERSION 2

typedef struct bt__bdev bt__bdev;     /* an opened device (context + queue/stream) */
typedef struct bt__bbuf bt__bbuf;     /* device memory */
typedef struct bt__bmod bt__bmod;     /* a loaded program/module */
typedef struct bt__bfn bt__bfn;       /* a kernel function in a module */
typedef struct bt__btimer bt__btimer; /* device-side timing of one launch */

/* A compiled binary, malloc'd; the caller frees data. */
typedef struct bt__blob {
    void *data;
    size_t size;
} bt__blob;

/* What the backend knows of a compiled kernel's resources; -1 where unknown. */
typedef struct bt__kres {
    int regs_per_thread;
    int64_t local_bytes;      /* local (private) memory per thread: the stack frame, spills in it */
    int64_t static_smem;      /* static shared/local memory per block */
    int max_threads_per_block;/* the kernel's limit (may be below the device's) */
    int preferred_multiple;   /* OpenCL: preferred work-group size multiple */
    int64_t spill_bytes;      /* spill stores + loads, from the compiler's report */
    bool from_cache;          /* offline_compile: the compiler answered from a cache of its own
                                 (Triton's compile pool), nothing was compiled */
    char compiler[48];        /* function_get: the compiler that built the module when the blob
                                 says ("Triton 3.6.0"); "" when it is the device's own */
} bt__kres;

/* What a compiler that runs in another process (CUDA's Triton compile pool) has cost this process:
 * started (this process started it), by_embedder (its process was started by the embedding
 * program's hook, bt_triton_pool_starter), ready_s (from its start until it could compile at full
 * speed; -1: not yet, or not started) and compile_s (the compile seconds it reported, summed). */
typedef struct bt__xcompiler_times {
    bool started, by_embedder;
    double ready_s, compile_s;
} bt__xcompiler_times;

/* What an offline compile for a GPU builds: the target ("sm_90a") and the compiler that builds it
 * ("NVRTC", "13.0"). */
typedef struct bt__offline_target {
    char target[32];
    char compiler[32];
    char version[32];
} bt__offline_target;

/* One compile: the source's language (NULL: the backend's first), the source, its defines
 * ("NAME=value" each), extra compiler options (may be NULL), the target (NULL: the device's own
 * architecture, or for an offline compile the target that offline_target named), and the names to
 * resolve (may be NULL; see compile()). For the language "triton" src is not source text but the
 * Triton compile request of one config (bt__triton_request, kdesc.h: a JSON object naming the
 * .py file, the entry, the signature, constexprs and options); defines and options are unused,
 * names[0] is the entry and names[1..nnames) the kernel's arguments in the order launches pass
 * them (a Triton kernel's parameters are mapped onto them by name). */
typedef struct bt__compile_req {
    const char *lang;
    const char *src;
    const char *const *defines;
    int ndefines;
    const char *options;
    const char *target;
    const char *const *names;
    int nnames;
} bt__compile_req;

typedef enum bt__arg_kind {
    BT__ARG_BUF = 0,
    BT__ARG_I32,
    BT__ARG_I64,
    BT__ARG_F32,
    BT__ARG_F64,
    BT__ARG_LOCAL, /* dynamic local memory argument of u.local_bytes (OpenCL __local pointer) */
    BT__ARG_TMAP,  /* a tensor map passed by value (CUDA CUtensorMap, __grid_constant__): u.tmap
                      points at BT__TMAP_BYTES bytes, 64-byte aligned, owned by the caller and
                      read during the launch call only */
    BT__ARG_NONE   /* not a kernel parameter (constant memory filled with module_set_global):
                      skipped, the parameters after it move up */
} bt__arg_kind;

#define BT__TMAP_BYTES 128
#define BT__TMAP_MAX_RANK 5

/* A tiled tensor map over a buffer (CUDA's bulk tensor copy engine, TMA): what the backend's
 * tmap_encode needs besides the buffer itself. */
typedef struct bt__tmap_req {
    int dtype;                            /* bt__dtype of the elements */
    int elem_bytes;
    int rank;                             /* 1..BT__TMAP_MAX_RANK */
    uint64_t dims[BT__TMAP_MAX_RANK];     /* elements per dimension, innermost first */
    uint64_t strides[BT__TMAP_MAX_RANK];  /* bytes from one index of dimension i to the next;
                                             strides[0] is elem_bytes (dense innermost) */
    uint32_t box[BT__TMAP_MAX_RANK];      /* elements per copy along each dimension */
    int swizzle;                          /* shared-memory swizzle span: 0, 32, 64 or 128 bytes */
} bt__tmap_req;

typedef struct bt__karg {
    bt__arg_kind kind;
    union {
        bt__bbuf *buf;
        int32_t i32;
        int64_t i64;
        float f32;
        double f64;
        size_t local_bytes;
        const void *tmap;
    } u;
} bt__karg;

/* Bytes a dispatch entry keeps for its backend's prepared launch (launch_rec_make). */
#define BT__LREC_BYTES 640

typedef struct bt__backend_iface {
    int api_version; /* BT__BACKEND_API_VERSION */
    const char *name;
    /* The source languages it compiles, preferred first, NULL-terminated ({"cuda", NULL}). */
    const char *const *languages;

    /* Loads the runtime. BT_NO_BACKEND (with the reason in diag) when it is absent. */
    bt_status (*load)(void **ctx, bt_diag *diag);
    void (*unload)(void *ctx);
    int (*device_count)(void *ctx);
    /* Fills everything the device reports; props fields the device cannot tell are left 0. */
    bt_status (*device_info)(void *ctx, int idx, bt_device_info *out, bt_diag *diag);
    bt_status (*device_open)(void *ctx, int idx, bt__bdev **out, bt_diag *diag);
    void (*device_close)(bt__bdev *d);
    /* Gives back what d holds on the device so that a reopen after a fault gets a fresh context,
     * and keeps d itself readable until device_close frees it: later calls through d fail
     * (BT_LAUNCH), module_free and buf_free of what was made on it free the host side, and a
     * launch in flight in another thread never reads freed memory. Optional (NULL: a reopen
     * closes the old one). */
    void (*device_release)(bt__bdev *d);

    bt_status (*buf_alloc)(bt__bdev *d, size_t bytes, bt__bbuf **out, bt_diag *diag);
    void (*buf_free)(bt__bdev *d, bt__bbuf *b);
    bt_status (*buf_write)(bt__bdev *d, bt__bbuf *b, size_t off, const void *src, size_t n,
                           bt_diag *diag);
    bt_status (*buf_read)(bt__bdev *d, bt__bbuf *b, size_t off, void *dst, size_t n,
                          bt_diag *diag);
    /* Fills n bytes at off with a repeated pattern (pattern_size 1, 2, 4 or 8; n a multiple). */
    bt_status (*buf_fill)(bt__bdev *d, bt__bbuf *b, size_t off, size_t n, const void *pattern,
                          size_t pattern_size, bt_diag *diag);
    bt_status (*buf_copy)(bt__bdev *d, bt__bbuf *dst, bt__bbuf *src, size_t n, bt_diag *diag);

    /* Compiles req into a binary for this device (for req->target when it is non-NULL: a target
     * the device cannot run fails with BT_UNSUPPORTED and the reason in the log). Thread-safe.
     * The build log (possibly empty, never NULL on return when log is non-NULL) is malloc'd into
     * *log, also on failure (BT_COMPILE). A backend whose binaries name things as the source does
     * (OpenCL C) ignores req->names; one that mangles them (CUDA C++) resolves each name as the
     * source spells it — a kernel ("matmul_kernel", a template instance "matmul<float, TILE>";
     * macros expand) or "&symbol" for a __device__ / __constant__ variable — and keeps the pairs
     * in the blob, so that function_get(entry) and module_set_global(symbol) of a module loaded
     * from it find what the source calls them; a name the source does not have fails the compile,
     * the log naming it. */
    bt_status (*compile)(bt__bdev *d, const bt__compile_req *req, bt__blob *out, char **log);
    bt_status (*module_load)(bt__bdev *d, const void *bin, size_t size, bt__bmod **out,
                             bt_diag *diag);
    void (*module_free)(bt__bdev *d, bt__bmod *m);
    bt_status (*function_get)(bt__bdev *d, bt__bmod *m, const char *entry, bt__bfn **out,
                              bt__kres *res, bt_diag *diag);
    /* Optional (NULL when the backend has none): raise the function's dynamic smem limit. */
    bt_status (*function_set_dyn_smem)(bt__bdev *d, bt__bfn *f, size_t bytes, bt_diag *diag);

    /* Enqueues a launch: grid in blocks, block in threads, dyn_smem bytes of dynamic shared memory
     * (CUDA) — OpenCL passes local memory as BT__ARG_LOCAL arguments instead. If timer is
     * non-NULL, the device times this launch alone into it. Asynchronous. */
    bt_status (*launch)(bt__bdev *d, bt__bfn *f, const uint32_t grid[3], const uint32_t block[3],
                        size_t dyn_smem, const bt__karg *args, int nargs, bt__btimer *timer,
                        bt_diag *diag);
    bt_status (*timer_create)(bt__bdev *d, bt__btimer **out, bt_diag *diag);
    void (*timer_free)(bt__bdev *d, bt__btimer *t);
    /* Milliseconds of the launch recorded in t; waits for it to finish. */
    bt_status (*timer_read)(bt__bdev *d, bt__btimer *t, double *ms, bt_diag *diag);

    /* Enqueues a write over a buffer as large as the device's last-level cache, so that the next
     * launch starts with a cold cache. Not timed. */
    bt_status (*flush_cache)(bt__bdev *d, bt_diag *diag);
    bt_status (*sync)(bt__bdev *d, bt_diag *diag);

    /* Optional (NULL when the backend has none; CUDA has it): captures `reps` back-to-back
     * launches of f into a graph, replays it once untimed, then times one replay; *ms_per_launch
     * is that replay's device time / reps, free of per-launch CPU overhead. Synchronous. */
    bt_status (*launch_graph_timed)(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                                    const uint32_t block[3], size_t dyn_smem,
                                    const bt__karg *args, int nargs, int reps,
                                    double *ms_per_launch, bt_diag *diag);

    /* Optional (NULL when the backend has none; CUDA has it): encodes req over buf into out
     * (BT__TMAP_BYTES bytes, 64-byte aligned). Out-of-range elements of a copy read as zero.
     * BT_INVALID_ARG with the reason when the device cannot map it (alignment, box size). */
    bt_status (*tmap_encode)(bt__bdev *d, bt__bbuf *buf, const bt__tmap_req *req, void *out,
                             bt_diag *diag);

    /* Optional: non-zero when a fault (illegal address, trap) has poisoned the device's context,
     * so that every later call fails until the device is closed and opened again. */
    int (*device_lost)(bt__bdev *d);

    /* Optional (CUDA has it): enqueues a copy of the first `bytes` bytes of buf into the
     * module's global variable `symbol` (a __constant__ array), ordered before later launches.
     * BT_NOT_FOUND when the module has no such symbol, BT_INVALID_ARG when it holds fewer bytes
     * (diag says both sizes). */
    bt_status (*module_set_global)(bt__bdev *d, bt__bmod *m, const char *symbol, bt__bbuf *buf,
                                   size_t bytes, bt_diag *diag);

    /* --- embedding (optional; both backends have them): an engine's own objects -------------
     * Nothing wrapped is ever freed, destroyed or synchronised by the backend: device_close of a
     * wrapped device frees what the backend made for it (its own queue/stream, the flush buffer)
     * and drops only the references it took; buf_free of a wrapped buffer frees the handle. */
    /* Wraps a caller's device: native[0..2] are the backend's handles (CUDA: the CUcontext,
     * NULL for the primary context of `ordinal`; OpenCL: cl_context, cl_device_id and the
     * caller's cl_command_queue or NULL). *idx gets the device's index in device_info's list (-1
     * when it is not listed). The backend makes a queue/stream of its own in that context for
     * tuning; launches go where launch_on says. */
    bt_status (*device_wrap)(void *ctx, int ordinal, void *const native[3], bt__bdev **out,
                             int *idx, bt_diag *diag);
    /* Wraps device memory (a CUdeviceptr, a cl_mem) of `bytes` bytes. Memory of another
     * context or device, or smaller than `bytes`, is refused (BT_INVALID_ARG, naming both). */
    bt_status (*buf_wrap)(bt__bdev *d, uint64_t native, size_t bytes, bt__bbuf **out,
                          bt_diag *diag);
    /* launch() on a caller's stream / queue (CUstream, cl_command_queue; NULL: d's own, where
     * launch() goes). A stream of another context is refused. No timer. */
    bt_status (*launch_on)(bt__bdev *d, void *stream, bt__bfn *f, const uint32_t grid[3],
                           const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                           int nargs, bt_diag *diag);
    /* Optional, the dispatch table's fast path: launch_rec_make prepares the launch of f over
     * grid x block with dyn_smem bytes and these arguments once (buffer arguments left NULL:
     * filled per launch) into rec, BT__LREC_BYTES inside the dispatch entry, which never moves;
     * BT_OK when launch_rec can take it from then on (checked like launch()), anything else
     * when it cannot (the usual launch then). launch_rec launches a prepared record on stream
     * (NULL: d's own) with the buffer arguments' backend buffers in order, and returns false
     * without launching when the usual launch must do it (a lost device, a context that is not
     * d's current...), else true with the launch's status in *st. */
    bt_status (*launch_rec_make)(bt__bdev *d, bt__bfn *f, const uint32_t grid[3],
                                 const uint32_t block[3], size_t dyn_smem, const bt__karg *args,
                                 int nargs, void *rec, bt_diag *diag);
    bool (*launch_rec)(bt__bdev *d, void *stream, const void *rec, bt__bbuf *const *bufs,
                       bt_status *st, bt_diag *diag);
    /* Orders d's own queue after the work enqueued so far on `stream` (an event, no host wait);
     * NULL does nothing. */
    bt_status (*stream_wait)(bt__bdev *d, void *stream, bt_diag *diag);
    /* The native handle of a function (CUfunction, cl_kernel), owned by its module. */
    void *(*function_native)(bt__bfn *f);
    /* The device image inside a compiled blob (CUBIN/PTX, OpenCL program binary or the source
     * a device without binaries rebuilds from): points into bin. BT_CORRUPT for a bad blob. */
    bt_status (*blob_image)(const void *bin, size_t size, const void **image, size_t *isize,
                            bt_diag *diag);
    /* Optional (OpenCL has it): 1 when the device has started running the launch recorded in t
     * (or it has ended), 0 while it has not (queued, or compiled at its first launch, as PoCL
     * does); the watchdog counts a run's time from its start. Callable from another thread while
     * the launch is in flight. */
    int (*timer_started)(bt__bdev *d, bt__btimer *t);

    /* --- offline (optional; no device, no load() needed) -------------------------------------
     * offline_target: the target a compile of a source in language lang (NULL: the backend's
     * first) for GPU g builds (`want` when the kernel names one, else g's own: "sm_90") and the
     * compiler that builds it, into *out. BT_UNSUPPORTED when g
     * has no target of this backend (no compute capability), BT_NO_BACKEND when the compiler is
     * absent; diag says why. Whether g can run `want` is the compile's to say, per config. */
    bt_status (*offline_target)(const bt_gpu *g, const char *lang, const char *want,
                                bt__offline_target *out, bt_diag *diag);
    /* Compiles req for GPU g and req->target (from offline_target; a target g cannot run fails
     * with BT_UNSUPPORTED) and reports the resources of the kernel req->names[0] (the entry,
     * which must be given) into *res: registers, spills, static shared memory, and the stack
     * frame as local_bytes. *log (when non-NULL) gets the malloc'd compile log or NULL. */
    bt_status (*offline_compile)(const bt_gpu *g, const bt__compile_req *req, bt__kres *res,
                                 char **log, bt_diag *diag);
    /* A backend device of GPU g that only compiles: compile() is the one entry that may be
     * called on it (no driver is loaded, nothing runs); it builds the same blob compile() makes
     * on a real device of g's architecture. What `blocktune precompile` builds with. BT_UNSUPPORTED
     * when g has no target of this backend, BT_NO_BACKEND without the compiler; freed by
     * offline_free. */
    bt_status (*offline_device)(const bt_gpu *g, bt__bdev **out, bt_diag *diag);
    void (*offline_free)(bt__bdev *d);
    /* Blocks of a compiled function (its resources res, with threads per block and dyn_smem bytes
     * of dynamic shared memory) that one SM of g holds at once, by this backend's occupancy rules;
     * *limiter (when non-NULL) names what binds (static string). -1 when the rules do not know g
     * (a GPU without a compute capability for CUDA). */
    int (*occupancy)(const bt_gpu *g, const bt__kres *res, int threads, int64_t dyn_smem,
                     const char **limiter);

    /* --- a compiler in another process (optional; CUDA: the Triton compile pool of "triton") --
     * For sources in language lang; a language compiled in process answers BT_UNSUPPORTED.
     * xcompiler_id: the compiler's identity into buf ("Triton 3.6.0"), which a binary it built
     * depends on (the kernel cache's key): with start false only when it is known without
     * starting the compiler (BT_NOT_FOUND otherwise), with start true starting it if it must
     * (BT_NO_BACKEND when it is absent; diag says why). xcompiler_start: starts it in the
     * background, returning at once. xcompiler_times: what it has cost this process. */
    bt_status (*xcompiler_id)(const char *lang, bool start, char *buf, size_t size,
                              bt_diag *diag);
    void (*xcompiler_start)(const char *lang);
    bt_status (*xcompiler_times)(const char *lang, bt__xcompiler_times *out);
} bt__backend_iface;

/* The registered backends, in preference order, NULL-terminated. */
const bt__backend_iface *const *bt__backends(void);

/* The source of k that backend I compiles: the first of I's languages k has a source in; NULL
 * when k has none of them. */
const bt__ksource *bt__backend_source(const bt__backend_iface *I, const bt_kdesc *k);

/* Blocks per SM of a compiled function on g by the first registered backend whose occupancy rules
 * know g (bt__backend_iface.occupancy); -1 when none does. */
int bt__backend_occupancy(const bt_gpu *g, const bt__kres *res, int threads, int64_t dyn_smem,
                          const char **limiter);

#endif
