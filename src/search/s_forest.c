/* SPDX-License-Identifier: Apache-2.0 */
/*
 * s_forest.c — the `forest` strategy: model-based search with a random-forest surrogate fitted on
 * the measurements so far (in the spirit of SMAC), plus a cheap main-effects model and a
 * trust-region step around the incumbent (forest_local.c). The default strategy for large spaces.
 *
 * Features of a config (all small integers, "bins"):
 *   - per parameter with more than one value: the rank of its value in the sorted value list
 *     (at most 64 bins); trees only use the order, so pow2 and linear parameters are alike;
 *   - alignment, where it says something the rank does not: the value's trailing zero bits and
 *     whether it is a power of two. GPU kernels care about divisibility (warp size, vector width,
 *     bank count, cheap index arithmetic) at least as much as about magnitude: 64 may be fast
 *     where 48 and 80 are slow;
 *   - with a performance model (ctx->prior), its prediction (64 quantile bins), so that the forest
 *     learns how far to trust it.
 * Target: ln(time). A failed config gets the target of the slowest successful one: trees isolate
 * failing regions and the acquisition leaves them.
 *
 * Surrogate: FOREST_TREES regression trees on bootstrap samples, split by variance reduction over
 * per-bin histograms (O(n) per node and feature); the mean and the spread of the trees give
 * mu and sigma. Beside it, a main-effects model (one additive effect per parameter value, fitted
 * by backfitting with ridge shrinkage on targets clipped at their median, so that it learns what
 * makes configs good rather than how bad the bad ones are) nominates the configs that combine the
 * best value of every parameter — combinations the trees have not seen yet.
 *
 * Loop:
 *   1. FOREST_INIT random valid configs (the prior's best first when there is a prior);
 *   2. then, every FOREST_LOCAL_EVERY-th step, the trust-region step: of the unmeasured configs
 *      that differ from the incumbent in one or two parameters (any values), the one of lowest
 *      mu. It stays in the incumbent's region and moves two parameters at once, which reaches a
 *      lone fast config whose one-parameter neighbours are all slow (conv A100 in NOTES 38).
 *      It replaced a coordinate-descent check (one parameter one step up or down, halved or
 *      doubled, every third step): within 5 % of the best at 128 measurements, seeds 301..600,
 *      conv A100 / A4000 / W6600 went from 42 / 80 / 40 % to 56 / 70 / 48 %;
 *   3. other steps: the candidate of highest expected improvement EI(mu, sigma) over the best so
 *      far. Candidates: all unmeasured valid configs when at most FOREST_POOL_ALL are left; else
 *      FOREST_POOL_RANDOM random ones, every config differing in one parameter from one of the
 *      FOREST_TOPK best measured configs, the FOREST_NOMINATED best of the main-effects model and,
 *      with a prior, the FOREST_NOMINATED best-predicted unmeasured configs.
 * When some configs are cheaper to measure (ctx->ready: their binaries are in the kernel cache
 * from an earlier tune; the others must compile first), they join the candidates and a config to
 * compile is ranked by its EI less ctx->compile_gain: it must promise that much more improvement
 * than a ready one (and the trust-region step reads its pessimistic prediction, mean plus the
 * trees' spread plus compile_gain). A re-tune with a warm kernel cache so measures what the
 * earlier tune compiled, unless something new promises clearly more; with no ready configs (a
 * first tune, a recorded space) the ranking is EI alone, as before. (A factor instead, EI over
 * 1 + a cost, let a re-tune compile nearly as much as without the ready set: late in a search the
 * ready configs' EI is near zero, and any multiple of it is too.)
 * The forest is refitted after every measurement up to FOREST_REFIT_ALL measurements, then when
 * their number has grown by 1/FOREST_REFIT_GROWTH; between refits the scored candidates are reused
 * while the incumbent is unchanged. This bounds the cost per step on long runs.
 *
 * These choices were made on the five recorded Kernel Tuner spaces (bench/simulate.sh); they are
 * generic (no parameter names, no space sizes), but other spaces may prefer others.
 * A round (several proposals before their results, for parallel compilation) is the next configs
 * of this loop with the pending ones excluded: the top of the acquisition ranking of one fit.
 * Everything random comes from one RNG seeded by ctx->seed: runs are deterministic.
 */
