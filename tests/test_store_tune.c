/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store_tune.c — what a tune does with a results store that is not what it should be, on the
 * default device (PoCL here): stored rows that cannot be trusted (a median of -5 ms, 0, text) are
 * measured again, never reported as `ok (stored)`, and a winner is never one of them; writes that
 * fail (a read-only store, a lock held past the busy timeout) reach the result, the report, the
 * JSON and the exit status of `blocktune tune`; a damaged store is refused with how to recover,
 * and the tune goes on without it; BLOCKTUNE_MODE=bogus is an error naming the modes.
 */
#include "test_util.h"

#include "core/util.h"
#include "engine/engine.h"
#include "engine/record.h"
#include "store/store.h"

#include <fcntl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

typedef struct fixture {
    bt_device *dev;
    bt_kdesc *k;
    bt_problem *p;
} fixture;

static fixture F;

static bt__tune_opts quick(const char *store)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 1;
    o.rep_ms = 2;
    o.rounds = 1;
    o.top_k = 1;
    o.budget = 3;
    o.threads = 3;
    o.verify_boundary = 0;
    o.store = store;
    return o;
}

/* One tune of vector_add (n = 4096) on a fresh kernel handle (which opens the store anew). */
static bt_result *tune(const char *store, void (*before)(bt_kernel *kn, bt__tune_opts *o))
{
    bt_diag d;
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(F.dev, F.k, &kn, &d), BT_OK);
    bt__tune_opts o = quick(store);
    if (before)
        before(kn, &o);
    bt_result *r = NULL;
    if (bt__kernel_tune_opts(kn, F.p, &o, &r, &d) != BT_OK)
        fail_msg("tune: %s", d.msg);
    bt_kernel_destroy(kn);
    return r;
}

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", dir, name);
}

static void sql(const char *db, const char *stmt)
{
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(h, stmt, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", stmt, err);
    sqlite3_close(h);
}

#define report_text bt_test_report

static json_t *report_json(const bt_result *r)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    assert_int_equal(bt_result_write_json(r, f), BT_OK);
    fclose(f);
    json_t *j = json_loads(buf, 0, NULL);
    free(buf);
    assert_non_null(j);
    return j;
}

/* Puts a row for every config of the space, as the tune about to run would find them (its
 * kernel, source hash, device and key), each untrustworthy in its own way: a median of -5 ms (with
 * p20 and p80 around it), of 0, of text; a winner at -5 ms. */
static void plant_untrusted_rows(bt_kernel *kn, bt__tune_opts *o)
{
    bt__store *s = bt__kernel_store(kn, o);
    assert_non_null(s);
    const bt_device_info *info = bt_device_get_info(F.dev);
    char hash[24], key[256];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)kn->src_hash);
    bt__keyvals kv;
    bt__problem_keyvals(F.k, F.p, &kv);
    bt__keyvals_format(&kv, key, sizeof key);
    char *kj = bt__keyvals_json(&kv);
    for (uint64_t i = 0; i < F.k->space.total; i++) {
        bt_config c;
        bt__space_config_at(&F.k->space, i, &c);
        char *cj = bt__config_json(&F.k->space, &c);
        bt__measurement m;
        bt__measurement_init(&m);
        m.kernel = (char *)F.k->name;
        m.source_hash = hash;
        m.options = F.k->options ? F.k->options : "";
        m.device_name = (char *)info->name;
        m.device_uuid = (char *)info->uuid;
        m.device_arch = "x";
        m.driver = m.compiler = "x";
        m.key = key;
        m.key_json = kj;
        m.config_json = cj;
        m.status = "ok";
        m.median_ms = 1.0; /* made bad below, where blocktune's own writer cannot go */
        bt_diag d;
        assert_int_equal(i == 0 ? bt__store_put_winner(s, &m, 0, 0, NULL, &d)
                                : bt__store_put(s, &m, &d),
                         BT_OK);
        free(cj);
    }
    free(kj);
    assert_int_equal(
        sqlite3_exec(bt__store_db(s),
                     "UPDATE measurements SET median_ms = -5, p20_ms = -6, p80_ms = -4 "
                     "WHERE rowid % 3 = 0; UPDATE measurements SET median_ms = 0 WHERE rowid % 3 = 1;"
                     "UPDATE measurements SET median_ms = 'fast' WHERE rowid % 3 = 2;"
                     "UPDATE measurements SET median_ms = -5 WHERE rowid = 1;",
                     NULL, NULL, NULL),
        SQLITE_OK);
}

/* The store: every stored measurement of the key untrustworthy. The tune uses none of
 * them (no `ok (stored)`, no negative winner), measures each config again and stores the new
 * measurements over the bad rows. */
