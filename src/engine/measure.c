/*
 * measure.c — the search's rounds: a strategy (src/search) proposes configs; each round makes
 * their entries (a measurement the store holds is not repeated), compiles them in parallel
 * (build.c), loads, verifies at the problem and at the boundary sizes, measures (do_bench), and
 * hands every outcome — failures too — back to the strategy, committing each to the store as it
 * happens. A watchdog thread records a config that hangs on the device; a device fault is
 * survived by rebuilding everything on a fresh context (recover).
 */
#include "engine/tune_ctx.h"

#include "core/util.h"
#include "engine/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------
 * Outcomes, the store, the watchdog
 * ------------------------------------------------------------------------------------------- */
void bt__record(bt__tctx *T, const bt__entry *e)
{
    if (!T->store)
        return;
    bt_diag d = {0};
    if (bt__record_put(T->store, T->r, e, false, &d) != BT_OK)
        fprintf(stderr, "blocktune: a measurement could not be stored: %s\n", d.msg);
}

bool bt__in_play(const bt__entry *e)
{
    return e->status == BT__CS_PENDING || (e->from_store && e->status == BT__CS_OK);
}

static void watch_begin(bt__tctx *T, bt__entry *e, double seconds)
{
    pthread_mutex_lock(&T->wmu);
    T->watch = e;
    T->deadline = bt__now() + seconds;
    pthread_mutex_unlock(&T->wmu);
}

static void watch_end(bt__tctx *T)
{
    pthread_mutex_lock(&T->wmu);
    T->watch = NULL;
    pthread_mutex_unlock(&T->wmu);
}

/* A kernel that never finishes cannot be stopped from the host: the watchdog records the config
 * as timed out in the store (the process may not get to do it) and then calls the kernel's hang
 * handler — `blocktune tune` restarts itself and resumes past it; a library user decides. */
static void *watchdog(void *arg)
{
    bt__tctx *T = arg;
    for (;;) {
        usleep(50000);
        pthread_mutex_lock(&T->wmu);
        bool stop = T->stop;
        bt__entry *e = T->watch;
        bool overdue = e && bt__now() > T->deadline;
        pthread_mutex_unlock(&T->wmu);
        if (stop)
            return NULL;
        if (!overdue)
            continue;
        char m[200];
        snprintf(m, sizeof m, "did not finish within %.1f s (hung): stopped by the watchdog",
                 T->o.timeout_s);
        bt__entry_fail(e, BT__CS_TIMEOUT, m);
        bt__record(T, e);
        bt_hang_handler h = T->kn->hang_handler;
        if (h)
            h(T->kn->hang_user);
        pthread_mutex_lock(&T->wmu);
        T->watch = NULL; /* the handler returned: keep waiting (the device call may come back) */
        pthread_mutex_unlock(&T->wmu);
    }
}

void bt__watchdog_start(bt__tctx *T)
{
    T->wd_on = pthread_create(&T->wd, NULL, watchdog, T) == 0;
}

void bt__watchdog_stop(bt__tctx *T)
{
    if (T->wd_on) {
        pthread_mutex_lock(&T->wmu);
        T->stop = true;
        pthread_mutex_unlock(&T->wmu);
        pthread_join(T->wd, NULL);
        T->wd_on = false;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Loading, unloading, recovery
 * ------------------------------------------------------------------------------------------- */
void bt__load(bt__tctx *T, bt__entry *e, bool rec)
{
    bt_diag d = {0};
    bt_status st = bt__build_load(T->kn, T->p, e, &d);
    if (st) {
        bt__entry_fail(e, bt__cfg_status_of(st), d.msg);
        if (rec)
            bt__record(T, e);
    }
}

void bt__unload_all(bt__tctx *T)
{
    bt_result *r = T->r;
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].mod) {
            T->I->module_free(T->D, r->e[i].mod);
            r->e[i].mod = NULL;
            r->e[i].fn = NULL;
        }
}

/* After a fault poisoned the device (CUDA: illegal address, trap), the config that caused it is
 * already marked failed; everything else is rebuilt on a fresh context: the device reopened, the
 * kernel's dispatch table dropped, the data made again from the same seed, and every config of
 * the round in flight (r->e[from..]) still in play reloaded from its binary (earlier rounds are
 * unloaded already). Caller-provided buffers died with the context: that is an error. */
