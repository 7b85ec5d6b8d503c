/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ktstyle.c — kernels written the way Kernel Tuner users write them (tests/data/kt_*), tuned
 * unmodified end to end: on OpenCL (PoCL on the CPU in CI) and on CUDA (the H200, or here
 * tests/mock/mock_cuda.c behind a real NVRTC compile): a C++ kernel name, a template instance
 * named after a parameter, a __constant__ filter, sizes as -D defines with boundary sizes built
 * per size, block_size_x/y as the block, grid_div, inputs read from .npy and raw files, answers
 * read from a file; every winner verifies, and planted faults (a wrong answer, a constant array
 * too small, a symbol the source lacks) are caught with the reason.
 */
#include "test_util.h"

#include "backends/cuda/cuda.h"
#include "backends/cuda/nvrtc.h"
#include "engine/engine.h"

#include <math.h>
#include <unistd.h>

static bt_device *ocl, *cu;
static int cu_mock;

static bt__tune_opts quick(void)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.01; /* a few runs each: the tests are about verification, not timing */
    o.rep_ms = 0.05;
    o.rounds = 1;
    o.top_k = 1; /* no interleaved final: every run pays a cache flush, costly on the CPU */
    o.budget = 2;
    o.store = "none"; /* hermetic: every test compiles and measures for itself */
    o.mode = BT_MODE_TUNE;
    return o;
}

static bt_kdesc *load_spec(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", BT_SOURCE_DIR, name);
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_file(path, &k, &d) != BT_OK)
        fail_msg("%s:%d:%d %s: %s", d.file, d.line, d.column, d.field, d.msg);
    return k;
}

/* Tunes k on dev at its default problem; *st gets the tune's status (the result is NULL unless
 * BT_OK; diag in *d). */
static bt_result *tune(bt_device *dev, const bt_kdesc *k, bt__tune_opts o, bt_status *st,
                       bt_diag *d)
{
    bt_kernel *kn;
    bt_status cs = bt_kernel_create(dev, k, &kn, d);
    if (cs)
        fail_msg("kernel %s: %s", k->name, d->msg);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_result *r = NULL;
    *st = bt__kernel_tune_opts(kn, p, &o, &r, d);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    return r;
}

/* Every measured config verified (at every boundary size too) and the winner among them. */
static void all_verified(const bt_result *r)
{
    assert_true(r->n >= 1);
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        if (e->status != BT__CS_OK)
            fail_msg("%s config %zu: %s: %s", r->k->name, i, bt__cfg_status_name(e->status),
                     e->error ? e->error : "");
        assert_true(e->ver.ok && e->ver.checked > 0 && e->ver.bad == 0);
        assert_int_equal(e->boundary_checked, r->k->nboundary);
        assert_true(e->st.median > 0);
    }
    assert_true(r->winner >= 0);
    assert_true(r->e[r->winner].ver.ok);
}

static void tune_and_verify(bt_device *dev, const char *spec, const char *reference)
{
    bt_kdesc *k = load_spec(spec);
    bt_diag d;
    bt_status st;
    bt_result *r = tune(dev, k, quick(), &st, &d);
    if (st)
        fail_msg("tune %s: %s", spec, d.msg);
    all_verified(r);
    assert_string_equal(r->reference, reference);
    /* a spec without flops or bytes (kt_conv_files) reports no throughput, not "0.0 GB/s" */
    char *text = bt_test_report(r);
    bool none = !(r->plan->model.roof.flops > 0) && !(r->plan->model.roof.bytes > 0);
    assert_int_equal(strstr(text, "no throughput (the spec gives no flops or bytes") != NULL, none);
    assert_int_equal(strstr(text, " 0.0 GB/s = ") != NULL, false);
    free(text);
    printf("# %s on %s: %zu configs verified in %.1f s\n", spec, bt_device_get_info(dev)->id,
           r->n, r->t_total);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* Writes n bytes of data to dir/name; returns the path (static). */
static const char *write_file(const char *dir, const char *name, const void *data, size_t n)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return path;
}

static char *read_all(const char *name, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/%s", BT_SOURCE_DIR, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = malloc(1 << 20);
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    buf[*n] = '\0';
    return buf;
}

/* A copy of a tests/data spec in a scratch directory, with `from` replaced by `to` and the data
 * files it names resolved against tests/data; returns the loaded spec. */
static bt_kdesc *variant(const char *spec, const char *from, const char *to)
{
    size_t n;
    char *text = read_all(spec, &n);
    char *at = strstr(text, from);
    assert_non_null(at);
    char dir[] = "/tmp/bt_ktstyle_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char out[1 << 16];
    snprintf(out, sizeof out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    /* the sources and data files by absolute path */
    static const char *const files[] = {"kt_conv.cu", "kt_conv.cl", "kt_conv_in.npy",
                                        "kt_conv_filter.bin", "kt_conv_out.npy"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char q[64], abs[1200], tmp[1 << 16];
        snprintf(q, sizeof q, "\"%s\"", files[i]);
        char *f = strstr(out, q);
        if (!f)
            continue;
        snprintf(abs, sizeof abs, "\"%s/tests/data/%s\"", BT_SOURCE_DIR, files[i]);
        snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(f - out), out, abs, f + strlen(q));
        snprintf(out, sizeof out, "%s", tmp);
    }
    const char *path = write_file(dir, spec, out, strlen(out));
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_file(path, &k, &d) != BT_OK)
        fail_msg("%s:%d:%d %s: %s", d.file, d.line, d.column, d.field, d.msg);
    unlink(path);
    rmdir(dir);
    free(text);
    return k;
}

