/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host.c — host buffers, random initialisers, fp16/bf16 conversion, poison patterns and the
 * allclose comparison (see host.h).
 */
#include "engine/host.h"

#include "core/pool.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t bt__f32_to_f16(float f)
{
    uint32_t u = f2u(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        float v = u2f(a) * 16777216.0f;
        return (uint16_t)(sign | (uint32_t)nearbyintf(v));
    }
    uint32_t r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
    return (uint16_t)(sign | (r >> 13));
}

float bt__f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return u2f(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t bt__f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float bt__bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

bt_status bt__hostbuf_alloc(bt__hostbuf *b, bt__dtype t, size_t count)
{
    b->dtype = t;
    b->count = count;
    size_t bytes = count * (size_t)bt__dtype_size(t);
    b->data = malloc(bytes ? bytes : 1);
    return b->data ? BT_OK : BT_NOMEM;
}

void bt__hostbuf_free(bt__hostbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->count = 0;
}

/* Each storage type's element as a double: X(dtype, C type, conversion of p[i]). */
#define GET_TYPES(X)                                                                            \
    X(BT__DT_FP32, float, p[i])                                                                 \
    X(BT__DT_FP16, uint16_t, bt__f16_to_f32(p[i]))                                              \
    X(BT__DT_BF16, uint16_t, bt__bf16_to_f32(p[i]))                                             \
    X(BT__DT_FP64, double, p[i])                                                                \
    X(BT__DT_INT8, int8_t, p[i])                                                                \
    X(BT__DT_FP8, uint8_t, p[i])                                                                \
    X(BT__DT_INT32, int32_t, p[i])                                                              \
    X(BT__DT_INT64, int64_t, (double)p[i])

double bt__hostbuf_get(const bt__hostbuf *b, size_t i)
{
#define GET_ONE(dt, T, expr)                                                                    \
    case dt: {                                                                                  \
        const T *p = b->data;                                                                   \
        return (expr);                                                                          \
    }
    switch (b->dtype) {
        GET_TYPES(GET_ONE)
    default: return 0;
    }
#undef GET_ONE
}

typedef struct get_all_job {
    const bt__hostbuf *b;
    double *out;
} get_all_job;

#define GET_ALL_BLOCK ((size_t)1 << 20)

static void get_all_one(void *arg, size_t blk)
{
    const get_all_job *J = arg;
    size_t lo = blk * GET_ALL_BLOCK, left = J->b->count - lo;
    bt__hostbuf_get_block(J->b, lo, left < GET_ALL_BLOCK ? left : GET_ALL_BLOCK, J->out + lo);
}

void bt__hostbuf_get_all(const bt__hostbuf *b, double *out)
{
    get_all_job J = {b, out};
    size_t blocks = (b->count + GET_ALL_BLOCK - 1) / GET_ALL_BLOCK;
    bt__pool_run(blocks, blocks > 1 ? bt__pool_cores() : 1, get_all_one, NULL, &J);
}

void bt__hostbuf_set(bt__hostbuf *b, size_t i, double v)
{
    bt__hostbuf_put(b, i, &v, 1);
}

void bt__hostbuf_get_block(const bt__hostbuf *b, size_t lo, size_t n, double *out)
{
    /* one loop per storage type: the type is switched on once per block, not per element */
#define GET_LOOP(dt, T, expr)                                                                   \
    case dt: {                                                                                  \
        const T *p = (const T *)b->data + lo;                                                   \
        for (size_t i = 0; i < n; i++)                                                          \
            out[i] = (expr);                                                                    \
        return;                                                                                 \
    }
    switch (b->dtype) {
        GET_TYPES(GET_LOOP)
    default: memset(out, 0, n * sizeof *out); return;
    }
#undef GET_LOOP
}

#define PUT_LOOP(T, expr)                                                                       \
    do {                                                                                        \
        T *p = (T *)b->data + lo;                                                               \
        for (size_t i = 0; i < n; i++)                                                          \
            p[i] = (expr);                                                                      \
    } while (0)

void bt__hostbuf_put(bt__hostbuf *b, size_t lo, const double *v, size_t n)
{
    switch (b->dtype) {
    case BT__DT_FP32: PUT_LOOP(float, (float)v[i]); break;
    case BT__DT_FP16: PUT_LOOP(uint16_t, bt__f32_to_f16((float)v[i])); break;
    case BT__DT_BF16: PUT_LOOP(uint16_t, bt__f32_to_bf16((float)v[i])); break;
    case BT__DT_FP64: PUT_LOOP(double, v[i]); break;
    case BT__DT_INT8: PUT_LOOP(int8_t, (int8_t)llround(v[i])); break;
    case BT__DT_FP8: PUT_LOOP(uint8_t, (uint8_t)llround(v[i])); break;
    case BT__DT_INT32: PUT_LOOP(int32_t, (int32_t)llround(v[i])); break;
    case BT__DT_INT64: PUT_LOOP(int64_t, (int64_t)llround(v[i])); break;
    default: break;
    }
}

/* A buffer filled by its initialiser in chunks of FILL_CHUNK elements, chunk ch of argument
 * `stream` drawing from the stream (seed, stream, ch) alone: the values do not depend on how
 * many threads fill them or in which order. Each chunk is made in blocks of FILL_BLOCK doubles,
 * then stored in the buffer's type. */
#define FILL_CHUNK ((size_t)1 << 18)
#define FILL_BLOCK 512 /* even: normals come in pairs */
typedef struct fill_job {
    bt__hostbuf *b;
    bt__init_kind kind;
    double a, c;
    uint64_t seed, stream;
} fill_job;

/* Two independent N(0, 1) values: Marsaglia's polar method (one log and one square root per
 * pair, no trigonometry; a point outside the unit disc, 21 % of them, is drawn again). In double
 * precision for fp64 buffers; in float for the others, which store at most a float's precision
 * (both coordinates from one draw, 24 bits each). */
static void normal_pair(bt__rng *r, double *z0, double *z1)
{
    double u, v, s;
    do {
        u = (double)(bt__rng_next(r) >> 11) * 0x1.0p-52 - 1.0; /* [-1, 1) */
        v = (double)(bt__rng_next(r) >> 11) * 0x1.0p-52 - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = sqrt(-2.0 * log(s) / s);
    *z0 = u * f;
    *z1 = v * f;
}

static void normal_pair_f(bt__rng *r, double *z0, double *z1)
{
    float u, v, s;
    do {
        uint64_t w = bt__rng_next(r);
        u = (float)(w >> 40) * 0x1.0p-23f - 1.0f; /* [-1, 1) */
        v = (float)((w >> 16) & 0xffffffu) * 0x1.0p-23f - 1.0f;
        s = u * u + v * v;
    } while (s >= 1.0f || s == 0.0f);
    float f = sqrtf(-2.0f * logf(s) / s);
    *z0 = u * f;
    *z1 = v * f;
}

/* n values of job j starting at element lo into v. */
static void fill_values(const fill_job *j, bt__rng *r, size_t lo, size_t n, double *v)
{
    double a = j->a, c = j->c;
    switch (j->kind) {
    case BT__INIT_NORMAL:
        for (size_t i = 0; i < n; i += 2) {
            double z0, z1;
            if (j->b->dtype == BT__DT_FP64)
                normal_pair(r, &z0, &z1);
            else
                normal_pair_f(r, &z0, &z1);
            v[i] = a + c * z0;
            if (i + 1 < n)
                v[i + 1] = a + c * z1;
        }
        break;
    case BT__INIT_UNIFORM:
        for (size_t i = 0; i < n; i++)
            v[i] = a + (c - a) * bt__rng_uniform(r);
        break;
    case BT__INIT_INT:
        for (size_t i = 0; i < n; i++)
            v[i] = floor(a + (c - a + 1) * bt__rng_uniform(r));
        break;
    case BT__INIT_IOTA:
        for (size_t i = 0; i < n; i++)
            v[i] = a + (double)(lo + i) * c;
        break;
    case BT__INIT_CONST:
        for (size_t i = 0; i < n; i++)
            v[i] = a;
        break;
    default:
        for (size_t i = 0; i < n; i++)
            v[i] = NAN;
        break;
    }
}

static void fill_chunk(void *arg, size_t ch)
{
    const fill_job *j = arg;
    bt__hostbuf *b = j->b;
    bool is_int = b->dtype == BT__DT_INT8 || b->dtype == BT__DT_INT32 || b->dtype == BT__DT_INT64;
    bt__rng r;
    bt__rng_stream(&r, j->seed, j->stream, ch);
    size_t end = (ch + 1) * FILL_CHUNK < b->count ? (ch + 1) * FILL_CHUNK : b->count;
    double v[FILL_BLOCK];
    for (size_t lo = ch * FILL_CHUNK; lo < end; lo += FILL_BLOCK) {
        size_t n = end - lo < FILL_BLOCK ? end - lo : FILL_BLOCK;
        fill_values(j, &r, lo, n, v);
        if (is_int && j->kind != BT__INIT_INT)
            for (size_t i = 0; i < n; i++)
                v[i] = round(v[i]);
        bt__hostbuf_put(b, lo, v, n);
    }
}

void bt__hostbuf_fill(bt__hostbuf *b, bt__init_kind kind, double a, double c, uint64_t seed,
                      uint64_t stream, int threads)
{
    fill_job job = {b, kind, a, c, seed, stream};
    bt__pool_run((b->count + FILL_CHUNK - 1) / FILL_CHUNK, threads, fill_chunk, NULL, &job);
    /* never time or verify on zeros: a random buffer that came out all zero gets a 1 */
    if ((kind == BT__INIT_NORMAL || kind == BT__INIT_UNIFORM || kind == BT__INIT_INT) && b->count) {
        bool all_zero = true;
        for (size_t i = 0; i < b->count && all_zero; i++)
            all_zero = bt__hostbuf_get(b, i) == 0;
        if (all_zero)
            bt__hostbuf_set(b, 0, 1);
    }
}

void bt__hostbuf_init(bt__hostbuf *b, bt__init_kind kind, double a, double c, bt__rng *r)
{
    bt__hostbuf_fill(b, kind, a, c, bt__rng_next(r), 0, bt__pool_cores());
}

void bt__poison_pattern(bt__dtype t, uint8_t pattern[8], size_t *size)
{
    memset(pattern, 0xff, 8);
    *size = (size_t)bt__dtype_size(t);
    switch (t) {
    case BT__DT_FP32: {
        uint32_t q = 0x7fc00000u;
        memcpy(pattern, &q, 4);
        break;
    }
    case BT__DT_FP16: {
        uint16_t q = 0x7e00u;
        memcpy(pattern, &q, 2);
        break;
    }
    case BT__DT_BF16: {
        uint16_t q = 0x7fc0u;
        memcpy(pattern, &q, 2);
        break;
    }
    case BT__DT_FP64: {
        uint64_t q = 0x7ff8000000000000ULL;
        memcpy(pattern, &q, 8);
        break;
    }
    default: break; /* integers: all ones */
    }
}

typedef struct vjob {
    const bt__hostbuf *out;
    const double *ref; /* NULL: the reference is not known here (sampled): only scan for NaN/Inf */
    double rtol, atol;
    size_t lo, hi;
    size_t checked, bad, nonfinite, first_bad_nf, first_bad;
    double max_abs, max_rel;
} vjob;

/* Scans jobs[t]'s range of the output. */
static void verify_range(void *arg, size_t t)
{
    vjob *j = (vjob *)arg + t;
    j->first_bad_nf = j->first_bad = SIZE_MAX;
    for (size_t i = j->lo; i < j->hi; i++) {
        double o = bt__hostbuf_get(j->out, i);
        if (!isfinite(o)) {
            if (j->ref && !isfinite(j->ref[i]) && isnan(o) == isnan(j->ref[i]) &&
                (isnan(o) || signbit(o) == signbit(j->ref[i]))) {
                j->checked++;
                continue; /* the reference has the same non-finite value there */
            }
            j->nonfinite++;
            if (j->first_bad_nf == SIZE_MAX)
                j->first_bad_nf = i;
            continue;
        }
        if (!j->ref)
            continue;
        double r = j->ref[i];
        j->checked++;
        if (!isfinite(r)) {
            j->bad++;
            if (j->first_bad == SIZE_MAX)
                j->first_bad = i;
            continue;
        }
        double err = fabs(o - r), rel = err / fmax(fabs(r), 1e-30);
        if (err > j->max_abs)
            j->max_abs = err;
        if (rel > j->max_rel && fabs(r) > j->atol)
            j->max_rel = rel;
        if (err > j->atol + j->rtol * fabs(r)) {
            j->bad++;
            if (j->first_bad == SIZE_MAX)
                j->first_bad = i;
        }
    }
}

void bt__verify_compare(const bt__hostbuf *out, const double *ref, const size_t *sample,
                        size_t nsample, double rtol, double atol, bt__verify *v)
{
    memset(v, 0, sizeof *v);
    v->first_bad = SIZE_MAX;
    bool sampled = sample && nsample;
    /* every element: on all cores for large outputs */
    int nt = out->count >= ((size_t)1 << 20) ? bt__pool_cores() : 1;
    if (nt > 64)
        nt = 64;
    vjob jobs[64];
    for (int t = 0; t < nt; t++)
        jobs[t] = (vjob){.out = out, .ref = sampled ? NULL : ref, .rtol = rtol, .atol = atol,
                         .lo = out->count * (size_t)t / (size_t)nt,
                         .hi = out->count * (size_t)(t + 1) / (size_t)nt};
    bt__pool_run((size_t)nt, nt, verify_range, NULL, jobs);
    size_t first_nf = SIZE_MAX;
    for (int t = 0; t < nt; t++) {
        vjob *j = &jobs[t];
        v->checked += j->checked;
        v->bad += j->bad;
        v->nonfinite += j->nonfinite;
        if (j->max_abs > v->max_abs_err)
            v->max_abs_err = j->max_abs;
        if (j->max_rel > v->max_rel_err)
            v->max_rel_err = j->max_rel;
        if (j->first_bad_nf < first_nf)
            first_nf = j->first_bad_nf;
        if (j->first_bad < v->first_bad)
            v->first_bad = j->first_bad;
    }
    if (sampled) { /* the reference is known at the sampled indices only */
        for (size_t s = 0; s < nsample; s++) {
            size_t i = sample[s];
            double o = bt__hostbuf_get(out, i), r = ref[i];
            if (!isfinite(o) && !isfinite(r) && isnan(o) == isnan(r)) {
                if (v->nonfinite) /* it was counted as unexplained in the scan */
                    v->nonfinite--;
                continue;
            }
            if (!isfinite(o))
                continue; /* counted by the scan */
            v->checked++;
            double err = fabs(o - r), rel = err / fmax(fabs(r), 1e-30);
            if (err > v->max_abs_err)
                v->max_abs_err = err;
            if (rel > v->max_rel_err && fabs(r) > atol)
                v->max_rel_err = rel;
            if (!isfinite(r) || err > atol + rtol * fabs(r)) {
                v->bad++;
                if (i < v->first_bad)
                    v->first_bad = i;
            }
        }
    }
    if (v->nonfinite)
        v->first_bad = first_nf;
    if (v->first_bad != SIZE_MAX) {
        v->got = bt__hostbuf_get(out, v->first_bad);
        v->want = (!sampled || v->nonfinite == 0) ? ref[v->first_bad] : NAN;
        if (sampled && v->nonfinite) {
            v->want = NAN;
            for (size_t s = 0; s < nsample; s++)
                if (sample[s] == v->first_bad)
                    v->want = ref[v->first_bad];
        }
    }
    bt__verify_message(v, rtol, atol);
}

void bt__verify_message(bt__verify *v, double rtol, double atol)
{
    v->ok = v->bad == 0 && v->nonfinite == 0;
    if (v->nonfinite)
        snprintf(v->msg, sizeof v->msg,
                 "%zu non-finite outputs (first at [%zu]: got %g, want %g): unwritten or overflowed",
                 v->nonfinite, v->first_bad, v->got, v->want);
    else if (v->bad)
        snprintf(v->msg, sizeof v->msg,
                 "%zu of %zu outputs off (first at [%zu]: got %.9g, want %.9g); max abs err %.3g, "
                 "max rel err %.3g (rtol %.3g, atol %.3g)",
                 v->bad, v->checked, v->first_bad, v->got, v->want, v->max_abs_err, v->max_rel_err,
                 rtol, atol);
    else
        snprintf(v->msg, sizeof v->msg, "%zu outputs match (max abs err %.3g, max rel err %.3g)",
                 v->checked, v->max_abs_err, v->max_rel_err);
}