static bt_status recover(bt__tctx *T, size_t from)
{
    bt_result *r = T->r;
    bt_diag *diag = T->sdiag;
    if (T->caller) {
        bt__diag_set(diag,
                     "the device faulted while tuning on the caller's buffers, which are lost");
        return BT_LAUNCH;
    }
    if (++r->recoveries > 16) {
        bt__diag_set(diag, "the device faulted more than 16 times; giving up");
        return BT_LAUNCH;
    }
    bt__unload_all(T);
    bt__pdata_free(T, T->main);
    bt_diag rd = {0};
    bt_status st = bt__dispatch_reset(T->kn, &rd);
    T->D = T->ops.bdev = T->kn->bdev;
    if (st) {
        /* CUDA keeps a sticky error for the life of the process: what is measured is in the
         * store, the faulting config with its error, so a new process resumes without it */
        bt__diag_set(diag, "the device faulted (the config is recorded as launch_failed%s) and "
                           "cannot be reopened in this process (%.300s): run the tune again to "
                           "resume%s",
                     T->store ? " in the store" : "", rd.msg,
                     T->store ? "" : " (no store was kept: nothing carries over)");
        return BT_LAUNCH;
    }
    st = bt__pdata_init(T, T->main, T->p, T->o.seed, NULL, 0, diag);
    if (st)
        return st;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status == BT__CS_PENDING || e->status == BT__CS_OK)
            bt__load(T, e, false);
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * One round
 * ------------------------------------------------------------------------------------------- */
/* Entries for the n proposed configs at r->e[r->n..] (what the store holds is filled in), and the
 * ones still to compile into jobs. */
static bt_status round_entries(bt__tctx *T, const uint64_t *idx, size_t n, bt__entry **jobs,
                               size_t *njobs)
{
    bt_result *r = T->r;
    if (r->n + n > T->cap) {
        size_t ncap = T->cap ? T->cap * 2 : 64;
        while (ncap < r->n + n)
            ncap *= 2;
        bt__entry *ne = realloc(r->e, sizeof *ne * ncap);
        if (!ne)
            return BT_NOMEM;
        r->e = ne;
        T->cap = ncap;
    }
    *njobs = 0;
    for (size_t i = 0; i < n; i++) {
        double pos = 0;
        bt__idxmap_get(&T->cand, idx[i], &pos);
        bt__entry *e = &r->e[r->n++];
        memset(e, 0, sizeof *e);
        e->ev = r->plan->cand[(size_t)pos];
        e->ev.reasons = NULL;
        e->model_rank = (size_t)pos + 1;
        if (T->store && T->o.mode != BT_MODE_RETUNE && bt__record_get(T->store, r, e))
            r->from_store++;
        if (bt__in_play(e))
            jobs[(*njobs)++] = e;
    }
    return BT_OK;
}

/* Verifies e on d under the watchdog; a failure is marked and recorded (its message prefixed
 * with the boundary size `where` when given). Returns the device call's status: BT_OK also when
 * the outputs were wrong. */
static bt_status verify_entry(bt__tctx *T, bt__entry *e, bt__pdata *d, bt__verify *v,
                              const char *where)
{
    bt_diag dd = {0};
    watch_begin(T, e, T->o.timeout_s);
    bt_status st = bt__verify_on(T, e, d, v, &dd);
    watch_end(T);
    if (!st && v->ok)
        return BT_OK;
    const char *text = st ? dd.msg : v->msg;
    char msg[400];
    if (where)
        snprintf(msg, sizeof msg, "at boundary size %.100s: %.250s", where, text);
    bt__entry_fail(e, st ? bt__cfg_status_of(st) : BT__CS_WRONG, where ? msg : text);
    bt__record(T, e);
    return st;
}

/* Verifies the round's entries (r->e[from..]) at the problem. */
static bt_status round_verify(bt__tctx *T, size_t from)
{
    bt_result *r = T->r;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (!bt__in_play(e))
            continue;
        bt_status st = verify_entry(T, e, T->main, &e->ver, NULL);
        if (st && bt__device_lost(T->kn->dev) && (st = recover(T, from)))
            return st;
    }
    return BT_OK;
}

/* Whether config e is dispatched at all for the boundary problem of model bm (a TMA kernel at a
 * row that is not 16-byte aligned, a vector path at an odd size: not there). */
static bool applies(bt__model *bm, const bt__entry *e)
{
    bt__cfg_eval ev = {0};
    bool ok = bt__model_eval(bm, &e->ev.cfg, &ev) == BT_OK && ev.valid;
    bt__cfg_eval_clear(&ev);
    return ok;
}

