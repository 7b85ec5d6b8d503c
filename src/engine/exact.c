/* SPDX-License-Identifier: Apache-2.0 */
/*
 * exact.c — the public bt_plan_create: the model's plan (core/plan.c) and, with opts->exact
 * (`plan --exact`), every candidate compiled offline for the plan's GPU by the first backend that
 * can (its offline entries: no device needed) and takes one of the kernel's sources, its exact
 * registers, spills, static shared memory and stack read from the compiler, and the exact
 * occupancy by that backend's rules — next to the model's estimates, with large disagreements
 * flagged. Compiles run on every core and their resource reports are kept in the kernel cache,
 * so a second plan compiles nothing (a Triton source's, in the Triton compile pool's own cache).
 */
#include "core/plan.h"

#include "backends/backend.h"
#include "core/pool.h"
#include "core/util.h"
#include "engine/build.h"
#include "engine/kcache.h"
#include "engine/userdata.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct xjob {
    bt_plan *pl;
    const bt__backend_iface *I;
    const bt__ksource *src;
    bt__offline_target t;
    pthread_mutex_t mu; /* guards the plan's counters */
} xjob;

/* A Triton source's resources: its compile request to the backend, past the kernel cache (the
 * Triton compile pool's own cache keys by the source, its helpers and Triton's version); *hit
 * when the pool answered from that cache. */
static bt_status triton_resources(xjob *J, const bt__cfg_eval *ev, bt__kres *res, bool *hit,
                                  bt_diag *d)
{
    bt_plan *pl = J->pl;
    char *text = NULL;
    bt_status st = bt__triton_request(pl->k, J->src, &ev->cfg, &pl->problem, &pl->gpu, &text, d);
    if (st != BT_OK)
        return st;
    const char *names[1] = {pl->k->entry};
    bt__compile_req req = {.lang = "triton", .src = text, .target = J->t.target, .names = names,
                           .nnames = 1};
    st = J->I->offline_compile(&pl->gpu, &req, res, NULL, d);
    free(text);
    *hit = st == BT_OK && res->from_cache;
    return st;
}

/* The resources of ev's config from the kernel cache, or compiled (and then cached): BT_OK with
 * *res filled, *hit saying which; else the compile's status with the reason in d. */
static bt_status resources_of(xjob *J, const bt__cfg_eval *ev, bt__kres *res, bool *hit,
                              bt_diag *d)
{
    bt_plan *pl = J->pl;
    const bt_kdesc *k = pl->k;
    *hit = false;
    if (!strcmp(J->src->lang, "triton"))
        return triton_resources(J, ev, res, hit, d);
    char defs[BT__MAX_DEFINES][96];
    const char *dp[BT__MAX_DEFINES];
    int nd = bt__build_defines(k, &ev->cfg, &pl->problem, &pl->gpu, defs);
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    char names[BT__MAX_NAMES][136];
    const char *np[BT__MAX_NAMES];
    bt__compile_req req;
    bt__compile_req_of(k, J->src, dp, nd, names, np, &req);
    req.target = J->t.target;
    char compiler[80];
    snprintf(compiler, sizeof compiler, "%s %s resources", J->t.compiler, J->t.version);
    uint64_t key = bt__kcache_key(J->I->name, J->t.target, compiler, &req);
    bt__blob cached = {0};
    *hit = false;
    if (bt__kcache_get(key, &cached)) {
        char text[128];
        size_t n = cached.size < sizeof text - 1 ? cached.size : sizeof text - 1;
        memcpy(text, cached.data, n);
        text[n] = '\0';
        long long spill, smem, stack;
        *hit = sscanf(text, "%d %lld %lld %lld", &res->regs_per_thread, &spill, &smem, &stack) == 4;
        res->spill_bytes = spill, res->static_smem = smem, res->local_bytes = stack;
        free(cached.data);
        if (*hit)
            return BT_OK;
    }
    bt_status st = J->I->offline_compile(&pl->gpu, &req, res, NULL, d);
    if (st != BT_OK)
        return st;
    char text[128];
    int len = snprintf(text, sizeof text, "%d %lld %lld %lld", res->regs_per_thread,
                       (long long)res->spill_bytes, (long long)res->static_smem,
                       (long long)res->local_bytes);
    bt__blob b = {text, (size_t)len};
    bt__kcache_put(key, &b);
    return BT_OK;
}

