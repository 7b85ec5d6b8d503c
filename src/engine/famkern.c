/* SPDX-License-Identifier: Apache-2.0 */
/*
 * famkern.c — what a front door's handle holds (engine/fam.h): the handle of each family, the
 * table from a problem key to its family, the families' workspaces (made through the backend,
 * zeroed: they clean up after themselves) and the mapping of the front door's buffers to a
 * family's, and the front door's stored choice for a key ({"family": i, ...its config} under the
 * front door's name and hash). The handles themselves are made in kernel.c; routing a key and
 * forwarding launches are launch.c's.
 */
#include "engine/fam.h"

#include "core/util.h"
#include "engine/record.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bt_kernel *bt__fam_kernel(const bt_kernel *kn, int f)
{
    return kn->fam && f >= 0 && f < kn->fam->n ? kn->fam->child[f] : NULL;
}

void bt__famk_free_state(bt__famk *F)
{
    for (int f = 0; f < F->n; f++)
        for (int i = 0; i < BT__MAX_ARGS; i++) {
            bt_buffer *b = F->ws[f][i];
            if (b) {
                bt__device_iface(b->dev)->buf_free(bt__device_bdev(b->dev), b->b);
                free(b);
            }
        }
    pthread_mutex_destroy(&F->mu);
    free(F->tab);
}

static bt__famtab_entry *tab_find(bt__famk *F, const bt__dkey *key)
{
    for (size_t i = 0; i < F->ntab; i++)
        if (F->tab[i].key.hash == key->hash && F->tab[i].key.n == key->n &&
            !memcmp(F->tab[i].key.v, key->v, sizeof(int64_t) * (size_t)key->n))
            return &F->tab[i];
    return NULL;
}

int bt__fam_chosen(bt_kernel *kn, const bt_problem *p)
{
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    pthread_mutex_lock(&kn->fam->mu);
    bt__famtab_entry *e = tab_find(kn->fam, &key);
    int f = e ? e->fam : -1;
    pthread_mutex_unlock(&kn->fam->mu);
    return f;
}

void bt__fam_choose(bt_kernel *kn, const bt_problem *p, int f)
{
    bt__famk *F = kn->fam;
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    pthread_mutex_lock(&F->mu);
    bt__famtab_entry *e = tab_find(F, &key);
    if (!e && F->ntab == F->cap) {
        size_t cap = F->cap ? 2 * F->cap : 8;
        bt__famtab_entry *t = realloc(F->tab, cap * sizeof *t);
        if (t) {
            F->tab = t;
            F->cap = cap;
        }
    }
    if (!e && F->ntab < F->cap)
        e = &F->tab[F->ntab++];
    if (e) { /* (out of memory: the key is routed again at its next use) */
        e->key = key;
        e->fam = f;
    }
    pthread_mutex_unlock(&F->mu);
}

bool bt__fam_split_choice(bt_kernel *kn, const char *cj, int *f, char **rest)
{
    json_t *o = json_loads(cj, 0, NULL);
    json_t *fj = o ? json_object_get(o, "family") : NULL;
    *f = json_is_integer(fj) ? (int)json_integer_value(fj) : -1;
    *rest = NULL;
    if (bt__fam_kernel(kn, *f)) {
        json_object_del(o, "family");
        *rest = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    }
    json_decref(o);
    return *rest != NULL;
}

bool bt__fam_runs(bt_kernel *kn, int f, const bt_problem *p)
{
    bt__famplan_entry e;
    bt_plan_options po = {.rules = kn->opts.rules};
    bool runs = bt__famplan_family(kn->k, f, p, &bt_device_get_info(kn->dev)->props,
                                   kn->iface->languages, &po, &e, NULL) == BT_OK &&
                e.verdict == BT__FAM_RUN && bt__fam_kernel(kn, f);
    bt_plan_destroy(e.plan);
    return runs;
}

int bt__fam_hashes(bt_kernel *kn, const bt_problem *p, const char *out[])
{
    const bt__famk *F = kn->fam;
    int n = 0;
    out[n++] = F->hash;
    for (int f = F->n - 1; f >= 1 && !bt__fam_runs(kn, f, p); f--)
        out[n++] = F->prefix[f - 1];
    return n;
}

static bool exact_source(bt__wisdom_source s)
{
    return s == BT__SRC_STORE || s == BT__SRC_USER || s == BT__SRC_SHIPPED;
}

