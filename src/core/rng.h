/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rng.h — the one seeded random number generator of the library (internal): xoshiro256** seeded
 * through splitmix64. Deterministic per (seed, salt) on every platform: the search strategies and
 * the engine's input data both draw from it; the input data from one stream per (seed, argument,
 * chunk), so that chunks can be made in any order on any number of threads.
 */
#ifndef BT_CORE_RNG_H
#define BT_CORE_RNG_H

#include <stdint.h>

typedef struct bt__rng {
    uint64_t s[4];
} bt__rng;

/* Seeds from `seed` and a per-use `salt` (two users of one seed do not draw the same stream). */
void bt__rng_seed(bt__rng *r, uint64_t seed, uint64_t salt);
/* The stream keyed by (seed, a, b): e.g. an argument and a chunk of it. Each is made from its key
 * alone, so streams can be made in any order, on any thread. */
void bt__rng_stream(bt__rng *r, uint64_t seed, uint64_t a, uint64_t b);
uint64_t bt__rng_next(bt__rng *r);
double bt__rng_uniform(bt__rng *r);             /* [0, 1) */
uint64_t bt__rng_below(bt__rng *r, uint64_t n); /* [0, n), n > 0, unbiased */

#endif
