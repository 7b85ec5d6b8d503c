/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forest_local.c — the `forest` strategy's trust-region step (forest_local.h): the surrogate's
 * favourite among the configs within two parameter changes of the incumbent.
 *
 * Why (bench/NOTES.md 38): on conv A100 the only config within 5 % of the best differs in two
 * parameters from the runner-up, and its one-parameter neighbours are 1.4x slower: neither the
 * forest's global ranking nor a one-parameter move of the incumbent reaches it, a search that
 * stays near the incumbent and moves two parameters at once does. s_forest.c takes this step
 * every sixth step, in place of the coordinate-descent check it had before.
 */
#include "search/forest_local.h"

#include <stdlib.h>

/* Two-parameter moves go at most this many ranks from the centre's value in each parameter, so
 * that parameters of hundreds of values keep the step cheap (a few thousand predictions per
 * pair); one-parameter moves try every value. The recorded spaces have at most 29 values a
 * parameter, so there it is the whole neighbourhood. */
#define LOCAL_PAIR_SPAN 32

/* Keeps c in *best when it is unmeasured, valid and ranked lower (ties: the lower index). */
static void consider(const bt__search_ctx *ctx, const bt__idxmap *seen, uint64_t c,
                     bt__local_predict_fn predict, const void *user, bool *have, uint64_t *best,
                     double *best_pred)
{
    if (bt__idxmap_get(seen, c, NULL) || !bt__valid(ctx, c))
        return;
    double p = predict(user, c);
    if (!*have || p < *best_pred || (p == *best_pred && c < *best)) {
        *have = true;
        *best = c;
        *best_pred = p;
    }
}

bool bt__local_best(const bt__search_ctx *ctx, const bt__ordinal *ord, const bt__idxmap *seen,
                    uint64_t centre, bt__local_predict_fn predict, const void *user, uint64_t *out)
{
    bool have = false;
    double best_pred = 0;
    int ranks[BT_MAX_PARAMS];
    bt__ordinal_ranks(ord, centre, ranks);
    for (int p = 0; p < ord->nparams; p++) {
        int k0 = ranks[p];
        for (int v = 0; v < ord->nvalues[p]; v++) {
            if (v == k0)
                continue;
            ranks[p] = v;
            consider(ctx, seen, bt__ordinal_index(ord, ranks), predict, user, &have, out,
                     &best_pred);
            if (abs(v - k0) > LOCAL_PAIR_SPAN)
                continue;
            for (int q = p + 1; q < ord->nparams; q++) {
                int k1 = ranks[q];
                for (int w = 0; w < ord->nvalues[q]; w++) {
                    if (w == k1 || abs(w - k1) > LOCAL_PAIR_SPAN)
                        continue;
                    ranks[q] = w;
                    consider(ctx, seen, bt__ordinal_index(ord, ranks), predict, user, &have, out,
                             &best_pred);
                }
                ranks[q] = k1;
            }
        }
        ranks[p] = k0;
    }
    return have;
}
