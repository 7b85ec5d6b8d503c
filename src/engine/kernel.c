/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kernel.c — the bt_kernel handle: the source its device's backend takes, its options, tuning on
 * request, what a key's first launch finds without measuring (store, wisdom, the model) and the
 * compile of such a config into the dispatch table, and the user-facing buffers. The launch path
 * itself is launch.c's.
 */
#include "engine/build.h"

#include "core/util.h"
#include "engine/fam.h"
#include "engine/record.h"
#include "engine/userdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A front door's families (engine/fam.h): a handle for each family whose source the backend
 * compiles (kn itself for its own), and the front door's hash over its own source hash and each
 * family's name and source hash, in order: F->prefix[f] over families 0..f, F->hash over all of
 * them. NULL when out of memory. */
static bt__famk *open_families(bt_kernel *kn)
{
    const bt_kdesc *k = kn->k;
    bt__famk *F = calloc(1, sizeof *F);
    if (!F)
        return NULL;
    F->n = k->nfam;
    uint64_t h = bt__fnv1a(&kn->src_hash, sizeof kn->src_hash, 0x6661u);
    for (int f = 0; f < k->nfam; f++) {
        const bt__kfamily *fm = &k->fam[f];
        bt_diag d2;
        if (fm->self)
            F->child[f] = kn;
        else if (bt__backend_source(kn->iface, fm->k) &&
                 bt_kernel_create(kn->dev, fm->k, &F->child[f], &d2) != BT_OK)
            F->child[f] = NULL; /* a language it cannot launch: the family does not run */
        else if (F->child[f])
            F->child[f]->door = kn; /* the families read the door's wisdom, loaded once */
        h = bt__fnv1a(fm->name, strlen(fm->name) + 1, h);
        uint64_t fh = F->child[f] ? F->child[f]->src_hash : 0;
        h = bt__fnv1a(&fh, sizeof fh, h);
        snprintf(F->prefix[f], sizeof F->prefix[f], "%016llx", (unsigned long long)h);
    }
    snprintf(F->hash, sizeof F->hash, "%016llx", (unsigned long long)h);
    pthread_mutex_init(&F->mu, NULL);
    return F;
}

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
    bt__tune_opts_default(&kn->opts);
    kn->src = src;
    kn->src_hash = bt__kdesc_source_hash(k, src);
    pthread_mutex_init(&kn->lock, NULL);
    pthread_mutex_init(&kn->tune_lock, NULL);
    pthread_mutex_init(&kn->wisdom_lock, NULL);
    pthread_mutex_init(&kn->cmem_lock, NULL);
    kn->nkey = (int8_t)k->nkey;
    for (int i = 0; i < k->nkey; i++)
        kn->key_idx[i] = (int8_t)(k->key_slots[i] - k->slot_problem0);
    kn->key_dtype = k->key_dtype;
    kn->nproblem = (int8_t)k->nproblem;
    kn->nargs = (int8_t)k->nargs;
    kn->wrapped = bt_device_is_wrapped(dev);
    for (int i = 0; i < k->nargs; i++) {
        kn->has_cmem |= k->args[i].cmem;
        if (k->args[i].role == BT__KARG_BUFFER)
            kn->buf_arg[kn->nbuf++] = (int8_t)i;
    }
    if (k->nfam && (kn->fam = open_families(kn)) == NULL) { /* a front door */
        bt_kernel_destroy(kn);
        return BT_NOMEM;
    }
    *out = kn;
    return BT_OK;
}

void bt_kernel_destroy(bt_kernel *kn)
{
    if (!kn)
        return;
    if (kn->fam) {
        for (int f = 0; f < kn->fam->n; f++)
            if (kn->fam->child[f] != kn)
                bt_kernel_destroy(kn->fam->child[f]);
        bt__famk_free_state(kn->fam);
        free(kn->fam);
    }
    bt__dispatch_free(kn);
    bt__store_close(kn->store);
    bt__wisdom_free(kn->user_wisdom);
    bt__wisdom_free(kn->shipped_wisdom);
    pthread_mutex_destroy(&kn->lock);
    pthread_mutex_destroy(&kn->tune_lock);
    pthread_mutex_destroy(&kn->wisdom_lock);
    pthread_mutex_destroy(&kn->cmem_lock);
    bt_tune_options_destroy(kn->opts_obj);
    free(kn);
}

