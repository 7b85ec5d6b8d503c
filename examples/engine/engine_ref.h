/*
 * engine_ref.h — what both engine examples share: the model step (softmax over the rows of X,
 * then H = P · W, then layernorm over the rows of H with gamma and beta) on the host in double,
 * the inputs, the comparison of the device's output with it, and a clock.
 */
#ifndef ENGINE_REF_H
#define ENGINE_REF_H

#include <math.h>
#include <stdlib.h>
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

/* The step on the host: y (M x N) from x, w, g, b. eps as the built-in layernorm's (1e-5). */
static void engine_reference(const engine_dims *d, const float *x, const float *w, const float *g,
                             const float *b, double *y)
{
    double *p = malloc(sizeof(double) * (size_t)d->M * (size_t)d->K);
    double *h = malloc(sizeof(double) * (size_t)d->N);
    for (int r = 0; r < d->M; r++) {
        double mx = -INFINITY, sum = 0;
        for (int c = 0; c < d->K; c++)
            mx = fmax(mx, x[(long)r * d->K + c]);
        for (int c = 0; c < d->K; c++)
            sum += exp(x[(long)r * d->K + c] - mx);
        for (int c = 0; c < d->K; c++)
            p[(long)r * d->K + c] = exp(x[(long)r * d->K + c] - mx) / sum;
    }
    for (int r = 0; r < d->M; r++) {
        double mean = 0, var = 0;
        for (int c = 0; c < d->N; c++) {
            double acc = 0;
            for (int k = 0; k < d->K; k++)
                acc += p[(long)r * d->K + k] * w[(long)k * d->N + c];
            h[c] = acc;
            mean += acc;
        }
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

/* The largest |got - want| / (1 + |want|); NaN anywhere is infinite. */
static double engine_error(const float *got, const double *want, long n)
{
    double worst = 0;
    for (long i = 0; i < n; i++) {
        double e = fabs((double)got[i] - want[i]) / (1 + fabs(want[i]));
        if (!(e <= worst)) /* NaN too */
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

#endif
