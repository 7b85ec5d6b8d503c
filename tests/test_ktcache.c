/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ktcache.c — Kernel Tuner cache files: loading (plain and gzip), the space and records they
 * give, errors with line:column or the offending field, a write/read round trip; every recorded
 * space of tests/data/kt/ through the store (import, export-kt) and back equal field by field;
 * blocktune's own rows exported as Kernel Tuner writes them; gzip bombs and oversized files
 * refused fast with bounded memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_util.h"

#include "core/util.h"
#include "store/jsonin.h"
#include "store/ktcache.h"
#include "store/ktinterop.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define KT_DIR BT_SOURCE_DIR "/tests/data/kt"

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

/* The first place where a and b differ ("" when equal), as a path like cache["16,1"].times[3]. */
static bool json_diff(json_t *a, json_t *b, char *path, size_t size)
{
    size_t at = strlen(path);
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        json_object_foreach(a, k, v)
        {
            snprintf(path + at, size - at, "[\"%s\"]", k);
            json_t *w = json_object_get(b, k);
            if (!w || json_diff(v, w, path, size)) {
                if (!w)
                    snprintf(path + strlen(path), size - strlen(path), " (missing)");
                return true;
            }
        }
        path[at] = '\0';
        if (json_object_size(a) != json_object_size(b)) {
            snprintf(path + at, size - at, " (%zu fields, not %zu)", json_object_size(b),
                     json_object_size(a));
            return true;
        }
        return false;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b)) {
            snprintf(path + at, size - at, " (%zu items, not %zu)", json_array_size(b),
                     json_array_size(a));
            return true;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            snprintf(path + at, size - at, "[%zu]", i);
            if (json_diff(json_array_get(a, i), json_array_get(b, i), path, size))
                return true;
        }
        path[at] = '\0';
        return false;
    }
    /* json_equal tells 1 from 1.0, as Python does not; a round trip keeps the kind too */
    return !json_equal(a, b);
}

/* Each recorded space: import into a fresh store, export-kt, and the two files compare equal
 * field by field (every entry, failures and their strings, times, timings, metrics, timestamps,
 * the header). */
static void test_real_caches_round_trip_through_the_store(void **state)
{
    static const struct {
        const char *file, *kernel, *device;
        size_t n, failed;
    } files[] = {
        {"convolution_milo_A100.json.gz", "convolution_kernel", "NVIDIA A100-PCIE-40GB", 4362, 161},
        {"convolution_milo_A4000.json.gz", "convolution_kernel", "NVIDIA RTX A4000", 4362, 161},
        {"convolution_milo_W6600.json.gz", "convolution_kernel", "AMD Radeon PRO W6600", 4362, 0},
        {"dedispersion_milo_A100.json.gz", "dedispersion_kernel", "NVIDIA A100-PCIE-40GB", 11130,
         0},
        {"dedispersion_milo_W6600.json.gz", "dedispersion_kernel", "AMD Radeon PRO W6600", 11130,
         0},
    };
    for (size_t f = 0; f < BT__ARRAY_LEN(files); f++) {
        char src[512], db[256], out[256];
        snprintf(src, sizeof src, "%s/%s", KT_DIR, files[f].file);
        snprintf(db, sizeof db, "%s/rt%zu.db", tmpdir, f);
        snprintf(out, sizeof out, "%s/rt%zu.json", tmpdir, f);
        bt__store *s = NULL;
        bt_diag d;
        assert_int_equal(bt__store_open(db, &s, &d), BT_OK);
        int n = 0;
        if (bt__kt_import(s, src, &n, &d) != BT_OK)
            fail_msg("import %s: %s", src, d.msg);
        assert_int_equal(n, files[f].n);
        /* the store's key is the file's problem_size */
        json_t *doc = bt__jsonin_file(src, 0, &(bt_status){0}, &d);
        assert_non_null(doc);
        json_t *ps = json_object_get(doc, "problem_size");
        char key[256] = "";
        for (size_t i = 0; i < json_array_size(ps); i++)
            snprintf(key + strlen(key), sizeof key - strlen(key), "%sdim%zu=%lld", i ? "," : "", i,
                     (long long)json_integer_value(json_array_get(ps, i)));
        if (bt__kt_export(s, files[f].kernel, files[f].device, key, out, &n, &d) != BT_OK)
            fail_msg("export %s: %s", files[f].file, d.msg);
        assert_int_equal(n, files[f].n);
        json_t *back = bt__jsonin_file(out, 0, &(bt_status){0}, &d);
        assert_non_null(back);
        char path[1024] = "";
        if (json_diff(doc, back, path, sizeof path))
            fail_msg("%s: the export differs from the original at %s", files[f].file, path);
        size_t failed = 0;
        const char *k;
        json_t *e;
        json_object_foreach(json_object_get(back, "cache"), k, e) failed +=
            json_is_string(json_object_get(e, "time"));
        assert_int_equal(failed, files[f].failed);
        json_decref(doc);
        json_decref(back);
        bt__store_close(s);
    }
}

