/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch.c — the launch path of a bt_kernel (bt_kernel_launch, bt_kernel_launch_ex): the dispatch
 * table's hot path with every buffer checked before anything is enqueued (count, device, size
 * against the spec's size expression for the problem, declared dtype), the caller's stream; a
 * key's first launch (store and wisdom, else a tune, on scratch copies of the caller's wrapped
 * buffers unless it allows tuning in place); a front door's routing of a key to its family
 * (engine/fam.h) and the launch through it; and the wrapped buffers themselves (bt_buffer_wrap).
 */
#include "engine/engine.h"

#include "core/util.h"
#include "engine/fam.h"
#include "engine/record.h"
#include "engine/userdata.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A launch on a device lost to a fault (kn->bdev NULL). */
static bt_status device_lost(bt_diag *diag)
{
    bt__diag_set(diag, "the device was lost to a fault; CUDA cannot recover in this process");
    return BT_LAUNCH;
}

/* The buffers against the entry for p: each one's device, size and declared dtype. Fills the
 * buffer arguments of args. Reads the kernel's list of buffer arguments, not the spec's (the
 * argument descriptions are kilobytes apart: cache lines a launch would miss). */
static bt_status check_buffers(const bt_kernel *kn, const bt__dispatch *e, bt__karg *args,
                               bt__bbuf **bb, bt_buffer *const *buffers, int nbuffers,
                               bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    for (int nb = 0; nb < kn->nbuf; nb++) {
        int i = kn->buf_arg[nb];
        if (nb >= nbuffers || !buffers[nb]) {
            bt__diag_set(diag, "kernel '%s' takes more than the %d buffers given (argument '%s' "
                         "is buffer %d)", k->name, nbuffers, k->args[i].name, nb);
            return BT_INVALID_ARG;
        }
        const bt_buffer *b = buffers[nb];
        if (b->dev != kn->dev) {
            bt__diag_set(diag, "kernel '%s': buffer %d ('%s') belongs to another device (%s) "
                         "than the kernel's (%s)", k->name, nb, k->args[i].name,
                         bt_device_get_info(b->dev)->id, bt_device_get_info(kn->dev)->id);
            return BT_INVALID_ARG;
        }
        if (b->bytes < e->need[i]) {
            bt__diag_set(diag, "kernel '%s': buffer %d ('%s') holds %zu bytes, the problem needs "
                         "%zu (%zu %s elements)", k->name, nb, k->args[i].name, b->bytes,
                         e->need[i], e->need[i] / (size_t)bt__dtype_size(e->dtype[i]),
                         bt__dtype_name(e->dtype[i]));
            return BT_INVALID_ARG;
        }
        if (b->dtype >= 0 && b->dtype != e->dtype[i]) {
            bt__diag_set(diag, "kernel '%s': buffer %d ('%s') holds %s, the problem's '%s' is %s",
                         k->name, nb, k->args[i].name, bt__dtype_name(b->dtype), k->args[i].name,
                         bt__dtype_name(e->dtype[i]));
            return BT_INVALID_ARG;
        }
        if (args) {
            args[i].kind = BT__ARG_BUF;
            args[i].u.buf = b->b;
        } else {
            bb[nb] = b->b;
        }
    }
    if (kn->nbuf != nbuffers) {
        bt__diag_set(diag, "kernel '%s' takes %d buffers, %d given", k->name, kn->nbuf, nbuffers);
        return BT_INVALID_ARG;
    }
    return BT_OK;
}

/* The geometry and arguments of e for p, evaluated for a problem like p's (the first time this
 * key is seen, they come from the problem that created the entry). */
static bt_status entry_for(bt_kernel *kn, const bt_problem *p, const bt__tune_on *on,
                           bt__dispatch *e, bt_diag *diag)
{
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    if (!bt__dispatch_find(kn, &key, e)) {
        /* the buffers are checked before a tune reads them (sizes need no config) */
        const bt_kdesc *k = kn->k;
        int64_t slots[BT__STACK_SLOTS];
        if (bt__kdesc_stack_slots(k, NULL, p, &bt_device_get_info(kn->dev)->props, slots) != BT_OK)
            return BT_INTERNAL;
        bt_status st = bt__buffer_needs(k, p, slots, e->need, e->dtype, diag);
        if (!st)
            st = check_buffers(kn, e, e->args, NULL, on->buffers, on->nbuffers, diag);
        if (!st)
            st = bt__first_launch(kn, p, &key, on, e, diag);
        if (st)
            return st;
    }
    /* a copy: its prepared launch points into the published entry's values, which a problem
     * that differs outside the key does not share, so the copy launches the usual way */
    e->has_rec = false;
    /* geometry and scalars were evaluated when the winner was stored; only a problem that
     * differs in a variable outside the key needs them again */
    if (memcmp(e->pvals, p->values, sizeof *p->values * (size_t)kn->nproblem))
        return bt__dispatch_eval(kn, p, e, diag);
    return BT_OK;
}

