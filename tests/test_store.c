/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_store.c — the results store and wisdom: round trips, upsert, resume, a SIGKILL loop, two
 * concurrent writers, wisdom export/forget/import, hostile wisdom files, the lookup order and the
 * nearest-size fallback, the vLLM export; rows that cannot be trusted are never read back as
 * measurements (and `verify` lists them); writes that fail (a full disk, a lock held past the
 * busy timeout) say so; opening for reading never creates a file; a store of schema version 1 is
 * migrated. (What a tune does with all of these: test_store_tune.c.)
 */
#include "test_util.h"

#include "core/util.h"
#include "store/store.h"

#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[512];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/bt_test_store.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void path_in(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

static bt__store *open_fresh(const char *name)
{
    char p[600];
    path_in(p, sizeof p, name);
    unlink(p);
    bt__store *s = NULL;
    bt_diag d;
    bt_status st = bt__store_open(p, &s, &d);
    if (st != BT_OK)
        fprintf(stderr, "open: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    return s;
}

/* A measurement with every field set; `i` varies the config (BLOCK_M) and the numbers. */
static void fill(bt__measurement *m, const char *device, const char *key, const char *keyjson,
                 int i, char *cfgbuf, size_t n)
{
    bt__measurement_init(m);
    snprintf(cfgbuf, n, "{\"BLOCK_M\":%d,\"BLOCK_N\":64,\"num_warps\":4}", 16 + i);
    m->kernel = "gemm";
    m->source_hash = "0123456789abcdef";
    m->options = "-O3";
    m->device_name = (char *)device;
    m->device_uuid = "";
    m->device_arch = "sm_90";
    m->driver = "560.35";
    m->compiler = "NVRTC 12.6";
    m->blocktune_version = "0.1.0";
    m->key = (char *)key;
    m->key_json = (char *)keyjson;
    m->config_json = cfgbuf;
    m->status = "ok";
    m->error = NULL;
    m->median_ms = 1.0 + i;
    m->p20_ms = 0.9 + i;
    m->p80_ms = 1.1 + i;
    m->min_ms = 0.8 + i;
    m->mad_ms = 0.01;
    m->reps = 100 + i;
    m->max_rel_err = 1e-3;
    m->regs = 128;
    m->local_bytes = 0;
    m->smem_bytes = 49152;
    m->compile_ms = 250.5;
    m->timestamp = 1700000000.5 + i;
}

/* Sets the median and the spread around it (p20 <= median <= p80, as a real measurement). */
static void set_median(bt__measurement *m, double med)
{
    m->median_ms = med;
    m->p20_ms = 0.9 * med;
    m->p80_ms = 1.1 * med;
    m->min_ms = 0.8 * med;
}

#define KEY1 "M=4096,N=4096,K=4096,dtype=fp16"
#define KEY1J "{\"M\":4096,\"N\":4096,\"K\":4096,\"dtype\":\"fp16\"}"

static void test_put_get_round_trip(void **state)
{
    (void)state;
    bt__store *s = open_fresh("rt.db");
    bt__measurement m, g;
    char cfg[128];
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 3, cfg, sizeof cfg);
    m.status = "wrong_result";
    m.error = "max rel err 0.5 > 0.01";
    bt_diag d;
    assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
    bt__store_ident id = {"gemm", "0123456789abcdef", "-O3", "NVIDIA H200", KEY1};
    assert_int_equal(bt__store_get(s, &id, cfg, &g, &d), BT_OK);
    assert_string_equal(g.kernel, "gemm");
    assert_string_equal(g.source_hash, m.source_hash);
    assert_string_equal(g.options, "-O3");
    assert_string_equal(g.device_name, "NVIDIA H200");
    assert_string_equal(g.device_arch, "sm_90");
    assert_string_equal(g.driver, "560.35");
    assert_string_equal(g.compiler, "NVRTC 12.6");
    assert_string_equal(g.blocktune_version, "0.1.0");
    assert_string_equal(g.key, KEY1);
    assert_string_equal(g.key_json, KEY1J);
    assert_string_equal(g.config_json, cfg);
    assert_string_equal(g.status, "wrong_result");
    assert_string_equal(g.error, "max rel err 0.5 > 0.01");
    assert_true(g.median_ms == m.median_ms && g.p20_ms == m.p20_ms && g.p80_ms == m.p80_ms);
    assert_true(g.min_ms == m.min_ms && g.mad_ms == m.mad_ms && g.max_rel_err == m.max_rel_err);
    assert_int_equal(g.reps, 103);
    assert_int_equal(g.regs, 128);
    assert_int_equal(g.local_bytes, 0);
    assert_int_equal(g.smem_bytes, 49152);
    assert_true(g.compile_ms == 250.5 && g.timestamp == m.timestamp);
    bt__measurement_clear(&g);
    /* Another options string, source hash or key is another row. */
    id.options = "";
    assert_int_equal(bt__store_get(s, &id, cfg, &g, &d), BT_NOT_FOUND);
    id.options = "-O3";
    id.key = "M=1,N=1,K=1,dtype=fp16";
    assert_int_equal(bt__store_get(s, &id, cfg, &g, &d), BT_NOT_FOUND);
    bt__store_close(s);
}

static void test_upsert_replaces(void **state)
{
    (void)state;
    bt__store *s = open_fresh("upsert.db");
    bt__measurement m, g;
    char cfg[128];
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 1, cfg, sizeof cfg);
    bt_diag d;
    assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
    set_median(&m, 0.25);
    m.status = "ok";
    assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
    int64_t nm, nw;
    assert_int_equal(bt__store_counts(s, &nm, &nw, &d), BT_OK);
    assert_int_equal(nm, 1);
    bt__store_ident id = {"gemm", NULL, "-O3", "NVIDIA H200", KEY1};
    assert_int_equal(bt__store_get(s, &id, cfg, &g, &d), BT_OK);
    assert_true(g.median_ms == 0.25);
    bt__measurement_clear(&g);
    /* A winner upsert keeps the measurement row (no cascade delete) and replaces the winner. */
    assert_int_equal(bt__store_put_winner(s, &m, 0.1, 0, NULL, &d), BT_OK);
    char cfg2[128];
    bt__measurement m2;
    fill(&m2, "NVIDIA H200", KEY1, KEY1J, 2, cfg2, sizeof cfg2);
    assert_int_equal(bt__store_put_winner(s, &m2, 0.2, 1, NULL, &d), BT_OK);
    assert_int_equal(bt__store_counts(s, &nm, &nw, &d), BT_OK);
    assert_int_equal(nm, 2);
    assert_int_equal(nw, 1);
    bt__winner w;
    assert_int_equal(bt__store_get_winner(s, &id, &w, &d), BT_OK);
    assert_string_equal(w.m.config_json, cfg2);
    assert_true(w.margin == 0.2 && w.tie == 1);
    assert_string_equal(w.origin, "tuned");
    bt__winner_clear(&w);
    char *rep = NULL;
    assert_int_equal(bt__store_verify(s, &rep, &d), BT_OK);
    free(rep);
    bt__store_close(s);
}