static void test_untrusted_rows_are_measured_again(void **state)
{
    char db[128];
    path_in(db, sizeof db, "bad.db");
    bt_result *r = tune(db, plant_untrusted_rows);
    printf("# %d of %zu configs from the store\n", r->from_store, r->n);
    assert_true(r->n >= 3);
    assert_int_equal(r->from_store, 0);
    assert_true(r->winner >= 0);
    assert_true(r->e[r->winner].st.median > 0);
    for (size_t i = 0; i < r->n; i++)
        assert_false(r->e[i].from_store);
    char *text = report_text(r);
    assert_null(strstr(text, "ok (stored)"));
    assert_null(strstr(text, "-5000"));
    assert_null(strstr(text, "NOT STORED")); /* every write of this tune went through */
    free(text);
    json_t *j = report_json(r);
    json_t *st = json_object_get(j, "store");
    assert_string_equal(json_string_value(json_object_get(st, "path")), db);
    assert_int_equal(json_integer_value(json_object_get(st, "failed")), 0);
    assert_int_equal(json_integer_value(json_object_get(st, "stored")), r->stored);
    assert_true(r->stored >= (int)r->n);
    json_decref(j);
    /* the new measurements replaced the bad rows: each reads back, trusted */
    bt__store *s;
    bt_diag d;
    assert_int_equal(bt__store_open_read(db, &s, &d), BT_OK);
    for (size_t i = 0; i < r->n; i++) {
        char *cj = bt__config_json(&F.k->space, &r->e[i].ev.cfg);
        bt__keyvals kv;
        char key[256];
        bt__problem_keyvals(F.k, F.p, &kv);
        bt__keyvals_format(&kv, key, sizeof key);
        bt__store_ident id = {F.k->name, r->source_hash, F.k->options ? F.k->options : "",
                              bt__device_key(&r->dev), key};
        bt__measurement m;
        assert_int_equal(bt__store_get(s, &id, cj, &m, &d), BT_OK);
        assert_true(m.median_ms > 0 && m.mean_ms > 0);
        bt__measurement_clear(&m);
        free(cj);
    }
    bt__store_close(s);
    bt_result_destroy(r);
}

static void make_read_only(bt_kernel *kn, bt__tune_opts *o)
{
    bt__store *s = bt__kernel_store(kn, o); /* the connection the tune will write with */
    assert_non_null(s);
    assert_int_equal(sqlite3_exec(bt__store_db(s), "PRAGMA query_only = ON", NULL, NULL, NULL),
                     SQLITE_OK);
}

/* Every write refused: the result counts them, the report and the JSON say what was not stored. */
static void test_failed_writes_reach_the_result(void **state)
{
    char db[128];
    path_in(db, sizeof db, "ro.db");
    bt_result *r = tune(db, make_read_only);
    printf("# %d writes failed, %d stored: %s\n", r->store_failed, r->stored, r->store_error);
    assert_true(r->winner >= 0);
    assert_true(r->store_failed >= 4); /* three measurements and the winner */
    assert_int_equal(r->stored, 0);
    assert_non_null(strstr(r->store_error, "readonly"));
    assert_non_null(strstr(r->store_error, db));
    char *text = report_text(r);
    assert_non_null(strstr(text, "NOT STORED:"));
    assert_non_null(strstr(text, "writes to the results store"));
    free(text);
    json_t *j = report_json(r);
    json_t *st = json_object_get(j, "store");
    assert_true(json_is_object(st));
    assert_int_equal(json_integer_value(json_object_get(st, "failed")), r->store_failed);
    assert_int_equal(json_integer_value(json_object_get(st, "stored")), 0);
    assert_true(json_is_string(json_object_get(st, "error")));
    json_decref(j);
    bt_result_destroy(r);
}

/* A store whose pages are damaged is refused at open, with the path and how to recover; the tune
 * runs without it and its result says that nothing was kept. */
static void test_damaged_store_is_refused(void **state)
{
    char db[128];
    path_in(db, sizeof db, "damaged.db");
    bt__store *s;
    bt_diag d;
    assert_int_equal(bt__store_open(db, &s, &d), BT_OK);
    sql(db, "CREATE TABLE filler(x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 "
            "FROM c WHERE i < 2000) INSERT INTO filler SELECT randomblob(300) FROM c;");
    bt__store_close(s); /* the last connection: the WAL is checkpointed into the file */
    int fd = open(db, O_WRONLY);
    assert_true(fd >= 0);
    unsigned char junk[16];
    memset(junk, 0xff, sizeof junk);
    assert_int_equal(pwrite(fd, junk, sizeof junk, 4096 * 40), (ssize_t)sizeof junk);
    close(fd);
    assert_int_equal(bt__store_open(db, &s, &d), BT_CORRUPT);
    printf("# %s\n", d.msg);
    assert_non_null(strstr(d.msg, db));
    assert_non_null(strstr(d.msg, "quick_check"));
    assert_non_null(strstr(d.msg, "blocktune cache verify"));
    assert_non_null(strstr(d.msg, "move it aside"));
    bt_result *r = tune(db, NULL);
    assert_true(r->winner >= 0);
    assert_true(r->store_refused);
    assert_int_equal(r->stored, 0);
    char *text = report_text(r);
    assert_non_null(strstr(text, "NOT STORED: the results store"));
    free(text);
    bt_result_destroy(r);
    /* verify (which opens it for reading, unchecked) reports the damage */
    assert_int_equal(bt__store_open_read(db, &s, &d), BT_OK);
    char *rep = NULL;
    assert_int_equal(bt__store_verify(s, &rep, &d), BT_CORRUPT);
    assert_non_null(rep);
    assert_non_null(strstr(rep, "integrity:"));
    free(rep);
    bt__store_close(s);
}

