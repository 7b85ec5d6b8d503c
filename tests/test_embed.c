/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_embed.c — blocktune inside an engine, on OpenCL (PoCL here): the engine's own context,
 * queue and cl_mem wrapped (bt_device_wrap_opencl, bt_buffer_wrap), launches on its queue, the
 * checks every launch makes (short buffer, wrong count, another device, another context, dtype),
 * lookup without launching (wisdom-only: no compile, no measurement; the engine then launches the
 * looked-up cl_kernel itself), and that nothing of the engine's is released or left changed.
 * Run it under the sanitizer build too: a refused launch must write nothing anywhere.
 */
#define CL_TARGET_OPENCL_VERSION 120 /* clCreateCommandQueue, as an engine of any age uses */
#include <CL/cl.h>

#include "test_util.h"

#include <dirent.h>
#include <math.h>

static struct {
    cl_platform_id plat;
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    bt_kdesc *k;
} F;

static void fill(float *v, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++)
        v[i] = scale * (float)((long)(i * 7919 % 1000) - 500) / 250.0f;
}

static cl_mem make_buf(cl_context c, size_t bytes, const void *init)
{
    cl_int err;
    cl_mem m = clCreateBuffer(c, CL_MEM_READ_WRITE | (init ? CL_MEM_COPY_HOST_PTR : 0), bytes,
                              (void *)init, &err);
    assert_int_equal(err, CL_SUCCESS);
    return m;
}

static bt_buffer *wrap(bt_device *d, cl_mem m, size_t bytes)
{
    bt_buffer *b = NULL;
    bt_diag dg = {0};
    bt_status st = bt_buffer_wrap(d, (uint64_t)(uintptr_t)m, bytes, &b, &dg);
    if (st)
        fail_msg("bt_buffer_wrap: %s", dg.msg);
    return b;
}

static cl_uint refcount(cl_context c)
{
    cl_uint n = 0;
    assert_int_equal(clGetContextInfo(c, CL_CONTEXT_REFERENCE_COUNT, sizeof n, &n, NULL), 0);
    return n;
}

/* Files in the kernel cache of this test's cache folder. */
static int kcache_files(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels", getenv("BLOCKTUNE_CACHE_DIR"));
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static bt_kernel *kernel_on(bt_device *dev, bt_tune_mode mode)
{
    bt_kernel *kn = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_kernel_create(dev, F.k, &kn, &d), BT_OK);
    bt_tune_options *o = NULL;
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_mode(o, mode), BT_OK);
    assert_int_equal(bt_tune_options_set_warmup_ms(o, 1), BT_OK);
    assert_int_equal(bt_tune_options_set_rep_ms(o, 2), BT_OK);
    assert_int_equal(bt_tune_options_set_budget(o, 3), BT_OK);
    assert_int_equal(bt_tune_options_set_strategy(o, "random"), BT_OK);
    assert_int_equal(bt_tune_options_set_verify_boundary(o, 0), BT_OK);
    assert_int_equal(bt_tune_options_set_top_k(o, 2), BT_OK);
    assert_int_equal(bt_tune_options_set_rounds(o, 1), BT_OK);
    /* every run tunes: the first launch's tune is what is tested */
    assert_int_equal(bt_tune_options_set_store(o, "none"), BT_OK);
    bt_kernel_set_options(kn, o);
    bt_tune_options_destroy(o); /* the kernel keeps its own copy */
    return kn;
}

