/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.c — the RNG, index map, valid-config set and ordinal view shared by the strategies.
 */
#include "search/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * RNG
 * ------------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------------
 * Index map
 * ------------------------------------------------------------------------------------------- */
static inline uint64_t hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

void bt__idxmap_init(bt__idxmap *m)
{
    memset(m, 0, sizeof *m);
}

void bt__idxmap_free(bt__idxmap *m)
{
    free(m->keys);
    free(m->vals);
    bt__idxmap_init(m);
}

static bt_status idxmap_grow(bt__idxmap *m)
{
    uint64_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = calloc(ncap, sizeof *nk);
    double *nv = malloc(sizeof *nv * ncap);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return BT_NOMEM;
    }
    for (uint64_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        uint64_t h = hash64(m->keys[i] - 1) & (ncap - 1);
        while (nk[h])
            h = (h + 1) & (ncap - 1);
        nk[h] = m->keys[i];
        nv[h] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return BT_OK;
}

bt_status bt__idxmap_put(bt__idxmap *m, uint64_t key, double val)
{
    if ((m->count + 1) * 2 > m->cap) {
        bt_status st = idxmap_grow(m);
        if (st != BT_OK)
            return st;
    }
    uint64_t h = hash64(key) & (m->cap - 1);
    while (m->keys[h] && m->keys[h] != key + 1)
        h = (h + 1) & (m->cap - 1);
    if (!m->keys[h]) {
        m->keys[h] = key + 1;
        m->count++;
    }
    m->vals[h] = val;
    return BT_OK;
}

