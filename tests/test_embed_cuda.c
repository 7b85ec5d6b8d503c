/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_embed_cuda.c — blocktune inside an engine, on CUDA, against the mock driver
 * (tests/mock/mock_cuda.c, which plays the GPU: device memory is host memory): the primary
 * context of an ordinal and an engine's own context wrapped, its CUdeviceptrs wrapped with their
 * sizes, a pointer of another context, of another device, past its allocation or unknown to the
 * driver refused by name, launches on the engine's stream, a stream the driver does not know
 * refused, the looked-up CUfunction and CUBIN, and nothing of the engine's freed or released;
 * the lock-free dispatch table under launches from threads while keys are added and the device
 * is reopened as after a fault; a hot path that asks the driver nothing but the launch; a first
 * launch that loads the binary blocktune precompile built instead of compiling.
 * Always the mock (set before the backend loads), so the same checks run on every machine.
 */
#include "test_util.h"

#include "backends/cuda/nvrtc.h"
#include "backends/device.h"
#include "engine/engine.h"

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <sys/stat.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;

static struct {
    void *lib;
    CUresult (*cuInit)(unsigned);
    CUresult (*retain)(CUcontext *, int);
    CUresult (*release)(int);
    CUresult (*push)(CUcontext);
    CUresult (*pop)(CUcontext *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free_)(CUdeviceptr);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*foreign)(CUdeviceptr *, size_t, int);
    long (*ctx_queries)(void);
    int (*last_launch)(unsigned[3], unsigned[3], unsigned *, unsigned[3], unsigned char[64]);
    CUcontext ctx; /* the engine's reference on the primary context */
    bt_kdesc *k;
    int nvrtc;
} M;

static const char *spec =
    "{\"blocktune_spec\": 1, \"name\": \"vadd\", \"entry\": \"vadd\",\n"
    " \"sources\": {\"cuda\": {\"inline\": \"extern \\\"C\\\" __global__ void vadd(const float *a, "
    "const float *b, float *c, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) "
    "c[i] = a[i] + b[i]; }\"}},\n"
    " \"problem\": {\"n\": 1000}, \"params\": {\"num_warps\": [1, 2, 4]},\n"
    " \"rules\": \"limits\", \"model\": {\"kind\": \"pointwise\", \"unit\": \"simt\", \"smem\": \"0\"},\n"
    " \"launch\": {\"grid\": [\"cdiv(n, num_warps * warp_size)\"], \"block\": [\"num_warps * "
    "warp_size\"]},\n"
    " \"flops\": \"n\", \"bytes\": \"12 * n\",\n"
    " \"args\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"size\": \"n\"}, {\"name\": \"b\", "
    "\"dtype\": \"fp32\", \"size\": \"n\"},\n"
    "   {\"name\": \"c\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},\n"
    "   {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}],\n"
    " \"key\": [\"n\"], \"reference\": {\"config\": {\"num_warps\": 1}}}\n";

#define NEED_NVRTC()                                                                               \
    do {                                                                                           \
        if (!M.nvrtc) {                                                                            \
            printf("SKIPPED: no NVRTC to compile the kernel the mock runs\n");                     \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static CUdeviceptr dalloc(size_t bytes)
{
    CUdeviceptr p = 0;
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.alloc(&p, bytes), 0);
    M.pop(&popped);
    return p;
}

static void dfree(CUdeviceptr p)
{
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.free_(p), 0); /* still the engine's: blocktune did not free it */
    M.pop(&popped);
}

static bt_kernel *wisdom_only_kernel(bt_device *dev)
{
    bt_kernel *kn = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_kernel_create(dev, M.k, &kn, &d), BT_OK);
    bt_tune_options *o = NULL;
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_mode(o, BT_MODE_WISDOM_ONLY), BT_OK);
    assert_int_equal(bt_tune_options_set_store(o, "none"), BT_OK);
    bt_kernel_set_options(kn, o);
    bt_tune_options_destroy(o);
    return kn;
}

