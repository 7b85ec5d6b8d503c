/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host.h — host-side data for tuning (internal): buffers in their storage dtype, seeded random
 * initialisers, fp16/bf16 conversion, poison patterns, the comparison against a reference, and
 * the host references of the built-in kernels.
 */
#ifndef BT_ENGINE_HOST_H
#define BT_ENGINE_HOST_H

#include "core/kdesc.h"
#include "core/rng.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* --- conversions --------------------------------------------------------------------------- */
uint16_t bt__f32_to_f16(float f); /* round to nearest even */
float bt__f16_to_f32(uint16_t h);
uint16_t bt__f32_to_bf16(float f); /* round to nearest even */
float bt__bf16_to_f32(uint16_t h);

/* --- host buffers ---------------------------------------------------------------------------- */
typedef struct bt__hostbuf {
    bt__dtype dtype;
    size_t count; /* elements */
    void *data;   /* count * bt__dtype_size(dtype) bytes; fp16/bf16 stored as uint16 */
} bt__hostbuf;

static inline size_t bt__hostbuf_bytes(const bt__hostbuf *b)
{
    return b->count * (size_t)bt__dtype_size(b->dtype);
}
bt_status bt__hostbuf_alloc(bt__hostbuf *b, bt__dtype t, size_t count);
void bt__hostbuf_free(bt__hostbuf *b);
double bt__hostbuf_get(const bt__hostbuf *b, size_t i);
void bt__hostbuf_set(bt__hostbuf *b, size_t i, double v); /* rounds to the storage type */
/* Elements [lo, lo + n) as doubles into out; n doubles from v into [lo, lo + n), rounded to the
 * storage type as bt__hostbuf_set does. */
void bt__hostbuf_get_block(const bt__hostbuf *b, size_t lo, size_t n, double *out);
/* Every element as doubles into out (b->count of them), in blocks over the cores. */
void bt__hostbuf_get_all(const bt__hostbuf *b, double *out);
void bt__hostbuf_put(bt__hostbuf *b, size_t lo, const double *v, size_t n);
/* Fills with an initialiser (normal: mean a, deviation c; uniform: [a, c); int: a..c; iota:
 * a + i c; const: a) from the streams (seed, stream, chunk) on up to `threads` threads: the
 * values depend on seed and stream only, never on the thread count. Random initialisers never
 * produce an all-zero buffer. */
void bt__hostbuf_fill(bt__hostbuf *b, bt__init_kind kind, double a, double c, uint64_t seed,
                      uint64_t stream, int threads);
/* bt__hostbuf_fill on every core, keyed by the next value of r. */
void bt__hostbuf_init(bt__hostbuf *b, bt__init_kind kind, double a, double c, bt__rng *r);
/* The poison pattern of a dtype: a quiet NaN for floats, all-ones bytes for integers. */
void bt__poison_pattern(bt__dtype t, uint8_t pattern[8], size_t *size);

/* --- verification ---------------------------------------------------------------------------- */
typedef struct bt__verify {
    bool ok;
    size_t checked, bad, nonfinite;
    size_t first_bad;
    double max_abs_err, max_rel_err; /* rel: |out - ref| / max(|ref|, tiny) over checked elements */
    double got, want;                /* at first_bad */
    char msg[256];
} bt__verify;

/* Compares out against ref (doubles) as allclose(rtol, atol): |out - ref| <= atol + rtol*|ref|.
 * NaN/Inf in out fails unless ref has the same non-finite value there. sample/nsample: check only
 * those indices (nsample 0 = every element); every element is still scanned for NaN/Inf (so an
 * unwritten, poisoned element never passes). */
void bt__verify_compare(const bt__hostbuf *out, const double *ref, const size_t *sample,
                        size_t nsample, double rtol, double atol, bt__verify *v);
/* v->ok and v->msg from its counts, errors and first bad element (the comparison's wording,
 * shared by the comparison on the device, devcmp.c). */
void bt__verify_message(bt__verify *v, double rtol, double atol);

/* --- host references of the built-in kernels ---------------------------------------------------- */
typedef struct bt__href_ctx {
    const bt_kdesc *k;
    const bt_problem *p;
    const bt__hostbuf *args; /* per spec argument (scalars: count 0) */
    double **ref;            /* per argument: outputs point at a double[count] to fill */
    const size_t *sample;    /* only these output indices need computing (nsample 0 = all) */
    size_t nsample;
} bt__href_ctx;
typedef bt_status (*bt__href_fn)(const bt__href_ctx *c, bt_diag *diag);
/* The host reference named in a spec ("gemm", "softmax", ...), or NULL. */
bt__href_fn bt__hostref_find(const char *name);
/* True when the reference is expensive enough that outputs should be sampled (gemm). */
bool bt__hostref_sampled(const char *name);

#endif
