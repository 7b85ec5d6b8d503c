/*
 * test_opencl.c — the OpenCL backend through its vtable and the device layer: listing and info,
 * buffers (round trip, fill, copy, bounds), compile (success, errors with the line, from several
 * threads at once), binary round trip and corrupt blobs, kernels and their resources, launches
 * (results checked exactly against the host, profiling timers, illegal sizes, bad arguments),
 * cache flushing, and a missing OpenCL library.
 *
 * Needs an OpenCL device (PoCL on the CPU does); without one the test prints why and exits 77.
 */
/* cmocka.h needs these first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
/* clang-format off */
#include <cmocka.h>
/* clang-format on */

#include "backends/opencl/opencl.h"
#include "core/device.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The OpenCL device under test, opened once for the whole group. */
static bt_device *g_dev;
static const bt__backend_iface *g_if;
static bt__bdev *g_bd;

/* xorshift64*: reproducible random data without touching rand()'s global state. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

static const char *vadd_src =
    "__kernel void vadd(__global const float *a, __global const float *b,\n"
    "                   __global float *c, int n)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n";

/* Compiles src and loads it; the module is the caller's to free. */
static bt__bmod *build(const char *src, const char *const *defs, int ndefs, const char *opts)
{
    bt__blob blob = {0};
    char *log = NULL;
    bt_status st = g_if->compile(g_bd, src, defs, ndefs, opts, &blob, &log);
    if (st != BT_OK)
        fprintf(stderr, "compile failed: %s\n%s\n", bt_err_name(st), log ? log : "(no log)");
    assert_int_equal(st, BT_OK);
    assert_non_null(log);
    free(log);
    bt__bmod *m = NULL;
    bt_diag d = {0};
    st = g_if->module_load(g_bd, blob.data, blob.size, &m, &d);
    if (st != BT_OK)
        fprintf(stderr, "module_load: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    free(blob.data);
    return m;
}

static bt__bbuf *alloc(size_t bytes)
{
    bt__bbuf *b = NULL;
    bt_diag d = {0};
    assert_int_equal(g_if->buf_alloc(g_bd, bytes, &b, &d), BT_OK);
    assert_non_null(b);
    return b;
}

static bt__karg buf_arg(bt__bbuf *b)
{
    return (bt__karg){.kind = BT__ARG_BUF, .u.buf = b};
}
static bt__karg i32_arg(int32_t v)
{
    return (bt__karg){.kind = BT__ARG_I32, .u.i32 = v};
}

/* ---------------------------------------------------------------------------------------------
 * Listing and info
 * ------------------------------------------------------------------------------------------- */

static void test_cl_error_names(void **state)
{
    (void)state;
    assert_string_equal(bt__cl_error_name(-11), "CL_BUILD_PROGRAM_FAILURE");
    assert_string_equal(bt__cl_error_name(-54), "CL_INVALID_WORK_GROUP_SIZE");
    assert_string_equal(bt__cl_error_name(-5), "CL_OUT_OF_RESOURCES");
    assert_string_equal(bt__cl_error_name(0), "CL_SUCCESS");
    assert_string_equal(bt__cl_error_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    assert_string_equal(bt__cl_error_name(-4242), "CL_UNKNOWN_ERROR");
}

static void test_devices_list_sane(void **state)
{
    (void)state;
    bt_device_list *list = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_devices_list(&list, &d), BT_OK);
    size_t n = bt_device_list_count(list);
    const bt_device_info *devs = bt_device_list_at(list, 0);
    assert_true(n >= 1);
    assert_non_null(devs);
    int defaults = 0, first_gpu = -1, ncl = 0;
    for (size_t i = 0; i < n; i++) {
        const bt_device_info *x = bt_device_list_at(list, i);
        char want[32];
        snprintf(want, sizeof want, "%s:%d", x->backend, x->index);
        assert_string_equal(x->id, want);
        defaults += x->is_default;
        if (x->is_gpu && first_gpu < 0)
            first_gpu = (int)i;
        if (strcmp(x->backend, "opencl") != 0)
            continue;
        assert_int_equal(x->index, ncl++); /* numbered densely in order */
        assert_true(x->name[0] != '\0');
        assert_true(x->vendor[0] != '\0');
        assert_true(x->platform[0] != '\0');
        assert_memory_equal(x->api_version, "OpenCL ", 7);
        assert_memory_equal(x->compiler_version, "OpenCL C ", 9);
        assert_true(x->driver_version[0] != '\0');
        assert_true(x->props.sm_count > 0);
        assert_true(x->props.max_threads_per_block > 0);
        assert_true(x->props.smem_per_block > 0);
        assert_true(x->props.smem_per_block_optin == x->props.smem_per_block);
        assert_true(x->props.mem_bytes > 0);
        assert_true(x->props.clock_mhz >= 0);
        assert_true(x->props.warp_size >= 1);
        assert_string_equal(x->props.name, x->name);
        if (x->uuid[0])
            assert_int_equal(strlen(x->uuid), 36);
    }
    assert_true(ncl >= 1);
    assert_int_equal(defaults, 1);
    assert_true(bt_device_list_at(list, first_gpu >= 0 ? (size_t)first_gpu : 0)->is_default);
    bt_device_list_destroy(list);
}

static void test_device_open_by_id(void **state)
{
    (void)state;
    bt_device *d = NULL;
    bt_diag diag = {0};
    assert_int_equal(bt_device_open(NULL, &d, &diag), BT_OK);
    assert_true(bt_device_get_info(d)->is_default);
    assert_non_null(bt__device_iface(d));
    assert_non_null(bt__device_bdev(d));
    bt_device_close(d);

    assert_int_equal(bt_device_open("opencl:0", &d, &diag), BT_OK);
    assert_string_equal(bt_device_get_info(d)->id, "opencl:0");
    assert_string_equal(bt__device_iface(d)->name, "opencl");
    bt_device_close(d);

    d = (bt_device *)&diag; /* must be reset to NULL */
    assert_int_equal(bt_device_open("opencl:999", &d, &diag), BT_NO_DEVICE);
    assert_null(d);
    assert_non_null(strstr(diag.msg, "opencl:999"));
    assert_non_null(strstr(diag.msg, "opencl:0")); /* lists the ids that exist */
    bt_device_close(NULL);
    assert_null(bt_device_get_info(NULL));
}

static void test_missing_library(void **state)
{
    (void)state;
    setenv(BT__OPENCL_LIBRARY_ENV, "/nonexistent/libOpenCL-blocktune-test.so", 1);
    void *ctx = (void *)&ctx;
    bt_diag d = {0};
    bt_status st = bt__backend_opencl.load(&ctx, &d);
    unsetenv(BT__OPENCL_LIBRARY_ENV);
    assert_int_equal(st, BT_NO_BACKEND);
    assert_null(ctx);
    assert_non_null(strstr(d.msg, "/nonexistent/libOpenCL-blocktune-test.so"));

    /* A second, independent load of the real library also works, and unloads cleanly. */
    assert_int_equal(bt__backend_opencl.load(&ctx, &d), BT_OK);
    assert_true(bt__backend_opencl.device_count(ctx) >= 1);
    bt_device_info info;
    assert_int_equal(bt__backend_opencl.device_info(ctx, 9999, &info, &d), BT_NO_DEVICE);
    bt__backend_opencl.unload(ctx);
}

/* ---------------------------------------------------------------------------------------------
 * Buffers
 * ------------------------------------------------------------------------------------------- */

static void test_buffer_round_trip(void **state)
{
    (void)state;
    const size_t n = (1u << 20) + 13;
    unsigned char *src = malloc(n), *dst = malloc(n);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)rnd();
    bt__bbuf *b = alloc(n);
    bt_diag d = {0};
    assert_int_equal(g_if->buf_write(g_bd, b, 0, src, n, &d), BT_OK);
    memset(dst, 0, n);
    assert_int_equal(g_if->buf_read(g_bd, b, 0, dst, n, &d), BT_OK);
    assert_memory_equal(src, dst, n);
    /* At an odd offset. */
    assert_int_equal(g_if->buf_write(g_bd, b, 7, src + 100, 1000, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, b, 7, dst, 1000, &d), BT_OK);
    assert_memory_equal(src + 100, dst, 1000);
    /* Out of range is refused, naming the range. */
    assert_int_equal(g_if->buf_read(g_bd, b, n - 4, dst, 8, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "outside"));
    assert_int_equal(g_if->buf_write(g_bd, b, n + 1, src, 0, &d), BT_INVALID_ARG);
    bt__bbuf *z = (bt__bbuf *)&d;
    assert_int_equal(g_if->buf_alloc(g_bd, 0, &z, &d), BT_INVALID_ARG);
    assert_null(z);
    g_if->buf_free(g_bd, b);
    g_if->buf_free(g_bd, NULL);
    free(src);
    free(dst);
}

