/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_exhaustive.c — the `exhaustive` strategy: every valid config once. With the model's prior
 * (the predicted time of each config) the fastest predicted come first, so that a screening cut
 * (measure layer) and a time limit keep the promising ones; without it, or for a space too
 * large to enumerate (BT__SEARCH_ENUM_MAX), in index order. The default for small spaces; the
 * reference the other strategies are judged against.
 */
#include "search/common.h"

#include <stdlib.h>

typedef struct exhaustive_state {
    bt__search_ctx ctx;
    uint64_t next;     /* index order: the next index to look at; else the next of order */
    bt__ranked *order; /* NULL: index order */
    uint64_t n;
} exhaustive_state;

static bt_status exhaustive_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    (void)diag;
    exhaustive_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    s->ctx = *ctx;
    if (ctx->prior && ctx->space->total <= BT__SEARCH_ENUM_MAX) {
        bt_status st = bt__search_ranked(ctx, &s->order, &s->n);
        if (st != BT_OK) {
            free(s);
            return st;
        }
    }
    *state = s;
    return BT_OK;
}

static bt_status exhaustive_next(void *state, uint64_t *idx)
{
    exhaustive_state *s = state;
    if (s->order) {
        if (s->next >= s->n)
            return BT_NOT_FOUND;
        *idx = s->order[s->next++].idx;
        return BT_OK;
    }
    while (s->next < s->ctx.space->total) {
        uint64_t i = s->next++;
        if (bt__valid(&s->ctx, i)) {
            *idx = i;
            return BT_OK;
        }
    }
    return BT_NOT_FOUND;
}

static void exhaustive_observe(void *state, uint64_t idx, double ms, bt_status fail) {}

static void exhaustive_destroy(void *state)
{
    exhaustive_state *s = state;
    if (s)
        free(s->order);
    free(s);
}

const bt__strategy bt__strategy_exhaustive = {
    .name = "exhaustive",
    .summary = "every valid config once, the model's fastest predicted first (default for small "
               "spaces)",
    .create = exhaustive_create,
    .next = exhaustive_next,
    .observe = exhaustive_observe,
    .destroy = exhaustive_destroy,
};