#include "core/util.h"
#include "search/common.h"
#include "search/forest_local.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FOREST_TREES 24
#define FOREST_INIT 10
#define FOREST_LOCAL_EVERY 6
#define FOREST_MAX_BINS 64
#define FOREST_MAX_DEPTH 18
#define FOREST_MIN_SPLIT 3
#define FOREST_POOL_ALL 2000
#define FOREST_POOL_RANDOM 500
#define FOREST_TOPK 5
#define FOREST_NOMINATED 20
#define FOREST_REFIT_ALL 100
#define FOREST_REFIT_GROWTH 25
#define FOREST_RIDGE 1.0
#define FOREST_BACKFIT_ITERS 6
#define FOREST_MAX_FEATURES (3 * BT_MAX_PARAMS + 1)
#define FOREST_TZ_CAP 20

enum { FK_RANK = 0, FK_TZ, FK_POW2, FK_PRIOR };

typedef struct fnode {
    int16_t feat; /* -1: leaf */
    uint8_t thr;  /* go left when bin <= thr */
    int32_t left, right;
    float value;
} fnode;

typedef struct ftree {
    fnode *nodes;
    int32_t n, cap;
} ftree;

typedef struct scored {
    uint64_t idx;
    double acq, mu;
} scored;

typedef struct forest_state {
    bt__search_ctx ctx;
    bt__valid_set valid;
    bt__ordinal ord;
    bt__rng rng;
    bt__idxmap seen; /* measured -> ms (INFINITY failed) */
    /* features */
    int nfeat;
    int feat_param[FOREST_MAX_FEATURES]; /* the parameter (-1 for the prior) */
    int feat_kind[FOREST_MAX_FEATURES];  /* FK_* */
    int nbins[FOREST_MAX_FEATURES];
    double *prior_edges;   /* FOREST_MAX_BINS - 1 quantile edges of the prior */
    uint64_t *prior_order; /* valid configs by predicted time (enumerated spaces with a prior) */
    uint64_t nprior_order, prior_pos;
    /* observations */
    uint8_t *X; /* nobs x nfeat bins */
    double *ms; /* measured time, INFINITY when failed */
    uint64_t *obs_idx;
    size_t nobs, cap;
    size_t nsucc;
    double best_ms; /* INFINITY: nothing succeeded yet */
    uint64_t best_idx;
    /* the surrogate */
    ftree trees[FOREST_TREES];
    size_t fitted_nobs; /* nobs when last fitted (0: never) */
    double add_base;
    double add_eff[FOREST_MAX_FEATURES][FOREST_MAX_BINS];
    /* the last scored candidates, best first: reused while ranked_fit == fitted_nobs and
     * ranked_best == best_ms */
    scored *ranked;
    size_t ranked_n, ranked_cap, ranked_pos, ranked_fit;
    double ranked_best;
    /* scratch */
    size_t *sample;
    double *y;
    uint64_t step;
    bool first_done;
} forest_state;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---------------------------------------------------------------------------------------------
 * Features
 * ------------------------------------------------------------------------------------------- */

/* FK_TZ: trailing zero bits (capped; 0 counts as fully aligned); FK_POW2: power of two or not. */
static int value_feature(int kind, int64_t v)
{
    if (kind == FK_POW2)
        return v > 0 && (v & (v - 1)) == 0;
    if (v == 0)
        return FOREST_TZ_CAP + 1;
    int tz = __builtin_ctzll((unsigned long long)(v < 0 ? -v : v));
    return tz > FOREST_TZ_CAP ? FOREST_TZ_CAP : tz;
}

/* Whether an alignment feature of p's values says something their order does not: it takes more
 * than one value and does not simply grow with the value (as for consecutive powers of two). */
static bool feature_informative(const bt__ordinal *o, const bt__space *sp, int p, int kind)
{
    bool varies = false, monotone = true;
    int prev = -1;
    for (int r = 0; r < o->nvalues[p]; r++) {
        int f = value_feature(kind, sp->params[p].values[o->pos[p][r]]);
        if (r > 0 && f != prev)
            varies = true;
        if (r > 0 && f < prev)
            monotone = false;
        prev = f;
    }
    return varies && !monotone;
}

typedef struct prior_item {
    double pred;
    uint64_t idx;
} prior_item;

