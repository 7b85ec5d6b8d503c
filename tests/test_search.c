/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_search.c — the search strategies and the driver on a synthetic space: budgets (measurement
 * count, simulated time, within-X%-of-target), determinism per seed, invalid configs never
 * measured, no config proposed twice, failures observed and avoided, the `model` strategy's use of
 * a prior, and the registry.
 *
 * The synthetic space: A in {1..64} (pow2), B in {3,1,2,5,4} (unsorted on purpose), C in {0,1},
 * D in 0..11; invalid when A*D > 256 or (A == 64 and C == 1); a compile failure when B == 5 and
 * D >= 8. The unique best is A=8, B=2, C=0, D=7.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/space.h"
#include "core/util.h"
#include "search/common.h"
#include "search/forest_local.h"
#include "search/strategy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct synth {
    bt__space space;
    uint64_t best_idx;
    double best_ms;
    uint64_t nvalid;
    /* measurement bookkeeping */
    unsigned *measured; /* per index: how many times */
    uint64_t invalid_measured;
    double cost_each;
    bool reversed_prior;
} synth;

static void synth_config(const synth *s, uint64_t idx, int64_t *a, int64_t *b, int64_t *c,
                         int64_t *d)
{
    bt_config cfg;
    bt__space_config_at(&s->space, idx, &cfg);
    *a = cfg.v[0], *b = cfg.v[1], *c = cfg.v[2], *d = cfg.v[3];
}

static bool synth_valid(void *user, uint64_t idx)
{
    const synth *s = user;
    int64_t a, b, c, d;
    synth_config(s, idx, &a, &b, &c, &d);
    return a * d <= 256 && !(a == 64 && c == 1);
}

static bool synth_fails(const synth *s, uint64_t idx)
{
    int64_t a, b, c, d;
    synth_config(s, idx, &a, &b, &c, &d);
    return b == 5 && d >= 8;
}

static double synth_time(const synth *s, uint64_t idx)
{
    int64_t a, b, c, d;
    synth_config(s, idx, &a, &b, &c, &d);
    double la = log2((double)a) - 3;
    return 1.0 + 0.3 * la * la + 0.2 * (double)((b - 2) * (b - 2)) +
           0.5 * (double)c * (double)d / 4 + 0.1 * fabs((double)d - 7) + 1e-6 * (double)(idx % 97);
}

static double synth_prior(void *user, uint64_t idx)
{
    const synth *s = user;
    double t = synth_time(s, idx);
    return s->reversed_prior ? -t : t;
}

static bt_status synth_measure(void *user, uint64_t idx, bt__search_meas *m)
{
    synth *s = user;
    if (!synth_valid(s, idx))
        s->invalid_measured++;
    s->measured[idx]++;
    m->cost_s = s->cost_each;
    if (synth_fails(s, idx)) {
        m->fail = BT_COMPILE;
        return BT_OK;
    }
    m->ms = synth_time(s, idx);
    return BT_OK;
}

static int synth_setup(void **state)
{
    synth *s = calloc(1, sizeof *s);
    assert_non_null(s);
    bt__space_init(&s->space);
    const int64_t bvals[] = {3, 1, 2, 5, 4};
    const int64_t cvals[] = {0, 1};
    assert_int_equal(bt__space_add_pow2(&s->space, "A", 1, 64, NULL), BT_OK);
    assert_int_equal(bt__space_add_list(&s->space, "B", bvals, 5, NULL), BT_OK);
    assert_int_equal(bt__space_add_list(&s->space, "C", cvals, 2, NULL), BT_OK);
    assert_int_equal(bt__space_add_range(&s->space, "D", 0, 11, 1, NULL), BT_OK);
    s->measured = calloc(s->space.total, sizeof *s->measured);
    assert_non_null(s->measured);
    s->best_ms = INFINITY;
    for (uint64_t i = 0; i < s->space.total; i++) {
        if (!synth_valid(s, i))
            continue;
        s->nvalid++;
        if (!synth_fails(s, i) && synth_time(s, i) < s->best_ms) {
            s->best_ms = synth_time(s, i);
            s->best_idx = i;
        }
    }
    s->cost_each = 1.0;
    *state = s;
    return 0;
}

static int synth_teardown(void **state)
{
    synth *s = *state;
    bt__space_clear(&s->space);
    free(s->measured);
    free(s);
    return 0;
}

static void synth_reset(synth *s)
{
    memset(s->measured, 0, sizeof *s->measured * s->space.total);
    s->invalid_measured = 0;
}

static bt__search_ctx synth_ctx(synth *s, uint64_t seed, bool with_prior)
{
    bt__search_ctx ctx = {.space = &s->space, .is_valid = synth_valid, .user = s, .seed = seed};
    if (with_prior)
        ctx.prior = synth_prior;
    return ctx;
}

