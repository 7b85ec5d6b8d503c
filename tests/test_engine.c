/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_engine.c — the tuning engine end to end on the default OpenCL device (PoCL on the CPU in
 * CI): every built-in kernel tuned and verified at boundary sizes, planted wrong and uncompilable
 * configs caught, the search strategies driving the tune (budget, seed, time limit, failures
 * avoided), the interleaved final and the stability of the winner, dispatch without re-tuning,
 * and concurrent launches.
 */
#include "test_util.h"

#include "engine/engine.h"
#include "core/util.h"
#include "store/store.h"

#include <jansson.h>
#include <sys/stat.h>

#include <math.h>
#include <pthread.h>

static bt_device *dev;

static bt__tune_opts quick(void)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 2;
    o.rep_ms = 8;
    o.top_k = 1; /* no interleaved finals (test_winner_is_remeasured_interleaved_and_stable
                    tests them): the winner is the best first median */
    o.rounds = 3;
    o.budget = 4;
    o.store = "none"; /* hermetic: every test measures for itself */
    o.mode = BT_MODE_TUNE;
    return o;
}

static bt_result *tune_builtin(const char *name, const char *const *sizes, const char *dtype,
                               bt_kdesc **kout)
{
    bt_diag d;
    bt_kdesc *k;
    assert_int_equal(bt_kdesc_builtin(name, &k, &d), BT_OK);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    for (int i = 0; sizes[i]; i += 2)
        assert_int_equal(bt_problem_set(p, sizes[i], atoll(sizes[i + 1]), &d), BT_OK);
    if (dtype)
        assert_int_equal(bt_problem_set_dtype(p, dtype, &d), BT_OK);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    bt_result *r = NULL;
    bt_status st = bt__kernel_tune_opts(kn, p, &o, &r, &d);
    if (st)
        fail_msg("tune %s: %s", name, d.msg);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    *kout = k;
    return r;
}

static void check_all_ok_and_boundaries(const bt_result *r)
{
    assert_true(r->n >= 1);
    for (size_t i = 0; i < r->n; i++) {
        if (r->e[i].status != BT__CS_OK)
            fail_msg("config %zu: %s: %s", i, bt__cfg_status_name(r->e[i].status),
                     r->e[i].error ? r->e[i].error : "");
        assert_true(r->e[i].ver.ok);
        /* verified at every boundary size its constraints admit (a size they exclude is not
         * applicable: counted apart, and the report says so) */
        if (r->e[i].boundary_checked + r->e[i].boundary_na != r->k->nboundary ||
            (r->e[i].boundary_checked == 0 && r->k->nboundary > 0))
            fail_msg("config %zu: verified at %d of %d boundary sizes, %d not applicable", i,
                     r->e[i].boundary_checked, r->k->nboundary, r->e[i].boundary_na);
        assert_true(r->e[i].st.median > 0);
        assert_true(r->e[i].st.p20 <= r->e[i].st.median && r->e[i].st.median <= r->e[i].st.p80);
    }
    assert_true(r->winner >= 0);
}

