/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simulate.h — judging search strategies on recorded spaces (internal).
 *
 * A recorded space (core/recspace.h: what the store layer makes of a Kernel Tuner cache or a
 * blocktune store) is replayed as if it were a device:
 * a config with no record is invalid, a "measurement" returns the recorded time and costs the
 * recorded compile_time + benchmark_time (so time limits are simulated too), and a recorded
 * failure fails. bt__simulate runs one strategy R times with seeds seed, seed+1, ... and
 * summarises how many measurements each run needed to get within 2%, 5% and 10% of the recorded
 * best, and how good the best found was at fixed budgets.
 */
#ifndef BT_SEARCH_SIMULATE_H
#define BT_SEARCH_SIMULATE_H

#include "core/recspace.h"
#include "search/strategy.h"

#define BT__SIM_NTHRESH 3
#define BT__SIM_NBUDGETS 7
/* The thresholds (% over the best) and budgets (measurements) that are reported. */
extern const double bt__sim_thresholds[BT__SIM_NTHRESH]; /* 2, 5, 10 */
extern const uint64_t bt__sim_budgets[BT__SIM_NBUDGETS]; /* 10 25 50 100 200 500 1000 */

/* --- the replay device -------------------------------------------------------------------------
 * user = the bt__recspace. */
bool bt__replay_valid(void *user, uint64_t idx);
bt_status bt__replay_measure(void *user, uint64_t idx, bt__search_meas *m);
/* A search context over the recorded space (no prior: a recording has no model). */
void bt__replay_ctx(const bt__recspace *c, uint64_t seed, bt__search_ctx *ctx);

/* --- simulation ---------------------------------------------------------------------------------
 */
typedef struct bt__sim_options {
    uint64_t runs;       /* seeded runs (0: 100) */
    uint64_t budget;     /* measurements per run (0: as many as there are recorded configs) */
    uint64_t seed;       /* run r uses seed + r */
    double time_limit_s; /* simulated seconds per run (0: none) */
    int jobs;            /* threads running runs in parallel (<= 1: serial); results do not
                            depend on it */
    bool full;           /* run every run to its budget; by default a run stops once nothing
                            reported can change any more: it is within the smallest threshold
                            of the best and past the largest reported budget */
} bt__sim_options;

/* One run, reduced to what is reported. */
typedef struct bt__sim_run {
    uint64_t evals;
    double cost_s;                      /* simulated seconds spent */
    uint64_t evals_to[BT__SIM_NTHRESH]; /* measurements to within the threshold, UINT64_MAX
                                           when never */
    double time_to[BT__SIM_NTHRESH];    /* simulated seconds to within it, INFINITY never */
    double best_at[BT__SIM_NBUDGETS];   /* best ms after that many measurements (the run's
                                           final best if it stopped earlier), INFINITY none */
    double best_ms;
    uint64_t invalid_proposals, duplicate_proposals;
    bt__search_stop stop;
} bt__sim_run;

/* Summary over the runs. Counts use the nearest-rank percentile (median = the ceil(R/2)-th
 * smallest); runs that never got there count as larger than the budget, so a percentile that
 * falls on them is UINT64_MAX ("> budget"). */
typedef struct bt__sim_stats {
    uint64_t runs;
    uint64_t budget; /* effective: min(budget, recorded configs) */
    uint64_t evals_med[BT__SIM_NTHRESH], evals_p90[BT__SIM_NTHRESH];
    double success[BT__SIM_NTHRESH];      /* fraction of runs that got there */
    double time_med[BT__SIM_NTHRESH];     /* median simulated seconds to get there (INFINITY
                                             when the median run did not) */
    double best_at_pct[BT__SIM_NBUDGETS]; /* median % over the best after b measurements;
                                             NAN when b > budget, INFINITY when nothing
                                             succeeded */
    double evals_mean;                    /* measurements per run */
    uint64_t evals_run_med;               /* median measurements per run (a strategy that
                                             stops on its own evidence measures fewer than
                                             the budget) */
    uint64_t invalid_proposals, duplicate_proposals; /* summed over runs: must be 0 */
} bt__sim_stats;

/* Facts about the recorded space that the report shows beside the strategies. */
typedef struct bt__sim_space_info {
    uint64_t total;    /* cartesian configs */
    uint64_t recorded; /* valid (recorded) configs */
    uint64_t failed;
    double best_ms;
    uint64_t within[BT__SIM_NTHRESH];      /* configs within the thresholds of the best */
    double random_expect[BT__SIM_NTHRESH]; /* expected measurements of random sampling without
                                              replacement to hit one: (N + 1) / (k + 1) */
} bt__sim_space_info;

void bt__sim_space_info_of(const bt__recspace *c, bt__sim_space_info *out);

/* Runs strategy s o->runs times on the recorded space. Fills *stats and, when runs_out is not
 * NULL, a malloc'd array of o->runs runs (the caller frees). BT_UNSUPPORTED with a diag when the
 * strategy cannot run on this space (e.g. `model`: "no performance model for this space");
 * BT_INVALID_ARG when the space has no successful record. */
bt_status bt__simulate(const bt__recspace *c, const bt__strategy *s, const bt__sim_options *o,
                       bt__sim_stats *stats, bt__sim_run **runs_out, bt_diag *diag);

#endif