/* One launch of entry e for p on the buffers and stream of on: the buffers checked into a copy
 * of e's arguments, tensor maps and constant memory bound, then the backend's launch. */
static bt_status launch_entry(bt_kernel *kn, const bt_problem *p, const bt__dispatch *e,
                              const bt__tune_on *on, bt_diag *diag)
{
    const bt_kdesc *k = kn->k;
    bt__bdev *bd = bt__kernel_bdev(kn);
    bt_status st;
    if (e->has_rec && bd) { /* the launch the backend prepared when the entry was made */
        bt__bbuf *bb[BT__MAX_ARGS];
        if ((st = check_buffers(kn, e, NULL, bb, on->buffers, on->nbuffers, diag)) != BT_OK)
            return st;
        if (kn->iface->launch_rec(bd, on->stream, e->rec, bb, &st, diag))
            return st;
    }
    bt__karg args[BT__MAX_ARGS];
    memcpy(args, e->args, sizeof *args * (size_t)kn->nargs);
    st = check_buffers(kn, e, args, NULL, on->buffers, on->nbuffers, diag);
    if (st)
        return st;
    if (!bd) {
        return device_lost(diag);
    }
    if (!e->grid[0] || !e->grid[1] || !e->grid[2])
        return BT_OK;
    bt__tmap_blob tm[BT__MAX_TMAPS];
    if (e->has_tmaps && (st = bt__tmap_bind(k, kn->iface, bd, e->tm, args, tm, diag)))
        return st;
    if (kn->has_cmem) {
        pthread_mutex_lock(&kn->cmem_lock);
        st = bt__cmem_bind(k, kn->iface, bd, e->mod, p,
                           &bt_device_get_info(kn->dev)->props, args, diag);
    }
    if (!st && (on->stream || kn->wrapped) && kn->iface->launch_on)
        st = kn->iface->launch_on(bd, on->stream, e->fn, e->grid, e->block, e->dyn, args,
                                  kn->nargs, diag);
    else if (!st)
        st = kn->iface->launch(bd, e->fn, e->grid, e->block, e->dyn, args, kn->nargs, NULL,
                               diag);
    if (kn->has_cmem)
        pthread_mutex_unlock(&kn->cmem_lock);
    return st;
}

bt_status bt_kernel_launch_ex(bt_kernel *kn, const bt_problem *p, bt_buffer *const *buffers,
                              int nbuffers, const bt_launch_options *lo, bt_diag *diag)
{
    if (!kn || !p || p->k != kn->k || nbuffers < 0 || (nbuffers && !buffers)) {
        bt__diag_set(diag, "bt_kernel_launch: NULL kernel or problem, a problem of another "
                     "kernel, or %d buffers at %p", nbuffers, (const void *)buffers);
        return BT_INVALID_ARG;
    }
    if (!bt__kernel_bdev(kn)) {
        return device_lost(diag);
    }
    /* leading size: fields past what the caller's struct holds take their defaults; 0 is the
     * 0.2.0 layout (up to no_tune) */
    size_t lsize = !lo ? 0 : lo->size ? lo->size : offsetof(bt_launch_options, no_tune) + sizeof(int);
    bt__tune_on on = {buffers, nbuffers, NULL, false, false};
    if (lsize >= offsetof(bt_launch_options, stream) + sizeof lo->stream)
        on.stream = lo->stream;
    if (lsize >= offsetof(bt_launch_options, allow_tune_in_place) + sizeof(int))
        on.in_place = lo->allow_tune_in_place != 0;
    if (lsize >= offsetof(bt_launch_options, no_tune) + sizeof(int))
        on.no_tune = lo->no_tune != 0;
#ifdef BT__ABI_GROWN
    if (lsize >= offsetof(bt_launch_options, grown_priority) + sizeof(int) &&
        (lo->grown_priority < 0 || lo->grown_priority > 10)) {
        bt__diag_set(diag, "grown_priority %d is not 0..10", lo->grown_priority);
        return BT_INVALID_ARG;
    }
#endif
    if (on.stream && !kn->iface->launch_on) {
        bt__diag_set(diag, "the %s backend cannot launch on a caller's stream", kn->iface->name);
        return BT_UNSUPPORTED;
    }
    int f;
    bt_problem fp;
    if (kn->fam) { /* a front door: the family its key goes to runs it */
        bt_status fst = bt__fam_route(kn, p, on.no_tune, &f, &fp, diag);
        bt_buffer *fb[BT__MAX_ARGS];
        int nfb = 0;
        if (fst == BT_OK && bt__fam_kernel(kn, f) != kn &&
            (fst = bt__fam_buffers(kn, f, &fp, buffers, nbuffers, fb, &nfb, diag)) == BT_OK)
            return bt_kernel_launch_ex(bt__fam_kernel(kn, f), &fp, fb, nfb, lo, diag);
        if (fst != BT_OK)
            return fst;
    }
    /* the hot path: the key's entry used in place, no lock (published entries never change and
     * live as long as the kernel) */
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    const bt__dispatch *o = bt__dispatch_get(kn, &key);
    if (o && !memcmp(o->pvals, p->values, sizeof *p->values * (size_t)kn->nproblem))
        return launch_entry(kn, p, o, &on, diag);
    /* a key's first launch, or a problem that differs from the entry's outside the key */
    bt__dispatch e;
    bt_status st = entry_for(kn, p, &on, &e, diag);
    return st ? st : launch_entry(kn, p, &e, &on, diag);
}