void bt_kernel_set_options(bt_kernel *kn, const bt_tune_options *o)
{
    if (kn && o && bt__tune_options_clone(o, &kn->opts_obj) == BT_OK)
        kn->opts = kn->opts_obj->o;
    /* a front door's families resolve and tune its keys with its options (wisdom-only mode
     * too: a family left in tune mode would refuse a nearest size's config) */
    for (int f = 0; kn && o && kn->fam && f < kn->fam->n; f++)
        if (kn->fam->child[f] && kn->fam->child[f] != kn)
            bt_kernel_set_options(kn->fam->child[f], o);
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

bt_status bt_kernel_tune(bt_kernel *kn, const bt_problem *p, const bt_tune_options *opts,
                         bt_result **out, bt_diag *diag)
{
    return bt__kernel_tune_opts(kn, p, opts ? &opts->o : NULL, out, diag);
}

void bt__kernel_set_opts(bt_kernel *kn, const bt__tune_opts *o)
{
    bt_tune_options_destroy(kn->opts_obj);
    kn->opts_obj = NULL;
    kn->opts = *o;
    for (int f = 0; kn->fam && f < kn->fam->n; f++)
        if (kn->fam->child[f] && kn->fam->child[f] != kn)
            bt__kernel_set_opts(kn->fam->child[f], o);
}

bt_status bt__kernel_tune_opts(bt_kernel *kn, const bt_problem *p, const bt__tune_opts *o,
                               bt_result **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!kn || !p || p->k != kn->k)
        return BT_INVALID_ARG;
    if ((o ? o : &kn->opts)->mode == BT_MODE_WISDOM_ONLY) {
        bt__diag_set(diag, "wisdom-only mode never measures: bt_kernel_tune refuses to tune "
                     "(bt_kernel_lookup gives the config a launch would use)");
        return BT_FORBIDDEN;
    }
    pthread_mutex_lock(&kn->tune_lock);
    bt_status st = bt__tune_any(kn, p, o ? o : &kn->opts, NULL, 0, out, diag);
    if (st == BT_OK)
        kn->tunes++;
    pthread_mutex_unlock(&kn->tune_lock);
    return st;
}

bt_status bt__load_config(bt_kernel *kn, const bt_problem *p, const bt_config *c, bt__bmod **mod,
                          bt__bfn **fn, bt__blob *blob, bt_diag *diag)
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
    if (st == BT_OK && e.precompiled)
        bt__decision_log("%s: binary precompiled (%s), read in %.1f ms", kn->k->name,
                         !strcmp(e.precompiled, "user") ? "the kernel cache folder"
                                                        : "the installed folder",
                         e.compile_s * 1e3);
    else if (st == BT_OK)
        bt__decision_log("%s: binary %s in %.1f ms", kn->k->name,
                         e.cached ? "from the kernel cache" : "compiled", e.compile_s * 1e3);
    free(e.log);
    free(e.error);
    if (st && e.mod)
        kn->iface->module_free(kn->bdev, e.mod);
    if (st || !blob)
        free(e.blob.data);
    else
        *blob = e.blob;
    *mod = st ? NULL : e.mod;
    *fn = st ? NULL : e.fn;
    return st;
}

bt_status bt__dispatch_config(bt_kernel *kn, const bt_problem *p, const bt_config *c,
                              bt_diag *diag)
{
    bt__bmod *mod;
    bt__bfn *fn;
    bt_status st = bt__load_config(kn, p, c, &mod, &fn, NULL, diag);
    if (!st && (st = bt__dispatch_put(kn, p, c, mod, fn)) != BT_OK)
        kn->iface->module_free(kn->bdev, mod);
    return st;
}

/* Whether config c, tuned for another key (a nearest size, the same architecture), is valid
 * for p: the spec's constraints and rules at p's sizes (a tile that must cover M, a split that
 * must divide K). One that is not would compute wrong results or none; it is logged and not
 * taken. */
bool bt__config_fits(bt_kernel *kn, const bt_problem *p, const bt_config *c, const char *cj)
{
    bt__model m;
    if (bt__model_init(&m, kn->k, p, &bt_device_get_info(kn->dev)->props, kn->k->rules, NULL) !=
        BT_OK)
        return false;
    bt__cfg_eval ev;
    memset(&ev, 0, sizeof ev);
    bool ok = bt__model_eval(&m, c, &ev) == BT_OK && ev.valid;
    if (!ok)
        bt__decision_log("%s: not taking %s from another key: %s", kn->k->name, cj,
                         ev.reasons ? ev.reasons : "it cannot be evaluated here");
    bt__cfg_eval_clear(&ev);
    bt__model_fini(&m);
    return ok;
}

