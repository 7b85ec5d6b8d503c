/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tune.c — the tuning pipeline's driver (bt__tune): the options and the problem checked before
 * anything runs (budgets within their bounds, every buffer at least one element, the data within
 * memory) → plan (prune with the model, with reasons) → pick a search strategy → the problem's
 * data and reference (pdata.c; a baseline config or reference kernel run on the device,
 * reference.c) → the search in rounds of compile → load → verify → measure (measure.c) → the
 * finals and the winner (select.c) → the winner into the dispatch table. One cleanup path. A
 * compiler that runs in another process (a Triton source's pool) is started in the background
 * before the data is made when the search will need it (build.c), and what it cost goes into the
 * result. Also the tune options' defaults and the result object's accessors.
 */
#include "engine/tune_ctx.h"

#include "core/pool.h"
#include "core/util.h"
#include "engine/mpi.h"
#include "engine/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bt_result_destroy(bt_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->e[i].error);
        free(r->e[i].log);
        free(r->e[i].blob.data);
    }
    free(r->e);
    bt_plan_destroy(r->plan);
    bt__config_obj_clear(&r->winner_cfg);
    free(r->fam); /* a front door's families (engine/fam.h) */
    free(r);
}

int bt__result_winner(const bt_result *r, bt_config *cfg, double *median_ms)
{
    if (!r || r->winner < 0)
        return 0;
    if (cfg)
        *cfg = r->e[r->winner].ev.cfg;
    if (median_ms)
        *median_ms = r->e[r->winner].st.median;
    return 1;
}

int bt_result_winner(const bt_result *r, const bt_config **cfg, double *median_ms)
{
    if (cfg)
        *cfg = NULL;
    if (!r || r->winner < 0)
        return 0;
    if (cfg) {
        /* the object in r, filled on first use (the winner never changes once r is out) */
        bt__config_obj *o = (bt__config_obj *)&r->winner_cfg;
        if (!o->space) {
            o->c = r->e[r->winner].ev.cfg;
            o->space = &r->k->space;
        }
        *cfg = &o->c;
    }
    if (median_ms)
        *median_ms = r->e[r->winner].st.median;
    return 1;
}

/* A new result for kernel kn at p with options o: the problem, the device and the provenance. */
static bt_result *result_new(const bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o)
{
    const bt_kdesc *k = kn->k;
    bt_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->k = k;
    r->problem = *p;
    r->dev = *bt_device_get_info(kn->dev);
    r->opts = *o;
    r->opts.strategy = NULL; /* borrowed: the result keeps the name in r->strategy */
    r->winner = r->runner_up = -1;
    snprintf(r->source_hash, sizeof r->source_hash, "%016llx", (unsigned long long)kn->src_hash);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->timestamp, sizeof r->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    return r;
}

/* What the outputs are checked against, once d's reference has been made in this process (an
 * empty label otherwise: the report then claims no verification). */
static void reference_label(bt__tctx *T, const bt__pdata *d)
{
    const bt_kdesc *k = T->k;
    char *ref = T->r->reference;
    size_t n = sizeof T->r->reference;
    if (k->ref == BT__REF_NONE)
        snprintf(ref, n, "none (outputs checked for being written)");
    else if (!d->have_ref)
        ref[0] = '\0';
    else if (k->ref == BT__REF_HOST)
        snprintf(ref, n, "host (fp64)");
    else if (k->ref == BT__REF_CONFIG && T->dref.runs > 0)
        snprintf(ref, n, "baseline config");
    else if (k->ref == BT__REF_KERNEL && T->dref.runs > 0)
        snprintf(ref, n, "reference kernel '%.150s'", k->ref_entry);
    else if (k->ref == BT__REF_ANSWERS)
        snprintf(ref, n, "expected outputs (answer files)");
    else
        ref[0] = '\0';
}

/* The tuned problem and, when they are verified, the boundary sizes checked before anything
 * runs (pdata.c: every buffer at least one element, the data within memory). */
static bt_status check_problems(bt__tctx *T, bt_diag *diag)
{
    bt_status st = bt__problem_check(T, T->p, "", !T->caller, diag);
    for (int b = 0; !st && T->o.verify_boundary && b < T->k->nboundary; b++) {
        bt_problem bp;
        char where[128], what[160];
        bt__boundary_problem(T, b, &bp, where, sizeof where);
        snprintf(what, sizeof what, "at boundary size %s", where);
        st = bt__problem_check(T, &bp, what, true, diag);
    }
    return st;
}

/* The strategy by name, or the default for nvalid valid configs. NULL (diag says the names) for
 * an unknown name. */