/* Nothing invalid and nothing twice was measured, and the driver's account matches. */
static void check_measured_once(const synth *sy, const bt__strategy *st,
                                const bt__search_result *res)
{
    assert_int_equal(sy->invalid_measured, 0);
    uint64_t total = 0;
    for (uint64_t i = 0; i < sy->space.total; i++) {
        if (sy->measured[i] > 1)
            fail_msg("%s measured config %llu twice", st->name, (unsigned long long)i);
        total += sy->measured[i];
    }
    assert_int_equal(total, res->evals);
}

/* Runs strategy s, asserting the driver's account matches what was measured. */
static void run(synth *sy, const bt__strategy *st, uint64_t seed, const bt__search_budget *b,
                bool with_prior, bt__search_result *res)
{
    synth_reset(sy);
    bt__search_ctx ctx = synth_ctx(sy, seed, with_prior);
    bt_diag d;
    bt_status rc = bt__search_run(st, &ctx, b, synth_measure, sy, res, &d);
    if (rc != BT_OK)
        fail_msg("%s: %s", st->name, d.msg);
    check_measured_once(sy, st, res);
}

/* ------------------------------------------------------------------------------------------- */

static void test_registry(void **state)
{
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    const char *want[] = {"exhaustive", "random", "model", "coordinate", "anneal", "forest"};
    assert_int_equal(n, BT__ARRAY_LEN(want));
    for (size_t i = 0; i < BT__ARRAY_LEN(want); i++) {
        assert_ptr_equal(bt__strategy_find(want[i]), all[i]);
        assert_non_null(all[i]->summary);
    }
    assert_ptr_equal(bt__strategy_find("FOREST"), bt__strategy_find("forest"));
    assert_null(bt__strategy_find("genetic"));
    assert_string_equal(bt__strategy_default(50, 0)->name, "exhaustive");
    assert_string_equal(bt__strategy_default(BT__SEARCH_EXHAUSTIVE_MAX_DEFAULT, 0)->name,
                        "exhaustive");
    assert_string_equal(bt__strategy_default(BT__SEARCH_EXHAUSTIVE_MAX_DEFAULT + 1, 0)->name,
                        BT__SEARCH_DEFAULT_LARGE);
    assert_string_equal(bt__strategy_default(1000, 2000)->name, "exhaustive");
}

/* Every strategy, run until it stops: nothing invalid measured (run() checks), nothing proposed
 * twice or invalid, and the ones that cover the space find the best. */
static void test_rules_every_strategy(void **state)
{
    synth *sy = *state;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    for (size_t i = 0; i < n; i++) {
        for (uint64_t seed = 1; seed <= 3; seed++) {
            bt__search_result r;
            run(sy, all[i], seed, NULL, true, &r);
            if (r.invalid_proposals || r.duplicate_proposals)
                fail_msg("%s (seed %llu): %llu invalid, %llu duplicate proposals", all[i]->name,
                         (unsigned long long)seed, (unsigned long long)r.invalid_proposals,
                         (unsigned long long)r.duplicate_proposals);
            assert_int_equal(r.stop, BT__STOP_STRATEGY);
            if (strcmp(all[i]->name, "model") != 0) {
                /* Every other strategy goes on until the space is exhausted. */
                assert_int_equal(r.evals, sy->nvalid);
                assert_true(r.found);
                assert_int_equal(r.best_idx, sy->best_idx);
            }
            bt__search_result_clear(&r);
        }
    }
}

/* With a prior, exhaustive measures the predicted fastest first (the screening's early stop and a
 * time limit keep the promising ones); without one, in index order. */
static void test_exhaustive_order(void **state)
{
    synth *sy = *state;
    for (int with = 0; with <= 1; with++) {
        bt__search_result r;
        run(sy, bt__strategy_find("exhaustive"), 1, NULL, with, &r);
        assert_int_equal(r.evals, sy->nvalid);
        for (uint64_t e = 1; e < r.evals; e++) {
            uint64_t a = r.trace[e - 1].idx, b = r.trace[e].idx;
            if (with)
                assert_true(synth_prior(sy, a) <= synth_prior(sy, b));
            else
                assert_true(a < b);
        }
        if (with) /* the first measured is the best predicted, here also the best */
            assert_int_equal(r.trace[0].idx, sy->best_idx);
        bt__search_result_clear(&r);
    }
}