/* The looked-up config of p's key into the dispatch table (compiled, not measured). */
static bt_status from_wisdom(bt_kernel *kn, const bt_problem *p, bt_diag *diag)
{
    bt_config c;
    bt_source src;
    bool found;
    bt_status st = bt__resolve(kn, p, &c, &src, &found, diag);
    if (st == BT_OK && found)
        st = bt__dispatch_config(kn, p, &c, diag);
    return st;
}

/* Tunes p's key on the given buffers (no store or wisdom had it) and logs the winner. */
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
    if (st == BT_OK && bt__decision_log_enabled() && bt__result_winner(r, &wc, &med)) {
        char *cj = bt__config_json(&k->space, &wc);
        char xc[120] = "";
        if (r->xc_known && r->xc_started && r->xc_ready_s >= 0)
            snprintf(xc, sizeof xc, "; Triton's compile pool%s ready %.2f s after its start",
                     r->xc_embedder ? " (started by the embedder)" : "", r->xc_ready_s);
        bt__decision_log("%s: tuned %zu configs for this key in %.2f s (data %.2f of which the "
                         "device reference %.2f, compile %.2f, verify %.2f, measure %.2f of which "
                         "finals %.2f%s): winner %s at %.4f ms, margin %.1f%%%s", k->name, r->n,
                         r->t_total, r->t_data, r->t_ref, r->t_compile, r->t_verify, r->t_measure,
                         r->t_finals, xc,
                         cj ? cj : "?", med, r->margin * 100,
                         r->tie ? " (tie within noise)" : "");
        free(cj);
    }
    bt_result_destroy(r);
    return st;
}

bt_status bt__first_launch(bt_kernel *kn, const bt_problem *p, const bt__dkey *key,
                           const bt__tune_on *on, bt__dispatch *e, bt_diag *diag)
{
    pthread_mutex_lock(&kn->tune_lock);
    bt_status st = BT_OK;
    if (!bt__dispatch_find(kn, key, e) && kn->opts.mode != BT_MODE_RETUNE)
        st = from_wisdom(kn, p, diag); /* store → user → shipped wisdom → ... (no measuring) */
    if (st != BT_OK && kn->opts.mode == BT_MODE_TUNE && !on->no_tune) {
        bt__decision_log("%s: the looked-up config failed (%s); tuning instead", kn->k->name,
                         diag ? diag->msg : bt_strerror(st));
        st = BT_OK;
    }
    if (st == BT_OK && !bt__dispatch_find(kn, key, e)) { /* nobody tuned it meanwhile */
        if (kn->opts.mode == BT_MODE_WISDOM_ONLY) {
            bt__diag_set(diag, "wisdom-only mode and no config for this key");
            st = BT_FORBIDDEN;
        } else if (on->no_tune) {
            bt__diag_set(diag, "no config of '%s' for this key in memory, the store or wisdom, "
                         "and the launch said no_tune", kn->k->name);
            st = BT_NOT_FOUND;
        } else {
            bt_buffer *scratch[BT__MAX_ARGS];
            bt_buffer *const *bufs = on->buffers;
            st = bt__scratch_copies(kn, on, scratch, &bufs, diag);
            if (st == BT_OK)
                st = tune_key(kn, p, bufs, on->nbuffers, diag);
            bt__scratch_free(on, scratch);
        }
        if (st == BT_OK && !bt__dispatch_find(kn, key, e))
            st = BT_INTERNAL;
    }
    pthread_mutex_unlock(&kn->tune_lock);
    return st;
}