static void test_buffer_fill_patterns(void **state)
{
    (void)state;
    const size_t n = 4096;
    unsigned char *host = malloc(n), *back = malloc(n);
    assert_non_null(host);
    assert_non_null(back);
    bt__bbuf *b = alloc(n);
    bt_diag d = {0};
    const uint64_t pat = 0x0102030405060708ULL;
    for (size_t ps = 1; ps <= 8; ps *= 2) {
        for (size_t i = 0; i < n; i++)
            host[i] = (unsigned char)rnd();
        assert_int_equal(g_if->buf_write(g_bd, b, 0, host, n, &d), BT_OK);
        size_t off = 8 * ps, len = 64 * ps + ps * 3;
        assert_int_equal(g_if->buf_fill(g_bd, b, off, len, &pat, ps, &d), BT_OK);
        for (size_t i = 0; i < len; i++)
            host[off + i] = ((const unsigned char *)&pat)[i % ps];
        assert_int_equal(g_if->buf_read(g_bd, b, 0, back, n, &d), BT_OK);
        assert_memory_equal(host, back, n); /* the range filled, the rest untouched */
    }
    assert_int_equal(g_if->buf_fill(g_bd, b, 0, 10, &pat, 4, &d), BT_INVALID_ARG);
    assert_int_equal(g_if->buf_fill(g_bd, b, 0, 12, &pat, 3, &d), BT_INVALID_ARG);
    assert_int_equal(g_if->buf_fill(g_bd, b, 0, n + 4, &pat, 4, &d), BT_INVALID_ARG);
    g_if->buf_free(g_bd, b);
    free(host);
    free(back);
}

