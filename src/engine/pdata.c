/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdata.c — the data of one problem for the tuner: the problem checked before anything runs
 * (every buffer at least one element, the data within the device's and the host's memory); host
 * copies of every buffer (random inputs from the seed, or read from the caller's buffers), device
 * buffers, restore copies, scalar arguments, the host reference's outputs (sampled for expensive
 * references); and running a config on that data: the resets before a run, the launch arguments
 * (tensor maps encoded per launch), one launch or a graph replay.
 */
#include "engine/tune_ctx.h"

#include "core/expr.h"
#include "core/util.h"
#include "engine/userdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "12.0 GiB" */
static const char *human_bytes(double b, char *buf, size_t size)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    while (b >= 1024 && u < 6)
        b /= 1024, u++;
    snprintf(buf, size, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
    return buf;
}

/* The problem variables size expression x reads, with their values at p: "n=0, m=3". */
static void size_vars(const bt_kdesc *k, const bt__kexpr *x, const bt_problem *p, char *buf,
                      size_t size)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int j = 0; j < k->nproblem && o < size; j++)
        if (bt__expr_uses(x->e, k->slot_problem0 + j)) {
            int w = snprintf(buf + o, size - o, "%s%s=%lld", o ? ", " : "", k->problem_names[j],
                             (long long)p->values[j]);
            if (w > 0)
                o += (size_t)w;
        }
}

/* Buffer argument a's elements at p (slots filled for p), or an error naming it. */
static bt_status buffer_count(const bt_kdesc *k, const bt__argspec *a, const bt_problem *p,
                              const int64_t *slots, const char *what, int64_t *v, bt_diag *diag)
{
    bt_status st = bt__kexpr_eval(k, &a->size, slots, v, diag);
    if (st) {
        bt__diag_prefix(diag, "%s%sargument '%s': ", what, what[0] ? ": " : "", a->name);
        return st;
    }
    if (*v >= 1)
        return BT_OK;
    char vars[200];
    size_vars(k, &a->size, p, vars, sizeof vars);
    bt__diag_set(diag, "%s%sargument '%s' would have %lld elements (size '%s'%s%s): every buffer "
                 "needs at least one", what, what[0] ? ": " : "", a->name, (long long)*v,
                 bt__expr_source(a->size.e), vars[0] ? " with " : "", vars);
    return BT_INVALID_ARG;
}

bt_status bt__problem_check(const bt__tctx *T, const bt_problem *p, const char *what, bool mem,
                            bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    int64_t slots[BT__STACK_SLOTS];
    if (bt__kdesc_stack_slots(k, NULL, p, T->g, slots) != BT_OK)
        return BT_INTERNAL;
    double dev = 0, host = 0, most = -1;
    const bt__argspec *big = NULL;
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role != BT__KARG_BUFFER)
            continue;
        int64_t v;
        bt_status st = buffer_count(k, a, p, slots, what, &v, diag);
        if (st)
            return st;
        double bytes = (double)v * bt__dtype_size(bt__arg_dtype(k, a, p));
        dev += bytes * (a->restore_value ? 2 : 1);
        host += bytes + (a->output ? (double)v * sizeof(double) : 0); /* + its reference */
        if (bytes > most)
            most = bytes, big = a;
    }
    if (!mem || !big)
        return BT_OK;
    /* the largest buffer, named with its size and the problem variables in it */
    char need[32], have[32], vars[200], largest[400];
    size_vars(k, &big->size, p, vars, sizeof vars);
    snprintf(largest, sizeof largest, "the largest, argument '%s', %.0f bytes (size '%s'%s%s)",
             big->name, most, bt__expr_source(big->size.e), vars[0] ? " with " : "", vars);
    const char *sep = what[0] ? ": " : "";
    if (T->g->mem_bytes > 0 && dev > (double)T->g->mem_bytes) {
        bt__diag_set(diag, "%s%sthe problem's data needs %.0f bytes (%s) on the device, which has "
                     "%lld bytes (%s); %s: choose smaller sizes", what, sep, dev,
                     human_bytes(dev, need, sizeof need), (long long)T->g->mem_bytes,
                     human_bytes((double)T->g->mem_bytes, have, sizeof have), largest);
        return BT_NOMEM;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double phys = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    if (phys > 0 && host > phys) {
        bt__diag_set(diag, "%s%sthe problem's host copies and reference need %.0f bytes (%s), and "
                     "this host has %.0f bytes of memory (%s); %s: choose smaller sizes", what,
                     sep, host, human_bytes(host, need, sizeof need), phys,
                     human_bytes(phys, have, sizeof have), largest);
        return BT_NOMEM;
    }
    return BT_OK;
}

