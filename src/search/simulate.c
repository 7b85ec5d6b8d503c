/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simulate.c — the replay device and bt__simulate: seeded runs of a strategy on a recorded space,
 * reduced to the statistics `blocktune simulate` reports (see simulate.h).
 */
#include "search/simulate.h"

#include "core/pool.h"
#include "core/util.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

const double bt__sim_thresholds[BT__SIM_NTHRESH] = {2, 5, 10};
const uint64_t bt__sim_budgets[BT__SIM_NBUDGETS] = {10, 25, 50, 100, 200, 500, 1000};

/* ---------------------------------------------------------------------------------------------
 * Replay device
 * ------------------------------------------------------------------------------------------- */
bool bt__replay_valid(void *user, uint64_t idx)
{
    const bt__recspace *c = user;
    bt__rec r;
    return c->find(c->user, idx, &r);
}

bt_status bt__replay_measure(void *user, uint64_t idx, bt__search_meas *m)
{
    const bt__recspace *c = user;
    bt__rec r;
    if (!c->find(c->user, idx, &r))
        return BT_INTERNAL; /* the driver never measures an invalid config */
    m->cost_s = r.cost_s;
    m->fail = r.fail;
    m->ms = r.fail == BT_OK ? r.time_ms : INFINITY;
    return BT_OK;
}

void bt__replay_ctx(const bt__recspace *c, uint64_t seed, bt__search_ctx *ctx)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->space = c->space;
    ctx->is_valid = bt__replay_valid;
    ctx->user = (void *)c;
    ctx->seed = seed;
}

