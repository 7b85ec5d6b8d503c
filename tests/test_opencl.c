/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_opencl.c — what only the OpenCL backend has (the contract every backend keeps is checked
 * by test_backends.c): CL error names, what an OpenCL device reports of itself, a missing OpenCL
 * library, compile errors by their CL name and build options passed through, local-memory
 * arguments, and the CL errors of launches with wrong arguments.
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
#include "backends/device.h"

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
static bt_status compile(const char *src, const char *const *defs, int ndefs, const char *opts,
                         bt__blob *blob, char **log)
{
    bt__compile_req req = {.src = src, .defines = defs, .ndefines = ndefs, .options = opts};
    return g_if->compile(g_bd, &req, blob, log);
}

static bt__bmod *build(const char *src, const char *const *defs, int ndefs, const char *opts)
{
    bt__blob blob = {0};
    char *log = NULL;
    bt_status st = compile(src, defs, ndefs, opts, &blob, &log);
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

/* ---------------------------------------------------------------------------------------------
 * Compile, load, launch
 * ------------------------------------------------------------------------------------------- */

/* The OpenCL parts of a compile: the CL error by name in the log, a define that would split into
 * two options refused, the caller's build options passed through to clBuildProgram. */
static void test_compile_errors_and_options(void **state)
{
    (void)state;
    const char *src = "__kernel void bad(__global int *o)\n"
                      "{\n"
                      "    o[0] = undeclared_name_xyz;\n"
                      "}\n";
    bt__blob blob = {(void *)&blob, 99};
    char *log = NULL;
    assert_int_equal(compile(src, NULL, 0, NULL, &blob, &log), BT_COMPILE);
    assert_non_null(strstr(log, "CL_BUILD_PROGRAM_FAILURE (-11)"));
    free(log);

    /* A define that would split into two options is refused with a log. */
    const char *defs[] = {"T=unsigned int"};
    assert_int_equal(compile(vadd_src, defs, 1, NULL, &blob, &log), BT_INVALID_ARG);
    assert_null(blob.data);
    assert_non_null(log);
    assert_non_null(strstr(log, "T=unsigned int"));
    free(log);

    /* Options reach the compiler: a valid one builds, an unknown one fails naming them. */
    assert_int_equal(compile(vadd_src, NULL, 0, "-cl-std=CL1.2", &blob, &log), BT_OK);
    free(log);
    free(blob.data);
    blob.data = NULL;
    assert_int_equal(compile(vadd_src, NULL, 0, "-no-such-cl-option", &blob, &log), BT_COMPILE);
    assert_non_null(strstr(log, "-no-such-cl-option"));
    free(log);
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
    bt_device_destroy(g_dev);
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
        cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_compile_errors_and_options),
        cmocka_unit_test(test_local_memory_argument),
        cmocka_unit_test(test_illegal_launches),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