/* The lookup's test of another key's config: it parses for this kernel and is valid for p. */
static bool resolve_fits(void *user, const char *cj)
{
    bt__fits_ctx *x = user;
    bt_config c;
    return bt__config_from_stored(x->kn->k, cj, "wisdom", &c) &&
           bt__config_fits(x->kn, x->p, &c, cj);
}

bool bt__fam_choice_fits(void *user, const char *cj)
{
    bt__fits_ctx *x = user;
    int f;
    char *rest;
    if (!bt__fam_split_choice(x->kn, cj, &f, &rest))
        return false;
    bt_problem fp;
    bt__family_problem(x->kn->k, f, x->p, &fp);
    bt__fits_ctx fx = {bt__fam_kernel(x->kn, f), &fp};
    bool ok = resolve_fits(&fx, rest);
    free(rest);
    return ok;
}

/* The first launch of a key looks before it measures (docs/wisdom.md): an exact key in the store,
 * the user's wisdom or the shipped wisdom is taken as is; in wisdom-only mode also the nearest
 * size, the same architecture (each only where the config is valid for this problem), and
 * finally the model's best config. Nothing is compiled or measured here. *found is false when nothing applies ("tune it"). */
bt_status bt__resolve(bt_kernel *kn, const bt_problem *p, bt_config *c, bt_source *src,
                      bool *found, bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    const bt_device_info *info = bt_device_get_info(kn->dev);
    *found = false;
    bt__store *store = bt__kernel_store(kn, &kn->opts);
    const bt__wisdom *uw, *sw;
    bt__kernel_wisdom(kn, &uw, &sw);
    bt__keyvals kv;
    bt__problem_keyvals(k, p, &kv);
    char hash[24], arch[48];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)kn->src_hash);
    bt__device_arch(info, arch, sizeof arch);
    bool wisdom_only = kn->opts.mode == BT_MODE_WISDOM_ONLY;
    /* another key's config (a nearest size, the same architecture) is taken only in wisdom-only
     * mode and only where it is valid for this problem: the lookup passes over those that are
     * not for the next nearest */
    bt__fits_ctx fx = {kn, p};
    bt__lookup_query q = {k->name, hash, k->options ? k->options : "", info->name,
                          info->uuid[0] ? info->uuid : NULL, arch, &kv,
                          wisdom_only ? resolve_fits : NULL, &fx};
    bt__lookup_result lr;
    memset(&lr, 0, sizeof lr);
    bt__wisdom_lookup(store, uw, sw, &q, &lr, NULL);
    bool exact = lr.source == BT__SRC_STORE || lr.source == BT__SRC_USER ||
                 lr.source == BT__SRC_SHIPPED;
    bool take = lr.config_json && (exact || wisdom_only) &&
                bt__config_from_stored(k, lr.config_json, bt__wisdom_source_name(lr.source), c);
    static const bt_source from[] = {
        [BT__SRC_STORE] = BT_SOURCE_STORE,          [BT__SRC_USER] = BT_SOURCE_USER_WISDOM,
        [BT__SRC_SHIPPED] = BT_SOURCE_SHIPPED_WISDOM, [BT__SRC_NEAREST] = BT_SOURCE_NEAREST_SIZE,
        [BT__SRC_SAME_ARCH] = BT_SOURCE_SAME_ARCH,  [BT__SRC_DEFAULT] = BT_SOURCE_MODEL};
    bt_status st = BT_OK;
    if (take) {
        *found = true;
        *src = from[lr.source];
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
            *c = pl->cand[0].cfg;
            *found = true;
            *src = BT_SOURCE_MODEL;
            char *cj = bt__config_json(&k->space, c);
            bt__decision_log("%s: dispatching %s, the model's best config (default: nothing "
                             "stored for this key, wisdom-only mode)", k->name, cj ? cj : "?");
            free(cj);
        }
        bt_plan_destroy(pl);
    }
    free(lr.config_json);
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
    b->dtype = -1;
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