void bt__sim_space_info_of(const bt__recspace *c, bt__sim_space_info *out)
{
    memset(out, 0, sizeof *out);
    out->total = c->space->total;
    out->recorded = c->nrecs;
    out->failed = c->nfailed;
    out->best_ms = c->has_best ? c->best_ms : INFINITY;
    for (int k = 0; k < BT__SIM_NTHRESH; k++) {
        double lim = c->best_ms * (1 + bt__sim_thresholds[k] / 100);
        for (size_t i = 0; i < c->nrecs; i++) {
            bt__rec r;
            c->at(c->user, i, &r);
            out->within[k] += c->has_best && r.fail == BT_OK && r.time_ms <= lim;
        }
        out->random_expect[k] =
            out->within[k] ? (double)(c->nrecs + 1) / (double)(out->within[k] + 1) : INFINITY;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Runs
 * ------------------------------------------------------------------------------------------- */
typedef struct sim_job {
    const bt__recspace *cache;
    const bt__strategy *strategy;
    const bt__sim_options *opt;
    uint64_t budget;
    bt__sim_run *runs;
    pthread_mutex_t lock; /* guards status and diag */
    bt_status status;
    bt_diag diag;
} sim_job;

static bt_status one_run(sim_job *j, uint64_t r, bt_diag *diag)
{
    const bt__recspace *c = j->cache;
    bt__search_ctx ctx;
    bt__replay_ctx(c, j->opt->seed + r, &ctx);
    ctx.max_evals = j->budget;
    bt__search_budget b = {.max_evals = j->budget, .time_limit_s = j->opt->time_limit_s};
    if (!j->opt->full) {
        /* Stop once no reported number can change: at the best itself, or within the smallest
         * threshold of it and past the largest reported budget. */
        b.target_ms = c->best_ms;
        b.within_pct = bt__sim_thresholds[0];
        b.min_evals = bt__sim_budgets[BT__SIM_NBUDGETS - 1];
    }
    bt__search_result res;
    bt_status st = bt__search_run(j->strategy, &ctx, &b, bt__replay_measure, (void *)c, &res, diag);
    bt__sim_run *run = &j->runs[r];
    memset(run, 0, sizeof *run);
    if (st == BT_OK) {
        run->evals = res.evals;
        run->cost_s = res.cost_s;
        run->best_ms = res.best_ms;
        run->invalid_proposals = res.invalid_proposals;
        run->duplicate_proposals = res.duplicate_proposals;
        run->stop = res.stop;
        for (int k = 0; k < BT__SIM_NTHRESH; k++) {
            run->evals_to[k] = UINT64_MAX;
            run->time_to[k] = INFINITY;
            double lim = c->best_ms * (1 + bt__sim_thresholds[k] / 100);
            for (uint64_t e = 0; e < res.evals; e++) {
                if (res.trace[e].best_ms <= lim) {
                    run->evals_to[k] = e + 1;
                    run->time_to[k] = res.trace[e].cost_s;
                    break;
                }
            }
        }
        for (int k = 0; k < BT__SIM_NBUDGETS; k++) {
            uint64_t at = bt__sim_budgets[k] < res.evals ? bt__sim_budgets[k] : res.evals;
            run->best_at[k] = at ? res.trace[at - 1].best_ms : INFINITY;
        }
    }
    bt__search_result_clear(&res);
    return st;
}

/* Run r (a pool job); once a run has failed the rest are not started. */
static void sim_run(void *arg, size_t r)
{
    sim_job *j = arg;
    pthread_mutex_lock(&j->lock);
    bool stop = j->status != BT_OK;
    pthread_mutex_unlock(&j->lock);
    if (stop)
        return;
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = one_run(j, r, &d);
    if (st != BT_OK) {
        pthread_mutex_lock(&j->lock);
        if (j->status == BT_OK) {
            j->status = st;
            j->diag = d;
        }
        pthread_mutex_unlock(&j->lock);
    }
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile position of p (0..100] among n sorted values. */
static size_t rank_pos(double p, size_t n)
{
    size_t k = (size_t)ceil(p / 100.0 * (double)n);
    return k ? k - 1 : 0;
}

static void summarise(const bt__recspace *c, const bt__sim_run *runs, uint64_t R, uint64_t budget,
                      bt__sim_stats *st)
{
    memset(st, 0, sizeof *st);
    st->runs = R;
    st->budget = budget;
    uint64_t *u = malloc(sizeof *u * R);
    double *d = malloc(sizeof *d * R);
    if (!u || !d) {
        free(u);
        free(d);
        return;
    }
    double evals = 0;
    for (uint64_t r = 0; r < R; r++) {
        evals += (double)runs[r].evals;
        st->invalid_proposals += runs[r].invalid_proposals;
        st->duplicate_proposals += runs[r].duplicate_proposals;
    }
    st->evals_mean = evals / (double)R;
    for (uint64_t r = 0; r < R; r++)
        u[r] = runs[r].evals;
    qsort(u, R, sizeof *u, bt__cmp_u64);
    st->evals_run_med = u[rank_pos(50, R)];
    for (int k = 0; k < BT__SIM_NTHRESH; k++) {
        uint64_t ok = 0;
        for (uint64_t r = 0; r < R; r++) {
            u[r] = runs[r].evals_to[k];
            d[r] = runs[r].time_to[k];
            ok += u[r] != UINT64_MAX;
        }
        qsort(u, R, sizeof *u, bt__cmp_u64);
        qsort(d, R, sizeof *d, cmp_dbl);
        st->evals_med[k] = u[rank_pos(50, R)];
        st->evals_p90[k] = u[rank_pos(90, R)];
        st->time_med[k] = d[rank_pos(50, R)];
        st->success[k] = (double)ok / (double)R;
    }
    for (int k = 0; k < BT__SIM_NBUDGETS; k++) {
        if (bt__sim_budgets[k] > budget) {
            st->best_at_pct[k] = NAN;
            continue;
        }
        for (uint64_t r = 0; r < R; r++)
            d[r] = isfinite(runs[r].best_at[k]) ? (runs[r].best_at[k] / c->best_ms - 1) * 100
                                                : INFINITY;
        qsort(d, R, sizeof *d, cmp_dbl);
        st->best_at_pct[k] = d[rank_pos(50, R)];
    }
    free(u);
    free(d);
}

bt_status bt__simulate(const bt__recspace *c, const bt__strategy *s, const bt__sim_options *o,
                       bt__sim_stats *stats, bt__sim_run **runs_out, bt_diag *diag)
{
    bt__diag_clear(diag);
    memset(stats, 0, sizeof *stats);
    if (runs_out)
        *runs_out = NULL;
    if (!c->has_best) {
        bt__diag_set(diag, "the recorded space has no successful config to compare against");
        return BT_INVALID_ARG;
    }
    bt__sim_options opt = *o;
    if (opt.runs == 0)
        opt.runs = 100;
    uint64_t budget = opt.budget && opt.budget < c->nrecs ? opt.budget : c->nrecs;

    /* Can the strategy run here at all? (e.g. `model` needs a prior). */
    bt__search_ctx ctx;
    bt__replay_ctx(c, opt.seed, &ctx);
    void *probe = NULL;
    bt_status st = s->create(&ctx, &probe, diag);
    if (st != BT_OK)
        return st;
    s->destroy(probe);

    sim_job j = {.cache = c, .strategy = s, .opt = &opt, .budget = budget, .status = BT_OK};
    j.runs = calloc(opt.runs, sizeof *j.runs);
    if (!j.runs)
        return BT_NOMEM;
    pthread_mutex_init(&j.lock, NULL);
    bt__pool_run(opt.runs, opt.jobs > 64 ? 64 : opt.jobs, sim_run, NULL, &j);
    pthread_mutex_destroy(&j.lock);
    if (j.status != BT_OK) {
        if (diag)
            bt__diag_copy(diag, &j.diag);
        free(j.runs);
        return j.status;
    }
    summarise(c, j.runs, opt.runs, budget, stats);
    if (runs_out)
        *runs_out = j.runs;
    else
        free(j.runs);
    return BT_OK;
}