void bt__pdata_free(bt__tctx *T, bt__pdata *d)
{
    for (int i = 0; i < T->k->nargs; i++) {
        bt__hostbuf_free(&d->host[i]);
        if (d->owned[i] && d->dev[i])
            T->I->buf_free(T->D, d->dev[i]);
        if (d->saved[i])
            T->I->buf_free(T->D, d->saved[i]);
        free(d->ref[i]);
    }
    bt__devcmp_pdata_free(T, d);
    free(d->sample);
    memset(d, 0, sizeof *d);
}

/* Where buffer argument i's device data comes from: the caller's next buffer (its inputs read
 * back for the reference), or a new device buffer holding the inputs generated from the seed
 * (an output's is filled with its poison on the device: its host copy holds nothing yet). */
static bt_status buffer_source(bt__tctx *T, bt__pdata *d, int i, bt_buffer *const *caller,
                               int ncaller, int *nbuf, uint64_t seed, bt_diag *diag)
{
    const bt__argspec *a = &T->k->args[i];
    size_t bytes = bt__hostbuf_bytes(&d->host[i]);
    if (!caller) {
        bt_status st = a->output ? BT_OK : bt__arg_fill(a, &d->host[i], seed, i, diag);
        if (!st)
            st = T->I->buf_alloc(T->D, bytes, &d->dev[i], diag);
        if (st)
            return st;
        d->owned[i] = true;
        if (!a->output)
            return T->I->buf_write(T->D, d->dev[i], 0, d->host[i].data, bytes, diag);
        uint8_t pat[8];
        size_t ps;
        bt__poison_pattern(d->host[i].dtype, pat, &ps);
        return T->I->buf_fill(T->D, d->dev[i], 0, bytes, pat, ps, diag);
    }
    if (*nbuf >= ncaller) {
        bt__diag_set(diag, "kernel '%s' takes more buffers than the %d given", T->k->name, ncaller);
        return BT_INVALID_ARG;
    }
    bt_buffer *cb = caller[(*nbuf)++];
    if (!cb || cb->bytes < bytes) {
        bt__diag_set(diag, "buffer %d ('%s') holds %zu bytes, the problem needs %zu", *nbuf - 1,
                     a->name, cb ? cb->bytes : 0, bytes);
        return BT_INVALID_ARG;
    }
    d->dev[i] = cb->b;
    /* the caller's inputs read for a reference computed on the host (a device reference reads
     * them where they are) */
    if ((!a->output || a->restore_value) && !bt__has_devref(T->k))
        return T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data, bytes, diag);
    return BT_OK;
}

/* Buffer argument i of v elements: host copy, device data, restore copy, reference array. */
static bt_status buffer_init(bt__tctx *T, bt__pdata *d, int i, int64_t v,
                             bt_buffer *const *caller, int ncaller, int *nbuf, uint64_t seed,
                             bt_diag *diag)
{
    const bt__argspec *a = &T->k->args[i];
    if (v < 0 || v > ((int64_t)1 << 40)) {
        bt__diag_set(diag, "buffer '%s' has %lld elements", a->name, (long long)v);
        return BT_INVALID_ARG;
    }
    size_t count = v > 0 ? (size_t)v : 1;
    bt_status st = bt__hostbuf_alloc(&d->host[i], bt__arg_dtype(T->k, a, &d->p), count);
    if (!st)
        st = buffer_source(T, d, i, caller, ncaller, nbuf, seed, diag);
    size_t bytes = bt__hostbuf_bytes(&d->host[i]);
    if (!st && (a->restore_value || (caller && a->reset_to_zero))) {
        st = T->I->buf_alloc(T->D, bytes, &d->saved[i], diag);
        if (!st)
            st = T->I->buf_copy(T->D, d->saved[i], d->dev[i], bytes, diag);
    }
    /* a device reference's outputs stay on the device where they can (bt__devcmp_keep_ref):
     * the host array is made when the host needs it (bt__pdata_ref_host) */
    if (!st && a->output && !bt__has_devref(T->k)) {
        d->ref[i] = calloc(count, sizeof(double));
        if (!d->ref[i])
            st = BT_NOMEM;
    }
    return st;
}

