/*
 * exact.c — `plan --exact`: every candidate compiled with NVRTC for the plan's GPU architecture
 * (no GPU needed), its exact registers, spills, static shared memory and stack read from ptxas,
 * and the exact occupancy computed by the CUDA occupancy rules of that compute capability — next
 * to the model's estimates, with large disagreements flagged. Compiles run on every core and
 * their resource reports are kept in the kernel cache, so a second plan compiles nothing.
 */
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/occupancy.h"
#include "core/plan.h"
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
    const char *src;
    char nvrtc[32];
    pthread_mutex_t mu; /* guards the plan's counters */
} xjob;

static void exact_one(xjob *J, bt__cfg_eval *ev)
{
    bt_plan *pl = J->pl;
    const bt_kdesc *k = pl->k;
    char defs[BT__MAX_DEFINES][96];
    const char *dp[BT__MAX_DEFINES];
    int nd = bt__build_defines(k, &ev->cfg, &pl->problem, &pl->gpu, defs);
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    const char *opts = k->options ? k->options : "";
    char arch[32];
    snprintf(arch, sizeof arch, "sm_%d%d%s", pl->gpu.cc_major, pl->gpu.cc_minor,
             k->needs_sm90a ? "a" : "");
    uint64_t key = bt__kcache_key("nvrtc-resources", arch, J->nvrtc, J->src, dp, nd, opts);
    key = bt__compile_key(k, key);
    int regs = -1;
    long long spill = -1, smem = -1, stack = -1;
    bt__blob cached = {0};
    bool hit = false;
    if (bt__kcache_get(key, &cached)) {
        char text[128];
        size_t n = cached.size < sizeof text - 1 ? cached.size : sizeof text - 1;
        memcpy(text, cached.data, n);
        text[n] = '\0';
        hit = sscanf(text, "%d %lld %lld %lld", &regs, &spill, &smem, &stack) == 4;
        free(cached.data);
    }
    if (!hit) {
        bt__blob cubin = {0};
        char *log = NULL;
        bt_diag d = {0};
        /* the entry as the CUBIN names it: a C++ kernel's mangled name */
        char names[BT__MAX_NAMES][136];
        const char *ptrs[BT__MAX_NAMES];
        int nn = bt__compile_names(k, names, ptrs);
        char **low = NULL;
        bt_status st = bt__nvrtc_compile_named(J->src, dp, nd, opts, pl->gpu.cc_major,
                                               pl->gpu.cc_minor, k->needs_sm90a, ptrs, nn, &low,
                                               &cubin, &log, &d);
        const char *entry = low ? low[0] : k->entry;
        int64_t sp = -1, sm = -1, sk = -1;
        if (st == BT_OK && bt__nvrtc_resources(log, entry, &regs, &sp, &sm, &sk) != BT_OK) {
            /* no ptxas report in the log: read the CUBIN (spills are then not known) */
            st = bt__cubin_resources(cubin.data, cubin.size, entry, &regs, &sk, &sm);
            sp = -1;
        }
        bt__nvrtc_names_free(low, nn);
        free(cubin.data);
        free(log);
        if (st != BT_OK) {
            ev->exact_failed = true;
            snprintf(ev->x_error, sizeof ev->x_error, "%.150s", d.msg[0] ? d.msg : bt_strerror(st));
            pthread_mutex_lock(&J->mu);
            pl->exact_failed++;
            pthread_mutex_unlock(&J->mu);
            return;
        }
        spill = sp, smem = sm, stack = sk;
        char text[128];
        int len = snprintf(text, sizeof text, "%d %lld %lld %lld", regs, spill, smem, stack);
        bt__blob b = {text, (size_t)len};
        bt__kcache_put(key, &b);
    }
    ev->exact = true;
    ev->x_regs = regs;
    ev->x_spill = spill;
    ev->x_smem = smem + ev->dyn_smem; /* static from ptxas + the dynamic request */
    ev->x_stack = stack;
    ev->x_blocks = bt__cuda_occupancy(&pl->gpu, (int)ev->threads, regs, ev->x_smem, &ev->x_limiter);
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

bt_status bt__plan_exact(bt_plan *pl, bt_diag *diag)
{
    const bt_kdesc *k = pl->k;
    if (!k->src_cuda) {
        bt__diag_set(diag, "--exact compiles the kernel's CUDA source, and '%s' has none", k->name);
        return BT_UNSUPPORTED;
    }
    if (pl->gpu.cc_major <= 0) {
        bt__diag_set(diag, "--exact needs the GPU's compute capability; '%s' has none in the table",
                     pl->gpu.name);
        return BT_UNSUPPORTED;
    }
    if (!bt__nvrtc_available(diag)) {
        bt__diag_prefix(diag, "--exact needs NVRTC: ");
        return BT_NO_BACKEND;
    }
    xjob J = {.pl = pl};
    int maj = 0, min = 0;
    bt__nvrtc_version(&maj, &min, NULL);
    snprintf(J.nvrtc, sizeof J.nvrtc, "NVRTC %d.%d", maj, min);
    char *src = bt__kernel_source(k, true);
    if (!src)
        return BT_NOMEM;
    J.src = src;
    pthread_mutex_init(&J.mu, NULL);
    double t0 = bt__now();
    bt__pool_run(pl->ncand, bt__pool_cores(), exact_job, NULL, &J);
    pthread_mutex_destroy(&J.mu);
    free(src);
    pl->exact = true;
    pl->exact_seconds = bt__now() - t0;
    return BT_OK;
}
