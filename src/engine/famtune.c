/* SPDX-License-Identifier: Apache-2.0 */
/*
 * famtune.c — the tune of a front door (engine/fam.h): every family planned with the model, those
 * that cannot run or cannot win ruled out with reasons (core/famplan.c), the measurement budget
 * (and time limit) split over the rest by their best predictions, each family tuned on its own
 * (its measurements stored under its own name), then the families' winners re-measured
 * interleaved on one set of data (the same flush, timer and budgets; graph replays where the
 * family's tune used them), the fastest chosen, the
 * choice stored under the front door's key as {"family": INDEX, ...that family's parameters} and
 * the key sent to it. When the front door's own source is the only family that runs (OpenCL, fp32)
 * the tune is exactly the front door's own.
 */
#include "engine/fam.h"

#include "core/rng.h"
#include "core/util.h"
#include "engine/record.h"
#include "search/strategy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BT__FAM_FINAL_ROUNDS 5

/* A family's winner in the finals: its dispatch entry bound to the finals' buffers. */
typedef struct fin {
    int fam;
    bt_kernel *ck;
    bt__dispatch e;
    bt__tmap_blob tm[BT__MAX_TMAPS];
    double *t;
    int nt;
} fin;

static bt_status fin_launch(void *user, bt__btimer *timer, bt_diag *diag)
{
    fin *x = user;
    return x->ck->iface->launch(x->ck->bdev, x->e.fn, x->e.grid, x->e.block, x->e.dyn, x->e.args,
                                x->ck->k->nargs, timer, diag);
}

static bt_status fin_graph(void *user, int reps, double *ms, bt_diag *diag)
{
    fin *x = user;
    return x->ck->iface->launch_graph_timed(x->ck->bdev, x->e.fn, x->e.grid, x->e.block, x->e.dyn,
                                            x->e.args, x->ck->k->nargs, reps, ms, diag);
}

/* Whether family x is timed as its own tune timed it in graph mode (asked for, the backend can,
 * and no argument needs a reset before each run). */
static bool fin_graphed(const fin *x, const bt__tune_opts *o)
{
    if (!o->graph || !x->ck->iface->launch_graph_timed)
        return false;
    for (int i = 0; i < x->ck->k->nargs; i++)
        if (x->ck->k->args[i].reset_to_zero || x->ck->k->args[i].restore_value)
            return false;
    return true;
}

/* The front door's buffers for p: inputs from their spec's init (never zeros), outputs zeroed;
 * made through the backend (buf[i]->b), freed by finals_free. */
static bt_status finals_data(bt_kernel *kn, const bt_problem *p, uint64_t seed, bt_buffer *buf[],
                             bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    size_t need[BT__MAX_ARGS];
    int8_t dt[BT__MAX_ARGS];
    bt_status st = bt__fam_needs(kn, k, p, need, dt, diag);
    bt__rng rng;
    bt__rng_seed(&rng, seed, 0x66616du);
    for (int i = 0; i < k->nargs && st == BT_OK; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role != BT__KARG_BUFFER)
            continue;
        bt__hostbuf hb;
        size_t count = need[i] / (size_t)bt__dtype_size(dt[i]);
        if ((st = bt__hostbuf_alloc(&hb, dt[i], count)) != BT_OK)
            break;
        if (a->output)
            memset(hb.data, 0, need[i]);
        else
            bt__hostbuf_init(&hb, a->init, a->init_a, a->init_b, &rng);
        buf[i] = calloc(1, sizeof *buf[i]);
        st = buf[i] ? kn->iface->buf_alloc(kn->bdev, need[i], &buf[i]->b, diag) : BT_NOMEM;
        if (st == BT_OK) {
            buf[i]->dev = kn->dev;
            buf[i]->bytes = need[i];
            buf[i]->dtype = -1;
            st = kn->iface->buf_write(kn->bdev, buf[i]->b, 0, hb.data, need[i], diag);
        }
        bt__hostbuf_free(&hb);
    }
    return st;
}

