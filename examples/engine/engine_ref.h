/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_ref.h — what both engine examples share: the model step (softmax over the rows of X,
 * then H = P · W, then layernorm over the rows of H with gamma and beta) as three blocktune
 * kernels on the engine's tensors, the same step on the host in double, the inputs, the
 * comparison of the device's output with it, a clock and quantiles of timings.
 */
#ifndef ENGINE_REF_H
#define ENGINE_REF_H

#include <blocktune.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct engine_dims {
    int M, K, N; /* X: M x K, W: K x N, H and Y: M x N */
} engine_dims;

static double engine_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static inline int engine_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1, nearest rank) of v[0..n), n > 0; v is left as it was. */
static inline double engine_quantile(const double *v, int n, double q)
{
    double *c = malloc((size_t)n * sizeof *c);
    if (!c)
        return NAN;
    memcpy(c, v, (size_t)n * sizeof *c);
    qsort(c, (size_t)n, sizeof *c, engine_cmp_double);
    int i = (int)(q * (n - 1) + 0.5);
    double r = c[i < 0 ? 0 : i >= n ? n - 1 : i];
    free(c);
    return r;
}

static inline double engine_median(const double *v, int n)
{
    return engine_quantile(v, n, 0.5);
}

/* Deterministic inputs in [-1, 1) (gamma around 1). */
static void engine_inputs(const engine_dims *d, float *x, float *w, float *g, float *b)
{
    unsigned s = 12345;
#define ENGINE_RND() ((float)((s = s * 1103515245u + 12345u) >> 8 & 0xffff) / 32768.0f - 1.0f)
    for (long i = 0; i < (long)d->M * d->K; i++)
        x[i] = 2.0f * ENGINE_RND();
    for (long i = 0; i < (long)d->K * d->N; i++)
        w[i] = ENGINE_RND();
    for (int i = 0; i < d->N; i++) {
        g[i] = 1.0f + 0.1f * ENGINE_RND();
        b[i] = 0.1f * ENGINE_RND();
    }
#undef ENGINE_RND
}

/* The rows the host checks: every one up to about 2^31 multiply-adds of the GEMM, else every
 * engine_row_step-th row (1024 x 4096 x 4096 checks every 8th row, some seconds on one core). */
static int engine_row_step(const engine_dims *d)
{
    double macs = (double)d->M * d->K * d->N;
    int step = 1;
    while (macs / step > 2147483648.0)
        step *= 2;
    return step;
}

/* The step on the host, in double: the checked rows of y (M x N) from x, w, g, b. eps as the
 * built-in layernorm's (1e-5). */
static void engine_reference(const engine_dims *d, const float *x, const float *w, const float *g,
                             const float *b, double *y)
{
    double *p = malloc(sizeof(double) * (size_t)d->K);
    double *h = malloc(sizeof(double) * (size_t)d->N);
    int step = engine_row_step(d);
    for (int r = 0; r < d->M; r += step) {
        const float *xr = x + (long)r * d->K;
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < d->K; c++)
            mx = fmax(mx, xr[c]);
        for (int c = 0; c < d->K; c++)
            sum += exp(xr[c] - mx);
        for (int c = 0; c < d->K; c++)
            p[c] = exp(xr[c] - mx) / sum;
        for (int c = 0; c < d->N; c++)
            h[c] = 0;
        for (int k = 0; k < d->K; k++) { /* W's rows in order: the inner loop streams */
            const float *wk = w + (long)k * d->N;
            for (int c = 0; c < d->N; c++)
                h[c] += p[k] * wk[c];
        }
        double mean = 0, var = 0;
        for (int c = 0; c < d->N; c++)
            mean += h[c];
        mean /= d->N;
        for (int c = 0; c < d->N; c++)
            var += (h[c] - mean) * (h[c] - mean);
        var /= d->N;
        for (int c = 0; c < d->N; c++)
            y[(long)r * d->N + c] = (h[c] - mean) / sqrt(var + 1e-5) * g[c] + b[c];
    }
    free(p);
    free(h);
}

/* The largest |got - want| / (1 + |want|) over the checked rows; NaN anywhere is infinite. */
static double engine_error(const engine_dims *d, const float *got, const double *want)
{
    double worst = 0;
    int step = engine_row_step(d);
    for (long r = 0; r < d->M; r += step)
        for (long i = r * d->N; i < (r + 1) * d->N; i++) {
            double e = fabs((double)got[i] - want[i]) / (1 + fabs(want[i]));
            if (!(e <= worst)) /* NaN too */
                worst = isnan(e) ? INFINITY : e;
        }
    return worst;
}