static bt_problem *problem(int64_t n)
{
    bt_problem *p = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_problem_create(F.k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", n, &d), BT_OK);
    assert_int_equal(bt_problem_set_dtype(p, "fp32", &d), BT_OK);
    return p;
}

/* The first launch tunes (on scratch copies), the winner runs on the engine's queue and
 * memory; the engine's objects are not released and its inputs are unchanged. */
static void test_wrap_and_launch_on_engine_queue(void **state)
{
    (void)state;
    const size_t n = 100003, bytes = n * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    fill(x, n, 1), fill(y, n, -0.5f);
    for (size_t i = 0; i < n; i++)
        z[i] = 7.0f;
    cl_mem mx = make_buf(F.ctx, bytes, x), my = make_buf(F.ctx, bytes, y),
           mz = make_buf(F.ctx, bytes, z);
    cl_uint refs = refcount(F.ctx);

    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_opencl(F.ctx, F.dev, F.q, &dev, &d), BT_OK);
    assert_true(bt_device_is_wrapped(dev));
    assert_non_null(strstr(bt_device_get_info(dev)->id, "opencl:"));
    bt_buffer *bufs[3] = {wrap(dev, mx, bytes), wrap(dev, my, bytes), wrap(dev, mz, bytes)};
    assert_int_equal(bt_buffer_size(bufs[0]), bytes);
    assert_int_equal(bt_buffer_set_dtype(bufs[2], "fp32", &d), BT_OK);
    bt_kernel *kn = kernel_on(dev, BT_MODE_TUNE);
    bt_problem *p = problem((int64_t)n);
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = F.q;
    bt_status st = bt_kernel_launch_ex(kn, p, bufs, 3, &lo, &d);
    if (st)
        fail_msg("launch: %s: %s", bt_err_name(st), d.msg);
    assert_int_equal(bt_kernel_tune_count(kn), 1);
    /* a second launch: from memory, on the device's default queue (the engine's) */
    assert_int_equal(bt_kernel_launch(kn, p, bufs, 3, &d), BT_OK);
    assert_int_equal(bt_kernel_tune_count(kn), 1);
    assert_int_equal(clFinish(F.q), CL_SUCCESS);
    float *got = malloc(bytes), *gx = malloc(bytes);
    assert_int_equal(clEnqueueReadBuffer(F.q, mz, CL_TRUE, 0, bytes, got, 0, NULL, NULL), 0);
    assert_int_equal(clEnqueueReadBuffer(F.q, mx, CL_TRUE, 0, bytes, gx, 0, NULL, NULL), 0);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !(got[i] == x[i] + y[i]) + !(gx[i] == x[i]);
    assert_int_equal(bad, 0);

    /* a launch with the `= {0}` options (the 0.2.0 layout, device's queue) works as well */
    bt_launch_options zero = {0};
    assert_int_equal(bt_kernel_launch_ex(kn, p, bufs, 3, &zero, &d), BT_OK);

    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(bufs[i]);
    bt_device_destroy(dev);
    /* blocktune does not synchronise the engine's queue: the engine waits for what it enqueued
     * (a command still pending holds a reference to the context in PoCL: under load the last
     * launch above could still be running here) */
    assert_int_equal(clFinish(F.q), CL_SUCCESS);
    /* nothing of the engine's was released: the context's count is back, its memory readable.
     * PoCL lets go of a finished command's hold on the context on its own threads, a moment after
     * clFinish returns (seen under load in CI: 7 for 5), so the count may settle: up to 5 s, and
     * it must never go below the engine's own (blocktune releasing what is not its own) */
    cl_uint now = refcount(F.ctx);
    for (int i = 0; i < 500 && now > refs; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        now = refcount(F.ctx);
    }
    assert_int_equal(now, refs);
    assert_int_equal(clEnqueueReadBuffer(F.q, mz, CL_TRUE, 0, bytes, got, 0, NULL, NULL), 0);
    assert_true(got[n - 1] == x[n - 1] + y[n - 1]);
    clReleaseMemObject(mx), clReleaseMemObject(my), clReleaseMemObject(mz);
    free(x), free(y), free(z), free(got), free(gx);
}

