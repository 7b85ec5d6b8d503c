/*
 * test_ktcache.c — Kernel Tuner cache files: loading (plain and gzip), the space and records they
 * give, errors with line:column or the offending field, and a write/read round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/util.h"
#include "store/ktcache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Two parameters, 2 x 3 = 6 configs of which 4 are recorded: one compile failure, and the best
 * (b=4, a=32). The config a=32,b=2 is absent (invalid). */
static const char *sample =
    "{\n"
    "\"device_name\": \"Test GPU\",\n"
    "\"kernel_name\": \"k\",\n"
    "\"problem_size\": [4096, 4096],\n"
    "\"tune_params_keys\": [\"a\", \"b\"],\n"
    "\"tune_params\": {\"a\": [16, 32], \"b\": [1, 2, 4]},\n"
    "\"objective\": \"time\",\n"
    "\"cache\": {\n"
    "\"16,1\": {\"a\": 16, \"b\": 1, \"time\": 2.5, \"times\": [2.4, 2.6], \"compile_time\": 900.0,"
    " \"verification_time\": 0, \"benchmark_time\": 120.0, \"GFLOP/s\": 1000.5, \"strategy_time\": "
    "0,"
    " \"framework_time\": 3.5, \"timestamp\": \"2023-12-22 09:54:05.502007+00:00\"},\n"
    "\"16,2\": {\"a\": 16, \"b\": 2, \"time\": \"CompilationFailedConfig\", \"compile_time\": 50.0,"
    " \"benchmark_time\": 0.5},\n"
    "\"16,4\": {\"a\": 16, \"b\": 4, \"time\": 1.75, \"compile_time\": 800.0, \"benchmark_time\": "
    "100.0},\n"
    "\"32,4\": {\"a\": 32, \"b\": 4, \"time\": 1.25, \"compile_time\": 700.0, \"benchmark_time\": "
    "90.0}\n"
    "}\n"
    "}\n";

static char tmpdir[64];

static int setup(void **state)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bt-ktcache-XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static uint64_t index_of(const bt__ktcache *c, int64_t a, int64_t b)
{
    bt_config cfg = {.nparams = 2, .v = {a, b}};
    uint64_t idx;
    assert_true(bt__space_index_of(&c->space, &cfg, &idx));
    return idx;
}

static void check_sample(const bt__ktcache *c)
{
    assert_string_equal(c->device_name, "Test GPU");
    assert_string_equal(c->kernel_name, "k");
    assert_string_equal(c->objective, "time");
    assert_string_equal(c->problem_size_json, "[4096, 4096]");
    assert_int_equal(c->space.nparams, 2);
    assert_string_equal(c->space.params[0].name, "a");
    assert_int_equal(c->space.params[1].nvalues, 3);
    assert_int_equal(c->space.total, 6);
    assert_int_equal(c->nrecs, 4);
    assert_int_equal(c->nfailed, 1);
    assert_true(c->has_best);
    assert_int_equal(c->best_index, index_of(c, 32, 4));
    assert_true(c->best_ms == 1.25);
    assert_null(bt__ktcache_find(c, index_of(c, 32, 2))); /* absent: invalid */
    const bt__kt_record *r = bt__ktcache_find(c, index_of(c, 16, 1));
    assert_non_null(r);
    assert_int_equal(r->fail, BT__KT_OK);
    assert_true(r->time_ms == 2.5);
    assert_int_equal(r->ntimes, 2);
    assert_true(r->times[1] == 2.6);
    assert_true(r->compile_ms == 900.0 && r->benchmark_ms == 120.0 && r->framework_ms == 3.5);
    assert_int_equal(r->nmetrics, 1);
    assert_string_equal(r->metric_name[0], "GFLOP/s");
    assert_true(r->metric[0] == 1000.5);
    assert_string_equal(r->timestamp, "2023-12-22 09:54:05.502007+00:00");
    const bt__kt_record *f = bt__ktcache_find(c, index_of(c, 16, 2));
    assert_non_null(f);
    assert_int_equal(f->fail, BT__KT_COMPILE_FAILED);
    assert_int_equal(bt__kt_fail_status(f->fail), BT_COMPILE);
    assert_string_equal(f->fail_text, "CompilationFailedConfig");
    assert_true(isnan(f->time_ms));
    assert_int_equal(f->ntimes, 0);
}

