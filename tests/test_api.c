/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_api.c — the 0.2.0 public API beyond launches (test_embed has those): version, diags and
 * their size, the tune options' setters and ranges, configs, the store and wisdom calls, the
 * strategy and backend listings, the settings (cache folder, default mode, log callback) and the
 * progress callback that cancels a tune. Only blocktune.h is used.
 */
#include "test_util.h"

#include <sys/stat.h>
#include <unistd.h>

static char g_dir[256];

static void path_in(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", g_dir, name);
}

static void test_version_and_diag(void **state)
{
    (void)state;
    assert_string_equal(bt_version(), BT_VERSION_STRING);
    assert_int_equal(bt_version_number(), 0x000200);
    assert_string_equal(bt_err_name(BT_CANCELLED), "BT_CANCELLED");
    assert_string_equal(bt_strerror(BT_CANCELLED), "cancelled");
    bt_diag d = BT_DIAG_INIT;
    assert_int_equal(d.size, sizeof d);
    bt_kdesc *k = NULL;
    assert_int_equal(bt_kdesc_builtin("nope", &k, &d), BT_NOT_FOUND);
    assert_true(d.msg[0]);
    assert_int_equal(d.size, sizeof d); /* kept */
}

static void test_tune_option_setters(void **state)
{
    (void)state;
    bt_tune_options *o = NULL;
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_warmup_ms(o, 0), BT_OK);
    assert_int_equal(bt_tune_options_set_warmup_ms(o, 60001), BT_INVALID_ARG);
    /* why, in the tune's own words (blocktune tune prints this) */
    assert_string_equal(bt_tune_options_error(o),
                        "warmup_ms (--warmup-ms) is 60001 ms: the warm-up budget per config is "
                        "at least 0 ms and at most 60000 ms");
    assert_int_equal(bt_tune_options_set_rep_ms(o, 0.0 / 0.0), BT_INVALID_ARG); /* NaN */
    assert_int_equal(bt_tune_options_set_budget(o, -1), BT_INVALID_ARG);
    assert_string_equal(bt_tune_options_error(o), "budget is -1: it is at least 0 and at most 1e+09");
    assert_int_equal(bt_tune_options_set_timeout_s(o, 0), BT_INVALID_ARG);
    assert_non_null(strstr(bt_tune_options_error(o), "timeout_s (--timeout) is 0 s"));
    assert_int_equal(bt_tune_options_set_timeout_s(o, 0.0005), BT_OK); /* above 0, as the tune */
    assert_string_equal(bt_tune_options_error(o), ""); /* a setter that took its value */
    assert_int_equal(bt_tune_options_set_timeout_s(o, 3601), BT_INVALID_ARG);
    assert_int_equal(bt_tune_options_set_timeout_s(o, 5), BT_OK);
    assert_int_equal(bt_tune_options_set_top_k(o, 0), BT_INVALID_ARG);
    assert_int_equal(bt_tune_options_set_target_ms(o, -1), BT_OK); /* the roofline floor */
    assert_int_equal(bt_tune_options_set_target_ms(o, 1.0 / 0.0), BT_INVALID_ARG);
    assert_string_equal(bt_tune_options_error(o),
                        "target_ms (--target-ms) is inf: a time in ms, or < 0 for the roofline");
    assert_int_equal(bt_tune_options_set_mode(o, (bt_tune_mode)7), BT_INVALID_ARG);
    assert_int_equal(bt_tune_options_set_mode(o, BT_MODE_RETUNE), BT_OK);
    char name[16] = "random";
    assert_int_equal(bt_tune_options_set_strategy(o, name), BT_OK);
    strcpy(name, "garbage"); /* the options hold a copy */
    assert_int_equal(bt_tune_options_set_strategy(o, NULL), BT_OK);
    assert_int_equal(bt_tune_options_set_store(o, "none"), BT_OK);
    assert_int_equal(bt_tune_options_set_budget(NULL, 1), BT_INVALID_ARG);
    bt_tune_options_destroy(o);
    bt_tune_options_destroy(NULL);
}