static void test_vector_add_tunes_and_verifies(void **state)
{
    (void)state;
    const char *sizes[] = {"n", "100003", NULL};
    bt_kdesc *k;
    bt_result *r = tune_builtin("vector_add", sizes, NULL, &k);
    check_all_ok_and_boundaries(r);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

static void test_reduce_tunes_with_reset_to_zero(void **state)
{
    (void)state;
    const char *sizes[] = {"n", "77777", NULL};
    bt_kdesc *k;
    bt_result *r = tune_builtin("reduce", sizes, NULL, &k);
    /* the counter must be zeroed before every run, or every run after the first is wrong */
    check_all_ok_and_boundaries(r);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

static void test_softmax_fp16_tunes(void **state)
{
    (void)state;
    const char *sizes[] = {"rows", "37", "cols", "1500", NULL};
    bt_kdesc *k;
    bt_result *r = tune_builtin("softmax", sizes, "fp16", &k);
    check_all_ok_and_boundaries(r);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

static void test_layernorm_bf16_tunes(void **state)
{
    (void)state;
    const char *sizes[] = {"rows", "19", "cols", "2049", NULL};
    bt_kdesc *k;
    bt_result *r = tune_builtin("layernorm", sizes, "bf16", &k);
    check_all_ok_and_boundaries(r);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

static void test_gemm_tunes_at_odd_sizes(void **state)
{
    (void)state;
    const char *sizes[] = {"M", "129", "N", "63", "K", "100", NULL};
    bt_kdesc *k;
    bt_result *r = tune_builtin("gemm", sizes, NULL, &k);
    check_all_ok_and_boundaries(r);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

static bt_kdesc *planted(void)
{
    bt_kdesc *k;
    bt_diag d;
    if (bt_kdesc_load_file(BT_SOURCE_DIR "/tests/data/planted.json", &k, &d) != BT_OK)
        fail_msg("planted.json: %s", d.msg);
    return k;
}

static int64_t cfg_value(const bt_kdesc *k, const bt_config *c, const char *name)
{
    for (int i = 0; i < k->space.nparams; i++)
        if (!strcmp(k->space.params[i].name, name))
            return c->v[i];
    fail_msg("no parameter %s", name);
    return -1;
}

static void test_wrong_and_broken_configs_are_caught_and_never_win(void **state)
{
    (void)state;
    bt_kdesc *k = planted();
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_kernel *kn;
    bt_diag d;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    o.budget = 0; /* all 24 */
    bt_result *r;
    assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
    assert_int_equal(r->n, 24);
    int wrong = 0, broken = 0, ok = 0;
    for (size_t i = 0; i < r->n; i++) {
        int64_t mode = cfg_value(k, &r->e[i].ev.cfg, "MODE");
        if (mode == 0) {
            assert_int_equal(r->e[i].status, BT__CS_OK);
            ok++;
        } else if (mode == 1) {
            assert_int_equal(r->e[i].status, BT__CS_WRONG);
            assert_non_null(strstr(r->e[i].error, "outputs"));
            wrong++;
        } else {
            assert_int_equal(r->e[i].status, BT__CS_COMPILE);
            assert_non_null(r->e[i].log);
            assert_non_null(strstr(r->e[i].log, "this"));
            broken++;
        }
    }
    assert_int_equal(ok, 8);
    assert_int_equal(wrong, 8);
    assert_int_equal(broken, 8);
    assert_true(r->winner >= 0);
    assert_int_equal(cfg_value(k, &r->e[r->winner].ev.cfg, "MODE"), 0);
    assert_int_equal(cfg_value(k, &r->e[r->winner].ev.cfg, "WORK"), 1);
    /* the report names the failures with the compiler log */
    char *buf = bt_test_report(r);
    assert_non_null(strstr(buf, "wrong_result"));
    assert_non_null(strstr(buf, "compile_failed"));
    assert_non_null(strstr(buf, "| "));
    free(buf);
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

/* A config whose constraints exclude a boundary size is not run there (it would never be
 * dispatched for it): VEC=4 is right at n = 4096 and 1000 and verified there, not at 17 or 4099. */
static void test_boundary_sizes_outside_a_configs_constraints_are_skipped(void **state)
{
    (void)state;
    bt_kdesc *k;
    bt_diag d;
    if (bt_kdesc_load_file(BT_SOURCE_DIR "/tests/data/aligned.json", &k, &d) != BT_OK)
        fail_msg("aligned.json: %s", d.msg);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    o.budget = 0;
    bt_result *r;
    assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
    assert_int_equal(r->n, 4);
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        if (e->status != BT__CS_OK)
            fail_msg("config %zu: %s", i, e->error ? e->error : bt__cfg_status_name(e->status));
        bool vec = cfg_value(k, &e->ev.cfg, "VEC") == 4;
        assert_int_equal(e->boundary_checked, vec ? 1 : 3);
        assert_int_equal(e->boundary_na, vec ? 2 : 0);
    }
    bt_result_destroy(r);
    /* the same kernel at n = 4099: VEC=4 is not a candidate at all */
    assert_int_equal(bt_problem_set(p, "n", 4099, &d), BT_OK);
    assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
    assert_int_equal(r->n, 2);
    for (size_t i = 0; i < r->n; i++)
        assert_int_equal(cfg_value(k, &r->e[i].ev.cfg, "VEC"), 1);
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

/* A buffer whose dtype depends on the problem (tests/data/outtype.*): with HALF=1 the output is
 * fp16 (the kernel learns it from BT_TYPE_z_FP16), so it carries fp16 rounding; with HALF=0 it is
 * the problem's fp32 and exact. A kernel that wrote the wrong width would fail verification. */
static void test_output_dtype_follows_the_problem(void **state)
{
    (void)state;
    bt_kdesc *k;
    bt_diag d;
    if (bt_kdesc_load_file(BT_SOURCE_DIR "/tests/data/outtype.json", &k, &d) != BT_OK)
        fail_msg("outtype.json: %s", d.msg);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    for (int half = 0; half < 2; half++) {
        bt_problem *p;
        bt_problem_create(k, &p);
        assert_int_equal(bt_problem_set(p, "n", 5000, &d), BT_OK);
        assert_int_equal(bt_problem_set(p, "HALF", half, &d), BT_OK);
        assert_int_equal(bt__arg_dtype(k, &k->args[2], p), half ? BT__DT_FP16 : BT__DT_FP32);
        bt__tune_opts o = quick();
        o.budget = 0;
        bt_result *r;
        assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
        assert_true(r->winner >= 0);
        for (size_t i = 0; i < r->n; i++) {
            const bt__entry *e = &r->e[i];
            if (e->status != BT__CS_OK)
                fail_msg("HALF=%d: %s", half, e->error ? e->error : bt__cfg_status_name(e->status));
            if (half)
                assert_true(e->ver.max_rel_err > 1e-5 && e->ver.max_rel_err < 1e-3);
            else
                assert_true(e->ver.max_rel_err == 0);
        }
        bt_result_destroy(r);
        bt_problem_destroy(p);
    }
    assert_int_equal(bt_kernel_tune_count(kn), 2); /* HALF is in the key: two tunes */
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
}

/* gemm at small odd sizes (200 valid configs on PoCL) under a strategy, a budget and a seed. */
static bt_result *tune_gemm_search(bt_kdesc **kout, const char *strategy, int budget,
                                   uint64_t seed, double time_limit_s)
{
    bt_diag d;
    bt_kdesc *k;
    assert_int_equal(bt_kdesc_builtin("gemm", &k, &d), BT_OK);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "M", 67, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "N", 45, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "K", 33, &d), BT_OK);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    o.strategy = strategy;
    o.budget = budget;
    o.seed = seed;
    o.threads = 2;
    o.time_limit_s = time_limit_s;
    bt_result *r = NULL;
    if (bt__kernel_tune_opts(kn, p, &o, &r, &d) != BT_OK)
        fail_msg("tune gemm with %s: %s", strategy ? strategy : "(default)", d.msg);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    *kout = k;
    return r;
}

/* Every entry is a distinct config of the plan's valid set. */
static void check_proposals_valid_and_distinct(const bt_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        bool in_plan = false;
        for (size_t c = 0; c < r->plan->ncand && !in_plan; c++)
            in_plan = !memcmp(r->plan->cand[c].cfg.v, r->e[i].ev.cfg.v, sizeof r->e[i].ev.cfg.v);
        if (!in_plan)
            fail_msg("entry %zu is not a valid config of the plan", i);
        for (size_t j = 0; j < i; j++)
            if (!memcmp(r->e[j].ev.cfg.v, r->e[i].ev.cfg.v, sizeof r->e[i].ev.cfg.v))
                fail_msg("entries %zu and %zu are the same config", j, i);
    }
}

static void test_strategy_random_honours_budget_and_seed(void **state)
{
    (void)state;
    bt_kdesc *k;
    bt_result *a = tune_gemm_search(&k, "random", 6, 7, 0);
    assert_true(a->plan->ncand > 6);
    assert_int_equal(a->n, 6);
    assert_int_equal(a->not_measured, a->plan->ncand - 6);
    assert_string_equal(a->strategy, "random");
    assert_string_equal(a->stop, "measurement budget");
    assert_int_equal(a->search_rounds, 3); /* rounds of 2 (threads) */
    check_proposals_valid_and_distinct(a);
    assert_true(a->winner >= 0);
    /* the same seed proposes the same configs in the same order */
    bt_kdesc *k2;
    bt_result *b = tune_gemm_search(&k2, "random", 6, 7, 0);
    assert_int_equal(b->n, a->n);
    for (size_t i = 0; i < a->n; i++)
        assert_memory_equal(a->e[i].ev.cfg.v, b->e[i].ev.cfg.v, sizeof a->e[i].ev.cfg.v);
    /* another seed, another sample */
    bt_kdesc *k3;
    bt_result *c = tune_gemm_search(&k3, "random", 6, 8, 0);
    bool differs = false;
    for (size_t i = 0; i < a->n; i++)
        differs |= memcmp(a->e[i].ev.cfg.v, c->e[i].ev.cfg.v, sizeof a->e[i].ev.cfg.v) != 0;
    assert_true(differs);
    bt_result_destroy(a);
    bt_result_destroy(b);
    bt_result_destroy(c);
    bt_kdesc_destroy(k);
    bt_kdesc_destroy(k2);
    bt_kdesc_destroy(k3);
}

static void test_every_strategy_tunes_end_to_end(void **state)
{
    (void)state;
    const char *names[] = {"model", "coordinate", "anneal", "forest", "exhaustive"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        bt_kdesc *k;
        bt_result *r = tune_gemm_search(&k, names[i], 5, 1, 0);
        assert_string_equal(r->strategy, names[i]);
        assert_true(r->n >= 1 && r->n <= 5);
        check_proposals_valid_and_distinct(r);
        assert_true(r->winner >= 0);
        assert_int_equal(r->e[r->winner].status, BT__CS_OK);
        if (!strcmp(names[i], "model")) /* the analytic model is the prior: its best first */
            assert_int_equal(r->e[0].model_rank, 1);
        bt_result_destroy(r);
        bt_kdesc_destroy(k);
    }
    /* the default for 200 valid configs is forest; with the default budget of 100 */
    bt_kdesc *k;
    bt_result *r = tune_gemm_search(&k, NULL, 3, 1, 0);
    assert_string_equal(r->strategy, "forest");
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

static void test_time_limit_stops_the_search(void **state)
{
    (void)state;
    bt_kdesc *k;
    bt_result *r = tune_gemm_search(&k, "forest", 0, 1, 1e-6);
    assert_string_equal(r->stop, "time limit");
    assert_int_equal(r->search_rounds, 1); /* the round in flight completes, no other starts */
    assert_int_equal(r->n, 2);
    assert_int_equal(r->budget, 0);
    bt_result_destroy(r);
    bt_kdesc_destroy(k);
}

/* Tunes the planted spec at its default size with options o; *kout is the spec (free it). */
static bt_status tune_planted(const bt__tune_opts *o, bt_kdesc **kout, bt_result **r,
                              bt_diag *d)
{
    bt_kdesc *k = planted();
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, d), BT_OK);
    *r = NULL;
    bt_status st = bt__kernel_tune_opts(kn, p, o, r, d);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    *kout = k;
    return st;
}

static void test_planted_faults_never_win_under_a_search(void **state)
{
    (void)state;
    const char *names[] = {"random", "anneal", "forest", "coordinate"};
    for (size_t s = 0; s < sizeof names / sizeof *names; s++) {
        bt__tune_opts o = quick();
        o.strategy = names[s];
        o.budget = 12;
        o.threads = 3;
        bt_kdesc *k;
        bt_result *r;
        bt_diag d;
        assert_int_equal(tune_planted(&o, &k, &r, &d), BT_OK);
        assert_true(r->n >= 1 && r->n <= 12);
        check_proposals_valid_and_distinct(r);
        int failed = 0;
        for (size_t i = 0; i < r->n; i++) {
            int64_t mode = cfg_value(k, &r->e[i].ev.cfg, "MODE");
            assert_int_equal(r->e[i].status,
                             mode == 0 ? BT__CS_OK : mode == 1 ? BT__CS_WRONG : BT__CS_COMPILE);
            failed += mode != 0;
        }
        if (r->winner >= 0)
            assert_int_equal(cfg_value(k, &r->e[r->winner].ev.cfg, "MODE"), 0);
        else
            assert_int_equal(failed, (int)r->n);
        bt_result_destroy(r);
        bt_kdesc_destroy(k);
    }
}

static void test_unknown_strategy_is_an_error(void **state)
{
    (void)state;
    bt__tune_opts o = quick();
    o.strategy = "genetic";
    bt_kdesc *k;
    bt_result *r;
    bt_diag d;
    assert_int_equal(tune_planted(&o, &k, &r, &d), BT_INVALID_ARG);
    assert_null(r);
    assert_non_null(strstr(d.msg, "unknown strategy 'genetic'"));
    assert_non_null(strstr(d.msg, "forest"));
    bt_kdesc_destroy(k);
}

static void test_winner_is_remeasured_interleaved_and_stable(void **state)
{
    (void)state;
    bt_kdesc *k = planted();
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_diag d;
    bt_problem_set(p, "n", 400000, &d);
    bt_config winners[2];
    bool tie[2];
    for (int run = 0; run < 2; run++) {
        bt_kernel *kn;
        assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
        bt__tune_opts o = quick();
        o.budget = 0;
        o.top_k = 3;
        o.rounds = 2;
        bt_result *r;
        assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
        assert_int_equal(r->finalists, 3 + r->promoted + r->challengers);
        assert_true(r->challengers >= 0 && r->challengers <= 8);
        assert_int_equal(r->rounds, 2);
        /* no config not re-measured has a first median below the winner's (its interleaved
         * one, or its first when that is lower): challengers meet it otherwise */
        const bt__entry *w = &r->e[r->winner];
        for (size_t i = 0; r->challengers < 8 && i < r->n; i++)
            if (r->e[i].status == BT__CS_OK && !r->e[i].finalist)
                assert_true(r->e[i].st.median >= fmin(w->st.median, w->first_median));
        /* the finalists' statistics pool the interleaved rounds: more samples than one bench
         * (which takes at least 5) */
        assert_true(r->e[r->winner].st.n >= 2 * 5);
        assert_true(r->runner_up >= 0);
        assert_true(r->noise > 0);
        winners[run] = r->e[r->winner].ev.cfg;
        tie[run] = r->tie;
        /* WORK=64 is far slower than WORK=1: never a winner */
        assert_int_equal(cfg_value(k, &winners[run], "WORK"), 1);
        bt_result_destroy(r);
        bt_kernel_destroy(kn);
    }
    bool same = !memcmp(winners[0].v, winners[1].v, sizeof(int64_t) * (size_t)k->space.nparams);
    if (!same && !(tie[0] || tie[1]))
        fail_msg("two tunes picked different winners without reporting a tie within noise");
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

typedef struct launch_job {
    bt_kernel *kn;
    bt_problem *p;
    bt_buffer **bufs;
    int iters;
    int failures;
} launch_job;

static void *launch_loop(void *arg)
{
    launch_job *j = arg;
    for (int i = 0; i < j->iters; i++) {
        bt_diag d;
        if (bt_kernel_launch(j->kn, j->p, j->bufs, 3, &d) != BT_OK)
            j->failures++;
    }
    return NULL;
}

static void test_launch_tunes_once_per_key_and_is_thread_safe(void **state)
{
    (void)state;
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    bt__kernel_set_opts(kn, &o);
    bt_problem *p;
    bt_problem_create(k, &p);
    const int n = 50000;
    bt_problem_set(p, "n", n, &d);
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *z = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)i * 0.5f - 7;
        y[i] = (float)(i % 13) - 3.25f;
    }
    bt_buffer *bufs[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, sizeof(float) * n, &bufs[i], &d), BT_OK);
    bt_buffer_write(bufs[0], 0, x, sizeof(float) * n, &d);
    bt_buffer_write(bufs[1], 0, y, sizeof(float) * n, &d);
    assert_int_equal(bt_kernel_launch(kn, p, bufs, 3, &d), BT_OK);
    assert_int_equal(bt_kernel_tune_count(kn), 1);
    assert_int_equal(bt_kernel_launch(kn, p, bufs, 3, &d), BT_OK);
    assert_int_equal(bt_kernel_tune_count(kn), 1); /* the second launch found the key */
    assert_int_equal(bt_device_sync(dev, &d), BT_OK);
    assert_int_equal(bt_buffer_read(bufs[2], 0, z, sizeof(float) * n, &d), BT_OK);
    for (int i = 0; i < n; i++)
        if (z[i] != x[i] + y[i])
            fail_msg("z[%d] = %g, want %g", i, z[i], x[i] + y[i]);
    /* the caller's inputs survived the tune */
    float x0;
    bt_buffer_read(bufs[0], 0, &x0, sizeof x0, &d);
    assert_true(x0 == x[0]);
    /* four threads launch the cached key at once */
    pthread_t th[4];
    launch_job jobs[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (launch_job){kn, p, bufs, 200, 0};
        pthread_create(&th[t], NULL, launch_loop, &jobs[t]);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].failures, 0);
    }
    assert_int_equal(bt_kernel_tune_count(kn), 1);
    /* a new key tunes again */
    bt_problem_set(p, "n", n - 1, &d);
    assert_int_equal(bt_kernel_launch(kn, p, bufs, 3, &d), BT_OK);
    assert_int_equal(bt_kernel_tune_count(kn), 2);
    /* wrong buffer count: an error, not a crash */
    assert_int_equal(bt_kernel_launch(kn, p, bufs, 2, &d), BT_INVALID_ARG);
    bt_device_sync(dev, &d);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(bufs[i]);
    free(x);
    free(y);
    free(z);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
}