static void test_load_plain(void **state)
{
    bt__ktcache *c = NULL;
    bt_diag d;
    assert_int_equal(bt__ktcache_load_mem(sample, strlen(sample), "sample.json", &c, &d), BT_OK);
    check_sample(c);
    bt__ktcache_free(c);
}

static void test_parse_error_has_line_and_column(void **state)
{
    /* line 3 is broken: a value is missing after the colon. */
    const char *bad = "{\n\"device_name\": \"x\",\n\"kernel_name\": ,\n}\n";
    bt__ktcache *c = (bt__ktcache *)1;
    bt_diag d;
    assert_int_equal(bt__ktcache_load_mem(bad, strlen(bad), "bad.json", &c, &d), BT_PARSE);
    assert_null(c);
    assert_string_equal(d.file, "bad.json");
    assert_int_equal(d.line, 3);
    assert_int_equal(d.column, 16);
    char buf[1200];
    bt_diag_format(&d, buf, sizeof buf);
    assert_non_null(strstr(buf, "bad.json:3:16"));
}

/* Loads `text` and expects status st and a diag naming field (and containing msg). */
static void expect_error(const char *text, bt_status st, const char *field, const char *msg)
{
    bt__ktcache *c = NULL;
    bt_diag d;
    bt_status got = bt__ktcache_load_mem(text, strlen(text), "t.json", &c, &d);
    if (got != st)
        fail_msg("expected %s, got %s (%s)", bt_err_name(st), bt_err_name(got), d.msg);
    assert_null(c);
    assert_string_equal(d.file, "t.json");
    assert_string_equal(d.field, field);
    if (!strstr(d.msg, msg))
        fail_msg("message '%s' lacks '%s'", d.msg, msg);
}

static void test_field_errors(void **state)
{
    expect_error("[1, 2]", BT_PARSE, "", "expected a JSON object");
    expect_error("{\"tune_params\": {}, \"cache\": {}}", BT_PARSE, "tune_params_keys",
                 "non-empty array");
    expect_error(
        "{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2.5]}, \"cache\": {}}",
        BT_UNSUPPORTED, "tune_params.a[1]", "not an integer");
    expect_error("{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"b\": [1]}, \"cache\": {}}",
                 BT_PARSE, "tune_params.a", "non-empty array");
    expect_error("{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 1]}, \"cache\": {}}",
                 BT_INVALID_ARG, "tune_params.a", "twice");
    expect_error("{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2]}}", BT_PARSE,
                 "cache", "expected an object");
    expect_error("{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2]},"
                 " \"cache\": {\"1\": {\"a\": 1, \"time\": [1]}}}",
                 BT_PARSE, "cache[\"1\"].time", "failure string");
    expect_error("{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2]},"
                 " \"cache\": {\"3\": {\"a\": 3, \"time\": 1.0}}}",
                 BT_PARSE, "cache[\"3\"].a", "not in tune_params.a");
    expect_error(
        "{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2]},"
        " \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}, \"x\": {\"a\": 1, \"time\": 2.0}}}",
        BT_PARSE, "cache", "two entries for the config a=1");
}

/* Parameter values come from the key when the entry does not repeat them. */
static void test_values_from_key(void **state)
{
    const char *t = "{\"tune_params_keys\": [\"a\", \"b\"], \"tune_params\": {\"a\": [1, 2], "
                    "\"b\": [true, false]}, \"cache\": {\"2,1\": {\"time\": 3.0}}}";
    bt__ktcache *c = NULL;
    bt_diag d;
    assert_int_equal(bt__ktcache_load_mem(t, strlen(t), "t.json", &c, &d), BT_OK);
    assert_int_equal(c->nrecs, 1);
    assert_int_equal(c->best_index, index_of(c, 2, 1));
    bt__ktcache_free(c);
}

