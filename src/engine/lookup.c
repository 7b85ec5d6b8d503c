/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lookup.c — bt_kernel_lookup and the bt_choice it returns: the config a launch of a problem
 * would use (the dispatch table, then the store and wisdom as a first launch looks them up; in
 * wisdom-only mode the nearest size, the same architecture, then the model, never compiling or
 * measuring; in tune mode a tune on generated data), with its geometry and scalar arguments, and
 * on request the compiled function and binary for an engine that launches it itself.
 */
#include "engine/engine.h"

#include "core/util.h"
#include "engine/fam.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bt_choice {
    bt_kernel *kn;
    bt_problem p;
    bt_source source;
    bt__dispatch e;   /* config, geometry and scalars for p (no module) */
    char *json;       /* the config as JSON */
    bt__bmod *mod;    /* compiled on request (bt_choice_function / _binary) */
    bt__bfn *fn;
    bt__blob blob;
    const void *image; /* the device image inside blob */
    size_t image_size;
};

const char *bt_source_name(bt_source s)
{
    static const char *const names[] = {"memory",       "store",     "user-wisdom",
                                         "shipped-wisdom", "nearest-size", "same-arch",
                                         "model",        "tuned"};
    return (unsigned)s < sizeof names / sizeof *names ? names[s] : "unknown";
}

/* The config for p's key and where it came from (under the tune lock). */
static bt_status choose(bt_kernel *kn, const bt_problem *p, int no_tune, bt_config *c,
                        bt_source *src, bt_diag *diag)
{
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    bt__dispatch e;
    if (bt__dispatch_find(kn, &key, &e)) {
        *c = e.cfg;
        *src = BT_SOURCE_MEMORY;
        return BT_OK;
    }
    bool found = false;
    bt_status st = BT_OK;
    if (kn->opts.mode != BT_MODE_RETUNE)
        st = bt__resolve(kn, p, c, src, &found, diag);
    if (st || found)
        return st;
    if (kn->opts.mode == BT_MODE_WISDOM_ONLY) /* bt__resolve always finds one there */
        return BT_INTERNAL;
    if (no_tune) {
        bt__diag_set(diag, "no config of '%s' for this key in memory, the store or wisdom, and "
                     "the lookup said no_tune", kn->k->name);
        return BT_NOT_FOUND;
    }
    bt_result *r = NULL;
    st = bt__tune(kn, p, &kn->opts, NULL, 0, &r, diag);
    if (st == BT_OK)
        kn->tunes++;
    double med;
    if (st == BT_OK && !bt__result_winner(r, c, &med)) {
        bt__diag_set(diag, "no config of '%s' passed verification for this problem "
                     "(blocktune tune shows why)", kn->k->name);
        st = BT_WRONG_RESULT;
    }
    bt_result_destroy(r);
    *src = BT_SOURCE_TUNED;
    return st;
}

bt_status bt_kernel_lookup(bt_kernel *kn, const bt_problem *p, int no_tune, bt_choice **out,
                           bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!kn || !p || p->k != kn->k) {
        bt__diag_set(diag, "bt_kernel_lookup: NULL kernel or problem, or a problem of another "
                     "kernel");
        return BT_INVALID_ARG;
    }
    if (kn->fam) { /* a front door: the choice of the family its key goes to (famkern.c) */
        int f;
        bt_problem fp;
        bt_status fst = bt__fam_route(kn, p, no_tune != 0, &f, &fp, diag);
        if (fst != BT_OK)
            return fst;
        if (bt__fam_kernel(kn, f) != kn)
            return bt_kernel_lookup(bt__fam_kernel(kn, f), &fp, no_tune, out, diag);
    }
    bt_choice *c = calloc(1, sizeof *c);
    if (!c)
        return BT_NOMEM;
    c->kn = kn;
    c->p = *p;
    pthread_mutex_lock(&kn->tune_lock);
    bt_status st = choose(kn, p, no_tune, &c->e.cfg, &c->source, diag);
    pthread_mutex_unlock(&kn->tune_lock);
    if (!st)
        st = bt__dispatch_eval(kn, p, &c->e, diag);
    if (!st && !(c->json = bt__config_json(&kn->k->space, &c->e.cfg)))
        st = BT_NOMEM;
    if (st) {
        bt_choice_destroy(c);
        return st;
    }
    *out = c;
    return BT_OK;
}

bt_source bt_choice_source(const bt_choice *c) { return c ? c->source : BT_SOURCE_MEMORY; }

int bt_choice_nparams(const bt_choice *c) { return c ? c->kn->k->space.nparams : 0; }

const char *bt_choice_param_name(const bt_choice *c, int i)
{
    return c && i >= 0 && i < c->kn->k->space.nparams ? c->kn->k->space.params[i].name : NULL;
}

int64_t bt_choice_param_value(const bt_choice *c, int i)
{
    return c && i >= 0 && i < c->e.cfg.nparams ? c->e.cfg.v[i] : 0;
}