/* The dispatch path with tensor maps (gemm_wgmma on an sm_90 GPU): the first launch tunes on the
 * caller's buffers, later launches encode the maps over whatever buffers they are given. */
/* A fixed-seed xorshift: the test's inputs are random, not zeros, and the same every run. */
static uint32_t rnd(void)
{
    static uint32_t x = 2463534242u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

static void gemm_ref_check(const uint16_t *a, const uint16_t *b, const uint16_t *c, int M, int N,
                           int K)
{
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)bt__f16_to_f32(a[(size_t)i * K + k]) *
                       bt__f16_to_f32(b[(size_t)k * N + j]);
            if (!isfinite(acc))
                fail_msg("the reference C[%d][%d] is %g: the inputs are broken", i, j, acc);
            double got = bt__f16_to_f32(c[(size_t)i * N + j]);
            double err = fabs(got - acc) / (fabs(acc) + 1.0);
            if (!(err <= 4e-3)) /* NaN fails too */
                fail_msg("C[%d][%d] = %g, want %g", i, j, got, acc);
            worst = fmax(worst, err);
        }
    printf("# wgmma dispatch: %dx%dx%d checked in full, worst relative error %.2e\n", M, N, K, worst);
}

static void test_wgmma_dispatch_with_tensor_maps(void **state)
{
    (void)state;
    const bt_device_info *di = bt_device_get_info(dev);
    if (strcmp(di->backend, "cuda") || di->props.cc_major != 9) {
        printf("# skipped: gemm_wgmma needs an sm_90 CUDA device (this one is %s)\n", di->id);
        skip();
    }
    const int M = 200, N = 264, K = 136;
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_builtin("gemm_wgmma", &k, &d), BT_OK);
    bt_problem *p;
    bt_problem_create(k, &p);
    assert_int_equal(bt_problem_set(p, "M", M, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "N", N, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "K", K, &d), BT_OK);
    assert_int_equal(bt_problem_set_dtype(p, "fp16", &d), BT_OK);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    bt__kernel_set_opts(kn, &o);
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    uint16_t *a = malloc(2 * na), *b = malloc(2 * nb), *c = malloc(2 * nc);
    assert_true(a && b && c);
    bt_buffer *bufs[2][4];
    for (int set = 0; set < 2; set++) {
        size_t sizes[4] = {2 * na, 2 * nb, 2 * nc, 8};
        for (int i = 0; i < 4; i++)
            assert_int_equal(bt_buffer_create(dev, sizes[i], &bufs[set][i], &d), BT_OK);
    }
    const int zero[2] = {0, 0};
    for (int set = 0; set < 2; set++) {
        for (size_t i = 0; i < na; i++)
            a[i] = bt__f32_to_f16((float)((int)(rnd() % 2001) - 1000) / 1000.0f);
        for (size_t i = 0; i < nb; i++)
            b[i] = bt__f32_to_f16((float)((int)(rnd() % 2001) - 1000) / 1000.0f);
        memset(c, 0xff, 2 * nc); /* NaN: every output must be written */
        assert_int_equal(bt_buffer_write(bufs[set][0], 0, a, 2 * na, &d), BT_OK);
        assert_int_equal(bt_buffer_write(bufs[set][1], 0, b, 2 * nb, &d), BT_OK);
        assert_int_equal(bt_buffer_write(bufs[set][3], 0, zero, sizeof zero, &d), BT_OK);
        for (int launch = 0; launch < 2; launch++) {
            assert_int_equal(bt_buffer_write(bufs[set][2], 0, c, 2 * nc, &d), BT_OK);
            bt_status st = bt_kernel_launch(kn, p, bufs[set], 4, &d);
            if (st)
                fail_msg("launch: %s", d.msg);
        }
        uint16_t *got = malloc(2 * nc);
        assert_non_null(got);
        assert_int_equal(bt_buffer_read(bufs[set][2], 0, got, 2 * nc, &d), BT_OK);
        gemm_ref_check(a, b, got, M, N, K);
        free(got);
    }
    assert_int_equal(bt_kernel_tune_count(kn), 1); /* the second buffer set did not re-tune */
    /* the host cost of a launch that encodes two tensor maps (for bench/NOTES.md, not asserted) */
    double t0 = bt__now();
    for (int i = 0; i < 2000; i++)
        assert_int_equal(bt_kernel_launch(kn, p, bufs[i & 1], 4, &d), BT_OK);
    printf("# wgmma dispatch: %.2f us of host time per launch (2000 launches, two tensor maps "
           "encoded each)\n", (bt__now() - t0) / 2000 * 1e6);
    for (int set = 0; set < 2; set++)
        for (int i = 0; i < 4; i++)
            bt_buffer_destroy(bufs[set][i]);
    free(a);
    free(b);
    free(c);
    bt_kernel_destroy(kn);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