static int cmp_prior_item(const void *a, const void *b)
{
    const prior_item *x = a, *y = b;
    if (x->pred != y->pred)
        return x->pred < y->pred ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The prior feature: quantile edges of the predictions over the valid configs (a sample of them
 * when the space is not enumerated), and the valid configs in predicted order. */
static bt_status prior_feature_init(forest_state *s)
{
    uint64_t n = s->valid.enumerated ? s->valid.n : 4096;
    prior_item *v = malloc(sizeof *v * (n ? n : 1));
    if (!v)
        return BT_NOMEM;
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t idx;
        if (s->valid.enumerated)
            idx = s->valid.idx[i];
        else if (!bt__valid_random_unseen(&s->valid, &s->rng, NULL, &idx))
            break;
        double p = s->ctx.prior(s->ctx.user, idx);
        if (!isnan(p))
            v[m++] = (prior_item){p, idx};
    }
    if (m < 2) {
        free(v);
        return BT_OK; /* nothing to learn from */
    }
    qsort(v, m, sizeof *v, cmp_prior_item);
    s->prior_edges = malloc(sizeof *s->prior_edges * (FOREST_MAX_BINS - 1));
    if (s->valid.enumerated)
        s->prior_order = malloc(sizeof *s->prior_order * m);
    if (!s->prior_edges || (s->valid.enumerated && !s->prior_order)) {
        free(v);
        return BT_NOMEM;
    }
    for (int b = 0; b < FOREST_MAX_BINS - 1; b++)
        s->prior_edges[b] = v[(uint64_t)((double)(b + 1) / FOREST_MAX_BINS * (double)(m - 1))].pred;
    if (s->prior_order) {
        for (uint64_t i = 0; i < m; i++)
            s->prior_order[i] = v[i].idx;
        s->nprior_order = m;
    }
    free(v);
    s->feat_param[s->nfeat] = -1;
    s->feat_kind[s->nfeat] = FK_PRIOR;
    s->nbins[s->nfeat] = FOREST_MAX_BINS;
    s->nfeat++;
    return BT_OK;
}

static void features_of(const forest_state *s, uint64_t idx, uint8_t *x)
{
    int ranks[BT_MAX_PARAMS];
    bt__ordinal_ranks(&s->ord, idx, ranks);
    for (int f = 0; f < s->nfeat; f++) {
        int p = s->feat_param[f];
        switch (s->feat_kind[f]) {
        case FK_RANK: {
            int n = s->ord.nvalues[p];
            x[f] = (uint8_t)(n <= FOREST_MAX_BINS ? ranks[p]
                                                  : (int)((int64_t)ranks[p] * FOREST_MAX_BINS / n));
            break;
        }
        case FK_TZ:
        case FK_POW2:
            x[f] = (uint8_t)value_feature(s->feat_kind[f],
                                          s->ctx.space->params[p].values[s->ord.pos[p][ranks[p]]]);
            break;
        default: {
            double pr = s->ctx.prior(s->ctx.user, idx);
            int b = FOREST_MAX_BINS - 1; /* unknown predictions rank last */
            if (!isnan(pr)) {
                b = 0;
                while (b < FOREST_MAX_BINS - 1 && pr > s->prior_edges[b])
                    b++;
            }
            x[f] = (uint8_t)b;
            break;
        }
        }
    }
}

/* ---------------------------------------------------------------------------------------------
 * Regression trees
 * ------------------------------------------------------------------------------------------- */
static int32_t tree_add(ftree *t)
{
    if (t->n == t->cap) {
        int32_t ncap = t->cap ? t->cap * 2 : 64;
        fnode *nn = realloc(t->nodes, sizeof *nn * (size_t)ncap);
        if (!nn)
            return -1;
        t->nodes = nn;
        t->cap = ncap;
    }
    t->nodes[t->n] = (fnode){.feat = -1};
    return t->n++;
}