static void test_config_accessors(void **state)
{
    (void)state;
    bt_diag d = BT_DIAG_INIT;
    bt_kdesc *k = NULL;
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    bt_config *c = NULL;
    assert_int_equal(bt_kdesc_parse_config(k, "block_size=256, num_warps=2,VEC=4", &c, &d), BT_OK);
    assert_int_equal(bt_config_count(c), 3);
    assert_string_equal(bt_config_name(c, 1), "num_warps");
    assert_int_equal(bt_config_value(c, 0), 256);
    int64_t v = 0;
    assert_int_equal(bt_config_get(c, "VEC", &v, &d), BT_OK);
    assert_int_equal(v, 4);
    assert_int_equal(bt_config_get(c, "TILE", &v, &d), BT_NOT_FOUND);
    assert_non_null(strstr(d.msg, "BLOCK_SIZE, num_warps, VEC"));
    assert_string_equal(bt_config_text(c), "BLOCK_SIZE=256,num_warps=2,VEC=4");
    assert_string_equal(bt_config_json(c), "{\"BLOCK_SIZE\":256,\"num_warps\":2,\"VEC\":4}");
    assert_null(bt_config_name(c, 3));
    bt_config *bad = NULL;
    assert_int_equal(bt_kdesc_parse_config(k, "BLOCK_SIZE=256", &bad, &d), BT_INVALID_ARG);
    assert_null(bad);
    bt_config_destroy(c);
    bt_kdesc_destroy(k);
}

static const char *wisdom =
    "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, \"blocktune_version\": \"0.2.0\",\n"
    " \"device\": \"NVIDIA H200\", \"uuid\": \"GPU-1234\", \"arch\": \"sm_90\",\n"
    " \"driver\": \"560.35\", \"compiler\": \"NVRTC 12.6\", \"entries\": [\n"
    "  {\"kernel\": \"softmax\", \"source_hash\": \"aa11\", \"key\": {\"rows\": 4096, \"cols\": "
    "1024, \"dtype\": \"fp32\"}, \"config\": {\"BLOCK\": 1024, \"num_warps\": 4}, \"rank\": 0, "
    "\"median_ms\": 0.02},\n"
    "  {\"kernel\": \"softmax\", \"source_hash\": \"aa11\", \"key\": {\"rows\": 8, \"cols\": 64, "
    "\"dtype\": \"fp32\"}, \"config\": {\"BLOCK\": 64, \"num_warps\": 1}, \"rank\": 0, "
    "\"median_ms\": 0.004}]}\n";

static void test_store_and_wisdom(void **state)
{
    (void)state;
    char db[512], wf[512], out[512];
    path_in(db, sizeof db, "api.db");
    path_in(wf, sizeof wf, "w.json");
    path_in(out, sizeof out, "out.json");
    unlink(db);
    FILE *f = fopen(wf, "w");
    assert_non_null(f);
    fputs(wisdom, f);
    fclose(f);
    bt_diag d = BT_DIAG_INIT;
    bt_store *s = NULL;
    assert_int_equal(bt_store_open(db, BT_STORE_READONLY, &s, &d), BT_NOT_FOUND);
    assert_int_equal(bt_store_open(db, 0, &s, &d), BT_NOT_FOUND); /* no CREATE: not made */
    assert_int_equal(access(db, F_OK), -1);
    assert_int_equal(bt_store_open(db, BT_STORE_READONLY | BT_STORE_CREATE, &s, &d),
                     BT_INVALID_ARG);
    assert_int_equal(bt_store_open(db, BT_STORE_CREATE, &s, &d), BT_OK);
    assert_string_equal(bt_store_path(s), db);
    int n = 0;
    assert_int_equal(bt_wisdom_import(s, wf, &n, &d), BT_OK);
    assert_int_equal(n, 2);
    int64_t meas = 0, win = 0;
    assert_int_equal(bt_store_counts(s, &meas, &win, &d), BT_OK);
    assert_true(meas == 2 && win == 2);
    bt_winner_list *l = NULL;
    assert_int_equal(bt_store_winners(s, "softmax", &l, &d), BT_OK);
    assert_int_equal(bt_winner_list_count(l), 2);
    int big = strstr(bt_winner_list_key(l, 0), "4096") ? 0 : 1;
    assert_string_equal(bt_winner_list_kernel(l, big), "softmax");
    assert_non_null(strstr(bt_winner_list_config(l, big), "\"BLOCK\":1024"));
    assert_string_equal(bt_winner_list_device(l, big), "NVIDIA H200");
    assert_non_null(strstr(bt_winner_list_origin(l, big), "wisdom:"));
    assert_true(bt_winner_list_median_ms(l, big) == 0.02);
    assert_null(bt_winner_list_key(l, 2));
    bt_winner_list_destroy(l);
    assert_int_equal(bt_store_winners(s, "gemm", &l, &d), BT_OK);
    assert_int_equal(bt_winner_list_count(l), 0);
    bt_winner_list_destroy(l);
    char *report = NULL;
    assert_int_equal(bt_store_verify(s, &report, &d), BT_OK);
    free(report);
    int files = 0;
    assert_int_equal(bt_wisdom_export(s, BT_WISDOM_BLOCKTUNE, NULL, NULL, NULL, out, &files, &d),
                     BT_OK);
    assert_int_equal(files, 1);
    assert_int_equal(bt_wisdom_export(s, BT_WISDOM_VLLM, NULL, NULL, NULL, out, &files, &d),
                     BT_INVALID_ARG);
    assert_int_equal(bt_store_forget(s, "rows=8", 1, &meas, &win, &d), BT_OK); /* dry run */
    assert_true(meas == 1 && win == 1);
    assert_int_equal(bt_store_forget(s, "softmax", 0, &meas, &win, &d), BT_OK);
    assert_int_equal(bt_store_counts(s, &meas, &win, &d), BT_OK);
    assert_true(meas == 0 && win == 0);
    /* the export re-imports to the same winners */
    assert_int_equal(bt_wisdom_import(s, out, &n, &d), BT_OK);
    assert_int_equal(n, 2);
    bt_store_destroy(s);
}