static void test_faulting_config_is_survived(void **state)
{
    (void)state;
    if (strcmp(bt_device_get_info(dev)->backend, "cuda")) {
        printf("# skipped: the planted fault needs a CUDA device (this one is %s)\n",
               bt_device_get_info(dev)->id);
        skip();
    }
    /* CUDA keeps a fault's sticky error for the life of the process, so this runs the CLI, which
     * restarts itself and resumes from the store past the faulting configs */
    char dir[] = "/tmp/bt-fault-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[1024], outp[300];
    snprintf(outp, sizeof outp, "%s/out.txt", dir);
    snprintf(cmd, sizeof cmd,
             "%s tune %s/tests/data/fault.json --device %s --store %s/store.db --rep-ms 5 "
             "--warmup-ms 1 > %s 2>&1",
             BT_CLI, BT_SOURCE_DIR, bt_device_get_info(dev)->id, dir, outp);
    int rc = system(cmd);
    char *out = NULL;
    size_t len = 0;
    FILE *f = fopen(outp, "r");
    assert_non_null(f);
    out = malloc(1 << 20);
    len = fread(out, 1, (1 << 20) - 1, f);
    out[len] = '\0';
    fclose(f);
    printf("%s\n", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "restarting"));
    assert_non_null(strstr(out, "WINNER"));
    int failed = 0;
    for (const char *q = out; (q = strstr(q, "FAULT=1")); q++)
        if (strstr(q, "launch_failed") && strstr(q, "launch_failed") < strchr(q, '\n'))
            failed++;
    assert_int_equal(failed, 3);
    free(out);
}