static void test_exhaustive_measures_each_valid_config_once(void **state)
{
    synth *sy = *state;
    bt__search_result r;
    run(sy, bt__strategy_find("exhaustive"), 1, NULL, false, &r);
    for (uint64_t i = 0; i < sy->space.total; i++)
        assert_int_equal(sy->measured[i], synth_valid(sy, i) ? 1 : 0);
    assert_int_equal(r.best_idx, sy->best_idx);
    assert_true(r.best_ms == sy->best_ms);
    /* Failures are measurements that failed, counted and traced as such. */
    uint64_t fails = 0;
    for (uint64_t i = 0; i < sy->space.total; i++)
        fails += synth_valid(sy, i) && synth_fails(sy, i);
    assert_true(fails > 0);
    assert_int_equal(r.failures, fails);
    uint64_t traced = 0;
    for (uint64_t e = 0; e < r.evals; e++)
        if (r.trace[e].fail != BT_OK) {
            assert_int_equal(r.trace[e].fail, BT_COMPILE);
            assert_true(isinf(r.trace[e].ms));
            traced++;
        }
    assert_int_equal(traced, fails);
    bt__search_result_clear(&r);
}

static void test_budget_max_evals(void **state)
{
    synth *sy = *state;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    bt__search_budget b = {.max_evals = 17};
    for (size_t i = 0; i < n; i++) {
        bt__search_result r;
        run(sy, all[i], 5, &b, true, &r);
        if (r.stop == BT__STOP_STRATEGY) /* model may stop on its own before */
            assert_true(r.evals <= 17);
        else {
            assert_int_equal(r.stop, BT__STOP_MAX_EVALS);
            assert_int_equal(r.evals, 17);
        }
        bt__search_result_clear(&r);
    }
}

/* A time limit counts the measurements' own cost (simulated time). */
static void test_budget_time_limit(void **state)
{
    synth *sy = *state;
    sy->cost_each = 1.5;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    bt__search_budget b = {.time_limit_s = 10};
    for (size_t i = 0; i < n; i++) {
        bt__search_result r;
        run(sy, all[i], 2, &b, true, &r);
        assert_int_equal(r.stop, BT__STOP_TIME_LIMIT);
        /* 6 measurements cost 9 s (< 10): a 7th starts and ends at 10.5 s, then no more. */
        assert_int_equal(r.evals, 7);
        assert_true(fabs(r.cost_s - 10.5) < 1e-9);
        assert_true(r.trace[r.evals - 2].cost_s < b.time_limit_s);
        bt__search_result_clear(&r);
    }
    sy->cost_each = 1.0;
}

/* "Stop when within X% of a target": stops at the first measurement that gets there. */
static void test_budget_within_target(void **state)
{
    synth *sy = *state;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    bt__search_budget b = {.target_ms = sy->best_ms, .within_pct = 20};
    double lim = sy->best_ms * 1.2;
    for (size_t i = 0; i < n; i++) {
        bt__search_result r;
        run(sy, all[i], 3, &b, true, &r);
        if (r.stop == BT__STOP_TARGET) {
            assert_true(r.best_ms <= lim);
            for (uint64_t e = 0; e + 1 < r.evals; e++)
                assert_true(r.trace[e].best_ms > lim);
        } else {
            /* Only `model` may stop on its own, and then it never got there. */
            assert_string_equal(all[i]->name, "model");
            assert_true(r.best_ms > lim);
        }
        bt__search_result_clear(&r);
    }
    /* min_evals: the within rule waits for it, the target itself does not. */
    bt__search_budget b2 = {.target_ms = sy->best_ms, .within_pct = 1000, .min_evals = 30};
    bt__search_result r;
    run(sy, bt__strategy_find("random"), 1, &b2, false, &r);
    assert_int_equal(r.stop, BT__STOP_TARGET);
    assert_true(r.evals == 30 || r.best_ms <= sy->best_ms);
    bt__search_result_clear(&r);
}

static void test_deterministic_per_seed(void **state)
{
    synth *sy = *state;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    bt__search_budget b = {.max_evals = 120};
    for (size_t i = 0; i < n; i++) {
        bt__search_result r1, r2;
        run(sy, all[i], 42, &b, true, &r1);
        run(sy, all[i], 42, &b, true, &r2);
        assert_int_equal(r1.evals, r2.evals);
        for (uint64_t e = 0; e < r1.evals; e++) {
            if (r1.trace[e].idx != r2.trace[e].idx)
                fail_msg("%s: step %llu differs between two runs of one seed", all[i]->name,
                         (unsigned long long)e);
        }
        bt__search_result_clear(&r1);
        bt__search_result_clear(&r2);
    }
}

static bool traces_differ(const bt__search_result *a, const bt__search_result *b)
{
    if (a->evals != b->evals)
        return true;
    for (uint64_t e = 0; e < a->evals; e++)
        if (a->trace[e].idx != b->trace[e].idx)
            return true;
    return false;
}