static void test_buffer_copy(void **state)
{
    (void)state;
    const size_t n = 100003;
    unsigned char *src = malloc(n), *dst = malloc(n);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)rnd();
    bt__bbuf *a = alloc(n), *b = alloc(n + 100);
    bt_diag d = {0};
    const unsigned char zero = 0;
    assert_int_equal(g_if->buf_fill(g_bd, b, 0, n + 100, &zero, 1, &d), BT_OK);
    assert_int_equal(g_if->buf_write(g_bd, a, 0, src, n, &d), BT_OK);
    assert_int_equal(g_if->buf_copy(g_bd, b, a, n, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, b, 0, dst, n, &d), BT_OK);
    assert_memory_equal(src, dst, n);
    unsigned char tail[100], zeros[100] = {0};
    assert_int_equal(g_if->buf_read(g_bd, b, n, tail, 100, &d), BT_OK);
    assert_memory_equal(tail, zeros, 100);
    assert_int_equal(g_if->buf_copy(g_bd, a, b, n + 1, &d), BT_INVALID_ARG); /* a is too small */
    g_if->buf_free(g_bd, a);
    g_if->buf_free(g_bd, b);
    free(src);
    free(dst);
}

/* ---------------------------------------------------------------------------------------------
 * Compile, load, launch
 * ------------------------------------------------------------------------------------------- */

/* Runs vadd from m over n random floats; checks c == a + b exactly (both sides IEEE single
 * additions, round to nearest) and returns the device time of the launch. c_out gets c. */
