/*
 * driver.c — bt__search_run: runs a strategy under a budget, measuring through a callback, and
 * records the trace. The driver is where the strategy rules are enforced: an invalid config is
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

bt_status bt__search_run(const bt__strategy *s, const bt__search_ctx *ctx,
                         const bt__search_budget *b, bt__measure_fn measure, void *measure_user,
                         bt__search_result *out, bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->best_ms = INFINITY;
    bt__diag_clear(diag);
    bt__search_budget nob = {0};
    if (!b)
        b = &nob;
    void *state = NULL;
    bt_status st = s->create(ctx, &state, diag);
    if (st != BT_OK) {
        out->stop = BT__STOP_ERROR;
        return st;
    }
    bt__idxmap done; /* measured (or rejected) configs -> observed ms */
    bt__idxmap_init(&done);
    size_t trace_cap = 0;
    uint64_t bad_in_row = 0;
    for (;;) {
        if (b->max_evals && out->evals >= b->max_evals) {
            out->stop = BT__STOP_MAX_EVALS;
            break;
        }
        if (b->time_limit_s > 0 && out->cost_s >= b->time_limit_s) {
            out->stop = BT__STOP_TIME_LIMIT;
            break;
        }
        if (target_reached(b, out->best_ms, out->evals)) {
            out->stop = BT__STOP_TARGET;
            break;
        }
        uint64_t idx;
        st = s->next(state, &idx);
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
        double prev;
        if (bt__idxmap_get(&done, idx, &prev)) {
            /* A strategy bug: hand it back what it already knows, measure nothing. */
            out->duplicate_proposals++;
            s->observe(state, idx, prev, isinf(prev) ? BT_INVALID_CONFIG : BT_OK);
            if (++bad_in_row > BT__MAX_BAD_PROPOSALS) {
                bt__diag_set(diag, "strategy '%s' keeps proposing measured configs", s->name);
                out->stop = BT__STOP_ERROR;
                st = BT_INTERNAL;
                break;
            }
            continue;
        }
        if (!bt__valid(ctx, idx)) {
            out->invalid_proposals++;
            st = bt__idxmap_put(&done, idx, INFINITY);
            if (st != BT_OK)
                break;
            s->observe(state, idx, INFINITY, BT_INVALID_CONFIG);
            if (++bad_in_row > BT__MAX_BAD_PROPOSALS) {
                bt__diag_set(diag, "strategy '%s' keeps proposing invalid configs", s->name);
                out->stop = BT__STOP_ERROR;
                st = BT_INTERNAL;
                break;
            }
            continue;
        }
        bad_in_row = 0;
        bt__search_meas m = {.ms = INFINITY, .cost_s = -1, .fail = BT_OK};
        double t0 = bt__now();
        st = measure(measure_user, idx, &m);
        double wall = bt__now() - t0;
        if (st != BT_OK) {
            if (diag && !diag->msg[0])
                bt__diag_set(diag, "measurement failed: %s", bt_strerror(st));
            out->stop = BT__STOP_ERROR;
            break;
        }
        double ms = m.fail == BT_OK && isfinite(m.ms) ? m.ms : INFINITY;
        bt_status fail = m.fail == BT_OK && !isfinite(m.ms) ? BT_WRONG_RESULT : m.fail;
        out->cost_s += m.cost_s >= 0 ? m.cost_s : wall;
        out->evals++;
        if (fail != BT_OK)
            out->failures++;
        else if (ms < out->best_ms) {
            out->best_ms = ms;
            out->best_idx = idx;
            out->found = true;
        }
        if (out->evals > trace_cap) {
            size_t ncap = trace_cap ? trace_cap * 2 : 256;
            bt__search_step *nt = realloc(out->trace, sizeof *nt * ncap);
            if (!nt) {
                st = BT_NOMEM;
                out->stop = BT__STOP_ERROR;
                break;
            }
            out->trace = nt;
            trace_cap = ncap;
        }
        out->trace[out->evals - 1] = (bt__search_step){
            .idx = idx, .ms = ms, .fail = fail, .cost_s = out->cost_s, .best_ms = out->best_ms};
        st = bt__idxmap_put(&done, idx, ms);
        if (st != BT_OK) {
            out->stop = BT__STOP_ERROR;
            break;
        }
        s->observe(state, idx, ms, fail);
    }
    bt__idxmap_free(&done);
    s->destroy(state);
    return st;
}