static void test_seeds_differ(void **state)
{
    synth *sy = *state;
    bt__search_budget b = {.max_evals = 50};
    const char *seeded[] = {"random", "coordinate", "anneal", "forest"};
    for (size_t i = 0; i < BT__ARRAY_LEN(seeded); i++) {
        bt__search_result r1, r2;
        run(sy, bt__strategy_find(seeded[i]), 1, &b, false, &r1);
        run(sy, bt__strategy_find(seeded[i]), 2, &b, false, &r2);
        if (!traces_differ(&r1, &r2))
            fail_msg("%s: seeds 1 and 2 gave the same trace", seeded[i]);
        bt__search_result_clear(&r1);
        bt__search_result_clear(&r2);
    }
    /* exhaustive ignores the seed */
    bt__search_result r1, r2;
    run(sy, bt__strategy_find("exhaustive"), 1, &b, false, &r1);
    run(sy, bt__strategy_find("exhaustive"), 2, &b, false, &r2);
    assert_false(traces_differ(&r1, &r2));
    bt__search_result_clear(&r1);
    bt__search_result_clear(&r2);
}

/* Failures are information: the model-based strategy measures fewer failing configs than random
 * sampling does in the same budget (summed over seeds). */
static void test_failures_avoided(void **state)
{
    synth *sy = *state;
    bt__search_budget b = {.max_evals = 150};
    uint64_t fails_random = 0, fails_forest = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        bt__search_result r;
        run(sy, bt__strategy_find("random"), seed, &b, false, &r);
        fails_random += r.failures;
        bt__search_result_clear(&r);
        run(sy, bt__strategy_find("forest"), seed, &b, false, &r);
        fails_forest += r.failures;
        bt__search_result_clear(&r);
    }
    assert_true(fails_random > 0);
    if (!(fails_forest < fails_random))
        fail_msg("forest measured %llu failing configs, random %llu",
                 (unsigned long long)fails_forest, (unsigned long long)fails_random);
}

/* A strategy that keeps proposing the same or invalid configs is caught, not measured. */
typedef struct bad_state {
    int calls;
} bad_state;
static bt_status bad_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    *state = calloc(1, sizeof(bad_state));
    return *state ? BT_OK : BT_NOMEM;
}
static bt_status bad_next(void *state, uint64_t *idx)
{
    bad_state *s = state;
    s->calls++;
    if (s->calls > 6)
        return BT_NOT_FOUND;
    /* config 0 is valid (A=1, B=3, C=0, D=0); an index past the space is not */
    *idx = s->calls % 2 ? 0 : UINT64_MAX - 5;
    return BT_OK;
}
static void bad_observe(void *state, uint64_t idx, double ms, bt_status fail) {}
static void bad_destroy(void *state)
{
    free(state);
}

static void test_driver_catches_bad_proposals(void **state)
{
    synth *sy = *state;
    const bt__strategy bad = {.name = "bad",
                              .summary = "",
                              .create = bad_create,
                              .next = bad_next,
                              .observe = bad_observe,
                              .destroy = bad_destroy};
    bt__search_result r;
    run(sy, &bad, 1, NULL, false, &r);
    assert_int_equal(r.evals, 1);
    /* 0, bad, 0, bad, 0, bad: one measurement, one invalid, then four repeats */
    assert_int_equal(r.duplicate_proposals, 4);
    assert_int_equal(r.invalid_proposals, 1);
    assert_int_equal(sy->measured[0], 1);
    bt__search_result_clear(&r);
}

/* A tuner compiling a batch in parallel asks for several configs before measuring any: no
 * strategy repeats itself or proposes an invalid config then either. */
static void test_batches_of_proposals(void **state)
{
    synth *sy = *state;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    for (size_t i = 0; i < n; i++) {
        synth_reset(sy);
        bt__search_ctx ctx = synth_ctx(sy, 4, true);
        void *st = NULL;
        bt_diag d;
        assert_int_equal(all[i]->create(&ctx, &st, &d), BT_OK);
        uint64_t batch[8], total = 0;
        bool done = false;
        while (!done && total < 300) {
            int k = 0;
            while (k < 8) {
                bt_status rc = all[i]->next(st, &batch[k]);
                if (rc == BT_NOT_FOUND) {
                    done = true;
                    break;
                }
                assert_int_equal(rc, BT_OK);
                if (!synth_valid(sy, batch[k]))
                    fail_msg("%s proposed an invalid config in a batch", all[i]->name);
                if (sy->measured[batch[k]]++)
                    fail_msg("%s proposed config %llu twice in batches", all[i]->name,
                             (unsigned long long)batch[k]);
                k++;
            }
            for (int j = 0; j < k; j++) {
                bt__search_meas m = {.ms = INFINITY, .fail = BT_OK};
                sy->measured[batch[j]]--; /* synth_measure counts it again */
                synth_measure(sy, batch[j], &m);
                all[i]->observe(st, batch[j], m.fail == BT_OK ? m.ms : INFINITY, m.fail);
            }
            total += (uint64_t)k;
        }
        all[i]->destroy(st);
    }
}

/* The round driver: a callback measuring a round, counting the largest round it was given. */
typedef struct batch_user {
    synth *sy;
    size_t largest;
} batch_user;