static const bt__strategy *pick_strategy(const bt__tune_opts *o, uint64_t nvalid, bt_diag *diag)
{
    if (!o->strategy || !o->strategy[0])
        return bt__strategy_default(nvalid,
                                    o->exhaustive_max > 0 ? (uint64_t)o->exhaustive_max : 0);
    const bt__strategy *s = bt__strategy_find(o->strategy);
    if (!s) {
        size_t n;
        const bt__strategy *const *all = bt__strategies(&n);
        char names[200] = "";
        size_t off = 0;
        for (size_t i = 0; i < n && off < sizeof names; i++) {
            int w = snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "", all[i]->name);
            if (w > 0)
                off += (size_t)w;
        }
        bt__diag_set(diag, "unknown strategy '%s' (one of: %s)", o->strategy, names);
    }
    return s;
}

size_t bt__default_budget(const bt_kdesc *k)
{
    return k->kind != BT__KIND_GENERIC ? BT__SEARCH_DEFAULT_BUDGET_MODEL
                                       : BT__SEARCH_DEFAULT_BUDGET;
}

/* The plan and the strategy over its valid configs; the measurement budget, the configs per
 * round (the compile threads) and the search's target. */
static bt_status plan_search(bt__tctx *T, const bt__strategy **strat, bt_diag *diag)
{
    bt_result *r = T->r;
    bt_plan_options po = {.rules = T->o.rules};
    bt_status st = bt_plan_create(T->k, T->p, T->g, &po, &r->plan, diag);
    if (st)
        return st;
    *strat = pick_strategy(&T->o, r->plan->ncand, diag);
    if (!*strat)
        return BT_INVALID_ARG;
    snprintf(r->strategy, sizeof r->strategy, "%s", (*strat)->name);
    bool exhaustive = !strcmp((*strat)->name, "exhaustive");
    r->budget = T->o.budget > 0                             ? (size_t)T->o.budget
                : exhaustive || T->o.time_limit_s > 0       ? 0
                                                            : bt__default_budget(T->k);
    int nthreads = T->o.threads > 0 ? T->o.threads : bt__pool_cores();
    r->compile_threads = nthreads < 1 ? 1 : nthreads > 128 ? 128 : nthreads;
    r->target_ms = T->o.target_ms < 0 ? r->plan->model.roof.floor_us * 1e-3 : T->o.target_ms;
    return BT_OK;
}

/* Throughput and efficiency from each final median, and every entry's launch geometry. */
static void derive(bt__tctx *T)
{
    bt_result *r = T->r;
    const bt__roofline *rf = &r->plan->model.roof;
    for (size_t i = 0; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status == BT__CS_OK && e->st.median > 0) {
            e->gbps = rf->bytes / (e->st.median * 1e-3) / 1e9;
            e->tflops = rf->flops / (e->st.median * 1e-3) / 1e12;
            e->eff = rf->floor_us > 0 ? rf->floor_us / (e->st.median * 1e3) : 0;
        }
        bt__geometry(T->k, &e->ev.cfg, T->p, T->g, e->grid, e->block, &e->dyn_smem, NULL);
    }
}

/* After the search: the finals (their time counts as measuring) and what follows from them. */
static void finish(bt__tctx *T)
{
    bt_result *r = T->r;
    r->not_measured = r->plan->ncand > r->n ? r->plan->ncand - r->n : 0;
    double t = bt__now();
    if (T->replay) /* the stored winner: nothing is measured again */
        bt__replay_select(T);
    else {
        bt__progress_finals(T);
        bt__select(T);
    }
    r->t_finals = bt__now() - t;
    r->t_measure += r->t_finals;
    derive(T);
}

/* The winner enters the dispatch table (which then owns its module). */
static void dispatch_winner(bt__tctx *T)
{
    bt_result *r = T->r;
    if (r->winner < 0)
        return;
    bt__entry *w = &r->e[r->winner];
    if (w->mod && bt__dispatch_put(T->kn, T->p, &w->ev.cfg, w->mod, w->fn) == BT_OK) {
        w->mod = NULL;
        w->fn = NULL;
    }
}

/* What the kernel's out-of-process compiler has cost (at the tune's end; c0: its compile seconds
 * at the start), into the result. */
static void xcompiler_times(bt__tctx *T, double c0)
{
    bt__xcompiler_times x = {0};
    bt_result *r = T->r;
    r->xc_known = T->I->xcompiler_times && T->I->xcompiler_times(T->kn->src->lang, &x) == BT_OK;
    r->xc_started = x.started;
    r->xc_embedder = x.by_embedder;
    r->xc_ready_s = x.ready_s;
    r->xc_compile_s = x.compile_s - c0;
}