/* Builds the subtree over samples sample[lo, hi) and returns its node, -1 on allocation failure. */
static int32_t tree_build(forest_state *s, ftree *t, size_t lo, size_t hi, int depth)
{
    int32_t node = tree_add(t);
    if (node < 0)
        return -1;
    size_t m = hi - lo;
    double sum = 0, ymin = INFINITY, ymax = -INFINITY;
    for (size_t i = lo; i < hi; i++) {
        double y = s->y[s->sample[i]];
        sum += y;
        ymin = y < ymin ? y : ymin;
        ymax = y > ymax ? y : ymax;
    }
    t->nodes[node].value = (float)(sum / (double)m);
    if (m < FOREST_MIN_SPLIT || depth >= FOREST_MAX_DEPTH || ymax - ymin < 1e-9)
        return node;

    double base = sum * sum / (double)m;
    double best_gain = 1e-12;
    int best_f = -1, best_thr = 0;
    for (int f = 0; f < s->nfeat; f++) {
        double hs[FOREST_MAX_BINS] = {0};
        size_t hc[FOREST_MAX_BINS] = {0};
        for (size_t i = lo; i < hi; i++) {
            size_t o = s->sample[i];
            uint8_t b = s->X[o * (size_t)s->nfeat + (size_t)f];
            hs[b] += s->y[o];
            hc[b]++;
        }
        double ls = 0;
        size_t lc = 0;
        for (int b = 0; b < s->nbins[f] - 1; b++) {
            ls += hs[b];
            lc += hc[b];
            if (lc == 0 || hc[b] == 0)
                continue;
            if (lc == m)
                break;
            double rs = sum - ls;
            size_t rc = m - lc;
            double gain = ls * ls / (double)lc + rs * rs / (double)rc - base;
            if (gain > best_gain) {
                best_gain = gain;
                best_f = f;
                best_thr = b;
            }
        }
    }
    if (best_f < 0)
        return node;
    /* Partition in place. */
    size_t i = lo, j = hi;
    while (i < j) {
        size_t o = s->sample[i];
        if (s->X[o * (size_t)s->nfeat + (size_t)best_f] <= best_thr) {
            i++;
        } else {
            s->sample[i] = s->sample[--j];
            s->sample[j] = o;
        }
    }
    int32_t l = tree_build(s, t, lo, i, depth + 1);
    if (l < 0)
        return -1;
    int32_t r = tree_build(s, t, i, hi, depth + 1);
    if (r < 0)
        return -1;
    t->nodes[node].feat = (int16_t)best_f;
    t->nodes[node].thr = (uint8_t)best_thr;
    t->nodes[node].left = l;
    t->nodes[node].right = r;
    return node;
}

static double tree_predict(const ftree *t, const uint8_t *x)
{
    int32_t n = 0;
    while (t->nodes[n].feat >= 0)
        n = x[t->nodes[n].feat] <= t->nodes[n].thr ? t->nodes[n].left : t->nodes[n].right;
    return t->nodes[n].value;
}

/* ---------------------------------------------------------------------------------------------
 * Main-effects model
 * ------------------------------------------------------------------------------------------- */
static double additive_predict(const forest_state *s, const uint8_t *x)
{
    double pred = s->add_base;
    for (int f = 0; f < s->nfeat; f++)
        if (s->feat_kind[f] == FK_RANK)
            pred += s->add_eff[f][x[f]];
    return pred;
}

/* Fits one effect per (parameter, value) on targets y[0..nobs), by backfitting with ridge
 * shrinkage; y is clipped at its median first (the caller's copy is changed). */
static void additive_fit(forest_state *s, double *y, double *tmp)
{
    memcpy(tmp, y, sizeof *tmp * s->nobs);
    qsort(tmp, s->nobs, sizeof *tmp, cmp_double);
    double cap = tmp[(s->nobs - 1) / 2], base = 0;
    for (size_t i = 0; i < s->nobs; i++) {
        y[i] = y[i] > cap ? cap : y[i];
        base += y[i];
    }
    s->add_base = base / (double)s->nobs;
    memset(s->add_eff, 0, sizeof s->add_eff);
    for (int it = 0; it < FOREST_BACKFIT_ITERS; it++) {
        for (int f = 0; f < s->nfeat; f++) {
            if (s->feat_kind[f] != FK_RANK)
                continue;
            double sum[FOREST_MAX_BINS] = {0}, cnt[FOREST_MAX_BINS] = {0};
            for (size_t i = 0; i < s->nobs; i++) {
                const uint8_t *x = s->X + i * (size_t)s->nfeat;
                sum[x[f]] += y[i] - (additive_predict(s, x) - s->add_eff[f][x[f]]);
                cnt[x[f]] += 1;
            }
            for (int b = 0; b < s->nbins[f]; b++)
                s->add_eff[f][b] = sum[b] / (cnt[b] + FOREST_RIDGE);
        }
    }
}