/* --- a front door's routing (engine/fam.h) ---------------------------------------------------- */
/* The family of p's key when nothing is stored: the one family that runs, or in wisdom-only mode
 * the best predicted; -1 when a tune must choose (BT_UNSUPPORTED when none runs). */
bt_status bt__fam_unstored(bt_kernel *kn, const bt_problem *p, int *f, bt_diag *diag)
{
    bt__famplan *fp = NULL;
    bt_plan_options po = {.rules = kn->opts.rules};
    *f = -1;
    bt_status st = bt__famplan_create(kn->k, p, &bt_device_get_info(kn->dev)->props,
                                      kn->iface->languages, &po, &fp, diag);
    if (st)
        return st;
    for (int i = 0; i < fp->n; i++) /* a family this handle cannot run does not run */
        if (fp->e[i].verdict == BT__FAM_RUN && !bt__fam_kernel(kn, i))
            fp->e[i].verdict = BT__FAM_NO_SOURCE;
    int running = bt__famplan_running(fp);
    for (int i = 0; i < fp->n && *f < 0; i++)
        if (fp->e[i].verdict == BT__FAM_RUN &&
            (running == 1 || (kn->opts.mode == BT_MODE_WISDOM_ONLY && i == fp->best)))
            *f = i;
    if (!running) {
        bt__diag_set(diag, "no family of '%s' runs this problem on this device", kn->k->name);
        st = BT_UNSUPPORTED;
    }
    bt__famplan_free(fp);
    return st;
}

/* Family f, a nearest size's choice of the front door, resolves p's key itself where it runs this
 * size (its own store and wisdom, else its model's best): planning that one family, not every
 * family. */
static bool family_resolves(bt_kernel *kn, int f, const bt_problem *p)
{
    if (!bt__fam_runs(kn, f, p))
        return false;
    bt__decision_log("%s: %s resolves this size itself", kn->k->name,
                     bt__fam_kernel(kn, f)->k->name);
    bt__fam_choose(kn, p, f);
    return true;
}

/* The first use of p's key by a front door (under its tune lock). */
static bt_status fam_first(bt_kernel *kn, const bt_problem *p, bool no_tune, bt_diag *diag)
{
    bool found, exact;
    int f = -1;
    bt_config c;
    bool wisdom_only = kn->opts.mode == BT_MODE_WISDOM_ONLY;
    /* another key's choice only where its family's config is valid for this size */
    bt__fam_stored(kn, p, wisdom_only ? bt__fam_choice_fits : NULL, &f, &c, &found, &exact);
    if (found) { /* the front door's stored choice, compiled into its family's table */
        bt_problem fp;
        bt__family_problem(kn->k, f, p, &fp);
        bt_status st = bt__dispatch_config(bt__fam_kernel(kn, f), &fp, &c, diag);
        if (st == BT_OK) {
            bt__fam_choose(kn, p, f);
            return BT_OK;
        }
        if (exact && (kn->opts.mode != BT_MODE_TUNE || no_tune))
            return st;
        if (!exact && family_resolves(kn, f, p))
            return BT_OK;
        bt__decision_log("%s: the looked-up family choice failed here (%s)", kn->k->name,
                         diag ? diag->msg : bt_strerror(st));
    } else if (wisdom_only) {
        /* no choice of another key fits this size: the nearest one's family resolves it */
        bt__fam_stored(kn, p, NULL, &f, &c, &found, &exact);
        if (found && family_resolves(kn, f, p))
            return BT_OK;
    }
    bt_status st = bt__fam_unstored(kn, p, &f, diag);
    if (st == BT_OK && f >= 0) /* that family resolves or tunes the key itself */
        bt__fam_choose(kn, p, f);
    else if (st == BT_OK && no_tune) {
        bt__diag_set(diag, "no config of '%s' for this key in memory, the store or wisdom, and "
                     "the launch said no_tune", kn->k->name);
        st = BT_NOT_FOUND;
    } else if (st == BT_OK) {
        bt_result *r = NULL;
        st = bt__fam_tune(kn, p, &kn->opts, NULL, 0, &r, diag);
        if (st == BT_OK && bt__fam_chosen(kn, p) < 0) {
            bt__diag_set(diag, "no config of any family of '%s' passed verification for this "
                         "problem (blocktune tune shows why)", kn->k->name);
            st = BT_WRONG_RESULT;
        }
        if (st == BT_OK)
            kn->tunes++;
        bt_result_destroy(r);
    }
    return st;
}

