/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.h — pieces shared by the search strategies (internal to src/search/): a seeded RNG, a
 * hash map from config index to value, the set of valid configs, and the ordinal view of a space
 * (each parameter's values sorted, so that "neighbour" means the next larger or smaller value).
 */
#ifndef BT_SEARCH_COMMON_H
#define BT_SEARCH_COMMON_H

#include "core/rng.h"
#include "search/strategy.h"

#include <stdbool.h>
#include <stdint.h>

/* --- map: config index -> double (open addressing) ------------------------------------------ */
typedef struct bt__idxmap {
    uint64_t *keys; /* key + 1; 0 marks an empty slot */
    double *vals;
    uint64_t cap, count;
} bt__idxmap;

void bt__idxmap_init(bt__idxmap *m);
void bt__idxmap_free(bt__idxmap *m);
/* Inserts or replaces. BT_NOMEM on allocation failure. */
bt_status bt__idxmap_put(bt__idxmap *m, uint64_t key, double val);
/* true and *val (may be NULL) when present. */
bool bt__idxmap_get(const bt__idxmap *m, uint64_t key, double *val);

/* --- the valid configs ---------------------------------------------------------------------- */
/* Spaces up to this many configs are enumerated once (is_valid called on each); larger ones are
 * sampled by rejection. */
#define BT__SEARCH_ENUM_MAX (UINT64_C(1) << 23)

typedef struct bt__valid_set {
    bt__search_ctx ctx;
    bool enumerated;
    uint64_t *idx; /* enumerated: the valid indices in increasing order (malloc'd) */
    uint64_t n;    /* enumerated: how many; otherwise UINT64_MAX (unknown) */
} bt__valid_set;

bt_status bt__valid_set_init(bt__valid_set *v, const bt__search_ctx *ctx);
void bt__valid_set_free(bt__valid_set *v);
bool bt__valid(const bt__search_ctx *ctx, uint64_t idx);
/* A uniformly random valid index for which `seen` (may be NULL) holds no entry. false when none is
 * left (enumerated) or none was found after many tries (rejection sampling). */
bool bt__valid_random_unseen(const bt__valid_set *v, bt__rng *r, const bt__idxmap *seen,
                             uint64_t *out);

/* A valid config and the prior's prediction for it (NAN: none). */
typedef struct bt__ranked {
    uint64_t idx;
    double pred;
} bt__ranked;
/* The valid configs of ctx (ctx->prior set; a space of at most BT__SEARCH_ENUM_MAX configs) in
 * predicted order: fastest first, those without a prediction last, ties by index (malloc'd into
 * *out, *n of them). */
bt_status bt__search_ranked(const bt__search_ctx *ctx, bt__ranked **out, uint64_t *n);

/* --- ordinal view: parameter values by rank --------------------------------------------------- */
typedef struct bt__ordinal {
    int nparams;
    int nvalues[BT_MAX_PARAMS];
    int *rank[BT_MAX_PARAMS]; /* rank[p][pos]: rank of value pos in increasing order */
    int *pos[BT_MAX_PARAMS];  /* pos[p][rank]: the inverse */
    bool pow2[BT_MAX_PARAMS]; /* every value is a power of two (>= 2 values) */
    const bt__space *space;
} bt__ordinal;

bt_status bt__ordinal_init(bt__ordinal *o, const bt__space *s);
void bt__ordinal_free(bt__ordinal *o);
/* Index -> ranks (one per parameter) and back. */
void bt__ordinal_ranks(const bt__ordinal *o, uint64_t idx, int *ranks);
uint64_t bt__ordinal_index(const bt__ordinal *o, const int *ranks);
/* The rank of value v in parameter p, or -1. */
int bt__ordinal_rank_of_value(const bt__ordinal *o, int p, int64_t v);

/* What the walking strategies (coordinate, anneal) start from: the context, the valid set, the
 * parameters' value ranks, their random stream and the configs measured so far (-> ms,
 * INFINITY for a failure). */
typedef struct bt__walk {
    bt__search_ctx ctx;
    bt__valid_set valid;
    bt__ordinal ord;
    bt__rng rng;
    bt__idxmap seen;
} bt__walk;

/* Fills w for ctx with the random stream `stream` of ctx->seed; on failure w is freed. */
bt_status bt__walk_init(bt__walk *w, const bt__search_ctx *ctx, uint64_t stream);
void bt__walk_free(bt__walk *w);

#endif