/* The calls the CLI stands on (issue 13 item 4): the hardware table's origin and JSON, the store's
 * writers, export options, a simulation and a report, each checked on what it wrote. */
static void test_cli_calls(void **state)
{
    (void)state;
    bt_diag d = BT_DIAG_INIT;
    bt_gpudb *db = NULL;
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    assert_non_null(bt_gpudb_origin(db, 0));
    assert_null(bt_gpudb_origin(db, bt_gpudb_count(db)));
    char gf[512];
    path_in(gf, sizeof gf, "one_gpu.json");
    FILE *f = fopen(gf, "w");
    assert_non_null(f);
    assert_int_equal(bt_gpudb_write_json(db, bt_gpudb_at(db, 0), f), BT_OK);
    fclose(f);
    bt_gpudb *one = NULL;
    assert_int_equal(bt_gpudb_load_file(gf, &one, &d), BT_OK); /* what it wrote reads back */
    assert_int_equal(bt_gpudb_count(one), 1);
    assert_string_equal(bt_gpudb_at(one, 0)->name, bt_gpudb_at(db, 0)->name);
    assert_string_equal(bt_gpudb_origin(one, 0), gf);
    bt_gpudb_destroy(one);
    bt_gpudb_destroy(db);

    char dbp[512], wf[512];
    path_in(dbp, sizeof dbp, "cli.db");
    path_in(wf, sizeof wf, "w2.json");
    unlink(dbp);
    assert_non_null(f = fopen(wf, "w"));
    fputs(wisdom, f);
    fclose(f);
    bt_store *s = NULL;
    assert_int_equal(bt_store_open(dbp, BT_STORE_CREATE, &s, &d), BT_OK);
    bt_wisdom_format fmt = BT_WISDOM_T4;
    assert_int_equal(bt_wisdom_import_ex(s, wf, &fmt, NULL, &d), BT_OK);
    assert_int_equal(fmt, BT_WISDOM_BLOCKTUNE);
    char *buf = NULL;
    size_t size = 0;
    assert_non_null(f = open_memstream(&buf, &size));
    assert_int_equal(bt_store_write_winners_table(s, f, &d), BT_OK);
    fclose(f);
    assert_non_null(strstr(buf, "2 winners, 2 measurements in"));
    assert_non_null(strstr(buf, "\"BLOCK\":1024"));
    free(buf);
    size_t rows = 9;
    assert_non_null(f = open_memstream(&buf, &size));
    assert_int_equal(bt_store_write_measurements(s, "rows=8,", f, &rows, &d), BT_OK);
    fclose(f);
    assert_int_equal(rows, 1);
    assert_non_null(strstr(buf, "softmax on NVIDIA H200"));
    free(buf);
    bt_wisdom_export_options *o = NULL;
    assert_int_equal(bt_wisdom_export_options_create(&o), BT_OK);
    assert_int_equal(bt_wisdom_export_options_set_top_k(o, 0), BT_INVALID_ARG);
    assert_int_equal(bt_wisdom_export_options_set_top_k(o, 2), BT_OK);
    int files = 0;
    assert_int_equal(bt_wisdom_export_ex(s, BT_WISDOM_T4, o, "-", &files, NULL, &d),
                     BT_INVALID_ARG); /* T4 names one kernel */
    assert_int_equal(bt_wisdom_export_options_set_kernel(o, "softmax"), BT_OK);
    assert_int_equal(bt_wisdom_export_ex(s, BT_WISDOM_KERNEL_TUNER, o, "-", &files, NULL, &d),
                     BT_INVALID_ARG); /* a Kernel Tuner cache is a file */
    bt_wisdom_export_options_destroy(o);
    assert_non_null(strstr(bt_wisdom_format_name(BT_WISDOM_T4), "T4"));

    /* a report over a store that holds no measurements of a kernel is empty */
    bt_report *r = NULL;
    assert_int_equal(bt_report_create(&r), BT_OK);
    size_t added = 7;
    assert_int_equal(bt_report_add_store(r, s, "gemm", NULL, NULL, &added, &d), BT_OK);
    assert_int_equal(added, 0);
    assert_int_equal(bt_report_count(r), 0);
    assert_int_equal(bt_report_add_tune_file(r, wf, &d), BT_PARSE); /* wisdom, not a tune */
    assert_int_equal(bt_report_count(r), 0);
    bt_report_destroy(r);
    bt_store_destroy(s);

    /* a simulation on a recorded space: exhaustive finds the best */
    bt_simulation *sim = NULL;
    assert_int_equal(bt_simulation_create(&sim), BT_OK);
    assert_int_equal(bt_simulation_set_strategy(sim, "no-such"), BT_INVALID_ARG);
    assert_int_equal(bt_simulation_set_runs(sim, 0), BT_INVALID_ARG);
    assert_int_equal(bt_simulation_set_strategy(sim, "exhaustive"), BT_OK);
    assert_int_equal(bt_simulation_set_runs(sim, 1), BT_OK);
    assert_int_equal(bt_simulation_add_file(sim, BT_SOURCE_DIR
                                            "/tests/data/kt/convolution_milo_A4000.json.gz", &d),
                     BT_OK);
    assert_int_equal(bt_simulation_count(sim), 1);
    assert_non_null(f = open_memstream(&buf, &size));
    assert_int_equal(bt_simulation_write_json(sim, f), BT_OK);
    fclose(f);
    assert_non_null(strstr(buf, "\"name\": \"exhaustive\", \"supported\": true"));
    assert_non_null(strstr(buf, "\"success\": [1.00, 1.00, 1.00]"));
    free(buf);
    bt_simulation_destroy(sim);
}

