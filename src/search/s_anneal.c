/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_anneal.c — the `anneal` strategy: simulated annealing over neighbouring configs.
 *
 * A neighbour changes one parameter (with more than one value) by one position in its sorted
 * value list. Each step picks a random neighbour of the current config; the move is judged on
 * log time, delta = ln(t_new / t_cur), and accepted when delta <= 0 or with probability
 * exp(-delta / T). Failed configs are never accepted. A neighbour measured before is judged from
 * its recorded time without a new measurement.
 *
 * Temperature schedule: geometric cooling from T0 = 0.25 (a 25% slower config is accepted with
 * probability 1/e) to Tmin = 0.005 over one cycle of L measurements, L = clamp(4 * sqrt(valid
 * configs), 50, 1000). At the end of a cycle the search reheats: the next cycle starts from the
 * best config found so far on even cycles and from a random unmeasured config on odd ones. When
 * no unmeasured neighbour can be found (all measured, invalid, or failed around the current
 * config), the walk jumps to a random unmeasured valid config. A round (next_batch) is several
 * random unmeasured neighbours of the current config, judged in order; a jump ends a round.
 */
#include "search/common.h"

#include <math.h>
#include <stdlib.h>

#define AN_T0 0.25
#define AN_TMIN 0.005
#define AN_WALK_MAX 256 /* moves over measured configs before a jump */

typedef struct an_state {
    bt__walk w; /* context, valid set, ranks, random stream, measured configs */
    int movable[BT_MAX_PARAMS]; /* parameters with more than one value */
    int nmovable;
    bool have_cur;
    uint64_t cur;
    double cur_ms;
    bool have_best;
    uint64_t best;
    double best_ms;
    uint64_t cycle_len, step, cycle;
    double alpha; /* per-step cooling factor */
    bool pending_jump; /* jump_idx, proposed as a jump, is not observed yet */
    uint64_t jump_idx;
} an_state;

static void an_destroy(void *state)
{
    an_state *s = state;
    if (!s)
        return;
    bt__walk_free(&s->w);
    free(s);
}

static bt_status an_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    an_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    bt_status st = bt__walk_init(&s->w, ctx, 0x616e6e65616cULL);
    if (st != BT_OK) {
        free(s);
        return st;
    }
    for (int p = 0; p < s->w.ord.nparams; p++)
        if (s->w.ord.nvalues[p] > 1)
            s->movable[s->nmovable++] = p;
    double nvalid = s->w.valid.enumerated ? (double)s->w.valid.n : 1e6;
    double L = 4.0 * sqrt(nvalid);
    s->cycle_len = (uint64_t)(L < 50 ? 50 : L > 1000 ? 1000 : L);
    s->alpha = pow(AN_TMIN / AN_T0, 1.0 / (double)s->cycle_len);
    *state = s;
    return BT_OK;
}

static double an_temperature(const an_state *s)
{
    return AN_T0 * pow(s->alpha, (double)s->step);
}

/* Accepts or rejects a move to c (time ms). */
static void an_judge(an_state *s, uint64_t c, double ms)
{
    if (!isfinite(ms))
        return;
    double delta = log(ms / s->cur_ms);
    if (delta <= 0 || bt__rng_uniform(&s->w.rng) < exp(-delta / an_temperature(s))) {
        s->cur = c;
        s->cur_ms = ms;
    }
}

static bt_status an_propose(void *state, uint64_t *idx)
{
    an_state *s = state;
    if (s->have_cur && s->step >= s->cycle_len) {
        /* Reheat. */
        s->step = 0;
        s->cycle++;
        if (s->cycle % 2 == 0 && s->have_best) {
            s->cur = s->best;
            s->cur_ms = s->best_ms;
        } else {
            s->have_cur = false;
        }
    }
    if (s->have_cur && s->nmovable > 0) {
        int ranks[BT_MAX_PARAMS];
        for (int walk = 0; walk < AN_WALK_MAX; walk++) {
            bt__ordinal_ranks(&s->w.ord, s->cur, ranks);
            int p = s->movable[bt__rng_below(&s->w.rng, (uint64_t)s->nmovable)];
            int r = ranks[p] + (bt__rng_below(&s->w.rng, 2) ? 1 : -1);
            if (r < 0 || r >= s->w.ord.nvalues[p])
                continue;
            ranks[p] = r;
            uint64_t c = bt__ordinal_index(&s->w.ord, ranks);
            double ms;
            if (bt__idxmap_get(&s->w.seen, c, &ms)) {
                an_judge(s, c, ms);
                continue;
            }
            if (!bt__valid(&s->w.ctx, c))
                continue;
            *idx = c;
            return BT_OK;
        }
    }
    /* Start, or jump: a random unmeasured valid config. */
    if (!bt__valid_random_unseen(&s->w.valid, &s->w.rng, &s->w.seen, idx))
        return BT_NOT_FOUND;
    s->pending_jump = true;
    s->jump_idx = *idx;
    return BT_OK;
}

/* Proposals are remembered at once (time NAN until observed), so that a caller that asks for
 * several before measuring them (a batch compiled in parallel) never gets one twice. */
static bt_status an_next(void *state, uint64_t *idx)
{
    an_state *s = state;
    bt_status st = an_propose(s, idx);
    if (st == BT_OK)
        st = bt__idxmap_put(&s->w.seen, *idx, NAN);
    return st;
}

/* A round: random unmeasured neighbours of the current config, judged in order as they are
 * observed; a jump (start, or nowhere left to step) ends the round, since the walk continues from
 * it. */
static bt_status an_next_batch(void *state, size_t max, uint64_t *idx, size_t *n)
{
    an_state *s = state;
    *n = 0;
    while (*n < max) {
        if (*n > 0 && s->pending_jump)
            break;
        bt_status st = an_next(s, &idx[*n]);
        if (st == BT_NOT_FOUND)
            break;
        if (st != BT_OK)
            return st;
        (*n)++;
    }
    return *n ? BT_OK : BT_NOT_FOUND;
}

static void an_observe(void *state, uint64_t idx, double ms, bt_status fail)
{
    an_state *s = state;
    if (fail != BT_OK)
        ms = INFINITY;
    bt__idxmap_put(&s->w.seen, idx, ms);
    s->step++;
    if (isfinite(ms) && (!s->have_best || ms < s->best_ms)) {
        s->have_best = true;
        s->best = idx;
        s->best_ms = ms;
    }
    if ((s->pending_jump && idx == s->jump_idx) || !s->have_cur) {
        if (idx == s->jump_idx)
            s->pending_jump = false;
        if (isfinite(ms)) {
            s->have_cur = true;
            s->cur = idx;
            s->cur_ms = ms;
        }
        return;
    }
    an_judge(s, idx, ms);
}

const bt__strategy bt__strategy_anneal = {
    .name = "anneal",
    .summary = "simulated annealing over one-step neighbours, geometric cooling, reheats",
    .create = an_create,
    .next = an_next,
    .observe = an_observe,
    .destroy = an_destroy,
    .next_batch = an_next_batch,
};