static void launch_and_check_vector_add(bt_kernel *kn, bt_problem *p, int n)
{
    bt_diag d;
    float *x = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * n), *z = malloc(sizeof(float) * n);
    for (int i = 0; i < n; i++)
        x[i] = (float)(i % 97) - 40.5f, y[i] = (float)(i % 31) * 0.25f;
    bt_buffer *b[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, sizeof(float) * n, &b[i], &d), BT_OK);
    bt_buffer_write(b[0], 0, x, sizeof(float) * n, &d);
    bt_buffer_write(b[1], 0, y, sizeof(float) * n, &d);
    if (bt_kernel_launch(kn, p, b, 3, &d) != BT_OK)
        fail_msg("launch: %s", d.msg);
    bt_device_sync(dev, &d);
    bt_buffer_read(b[2], 0, z, sizeof(float) * n, &d);
    for (int i = 0; i < n; i++)
        if (z[i] != x[i] + y[i])
            fail_msg("z[%d] = %g, want %g", i, z[i], x[i] + y[i]);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(b[i]);
    free(x);
    free(y);
    free(z);
}

/* Tunes k at p (quick options) into the store db and exports k's winners as one wisdom file into
 * wdir (what wisdom/ ships); the winner. */
static bt_config tune_and_ship(const bt_kdesc *k, const bt_problem *p, const char *db,
                               const char *wdir)
{
    bt_diag d;
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    o.store = db;
    bt_result *r;
    assert_int_equal(bt__kernel_tune_opts(kn, p, &o, &r, &d), BT_OK);
    bt_config won;
    assert_true(bt__result_winner(r, &won, NULL));
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    bt__store *st;
    assert_int_equal(bt__store_open(db, &st, &d), BT_OK);
    bt__wisdom_export_opts eo = {.kernel = k->name};
    int nfiles = 0;
    assert_int_equal(bt__wisdom_export_dir(st, &eo, wdir, &nfiles, &d), BT_OK);
    assert_int_equal(nfiles, 1);
    bt__store_close(st);
    return won;
}

