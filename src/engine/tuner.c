/*
 * tuner.c — the tuning pipeline: plan (prune with the model, with reasons) → a search strategy
 * (src/search) proposes the plan's valid configs in rounds; each round is compiled in parallel on
 * a thread pool, verified against the reference (poisoned outputs, random inputs, boundary sizes)
 * and measured (do_bench), and every outcome (failures included) goes back to the strategy, until
 * a budget or the strategy stops it → re-measure the finalists interleaved → select the winner
 * with its margin and noise band. Each config ends with a typed status.
 */
#include "engine/engine.h"

#include "core/util.h"
#include "engine/kcache.h"
#include "engine/record.h"
#include "engine/userdata.h"
#include "search/common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *bt__cfg_status_name(bt__cfg_status s)
{
    switch (s) {
    case BT__CS_PENDING: return "pending";
    case BT__CS_OK: return "ok";
    case BT__CS_INVALID: return "invalid";
    case BT__CS_COMPILE: return "compile_failed";
    case BT__CS_RESOURCES: return "resources_exceeded";
    case BT__CS_LAUNCH: return "launch_failed";
    case BT__CS_WRONG: return "wrong_result";
    case BT__CS_TIMEOUT: return "timed_out";
    case BT__CS_SKIPPED: return "not_measured";
    }
    return "?";
}

void bt_tune_options_default(bt_tune_options *o)
{
    memset(o, 0, sizeof *o);
    o->warmup_ms = 25;
    o->rep_ms = 100;
    o->verify_boundary = 1;
    o->top_k = 3;
    o->rounds = 5;
    o->seed = 1;
    o->timeout_s = 10;
    o->mode = (bt_tune_mode)bt__tune_mode_from_env();
}

/* ---------------------------------------------------------------------------------------------
 * Geometry
 * ------------------------------------------------------------------------------------------- */
bt_status bt__geometry(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                       int64_t grid[3], int64_t block[3], int64_t *dyn_smem, bt_diag *diag)
{
    int64_t slots[256];
    if (k->nslots > 256)
        return BT_INTERNAL;
    bt__kdesc_fill_slots(k, c, p, g, slots);
    for (int d = 0; d < 3; d++) {
        bt_status st = bt__kexpr_eval(k, &k->grid[d], slots, &grid[d], diag);
        if (!st)
            st = bt__kexpr_eval(k, &k->block[d], slots, &block[d], diag);
        if (st)
            return st;
        if (grid[d] < 0 || block[d] < 1 || grid[d] > INT32_MAX || block[d] > 65536) {
            bt__diag_set(diag, "launch geometry out of range: grid[%d]=%lld block[%d]=%lld", d,
                         (long long)grid[d], d, (long long)block[d]);
            return BT_INVALID_ARG;
        }
    }
    *dyn_smem = 0;
    if (k->dyn_smem.e)
        return bt__kexpr_eval(k, &k->dyn_smem, slots, dyn_smem, diag);
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Data for one problem: host copies, device buffers, reference outputs
 * ------------------------------------------------------------------------------------------- */
typedef struct pdata {
    bt_problem p;
    bt__hostbuf host[BT__MAX_ARGS];
    bt__bbuf *dev[BT__MAX_ARGS];
    bool owned[BT__MAX_ARGS];
    bt__bbuf *saved[BT__MAX_ARGS]; /* restore_value copies */
    double *ref[BT__MAX_ARGS];
    bool have_ref;
    size_t *sample;
    size_t nsample;
    bt__karg scalars[BT__MAX_ARGS];
} pdata;

typedef struct tctx {
    bt_kernel *kn;
    const bt_kdesc *k;
    const bt__backend_iface *I;
    bt__bdev *D;
    const bt_gpu *g;
    bt_tune_options o;
    bt_result *r;
    const char *src;
    bool is_opencl;
    /* bench closure */
    pdata *cur;
    bt__entry *cur_e;
    struct bt__store *store;
    /* watchdog: the entry on the device now and when it is overdue */
    pthread_mutex_t wmu;
    bt__entry *watch;
    double deadline;
    bool stop;
} tctx;

static void set_error(bt__entry *e, bt__cfg_status s, const char *msg);

static void watch_begin(tctx *T, bt__entry *e, double seconds)
{
    pthread_mutex_lock(&T->wmu);
    T->watch = e;
    T->deadline = bt__now() + seconds;
    pthread_mutex_unlock(&T->wmu);
}

static void watch_end(tctx *T)
{
    pthread_mutex_lock(&T->wmu);
    T->watch = NULL;
    pthread_mutex_unlock(&T->wmu);
}

static void record(tctx *T, const bt__entry *e);

/* A kernel that never finishes cannot be stopped from the host: the watchdog records the config
 * as timed out in the store (the process may not get to do it) and then calls the kernel's hang
 * handler — `blocktune tune` restarts itself and resumes past it; a library user decides. */
static void *watchdog(void *arg)
{
    tctx *T = arg;
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
        set_error(e, BT__CS_TIMEOUT, m);
        record(T, e);
        bt_hang_handler h = T->kn->hang_handler;
        if (h)
            h(T->kn->hang_user);
        pthread_mutex_lock(&T->wmu);
        T->watch = NULL; /* the handler returned: keep waiting (the device call may come back) */
        pthread_mutex_unlock(&T->wmu);
    }
}

/* Commits an entry's outcome to the store at once (a failure to store is said, not fatal). */
static void record(tctx *T, const bt__entry *e)
{
    if (!T->store)
        return;
    bt_diag d = {0};
    if (bt__record_put(T->store, T->r, e, false, &d) != BT_OK)
        fprintf(stderr, "blocktune: a measurement could not be stored: %s\n", d.msg);
}

static void pdata_free(tctx *T, pdata *d)
{
    for (int i = 0; i < T->k->nargs; i++) {
        bt__hostbuf_free(&d->host[i]);
        if (d->owned[i] && d->dev[i])
            T->I->buf_free(T->D, d->dev[i]);
        if (d->saved[i])
            T->I->buf_free(T->D, d->saved[i]);
        free(d->ref[i]);
    }
    free(d->sample);
    memset(d, 0, sizeof *d);
}

/* Prepares inputs and the host reference for a problem. caller: the caller's buffers (may be NULL;
 * then inputs are generated from the seed). */