/* Family x->fam's winner bound to the buffers: the front door's, and the family's workspaces. */
static bt_status finals_bind(bt_kernel *kn, const bt_problem *p, fin *x, bt_buffer *buf[],
                             bt_diag *diag)
{
    bt_problem fp;
    bt__family_problem(kn->k, x->fam, p, &fp);
    bt__dkey key;
    bt__dispatch_key(x->ck, &fp, &key);
    if (!bt__dispatch_find(x->ck, &key, &x->e) || x->ck->has_cmem) {
        bt__diag_set(diag, "its winner is not loaded");
        return BT_INTERNAL;
    }
    const bt_kdesc *fk = x->ck->k;
    const bt__kfamily *fm = &kn->k->fam[x->fam];
    for (int i = 0; i < fk->nargs; i++) {
        if (fk->args[i].role != BT__KARG_BUFFER)
            continue;
        bt_buffer *b = NULL;
        bt_status st = fm->amap[i] >= 0 ? (b = buf[fm->amap[i]], BT_OK)
                                        : bt__fam_workspace(kn, x->fam, i, x->e.need[i], &b, diag);
        if (st)
            return st;
        x->e.args[i].kind = BT__ARG_BUF;
        x->e.args[i].u.buf = b->b;
    }
    return x->e.has_tmaps ? bt__tmap_bind(fk, x->ck->iface, x->ck->bdev, x->e.tm, x->e.args, x->tm,
                                          diag)
                          : BT_OK;
}

/* The families' winners re-measured interleaved: BT__FAM_FINAL_ROUNDS rounds of each in turn,
 * each a do_bench with a share of the per-config budgets; medians into fr. */
static void finals(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o, fin *x, int n,
                   struct bt__famres *fr)
{
    bt_buffer *buf[BT__MAX_ARGS] = {0};
    bt_diag d;
    bt_status st = finals_data(kn, p, o->seed, buf, &d);
    for (int i = 0; i < n; i++) {
        bt_status bs = st ? st : finals_bind(kn, p, &x[i], buf, &d);
        if (bs) {
            snprintf(fr->e[x[i].fam].why, sizeof fr->e[x[i].fam].why,
                     "not in the finals: %.300s", d.msg);
            x[i].ck = NULL;
        }
    }
    int R = BT__FAM_FINAL_ROUNDS;
    for (int r = 0; r < R; r++)
        for (int i = 0; i < n; i++) {
            if (!x[i].ck)
                continue;
            bool g = fin_graphed(&x[i], o);
            bt__bench_ops ops = {NULL, fin_launch, &x[i], kn->iface, kn->bdev, !g,
                                 g ? fin_graph : NULL};
            bt__stats s;
            double *t = NULL;
            int nt = 0;
            bt_status bs = bt__bench(&ops, o->warmup_ms / R, o->rep_ms / R, o->timeout_s * 1e3,
                                     &s, &t, &nt, &d);
            double *grown = bs ? NULL : realloc(x[i].t, sizeof *t * (size_t)(x[i].nt + nt));
            if (grown) {
                memcpy(grown + x[i].nt, t, sizeof *t * (size_t)nt);
                x[i].t = grown;
                x[i].nt += nt;
            } else {
                snprintf(fr->e[x[i].fam].why, sizeof fr->e[x[i].fam].why,
                         "failed in the finals: %.300s", bs ? d.msg : "out of memory");
                x[i].ck = NULL;
            }
            free(t);
        }
    fr->rounds = R;
    for (int i = 0; i < n; i++) {
        bt__stats s;
        if (x[i].ck && x[i].nt > 0) {
            bt__stats_compute(x[i].t, x[i].nt, &s);
            fr->e[x[i].fam].final_ms = s.median;
            fr->e[x[i].fam].final_n = s.n;
        }
        free(x[i].t);
    }
    for (int i = 0; i < BT__MAX_ARGS; i++)
        if (buf[i]) {
            if (buf[i]->b)
                kn->iface->buf_free(kn->bdev, buf[i]->b);
            free(buf[i]);
        }
}

/* The winner among the families (by the finals' medians, else their own) and its margin. */
static void decide(struct bt__famres *fr)
{
    fr->winner = -1;
    double best = 0, second = 0;
    for (int i = 0; i < fr->n; i++) {
        const bt__famres_entry *e = &fr->e[i];
        double t = fr->rounds ? e->final_ms : e->own_ms;
        if (t <= 0)
            continue;
        if (fr->winner < 0 || t < best) {
            second = best;
            best = t;
            fr->winner = i;
        } else if (second <= 0 || t < second)
            second = t;
    }
    fr->margin = second > 0 ? second / best - 1 : 0;
    fr->tie = second > 0 && fr->margin < 0.01;
}

/* The choice into the store under the front door's key: {"family": f, ...its config}, with the
 * numbers of the finals (or of the family's own tune when it ran alone). */