static void put_row(bt__store *s, const char *cfg, const char *status, double median, double mean,
                    const char *error)
{
    bt__measurement m;
    bt__measurement_init(&m);
    m.kernel = "vector_add";
    m.source_hash = "00ff";
    m.options = "";
    m.device_name = "Test GPU";
    m.device_uuid = "";
    m.device_arch = "sm_90";
    m.driver = "1";
    m.compiler = "NVRTC";
    m.key = "n=4096";
    m.key_json = "{\"n\":4096}";
    m.config_json = (char *)cfg;
    m.status = (char *)status;
    m.error = (char *)error;
    m.median_ms = median;
    m.mean_ms = mean;
    m.compile_ms = 12.5;
    m.timestamp = 1703238845.5; /* 2023-12-22 09:54:05.5 UTC */
    if (median > 0) {
        m.p20_ms = median * 0.9;
        m.p80_ms = median * 1.1;
        m.reps = 40;
    }
    bt_diag d;
    assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
}

/* blocktune's own rows as Kernel Tuner writes them: time the mean of the runs, failures as its
 * strings in place of the time, the timestamp in its format; nothing dropped. */
static void test_blocktune_rows_exported_as_kernel_tuner_writes(void **state)
{
    char db[256], out[256];
    snprintf(db, sizeof db, "%s/own.db", tmpdir);
    snprintf(out, sizeof out, "%s/own.json", tmpdir);
    bt__store *s = NULL;
    bt_diag d;
    assert_int_equal(bt__store_open(db, &s, &d), BT_OK);
    put_row(s, "{\"BLOCK\":64,\"VEC\":1}", "ok", 1.2, 1.5, NULL);
    put_row(s, "{\"BLOCK\":128,\"VEC\":1}", "compile_failed", -1, -1, "error: no such type");
    put_row(s, "{\"BLOCK\":64,\"VEC\":4}", "wrong_result", -1, -1, "got 3 want 4");
    put_row(s, "{\"BLOCK\":128,\"VEC\":4}", "invalid", -1, -1, "too many threads");
    int n = 0;
    if (bt__kt_export(s, "vector_add", "Test GPU", "n=4096", out, &n, &d) != BT_OK)
        fail_msg("export: %s", d.msg);
    assert_int_equal(n, 4);
    json_t *doc = bt__jsonin_file(out, 0, &(bt_status){0}, &d);
    assert_non_null(doc);
    json_t *cache = json_object_get(doc, "cache");
    assert_int_equal(json_object_size(cache), 4);
    json_t *ok = json_object_get(cache, "64,1");
    assert_true(json_real_value(json_object_get(ok, "time")) == 1.5); /* the mean, not 1.2 */
    assert_true(json_real_value(json_object_get(ok, "compile_time")) == 12.5);
    assert_string_equal(json_string_value(json_object_get(ok, "timestamp")),
                        "2023-12-22 09:54:05.500000+00:00");
    assert_int_equal(json_integer_value(json_object_get(ok, "BLOCK")), 64);
    assert_string_equal(json_string_value(json_object_get(json_object_get(cache, "128,1"), "time")),
                        "CompilationFailedConfig");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cache, "64,4"), "time")),
                        "RuntimeFailedConfig");
    assert_string_equal(json_string_value(json_object_get(json_object_get(cache, "128,4"), "time")),
                        "InvalidConfig");
    assert_string_equal(json_string_value(json_object_get(doc, "kernel_name")), "vector_add");
    json_decref(doc);
    /* Kernel Tuner closes a cache with "}\n}": it reopens one for appending only then */
    size_t size;
    char *text = bt__read_file(out, &size);
    assert_true(size > 4 && !memcmp(text + size - 4, "}\n}\n", 4));
    free(text);
    bt__store_close(s);
}

