/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dispatch.c — the dispatch table of a kernel: problem key (key variables and dtype) → compiled
 * winner with its launch geometry and scalar arguments evaluated once. An rwlock-guarded
 * open-addressing hash table that only grows; the hot path (bt_kernel_launch) only reads it. A
 * tune's winner and a looked-up config are put here; a device fault drops it all.
 */
#include "engine/engine.h"

#include "core/util.h"

#include <stdlib.h>
#include <string.h>

/* The key words' hash, in memory only (the dispatch and family tables): a multiply-xorshift
 * round per word and a final mix for the low bits the tables index by. On the launch path, so a
 * few cycles a word rather than byte-wise FNV's dependent multiply per byte. */
static uint64_t key_hash(const int64_t *v, int n)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)n;
    for (int i = 0; i < n; i++) {
        h = (h ^ (uint64_t)v[i]) * 0xbf58476d1ce4e5b9ULL;
        h ^= h >> 31;
    }
    h *= 0x94d049bb133111ebULL;
    return h ^ (h >> 29);
}

void bt__dispatch_key(const bt_kernel *kn, const bt_problem *p, bt__dkey *key)
{
    const bt_kdesc *k = kn->k;
    int n = 0;
    for (int i = 0; i < k->nkey; i++)
        key->v[n++] = p->values[k->key_slots[i] - k->slot_problem0];
    key->v[n++] = k->key_dtype ? (int64_t)p->dtype : -1;
    key->n = n;
    key->hash = key_hash(key->v, n);
}

bt_status bt__dispatch_eval(const bt_kernel *kn, const bt_problem *p, bt__dispatch *e,
                            bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    const bt_gpu *g = &bt_device_get_info(kn->dev)->props;
    int64_t slots[BT__STACK_SLOTS];
    if (bt__kdesc_stack_slots(k, &e->cfg, p, g, slots) != BT_OK) {
        bt__diag_set(diag, "kernel '%s': %d expression slots (at most %d)", k->name, k->nslots,
                     BT__STACK_SLOTS);
        return BT_INTERNAL;
    }
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role == BT__KARG_BUFFER)
            continue;
        if (a->role == BT__KARG_TMAP) {
            e->has_tmaps = true;
            continue;
        }
        int64_t v;
        bt_status st = bt__expr_eval(a->size.e, slots, &v, diag);
        if (st)
            return st;
        if ((st = bt__scalar_karg(a, v, &e->args[i], diag)) != BT_OK)
            return st;
    }
    if (e->has_tmaps) {
        bt_status st = bt__tmap_reqs(k, &e->cfg, p, g, e->tm, diag);
        if (st)
            return st;
    }
    bt_status bst = bt__buffer_needs(k, p, slots, e->need, e->dtype, diag);
    if (bst)
        return bst;
    int64_t grid[3], block[3], dyn;
    bt_status st = bt__geometry(k, &e->cfg, p, g, grid, block, &dyn, diag);
    if (st)
        return st;
    for (int d = 0; d < 3; d++)
        e->grid[d] = (uint32_t)grid[d], e->block[d] = (uint32_t)block[d];
    e->dyn = (size_t)dyn;
    memcpy(e->pvals, p->values, sizeof e->pvals);
    return BT_OK;
}

bt_status bt__buffer_needs(const bt_kdesc *k, const bt_problem *p, const int64_t *slots,
                           size_t need[], int8_t dtype[], bt_diag *diag)
{
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role != BT__KARG_BUFFER)
            continue;
        int64_t count;
        bt_status st = bt__kexpr_eval(k, &a->size, slots, &count, diag);
        if (st)
            return st;
        if (count > ((int64_t)1 << 40)) {
            bt__diag_set(diag, "buffer '%s' has %lld elements", a->name, (long long)count);
            return BT_INVALID_ARG;
        }
        bt__dtype t = bt__arg_dtype(k, a, p);
        dtype[i] = (int8_t)t;
        need[i] = (size_t)(count > 0 ? count : 1) * (size_t)bt__dtype_size(t);
    }
    return BT_OK;
}