bool bt__idxmap_get(const bt__idxmap *m, uint64_t key, double *val)
{
    if (!m || !m->cap)
        return false;
    uint64_t h = hash64(key) & (m->cap - 1);
    while (m->keys[h]) {
        if (m->keys[h] == key + 1) {
            if (val)
                *val = m->vals[h];
            return true;
        }
        h = (h + 1) & (m->cap - 1);
    }
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * Valid configs
 * ------------------------------------------------------------------------------------------- */
bool bt__valid(const bt__search_ctx *ctx, uint64_t idx)
{
    if (idx >= ctx->space->total)
        return false;
    return !ctx->is_valid || ctx->is_valid(ctx->user, idx);
}

bt_status bt__valid_set_init(bt__valid_set *v, const bt__search_ctx *ctx)
{
    memset(v, 0, sizeof *v);
    v->ctx = *ctx;
    uint64_t total = ctx->space->total;
    if (total > BT__SEARCH_ENUM_MAX) {
        v->n = UINT64_MAX;
        return BT_OK;
    }
    v->enumerated = true;
    v->idx = malloc(sizeof *v->idx * (total ? total : 1));
    if (!v->idx)
        return BT_NOMEM;
    for (uint64_t i = 0; i < total; i++)
        if (bt__valid(ctx, i))
            v->idx[v->n++] = i;
    return BT_OK;
}

void bt__valid_set_free(bt__valid_set *v)
{
    free(v->idx);
    v->idx = NULL;
    v->n = 0;
}

static int cmp_ranked(const void *a, const void *b)
{
    const bt__ranked *x = a, *y = b;
    bool xn = isnan(x->pred), yn = isnan(y->pred);
    if (xn != yn)
        return xn ? 1 : -1;
    if (!xn && x->pred != y->pred)
        return x->pred < y->pred ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

bt_status bt__search_ranked(const bt__search_ctx *ctx, bt__ranked **out, uint64_t *n)
{
    *out = NULL;
    *n = 0;
    bt__valid_set v;
    bt_status st = bt__valid_set_init(&v, ctx);
    if (st != BT_OK)
        return st;
    bt__ranked *items = malloc(sizeof *items * (v.n ? v.n : 1));
    if (!items) {
        bt__valid_set_free(&v);
        return BT_NOMEM;
    }
    for (uint64_t i = 0; i < v.n; i++)
        items[i] = (bt__ranked){v.idx[i], ctx->prior(ctx->user, v.idx[i])};
    qsort(items, v.n, sizeof *items, cmp_ranked);
    *out = items;
    *n = v.n;
    bt__valid_set_free(&v);
    return BT_OK;
}

bool bt__valid_random_unseen(const bt__valid_set *v, bt__rng *r, const bt__idxmap *seen,
                             uint64_t *out)
{
    if (v->enumerated) {
        if (v->n == 0 || (seen && seen->count >= v->n))
            return false;
        for (int tries = 0; tries < 64; tries++) {
            uint64_t i = v->idx[bt__rng_below(r, v->n)];
            if (!bt__idxmap_get(seen, i, NULL)) {
                *out = i;
                return true;
            }
        }
        /* Mostly seen: scan from a random start for the first unseen one. */
        uint64_t start = bt__rng_below(r, v->n);
        for (uint64_t k = 0; k < v->n; k++) {
            uint64_t i = v->idx[(start + k) % v->n];
            if (!bt__idxmap_get(seen, i, NULL)) {
                *out = i;
                return true;
            }
        }
        return false;
    }
    for (int tries = 0; tries < 1 << 20; tries++) {
        uint64_t i = bt__rng_below(r, v->ctx.space->total);
        if (!bt__idxmap_get(seen, i, NULL) && bt__valid(&v->ctx, i)) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* ---------------------------------------------------------------------------------------------
 * Ordinal view
 * ------------------------------------------------------------------------------------------- */
static bool is_pow2(int64_t v)
{
    return v > 0 && (v & (v - 1)) == 0;
}

bt_status bt__ordinal_init(bt__ordinal *o, const bt__space *s)
{
    memset(o, 0, sizeof *o);
    o->space = s;
    o->nparams = s->nparams;
    for (int p = 0; p < s->nparams; p++) {
        int n = s->params[p].nvalues;
        const int64_t *v = s->params[p].values;
        o->nvalues[p] = n;
        o->rank[p] = malloc(sizeof(int) * (size_t)n);
        o->pos[p] = malloc(sizeof(int) * (size_t)n);
        if (!o->rank[p] || !o->pos[p]) {
            bt__ordinal_free(o);
            return BT_NOMEM;
        }
        bool p2 = n >= 2;
        for (int i = 0; i < n; i++) {
            int r = 0;
            for (int j = 0; j < n; j++)
                r += v[j] < v[i];
            o->rank[p][i] = r;
            o->pos[p][r] = i;
            p2 = p2 && is_pow2(v[i]);
        }
        o->pow2[p] = p2;
    }
    return BT_OK;
}

void bt__ordinal_free(bt__ordinal *o)
{
    for (int p = 0; p < BT_MAX_PARAMS; p++) {
        free(o->rank[p]);
        free(o->pos[p]);
        o->rank[p] = o->pos[p] = NULL;
    }
}

void bt__ordinal_ranks(const bt__ordinal *o, uint64_t idx, int *ranks)
{
    for (int p = o->nparams - 1; p >= 0; p--) {
        uint64_t n = (uint64_t)o->nvalues[p];
        ranks[p] = o->rank[p][idx % n];
        idx /= n;
    }
}

uint64_t bt__ordinal_index(const bt__ordinal *o, const int *ranks)
{
    uint64_t idx = 0;
    for (int p = 0; p < o->nparams; p++)
        idx = idx * (uint64_t)o->nvalues[p] + (uint64_t)o->pos[p][ranks[p]];
    return idx;
}

int bt__ordinal_rank_of_value(const bt__ordinal *o, int p, int64_t v)
{
    int pos = bt__space_value_pos(o->space, p, v);
    return pos < 0 ? -1 : o->rank[p][pos];
}

bt_status bt__walk_init(bt__walk *w, const bt__search_ctx *ctx, uint64_t stream)
{
    w->ctx = *ctx;
    bt__idxmap_init(&w->seen);
    bt_status st = bt__valid_set_init(&w->valid, ctx);
    if (st == BT_OK)
        st = bt__ordinal_init(&w->ord, ctx->space);
    if (st != BT_OK) {
        bt__walk_free(w);
        return st;
    }
    bt__rng_seed(&w->rng, ctx->seed, stream);
    return BT_OK;
}

void bt__walk_free(bt__walk *w)
{
    bt__valid_set_free(&w->valid);
    bt__ordinal_free(&w->ord);
    bt__idxmap_free(&w->seen);
}