static bt_status pdata_init(tctx *T, pdata *d, const bt_problem *p, uint64_t seed,
                            bt_buffer *const *caller, int ncaller, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    memset(d, 0, sizeof *d);
    d->p = *p;
    int64_t slots[256];
    bt__kdesc_fill_slots(k, NULL, p, T->g, slots);
    bt__rng rng;
    bt__rng_seed(&rng, seed, 0);
    int nbuf = 0;
    bt_status st = BT_OK;
    for (int i = 0; i < k->nargs && st == BT_OK; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role == BT__KARG_TMAP) /* encoded per launch (it depends on the config) */
            continue;
        int64_t v;
        st = bt__kexpr_eval(k, &a->size, slots, &v, diag);
        if (st)
            break;
        if (a->role != BT__KARG_BUFFER) {
            st = bt__scalar_karg(a, v, &d->scalars[i], diag);
            continue;
        }
        if (v < 0 || v > ((int64_t)1 << 40)) {
            bt__diag_set(diag, "buffer '%s' has %lld elements", a->name, (long long)v);
            st = BT_INVALID_ARG;
            break;
        }
        size_t count = v > 0 ? (size_t)v : 1;
        st = bt__hostbuf_alloc(&d->host[i], bt__arg_dtype(k, a, p), count);
        if (st)
            break;
        size_t bytes = bt__hostbuf_bytes(&d->host[i]);
        if (caller) {
            if (nbuf >= ncaller) {
                bt__diag_set(diag, "kernel '%s' takes more buffers than the %d given", k->name, ncaller);
                st = BT_INVALID_ARG;
                break;
            }
            bt_buffer *cb = caller[nbuf++];
            if (!cb || cb->bytes < bytes) {
                bt__diag_set(diag, "buffer %d ('%s') holds %zu bytes, the problem needs %zu",
                             nbuf - 1, a->name, cb ? cb->bytes : 0, bytes);
                st = BT_INVALID_ARG;
                break;
            }
            d->dev[i] = cb->b;
            if (!a->output || a->restore_value) /* read the caller's inputs for the reference */
                st = T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data, bytes, diag);
        } else {
            if (!a->output)
                st = bt__arg_fill(a, &d->host[i], &rng, diag);
            if (!st)
                st = T->I->buf_alloc(T->D, bytes, &d->dev[i], diag);
            if (!st) {
                d->owned[i] = true;
                st = T->I->buf_write(T->D, d->dev[i], 0, d->host[i].data, bytes, diag);
            }
        }
        if (!st && (a->restore_value || (caller && a->reset_to_zero))) {
            st = T->I->buf_alloc(T->D, bytes, &d->saved[i], diag);
            if (!st)
                st = T->I->buf_copy(T->D, d->saved[i], d->dev[i], bytes, diag);
        }
        if (!st && a->output) {
            d->ref[i] = calloc(count, sizeof(double));
            if (!d->ref[i])
                st = BT_NOMEM;
        }
    }
    if (!st && caller && nbuf != ncaller) {
        bt__diag_set(diag, "kernel '%s' takes %d buffers, %d given", k->name, nbuf, ncaller);
        st = BT_INVALID_ARG;
    }
    if (st == BT_OK && k->ref == BT__REF_ANSWERS)
        d->have_ref = (st = bt__answers_load(k, d->host, d->ref, caller != NULL, diag)) == BT_OK;
    if (st == BT_OK && k->ref == BT__REF_HOST) {
        bt__href_fn fn = bt__hostref_find(k->ref_host);
        if (!fn) {
            bt__diag_set(diag, "no host reference named '%s'", k->ref_host);
            st = BT_NOT_FOUND;
        } else {
            if (bt__hostref_sampled(k->ref_host)) {
                /* sample the outputs: every output element still gets the NaN/poison check */
                size_t total = 0;
                for (int i = 0; i < k->nargs; i++)
                    if (k->args[i].output)
                        total = d->host[i].count;
                size_t want = total <= 65536 ? total : 4096;
                d->sample = malloc(sizeof *d->sample * (want ? want : 1));
                if (!d->sample)
                    st = BT_NOMEM;
                bt__rng srng;
                bt__rng_seed(&srng, seed, 0x73616d706c65ULL);
                for (size_t s = 0; s < want && !st; s++)
                    d->sample[s] = want == total ? s : (size_t)(bt__rng_next(&srng) % total);
                d->nsample = want == total ? 0 : want;
                if (want == total) {
                    free(d->sample);
                    d->sample = NULL;
                }
            }
            if (!st) {
                bt__href_ctx hc = {k, &d->p, d->host, d->ref, d->sample, d->nsample};
                st = fn(&hc, diag);
                d->have_ref = st == BT_OK;
            }
        }
    }
    if (st)
        pdata_free(T, d);
    return st;
}

/* Before every run, outside the timed region: reset_to_zero and restore_value. */
static bt_status pre_run(tctx *T, pdata *d, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role != BT__KARG_BUFFER)
            continue;
        size_t bytes = bt__hostbuf_bytes(&d->host[i]);
        bt_status st = BT_OK;
        if (a->restore_value)
            st = T->I->buf_copy(T->D, d->dev[i], d->saved[i], bytes, diag);
        else if (a->reset_to_zero) {
            uint8_t zero[4] = {0};
            st = T->I->buf_fill(T->D, d->dev[i], 0, bytes, zero, bytes % 4 ? 1 : 4, diag);
        }
        if (st)
            return st;
    }
    return BT_OK;
}

/* The launch arguments of config e on data d: buffers, scalars, and tensor maps encoded into
 * tm (which must outlive the launch call). */
static bt_status entry_args(tctx *T, const bt__entry *e, const pdata *d, bt__karg *args,
                            bt__tmap_blob *tm, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bool tmaps = false;
    for (int i = 0; i < k->nargs; i++) {
        if (k->args[i].role == BT__KARG_BUFFER) {
            args[i].kind = BT__ARG_BUF;
            args[i].u.buf = d->dev[i];
        } else
            args[i] = d->scalars[i];
        tmaps |= k->args[i].role == BT__KARG_TMAP;
    }
    bt_status cst = bt__cmem_bind(k, T->I, T->D, e->mod, &d->p, T->g, args, diag);
    if (cst || !tmaps)
        return cst;
    bt__tmap_req req[BT__MAX_TMAPS];
    bt_status st = bt__tmap_reqs(k, &e->ev.cfg, &d->p, T->g, req, diag);
    return st ? st : bt__tmap_bind(k, T->I, T->D, req, args, tm, diag);
}

static bt_status launch_entry(tctx *T, bt__entry *e, pdata *d, bt__btimer *timer, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__karg args[BT__MAX_ARGS];
    bt__tmap_blob tm[BT__MAX_TMAPS];
    bt_status st0 = entry_args(T, e, d, args, tm, diag);
    if (st0)
        return st0;
    int64_t grid[3], block[3], dyn;
    bt_status st = bt__geometry(k, &e->ev.cfg, &d->p, T->g, grid, block, &dyn, diag);
    if (st)
        return st;
    uint32_t g32[3] = {(uint32_t)grid[0], (uint32_t)grid[1], (uint32_t)grid[2]};
    uint32_t b32[3] = {(uint32_t)block[0], (uint32_t)block[1], (uint32_t)block[2]};
    if (!g32[0] || !g32[1] || !g32[2])
        return BT_OK; /* an empty problem: nothing to launch */
    return T->I->launch(T->D, e->fn, g32, b32, (size_t)dyn, args, k->nargs, timer, diag);
}

/* Poisons outputs, runs once, reads and compares every output. */
static bt_status verify_on(tctx *T, bt__entry *e, pdata *d, bt__verify *v, bt_diag *diag)
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
        bt_status st = T->I->buf_fill(T->D, d->dev[i], 0, bt__hostbuf_bytes(&d->host[i]), pat, ps, diag);
        if (st)
            return st;
    }
    bt_status st = pre_run(T, d, diag);
    if (!st)
        st = launch_entry(T, e, d, NULL, diag);
    if (!st)
        st = T->I->sync(T->D, diag);
    if (st)
        return st;
    for (int i = 0; i < k->nargs && v->ok; i++) {
        if (!k->args[i].output)
            continue;
        st = T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data, bt__hostbuf_bytes(&d->host[i]), diag);
        if (st)
            return st;
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
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Compilation on a thread pool
 * ------------------------------------------------------------------------------------------- */
