/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_report.c — the report layer without a device (src/report, docs/report.md): the rule an
 * elimination is grouped under, axes and their ticks, numbers and escaping, the checks of tune and
 * peers documents (errors name file:line:column and the field), the page itself on a small
 * document (one point per measured config in every parameter chart, eliminated groups with their
 * counts, a hostile error message escaped, nothing that would be fetched), and the progress line's
 * text.
 */
#include "test_util.h"

#include "engine/progress.h"
#include "report/rep_int.h"

#include <math.h>

static void test_reason_rule(void **state)
{
    (void)state;
    char b[160];
    bt__reason_rule("shared memory 245760 B > 232448 B per block (5 x (128x64) x 2 B) (smem_limit)\n"
                    "1024 threads per block > 512 allowed (threads_limit)", b, sizeof b);
    assert_string_equal(b, "smem_limit");
    bt__reason_rule("constraint 'BLOCK_N < 2 * max(cols, 256)' is false (2048 < 2 x max(1000, 256))",
                    b, sizeof b);
    assert_string_equal(b, "constraint 'BLOCK_N < 2 * max(cols, 256)'");
    bt__reason_rule("threads per block is 0", b, sizeof b);
    assert_string_equal(b, "threads per block is");
    bt__reason_rule("an odd reason (Not A Rule)", b, sizeof b);
    assert_string_equal(b, "an odd reason (Not A Rule)");
    bt__reason_rule("", b, sizeof b);
    assert_string_equal(b, "no reason given");
    bt__reason_rule(NULL, b, sizeof b);
    assert_string_equal(b, "no reason given");
}

static void test_axes(void **state)
{
    (void)state;
    bt__axis a = {.p0 = 0, .p1 = 100};
    double t[64];
    /* less than a decade: every integer mantissa, bounds on ticks around the data */
    bt__axis_fit(&a, 2.2, 6.7, true);
    assert_true(a.lo == 2 && a.hi == 7);
    int n = bt__axis_ticks(&a, t, 64);
    assert_int_equal(n, 6);
    assert_true(t[0] == 2 && t[5] == 7);
    assert_true(fabs(bt__axis_px(&a, 2) - 0) < 1e-9 && fabs(bt__axis_px(&a, 7) - 100) < 1e-9);
    /* six decades: decades only */
    bt__axis_fit(&a, 0.002, 900, true);
    assert_true(fabs(a.lo - 1e-3) < 1e-15 && fabs(a.hi - 1e3) < 1e-9);
    n = bt__axis_ticks(&a, t, 64);
    assert_int_equal(n, 7);
    /* linear from 0: nice steps */
    bt__axis_fit(&a, 0, 97, false);
    assert_true(a.lo == 0 && a.hi == 100);
    n = bt__axis_ticks(&a, t, 64);
    assert_int_equal(n, 6);
    assert_true(t[1] == 20);
    /* a degenerate or invalid range still gives an axis */
    bt__axis_fit(&a, 5, 5, true);
    assert_true(a.lo > 0 && a.hi > a.lo);
    bt__axis_fit(&a, NAN, 1, false);
    assert_true(a.hi > a.lo);
}

static void test_numbers_and_escaping(void **state)
{
    (void)state;
    char b[48];
    bt__fmt_num(0.625, b, sizeof b);
    assert_string_equal(b, "0.625");
    bt__fmt_num(250000, b, sizeof b);
    assert_string_equal(b, "250000");
    bt__fmt_num(1e7, b, sizeof b);
    assert_string_equal(b, "10^7");
    bt__fmt_num(2.5e-5, b, sizeof b);
    assert_string_equal(b, "2.5×10^-5");
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    bt__esc(f, "<a href=\"x\">&'\x01");
    fclose(f);
    assert_string_equal(out, "&lt;a href=&quot;x&quot;&gt;&amp;&#39;?");
    free(out);
}

/* A small tune document: 2 parameters, 3 ok configs, 2 failures (one with a hostile error), 3
 * eliminated configs under 2 rules plus 4 not listed, and a device roofline. */