bt_status bt_choice_param(const bt_choice *c, const char *name, int64_t *value, bt_diag *diag)
{
    if (!c || !name || !value)
        return BT_INVALID_ARG;
    const bt__space *s = &c->kn->k->space;
    int i = bt__space_find(s, name);
    if (i < 0) {
        bt__sbuf b = {0};
        for (int j = 0; j < s->nparams; j++)
            bt__sbuf_printf(&b, "%s%s", j ? ", " : "", s->params[j].name);
        bt__diag_set(diag, "kernel '%s' has no parameter '%s' (it has %s)", c->kn->k->name, name,
                     b.s ? b.s : "none");
        bt__sbuf_free(&b);
        return BT_NOT_FOUND;
    }
    *value = c->e.cfg.v[i];
    return BT_OK;
}

const char *bt_choice_config_json(const bt_choice *c) { return c ? c->json : NULL; }

void bt_choice_geometry(const bt_choice *c, uint32_t grid[3], uint32_t block[3], size_t *dyn_smem)
{
    for (int d = 0; d < 3; d++) {
        if (grid)
            grid[d] = c ? c->e.grid[d] : 0;
        if (block)
            block[d] = c ? c->e.block[d] : 0;
    }
    if (dyn_smem)
        *dyn_smem = c ? c->e.dyn : 0;
}

bt_arg_kind bt_choice_arg(const bt_choice *c, int i, int64_t *ivalue, double *fvalue)
{
    if (!c || i < 0 || i >= c->kn->k->nargs)
        return BT_ARG_END;
    const bt__argspec *s = &c->kn->k->args[i];
    const bt__karg *a = &c->e.args[i];
    if (!strcmp(c->kn->src->lang, "triton")) /* Triton's parameter list is the backend's to make */
        return BT_ARG_OTHER;
    if (s->role == BT__KARG_BUFFER)
        return s->cmem ? BT_ARG_OTHER : BT_ARG_BUFFER;
    int64_t iv = 0;
    double fv = 0;
    bt_arg_kind kind;
    switch (a->kind) {
    case BT__ARG_I32: iv = a->u.i32, fv = a->u.i32, kind = BT_ARG_INT32; break;
    case BT__ARG_I64: iv = a->u.i64, fv = (double)a->u.i64, kind = BT_ARG_INT64; break;
    case BT__ARG_F32: fv = a->u.f32, iv = (int64_t)a->u.f32, kind = BT_ARG_FLOAT32; break;
    case BT__ARG_F64: fv = a->u.f64, iv = (int64_t)a->u.f64, kind = BT_ARG_FLOAT64; break;
    case BT__ARG_LOCAL:
        iv = (int64_t)a->u.local_bytes, fv = (double)a->u.local_bytes, kind = BT_ARG_LOCAL;
        break;
    default: return BT_ARG_OTHER;
    }
    if (ivalue)
        *ivalue = iv;
    if (fvalue)
        *fvalue = fv;
    return kind;
}

/* Compiles and loads the config once (under the kernel's tune lock). */
static bt_status compile_choice(bt_choice *c, bt_diag *diag)
{
    if (c->mod)
        return BT_OK;
    bt_kernel *kn = c->kn;
    pthread_mutex_lock(&kn->tune_lock);
    bt_status st = bt__load_config(kn, &c->p, &c->e.cfg, &c->mod, &c->fn, &c->blob, diag);
    /* an engine's own launch needs the function's dynamic shared memory limit raised too */
    if (!st && c->e.dyn && kn->iface->function_set_dyn_smem)
        st = kn->iface->function_set_dyn_smem(kn->bdev, c->fn, c->e.dyn, diag);
    if (!st && kn->iface->blob_image)
        st = kn->iface->blob_image(c->blob.data, c->blob.size, &c->image, &c->image_size, diag);
    pthread_mutex_unlock(&kn->tune_lock);
    return st;
}

bt_status bt_choice_function(bt_choice *c, void **native_fn, bt_diag *diag)
{
    if (!c || !native_fn)
        return BT_INVALID_ARG;
    *native_fn = NULL;
    if (!c->kn->iface->function_native) {
        bt__diag_set(diag, "the %s backend gives no native function", c->kn->iface->name);
        return BT_UNSUPPORTED;
    }
    bt_status st = compile_choice(c, diag);
    if (!st)
        *native_fn = c->kn->iface->function_native(c->fn);
    return st;
}

bt_status bt_choice_binary(bt_choice *c, const void **data, size_t *size, bt_diag *diag)
{
    if (!c || !data || !size)
        return BT_INVALID_ARG;
    *data = NULL;
    *size = 0;
    bt_status st = compile_choice(c, diag);
    if (!st && !c->image) {
        bt__diag_set(diag, "the %s backend gives no binary", c->kn->iface->name);
        st = BT_UNSUPPORTED;
    }
    if (!st) {
        *data = c->image;
        *size = c->image_size;
    }
    return st;
}

void bt_choice_destroy(bt_choice *c)
{
    if (!c)
        return;
    if (c->mod && c->kn->bdev)
        c->kn->iface->module_free(c->kn->bdev, c->mod);
    free(c->blob.data);
    free(c->json);
    free(c);
}
