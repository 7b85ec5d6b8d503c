/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_verify.c — what a tune's verification claims is what ran, on the default OpenCL device
 * (PoCL on the CPU in CI): a spec's reference kernel is compiled and run once per problem (the
 * tuned one and every boundary size) and configs are compared with its outputs; a reference
 * that does not compile, names no kernel or leaves outputs unwritten stops the tune with the
 * reason; a baseline config's compile error shows the compiler's log and the baseline is run at
 * the boundary sizes too; the report's "verified" line comes from checks that ran; a problem is
 * checked before anything runs (empty buffers, data beyond the device's memory) and the
 * per-config budgets are bounded; PoCL's compile at a binary's first launch is not a hang.
 */
#include "test_util.h"

#include "engine/engine.h"

#include <math.h>
#include <unistd.h>

static bt_device *dev;

static bt__tune_opts quick(void)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.01; /* a few runs each: these tests are about verification, not timing */
    o.rep_ms = 0.05;
    o.rounds = 1;
    o.top_k = 1;
    o.store = "none"; /* hermetic */
    o.mode = BT_MODE_TUNE;
    return o;
}

/* y = 2x + 1 by configs of BLOCK and MODE: MODE 0 is right, MODE 1 computes 2x (wrong at every
 * size), MODE 2 is wrong only in the last element of a size that is not a multiple of 64 (right
 * at the tuned size, wrong at the boundary sizes), MODE 3 does not compile. */
#define KERNEL                                                                                     \
    "__kernel void k(__global const float *x, __global float *y, int n) {\\n"                     \
    "#if MODE == 3\\n#error planted compile error\\n#endif\\n"                                    \
    "  int i = get_global_id(0); if (i >= n) return;\\n"                                          \
    "  float v = 2.0f * x[i] + 1.0f;\\n"                                                          \
    "#if MODE == 1\\n  v = 2.0f * x[i];\\n#elif MODE == 2\\n"                                     \
    "  if (i == n - 1 && n % 64) v = 0.0f;\\n#endif\\n"                                           \
    "  y[i] = v; }"

/* A reference kernel: y = 2x + 1 one element per work-item in blocks of 16. */
#define REF_RIGHT                                                                                  \
    "__kernel void ref(__global const float *x, __global float *y, int n) {"                      \
    " int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i] + 1.0f; }"

/* The spec of KERNEL with `modes` (a JSON list), the reference object `ref` and boundary sizes. */
static bt_kdesc *spec(const char *modes, const char *ref)
{
    char text[8192];
    snprintf(text, sizeof text,
             "{\"blocktune_spec\": 1, \"name\": \"refk\","
             " \"sources\": {\"opencl\": {\"inline\": \"%s\"}}, \"entry\": \"k\","
             " \"problem\": {\"n\": 4096},"
             " \"params\": {\"BLOCK\": [32, 64], \"MODE\": %s},"
             " \"launch\": {\"grid\": [\"cdiv(n, BLOCK)\"], \"block\": [\"BLOCK\"]},"
             " \"flops\": \"2 * n\", \"bytes\": \"8 * n\","
             " \"args\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"size\": \"n\","
             "             \"init\": {\"uniform\": [-1, 1]}},"
             "            {\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
             "            {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}]"
             "%s%s, \"boundary\": [{\"n\": 17}, {\"n\": 1000}],"
             " \"tolerance\": {\"rtol\": 1e-6, \"atol\": 1e-6}}",
             KERNEL, modes, ref[0] ? ", \"reference\": " : "", ref);
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_string(text, "refk.json", &k, &d) != BT_OK)
        fail_msg("%s:%d:%d %s: %s", d.file, d.line, d.column, d.field, d.msg);
    return k;
}

/* The reference object of a reference kernel with source src and entry `entry`. */
static const char *ref_kernel(const char *src, const char *entry)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"sources\": {\"opencl\": {\"inline\": \"%s\"}}, \"entry\": \"%s\","
             " \"grid\": [\"cdiv(n, 16)\"], \"block\": [16]}", src, entry);
    return buf;
}

/* Tunes k at its default problem; *st gets the status (the result is NULL unless BT_OK). */
static bt_result *tune(const bt_kdesc *k, bt__tune_opts o, bt_status *st, bt_diag *d)
{
    bt_kernel *kn;
    if (bt_kernel_create(dev, k, &kn, d) != BT_OK)
        fail_msg("kernel %s: %s", k->name, d->msg);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_result *r = NULL;
    *st = bt__kernel_tune_opts(kn, p, &o, &r, d);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    return r;
}

static bt_result *tune_ok(const bt_kdesc *k, bt__tune_opts o)
{
    bt_status st;
    bt_diag d;
    bt_result *r = tune(k, o, &st, &d);
    if (st)
        fail_msg("tune %s: %s", k->name, d.msg);
    return r;
}

