/* SPDX-License-Identifier: Apache-2.0 */
/*
 * measure.c — the search's rounds: a strategy (src/search) proposes configs; each round makes
 * their entries (a measurement the store holds is not repeated), compiles them in parallel
 * (build.c), then takes them one by one through load → verify at the problem and at the boundary
 * sizes → measure (do_bench; a screening measurement at the short budget when the tune screens,
 * bt__screen_ms, and select.c re-measures the finalists at the full budgets), under the watchdog,
 * committing each outcome to the store as it happens (one config at a time on the device: its
 * in-flight row names the one that was running if the process dies), and hands every outcome — failures too — back to the strategy. A device
 * fault is survived by rebuilding everything on a fresh context (recover). A tune that only
 * reports what the store holds (a supervisor gave up) takes the stored configs in one round; a
 * replayed one (replay.c) answers each round from the store and runs nothing.
 */
#include "engine/tune_ctx.h"

#include "core/util.h"
#include "engine/record.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool bt__in_play(const bt__entry *e)
{
    return e->status == BT__CS_PENDING || (e->from_store && e->status == BT__CS_OK);
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
 * kernel's dispatch table dropped, the device reference reloaded and the data made again from
 * the same seed (the boundary problems' on next use); the round's configs are loaded again as
 * their turn comes (done ones by the finals). Caller-provided buffers died with the context: that
 * is an error. */
static bt_status recover(bt__tctx *T)
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
    bt__boundary_free(T);
    bt__devref_free(T);
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
    st = bt__devref_prepare(T, diag);
    if (!st)
        st = bt__problem_data(T, T->main, T->p, T->o.seed, NULL, 0, "", diag);
    return st;
}

/* After a failed device call: rebuilds on a fresh context when the device was lost (the
 * failure is the config's, already marked); BT_OK when the search goes on. */
static bt_status after_failure(bt__tctx *T, bt_status st)
{
    return st && bt__device_lost(T->kn->dev) ? recover(T) : BT_OK;
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
 * the outputs were wrong, or when the run came back after the watchdog recorded it timed out. */
static bt_status verify_entry(bt__tctx *T, bt__entry *e, bt__pdata *d, bt__verify *v,
                              const char *where)
{
    char cfg[200], what[300];
    bt__config_format(&T->k->space, &e->ev.cfg, " ", cfg, sizeof cfg);
    snprintf(what, sizeof what, "verifying config %s%s%s", cfg, where ? " at boundary size " : "",
             where ? where : "");
    bt_diag dd = {0};
    bt__watch_begin(T, e, true, T->o.timeout_s, true, what);
    bt_status st = bt__verify_on(T, e, d, v, &dd);
    bt__watch_end(T);
    if (e->status == BT__CS_TIMEOUT) /* recorded by the watchdog */
        return st;
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

/* Whether config e is dispatched at all for the boundary problem of model bm (a TMA kernel at a
 * row that is not 16-byte aligned, a vector path at an odd size: not there). */
static bool applies(bt__model *bm, const bt__entry *e)
{
    bt__cfg_eval ev = {0};
    bool ok = bt__model_eval(bm, &e->ev.cfg, &ev) == BT_OK && ev.valid;
    bt__cfg_eval_clear(&ev);
    return ok;
}

/* A kernel with problem defines, or a Triton kernel (its integer arguments are specialized), is
 * compiled per problem: at boundary size b (problem bp) its config is verified with a binary
 * built for bp — by the round, with its own binaries, or else now — in *tmp (drop_binary frees
 * it); otherwise the round's own binary serves. */
static bt__entry *boundary_binary(bt__tctx *T, bt__entry *e, int b, const bt_problem *bp,
                                  bt__entry *tmp)
{
    if (!bt__build_per_problem(T->kn))
        return e;
    if (!bt__prebuilt_take(T->kn, T->pre, T->npre, b, &e->ev.cfg, tmp)) {
        memset(tmp, 0, sizeof *tmp);
        tmp->ev = e->ev;
        tmp->ev.reasons = NULL;
        bt__build(T->kn, bp, tmp, true);
    }
    tmp->ev = e->ev;
    tmp->ev.reasons = NULL;
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
    if (be != e)
        bt__entry_drop(T, be);
}

/* Verifies e at boundary problem B, boundary b (its binary for that size when the sizes are
 * defines). */
static bt_status boundary_one(bt__tctx *T, bt__entry *e, int b, bt__bprob *B)
{
    if (B->have_model && !applies(&B->m, e)) { /* its constraints exclude this size */
        e->boundary_na++;
        return BT_OK;
    }
    bt__verify v;
    bt__entry tmp, *be = boundary_binary(T, e, b, &B->d.p, &tmp);
    bt_status st = BT_OK;
    if (be == e || be->status == BT__CS_PENDING)
        st = verify_entry(T, be, &B->d, &v, B->where);
    else { /* its binary for this size did not build or load */
        char msg[640];
        snprintf(msg, sizeof msg, "at boundary size %s: built for this size: %.240s", B->where,
                 be->status == BT__CS_COMPILE && be->log ? be->log
                 : be->error                              ? be->error
                                                          : "?");
        bt__entry_fail(e, be->status, msg);
        bt__record(T, e);
        v.ok = false;
    }
    if (be != e && be->status != BT__CS_PENDING && e->status == BT__CS_PENDING) {
        /* the size's binary failed verification: the config fails with its message */
        bt__entry_fail(e, be->status, be->error);
        bt__record(T, e);
    }
    drop_binary(T, e, be);
    if (!st && v.ok && bt__in_play(e))
        e->boundary_checked++;
    return st;
}

/* Verifies e at every boundary size while it passes (a boundary problem that cannot be made is
 * said in the search's diag, not fatal). */
static bt_status boundaries(bt__tctx *T, bt__entry *e)
{
    for (int b = 0; T->o.verify_boundary && b < T->k->nboundary && bt__in_play(e); b++) {
        bt_status st;
        bt__bprob *B = bt__boundary_data(T, b, &st);
        if (st)
            return st;
        if (B && (st = after_failure(T, boundary_one(T, e, b, B))) != BT_OK)
            return st;
    }
    return BT_OK;
}

/* The fastest median of this tune so far, e's aside (0: none yet). */
static double best_median(const bt_result *r, const bt__entry *e)
{
    double best = 0;
    for (size_t i = 0; i < r->n; i++)
        if (&r->e[i] != e && r->e[i].status == BT__CS_OK && r->e[i].st.median > 0 &&
            (best == 0 || r->e[i].st.median < best))
            best = r->e[i].st.median;
    return best;
}

/* Measures e on the problem's data under the watchdog; its outcome is recorded. */
static bt_status measure_entry(bt__tctx *T, bt__entry *e)
{
    char cfg[200], what[300];
    bt__config_format(&T->k->space, &e->ev.cfg, " ", cfg, sizeof cfg);
    snprintf(what, sizeof what, "measuring config %s", cfg);
    T->cur_e = e;
    bt_diag d = {0};
    /* a bench lasts about its budgets, plus one timeout per run at worst, plus the resets and
     * cache flushes around its dozen or more runs (10 s covers them on a slow CPU device) */
    bt__watch_begin(T, e, true,
                    T->o.timeout_s * 3 + (T->o.warmup_ms + T->o.rep_ms) * 1e-3 * 4 + 10, false,
                    what);
    /* a screening measurement when the tune screens (the finals re-measure at the full budgets) */
    double screen = bt__screen_ms(&T->o);
    bt_status st = screen > 0 ? bt__bench_screen(&T->ops, T->o.warmup_ms, T->o.rep_ms, screen,
                                                 BT__SCREEN_CUT * best_median(T->r, e),
                                                 T->o.timeout_s * 1e3,
                                                 &e->st, &d)
                              : bt__bench(&T->ops, T->o.warmup_ms, T->o.rep_ms,
                                          T->o.timeout_s * 1e3, &e->st, NULL, NULL, &d);
    bt__watch_end(T);
    if (e->status == BT__CS_TIMEOUT) /* recorded by the watchdog */
        return after_failure(T, st);
    if (st) {
        bt__entry_fail(e, bt__cfg_status_of(st), d.msg);
        bt__record(T, e);
        return after_failure(T, st);
    }
    e->status = BT__CS_OK;
    T->r->screen_cut += e->st.cut;
    bt__record(T, e);
    return BT_OK;
}

/* One config of the round (tune_ctx.h). A config run here for the first time is recorded as in
 * flight first (a crash of the process leaves that row). */
bt_status bt__run_config(bt__tctx *T, bt__entry *e)
{
    bt_result *r = T->r;
    if (e->status == BT__CS_COMPILE && !e->from_store)
        bt__record(T, e);
    if (!bt__in_play(e))
        return BT_OK;
    if (!e->mod)
        bt__load(T, e, true);
    if (!bt__in_play(e))
        return BT_OK;
    if (e->status == BT__CS_PENDING)
        bt__record_inflight(T, e);
    else { /* measured before, re-verified: named if it crashes now, not recorded */
        char cfg[256];
        bt__config_format(&T->k->space, &e->ev.cfg, " ", cfg, sizeof cfg);
        bt__inflight_note(BT__INFLIGHT_CONFIG, false, "config %s (measured before, re-verified)",
                          cfg);
    }
    double t = bt__now();
    bt_status st = after_failure(T, verify_entry(T, e, T->main, &e->ver, NULL));
    if (!st)
        st = boundaries(T, e);
    r->t_verify += bt__now() - t;
    if (!st && e->status == BT__CS_PENDING) {
        t = bt__now();
        st = measure_entry(T, e);
        r->t_measure += bt__now() - t;
    }
    bt__inflight_clear();
    return st;
}

/* The caller's progress callback after a round: true when it asks to cancel. */
static bool progress_cb(bt__tctx *T)
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
        .best_ms = best_median(r, NULL),
    };
    return T->o.progress_cb(&pr, T->o.progress_user) != 0;
}

/* The round's outcomes for the strategy, its progress line and the progress callback; true when
 * the callback cancels the tune. */
static bool round_outcomes(bt__tctx *T, size_t from, bt__search_meas *m)
{
    bt_result *r = T->r;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        m[i - from].fail = bt__cfg_status_fail(e->status);
        m[i - from].ms = e->status == BT__CS_OK ? e->st.median : INFINITY;
    }
    bt__progress_round_done(T);
    return progress_cb(T);
}