/* Runs the CLI with extra environment, output to out; returns its exit status. */
static int cli(const char *env, const char *args, const char *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s '%s' %s >'%s' 2>&1", env, BT_CLI, args, out);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool file_has(const char *path, const char *text)
{
    size_t n;
    char *s = bt__read_file(path, &n);
    bool has = s && strstr(s, text);
    if (!has)
        printf("# %s lacks '%s':\n%s\n", path, text, s ? s : "(unreadable)");
    free(s);
    return has;
}

/* `blocktune tune` while another process holds the store's write lock past the busy timeout:
 * it reports the tune, says what was not stored, and exits non-zero. */
static void test_cli_exits_non_zero_when_a_lock_is_held(void **state)
{
    char db[128], out[128], json[128];
    path_in(db, sizeof db, "locked.db");
    path_in(out, sizeof out, "locked.out");
    path_in(json, sizeof json, "locked.json");
    bt__store *s;
    bt_diag d;
    assert_int_equal(bt__store_open(db, &s, &d), BT_OK);
    bt__store_close(s);
    sqlite3 *h;
    assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
    assert_int_equal(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    char args[512];
    snprintf(args, sizeof args,
             "tune vector_add --n 4096 --store '%s' --json '%s' --budget 2 --threads 2 "
             "--finalists 1 --warmup-ms 1 --rep-ms 2 --no-boundary", db, json);
    int rc = cli("BLOCKTUNE_STORE_TIMEOUT_MS=50", args, out);
    sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(h);
    assert_int_equal(rc, 1);
    assert_true(file_has(out, "Winner"));
    assert_true(file_has(out, "NOT STORED:"));
    assert_true(file_has(out, "database is locked"));
    assert_true(file_has(out, "blocktune tune: NOT STORED"));
    assert_true(file_has(json, "\"store\": {"));
}

static void test_unknown_mode_is_an_error(void **state)
{
    bt_diag d;
    bt_kernel *kn = NULL;
    setenv("BLOCKTUNE_MODE", "bogus", 1);
    assert_int_equal(bt_kernel_create(F.dev, F.k, &kn, &d), BT_INVALID_ARG);
    assert_null(kn);
    assert_non_null(strstr(d.msg, "BLOCKTUNE_MODE=bogus is not a mode"));
    assert_non_null(strstr(d.msg, "tune, wisdom-only and retune"));
    setenv("BLOCKTUNE_MODE", "wisdom-only", 1);
    assert_int_equal(bt_kernel_create(F.dev, F.k, &kn, &d), BT_OK);
    assert_int_equal(kn->opts.mode, BT_MODE_WISDOM_ONLY);
    bt_kernel_destroy(kn);
    unsetenv("BLOCKTUNE_MODE");
    char out[128];
    path_in(out, sizeof out, "mode.out");
    assert_int_not_equal(cli("BLOCKTUNE_MODE=bogus", "tune vector_add --n 4096 --store none", out),
                         0);
    assert_true(file_has(out, "BLOCKTUNE_MODE=bogus is not a mode"));
}

static int setup(void **state)
{
    bt_diag d;
    if (bt_device_open(NULL, &F.dev, &d) != BT_OK)
        BT_TEST_SKIP_ALL("no compute device to tune on: %s", d.msg);
    if (bt_kdesc_builtin("vector_add", &F.k, &d) || bt_problem_create(F.k, &F.p) ||
        bt_problem_set(F.p, "n", 4096, &d))
        return -1;
    snprintf(dir, sizeof dir, "/tmp/bt-store-tune-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    bt_problem_destroy(F.p);
    bt_kdesc_destroy(F.k);
    bt_device_destroy(F.dev);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_mode_is_an_error),
        cmocka_unit_test(test_untrusted_rows_are_measured_again),
        cmocka_unit_test(test_failed_writes_reach_the_result),
        cmocka_unit_test(test_damaged_store_is_refused),
        cmocka_unit_test(test_cli_exits_non_zero_when_a_lock_is_held),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