static double run_vadd(bt__bmod *m, int n, float *c_out)
{
    bt__bfn *f = NULL;
    bt__kres res;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "vadd", &f, &res, &d), BT_OK);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    rng_state = 12345; /* the same inputs every call */
    for (int i = 0; i < n; i++) {
        a[i] = (float)((double)(rnd() >> 11) / 9007199254740992.0 * 200.0 - 100.0);
        b[i] = (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2e-3);
    }
    bt__bbuf *ba = alloc(n * sizeof(float)), *bb = alloc(n * sizeof(float)),
             *bc = alloc(n * sizeof(float));
    assert_int_equal(g_if->buf_write(g_bd, ba, 0, a, n * sizeof(float), &d), BT_OK);
    assert_int_equal(g_if->buf_write(g_bd, bb, 0, b, n * sizeof(float), &d), BT_OK);
    bt__btimer *t = NULL;
    assert_int_equal(g_if->timer_create(g_bd, &t, &d), BT_OK);
    bt__karg args[] = {buf_arg(ba), buf_arg(bb), buf_arg(bc), i32_arg(n)};
    uint32_t block[3] = {64, 1, 1}, grid[3] = {(uint32_t)(n + 63) / 64, 1, 1};
    bt_status st = g_if->launch(g_bd, f, grid, block, 0, args, 4, t, &d);
    if (st != BT_OK)
        fprintf(stderr, "launch: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    double ms = 0;
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, bc, 0, c, n * sizeof(float), &d), BT_OK);
    for (int i = 0; i < n; i++) {
        float want = a[i] + b[i];
        if (c[i] != want)
            fail_msg("c[%d] = %.9g, want %.9g", i, (double)c[i], (double)want);
    }
    if (c_out)
        memcpy(c_out, c, n * sizeof *c);
    g_if->timer_free(g_bd, t);
    g_if->buf_free(g_bd, ba);
    g_if->buf_free(g_bd, bb);
    g_if->buf_free(g_bd, bc);
    free(a);
    free(b);
    free(c);
    return ms;
}

static void test_vector_add_timed(void **state)
{
    (void)state;
    bt__bmod *m = build(vadd_src, NULL, 0, NULL);
    double ms = run_vadd(m, 1000003, NULL);
    assert_true(ms > 0.0);
    assert_true(ms < 60000.0);
    g_if->module_free(g_bd, m);
}

static void test_binary_round_trip(void **state)
{
    (void)state;
    enum { N = 4099 };
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(g_if->compile(g_bd, vadd_src, NULL, 0, "-cl-std=CL1.2", &blob, &log), BT_OK);
    free(log);
    assert_true(blob.size > 32);
    float *c1 = malloc(N * sizeof(float)), *c2 = malloc(N * sizeof(float));
    assert_non_null(c1);
    assert_non_null(c2);
    bt__bmod *m1 = build(vadd_src, NULL, 0, NULL);
    run_vadd(m1, N, c1);
    g_if->module_free(g_bd, m1);

    /* Loading the same blob twice gives two independent, working modules. */
    bt_diag d = {0};
    bt__bmod *m2 = NULL, *m3 = NULL;
    assert_int_equal(g_if->module_load(g_bd, blob.data, blob.size, &m2, &d), BT_OK);
    assert_int_equal(g_if->module_load(g_bd, blob.data, blob.size, &m3, &d), BT_OK);
    run_vadd(m2, N, c2);
    assert_memory_equal(c1, c2, N * sizeof(float));
    run_vadd(m3, N, c2);
    assert_memory_equal(c1, c2, N * sizeof(float));
    g_if->module_free(g_bd, m2);
    g_if->module_free(g_bd, m3);

    /* Damaged blobs are refused before they reach the driver. */
    unsigned char *bad = malloc(blob.size);
    assert_non_null(bad);
    memcpy(bad, blob.data, blob.size);
    bad[blob.size / 2] ^= 0x5a;
    bt__bmod *m = (bt__bmod *)&d;
    assert_int_equal(g_if->module_load(g_bd, bad, blob.size, &m, &d), BT_CORRUPT);
    assert_null(m);
    assert_non_null(strstr(d.msg, "checksum"));
    assert_int_equal(g_if->module_load(g_bd, blob.data, blob.size - 1, &m, &d), BT_CORRUPT);
    assert_int_equal(g_if->module_load(g_bd, blob.data, 10, &m, &d), BT_CORRUPT);
    memset(bad, 0x42, blob.size);
    assert_int_equal(g_if->module_load(g_bd, bad, blob.size, &m, &d), BT_CORRUPT);
    assert_non_null(strstr(d.msg, "magic"));
    free(bad);
    free(blob.data);
    free(c1);
    free(c2);
}