static bt_status synth_measure_batch(void *user, const uint64_t *idx, size_t n,
                                     bt__search_meas *m)
{
    batch_user *u = user;
    if (n > u->largest)
        u->largest = n;
    for (size_t i = 0; i < n; i++)
        synth_measure(u->sy, idx[i], &m[i]);
    return BT_OK;
}

static void run_batch(synth *sy, const bt__strategy *st, uint64_t seed, size_t batch,
                      const bt__search_budget *b, bt__search_result *res, size_t *largest)
{
    synth_reset(sy);
    bt__search_ctx ctx = synth_ctx(sy, seed, true);
    batch_user u = {sy, 0};
    bt_diag d;
    bt_status rc = bt__search_run_batch(st, &ctx, b, batch, synth_measure_batch, &u, res, &d);
    if (rc != BT_OK)
        fail_msg("%s (rounds of %zu): %s", st->name, batch, d.msg);
    check_measured_once(sy, st, res);
    assert_int_equal(res->invalid_proposals, 0);
    assert_int_equal(res->duplicate_proposals, 0);
    assert_true(u.largest <= batch);
    *largest = u.largest;
}

/* Rounds through bt__search_run_batch: never an invalid or repeated proposal, at most `batch` a
 * round, the budget exact, deterministic per seed and round size, and rounds of one are exactly
 * the one-at-a-time driver. */
static void test_rounds_of_proposals(void **state)
{
    synth *sy = *state;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    const size_t sizes[] = {1, 3, 8};
    for (size_t i = 0; i < n; i++) {
        bt__search_budget b = {.max_evals = 100};
        bt__search_result one;
        run(sy, all[i], 5, &b, true, &one);
        for (size_t z = 0; z < sizeof sizes / sizeof *sizes; z++) {
            bt__search_result r1, r2;
            size_t largest, largest2;
            run_batch(sy, all[i], 5, sizes[z], &b, &r1, &largest);
            run_batch(sy, all[i], 5, sizes[z], &b, &r2, &largest2);
            assert_true(r1.evals <= 100);
            if (r1.stop == BT__STOP_MAX_EVALS)
                assert_int_equal(r1.evals, 100);
            assert_int_equal(r1.evals, r2.evals);
            for (uint64_t e = 0; e < r1.evals; e++)
                if (r1.trace[e].idx != r2.trace[e].idx)
                    fail_msg("%s, rounds of %zu: two runs of one seed differ at %llu",
                             all[i]->name, sizes[z], (unsigned long long)e);
            if (sizes[z] == 1) {
                assert_int_equal(r1.evals, one.evals);
                for (uint64_t e = 0; e < r1.evals; e++)
                    assert_int_equal(r1.trace[e].idx, one.trace[e].idx);
                assert_int_equal(r1.rounds, r1.evals);
            } else if (!strcmp(all[i]->name, "exhaustive") || !strcmp(all[i]->name, "random") ||
                       !strcmp(all[i]->name, "forest")) {
                /* order-independent starts: full rounds */
                assert_int_equal(largest, sizes[z]);
                assert_int_equal(r1.rounds, (r1.evals + sizes[z] - 1) / sizes[z]);
            } else {
                assert_true(largest > 1); /* neighbours of the incumbent go together */
            }
            bt__search_result_clear(&r1);
            bt__search_result_clear(&r2);
        }
        bt__search_result_clear(&one);
    }
}

/* A predicting time limit (what tune uses): no round starts that would end past the limit if it
 * cost what the costliest round so far did; the first round runs whatever the limit. */
static void test_time_limit_predicts_rounds(void **state)
{
    synth *sy = *state;
    sy->cost_each = 1.5;
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    for (size_t i = 0; i < n; i++) {
        bt__search_result r;
        size_t largest;
        /* rounds of 2 cost 3 s: after 3 rounds (9 s) a 4th would end at 12 s > 10 s */
        bt__search_budget b = {.time_limit_s = 10, .predict = true};
        run_batch(sy, all[i], 5, 2, &b, &r, &largest);
        bool full = !strcmp(all[i]->name, "exhaustive") || !strcmp(all[i]->name, "random") ||
                    !strcmp(all[i]->name, "forest"); /* order-independent starts: full rounds */
        if (full) {
            assert_int_equal(r.stop, BT__STOP_TIME_LIMIT);
            assert_int_equal(r.evals, 6);
        }
        assert_true(r.cost_s <= b.time_limit_s);
        bt__search_result_clear(&r);
        /* without prediction the 4th round starts (9 s < 10 s) and ends at 12 s */
        b.predict = false;
        run_batch(sy, all[i], 5, 2, &b, &r, &largest);
        if (full)
            assert_true(r.cost_s > b.time_limit_s);
        bt__search_result_clear(&r);
        /* a limit below one round's cost still measures one round */
        bt__search_budget tiny = {.time_limit_s = 1e-6, .predict = true};
        run_batch(sy, all[i], 5, 2, &tiny, &r, &largest);
        assert_int_equal(r.stop, BT__STOP_TIME_LIMIT);
        assert_int_equal(r.rounds, 1);
        bt__search_result_clear(&r);
    }
    sy->cost_each = 1.0;
}