static void test_wrap_devices(void **state)
{
    (void)state;
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(0, NULL, &dev, &d), BT_OK); /* the primary context */
    assert_string_equal(bt_device_get_info(dev)->id, "cuda:0");
    assert_true(bt_device_is_wrapped(dev));
    assert_true(bt_device_get_info(dev)->is_default); /* a GPU, first in the table */
    /* the CUDA backend alone was loaded: OpenCL's driver is not started for a CUDA device
     * (the first test of this process; listing the devices loads them all) */
    assert_int_equal(bt__device_backends_loaded(), 1);
    bt_device_destroy(dev);
    bt_device_list *all = NULL;
    assert_int_equal(bt_devices_list(&all, &d), BT_OK);
    assert_int_equal(bt__device_backends_loaded(), bt__device_backend_count());
    assert_true(bt_device_list_count(all) >= 1);
    assert_true(bt_device_list_at(all, 0)->is_default); /* still cuda:0 */
    bt_device_list_destroy(all);
    assert_int_equal(bt_device_wrap_cuda(0, M.ctx, &dev, &d), BT_OK); /* the engine's context */
    bt_device_destroy(dev);
    /* the engine's reference is intact: its context can still be made current */
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    M.pop(&popped);
    assert_int_equal(bt_device_wrap_cuda(1, M.ctx, &dev, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "belongs to device 0, not to device 1"));
    assert_null(dev);
    assert_int_equal(bt_device_wrap_cuda(-1, NULL, &dev, &d), BT_INVALID_ARG);
    assert_int_not_equal(bt_device_wrap_cuda(5, NULL, &dev, &d), BT_OK);
}

static void test_wrap_memory(void **state)
{
    (void)state;
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(-1, M.ctx, &dev, &d), BT_OK);
    CUdeviceptr p = dalloc(4096);
    bt_buffer *b = NULL;
    assert_int_equal(bt_buffer_wrap(dev, p, 4096, &b, &d), BT_OK);
    assert_int_equal(bt_buffer_size(b), 4096);
    bt_buffer_destroy(b);
    assert_int_equal(bt_buffer_wrap(dev, p + 1024, 3072, &b, &d), BT_OK); /* a slice */
    bt_buffer_destroy(b);
    assert_int_equal(bt_buffer_wrap(dev, p + 1024, 3073, &b, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "runs past its allocation (4096 bytes"));
    assert_null(b);
    CUdeviceptr other = 0, remote = 0;
    assert_int_equal(M.foreign(&other, 4096, 0), 0);
    assert_int_equal(M.foreign(&remote, 4096, 1), 0);
    assert_int_equal(bt_buffer_wrap(dev, other, 4096, &b, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "memory of CUDA device 0 in another context"));
    assert_int_equal(bt_buffer_wrap(dev, remote, 4096, &b, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "memory of CUDA device 1, not of device 0"));
    static float host[16];
    assert_int_equal(bt_buffer_wrap(dev, (uint64_t)(uintptr_t)host, sizeof host, &b, &d),
                     BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "is not device memory the driver knows"));
    assert_int_equal(bt_buffer_wrap(dev, 0, 16, &b, &d), BT_INVALID_ARG);
    bt_device_destroy(dev);
    dfree(p);
}

/* Launches on the engine's stream and memory (wisdom-only: the model's config, no tune), the
 * looked-up CUfunction and CUBIN, a short buffer refused. */
