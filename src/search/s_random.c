/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_random.c — the `random` strategy: uniform sampling of the valid configs without replacement,
 * seeded. The baseline every other strategy must beat.
 */
#include "search/common.h"

#include <stdlib.h>

typedef struct random_state {
    bt__valid_set valid;
    bt__rng rng;
    uint64_t drawn;  /* enumerated: valid.idx[0..drawn) is the shuffled prefix */
    bt__idxmap seen; /* rejection sampling only */
} random_state;

static void random_destroy(void *state)
{
    random_state *s = state;
    if (!s)
        return;
    bt__valid_set_free(&s->valid);
    bt__idxmap_free(&s->seen);
    free(s);
}

static bt_status random_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    random_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    bt__idxmap_init(&s->seen);
    bt_status st = bt__valid_set_init(&s->valid, ctx);
    if (st != BT_OK) {
        random_destroy(s);
        return st;
    }
    bt__rng_seed(&s->rng, ctx->seed, 0x72616e646f6dULL);
    *state = s;
    return BT_OK;
}

static bt_status random_next(void *state, uint64_t *idx)
{
    random_state *s = state;
    if (s->valid.enumerated) {
        /* One step of a Fisher-Yates shuffle: the permutation is drawn lazily. */
        if (s->drawn >= s->valid.n)
            return BT_NOT_FOUND;
        uint64_t j = s->drawn + bt__rng_below(&s->rng, s->valid.n - s->drawn);
        uint64_t t = s->valid.idx[j];
        s->valid.idx[j] = s->valid.idx[s->drawn];
        s->valid.idx[s->drawn++] = t;
        *idx = t;
        return BT_OK;
    }
    if (!bt__valid_random_unseen(&s->valid, &s->rng, &s->seen, idx))
        return BT_NOT_FOUND;
    return bt__idxmap_put(&s->seen, *idx, 0);
}

static void random_observe(void *state, uint64_t idx, double ms, bt_status fail) {}

const bt__strategy bt__strategy_random = {
    .name = "random",
    .summary = "uniform random valid configs without replacement (seeded); the baseline",
    .create = random_create,
    .next = random_next,
    .observe = random_observe,
    .destroy = random_destroy,
};