static void test_compile_error_names_line(void **state)
{
    (void)state;
    const char *src = "__kernel void bad(__global int *o)\n"
                      "{\n"
                      "    o[0] = undeclared_name_xyz;\n"
                      "}\n";
    bt__blob blob = {(void *)&blob, 99};
    char *log = NULL;
    bt_status st = g_if->compile(g_bd, src, NULL, 0, NULL, &blob, &log);
    assert_int_equal(st, BT_COMPILE);
    assert_null(blob.data);
    assert_int_equal(blob.size, 0);
    assert_non_null(log);
    assert_non_null(strstr(log, "CL_BUILD_PROGRAM_FAILURE (-11)"));
    assert_non_null(strstr(log, "undeclared_name_xyz"));
    assert_non_null(strstr(log, ":3:")); /* the line of the error */
    free(log);

    /* A define that would split into two options is refused with a log. */
    const char *defs[] = {"T=unsigned int"};
    st = g_if->compile(g_bd, vadd_src, defs, 1, NULL, &blob, &log);
    assert_int_equal(st, BT_INVALID_ARG);
    assert_non_null(log);
    assert_non_null(strstr(log, "T=unsigned int"));
    free(log);

    /* A successful build returns a log too (possibly empty), never NULL. */
    st = g_if->compile(g_bd, vadd_src, NULL, 0, NULL, &blob, &log);
    assert_int_equal(st, BT_OK);
    assert_non_null(log);
    free(log);
    free(blob.data);
}

/* Each job compiles one program whose result depends on its define and its options. */
typedef struct compile_job {
    int k;
    bt__blob blob;
    bt_status st;
    char *log;
} compile_job;

static const char *setk_fmt = "/* program %d */\n"
                              "__kernel void setk(__global int *o)\n"
                              "{\n"
                              "    o[get_global_id(0)] = K * 3 + EXTRA;\n"
                              "}\n";

static void *compile_thread(void *arg)
{
    compile_job *jobs = arg; /* two jobs per thread */
    for (int j = 0; j < 2; j++) {
        char src[256], def[32];
        snprintf(src, sizeof src, setk_fmt, jobs[j].k);
        snprintf(def, sizeof def, "K=%d", jobs[j].k);
        const char *defs[] = {def};
        jobs[j].st = g_if->compile(g_bd, src, defs, 1, "-D EXTRA=1", &jobs[j].blob, &jobs[j].log);
    }
    return NULL;
}

static void test_compile_from_threads(void **state)
{
    (void)state;
    compile_job jobs[8];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < 8; i++)
        jobs[i].k = 100 + i;
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        assert_int_equal(pthread_create(&th[t], NULL, compile_thread, &jobs[2 * t]), 0);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    bt_diag d = {0};
    bt__bbuf *out = alloc(32 * sizeof(int));
    for (int i = 0; i < 8; i++) {
        if (jobs[i].st != BT_OK)
            fprintf(stderr, "job %d: %s\n%s\n", i, bt_err_name(jobs[i].st), jobs[i].log);
        assert_int_equal(jobs[i].st, BT_OK);
        assert_non_null(jobs[i].log);
        bt__bmod *m = NULL;
        assert_int_equal(g_if->module_load(g_bd, jobs[i].blob.data, jobs[i].blob.size, &m, &d),
                         BT_OK);
        bt__bfn *f = NULL;
        assert_int_equal(g_if->function_get(g_bd, m, "setk", &f, NULL, &d), BT_OK);
        bt__karg args[] = {buf_arg(out)};
        uint32_t grid[3] = {4, 1, 1}, block[3] = {8, 1, 1};
        assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 1, NULL, &d), BT_OK);
        int got[32];
        assert_int_equal(g_if->buf_read(g_bd, out, 0, got, sizeof got, &d), BT_OK);
        for (int j = 0; j < 32; j++)
            assert_int_equal(got[j], jobs[i].k * 3 + 1);
        g_if->module_free(g_bd, m);
        free(jobs[i].blob.data);
        free(jobs[i].log);
    }
    g_if->buf_free(g_bd, out);
}