/* The entry of config MODE=mode BLOCK=block. */
static const bt__entry *entry(const bt_result *r, int block, int mode)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].ev.cfg.v[0] == block && r->e[i].ev.cfg.v[1] == mode)
            return &r->e[i];
    fail_msg("no entry BLOCK=%d MODE=%d", block, mode);
    return NULL;
}

#define report bt_test_report

static void test_reference_kernel_is_run_at_every_problem(void **state)
{
    (void)state;
    bt_kdesc *k = spec("[0, 1, 2]", ref_kernel(REF_RIGHT, "ref"));
    bt_result *r = tune_ok(k, quick());
    assert_string_equal(r->reference, "reference kernel 'ref'");
    for (int b = 32; b <= 64; b *= 2) {
        const bt__entry *ok = entry(r, b, 0), *wrong = entry(r, b, 1), *tail = entry(r, b, 2);
        assert_int_equal(ok->status, BT__CS_OK);
        assert_int_equal(ok->boundary_checked, 2);
        assert_true(ok->ver.ok && ok->ver.checked == 4096);
        /* compared with the reference kernel's outputs: a wrong value is caught at the problem */
        assert_int_equal(wrong->status, BT__CS_WRONG);
        assert_non_null(strstr(wrong->error, "outputs off"));
        /* and the reference ran at the boundary sizes too: a config wrong only there fails */
        assert_int_equal(tail->status, BT__CS_WRONG);
        assert_non_null(strstr(tail->error, "at boundary size n=17"));
    }
    assert_true(r->winner >= 0 && r->e[r->winner].ev.cfg.v[1] == 0);
    char *text = report(r);
    assert_non_null(strstr(text, "verified: reference kernel 'ref', 4096 outputs match"));
    assert_non_null(strstr(text, "; and at every boundary size"));
    free(text);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* The configs are compared with what the reference kernel computes, whatever it computes: a
 * reference of 2x makes the configs computing 2x the right ones. */
static void test_the_reference_kernel_decides(void **state)
{
    (void)state;
    const char *src = "__kernel void ref(__global const float *x, __global float *y, int n) {"
                      " int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i]; }";
    bt_kdesc *k = spec("[0, 1]", ref_kernel(src, "ref"));
    bt_result *r = tune_ok(k, quick());
    assert_int_equal(entry(r, 32, 0)->status, BT__CS_WRONG);
    assert_int_equal(entry(r, 32, 1)->status, BT__CS_OK);
    assert_true(r->winner >= 0 && r->e[r->winner].ev.cfg.v[1] == 1);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* A reference that cannot be made stops the tune with the reason; nothing is called verified. */
static void expect_reference_error(const char *ref, bt_status want, const char *const *needles)
{
    bt_kdesc *k = spec("[0]", ref);
    bt_status st;
    bt_diag d = {0};
    bt_result *r = tune(k, quick(), &st, &d);
    printf("# %s\n", d.msg);
    assert_null(r);
    assert_int_equal(st, want);
    for (int i = 0; needles[i]; i++)
        if (!strstr(d.msg, needles[i]))
            fail_msg("'%s' not in: %s", needles[i], d.msg);
    bt_kdesc_destroy(k);
}

static void test_a_reference_kernel_that_does_not_compile_stops_the_tune(void **state)
{
    (void)state;
    const char *want[] = {"the reference kernel 'ref' does not compile",
                          "reference.sources.opencl", "no_such_type", NULL};
    expect_reference_error(ref_kernel("__kernel void ref(__global no_such_type *y) { }", "ref"),
                           BT_COMPILE, want);
}

static void test_a_reference_kernel_that_is_not_in_its_source_stops_the_tune(void **state)
{
    (void)state;
    const char *want[] = {"the reference kernel 'nope' does not load", NULL};
    expect_reference_error(ref_kernel(REF_RIGHT, "nope"), BT_NOT_FOUND, want);
}

static void test_a_reference_that_leaves_outputs_unwritten_is_an_error(void **state)
{
    (void)state;
    const char *src = "__kernel void ref(__global const float *x, __global float *y, int n) {"
                      " int i = get_global_id(0); if (i < n && i % 2 == 0) y[i] = 1.0f; }";
    const char *want[] = {"left 2048 of 4096 elements of output 'y' unwritten",
                          "(the first at [1])", NULL};
    expect_reference_error(ref_kernel(src, "ref"), BT_WRONG_RESULT, want);
}

static void test_a_baseline_that_does_not_compile_shows_the_log(void **state)
{
    (void)state;
    const char *want[] = {"the reference (baseline) config BLOCK=32 MODE=3 does not compile",
                          "planted compile error", NULL};
    bt_kdesc *k = spec("[0, 3]", "{\"config\": {\"BLOCK\": 32, \"MODE\": 3}}");
    bt_status st;
    bt_diag d = {0};
    bt_result *r = tune(k, quick(), &st, &d);
    printf("# %s\n", d.msg);
    assert_null(r);
    assert_int_equal(st, BT_COMPILE);
    for (int i = 0; want[i]; i++)
        if (!strstr(d.msg, want[i]))
            fail_msg("'%s' not in: %s", want[i], d.msg);
    bt_kdesc_destroy(k);
}

/* The baseline is run at every boundary size: a config that writes a wrong value only there
 * fails (it used to pass: at the boundary sizes outputs were only checked for being written). */
static void test_a_baseline_is_run_at_the_boundary_sizes(void **state)
{
    (void)state;
    bt_kdesc *k = spec("[0, 2]", "{\"config\": {\"BLOCK\": 32, \"MODE\": 0}}");
    bt_result *r = tune_ok(k, quick());
    assert_string_equal(r->reference, "baseline config");
    assert_int_equal(entry(r, 64, 0)->status, BT__CS_OK);
    assert_int_equal(entry(r, 64, 0)->boundary_checked, 2);
    assert_int_equal(entry(r, 64, 2)->status, BT__CS_WRONG);
    assert_non_null(strstr(entry(r, 64, 2)->error, "at boundary size n=17"));
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* The report's verification words come from checks that ran: without a reference it says what
 * was checked (written outputs), never "verified"; with the reference not made, NOT VERIFIED. */
static void test_the_report_claims_only_checks_that_ran(void **state)
{
    (void)state;
    bt_kdesc *k = spec("[0]", "");
    bt_result *r = tune_ok(k, quick());
    char *text = report(r);
    assert_non_null(strstr(text, "checked: none (outputs checked for being written), 4096 outputs "
                                 "written (no reference to compare with)"));
    assert_null(strstr(text, "verified:"));
    assert_null(strstr(text, "outputs match"));
    free(text);
    /* a result whose reference was never made (its label is set only when it is) */
    r->reference[0] = '\0';
    text = report(r);
    assert_non_null(strstr(text, "NOT VERIFIED"));
    assert_null(strstr(text, "verified:"));
    free(text);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* A problem is checked before anything runs. */
static void expect_problem_error(const char *n, bt_status want, const char *const *needles)
{
    bt_kdesc *k;
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", atoll(n), &d), BT_OK);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    bt_result *r = NULL;
    double t0 = bt_test_now();
    bt_status st = bt__kernel_tune_opts(kn, p, &o, &r, &d);
    printf("# n=%s: %s (%.2f s)\n", n, d.msg, bt_test_now() - t0);
    assert_null(r);
    assert_int_equal(st, want);
    for (int i = 0; needles[i]; i++)
        if (!strstr(d.msg, needles[i]))
            fail_msg("'%s' not in: %s", needles[i], d.msg);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

static void test_an_empty_problem_is_an_error(void **state)
{
    (void)state;
    const char *want[] = {"argument 'x' would have 0 elements", "'n'", "n=0", NULL};
    expect_problem_error("0", BT_INVALID_ARG, want);
    /* a size below zero: its expression and the variables in it named */
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    const char *text =
        "{\"blocktune_spec\": 1, \"name\": \"neg\", \"sources\": {\"opencl\": {\"inline\":"
        " \"__kernel void k(__global float *y) { y[get_global_id(0)] = 1.0f; }\"}},"
        " \"entry\": \"k\", \"problem\": {\"n\": 5, \"pad\": 8}, \"params\": {\"B\": [32]},"
        " \"launch\": {\"grid\": [1], \"block\": [\"B\"]},"
        " \"args\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n - pad\","
        " \"output\": true}]}";
    if (bt_kdesc_load_string(text, "neg.json", &k, &d) != BT_OK)
        fail_msg("%s", d.msg);
    bt_status st;
    bt_result *r = tune(k, quick(), &st, &d);
    printf("# %s\n", d.msg);
    assert_null(r);
    assert_int_equal(st, BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "argument 'y' would have -3 elements (size 'n - pad' with n=5, "
                                  "pad=8)"));
    bt_kdesc_destroy(k);
}

static void test_a_problem_larger_than_the_device_is_an_error(void **state)
{
    (void)state;
    char mem[64];
    snprintf(mem, sizeof mem, "which has %lld bytes",
             (long long)bt_device_get_info(dev)->props.mem_bytes);
    /* 3 buffers of 2^40 fp32 elements: 13194139533312 bytes */
    const char *want[] = {"the problem's data needs 13194139533312 bytes (12.0 TiB) on the device",
                          mem,
                          "the largest, argument 'x', 4398046511104 bytes (size 'n' with "
                          "n=1099511627776)",
                          NULL};
    expect_problem_error("1099511627776", BT_NOMEM, want);
}

static void test_budgets_are_bounded(void **state)
{
    (void)state;
    bt_kdesc *k;
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    const struct {
        double v;
        const char *name;
    } bad[] = {{1e9, "rep_ms (--rep-ms) is 1e+09 ms: the measurement budget per config is at "
                     "least 0 ms and at most 60000 ms"},
               {NAN, "warmup_ms (--warmup-ms) is nan ms"},
               {0, "timeout_s (--timeout) is 0 s: a run's timeout is above 0 s"},
               {-1, "time_limit_s (--time-limit) is -1 s"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bt__tune_opts o = quick();
        double *f[] = {&o.rep_ms, &o.warmup_ms, &o.timeout_s, &o.time_limit_s};
        *f[i] = bad[i].v;
        bt_status st;
        bt_result *r = tune(k, o, &st, &d);
        printf("# %s\n", d.msg);
        assert_null(r);
        assert_int_equal(st, BT_INVALID_ARG);
        if (!strstr(d.msg, bad[i].name))
            fail_msg("'%s' not in: %s", bad[i].name, d.msg);
    }
    bt_kdesc_destroy(k);
}

/* PoCL compiles a binary at its first launch; that time is not the kernel's: a config whose
 * compile takes several times the timeout still verifies and measures. The source is new on
 * every run (a nonce), so that PoCL's own kernel cache cannot hide the compile. */
static void test_the_compile_at_first_launch_is_not_a_hang(void **state)
{
    (void)state;
    char src[8192];
    int o = snprintf(src, sizeof src,
                     "__kernel void k(__global const float *x, __global float *y, int n) {"
                     " int i = get_global_id(0); if (i >= n) return; float a = x[i] * %d.0f;",
                     (int)getpid());
    for (int u = 0; u < 24; u++)
        o += snprintf(src + o, sizeof src - (size_t)o, " a = a * 0.%d5f + sin(a * %d.0f);", u, u);
    snprintf(src + o, sizeof src - (size_t)o, " y[i] = a; }");
    char text[12288];
    snprintf(text, sizeof text,
             "{\"blocktune_spec\": 1, \"name\": \"slowcompile\","
             " \"sources\": {\"opencl\": {\"inline\": \"%s\"}}, \"entry\": \"k\","
             " \"problem\": {\"n\": 256}, \"params\": {\"BLOCK\": [32, 64]},"
             " \"launch\": {\"grid\": [\"cdiv(n, BLOCK)\"], \"block\": [\"BLOCK\"]},"
             " \"args\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"size\": \"n\"},"
             "            {\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
             "            {\"name\": \"n\", \"kind\": \"scalar\", \"value\": \"n\"}]}",
             src);
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_string(text, "slowcompile.json", &k, &d) != BT_OK)
        fail_msg("%s", d.msg);
    bt__tune_opts opt = quick();
    opt.timeout_s = 0.25;
    double t0 = bt_test_now();
    bt_result *r = tune_ok(k, opt);
    printf("# %zu configs, each compiled at its first launch, in %.1f s (timeout %.2f s)\n", r->n,
           bt_test_now() - t0, opt.timeout_s);
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].status != BT__CS_OK)
            fail_msg("config %zu: %s: %s", i, bt__cfg_status_name(r->e[i].status),
                     r->e[i].error ? r->e[i].error : "");
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

int main(void)
{
    bt_diag d;
    if (bt_device_open("opencl:0", &dev, &d) != BT_OK)
        BT_TEST_SKIP_ALL("no OpenCL device: %s", d.msg);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_an_empty_problem_is_an_error),
        cmocka_unit_test(test_a_problem_larger_than_the_device_is_an_error),
        cmocka_unit_test(test_budgets_are_bounded),
        cmocka_unit_test(test_reference_kernel_is_run_at_every_problem),
        cmocka_unit_test(test_the_reference_kernel_decides),
        cmocka_unit_test(test_a_reference_kernel_that_does_not_compile_stops_the_tune),
        cmocka_unit_test(test_a_reference_kernel_that_is_not_in_its_source_stops_the_tune),
        cmocka_unit_test(test_a_reference_that_leaves_outputs_unwritten_is_an_error),
        cmocka_unit_test(test_a_baseline_that_does_not_compile_shows_the_log),
        cmocka_unit_test(test_a_baseline_is_run_at_the_boundary_sizes),
        cmocka_unit_test(test_the_report_claims_only_checks_that_ran),
        cmocka_unit_test(test_the_compile_at_first_launch_is_not_a_hang),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    bt_device_destroy(dev);
    return rc;
}
