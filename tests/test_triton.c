/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_triton.c — Triton sources (docs/triton.md): the compile request that a config of
 * the examples/triton specs makes (no Python: signature, divisibility, specialized scalars,
 * constexprs, options, "defines" per problem), and, with Triton installed ($BT_TRITON_PYTHON,
 * else python3), the CUDA backend's compile of the "triton" language on a device (the mock
 * driver where there is no GPU): a blob that loads as the CUDA backend's own, Triton's compile
 * error as BT_COMPILE with its message, a shared-memory overflow as BT_RESOURCES with the numbers.
 * Without Triton that group prints SKIPPED (and fails under $CI).
 */
#include "test_util.h"
#include "backends/cuda/blob.h"
#include "backends/device.h"
#include "core/kdesc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bt_kdesc *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/triton/%s.json", BT_SOURCE_DIR, name);
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    if (bt_kdesc_load_file(path, &k, &d) != BT_OK)
        fail_msg("%s: %s", path, d.msg);
    return k;
}

/* Config of k from "NAME=value" pairs (every parameter given). */
static bt_config config(const bt_kdesc *k, const char *const *kv, int n)
{
    bt_config c = {.nparams = k->space.nparams};
    assert_int_equal(n, k->space.nparams);
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(kv[i], '=');
        for (int p = 0; p < k->space.nparams; p++)
            if (!strncmp(k->space.params[p].name, kv[i], (size_t)(eq - kv[i])) &&
                !k->space.params[p].name[eq - kv[i]])
                c.v[p] = atoll(eq + 1);
    }
    return c;
}

static json_t *request(const bt_kdesc *k, const bt_config *c, const bt_problem *p)
{
    char *text = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__triton_request(k, bt__kdesc_source(k, "triton"), c, p, NULL, &text, &d),
                     BT_OK);
    json_t *j = json_loads(text, 0, NULL);
    assert_non_null(j);
    free(text);
    return j;
}

static const char *const mm_cfg[] = {"BLOCK_M=128", "BLOCK_N=64", "BLOCK_K=32", "num_warps=8",
                                     "num_stages=4", "GROUP_M=8"};

static void test_matmul_request(void **state)
{
    (void)state;
    bt_kdesc *k = load("matmul");
    const bt__ksource *s = bt__kdesc_source(k, "triton");
    assert_non_null(s);
    assert_non_null(s->path);
    assert_true(s->path[0] == '/' && strstr(s->path, "examples/triton/matmul.py"));
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_diag d = {0};
    assert_int_equal(bt_problem_set(p, "N", 1000, &d), BT_OK);
    bt_config c = config(k, mm_cfg, 6);
    json_t *j = request(k, &c, p);
    assert_string_equal(json_string_value(json_object_get(j, "source")), s->path);
    assert_string_equal(json_string_value(json_object_get(j, "entry")), "matmul_kernel");
    /* options at the top, constexprs apart */
    assert_int_equal(json_integer_value(json_object_get(j, "num_warps")), 8);
    assert_int_equal(json_integer_value(json_object_get(j, "num_stages")), 4);
    json_t *cx = json_object_get(j, "constexprs");
    assert_int_equal(json_object_size(cx), 4);
    assert_int_equal(json_integer_value(json_object_get(cx, "BLOCK_M")), 128);
    assert_int_equal(json_integer_value(json_object_get(cx, "BLOCK_K")), 32);
    assert_int_equal(json_integer_value(json_object_get(cx, "GROUP_M")), 8);
    assert_null(json_object_get(cx, "num_warps"));
    /* buffers: typed pointers, all divisible; integer scalars specialized on the problem */
    json_t *sig = json_object_get(j, "signature");
    assert_int_equal(json_object_size(sig), 3);
    assert_string_equal(json_string_value(json_object_get(sig, "a_ptr")), "*fp16");
    assert_string_equal(json_string_value(json_object_get(sig, "c_ptr")), "*fp16");
    assert_int_equal(json_array_size(json_object_get(j, "divisible_by_16")), 3);
    json_t *sp = json_object_get(j, "specialize");
    assert_int_equal(json_object_size(sp), 9);
    assert_int_equal(json_integer_value(json_object_get(sp, "N")), 1000);
    assert_int_equal(json_integer_value(json_object_get(sp, "stride_bk")), 1000);
    assert_int_equal(json_integer_value(json_object_get(sp, "stride_am")), 4096);
    assert_int_equal(json_integer_value(json_object_get(sp, "stride_ak")), 1);
    json_decref(j);
    /* bf16 follows the problem's dtype */
    assert_int_equal(bt_problem_set_dtype(p, "bf16", &d), BT_OK);
    j = request(k, &c, p);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "signature"),
                                                          "b_ptr")), "*bf16");
    json_decref(j);
    bt_problem_free(p);
    bt_kdesc_free(k);
}