typedef struct pool {
    tctx *T;
    bt__entry **jobs;
    size_t njobs;
    size_t next;
    size_t done;
    pthread_mutex_t mu;
} pool;

bt_status bt__scalar_karg(const bt__argspec *a, int64_t v, bt__karg *out, bt_diag *diag)
{
    if (a->role == BT__KARG_LOCAL) {
        out->kind = BT__ARG_LOCAL, out->u.local_bytes = (size_t)v;
        return BT_OK;
    }
    switch (a->dtype) {
    case BT__DT_INT64: out->kind = BT__ARG_I64, out->u.i64 = v; return BT_OK;
    case BT__DT_FP32: out->kind = BT__ARG_F32, out->u.f32 = (float)v; return BT_OK;
    case BT__DT_FP64: out->kind = BT__ARG_F64, out->u.f64 = (double)v; return BT_OK;
    default:
        out->kind = BT__ARG_I32, out->u.i32 = (int32_t)v;
        if (v > INT32_MAX || v < INT32_MIN) {
            bt__diag_set(diag, "scalar '%s' = %lld does not fit int32", a->name, (long long)v);
            return BT_INVALID_ARG;
        }
        return BT_OK;
    }
}

/* A dtype's name in capitals, as the defines spell it (FP16). */
static const char *dtype_upper(bt__dtype t, char *buf, size_t size)
{
    snprintf(buf, size, "%s", bt__dtype_name(t));
    for (char *u = buf; *u; u++)
        if (*u >= 'a' && *u <= 'z')
            *u = (char)(*u - 'a' + 'A');
    return buf;
}

int bt__build_defines(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                      char defs[][96])
{
    int m = 0;
    for (int i = 0; i < k->space.nparams; i++)
        snprintf(defs[m++], 96, "%s=%lld", k->space.params[i].name, (long long)c->v[i]);
    m += bt__problem_defines(k, p, g, defs + m);
    int64_t grid[3], block[3], dyn;
    bt_diag d;
    if (bt__geometry(k, c, p, g, grid, block, &dyn, &d) == BT_OK)
        snprintf(defs[m++], 96, "BT_THREADS=%lld", (long long)(block[0] * block[1] * block[2]));
    snprintf(defs[m++], 96, "BT_WARP_SIZE=%d", g->warp_size > 0 ? g->warp_size : 32);
    char up[32];
    snprintf(defs[m++], 96, "BT_DTYPE_%s=1", dtype_upper(p->dtype, up, sizeof up));
    snprintf(defs[m++], 96, "BT_ELEM_BYTES=%d", bt__dtype_size(p->dtype));
    /* a buffer whose dtype depends on the problem: BT_TYPE_<arg>_<DTYPE> says which it is */
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].dtype_if.e)
            snprintf(defs[m++], 96, "BT_TYPE_%s_%s=1", k->args[i].name,
                     dtype_upper(bt__arg_dtype(k, &k->args[i], p), up, sizeof up));
    return m;
}

static void compile_one(tctx *T, bt__entry *e, bool use_cache)
{
    char defs[BT__MAX_DEFINES][96];
    const char *dp[BT__MAX_DEFINES];
    int nd = bt__build_defines(T->k, &e->ev.cfg, e->problem ? e->problem : &T->r->problem, T->g,
                               defs);
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    char opts[256];
    snprintf(opts, sizeof opts, "%s%s", T->k->options ? T->k->options : "",
             T->k->needs_sm90a ? " --bt-sm90a" : "");
    double t0 = bt__now();
    const bt_device_info *di = bt_device_get_info(T->kn->dev);
    uint64_t key = bt__kcache_key(T->I->name, di->name, di->compiler_version, T->src, dp, nd, opts);
    key = bt__compile_key(T->k, key);
    if (use_cache && bt__kcache_get(key, &e->blob)) {
        e->compile_s = bt__now() - t0;
        e->cached = true;
        return;
    }
    char *log = NULL;
    bt_status st = bt__compile_kernel(T->I, T->D, T->k, T->src, dp, nd, opts, &e->blob, &log);
    e->compile_s = bt__now() - t0;
    if (st == BT_OK)
        bt__kcache_put(key, &e->blob);
    if (st != BT_OK) {
        e->status = BT__CS_COMPILE;
        e->log = log;
        char m[300];
        snprintf(m, sizeof m, "%s", bt_strerror(st));
        e->error = bt__strdup(m);
        return;
    }
    free(log);
}

static void *pool_worker(void *arg)
{
    pool *P = arg;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        size_t i = P->next < P->njobs ? P->next++ : SIZE_MAX;
        pthread_mutex_unlock(&P->mu);
        if (i == SIZE_MAX)
            return NULL;
        compile_one(P->T, P->jobs[i], true);
        pthread_mutex_lock(&P->mu);
        P->done++;
        pthread_mutex_unlock(&P->mu);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Progress line
 * ------------------------------------------------------------------------------------------- */
static void progress(tctx *T, const char *stage, size_t done, size_t total, double t0)
{
    if (!T->o.progress || !isatty(2))
        return;
    double el = bt__now() - t0;
    double eta = done ? el / (double)done * (double)(total - done) : 0;
    fprintf(stderr, "\r\033[K%s %zu/%zu  elapsed %.1f s  ETA %.0f s", stage, done, total, el, eta);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* ---------------------------------------------------------------------------------------------
 * The tune
 * ------------------------------------------------------------------------------------------- */
static bt_status bench_pre(void *u, bt_diag *d)
{
    tctx *T = u;
    return pre_run(T, T->cur, d);
}

static bt_status bench_launch(void *u, bt__btimer *timer, bt_diag *d)
{
    tctx *T = u;
    return launch_entry(T, T->cur_e, T->cur, timer, d);
}

static bt_status bench_graph(void *u, int reps, double *ms, bt_diag *d)
{
    tctx *T = u;
    const bt_kdesc *k = T->k;
    bt__karg args[BT__MAX_ARGS];
    bt__tmap_blob tm[BT__MAX_TMAPS];
    bt_status st = entry_args(T, T->cur_e, T->cur, args, tm, d);
    if (st)
        return st;
    int64_t grid[3], block[3], dyn;
    st = bt__geometry(k, &T->cur_e->ev.cfg, &T->cur->p, T->g, grid, block, &dyn, d);
    if (st)
        return st;
    uint32_t g32[3] = {(uint32_t)grid[0], (uint32_t)grid[1], (uint32_t)grid[2]};
    uint32_t b32[3] = {(uint32_t)block[0], (uint32_t)block[1], (uint32_t)block[2]};
    return T->I->launch_graph_timed(T->D, T->cur_e->fn, g32, b32, (size_t)dyn, args, k->nargs,
                                    reps, ms, d);
}

/* Still to be verified or measured here: pending, or measured earlier and kept in the store. */
static bool in_play(const bt__entry *e)
{
    return e->status == BT__CS_PENDING || (e->from_store && e->status == BT__CS_OK);
}

static void set_error(bt__entry *e, bt__cfg_status s, const char *msg)
{
    e->status = s;
    free(e->error);
    e->error = bt__strdup(msg);
}

static bt__cfg_status status_of(bt_status st)
{
    switch (st) {
    case BT_RESOURCES: return BT__CS_RESOURCES;
    case BT_TIMEOUT: return BT__CS_TIMEOUT;
    case BT_COMPILE: return BT__CS_COMPILE;
    default: return BT__CS_LAUNCH;
    }
}

static int cmp_entry_median(const void *a, const void *b)
{
    const bt__entry *const *x = a, *const *y = b;
    double mx = (*x)->st.median, my = (*y)->st.median;
    return mx < my ? -1 : mx > my;
}

void bt_result_free(bt_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->e[i].error);
        free(r->e[i].log);
        free(r->e[i].blob.data);
    }
    free(r->e);
    bt_plan_free(r->plan);
    free(r);
}

