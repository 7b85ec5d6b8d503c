/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_coordinate.c — the `coordinate` strategy: coordinate descent over one parameter at a time,
 * as PyTorch Inductor's coordinate-descent tuner does, with random restarts.
 *
 * From the current config, for each parameter in turn, the neighbours along that parameter are
 * measured: the next smaller and next larger value, and for power-of-two parameters half and
 * double the value (other parameters also try half/double when the list holds them). The best
 * neighbour replaces the current config if it is faster. A sweep over all parameters that
 * improves nothing is a local optimum: the search restarts from a random unmeasured valid config
 * (the first start is the prior's best config when a performance model is present). Configs
 * measured before are reused without a new measurement; invalid and failed neighbours are never
 * moved to, so failing regions are avoided. A round (next_batch) is a start point alone, or the
 * untried neighbours along the parameter being explored.
 */
#include "search/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CD_MAX_CAND 4

typedef struct cd_state {
    bt__walk w; /* context, valid set, ranks, random stream, measured configs */
    bool have_cur;   /* a current config with a known time */
    uint64_t cur;
    double cur_ms;
    bool started;       /* the first start has been chosen */
    bool pending_start; /* the proposal in flight is a new start point */
    int param;          /* parameter being explored */
    bool improved;      /* some move in this sweep */
    uint64_t cand[CD_MAX_CAND];
    int ncand, icand;
    uint64_t best_cand;
    double best_cand_ms;
} cd_state;

static void cd_destroy(void *state)
{
    cd_state *s = state;
    if (!s)
        return;
    bt__walk_free(&s->w);
    free(s);
}

static bt_status cd_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    cd_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    bt_status st = bt__walk_init(&s->w, ctx, 0x636f6f7264ULL);
    if (st != BT_OK) {
        free(s);
        return st;
    }
    *state = s;
    return BT_OK;
}

/* Fills s->cand with the neighbours of s->cur along s->param. */
static void cd_build_candidates(cd_state *s)
{
    int p = s->param;
    s->ncand = s->icand = 0;
    s->best_cand_ms = INFINITY;
    int n = s->w.ord.nvalues[p];
    if (n < 2)
        return;
    int ranks[BT_MAX_PARAMS];
    bt__ordinal_ranks(&s->w.ord, s->cur, ranks);
    int r0 = ranks[p];
    int64_t v = s->w.ctx.space->params[p].values[s->w.ord.pos[p][r0]];
    int cands[4] = {r0 - 1, r0 + 1, -1, -1};
    if (v % 2 == 0)
        cands[2] = bt__ordinal_rank_of_value(&s->w.ord, p, v / 2);
    if (v <= INT64_MAX / 2)
        cands[3] = bt__ordinal_rank_of_value(&s->w.ord, p, v * 2);
    for (int i = 0; i < 4; i++) {
        int r = cands[i];
        if (r < 0 || r >= n || r == r0)
            continue;
        bool dup = false;
        for (int j = 0; j < i; j++)
            dup = dup || cands[j] == r;
        if (dup)
            continue;
        ranks[p] = r;
        s->cand[s->ncand++] = bt__ordinal_index(&s->w.ord, ranks);
    }
}

/* Picks a new start: the prior's best on the first start when there is a prior, else a random
 * unmeasured valid config. false when every valid config has been measured. */
static bool cd_restart(cd_state *s, uint64_t *idx)
{
    s->have_cur = false;
    s->param = 0;
    s->improved = false;
    s->ncand = s->icand = 0;
    if (!s->started && s->w.ctx.prior && s->w.valid.enumerated) {
        s->started = true;
        double best = INFINITY;
        bool any = false;
        for (uint64_t i = 0; i < s->w.valid.n; i++) {
            double pr = s->w.ctx.prior(s->w.ctx.user, s->w.valid.idx[i]);
            if (!isnan(pr) && (!any || pr < best)) {
                best = pr;
                *idx = s->w.valid.idx[i];
                any = true;
            }
        }
        if (any)
            return true;
    }
    s->started = true;
    return bt__valid_random_unseen(&s->w.valid, &s->w.rng, &s->w.seen, idx);
}

