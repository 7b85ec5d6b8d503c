/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hostref.c — fp64 host references of the built-in kernels, computed from the very inputs the
 * device saw (read back in their storage dtype), so only the device's arithmetic is judged.
 */
#include "engine/host.h"

#include "core/pool.h"
#include "core/util.h"

#include <math.h>
#include <string.h>

/* The problem variable `name` as a size: a spec whose problem lacks it, or gives it a negative
 * value, cannot be checked by this reference (it would compare against zeros), so that is an
 * error naming the variable. */
/* The spec's name for the reference's `name` (its "names" map), else name itself. */
static const char *spec_name(const bt__href_ctx *c, const char *name)
{
    for (int i = 0; i < c->k->nref_names; i++)
        if (!strcmp(c->k->ref_names[i][0], name))
            return c->k->ref_names[i][1];
    return name;
}

static bt_status pv(const bt__href_ctx *c, const char *name, size_t *out, bt_diag *d)
{
    name = spec_name(c, name);
    for (int i = 0; i < c->k->nproblem; i++)
        if (!strcmp(c->k->problem_names[i], name)) {
            if (c->p->values[i] < 0) {
                bt__diag_set(d, "host reference of '%s': problem variable '%s' is negative (%lld)",
                             c->k->name, name, (long long)c->p->values[i]);
                return BT_INVALID_ARG;
            }
            *out = (size_t)c->p->values[i];
            return BT_OK;
        }
    bt__diag_set(d, "host reference of '%s' needs a problem variable named '%s'", c->k->name, name);
    return BT_INVALID_ARG;
}

/* Fails unless argument a holds at least `want` elements (a spec whose size expression disagrees
 * with the reference's shapes would otherwise be read out of bounds). */
static bt_status holds(const bt__href_ctx *c, int a, size_t want, bt_diag *d)
{
    if (c->args[a].count >= want)
        return BT_OK;
    bt__diag_set(d, "host reference of '%s': argument '%s' holds %zu elements, the reference "
                    "reads %zu", c->k->name, c->k->args[a].name, c->args[a].count, want);
    return BT_INVALID_ARG;
}

/* Index of an argument by name, -1 when absent. */
static int arg(const bt__href_ctx *c, const char *name)
{
    name = spec_name(c, name);
    for (int i = 0; i < c->k->nargs; i++)
        if (!strcmp(c->k->args[i].name, name))
            return i;
    return -1;
}

static bt_status need(const bt__href_ctx *c, const char *const *names, int *idx, int n, bt_diag *d)
{
    for (int i = 0; i < n; i++) {
        idx[i] = arg(c, names[i]);
        if (idx[i] < 0) {
            bt__diag_set(d, "host reference of '%s' needs an argument named '%s'", c->k->name,
                         spec_name(c, names[i]));
            return BT_INVALID_ARG;
        }
    }
    return BT_OK;
}

/* vector_add's reference in chunks on every core, each read in blocks of its inputs' type. */
#define VADD_CHUNK ((size_t)1 << 18)
typedef struct vadd_job {
    const bt__hostbuf *x, *y;
    double *z;
    size_t n;
} vadd_job;

static void vadd_chunk(void *arg, size_t ch)
{
    const vadd_job *j = arg;
    size_t end = (ch + 1) * VADD_CHUNK < j->n ? (ch + 1) * VADD_CHUNK : j->n;
    double x[512], y[512];
    for (size_t lo = ch * VADD_CHUNK; lo < end; lo += 512) {
        size_t m = end - lo < 512 ? end - lo : 512;
        bt__hostbuf_get_block(j->x, lo, m, x);
        bt__hostbuf_get_block(j->y, lo, m, y);
        for (size_t i = 0; i < m; i++) /* the device adds in fp32 and rounds to the storage type */
            j->z[lo + i] = (float)x[i] + (float)y[i];
    }
}

static bt_status ref_vector_add(const bt__href_ctx *c, bt_diag *d)
{
    static const char *const names[] = {"x", "y", "z"};
    int a[3];
    bt_status st = need(c, names, a, 3, d);
    if (st)
        return st;
    size_t n;
    if ((st = pv(c, "n", &n, d)) || (st = holds(c, a[0], n, d)) || (st = holds(c, a[1], n, d)) ||
        (st = holds(c, a[2], n, d)))
        return st;
    vadd_job j = {&c->args[a[0]], &c->args[a[1]], c->ref[a[2]], n};
    bt__pool_run((n + VADD_CHUNK - 1) / VADD_CHUNK, bt__pool_cores(), vadd_chunk, NULL, &j);
    return BT_OK;
}

static bt_status ref_reduce(const bt__href_ctx *c, bt_diag *d)
{
    static const char *const names[] = {"x", "out"};
    int a[2];
    bt_status st = need(c, names, a, 2, d);
    if (st)
        return st;
    size_t n;
    if ((st = pv(c, "n", &n, d)) || (st = holds(c, a[0], n, d)) || (st = holds(c, a[1], 1, d)))
        return st;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += bt__hostbuf_get(&c->args[a[0]], i);
    c->ref[a[1]][0] = s;
    return BT_OK;
}

