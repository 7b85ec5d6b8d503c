/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recspace.h — a recorded config space (internal): the configs of a space, each either without a
 * record (an invalid config) or recorded with its time or its failure and what measuring it cost.
 * Simulation (search/simulate.c) replays one as if it were a device; the store layer fills one
 * from what it holds (a Kernel Tuner cache: bt__ktcache_recspace, which a blocktune store's
 * measurements become too), so that search knows nothing of file formats or stores.
 */
#ifndef BT_CORE_RECSPACE_H
#define BT_CORE_RECSPACE_H

#include "blocktune.h"
#include "core/space.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One recorded config. */
typedef struct bt__rec {
    uint64_t index;   /* the config's index in the space */
    bt_status fail;   /* BT_OK, or what its recorded failure means (BT_COMPILE, BT_LAUNCH, ...) */
    double time_ms;   /* the recorded time; NAN when it failed */
    double cost_s;    /* what measuring it cost (compile + benchmark), 0 when not recorded */
} bt__rec;

typedef struct bt__recspace {
    const bt__space *space;
    size_t nrecs;        /* recorded configs */
    size_t nfailed;      /* of them failed */
    bool has_best;       /* false when every record failed */
    uint64_t best_index; /* the fastest successful record */
    double best_ms;
    /* The record of config idx into *out; false when idx has none. */
    bool (*find)(const void *user, uint64_t idx, bt__rec *out);
    /* The i-th record (0 <= i < nrecs) into *out. */
    void (*at)(const void *user, size_t i, bt__rec *out);
    const void *user; /* what the callbacks read; outlives the space */
} bt__recspace;

#endif