/* A kernel with problem defines is compiled per problem: at boundary size bp its config is
 * verified with a binary built for bp, made in *tmp (drop_binary frees it); without defines the
 * round's own binary serves. */
static bt__entry *boundary_binary(bt__tctx *T, bt__entry *e, const bt_problem *bp, bt__entry *tmp)
{
    if (!T->k->npdefines)
        return e;
    memset(tmp, 0, sizeof *tmp);
    tmp->ev = e->ev;
    tmp->ev.reasons = NULL;
    bt__build(T->kn, bp, tmp, true);
    if (tmp->status == BT__CS_PENDING) {
        bt_diag d = {0};
        bt_status st = bt__build_load(T->kn, bp, tmp, &d);
        if (st)
            bt__entry_fail(tmp, bt__cfg_status_of(st), d.msg);
    }
    return tmp;
}

static void drop_binary(bt__tctx *T, const bt__entry *e, bt__entry *be)
{
    if (be == e)
        return;
    if (be->mod)
        T->I->module_free(T->D, be->mod);
    free(be->blob.data);
    free(be->log);
    free(be->error);
}

/* Verifies the round's entries still in play at boundary problem b, whose data is bd (made
 * again after a fault). A config whose constraints exclude this size is not run there. */
static bt_status boundary_entries(bt__tctx *T, size_t from, int b, const bt_problem *bp,
                                  bt__pdata *bd, bt__model *bm, const char *where)
{
    bt_result *r = T->r;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (!bt__in_play(e))
            continue;
        if (bm && !applies(bm, e)) {
            e->boundary_na++;
            continue;
        }
        bt__verify v;
        bt__entry tmp, *be = boundary_binary(T, e, bp, &tmp);
        bt_status st;
        if (be == e || be->status == BT__CS_PENDING)
            st = verify_entry(T, be, bd, &v, where);
        else { /* its binary for this size did not build or load */
            char msg[640];
            snprintf(msg, sizeof msg, "at boundary size %s: built for this size: %.240s", where,
                     be->status == BT__CS_COMPILE && be->log ? be->log
                     : be->error                              ? be->error
                                                              : "?");
            bt__entry_fail(e, be->status, msg);
            bt__record(T, e);
            st = BT_OK;
            v.ok = false;
        }
        if (be != e && be->status != BT__CS_PENDING && e->status == BT__CS_PENDING) {
            /* the size's binary failed verification: the config fails with its message */
            bt__entry_fail(e, be->status, be->error);
            bt__record(T, e);
        }
        drop_binary(T, e, be);
        if (!st && v.ok)
            e->boundary_checked++;
        if (st && bt__device_lost(T->kn->dev)) {
            bt__pdata_free(T, bd);
            bt_diag d = {0};
            if (recover(T, from) ||
                bt__pdata_init(T, bd, bp, T->o.seed + 1 + (uint64_t)b, NULL, 0, &d))
                return BT_LAUNCH;
        }
    }
    return BT_OK;
}

/* Verifies the round's entries at every boundary size (a boundary problem that cannot be made is
 * said in the search's diag, not fatal). */
static bt_status round_boundaries(bt__tctx *T, size_t from)
{
    bt_result *r = T->r;
    for (int b = 0; T->o.verify_boundary && b < T->k->nboundary; b++) {
        bool any = false;
        for (size_t i = from; i < r->n; i++)
            any |= bt__in_play(&r->e[i]);
        if (!any)
            break;
        bt_problem bp;
        char where[128];
        bt__boundary_problem(T, b, &bp, where, sizeof where);
        bt__pdata bd;
        bt_diag d = {0};
        if (bt__pdata_init(T, &bd, &bp, T->o.seed + 1 + (uint64_t)b, NULL, 0, &d) != BT_OK) {
            bt__diag_set(T->sdiag, "boundary problem %d: %s", b, d.msg);
            continue;
        }
        bt__model bm;
        bool have_model =
            bt__model_init(&bm, T->k, &bp, T->g, r->plan->model.rules, NULL) == BT_OK;
        bt_status st = boundary_entries(T, from, b, &bp, &bd, have_model ? &bm : NULL, where);
        if (have_model)
            bt__model_fini(&bm);
        if (st)
            return st; /* bd is gone with the device */
        bt__pdata_free(T, &bd);
    }
    return BT_OK;
}

/* Measures the round's entries still pending on the problem's data (a measurement from the
 * store is not repeated). */