/* The end of a round whose entries from r->e[from] have their outcomes: to m[], the progress
 * callback (BT_CANCELLED when it cancels), modules unloaded. */
static bt_status round_done(bt__tctx *T, size_t from, bt__search_meas *m)
{
    bool cancel = round_outcomes(T, from, m);
    bt__unload_all(T);
    if (cancel) {
        bt__diag_set(T->sdiag, "cancelled by the progress callback after %zu configs (each "
                     "measurement is in the store: a new tune resumes)", T->r->n);
        return BT_CANCELLED;
    }
    return BT_OK;
}

/* A replayed round (replay.c): its entries' stored outcomes go to the strategy, nothing runs; a
 * config the store does not hold ends the replay before this round (BT_CANCELLED with
 * T->replay_end: what follows would be new measurements). */
static bt_status replay_round(bt__tctx *T, size_t from, bt__search_meas *m)
{
    bt_result *r = T->r;
    bool all = true;
    for (size_t i = from; i < r->n; i++)
        all &= r->e[i].from_store;
    if (!all) {
        for (size_t i = from; i < r->n; i++) {
            r->from_store -= r->e[i].from_store;
            free(r->e[i].error);
        }
        r->n = from;
        T->replay_end = true;
        return BT_CANCELLED;
    }
    r->replayed += (int)(r->n - from);
    if (!round_outcomes(T, from, m))
        return BT_OK;
    bt__diag_set(T->sdiag, "cancelled by the progress callback after %zu configs", r->n);
    return BT_CANCELLED;
}