/* One gzip member of n bytes of `fill` after `head`. */
static unsigned char *gz_member(const char *head, const char *fill, size_t n, size_t *out_len)
{
    size_t hl = strlen(head), fl = strlen(fill);
    unsigned char *in = malloc(hl + n);
    memcpy(in, head, hl);
    for (size_t i = 0; i < n; i++)
        in[hl + i] = (unsigned char)fill[i % fl];
    uLong cap = compressBound((uLong)(hl + n)) + 64;
    unsigned char *out = malloc(cap);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = in;
    zs.avail_in = (uInt)(hl + n);
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    free(in);
    return out;
}

/* A gzip bomb: `head`, then `fill` repeated to `total` bytes, as gzip members (one of the head,
 * then the same 16 MiB member again and again): a few KiB that inflate to `total`. */
static unsigned char *bomb(const char *head, const char *fill, size_t total, size_t *out_len)
{
    size_t hl, bl, chunk = (size_t)16 << 20;
    unsigned char *h = gz_member(head, " ", 0, &hl);
    unsigned char *body = gz_member("", fill, chunk - chunk % strlen(fill), &bl);
    size_t copies = total / chunk;
    unsigned char *out = malloc(hl + copies * bl);
    memcpy(out, h, hl);
    for (size_t i = 0; i < copies; i++)
        memcpy(out + hl + i * bl, body, bl);
    *out_len = hl + copies * bl;
    free(h);
    free(body);
    return out;
}

/* A 1 GiB inflation of whitespace, and a 64 MiB one of an array of zeros: each refused with a
 * message that says why as soon as it passes the limit (seconds at most, where the old reader
 * took 45 s and 3 GiB for the first), without ever holding the inflated text. */
static void test_gzip_bombs_refused_fast(void **state)
{
    static const struct {
        const char *head, *fill, *says;
        size_t total;
    } bombs[] = {
        {"{\"cache\": ", " ", "inflates to more than 64 MiB of JSON", (size_t)1 << 30},
        {"{\"cache\": [", "0,", "inflates to more than 4194304 JSON values", (size_t)64 << 20},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(bombs); i++) {
        size_t len;
        unsigned char *z = bomb(bombs[i].head, bombs[i].fill, bombs[i].total, &len);
        assert_true(len < 2u << 20); /* the file is small; what it inflates to is not */
        bt__ktcache *c = NULL;
        bt_diag d;
        double t0 = bt_test_now();
        bt_status st = bt__ktcache_load_mem(z, len, "bomb.json.gz", &c, &d);
        double dt = bt_test_now() - t0;
        free(z);
        assert_int_equal(st, BT_UNSUPPORTED);
        assert_null(c);
        if (!strstr(d.msg, bombs[i].says))
            fail_msg("message: %s", d.msg);
        assert_non_null(strstr(d.msg, "BLOCKTUNE_MAX_INPUT_MB"));
        assert_string_equal(d.file, "bomb.json.gz");
        printf("# bomb %zu refused in %.3f s: %s\n", i, dt, d.msg);
        assert_true(dt < (bt_test_sanitized() ? 30.0 : 10.0)); /* was 45 s for the first */
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("# peak resident memory so far: %ld MiB\n", ru.ru_maxrss / 1024);
    assert_true(ru.ru_maxrss < 1024L * 1024); /* < 1 GiB (the old reader took 3 GiB) */
}

/* A plain file over the limit ($BLOCKTUNE_MAX_INPUT_MB lowers it here) is refused the same way,
 * and the limit is lifted again by the variable. */
static void test_plain_file_over_the_limit(void **state)
{
    char path[256];
    snprintf(path, sizeof path, "%s/big.json", tmpdir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(sample, f);
    for (int i = 0; i < (3 << 20) / 64; i++)
        fputs("                                                               \n", f);
    fclose(f);
    setenv("BLOCKTUNE_MAX_INPUT_MB", "2", 1);
    bt__ktcache *c = NULL;
    bt_diag d;
    assert_int_equal(bt__ktcache_load(path, &c, &d), BT_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "holds more than 2 MiB"));
    setenv("BLOCKTUNE_MAX_INPUT_MB", "8", 1);
    assert_int_equal(bt__ktcache_load(path, &c, &d), BT_OK);
    check_sample(c);
    bt__ktcache_free(c);
    unsetenv("BLOCKTUNE_MAX_INPUT_MB");
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
        cmocka_unit_test(test_gzip_bombs_refused_fast),
        cmocka_unit_test(test_plain_file_over_the_limit),
        cmocka_unit_test(test_blocktune_rows_exported_as_kernel_tuner_writes),
        cmocka_unit_test(test_real_caches_round_trip_through_the_store),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
