/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_default_quality.c — the winner quality of what `tune` does by default (the default
 * strategy for the space, under the default measurement budget BT__SEARCH_DEFAULT_BUDGET), on two
 * recorded Kernel Tuner spaces of tests/data/kt/: the share of seeded runs whose best is within 5%
 * of the recorded best must not fall below a floor well under today's (issue 18 item 5; the
 * numbers and how they were measured are in bench/NOTES.md 28 and 37). The runs are seeded, so the
 * result is deterministic; the floors leave room for a change that only reshuffles random draws,
 * and sit far above what random sampling gets at the same budget, so a default that stops
 * learning fails. Kept under ~10 s: few runs, two spaces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "search/simulate.h"
#include "search/strategy.h"
#include "store/ktcache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CACHE_DIR BT_SOURCE_DIR "/tests/data/kt"

/* floor: the least share of runs within 5% of the best; random: what uniform sampling without
 * replacement gets at the default budget (1 - P(no config within 5% among the budget's draws)),
 * computed here from the space, so that the floor is seen to mean something. */
static void check_space(const char *file, uint64_t runs, double floor)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", CACHE_DIR, file);
    bt__ktcache *c = NULL;
    bt_diag d;
    assert_int_equal(bt__ktcache_load(path, &c, &d), BT_OK);
    bt__recspace rs; /* the cache as the recorded space simulation replays */
    bt__ktcache_recspace(c, &rs);

    const bt__strategy *s = bt__strategy_default(c->nrecs, 0);
    assert_non_null(s);
    assert_string_equal(s->name, BT__SEARCH_DEFAULT_LARGE);
    bt__sim_options o = {.runs = runs, .budget = BT__SEARCH_DEFAULT_BUDGET, .seed = 1, .jobs = 2};
    bt__sim_stats st;
    bt__sim_run *rr = NULL;
    assert_int_equal(bt__simulate(&rs, s, &o, &st, &rr, &d), BT_OK);
    assert_non_null(rr);
    uint64_t within = 0;
    double lim = c->best_ms * 1.05;
    for (uint64_t r = 0; r < runs; r++) {
        assert_true(rr[r].evals <= BT__SEARCH_DEFAULT_BUDGET);
        assert_true(isfinite(rr[r].best_ms));
        within += rr[r].best_ms <= lim;
    }
    assert_int_equal(st.invalid_proposals, 0);
    assert_int_equal(st.duplicate_proposals, 0);
    /* The summary and the runs agree. */
    assert_true(fabs(st.success[1] - (double)within / (double)runs) < 1e-12);

    bt__sim_space_info info;
    bt__sim_space_info_of(&rs, &info);
    double miss = 1;
    for (uint64_t k = 0; k < BT__SEARCH_DEFAULT_BUDGET; k++)
        miss *= (double)(info.recorded - info.within[1] - k) / (double)(info.recorded - k);
    double share = (double)within / (double)runs;
    printf("%s: %s at budget %d: %llu of %llu runs within 5%% (%.0f%%; floor %.0f%%, random "
           "sampling %.0f%%)\n",
           file, s->name, BT__SEARCH_DEFAULT_BUDGET, (unsigned long long)within,
           (unsigned long long)runs, share * 100, floor * 100, (1 - miss) * 100);
    assert_true(floor > 2 * (1 - miss)); /* the floor is worth guarding */
    assert_true(share >= floor);
    free(rr);
    bt__ktcache_free(c);
}

/* At the default of 128 (forest with its trust-region step): 70% of runs within 5% over seeds
 * 301..600, 76% over seeds 1..100, 75% (18) over the 24 here; random sampling at 128 gets 28%
 * (NOTES 38). */
static void test_conv_a4000(void **state)
{
    (void)state;
    check_space("convolution_milo_A4000.json.gz", 24, 0.60);
}

/* At the default of 128: 97% of runs within 5% over seeds 301..600, 99% over seeds 1..100, 100%
 * over the 16 here; random sampling at 128 gets 28% (NOTES 38). */
static void test_dedisp_w6600(void **state)
{
    (void)state;
    check_space("dedispersion_milo_W6600.json.gz", 16, 0.80);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_a4000),
        cmocka_unit_test(test_dedisp_w6600),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