static void test_resume_after_reopen(void **state)
{
    (void)state;
    bt__store *s = open_fresh("resume.db");
    bt_diag d;
    for (int i = 0; i < 50; i++) {
        bt__measurement m;
        char cfg[128];
        fill(&m, "NVIDIA H200", KEY1, KEY1J, i, cfg, sizeof cfg);
        assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
    }
    bt__store_close(s);
    char p[600];
    path_in(p, sizeof p, "resume.db");
    assert_int_equal(bt__store_open(p, &s, &d), BT_OK);
    bt__store_ident id = {"gemm", "0123456789abcdef", "-O3", "NVIDIA H200", KEY1};
    for (int i = 0; i < 60; i++) {
        char cfg[128];
        bt__measurement m, g;
        fill(&m, "NVIDIA H200", KEY1, KEY1J, i, cfg, sizeof cfg);
        assert_int_equal(bt__store_get(s, &id, cfg, &g, &d), i < 50 ? BT_OK : BT_NOT_FOUND);
        bt__measurement_clear(&g);
    }
    bt__store_close(s);
}

static void test_schema_version_and_newer_refused(void **state)
{
    (void)state;
    bt__store *s = open_fresh("schema.db");
    sqlite3_stmt *st;
    sqlite3_prepare_v2(bt__store_db(s), "PRAGMA user_version", -1, &st, NULL);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), BT__STORE_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_prepare_v2(bt__store_db(s), "PRAGMA journal_mode", -1, &st, NULL);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
    sqlite3_finalize(st);
    sqlite3_exec(bt__store_db(s), "PRAGMA user_version=99", NULL, NULL, NULL);
    bt__store_close(s);
    char p[600];
    path_in(p, sizeof p, "schema.db");
    bt_diag d;
    bt__diag_clear(&d);
    assert_int_equal(bt__store_open(p, &s, &d), BT_UNSUPPORTED);
    assert_null(s);
    assert_non_null(strstr(d.msg, "99"));
    /* Not a database at all. */
    path_in(p, sizeof p, "junk.db");
    FILE *f = fopen(p, "w");
    fputs("this is not sqlite, just text long enough to fill a header..........................."
          "...................................................................................",
          f);
    fclose(f);
    assert_int_not_equal(bt__store_open(p, &s, &d), BT_OK);
    assert_non_null(strstr(d.msg, "junk.db"));
}

/* ---------------------------------------------------------------------------------------------
 * Rows that cannot be trusted, writes that fail, reading without creating
 * ------------------------------------------------------------------------------------------- */
static int count_cb(const bt__measurement *m, void *user)
{
    (void)m;
    (*(int *)user)++;
    return 0;
}

static int count_winners(const bt__winner *w, void *user)
{
    (void)w;
    (*(int *)user)++;
    return 0;
}

/* Rows written around blocktune (by hand, another program, a damaged file): each is skipped with
 * a warning wherever it is read, a winner among them is no winner, and verify names each. */
static void test_untrusted_rows_are_not_read_back(void **state)
{
    (void)state;
    bt__store *s = open_fresh("untrusted.db");
    bt_diag d;
    static const struct {
        const char *set, *why;
    } bad[] = {
        {"median_ms = -5", "median_ms -5 is negative"},
        {"median_ms = 0", "median_ms 0 is not a positive time"},
        {"median_ms = 'fast'", "median_ms holds text 'fast'"},
        {"median_ms = 1e999", "median_ms inf is not finite"},
        {"p20_ms = 50", "p20_ms 50 is above the median"},
        {"p80_ms = 0.001", "p80_ms 0.001 is below the median"},
        {"status = 'great'", "status 'great' is not one blocktune writes"},
        {"config_json = 'BLOCK_M=64'", "is not a JSON object of integers"},
        {"config_json = '{\"BLOCK_M\":\"64\"}'", "is not a JSON object of integers"},
        {"reps = 0", "reps 0 is not a count of runs"},
        {"timestamp = 'yesterday'", "timestamp holds text"},
    };
    int n = (int)BT__ARRAY_LEN(bad);
    for (int i = 0; i <= n; i++) { /* row n stays good */
        bt__measurement m;
        char cfg[128];
        fill(&m, "NVIDIA H200", KEY1, KEY1J, i, cfg, sizeof cfg);
        set_median(&m, 1.0 + i);
        assert_int_equal(i == 0 ? bt__store_put_winner(s, &m, 0.1, 0, NULL, &d)
                                : bt__store_put(s, &m, &d),
                         BT_OK);
    }
    for (int i = 0; i < n; i++) {
        char q[256];
        snprintf(q, sizeof q, "UPDATE measurements SET %s WHERE config_json LIKE '%%:%d,%%'",
                 bad[i].set, 16 + i);
        assert_int_equal(sqlite3_exec(bt__store_db(s), q, NULL, NULL, NULL), SQLITE_OK);
        assert_int_equal(sqlite3_changes(bt__store_db(s)), 1);
    }
    /* one by one: none reads back */
    bt__store_ident id = {"gemm", NULL, "-O3", "NVIDIA H200", KEY1};
    for (int i = 0; i <= n; i++) {
        bt__measurement m, g;
        char cfg[128];
        fill(&m, "NVIDIA H200", KEY1, KEY1J, i, cfg, sizeof cfg);
        if (i == 7 || i == 8)
            continue; /* their config text changed: no longer found by it */
        bt_status st = bt__store_get(s, &id, cfg, &g, &d);
        assert_int_equal(st, i == n ? BT_OK : BT_NOT_FOUND);
        bt__measurement_clear(&g);
    }
    /* the winner (its measurement at -5 ms) is not a winner */
    bt__winner w;
    assert_int_equal(bt__store_get_winner(s, &id, &w, &d), BT_NOT_FOUND);
    int nw = 0, nrows = 0, ntop = 0;
    assert_int_equal(bt__store_winners(s, NULL, NULL, count_winners, &nw, &d), BT_OK);
    assert_int_equal(nw, 0);
    assert_int_equal(bt__store_rows(s, "gemm", NULL, KEY1, count_cb, &nrows, &d), BT_OK);
    assert_int_equal(nrows, 1);
    assert_int_equal(bt__store_top(s, &id, 0, count_cb, &ntop, &d), BT_OK);
    assert_int_equal(ntop, 1);
    assert_true(bt__store_bad_rows(s) >= n);
    /* verify lists every one with its reason */
    char *rep = NULL;
    assert_int_equal(bt__store_verify(s, &rep, &d), BT_CORRUPT);
    assert_non_null(rep);
    for (int i = 0; i < n; i++)
        if (!strstr(rep, bad[i].why))
            fail_msg("verify does not say '%s':\n%s", bad[i].why, rep);
    assert_non_null(strstr(rep, "winner gemm"));
    free(rep);
    /* a good measurement over a bad row makes it whole again */
    bt__measurement m;
    char cfg[128];
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 0, cfg, sizeof cfg);
    set_median(&m, 0.5);
    assert_int_equal(bt__store_put_winner(s, &m, 0.1, 0, NULL, &d), BT_OK);
    assert_int_equal(bt__store_get_winner(s, &id, &w, &d), BT_OK);
    assert_true(w.m.median_ms == 0.5);
    bt__winner_clear(&w);
    bt__store_close(s);
}