static void unload_all(tctx *T, bt_result *r, int keep)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].mod && (int)i != keep) {
            T->I->module_free(T->D, r->e[i].mod);
            r->e[i].mod = NULL;
            r->e[i].fn = NULL;
        }
}

/* After a fault poisoned the device (CUDA: illegal address, trap), the config that caused it is
 * already marked failed; everything else is rebuilt on a fresh context: the device reopened, the
 * kernel's dispatch table dropped, the data made again from the same seed, and every config of
 * the round in flight (r->e[from..]) still in play reloaded from its binary (earlier rounds are
 * unloaded already). Caller-provided buffers died with the context: that is an
 * error. */
static bt_status recover(tctx *T, bt_result *r, pdata *d, size_t from, bool caller, bt_diag *diag)
{
    bt_kernel *kn = T->kn;
    if (caller) {
        bt__diag_set(diag, "the device faulted while tuning on the caller's buffers, which are lost");
        return BT_LAUNCH;
    }
    r->recoveries++;
    if (r->recoveries > 16) {
        bt__diag_set(diag, "the device faulted more than 16 times; giving up");
        return BT_LAUNCH;
    }
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].mod) {
            T->I->module_free(T->D, r->e[i].mod);
            r->e[i].mod = NULL;
            r->e[i].fn = NULL;
        }
    bt_problem p = d->p;
    pdata_free(T, d);
    pthread_rwlock_wrlock(&kn->lock);
    for (size_t i = 0; i < kn->cap; i++)
        if (kn->tab[i].used && kn->tab[i].mod)
            T->I->module_free(T->D, kn->tab[i].mod);
    memset(kn->tab, 0, sizeof *kn->tab * kn->cap);
    kn->ntab = 0;
    bt_diag rd = {0};
    bt_status st = bt__device_reopen(kn->dev, &rd);
    kn->bdev = bt__device_bdev(kn->dev);
    T->D = kn->bdev;
    pthread_rwlock_unlock(&kn->lock);
    if (st) {
        /* CUDA keeps a sticky error for the life of the process: what is measured is in the
         * store, the faulting config with its error, so a new process resumes without it */
        bt__diag_set(diag, "the device faulted (the config is recorded as launch_failed%s) and "
                           "cannot be reopened in this process (%.300s): run the tune again to "
                           "resume%s",
                     T->store ? " in the store" : "", rd.msg,
                     T->store ? "" : " (no store was kept: nothing carries over)");
        kn->lost = true;
        return BT_LAUNCH;
    }
    st = pdata_init(T, d, &p, T->o.seed, NULL, 0, diag);
    if (st)
        return st;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status != BT__CS_PENDING && e->status != BT__CS_OK)
            continue;
        bt_diag dd = {0};
        st = T->I->module_load(T->D, e->blob.data, e->blob.size, &e->mod, &dd);
        if (!st)
            st = T->I->function_get(T->D, e->mod, T->k->entry, &e->fn, &e->res, &dd);
        if (st)
            set_error(e, status_of(st), dd.msg);
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The search: a strategy (src/search) proposes configs round by round; each round is compiled in
 * parallel, loaded, verified and measured here, and every outcome is observed
 * ------------------------------------------------------------------------------------------- */
typedef struct tsearch {
    tctx *T;
    const bt_problem *p;
    bt__idxmap cand; /* space index -> position in plan->cand (the valid configs) */
    size_t cap;      /* of r->e */
    pdata *main;
    bool caller;
    bt__bench_ops *ops;
    double t0; /* the search's start */
    size_t rounds;
    bt_diag *diag; /* why the search failed (device lost, out of memory) */
} tsearch;

static bool search_valid(void *user, uint64_t idx)
{
    tsearch *S = user;
    return bt__idxmap_get(&S->cand, idx, NULL);
}

static double search_prior(void *user, uint64_t idx)
{
    tsearch *S = user;
    double pos;
    if (!bt__idxmap_get(&S->cand, idx, &pos))
        return NAN;
    double us = S->T->r->plan->cand[(size_t)pos].pred_us;
    return us > 0 ? us : NAN;
}

/* What a strategy is told about a config that did not measure. */
static bt_status fail_of(bt__cfg_status s)
{
    switch (s) {
    case BT__CS_OK: return BT_OK;
    case BT__CS_INVALID: return BT_INVALID_CONFIG;
    case BT__CS_COMPILE: return BT_COMPILE;
    case BT__CS_RESOURCES: return BT_RESOURCES;
    case BT__CS_WRONG: return BT_WRONG_RESULT;
    case BT__CS_TIMEOUT: return BT_TIMEOUT;
    default: return BT_LAUNCH;
    }
}

/* Loads a compiled entry (a stale kernel-cache binary is compiled again) and sets its dynamic
 * shared memory. On failure the entry is marked (and stored when `rec`). */
static void load_entry(tctx *T, bt__entry *e, const bt_problem *p, bool rec)
{
    bt_diag d = {0};
    bt_status st = T->I->module_load(T->D, e->blob.data, e->blob.size, &e->mod, &d);
    if (st == BT_CORRUPT && e->cached) { /* a stale cache entry: compile again */
        free(e->blob.data);
        e->blob.data = NULL;
        e->cached = false;
        compile_one(T, e, false);
        st = e->status == BT__CS_PENDING || e->status == BT__CS_OK
                 ? T->I->module_load(T->D, e->blob.data, e->blob.size, &e->mod, &d)
                 : BT_COMPILE;
    }
    if (!st)
        st = T->I->function_get(T->D, e->mod, T->k->entry, &e->fn, &e->res, &d);
    if (!st && T->I->function_set_dyn_smem) {
        int64_t g3[3], b3[3], dyn = 0;
        if (bt__geometry(T->k, &e->ev.cfg, p, T->g, g3, b3, &dyn, &d) == BT_OK && dyn > 0)
            st = T->I->function_set_dyn_smem(T->D, e->fn, (size_t)dyn, &d);
    }
    if (st) {
        set_error(e, status_of(st), d.msg);
        if (rec)
            record(T, e);
    }
}