bt_status bt__pdata_ref_host(bt__tctx *T, bt__pdata *d, int i, bt_diag *diag)
{
    if (d->ref[i])
        return BT_OK;
    d->ref[i] = malloc(sizeof(double) * d->host[i].count);
    if (!d->ref[i])
        return BT_NOMEM;
    if (!d->dref_typed[i]) { /* nothing computed it yet: zeros, as before it runs */
        memset(d->ref[i], 0, sizeof(double) * d->host[i].count);
        return BT_OK;
    }
    bt__hostbuf h;
    bt_status st = bt__hostbuf_alloc(&h, d->host[i].dtype, d->host[i].count);
    if (!st)
        st = T->I->buf_read(T->D, d->dref[i], 0, h.data, bt__hostbuf_bytes(&h), diag);
    if (!st)
        bt__hostbuf_get_all(&h, d->ref[i]);
    bt__hostbuf_free(&h);
    if (st) {
        free(d->ref[i]);
        d->ref[i] = NULL;
    }
    return st;
}

/* The output indices a sampled reference computes (every element still gets the NaN/poison
 * check): all of them up to 65536 outputs (d->sample stays NULL), else 4096 drawn from the seed. */
static bt_status sample_outputs(bt__tctx *T, bt__pdata *d, uint64_t seed)
{
    size_t total = 0;
    for (int i = 0; i < T->k->nargs; i++)
        if (T->k->args[i].output)
            total = d->host[i].count;
    if (total <= 65536)
        return BT_OK;
    size_t want = 4096;
    d->sample = malloc(sizeof *d->sample * want);
    if (!d->sample)
        return BT_NOMEM;
    bt__rng srng;
    bt__rng_seed(&srng, seed, 0x73616d706c65ULL);
    for (size_t s = 0; s < want; s++)
        d->sample[s] = (size_t)(bt__rng_next(&srng) % total);
    d->nsample = want;
    return BT_OK;
}

/* The host reference's outputs into d->ref (the kernel's "host" reference). */
static bt_status host_reference(bt__tctx *T, bt__pdata *d, uint64_t seed, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__href_fn fn = bt__hostref_find(k->ref_host);
    if (!fn) {
        bt__diag_set(diag, "no host reference named '%s'", k->ref_host);
        return BT_NOT_FOUND;
    }
    if (bt__hostref_sampled(k->ref_host)) {
        bt_status st = sample_outputs(T, d, seed);
        if (st)
            return st;
    }
    bt__href_ctx hc = {k, &d->p, d->host, d->ref, d->sample, d->nsample};
    bt_status st = fn(&hc, diag);
    d->have_ref = st == BT_OK;
    return st;
}

bt_status bt__pdata_init(bt__tctx *T, bt__pdata *d, const bt_problem *p, uint64_t seed,
                         bt_buffer *const *caller, int ncaller, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    memset(d, 0, sizeof *d);
    d->p = *p;
    int64_t slots[BT__STACK_SLOTS];
    bt__kdesc_fill_slots(k, NULL, p, T->g, slots);
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
        if (a->role != BT__KARG_BUFFER)
            st = bt__scalar_karg(a, v, &d->scalars[i], diag);
        else
            st = buffer_init(T, d, i, v, caller, ncaller, &nbuf, seed, diag);
    }
    if (!st && caller && nbuf != ncaller) {
        bt__diag_set(diag, "kernel '%s' takes %d buffers, %d given", k->name, nbuf, ncaller);
        st = BT_INVALID_ARG;
    }
    if (st == BT_OK && k->ref == BT__REF_ANSWERS)
        d->have_ref = (st = bt__answers_load(k, d->host, d->ref, caller != NULL, diag)) == BT_OK;
    if (st == BT_OK && k->ref == BT__REF_HOST)
        st = host_reference(T, d, seed, diag);
    if (st)
        bt__pdata_free(T, d);
    return st;
}