/* The (up to) n unmeasured valid configs the main-effects model predicts fastest, into out.
 * Enumerated spaces only (0 otherwise). */
static size_t additive_top(const forest_state *s, uint64_t *out, size_t n)
{
    double pred_of[FOREST_NOMINATED];
    size_t k = 0;
    if (!s->valid.enumerated || n > FOREST_NOMINATED)
        return 0;
    uint8_t x[FOREST_MAX_FEATURES];
    for (uint64_t v = 0; v < s->valid.n; v++) {
        uint64_t c = s->valid.idx[v];
        if (bt__idxmap_get(&s->seen, c, NULL))
            continue;
        features_of(s, c, x);
        double pred = additive_predict(s, x);
        size_t pos = k < n ? k++ : n;
        if (pos == n) {
            if (pred >= pred_of[n - 1])
                continue;
            pos = n - 1;
        }
        while (pos > 0 && pred_of[pos - 1] > pred) {
            pred_of[pos] = pred_of[pos - 1];
            out[pos] = out[pos - 1];
            pos--;
        }
        pred_of[pos] = pred;
        out[pos] = c;
    }
    return k;
}

/* ---------------------------------------------------------------------------------------------
 * Fitting
 * ------------------------------------------------------------------------------------------- */

/* Fits the main-effects model and the forest on all observations. */
static bt_status forest_fit(forest_state *s)
{
    double worst = -INFINITY;
    for (size_t i = 0; i < s->nobs; i++)
        if (isfinite(s->ms[i]) && log(s->ms[i]) > worst)
            worst = log(s->ms[i]);
    if (!isfinite(worst))
        worst = 0;
    for (size_t i = 0; i < s->nobs; i++)
        s->y[i] = isfinite(s->ms[i]) ? log(s->ms[i]) : worst;

    double *yc = malloc(sizeof *yc * s->nobs), *tmp = malloc(sizeof *tmp * s->nobs);
    if (!yc || !tmp) {
        free(yc);
        free(tmp);
        return BT_NOMEM;
    }
    memcpy(yc, s->y, sizeof *yc * s->nobs);
    additive_fit(s, yc, tmp);
    free(yc);
    free(tmp);

    for (int t = 0; t < FOREST_TREES; t++) {
        s->trees[t].n = 0;
        for (size_t i = 0; i < s->nobs; i++)
            s->sample[i] = (size_t)bt__rng_below(&s->rng, s->nobs);
        if (tree_build(s, &s->trees[t], 0, s->nobs, 0) < 0)
            return BT_NOMEM;
    }
    s->fitted_nobs = s->nobs;
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Candidates and acquisition
 * ------------------------------------------------------------------------------------------- */
static double expected_improvement(double mu, double sigma, double best)
{
    double d = best - mu;
    if (sigma < 1e-9)
        return d > 0 ? d : 0;
    double z = d / sigma;
    double cdf = 0.5 * erfc(-z / sqrt(2.0));
    double pdf = exp(-0.5 * z * z) / sqrt(2.0 * M_PI);
    return d * cdf + sigma * pdf;
}

typedef struct pool {
    uint64_t *idx;
    size_t n, cap;
    bt__idxmap in; /* dedup */
} pool;

static bt_status pool_add(forest_state *s, pool *p, uint64_t idx)
{
    if (bt__idxmap_get(&s->seen, idx, NULL) || bt__idxmap_get(&p->in, idx, NULL))
        return BT_OK;
    if (!bt__valid(&s->ctx, idx))
        return BT_OK;
    if (p->n == p->cap) {
        size_t ncap = p->cap ? p->cap * 2 : 1024;
        uint64_t *ni = realloc(p->idx, sizeof *ni * ncap);
        if (!ni)
            return BT_NOMEM;
        p->idx = ni;
        p->cap = ncap;
    }
    p->idx[p->n++] = idx;
    return bt__idxmap_put(&p->in, idx, 0);
}

/* Indices (into the observations) of the k fastest successful ones, fastest first. */
static size_t top_observations(const forest_state *s, size_t *out, size_t k)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nobs; i++) {
        if (!isfinite(s->ms[i]))
            continue;
        size_t pos = n < k ? n++ : k;
        if (pos == k) {
            if (s->ms[i] >= s->ms[out[k - 1]])
                continue;
            pos = k - 1;
        }
        while (pos > 0 && s->ms[out[pos - 1]] > s->ms[i]) {
            out[pos] = out[pos - 1];
            pos--;
        }
        out[pos] = i;
    }
    return n;
}

