/*
 * driver.c — bt__search_run and bt__search_run_batch: run a strategy under a budget, one config
 * or one round of configs at a time, measuring through a callback, and record the trace. The driver is where the strategy rules are enforced: an invalid config is
 * never measured, a config is never measured twice, and the budget is checked before every
 * measurement.
 */
#include "search/common.h"

#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A strategy that proposes this many unusable configs in a row is broken: stop it. */
#define BT__MAX_BAD_PROPOSALS 100000

const char *bt__search_stop_name(bt__search_stop s)
{
    switch (s) {
    case BT__STOP_NONE:
        return "none";
    case BT__STOP_STRATEGY:
        return "strategy done";
    case BT__STOP_MAX_EVALS:
        return "measurement budget";
    case BT__STOP_TIME_LIMIT:
        return "time limit";
    case BT__STOP_TARGET:
        return "target reached";
    case BT__STOP_ERROR:
        return "error";
    }
    return "?";
}

void bt__search_result_clear(bt__search_result *r)
{
    if (!r)
        return;
    free(r->trace);
    memset(r, 0, sizeof *r);
    r->best_ms = INFINITY;
}

/* Within within_pct of the target (once min_evals measurements are made), or at the target. */
static bool target_reached(const bt__search_budget *b, double best, uint64_t evals)
{
    if (b->target_ms <= 0)
        return false;
    return best <= b->target_ms ||
           (best <= b->target_ms * (1.0 + b->within_pct / 100.0) && evals >= b->min_evals);
}

bt_status bt__strategy_next_batch(const bt__strategy *s, void *state, size_t max, uint64_t *idx,
                                  size_t *n)
{
    *n = 0;
    if (s->next_batch && max > 0)
        return s->next_batch(state, max, idx, n);
    while (*n < max) {
        bt_status st = s->next(state, &idx[*n]);
        if (st == BT_NOT_FOUND)
            break;
        if (st != BT_OK)
            return st;
        (*n)++;
    }
    return *n ? BT_OK : BT_NOT_FOUND;
}

/* The one-at-a-time callback behind bt__search_run. */
typedef struct single_measure {
    bt__measure_fn fn;
    void *user;
} single_measure;

static bt_status measure_single(void *user, const uint64_t *idx, size_t n, bt__search_meas *m)
{
    single_measure *s = user;
    for (size_t i = 0; i < n; i++) {
        bt_status st = s->fn(s->user, idx[i], &m[i]);
        if (st != BT_OK)
            return st;
    }
    return BT_OK;
}

bt_status bt__search_run(const bt__strategy *s, const bt__search_ctx *ctx,
                         const bt__search_budget *b, bt__measure_fn measure, void *measure_user,
                         bt__search_result *out, bt_diag *diag)
{
    single_measure sm = {measure, measure_user};
    return bt__search_run_batch(s, ctx, b, 1, measure_single, &sm, out, diag);
}

/* Appends one measurement to the trace and the best-so-far. */
static bt_status record_step(bt__search_result *out, size_t *trace_cap, uint64_t idx, double ms,
                             bt_status fail)
{
    out->evals++;
    if (fail != BT_OK)
        out->failures++;
    else if (ms < out->best_ms) {
        out->best_ms = ms;
        out->best_idx = idx;
        out->found = true;
    }
    if (out->evals > *trace_cap) {
        size_t ncap = *trace_cap ? *trace_cap * 2 : 256;
        bt__search_step *nt = realloc(out->trace, sizeof *nt * ncap);
        if (!nt)
            return BT_NOMEM;
        out->trace = nt;
        *trace_cap = ncap;
    }
    out->trace[out->evals - 1] = (bt__search_step){
        .idx = idx, .ms = ms, .fail = fail, .cost_s = out->cost_s, .best_ms = out->best_ms};
    return BT_OK;
}