static const char doc_text[] =
    "{\"schema\": \"blocktune-tune/1\", \"kernel\": \"k\", \"problem\": {\"n\": 1000, \"dtype\": \"fp32\"},\n"
    " \"roofline\": {\"flops\": 2e6, \"bytes\": 8e6, \"intensity\": 0.25, \"ridge\": 13.9,\n"
    "   \"bound\": \"memory\", \"floor_us\": 1.6667, \"peak_tflops\": 66.9, \"peak\": \"fp32\",\n"
    "   \"bandwidth_gbps\": 4800},\n"
    " \"configs\": [\n"
    "  {\"config\": {\"B\": 32, \"W\": 1}, \"status\": \"ok\", \"median_ms\": 0.004, \"p20_ms\": 0.0038,\n"
    "   \"p80_ms\": 0.0042, \"reps\": 100, \"finalist\": true},\n"
    "  {\"config\": {\"B\": 64, \"W\": 1}, \"status\": \"ok\", \"median_ms\": 0.002, \"finalist\": true},\n"
    "  {\"config\": {\"B\": 64, \"W\": 2}, \"status\": \"ok\", \"median_ms\": 0.003},\n"
    "  {\"config\": {\"B\": 128, \"W\": 2}, \"status\": \"compile_failed\",\n"
    "   \"error\": \"<script>alert(1)</script>\", \"compile_log\": \"line 1: error\"},\n"
    "  {\"config\": {\"B\": 128, \"W\": 1}, \"status\": \"wrong_result\", \"error\": \"got nan\"}],\n"
    " \"eliminated\": [\n"
    "  {\"config\": {\"B\": 256, \"W\": 1}, \"reasons\": \"4096 threads per block > 1024 allowed (threads_limit)\"},\n"
    "  {\"config\": {\"B\": 256, \"W\": 2}, \"reasons\": \"constraint 'B <= n' is false (256 <= 100)\\nx (smem_limit)\"},\n"
    "  {\"config\": {\"B\": 512, \"W\": 2}, \"reasons\": \"8192 threads per block > 1024 allowed (threads_limit)\"}],\n"
    " \"eliminated_not_listed\": 4,\n"
    " \"winner\": {\"config\": {\"B\": 64, \"W\": 1}, \"median_ms\": 0.002, \"margin\": 0.5,\n"
    "   \"noise_band\": 0.02, \"tie\": false, \"runner_up\": {\"B\": 64, \"W\": 2}},\n"
    " \"provenance\": {\"device\": \"Test GPU\", \"device_id\": \"cuda:0\"}}\n";

/* gcc 12 at -O2 (Release) takes the page's text for a pointer to page()'s local `out` (the
 * open_memstream target) once this is inlined, and warns of a dangling pointer that is not. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#endif
static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static char *page(json_t *doc, json_t *peers)
{
    char *out = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&out, &size);
    bt__report_doc d = {doc, "test"};
    bt__report_opts o = {NULL, peers, NULL};
    assert_int_equal(bt__report_html(&d, 1, &o, f, NULL), BT_OK);
    fclose(f);
    return out;
}

static void test_page(void **state)
{
    (void)state;
    json_error_t je;
    json_t *doc = json_loads(doc_text, 0, &je);
    assert_non_null(doc);
    bt_diag d = {0};
    assert_int_equal(bt__report_check_tune(doc, doc_text, "t.json", &d), BT_OK);
    json_t *peers = json_loads("{\"schema\": \"blocktune-peers/1\", \"peers\": [{\"name\": \"other\","
                               " \"kernel\": \"k\", \"problem\": {\"n\": 1000}, \"time_ms\": 0.0025},"
                               " {\"name\": \"elsewhere\", \"kernel\": \"k\", \"problem\": {\"n\": 5},"
                               " \"time_ms\": 1}]}", 0, &je);
    assert_int_equal(bt__report_check_peers(peers, NULL, "p.json", &d), BT_OK);
    char *html = page(doc, peers);
    /* 2 parameter charts of 5 points each (3 ok, 2 failed), and 3 points on the roofline */
    assert_int_equal(count(html, "data-status=\"ok\" data-cfg"), 3 * 3);
    assert_int_equal(count(html, "<circle class=\"pt st-compile_failed\""), 2);
    assert_int_equal(count(html, "data-status=\"wrong_result\" data-cfg"), 2);
    assert_int_equal(count(html, "<circle class=\"pt st-ok winner\""), 3);
    assert_non_null(strstr(html, "id=\"t1-roof\""));
    assert_non_null(strstr(html, "class=\"roof\"")); /* the roof is drawn: the peaks are known */
    assert_non_null(strstr(html, "class=\"band\""));
    /* eliminated: threads_limit 2, smem_limit 1 (the first rule of the second is the constraint) */
    assert_non_null(strstr(html, "data-rule=\"threads_limit\" data-count=\"2\""));
    assert_non_null(strstr(html, "data-rule=\"constraint &#39;B &lt;= n&#39;\" data-count=\"1\""));
    assert_non_null(strstr(html, "data-rule=\"(not listed)\" data-count=\"4\""));
    assert_non_null(strstr(html, "Eliminated by the model before compiling: 7 configs"));
    /* the matching peer only, on the roofline and as a line */
    assert_int_equal(count(html, "data-peer=\"other\""), 1 + 2 + 1); /* roofline, lines, table */
    assert_null(strstr(html, "elsewhere"));
    /* a hostile error is text, and nothing is fetched */
    assert_null(strstr(html, "<script>alert"));
    assert_non_null(strstr(html, "&lt;script&gt;alert(1)"));
    assert_null(strstr(html, "http://"));
    assert_null(strstr(html, "https://"));
    assert_null(strstr(html, " src="));
    assert_null(strstr(html, "<link"));
    assert_non_null(strstr(html, "prefers-color-scheme:dark"));
    free(html);
    json_decref(peers);
    json_decref(doc);
}

