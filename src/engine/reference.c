/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reference.c — the device references and the problems' data. A spec's reference can run on the
 * device: a baseline config of the kernel ("reference": {"config": ...}) or a reference kernel
 * (its own sources, entry and launch geometry over problem variables; the same arguments). It is
 * built and loaded once per tune (a compile error stops the tune, showing the compiler's log),
 * then run once on each problem's data — the tuned problem and every boundary size, a binary per
 * size when the spec passes sizes as defines — with poisoned outputs; its outputs are that
 * problem's reference, against which every config is verified as against a host reference. They
 * stay on the device where the comparison kernel runs and every output is a float type: a scan
 * there that finds no NaN or infinity proves every element written, and a copy beside them is the
 * reference (devcmp.c); otherwise they are read back and checked on the host. An output element
 * the reference left unwritten is an error, never a pass. The boundary problems' data is made
 * once per tune and kept.
 */
#include "engine/tune_ctx.h"

#include "core/expr.h"
#include "core/util.h"
#include "engine/record.h"
#include "engine/userdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference kernel's launch geometry at p: its grid and block over problem variables. */
static bt_status ref_geometry(const bt__tctx *T, const bt_problem *p, bt__geom *geo,
                              bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    int64_t slots[BT__STACK_SLOTS];
    if (bt__kdesc_stack_slots(k, NULL, p, T->g, slots) != BT_OK)
        return BT_INTERNAL;
    for (int d = 0; d < 3; d++) {
        bt_status st = bt__kexpr_eval(k, &k->ref_grid[d], slots, &geo->grid[d], diag);
        if (!st)
            st = bt__kexpr_eval(k, &k->ref_block[d], slots, &geo->block[d], diag);
        if (st)
            return st;
        if (geo->grid[d] < 1 || geo->block[d] < 1 || geo->grid[d] > INT32_MAX ||
            geo->block[d] > 65536) {
            bt__diag_set(diag, "the reference kernel's geometry is out of range at this problem: "
                         "grid[%d]=%lld block[%d]=%lld", d, (long long)geo->grid[d], d,
                         (long long)geo->block[d]);
            return BT_INVALID_ARG;
        }
    }
    geo->dyn = 0;
    return BT_OK;
}

/* The reference kernel's source in the language of the kernel's own (the one this backend
 * compiles), NULL when the spec gives none. */
static const bt__ksource *ref_source(const bt__tctx *T)
{
    const bt_kdesc *k = T->k;
    for (int i = 0; i < k->nref_src; i++)
        if (!strcmp(k->ref_src[i].lang, T->kn->src->lang))
            return &k->ref_src[i];
    return NULL;
}

/* What a reference kernel cannot have: a geometry that reads parameters (it has none) or
 * tensor-map arguments (their box is a config's). */
static bt_status ref_kernel_check(const bt__tctx *T, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    if (!ref_source(T)) {
        bt__diag_set(diag, "the reference kernel has no %s source (spec field "
                     "reference.sources.%s)", T->kn->src->lang, T->kn->src->lang);
        return BT_UNSUPPORTED;
    }
    for (int g = 0; g < 6; g++) {
        const bt__kexpr *x = g < 3 ? &k->ref_grid[g] : &k->ref_block[g - 3];
        for (int i = 0; i < k->space.nparams; i++)
            if (bt__expr_uses(x->e, i)) {
                bt__diag_set(diag, "%s: the reference kernel's geometry reads parameter '%s': it "
                             "is over problem variables only", x->field, k->space.params[i].name);
                return BT_INVALID_ARG;
            }
    }
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].role == BT__KARG_TMAP) {
            bt__diag_set(diag, "a reference kernel cannot take tensor-map arguments ('%s': its "
                         "box depends on a config); verify against a baseline config instead",
                         k->args[i].name);
            return BT_UNSUPPORTED;
        }
    return BT_OK;
}

/* Compiles the reference kernel for problem p into e->blob (through the kernel cache): its own
 * source and entry, the problem's defines, BT_THREADS of its block (build.c). */