/* A full disk, imitated by SQLite's max_page_count: the write fails, says why and where, and
 * leaves the store as it was. */
static void test_full_disk_write_fails_loudly(void **state)
{
    (void)state;
    bt__store *s = open_fresh("full.db");
    bt_diag d;
    bt__measurement m;
    char cfg[128];
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 0, cfg, sizeof cfg);
    assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
    sqlite3_stmt *st;
    sqlite3_prepare_v2(bt__store_db(s), "PRAGMA page_count", -1, &st, NULL);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int pages = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    char q[64];
    snprintf(q, sizeof q, "PRAGMA max_page_count = %d", pages);
    assert_int_equal(sqlite3_exec(bt__store_db(s), q, NULL, NULL, NULL), SQLITE_OK);
    static char log[64 * 1024]; /* a compile log: needs pages the "disk" does not have */
    memset(log, 'x', sizeof log - 1);
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 1, cfg, sizeof cfg);
    m.status = "compile_failed";
    m.error = log;
    bt__diag_clear(&d);
    assert_int_equal(bt__store_put(s, &m, &d), BT_STORE);
    assert_non_null(strstr(d.msg, "full"));
    assert_non_null(strstr(d.msg, "full.db"));
    bt__diag_clear(&d);
    assert_int_equal(bt__store_put_winner(s, &m, 0, 0, NULL, &d), BT_STORE);
    int64_t nm, nw;
    assert_int_equal(bt__store_counts(s, &nm, &nw, &d), BT_OK);
    assert_int_equal(nm, 1);
    assert_int_equal(nw, 0);
    bt__store_close(s);
}

/* Another connection holds the write lock past the busy timeout (shortened here through
 * BLOCKTUNE_STORE_TIMEOUT_MS): the write fails with "database is locked" after that time, not
 * before, and succeeds once the lock is gone. */