/* bt__strategy_next_batch: up to max, BT_NOT_FOUND with none when the space is spent. */
static void test_next_batch_until_exhausted(void **state)
{
    synth *sy = *state;
    synth_reset(sy);
    bt__search_ctx ctx = synth_ctx(sy, 1, false);
    const bt__strategy *ex = bt__strategy_find("exhaustive");
    void *st = NULL;
    bt_diag d;
    assert_int_equal(ex->create(&ctx, &st, &d), BT_OK);
    uint64_t idx[7], got = 0, last = 0;
    size_t k;
    bt_status rc;
    while ((rc = bt__strategy_next_batch(ex, st, 7, idx, &k)) == BT_OK) {
        assert_true(k >= 1 && k <= 7);
        for (size_t j = 0; j < k; j++) {
            assert_true(synth_valid(sy, idx[j]));
            assert_true(got == 0 || idx[j] > last); /* index order, no repeats */
            last = idx[j];
            got++;
        }
        if (k < 7)
            break;
    }
    if (rc == BT_OK)
        rc = bt__strategy_next_batch(ex, st, 7, idx, &k);
    assert_int_equal(rc, BT_NOT_FOUND);
    assert_int_equal(k, 0);
    assert_int_equal(got, sy->nvalid);
    ex->destroy(st);
}

/* A space too large to enumerate (> BT__SEARCH_ENUM_MAX configs) is sampled by rejection. */
static bool big_valid(void *user, uint64_t idx)
{
    return idx % 3 != 0;
}
static double big_time(uint64_t idx)
{
    return 1.0 + (double)((idx * 2654435761u) % 1000) / 100.0;
}
static bt_status big_measure(void *user, uint64_t idx, bt__search_meas *m)
{
    if (!big_valid(user, idx))
        return BT_INTERNAL;
    m->ms = big_time(idx);
    m->cost_s = 1;
    return BT_OK;
}

static void test_huge_space(void **state)
{
    bt__space sp;
    bt__space_init(&sp);
    char name[8];
    for (int p = 0; p < 5; p++) {
        snprintf(name, sizeof name, "P%d", p);
        assert_int_equal(bt__space_add_range(&sp, name, 1, 30, 1, NULL), BT_OK);
    }
    assert_true(sp.total > BT__SEARCH_ENUM_MAX);
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    for (size_t i = 0; i < n; i++) {
        bt__search_ctx ctx = {.space = &sp, .is_valid = big_valid, .seed = 1};
        bt__search_budget b = {.max_evals = 60};
        bt__search_result r;
        bt_diag d;
        bt_status st = bt__search_run(all[i], &ctx, &b, big_measure, NULL, &r, &d);
        if (!strcmp(all[i]->name, "model")) {
            assert_int_equal(st, BT_UNSUPPORTED); /* no prior */
        } else {
            if (st != BT_OK)
                fail_msg("%s on a huge space: %s", all[i]->name, d.msg);
            assert_int_equal(r.evals, 60);
            assert_int_equal(r.invalid_proposals + r.duplicate_proposals, 0);
        }
        bt__search_result_clear(&r);
    }
    bt__space_clear(&sp);
}

static void test_model_needs_a_prior(void **state)
{
    synth *sy = *state;
    bt__search_ctx ctx = synth_ctx(sy, 1, false);
    void *st = NULL;
    bt_diag d;
    bt__diag_clear(&d);
    assert_int_equal(bt__strategy_find("model")->create(&ctx, &st, &d), BT_UNSUPPORTED);
    assert_null(st);
    assert_non_null(strstr(d.msg, "no performance model"));
}

static void test_model_trusts_a_good_prior_and_widens_on_a_bad_one(void **state)
{
    synth *sy = *state;
    const bt__strategy *m = bt__strategy_find("model");
    bt__search_result good, bad;
    run(sy, m, 1, NULL, true, &good);
    /* A perfect prior: the first measurement is the best, and it stops after the top
     * max(10, 5% of the valid configs). */
    uint64_t top = (uint64_t)ceil(0.05 * (double)sy->nvalid);
    top = top < 10 ? 10 : top;
    assert_int_equal(good.trace[0].idx, sy->best_idx);
    assert_int_equal(good.stop, BT__STOP_STRATEGY);
    assert_int_equal(good.evals, top);
    sy->reversed_prior = true;
    run(sy, m, 1, NULL, true, &bad);
    sy->reversed_prior = false;
    /* A prior that ranks backwards is caught: the search widens until it has covered the space. */
    assert_true(bad.evals > top);
    assert_int_equal(bad.best_idx, sy->best_idx);
    bt__search_result_clear(&good);
    bt__search_result_clear(&bad);
}