void bt__fam_stored(bt_kernel *kn, const bt_problem *p, bt__fits_fn fits, int *fam,
                    bt_config *c, bool *found, bool *exact)
{
    const bt_kdesc *k = kn->k;
    const bt_device_info *info = bt_device_get_info(kn->dev);
    *found = false;
    if (kn->opts.mode == BT_MODE_RETUNE)
        return;
    bt__store *store = bt__kernel_store(kn, &kn->opts);
    const bt__wisdom *uw, *sw;
    bt__kernel_wisdom(kn, &uw, &sw);
    bt__keyvals kv;
    bt__problem_keyvals(k, p, &kv);
    char arch[48];
    bt__device_arch(info, arch, sizeof arch);
    bt__fits_ctx fx = {kn, p};
    bt__lookup_query q = {k->name, kn->fam->hash, "", info->name,
                          info->uuid[0] ? info->uuid : NULL, arch, &kv, fits, &fx};
    bt__lookup_result lr;
    memset(&lr, 0, sizeof lr);
    bt__wisdom_lookup(store, uw, sw, &q, &lr, NULL);
    if (!exact_source(lr.source)) { /* a choice stored before a family this key cannot run */
        const char *h[BT__MAX_FAMILIES];
        for (int i = 1, nh = bt__fam_hashes(kn, p, h); i < nh; i++) {
            bt__lookup_result o;
            memset(&o, 0, sizeof o);
            q.source_hash = h[i];
            bt__wisdom_lookup(store, uw, sw, &q, &o, NULL);
            if (exact_source(o.source) || (!lr.config_json && o.config_json)) {
                free(lr.config_json);
                lr = o;
            } else {
                free(o.config_json);
            }
            if (exact_source(lr.source))
                break;
        }
    }
    *exact = exact_source(lr.source);
    /* wisdom-only: also the nearest size's or the same architecture's choice (bt__resolve) */
    int f;
    char *rest;
    if (lr.config_json && (*exact || kn->opts.mode == BT_MODE_WISDOM_ONLY) &&
        bt__fam_split_choice(kn, lr.config_json, &f, &rest)) {
        bt_kernel *ck = bt__fam_kernel(kn, f);
        if (bt__config_from_stored(ck->k, rest, bt__wisdom_source_name(lr.source), c)) {
            *found = true;
            *fam = f;
            bt__decision_log("%s: family %s %s from %s", k->name, ck->k->name, rest,
                             bt__wisdom_source_name(lr.source));
        }
        free(rest);
    }
    free(lr.config_json);
}

bt_status bt__fam_workspace(bt_kernel *kn, int f, int i, size_t need, bt_buffer **out,
                            bt_diag *diag)
{
    bt__famk *F = kn->fam;
    const bt__backend_iface *I = kn->iface;
    bt_status st = BT_OK;
    pthread_mutex_lock(&F->mu);
    bt_buffer *b = F->ws[f][i];
    if (!b || b->bytes < need) {
        if (b) {
            I->buf_free(kn->bdev, b->b);
            free(b);
        }
        F->ws[f][i] = b = calloc(1, sizeof *b);
        void *zero = calloc(1, need ? need : 1);
        st = b && zero ? I->buf_alloc(kn->bdev, need ? need : 1, &b->b, diag) : BT_NOMEM;
        if (st == BT_OK)
            st = I->buf_write(kn->bdev, b->b, 0, zero, need, diag);
        if (st == BT_OK)
            st = I->sync(kn->bdev, diag);
        free(zero);
        if (st && b) {
            if (b->b)
                I->buf_free(kn->bdev, b->b);
            free(b);
            F->ws[f][i] = b = NULL;
        } else {
            b->dev = kn->dev;
            b->bytes = need;
            b->dtype = -1;
        }
    }
    *out = b;
    pthread_mutex_unlock(&F->mu);
    return st;
}

bt_status bt__fam_needs(const bt_kernel *kn, const bt_kdesc *k, const bt_problem *p,
                        size_t need[], int8_t dt[], bt_diag *diag)
{
    int64_t slots[BT__STACK_SLOTS];
    if (bt__kdesc_stack_slots(k, NULL, p, &bt_device_get_info(kn->dev)->props, slots) != BT_OK)
        return BT_INTERNAL;
    return bt__buffer_needs(k, p, slots, need, dt, diag);
}

bt_status bt__fam_buffers(bt_kernel *kn, int f, const bt_problem *fp, bt_buffer *const *buffers,
                          int nbuffers, bt_buffer *out[], int *nout, bt_diag *diag)
{
    const bt_kdesc *k = kn->k, *fk = kn->fam->child[f]->k;
    const bt__kfamily *fm = &k->fam[f];
    int ord[BT__MAX_ARGS], nb = 0; /* the front door's buffer ordinal of each argument */
    for (int i = 0; i < k->nargs; i++)
        ord[i] = k->args[i].role == BT__KARG_BUFFER ? nb++ : -1;
    if (nbuffers != nb) {
        bt__diag_set(diag, "kernel '%s' takes %d buffers, %d given", k->name, nb, nbuffers);
        return BT_INVALID_ARG;
    }
    size_t need[BT__MAX_ARGS];
    int8_t dt[BT__MAX_ARGS];
    bt_status st = bt__fam_needs(kn, fk, fp, need, dt, diag);
    *nout = 0;
    for (int i = 0; i < fk->nargs && st == BT_OK; i++) {
        if (fk->args[i].role != BT__KARG_BUFFER)
            continue;
        if (fm->amap[i] >= 0)
            out[(*nout)++] = buffers[ord[fm->amap[i]]];
        else
            st = bt__fam_workspace(kn, f, i, need[i], &out[(*nout)++], diag);
    }
    return st;
}