static void test_function_resources(void **state)
{
    (void)state;
    const char *src = "__kernel void withlocal(__global float *o)\n"
                      "{\n"
                      "    __local float tile[256];\n"
                      "    int l = get_local_id(0);\n"
                      "    tile[l] = (float)l;\n"
                      "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                      "    o[get_global_id(0)] = tile[255 - l];\n"
                      "}\n";
    bt__bmod *m = build(src, NULL, 0, NULL);
    bt__bfn *f = NULL, *f2 = NULL;
    bt__kres res;
    memset(&res, 0x55, sizeof res);
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "withlocal", &f, &res, &d), BT_OK);
    assert_int_equal(res.regs_per_thread, -1);
    assert_true(res.max_threads_per_block >= 1);
    assert_true(res.max_threads_per_block <=
                bt_device_get_info(g_dev)->props.max_threads_per_block);
    assert_true(res.preferred_multiple >= 1);
    assert_true(res.static_smem >= 256 * 4); /* the spec counts __local variables */
    assert_true(res.local_bytes >= 0);
    /* The same entry again is the same function. */
    assert_int_equal(g_if->function_get(g_bd, m, "withlocal", &f2, NULL, &d), BT_OK);
    assert_ptr_equal(f, f2);
    /* An unknown entry is BT_NOT_FOUND, naming it. */
    f2 = (bt__bfn *)&d;
    assert_int_equal(g_if->function_get(g_bd, m, "nosuchkernel", &f2, &res, &d), BT_NOT_FOUND);
    assert_null(f2);
    assert_non_null(strstr(d.msg, "nosuchkernel"));
    assert_non_null(strstr(d.msg, "CL_INVALID_KERNEL_NAME"));

    if (res.max_threads_per_block >= 256) {
        bt__bbuf *o = alloc(512 * sizeof(float));
        bt__karg args[] = {buf_arg(o)};
        uint32_t grid[3] = {2, 1, 1}, block[3] = {256, 1, 1};
        assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 1, NULL, &d), BT_OK);
        float got[512];
        assert_int_equal(g_if->buf_read(g_bd, o, 0, got, sizeof got, &d), BT_OK);
        for (int i = 0; i < 512; i++)
            assert_true(got[i] == (float)(255 - i % 256));
        g_if->buf_free(g_bd, o);
    }
    g_if->module_free(g_bd, m);
}

static void test_local_memory_argument(void **state)
{
    (void)state;
    const char *src = "__kernel void rev(__global const int *in, __global int *out,\n"
                      "                  __local int *tmp)\n"
                      "{\n"
                      "    int l = get_local_id(0), n = get_local_size(0);\n"
                      "    int base = get_group_id(0) * n;\n"
                      "    tmp[l] = in[base + l];\n"
                      "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                      "    out[base + l] = tmp[n - 1 - l];\n"
                      "}\n";
    bt__bmod *m = build(src, NULL, 0, NULL);
    bt__bfn *f = NULL;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "rev", &f, NULL, &d), BT_OK);
    enum { G = 4, B = 32 };
    int in[G * B], out[G * B];
    for (int i = 0; i < G * B; i++)
        in[i] = (int)(rnd() & 0xffffff);
    bt__bbuf *bi = alloc(sizeof in), *bo = alloc(sizeof out);
    assert_int_equal(g_if->buf_write(g_bd, bi, 0, in, sizeof in, &d), BT_OK);
    bt__karg args[] = {
        buf_arg(bi), buf_arg(bo), {.kind = BT__ARG_LOCAL, .u.local_bytes = B * sizeof(int)}};
    uint32_t grid[3] = {G, 1, 1}, block[3] = {B, 1, 1};
    /* dyn_smem is ignored by OpenCL: a large value must not matter. */
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 1u << 30, args, 3, NULL, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, bo, 0, out, sizeof out, &d), BT_OK);
    for (int g = 0; g < G; g++)
        for (int l = 0; l < B; l++)
            assert_int_equal(out[g * B + l], in[g * B + B - 1 - l]);

    /* More local memory than the device has: BT_RESOURCES, not a crash. */
    args[2].u.local_bytes = (size_t)bt_device_get_info(g_dev)->props.smem_per_block + 1;
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 3, NULL, &d), BT_RESOURCES);
    assert_non_null(strstr(d.msg, "local memory"));
    g_if->buf_free(g_bd, bi);
    g_if->buf_free(g_bd, bo);
    g_if->module_free(g_bd, m);
}

