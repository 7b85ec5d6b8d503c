/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench.c — do_bench: statistics of timed runs and the measurement loop with time budgets, cache
 * flushes and device timers (seed 000 §6 and the peers' lessons in shared/references.md).
 */
#include "engine/engine.h"

#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *s, int n, double q)
{
    if (n == 1)
        return s[0];
    double pos = q * (n - 1);
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

void bt__stats_compute(double *t, int n, bt__stats *s)
{
    memset(s, 0, sizeof *s);
    if (n <= 0)
        return;
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    s->n = n;
    s->min = t[0];
    s->max = t[n - 1];
    s->median = quantile(t, n, 0.5);
    s->p20 = quantile(t, n, 0.2);
    s->p80 = quantile(t, n, 0.8);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += t[i];
    s->mean = sum / n;
    double *dev = malloc(sizeof *dev * (size_t)n);
    if (dev) {
        for (int i = 0; i < n; i++)
            dev[i] = fabs(t[i] - s->median);
        qsort(dev, (size_t)n, sizeof *dev, cmp_double);
        s->mad = quantile(dev, n, 0.5);
        free(dev);
    }
}

/* Runs `count` timed runs, appending their times (ms) to t. */
static bt_status timed_runs(const bt__bench_ops *o, int count, double *t, double timeout_ms,
                            bt_diag *diag)
{
    bt__btimer **tm = calloc((size_t)count, sizeof *tm);
    if (!tm)
        return BT_NOMEM;
    bt_status st = BT_OK;
    int made = 0;
    for (; made < count && st == BT_OK; made++)
        st = o->iface->timer_create(o->bdev, &tm[made], diag);
    if (st == BT_OK)
        made = count;
    else
        made--;
    for (int i = 0; i < count && st == BT_OK; i++) {
        if (o->pre)
            st = o->pre(o->user, diag);
        if (st == BT_OK && o->flush)
            st = o->iface->flush_cache(o->bdev, diag);
        if (st == BT_OK)
            st = o->launch(o->user, tm[i], diag);
    }
    for (int i = 0; i < count && st == BT_OK; i++) {
        st = o->iface->timer_read(o->bdev, tm[i], &t[i], diag);
        if (st == BT_OK && timeout_ms > 0 && t[i] > timeout_ms) {
            bt__diag_set(diag, "one run took %.1f ms (> timeout %.0f ms)", t[i], timeout_ms);
            st = BT_TIMEOUT;
        }
    }
    for (int i = 0; i < made; i++)
        o->iface->timer_free(o->bdev, tm[i]);
    free(tm);
    return st;
}

/* Graph mode: each sample is one replay of R launches captured in a graph, divided by R; R is
 * chosen so that a replay lasts ~0.5 ms, which hides the CPU's launch gaps for short kernels. */
static bt_status bench_graph(const bt__bench_ops *o, double warmup_ms, double rep_ms,
                             double timeout_ms, bt__stats *out, double **samples, int *nsamples,
                             bt_diag *diag)
{
    double e;
    bt_status st = o->graph(o->user, 10, &e, diag);
    if (st)
        return st;
    if (timeout_ms > 0 && e > timeout_ms) {
        bt__diag_set(diag, "one run took %.1f ms (> timeout %.0f ms)", e, timeout_ms);
        return BT_TIMEOUT;
    }
    if (e < 1e-6)
        e = 1e-6;
    int R = (int)(0.5 / e);
    R = R < 1 ? 1 : R > 1000 ? 1000 : R;
    double w;
    for (double spent = 0; spent < warmup_ms && st == BT_OK; spent += w * R)
        st = o->graph(o->user, R, &w, diag);
    int n = (int)(rep_ms / (e * R));
    n = n < 5 ? 5 : n > 1000 ? 1000 : n;
    double *t = malloc(sizeof *t * (size_t)n);
    if (!t)
        return BT_NOMEM;
    for (int i = 0; i < n && st == BT_OK; i++)
        st = o->graph(o->user, R, &t[i], diag);
    if (st) {
        free(t);
        return st;
    }
    if (samples) {
        *samples = malloc(sizeof **samples * (size_t)n);
        if (*samples)
            memcpy(*samples, t, sizeof *t * (size_t)n);
        *nsamples = *samples ? n : 0;
    }
    bt__stats_compute(t, n, out);
    free(t);
    return BT_OK;
}

bt_status bt__bench(const bt__bench_ops *o, double warmup_ms, double rep_ms, double timeout_ms,
                    bt__stats *out, double **samples, int *nsamples, bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (o->graph)
        return bench_graph(o, warmup_ms, rep_ms, timeout_ms, out, samples, nsamples, diag);
    /* estimate: the first timed runs (after one untimed warm-up launch that pays any lazy
     * initialisation of the module) */
    double est_t[5];
    bt_status st = timed_runs(o, 1, est_t, timeout_ms, diag);
    if (st)
        return st;
    double w0 = bt__now();
    st = timed_runs(o, 5, est_t, timeout_ms, diag);
    if (st)
        return st;
    /* the budgets bound wall time: a run costs its resets and cache flush too, which for a tiny
     * kernel dwarf the kernel itself */
    double wall_ms = (bt__now() - w0) * 1e3 / 5;
    bt__stats est;
    bt__stats_compute(est_t, 5, &est);
    double e = est.median > wall_ms ? est.median : wall_ms;
    if (e < 1e-6)
        e = 1e-6;
    int nwarm = (int)(warmup_ms / e);
    if (nwarm < 1)
        nwarm = 1;
    if (nwarm > 100000)
        nwarm = 100000;
    int nrep = (int)(rep_ms / e);
    if (nrep < 5)
        nrep = 5;
    if (nrep > 100000)
        nrep = 100000;
    double *t = malloc(sizeof *t * (size_t)(nwarm > nrep ? nwarm : nrep));
    if (!t)
        return BT_NOMEM;
    /* warm-up: timed too (to catch timeouts) but discarded; in chunks to bound timer objects */
    for (int done = 0; done < nwarm && st == BT_OK; done += 1000) {
        int c = nwarm - done < 1000 ? nwarm - done : 1000;
        st = timed_runs(o, c, t, timeout_ms, diag);
    }
    for (int done = 0; done < nrep && st == BT_OK; done += 1000) {
        int c = nrep - done < 1000 ? nrep - done : 1000;
        st = timed_runs(o, c, t + done, timeout_ms, diag);
    }
    if (st) {
        free(t);
        return st;
    }
    if (samples) {
        *samples = malloc(sizeof **samples * (size_t)nrep);
        if (*samples)
            memcpy(*samples, t, sizeof *t * (size_t)nrep);
        *nsamples = *samples ? nrep : 0;
    }
    bt__stats_compute(t, nrep, out);
    free(t);
    return BT_OK;
}
