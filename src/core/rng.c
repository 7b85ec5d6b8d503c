/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rng.c — xoshiro256** seeded through splitmix64 (see rng.h).
 */
#include "core/rng.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void bt__rng_seed(bt__rng *r, uint64_t seed, uint64_t salt)
{
    uint64_t x = seed ^ (salt * 0xd1342543de82ef95ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

void bt__rng_stream(bt__rng *r, uint64_t seed, uint64_t a, uint64_t b)
{
    /* each key word is mixed through splitmix64 before the next is xored in: (a, b) and (b, a)
     * are different streams */
    uint64_t x = seed, h = splitmix64(&x);
    x = h ^ a;
    h = splitmix64(&x);
    x = h ^ b;
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t bt__rng_next(bt__rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double bt__rng_uniform(bt__rng *r)
{
    return (double)(bt__rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t bt__rng_below(bt__rng *r, uint64_t n)
{
    /* Lemire's multiply-shift with rejection of the biased low range. */
    unsigned __int128 m = (unsigned __int128)bt__rng_next(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t thresh = (0 - n) % n;
        while (lo < thresh) {
            m = (unsigned __int128)bt__rng_next(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}
