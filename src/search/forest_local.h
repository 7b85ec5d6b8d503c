/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forest_local.h — the `forest` strategy's trust-region step (internal to src/search/): the
 * configs "near" the incumbent, ranked by the surrogate. Kept apart from s_forest.c (the
 * surrogate and the loop) because it needs only the ordinal view of the space and the measured
 * set, not the trees; the surrogate comes in as a callback.
 */
#ifndef BT_SEARCH_FOREST_LOCAL_H
#define BT_SEARCH_FOREST_LOCAL_H

#include "search/common.h"

#include <stdbool.h>
#include <stdint.h>

/* A prediction for config idx (lower is better); user is the caller's. */
typedef double (*bt__local_predict_fn)(const void *user, uint64_t idx);

/* The trust-region step: of the valid configs absent from `seen` that differ from `centre` in one
 * or two parameters (any values of one; values within 32 ranks of the centre's for two), the one
 * `predict` ranks lowest (ties: the lower index), into *out. false when there is none. Cost: one
 * prediction per such config (a few hundred on the recorded spaces). */
bool bt__local_best(const bt__search_ctx *ctx, const bt__ordinal *ord, const bt__idxmap *seen,
                    uint64_t centre, bt__local_predict_fn predict, const void *user, uint64_t *out);

#endif