static void test_shipped_wisdom_dispatches_without_measuring(void **state)
{
    (void)state;
    char dir[] = "/tmp/bt-wisdom-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], wdir[256];
    snprintf(db, sizeof db, "%s/store.db", dir);
    snprintf(wdir, sizeof wdir, "%s/shipped", dir);
    mkdir(wdir, 0755);
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_builtin("vector_add", &k, &d), BT_OK);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_problem_set(p, "n", 5000, &d);
    /* 1. tune into a store, export its winners as wisdom files (what wisdom/ ships) */
    bt_config won = tune_and_ship(k, p, db, wdir);
    /* 2. a fresh kernel with no store: the key is only in the shipped wisdom */
    setenv("BLOCKTUNE_WISDOM_DIR", wdir, 1);
    bt_kernel *kn;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__tune_opts o = quick();
    o.store = "none";
    bt__kernel_set_opts(kn, &o);
    launch_and_check_vector_add(kn, p, 5000);
    assert_int_equal(bt_kernel_tune_count(kn), 0); /* dispatched, never measured */
    bt_kernel_destroy(kn);
    /* 3. wisdom-only mode on a key nobody tuned: the nearest size (5000) is used, no measuring */
    o.mode = BT_MODE_WISDOM_ONLY;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, &o);
    bt_problem_set(p, "n", 7777, &d);
    launch_and_check_vector_add(kn, p, 7777);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_kernel_destroy(kn);
    /* 4. wisdom-only with no wisdom at all: the model's best config, still no measuring */
    unsetenv("BLOCKTUNE_WISDOM_DIR");
    setenv("BLOCKTUNE_WISDOM_DIR", dir, 1); /* a directory without wisdom files */
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, &o);
    launch_and_check_vector_add(kn, p, 7777);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_kernel_destroy(kn);
    unsetenv("BLOCKTUNE_WISDOM_DIR");
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    (void)won;
}

