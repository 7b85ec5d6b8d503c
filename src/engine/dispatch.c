/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dispatch.c — the dispatch table of a kernel: problem key (key variables and dtype) → compiled
 * winner with its launch geometry and scalar arguments evaluated once. An open-addressing hash
 * table that only grows, over entries that never change once published: the hot path
 * (bt_kernel_launch) reads it without a lock, writers (a tune's winner, a looked-up config) take
 * the kernel's lock, and whatever they replace is kept until the kernel is destroyed. A device
 * fault empties it.
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
    int n = 0;
    for (int i = 0; i < kn->nkey; i++)
        key->v[n++] = p->values[kn->key_idx[i]];
    key->v[n++] = kn->key_dtype ? (int64_t)p->dtype : -1;
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

/* Keeps what a launch in another thread may still hold until the kernel is destroyed. */
static bt_status retire(bt_kernel *kn, void *mem, bt__bmod *mod, bt__bdev *bdev)
{
    bt__retired *r = malloc(sizeof *r);
    if (!r)
        return BT_NOMEM;
    *r = (bt__retired){kn->retired, mem, mod, bdev};
    kn->retired = r;
    return BT_OK;
}

static bt__dispatch *slot_get(bt__dtab *t, size_t j)
{
    return __atomic_load_n(&t->slot[j], __ATOMIC_ACQUIRE);
}

static bool same_key(const bt__dispatch *o, uint64_t hash, const int64_t *v, int n)
{
    return o->hash == hash && o->nkv == n && !memcmp(o->kv, v, sizeof(int64_t) * (size_t)n);
}

/* Publishes e (owned from here on). Callers hold kn->lock: the table only grows, an outgrown
 * one is retired, and a replaced entry too, with its module. */
static bt_status tab_insert(bt_kernel *kn, bt__dispatch *e)
{
    bt__dtab *t = kn->tab;
    if (!t || (kn->ntab + 1) * 2 > t->cap) {
        size_t cap = t ? t->cap * 2 : 16;
        bt__dtab *g = calloc(1, sizeof *g + cap * sizeof *g->slot);
        if (!g || (t && retire(kn, t, NULL, NULL) != BT_OK)) {
            free(g);
            return BT_NOMEM;
        }
        g->cap = cap;
        for (size_t i = 0; t && i < t->cap; i++)
            if (t->slot[i]) {
                size_t j = t->slot[i]->hash & (cap - 1);
                while (g->slot[j])
                    j = (j + 1) & (cap - 1);
                g->slot[j] = t->slot[i];
            }
        __atomic_store_n(&kn->tab, g, __ATOMIC_RELEASE);
        t = g;
    }
    size_t j = e->hash & (t->cap - 1);
    for (bt__dispatch *o; (o = t->slot[j]) != NULL; j = (j + 1) & (t->cap - 1))
        if (same_key(o, e->hash, e->kv, e->nkv)) { /* a re-tune's winner replaces the old one */
            if (retire(kn, o, o->mod, kn->bdev) != BT_OK)
                return BT_NOMEM;
            __atomic_store_n(&t->slot[j], e, __ATOMIC_RELEASE);
            return BT_OK;
        }
    __atomic_store_n(&t->slot[j], e, __ATOMIC_RELEASE);
    kn->ntab++;
    return BT_OK;
}

bt_status bt__dispatch_put(bt_kernel *kn, const bt_problem *p, const bt_config *cfg, bt__bmod *mod,
                           bt__bfn *fn)
{
    bt__dispatch *e = calloc(1, sizeof *e);
    if (!e)
        return BT_NOMEM;
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    e->nkv = key.n;
    memcpy(e->kv, key.v, sizeof e->kv);
    e->hash = key.hash;
    e->cfg = *cfg;
    e->mod = mod;
    e->fn = fn;
    bt_status st = bt__dispatch_eval(kn, p, e, NULL);
    /* the launch prepared once, where the backend can (not with tensor maps or constant memory,
     * which a launch fills) */
    bt__bdev *bd = __atomic_load_n(&kn->bdev, __ATOMIC_ACQUIRE);
    if (!st && kn->iface->launch_rec_make && bd && !e->has_tmaps && !kn->has_cmem && e->grid[0] &&
        e->grid[1] && e->grid[2]) {
        bt_diag d = {0};
        e->has_rec = kn->iface->launch_rec_make(bd, fn, e->grid, e->block, e->dyn, e->args,
                                                kn->nargs, e->rec, &d) == BT_OK;
    }
    if (!st) {
        pthread_mutex_lock(&kn->lock);
        st = tab_insert(kn, e);
        pthread_mutex_unlock(&kn->lock);
    }
    if (st)
        free(e);
    return st;
}

const bt__dispatch *bt__dispatch_get(const bt_kernel *kn, const bt__dkey *key)
{
    bt__dtab *t = __atomic_load_n(&kn->tab, __ATOMIC_ACQUIRE);
    if (!t)
        return NULL;
    const bt__dispatch *o;
    for (size_t j = key->hash & (t->cap - 1); (o = slot_get(t, j)) != NULL;
         j = (j + 1) & (t->cap - 1))
        if (same_key(o, key->hash, key->v, key->n))
            return o;
    return NULL;
}

bool bt__dispatch_find(bt_kernel *kn, const bt__dkey *key, bt__dispatch *out)
{
    const bt__dispatch *o = bt__dispatch_get(kn, key);
    if (o)
        *out = *o;
    return o != NULL;
}

bt_status bt__dispatch_reset(bt_kernel *kn, bt_diag *diag)
{
    pthread_mutex_lock(&kn->lock);
    bt__dtab *t = kn->tab;
    bt__bdev *old = kn->bdev;
    __atomic_store_n(&kn->tab, NULL, __ATOMIC_RELEASE);
    kn->ntab = 0;
    /* the entries, their modules and the table are dead on the device, not in memory: a launch
     * in flight may hold them; freed with the kernel (a module's host side only, since its
     * context is gone) */
    bool keep = kn->iface->device_release != NULL; /* else the reopen frees old */
    for (size_t i = 0; t && i < t->cap; i++) {
        bt__dispatch *e = t->slot[i];
        if (!e)
            continue;
        if (e->mod && (!keep || retire(kn, NULL, e->mod, old) != BT_OK))
            kn->iface->module_free(old, e->mod);
        if (retire(kn, e, NULL, NULL) != BT_OK)
            free(e); /* out of memory */
    }
    if (t && retire(kn, t, NULL, NULL) != BT_OK)
        free(t);
    bt_status st = bt__device_reopen(kn->dev, diag);
    __atomic_store_n(&kn->bdev, bt__device_bdev(kn->dev), __ATOMIC_RELEASE);
    if (st)
        kn->lost = true;
    pthread_mutex_unlock(&kn->lock);
    return st;
}

void bt__dispatch_free(bt_kernel *kn)
{
    bt__dtab *t = kn->tab;
    for (size_t i = 0; t && i < t->cap; i++)
        if (t->slot[i]) {
            if (t->slot[i]->mod && kn->bdev)
                kn->iface->module_free(kn->bdev, t->slot[i]->mod);
            free(t->slot[i]);
        }
    free(t);
    for (bt__retired *r = kn->retired, *next; r; r = next) {
        next = r->next;
        if (r->mod && r->bdev)
            kn->iface->module_free(r->bdev, r->mod);
        free(r->mem);
        free(r);
    }
    kn->tab = NULL;
    kn->retired = NULL;
    kn->ntab = 0;
}
