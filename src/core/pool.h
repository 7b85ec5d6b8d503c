/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.h — the library's one thread pool (internal): run n independent jobs of one function over
 * at most t threads, the calling thread working too. Every caller that spreads work over cores
 * (compiling configs, filling and checking large host buffers, exact planning, simulation runs)
 * goes through it.
 */
#ifndef BT_CORE_POOL_H
#define BT_CORE_POOL_H

#include <stddef.h>

/* One job: fn(arg, i) for i in [0, n). Jobs must not depend on which thread runs them. */
typedef void (*bt__pool_fn)(void *arg, size_t i);
/* Called after each finished job with how many are done so far (serialised: never two at once). */
typedef void (*bt__pool_progress_fn)(void *arg, size_t done, size_t n);

/* Runs fn(arg, 0..n-1) on up to `threads` threads in all (the caller is one of them; threads < 1
 * counts as 1; at most 128) and returns when every job has finished. Jobs are handed out in index
 * order. A thread that cannot be created is simply not there: the others (at least the caller)
 * do its share, so the result is the same. progress may be NULL. */
void bt__pool_run(size_t n, int threads, bt__pool_fn fn, bt__pool_progress_fn progress, void *arg);

/* The number of online processors (at least 1). */
int bt__pool_cores(void);

#endif