static void record_choice(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                          const bt_result *wr, struct bt__famres *fr)
{
    bt__store *s = bt__kernel_store(kn, o);
    const bt__famres_entry *w = &fr->e[fr->winner];
    if (!s || wr->winner < 0)
        return;
    const bt__entry *e = &wr->e[wr->winner];
    bt__keyvals kv;
    bt__problem_keyvals(kn->k, p, &kv);
    char key[512], arch[48], *cj = NULL;
    bt__keyvals_format(&kv, key, sizeof key);
    char *kj = bt__keyvals_json(&kv);
    bt__device_arch(&wr->dev, arch, sizeof arch);
    bt__sbuf sb = {0};
    const char *rest = w->config[0] == '{' ? w->config + 1 : "}";
    bt__sbuf_printf(&sb, "{\"family\":%d%s%s", fr->winner, *rest == '}' ? "" : ",", rest);
    cj = sb.s;
    bt__measurement m;
    bt__measurement_init(&m);
    m.kernel = kn->k->name;
    m.source_hash = kn->fam->hash;
    m.options = (char *)"";
    m.device_name = (char *)wr->dev.name;
    m.device_uuid = (char *)wr->dev.uuid;
    m.device_arch = arch;
    m.driver = (char *)wr->dev.driver_version;
    m.compiler = (char *)wr->dev.compiler_version;
    m.blocktune_version = (char *)bt_version();
    m.key = key;
    m.key_json = kj;
    m.config_json = cj;
    m.status = (char *)"ok";
    bool fin = fr->rounds && w->final_ms > 0;
    m.median_ms = fin ? w->final_ms : e->st.median;
    m.p20_ms = fin ? -1 : e->st.p20;
    m.p80_ms = fin ? -1 : e->st.p80;
    m.min_ms = fin ? -1 : e->st.min;
    m.mad_ms = fin ? -1 : e->st.mad;
    m.reps = fin ? w->final_n : e->st.n;
    m.max_rel_err = e->ver.max_rel_err;
    m.regs = e->res.regs_per_thread;
    m.local_bytes = e->res.local_bytes;
    m.smem_bytes = e->ev.smem ? e->ev.smem : e->ev.dyn_smem;
    m.compile_ms = e->compile_s * 1e3;
    bt_diag d;
    bt_status st = kj && cj ? bt__store_put_winner(s, &m, fr->margin, fr->tie, NULL, &d) : BT_NOMEM;
    if (st == BT_OK)
        snprintf(fr->stored, sizeof fr->stored, "stored as %.60s's choice for %.200s", kn->k->name, key);
    else
        snprintf(fr->stored, sizeof fr->stored, "NOT stored: %.250s",
                 st == BT_NOMEM ? "out of memory" : d.msg);
    free(kj);
    free(cj);
}

/* Tunes the families that run, each with its share; their results into res[]. */
static void tune_families(bt_kernel *kn, const bt__famplan *fp, const bt__tune_opts *o,
                          bt_result *res[], struct bt__famres *fr)
{
    double wsum = 0;
    for (int i = 0; i < fp->n; i++)
        if (fp->e[i].verdict == BT__FAM_RUN)
            wsum += fp->e[fp->best].best_us / fp->e[i].best_us;
    for (int i = 0; i < fp->n; i++) {
        const bt__famplan_entry *pe = &fp->e[i];
        bt__famres_entry *e = &fr->e[i];
        if (pe->verdict != BT__FAM_RUN)
            continue;
        bt__tune_opts fo = *o;
        fo.budget = (int)pe->budget;
        if (o->time_limit_s > 0)
            fo.time_limit_s = o->time_limit_s * (fp->e[fp->best].best_us / pe->best_us) / wsum;
        bt_diag d;
        double t0 = bt__now();
        bt_status st = bt__tune(bt__fam_kernel(kn, i), &pe->problem, &fo, NULL, 0, &res[i], &d);
        e->tune_s = bt__now() - t0;
        if (st != BT_OK) {
            snprintf(e->why, sizeof e->why, "its tune failed: %.350s", d.msg);
            continue;
        }
        e->measured = res[i]->n;
        bt_config c;
        if (bt__result_winner(res[i], &c, &e->own_ms)) {
            char *cj = bt__config_json(&pe->k->space, &c);
            snprintf(e->config, sizeof e->config, "%s", cj ? cj : "{}");
            free(cj);
        } else
            snprintf(e->why, sizeof e->why, "no config passed verification");
    }
}