static void ref_kernel_build(const bt__tctx *T, const bt_problem *p, bt__entry *e)
{
    const bt_kdesc *k = T->k;
    bt__geom geo;
    bt_diag gd;
    int64_t threads = ref_geometry(T, p, &geo, &gd) == BT_OK
                          ? geo.block[0] * geo.block[1] * geo.block[2]
                          : 0;
    char defs[BT__MAX_DEFINES][96];
    const char *dp[BT__MAX_DEFINES];
    int nd = bt__build_defines_common(k, p, T->g, threads, defs);
    for (int i = 0; i < nd; i++)
        dp[i] = defs[i];
    bt__build_source(T->kn, ref_source(T), k->ref_entry, dp, nd, true, e);
}

/* The reference for problem p (boundary size b, -1: the tuned problem) built and loaded into e
 * (zeroed by the caller): the baseline config (its binary the round built ahead, when it did),
 * or the reference kernel. On failure diag says why, with the compiler's log. */
static bt_status devref_build(bt__tctx *T, const bt_problem *p, int b, bt__entry *e,
                              bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__devref *R = &T->dref;
    bt_diag ld = {0};
    bt_status st = BT_OK;
    if (R->kernel)
        ref_kernel_build(T, p, e);
    else if (b < 0 || !bt__prebuilt_take(T->kn, T->pre, T->npre, b, &k->ref_config, e))
        bt__build(T->kn, p, e, true);
    if (e->status == BT__CS_PENDING) {
        if (R->kernel) {
            st = T->I->module_load(T->D, e->blob.data, e->blob.size, &e->mod, &ld);
            if (!st)
                st = T->I->function_get(T->D, e->mod, k->ref_entry, &e->fn, &e->res, &ld);
        } else
            st = bt__build_load(T->kn, p, e, &ld);
        if (st)
            bt__entry_fail(e, bt__cfg_status_of(st), ld.msg);
    }
    if (e->status == BT__CS_PENDING)
        return BT_OK;
    if (e->status == BT__CS_COMPILE)
        bt__diag_set(diag, "%s does not compile%s%s%s: %.*s", R->name,
                     R->kernel ? " (reference.sources." : "", R->kernel ? T->kn->src->lang : "",
                     R->kernel ? ")" : "", 700, e->log && e->log[0] ? e->log : "(the compiler gave no log)");
    else
        bt__diag_set(diag, "%s does not load: %.700s", R->name, e->error ? e->error : "?");
    return e->status == BT__CS_COMPILE ? BT_COMPILE : st ? st : BT_LAUNCH;
}

bt_status bt__devref_prepare(bt__tctx *T, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__devref *R = &T->dref;
    if (!bt__has_devref(k) || R->loaded)
        return BT_OK;
    R->kernel = k->ref == BT__REF_KERNEL;
    if (R->kernel) {
        snprintf(R->name, sizeof R->name, "the reference kernel '%.100s'", k->ref_entry);
        bt_status st = ref_kernel_check(T, diag);
        if (st)
            return st;
    }
    bt__entry_drop(T, &R->e);
    if (!R->kernel) {
        char cfg[120];
        bt__config_format(&k->space, &k->ref_config, " ", cfg, sizeof cfg);
        snprintf(R->name, sizeof R->name, "the reference (baseline) config %s", cfg);
        bt__model_eval(&T->r->plan->model, &k->ref_config, &R->e.ev);
        bt__cfg_eval_clear(&R->e.ev);
    }
    double t0 = bt__now();
    bt_status st = devref_build(T, T->p, -1, &R->e, diag);
    T->r->t_ref += bt__now() - t0;
    R->loaded = st == BT_OK;
    return st;
}

void bt__devref_free(bt__tctx *T)
{
    bt__entry_drop(T, &T->dref.e);
    T->dref.loaded = false;
    bt__devcmp_free(T); /* the comparison kernel too: both end with the tune or the device */
}

/* Whether the baseline config is a config of the kernel at boundary problem B (its constraints
 * hold there): where they do not, it cannot be the reference. */
static bool baseline_applies(bt__tctx *T, bt__bprob *B)
{
    if (T->dref.kernel || !B->have_model)
        return true; /* the run says */
    bt__cfg_eval ev = {0};
    bool ok = bt__model_eval(&B->m, &T->k->ref_config, &ev) == BT_OK && ev.valid;
    bt__cfg_eval_clear(&ev);
    return ok;
}

/* Whether element j of h holds its dtype's poison (pat, ps bytes). */
static bool is_poison(const bt__hostbuf *h, size_t j, const uint8_t *pat, size_t ps)
{
    return !memcmp((const uint8_t *)h->data + j * ps, pat, ps);
}