/* Wisdom-only dispatch takes a nearest size's config only where it is valid at this size: a
 * spec whose constraints tie the tile to n ("n <= BLOCK_SIZE * 64", and at most 128 up to
 * n = 8192), tuned at n = 4096 (a block of 64 or 128 wins), asked for n = 16384 (a block of 256
 * or more is needed there): the nearest config is refused and the model's best valid one runs,
 * with correct results; at n = 3000 the nearest config fits and is taken. */
static void test_nearest_size_config_must_fit_the_problem(void **state)
{
    (void)state;
    char dir[] = "/tmp/bt-fit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char db[256], wdir[256], spec[256];
    snprintf(db, sizeof db, "%s/store.db", dir);
    snprintf(wdir, sizeof wdir, "%s/shipped", dir);
    snprintf(spec, sizeof spec, "%s/vector_add_fit.json", dir);
    mkdir(wdir, 0755);
    json_t *j = json_load_file(BT_SOURCE_DIR "/kernels/specs/vector_add.json", 0, NULL);
    assert_non_null(j);
    json_object_set_new(j, "name", json_string("vector_add_fit"));
    json_t *srcs = json_object_get(j, "sources"), *pre = json_object_get(j, "prelude");
    /* the sources by absolute path (the spec is written elsewhere): whichever the device takes */
    json_object_set_new(srcs, "opencl", json_string(BT_SOURCE_DIR "/kernels/opencl/vector_add.cl"));
    json_object_set_new(pre, "opencl", json_string(BT_SOURCE_DIR "/kernels/opencl/prelude.cl"));
    json_object_set_new(srcs, "cuda", json_string(BT_SOURCE_DIR "/kernels/cuda/vector_add.cu"));
    json_object_set_new(pre, "cuda", json_string(BT_SOURCE_DIR "/kernels/cuda/prelude.cuh"));
    json_array_append_new(json_object_get(j, "constraints"), json_string("n <= BLOCK_SIZE * 64"));
    json_array_append_new(json_object_get(j, "constraints"),
                          json_string("BLOCK_SIZE <= 128 || n > 8192"));
    assert_int_equal(json_dump_file(j, spec, JSON_INDENT(1)), 0);
    json_decref(j);
    bt_kdesc *k;
    bt_diag d;
    if (bt_kdesc_load_file(spec, &k, &d) != BT_OK)
        fail_msg("%s", d.msg);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_problem_set(p, "n", 4096, &d);
    bt_config won = tune_and_ship(k, p, db, wdir);
    int bs = bt__space_find(&k->space, "BLOCK_SIZE");
    assert_true(bs >= 0);
    assert_true(won.v[bs] <= 128);
    setenv("BLOCKTUNE_WISDOM_DIR", wdir, 1);
    bt_kernel *kn;
    bt__tune_opts o = quick();
    o.store = "none";
    o.mode = BT_MODE_WISDOM_ONLY;
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, &o);
    bt_problem_set(p, "n", 16384, &d);
    bt_choice *c;
    if (bt_kernel_lookup(kn, p, 1, &c, &d) != BT_OK)
        fail_msg("lookup: %s", d.msg);
    assert_int_equal(bt_choice_source(c), BT_SOURCE_MODEL);
    int64_t v;
    assert_int_equal(bt_choice_param(c, "BLOCK_SIZE", &v, &d), BT_OK);
    assert_true(v >= 256);
    bt_choice_destroy(c);
    launch_and_check_vector_add(kn, p, 16384);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_kernel_destroy(kn);
    /* at n = 3000 the nearest (4096) config fits and is taken */
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, &o);
    bt_problem_set(p, "n", 3000, &d);
    assert_int_equal(bt_kernel_lookup(kn, p, 1, &c, &d), BT_OK);
    assert_int_equal(bt_choice_source(c), BT_SOURCE_NEAREST_SIZE);
    bt_choice_destroy(c);
    bt_kernel_destroy(kn);
    /* with n = 32768 tuned too (BLOCK_SIZE >= 512 there), n = 12000's nearest (4096, 7904
     * away) does not fit, and the next nearest that does (32768) is taken, not the model's */
    unsetenv("BLOCKTUNE_WISDOM_DIR");
    bt_problem_set(p, "n", 32768, &d);
    bt_config big = tune_and_ship(k, p, db, wdir);
    assert_true(big.v[bs] >= 512);
    setenv("BLOCKTUNE_WISDOM_DIR", wdir, 1);
    assert_int_equal(bt_kernel_create(dev, k, &kn, &d), BT_OK);
    bt__kernel_set_opts(kn, &o);
    bt_problem_set(p, "n", 12000, &d);
    assert_int_equal(bt_kernel_lookup(kn, p, 1, &c, &d), BT_OK);
    assert_int_equal(bt_choice_source(c), BT_SOURCE_NEAREST_SIZE);
    assert_int_equal(bt_choice_param(c, "BLOCK_SIZE", &v, &d), BT_OK);
    assert_int_equal(v, big.v[bs]);
    bt_choice_destroy(c);
    launch_and_check_vector_add(kn, p, 12000);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_kernel_destroy(kn);
    unsetenv("BLOCKTUNE_WISDOM_DIR");
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