static void test_softmax_define(void **state)
{
    (void)state;
    bt_kdesc *k = load("softmax");
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_diag d = {0};
    static const char *const cfg[] = {"num_warps=4", "num_stages=1"};
    bt_config c = config(k, cfg, 2);
    const int64_t cols[][2] = {{4096, 4096}, {1000, 1024}, {1025, 2048}, {1, 1}};
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        assert_int_equal(bt_problem_set(p, "n_cols", cols[i][0], &d), BT_OK);
        json_t *j = request(k, &c, p);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "constexprs"),
                                                            "BLOCK")), cols[i][1]);
        json_decref(j);
    }
    bt_problem_free(p);
    bt_kdesc_free(k);
}

/* --- the backend's compile, with Triton ------------------------------------------------------ */

static bt_device *g_dev;
static const bt__backend_iface *g_if;
static bt__bdev *g_bd;

static bt_status compile(const char *name, const char *const *kv, int n, bt__blob *blob,
                         char **log)
{
    bt_kdesc *k = load(name);
    bt_config c = config(k, kv, n);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    char *text = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__triton_request(k, bt__kdesc_source(k, "triton"), &c, p, NULL, &text, &d),
                     BT_OK);
    bt_problem_free(p);
    const char *names[1] = {k->entry};
    bt__compile_req req = {.lang = "triton", .src = text, .names = names, .nnames = 1};
    bt_status st = g_if->compile(g_bd, &req, blob, log);
    free(text);
    bt_kdesc_free(k);
    return st;
}

static void test_compile_blob(void **state)
{
    (void)state;
    static const char *const cfg[] = {"BLOCK=1024", "num_warps=4"};
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(compile("vector_add", cfg, 2, &blob, &log), BT_OK);
    blob_hdr h;
    size_t hlen;
    bt_diag d = {0};
    assert_int_equal(bt__cuda_blob_check(blob.data, blob.size, &h, &hlen, &d), BT_OK);
    assert_int_equal(h.sm, 90);
    assert_int_equal(h.nnames, 1);
    const char *names = (const char *)blob.data + hlen;
    assert_string_equal(names, "vector_add_kernel");
    assert_memory_equal((const char *)blob.data + hlen + h.names_bytes, "\177ELF", 4);
    free(blob.data);
    free(log);
}

static void test_compile_errors(void **state)
{
    (void)state;
    static const char *const bad[] = {"BLOCK=1000", "num_warps=4"};
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(compile("vector_add", bad, 2, &blob, &log), BT_COMPILE);
    assert_null(blob.data);
    assert_non_null(log);
    assert_non_null(strstr(log, "Triton compile_error"));
    assert_non_null(strstr(log, "power of 2"));
    free(log);
    static const char *const big[] = {"BLOCK_M=64", "BLOCK_N=256", "BLOCK_K=128", "num_warps=4",
                                      "num_stages=4", "GROUP_M=8"};
    log = NULL;
    assert_int_equal(compile("matmul", big, 6, &blob, &log), BT_RESOURCES);
    assert_null(blob.data);
    assert_non_null(strstr(log, "out of resources: shared memory 327680 > 232448"));
    free(log);
}

static int device_setup(void **state)
{
    (void)state;
    bt_diag d = {0};
    if (bt_device_open("cuda", &g_dev, &d) != BT_OK) {
        fprintf(stderr, "cannot open a CUDA device: %s\n", d.msg);
        return -1;
    }
    g_if = bt__device_iface(g_dev);
    g_bd = bt__device_bdev(g_dev);
    return 0;
}

static int device_teardown(void **state)
{
    (void)state;
    bt_device_close(g_dev);
    return 0;
}

/* A python with Triton: $BT_TRITON_PYTHON, else python3; NULL when neither imports it. */
static const char *triton_python(void)
{
    const char *env = getenv("BT_TRITON_PYTHON");
    const char *tries[2] = {env && *env ? env : NULL, "python3"};
    for (int i = 0; i < 2; i++) {
        if (!tries[i])
            continue;
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "'%s' -c 'import triton' >/dev/null 2>&1", tries[i]);
        if (system(cmd) == 0)
            return tries[i];
    }
    return NULL;
}

int main(void)
{
    const struct CMUnitTest requests[] = {
        cmocka_unit_test(test_matmul_request),
        cmocka_unit_test(test_softmax_define),
    };
    int failed = cmocka_run_group_tests_name("triton_requests", requests, NULL, NULL);
    const char *py = triton_python();
    if (!py) {
        const char *why = "Triton (python: triton) is not installed; ./dev.sh test installs it, "
                          "or set BT_TRITON_PYTHON";
        if (getenv("CI")) {
            printf("FAIL: %s\n", why);
            return 1;
        }
        printf("SKIPPED (Triton compiles): %s\n", why);
        return failed ? failed : 77; /* ctest's skip: visible */
    }
    setenv("BLOCKTUNE_PYTHON", py, 1);
    const char *env = getenv("BLOCKTUNE_CUDA_LIBRARY");
    if (!env || !*env) /* no GPU here: the mock driver (compiles need none) */
        setenv("BLOCKTUNE_CUDA_LIBRARY", BT_MOCK_CUDA, 1);
    const struct CMUnitTest dev[] = {
        cmocka_unit_test(test_compile_blob),
        cmocka_unit_test(test_compile_errors),
    };
    failed += cmocka_run_group_tests_name("triton_compile", dev, device_setup, device_teardown);
    return failed;
}
