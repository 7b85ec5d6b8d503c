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

/* The estimate of one run's cost (ms, its resets and flush included): one timed run discarded
 * (it pays any lazy initialisation of the module), then EST_RUNS timed ones, their statistics
 * into *est when it is not NULL. */
#define EST_RUNS BT__EST_RUNS
static bt_status estimate(const bt__bench_ops *o, double timeout_ms, double *e,
                          double est_t[EST_RUNS], bt__stats *est_out, bt_diag *diag)
{
    bt_status st = timed_runs(o, 1, est_t, timeout_ms, diag);
    if (st)
        return st;
    double w0 = bt__now();
    st = timed_runs(o, EST_RUNS, est_t, timeout_ms, diag);
    if (st)
        return st;
    /* the budgets bound wall time: a run costs its resets and cache flush too, which for a tiny
     * kernel dwarf the kernel itself */
    double wall_ms = (bt__now() - w0) * 1e3 / EST_RUNS;
    double sorted[EST_RUNS];
    memcpy(sorted, est_t, sizeof sorted);
    bt__stats est;
    bt__stats_compute(sorted, EST_RUNS, &est);
    if (est_out)
        *est_out = est;
    *e = est.median > wall_ms ? est.median : wall_ms;
    if (*e < 1e-6)
        *e = 1e-6;
    return BT_OK;
}

/* A count of runs from a budget: budget_ms / e within [lo, 100000]. */
static int runs_for(double budget_ms, double e, int lo)
{
    double n = budget_ms / e;
    return n < lo ? lo : n > 100000 ? 100000 : (int)n;
}

/* The runs before the samples: nwarm discarded ones, and npre (0 or EST_RUNS) samples already
 * taken — the estimate's runs when the discarded first run alone covered the warm-up budget. */
typedef struct lead {
    int nwarm, npre;
    const double *pre;
} lead;

/* A warm-up of warmup_ms after the estimate (its runs, the discarded first one included, count
 * towards it); its timed runs are the first samples when the first run covered the budget. */
static lead lead_of(double warmup_ms, double e, const double *est_t)
{
    int n = runs_for(warmup_ms, e, 0);
    if (n <= 1)
        return (lead){0, EST_RUNS, est_t};
    n -= EST_RUNS + 1;
    return (lead){n > 0 ? n : 0, 0, NULL};
}

/* L's warm-up runs, then nrep samples (L's first) into out (and *samples when asked). */
static bt_status warm_and_time(const bt__bench_ops *o, lead L, int nrep, double timeout_ms,
                               bt__stats *out, double **samples, int *nsamples, bt_diag *diag)
{
    int nwarm = L.nwarm;
    double *t = malloc(sizeof *t * (size_t)(nwarm > nrep ? nwarm : nrep));
    if (!t)
        return BT_NOMEM;
    bt_status st = BT_OK;
    if (L.npre > nrep)
        L.npre = nrep;
    /* warm-up: timed too (to catch timeouts) but discarded; in chunks to bound timer objects */
    for (int done = 0; done < nwarm && st == BT_OK; done += 1000) {
        int c = nwarm - done < 1000 ? nwarm - done : 1000;
        st = timed_runs(o, c, t, timeout_ms, diag);
    }
    if (L.npre) /* after the warm-up, which writes into t */
        memcpy(t, L.pre, sizeof *t * (size_t)L.npre);
    for (int done = L.npre; done < nrep && st == BT_OK; done += 1000) {
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

bt_status bt__bench_est(const bt__bench_ops *o, double warmup_ms, double rep_ms, double timeout_ms,
                        double *est_ms, bt__stats *out, double **samples, int *nsamples,
                        bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    if (o->graph)
        return bench_graph(o, warmup_ms, rep_ms, timeout_ms, out, samples, nsamples, diag);
    double e = est_ms ? *est_ms : 0, est_t[EST_RUNS];
    lead L = {0, 0, NULL};
    if (e > 0) { /* estimated before: at least one warm-up run after whatever ran last */
        L.nwarm = runs_for(warmup_ms, e, 1);
    } else {
        bt_status st = estimate(o, timeout_ms, &e, est_t, NULL, diag);
        if (st)
            return st;
        if (est_ms)
            *est_ms = e;
        L = lead_of(warmup_ms, e, est_t);
    }
    return warm_and_time(o, L, runs_for(rep_ms, e, 5), timeout_ms, out, samples, nsamples, diag);
}

bt_status bt__bench(const bt__bench_ops *o, double warmup_ms, double rep_ms, double timeout_ms,
                    bt__stats *out, double **samples, int *nsamples, bt_diag *diag)
{
    return bt__bench_est(o, warmup_ms, rep_ms, timeout_ms, NULL, out, samples, nsamples, diag);
}

bt_status bt__bench_screen(const bt__bench_ops *o, double warmup_ms, double rep_ms,
                           double screen_ms, double cut_ms, double timeout_ms, bt__stats *out,
                           bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    double scale = rep_ms > 0 ? screen_ms / rep_ms : 1;
    bt_status st;
    if (o->graph) {
        st = bench_graph(o, warmup_ms * scale, screen_ms, timeout_ms, out, NULL, NULL, diag);
    } else {
        double e, est_t[EST_RUNS];
        bt__stats est;
        st = estimate(o, timeout_ms, &e, est_t, &est, diag);
        if (!st && cut_ms > 0 && est.median > cut_ms) { /* these runs say it: clearly slower */
            *out = est;
            out->screened = out->cut = true;
            return BT_OK;
        }
        lead L = lead_of(warmup_ms * scale, e, est_t), F = lead_of(warmup_ms, e, est_t);
        int full = runs_for(rep_ms, e, 5), nrep = runs_for(screen_ms, e, BT__SCREEN_MIN_RUNS);
        if (!st)
            st = warm_and_time(o, L, nrep < full ? nrep : full, timeout_ms, out, NULL, NULL,
                               diag);
        /* a run so slow that the screening took the full budget's runs: a full-budget one */
        if (nrep >= full && L.nwarm == F.nwarm && L.npre == F.npre) {
            out->screened = false;
            return st;
        }
    }
    out->screened = st == BT_OK;
    return st;
}