bt_status bt__search_run_batch(const bt__strategy *s, const bt__search_ctx *ctx,
                               const bt__search_budget *b, size_t batch,
                               bt__measure_batch_fn measure, void *measure_user,
                               bt__search_result *out, bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->best_ms = INFINITY;
    bt__diag_clear(diag);
    bt__search_budget nob = {0};
    if (!b)
        b = &nob;
    if (batch < 1)
        batch = 1;
    uint64_t *prop = malloc(sizeof *prop * batch);
    uint64_t *keep = malloc(sizeof *keep * batch);
    bt__search_meas *meas = malloc(sizeof *meas * batch);
    if (!prop || !keep || !meas) {
        free(prop);
        free(keep);
        free(meas);
        out->stop = BT__STOP_ERROR;
        return BT_NOMEM;
    }
    void *state = NULL;
    bt_status st = s->create(ctx, &state, diag);
    if (st != BT_OK) {
        free(prop);
        free(keep);
        free(meas);
        out->stop = BT__STOP_ERROR;
        return st;
    }
    bt__idxmap done; /* measured (or rejected) configs -> observed ms; NAN: in this round */
    bt__idxmap_init(&done);
    size_t trace_cap = 0;
    uint64_t bad_in_row = 0;
    double round_max = 0; /* the costliest round so far */
    for (;;) {
        if (b->max_evals && out->evals >= b->max_evals) {
            out->stop = BT__STOP_MAX_EVALS;
            break;
        }
        if (b->time_limit_s > 0 &&
            (out->cost_s >= b->time_limit_s ||
             (b->predict && out->rounds > 0 && out->cost_s + round_max > b->time_limit_s))) {
            out->stop = BT__STOP_TIME_LIMIT;
            break;
        }
        if (target_reached(b, out->best_ms, out->evals)) {
            out->stop = BT__STOP_TARGET;
            break;
        }
        size_t want = batch;
        if (b->max_evals && b->max_evals - out->evals < want)
            want = (size_t)(b->max_evals - out->evals);
        size_t np = 0;
        st = bt__strategy_next_batch(s, state, want, prop, &np);
        if (st == BT_NOT_FOUND) {
            out->stop = BT__STOP_STRATEGY;
            st = BT_OK;
            break;
        }
        if (st != BT_OK) {
            bt__diag_set(diag, "strategy '%s' failed: %s", s->name, bt_strerror(st));
            out->stop = BT__STOP_ERROR;
            break;
        }
        /* Drop what must not be measured: configs measured before (hand the strategy back
         * what it already knows), repeats within the round, invalid configs. */
        size_t nk = 0;
        for (size_t i = 0; i < np && st == BT_OK; i++) {
            uint64_t idx = prop[i];
            double prev;
            if (bt__idxmap_get(&done, idx, &prev)) {
                out->duplicate_proposals++;
                if (!isnan(prev))
                    s->observe(state, idx, prev, isinf(prev) ? BT_INVALID_CONFIG : BT_OK);
                continue;
            }
            if (!bt__valid(ctx, idx)) {
                out->invalid_proposals++;
                st = bt__idxmap_put(&done, idx, INFINITY);
                if (st == BT_OK)
                    s->observe(state, idx, INFINITY, BT_INVALID_CONFIG);
                continue;
            }
            st = bt__idxmap_put(&done, idx, NAN);
            keep[nk++] = idx;
        }
        if (st != BT_OK) {
            out->stop = BT__STOP_ERROR;
            break;
        }
        if (nk == 0) {
            bad_in_row += np;
            if (bad_in_row > BT__MAX_BAD_PROPOSALS) {
                bt__diag_set(diag, "strategy '%s' keeps proposing invalid or measured configs",
                             s->name);
                out->stop = BT__STOP_ERROR;
                st = BT_INTERNAL;
                break;
            }
            continue;
        }
        bad_in_row = 0;
        for (size_t i = 0; i < nk; i++)
            meas[i] = (bt__search_meas){.ms = INFINITY, .cost_s = -1, .fail = BT_OK};
        double t0 = bt__now(), cost0 = out->cost_s;
        st = measure(measure_user, keep, nk, meas);
        double wall = bt__now() - t0;
        out->rounds++;
        if (st != BT_OK) {
            if (diag && !diag->msg[0])
                bt__diag_set(diag, "measurement failed: %s", bt_strerror(st));
            out->stop = BT__STOP_ERROR;
            break;
        }
        /* Costs the callback did not give: the round's wall time, spread evenly. */
        size_t nunknown = 0;
        for (size_t i = 0; i < nk; i++)
            nunknown += meas[i].cost_s < 0;
        for (size_t i = 0; i < nk && st == BT_OK; i++) {
            uint64_t idx = keep[i];
            double ms = meas[i].fail == BT_OK && isfinite(meas[i].ms) ? meas[i].ms : INFINITY;
            bt_status fail = meas[i].fail == BT_OK && !isfinite(meas[i].ms) ? BT_WRONG_RESULT
                                                                             : meas[i].fail;
            out->cost_s += meas[i].cost_s >= 0 ? meas[i].cost_s : wall / (double)nunknown;
            st = record_step(out, &trace_cap, idx, ms, fail);
            if (st == BT_OK)
                st = bt__idxmap_put(&done, idx, ms);
            if (st == BT_OK)
                s->observe(state, idx, ms, fail);
        }
        if (st != BT_OK) {
            out->stop = BT__STOP_ERROR;
            break;
        }
        round_max = fmax(round_max, out->cost_s - cost0);
    }
    bt__idxmap_free(&done);
    s->destroy(state);
    free(prop);
    free(keep);
    free(meas);
    return st;
}