static bt_status build_pool(forest_state *s, pool *p)
{
    bt_status st = BT_OK;
    uint64_t left = s->valid.enumerated ? s->valid.n - s->seen.count : UINT64_MAX;
    if (left <= FOREST_POOL_ALL) {
        for (uint64_t i = 0; i < s->valid.n && st == BT_OK; i++)
            st = pool_add(s, p, s->valid.idx[i]);
        return st;
    }
    for (int i = 0; i < FOREST_POOL_RANDOM && st == BT_OK; i++) {
        uint64_t idx;
        if (!bt__valid_random_unseen(&s->valid, &s->rng, &s->seen, &idx))
            break;
        st = pool_add(s, p, idx);
    }
    size_t top[FOREST_TOPK];
    size_t ntop = top_observations(s, top, FOREST_TOPK);
    for (size_t t = 0; t < ntop && st == BT_OK; t++) {
        int ranks[BT_MAX_PARAMS];
        bt__ordinal_ranks(&s->ord, s->obs_idx[top[t]], ranks);
        for (int q = 0; q < s->ord.nparams && st == BT_OK; q++) {
            int keep = ranks[q];
            for (int r = 0; r < s->ord.nvalues[q] && st == BT_OK; r++) {
                if (r == keep)
                    continue;
                ranks[q] = r;
                st = pool_add(s, p, bt__ordinal_index(&s->ord, ranks));
            }
            ranks[q] = keep;
        }
    }
    for (size_t i = 0; s->ctx.compile_gain > 0 && i < s->ctx.nready && st == BT_OK; i++)
        st = pool_add(s, p, s->ctx.ready[i]); /* cheaper to measure */
    uint64_t nominated[FOREST_NOMINATED];
    size_t nn = additive_top(s, nominated, FOREST_NOMINATED);
    for (size_t i = 0; i < nn && st == BT_OK; i++)
        st = pool_add(s, p, nominated[i]);
    /* The prior's best unmeasured configs. */
    while (s->prior_pos < s->nprior_order &&
           bt__idxmap_get(&s->seen, s->prior_order[s->prior_pos], NULL))
        s->prior_pos++;
    for (uint64_t i = s->prior_pos, added = 0;
         i < s->nprior_order && added < FOREST_NOMINATED && st == BT_OK; i++) {
        if (bt__idxmap_get(&s->seen, s->prior_order[i], NULL))
            continue;
        st = pool_add(s, p, s->prior_order[i]);
        added++;
    }
    return st;
}

/* What measuring idx must promise beyond a ready config (ln time): 0 when its binary is ready or
 * nothing is (every config costs the same), else compile_gain. */
static double compile_gain(const forest_state *s, uint64_t idx)
{
    if (!s->ctx.nready || !(s->ctx.compile_gain > 0) ||
        bsearch(&idx, s->ctx.ready, s->ctx.nready, sizeof idx, bt__cmp_u64))
        return 0;
    return s->ctx.compile_gain;
}

static int cmp_scored(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->acq != y->acq)
        return x->acq > y->acq ? -1 : 1;
    if (x->mu != y->mu)
        return x->mu < y->mu ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The forest's prediction for config idx (ln ms): the trees' mean and their spread. */
static void forest_predict(const forest_state *s, uint64_t idx, double *mu, double *sigma)
{
    uint8_t x[FOREST_MAX_FEATURES];
    features_of(s, idx, x);
    double sum = 0, sum2 = 0;
    for (int t = 0; t < FOREST_TREES; t++) {
        double v = tree_predict(&s->trees[t], x);
        sum += v;
        sum2 += v * v;
    }
    *mu = sum / FOREST_TREES;
    double var = sum2 / FOREST_TREES - *mu * *mu;
    *sigma = var > 0 ? sqrt(var) : 0;
}