/* The learned strategy beats random on the synthetic space (fewer measurements to the best,
 * summed over seeds). */
static void test_forest_beats_random(void **state)
{
    synth *sy = *state;
    bt__search_budget b = {.target_ms = sy->best_ms};
    uint64_t e_random = 0, e_forest = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        bt__search_result r;
        run(sy, bt__strategy_find("random"), seed, &b, false, &r);
        e_random += r.evals;
        bt__search_result_clear(&r);
        run(sy, bt__strategy_find("forest"), seed, &b, false, &r);
        e_forest += r.evals;
        bt__search_result_clear(&r);
    }
    if (!(e_forest * 2 < e_random))
        fail_msg("forest needed %llu measurements, random %llu", (unsigned long long)e_forest,
                 (unsigned long long)e_random);
}

/* A re-tune with the first tune's binaries ready (ctx.ready: a warm kernel cache) and times
 * that moved by up to 2 % (another run's noise): forest measures mostly what the first tune
 * measured, where without the ready set the moved times send it to many configs it must compile;
 * and it still finds the best; over eight seeds with times moved by up to 5 % and the default
 * budget of a built-in kernel (64, rounds of 16) it compiles under 2 new configs a re-tune (a
 * factor on the expected improvement instead of the additive gain compiled 9-14: bench/NOTES.md
 * 42). With compile_gain 0, or no ready configs, nothing changes. */
typedef struct noisy_user {
    synth *sy;
    double amp;
} noisy_user;

static bt_status noisy_measure_batch(void *user, const uint64_t *idx, size_t n, bt__search_meas *m)
{
    noisy_user *u = user;
    for (size_t i = 0; i < n; i++) {
        synth_measure(u->sy, idx[i], &m[i]);
        uint64_t h = bt__fnv1a(&idx[i], sizeof idx[i], BT__FNV_SEED);
        m[i].ms *= 1 + u->amp * ((double)(h % 2001) / 1000.0 - 1.0);
    }
    return BT_OK;
}

static void run_ready_at(synth *sy, double amp, const uint64_t *ready, size_t nready, double gain,
                         uint64_t seed, uint64_t budget, bt__search_result *res)
{
    synth_reset(sy);
    bt__search_ctx ctx = synth_ctx(sy, seed, true);
    ctx.ready = ready;
    ctx.nready = nready;
    ctx.compile_gain = gain;
    bt__search_budget b = {.max_evals = budget};
    noisy_user u = {sy, amp};
    bt_diag d;
    assert_int_equal(bt__search_run_batch(bt__strategy_find("forest"), &ctx, &b, 16,
                                          noisy_measure_batch, &u, res, &d),
                     BT_OK);
    check_measured_once(sy, bt__strategy_find("forest"), res);
}

static void run_ready(synth *sy, double amp, const uint64_t *ready, size_t nready, double gain,
                      bt__search_result *res)
{
    run_ready_at(sy, amp, ready, nready, gain, 3, 48, res);
}

static size_t not_in(const bt__search_result *r, const uint64_t *set, size_t n)
{
    size_t out = 0;
    for (uint64_t i = 0; i < r->evals; i++)
        out += !bsearch(&r->trace[i].idx, set, n, sizeof *set, bt__cmp_u64);
    return out;
}

static void test_forest_prefers_ready(void **state)
{
    synth *sy = *state;
    bt__search_result first, plain, warm, same;
    run_ready(sy, 0, NULL, 0, 0, &first);
    uint64_t *ready = malloc(sizeof *ready * first.evals);
    assert_non_null(ready);
    for (uint64_t i = 0; i < first.evals; i++)
        ready[i] = first.trace[i].idx;
    qsort(ready, first.evals, sizeof *ready, bt__cmp_u64);
    run_ready(sy, 0.02, NULL, 0, 0.02, &plain);
    run_ready(sy, 0.02, ready, first.evals, 0.02, &warm);
    size_t new_plain = not_in(&plain, ready, first.evals), new_warm = not_in(&warm, ready, first.evals);
    printf("    of 48 measurements, not measured by the first tune: %zu without the ready set, %zu "
           "with it (best %.4f / %.4f, the first tune's %.4f)\n", new_plain, new_warm,
           synth_time(sy, plain.best_idx), synth_time(sy, warm.best_idx),
           synth_time(sy, first.best_idx));
    if (!(new_warm * 3 <= new_plain))
        fail_msg("with the ready set %zu new configs, without %zu", new_warm, new_plain);
    assert_true(synth_time(sy, warm.best_idx) <= synth_time(sy, first.best_idx) * 1.005);
    /* a cost of 0 weighs nothing: the same proposals as without the set */
    run_ready(sy, 0.02, ready, first.evals, 0, &same);
    assert_int_equal(same.evals, plain.evals);
    for (uint64_t i = 0; i < same.evals; i++)
        assert_int_equal(same.trace[i].idx, plain.trace[i].idx);
    bt__search_result_clear(&first);
    bt__search_result_clear(&plain);
    bt__search_result_clear(&warm);
    bt__search_result_clear(&same);
    free(ready);
    size_t fresh = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        run_ready_at(sy, 0, NULL, 0, 0, seed, 64, &first);
        ready = malloc(sizeof *ready * first.evals);
        assert_non_null(ready);
        for (uint64_t i = 0; i < first.evals; i++)
            ready[i] = first.trace[i].idx;
        qsort(ready, first.evals, sizeof *ready, bt__cmp_u64);
        run_ready_at(sy, 0.05, ready, first.evals, 0.02, seed, 64, &warm);
        fresh += not_in(&warm, ready, first.evals);
        assert_true(synth_time(sy, warm.best_idx) <= synth_time(sy, first.best_idx) * 1.005);
        bt__search_result_clear(&first);
        bt__search_result_clear(&warm);
        free(ready);
    }
    printf("    eight re-tunes of 64 at times moved by up to 5 %%: %zu new configs in all\n", fresh);
    assert_true(fresh < 16);
}

