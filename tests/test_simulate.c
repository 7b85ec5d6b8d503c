/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_simulate.c — search strategies on the recorded Kernel Tuner spaces of tests/data/kt/ (in
 * the repository, with their licence): the five caches load (gzip), a simulated exhaustive run
 * finds exactly the recorded best, invalid (unrecorded) configs are never measured, failures are
 * measured as failures, simulated time limits hold, and simulations are deterministic.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/util.h"
#include "search/simulate.h"
#include "search/strategy.h"
#include "store/ktcache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_DIR BT_SOURCE_DIR "/tests/data/kt"

static const struct {
    const char *file;
    uint64_t recorded, failed;
    double best_ms;
} spaces[] = {
    {"convolution_milo_A100.json.gz", 4362, 161, 0.554},
    {"convolution_milo_A4000.json.gz", 4362, 161, 1.021},
    {"convolution_milo_W6600.json.gz", 4362, 0, 1.728},
    {"dedispersion_milo_A100.json.gz", 11130, 0, 68.117},
    {"dedispersion_milo_W6600.json.gz", 11130, 0, 135.081},
};

static bt__ktcache *caches[5];
static bt__recspace recs[5]; /* each cache as the recorded space simulation replays */

static int load_all(void **state)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(spaces); i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", CACHE_DIR, spaces[i].file);
        bt_diag d;
        if (bt__ktcache_load(path, &caches[i], &d) != BT_OK) {
            char buf[2048];
            fprintf(stderr, "%s\n", bt_diag_format(&d, buf, sizeof buf));
            return -1;
        }
        bt__ktcache_recspace(caches[i], &recs[i]);
    }
    return 0;
}

static int free_all(void **state)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(spaces); i++)
        bt__ktcache_free(caches[i]);
    return 0;
}

static void test_caches_match_their_readme(void **state)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(spaces); i++) {
        const bt__ktcache *c = caches[i];
        assert_int_equal(c->nrecs, spaces[i].recorded);
        assert_int_equal(c->nfailed, spaces[i].failed);
        assert_true(c->has_best);
        assert_true(fabs(c->best_ms - spaces[i].best_ms) < 0.0005);
        assert_true(c->space.total > c->nrecs); /* some configs are invalid */
    }
}

/* Simulated exhaustive search measures every recorded config once and finds exactly the
 * recorded best. */
static void test_exhaustive_finds_recorded_best(void **state)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(spaces); i++) {
        const bt__ktcache *c = caches[i];
        bt__search_ctx ctx;
        bt__replay_ctx(&recs[i], 1, &ctx);
        bt__search_result r;
        bt_diag d;
        assert_int_equal(bt__search_run(bt__strategy_find("exhaustive"), &ctx, NULL,
                                        bt__replay_measure, &recs[i], &r, &d),
                         BT_OK);
        assert_int_equal(r.evals, c->nrecs);
        assert_int_equal(r.failures, c->nfailed);
        assert_int_equal(r.invalid_proposals, 0);
        assert_int_equal(r.best_idx, c->best_index);
        assert_true(r.best_ms == c->best_ms);
        /* the simulated cost is the recorded compile + benchmark time */
        double cost = 0;
        for (size_t k = 0; k < c->nrecs; k++)
            cost += (c->recs[k].compile_ms + c->recs[k].benchmark_ms) / 1000.0;
        assert_true(fabs(r.cost_s - cost) < 1e-6 * cost);
        bt__search_result_clear(&r);
    }
}

/* Every strategy on a real space: nothing unrecorded is measured (the replay device would fail
 * with BT_INTERNAL), nothing twice; failures are measured as failures. */
static void test_strategies_respect_recorded_validity(void **state)
{
    const bt__ktcache *c = caches[0]; /* has failing configs */
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    for (size_t i = 0; i < n; i++) {
        bt__search_ctx ctx;
        bt__replay_ctx(&recs[0], 7, &ctx);
        bt__search_budget b = {.max_evals = 400};
        bt__search_result r;
        bt_diag d;
        bt_status st = bt__search_run(all[i], &ctx, &b, bt__replay_measure, &recs[0], &r, &d);
        if (!strcmp(all[i]->name, "model")) {
            assert_int_equal(st, BT_UNSUPPORTED);
            assert_non_null(strstr(d.msg, "no performance model"));
            bt__search_result_clear(&r);
            continue;
        }
        if (st != BT_OK)
            fail_msg("%s: %s", all[i]->name, d.msg);
        assert_int_equal(r.evals, 400);
        assert_int_equal(r.invalid_proposals, 0);
        assert_int_equal(r.duplicate_proposals, 0);
        for (uint64_t e = 0; e < r.evals; e++) {
            const bt__kt_record *rec = bt__ktcache_find(c, r.trace[e].idx);
            assert_non_null(rec);
            assert_int_equal(r.trace[e].fail, bt__kt_fail_status(rec->fail));
        }
        bt__search_result_clear(&r);
    }
}

