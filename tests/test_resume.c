/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_resume.c — the tuner killed with SIGKILL at random points, 50 times: the results store
 * always passes PRAGMA integrity_check, never loses a committed measurement (the count of stored
 * measurements never goes down), and a final run resumes: it re-measures none of what is stored.
 */
#include "test_util.h"

#include "engine/engine.h"
#include "store/store.h"

#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

/* The tune both the killed child and the resuming run do: 13 quick measurements into `store`. */
static bt__tune_opts resume_options(const char *store)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 1;
    o.rep_ms = 4;
    o.top_k = 1; /* no interleaved finals: a whole tune is 13 measurements, each committed */
    o.budget = 13;
    o.verify_boundary = 0;
    o.store = store;
    return o;
}

static char db[256], caldb[256];

static void child_tune(int n, const char *path)
{
    bt_diag d;
    bt_device *dev;
    bt_kdesc *k;
    if (bt_device_open(NULL, &dev, &d) || bt_kdesc_builtin("vector_add", &k, &d))
        _exit(3);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_problem_set(p, "n", n, &d);
    bt_kernel *kn;
    if (bt_kernel_create(dev, k, &kn, &d))
        _exit(3);
    bt__tune_opts o = resume_options(path);
    o.threads = 1;
    bt_result *r;
    bt__kernel_tune_opts(kn, p, &o, &r, &d);
    _exit(0);
}

static int64_t stored_ok(void)
{
    sqlite3 *h;
    int64_t n = -1;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &s, NULL) == SQLITE_OK) {
        if (sqlite3_step(s) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(s, 0), "ok"))
            n = -2;
        sqlite3_finalize(s);
    }
    if (n != -2 && sqlite3_prepare_v2(h, "SELECT count(*) FROM measurements WHERE status = 'ok'",
                                      -1, &s, NULL) == SQLITE_OK) {
        n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
        sqlite3_finalize(s);
    }
    sqlite3_close(h);
    return n;
}

/* Waits `seconds`, or less when child pid ends first (it is left unreaped: the kill that follows
 * still finds it); a tune that ends early leaves nothing to interrupt, so waiting on is wasted. */
static void sleep_or_exit(pid_t pid, double seconds)
{
    double end = bt_test_now() + seconds;
    siginfo_t info;
    for (;;) {
        memset(&info, 0, sizeof info);
        if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid)
            return;
        double left = end - bt_test_now();
        if (left <= 0)
            return;
        usleep((useconds_t)(fmin(left, 0.005) * 1e6));
    }
}

static void test_killed_tunes_resume_without_remeasuring(void **state)
{
    (void)state;
    /* calibrate: how long one whole tune takes here (another key and its own store, so no
     * measurement is shared), timed on the second run, once the first has filled the kernel
     * cache as it is for the killed tunes (a cold first run would spread the kills past the end) */
    double whole = 0;
    for (int run = 0; run < 2; run++) {
        double t0 = bt_test_now();
        pid_t cal = fork();
        assert_true(cal >= 0);
        if (cal == 0)
            child_tune(20001, run ? caldb : "none");
        int cst;
        waitpid(cal, &cst, 0);
        whole = bt_test_now() - t0;
    }
    printf("# a whole tune takes %.2f s here\n", whole);
    int64_t prev = 0;
    unsigned seed = 12345;
    int kills = 0;
    for (int it = 0; it < 50; it++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0)
            child_tune(20000, db);
        /* anywhere from the start to past the end: device start, compile, verify, measure */
        seed = seed * 1103515245u + 12345u;
        sleep_or_exit(pid, whole * (0.05 + 1.05 * (double)((seed >> 8) % 10000) / 10000.0));
        if (kill(pid, SIGKILL) == 0) /* an ended child is not reaped yet: it still counts */
            kills++;
        int status;
        waitpid(pid, &status, 0);
        int64_t now = stored_ok();
        if (now < 0)
            fail_msg("after kill %d the store fails its integrity check or cannot be read (%lld)", it,
                     (long long)now);
        if (now < prev)
            fail_msg("after kill %d the store lost measurements: %lld < %lld", it, (long long)now,
                     (long long)prev);
        prev = now;
    }
    printf("# %d kills, %lld measurements kept\n", kills, (long long)prev);
    assert_true(kills >= 45);
    /* the final run re-measures nothing that is stored */
    bt_diag d;
    bt_device *dev;
    bt_kdesc *k;
    assert_int_equal(bt_device_open(NULL, &dev, &d), BT_OK);
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_problem_set(p, "n", 20000, &d);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = resume_options(db);
    bt_result *r;
    assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
    printf("# final run: %d of %zu configs from the store\n", r->from_store, r->n);
    assert_true(r->from_store >= prev);
    assert_true(r->winner >= 0);
    bt_result_destroy(r);
    /* and a second full run measures nothing at all */
    assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
    size_t ok = 0;
    for (size_t i = 0; i < r->n; i++)
        ok += r->e[i].status == BT__CS_OK;
    assert_int_equal((size_t)r->from_store, r->n);
    (void)ok;
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

int main(void)
{
    /* The parent must not start a compute runtime before it forks (a runtime's worker threads do
     * not survive fork), so a child checks that there is a device. */
    pid_t probe = fork();
    if (probe == 0) {
        bt_diag d;
        bt_device *dev;
        if (bt_device_open(NULL, &dev, &d) != BT_OK) {
            printf("SKIPPED: no compute device to tune on: %s\n", d.msg);
            _exit(77);
        }
        _exit(0);
    }
    int pst = 0;
    waitpid(probe, &pst, 0);
    if (!WIFEXITED(pst) || WEXITSTATUS(pst) != 0)
        return 77;
    char dir[] = "/tmp/bt-resume-XXXXXX";
    if (!mkdtemp(dir))
        BT_TEST_SKIP_ALL("cannot make a temporary directory");
    snprintf(db, sizeof db, "%s/store.db", dir);
    snprintf(caldb, sizeof caldb, "%s/calibration.db", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_killed_tunes_resume_without_remeasuring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