/* ---------------------------------------------------------------------------------------------
 * OpenCL (PoCL)
 * ------------------------------------------------------------------------------------------- */
static void test_opencl_conv_with_defines_constant_filter_and_boundaries(void **state)
{
    (void)state;
    tune_and_verify(ocl, "kt_conv.json", "baseline config");
}

static void test_opencl_conv_on_files_against_answers(void **state)
{
    (void)state;
    tune_and_verify(ocl, "kt_conv_files.json", "expected outputs (answer files)");
}

/* One wrong expected value makes every config wrong: the answers are compared. */
static void test_a_wrong_answer_fails_every_config(void **state)
{
    (void)state;
    size_t n;
    char *ans = read_all("kt_conv_out.npy", &n);
    float v;
    memcpy(&v, ans + 128 + 4 * 1000, 4); /* output[1000], past the 128-byte header */
    v += 0.5f;
    memcpy(ans + 128 + 4 * 1000, &v, 4);
    const char *bad = write_file("/tmp", "bt_ktstyle_bad_out.npy", ans, n);
    free(ans);
    char to[1200];
    snprintf(to, sizeof to, "\"%s\"", bad);
    bt_kdesc *k = variant("kt_conv_files.json", "\"kt_conv_out.npy\"", to);
    bt_diag d;
    bt_status st;
    bt_result *r = tune(ocl, k, quick(), &st, &d);
    assert_int_equal(st, BT_OK);
    assert_true(r->n >= 1);
    assert_true(r->winner < 0);
    for (size_t i = 0; i < r->n; i++) {
        assert_int_equal(r->e[i].status, BT__CS_WRONG);
        assert_non_null(strstr(r->e[i].error, "1 of 2304 outputs off (first at [1000]"));
    }
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
    unlink(bad);
}

/* ---------------------------------------------------------------------------------------------
 * CUDA (the GPU, or the mock driver with NVRTC)
 * ------------------------------------------------------------------------------------------- */