/* forest's trust-region step (forest_local.c): the unmeasured config of lowest prediction among
 * those one or two parameter changes from the centre, ties to the lower index; never the centre,
 * never a measured config, never three changes away. Checked against brute force. */
static double local_pred(const void *user, uint64_t idx)
{
    const bt__ordinal *o = user;
    int r[BT_MAX_PARAMS];
    bt__ordinal_ranks(o, idx, r);
    return -(double)(r[0] + r[1] + r[2]); /* best at the top corner, three changes away */
}

static void test_forest_local_step(void **state)
{
    (void)state;
    bt__space sp;
    bt__space_init(&sp);
    assert_int_equal(bt__space_add_range(&sp, "X", 0, 9, 1, NULL), BT_OK);
    assert_int_equal(bt__space_add_range(&sp, "Y", 0, 9, 1, NULL), BT_OK);
    assert_int_equal(bt__space_add_range(&sp, "Z", 0, 9, 1, NULL), BT_OK);
    bt__ordinal o;
    assert_int_equal(bt__ordinal_init(&o, &sp), BT_OK);
    bt__search_ctx ctx = {.space = &sp, .seed = 1};
    bt__idxmap seen;
    bt__idxmap_init(&seen);
    int zero[BT_MAX_PARAMS] = {0};
    uint64_t centre = bt__ordinal_index(&o, zero);
    assert_int_equal(bt__idxmap_put(&seen, centre, 1.0), BT_OK);
    for (int k = 0; k < 40; k++) {
        uint64_t want = UINT64_MAX;
        double wp = INFINITY;
        for (uint64_t i = 0; i < sp.total; i++) {
            int r[BT_MAX_PARAMS];
            bt__ordinal_ranks(&o, i, r);
            int changed = (r[0] != 0) + (r[1] != 0) + (r[2] != 0);
            if (changed == 0 || changed > 2 || bt__idxmap_get(&seen, i, NULL))
                continue;
            double p = local_pred(&o, i);
            if (p < wp || (p == wp && i < want)) {
                wp = p;
                want = i;
            }
        }
        uint64_t got;
        assert_true(bt__local_best(&ctx, &o, &seen, centre, local_pred, &o, &got));
        assert_int_equal(got, want);
        assert_int_equal(bt__idxmap_put(&seen, got, NAN), BT_OK); /* pending counts as seen */
    }
    bt__idxmap_free(&seen);
    bt__ordinal_free(&o);
    bt__space_clear(&sp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_forest_local_step),
        cmocka_unit_test(test_rules_every_strategy),
        cmocka_unit_test(test_exhaustive_order),
        cmocka_unit_test(test_exhaustive_measures_each_valid_config_once),
        cmocka_unit_test(test_budget_max_evals),
        cmocka_unit_test(test_budget_time_limit),
        cmocka_unit_test(test_budget_within_target),
        cmocka_unit_test(test_deterministic_per_seed),
        cmocka_unit_test(test_seeds_differ),
        cmocka_unit_test(test_failures_avoided),
        cmocka_unit_test(test_driver_catches_bad_proposals),
        cmocka_unit_test(test_batches_of_proposals),
        cmocka_unit_test(test_time_limit_predicts_rounds),
        cmocka_unit_test(test_rounds_of_proposals),
        cmocka_unit_test(test_next_batch_until_exhausted),
        cmocka_unit_test(test_huge_space),
        cmocka_unit_test(test_model_needs_a_prior),
        cmocka_unit_test(test_model_trusts_a_good_prior_and_widens_on_a_bad_one),
        cmocka_unit_test(test_forest_beats_random),
        cmocka_unit_test(test_forest_prefers_ready),
    };
    return cmocka_run_group_tests(tests, synth_setup, synth_teardown);
}