static bt_status round_measure(bt__tctx *T, size_t from)
{
    bt_result *r = T->r;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status != BT__CS_PENDING)
            continue;
        T->cur_e = e;
        bt_diag d = {0};
        /* a bench lasts about its budgets, plus one timeout per run at worst */
        watch_begin(T, e, T->o.timeout_s * 3 + (T->o.warmup_ms + T->o.rep_ms) * 1e-3 * 4);
        bt_status st = bt__bench(&T->ops, T->o.warmup_ms, T->o.rep_ms, T->o.timeout_s * 1e3,
                                 &e->st, NULL, NULL, &d);
        watch_end(T);
        if (st) {
            bt__entry_fail(e, bt__cfg_status_of(st), d.msg);
            bt__record(T, e);
            if (bt__device_lost(T->kn->dev) && (st = recover(T, from)))
                return st;
            continue;
        }
        e->status = BT__CS_OK;
        bt__record(T, e);
    }
    return BT_OK;
}

/* The caller's progress callback after a round: true when it asks to cancel. */
static bool progress_cb(bt__tctx *T, double best)
{
    if (!T->o.progress_cb)
        return false;
    bt_result *r = T->r;
    double elapsed = bt__now() - T->t0;
    bt_progress pr = {
        .size = sizeof pr,
        .configs_done = (int)r->n,
        .configs_planned = (int)(r->budget ? r->budget : r->plan->ncand),
        .rounds = (int)T->rounds,
        .elapsed_s = elapsed,
        .time_left_s = T->o.time_limit_s > 0 ? fmax(0, T->o.time_limit_s - elapsed) : -1,
        .best_ms = isinf(best) ? 0 : best,
    };
    return T->o.progress_cb(&pr, T->o.progress_user) != 0;
}

/* The round's outcomes for the strategy, its progress line and the progress callback; true when
 * the callback cancels the tune. */
static bool round_outcomes(bt__tctx *T, size_t from, bt__search_meas *m)
{
    bt_result *r = T->r;
    size_t nok = 0;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        m[i - from].fail = bt__cfg_status_fail(e->status);
        m[i - from].ms = e->status == BT__CS_OK ? e->st.median : INFINITY;
        nok += e->status == BT__CS_OK;
    }
    double best = INFINITY;
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].status == BT__CS_OK && r->e[i].st.median < best)
            best = r->e[i].st.median;
    if (progress_cb(T, best))
        return true;
    if (!T->o.progress || !isatty(2))
        return false;
    char lim[48] = "";
    if (r->budget)
        snprintf(lim, sizeof lim, " of %zu", r->budget);
    fprintf(stderr, "\r\033[Kround %zu (%s): %zu%s measured, %zu ok this round, best %.4g ms, "
                    "elapsed %.1f s\n",
            T->rounds, r->strategy, r->n, lim, nok, best, bt__now() - T->t_search0);
    fflush(stderr);
    return false;
}

/* One round (the search's bt__measure_batch_fn; user is the tctx): entries for the proposed
 * configs, compiled in parallel, loaded, verified at the problem and at the boundary sizes,
 * measured; the outcomes go to m[] (and to the store as they happen). Modules are unloaded at
 * the end of the round (the binaries stay for the finalists). */
