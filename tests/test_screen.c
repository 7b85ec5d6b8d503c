/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_screen.c — screening (select.c, bench.c): every config first measured at the short
 * screening budget, the finalists and the configs within the screening noise of the cut
 * re-measured at the full budgets interleaved. On the mock CUDA driver, whose virtual clock makes
 * every timing deterministic (tests/data/screen/vscreen.json says what it puts where): a screened
 * tune picks the full-budget tune's winner; a config within the screening noise of the cut is
 * promoted into the finals and one outside it is not; a finalist clearly slower than the leader
 * leaves the interleaved rounds early; the store keeps which medians are screening
 * ones, and a replay of the key reads them back and picks a full-budget runner-up.
 */
#include "engine/engine.h"

#include "backends/cuda/cuda.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static char g_tmp[256];
static size_t g_budget; /* the tunes' measurement budget (0: every config) */

/* tests/data/screen/<name>.json. */
static bt_kdesc *load_spec(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tests/data/screen/%s.json", BT_SOURCE_DIR, name);
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_file(path, &k, &d) != BT_OK)
        fail_msg("%s: %s:%d:%d: %s", path, d.file, d.line, d.column, d.msg);
    return k;
}

/* A tune of k at n = 40000 with options o. */
static bt_result *tune_opts(bt_device *dev, const bt_kdesc *k, const bt__tune_opts *o)
{
    bt_diag d;
    bt_kernel *kn = NULL;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, o);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", 40000, &d), BT_OK);
    bt_result *r = NULL;
    if (bt_kernel_tune(kn, p, NULL, &r, &d) != BT_OK)
        fail_msg("tune: %s", d.msg);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    return r;
}

/* vscreen (loaded into *k at the first call) at n = 40000 with top_k 1, graph mode (the mock's
 * flush sweeps 50 MB on the host; graph replays skip it), a full budget of 8 ms and the given
 * screening budget. */
static bt_result *tune(bt_device *dev, bt_kdesc **k, const char *store, double screen_ms)
{
    if (!*k)
        *k = load_spec("vscreen");
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.5;
    o.rep_ms = 8;
    o.screen_ms = screen_ms;
    o.graph = 1;
    o.top_k = 1;
    o.budget = g_budget;
    o.store = store;
    o.mode = BT_MODE_TUNE;
    return tune_opts(dev, *k, &o);
}

/* The options of the tests of the screening's cut, which has no graph mode: single launches,
 * each with the mock's host flush (~20 ms), so budgets of 300 ms (screening 20 ms) give each
 * config enough runs; top_k finalists; no store. */
static bt__tune_opts flushed_opts(int top_k)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.5;
    o.rep_ms = 300;
    o.screen_ms = 20;
    o.graph = 0;
    o.top_k = top_k;
    o.store = "none";
    o.mode = BT_MODE_TUNE;
    return o;
}

static int64_t block_of(const bt_result *r, int i) { return r->e[i].ev.cfg.v[0]; }

static const bt__entry *entry_of(const bt_result *r, int64_t block)
{
    for (size_t i = 0; i < r->n; i++)
        if (block_of(r, (int)i) == block)
            return &r->e[i];
    fail_msg("BLOCK %lld was not measured", (long long)block);
    return NULL;
}