static void test_launch_on_engine_stream(void **state)
{
    (void)state;
    NEED_NVRTC();
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(0, M.ctx, &dev, &d), BT_OK);
    const int n = 5000;
    const size_t bytes = n * sizeof(float);
    CUdeviceptr pa = dalloc(bytes), pb = dalloc(bytes), pc = dalloc(bytes);
    float *a = (float *)(uintptr_t)pa, *b = (float *)(uintptr_t)pb, *c = (float *)(uintptr_t)pc;
    for (int i = 0; i < n; i++)
        a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i, c[i] = -1.0f;
    bt_buffer *bufs[3];
    assert_int_equal(bt_buffer_wrap(dev, pa, bytes, &bufs[0], &d), BT_OK);
    assert_int_equal(bt_buffer_wrap(dev, pb, bytes, &bufs[1], &d), BT_OK);
    assert_int_equal(bt_buffer_wrap(dev, pc, bytes, &bufs[2], &d), BT_OK);
    CUstream s = NULL;
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.stream_create(&s, 1), 0);
    M.pop(&popped);

    bt_kernel *kn = wisdom_only_kernel(dev);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(M.k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", n, &d), BT_OK);
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = s;
    bt_status st = bt_kernel_launch_ex(kn, p, bufs, 3, &lo, &d);
    if (st)
        fail_msg("launch: %s", d.msg);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += c[i] != a[i] + b[i];
    assert_int_equal(bad, 0);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    /* a stream the driver does not know is refused before anything is enqueued */
    lo.stream = (void *)&bad;
    assert_int_equal(bt_kernel_launch_ex(kn, p, bufs, 3, &lo, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "cuStreamGetCtx"));
    /* a short buffer */
    bt_buffer *shortc = NULL;
    assert_int_equal(bt_buffer_wrap(dev, pc, 1024, &shortc, &d), BT_OK);
    bt_buffer *sb[3] = {bufs[0], bufs[1], shortc};
    lo.stream = s;
    assert_int_equal(bt_kernel_launch_ex(kn, p, sb, 3, &lo, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 2 ('c') holds 1024 bytes, the problem needs 20000"));

    /* the looked-up function and binary, for the engine's own cuLaunchKernel */
    bt_choice *ch = NULL;
    assert_int_equal(bt_kernel_lookup(kn, p, 0, &ch, &d), BT_OK);
    assert_int_equal(bt_choice_source(ch), BT_SOURCE_MEMORY); /* the launch put it there */
    void *fn = NULL;
    assert_int_equal(bt_choice_function(ch, &fn, &d), BT_OK);
    assert_non_null(fn);
    const void *bin = NULL;
    size_t size = 0;
    assert_int_equal(bt_choice_binary(ch, &bin, &size, &d), BT_OK);
    assert_true(size > 64 && !memcmp(bin, "\177ELF", 4)); /* a CUBIN */
    bt_choice_destroy(ch);

    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_buffer_destroy(shortc);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(bufs[i]);
    bt_device_destroy(dev);
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.stream_destroy(s), 0); /* still the engine's stream */
    M.pop(&popped);
    dfree(pa), dfree(pb), dfree(pc);
}

/* The engine's three buffers of n floats (a = i/2, b = 3 - i, c poisoned) on its stream. */
typedef struct engine_bufs {
    int n;
    CUdeviceptr p[3];
    bt_buffer *b[3];
    CUstream s;
} engine_bufs;

/* c = -1 everywhere, so that a launch that writes nothing is seen. */
static void engine_bufs_poison(engine_bufs *E)
{
    float *c = (float *)(uintptr_t)E->p[2];
    for (int i = 0; i < E->n; i++)
        c[i] = -1.0f;
}

static void engine_bufs_make(bt_device *dev, int n, engine_bufs *E)
{
    bt_diag d = {0};
    E->n = n;
    for (int i = 0; i < 3; i++) {
        E->p[i] = dalloc((size_t)n * sizeof(float));
        assert_int_equal(bt_buffer_wrap(dev, E->p[i], (size_t)n * sizeof(float), &E->b[i], &d),
                         BT_OK);
    }
    float *a = (float *)(uintptr_t)E->p[0], *b = (float *)(uintptr_t)E->p[1];
    for (int i = 0; i < n; i++)
        a[i] = (float)i * 0.5f, b[i] = 3.0f - (float)i;
    engine_bufs_poison(E);
    CUcontext popped;
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.stream_create(&E->s, 1), 0);
    M.pop(&popped);
}