/* Scores a fresh candidate pool with the current forest into s->ranked, best first. */
static bt_status forest_rank_pool(forest_state *s)
{
    s->ranked_n = s->ranked_pos = 0;
    pool p = {0};
    bt__idxmap_init(&p.in);
    bt_status st = build_pool(s, &p);
    if (st == BT_OK && p.n > s->ranked_cap) {
        scored *nr = realloc(s->ranked, sizeof *nr * p.n);
        if (!nr) {
            st = BT_NOMEM;
        } else {
            s->ranked = nr;
            s->ranked_cap = p.n;
        }
    }
    if (st != BT_OK) {
        free(p.idx);
        bt__idxmap_free(&p.in);
        return st;
    }
    double ybest = log(s->best_ms);
    for (size_t c = 0; c < p.n; c++) {
        double mu, sigma;
        forest_predict(s, p.idx[c], &mu, &sigma);
        s->ranked[c] = (scored){p.idx[c],
                                expected_improvement(mu, sigma, ybest) - compile_gain(s, p.idx[c]),
                                mu};
    }
    s->ranked_n = p.n;
    free(p.idx);
    bt__idxmap_free(&p.in);
    qsort(s->ranked, s->ranked_n, sizeof *s->ranked, cmp_scored);
    s->ranked_fit = s->fitted_nobs;
    s->ranked_best = s->best_ms;
    return BT_OK;
}

/* The trust-region step's ranking of config idx: the forest's mean prediction (ln ms); for a
 * config that must be compiled while others are ready (ctx->ready), the pessimistic one, mean
 * plus the trees' spread plus compile_gain: it is chosen over a ready neighbour only when the
 * trees agree it is faster by that much. */
static double forest_local_rank(const void *state, uint64_t idx)
{
    const forest_state *s = state;
    double mu, sigma, gain = compile_gain(s, idx);
    forest_predict(s, idx, &mu, &sigma);
    return gain > 0 ? mu + sigma + gain : mu;
}

/* ---------------------------------------------------------------------------------------------
 * Strategy
 * ------------------------------------------------------------------------------------------- */
static void forest_destroy(void *state)
{
    forest_state *s = state;
    if (!s)
        return;
    bt__valid_set_free(&s->valid);
    bt__ordinal_free(&s->ord);
    bt__idxmap_free(&s->seen);
    for (int t = 0; t < FOREST_TREES; t++)
        free(s->trees[t].nodes);
    free(s->prior_edges);
    free(s->prior_order);
    free(s->X);
    free(s->ms);
    free(s->obs_idx);
    free(s->sample);
    free(s->y);
    free(s->ranked);
    free(s);
}

static bt_status forest_create(const bt__search_ctx *ctx, void **state, bt_diag *diag)
{
    forest_state *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    s->ctx = *ctx;
    s->best_ms = INFINITY;
    bt__idxmap_init(&s->seen);
    bt__rng_seed(&s->rng, ctx->seed, 0x666f72657374ULL);
    bt_status st = bt__valid_set_init(&s->valid, ctx);
    if (st == BT_OK)
        st = bt__ordinal_init(&s->ord, ctx->space);
    if (st != BT_OK) {
        forest_destroy(s);
        return st;
    }
    for (int p = 0; p < s->ord.nparams; p++) {
        if (s->ord.nvalues[p] < 2)
            continue;
        s->feat_param[s->nfeat] = p;
        s->feat_kind[s->nfeat] = FK_RANK;
        s->nbins[s->nfeat] =
            s->ord.nvalues[p] < FOREST_MAX_BINS ? s->ord.nvalues[p] : FOREST_MAX_BINS;
        s->nfeat++;
        for (int kind = FK_TZ; kind <= FK_POW2; kind++) {
            if (!feature_informative(&s->ord, ctx->space, p, kind))
                continue;
            s->feat_param[s->nfeat] = p;
            s->feat_kind[s->nfeat] = kind;
            s->nbins[s->nfeat] = kind == FK_TZ ? FOREST_TZ_CAP + 2 : 2;
            s->nfeat++;
        }
    }
    if (ctx->prior && (st = prior_feature_init(s)) != BT_OK) {
        forest_destroy(s);
        return st;
    }
    *state = s;
    return BT_OK;
}