bt_status bt__fam_route(bt_kernel *kn, const bt_problem *p, bool no_tune, int *f,
                        bt_problem *fp, bt_diag *diag)
{
    bt_status st = BT_OK;
    if ((*f = bt__fam_chosen(kn, p)) < 0) {
        pthread_mutex_lock(&kn->tune_lock);
        if ((*f = bt__fam_chosen(kn, p)) < 0) /* nobody chose it meanwhile */
            st = fam_first(kn, p, no_tune, diag);
        pthread_mutex_unlock(&kn->tune_lock);
        if (st == BT_OK && (*f = bt__fam_chosen(kn, p)) < 0)
            st = BT_NOMEM;
    }
    if (st == BT_OK)
        bt__family_problem(kn->k, *f, p, fp);
    return st;
}

bt_status bt_kernel_launch(bt_kernel *kn, const bt_problem *p, bt_buffer *const *buffers,
                           int nbuffers, bt_diag *diag)
{
    return bt_kernel_launch_ex(kn, p, buffers, nbuffers, NULL, diag);
}

/* --- what a first launch tunes on ------------------------------------------------------------ */
bt_status bt__scratch_copies(bt_kernel *kn, const bt__tune_on *on, bt_buffer *scratch[],
                             bt_buffer *const **bufs, bt_diag *diag)
{
    memset(scratch, 0, sizeof *scratch * BT__MAX_ARGS);
    *bufs = on->buffers;
    bool wrapped = false;
    for (int i = 0; i < on->nbuffers && i < BT__MAX_ARGS; i++)
        wrapped |= on->buffers[i] && on->buffers[i]->borrowed;
    const bt__backend_iface *I = kn->iface;
    /* the tune reads the caller's data on the device's own queue: after what the caller's
     * stream holds so far (an event, no host wait) */
    bt_status st = BT_OK;
    if (wrapped && I->stream_wait)
        st = I->stream_wait(kn->bdev, on->stream, diag);
    if (st || !wrapped || on->in_place || on->nbuffers > BT__MAX_ARGS)
        return st;
    for (int i = 0; i < on->nbuffers && st == BT_OK; i++) {
        bt_buffer *b = on->buffers[i];
        if (!b || b->dev != kn->dev)
            break; /* the launch's checks name it */
        st = bt_buffer_create(kn->dev, b->bytes, &scratch[i], diag);
        if (!st)
            st = I->buf_copy(kn->bdev, scratch[i]->b, b->b, b->bytes, diag);
        if (!st)
            scratch[i]->dtype = b->dtype;
    }
    if (st) {
        bt__diag_prefix(diag, "scratch copies of the caller's buffers for the first launch's "
                        "tune (allow_tune_in_place avoids them): ");
        bt__scratch_free(on, scratch);
        return st;
    }
    *bufs = scratch;
    return BT_OK;
}

void bt__scratch_free(const bt__tune_on *on, bt_buffer *scratch[])
{
    for (int i = 0; i < on->nbuffers && i < BT__MAX_ARGS; i++) {
        bt_buffer_destroy(scratch[i]);
        scratch[i] = NULL;
    }
}

/* --- wrapped buffers ------------------------------------------------------------------------- */
bt_status bt_buffer_wrap(bt_device *d, uint64_t native, size_t bytes, bt_buffer **out,
                         bt_diag *diag)
{
    if (!out || !d) {
        bt__diag_set(diag, "bt_buffer_wrap: NULL device or out");
        return BT_INVALID_ARG;
    }
    *out = NULL;
    const bt__backend_iface *I = bt__device_iface(d);
    if (!I->buf_wrap) {
        bt__diag_set(diag, "the %s backend cannot wrap a caller's memory", I->name);
        return BT_UNSUPPORTED;
    }
    bt_buffer *b = calloc(1, sizeof *b);
    if (!b)
        return BT_NOMEM;
    bt_status st = I->buf_wrap(bt__device_bdev(d), native, bytes, &b->b, diag);
    if (st) {
        free(b);
        return st;
    }
    b->dev = d;
    b->bytes = bytes;
    b->borrowed = true;
    b->dtype = -1;
    *out = b;
    return BT_OK;
}

size_t bt_buffer_size(const bt_buffer *b) { return b ? b->bytes : 0; }

bt_status bt_buffer_set_dtype(bt_buffer *b, const char *dtype, bt_diag *diag)
{
    bt__dtype t;
    if (!b || !dtype || !bt__dtype_parse(dtype, &t)) {
        bt__diag_set(diag, "bt_buffer_set_dtype: unknown dtype '%s'", dtype ? dtype : "(null)");
        return BT_INVALID_ARG;
    }
    b->dtype = (int)t;
    return BT_OK;
}