/* Compiles jobs[0..n) on the thread pool (at most `threads` threads). */
static void compile_parallel(tctx *T, bt__entry **jobs, size_t n, int threads, const char *stage)
{
    pool P = {.T = T, .jobs = jobs, .njobs = n};
    pthread_mutex_init(&P.mu, NULL);
    pthread_t th[128];
    int started = 0;
    double tc = bt__now();
    for (int i = 0; i < threads && i < 128 && (size_t)i < n; i++)
        if (pthread_create(&th[i], NULL, pool_worker, &P) == 0)
            started++;
    if (!started)
        pool_worker(&P);
    while (started) {
        pthread_mutex_lock(&P.mu);
        size_t done = P.done;
        pthread_mutex_unlock(&P.mu);
        progress(T, stage, done, n, tc);
        if (done == n)
            break;
        usleep(20000);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&P.mu);
}

/* A kernel with problem defines is compiled per problem: at boundary size bp its config is
 * verified with a binary built for bp, made in *tmp (drop_binary frees it); without defines the
 * round's own binary serves. */
static bt__entry *boundary_binary(tctx *T, bt__entry *e, const bt_problem *bp, bt__entry *tmp)
{
    if (!T->k->npdefines)
        return e;
    memset(tmp, 0, sizeof *tmp);
    tmp->ev = e->ev;
    tmp->ev.reasons = NULL;
    tmp->problem = bp;
    compile_one(T, tmp, true);
    if (tmp->status == BT__CS_PENDING)
        load_entry(T, tmp, bp, false);
    return tmp;
}

static void drop_binary(tctx *T, const bt__entry *e, bt__entry *be)
{
    if (be == e)
        return;
    if (be->mod)
        T->I->module_free(T->D, be->mod);
    free(be->blob.data);
    free(be->log);
    free(be->error);
}

/* After a device fault in a round: recover() and tell why it failed. */
static bt_status round_recover(tsearch *S, size_t from)
{
    return recover(S->T, S->T->r, S->main, from, S->caller, S->diag);
}

/* One round: entries for the proposed configs, compiled in parallel, loaded, verified at the
 * problem and at the boundary sizes, measured; the outcomes go to m[] (and to the store as they
 * happen). Modules are unloaded at the end of the round (the binaries stay for the finalists). */
static bt_status measure_round(void *user, const uint64_t *idx, size_t n, bt__search_meas *m)
{
    tsearch *S = user;
    tctx *T = S->T;
    bt_result *r = T->r;
    const bt_kdesc *k = T->k;
    S->rounds++;
    if (r->n + n > S->cap) {
        size_t ncap = S->cap ? S->cap * 2 : 64;
        while (ncap < r->n + n)
            ncap *= 2;
        bt__entry *ne = realloc(r->e, sizeof *ne * ncap);
        if (!ne)
            return BT_NOMEM;
        r->e = ne;
        S->cap = ncap;
    }
    size_t from = r->n;
    bt__entry **jobs = calloc(n, sizeof *jobs);
    if (!jobs)
        return BT_NOMEM;
    size_t njobs = 0;
    for (size_t i = 0; i < n; i++) {
        double pos = 0;
        bt__idxmap_get(&S->cand, idx[i], &pos);
        bt__entry *e = &r->e[r->n++];
        memset(e, 0, sizeof *e);
        e->ev = r->plan->cand[(size_t)pos];
        e->ev.reasons = NULL;
        e->model_rank = (size_t)pos + 1;
        if (T->store && T->o.mode != BT_MODE_RETUNE && bt__record_get(T->store, r, e))
            r->from_store++;
        if (in_play(e))
            jobs[njobs++] = e;
    }
    char stage[48];
    snprintf(stage, sizeof stage, "round %zu: compile", S->rounds);
    double tc = bt__now();
    compile_parallel(T, jobs, njobs, r->compile_threads, stage);
    free(jobs);
    r->t_compile += bt__now() - tc;
    double tv = bt__now();
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status == BT__CS_COMPILE && !e->from_store)
            record(T, e);
        else if (in_play(e))
            load_entry(T, e, S->p, true);
    }
    /* verify at the problem, then at the boundary sizes */
    bt_status st;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (!in_play(e))
            continue;
        bt_diag d = {0};
        watch_begin(T, e, T->o.timeout_s);
        st = verify_on(T, e, S->main, &e->ver, &d);
        watch_end(T);
        if (st) {
            set_error(e, status_of(st), d.msg);
            record(T, e);
            if (bt__device_lost(T->kn->dev) && (st = round_recover(S, from)))
                return st;
        } else if (!e->ver.ok) {
            set_error(e, BT__CS_WRONG, e->ver.msg);
            record(T, e);
        }
    }
    for (int b = 0; T->o.verify_boundary && b < k->nboundary; b++) {
        bool any = false;
        for (size_t i = from; i < r->n; i++)
            any |= in_play(&r->e[i]);
        if (!any)
            break;
        bt_problem bp = *S->p;
        for (int j = 0; j < k->nproblem; j++)
            if (k->boundary[b][j] >= 0)
                bp.values[j] = k->boundary[b][j];
        pdata bd;
        bt_diag d = {0};
        if (pdata_init(T, &bd, &bp, T->o.seed + 1 + (uint64_t)b, NULL, 0, &d) != BT_OK) {
            bt__diag_set(S->diag, "boundary problem %d: %s", b, d.msg);
            continue;
        }
        /* a config whose constraints exclude this size (a TMA kernel at a row that is not 16-byte
         * aligned, a vector path at an odd size) would never be dispatched for it: not run */
        bt__model bm;
        bool have_model = bt__model_init(&bm, k, &bp, T->g, r->plan->model.rules, NULL) == BT_OK;
        char where[128] = "";
        size_t o = 0;
        for (int j = 0; j < k->nproblem && o < sizeof where; j++) {
            int w = snprintf(where + o, sizeof where - o, "%s%s=%lld", j ? "," : "",
                             k->problem_names[j], (long long)bp.values[j]);
            if (w > 0)
                o += (size_t)w;
        }
        for (size_t i = from; i < r->n; i++) {
            bt__entry *e = &r->e[i];
            if (!in_play(e))
                continue;
            if (have_model) {
                bt__cfg_eval ev = {0};
                bool applies = bt__model_eval(&bm, &e->ev.cfg, &ev) == BT_OK && ev.valid;
                bt__cfg_eval_clear(&ev);
                if (!applies) {
                    e->boundary_na++;
                    continue;
                }
            }
            bt__verify v;
            bt_diag d2 = {0};
            bt__entry tmp, *be = boundary_binary(T, e, &bp, &tmp);
            watch_begin(T, e, T->o.timeout_s);
            if (be->status == BT__CS_PENDING || be == e)
                st = verify_on(T, be, &bd, &v, &d2);
            else /* its binary for this size did not build or load */
                bt__diag_set(&d2, "built for this size: %.240s",
                             (st = fail_of(be->status)) == BT_COMPILE && be->log ? be->log
                             : be->error                                         ? be->error
                                                                                 : "?");
            watch_end(T);
            drop_binary(T, e, be);
            char msg[400];
            if (st) {
                snprintf(msg, sizeof msg, "at boundary size %s: %.250s", where, d2.msg);
                set_error(e, status_of(st), msg);
                record(T, e);
                if (bt__device_lost(T->kn->dev)) {
                    pdata_free(T, &bd);
                    bt_diag d3 = {0};
                    if (round_recover(S, from) ||
                        pdata_init(T, &bd, &bp, T->o.seed + 1 + (uint64_t)b, NULL, 0, &d3)) {
                        if (have_model)
                            bt__model_fini(&bm);
                        return BT_LAUNCH;
                    }
                }
            } else if (!v.ok) {
                snprintf(msg, sizeof msg, "at boundary size %s: %s", where, v.msg);
                set_error(e, BT__CS_WRONG, msg);
                record(T, e);
            } else
                e->boundary_checked++;
        }
        if (have_model)
            bt__model_fini(&bm);
        pdata_free(T, &bd);
    }
    r->t_verify += bt__now() - tv;
    /* measure (a measurement from the store is not repeated) */
    double tm = bt__now();
    T->cur = S->main;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status != BT__CS_PENDING)
            continue;
        T->cur_e = e;
        bt_diag d = {0};
        /* a bench lasts about its budgets, plus one timeout per run at worst */
        watch_begin(T, e, T->o.timeout_s * 3 + (T->o.warmup_ms + T->o.rep_ms) * 1e-3 * 4);
        st = bt__bench(S->ops, T->o.warmup_ms, T->o.rep_ms, T->o.timeout_s * 1e3, &e->st, NULL,
                       NULL, &d);
        watch_end(T);
        if (st) {
            set_error(e, status_of(st), d.msg);
            record(T, e);
            if (bt__device_lost(T->kn->dev)) {
                if ((st = round_recover(S, from)))
                    return st;
                S->ops->bdev = T->D;
                T->cur = S->main;
            }
            continue;
        }
        e->status = BT__CS_OK;
        record(T, e);
    }
    r->t_measure += bt__now() - tm;
    size_t nok = 0;
    for (size_t i = from; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        m[i - from].fail = fail_of(e->status);
        m[i - from].ms = e->status == BT__CS_OK ? e->st.median : INFINITY;
        nok += e->status == BT__CS_OK;
    }
    unload_all(T, r, -1);
    if (T->o.progress && isatty(2)) {
        double best = INFINITY;
        for (size_t i = 0; i < r->n; i++)
            if (r->e[i].status == BT__CS_OK && r->e[i].st.median < best)
                best = r->e[i].st.median;
        char lim[48] = "";
        if (r->budget)
            snprintf(lim, sizeof lim, " of %zu", r->budget);
        fprintf(stderr, "\r\033[Kround %zu (%s): %zu%s measured, %zu ok this round, best %.4g ms, "
                        "elapsed %.1f s\n",
                S->rounds, r->strategy, r->n, lim, nok, best, bt__now() - S->t0);
        fflush(stderr);
    }
    return BT_OK;
}