static void test_listings(void **state)
{
    (void)state;
    int n = bt_strategy_count();
    assert_true(n >= 6);
    int found = 0;
    for (int i = 0; i < n; i++) {
        assert_non_null(bt_strategy_description(i));
        found += !strcmp(bt_strategy_name(i), "exhaustive") + !strcmp(bt_strategy_name(i), "forest");
    }
    assert_int_equal(found, 2);
    assert_null(bt_strategy_name(n));
    int nb = bt_backend_count();
    assert_true(nb >= 2);
    for (int i = 0; i < nb; i++) {
        const char *name = NULL, *why = NULL;
        int st = bt_backend_status(i, &name, &why);
        assert_true(st == 0 || st == 1);
        assert_non_null(name);
        assert_true(st == 1 ? why == NULL : why != NULL);
    }
    assert_int_equal(bt_backend_status(nb, NULL, NULL), -1);
}

static int g_lines;
static char g_last[512];
static void log_cb(const char *line, void *user)
{
    (void)user;
    g_lines++;
    snprintf(g_last, sizeof g_last, "%s", line);
}

static int g_calls, g_cancel_after;
static bt_progress g_seen;
static int progress(const bt_progress *p, void *user)
{
    (void)user;
    g_seen = *p;
    return ++g_calls >= g_cancel_after;
}

/* The default mode, the cache folder and the log callback set through the API; a tune the
 * progress callback cancels. */