static void test_stats_are_exact_on_known_samples(void **state)
{
    (void)state;
    double t[] = {5, 1, 4, 2, 3};
    bt__stats s;
    bt__stats_compute(t, 5, &s);
    assert_float_equal(s.median, 3, 1e-12);
    assert_float_equal(s.min, 1, 1e-12);
    assert_float_equal(s.p20, 1.8, 1e-12);
    assert_float_equal(s.p80, 4.2, 1e-12);
    assert_float_equal(s.mad, 1, 1e-12);
}

/* One list names the statuses for the report and the store; a store row written before the
 * names were one list ("resources") still reads as the same status. */
static void test_status_names_are_one_list(void **state)
{
    (void)state;
    for (int s = BT__CS_PENDING; s <= BT__CS_SKIPPED; s++)
        assert_int_equal(bt__cfg_status_parse(bt__cfg_status_name((bt__cfg_status)s)), s);
    assert_string_equal(bt__cfg_status_name(BT__CS_RESOURCES), "resources_exceeded");
    assert_int_equal(bt__cfg_status_parse("resources"), BT__CS_RESOURCES);
    assert_string_equal(bt__cfg_status_name(BT__CS_WRONG), "wrong_result");
    assert_int_equal(bt__cfg_status_parse("bogus"), BT__CS_PENDING);
    assert_int_equal(bt__cfg_status_parse(NULL), BT__CS_PENDING);
}

static void test_verify_rejects_nan_and_poison(void **state)
{
    (void)state;
    bt__hostbuf b;
    bt__hostbuf_alloc(&b, BT__DT_FP32, 4);
    double ref[4] = {1, 2, 3, 4};
    for (int i = 0; i < 4; i++)
        bt__hostbuf_set(&b, i, ref[i]);
    bt__verify v;
    bt__verify_compare(&b, ref, NULL, 0, 1e-6, 0, &v);
    assert_true(v.ok);
    uint8_t pat[8];
    size_t ps;
    bt__poison_pattern(BT__DT_FP32, pat, &ps);
    memcpy((char *)b.data + 8, pat, ps); /* element 2 left unwritten */
    bt__verify_compare(&b, ref, NULL, 0, 1e-6, 0, &v);
    assert_false(v.ok);
    assert_int_equal(v.first_bad, 2);
    /* a sampled check still scans every element for poison */
    size_t sample[1] = {0};
    bt__verify_compare(&b, ref, sample, 1, 1e-6, 0, &v);
    assert_false(v.ok);
    bt__hostbuf_free(&b);
    /* fp16 / bf16 round trips */
    assert_true(bt__f16_to_f32(bt__f32_to_f16(1.5f)) == 1.5f);
    assert_true(bt__bf16_to_f32(bt__f32_to_bf16(-2.25f)) == -2.25f);
    assert_true(bt__f16_to_f32(bt__f32_to_f16(65520.0f)) == INFINITY);
    assert_true(bt__f16_to_f32(bt__f32_to_f16(5.9604644775390625e-8f)) == 5.9604644775390625e-8f);
}

int main(void)
{
    bt_diag d;
    if (bt_device_open(NULL, &dev, &d) != BT_OK)
        BT_TEST_SKIP_ALL("no compute device to tune on: %s", d.msg);
    printf("# device: %s (%s)\n", bt_device_get_info(dev)->id, bt_device_get_info(dev)->name);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stats_are_exact_on_known_samples),
        cmocka_unit_test(test_verify_rejects_nan_and_poison),
        cmocka_unit_test(test_status_names_are_one_list),
        cmocka_unit_test(test_vector_add_tunes_and_verifies),
        cmocka_unit_test(test_reduce_tunes_with_reset_to_zero),
        cmocka_unit_test(test_softmax_fp16_tunes),
        cmocka_unit_test(test_layernorm_bf16_tunes),
        cmocka_unit_test(test_gemm_tunes_at_odd_sizes),
        cmocka_unit_test(test_wrong_and_broken_configs_are_caught_and_never_win),
        cmocka_unit_test(test_boundary_sizes_outside_a_configs_constraints_are_skipped),
        cmocka_unit_test(test_output_dtype_follows_the_problem),
        cmocka_unit_test(test_strategy_random_honours_budget_and_seed),
        cmocka_unit_test(test_every_strategy_tunes_end_to_end),
        cmocka_unit_test(test_time_limit_stops_the_search),
        cmocka_unit_test(test_planted_faults_never_win_under_a_search),
        cmocka_unit_test(test_unknown_strategy_is_an_error),
        cmocka_unit_test(test_winner_is_remeasured_interleaved_and_stable),
        cmocka_unit_test(test_launch_tunes_once_per_key_and_is_thread_safe),
        cmocka_unit_test(test_faulting_config_is_survived),
        cmocka_unit_test(test_wgmma_dispatch_with_tensor_maps),
        cmocka_unit_test(test_shipped_wisdom_dispatches_without_measuring),
        cmocka_unit_test(test_nearest_size_config_must_fit_the_problem),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    bt_device_destroy(dev);
    return rc;
}