#define NEED_CUDA()                                                                                \
    do {                                                                                           \
        bt_diag nd_;                                                                               \
        if (!cu || !bt__nvrtc_available(&nd_)) {                                                   \
            printf("SKIPPED: no CUDA device or no NVRTC\n");                                       \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

/* A C++ kernel name, a __constant__ filter and sizes as defines, checked against answers. */
static void test_cuda_conv_cpp_name_constant_memory_and_answers(void **state)
{
    (void)state;
    NEED_CUDA();
    tune_and_verify(cu, "kt_conv_files.json", "expected outputs (answer files)");
}

/* The same kernel on random data with boundary sizes: a binary per size (its defines). */
static void test_cuda_conv_boundary_sizes_get_their_own_binary(void **state)
{
    (void)state;
    NEED_CUDA();
    tune_and_verify(cu, "kt_conv.json", "baseline config");
}

/* A template instance named after a parameter, grid_div over two parameters. */
static void test_cuda_template_entry(void **state)
{
    (void)state;
    NEED_CUDA();
    tune_and_verify(cu, "kt_scale.json", "baseline config");
}

/* Constant memory smaller than the data, or a symbol the source does not have: every config
 * fails with the reason, none wins. */
static void test_cuda_constant_memory_mistakes_are_named(void **state)
{
    (void)state;
    NEED_CUDA();
    static const struct {
        const char *from, *to, *msg;
        bt__cfg_status status;
    } cases[] = {
        {"\"FSIZE\": \"fw * fh\"", "\"FSIZE\": \"fw * fh - 1\"",
         "__constant__ 'd_filter' holds 96 bytes, the argument has 100", BT__CS_RESOURCES},
        {"\"symbol\": \"d_filter\"", "\"symbol\": \"d_filters\"", "'&d_filters'",
         BT__CS_COMPILE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        bt_kdesc *k = variant("kt_conv_files.json", cases[c].from, cases[c].to);
        bt_diag d;
        bt_status st;
        bt_result *r = tune(cu, k, quick(), &st, &d);
        assert_int_equal(st, BT_OK);
        assert_true(r->winner < 0);
        for (size_t i = 0; i < r->n; i++) {
            const bt__entry *e = &r->e[i];
            const char *why = e->status == BT__CS_COMPILE && e->log ? e->log : e->error;
            if (e->status == BT__CS_OK || !why || !strstr(why, cases[c].msg))
                fail_msg("case %zu: %s: %s", c, bt__cfg_status_name(e->status), why ? why : "");
        }
        bt_result_destroy(r);
        bt_kdesc_destroy(k);
    }
}

/* bt_kernel_launch on the caller's buffers (output, input, then the constant filter): the first
 * launch tunes on them, the second dispatches the winner; the output is the convolution of the
 * caller's data with the caller's filter, checked here on the host. A kernel verified by answer
 * files refuses to tune on a caller's buffers, saying why. */
static void launch_conv(bt_device *dev)
{
    bt_kdesc *k = load_spec("kt_conv.json");
    bt_diag d;
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    bt__kernel_set_opts(kn, &o);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    enum { W = 48, F = 5, P = W + F - 1 };
    static float in[P * P], filt[F * F], out[W * W];
    for (int i = 0; i < P * P; i++)
        in[i] = (float)((i * 37) % 101 - 50) / 50.0f;
    for (int i = 0; i < F * F; i++)
        filt[i] = (float)(i % 7 + 1) / 8.0f;
    bt_buffer *b[3];
    size_t sizes[3] = {sizeof out, sizeof in, sizeof filt};
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, sizes[i], &b[i], &d), BT_OK);
    assert_int_equal(bt_buffer_write(b[1], 0, in, sizeof in, &d), BT_OK);
    assert_int_equal(bt_buffer_write(b[2], 0, filt, sizeof filt, &d), BT_OK);
    for (int launch = 0; launch < 2; launch++) {
        memset(out, 0, sizeof out);
        assert_int_equal(bt_buffer_write(b[0], 0, out, sizeof out, &d), BT_OK);
        if (bt_kernel_launch(kn, p, b, 3, &d) != BT_OK)
            fail_msg("launch %d: %s", launch, d.msg);
        assert_int_equal(bt_device_sync(dev, &d), BT_OK);
        assert_int_equal(bt_buffer_read(b[0], 0, out, sizeof out, &d), BT_OK);
        for (int y = 0; y < W; y++)
            for (int x = 0; x < W; x++) {
                double want = 0;
                for (int j = 0; j < F; j++)
                    for (int i = 0; i < F; i++)
                        want += (double)filt[j * F + i] * in[(y + j) * P + x + i];
                if (fabs(out[y * W + x] - want) > 1e-4 * (1 + fabs(want)))
                    fail_msg("launch %d: out[%d][%d] = %g, want %g", launch, y, x,
                             (double)out[y * W + x], want);
            }
    }
    assert_int_equal(bt_kernel_tune_count(kn), 1);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(b[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    /* answers belong to the spec's inputs, not the caller's */
    k = load_spec("kt_conv_files.json");
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, &o);
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, sizes[i], &b[i], &d), BT_OK);
    assert_int_equal(bt_kernel_launch(kn, p, b, 3, &d), BT_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "verified against answer files"));
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(b[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
}

static void test_opencl_launch_on_the_callers_buffers(void **state)
{
    (void)state;
    launch_conv(ocl);
}

static void test_cuda_launch_fills_constant_memory(void **state)
{
    (void)state;
    NEED_CUDA();
    launch_conv(cu);
}

int main(void)
{
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    /* CUDA: the real driver when one sees a GPU, else the mock (before any device is listed) */
    const char *env = getenv(BT__CUDA_LIBRARY_ENV);
    if (!env || !*env) {
        void *ctx = NULL;
        bt_diag d = {0};
        if (bt__backend_cuda.load(&ctx, &d) == BT_OK)
            bt__backend_cuda.unload(ctx);
        else {
            setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
            cu_mock = 1;
        }
    }
    bt_diag d;
    if (bt_device_open("opencl:0", &ocl, &d) != BT_OK)
        printf("# no OpenCL device: %s\n", d.msg);
    if (bt_device_open("cuda:0", &cu, &d) != BT_OK)
        printf("# no CUDA device: %s\n", d.msg);
    else
        printf("# CUDA device: %s%s\n", bt_device_get_info(cu)->name,
               cu_mock ? " (the mock driver)" : "");
    if (!ocl && !cu)
        BT_TEST_SKIP_ALL("no OpenCL or CUDA device");
    const struct CMUnitTest opencl[] = {
        cmocka_unit_test(test_opencl_conv_with_defines_constant_filter_and_boundaries),
        cmocka_unit_test(test_opencl_conv_on_files_against_answers),
        cmocka_unit_test(test_a_wrong_answer_fails_every_config),
        cmocka_unit_test(test_opencl_launch_on_the_callers_buffers),
    };
    const struct CMUnitTest cuda[] = {
        cmocka_unit_test(test_cuda_conv_cpp_name_constant_memory_and_answers),
        cmocka_unit_test(test_cuda_conv_boundary_sizes_get_their_own_binary),
        cmocka_unit_test(test_cuda_template_entry),
        cmocka_unit_test(test_cuda_constant_memory_mistakes_are_named),
        cmocka_unit_test(test_cuda_launch_fills_constant_memory),
    };
    int failed = 0;
    if (ocl)
        failed += cmocka_run_group_tests_name("kt_style_opencl", opencl, NULL, NULL);
    failed += cmocka_run_group_tests_name("kt_style_cuda", cuda, NULL, NULL);
    bt_device_destroy(ocl);
    bt_device_destroy(cu);
    return failed ? 1 : 0;
}