static void test_simulated_time_limit(void **state)
{
    bt__search_ctx ctx;
    bt__replay_ctx(&recs[2], 3, &ctx);
    bt__search_budget b = {.time_limit_s = 120};
    bt__search_result r;
    bt_diag d;
    assert_int_equal(bt__search_run(bt__strategy_find("forest"), &ctx, &b, bt__replay_measure,
                                    &recs[2], &r, &d),
                     BT_OK);
    assert_int_equal(r.stop, BT__STOP_TIME_LIMIT);
    assert_true(r.evals > 2);
    assert_true(r.cost_s >= 120);
    assert_true(r.trace[r.evals - 2].cost_s < 120);
    bt__search_result_clear(&r);
}

static bool stats_equal(const bt__sim_stats *a, const bt__sim_stats *b)
{
    for (int k = 0; k < BT__SIM_NTHRESH; k++)
        if (a->evals_med[k] != b->evals_med[k] || a->evals_p90[k] != b->evals_p90[k] ||
            a->success[k] != b->success[k])
            return false;
    for (int k = 0; k < BT__SIM_NBUDGETS; k++)
        if (!(a->best_at_pct[k] == b->best_at_pct[k] ||
              (isnan(a->best_at_pct[k]) && isnan(b->best_at_pct[k]))))
            return false;
    return a->evals_mean == b->evals_mean && a->evals_run_med == b->evals_run_med;
}

static void test_simulation_is_deterministic(void **state)
{
    const bt__recspace *c = &recs[1];
    bt__sim_options o = {.runs = 6, .budget = 300, .seed = 11, .jobs = 1};
    bt__sim_stats s1, s2, s3;
    bt_diag d;
    const bt__strategy *f = bt__strategy_find("forest");
    assert_int_equal(bt__simulate(c, f, &o, &s1, NULL, &d), BT_OK);
    assert_int_equal(bt__simulate(c, f, &o, &s2, NULL, &d), BT_OK);
    o.jobs = 3;
    assert_int_equal(bt__simulate(c, f, &o, &s3, NULL, &d), BT_OK);
    assert_true(stats_equal(&s1, &s2));
    assert_true(stats_equal(&s1, &s3));
    assert_int_equal(s1.invalid_proposals + s1.duplicate_proposals, 0);
    assert_int_equal(s1.budget, 300);
    assert_true(isnan(s1.best_at_pct[BT__SIM_NBUDGETS - 1])); /* 1000 > budget */
    /* exhaustive needs the same number of measurements in every run */
    const bt__strategy *ex = bt__strategy_find("exhaustive");
    o.budget = 0;
    assert_int_equal(bt__simulate(c, ex, &o, &s1, NULL, &d), BT_OK);
    assert_int_equal(s1.evals_med[0], s1.evals_p90[0]);
    assert_true(s1.success[0] == 1.0);
    assert_true(s1.best_at_pct[BT__SIM_NBUDGETS - 1] >= 0);
    /* the model strategy has nothing to rank */
    assert_int_equal(bt__simulate(c, bt__strategy_find("model"), &o, &s1, NULL, &d),
                     BT_UNSUPPORTED);
    assert_non_null(strstr(d.msg, "no performance model for this space"));
}

/* Runs reduced to numbers: evals to a threshold is the first trace step within it. */
static void test_sim_runs_agree_with_space_info(void **state)
{
    const bt__recspace *c = &recs[4];
    bt__sim_space_info info;
    bt__sim_space_info_of(c, &info);
    assert_int_equal(info.recorded, 11130);
    assert_int_equal(info.within[1], 28); /* configs within 5% of the best */
    assert_true(fabs(info.random_expect[1] - 11131.0 / 29.0) < 1e-9);
    bt__sim_options o = {.runs = 4, .seed = 1};
    bt__sim_stats st;
    bt__sim_run *runs = NULL;
    bt_diag d;
    assert_int_equal(bt__simulate(c, bt__strategy_find("random"), &o, &st, &runs, &d), BT_OK);
    for (int r = 0; r < 4; r++) {
        assert_true(runs[r].evals_to[0] >= runs[r].evals_to[1]);
        assert_true(runs[r].evals_to[1] >= runs[r].evals_to[2]);
        assert_true(runs[r].evals_to[0] <= runs[r].evals);
        assert_true(runs[r].best_ms <= c->best_ms * 1.02);
    }
    free(runs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caches_match_their_readme),
        cmocka_unit_test(test_exhaustive_finds_recorded_best),
        cmocka_unit_test(test_strategies_respect_recorded_validity),
        cmocka_unit_test(test_simulated_time_limit),
        cmocka_unit_test(test_simulation_is_deterministic),
        cmocka_unit_test(test_sim_runs_agree_with_space_info),
    };
    return cmocka_run_group_tests(tests, load_all, free_all);
}