static void test_illegal_launches(void **state)
{
    (void)state;
    bt__bmod *m = build(vadd_src, NULL, 0, NULL);
    bt__bfn *f = NULL;
    bt__kres res;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "vadd", &f, &res, &d), BT_OK);
    bt__bbuf *b = alloc(1 << 16);

    /* No argument set yet: the CL error comes back by name. */
    uint32_t grid[3] = {4, 1, 1}, block[3] = {16, 1, 1};
    bt__btimer *t = NULL;
    assert_int_equal(g_if->timer_create(g_bd, &t, &d), BT_OK);
    double ms = -1;
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_INVALID_ARG); /* nothing recorded */
    bt_status st = g_if->launch(g_bd, f, grid, block, 0, NULL, 0, t, &d);
    assert_int_equal(st, BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "clEnqueueNDRangeKernel: CL_INVALID_KERNEL_ARGS (-52)"));
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_INVALID_ARG); /* still nothing */

    /* One argument too many: clSetKernelArg's error, with the argument's index. */
    bt__karg args[] = {buf_arg(b), buf_arg(b), buf_arg(b), i32_arg(16), i32_arg(0)};
    st = g_if->launch(g_bd, f, grid, block, 0, args, 5, NULL, &d);
    assert_int_equal(st, BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "CL_INVALID_ARG_INDEX"));
    assert_non_null(strstr(d.msg, "argument 4"));

    /* A work-group larger than the kernel allows, in one dimension and in total. */
    uint32_t huge[3] = {(uint32_t)res.max_threads_per_block * 2, 1, 1};
    st = g_if->launch(g_bd, f, grid, huge, 0, args, 4, NULL, &d);
    assert_true(st == BT_RESOURCES || st == BT_LAUNCH);
    assert_true(d.msg[0] != '\0');
    uint32_t cube[3] = {64, 64, 64};
    st = g_if->launch(g_bd, f, grid, cube, 0, args, 4, NULL, &d);
    assert_true(st == BT_RESOURCES || st == BT_LAUNCH);
    uint32_t zero[3] = {0, 1, 1};
    assert_int_equal(g_if->launch(g_bd, f, grid, zero, 0, args, 4, NULL, &d), BT_INVALID_ARG);

    /* The device still works afterwards. */
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 4, t, &d), BT_OK);
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_OK);
    assert_true(ms > 0);
    assert_int_equal(g_if->sync(g_bd, &d), BT_OK);
    g_if->timer_free(g_bd, t);
    g_if->timer_free(g_bd, NULL);
    g_if->buf_free(g_bd, b);
    g_if->module_free(g_bd, m);
    g_if->module_free(g_bd, NULL);
}

static void test_flush_cache(void **state)
{
    (void)state;
    int data[1024];
    for (int i = 0; i < 1024; i++)
        data[i] = (int)rnd();
    bt__bbuf *b = alloc(sizeof data);
    bt_diag d = {0};
    assert_int_equal(g_if->buf_write(g_bd, b, 0, data, sizeof data, &d), BT_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(g_if->flush_cache(g_bd, &d), BT_OK);
    assert_int_equal(g_if->sync(g_bd, &d), BT_OK);
    int back[1024];
    assert_int_equal(g_if->buf_read(g_bd, b, 0, back, sizeof back, &d), BT_OK);
    assert_memory_equal(data, back, sizeof data); /* flushing touches no user buffer */
    g_if->buf_free(g_bd, b);
}

static int group_setup(void **state)
{
    (void)state;
    bt_diag d = {0};
    if (bt_device_open("opencl", &g_dev, &d) != BT_OK) {
        fprintf(stderr, "cannot open an OpenCL device: %s\n", d.msg);
        return -1;
    }
    g_if = bt__device_iface(g_dev);
    g_bd = bt__device_bdev(g_dev);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    bt_device_close(g_dev);
    return 0;
}

int main(void)
{
    bt_device_list *list = NULL;
    bt_diag d = {0};
    if (bt_devices_list(&list, &d) != BT_OK) {
        fprintf(stderr, "bt_devices_list failed: %s\n", d.msg);
        return 1;
    }
    size_t ncl = 0;
    for (size_t i = 0; i < bt_device_list_count(list); i++)
        ncl += !strcmp(bt_device_list_at(list, i)->backend, "opencl");
    bt_device_list_destroy(list);
    if (ncl == 0) {
        printf("SKIP: no OpenCL device: %s\n", d.msg[0] ? d.msg : "none listed");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cl_error_names),
        cmocka_unit_test(test_devices_list_sane),
        cmocka_unit_test(test_device_open_by_id),
        cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_buffer_round_trip),
        cmocka_unit_test(test_buffer_fill_patterns),
        cmocka_unit_test(test_buffer_copy),
        cmocka_unit_test(test_vector_add_timed),
        cmocka_unit_test(test_binary_round_trip),
        cmocka_unit_test(test_compile_error_names_line),
        cmocka_unit_test(test_compile_from_threads),
        cmocka_unit_test(test_function_resources),
        cmocka_unit_test(test_local_memory_argument),
        cmocka_unit_test(test_illegal_launches),
        cmocka_unit_test(test_flush_cache),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