static bt_status cd_propose(void *state, uint64_t *idx)
{
    cd_state *s = state;
    for (;;) {
        if (!s->have_cur) {
            if (!cd_restart(s, idx))
                return BT_NOT_FOUND;
            s->pending_start = true;
            return BT_OK;
        }
        while (s->icand < s->ncand) {
            uint64_t c = s->cand[s->icand++];
            double ms;
            if (bt__idxmap_get(&s->w.seen, c, &ms)) {
                if (ms < s->best_cand_ms) {
                    s->best_cand_ms = ms;
                    s->best_cand = c;
                }
                continue;
            }
            if (!bt__valid(&s->w.ctx, c))
                continue;
            *idx = c;
            return BT_OK;
        }
        /* Parameter done: move if a neighbour is faster. */
        if (s->ncand > 0 && s->best_cand_ms < s->cur_ms) {
            s->cur = s->best_cand;
            s->cur_ms = s->best_cand_ms;
            s->improved = true;
        }
        if (++s->param >= s->w.ord.nparams) {
            if (!s->improved) {
                s->have_cur = false; /* local optimum: restart */
                continue;
            }
            s->param = 0;
            s->improved = false;
        }
        cd_build_candidates(s);
    }
}

/* Proposals are remembered at once (time NAN until observed), so that a caller that asks for
 * several before measuring them (a batch compiled in parallel) never gets one twice. */
static bt_status cd_next(void *state, uint64_t *idx)
{
    cd_state *s = state;
    bt_status st = cd_propose(s, idx);
    if (st == BT_OK)
        st = bt__idxmap_put(&s->w.seen, *idx, NAN);
    return st;
}

/* Whether the current parameter's neighbour list still holds a config to measure. */
static bool cd_fresh_candidate_left(const cd_state *s)
{
    for (int i = s->icand; i < s->ncand; i++)
        if (!bt__idxmap_get(&s->w.seen, s->cand[i], NULL) && bt__valid(&s->w.ctx, s->cand[i]))
            return true;
    return false;
}

/* A round: a new start point alone (its neighbours depend on it), else the untried neighbours of
 * the current config along the parameter being explored — what one-at-a-time descent would
 * measure before deciding on the move. */
static bt_status cd_next_batch(void *state, size_t max, uint64_t *idx, size_t *n)
{
    cd_state *s = state;
    *n = 0;
    bt_status st = cd_next(s, &idx[0]);
    if (st != BT_OK)
        return st;
    *n = 1;
    while (*n < max && !s->pending_start && cd_fresh_candidate_left(s)) {
        st = cd_next(s, &idx[*n]);
        if (st != BT_OK)
            return st;
        (*n)++;
    }
    return BT_OK;
}

static void cd_observe(void *state, uint64_t idx, double ms, bt_status fail)
{
    cd_state *s = state;
    if (fail != BT_OK)
        ms = INFINITY;
    bt__idxmap_put(&s->w.seen, idx, ms);
    if (s->pending_start) {
        s->pending_start = false;
        if (isfinite(ms)) {
            s->have_cur = true;
            s->cur = idx;
            s->cur_ms = ms;
            s->param = 0;
            s->improved = false;
            cd_build_candidates(s);
        }
        return;
    }
    if (ms < s->best_cand_ms) {
        s->best_cand_ms = ms;
        s->best_cand = idx;
    }
}

const bt__strategy bt__strategy_coordinate = {
    .name = "coordinate",
    .summary = "coordinate descent, one parameter at a time (Inductor-style), random restarts",
    .create = cd_create,
    .next = cd_next,
    .observe = cd_observe,
    .destroy = cd_destroy,
    .next_batch = cd_next_batch,
};
