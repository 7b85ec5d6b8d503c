/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strategy.h — search strategies and the driver that runs one under a budget (internal).
 *
 * A strategy proposes config indices of a space (bt__space's mixed-radix index) one at a time and
 * is told what each measurement gave. It never measures anything itself: the driver
 * (bt__search_run) asks it for the next index, checks that the index is valid and new, measures it
 * through a callback (a real device in `tune`, a recorded space in `simulate`), hands the result
 * back, and stops on the budget: a number of measurements, a time limit (the measurements' own
 * cost, so simulated time counts too) or "within X% of a target time".
 *
 *   ctx ──► create ──► next ──► driver: valid? new? ──► measure ──► observe ──► next ...
 *
 * Rules every strategy follows (tests/test_search.c checks them for every registered strategy):
 *   - it proposes only configs for which ctx->is_valid is true, and never the same config twice;
 *     the driver still checks both (an invalid config is never measured) and counts violations;
 *   - a failed measurement (ms = INFINITY, fail = the status) is information: strategies avoid
 *     the neighbourhood of failures rather than retrying them;
 *   - it is deterministic: the same ctx (seed included) and the same observations give the same
 *     proposals;
 *   - next returns BT_NOT_FOUND when it has nothing left to propose (space exhausted, or the
 *     strategy's own stopping rule, as `model` has).
 *
 * A caller that measures several configs at once (a round compiled in parallel) asks for a batch
 * (bt__strategy_next_batch): configs to measure before seeing any of their results.
 *
 * Strategies live one per file in src/search/s_<name>.c and are registered in registry.c.
 */
#ifndef BT_SEARCH_STRATEGY_H
#define BT_SEARCH_STRATEGY_H

#include "blocktune.h"
#include "core/space.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a strategy knows about the problem. The pointers must outlive the strategy's state. */
typedef struct bt__search_ctx {
    const bt__space *space;
    /* true when config idx may be measured (constraints, rules, present in a recorded space).
     * NULL: every index < space->total is valid. Called often: keep it cheap. */
    bool (*is_valid)(void *user, uint64_t idx);
    /* Predicted time of config idx in ms (any monotone scale: only the order is used), NAN when
     * unknown; NULL when there is no performance model (the analytic model of a blocktune kernel,
     * or a kernel-supplied perf expression, fills it). */
    double (*prior)(void *user, uint64_t idx);
    void *user;         /* passed to is_valid and prior */
    uint64_t seed;      /* the only source of randomness */
    uint64_t max_evals; /* the budget's measurement limit as a hint for schedules, 0: none */
    /* Configs that are cheaper to measure than the others: their binaries are ready (the kernel
     * cache holds them from an earlier tune), the others must be compiled first, so a config to
     * compile must promise compile_gain more expected improvement of the best time (a fraction:
     * ln time) than a ready one. ready[0..nready) in increasing order; NULL / 0: every config
     * costs the same. A strategy that weighs its candidates by what they promise may weigh them
     * by what they cost too (weighs_cost: forest); the others ignore it. */
    const uint64_t *ready;
    size_t nready;
    double compile_gain;
} bt__search_ctx;

/* A strategy: a small ADT behind one vtable (filled with designated initialisers). */
typedef struct bt__strategy {
    const char *name;
    const char *summary; /* one line for --help */
    /* Creates the state (*state is NULL on failure). BT_UNSUPPORTED with a diag when the strategy
     * cannot work on this ctx (e.g. `model` without a prior). */
    bt_status (*create)(const bt__search_ctx *ctx, void **state, bt_diag *diag);
    /* The next config to measure: BT_OK and *idx, or BT_NOT_FOUND when done. */
    bt_status (*next)(void *state, uint64_t *idx);
    /* The outcome of the config last proposed: ms (finite) when fail == BT_OK, else ms is
     * INFINITY and fail says why (BT_COMPILE, BT_LAUNCH, BT_INVALID_CONFIG, ...). */
    void (*observe)(void *state, uint64_t idx, double ms, bt_status fail);
    void (*destroy)(void *state); /* accepts NULL */
    /* Optional: up to `max` (>= 1) configs to measure before any of their results is observed
     * (a round compiled in parallel), into idx[0..*n). BT_NOT_FOUND (with *n = 0) when done.
     * With max == 1 it proposes what `next` would. NULL: `next` is called up to max times
     * (right for strategies whose order does not depend on the results: every strategy
     * remembers a proposal at once, so a pending config is never proposed again). */
    bt_status (*next_batch)(void *state, size_t max, uint64_t *idx, size_t *n);
    /* It weighs its candidates by what they cost to measure (ctx->ready, compile_gain): a tuner
     * looks the ready configs up only for such a strategy. */
    bool weighs_cost;
} bt__strategy;

/* Up to max configs through s->next_batch, or through s->next when it has none (see above). */
bt_status bt__strategy_next_batch(const bt__strategy *s, void *state, size_t max, uint64_t *idx,
                                  size_t *n);

/* The registry (registry.c): every strategy, in a stable order. */
const bt__strategy *const *bt__strategies(size_t *count);
/* A strategy by (case-insensitive) name, or NULL. */
const bt__strategy *bt__strategy_find(const char *name);

/* Spaces with at most this many valid configs are searched exhaustively by default. */
#define BT__SEARCH_EXHAUSTIVE_MAX_DEFAULT 128
/* The strategy `tune` uses by default for large spaces (chosen by bench/simulate.sh, see
 * docs/search.md). */
#define BT__SEARCH_DEFAULT_LARGE "forest"
/* The measurement budget `tune` gives a non-exhaustive strategy when neither a budget nor a time
 * limit is given and nothing predicts the configs' times (a kernel without a model kind, a
 * recorded space: tests/test_default_quality.c holds the default's winner quality at it on the
 * recorded spaces, bench/NOTES.md 38). */
#define BT__SEARCH_DEFAULT_BUDGET 128
/* The same for a kernel whose spec declares what it computes (a model kind: every built-in
 * kernel), whose analytic model ranks the configs before anything is measured and seeds the
 * forest: half, so that a default tune of a built-in GEMM family stays within seconds (issue 18
 * item 4: <= 10 s cold on the H200 at this budget, bench/NOTES.md 37). */
#define BT__SEARCH_DEFAULT_BUDGET_MODEL 64
/* The default strategy for a space of `nvalid` valid configs: "exhaustive" when nvalid <=
 * exhaustive_max (0 means BT__SEARCH_EXHAUSTIVE_MAX_DEFAULT), else BT__SEARCH_DEFAULT_LARGE. */
const bt__strategy *bt__strategy_default(uint64_t nvalid, uint64_t exhaustive_max);

/* ---------------------------------------------------------------------------------------------
 * The driver
 * ------------------------------------------------------------------------------------------- */
typedef struct bt__search_budget {
    uint64_t max_evals;  /* stop after this many measurements; 0: no limit */
    double time_limit_s; /* no measurement starts once the measurements' summed cost reaches
                            this (the one in flight completes); 0: no limit */
    bool predict;        /* with time_limit_s, in rounds: no round starts either that would end
                            past the limit if it cost what the costliest round so far did (the
                            first round always runs) */
    double target_ms;    /* with within_pct: stop once best <= target_ms * (1 + within_pct/100);
                            0: no target */
    double within_pct;
    uint64_t min_evals; /* "within X%" stops the search only after this many measurements
                           (reaching target_ms itself stops it at once) */
} bt__search_budget;

/* One measurement, filled by the measure callback. */
typedef struct bt__search_meas {
    double ms;      /* the config's time (ignored when fail != BT_OK) */
    double cost_s;  /* what the measurement cost (compile + benchmark); < 0: the driver uses the
                       wall-clock time of the callback */
    bt_status fail; /* BT_OK, or why the config failed (it still counts as a measurement) */
} bt__search_meas;

/* Measures config idx. Returns BT_OK when m is filled (the config may still have failed: see
 * m->fail); any other status aborts the search with that status (device lost, out of memory). */
typedef bt_status (*bt__measure_fn)(void *user, uint64_t idx, bt__search_meas *m);
/* Measures the n configs of one round (idx[i] -> m[i], each prefilled with ms = INFINITY,
 * cost_s = -1, fail = BT_OK); same contract as bt__measure_fn. A cost_s < 0 means the driver
 * uses the wall-clock time of the whole call (once per round, spread over its configs). */
typedef bt_status (*bt__measure_batch_fn)(void *user, const uint64_t *idx, size_t n,
                                          bt__search_meas *m);

typedef enum bt__search_stop {
    BT__STOP_NONE = 0,
    BT__STOP_STRATEGY, /* the strategy had nothing more to propose */
    BT__STOP_MAX_EVALS,
    BT__STOP_TIME_LIMIT,
    BT__STOP_TARGET, /* within within_pct of target_ms */
    BT__STOP_ERROR,  /* the measure callback or the strategy failed */
} bt__search_stop;

const char *bt__search_stop_name(bt__search_stop s);

/* One measurement of a run, in order. */
typedef struct bt__search_step {
    uint64_t idx;
    double ms; /* INFINITY when failed */
    bt_status fail;
    double cost_s;  /* cumulative cost up to and including this measurement */
    double best_ms; /* best so far (INFINITY while nothing succeeded) */
} bt__search_step;

typedef struct bt__search_result {
    bool found; /* some measurement succeeded */
    uint64_t best_idx;
    double best_ms; /* INFINITY when !found */
    uint64_t evals; /* measurements made (failures included) */
    uint64_t failures;
    double cost_s;              /* summed measurement cost */
    uint64_t invalid_proposals; /* strategy bugs caught by the driver (never measured) */
    uint64_t duplicate_proposals;
    uint64_t rounds; /* measure calls (rounds of up to `batch` configs) */
    bt__search_stop stop;
    bt__search_step *trace; /* malloc'd, evals entries; freed by bt__search_result_clear */
} bt__search_result;

void bt__search_result_clear(bt__search_result *r);

/* Runs `s` on ctx under budget b, measuring through `measure`. Fills *out (cleared first; the
 * caller clears it after use, also on failure). Returns BT_OK when the search ran to one of its
 * stopping rules (out->stop says which); the strategy's create error (diag set, e.g.
 * BT_UNSUPPORTED) or the callback's fatal status otherwise. */
bt_status bt__search_run(const bt__strategy *s, const bt__search_ctx *ctx,
                         const bt__search_budget *b, bt__measure_fn measure, void *measure_user,
                         bt__search_result *out, bt_diag *diag);

/* The same in rounds: each round the strategy proposes up to `batch` configs (bt__strategy_next_
 * batch; fewer when the measurement budget has less left), the driver drops invalid and repeated
 * ones, `measure` measures the rest together and every result is observed, in proposal order,
 * before the next round. The budget is checked before every round (the round in flight
 * completes). batch 1 is exactly bt__search_run; the run is deterministic for a given batch. */
bt_status bt__search_run_batch(const bt__strategy *s, const bt__search_ctx *ctx,
                               const bt__search_budget *b, size_t batch,
                               bt__measure_batch_fn measure, void *measure_user,
                               bt__search_result *out, bt_diag *diag);

#endif