static bt_status ref_softmax(const bt__href_ctx *c, bt_diag *d)
{
    static const char *const names[] = {"x", "y"};
    int a[2];
    bt_status st = need(c, names, a, 2, d);
    if (st)
        return st;
    size_t rows, cols;
    if ((st = pv(c, "rows", &rows, d)) || (st = pv(c, "cols", &cols, d)) ||
        (st = holds(c, a[0], rows * cols, d)) || (st = holds(c, a[1], rows * cols, d)))
        return st;
    const bt__hostbuf *x = &c->args[a[0]];
    double *y = c->ref[a[1]];
    for (size_t r = 0; r < rows; r++) {
        double m = -INFINITY, s = 0;
        for (size_t i = 0; i < cols; i++)
            m = fmax(m, bt__hostbuf_get(x, r * cols + i));
        for (size_t i = 0; i < cols; i++)
            s += exp(bt__hostbuf_get(x, r * cols + i) - m);
        for (size_t i = 0; i < cols; i++)
            y[r * cols + i] = exp(bt__hostbuf_get(x, r * cols + i) - m) / s;
    }
    return BT_OK;
}

static bt_status ref_layernorm(const bt__href_ctx *c, bt_diag *d)
{
    static const char *const names[] = {"x", "gamma", "beta", "y"};
    int a[4];
    bt_status st = need(c, names, a, 4, d);
    if (st)
        return st;
    size_t rows, cols;
    if ((st = pv(c, "rows", &rows, d)) || (st = pv(c, "cols", &cols, d)) ||
        (st = holds(c, a[0], rows * cols, d)) || (st = holds(c, a[1], cols, d)) ||
        (st = holds(c, a[2], cols, d)) || (st = holds(c, a[3], rows * cols, d)))
        return st;
    const bt__hostbuf *x = &c->args[a[0]];
    double *y = c->ref[a[3]];
    for (size_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (size_t i = 0; i < cols; i++)
            mean += bt__hostbuf_get(x, r * cols + i);
        mean /= (double)cols;
        for (size_t i = 0; i < cols; i++) {
            double dd = bt__hostbuf_get(x, r * cols + i) - mean;
            var += dd * dd;
        }
        var /= (double)cols;
        double rstd = 1.0 / sqrt(var + 1e-5);
        for (size_t i = 0; i < cols; i++)
            y[r * cols + i] = (bt__hostbuf_get(x, r * cols + i) - mean) * rstd *
                                  bt__hostbuf_get(&c->args[a[1]], i) +
                              bt__hostbuf_get(&c->args[a[2]], i);
    }
    return BT_OK;
}

typedef struct gemm_job {
    const bt__href_ctx *c;
    const bt__hostbuf *A, *B;
    double *C;
    size_t N, K, n;
    bool b_nk;
} gemm_job;

enum { GEMM_CHUNK = 64 }; /* outputs per pool job */

/* Outputs [i·GEMM_CHUNK, (i+1)·GEMM_CHUNK) of job g (sampled indices, or all in order). */
static void gemm_chunk(void *arg, size_t i)
{
    const gemm_job *g = arg;
    size_t end = (i + 1) * GEMM_CHUNK < g->n ? (i + 1) * GEMM_CHUNK : g->n;
    for (size_t s = i * GEMM_CHUNK; s < end; s++) {
        size_t idx = g->c->nsample ? g->c->sample[s] : s;
        size_t r = idx / g->N, col = idx % g->N;
        double acc = 0;
        for (size_t k = 0; k < g->K; k++)
            acc += bt__hostbuf_get(g->A, r * g->K + k) *
                   bt__hostbuf_get(g->B, g->b_nk ? col * g->K + k : k * g->N + col);
        g->C[idx] = acc;
    }
}

/* C (M×N) = A (M×K) · B, B as K×N (b_nk false) or as the N×K weight of a linear layer (true);
 * the outputs spread over the core pool in chunks (each element summed in the same order by
 * one thread, so the result does not depend on the number of threads). */
static bt_status gemm_ref(const bt__href_ctx *c, bool b_nk, bt_diag *d)
{
    static const char *const names[] = {"A", "B", "C"};
    int a[3];
    bt_status st = need(c, names, a, 3, d);
    if (st)
        return st;
    size_t M, N, K;
    if ((st = pv(c, "M", &M, d)) || (st = pv(c, "N", &N, d)) || (st = pv(c, "K", &K, d)) ||
        (st = holds(c, a[0], M * K, d)) || (st = holds(c, a[1], K * N, d)) ||
        (st = holds(c, a[2], M * N, d)))
        return st;
    gemm_job g = {c, &c->args[a[0]], &c->args[a[1]], c->ref[a[2]], N, K,
                  c->nsample ? c->nsample : M * N, b_nk};
    size_t jobs = (g.n + GEMM_CHUNK - 1) / GEMM_CHUNK;
    /* below ~1M multiply-adds a thread's start costs more than it saves */
    int threads = (double)g.n * (double)K < 1e6 ? 1 : bt__pool_cores();
    bt__pool_run(jobs, threads, gemm_chunk, NULL, &g);
    return BT_OK;
}

static bt_status ref_gemm(const bt__href_ctx *c, bt_diag *d) { return gemm_ref(c, false, d); }
static bt_status ref_gemm_nt(const bt__href_ctx *c, bt_diag *d) { return gemm_ref(c, true, d); }

static const struct {
    const char *name;
    bt__href_fn fn;
    bool sampled;
} refs[] = {
    {"vector_add", ref_vector_add, false}, {"reduce", ref_reduce, false},
    {"softmax", ref_softmax, false},       {"layernorm", ref_layernorm, false},
    {"gemm", ref_gemm, true},              {"gemm_nt", ref_gemm_nt, true},
};

bt__href_fn bt__hostref_find(const char *name)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(refs); i++)
        if (!strcmp(refs[i].name, name))
            return refs[i].fn;
    return NULL;
}

bool bt__hostref_sampled(const char *name)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(refs); i++)
        if (!strcmp(refs[i].name, name))
            return refs[i].sampled;
    return false;
}
