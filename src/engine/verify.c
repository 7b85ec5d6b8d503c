/* SPDX-License-Identifier: Apache-2.0 */
/*
 * verify.c — checking one config on one problem's data: outputs poisoned (NaN for floats), one
 * run, every output compared with the reference on the device (devcmp.c), or read back and
 * compared on the host where the device cannot (or, with no reference, checked for being
 * written); and the boundary problems (the tuned problem at the spec's boundary sizes
 * such as M=17).
 */
#include "engine/tune_ctx.h"

#include "core/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Compares output i of d, read back into d->host[i], with the reference into v. */
static bt_status compare_output(bt__tctx *T, bt__pdata *d, int i, bt__verify *v)
{
    const bt_kdesc *k = T->k;
    bt__tolerance tol = k->tol[d->p.dtype];
    if (d->have_ref) {
        bt_diag rd = {0};
        bt_status st = bt__pdata_ref_host(T, d, i, &rd);
        if (st)
            return st;
        bt__verify_compare(&d->host[i], d->ref[i], d->sample, d->nsample, tol.rtol, tol.atol, v);
    } else { /* no reference: at least every element written (no poison left) */
        double *inf = calloc(d->host[i].count, sizeof *inf);
        if (!inf)
            return BT_NOMEM;
        bt__verify_compare(&d->host[i], inf, NULL, 0, INFINITY, INFINITY, v);
        free(inf);
    }
    return BT_OK;
}

/* What v says of output i, named (and, without a reference, only what was checked). */
static void output_message(const bt_kdesc *k, const bt__pdata *d, int i, bt__verify *v)
{
    if (!d->have_ref && v->ok) /* nothing was compared: say only what was checked */
        snprintf(v->msg, sizeof v->msg, "%zu outputs written (no reference to compare with)",
                 v->checked);
    if (!v->ok) {
        char m[sizeof v->msg];
        snprintf(m, sizeof m, "%s", v->msg);
        snprintf(v->msg, sizeof v->msg, "output '%.40s': %.200s", k->args[i].name, m);
    }
}

bt_status bt__run_poisoned(bt__tctx *T, const bt__entry *e, const bt__geom *geo, bt__pdata *d,
                           bool zeros, bool read, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    for (int i = 0; i < k->nargs; i++) {
        if (!k->args[i].output)
            continue;
        uint8_t pat[8] = {0};
        size_t ps = 1;
        if (!zeros)
            bt__poison_pattern(d->host[i].dtype, pat, &ps);
        bt_status st =
            T->I->buf_fill(T->D, d->dev[i], 0, bt__hostbuf_bytes(&d->host[i]), pat, ps, diag);
        if (st)
            return st;
    }
    bt__btimer *timer = NULL;
    bt_status st = T->I->timer_create(T->D, &timer, diag);
    if (!st)
        st = bt__pdata_pre_run(T, d, diag);
    if (!st)
        st = bt__run_geom(T, e, geo, d, timer, diag);
    if (!st) {
        bt__watch_timer(T, timer); /* its time counts from the device's start of the run */
        st = T->I->sync(T->D, diag);
        bt__watch_timer(T, NULL);
    }
    if (timer)
        T->I->timer_free(T->D, timer);
    for (int i = 0; i < k->nargs && !st && read; i++)
        if (k->args[i].output)
            st = T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data,
                                bt__hostbuf_bytes(&d->host[i]), diag);
    return st;
}

bt_status bt__verify_on(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__verify *v,
                        bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__tolerance tol = k->tol[d->p.dtype];
    double rtol = d->have_ref ? tol.rtol : INFINITY, atol = d->have_ref ? tol.atol : INFINITY;
    memset(v, 0, sizeof *v);
    v->ok = true;
    /* the outputs stay on the device and are compared there; one that cannot be is read back */
    bt_status st = bt__run_poisoned(T, e, NULL, d, false, false, diag);
    for (int i = 0; i < k->nargs && v->ok && !st; i++) {
        if (!k->args[i].output)
            continue;
        st = bt__devcmp_output(T, d, i, rtol, atol, v, diag);
        if (st == BT_UNSUPPORTED) {
            st = T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data,
                                bt__hostbuf_bytes(&d->host[i]), diag);
            if (!st)
                st = compare_output(T, d, i, v);
        }
        if (!st)
            output_message(k, d, i, v);
    }
    return st;
}

void bt__boundary_problem(const bt__tctx *T, int b, bt_problem *bp, char *where, size_t size)
{
    const bt_kdesc *k = T->k;
    *bp = *T->p;
    for (int j = 0; j < k->nproblem; j++)
        if (k->boundary[b][j] >= 0)
            bp->values[j] = k->boundary[b][j];
    where[0] = '\0';
    size_t o = 0;
    for (int j = 0; j < k->nproblem && o < size; j++) {
        int w = snprintf(where + o, size - o, "%s%s=%lld", j ? "," : "", k->problem_names[j],
                         (long long)bp->values[j]);
        if (w > 0)
            o += (size_t)w;
    }
}