bt_status bt__tune_any(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                       bt_buffer *const *caller, int ncaller, bt_result **out, bt_diag *diag)
{
    return kn->fam ? bt__fam_tune(kn, p, o, caller, ncaller, out, diag)
                   : bt__tune(kn, p, o, caller, ncaller, out, diag);
}

bt_status bt__fam_tune(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                       bt_buffer *const *caller, int ncaller, bt_result **out, bt_diag *diag)
{
    *out = NULL;
    bt__famplan *fp = NULL;
    bt_plan_options po = {.rules = o->rules};
    bt_status st = bt__famplan_create(kn->k, p, &bt_device_get_info(kn->dev)->props,
                                      kn->iface->languages, &po, &fp, diag);
    if (st)
        return st;
    for (int i = 0; i < fp->n; i++) /* a family this handle cannot run does not run */
        if (fp->e[i].verdict == BT__FAM_RUN && !bt__fam_kernel(kn, i)) {
            fp->e[i].verdict = BT__FAM_NO_SOURCE;
            snprintf(fp->e[i].why, sizeof fp->e[i].why, "the %s backend cannot launch it",
                     kn->iface->name);
        }
    int running = bt__famplan_running(fp);
    if (running == 1 && fp->best >= 0 && kn->k->fam[fp->best].self) { /* the front door alone */
        bt__famplan_free(fp);
        st = bt__tune(kn, p, o, caller, ncaller, out, diag);
        if (st == BT_OK && (*out)->winner >= 0)
            bt__fam_choose(kn, p, bt__family_find(kn->k, kn->k->name));
        return st;
    }
    if (!running) {
        bt__sbuf why = {0};
        for (int i = 0; i < fp->n; i++)
            bt__sbuf_printf(&why, "; %s: %s", fp->e[i].k->name, fp->e[i].why);
        bt__diag_set(diag, "no family of '%s' runs this problem on this device%.900s",
                     kn->k->name, why.s ? why.s : "");
        bt__sbuf_free(&why);
        bt__famplan_free(fp);
        return BT_UNSUPPORTED;
    }
    struct bt__famres *fr = calloc(1, sizeof *fr);
    if (!fr) {
        bt__famplan_free(fp);
        return BT_NOMEM;
    }
    snprintf(fr->front, sizeof fr->front, "%s", kn->k->name);
    fr->n = fp->n;
    size_t total = o->budget > 0 ? (size_t)o->budget
                   : o->time_limit_s > 0 || (o->strategy && !strcmp(o->strategy, "exhaustive"))
                       ? 0
                       : bt__default_budget(kn->k);
    bt__famplan_budget(fp, total);
    for (int i = 0; i < fp->n; i++) {
        bt__famres_entry *e = &fr->e[i];
        snprintf(e->name, sizeof e->name, "%s", fp->e[i].k->name);
        e->verdict = fp->e[i].verdict;
        snprintf(e->why, sizeof e->why, "%s", fp->e[i].why);
        e->budget = fp->e[i].budget;
        e->pred_us = fp->e[i].best_us;
        e->by_floor = fp->e[i].by_floor;
    }
    bt_result *res[BT__MAX_FAMILIES] = {0};
    tune_families(kn, fp, o, res, fr);
    fin x[BT__MAX_FAMILIES];
    int nx = 0;
    for (int i = 0; i < fp->n; i++)
        if (res[i] && res[i]->winner >= 0) {
            memset(&x[nx], 0, sizeof x[nx]);
            x[nx].fam = i;
            x[nx++].ck = bt__fam_kernel(kn, i);
        }
    double t0 = bt__now();
    if (nx > 1)
        finals(kn, p, o, x, nx, fr);
    fr->finals_s = bt__now() - t0;
    decide(fr);
    bt__famplan_free(fp);
    int w = fr->winner >= 0 ? fr->winner : -1;
    if (w < 0) /* no family has a winner: the report of the best predicted one that ran */
        for (int i = 0; i < fr->n && w < 0; i++)
            w = res[i] ? i : -1;
    if (w < 0) {
        bt__diag_set(diag, "no family of '%s' could be tuned: %.900s", kn->k->name, fr->e[0].why);
        free(fr);
        return BT_UNSUPPORTED;
    }
    if (fr->winner >= 0) {
        record_choice(kn, p, o, res[w], fr);
        bt__fam_choose(kn, p, w);
    }
    for (int i = 0; i < fr->n; i++)
        if (i != w)
            bt_result_destroy(res[i]);
    res[w]->fam = fr;
    *out = res[w];
    return BT_OK;
}