static bt_status measure_round(void *user, const uint64_t *idx, size_t n, bt__search_meas *m)
{
    bt__tctx *T = user;
    bt_result *r = T->r;
    T->rounds++;
    size_t from = r->n, njobs;
    bt__entry **jobs = calloc(n ? n : 1, sizeof *jobs);
    bt_status st = jobs ? round_entries(T, idx, n, jobs, &njobs) : BT_NOMEM;
    if (st) {
        free(jobs);
        return st;
    }
    char stage[48];
    snprintf(stage, sizeof stage, "round %zu: compile", T->rounds);
    double t = bt__now();
    bt__build_all(T->kn, T->p, jobs, njobs, r->compile_threads, stage, T->o.progress);
    free(jobs);
    r->t_compile += bt__now() - t;
    t = bt__now();
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status == BT__CS_COMPILE && !e->from_store)
            bt__record(T, e);
        else if (bt__in_play(e))
            bt__load(T, e, true);
    }
    st = round_verify(T, from);
    if (!st)
        st = round_boundaries(T, from);
    if (st)
        return st;
    r->t_verify += bt__now() - t;
    t = bt__now();
    st = round_measure(T, from);
    if (st)
        return st;
    r->t_measure += bt__now() - t;
    bool cancel = round_outcomes(T, from, m);
    bt__unload_all(T);
    if (cancel) {
        bt__diag_set(T->sdiag, "cancelled by the progress callback after %zu configs (each "
                     "measurement is in the store: a new tune resumes)", r->n);
        return BT_CANCELLED;
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The search
 * ------------------------------------------------------------------------------------------- */
static bool search_valid(void *user, uint64_t idx)
{
    bt__tctx *T = user;
    return bt__idxmap_get(&T->cand, idx, NULL);
}

static double search_prior(void *user, uint64_t idx)
{
    bt__tctx *T = user;
    double pos;
    if (!bt__idxmap_get(&T->cand, idx, &pos))
        return NAN;
    double us = T->r->plan->cand[(size_t)pos].pred_us;
    return us > 0 ? us : NAN;
}

bt_status bt__search(bt__tctx *T, const bt__strategy *strat, double time_limit_s, bt_diag *diag)
{
    bt_result *r = T->r;
    const bt_kdesc *k = T->k;
    bt_status st = BT_OK;
    bt__idxmap_init(&T->cand);
    for (size_t i = 0; i < r->plan->ncand && st == BT_OK; i++) {
        uint64_t idx = r->plan->cand[i].index;
        if (k->configs && !bt__space_index_of(&k->space, &r->plan->cand[i].cfg, &idx))
            continue;
        st = bt__idxmap_put(&T->cand, idx, (double)i);
    }
    bt_diag sd = {0};
    T->sdiag = &sd;
    T->t_search0 = bt__now();
    bt__search_ctx ctx = {.space = &k->space, .is_valid = search_valid, .prior = search_prior,
                          .user = T, .seed = T->o.seed, .max_evals = r->budget};
    bt__search_budget sb = {.max_evals = r->budget,
                            .time_limit_s = time_limit_s,
                            .predict = true,
                            .target_ms = r->target_ms > 0 ? r->target_ms : 0,
                            .within_pct = T->o.within_pct > 0 ? T->o.within_pct : 0};
    bt__search_result sr = {0};
    if (!st) {
        st = bt__search_run_batch(strat, &ctx, &sb, (size_t)r->compile_threads, measure_round,
                                  T, &sr, &sd);
        r->t_search = bt__now() - T->t_search0;
        r->search_rounds = sr.rounds;
        snprintf(r->stop, sizeof r->stop, "%s", bt__search_stop_name(sr.stop));
        bt__search_result_clear(&sr);
    }
    bt__idxmap_free(&T->cand);
    T->sdiag = NULL;
    if (st) {
        bt__diag_copy(diag, &sd);
        if (!diag->msg[0])
            bt__diag_set(diag, "the search failed: %s", bt_strerror(st));
    } else if (sd.msg[0]) /* a boundary problem that could not be made: said, not fatal */
        bt__diag_copy(diag, &sd);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * The bench closure: measures T->cur_e on the problem's data
 * ------------------------------------------------------------------------------------------- */
static bt_status bench_pre(void *u, bt_diag *d)
{
    bt__tctx *T = u;
    return bt__pdata_pre_run(T, T->main, d);
}

static bt_status bench_launch(void *u, bt__btimer *timer, bt_diag *d)
{
    bt__tctx *T = u;
    return bt__run(T, T->cur_e, T->main, timer, d);
}

static bt_status bench_graph(void *u, int reps, double *ms, bt_diag *d)
{
    bt__tctx *T = u;
    return bt__run_graph(T, T->cur_e, T->main, reps, ms, d);
}

void bt__bench_setup(bt__tctx *T)
{
    bt_result *r = T->r;
    T->ops = (bt__bench_ops){bench_pre, bench_launch, T, T->I, T->D, true, NULL};
    if (!T->o.graph)
        return;
    bool resets = false;
    for (int i = 0; i < T->k->nargs; i++)
        resets |= T->k->args[i].reset_to_zero || T->k->args[i].restore_value;
    if (!T->I->launch_graph_timed)
        snprintf(r->graph_note, sizeof r->graph_note,
                 "graph mode asked for, but the %s backend cannot capture graphs: measured "
                 "launch by launch", T->I->name);
    else if (resets)
        snprintf(r->graph_note, sizeof r->graph_note,
                 "graph mode asked for, but this kernel needs resets before every run "
                 "(reset_to_zero / restore_value): measured launch by launch");
    else {
        T->ops.graph = bench_graph;
        snprintf(r->graph_note, sizeof r->graph_note,
                 "graph mode: each sample is a replay of back-to-back launches captured in a "
                 "graph, per launch, with no cache flush between them");
    }
}