/* One kernel of the step on the engine's tensors (native handles: CUdeviceptr or cl_mem). */
typedef struct engine_step {
    const char *name;
    bt_kdesc *k;
    bt_kernel *kn;
    bt_problem *p;
    bt_buffer *bufs[4];
    uint64_t handles[4];
    int nbufs;
    bt_choice *choice; /* the lookup way */
} engine_step;

/* The three kernels over the tensors t = {x, p, w, h, gamma, beta, y}, fp32, with options o.
 * 0, or -1 with the diag set. */
static int engine_steps_init(engine_step st[3], bt_device *dev, const bt_tune_options *o,
                             const engine_dims *d, const uint64_t t[7], bt_diag *diag)
{
    size_t nx = (size_t)d->M * d->K * 4, nw = (size_t)d->K * d->N * 4;
    size_t ny = (size_t)d->M * d->N * 4, nv = (size_t)d->N * 4;
    static const char *names[3] = {"softmax", "gemm", "layernorm"};
    const char *vars[3][3] = {{"rows", "cols"}, {"M", "N", "K"}, {"rows", "cols"}};
    const int64_t vals[3][3] = {{d->M, d->K}, {d->M, d->N, d->K}, {d->M, d->N}};
    const int nvars[3] = {2, 3, 2}, nbufs[3] = {2, 3, 4};
    const int which[3][4] = {{0, 1}, {1, 2, 3}, {3, 4, 5, 6}}; /* indices into t */
    const size_t bytes[7] = {nx, nx, nw, ny, nv, nv, ny};
    memset(st, 0, 3 * sizeof *st);
    for (int s = 0; s < 3; s++) {
        engine_step *e = &st[s];
        e->name = names[s];
        e->nbufs = nbufs[s];
        if (bt_kdesc_builtin(e->name, &e->k, diag) || bt_kernel_create(dev, e->k, &e->kn, diag) ||
            bt_problem_create(e->k, &e->p) || bt_problem_set_dtype(e->p, "fp32", diag))
            return -1;
        bt_kernel_set_options(e->kn, o);
        for (int v = 0; v < nvars[s]; v++)
            if (bt_problem_set(e->p, vars[s][v], vals[s][v], diag))
                return -1;
        for (int b = 0; b < e->nbufs; b++) {
            e->handles[b] = t[which[s][b]];
            if (bt_buffer_wrap(dev, e->handles[b], bytes[which[s][b]], &e->bufs[b], diag) ||
                bt_buffer_set_dtype(e->bufs[b], "fp32", diag))
                return -1;
        }
    }
    return 0;
}

/* One step through blocktune's dispatch: 0, or -1 with the diag set. */
static int engine_steps_launch(engine_step st[3], const bt_launch_options *lo, bt_diag *diag)
{
    for (int s = 0; s < 3; s++)
        if (bt_kernel_launch_ex(st[s].kn, st[s].p, st[s].bufs, st[s].nbufs, lo, diag) != BT_OK) {
            fprintf(stderr, "%s: %s\n", st[s].name, diag->msg);
            return -1;
        }
    return 0;
}

/* Each kernel's config looked up (for the engine's own launches). */
static int engine_steps_lookup(engine_step st[3], bt_diag *diag)
{
    for (int s = 0; s < 3; s++) {
        if (bt_kernel_lookup(st[s].kn, st[s].p, 0, &st[s].choice, diag) != BT_OK)
            return -1;
        printf("  %-9s %s (%s)\n", st[s].name, bt_choice_config_json(st[s].choice),
               bt_source_name(bt_choice_source(st[s].choice)));
    }
    return 0;
}

static void engine_steps_free(engine_step st[3])
{
    for (int s = 0; s < 3; s++) {
        bt_choice_destroy(st[s].choice);
        for (int b = 0; b < st[s].nbufs; b++)
            bt_buffer_destroy(st[s].bufs[b]);
        bt_problem_destroy(st[s].p);
        bt_kernel_destroy(st[s].kn);
        bt_kdesc_destroy(st[s].k);
    }
}

#endif