static void test_page_without_roofline(void **state)
{
    (void)state;
    json_t *doc = json_loads(doc_text, 0, NULL);
    json_object_set_new(doc, "roofline", json_pack("{s:f, s:f, s:f, s:f, s:s, s:f}", "flops", 2e6,
                                                   "bytes", 8e6, "intensity", 0.25, "ridge", 0.0,
                                                   "bound", "compute", "floor_us", 0.0));
    char *html = page(doc, NULL);
    assert_null(strstr(html, "class=\"roof\""));
    assert_non_null(strstr(html, "device peaks unknown"));
    assert_non_null(strstr(html, "<td class=\"num\">n/a</td>")); /* no efficiency is claimed */
    free(html);
    json_decref(doc);
}

static void check_error(const char *text, const char *field, int line)
{
    json_t *doc = json_loads(text, 0, NULL);
    assert_non_null(doc);
    bt_diag d = {0};
    assert_int_equal(bt__report_check_tune(doc, text, "bad.json", &d), BT_PARSE);
    assert_string_equal(d.file, "bad.json");
    assert_string_equal(d.field, field);
    assert_int_equal(d.line, line);
    assert_true(d.column > 0);
    json_decref(doc);
}

static void test_checks(void **state)
{
    (void)state;
    check_error("{\"schema\": \"blocktune-plan/1\"}", "schema", 1);
    check_error("{\"schema\": \"blocktune-tune/1\", \"kernel\": \"k\", \"problem\": {},\n"
                " \"configs\": [{\"config\": {\"B\": 1}, \"status\": \"ok\"},\n"
                "  {\"config\": {\"B\": 2}, \"status\": \"ok\", \"median_ms\": -1}]}",
                "configs[0].median_ms", 2);
    check_error("{\"schema\": \"blocktune-tune/1\", \"kernel\": \"k\", \"problem\": {},\n"
                " \"configs\": [{\"config\": {\"B\": \"x\"}, \"status\": \"ok\", \"median_ms\": 1}]}",
                "configs[0].config", 2);
    const char *p = "{\"schema\": \"blocktune-peers/1\", \"peers\": [\n"
                    " {\"name\": \"t\", \"kernel\": \"k\", \"problem\": {}, \"time_ms\": 0}]}";
    json_t *doc = json_loads(p, 0, NULL);
    bt_diag d = {0};
    assert_int_equal(bt__report_check_peers(doc, p, "p.json", &d), BT_PARSE);
    assert_string_equal(d.field, "peers[0].time_ms");
    assert_int_equal(d.line, 2);
    json_decref(doc);
}

static void test_progress_line(void **state)
{
    (void)state;
    bt__progress_state s = {.kernel = "gemm", .measured = 24, .failed = 2, .planned = 64,
                            .rounds = 3, .rounds_planned = 8, .best_ms = 0.1234,
                            .elapsed = 41.2, .left = 65};
    char b[512];
    bt__progress_format(&s, false, b, sizeof b);
    assert_string_equal(b, "gemm: 24/64 configs (2 failed) · round 3/8 · 41.2 s elapsed, "
                           "~1 min 05 s left · best 0.1234 ms");
    assert_null(strchr(b, '\033'));
    bt__progress_format(&s, true, b, sizeof b);
    assert_non_null(strstr(b, "\033[1m24/64\033[0m"));
    s = (bt__progress_state){.kernel = "k", .measured = 5, .rounds = 2, .best_ms = INFINITY,
                             .elapsed = 3, .left = 7, .left_is_limit = true, .finals = true};
    bt__progress_format(&s, false, b, sizeof b);
    assert_string_equal(b, "k: 5 configs · finals · 3.0 s elapsed, 7.0 s left (time limit)");
    setenv("NO_COLOR", "1", 1);
    assert_false(bt__progress_color());
    setenv("NO_COLOR", "", 1);
    setenv("TERM", "xterm", 1);
    assert_true(bt__progress_color());
    setenv("TERM", "dumb", 1);
    assert_false(bt__progress_color());
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reason_rule),
        cmocka_unit_test(test_axes),
        cmocka_unit_test(test_numbers_and_escaping),
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_page_without_roofline),
        cmocka_unit_test(test_checks),
        cmocka_unit_test(test_progress_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