static void exact_one(xjob *J, bt__cfg_eval *ev)
{
    bt_plan *pl = J->pl;
    bt__kres res = {0};
    bool hit = false;
    bt_diag d = {0};
    bt_status st = resources_of(J, ev, &res, &hit, &d);
    if (st != BT_OK) {
        ev->exact_failed = true;
        snprintf(ev->x_error, sizeof ev->x_error, "%.150s", d.msg[0] ? d.msg : bt_strerror(st));
        pthread_mutex_lock(&J->mu);
        pl->exact_failed++;
        pthread_mutex_unlock(&J->mu);
        return;
    }
    int regs = res.regs_per_thread;
    ev->exact = true;
    ev->x_regs = regs;
    ev->x_spill = res.spill_bytes;
    ev->x_smem = res.static_smem + ev->dyn_smem; /* static from the compiler + the dynamic request */
    ev->x_stack = res.local_bytes;
    ev->x_limiter = NULL;
    int blocks = J->I->occupancy
                     ? J->I->occupancy(&pl->gpu, &res, (int)ev->threads, ev->dyn_smem,
                                       &ev->x_limiter)
                     : -1;
    ev->x_blocks = blocks > 0 ? blocks : 0;
    ev->x_occ = pl->gpu.max_warps_per_sm > 0
                    ? (double)(ev->x_blocks * ev->warps) / pl->gpu.max_warps_per_sm
                    : 0;
    double rr = regs > 0 ? (double)ev->regs / regs : 1;
    ev->x_disagrees = ev->x_blocks != ev->blocks_per_sm || rr > 1.5 || rr < 1 / 1.5;
    pthread_mutex_lock(&J->mu);
    if (hit)
        pl->exact_cached++;
    else
        pl->exact_compiled++;
    pthread_mutex_unlock(&J->mu);
}

static void exact_job(void *arg, size_t i)
{
    xjob *J = arg;
    exact_one(J, &J->pl->cand[i]);
}

/* The first registered backend with offline entries that takes one of k's sources, into J. */
static bt_status pick_backend(xjob *J, const bt_kdesc *k, bt_diag *diag)
{
    bt__sbuf can = {0};
    for (const bt__backend_iface *const *b = bt__backends(); *b; b++) {
        if (!(*b)->offline_target || !(*b)->offline_compile)
            continue;
        bt__sbuf_printf(&can, "%s%s", can.len ? ", " : "", (*b)->name);
        const bt__ksource *s = bt__backend_source(*b, k);
        if (s) {
            J->I = *b;
            J->src = s;
            bt__sbuf_free(&can);
            return BT_OK;
        }
    }
    bt__diag_set(diag, "--exact compiles the kernel without a device, which only the %s backend "
                 "can, and '%s' has no source it takes", can.s ? can.s : "(no)", k->name);
    bt__sbuf_free(&can);
    return BT_UNSUPPORTED;
}

/* plan --exact: compiles every candidate for the plan's GPU and fills the x_ fields. */
static bt_status plan_exact(bt_plan *pl, bt_diag *diag)
{
    xjob J = {.pl = pl};
    bt_status st = pick_backend(&J, pl->k, diag);
    if (st != BT_OK)
        return st;
    st = J.I->offline_target(&pl->gpu, J.src->lang, J.src->target[0] ? J.src->target : NULL, &J.t,
                             diag);
    if (st != BT_OK) {
        bt__diag_prefix(diag, "--exact: ");
        return st;
    }
    snprintf(pl->exact_compiler, sizeof pl->exact_compiler, "%s", J.t.compiler);
    snprintf(pl->exact_target, sizeof pl->exact_target, "%s", J.t.target);
    pthread_mutex_init(&J.mu, NULL);
    double t0 = bt__now();
    bt__pool_run(pl->ncand, bt__pool_cores(), exact_job, NULL, &J);
    pthread_mutex_destroy(&J.mu);
    pl->exact = true;
    pl->exact_seconds = bt__now() - t0;
    return BT_OK;
}

bt_status bt_plan_create(const bt_kdesc *k, const bt_problem *p, const bt_gpu *gpu,
                         const bt_plan_options *opts, bt_plan **out, bt_diag *diag)
{
    bt_status st = bt__plan_model(k, p, gpu, opts, out, diag);
    if (st != BT_OK || !opts || !opts->exact)
        return st;
    if ((st = plan_exact(*out, diag)) != BT_OK || (st = bt__plan_drop_unfit(*out)) != BT_OK) {
        bt_plan_destroy(*out);
        *out = NULL;
    }
    return st;
}
