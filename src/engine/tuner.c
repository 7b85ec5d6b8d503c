/*
 * tuner.c — the tuning pipeline: plan (prune with the model, with reasons) → compile every
 * candidate in parallel on a thread pool → verify each against the reference (poisoned outputs,
 * random inputs, boundary sizes) → measure (do_bench) → re-measure the finalists interleaved →
 * select the winner with its margin and noise band. Each config ends with a typed status.
 */
#include "engine/engine.h"

#include "core/util.h"
#include "engine/kcache.h"
#include "engine/record.h"

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

static bt__dtype arg_dtype(const bt__argspec *a, const bt_problem *p)
{
    return a->dtype_is_problem ? p->dtype : a->dtype;
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
        st = bt__hostbuf_alloc(&d->host[i], arg_dtype(a, p), count);
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
                bt__hostbuf_init(&d->host[i], a->init, a->init_a, a->init_b, &rng);
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
    if (!tmaps)
        return BT_OK;
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

int bt__build_defines(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                      char defs[][96])
{
    int m = 0;
    for (int i = 0; i < k->space.nparams; i++)
        snprintf(defs[m++], 96, "%s=%lld", k->space.params[i].name, (long long)c->v[i]);
    int64_t grid[3], block[3], dyn;
    bt_diag d;
    if (bt__geometry(k, c, p, g, grid, block, &dyn, &d) == BT_OK)
        snprintf(defs[m++], 96, "BT_THREADS=%lld", (long long)(block[0] * block[1] * block[2]));
    snprintf(defs[m++], 96, "BT_WARP_SIZE=%d", g->warp_size > 0 ? g->warp_size : 32);
    char up[32];
    snprintf(up, sizeof up, "%s", bt__dtype_name(p->dtype));
    for (char *u = up; *u; u++)
        if (*u >= 'a' && *u <= 'z')
            *u = (char)(*u - 'a' + 'A');
    snprintf(defs[m++], 96, "BT_DTYPE_%s=1", up);
    snprintf(defs[m++], 96, "BT_ELEM_BYTES=%d", bt__dtype_size(p->dtype));
    return m;
}

static void compile_one(tctx *T, bt__entry *e, bool use_cache)
{
    char defs[BT_MAX_PARAMS + 8][96];
    const char *dp[BT_MAX_PARAMS + 8];
    int nd = bt__build_defines(T->k, &e->ev.cfg, &T->r->problem, T->g, defs);
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    char opts[256];
    snprintf(opts, sizeof opts, "%s%s", T->k->options ? T->k->options : "",
             T->k->needs_sm90a ? " --bt-sm90a" : "");
    double t0 = bt__now();
    const bt_device_info *di = bt_device_get_info(T->kn->dev);
    uint64_t key = bt__kcache_key(T->I->name, di->name, di->compiler_version, T->src, dp, nd, opts);
    if (use_cache && bt__kcache_get(key, &e->blob)) {
        e->compile_s = bt__now() - t0;
        e->cached = true;
        return;
    }
    char *log = NULL;
    bt_status st = T->I->compile(T->D, T->src, dp, nd, opts, &e->blob, &log);
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
 * kernel's dispatch table dropped, the data made again from the same seed, and every config still
 * in play reloaded from its binary. Caller-provided buffers died with the context: that is an
 * error. */
static bt_status recover(tctx *T, bt_result *r, pdata *d, bool caller, bt_diag *diag)
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
    for (size_t i = 0; i < r->n; i++) {
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
    r->winner = r->runner_up = -1;
    snprintf(r->source_hash, sizeof r->source_hash, "%016llx", (unsigned long long)kn->src_hash);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->timestamp, sizeof r->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    snprintf(r->reference, sizeof r->reference, "%s",
             k->ref == BT__REF_HOST ? "host (fp64)" : k->ref == BT__REF_CONFIG ? "baseline config"
             : k->ref == BT__REF_KERNEL ? "reference kernel" : "none (outputs checked for being written)");

    /* 1. plan */
    bt_plan_options po = {.rules = T.o.rules};
    bt_status st = bt_plan_create(k, p, T.g, &po, &r->plan, diag);
    if (st) {
        bt_result_free(r);
        return st;
    }
    size_t budget = T.o.max_configs > 0 ? (size_t)T.o.max_configs
                                        : (r->plan->ncand <= 128 ? r->plan->ncand : 64);
    bool need_baseline = k->ref == BT__REF_CONFIG;
    size_t n = r->plan->ncand < budget ? r->plan->ncand : budget;
    r->not_measured = r->plan->ncand - n;
    r->e = calloc(n + 1, sizeof *r->e);
    if (!r->e) {
        bt_result_free(r);
        return BT_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        r->e[i].ev = r->plan->cand[i];
        r->e[i].ev.reasons = NULL;
        r->e[i].model_rank = i + 1;
    }
    r->n = n;
    int baseline = -1;
    if (need_baseline) { /* the baseline config must be compiled too, measured or not */
        for (size_t i = 0; i < n; i++)
            if (!memcmp(r->e[i].ev.cfg.v, k->ref_config.v, sizeof(int64_t) * (size_t)k->space.nparams))
                baseline = (int)i;
        if (baseline < 0) {
            bt__entry *b = &r->e[r->n];
            bt__model_eval(&r->plan->model, &k->ref_config, &b->ev);
            bt__cfg_eval_clear(&b->ev);
            baseline = (int)r->n++;
        }
    }

    /* measurements the store already holds for this source, device and key are not repeated (a
     * killed tune resumes; an added config costs only itself) */
    bt__store *store = bt__kernel_store(kn, &T.o);
    T.store = store;
    if (store && T.o.mode != BT_MODE_RETUNE)
        for (size_t i = 0; i < n; i++)
            if (bt__record_get(store, r, &r->e[i]))
                r->from_store++;

    /* 2. compile in parallel */
    double tc = bt__now();
    int nthreads = T.o.threads > 0 ? T.o.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nthreads < 1)
        nthreads = 1;
    if ((size_t)nthreads > r->n)
        nthreads = (int)(r->n ? r->n : 1);
    r->compile_threads = nthreads;
    pool P = {.T = &T, .njobs = r->n};
    P.jobs = calloc(r->n + 1, sizeof *P.jobs);
    if (!P.jobs) {
        bt_result_free(r);
        return BT_NOMEM;
    }
    P.njobs = 0;
    for (size_t i = 0; i < r->n; i++)
        if (in_play(&r->e[i]) || (int)i == baseline)
            P.jobs[P.njobs++] = &r->e[i];
    pthread_mutex_init(&P.mu, NULL);
    pthread_t th[128];
    int started = 0;
    for (int i = 0; i < nthreads && i < 128; i++)
        if (pthread_create(&th[i], NULL, pool_worker, &P) == 0)
            started++;
    if (!started)
        pool_worker(&P);
    while (started) {
        pthread_mutex_lock(&P.mu);
        size_t done = P.done;
        pthread_mutex_unlock(&P.mu);
        progress(&T, "compile", done, P.njobs, tc);
        if (done == P.njobs)
            break;
        usleep(50000);
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&P.mu);
    free(P.jobs);
    r->t_compile = bt__now() - tc;
    for (size_t i = 0; i < n; i++)
        if (r->e[i].status == BT__CS_COMPILE && !r->e[i].from_store)
            record(&T, &r->e[i]);

    /* 3. data and reference; from here on a watchdog guards every run on the device */
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

    double tv = bt__now();
    pdata main_data;
    st = pdata_init(&T, &main_data, p, T.o.seed, caller, ncaller, diag);
    if (st) {
        bt_result_free(r);
        WD_STOP();
        return st;
    }
    /* load every compiled module */
    for (size_t i = 0; i < r->n; i++) {
        bt__entry *e = &r->e[i];
        if (!in_play(e) && (int)i != baseline)
            continue;
        bt_diag d = {0};
        st = T.I->module_load(T.D, e->blob.data, e->blob.size, &e->mod, &d);
        if (st == BT_CORRUPT && e->cached) { /* a stale cache entry: compile again */
            free(e->blob.data);
            e->blob.data = NULL;
            e->cached = false;
            compile_one(&T, e, false);
            st = e->status == BT__CS_PENDING
                     ? T.I->module_load(T.D, e->blob.data, e->blob.size, &e->mod, &d)
                     : BT_COMPILE;
        }
        if (!st)
            st = T.I->function_get(T.D, e->mod, k->entry, &e->fn, &e->res, &d);
        if (!st && T.I->function_set_dyn_smem) {
            int64_t g3[3], b3[3], dyn = 0;
            if (bt__geometry(k, &e->ev.cfg, p, T.g, g3, b3, &dyn, &d) == BT_OK && dyn > 0)
                st = T.I->function_set_dyn_smem(T.D, e->fn, (size_t)dyn, &d);
        }
        if (st) {
            set_error(e, status_of(st), d.msg);
            if (i < n)
                record(&T, e);
        }
    }
    if (baseline >= 0) { /* the baseline's outputs become the reference */
        bt__entry *b = &r->e[baseline];
        bt__verify v;
        memset(&v, 0, sizeof v);
        bt_diag d = {0};
        if (in_play(b) && verify_on(&T, b, &main_data, &v, &d) == BT_OK && v.nonfinite == 0) {
            for (int i = 0; i < k->nargs; i++)
                if (k->args[i].output)
                    for (size_t j = 0; j < main_data.host[i].count; j++)
                        main_data.ref[i][j] = bt__hostbuf_get(&main_data.host[i], j);
            main_data.have_ref = true;
        } else {
            bt__diag_set(diag, "the reference (baseline) config failed: %s",
                         b->error ? b->error : d.msg[0] ? d.msg : v.msg[0] ? v.msg
                                                                           : bt__cfg_status_name(b->status));
            pdata_free(&T, &main_data);
            unload_all(&T, r, -1);
            bt_result_free(r);
            WD_STOP();
            return BT_WRONG_RESULT;
        }
        if (baseline >= (int)n) /* not a measured config: drop it from the table */
            r->n = n;
    }
    /* verify every config at the problem, then at the boundary sizes */
    size_t verified = 0;
    for (size_t i = 0; i < n; i++) {
        bt__entry *e = &r->e[i];
        progress(&T, "verify", i, n, tv);
        if (!in_play(e))
            continue;
        bt_diag d = {0};
        watch_begin(&T, e, T.o.timeout_s);
        st = verify_on(&T, e, &main_data, &e->ver, &d);
        watch_end(&T);
        if (st) {
            set_error(e, status_of(st), d.msg);
            record(&T, e);
            if (bt__device_lost(kn->dev) && (st = recover(&T, r, &main_data, caller != NULL, diag))) {
                unload_all(&T, r, -1);
                bt_result_free(r);
                WD_STOP();
                return st;
            }
        } else if (!e->ver.ok) {
            set_error(e, BT__CS_WRONG, e->ver.msg);
            record(&T, e);
        } else
            verified++;
    }
    progress(&T, "verify", n, n, tv);
    if (T.o.verify_boundary && k->nboundary) {
        for (int b = 0; b < k->nboundary; b++) {
            bt_problem bp = *p;
            for (int j = 0; j < k->nproblem; j++)
                if (k->boundary[b][j] >= 0)
                    bp.values[j] = k->boundary[b][j];
            pdata bd;
            bt_diag d = {0};
            if (pdata_init(&T, &bd, &bp, T.o.seed + 1 + (uint64_t)b, NULL, 0, &d) != BT_OK) {
                bt__diag_set(diag, "boundary problem %d: %s", b, d.msg);
                continue;
            }
            for (size_t i = 0; i < n; i++) {
                bt__entry *e = &r->e[i];
                if (!in_play(e))
                    continue;
                bt__verify v;
                bt_diag d2 = {0};
                st = verify_on(&T, e, &bd, &v, &d2);
                char where[128] = "";
                size_t o = 0;
                for (int j = 0; j < k->nproblem && o < sizeof where; j++) {
                    int w = snprintf(where + o, sizeof where - o, "%s%s=%lld", j ? "," : "",
                                     k->problem_names[j], (long long)bp.values[j]);
                    if (w > 0)
                        o += (size_t)w;
                }
                char m[400];
                if (st) {
                    snprintf(m, sizeof m, "at boundary size %s: %.250s", where, d2.msg);
                    set_error(e, status_of(st), m);
                    record(&T, e);
                    if (bt__device_lost(kn->dev)) {
                        pdata_free(&T, &bd);
                        bt_diag d3 = {0};
                        if (recover(&T, r, &main_data, caller != NULL, diag) ||
                            pdata_init(&T, &bd, &bp, T.o.seed + 1 + (uint64_t)b, NULL, 0, &d3)) {
                            pdata_free(&T, &main_data);
                            unload_all(&T, r, -1);
                            bt_result_free(r);
                            WD_STOP();
                            return BT_LAUNCH;
                        }
                    }
                } else if (!v.ok) {
                    snprintf(m, sizeof m, "at boundary size %s: %s", where, v.msg);
                    set_error(e, BT__CS_WRONG, m);
                    record(&T, e);
                } else
                    e->boundary_checked++;
            }
            pdata_free(&T, &bd);
        }
    }
    r->t_verify = bt__now() - tv;

    /* 4. measure */
    double tm = bt__now();
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
    T.cur = &main_data;
    bt__entry **ok = calloc(n + 1, sizeof *ok);
    size_t nok = 0;
    for (size_t i = 0; i < n && ok; i++) {
        bt__entry *e = &r->e[i];
        progress(&T, "measure", i, n, tm);
        if (e->from_store && e->status == BT__CS_OK) { /* measured before: not again */
            ok[nok++] = e;
            continue;
        }
        if (e->status != BT__CS_PENDING)
            continue;
        T.cur_e = e;
        bt_diag d = {0};
        /* a bench lasts about its budgets, plus one timeout per run at worst */
        watch_begin(&T, e, T.o.timeout_s * 3 + (T.o.warmup_ms + T.o.rep_ms) * 1e-3 * 4);
        st = bt__bench(&ops, T.o.warmup_ms, T.o.rep_ms, T.o.timeout_s * 1e3, &e->st, NULL, NULL, &d);
        watch_end(&T);
        if (st) {
            set_error(e, status_of(st), d.msg);
            record(&T, e);
            if (bt__device_lost(kn->dev)) {
                bt_status rs = recover(&T, r, &main_data, caller != NULL, diag);
                if (rs) {
                    free(ok);
                    unload_all(&T, r, -1);
                    bt_result_free(r);
                    WD_STOP();
                    return rs;
                }
                ops.bdev = T.D;
                T.cur = &main_data;
            }
            continue;
        }
        e->status = BT__CS_OK;
        record(&T, e);
        ok[nok++] = e;
    }
    progress(&T, "measure", n, n, tm);

    /* 5. select: finalists re-measured interleaved A B C A B C ... */
    if (ok && nok) {
        qsort(ok, nok, sizeof *ok, cmp_entry_median);
        int K = T.o.top_k > 0 ? T.o.top_k : 3;
        if ((size_t)K > nok)
            K = (int)nok;
        int R = T.o.rounds > 0 ? T.o.rounds : 5;
        r->finalists = K;
        r->rounds = K > 1 ? R : 0;
        if (K > 1) {
            double *pool_t[16] = {0};
            int pool_n[16] = {0};
            for (int round = 0; round < R; round++)
                for (int f = 0; f < K && f < 16; f++) {
                    T.cur_e = ok[f];
                    double *s = NULL;
                    int ns = 0;
                    bt__stats tmp;
                    bt_diag d = {0};
                    if (bt__bench(&ops, T.o.warmup_ms / R, T.o.rep_ms / R, T.o.timeout_s * 1e3, &tmp, &s, &ns, &d) == BT_OK && s) {
                        double *grown = realloc(pool_t[f], sizeof(double) * (size_t)(pool_n[f] + ns));
                        if (grown) {
                            memcpy(grown + pool_n[f], s, sizeof(double) * (size_t)ns);
                            pool_t[f] = grown;
                            pool_n[f] += ns;
                        }
                    }
                    free(s);
                }
            for (int f = 0; f < K && f < 16; f++) {
                if (pool_n[f] >= 5)
                    bt__stats_compute(pool_t[f], pool_n[f], &ok[f]->st);
                free(pool_t[f]);
            }
            qsort(ok, (size_t)K, sizeof *ok, cmp_entry_median);
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
    r->t_measure = bt__now() - tm;
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

    /* 6. the winner enters the dispatch cache; everything else is unloaded */
    if (r->winner >= 0) {
        bt__entry *w = &r->e[r->winner];
        if (bt__dispatch_put(kn, p, &w->ev.cfg, w->mod, w->fn) == BT_OK) {
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