/* Compiles, loads and runs the reference ("config" kind) baseline, whose outputs become the
 * reference; it is not a measured entry (the strategy may still propose it). */
static bt_status run_baseline(tctx *T, pdata *d, const bt_problem *p, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__entry b;
    memset(&b, 0, sizeof b);
    bt__model_eval(&T->r->plan->model, &k->ref_config, &b.ev);
    bt__cfg_eval_clear(&b.ev);
    compile_one(T, &b, true);
    if (b.status == BT__CS_PENDING)
        load_entry(T, &b, p, false);
    bt__verify v;
    memset(&v, 0, sizeof v);
    bt_diag dd = {0};
    bt_status st = BT_OK;
    if (b.status == BT__CS_PENDING && verify_on(T, &b, d, &v, &dd) == BT_OK && v.nonfinite == 0) {
        for (int i = 0; i < k->nargs; i++)
            if (k->args[i].output)
                for (size_t j = 0; j < d->host[i].count; j++)
                    d->ref[i][j] = bt__hostbuf_get(&d->host[i], j);
        d->have_ref = true;
    } else {
        bt__diag_set(diag, "the reference (baseline) config failed: %s",
                     b.error ? b.error : dd.msg[0] ? dd.msg : v.msg[0] ? v.msg
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

/* The strategy by name, or the default for nvalid valid configs. NULL (diag says the names) for
 * an unknown name. */
static const bt__strategy *pick_strategy(const bt_tune_options *o, uint64_t nvalid, bt_diag *diag)
{
    if (!o->strategy || !o->strategy[0])
        return bt__strategy_default(nvalid, o->exhaustive_max > 0 ? (uint64_t)o->exhaustive_max : 0);
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

/* The measurement budget of a non-exhaustive strategy when neither a budget nor a time limit is
 * given. */
#define BT__TUNE_DEFAULT_BUDGET 64

/* Loads ok[*loaded..want) again for the final measurements; one that no longer loads drops out
 * of ok (and *nok). */
static void load_finalists(tctx *T, bt__entry **ok, size_t *nok, size_t *loaded, size_t want,
                           const bt_problem *p)
{
    while (ok && *loaded < *nok && *loaded < want) {
        load_entry(T, ok[*loaded], p, true);
        if (ok[*loaded]->status == BT__CS_OK) {
            (*loaded)++;
            continue;
        }
        memmove(&ok[*loaded], &ok[*loaded + 1], sizeof *ok * (*nok - *loaded - 1));
        (*nok)--;
    }
}

/* How many of the best first medians are re-measured interleaved (top_k, 3 by default, at most
 * 16). */
static int finalists_wanted(const bt_tune_options *o)
{
    int K = o->top_k > 0 ? o->top_k : 3;
    return K > 16 ? 16 : K;
}

/* What re-measuring one config in the finals costs, in seconds: its warm-up + rep, with room for
 * the flushes and launches around them. */
static double remeasure_cost_s(const bt_tune_options *o)
{
    return (o->warmup_ms + o->rep_ms) * 1.5e-3;
}

/* The search's share of the whole tune's time limit (0: none): what is left of it after what
 * came before the search (data, reference, baseline: `spent` seconds) and the time kept for the
 * final selection, which re-measures the finalists and up to two challengers (and reloads them).
 * At least a sliver, so that the first round always runs. */
static double search_time_limit(const bt_tune_options *o, double spent)
{
    if (o->time_limit_s <= 0)
        return 0;
    double finals = (finalists_wanted(o) + 2) * remeasure_cost_s(o) + 0.1;
    return fmax(o->time_limit_s - spent - finals, 1e-6);
}

/* Re-measures f[0..n) interleaved, A B C A B C ... over R rounds of 1/R of the budgets each, and
 * replaces each one's statistics with the pooled samples. */
static void interleave(tctx *T, bt__bench_ops *ops, bt__entry **f, int n, int R)
{
    double *pool_t[16] = {0};
    int pool_n[16] = {0};
    if (n > 16)
        n = 16;
    for (int round = 0; round < R; round++)
        for (int i = 0; i < n; i++) {
            T->cur_e = f[i];
            double *smp = NULL;
            int ns = 0;
            bt__stats tmp;
            bt_diag d = {0};
            if (bt__bench(ops, T->o.warmup_ms / R, T->o.rep_ms / R, T->o.timeout_s * 1e3, &tmp,
                          &smp, &ns, &d) == BT_OK && smp) {
                double *grown = realloc(pool_t[i], sizeof(double) * (size_t)(pool_n[i] + ns));
                if (grown) {
                    memcpy(grown + pool_n[i], smp, sizeof(double) * (size_t)ns);
                    pool_t[i] = grown;
                    pool_n[i] += ns;
                }
            }
            free(smp);
        }
    for (int i = 0; i < n; i++) {
        if (pool_n[i] >= 5)
            bt__stats_compute(pool_t[i], pool_n[i], &f[i]->st);
        free(pool_t[i]);
    }
}

bt_status bt__tune(bt_kernel *kn, const bt_problem *p, const bt_tune_options *opts,
                   bt_buffer *const *caller, int ncaller, bt_result **out, bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    const bt_kdesc *k = kn->k;
    tctx T = {0};
    T.kn = kn;
    T.k = k;
    T.I = kn->iface;
    T.D = kn->bdev;
    const bt_device_info *info = bt_device_get_info(kn->dev);
    T.g = &info->props;
    if (opts)
        T.o = *opts;
    else
        bt_tune_options_default(&T.o);
    T.src = kn->src;
    double t0 = bt__now();

    bt_result *r = calloc(1, sizeof *r);
    if (!r)
        return BT_NOMEM;
    T.r = r;
    r->k = k;
    r->problem = *p;
    r->dev = *info;
    r->opts = T.o;
    r->opts.strategy = NULL; /* borrowed: the result keeps the name in r->strategy */
    r->winner = r->runner_up = -1;
    snprintf(r->source_hash, sizeof r->source_hash, "%016llx", (unsigned long long)kn->src_hash);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->timestamp, sizeof r->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    snprintf(r->reference, sizeof r->reference, "%s",
             k->ref == BT__REF_HOST ? "host (fp64)" : k->ref == BT__REF_CONFIG ? "baseline config"
             : k->ref == BT__REF_KERNEL ? "reference kernel"
             : k->ref == BT__REF_ANSWERS ? "expected outputs (answer files)"
                                         : "none (outputs checked for being written)");

    /* 1. plan, and the search over its valid configs */
    bt_plan_options po = {.rules = T.o.rules};
    bt_status st = bt_plan_create(k, p, T.g, &po, &r->plan, diag);
    if (st) {
        bt_result_free(r);
        return st;
    }
    const bt__strategy *strat = pick_strategy(&T.o, r->plan->ncand, diag);
    if (!strat) {
        bt_result_free(r);
        return BT_INVALID_ARG;
    }
    snprintf(r->strategy, sizeof r->strategy, "%s", strat->name);
    tsearch S = {.T = &T, .p = p, .caller = caller != NULL, .diag = diag};
    bt__idxmap_init(&S.cand);
    for (size_t i = 0; i < r->plan->ncand && st == BT_OK; i++) {
        uint64_t idx = r->plan->cand[i].index;
        if (k->configs && !bt__space_index_of(&k->space, &r->plan->cand[i].cfg, &idx))
            continue;
        st = bt__idxmap_put(&S.cand, idx, (double)i);
    }
    if (st) {
        bt__idxmap_free(&S.cand);
        bt_result_free(r);
        return st;
    }
    bool exhaustive = !strcmp(strat->name, "exhaustive");
    r->budget = T.o.budget > 0                                   ? (size_t)T.o.budget
                : exhaustive || T.o.time_limit_s > 0             ? 0
                                                                 : BT__TUNE_DEFAULT_BUDGET;
    int nthreads = T.o.threads > 0 ? T.o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nthreads < 1)
        nthreads = 1;
    if (nthreads > 128)
        nthreads = 128;
    r->compile_threads = nthreads;

    /* measurements the store already holds for this source, device and key are not repeated (a
     * killed tune resumes; an added config costs only itself) */
    bt__store *store = bt__kernel_store(kn, &T.o);
    T.store = store;

    /* 2. data and reference; from here on a watchdog guards every run on the device */
    pthread_mutex_init(&T.wmu, NULL);
    pthread_t wd;
    bool wd_on = pthread_create(&wd, NULL, watchdog, &T) == 0;
#define WD_STOP()                                                                                  \
    do {                                                                                           \
        if (wd_on) {                                                                               \
            pthread_mutex_lock(&T.wmu);                                                            \
            T.stop = true;                                                                         \
            pthread_mutex_unlock(&T.wmu);                                                          \
            pthread_join(wd, NULL);                                                                \
            wd_on = false;                                                                         \
        }                                                                                          \
    } while (0)

    pdata main_data;
    st = pdata_init(&T, &main_data, p, T.o.seed, caller, ncaller, diag);
    if (st) {
        bt__idxmap_free(&S.cand);
        bt_result_free(r);
        WD_STOP();
        return st;
    }
    /* the baseline config is compiled and run first, whatever the strategy */
    if (k->ref == BT__REF_CONFIG && (st = run_baseline(&T, &main_data, p, diag)) != BT_OK) {
        pdata_free(&T, &main_data);
        bt__idxmap_free(&S.cand);
        bt_result_free(r);
        WD_STOP();
        return st;
    }
    bt__bench_ops ops = {bench_pre, bench_launch, &T, T.I, T.D, true, NULL};
    if (T.o.graph) {
        bool resets = false;
        for (int i = 0; i < k->nargs; i++)
            resets |= k->args[i].reset_to_zero || k->args[i].restore_value;
        if (!T.I->launch_graph_timed)
            snprintf(r->graph_note, sizeof r->graph_note,
                     "graph mode asked for, but the %s backend cannot capture graphs: measured "
                     "launch by launch", T.I->name);
        else if (resets)
            snprintf(r->graph_note, sizeof r->graph_note,
                     "graph mode asked for, but this kernel needs resets before every run "
                     "(reset_to_zero / restore_value): measured launch by launch");
        else {
            ops.graph = bench_graph;
            snprintf(r->graph_note, sizeof r->graph_note,
                     "graph mode: each sample is a replay of back-to-back launches captured in a "
                     "graph, per launch, with no cache flush between them");
        }
    }

    /* 3. the search: rounds of compile (in parallel) → load → verify → measure */
    S.main = &main_data;
    S.ops = &ops;
    S.t0 = bt__now();
    bt__search_ctx ctx = {.space = &k->space, .is_valid = search_valid, .prior = search_prior,
                          .user = &S, .seed = T.o.seed, .max_evals = r->budget};
    r->target_ms = T.o.target_ms < 0 ? r->plan->model.roof.floor_us * 1e-3 : T.o.target_ms;
    bt__search_budget sb = {.max_evals = r->budget,
                            .time_limit_s = search_time_limit(&T.o, S.t0 - t0),
                            .predict = true,
                            .target_ms = r->target_ms > 0 ? r->target_ms : 0,
                            .within_pct = T.o.within_pct > 0 ? T.o.within_pct : 0};
    bt__search_result sr;
    bt_diag sd = {0};
    S.diag = &sd;
    st = bt__search_run_batch(strat, &ctx, &sb, (size_t)nthreads, measure_round, &S, &sr, &sd);
    r->t_search = bt__now() - S.t0;
    r->search_rounds = sr.rounds;
    snprintf(r->stop, sizeof r->stop, "%s", bt__search_stop_name(sr.stop));
    bt__search_result_clear(&sr);
    bt__idxmap_free(&S.cand);
    if (st) {
        *diag = sd;
        if (!diag->msg[0])
            bt__diag_set(diag, "the search failed: %s", bt_strerror(st));
        pdata_free(&T, &main_data);
        unload_all(&T, r, -1);
        bt_result_free(r);
        WD_STOP();
        return st;
    }
    if (sd.msg[0]) /* a boundary problem that could not be made: said, not fatal */
        *diag = sd;
    r->not_measured = r->plan->ncand > r->n ? r->plan->ncand - r->n : 0;
    size_t n = r->n;

    /* 4. select: finalists re-measured interleaved A B C A B C ... */
    double tm = bt__now();
    T.cur = &main_data;
    bt__entry **ok = calloc(n + 1, sizeof *ok);
    size_t nok = 0;
    for (size_t i = 0; i < n && ok; i++)
        if (r->e[i].status == BT__CS_OK)
            ok[nok++] = &r->e[i];
    if (ok && nok)
        qsort(ok, nok, sizeof *ok, cmp_entry_median);
    int K = finalists_wanted(&T.o);
    /* the finalists are loaded again (a binary that no longer loads drops out) */
    size_t loaded = 0;
    load_finalists(&T, ok, &nok, &loaded, (size_t)K, p);
    if (ok && nok) {
        if ((size_t)K > nok)
            K = (int)nok;
        int R = T.o.rounds > 0 ? T.o.rounds : 5;
        r->finalists = K;
        r->rounds = K > 1 ? R : 0;
        if (K > 1) {
            interleave(&T, &ops, ok, K, R);
            qsort(ok, (size_t)K, sizeof *ok, cmp_entry_median);
            /* A first measurement can be lucky (a kernel whose times come in two modes): while
             * the best config not re-measured has a first median below the winner's interleaved
             * one, it meets the winner in an interleaved rematch (at most 8 such challengers),
             * so that the winner is not slower than a config the table shows; with a time
             * limit, only while the tune has time left for it. */
            for (int extra = 0; extra < 8; extra++) {
                /* a rematch re-measures two configs: not past the time limit */
                if (T.o.time_limit_s > 0 &&
                    bt__now() - t0 + 2 * remeasure_cost_s(&T.o) > T.o.time_limit_s)
                    break;
                load_finalists(&T, ok, &nok, &loaded, (size_t)K + 1, p);
                if ((size_t)K >= nok || ok[K]->st.median >= ok[0]->st.median)
                    break;
                bt__entry *pair[2] = {ok[0], ok[K]};
                interleave(&T, &ops, pair, 2, R);
                K++;
                r->challengers++;
                qsort(ok, (size_t)K, sizeof *ok, cmp_entry_median);
            }
            r->finalists = K;
        }
        r->winner = (int)(ok[0] - r->e);
        if (nok > 1) {
            r->runner_up = (int)(ok[1] - r->e);
            double a = ok[0]->st.median, b = ok[1]->st.median;
            r->margin = (b - a) / a;
            double na = 2 * 1.4826 * ok[0]->st.mad / a, nb = 2 * 1.4826 * ok[1]->st.mad / b;
            r->noise = fmax(fmax(na, nb), 0.005);
            r->tie = r->margin < r->noise;
        }
    }
    if (ok && store) {
        for (int f = 0; f < r->finalists; f++)
            if (ok[f] != &r->e[r->winner])
                record(&T, ok[f]); /* the interleaved statistics replace the first ones */
        bt_diag d = {0};
        if (r->winner >= 0 && bt__record_put(store, r, &r->e[r->winner], true, &d) != BT_OK)
            fprintf(stderr, "blocktune: the winner could not be stored: %s\n", d.msg);
    }
    free(ok);
    r->t_measure += bt__now() - tm;
    for (size_t i = 0; i < n; i++) {
        bt__entry *e = &r->e[i];
        if (e->status == BT__CS_OK && e->st.median > 0) {
            const bt__roofline *rf = &r->plan->model.roof;
            e->gbps = rf->bytes / (e->st.median * 1e-3) / 1e9;
            e->tflops = rf->flops / (e->st.median * 1e-3) / 1e12;
            e->eff = rf->floor_us > 0 ? rf->floor_us / (e->st.median * 1e3) : 0;
        }
        bt__geometry(k, &e->ev.cfg, p, T.g, e->grid, e->block, &e->dyn_smem, NULL);
    }
    /* the caller's buffers go back to what the caller gave: the launch that follows must see
     * its own inputs, not what the last measured run left in them */
    for (int i = 0; caller && i < k->nargs; i++)
        if (main_data.saved[i])
            T.I->buf_copy(T.D, main_data.dev[i], main_data.saved[i],
                          bt__hostbuf_bytes(&main_data.host[i]), NULL);
    if (caller)
        T.I->sync(T.D, NULL);
    pdata_free(&T, &main_data);

    /* 5. the winner enters the dispatch cache; everything else is unloaded */
    if (r->winner >= 0) {
        bt__entry *w = &r->e[r->winner];
        if (w->mod && bt__dispatch_put(kn, p, &w->ev.cfg, w->mod, w->fn) == BT_OK) {
            w->mod = NULL;
            w->fn = NULL;
        }
    }
    unload_all(&T, r, -1);
    r->t_total = bt__now() - t0;
    *out = r;
    WD_STOP();
    return BT_OK;
}

int bt_result_winner(const bt_result *r, bt_config *cfg, double *median_ms)
{
    if (!r || r->winner < 0)
        return 0;
    if (cfg)
        *cfg = r->e[r->winner].ev.cfg;
    if (median_ms)
        *median_ms = r->e[r->winner].st.median;
    return 1;
}

bt_status bt__dispatch_config(bt_kernel *kn, const bt_problem *p, const bt_config *c, bt_diag *diag)
{
    tctx T = {0};
    bt_result r;
    memset(&r, 0, sizeof r);
    r.k = kn->k;
    r.problem = *p;
    T.kn = kn;
    T.k = kn->k;
    T.I = kn->iface;
    T.D = kn->bdev;
    T.g = &bt_device_get_info(kn->dev)->props;
    T.r = &r;
    T.src = kn->src;
    bt__entry e;
    memset(&e, 0, sizeof e);
    e.ev.cfg = *c;
    compile_one(&T, &e, true);
    if (e.status == BT__CS_COMPILE) {
        bt__diag_set(diag, "the looked-up config does not compile: %.900s", e.log ? e.log : "");
        free(e.log);
        free(e.error);
        return BT_COMPILE;
    }
    bt_status st = T.I->module_load(T.D, e.blob.data, e.blob.size, &e.mod, diag);
    free(e.blob.data);
    if (!st)
        st = T.I->function_get(T.D, e.mod, kn->k->entry, &e.fn, &e.res, diag);
    int64_t g3[3], b3[3], dyn = 0;
    if (!st && T.I->function_set_dyn_smem &&
        bt__geometry(kn->k, c, p, T.g, g3, b3, &dyn, NULL) == BT_OK && dyn > 0)
        st = T.I->function_set_dyn_smem(T.D, e.fn, (size_t)dyn, diag);
    if (!st)
        st = bt__dispatch_put(kn, p, c, e.mod, e.fn);
    if (st && e.mod)
        T.I->module_free(T.D, e.mod);
    free(e.error);
    return st;
}