/* Elements of c that are not a + b. */
static int engine_bufs_wrong(const engine_bufs *E)
{
    const float *a = (const float *)(uintptr_t)E->p[0], *b = (const float *)(uintptr_t)E->p[1];
    const float *c = (const float *)(uintptr_t)E->p[2];
    int bad = 0;
    for (int i = 0; i < E->n; i++)
        bad += c[i] != a[i] + b[i];
    return bad;
}

static void engine_bufs_free(engine_bufs *E)
{
    CUcontext popped;
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(E->b[i]);
    assert_int_equal(M.push(M.ctx), 0);
    assert_int_equal(M.stream_destroy(E->s), 0);
    M.pop(&popped);
    for (int i = 0; i < 3; i++)
        dfree(E->p[i]);
}

/* One step of an engine: a wrapped primary context, its buffers of n floats and stream, a
 * wisdom-only kernel whose key n was launched once. */
typedef struct engine_step {
    bt_device *dev;
    engine_bufs E;
    bt_kernel *kn;
    bt_problem *p;
    bt_launch_options lo;
    bt__dkey key;
} engine_step;

static void engine_step_open(int n, engine_step *S)
{
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(0, M.ctx, &S->dev, &d), BT_OK);
    engine_bufs_make(S->dev, n, &S->E);
    S->kn = wisdom_only_kernel(S->dev);
    assert_int_equal(bt_problem_create(M.k, &S->p), BT_OK);
    assert_int_equal(bt_problem_set(S->p, "n", n, &d), BT_OK);
    S->lo = (bt_launch_options)BT_LAUNCH_OPTIONS_INIT;
    S->lo.stream = S->E.s;
    if (bt_kernel_launch_ex(S->kn, S->p, S->E.b, 3, &S->lo, &d))
        fail_msg("first launch: %s", d.msg);
    bt__dispatch_key(S->kn, S->p, &S->key);
}

static void engine_step_close(engine_step *S)
{
    bt_problem_destroy(S->p);
    bt_kernel_destroy(S->kn);
    engine_bufs_free(&S->E);
    bt_device_destroy(S->dev);
}

typedef struct launcher {
    bt_kernel *kn;
    engine_bufs *E;
    volatile int *stop;
    int launches, failures;
    char first_error[256];
} launcher;

/* Launches the key n = E->n on the engine's stream until *stop. */
static void *launch_until_stopped(void *arg)
{
    launcher *L = arg;
    bt_problem *p = NULL;
    bt_diag d = {0};
    if (bt_problem_create(M.k, &p) || bt_problem_set(p, "n", L->E->n, &d)) {
        L->failures++;
        return NULL;
    }
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = L->E->s;
    while (!__atomic_load_n(L->stop, __ATOMIC_ACQUIRE) || L->launches < 50) {
        bt_status st = bt_kernel_launch_ex(L->kn, p, L->E->b, 3, &lo, &d);
        if (st && !L->failures++)
            snprintf(L->first_error, sizeof L->first_error, "%s: %.200s", bt_err_name(st), d.msg);
        L->launches++;
    }
    bt_problem_destroy(p);
    return NULL;
}

/* Launches of a key in four threads, with no lock on the dispatch table, while the main thread
 * adds 40 keys (the table grows from 16 slots to 128, each growth retiring the old one) and
 * replaces the launched key's entry twice: no launch fails, every result is right, and ASan
 * sees no use of a retired table or entry. */
