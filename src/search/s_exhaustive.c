/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_exhaustive.c — the `exhaustive` strategy: every valid config once, in index order. The
 * default for small spaces; the reference the other strategies are judged against.
 */
#include "search/common.h"

#include <stdlib.h>

typedef struct exhaustive_state {
    bt__search_ctx ctx;
    uint64_t next;
} exhaustive_state;

static bt_status exhaustive_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    exhaustive_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    s->ctx = *ctx;
    *state = s;
    return BT_OK;
}

static bt_status exhaustive_next(void *state, uint64_t *idx)
{
    exhaustive_state *s = state;
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
    free(state);
}

const bt__strategy bt__strategy_exhaustive = {
    .name = "exhaustive",
    .summary = "every valid config once, in order (default for small spaces)",
    .create = exhaustive_create,
    .next = exhaustive_next,
    .observe = exhaustive_observe,
    .destroy = exhaustive_destroy,
};