/* Every refusal names what is wrong, and nothing runs. */
static void test_refused_launches(void **state)
{
    (void)state;
    bt_device *dev = NULL, *other = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_opencl(F.ctx, F.dev, NULL, &dev, &d), BT_OK);
    assert_int_equal(bt_device_wrap_opencl(F.ctx, F.dev, NULL, &other, &d), BT_OK);
    const int64_t n = 262144;
    const size_t need = (size_t)n * 4, small = 1024;
    cl_mem big[3], tiny[3];
    for (int i = 0; i < 3; i++) {
        big[i] = make_buf(F.ctx, need, NULL);
        tiny[i] = make_buf(F.ctx, small, NULL);
    }
    bt_buffer *b[3], *t[3];
    for (int i = 0; i < 3; i++) {
        b[i] = wrap(dev, big[i], need);
        t[i] = wrap(dev, tiny[i], small);
    }
    bt_kernel *kn = kernel_on(dev, BT_MODE_TUNE);
    bt_problem *p = problem(n);

    /* 1 KiB buffers for n = 262144: refused before any tune, naming the argument and sizes */
    bt_buffer *shortb[3] = {b[0], t[1], b[2]};
    assert_int_equal(bt_kernel_launch(kn, p, shortb, 3, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 1 ('y') holds 1024 bytes, the problem needs 1048576"));
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    /* the wrong number of buffers */
    assert_int_equal(bt_kernel_launch(kn, p, b, 2, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "more than the 2 buffers given"));
    assert_int_equal(bt_kernel_launch(kn, p, b, 1, &d), BT_INVALID_ARG);
    bt_buffer *four[4] = {b[0], b[1], b[2], b[0]};
    assert_int_equal(bt_kernel_launch(kn, p, four, 4, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "takes 3 buffers, 4 given"));
    /* a buffer of another device handle */
    bt_buffer *foreign = wrap(other, big[2], need);
    bt_buffer *mixed[3] = {b[0], b[1], foreign};
    assert_int_equal(bt_kernel_launch(kn, p, mixed, 3, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 2 ('z') belongs to another device"));
    /* a declared dtype that is not the argument's */
    assert_int_equal(bt_buffer_set_dtype(b[1], "fp16", &d), BT_OK);
    assert_int_equal(bt_kernel_launch(kn, p, b, 3, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "buffer 1 ('y') holds fp16, the problem's 'y' is fp32"));
    assert_int_equal(bt_buffer_set_dtype(b[1], "fp99", &d), BT_INVALID_ARG);
    assert_int_equal(bt_kernel_tune_count(kn), 0);

    /* wrapping: memory of another context, and more bytes than the cl_mem holds */
    cl_int err;
    cl_context c2 = clCreateContext(NULL, 1, &F.dev, NULL, NULL, &err);
    assert_int_equal(err, CL_SUCCESS);
    cl_mem m2 = make_buf(c2, need, NULL);
    bt_buffer *x = NULL;
    assert_int_equal(bt_buffer_wrap(dev, (uint64_t)(uintptr_t)m2, need, &x, &d), BT_INVALID_ARG);
    assert_null(x);
    assert_non_null(strstr(d.msg, "belongs to another context"));
    assert_int_equal(bt_buffer_wrap(dev, (uint64_t)(uintptr_t)tiny[0], small + 1, &x, &d),
                     BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "holds 1024 bytes, fewer than the 1025 bytes given"));
    /* a queue of another context: at wrap time and at launch time */
    cl_command_queue q2 = clCreateCommandQueue(c2, F.dev, 0, &err);
    bt_device *bad = NULL;
    assert_int_equal(bt_device_wrap_opencl(F.ctx, F.dev, q2, &bad, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "belongs to another context"));
    assert_int_equal(bt_device_wrap_opencl(c2, NULL, NULL, &bad, &d), BT_INVALID_ARG);
    assert_null(bad);
    assert_int_equal(bt_buffer_set_dtype(b[1], "fp32", &d), BT_OK);
    bt_kernel *kw = kernel_on(dev, BT_MODE_WISDOM_ONLY);
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = q2;
    assert_int_equal(bt_kernel_launch_ex(kw, p, b, 3, &lo, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "cl_command_queue"));
    /* no_tune: a key that nothing holds is BT_NOT_FOUND, not a tune */
    bt_launch_options nt = BT_LAUNCH_OPTIONS_INIT;
    nt.no_tune = 1;
    assert_int_equal(bt_kernel_launch_ex(kn, p, b, 3, &nt, &d), BT_NOT_FOUND);
    assert_int_equal(bt_kernel_tune_count(kn), 0);

    clReleaseCommandQueue(q2);
    clReleaseMemObject(m2);
    clReleaseContext(c2);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kernel_destroy(kw);
    bt_buffer_destroy(foreign);
    for (int i = 0; i < 3; i++) {
        bt_buffer_destroy(b[i]), bt_buffer_destroy(t[i]);
        clReleaseMemObject(big[i]), clReleaseMemObject(tiny[i]);
    }
    bt_device_destroy(dev);
    bt_device_destroy(other);
}

/* wisdom-only lookup: a config, its geometry and arguments with no compile and no measurement;
 * the engine launches the cl_kernel itself and gets z = x + y. */
static void test_lookup_then_own_launch(void **state)
{
    (void)state;
    bt_device *dev = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_wrap_opencl(F.ctx, F.dev, F.q, &dev, &d), BT_OK);
    bt_kernel *kn = kernel_on(dev, BT_MODE_WISDOM_ONLY);
    const int64_t n = 4099;
    bt_problem *p = problem(n);
    int files = kcache_files();
    bt_choice *c = NULL;
    bt_status st = bt_kernel_lookup(kn, p, 0, &c, &d);
    if (st)
        fail_msg("lookup: %s", d.msg);
    assert_int_equal(kcache_files(), files); /* nothing compiled */
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_source src = bt_choice_source(c);
    assert_true(src == BT_SOURCE_MODEL || src == BT_SOURCE_NEAREST_SIZE ||
                src == BT_SOURCE_STORE);
    assert_string_not_equal(bt_source_name(src), "unknown");
    assert_int_equal(bt_choice_nparams(c), 3);
    assert_string_equal(bt_choice_param_name(c, 0), "BLOCK_SIZE");
    int64_t bs = 0;
    assert_int_equal(bt_choice_param(c, "block_size", &bs, &d), BT_OK);
    assert_true(bs == bt_choice_param_value(c, 0) && bs >= 64);
    assert_int_equal(bt_choice_param(c, "TILE", &bs, &d), BT_NOT_FOUND);
    assert_non_null(strstr(d.msg, "BLOCK_SIZE, num_warps, VEC"));
    assert_non_null(strstr(bt_choice_config_json(c), "\"BLOCK_SIZE\""));
    uint32_t grid[3], block[3];
    size_t dyn = 1;
    bt_choice_geometry(c, grid, block, &dyn);
    assert_int_equal(grid[0], (uint32_t)((n + bs - 1) / bs));
    assert_true(block[0] >= 1 && grid[1] == 1 && grid[2] == 1 && block[1] == 1 && dyn == 0);
    int64_t iv = 0;
    assert_int_equal(bt_choice_arg(c, 0, NULL, NULL), BT_ARG_BUFFER);
    assert_int_equal(bt_choice_arg(c, 3, &iv, NULL), BT_ARG_INT64);
    assert_int_equal(iv, n);
    assert_int_equal(bt_choice_arg(c, 4, NULL, NULL), BT_ARG_END);
    /* a wisdom-only tune never measures */
    bt_result *r = NULL;
    assert_int_equal(bt_kernel_tune(kn, p, NULL, &r, &d), BT_FORBIDDEN);
    assert_null(r);
    assert_int_equal(bt_kernel_tune_count(kn), 0);

    /* the engine's own launch of the looked-up kernel */
    void *fn = NULL;
    assert_int_equal(bt_choice_function(c, &fn, &d), BT_OK);
    assert_non_null(fn);
    const void *bin = NULL;
    size_t binsize = 0;
    assert_int_equal(bt_choice_binary(c, &bin, &binsize, &d), BT_OK);
    assert_true(bin && binsize > 16);
    size_t bytes = (size_t)n * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    fill(x, (size_t)n, 2), fill(y, (size_t)n, 1);
    cl_mem mx = make_buf(F.ctx, bytes, x), my = make_buf(F.ctx, bytes, y),
           mz = make_buf(F.ctx, bytes, NULL);
    cl_kernel ck = fn;
    cl_long nn = n;
    assert_int_equal(clSetKernelArg(ck, 0, sizeof mx, &mx), 0);
    assert_int_equal(clSetKernelArg(ck, 1, sizeof my, &my), 0);
    assert_int_equal(clSetKernelArg(ck, 2, sizeof mz, &mz), 0);
    assert_int_equal(clSetKernelArg(ck, 3, sizeof nn, &nn), 0);
    size_t global = (size_t)grid[0] * block[0], local = block[0];
    assert_int_equal(clEnqueueNDRangeKernel(F.q, ck, 1, NULL, &global, &local, 0, NULL, NULL), 0);
    assert_int_equal(clEnqueueReadBuffer(F.q, mz, CL_TRUE, 0, bytes, z, 0, NULL, NULL), 0);
    size_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += !(z[i] == x[i] + y[i]);
    assert_int_equal(bad, 0);
    bt_choice_destroy(c);

    /* tune mode, no_tune: a key nothing holds is BT_NOT_FOUND */
    bt_kernel *kt = kernel_on(dev, BT_MODE_TUNE);
    bt_problem *p2 = problem(77777);
    assert_int_equal(bt_kernel_lookup(kt, p2, 1, &c, &d), BT_NOT_FOUND);
    assert_null(c);
    assert_int_equal(bt_kernel_tune_count(kt), 0);
    clReleaseMemObject(mx), clReleaseMemObject(my), clReleaseMemObject(mz);
    free(x), free(y), free(z);
    bt_problem_destroy(p), bt_problem_destroy(p2);
    bt_kernel_destroy(kn), bt_kernel_destroy(kt);
    bt_device_destroy(dev);
}

/* What the caller's output holds while the first launch tunes (read from the progress callback,
 * on the tuning thread, between rounds). */
typedef struct watched {
    cl_mem z;
    size_t n;
    int rounds, untouched;
} watched;
static watched W;

static int watch_output(const bt_progress *p, void *user)
{
    (void)p, (void)user;
    float *z = malloc(W.n * 4);
    assert_int_equal(clEnqueueReadBuffer(F.q, W.z, CL_TRUE, 0, W.n * 4, z, 0, NULL, NULL), 0);
    int same = 1;
    for (size_t i = 0; i < W.n; i++)
        same &= z[i] == 7.0f;
    W.untouched += same;
    W.rounds++;
    free(z);
    return 0;
}

/* Wrapped buffers: the first launch's tune runs on scratch copies (the caller's output keeps what
 * it held until the winner writes it), or on the buffers themselves with allow_tune_in_place. */
static void test_first_launch_scratch_or_in_place(void **state)
{
    (void)state;
    for (int in_place = 0; in_place < 2; in_place++) {
        const size_t n = 4096 + (size_t)in_place, bytes = n * 4; /* a new key each time */
        float *x = malloc(bytes), *z = malloc(bytes);
        fill(x, n, 1);
        for (size_t i = 0; i < n; i++)
            z[i] = 7.0f;
        cl_mem mx = make_buf(F.ctx, bytes, x), my = make_buf(F.ctx, bytes, x),
               mz = make_buf(F.ctx, bytes, z);
        bt_device *dev = NULL;
        bt_diag d = BT_DIAG_INIT;
        assert_int_equal(bt_device_wrap_opencl(F.ctx, F.dev, F.q, &dev, &d), BT_OK);
        bt_buffer *bufs[3] = {wrap(dev, mx, bytes), wrap(dev, my, bytes), wrap(dev, mz, bytes)};
        bt_kernel *kn = kernel_on(dev, BT_MODE_TUNE);
        bt_tune_options *o = NULL;
        assert_int_equal(bt_tune_options_create(&o), BT_OK);
        assert_int_equal(bt_tune_options_set_strategy(o, "random"), BT_OK);
        assert_int_equal(bt_tune_options_set_budget(o, 2), BT_OK);
        assert_int_equal(bt_tune_options_set_threads(o, 1), BT_OK);
        assert_int_equal(bt_tune_options_set_rep_ms(o, 1), BT_OK);
        assert_int_equal(bt_tune_options_set_verify_boundary(o, 0), BT_OK);
        assert_int_equal(bt_tune_options_set_store(o, "none"), BT_OK);
        assert_int_equal(bt_tune_options_set_progress_cb(o, watch_output, NULL), BT_OK);
        bt_kernel_set_options(kn, o);
        bt_tune_options_destroy(o);
        W = (watched){mz, n, 0, 0};
        bt_problem *p = problem((int64_t)n);
        bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
        lo.allow_tune_in_place = in_place;
        bt_status st = bt_kernel_launch_ex(kn, p, bufs, 3, &lo, &d);
        if (st)
            fail_msg("launch: %s", d.msg);
        assert_int_equal(bt_kernel_tune_count(kn), 1);
        assert_true(W.rounds >= 1);
        /* scratch: untouched at every round; in place: the candidates wrote it */
        assert_int_equal(W.untouched, in_place ? 0 : W.rounds);
        assert_int_equal(clEnqueueReadBuffer(F.q, mz, CL_TRUE, 0, bytes, z, 0, NULL, NULL), 0);
        size_t bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += !(z[i] == x[i] + x[i]);
        assert_int_equal(bad, 0); /* and the winner's launch wrote the right answer */
        bt_problem_destroy(p);
        bt_kernel_destroy(kn);
        for (int i = 0; i < 3; i++)
            bt_buffer_destroy(bufs[i]);
        bt_device_destroy(dev);
        clReleaseMemObject(mx), clReleaseMemObject(my), clReleaseMemObject(mz);
        free(x), free(z);
    }
}

static int setup(void **state)
{
    (void)state;
    cl_uint np = 0;
    if (clGetPlatformIDs(1, &F.plat, &np) != CL_SUCCESS || np == 0)
        BT_TEST_SKIP_ALL("no OpenCL platform");
    if (clGetDeviceIDs(F.plat, CL_DEVICE_TYPE_ALL, 1, &F.dev, NULL) != CL_SUCCESS)
        BT_TEST_SKIP_ALL("no OpenCL device");
    cl_int err;
    F.ctx = clCreateContext(NULL, 1, &F.dev, NULL, NULL, &err);
    F.q = clCreateCommandQueue(F.ctx, F.dev, 0, &err);
    assert_int_equal(err, CL_SUCCESS);
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_builtin("vector_add", &F.k, &d), BT_OK);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bt_kdesc_destroy(F.k);
    clReleaseCommandQueue(F.q);
    clReleaseContext(F.ctx);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wrap_and_launch_on_engine_queue),
        cmocka_unit_test(test_refused_launches),
        cmocka_unit_test(test_lookup_then_own_launch),
        cmocka_unit_test(test_first_launch_scratch_or_in_place),
    };
    return cmocka_run_group_tests_name("embed_opencl", tests, setup, teardown);
}
