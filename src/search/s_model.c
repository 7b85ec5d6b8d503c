/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_model.c — the `model` strategy: rank the valid configs by a performance model (ctx->prior:
 * blocktune's analytic model, or a kernel-supplied perf expression as Triton's perf_model) and
 * measure the best-predicted ones first, as Triton's prune_configs_by={perf_model, top_k} does.
 *
 * Rule: measure the top k = max(10, 5% of the valid configs) in predicted order. Then judge the
 * model against the measurements: it is trusted when the Spearman rank correlation between
 * predicted and measured times over the measured configs is >= 0.5 AND the best measured config
 * lies in the first half of the measured prefix (the model's top really is the top). While it is
 * not trusted, widen: double k and keep measuring in predicted order. When it is trusted, stop
 * (next returns BT_NOT_FOUND). Configs the model cannot predict (NAN) come last, in index order.
 * Failed measurements rank as slowest.
 *
 * A round (next_batch) takes the next configs in predicted order up to the end of the current top
 * k, so the trust check always sees measured configs.
 *
 * Without a prior there is nothing to rank: create fails with BT_UNSUPPORTED ("no performance
 * model for this space"). Spaces too large to enumerate are also refused.
 */
#include "search/common.h"

#include "core/util.h"

#include <math.h>
#include <stdlib.h>

#define MODEL_MIN_TOP 10
#define MODEL_TOP_FRACTION 0.05
#define MODEL_MIN_RHO 0.5

typedef struct model_state {
    bt__ranked *items; /* valid configs in predicted order */
    double *measured;  /* measured[i]: ms of items[i] (INFINITY when failed), for i < next */
    uint64_t n, next, top;
    bt__idxmap pos; /* proposed config -> its position in items */
} model_state;

static void model_destroy(void *state)
{
    model_state *s = state;
    if (!s)
        return;
    free(s->items);
    free(s->measured);
    bt__idxmap_free(&s->pos);
    free(s);
}

static bt_status model_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    if (!ctx->prior) {
        bt__diag_set(diag, "no performance model for this space");
        return BT_UNSUPPORTED;
    }
    if (ctx->space->total > BT__SEARCH_ENUM_MAX) {
        bt__diag_set(diag, "space of %llu configs is too large to rank (at most %llu)",
                     (unsigned long long)ctx->space->total,
                     (unsigned long long)BT__SEARCH_ENUM_MAX);
        return BT_UNSUPPORTED;
    }
    model_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    bt__idxmap_init(&s->pos);
    bt_status st = bt__search_ranked(ctx, &s->items, &s->n);
    s->measured = st == BT_OK ? malloc(sizeof *s->measured * (s->n ? s->n : 1)) : NULL;
    if (!s->measured) {
        model_destroy(s);
        return st != BT_OK ? st : BT_NOMEM;
    }
    uint64_t top = (uint64_t)ceil(MODEL_TOP_FRACTION * (double)s->n);
    s->top = top < MODEL_MIN_TOP ? MODEL_MIN_TOP : top;
    *state = s;
    return BT_OK;
}

typedef struct rank_pair {
    double v;
    uint64_t i;
} rank_pair;

static int cmp_pair(const void *a, const void *b)
{
    const rank_pair *x = a, *y = b;
    if (x->v != y->v)
        return x->v < y->v ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* Average ranks (ties share their mean rank) of x[0..n) into r. false on allocation failure. */
static bool ranks_of(const double *x, uint64_t n, double *r)
{
    rank_pair *p = malloc(sizeof *p * n);
    if (!p)
        return false;
    for (uint64_t i = 0; i < n; i++)
        p[i] = (rank_pair){x[i], i};
    qsort(p, n, sizeof *p, cmp_pair);
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i;
        while (j + 1 < n && p[j + 1].v == p[i].v)
            j++;
        for (uint64_t k = i; k <= j; k++)
            r[p[k].i] = (double)(i + j) / 2.0;
        i = j + 1;
    }
    free(p);
    return true;
}

/* Whether the model is trusted on the measured prefix [0, m) (see the file comment). */
static bool model_trusted(const model_state *s, uint64_t m)
{
    if (m < 3)
        return false;
    double *r = malloc(sizeof *r * m);
    if (!r || !ranks_of(s->measured, m, r)) {
        free(r);
        return true; /* cannot judge: stop rather than loop */
    }
    /* Predicted ranks are 0..m-1 (the prefix is in predicted order). Spearman's rho. */
    double mean = (double)(m - 1) / 2.0, sxy = 0, sxx = 0, syy = 0;
    uint64_t best = 0;
    for (uint64_t i = 0; i < m; i++) {
        double dx = (double)i - mean, dy = r[i] - mean;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
        if (s->measured[i] < s->measured[best])
            best = i;
    }
    free(r);
    double rho = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : 0;
    return rho >= MODEL_MIN_RHO && best < (m + 1) / 2;
}

static bt_status model_next(void *state, uint64_t *idx)
{
    model_state *s = state;
    if (s->next >= s->n)
        return BT_NOT_FOUND;
    if (s->next >= s->top) {
        if (model_trusted(s, s->next))
            return BT_NOT_FOUND;
        s->top *= 2;
    }
    *idx = s->items[s->next].idx;
    s->measured[s->next] = INFINITY;
    s->next++;
    return bt__idxmap_put(&s->pos, *idx, (double)(s->next - 1));
}

/* A round never crosses the end of the current top k: whether to widen is judged on measured
 * configs only. */
static bt_status model_next_batch(void *state, size_t max, uint64_t *idx, size_t *n)
{
    model_state *s = state;
    *n = 0;
    bt_status st = model_next(s, &idx[0]);
    if (st != BT_OK)
        return st;
    *n = 1;
    while (*n < max && s->next < s->n && s->next < s->top) {
        idx[*n] = s->items[s->next].idx;
        s->measured[s->next] = INFINITY;
        s->next++;
        st = bt__idxmap_put(&s->pos, idx[*n], (double)(s->next - 1));
        if (st != BT_OK)
            return st;
        (*n)++;
    }
    return BT_OK;
}

static void model_observe(void *state, uint64_t idx, double ms, bt_status fail)
{
    model_state *s = state;
    double pos;
    if (bt__idxmap_get(&s->pos, idx, &pos))
        s->measured[(uint64_t)pos] = fail == BT_OK ? ms : INFINITY;
}

const bt__strategy bt__strategy_model = {
    .name = "model",
    .summary = "measure the configs a performance model ranks best, widening while it is wrong",
    .create = model_create,
    .next = model_next,
    .observe = model_observe,
    .destroy = model_destroy,
    .next_batch = model_next_batch,
};
