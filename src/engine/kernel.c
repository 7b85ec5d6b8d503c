/*
 * kernel.c — the bt_kernel handle: the source its device's backend takes, tuning on request, the
 * launch (dispatch from the table in dispatch.c; the first launch of a key looks in the store and
 * wisdom, compiling what it finds, before it tunes), and the user-facing buffers.
 */
#include "engine/build.h"

#include "core/util.h"
#include "engine/record.h"
#include "engine/userdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bt_status bt_kernel_create(bt_device *dev, const bt_kdesc *k, bt_kernel **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!dev || !k)
        return BT_INVALID_ARG;
    const bt__backend_iface *I = bt__device_iface(dev);
    const bt__ksource *src = bt__backend_source(I, k);
    if (!src) {
        bt__sbuf has = {0}, takes = {0};
        for (int i = 0; i < k->nsrc; i++)
            bt__sbuf_printf(&has, "%s%s", i ? ", " : "", k->src[i].lang);
        for (const char *const *l = I->languages; l && *l; l++)
            bt__sbuf_printf(&takes, "%s%s", takes.len ? ", " : "", *l);
        bt__diag_set(diag, "kernel '%s' has no source that the %s backend compiles (it compiles: "
                     "%s; the spec's sources: %s)", k->name, I->name, takes.s ? takes.s : "none",
                     has.s ? has.s : "none");
        bt__sbuf_free(&has);
        bt__sbuf_free(&takes);
        return BT_UNSUPPORTED;
    }
    if (!k->entry || !k->grid[0].e) {
        bt__diag_set(diag, "kernel '%s' needs an entry point and launch geometry", k->name);
        return BT_INVALID_ARG;
    }
    if (!strcmp(src->lang, "triton")) { /* compiled and planned, not yet launched */
        bt__diag_set(diag, "kernel '%s': launching Triton kernels is not built yet (Triton's "
                     "calling convention, docs/triton.md#what-is-left); `blocktune plan --exact` "
                     "compiles them", k->name);
        return BT_UNSUPPORTED;
    }
    bt_status mode_st = bt__tune_mode_env_check(diag);
    if (mode_st != BT_OK)
        return mode_st;
    bt_kernel *kn = calloc(1, sizeof *kn);
    if (!kn)
        return BT_NOMEM;
    kn->dev = dev;
    kn->iface = I;
    kn->bdev = bt__device_bdev(dev);
    kn->k = k;
    bt_tune_options_default(&kn->opts);
    kn->src = src;
    kn->src_hash = bt__kdesc_source_hash(k, src);
    pthread_rwlock_init(&kn->lock, NULL);
    pthread_mutex_init(&kn->tune_lock, NULL);
    pthread_mutex_init(&kn->cmem_lock, NULL);
    for (int i = 0; i < k->nargs; i++)
        kn->has_cmem |= k->args[i].cmem;
    *out = kn;
    return BT_OK;
}

void bt_kernel_destroy(bt_kernel *kn)
{
    if (!kn)
        return;
    bt__dispatch_free(kn);
    bt__store_close(kn->store);
    bt__wisdom_free(kn->user_wisdom);
    bt__wisdom_free(kn->shipped_wisdom);
    pthread_rwlock_destroy(&kn->lock);
    pthread_mutex_destroy(&kn->tune_lock);
    pthread_mutex_destroy(&kn->cmem_lock);
    free(kn);
}

void bt_kernel_set_options(bt_kernel *kn, const bt_tune_options *o)
{
    if (kn && o)
        kn->opts = *o;
}

int bt_kernel_tune_count(const bt_kernel *kn) { return kn ? kn->tunes : 0; }

int bt_kernel_device_lost(const bt_kernel *kn) { return kn && kn->lost; }

void bt_kernel_set_hang_handler(bt_kernel *kn, bt_hang_handler h, void *user)
{
    if (kn) {
        kn->hang_handler = h;
        kn->hang_user = user;
    }
}

bt_status bt_kernel_tune(bt_kernel *kn, const bt_problem *p, const bt_tune_options *o,
                         bt_result **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!kn || !p || p->k != kn->k)
        return BT_INVALID_ARG;
    pthread_mutex_lock(&kn->tune_lock);
    bt_status st = bt__tune(kn, p, o ? o : &kn->opts, NULL, 0, out, diag);
    if (st == BT_OK)
        kn->tunes++;
    pthread_mutex_unlock(&kn->tune_lock);
    return st;
}

/* Compiles one config (through the kernel cache) and puts it in the dispatch table, with no
 * verification or measurement: how a config found in the store or in wisdom is dispatched. */
static bt_status dispatch_config(bt_kernel *kn, const bt_problem *p, const bt_config *c,
                                 bt_diag *diag)
{
    bt__entry e;
    memset(&e, 0, sizeof e);
    e.ev.cfg = *c;
    bt__build(kn, p, &e, true);
    if (e.status == BT__CS_COMPILE) {
        bt__diag_set(diag, "the looked-up config does not compile: %.900s", e.log ? e.log : "");
        free(e.log);
        free(e.error);
        return BT_COMPILE;
    }
    bt_status st = bt__build_load(kn, p, &e, diag);
    free(e.blob.data);
    free(e.log);
    if (!st)
        st = bt__dispatch_put(kn, p, c, e.mod, e.fn);
    if (st && e.mod)
        kn->iface->module_free(kn->bdev, e.mod);
    return st;
}