bt_status bt__tune(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *opts,
                   bt_buffer *const *caller, int ncaller, bt_result **out, bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    bt__tctx T = {.kn = kn, .k = kn->k, .I = kn->iface, .D = kn->bdev, .p = p,
                  .caller = caller != NULL, .t0 = bt__now()};
    T.g = &bt_device_get_info(kn->dev)->props;
    if (opts)
        T.o = *opts;
    else
        bt__tune_opts_default(&T.o);
    pthread_mutex_init(&T.wmu, NULL);
    bt__xcompiler_times xc0 = {0};
    if (T.I->xcompiler_times)
        T.I->xcompiler_times(kn->src->lang, &xc0);
    bt__pdata data;
    bt__ahead *ahead = NULL;
    bool have_data = false;
    const bt__strategy *strat = NULL;
    bt_status st = bt__tune_opts_check(&T.o, diag);
    if (st)
        goto done;
    st = BT_NOMEM;
    T.r = result_new(kn, p, &T.o);
    if (!T.r)
        goto done;
    /* 1. plan, and the search over its valid configs; the problems checked */
    if ((st = plan_search(&T, &strat, diag)) != BT_OK || (st = check_problems(&T, diag)) != BT_OK)
        goto done;
    /* spread over MPI ranks (engine/mpi.h): a rank other than 0 stores nothing */
    if (T.o.mpi_comm && (st = bt__mpi_begin(&T, diag)) != BT_OK)
        goto done;
    if (T.mpi && !bt__mpi_worker(&T))
        T.mpi_round = bt__mpi_round; /* measure.c's rounds go over the ranks */
    /* measurements the store already holds for this source, device and key are not repeated (a
     * killed tune resumes; an added config costs only itself) */
    T.store = bt__record_store(kn, &T.o, T.r);
    /* 2. data and reference (a device reference is built first: a compile error stops here);
     * from here on a watchdog guards every run on the device. A key the store holds is replayed
     * (replay.c): nothing runs on the device */
    bt__watchdog_start(&T);
    double t = bt__now();
    if (!bt__replay_ready(&T)) {
        bt__devcmp_ahead(&T);
        /* a search that measures every config: their compiles start now too (not under MPI,
         * whose ranks compile what they measure) */
        size_t n = T.r->plan->ncand < 512 ? T.r->plan->ncand : 512, nahead = 0;
        if (!strcmp(T.r->strategy, "exhaustive") && !T.o.mpi_comm)
            nahead = T.r->budget && T.r->budget < n ? T.r->budget : n;
        ahead = bt__build_prestart(kn, p, T.k->ref == BT__REF_CONFIG ? &T.k->ref_config : NULL,
                                   T.r->plan->cand, n, nahead, T.r->compile_threads);
        if ((st = bt__devref_prepare(&T, diag)) != BT_OK ||
            (st = bt__problem_data(&T, &data, p, T.o.seed, caller, ncaller, "", diag)) != BT_OK)
            goto done;
        have_data = true;
        if ((st = bt__devcmp_upload_refs(&T, &data, diag)) != BT_OK)
            goto done;
        T.main = &data;
        reference_label(&T, &data);
        bt__bench_setup(&T);
    }
    T.r->t_data = bt__now() - t;
    /* 3. the search: rounds of compile (in parallel) → load → verify → measure (a rank other
     * than 0 under MPI: the configs rank 0 sends, and then its winner) */
    if (bt__mpi_worker(&T)) {
        st = bt__mpi_work(&T, diag);
        goto done;
    }
    st = bt__search(&T, strat, bt__search_time_limit(&T.o, bt__now() - T.t0), diag);
    if (st)
        goto done;
    /* 4. select: finalists re-measured interleaved A B C A B C ... (on this device) */
    bt__mpi_searched(&T);
    finish(&T);
    /* the caller's buffers go back to what the caller gave: the launch that follows must see
     * its own inputs, not what the last measured run left in them */
    if (caller)
        bt__pdata_give_back(&T, &data);
done:
    bt__build_ahead_end(ahead);
    bt__boundary_free(&T);
    bt__devref_free(&T);
    if (have_data)
        bt__pdata_free(&T, &data);
    bt__mpi_end(&T, st, diag); /* under MPI: every rank told the winner */
    /* 5. the winner enters the dispatch table; everything else is unloaded */
    if (st == BT_OK)
        dispatch_winner(&T);
    if (T.r && T.r->e)
        bt__unload_all(&T);
    if (st == BT_OK) {
        xcompiler_times(&T, xc0.compile_s);
        T.r->t_total = bt__now() - T.t0;
        *out = T.r;
    } else
        bt_result_destroy(T.r);
    bt__progress_end(&T);
    bt__watchdog_stop(&T);
    pthread_mutex_destroy(&T.wmu);
    return st;
}