static bt_status forest_propose(void *state, uint64_t *idx)
{
    forest_state *s = state;
    s->step++;
    if (!s->first_done) {
        s->first_done = true;
        if (s->nprior_order > 0) {
            *idx = s->prior_order[0];
            return BT_OK;
        }
    }
    if (s->nobs < FOREST_INIT || s->nsucc < 2 || s->nfeat == 0)
        return bt__valid_random_unseen(&s->valid, &s->rng, &s->seen, idx) ? BT_OK : BT_NOT_FOUND;
    /* (within a round nothing new was observed: the fitted forest stays) */
    if (s->nobs != s->fitted_nobs &&
        (s->fitted_nobs == 0 || s->nobs <= FOREST_REFIT_ALL ||
         s->nobs >= s->fitted_nobs + s->fitted_nobs / FOREST_REFIT_GROWTH)) {
        bt_status st = forest_fit(s);
        if (st != BT_OK)
            return st;
    }
    /* the trust-region step; a neighbour to compile while others are ready only where even its
     * pessimistic rank beats the best by compile_gain, else the ranking below (ready ones too) */
    if (s->step % FOREST_LOCAL_EVERY == 0 && isfinite(s->best_ms) &&
        bt__local_best(&s->ctx, &s->ord, &s->seen, s->best_idx, forest_local_rank, s, idx) &&
        (compile_gain(s, *idx) == 0 || forest_local_rank(s, *idx) < log(s->best_ms)))
        return BT_OK;
    if (s->ranked_fit != s->fitted_nobs || s->ranked_best != s->best_ms) {
        bt_status st = forest_rank_pool(s);
        if (st != BT_OK)
            return st;
    }
    while (s->ranked_pos < s->ranked_n) {
        uint64_t c = s->ranked[s->ranked_pos++].idx;
        if (!bt__idxmap_get(&s->seen, c, NULL)) {
            *idx = c;
            return BT_OK;
        }
    }
    return bt__valid_random_unseen(&s->valid, &s->rng, &s->seen, idx) ? BT_OK : BT_NOT_FOUND;
}

/* Proposals are remembered at once (time NAN until observed), so that a caller that asks for
 * several before measuring them (a batch compiled in parallel) never gets one twice. */
static bt_status forest_next(void *state, uint64_t *idx)
{
    forest_state *s = state;
    bt_status st = forest_propose(s, idx);
    if (st == BT_OK)
        st = bt__idxmap_put(&s->seen, *idx, NAN);
    return st;
}

static void forest_observe(void *state, uint64_t idx, double ms, bt_status fail)
{
    forest_state *s = state;
    if (fail != BT_OK)
        ms = INFINITY;
    if (bt__idxmap_put(&s->seen, idx, ms) != BT_OK)
        return;
    if (s->nobs == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 256;
        uint8_t *nx = realloc(s->X, ncap * (size_t)(s->nfeat ? s->nfeat : 1));
        if (nx)
            s->X = nx;
        double *nm = realloc(s->ms, sizeof *nm * ncap);
        if (nm)
            s->ms = nm;
        uint64_t *ni = realloc(s->obs_idx, sizeof *ni * ncap);
        if (ni)
            s->obs_idx = ni;
        size_t *ns = realloc(s->sample, sizeof *ns * ncap);
        if (ns)
            s->sample = ns;
        double *ny = realloc(s->y, sizeof *ny * ncap);
        if (ny)
            s->y = ny;
        if (!nx || !nm || !ni || !ns || !ny)
            return; /* the observation is lost; the config is still never proposed again */
        s->cap = ncap;
    }
    if (isfinite(ms)) {
        s->nsucc++;
        if (ms < s->best_ms) {
            s->best_ms = ms;
            s->best_idx = idx;
        }
    }
    features_of(s, idx, s->X + s->nobs * (size_t)s->nfeat);
    s->ms[s->nobs] = ms;
    s->obs_idx[s->nobs] = idx;
    s->nobs++;
}

const bt__strategy bt__strategy_forest = {
    .name = "forest",
    .summary = "random-forest surrogate + expected improvement (learned; default for large "
               "spaces)",
    .create = forest_create,
    .next = forest_next,
    .observe = forest_observe,
    .destroy = forest_destroy,
    .weighs_cost = true,
};
