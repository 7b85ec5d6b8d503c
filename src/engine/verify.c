/*
 * verify.c — checking one config on one problem's data: outputs poisoned (NaN for floats), one
 * run, every output read back and compared with the reference (or, with no reference, checked
 * for being written); the boundary problems (the tuned problem at the spec's boundary sizes such
 * as M=17); and the baseline config whose outputs become the reference of a "config" kind spec.
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
    if (d->have_ref)
        bt__verify_compare(&d->host[i], d->ref[i], d->sample, d->nsample, tol.rtol, tol.atol, v);
    else { /* no reference: at least every element written (no poison left) */
        double *inf = calloc(d->host[i].count, sizeof *inf);
        if (!inf)
            return BT_NOMEM;
        bt__verify_compare(&d->host[i], inf, NULL, 0, INFINITY, INFINITY, v);
        free(inf);
    }
    if (!v->ok) {
        char m[sizeof v->msg];
        snprintf(m, sizeof m, "%s", v->msg);
        snprintf(v->msg, sizeof v->msg, "output '%.40s': %.200s", k->args[i].name, m);
    }
    return BT_OK;
}

bt_status bt__verify_on(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__verify *v,
                        bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    memset(v, 0, sizeof *v);
    v->ok = true;
    for (int i = 0; i < k->nargs; i++) {
        if (!k->args[i].output)
            continue;
        uint8_t pat[8];
        size_t ps;
        bt__poison_pattern(d->host[i].dtype, pat, &ps);
        bt_status st =
            T->I->buf_fill(T->D, d->dev[i], 0, bt__hostbuf_bytes(&d->host[i]), pat, ps, diag);
        if (st)
            return st;
    }
    bt_status st = bt__pdata_pre_run(T, d, diag);
    if (!st)
        st = bt__run(T, e, d, NULL, diag);
    if (!st)
        st = T->I->sync(T->D, diag);
    if (st)
        return st;
    for (int i = 0; i < k->nargs && v->ok; i++) {
        if (!k->args[i].output)
            continue;
        st = T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data, bt__hostbuf_bytes(&d->host[i]),
                            diag);
        if (!st)
            st = compare_output(T, d, i, v);
        if (st)
            return st;
    }
    return BT_OK;
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

bt_status bt__baseline(bt__tctx *T, bt__pdata *d, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__entry b;
    memset(&b, 0, sizeof b);
    bt__model_eval(&T->r->plan->model, &k->ref_config, &b.ev);
    bt__cfg_eval_clear(&b.ev);
    bt__build(T->kn, T->p, &b, true);
    if (b.status == BT__CS_PENDING) {
        bt_diag ld = {0};
        bt_status st = bt__build_load(T->kn, T->p, &b, &ld);
        if (st)
            bt__entry_fail(&b, bt__cfg_status_of(st), ld.msg);
    }
    bt__verify v;
    memset(&v, 0, sizeof v);
    bt_diag dd = {0};
    bt_status st = BT_OK;
    if (b.status == BT__CS_PENDING && bt__verify_on(T, &b, d, &v, &dd) == BT_OK &&
        v.nonfinite == 0) {
        for (int i = 0; i < k->nargs; i++)
            if (k->args[i].output)
                for (size_t j = 0; j < d->host[i].count; j++)
                    d->ref[i][j] = bt__hostbuf_get(&d->host[i], j);
        d->have_ref = true;
    } else {
        bt__diag_set(diag, "the reference (baseline) config failed: %s",
                     b.error       ? b.error
                     : dd.msg[0]   ? dd.msg
                     : v.msg[0]    ? v.msg
                                   : bt__cfg_status_name(b.status));
        st = BT_WRONG_RESULT;
    }
    if (b.mod)
        T->I->module_free(T->D, b.mod);
    free(b.blob.data);
    free(b.log);
    free(b.error);
    return st;
}