/* Open addressing; the table only grows. Callers hold the write lock. */
static bt_status tab_insert(bt_kernel *kn, bt__dispatch *e)
{
    if ((kn->ntab + 1) * 2 > kn->cap) {
        size_t cap = kn->cap ? kn->cap * 2 : 16;
        bt__dispatch *t = calloc(cap, sizeof *t);
        if (!t)
            return BT_NOMEM;
        for (size_t i = 0; i < kn->cap; i++)
            if (kn->tab[i].used) {
                size_t j = kn->tab[i].hash & (cap - 1);
                while (t[j].used)
                    j = (j + 1) & (cap - 1);
                t[j] = kn->tab[i];
            }
        free(kn->tab);
        kn->tab = t;
        kn->cap = cap;
    }
    size_t j = e->hash & (kn->cap - 1);
    while (kn->tab[j].used) {
        bt__dispatch *o = &kn->tab[j];
        if (o->hash == e->hash && o->nkv == e->nkv &&
            !memcmp(o->kv, e->kv, sizeof(int64_t) * (size_t)e->nkv)) {
            if (o->mod) /* a re-tune's winner replaces the old one */
                kn->iface->module_free(kn->bdev, o->mod);
            *o = *e;
            return BT_OK;
        }
        j = (j + 1) & (kn->cap - 1);
    }
    kn->tab[j] = *e;
    kn->ntab++;
    return BT_OK;
}

bt_status bt__dispatch_put(bt_kernel *kn, const bt_problem *p, const bt_config *cfg, bt__bmod *mod,
                           bt__bfn *fn)
{
    bt__dispatch e;
    memset(&e, 0, sizeof e);
    e.used = true;
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    e.nkv = key.n;
    memcpy(e.kv, key.v, sizeof e.kv);
    e.hash = key.hash;
    e.cfg = *cfg;
    e.mod = mod;
    e.fn = fn;
    bt_status st = bt__dispatch_eval(kn, p, &e, NULL);
    if (st)
        return st;
    pthread_rwlock_wrlock(&kn->lock);
    st = tab_insert(kn, &e);
    pthread_rwlock_unlock(&kn->lock);
    return st;
}

const bt__dispatch *bt__dispatch_find_held(const bt_kernel *kn, const bt__dkey *key)
{
    if (!kn->cap)
        return NULL;
    for (size_t j = key->hash & (kn->cap - 1); kn->tab[j].used; j = (j + 1) & (kn->cap - 1)) {
        const bt__dispatch *o = &kn->tab[j];
        if (o->hash == key->hash && o->nkv == key->n &&
            !memcmp(o->kv, key->v, sizeof(int64_t) * (size_t)key->n))
            return o;
    }
    return NULL;
}

bool bt__dispatch_find(bt_kernel *kn, const bt__dkey *key, bt__dispatch *out)
{
    pthread_rwlock_rdlock(&kn->lock);
    const bt__dispatch *o = bt__dispatch_find_held(kn, key);
    if (o)
        *out = *o;
    pthread_rwlock_unlock(&kn->lock);
    return o != NULL;
}

bt_status bt__dispatch_reset(bt_kernel *kn, bt_diag *diag)
{
    pthread_rwlock_wrlock(&kn->lock);
    for (size_t i = 0; i < kn->cap; i++)
        if (kn->tab[i].used && kn->tab[i].mod)
            kn->iface->module_free(kn->bdev, kn->tab[i].mod);
    memset(kn->tab, 0, sizeof *kn->tab * kn->cap);
    kn->ntab = 0;
    bt_status st = bt__device_reopen(kn->dev, diag);
    kn->bdev = bt__device_bdev(kn->dev);
    if (st)
        kn->lost = true;
    pthread_rwlock_unlock(&kn->lock);
    return st;
}

void bt__dispatch_free(bt_kernel *kn)
{
    for (size_t i = 0; kn->bdev && i < kn->cap; i++)
        if (kn->tab[i].used && kn->tab[i].mod)
            kn->iface->module_free(kn->bdev, kn->tab[i].mod);
    free(kn->tab);
    kn->tab = NULL;
    kn->cap = kn->ntab = 0;
}
