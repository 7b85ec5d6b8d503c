/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tpool.h — the Triton compile pool as the CUDA backend runs it (internal): one
 * `python3 -m blocktune.triton_compile --workers N` process (python/blocktune/, docs/triton.md)
 * per process of ours, started at the first Triton compile (or ahead of it, in the background:
 * bt__tpool_start), kept for every later one (a tune's, a plan's) and ended at exit; any thread
 * may send a request at any time. It imports Triton once and forks its workers; an embedder
 * may start its process itself (bt_triton_pool_starter: the Python package forks its own).
 *
 * Python: $BLOCKTUNE_PYTHON, else python3 on PATH; the package from $BLOCKTUNE_PYTHONPATH, else
 * the source tree's python/ (a build tree), else the installed <datadir>/blocktune/python.
 */
#ifndef BT_BACKENDS_CUDA_TPOOL_H
#define BT_BACKENDS_CUDA_TPOOL_H

#include "blocktune.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Sends the request (a JSON object's text, bt__triton_request) with target ("sm_90") and
 * max_shared (bytes; 0: the pool's default for the target) added, and waits for its answer
 * (a new reference into *answer: "ok" true, or "error" {"kind", "message"}). A pool that cannot
 * start is BT_NO_BACKEND (no such python, no Triton in it, no blocktune package: diag names
 * which); one that ended is BT_INTERNAL. */
bt_status bt__tpool_request(const char *request, const char *target, int64_t max_shared,
                            json_t **answer, bt_diag *diag);

/* Requests this process has sent to a pool (or tried to): 0 when nothing was compiled with
 * Triton, so no Python ran (the tests of a cached launch assert it). */
long long bt__tpool_requests(void);

/* The installed Triton's version ("3.6.0") into out: from the probe record (tprobe.h) when it
 * holds, so no Python runs, else from the pool's hello, starting the pool. */
bt_status bt__tpool_version(char *out, size_t size, bt_diag *diag);

/* The version into out when it is known without starting a pool (the probe record holds, or a
 * pool said it); false otherwise. */
bool bt__tpool_version_known(char *out, size_t size);

/* Starts the pool in the background when this process has none: returns at once; its workers
 * import Triton meanwhile, and the first request waits for the pool's hello. */
void bt__tpool_start(void);

/* What this process's pool has cost: started (a pool was started by this process), by_embedder
 * (its process was started by the embedder's bt_triton_pool_starter, not spawned), ready_s (from
 * its start until every worker had imported Triton; -1: not yet, or none), compile_s (the sum of
 * the compile_s of its answers that were compiled, not cached), requests (as bt__tpool_requests). */
typedef struct bt__tpool_stats {
    bool started, by_embedder;
    double ready_s, compile_s;
    long long requests;
} bt__tpool_stats;
void bt__tpool_times(bt__tpool_stats *out);

#endif