static void test_dispatch_table_grows_under_launches(void **state)
{
    (void)state;
    NEED_NVRTC();
    engine_step S;
    engine_step_open(3000, &S);
    bt_diag d = {0};
    const bt__dispatch *first = bt__dispatch_get(S.kn, &S.key);
    assert_non_null(first);

    volatile int stop = 0;
    launcher L[4];
    pthread_t th[4];
    for (int t = 0; t < 4; t++) {
        L[t] = (launcher){S.kn, &S.E, &stop, 0, 0, ""};
        assert_int_equal(pthread_create(&th[t], NULL, launch_until_stopped, &L[t]), 0);
    }
    bt_config *c = NULL;
    for (int i = 0; i < 40; i++) { /* keys n = 100 ... 139, smaller than the buffers */
        assert_int_equal(bt_problem_set(S.p, "n", 100 + i, &d), BT_OK);
        if (bt_kernel_launch_ex(S.kn, S.p, S.E.b, 3, &S.lo, &d))
            fail_msg("first launch of n = %d: %s", 100 + i, d.msg);
        if (i == 10 || i == 30) { /* the launched key's winner replaced, as a re-tune does */
            assert_int_equal(bt_problem_set(S.p, "n", S.E.n, &d), BT_OK);
            const char *w = i == 10 ? "num_warps=2" : "num_warps=4";
            assert_int_equal(bt_kdesc_parse_config(M.k, w, &c, &d), BT_OK);
            assert_int_equal(bt__dispatch_config(S.kn, S.p, c, &d), BT_OK);
            bt_config_destroy(c);
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    int launches = 0;
    for (int t = 0; t < 4; t++) {
        assert_int_equal(pthread_join(th[t], NULL), 0);
        if (L[t].failures)
            fail_msg("thread %d: %d of %d launches failed, the first: %s", t, L[t].failures,
                     L[t].launches, L[t].first_error);
        launches += L[t].launches;
    }
    assert_int_equal(bt_device_sync(S.dev, &d), BT_OK);
    printf("    %d launches in 4 threads while 40 keys were added and one replaced twice\n",
           launches);
    assert_int_equal(engine_bufs_wrong(&S.E), 0);
    assert_int_equal(S.kn->ntab, 41);
    assert_true(S.kn->tab->cap >= 128);
    assert_int_equal(bt_problem_set(S.p, "n", S.E.n, &d), BT_OK);
    const bt__dispatch *now = bt__dispatch_get(S.kn, &S.key);
    assert_non_null(now);
    assert_true(now != first);
    assert_int_equal(now->cfg.v[0], 4); /* num_warps, the only parameter: the last replacement's */
    assert_int_equal(first->hash, S.key.hash); /* the replaced entry is still readable */
    assert_int_equal(bt_kernel_tune_count(S.kn), 0);
    engine_step_close(&S);
}

/* A fault's recovery empties the table and reopens the device while a launch may be in flight
 * in another thread: what that launch holds (the entry, its function, the old backend device)
 * stays readable and a launch through it fails cleanly; the key then resolves again on the new
 * context and computes the right thing; everything is freed with the kernel and the device. */
static void test_reset_leaves_in_flight_launches_safe(void **state)
{
    (void)state;
    NEED_NVRTC();
    engine_step S;
    engine_step_open(2000, &S);
    bt_diag d = {0};
    const bt__dispatch *e = bt__dispatch_get(S.kn, &S.key);
    assert_non_null(e);
    bt__bdev *old = bt__kernel_bdev(S.kn);

    assert_int_equal(bt__dispatch_reset(S.kn, &d), BT_OK);
    assert_null(bt__dispatch_get(S.kn, &S.key));
    assert_non_null(bt__kernel_bdev(S.kn));
    assert_true(bt__kernel_bdev(S.kn) != old);
    /* the launch that was in flight: its entry and the old device are readable, and the launch
     * through them fails with the reason */
    assert_int_equal(e->hash, S.key.hash);
    bt__karg args[BT__MAX_ARGS];
    memcpy(args, e->args, sizeof args);
    for (int i = 0; i < 3; i++)
        args[i] = (bt__karg){.kind = BT__ARG_BUF, .u.buf = S.E.b[i]->b};
    assert_int_equal(S.kn->iface->launch(old, e->fn, e->grid, e->block, e->dyn, args,
                                       M.k->nargs, NULL, &d),
                     BT_LAUNCH);
    assert_non_null(strstr(d.msg, "reopened after a fault"));
    /* the key again, on the new context */
    engine_bufs_poison(&S.E);
    if (bt_kernel_launch_ex(S.kn, S.p, S.E.b, 3, &S.lo, &d))
        fail_msg("launch after the reset: %s", d.msg);
    assert_int_equal(bt_device_sync(S.dev, &d), BT_OK);
    assert_int_equal(engine_bufs_wrong(&S.E), 0);
    assert_non_null(bt__dispatch_get(S.kn, &S.key));
    engine_step_close(&S);
}

/* The hot path asks the driver nothing but the launch: with the engine's context current (as
 * the CUDA runtime leaves it), 100 launches of a dispatched key make no cuCtxGetCurrent call;
 * with none current, the driver's refusal of the first try makes the context current and the
 * launch goes through once (100 launches enqueue 100 kernels), with the right results. */
static void test_hot_path_asks_no_context(void **state)
{
    (void)state;
    NEED_NVRTC();
    engine_step S;
    engine_step_open(1500, &S);
    bt_diag d = {0};
    unsigned g[3], b[3], sh, cl[3];
    unsigned char prm[64];
    for (int current = 1; current >= 0; current--) {
        CUcontext popped;
        if (current)
            assert_int_equal(M.push(M.ctx), 0);
        engine_bufs_poison(&S.E);
        long q0 = M.ctx_queries();
        int l0 = M.last_launch(g, b, &sh, cl, prm);
        for (int i = 0; i < 100; i++)
            if (bt_kernel_launch_ex(S.kn, S.p, S.E.b, 3, &S.lo, &d))
                fail_msg("launch %d (context %s): %s", i, current ? "current" : "none", d.msg);
        long queries = M.ctx_queries() - q0;
        int launches = M.last_launch(g, b, &sh, cl, prm) - l0;
        printf("    context %s: %ld cuCtxGetCurrent calls, %d kernels for 100 launches\n",
               current ? "current" : "not current", queries, launches);
        assert_int_equal(launches, 100);
        if (current) {
            assert_int_equal(queries, 0);
            M.pop(&popped);
        } else {
            assert_true(queries >= 100); /* each refused try took the usual way */
        }
        assert_int_equal(bt_device_sync(S.dev, &d), BT_OK);
        assert_int_equal(engine_bufs_wrong(&S.E), 0);
    }
    /* the key's entry holds the launch the backend prepared when it was made: the launches
     * above went through it (and, with no context current, through the usual way after it) */
    bt__dkey key;
    bt__dispatch_key(S.kn, S.p, &key);
    const bt__dispatch *e = bt__dispatch_get(S.kn, &key);
    assert_non_null(e);
    assert_true(e->has_rec);
    engine_step_close(&S);
}

/* The decisions log, gathered (bt_set_log_callback). */
static char g_log[8192];
static void log_line(const char *line, void *user)
{
    (void)user;
    size_t n = strlen(g_log);
    snprintf(g_log + n, sizeof g_log - n, "%s\n", line);
}

/* Launches the wisdom-only vadd of n = 5000 on dev and checks its result. */
static void launch_vadd(bt_device *dev, bt_kernel *kn)
{
    const int n = 5000;
    const size_t bytes = n * sizeof(float);
    CUdeviceptr pa = dalloc(bytes), pb = dalloc(bytes), pc = dalloc(bytes);
    float *a = (float *)(uintptr_t)pa, *b = (float *)(uintptr_t)pb, *c = (float *)(uintptr_t)pc;
    for (int i = 0; i < n; i++)
        a[i] = (float)i * 0.25f, b[i] = 7.0f - (float)i, c[i] = NAN;
    bt_buffer *bufs[3];
    bt_diag d = {0};
    CUdeviceptr ptr[3] = {pa, pb, pc};
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_wrap(dev, ptr[i], bytes, &bufs[i], &d), BT_OK);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(M.k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", n, &d), BT_OK);
    if (bt_kernel_launch(kn, p, bufs, 3, &d) != BT_OK)
        fail_msg("launch: %s", d.msg);
    assert_int_equal(bt_device_sync(dev, &d), BT_OK);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += !(c[i] == a[i] + b[i]);
    assert_int_equal(bad, 0);
    bt_problem_destroy(p);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(bufs[i]);
    dfree(pa), dfree(pb), dfree(pc);
}

/* blocktune precompile: a wisdom file's winner built with no device for a GPU of the table, then
 * a first launch (wisdom-only, an empty kernel cache) that loads that binary instead of
 * compiling, the key taken from the wisdom; a second precompile builds nothing; a damaged
 * binary is compiled again. */
static void test_precompiled_first_launch(void **state)
{
    (void)state;
    NEED_NVRTC();
    char dir[] = "/tmp/bt_precompiled_XXXXXX", path[512], pre[128], wis[128], cache[128];
    assert_non_null(mkdtemp(dir));
    snprintf(wis, sizeof wis, "%s/wisdom", dir);
    snprintf(pre, sizeof pre, "%s/precompiled", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    assert_int_equal(mkdir(wis, 0755), 0);
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_cuda(0, M.ctx, &dev, &d), BT_OK);
    bt_kernel *kn = wisdom_only_kernel(dev);
    snprintf(path, sizeof path, "%s/mock.json", wis);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, \"device\": "
               "\"blocktune mock GPU\", \"arch\": \"sm_90\", \"entries\": [\n"
               " {\"kernel\": \"vadd\", \"source_hash\": \"%016llx\", \"key\": {\"n\": 5000}, "
               "\"config\": {\"num_warps\": 2}, \"rank\": 0, \"median_ms\": 0.01},\n"
               " {\"kernel\": \"vadd\", \"source_hash\": \"00000000000000aa\", \"key\": {\"n\": 9}, "
               "\"config\": {\"num_warps\": 4}, \"rank\": 0, \"median_ms\": 0.01}]}\n",
            (unsigned long long)kn->src_hash);
    assert_int_equal(fclose(f), 0);
    bt_kernel_destroy(kn);

    bt_precompile_options *o = NULL;
    assert_int_equal(bt_precompile_options_create(&o), BT_OK);
    assert_int_equal(bt_precompile_options_add_wisdom(o, path), BT_OK);
    assert_int_equal(bt_precompile_options_add_kernel(o, M.k), BT_OK);
    assert_int_equal(bt_precompile_options_set_gpu(o, "h200"), BT_OK); /* no row names the mock */
    assert_int_equal(bt_precompile_options_set_output(o, pre), BT_OK);
    bt_precompile_result *r = NULL;
    if (bt_precompile(o, &r, &d) != BT_OK)
        fail_msg("precompile: %s", d.msg);
    int compiled, present, skipped, failed;
    bt_precompile_result_counts(r, &compiled, &present, &skipped, &failed);
    bt_precompile_result_write(r, stdout, 1);
    assert_int_equal(compiled, 1);
    assert_int_equal(present, 0);
    assert_int_equal(skipped, 1); /* another source's entry: a launch never takes it */
    assert_int_equal(failed, 0);
    assert_string_equal(bt_precompile_result_dir(r), pre);
    bt_precompile_result_destroy(r);
    assert_int_equal(bt_precompile(o, &r, &d), BT_OK); /* again: nothing to build */
    bt_precompile_result_counts(r, &compiled, &present, &skipped, &failed);
    assert_int_equal(compiled, 0);
    assert_int_equal(present, 1);
    bt_precompile_result_destroy(r);
    bt_precompile_options_destroy(o);

    /* a first launch with nothing in the kernel cache: the precompiled binary, wisdom's config */
    assert_int_equal(bt_set_cache_dir(cache), BT_OK);
    assert_int_equal(bt_set_wisdom_dirs(wis, NULL), BT_OK);
    assert_int_equal(bt_set_precompiled_dir(pre), BT_OK);
    g_log[0] = '\0';
    bt_set_log_callback(log_line, NULL);
    kn = wisdom_only_kernel(dev);
    launch_vadd(dev, kn);
    printf("%s", g_log);
    assert_non_null(strstr(g_log, "vadd: dispatching {\"num_warps\":2} from user-wisdom"));
    assert_non_null(strstr(g_log, "vadd: binary precompiled (the installed folder)"));
    assert_null(strstr(g_log, "compiled in"));
    bt_kernel_destroy(kn);

    /* a damaged binary (one byte changed) is not loaded: it is compiled */
    DIR *D = opendir(pre);
    assert_non_null(D);
    int nbin = 0;
    for (struct dirent *de; (de = readdir(D)) != NULL;)
        if (strstr(de->d_name, ".bin")) {
            nbin++;
            snprintf(path, sizeof path, "%s/%s", pre, de->d_name);
        }
    closedir(D);
    assert_int_equal(nbin, 1);
    f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, -3, SEEK_END), 0);
    int ch = fgetc(f);
    assert_int_equal(fseek(f, -3, SEEK_END), 0);
    fputc(ch ^ 0x5a, f);
    assert_int_equal(fclose(f), 0);
    g_log[0] = '\0';
    kn = wisdom_only_kernel(dev);
    launch_vadd(dev, kn);
    assert_null(strstr(g_log, "binary precompiled"));
    assert_non_null(strstr(g_log, "vadd: binary compiled in"));
    bt_kernel_destroy(kn);

    bt_set_log_callback(NULL, NULL);
    bt_set_precompiled_dir(NULL);
    bt_set_wisdom_dirs(NULL, NULL);
    bt_set_cache_dir(NULL);
    bt_device_destroy(dev);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
    (void)state;
    M.lib = dlopen(BT_MOCK_CUDA, RTLD_NOW | RTLD_LOCAL);
    if (!M.lib)
        BT_TEST_SKIP_ALL("no mock driver: %s", dlerror());