/* The index of h's first element that holds the poison (pat, ps bytes); h->count when none. One
 * comparison of a word per element where the element is 2, 4 or 8 bytes (a reference's whole
 * output is scanned on every tune). */
static size_t first_poison(const bt__hostbuf *h, const uint8_t *pat, size_t ps)
{
#define SCAN(W)                                                                                    \
    {                                                                                              \
        W q, *x = h->data;                                                                         \
        memcpy(&q, pat, sizeof q);                                                                 \
        for (size_t j = 0; j < h->count; j++)                                                      \
            if (x[j] == q)                                                                         \
                return j;                                                                          \
        return h->count;                                                                           \
    }
    if (ps == 2)
        SCAN(uint16_t)
    if (ps == 4)
        SCAN(uint32_t)
    if (ps == 8)
        SCAN(uint64_t)
#undef SCAN
    size_t j = 0;
    while (j < h->count && !is_poison(h, j, pat, ps))
        j++;
    return j;
}

/* An output element that still held the poison after the reference's run, and holds something
 * else after a second run whose outputs started as zeros, was left unwritten (a reference that
 * really computes the poison's bits writes them both times). */
static bt_status unwritten(bt__tctx *T, const bt__entry *e, const bt__geom *geo, bt__pdata *d,
                           const char *where, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__hostbuf first[BT__MAX_ARGS] = {{0}};
    bool any = false;
    bt_status st = BT_OK;
    for (int i = 0; i < k->nargs && !st; i++) {
        if (!k->args[i].output)
            continue;
        uint8_t pat[8];
        size_t ps, j = 0;
        bt__poison_pattern(d->host[i].dtype, pat, &ps);
        j = first_poison(&d->host[i], pat, ps);
        if (j == d->host[i].count)
            continue;
        st = bt__hostbuf_alloc(&first[i], d->host[i].dtype, d->host[i].count);
        if (!st)
            memcpy(first[i].data, d->host[i].data, bt__hostbuf_bytes(&d->host[i]));
        any = true;
    }
    if (any && !st)
        st = bt__run_poisoned(T, e, geo, d, true, true, diag);
    for (int i = 0; i < k->nargs && !st; i++) {
        if (!first[i].data)
            continue;
        uint8_t pat[8];
        size_t ps, n = 0, at = 0;
        bt__poison_pattern(d->host[i].dtype, pat, &ps);
        for (size_t j = 0; j < first[i].count; j++)
            if (is_poison(&first[i], j, pat, ps) && !is_poison(&d->host[i], j, pat, ps) &&
                n++ == 0)
                at = j;
        if (n) {
            bt__diag_set(diag, "%s left %zu of %zu elements of output '%s' unwritten%s%s (the "
                         "first at [%zu]): it cannot be the reference", T->dref.name, n,
                         first[i].count, k->args[i].name, where[0] ? " at " : "", where, at);
            st = BT_WRONG_RESULT;
        }
    }
    for (int i = 0; i < k->nargs; i++)
        bt__hostbuf_free(&first[i]);
    return st;
}

/* Runs the device reference once on d (poisoned outputs, watched) and keeps its outputs as d's
 * reference. A binary of its own at a problem other than the tuned one when the binary depends
 * on the sizes (defines, a Triton kernel's specialization); b: d's boundary size (-1: none). */