static void test_screened_winner_and_promotion(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    bt_kdesc *k = NULL;
    /* every config at the full budget: no screening, one finalist, no promotion */
    bt_result *full = tune(dev, &k, "none", 0);
    assert_int_equal(full->n, 8);
    assert_true(full->winner >= 0);
    assert_int_equal(block_of(full, full->winner), 64);
    assert_int_equal(full->finalists, 1);
    assert_int_equal(full->promoted, 0);
    for (size_t i = 0; i < full->n; i++)
        assert_false(full->e[i].st.screened);
    int full_reps = entry_of(full, 1024)->st.n;
    /* screened at 1 ms: the same winner, decided at the full budget */
    bt_result *scr = tune(dev, &k, "none", 1);
    assert_int_equal(scr->n, 8);
    assert_int_equal(block_of(scr, scr->winner), 64);
    assert_false(scr->e[scr->winner].st.screened);
    assert_true(scr->e[scr->winner].finalist);
    /* within the 0.5 % screening floor of the cut (BLOCK 64), so promoted: 96 ... 512 (0.04 % to
     * 0.6 % slower); 1024 (1.3 %) is not, and keeps its screening median with fewer runs */
    assert_int_equal(scr->promoted, 6);
    assert_int_equal(scr->finalists, 7);
    assert_int_equal(scr->not_promoted, 0);
    for (int64_t b = 96; b <= 512; b += 32)
        if (b == 96 || b == 128 || b == 192 || b == 256 || b == 384 || b == 512) {
            const bt__entry *e = entry_of(scr, b);
            assert_true(e->finalist);
            assert_false(e->st.screened);
        }
    /* after the second interleaved round (the deterministic clock: no spread, the 0.5 % floor
     * of the noise band) a finalist beyond the band of the leader (BLOCK 512, 0.6 % slower)
     * leaves the rounds clearly slower, and those within it (96 ... 384) leave tied with it: the
     * rounds end there, every finalist with the runs of two rounds */
    printf("    left early: %d (tied %d), rounds run %d; runs: BLOCK 64 %d, 384 %d, 512 %d\n",
           scr->left_early, scr->left_tied, scr->rounds_run, entry_of(scr, 64)->st.n,
           entry_of(scr, 384)->st.n, entry_of(scr, 512)->st.n);
    assert_int_equal(scr->left_early, 6);
    assert_int_equal(scr->left_tied, 5);
    assert_int_equal(scr->rounds_run, 2);
    assert_true(entry_of(scr, 512)->left_rounds && !entry_of(scr, 512)->left_tied);
    for (int64_t b = 96; b <= 384; b += 32)
        if (b == 96 || b == 128 || b == 192 || b == 256 || b == 384)
            assert_true(entry_of(scr, b)->left_tied);
    assert_false(entry_of(scr, 64)->left_rounds);
    assert_true(entry_of(scr, 384)->st.n == entry_of(scr, 64)->st.n);
    /* the runner-up is a tied one, and the margin the one measured when it left: a tie */
    assert_true(scr->e[scr->runner_up].left_tied);
    assert_true(scr->tie);
    const bt__entry *slow = entry_of(scr, 1024);
    assert_false(slow->finalist);
    assert_true(slow->st.screened);
    assert_true(slow->st.n < full_reps);
    /* the screening median of the deterministic clock is the full one */
    assert_true(slow->st.median == entry_of(full, 1024)->st.median);
    /* the report says which median is a screening one */
    char *text = bt_test_report(scr);
    assert_non_null(strstr(text, " ok, screening\n"));
    assert_non_null(strstr(text, ", left the finals tied"));
    assert_non_null(strstr(text, "5 of them left the rounds early, tied with the leader"));
    assert_non_null(strstr(text, "1 of them left the rounds early, clearly slower"));
    assert_non_null(strstr(text, "6 of them because their screening median was within"));
    assert_non_null(strstr(text, "1 of them left the rounds early, clearly slower than the leader"));
    assert_non_null(strstr(text, "screening 1.0 ms, "));
    assert_int_equal(scr->screened, 8);
    assert_non_null(strstr(text, "8 configs were first screened (0.0625 ms warm-up, 1 ms of runs"));
    free(text);
    bt_result_destroy(full);
    bt_result_destroy(scr);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

/* A screening that ends after its estimate's runs: on vcut (not in graph mode, where the cut does
 * not apply), REP 8 and 16 take 1.83 and 3.5 times REP 4's time on the virtual clock, above
 * 1.25 x the fastest median before them, so each stops after BT__EST_RUNS runs; REP 5 (1.21 x)
 * is screened in full (how many runs that is depends on the host's speed: the mock's flush).
 * With three finalists (4, 5, 8) the other two are decisively slower than REP 4 after the first
 * interleaved round and leave; the leader runs a second round alone: two rounds of eight. */
static void test_screen_cut_and_decisive_round(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    bt_kdesc *k = load_spec("vcut");
    for (int top = 1; top <= 3; top += 2) {
        bt__tune_opts o = flushed_opts(top);
        bt_result *r = tune_opts(dev, k, &o);
        assert_int_equal(r->n, 4);
        assert_true(r->winner >= 0);
        assert_int_equal(r->e[r->winner].ev.cfg.v[0], 4);
        double best = 0; /* the fastest median before each, in the order they were measured */
        for (size_t i = 0; i < r->n; i++) {
            const bt__entry *e = &r->e[i];
            int64_t rep = e->ev.cfg.v[0];
            printf("    top %d: REP %lld: median %.4f ms over %d runs%s%s\n", top, (long long)rep,
                   e->st.median, e->st.n, e->st.cut ? ", cut" : "",
                   e->finalist ? ", finalist" : "");
            static const int64_t order[] = {4, 5, 8, 16}; /* the perf expression's ranking */
            assert_int_equal(rep, order[i]);
            if (!e->finalist) { /* a finalist's statistics are the finals' */
                assert_int_equal(e->st.cut, rep >= 8);
                assert_int_equal(e->st.cut, best > 0 && e->st.median > BT__SCREEN_CUT * best);
                if (rep >= 8) /* the estimate's runs are its statistics */
                    assert_int_equal(e->st.n, BT__EST_RUNS);
            }
            if (best == 0 || e->st.median < best)
                best = e->st.median;
        }
        assert_int_equal(r->screen_cut, 2);
        char *text = bt_test_report(r);
        assert_non_null(strstr(text, "2 of the screenings ended after their first 5 runs: slower "
                                     "than 1.25 x the fastest median measured before them"));
        if (top == 3) {
            assert_int_equal(r->finalists, 3);
            assert_int_equal(r->left_early, 2);
            assert_int_equal(r->rounds_run, 2); /* the leader's second round, alone */
            assert_non_null(strstr(text, "interleaved over 2 of 8 rounds"));
        }
        free(text);
        bt_result_destroy(r);
    }
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

/* The mock's warming step, armed by the progress callback once the search's round is done (the
 * finals come next): from the first launch of (BLOCK 128, REP 4)'s grid (1252 blocks) after one of
 * (128, 5)'s (1565), every launch lasts 6 us longer. */
typedef int (*step_fn)(unsigned, unsigned, unsigned long long);
static step_fn g_step;

static int arm_step(const bt_progress *pr, void *user)
{
    (void)pr, (void)user;
    assert_int_equal(g_step(1565, 1252, 6000), 0);
    return 0;
}

/* A GPU that warms during the finals: on vwarm all four configs are finalists (top_k 4: with
 * three, whether (256, 5) joins them by the screening noise depends on how many runs the
 * screening got, fewer under the sanitizers); after its first interleaved round each REP 5 config is
 * decisively slower than the leader and leaves, and from the finals' second round on every launch
 * runs 6 us slower (the mock's step), so the REP 4 configs' pooled medians end above a leaver's
 * early one; after the second the two REP 4 configs are decidedly tied and the slower of them
 * leaves too. A slower leaver must not win, nor be the runner-up: the winner is a REP 4 config
 * that stayed, tied with the other, ranked by their margins, not by medians. */
static void test_a_finalist_that_left_never_wins(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    void *lib = dlopen(getenv("BLOCKTUNE_CUDA_LIBRARY"), RTLD_NOW);
    assert_non_null(lib);
    g_step = (step_fn)(uintptr_t)dlsym(lib, "mock_cuda_step");
    assert_non_null(g_step);
    bt_kdesc *k = load_spec("vwarm");
    bt__tune_opts o = flushed_opts(4);
    o.progress_cb = arm_step;
    bt_result *r = tune_opts(dev, k, &o);
    g_step(0, 0, 0); /* off */
    printf("    winner %d, runner-up %d, finalists %d (promoted %d, challengers %d), rounds run %d, "
           "left %d, margin %.4f, tie %d\n", r->winner, r->runner_up, r->finalists, r->promoted,
           r->challengers, r->rounds_run, r->left_early, r->margin, r->tie);
    assert_int_equal(r->n, 4);
    assert_int_equal(r->finalists, 4);
    assert_int_equal(r->left_early, 3);
    assert_int_equal(r->left_tied, 1);
    const bt__entry *w = &r->e[r->winner];
    double fastest_leaver = 0;
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        printf("    BLOCK %lld REP %lld: median %.4f ms over %d runs%s%s\n",
               (long long)e->ev.cfg.v[0], (long long)e->ev.cfg.v[1], e->st.median, e->st.n,
               e->left_rounds ? ", left the rounds" : "", e->left_tied ? " tied" : "");
        if (e->ev.cfg.v[1] == 5)
            assert_true(e->left_rounds && !e->left_tied);
        else
            assert_int_equal(e->left_tied, e != w);
        if (e->left_rounds && !e->left_tied && (fastest_leaver == 0 || e->st.median < fastest_leaver))
            fastest_leaver = e->st.median;
    }
    /* the drift happened: a leaver's early median is below the winner's pooled one */
    assert_true(fastest_leaver > 0 && fastest_leaver < w->st.median);
    assert_int_equal(w->ev.cfg.v[1], 4);
    assert_false(w->left_rounds);
    assert_int_equal(r->e[r->runner_up].ev.cfg.v[1], 4); /* tied, 0.3 % apart: a tie */
    assert_true(r->tie);
    char *text = bt_test_report(r);
    /* the table's first row is a REP 4 config (the winner first, not a leaver's lower median) */
    assert_true(strstr(text, "    1 BLOCK=128 REP=4 ") || strstr(text, "    1 BLOCK=256 REP=4 "));
    assert_non_null(strstr(text, ", left the finals early"));
    free(text);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
    dlclose(lib);
}

/* A lone finalist (a budget of one measurement) is still measured at the full budgets: the
 * winner's median is never a screening one. */
static void test_lone_finalist_is_measured_in_full(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    bt_kdesc *k = NULL;
    g_budget = 1;
    bt_result *r = tune(dev, &k, "none", 1);
    g_budget = 0;
    assert_int_equal(r->n, 1);
    assert_int_equal(r->finalists, 1);
    const bt__entry *w = &r->e[r->winner];
    assert_false(w->st.screened);
    bt_result *full = tune(dev, &k, "none", 0);
    assert_int_equal(w->st.n, entry_of(full, block_of(r, r->winner))->st.n);
    bt_result_destroy(r);
    bt_result_destroy(full);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

/* A stored screened tune, tuned again: the replay reads back which rows are screening ones. */
static void test_store_keeps_the_budget(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    char store[300];
    snprintf(store, sizeof store, "%s/s.db", g_tmp);
    bt_kdesc *k = NULL;
    bt_result *a = tune(dev, &k, store, 1);
    assert_int_equal(a->store_failed, 0);
    bt_result *b = tune(dev, &k, store, 1);
    assert_int_equal(b->replayed, 8);
    assert_int_equal(block_of(b, b->winner), 64);
    for (size_t i = 0; i < b->n; i++) /* each row as the first tune left it */
        assert_int_equal(b->e[i].st.screened, entry_of(a, block_of(b, (int)i))->st.screened);
    assert_true(entry_of(b, 1024)->st.screened);
    assert_true(b->runner_up >= 0);
    assert_false(b->e[b->runner_up].st.screened);
    bt_result_destroy(a);
    bt_result_destroy(b);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

/* The configs whose binaries an earlier tune left in the kernel cache are found ready before a
 * search that weighs them cheaper (measure.c, build.c bt__build_ready: the same keys the builds
 * use): none in a fresh cache, then exactly the four the first tune compiled, none for a
 * strategy that does not weigh cost, and none with the cache off. */
static void test_ready_binaries_are_found(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    char dir[300];
    snprintf(dir, sizeof dir, "%s/ready", g_tmp);
    setenv("BLOCKTUNE_CACHE_DIR", dir, 1);
    bt_kdesc *k = load_spec("vscreen");
    bt__tune_opts o = flushed_opts(1);
    o.rep_ms = 2;
    o.screen_ms = 0;
    o.graph = 1;
    o.strategy = "forest"; /* the one that weighs cost: the others are not looked up for */
    o.budget = 4;
    bt_result *a = tune_opts(dev, k, &o);
    assert_int_equal(a->n, 4);
    assert_int_equal(a->ready, 0);
    bt_result *b = tune_opts(dev, k, &o); /* the same seed: the same four */
    assert_int_equal(b->ready, 4);
    int cached = 0;
    for (size_t i = 0; i < b->n; i++)
        cached += b->e[i].cached;
    assert_int_equal(cached, 4);
    o.strategy = "random"; /* a strategy that does not weigh cost: not looked up */
    bt_result *r = tune_opts(dev, k, &o);
    assert_int_equal(r->ready, 0);
    bt_result_destroy(r);
    o.strategy = "forest";
    setenv("BLOCKTUNE_NO_KERNEL_CACHE", "1", 1);
    bt_result *c = tune_opts(dev, k, &o);
    unsetenv("BLOCKTUNE_NO_KERNEL_CACHE");
    assert_int_equal(c->ready, 0);
    setenv("BLOCKTUNE_CACHE_DIR", g_tmp, 1);
    bt_result_destroy(a);
    bt_result_destroy(b);
    bt_result_destroy(c);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

int main(void)
{
    setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
    snprintf(g_tmp, sizeof g_tmp, "/tmp/bt_screen_XXXXXX");
    if (!mkdtemp(g_tmp))
        return 1;
    setenv("BLOCKTUNE_CACHE_DIR", g_tmp, 1);
    setenv("BLOCKTUNE_WISDOM_DIR", g_tmp, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_screened_winner_and_promotion),
        cmocka_unit_test(test_screen_cut_and_decisive_round),
        cmocka_unit_test(test_a_finalist_that_left_never_wins),
        cmocka_unit_test(test_store_keeps_the_budget),
        cmocka_unit_test(test_lone_finalist_is_measured_in_full),
        cmocka_unit_test(test_ready_binaries_are_found),
    };
    int failed = cmocka_run_group_tests_name("screen_mock_cuda", tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", g_tmp);
    return failed;
}