#define SYM(f, name) *(void **)&M.f = dlsym(M.lib, name), assert_non_null(M.f)
    SYM(cuInit, "cuInit");
    SYM(retain, "cuDevicePrimaryCtxRetain");
    SYM(release, "cuDevicePrimaryCtxRelease_v2");
    SYM(push, "cuCtxPushCurrent_v2");
    SYM(pop, "cuCtxPopCurrent_v2");
    SYM(alloc, "cuMemAlloc_v2");
    SYM(free_, "cuMemFree_v2");
    SYM(stream_create, "cuStreamCreate");
    SYM(stream_destroy, "cuStreamDestroy_v2");
    SYM(foreign, "mock_cuda_alloc_foreign");
    SYM(ctx_queries, "mock_cuda_ctx_queries");
    SYM(last_launch, "mock_cuda_last_launch");
#undef SYM
    /* the engine: the CUDA runtime's way, a reference on the primary context */
    assert_int_equal(M.cuInit(0), 0);
    assert_int_equal(M.retain(&M.ctx, 0), 0);
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_load_string(spec, "vadd.json", &M.k, &d), BT_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bt_kdesc_destroy(M.k);
    M.release(0);
    return 0;
}

int main(void)
{
    /* the mock, before anything loads the CUDA backend */
    setenv("BLOCKTUNE_CUDA_LIBRARY", BT_MOCK_CUDA, 1);
    bt_diag why = {0};
    M.nvrtc = bt__nvrtc_available(&why);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_devices),
        cmocka_unit_test(test_wrap_memory),
        cmocka_unit_test(test_launch_on_engine_stream),
        cmocka_unit_test(test_dispatch_table_grows_under_launches),
        cmocka_unit_test(test_reset_leaves_in_flight_launches_safe),
        cmocka_unit_test(test_hot_path_asks_no_context),
        cmocka_unit_test(test_precompiled_first_launch),
    };
    return cmocka_run_group_tests_name("embed_cuda_mock", tests, setup, teardown);
}