/* The binaries a round builds ahead for the boundary sizes (malloc'd, *n of them; NULL when
 * none): where a config's binary depends on the problem, each job's at every boundary size
 * still to be verified whose model keeps it there, and the baseline config's (the device
 * reference) at a size whose data is not made yet. */
static bt__prebuilt *ahead(bt__tctx *T, bt__entry **jobs, size_t njobs, size_t *n)
{
    const bt_kdesc *k = T->k;
    *n = 0;
    if (!bt__build_per_problem(T->kn) || !T->o.verify_boundary || !k->nboundary)
        return NULL;
    bool ref = k->ref == BT__REF_CONFIG;
    bt__prebuilt *pre = calloc((njobs + 1) * (size_t)k->nboundary, sizeof *pre);
    for (int b = 0; pre && b < k->nboundary; b++) {
        if (T->bnd_skip[b])
            continue;
        bt_problem bp;
        char where[128];
        bt__boundary_problem(T, b, &bp, where, sizeof where);
        bt__model bm;
        bool have = bt__model_init(&bm, k, &bp, T->g, T->r->plan->model.rules, NULL) == BT_OK;
        for (size_t i = 0; i <= njobs; i++) {
            bt__prebuilt *x = &pre[*n];
            if (i == njobs && (!ref || T->bnd[b])) /* the baseline's, until its data is made */
                continue;
            x->e.ev.cfg = i < njobs ? jobs[i]->ev.cfg : k->ref_config;
            if (i < njobs && have && !applies(&bm, &x->e))
                continue;
            x->tag = b;
            x->p = bp;
            (*n)++;
        }
        if (have)
            bt__model_fini(&bm);
    }
    return pre;
}

