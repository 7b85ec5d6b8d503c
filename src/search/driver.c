/* SPDX-License-Identifier: Apache-2.0 */
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

/* One search in progress: what bt__search_run_batch works with between its rounds. */
typedef struct run {
    const bt__strategy *s;
    const bt__search_ctx *ctx;
    const bt__search_budget *b;
    bt__search_result *out;
    void *state;
    bt__idxmap done; /* measured (or rejected) configs -> observed ms; NAN: in this round */
    size_t trace_cap;
    uint64_t bad_in_row;
    double round_max; /* the costliest round so far */
    uint64_t *prop, *keep;
    bt__search_meas *meas;
} run;

/* Whether the budget, the time limit or the target ends the search before the next round
 * (out->stop says which). */
static bool stop_before_round(const run *R)
{
    const bt__search_budget *b = R->b;
    bt__search_result *out = R->out;
    if (b->max_evals && out->evals >= b->max_evals)
        out->stop = BT__STOP_MAX_EVALS;
    else if (b->time_limit_s > 0 &&
             (out->cost_s >= b->time_limit_s ||
              (b->predict && out->rounds > 0 && out->cost_s + R->round_max > b->time_limit_s)))
        out->stop = BT__STOP_TIME_LIMIT;
    else if (target_reached(b, out->best_ms, out->evals))
        out->stop = BT__STOP_TARGET;
    else
        return false;
    return true;
}

/* Keeps of the np proposals those to measure, into R->keep[0..*nk): configs measured before go
 * back to the strategy with what is known of them, repeats within the round are dropped, and
 * invalid configs are observed as such. */
static bt_status filter_round(run *R, size_t np, size_t *nk)
{
    bt_status st = BT_OK;
    *nk = 0;
    for (size_t i = 0; i < np && st == BT_OK; i++) {
        uint64_t idx = R->prop[i];
        double prev;
        if (bt__idxmap_get(&R->done, idx, &prev)) {
            R->out->duplicate_proposals++;
            if (!isnan(prev))
                R->s->observe(R->state, idx, prev, isinf(prev) ? BT_INVALID_CONFIG : BT_OK);
            continue;
        }
        if (!bt__valid(R->ctx, idx)) {
            R->out->invalid_proposals++;
            st = bt__idxmap_put(&R->done, idx, INFINITY);
            if (st == BT_OK)
                R->s->observe(R->state, idx, INFINITY, BT_INVALID_CONFIG);
            continue;
        }
        st = bt__idxmap_put(&R->done, idx, NAN);
        R->keep[(*nk)++] = idx;
    }
    return st;
}

/* Records the nk measurements of a round that took `wall` seconds: each one's cost (the wall
 * time spread evenly over those the callback gave none), the trace, and the strategy told. */
static bt_status record_round(run *R, size_t nk, double wall)
{
    size_t nunknown = 0;
    for (size_t i = 0; i < nk; i++)
        nunknown += R->meas[i].cost_s < 0;
    bt_status st = BT_OK;
    for (size_t i = 0; i < nk && st == BT_OK; i++) {
        const bt__search_meas *m = &R->meas[i];
        uint64_t idx = R->keep[i];
        double ms = m->fail == BT_OK && isfinite(m->ms) ? m->ms : INFINITY;
        bt_status fail = m->fail == BT_OK && !isfinite(m->ms) ? BT_WRONG_RESULT : m->fail;
        R->out->cost_s += m->cost_s >= 0 ? m->cost_s : wall / (double)nunknown;
        st = record_step(R->out, &R->trace_cap, idx, ms, fail);
        if (st == BT_OK)
            st = bt__idxmap_put(&R->done, idx, ms);
        if (st == BT_OK)
            R->s->observe(R->state, idx, ms, fail);
    }
    return st;
}

/* The rounds until something stops the search (R->out->stop says what). */
static bt_status run_rounds(run *R, size_t batch, bt__measure_batch_fn measure,
                            void *measure_user, bt_diag *diag)
{
    const bt__search_budget *b = R->b;
    bt__search_result *out = R->out;
    while (!stop_before_round(R)) {
        size_t want = batch;
        if (b->max_evals && b->max_evals - out->evals < want)
            want = (size_t)(b->max_evals - out->evals);
        size_t np = 0, nk = 0;
        bt_status st = bt__strategy_next_batch(R->s, R->state, want, R->prop, &np);
        if (st == BT_NOT_FOUND) {
            out->stop = BT__STOP_STRATEGY;
            return BT_OK;
        }
        if (st != BT_OK) {
            bt__diag_set(diag, "strategy '%s' failed: %s", R->s->name, bt_strerror(st));
            return st;
        }
        if ((st = filter_round(R, np, &nk)) != BT_OK)
            return st;
        if (nk == 0) {
            R->bad_in_row += np;
            if (R->bad_in_row > BT__MAX_BAD_PROPOSALS) {
                bt__diag_set(diag, "strategy '%s' keeps proposing invalid or measured configs",
                             R->s->name);
                return BT_INTERNAL;
            }
            continue;
        }
        R->bad_in_row = 0;
        for (size_t i = 0; i < nk; i++)
            R->meas[i] = (bt__search_meas){.ms = INFINITY, .cost_s = -1, .fail = BT_OK};
        double t0 = bt__now(), cost0 = out->cost_s;
        st = measure(measure_user, R->keep, nk, R->meas);
        out->rounds++;
        if (st != BT_OK) {
            if (diag && !diag->msg[0])
                bt__diag_set(diag, "measurement failed: %s", bt_strerror(st));
            return st;
        }
        if ((st = record_round(R, nk, bt__now() - t0)) != BT_OK)
            return st;
        R->round_max = fmax(R->round_max, out->cost_s - cost0);
    }
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
    if (batch < 1)
        batch = 1;
    run R = {.s = s, .ctx = ctx, .b = b ? b : &nob, .out = out};
    R.prop = malloc(sizeof *R.prop * batch);
    R.keep = malloc(sizeof *R.keep * batch);
    R.meas = malloc(sizeof *R.meas * batch);
    bt_status st = R.prop && R.keep && R.meas ? s->create(ctx, &R.state, diag) : BT_NOMEM;
    if (st == BT_OK) {
        bt__idxmap_init(&R.done);
        st = run_rounds(&R, batch, measure, measure_user, diag);
        bt__idxmap_free(&R.done);
        s->destroy(R.state);
    }
    if (st != BT_OK)
        out->stop = BT__STOP_ERROR;
    free(R.prop);
    free(R.keep);
    free(R.meas);
    return st;
}