static bt_status devref_run(bt__tctx *T, bt__pdata *d, int b, const char *where, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    bt__devref *R = &T->dref;
    bt__entry own, *e = &R->e;
    bt_status st = BT_OK;
    if (bt__build_per_problem(T->kn) && memcmp(d->p.values, T->p->values, sizeof d->p.values)) {
        memset(&own, 0, sizeof own);
        own.ev.cfg = k->ref_config;
        e = &own;
        st = devref_build(T, &d->p, b, e, diag);
    }
    bt__geom geo;
    if (!st && R->kernel)
        st = ref_geometry(T, &d->p, &geo, diag);
    if (!st) {
        char what[240];
        snprintf(what, sizeof what, "%s%s%s", R->name, where[0] ? " at " : "", where);
        bt__inflight_note(BT__INFLIGHT_REFERENCE, false, "%s", what);
        bt__watch_begin(T, e, false, T->o.timeout_s, true, what);
        st = bt__run_poisoned(T, e, R->kernel ? &geo : NULL, d, false, false, diag);
        bool kept = false;
        if (!st)
            st = bt__devcmp_keep_ref(T, d, &kept, diag);
        for (int i = 0; i < k->nargs && !st && !kept; i++) /* checked on the host */
            if (k->args[i].output)
                st = T->I->buf_read(T->D, d->dev[i], 0, d->host[i].data,
                                    bt__hostbuf_bytes(&d->host[i]), diag);
        if (!st && !kept)
            st = unwritten(T, e, R->kernel ? &geo : NULL, d, where, diag);
        for (int i = 0; i < k->nargs && !st && !kept; i++)
            if (k->args[i].output && (st = bt__pdata_ref_host(T, d, i, diag)) == BT_OK)
                bt__hostbuf_get_all(&d->host[i], d->ref[i]);
        bt__watch_end(T);
        bt__inflight_clear();
        if (!st && e->status == BT__CS_TIMEOUT) {
            bt__diag_set(diag, "%s: %s", R->name, e->error);
            st = BT_TIMEOUT;
        } else if (st && st != BT_WRONG_RESULT)
            bt__diag_prefix(diag, "%s failed%s%s: ", R->name, where[0] ? " at " : "", where);
    }
    if (e == &own)
        bt__entry_drop(T, &own);
    if (st)
        return st;
    d->have_ref = true;
    R->runs++;
    return BT_OK;
}

bt_status bt__problem_data(bt__tctx *T, bt__pdata *d, const bt_problem *p, uint64_t seed,
                           bt_buffer *const *caller, int ncaller, const char *where,
                           bt_diag *diag)
{
    bt_status st = bt__pdata_init(T, d, p, seed, caller, ncaller, diag);
    if (st || !bt__has_devref(T->k))
        return st;
    double t0 = bt__now();
    st = devref_run(T, d, -1, where, diag);
    if (!where[0]) /* the tuned problem's */
        T->r->t_ref += bt__now() - t0;
    if (st)
        bt__pdata_free(T, d);
    return st;
}

static void bprob_free(bt__tctx *T, bt__bprob *B)
{
    bt__pdata_free(T, &B->d);
    if (B->have_model)
        bt__model_fini(&B->m);
    free(B);
}

bt__bprob *bt__boundary_data(bt__tctx *T, int b, bt_status *st)
{
    *st = BT_OK;
    if (T->bnd_skip[b] || T->bnd[b])
        return T->bnd[b];
    bt__bprob *B = calloc(1, sizeof *B);
    if (!B) {
        *st = BT_NOMEM;
        return NULL;
    }
    bt_problem bp;
    bt__boundary_problem(T, b, &bp, B->where, sizeof B->where);
    bt_diag dd = {0};
    bt_status s = bt__pdata_init(T, &B->d, &bp, T->o.seed + 1 + (uint64_t)b, NULL, 0, &dd);
    if (s) { /* said, not fatal: the other sizes are still verified */
        bt__diag_set(T->sdiag, "boundary problem %d: %s", b, dd.msg);
        T->bnd_skip[b] = true;
        free(B);
        return NULL;
    }
    B->have_model = bt__model_init(&B->m, T->k, &B->d.p, T->g, T->r->plan->model.rules, NULL) ==
                    BT_OK;
    if (bt__has_devref(T->k) && !baseline_applies(T, B)) {
        bt__diag_set(T->sdiag, "boundary size %s: %s is outside the kernel's constraints there, "
                     "so no config is verified at this size", B->where, T->dref.name);
        T->bnd_skip[b] = true;
        bprob_free(T, B);
        return NULL;
    }
    if (bt__has_devref(T->k) && (s = devref_run(T, &B->d, b, B->where, &dd)) != BT_OK) {
        *T->sdiag = dd; /* a reference that fails at a boundary size stops the tune */
        *st = s;
        bprob_free(T, B);
        return NULL;
    }
    T->bnd[b] = B;
    return B;
}

void bt__boundary_free(bt__tctx *T)
{
    for (int b = 0; b < BT__MAX_BOUNDARY; b++) {
        if (T->bnd[b])
            bprob_free(T, T->bnd[b]);
        T->bnd[b] = NULL;
        T->bnd_skip[b] = false;
    }
}