/* One round (the search's bt__measure_batch_fn; user is the tctx): entries for the proposed
 * configs, compiled in parallel, then each loaded, verified at the problem and at the boundary
 * sizes and measured in turn; the outcomes go to m[] (and to the store as they happen). Modules
 * are unloaded at the end of the round (the binaries stay for the finalists). */
static bt_status measure_round(void *user, const uint64_t *idx, size_t n, bt__search_meas *m)
{
    bt__tctx *T = user;
    bt_result *r = T->r;
    T->rounds++;
    bt__progress_round(T);
    size_t from = r->n, njobs;
    bt__entry **jobs = calloc(n ? n : 1, sizeof *jobs);
    bt_status st = jobs ? round_entries(T, idx, n, jobs, &njobs) : BT_NOMEM;
    if (st) {
        free(jobs);
        return st;
    }
    if (T->replay) {
        free(jobs);
        return replay_round(T, from, m);
    }
    if (T->mpi_round) { /* spread over the MPI ranks (engine/mpi.h) */
        st = T->mpi_round(T, jobs, njobs);
        free(jobs);
        if (st)
            return st;
        return round_done(T, from, m);
    }
    char stage[48];
    snprintf(stage, sizeof stage, "round %zu: compile", T->rounds);
    double t = bt__now();
    T->pre = ahead(T, jobs, njobs, &T->npre);
    bt__build_order(T->k, jobs, njobs); /* the compiles' order only: the round runs as proposed */
    bt__build_round(T->kn, T->p, jobs, njobs, T->pre, T->npre, r->compile_threads, stage, false);
    free(jobs);
    r->t_compile += bt__now() - t;
    for (size_t i = from; i < r->n && !st; i++)
        st = bt__run_config(T, &r->e[i]);
    bt__prebuilt_free(T->pre, T->npre);
    T->pre = NULL;
    T->npre = 0;
    if (st)
        return st;
    return round_done(T, from, m);
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

/* The space index of the plan's valid config i (false: it is not in an explicit config list). */
static bool cand_index(const bt__tctx *T, size_t i, uint64_t *idx)
{
    const bt__cfg_eval *c = &T->r->plan->cand[i];
    *idx = c->index;
    return !T->k->configs || bt__space_index_of(&T->k->space, &c->cfg, idx);
}

/* A tune that measures nothing new (kn->stored_only says why): the valid configs the store holds
 * a row for, re-verified (the ok ones) in one round; nothing else is compiled or run. */
static bt_status search_stored(bt__tctx *T, bt_diag *sd)
{
    bt_result *r = T->r;
    snprintf(r->stored_only, sizeof r->stored_only, "%s", T->kn->stored_only);
    snprintf(r->stop, sizeof r->stop, "stored only");
    T->o.mode = BT_MODE_TUNE; /* the store's rows are what is reported */
    uint64_t *idx = malloc(sizeof *idx * (r->plan->ncand + 1));
    bt__search_meas *m = calloc(r->plan->ncand + 1, sizeof *m);
    bt_status st = idx && m ? BT_OK : BT_NOMEM;
    size_t n = 0;
    for (size_t i = 0; !st && T->store && i < r->plan->ncand; i++) {
        bt__entry probe = {.ev = r->plan->cand[i]};
        probe.ev.reasons = NULL;
        if (cand_index(T, i, &idx[n]) && bt__record_get(T->store, r, &probe))
            n++;
        free(probe.error);
    }
    if (!st && n) {
        st = measure_round(T, idx, n, m);
        r->search_rounds = 1;
    }
    if (st && !sd->msg[0])
        bt__diag_set(sd, "reporting what the store holds failed: %s", bt_strerror(st));
    free(idx);
    free(m);
    return st;
}

/* Readiness is looked up for plans of at most this many valid configs (a stat or three each). */
#define BT__READY_MAX 8192

/* The valid configs whose binaries are ready (engine/build.h bt__build_ready), as space indices
 * in increasing order into *out (malloc'd; NULL when none or not looked up): for a strategy that
 * weighs its candidates by cost, in a search that runs here. */
static size_t ready_configs(bt__tctx *T, const bt__strategy *strat, uint64_t **out)
{
    bt_result *r = T->r;
    *out = NULL;
    if (!strat->weighs_cost || T->replay || T->mpi_round ||
        r->plan->ncand > BT__READY_MAX || !r->plan->ncand)
        return 0;
    bool *ready = calloc(r->plan->ncand, sizeof *ready);
    uint64_t *idx = malloc(sizeof *idx * r->plan->ncand);
    size_t n = 0;
    if (ready && idx && bt__build_ready(T->kn, T->p, r->plan->cand, r->plan->ncand, ready))
        for (size_t i = 0; i < r->plan->ncand; i++)
            if (ready[i] && cand_index(T, i, &idx[n]))
                n++;
    free(ready);
    if (!n) {
        free(idx);
        return 0;
    }
    qsort(idx, n, sizeof *idx, bt__cmp_u64);
    *out = idx;
    return n;
}

bt_status bt__search(bt__tctx *T, const bt__strategy *strat, double time_limit_s, bt_diag *diag)
{
    bt_result *r = T->r;
    const bt_kdesc *k = T->k;
    bt_status st = BT_OK;
    bt__idxmap_init(&T->cand);
    for (size_t i = 0; i < r->plan->ncand && st == BT_OK; i++) {
        uint64_t idx;
        if (cand_index(T, i, &idx))
            st = bt__idxmap_put(&T->cand, idx, (double)i);
    }
    bt_diag sd = {0};
    T->sdiag = &sd;
    T->t_search0 = bt__now();
    uint64_t *ready = NULL;
    size_t nready = st ? 0 : ready_configs(T, strat, &ready);
    r->ready = (int)nready;
    bt__search_ctx ctx = {.space = &k->space, .is_valid = search_valid, .prior = search_prior,
                          .user = T, .seed = T->o.seed, .max_evals = r->budget,
                          .ready = ready, .nready = nready, .compile_gain = BT__COMPILE_GAIN};
    bt__search_budget sb = {.max_evals = r->budget,
                            .time_limit_s = time_limit_s,
                            .predict = true,
                            .target_ms = r->target_ms > 0 ? r->target_ms : 0,
                            .within_pct = T->o.within_pct > 0 ? T->o.within_pct : 0};
    bt__search_result sr = {0};
    if (!st && T->kn->stored_only[0]) {
        st = search_stored(T, &sd);
        r->t_search = bt__now() - T->t_search0;
    } else if (!st) {
        /* a round waits for its slowest compile (a Triton config's take 1-20 s at odd shapes):
         * exhaustive learns nothing between rounds, so with no time limit or target to check
         * between them it proposes every valid config in one round: the compilers stay busy */
        size_t batch = (size_t)r->compile_threads;
        if (!strcmp(strat->name, "exhaustive") && time_limit_s <= 0 && sb.target_ms <= 0 &&
            !T->mpi_round && r->plan->ncand > batch) /* MPI: rounds are the ranks' hand-outs */
            batch = r->budget && r->budget < r->plan->ncand ? r->budget : r->plan->ncand;
        r->round_size = (int)batch;
        st = bt__search_run_batch(strat, &ctx, &sb, batch, measure_round, T, &sr, &sd);
        r->t_search = bt__now() - T->t_search0;
        r->search_rounds = sr.rounds;
        snprintf(r->stop, sizeof r->stop, "%s", bt__search_stop_name(sr.stop));
        if (T->replay_end) { /* not a failure: the store's outcomes end here */
            st = BT_OK;
            sd.msg[0] = '\0';
            r->search_rounds = sr.rounds - 1;
            snprintf(r->stop, sizeof r->stop, "end of the stored outcomes");
        }
        bt__search_result_clear(&sr);
    }
    bt__idxmap_free(&T->cand);
    free(ready);
    T->sdiag = NULL;
    if (st) {
        bt__diag_copy(diag, &sd);
        if (!diag->msg[0])
            bt__diag_set(diag, "the search failed: %s", bt_strerror(st));
    } else if (sd.msg[0]) { /* a boundary size not verified: said in the report, not fatal */
        bt__diag_copy(diag, &sd);
        snprintf(r->verify_note, sizeof r->verify_note, "%s", sd.msg);
    }
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