/* The first launch of a key looks before it measures (docs/wisdom.md): an exact key in the store,
 * the user's wisdom or the shipped wisdom is dispatched as is; in wisdom-only mode also the nearest
 * size, the same architecture, and finally the model's best config. Every decision is logged
 * (BLOCKTUNE_LOG). BT_OK with nothing dispatched means "tune it". */
static bt_status from_wisdom(bt_kernel *kn, const bt_problem *p, bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    const bt_device_info *info = bt_device_get_info(kn->dev);
    bt__store *store = bt__kernel_store(kn, &kn->opts);
    const bt__wisdom *uw, *sw;
    bt__kernel_wisdom(kn, &uw, &sw);
    bt__keyvals kv;
    bt__problem_keyvals(k, p, &kv);
    char hash[24], arch[48];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)kn->src_hash);
    bt__device_arch(info, arch, sizeof arch);
    bt__lookup_query q = {k->name, hash, k->options ? k->options : "", info->name,
                          info->uuid[0] ? info->uuid : NULL, arch, &kv};
    bt__lookup_result lr;
    memset(&lr, 0, sizeof lr);
    bt__wisdom_lookup(store, uw, sw, &q, &lr, NULL);
    bool wisdom_only = kn->opts.mode == BT_MODE_WISDOM_ONLY;
    bool take = lr.config_json && (lr.source == BT__SRC_STORE || lr.source == BT__SRC_USER ||
                                   lr.source == BT__SRC_SHIPPED || wisdom_only);
    bt_status st = BT_OK;
    bt_config c;
    if (take && bt__config_from_stored(k, lr.config_json, bt__wisdom_source_name(lr.source), &c)) {
        st = dispatch_config(kn, p, &c, diag);
        bt__decision_log("%s: dispatching %s from %s (tuned for %s on %s, %.4f ms)", k->name,
                         lr.config_json, bt__wisdom_source_name(lr.source), lr.matched_key,
                         lr.matched_device, lr.median_ms);
    } else if (wisdom_only) { /* the kernel's default config: the model's best */
        bt_plan *pl = NULL;
        st = bt_plan_create(k, p, &info->props, NULL, &pl, diag);
        if (!st && pl->ncand == 0) {
            bt__diag_set(diag, "wisdom-only mode: no stored config and no valid config in the space");
            st = BT_NOT_FOUND;
        }
        if (!st) {
            st = dispatch_config(kn, p, &pl->cand[0].cfg, diag);
            char *cj = bt__config_json(&k->space, &pl->cand[0].cfg);
            bt__decision_log("%s: dispatching %s, the model's best config (default: nothing "
                             "stored for this key, wisdom-only mode)", k->name, cj ? cj : "?");
            free(cj);
        }
        bt_plan_free(pl);
    }
    free(lr.config_json);
    return st;
}

/* Tunes p's key on the caller's buffers (no store or wisdom had it) and logs the winner. */
static bt_status tune_key(bt_kernel *kn, const bt_problem *p, bt_buffer *const *buffers,
                          int nbuffers, bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    bt_result *r = NULL;
    bt_status st = bt__tune(kn, p, &kn->opts, buffers, nbuffers, &r, diag);
    if (st != BT_OK)
        return st;
    kn->tunes++;
    if (r->winner < 0) {
        bt__diag_set(diag, "no config of '%s' passed verification for this problem "
                           "(blocktune tune shows why)", k->name);
        st = BT_WRONG_RESULT;
    }
    bt_config wc;
    double med = 0;
    if (st == BT_OK && bt__decision_log_enabled() && bt_result_winner(r, &wc, &med)) {
        char *cj = bt__config_json(&k->space, &wc);
        bt__decision_log("%s: tuned %zu configs for this key in %.2f s: winner %s at %.4f ms, "
                         "margin %.1f%%%s", k->name, r->n, r->t_total, cj ? cj : "?", med,
                         r->margin * 100, r->tie ? " (tie within noise)" : "");
        free(cj);
    }
    bt_result_free(r);
    return st;
}

/* The first launch of a key (under the tune lock, so that one thread tunes it): store and wisdom
 * first (not in retune mode), then a tune (not in wisdom-only mode); *e is the key's entry. */