bt_status bt__pdata_pre_run(bt__tctx *T, bt__pdata *d, bt_diag *diag)
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

void bt__pdata_give_back(bt__tctx *T, bt__pdata *d)
{
    for (int i = 0; i < T->k->nargs; i++)
        if (d->saved[i])
            T->I->buf_copy(T->D, d->dev[i], d->saved[i], bt__hostbuf_bytes(&d->host[i]), NULL);
    T->I->sync(T->D, NULL);
}

/* The launch of config e on data d: arguments (buffers, scalars, and tensor maps encoded into
 * tm, which must outlive the launch call) and geometry. */
typedef struct launch {
    bt__karg args[BT__MAX_ARGS];
    bt__tmap_blob tm[BT__MAX_TMAPS];
    uint32_t grid[3], block[3];
    size_t dyn;
} launch;

static bt_status launch_of(bt__tctx *T, const bt__entry *e, const bt__geom *geo,
                           const bt__pdata *d, launch *L, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bool tmaps = false;
    for (int i = 0; i < k->nargs; i++) {
        if (k->args[i].role == BT__KARG_BUFFER) {
            L->args[i].kind = BT__ARG_BUF;
            L->args[i].u.buf = d->dev[i];
        } else
            L->args[i] = d->scalars[i];
        tmaps |= k->args[i].role == BT__KARG_TMAP;
    }
    bt_status cst = bt__cmem_bind(k, T->I, T->D, e->mod, &d->p, T->g, L->args, diag);
    if (cst)
        return cst;
    if (tmaps) {
        bt__tmap_req req[BT__MAX_TMAPS];
        bt_status st = bt__tmap_reqs(k, &e->ev.cfg, &d->p, T->g, req, diag);
        if (!st)
            st = bt__tmap_bind(k, T->I, T->D, req, L->args, L->tm, diag);
        if (st)
            return st;
    }
    bt__geom own;
    if (!geo) {
        bt_status st = bt__geometry(k, &e->ev.cfg, &d->p, T->g, own.grid, own.block, &own.dyn,
                                    diag);
        if (st)
            return st;
        geo = &own;
    }
    for (int i = 0; i < 3; i++)
        L->grid[i] = (uint32_t)geo->grid[i], L->block[i] = (uint32_t)geo->block[i];
    L->dyn = (size_t)geo->dyn;
    return BT_OK;
}

bt_status bt__run(bt__tctx *T, const bt__entry *e, bt__pdata *d, bt__btimer *timer, bt_diag *diag)
{
    return bt__run_geom(T, e, NULL, d, timer, diag);
}

bt_status bt__run_geom(bt__tctx *T, const bt__entry *e, const bt__geom *geo, bt__pdata *d,
                       bt__btimer *timer, bt_diag *diag)
{
    launch L;
    bt_status st = launch_of(T, e, geo, d, &L, diag);
    if (st)
        return st;
    if (!L.grid[0] || !L.grid[1] || !L.grid[2])
        return BT_OK; /* an empty problem: nothing to launch */
    return T->I->launch(T->D, e->fn, L.grid, L.block, L.dyn, L.args, T->k->nargs, timer, diag);
}

bt_status bt__run_graph(bt__tctx *T, const bt__entry *e, bt__pdata *d, int reps, double *ms,
                        bt_diag *diag)
{
    launch L;
    bt_status st = launch_of(T, e, NULL, d, &L, diag);
    if (st)
        return st;
    return T->I->launch_graph_timed(T->D, e->fn, L.grid, L.block, L.dyn, L.args, T->k->nargs,
                                    reps, ms, diag);
}