static void test_round_trip_plain_and_gzip(void **state)
{
    bt__ktcache *c = NULL;
    bt_diag d;
    assert_int_equal(bt__ktcache_load_mem(sample, strlen(sample), "sample.json", &c, &d), BT_OK);
    const char *names[] = {"out.json", "out.json.gz"};
    for (int i = 0; i < 2; i++) {
        char path[128];
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        assert_int_equal(bt__ktcache_write(c, path, &d), BT_OK);
        size_t size;
        char *bytes = bt__read_file(path, &size);
        assert_non_null(bytes);
        bool gz = size >= 2 && (unsigned char)bytes[0] == 0x1f && (unsigned char)bytes[1] == 0x8b;
        assert_int_equal(gz, i == 1);
        free(bytes);
        bt__ktcache *back = NULL;
        if (bt__ktcache_load(path, &back, &d) != BT_OK)
            fail_msg("reload of %s: %s", path, d.msg);
        check_sample(back);
        /* and the written text is the same when written again */
        char *t1 = bt__ktcache_dump(c), *t2 = bt__ktcache_dump(back);
        assert_string_equal(t1, t2);
        free(t1);
        free(t2);
        bt__ktcache_free(back);
    }
    bt__ktcache_free(c);
}

/* Exporting blocktune results: an empty cache over a space, records added one by one. */
static void test_create_and_add(void **state)
{
    bt__space sp;
    bt__space_init(&sp);
    assert_int_equal(bt__space_add_pow2(&sp, "BLOCK", 32, 256, NULL), BT_OK);
    bt__ktcache *c = NULL;
    assert_int_equal(bt__ktcache_create(&sp, "H200", "vector_add", &c), BT_OK);
    double times[] = {1.0, 1.5};
    bt__kt_record r = {.index = 2,
                       .fail = BT__KT_OK,
                       .time_ms = 1.25,
                       .times = times,
                       .ntimes = 2,
                       .compile_ms = 10,
                       .benchmark_ms = 5};
    r.verification_ms = r.strategy_ms = r.framework_ms = NAN;
    assert_int_equal(bt__ktcache_add(c, &r), BT_OK);
    r.index = 0;
    r.time_ms = 0.5;
    assert_int_equal(bt__ktcache_add(c, &r), BT_OK);
    r.index = 1;
    r.fail = BT__KT_RUNTIME_FAILED;
    r.time_ms = NAN;
    assert_int_equal(bt__ktcache_add(c, &r), BT_OK);
    r.index = 4; /* past the space */
    assert_int_equal(bt__ktcache_add(c, &r), BT_INVALID_ARG);
    assert_int_equal(c->nrecs, 3);
    assert_int_equal(c->recs[0].index, 0);
    assert_int_equal(c->recs[2].index, 2);
    assert_int_equal(c->nfailed, 1);
    assert_int_equal(c->best_index, 0);
    char *text = bt__ktcache_dump(c);
    assert_non_null(strstr(text, "\"64\": {\"BLOCK\": 64, \"time\": \"RuntimeFailedConfig\""));
    bt__ktcache *back = NULL;
    bt_diag d;
    assert_int_equal(bt__ktcache_load_mem(text, strlen(text), "x", &back, &d), BT_OK);
    assert_int_equal(back->nrecs, 3);
    assert_true(back->best_ms == 0.5);
    assert_int_equal(bt__ktcache_find(back, 1)->fail, BT__KT_RUNTIME_FAILED);
    free(text);
    bt__ktcache_free(back);
    bt__ktcache_free(c);
    bt__space_clear(&sp);
}

static void test_corrupt_gzip_and_missing_file(void **state)
{
    const unsigned char junk[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad, 0xbe, 0xef};
    bt__ktcache *c = NULL;
    bt_diag d;
    bt_status st = bt__ktcache_load_mem(junk, sizeof junk, "junk.json.gz", &c, &d);
    assert_true(st == BT_CORRUPT);
    assert_null(c);
    assert_string_equal(d.file, "junk.json.gz");
    char path[128];
    snprintf(path, sizeof path, "%s/absent.json.gz", tmpdir);
    assert_int_equal(bt__ktcache_load(path, &c, &d), BT_NOT_FOUND);
    assert_string_equal(d.file, path);
    assert_non_null(strstr(d.msg, "cannot read"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_plain),
        cmocka_unit_test(test_parse_error_has_line_and_column),
        cmocka_unit_test(test_field_errors),
        cmocka_unit_test(test_values_from_key),
        cmocka_unit_test(test_round_trip_plain_and_gzip),
        cmocka_unit_test(test_create_and_add),
        cmocka_unit_test(test_corrupt_gzip_and_missing_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