static void test_settings_and_cancel(void **state)
{
    (void)state;
    bt_diag d = BT_DIAG_INIT;
    bt_device *dev = NULL;
    if (bt_device_open(NULL, &dev, &d) != BT_OK) {
        printf("SKIPPED: no device: %s\n", d.msg);
        skip();
    }
    char cache[512];
    path_in(cache, sizeof cache, "cache");
    assert_int_equal(bt_set_cache_dir(cache), BT_OK);
    /* no wisdom at all, so the model answers (on an H200 the shipped wisdom would: the nearest
     * size of vector_add's shipped keys) */
    char nowis[512];
    path_in(nowis, sizeof nowis, "no-wisdom");
    mkdir(nowis, 0700);
    assert_int_equal(bt_set_wisdom_dirs(nowis, nowis), BT_OK);
    assert_int_equal(bt_set_default_mode(BT_MODE_WISDOM_ONLY), BT_OK);
    assert_int_equal(bt_set_default_mode(9), BT_INVALID_ARG);
    bt_set_log_callback(log_cb, NULL);
    bt_kdesc *k = NULL;
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    bt_kernel *kn = NULL;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", 50000, &d), BT_OK);
    bt_choice *c = NULL;
    assert_int_equal(bt_kernel_lookup(kn, p, 0, &c, &d), BT_OK); /* wisdom-only by default */
    assert_int_equal(bt_choice_source(c), BT_SOURCE_MODEL);
    assert_true(g_lines >= 1);
    assert_non_null(strstr(g_last, "vector_add: dispatching"));
    bt_choice_destroy(c);
    bt_set_log_callback(NULL, NULL);
    assert_int_equal(bt_set_default_mode(-1), BT_OK);
    assert_int_equal(bt_set_wisdom_dirs(NULL, NULL), BT_OK);

    /* a tune cancelled by its progress callback after the second round */
    bt_tune_options *o = NULL;
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_mode(o, BT_MODE_TUNE), BT_OK);
    assert_int_equal(bt_tune_options_set_strategy(o, "random"), BT_OK);
    assert_int_equal(bt_tune_options_set_threads(o, 1), BT_OK); /* rounds of one config */
    assert_int_equal(bt_tune_options_set_budget(o, 6), BT_OK);
    assert_int_equal(bt_tune_options_set_rep_ms(o, 1), BT_OK);
    assert_int_equal(bt_tune_options_set_warmup_ms(o, 1), BT_OK);
    assert_int_equal(bt_tune_options_set_verify_boundary(o, 0), BT_OK);
    assert_int_equal(bt_tune_options_set_progress_cb(o, progress, NULL), BT_OK);
    g_cancel_after = 2;
    bt_result *r = NULL;
    bt_status st = bt_kernel_tune(kn, p, o, &r, &d);
    assert_int_equal(st, BT_CANCELLED);
    assert_null(r);
    assert_non_null(strstr(d.msg, "cancelled by the progress callback after 2 configs"));
    assert_int_equal(g_calls, 2);
    assert_true(g_seen.size == sizeof g_seen && g_seen.configs_done == 2 && g_seen.rounds == 2 &&
                g_seen.configs_planned == 6 && g_seen.elapsed_s > 0 && g_seen.time_left_s == -1);
    /* what it measured is in the store (in the cache folder set above): a new tune resumes */
    char db[600];
    snprintf(db, sizeof db, "%s/blocktune.db", cache);
    bt_store *s = NULL;
    assert_int_equal(bt_store_open(db, BT_STORE_READONLY, &s, &d), BT_OK);
    int64_t meas = 0;
    assert_int_equal(bt_store_counts(s, &meas, NULL, &d), BT_OK);
    assert_int_equal(meas, 2);
    bt_store_destroy(s);
    bt_tune_options_destroy(o);
    bt_set_cache_dir(NULL);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

int main(void)
{
    const char *base = getenv("BLOCKTUNE_CACHE_DIR");
    snprintf(g_dir, sizeof g_dir, "%s", base && *base ? base : "/tmp/bt-test-api");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    if (system(cmd) != 0)
        BT_TEST_SKIP_ALL("cannot make %s", g_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_diag),
        cmocka_unit_test(test_tune_option_setters),
        cmocka_unit_test(test_config_accessors),
        cmocka_unit_test(test_store_and_wisdom),
        cmocka_unit_test(test_cli_calls),
        cmocka_unit_test(test_listings),
        cmocka_unit_test(test_settings_and_cancel),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
