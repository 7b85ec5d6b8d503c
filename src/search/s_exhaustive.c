/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_exhaustive.c — the `exhaustive` strategy: every valid config once. With the model's prior
 * (the predicted time of each config) the fastest predicted come first, so that a screening cut
 * (measure layer) and a time limit keep the promising ones; without it, or for a space of more
 * than EXH_ORDER_MAX configs, in index order. The default for small spaces; the reference the
 * other strategies are judged against.
 */
#include "search/common.h"

#include <math.h>
#include <stdlib.h>

#define EXH_ORDER_MAX (1u << 20)

typedef struct exh_item {
    uint64_t idx;
    double prior;
} exh_item;

typedef struct exhaustive_state {
    bt__search_ctx ctx;
    uint64_t next;   /* index order: the next index to look at; else the next item */
    exh_item *order; /* NULL: index order */
    size_t n;
} exhaustive_state;

/* Predicted fastest first; no prediction after every predicted one; then index order. */
static int cmp_item(const void *a, const void *b)
{
    const exh_item *x = a, *y = b;
    bool nx = isnan(x->prior), ny = isnan(y->prior);
    if (nx != ny)
        return nx ? 1 : -1;
    if (!nx && x->prior != y->prior)
        return x->prior < y->prior ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static bt_status exhaustive_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    (void)diag;
    exhaustive_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    s->ctx = *ctx;
    if (ctx->prior && ctx->space->total <= EXH_ORDER_MAX) {
        size_t cap = 0;
        for (uint64_t i = 0; i < ctx->space->total; i++) {
            if (!bt__valid(&s->ctx, i))
                continue;
            if (s->n == cap) {
                size_t ncap = cap ? cap * 2 : 64;
                exh_item *g = realloc(s->order, sizeof *g * ncap);
                if (!g) {
                    free(s->order);
                    free(s);
                    return BT_NOMEM;
                }
                s->order = g, cap = ncap;
            }
            s->order[s->n++] = (exh_item){i, ctx->prior(ctx->user, i)};
        }
        qsort(s->order, s->n, sizeof *s->order, cmp_item);
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