static void test_lock_held_past_the_timeout(void **state)
{
    (void)state;
    char p[600];
    path_in(p, sizeof p, "locked.db");
    bt__store_close(open_fresh("locked.db"));
    setenv("BLOCKTUNE_STORE_TIMEOUT_MS", "200", 1);
    bt__store *s;
    bt_diag d;
    assert_int_equal(bt__store_open(p, &s, &d), BT_OK);
    unsetenv("BLOCKTUNE_STORE_TIMEOUT_MS");
    sqlite3 *other;
    assert_int_equal(sqlite3_open(p, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    bt__measurement m;
    char cfg[128];
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 0, cfg, sizeof cfg);
    double t0 = bt_test_now();
    assert_int_equal(bt__store_put(s, &m, &d), BT_STORE);
    double waited = bt_test_now() - t0;
    printf("# the write gave up after %.3f s: %s\n", waited, d.msg);
    assert_true(waited >= 0.15);
    assert_non_null(strstr(d.msg, "locked"));
    assert_int_equal(bt__store_put_winner(s, &m, 0, 0, NULL, &d), BT_STORE);
    sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(other);
    assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
    bt__store_close(s);
}

/* Opening for reading: no file, no directory is created; a file that is no store is named;
 * a store of schema version 1 (before mean_ms, extra_json, spaces) is migrated and reads. */
static void test_open_for_reading(void **state)
{
    (void)state;
    char p[600];
    path_in(p, sizeof p, "no/such/dir/typo.db");
    bt__store *s = NULL;
    bt_diag d;
    assert_int_equal(bt__store_open_read(p, &s, &d), BT_NOT_FOUND);
    assert_null(s);
    assert_non_null(strstr(d.msg, "no store at"));
    assert_non_null(strstr(d.msg, "typo.db"));
    path_in(p, sizeof p, "no");
    struct stat sb;
    assert_int_not_equal(stat(p, &sb), 0);
    path_in(p, sizeof p, "typo.db");
    assert_int_equal(bt__store_open_read(p, &s, &d), BT_NOT_FOUND);
    assert_int_not_equal(stat(p, &sb), 0);
    /* the default path too: an empty cache dir stays empty */
    char dir[600], env[700];
    path_in(dir, sizeof dir, "emptycache");
    snprintf(env, sizeof env, "%s/sub", dir);
    setenv("BLOCKTUNE_CACHE_DIR", env, 1);
    assert_int_equal(bt__store_open_read(NULL, &s, &d), BT_NOT_FOUND);
    assert_int_not_equal(stat(env, &sb), 0);
    unsetenv("BLOCKTUNE_CACHE_DIR");
    /* an SQLite file that is not a store */
    path_in(p, sizeof p, "other.db");
    sqlite3 *h;
    assert_int_equal(sqlite3_open(p, &h), SQLITE_OK);
    sqlite3_exec(h, "CREATE TABLE t(x)", NULL, NULL, NULL);
    sqlite3_close(h);
    assert_int_equal(bt__store_open_read(p, &s, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "not a blocktune store"));
    /* schema version 1, as an older blocktune left it, with a row */
    path_in(p, sizeof p, "v1.db");
    s = open_fresh("v1.db");
    bt__measurement m;
    char cfg[128];
    fill(&m, "NVIDIA H200", KEY1, KEY1J, 0, cfg, sizeof cfg);
    assert_int_equal(bt__store_put_winner(s, &m, 0.1, 0, NULL, &d), BT_OK);
    assert_int_equal(sqlite3_exec(bt__store_db(s),
                                  "DROP TABLE spaces; ALTER TABLE measurements DROP COLUMN "
                                  "mean_ms; ALTER TABLE measurements DROP COLUMN extra_json; "
                                  "DELETE FROM schema_migrations WHERE version = 2; "
                                  "PRAGMA user_version = 1",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    bt__store_close(s);
    assert_int_equal(bt__store_open_read(p, &s, &d), BT_OK);
    bt__store_ident id = {"gemm", NULL, "-O3", "NVIDIA H200", KEY1};
    bt__winner w;
    assert_int_equal(bt__store_get_winner(s, &id, &w, &d), BT_OK);
    assert_true(w.m.mean_ms == -1 && w.m.median_ms == m.median_ms);
    bt__winner_clear(&w);
    bt__store_close(s);
}

/* ---------------------------------------------------------------------------------------------
 * Processes
 * ------------------------------------------------------------------------------------------- */
/* The child writes rows i = start, start+1, ... forever, reporting each i on fd after the put
 * returned. */
static void writer_child(const char *path, int fd, int start, int count, const char *device)
{
    bt__store *s = NULL;
    bt_diag d;
    if (bt__store_open(path, &s, &d) != BT_OK) {
        fprintf(stderr, "child open: %s\n", d.msg);
        _exit(3);
    }
    for (int i = start; count < 0 || i < start + count; i++) {
        bt__measurement m;
        char cfg[128];
        fill(&m, device, KEY1, KEY1J, i, cfg, sizeof cfg);
        if (bt__store_put(s, &m, &d) != BT_OK) {
            fprintf(stderr, "child put: %s\n", d.msg);
            _exit(4);
        }
        if (fd >= 0 && write(fd, &i, sizeof i) != (ssize_t)sizeof i)
            _exit(5);
    }
    bt__store_close(s);
    _exit(0);
}

/* Rows [from, to) of writer_child's sequence are in the store. */
static void expect_rows(bt__store *s, int from, int to)
{
    bt__store_ident id = {"gemm", "0123456789abcdef", "-O3", "NVIDIA H200", KEY1};
    bt_diag d;
    for (int j = from; j < to; j++) {
        char cfg[128];
        bt__measurement m, g;
        fill(&m, "NVIDIA H200", KEY1, KEY1J, j, cfg, sizeof cfg);
        if (bt__store_get(s, &id, cfg, &g, &d) != BT_OK)
            fail_msg("row %d of %d reported committed is missing: %s", j, to, d.msg);
        bt__measurement_clear(&g);
    }
}

static void test_sigkill_loop_keeps_every_commit(void **state)
{
    (void)state;
    char p[600];
    path_in(p, sizeof p, "kill.db");
    unlink(p);
    int next = 0;     /* the next row to write: resume after the last reported one */
    int verified = 0; /* rows [0, verified) were read back after a kill */
    int reported_total = 0;
    srand(12345);
    const int iterations = 60;
    for (int it = 0; it < iterations; it++) {
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            writer_child(p, pfd[1], next, -1, "NVIDIA H200");
        }
        close(pfd[1]);
        struct timespec ts = {0, (long)(1 + rand() % 30) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        int i;
        ssize_t r;
        while ((r = read(pfd[0], &i, sizeof i)) == (ssize_t)sizeof i) {
            assert_int_equal(i, next);
            next = i + 1;
            reported_total++;
        }
        close(pfd[0]);
        /* After every kill: the file is sound and every reported row is there. */
        bt__store *s = NULL;
        bt_diag d;
        assert_int_equal(bt__store_open(p, &s, &d), BT_OK);
        sqlite3_stmt *st;
        sqlite3_prepare_v2(bt__store_db(s), "PRAGMA integrity_check", -1, &st, NULL);
        assert_int_equal(sqlite3_step(st), SQLITE_ROW);
        assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
        sqlite3_finalize(st);
        /* the rows reported since the last kill are read back one by one (the earlier ones
         * were, after their own kill; all of them are read again at the end) */
        expect_rows(s, verified, next);
        verified = next;
        /* A row the child wrote but was killed before reporting may be there too: the resume
         * skips it; the next child starts after it. */
        int64_t nm;
        assert_int_equal(bt__store_counts(s, &nm, NULL, &d), BT_OK);
        assert_true(nm >= next && nm <= next + 1);
        next = (int)nm;
        bt__store_close(s);
    }
    bt__store *s = NULL;
    bt_diag d;
    assert_int_equal(bt__store_open(p, &s, &d), BT_OK);
    expect_rows(s, 0, next);
    bt__store_close(s);
    printf("%d kills, %d rows reported committed, all present\n", iterations, reported_total);
    assert_true(reported_total > 0);
}

static void test_two_concurrent_writers(void **state)
{
    (void)state;
    char p[600];
    path_in(p, sizeof p, "conc.db");
    unlink(p);
    pid_t a = fork();
    if (a == 0)
        writer_child(p, -1, 0, 200, "GPU-A");
    pid_t b = fork();
    if (b == 0)
        writer_child(p, -1, 0, 200, "GPU-B");
    int sa, sb;
    waitpid(a, &sa, 0);
    waitpid(b, &sb, 0);
    assert_true(WIFEXITED(sa) && WEXITSTATUS(sa) == 0);
    assert_true(WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
    bt__store *s = NULL;
    bt_diag d;
    assert_int_equal(bt__store_open(p, &s, &d), BT_OK);
    int64_t nm;
    assert_int_equal(bt__store_counts(s, &nm, NULL, &d), BT_OK);
    assert_int_equal(nm, 400);
    bt__store_close(s);
}

/* ---------------------------------------------------------------------------------------------
 * Wisdom
 * ------------------------------------------------------------------------------------------- */
static const char *keys[][2] = {
    {"M=256,N=4096,K=4096,dtype=fp16", "{\"M\":256,\"N\":4096,\"K\":4096,\"dtype\":\"fp16\"}"},
    {"M=1024,N=4096,K=4096,dtype=fp16", "{\"M\":1024,\"N\":4096,\"K\":4096,\"dtype\":\"fp16\"}"},
    {"M=4096,N=4096,K=4096,dtype=fp16", "{\"M\":4096,\"N\":4096,\"K\":4096,\"dtype\":\"fp16\"}"},
};

/* Three keys, 4 configs each, the winner the config (key index + 1). */
static void populate(bt__store *s, const char *device)
{
    bt_diag d;
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 4; i++) {
            bt__measurement m;
            char cfg[128];
            fill(&m, device, keys[k][0], keys[k][1], i, cfg, sizeof cfg);
            set_median(&m, i == k + 1 ? 0.5 : 2.0 + i);
            if (i == k + 1)
                assert_int_equal(bt__store_put_winner(s, &m, 0.3, 0, NULL, &d), BT_OK);
            else
                assert_int_equal(bt__store_put(s, &m, &d), BT_OK);
        }
    }
}

typedef struct winlist {
    char rows[16][400];
    int n;
} winlist;

static int collect_cb(const bt__winner *w, void *user)
{
    winlist *l = user;
    if (l->n < 16)
        snprintf(l->rows[l->n++], 400, "%s|%s|%s|%s|%.6f", w->m.kernel, w->m.device_name,
                 w->m.key, w->m.config_json, w->m.median_ms);
    return 0;
}

static void test_wisdom_round_trip(void **state)
{
    (void)state;
    bt__store *s = open_fresh("wis.db");
    populate(s, "NVIDIA H200");
    bt_diag d;
    winlist before = {0}, after = {0};
    assert_int_equal(bt__store_winners(s, "gemm", NULL, collect_cb, &before, &d), BT_OK);
    assert_int_equal(before.n, 3);
    char wf[600];
    path_in(wf, sizeof wf, "h200.json");
    bt__wisdom_export_opts o = {.top_k = 3};
    assert_int_equal(bt__wisdom_export_file(s, &o, wf, &d), BT_OK);
    int64_t nm, nw;
    assert_int_equal(bt__store_forget(s, "gemm", 0, &nm, &nw, &d), BT_OK);
    assert_int_equal(nm, 12);
    assert_int_equal(nw, 3);
    assert_int_equal(bt__store_counts(s, &nm, &nw, &d), BT_OK);
    assert_int_equal(nm + nw, 0);
    int n = 0;
    assert_int_equal(bt__wisdom_import_file(s, wf, &n, &d), BT_OK);
    assert_int_equal(n, 9); /* 3 winners + 2 runners-up each */
    assert_int_equal(bt__store_winners(s, "gemm", NULL, collect_cb, &after, &d), BT_OK);
    assert_int_equal(after.n, before.n);
    for (int i = 0; i < before.n; i++)
        assert_string_equal(before.rows[i], after.rows[i]);
    char *rep = NULL;
    assert_int_equal(bt__store_verify(s, &rep, &d), BT_OK);
    free(rep);
    /* Directory export: one file per device. */
    populate(s, "NVIDIA A100");
    char dir[600];
    path_in(dir, sizeof dir, "wdir");
    int nf = 0;
    assert_int_equal(bt__wisdom_export_dir(s, NULL, dir, &nf, &d), BT_OK);
    assert_int_equal(nf, 2);
    char f2[700];
    snprintf(f2, sizeof f2, "%s/NVIDIA_A100.json", dir);
    assert_int_equal(access(f2, R_OK), 0);
    /* A single-file export of a two-device store says so. */
    char *txt = NULL;
    assert_int_equal(bt__wisdom_export_string(s, NULL, &txt, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "NVIDIA A100"));
    assert_int_equal(bt__store_forget(s, "all", 0, &nm, &nw, &d), BT_OK);
    assert_int_equal(bt__wisdom_import_dir(s, dir, &n, &d), BT_OK);
    assert_int_equal(n, 6);
    bt__store_close(s);
}

static void expect_import_fails(bt__store *s, const char *text, const char *name, int line,
                                const char *msg_part)
{
    int64_t nm0, nw0, nm1, nw1;
    bt_diag d;
    assert_int_equal(bt__store_counts(s, &nm0, &nw0, &d), BT_OK);
    bt__diag_clear(&d);
    int n = -1;
    bt_status st = bt__wisdom_import_string(s, text, name, &n, &d);
    char buf[2048];
    printf("  expected failure: %s\n", bt_diag_format(&d, buf, sizeof buf));
    assert_int_not_equal(st, BT_OK);
    assert_int_equal(n, 0);
    assert_string_equal(d.file, name);
    if (line > 0)
        assert_int_equal(d.line, line);
    assert_true(d.line > 0 && d.column > 0);
    if (msg_part)
        assert_non_null(strstr(d.msg, msg_part));
    assert_int_equal(bt__store_counts(s, &nm1, &nw1, &d), BT_OK);
    assert_int_equal(nm0, nm1);
    assert_int_equal(nw0, nw1);
}

static void test_wisdom_hostile_changes_nothing(void **state)
{
    (void)state;
    bt__store *s = open_fresh("hostile.db");
    populate(s, "NVIDIA H200");
    bt_diag d;
    char *good = NULL;
    bt__wisdom_export_opts o = {.top_k = 2};
    assert_int_equal(bt__wisdom_export_string(s, &o, &good, &d), BT_OK);
    bt__store_forget(s, "all", 0, &(int64_t){0}, &(int64_t){0}, &d);
    /* Truncated at many points: nothing imported, the position is named. */
    size_t len = strlen(good);
    for (size_t cut = 1; cut < len; cut += len / 23 + 1) {
        char *t = bt__strdup(good);
        t[cut] = '\0';
        expect_import_fails(s, t, "trunc.json", 0, NULL);
        free(t);
    }
    /* Garbled: a byte changed to break the syntax on line 3. */
    char *g = bt__strdup(good);
    char *l3 = strchr(strchr(g, '\n') + 1, '\n') + 1;
    *strchr(l3, ':') = '#';
    expect_import_fails(s, g, "garbled.json", 3, "JSON");
    free(g);
    /* Valid JSON, wrong types: the value's own line and column. */
    const char *wrong =
        "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, \"device\": \"X\",\n"
        " \"entries\": [\n"
        "  {\"kernel\": \"gemm\", \"source_hash\": \"ab\", \"key\": {\"M\": 1},\n"
        "   \"config\": {\"BLOCK_M\": 64}, \"median_ms\": 1.0},\n"
        "  {\"kernel\": \"gemm\", \"source_hash\": \"ab\", \"key\": {\"M\": 2},\n"
        "   \"config\": {\"BLOCK_M\": \"sixty-four\"}, \"median_ms\": 1.0}\n"
        " ]}\n";
    expect_import_fails(s, wrong, "types.json", 6, "integer");
    /* The first entry was valid, but nothing of the file went in (checked by the counts). */
    const char *version = "{\"format\": \"blocktune-wisdom\",\n \"format_version\": 7,\n"
                          " \"device\": \"X\", \"entries\": []}";
    expect_import_fails(s, version, "v7.json", 2, "version 7");
    /* A huge string. */
    bt__sbuf b = {0};
    bt__sbuf_printf(&b, "{\"format\": \"blocktune-wisdom\", \"format_version\": 1,\n"
                        "\"device\": \"");
    for (int i = 0; i < 10000; i++)
        bt__sbuf_printf(&b, "x");
    bt__sbuf_printf(&b, "\", \"entries\": []}");
    expect_import_fails(s, b.s, "huge.json", 2, "limit");
    bt__sbuf_free(&b);
    /* Deep nesting. */
    bt__sbuf_printf(&b, "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, \"device\": "
                        "\"X\", \"entries\": [{\"kernel\": \"gemm\", \"source_hash\": \"\", "
                        "\"key\": ");
    for (int i = 0; i < 5000; i++)
        bt__sbuf_printf(&b, "[");
    for (int i = 0; i < 5000; i++)
        bt__sbuf_printf(&b, "]");
    bt__sbuf_printf(&b, "}]}");
    expect_import_fails(s, b.s, "deep.json", 1, NULL);
    bt__sbuf_free(&b);
    /* Not a wisdom file; a negative time; a SQL-looking name is just a (rejected) name. */
    expect_import_fails(s, "{\n \"format\": \"kernel-tuner\"}", "other.json", 2, "format");
    const char *neg = "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, \"device\": \"X\","
                      "\n\"entries\": [{\"kernel\": \"gemm'; DROP TABLE winners; --\","
                      " \"source_hash\": \"\", \"key\": {\"M\": 1}, \"config\": {\"A\": 1},"
                      " \"median_ms\": 1}]}";
    expect_import_fails(s, neg, "sql.json", 2, "kernel");
    /* Numbers that a read would not trust are refused at import, with their place. */
    const char *spread = "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, "
                         "\"device\": \"X\",\n\"entries\": [{\"kernel\": \"gemm\", "
                         "\"source_hash\": \"\", \"key\": {\"M\": 1}, \"config\": {\"A\": 1}, "
                         "\"median_ms\": 1, \"p20_ms\": 2}]}";
    expect_import_fails(s, spread, "spread.json", 2, "p20_ms 2 is above the median 1");
    /* And the good text still imports. */
    int n = 0;
    assert_int_equal(bt__wisdom_import_string(s, good, "good.json", &n, &d), BT_OK);
    assert_int_equal(n, 6);
    free(good);
    bt__store_close(s);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static const char *wisdom_doc(const char *device, const char *arch, const char *m, int bm)
{
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, \"device\": \"%s\",\n"
             " \"arch\": \"%s\", \"entries\": [\n"
             "  {\"kernel\": \"gemm\", \"source_hash\": \"0123456789abcdef\", \"options\": \"-O3\","
             " \"key\": {\"M\": %s, \"N\": 4096, \"K\": 4096, \"dtype\": \"fp16\"},\n"
             "   \"config\": {\"BLOCK_M\": %d, \"BLOCK_N\": 64, \"num_warps\": 4},"
             " \"median_ms\": 0.5, \"rank\": 0}]}\n",
             device, arch, m, bm);
    return buf;
}

static bt__keyvals kv_of(const char *text)
{
    bt__keyvals kv;
    assert_int_equal(bt__keyvals_parse(text, &kv), BT_OK);
    return kv;
}

/* A lookup's validity test that refuses configs with BLOCK_M 17. */
static bool refuse_block_m_17(void *user, const char *config_json)
{
    (void)user;
    return strstr(config_json, "\"BLOCK_M\":17") == NULL;
}

static void test_lookup_order(void **state)
{
    (void)state;
    char udir[600], sdir[600], f[700];
    path_in(udir, sizeof udir, "user");
    path_in(sdir, sizeof sdir, "shipped");
    mkdir(udir, 0755);
    mkdir(sdir, 0755);
    snprintf(f, sizeof f, "%s/H200.json", sdir);
    write_text(f, wisdom_doc("NVIDIA H200", "sm_90", "8192", 128));
    snprintf(f, sizeof f, "%s/H100.json", sdir);
    write_text(f, wisdom_doc("NVIDIA H100", "sm_90", "333", 99));
    snprintf(f, sizeof f, "%s/H200.json", udir);
    write_text(f, wisdom_doc("NVIDIA H200", "sm_90", "2048", 64));
    setenv("BLOCKTUNE_WISDOM_DIR", sdir, 1);
    setenv("BLOCKTUNE_USER_WISDOM_DIR", udir, 1);
    bt__wisdom *user = NULL, *shipped = NULL;
    bt_diag d;
    assert_int_equal(bt__wisdom_load_user(&user, NULL, 0, &d), BT_OK);
    assert_int_equal(bt__wisdom_load_shipped(&shipped, NULL, 0, &d), BT_OK);
    assert_int_equal(bt__wisdom_count(user), 1);
    assert_int_equal(bt__wisdom_count(shipped), 2);
    /* loaded for some kernels: the documents that name one of them, the others not parsed */
    {
        const char *gemm[] = {"softmax", "gemm"}, *other[] = {"gem", "softmax"};
        bt__wisdom *w = NULL;
        assert_int_equal(bt__wisdom_load_shipped(&w, gemm, 2, &d), BT_OK);
        assert_int_equal(bt__wisdom_count(w), 2);
        bt__wisdom_free(w);
        assert_int_equal(bt__wisdom_load_shipped(&w, other, 2, &d), BT_OK);
        assert_int_equal(bt__wisdom_count(w), 0); /* "gem" is not "gemm" */
        bt__wisdom_free(w);
    }
    bt__store *s = open_fresh("lookup.db");
    populate(s, "NVIDIA H200"); /* M=256 -> BLOCK_M 17, 1024 -> 18, 4096 -> 19 */
    bt__keyvals kv;
    bt__lookup_query q = {"gemm", "0123456789abcdef", "-O3", "NVIDIA H200", "", "sm_90", &kv,
                          NULL, NULL};
    bt__lookup_result r;
    struct {
        const char *key;
        bt__wisdom_source src;
        const char *cfg_part;
    } cases[] = {
        {"M=1024,N=4096,K=4096,dtype=fp16", BT__SRC_STORE, "\"BLOCK_M\":18"},
        {"M=2048,N=4096,K=4096,dtype=fp16", BT__SRC_USER, "\"BLOCK_M\":64"},
        {"M=8192,N=4096,K=4096,dtype=fp16", BT__SRC_SHIPPED, "\"BLOCK_M\":128"},
        /* the nearest M by absolute difference, the same N and K (vLLM's rule): */
        /* 300: the store's 256 (44 away) beats 1024 (724) and the user's 2048 (1748). */
        {"M=300,N=4096,K=4096,dtype=fp16", BT__SRC_NEAREST, "\"BLOCK_M\":17"},
        /* 16384: the shipped 8192 (8192 away) beats the store's 4096 (12288). */
        {"M=16384,N=4096,K=4096,dtype=fp16", BT__SRC_NEAREST, "\"BLOCK_M\":128"},
        /* 3000: the user's 2048 (952 away) beats the store's 4096 (1096), though 4096 is
         * nearer in log2 (0.45 against 0.55) */
        {"M=3000,N=4096,K=4096,dtype=fp16", BT__SRC_NEAREST, "\"BLOCK_M\":64"},
        /* 3072: 2048 and 4096 are 1024 away each: the smaller M */
        {"M=3072,N=4096,K=4096,dtype=fp16", BT__SRC_NEAREST, "\"BLOCK_M\":64"},
        /* no key has the same N and K: the log2 sum over M, N and K, where 256 is nearest */
        {"M=300,N=2000,K=5000,dtype=fp16", BT__SRC_NEAREST, "\"BLOCK_M\":17"},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(cases); i++) {
        kv = kv_of(cases[i].key);
        assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
        printf("  %s -> %s %s\n", cases[i].key, bt__wisdom_source_name(r.source), r.config_json);
        assert_int_equal(r.source, cases[i].src);
        assert_non_null(strstr(r.config_json, cases[i].cfg_part));
        free(r.config_json);
    }
    /* a nearest config that is not valid for the key (the caller's test) is passed over for the
     * next nearest: 300's nearest is 256 (BLOCK_M 17); refused, 1024 (724 away, BLOCK_M 18) */
    q.fits = refuse_block_m_17;
    kv = kv_of("M=300,N=4096,K=4096,dtype=fp16");
    assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
    assert_int_equal(r.source, BT__SRC_NEAREST);
    assert_non_null(strstr(r.config_json, "\"BLOCK_M\":18"));
    free(r.config_json);
    kv = kv_of("M=256,N=4096,K=4096,dtype=fp16"); /* an exact key is never put to the test */
    assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
    assert_int_equal(r.source, BT__SRC_STORE);
    assert_non_null(strstr(r.config_json, "\"BLOCK_M\":17"));
    free(r.config_json);
    q.fits = NULL;
    /* the choice is logged: which key, how far, and by which rule */
    char logf[600];
    path_in(logf, sizeof logf, "decisions.log");
    unlink(logf);
    setenv("BLOCKTUNE_LOG", logf, 1);
    kv = kv_of("M=3000,N=4096,K=4096,dtype=fp16");
    assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
    free(r.config_json);
    unsetenv("BLOCKTUNE_LOG");
    char *logt = bt__read_file(logf, NULL);
    assert_non_null(logt);
    assert_non_null(strstr(logt, "tuned for [M=2048,N=4096,K=4096,dtype=fp16] on NVIDIA H200: "
                                 "the nearest M, 952 away, with the same other keys"));
    free(logt);
    /* Another dtype on this device: nothing comparable; another sm_90 device has it? no -> the
     * same arch only offers fp16 too, so default. */
    kv = kv_of("M=1024,N=4096,K=4096,dtype=bf16");
    assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
    assert_int_equal(r.source, BT__SRC_DEFAULT);
    assert_null(r.config_json);
    /* An unknown sm_90 device: the same arch (exact key on the H100 wins over nearest). */
    q.device_name = "NVIDIA GH200";
    kv = kv_of("M=333,N=4096,K=4096,dtype=fp16");
    assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
    assert_int_equal(r.source, BT__SRC_SAME_ARCH);
    assert_non_null(strstr(r.config_json, "\"BLOCK_M\":99"));
    free(r.config_json);
    /* A stale source hash is not used. */
    q.device_name = "NVIDIA H200";
    q.source_hash = "ffff";
    kv = kv_of("M=8192,N=4096,K=4096,dtype=fp16");
    assert_int_equal(bt__wisdom_lookup(s, user, shipped, &q, &r, &d), BT_OK);
    assert_int_equal(r.source, BT__SRC_DEFAULT);
    /* Shipped only, with no store and no user wisdom: a decision without measuring. */
    q.source_hash = "0123456789abcdef";
    assert_int_equal(bt__wisdom_lookup(NULL, NULL, shipped, &q, &r, &d), BT_OK);
    assert_int_equal(r.source, BT__SRC_SHIPPED);
    free(r.config_json);
    /* A malformed user wisdom file is an error naming it. */
    snprintf(f, sizeof f, "%s/bad.json", udir);
    write_text(f, "{\"format\": \"blocktune-wisdom\",\n  \"format_version\": 1, \"device\": 5}");
    bt__wisdom *bad = NULL;
    assert_int_equal(bt__wisdom_load_user(&bad, NULL, 0, &d), BT_PARSE);
    assert_null(bad);
    assert_non_null(strstr(d.file, "bad.json"));
    assert_int_equal(d.line, 2);
    unsetenv("BLOCKTUNE_WISDOM_DIR");
    unsetenv("BLOCKTUNE_USER_WISDOM_DIR");
    bt__wisdom_free(user);
    bt__wisdom_free(shipped);
    bt__store_close(s);
}

/* Found by tests/fuzz/fuzz_wisdom: a document with no entries made add_text copy zero bytes from
 * and to NULL (undefined behaviour, caught by UBSan). It adds nothing; later documents add on. */
static void test_wisdom_without_entries_adds_nothing(void **state)
{
    (void)state;
    const char *head = "{\"format\": \"blocktune-wisdom\", \"format_version\": 1, "
                       "\"device\": \"NVIDIA H200\", \"arch\": \"sm_90\", \"entries\": [";
    char doc[1024];
    bt__wisdom *w = bt__wisdom_new();
    assert_non_null(w);
    bt_diag d;
    snprintf(doc, sizeof doc, "%s]}", head);
    assert_int_equal(bt__wisdom_add_string(w, doc, "empty.json", &d), BT_OK);
    assert_int_equal(bt__wisdom_count(w), 0);
    snprintf(doc, sizeof doc,
             "%s{\"kernel\": \"gemm\", \"source_hash\": \"0123456789abcdef\", "
             "\"key\": {\"M\": 64, \"dtype\": \"fp16\"}, \"config\": {\"BLOCK_M\": 64}, "
             "\"rank\": 0, \"median_ms\": 0.5}]}",
             head);
    assert_int_equal(bt__wisdom_add_string(w, doc, "one.json", &d), BT_OK);
    assert_int_equal(bt__wisdom_count(w), 1);
    bt__wisdom_free(w);
}

static void test_keys_and_distance(void **state)
{
    (void)state;
    bt__keyvals a = kv_of("M=4096,N=1024,dtype=fp16"), b = kv_of("M=1024,N=2048,dtype=fp16");
    /* two variables differ: tier 1, the log2 sum */
    bt__kdist t1 = bt__keyvals_distance(&a, &b);
    assert_int_equal(t1.tier, 1);
    assert_true(t1.d == 3.0);
    bt__kdist same = bt__keyvals_distance(&a, &a);
    assert_true(same.tier == 0 && same.d == 0.0);
    bt__keyvals c = kv_of("M=4096,N=1024,dtype=bf16");
    assert_int_equal(bt__keyvals_distance(&a, &c).tier, -1);
    bt__keyvals e = kv_of("M=4096,K=1024,dtype=fp16");
    assert_int_equal(bt__keyvals_distance(&a, &e).tier, -1);
    /* the same other keys: tier 0, |dM| (vLLM's rule); it beats any tier 1 key */
    bt__keyvals q = kv_of("M=3072,N=1024,dtype=fp16"), m2 = kv_of("M=2048,N=1024,dtype=fp16"),
                m4 = kv_of("M=4096,N=1024,dtype=fp16"), near2 = kv_of("M=3072,N=1025,dtype=fp16");
    bt__kdist d2 = bt__keyvals_distance(&q, &m2), d4 = bt__keyvals_distance(&q, &m4);
    assert_true(d2.tier == 0 && d2.d == 1024 && d2.var == 0 && d2.value == 2048);
    assert_true(d4.tier == 0 && d4.d == 1024);
    assert_true(bt__kdist_closer(&d2, &d4)); /* a tie goes to the smaller M */
    assert_false(bt__kdist_closer(&d4, &d2));
    bt__kdist dn = bt__keyvals_distance(&q, &near2); /* only N differs, by 1 */
    assert_true(dn.tier == 0 && dn.d == 1 && dn.var == 1);
    assert_true(bt__kdist_closer(&dn, &d2));
    assert_true(bt__kdist_closer(&d4, &t1) && !bt__kdist_closer(&t1, &d4));
    char buf[256];
    bt__keyvals_format(&a, buf, sizeof buf);
    assert_string_equal(buf, "M=4096,N=1024,dtype=fp16");
    char *j = bt__keyvals_json(&a);
    assert_string_equal(j, "{\"M\":4096,\"N\":1024,\"dtype\":\"fp16\"}");
    free(j);
    bt__keyvals x;
    assert_int_equal(bt__keyvals_parse("M=abc", &x), BT_PARSE);
    assert_int_equal(bt__keyvals_parse("=1", &x), BT_PARSE);
    assert_int_equal(bt__keyvals_parse("", &x), BT_PARSE);
    bt_tune_mode m;
    assert_int_equal(bt__tune_mode_parse("wisdom-only", &m, NULL), BT_OK);
    assert_int_equal(m, BT_MODE_WISDOM_ONLY);
    bt_diag d;
    assert_int_equal(bt__tune_mode_parse("fast", &m, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "retune"));
}

static void test_vllm_export(void **state)
{
    (void)state;
    bt__store *s = open_fresh("vllm.db");
    bt_diag d;
    int64_t ms[] = {4096, 16, 256};
    for (int i = 0; i < 3; i++) {
        char key[128], kj[160];
        snprintf(key, sizeof key, "M=%lld,N=14336,E=8,dtype=fp16", (long long)ms[i]);
        snprintf(kj, sizeof kj, "{\"M\":%lld,\"N\":14336,\"E\":8,\"dtype\":\"fp16\"}",
                 (long long)ms[i]);
        bt__measurement m;
        char cfg[200];
        fill(&m, "NVIDIA H200", key, kj, i, cfg, sizeof cfg);
        snprintf(cfg, sizeof cfg,
                 "{\"BLOCK_SIZE_M\":%d,\"BLOCK_SIZE_N\":128,\"BLOCK_SIZE_K\":64,\"num_warps\":8,"
                 "\"num_stages\":3,\"GROUP_SIZE_M\":8}", 32 << i);
        assert_int_equal(bt__store_put_winner(s, &m, 0.1, 0, NULL, &d), BT_OK);
    }
    char dir[600], p[700];
    path_in(dir, sizeof dir, "vllmdir");
    int n = 0;
    assert_int_equal(bt__wisdom_export_vllm_dir(s, "gemm", NULL, dir, &n, &d), BT_OK);
    assert_int_equal(n, 1);
    /* fp16 files carry no dtype in vLLM's names */
    snprintf(p, sizeof p, "%s/E=8,N=14336,device_name=NVIDIA_H200.json", dir);
    char *t = bt__read_file(p, NULL);
    assert_non_null(t);
    char *a = strstr(t, "\"16\""), *b = strstr(t, "\"256\""), *c = strstr(t, "\"4096\"");
    assert_true(a && b && c && a < b && b < c); /* sorted by M as numbers */
    assert_non_null(strstr(t, "\"BLOCK_SIZE_M\": 64"));
    assert_non_null(strstr(t, "\"GROUP_SIZE_M\": 8"));
    assert_non_null(strstr(t, "\"num_stages\": 3"));
    free(t);
    char name[300];
    assert_true(bt__vllm_file_name("NVIDIA H100 80GB HBM3", 64, 1280, "fp8_w8a8", 128, 128, name,
                                   sizeof name));
    assert_string_equal(name, "E=64,N=1280,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,"
                              "block_shape=[128,128].json");
    assert_false(bt__vllm_file_name("a/b", 1, 1, "", 0, 0, name, sizeof name));
    /* a second K for the same (E, N): two groups would share one file */
    bt__measurement m;
    char cfg[200];
    fill(&m, "NVIDIA H200", "M=1,N=14336,E=8,K=1,dtype=fp16",
         "{\"M\":1,\"N\":14336,\"E\":8,\"K\":1,\"dtype\":\"fp16\"}", 3, cfg, sizeof cfg);
    snprintf(cfg, sizeof cfg, "{\"BLOCK_SIZE_M\":16,\"BLOCK_SIZE_N\":16,\"BLOCK_SIZE_K\":16,"
                              "\"num_warps\":4,\"num_stages\":2}");
    assert_int_equal(bt__store_put_winner(s, &m, 0.1, 0, NULL, &d), BT_OK);
    assert_int_equal(bt__wisdom_export_vllm_dir(s, "gemm", NULL, dir, &n, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "share vLLM's file"));
    /* no winner keyed by E: nothing to write, and the message says what is needed */
    assert_int_equal(bt__wisdom_export_vllm_dir(s, "softmax", NULL, dir, &n, &d), BT_NOT_FOUND);
    assert_non_null(strstr(d.msg, "M, E and N"));
    bt__store_close(s);
}

static void test_default_path_uses_cache_dir(void **state)
{
    (void)state;
    char dir[600];
    path_in(dir, sizeof dir, "cache/nested/dir");
    setenv("BLOCKTUNE_CACHE_DIR", dir, 1);
    bt__store *s = NULL;
    bt_diag d;
    assert_int_equal(bt__store_open(NULL, &s, &d), BT_OK);
    char want[700];
    snprintf(want, sizeof want, "%s/blocktune.db", dir);
    assert_string_equal(bt__store_path(s), want);
    bt__store_close(s);
    assert_int_equal(access(want, R_OK), 0);
}

int main(void)
{
    make_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_round_trip),
        cmocka_unit_test(test_upsert_replaces),
        cmocka_unit_test(test_resume_after_reopen),
        cmocka_unit_test(test_schema_version_and_newer_refused),
        cmocka_unit_test(test_sigkill_loop_keeps_every_commit),
        cmocka_unit_test(test_two_concurrent_writers),
        cmocka_unit_test(test_wisdom_round_trip),
        cmocka_unit_test(test_wisdom_hostile_changes_nothing),
        cmocka_unit_test(test_lookup_order),
        cmocka_unit_test(test_wisdom_without_entries_adds_nothing),
        cmocka_unit_test(test_keys_and_distance),
        cmocka_unit_test(test_vllm_export),
        cmocka_unit_test(test_default_path_uses_cache_dir),
        cmocka_unit_test(test_untrusted_rows_are_not_read_back),
        cmocka_unit_test(test_full_disk_write_fails_loudly),
        cmocka_unit_test(test_lock_held_past_the_timeout),
        cmocka_unit_test(test_open_for_reading),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (rc == 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return rc;
}