static bt_status first_launch(bt_kernel *kn, const bt_problem *p, const bt__dkey *key,
                              bt_buffer *const *buffers, int nbuffers, bt__dispatch *e,
                              bt_diag *diag)
{
    pthread_mutex_lock(&kn->tune_lock);
    bt_status st = BT_OK;
    if (!bt__dispatch_find(kn, key, e) && kn->opts.mode != BT_MODE_RETUNE)
        st = from_wisdom(kn, p, diag); /* store → user → shipped wisdom → ... (no measuring) */
    if (st != BT_OK && kn->opts.mode == BT_MODE_TUNE) {
        bt__decision_log("%s: the looked-up config failed (%s); tuning instead", kn->k->name,
                         diag ? diag->msg : bt_strerror(st));
        st = BT_OK;
    }
    if (st == BT_OK && !bt__dispatch_find(kn, key, e)) { /* nobody tuned it meanwhile */
        if (kn->opts.mode == BT_MODE_WISDOM_ONLY) {
            bt__diag_set(diag, "wisdom-only mode and no config for this key");
            st = BT_FORBIDDEN;
        } else
            st = tune_key(kn, p, buffers, nbuffers, diag);
        if (st == BT_OK && !bt__dispatch_find(kn, key, e))
            st = BT_INTERNAL;
    }
    pthread_mutex_unlock(&kn->tune_lock);
    return st;
}

bt_status bt_kernel_launch(bt_kernel *kn, const bt_problem *p, bt_buffer *const *buffers,
                           int nbuffers, bt_diag *diag)
{
    if (!kn || !p || p->k != kn->k || (nbuffers && !buffers))
        return BT_INVALID_ARG;
    if (!kn->bdev) {
        bt__diag_set(diag, "the device was lost to a fault; CUDA cannot recover in this process");
        return BT_LAUNCH;
    }
    const bt_kdesc *k = kn->k;
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    bt__dispatch e;
    if (!bt__dispatch_find(kn, &key, &e)) {
        bt_status st = first_launch(kn, p, &key, buffers, nbuffers, &e, diag);
        if (st)
            return st;
    }
    /* hot path: geometry and scalars were evaluated when the winner was stored; only a problem
     * that differs in a variable outside the key needs them again */
    if (memcmp(e.pvals, p->values, sizeof e.pvals)) {
        bt_status st = bt__dispatch_eval(kn, p, &e, diag);
        if (st)
            return st;
    }
    int nb = 0;
    for (int i = 0; i < k->nargs; i++) {
        if (k->args[i].role != BT__KARG_BUFFER)
            continue;
        if (nb >= nbuffers || !buffers[nb]) {
            bt__diag_set(diag, "kernel '%s' takes more than the %d buffers given", k->name, nbuffers);
            return BT_INVALID_ARG;
        }
        e.args[i].kind = BT__ARG_BUF;
        e.args[i].u.buf = buffers[nb++]->b;
    }
    if (nb != nbuffers) {
        bt__diag_set(diag, "kernel '%s' takes %d buffers, %d given", k->name, nb, nbuffers);
        return BT_INVALID_ARG;
    }
    if (!e.grid[0] || !e.grid[1] || !e.grid[2])
        return BT_OK;
    bt__tmap_blob tm[BT__MAX_TMAPS];
    if (e.has_tmaps) {
        bt_status st = bt__tmap_bind(k, kn->iface, kn->bdev, e.tm, e.args, tm, diag);
        if (st)
            return st;
    }
    if (kn->has_cmem)
        pthread_mutex_lock(&kn->cmem_lock);
    bt_status st = bt__cmem_bind(k, kn->iface, kn->bdev, e.mod, p,
                                 &bt_device_get_info(kn->dev)->props, e.args, diag);
    if (!st)
        st = kn->iface->launch(kn->bdev, e.fn, e.grid, e.block, e.dyn, e.args, k->nargs, NULL, diag);
    if (kn->has_cmem)
        pthread_mutex_unlock(&kn->cmem_lock);
    return st;
}

/* --- buffers ---------------------------------------------------------------------------------- */
bt_status bt_buffer_create(bt_device *d, size_t bytes, bt_buffer **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!d || !bytes)
        return BT_INVALID_ARG;
    bt_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return BT_NOMEM;
    bt_status st = bt__device_iface(d)->buf_alloc(bt__device_bdev(d), bytes, &b->b, diag);
    if (st) {
        free(b);
        return st;
    }
    b->dev = d;
    b->bytes = bytes;
    *out = b;
    return BT_OK;
}

void bt_buffer_destroy(bt_buffer *b)
{
    if (!b)
        return;
    bt__device_iface(b->dev)->buf_free(bt__device_bdev(b->dev), b->b);
    free(b);
}

bt_status bt_buffer_write(bt_buffer *b, size_t off, const void *src, size_t n, bt_diag *diag)
{
    if (!b || (!src && n) || off > b->bytes || n > b->bytes - off)
        return BT_INVALID_ARG;
    return bt__device_iface(b->dev)->buf_write(bt__device_bdev(b->dev), b->b, off, src, n, diag);
}

bt_status bt_buffer_read(bt_buffer *b, size_t off, void *dst, size_t n, bt_diag *diag)
{
    if (!b || (!dst && n) || off > b->bytes || n > b->bytes - off)
        return BT_INVALID_ARG;
    return bt__device_iface(b->dev)->buf_read(bt__device_bdev(b->dev), b->b, off, dst, n, diag);
}

bt_status bt_device_sync(bt_device *d, bt_diag *diag)
{
    if (!d)
        return BT_INVALID_ARG;
    return bt__device_iface(d)->sync(bt__device_bdev(d), diag);
}
