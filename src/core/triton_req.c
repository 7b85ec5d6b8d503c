/* SPDX-License-Identifier: Apache-2.0 */
/*
 * triton_req.c — the Triton compile request of one config (kdesc.h: bt__triton_request): the
 * JSON object that python/blocktune/triton_compile.py compiles (docs/triton.md#requests), made
 * from a spec with a "triton" source, a config, a problem and a GPU. It says what Triton's own
 * JIT would specialize for the tuner's arguments: every buffer is 16-byte aligned (cuMemAlloc),
 * integer scalars are specialized on their values (so they must be in the key), float scalars
 * stay arguments.
 */
#include "core/kdesc.h"
#include "core/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Triton's name of an element type ("fp16", "i32"). */
static const char *triton_type(bt__dtype t)
{
    switch (t) {
    case BT__DT_FP32: return "fp32";
    case BT__DT_FP16: return "fp16";
    case BT__DT_BF16: return "bf16";
    case BT__DT_FP64: return "fp64";
    case BT__DT_FP8: return "fp8e4nv";
    case BT__DT_INT8: return "i8";
    case BT__DT_INT32: return "i32";
    case BT__DT_INT64: return "i64";
    default: return NULL;
    }
}

/* The launch option a parameter is ("num_warps"), NULL for a constexpr. */
static const char *option_of(const bt_kdesc *k, int i)
{
    if (i == k->p_num_warps)
        return "num_warps";
    if (i == k->p_num_stages)
        return "num_stages";
    if (i == k->p_num_ctas)
        return "num_ctas";
    if (!strcmp(k->space.params[i].name, "maxnreg"))
        return "maxnreg";
    return NULL;
}

/* Parameters (options or constexprs) and the "defines" (constexprs) into R. */
static bt_status add_params(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                            const bt_gpu *g, json_t *R, json_t *cx, bt_diag *diag)
{
    for (int i = 0; i < k->space.nparams; i++) {
        const char *opt = option_of(k, i);
        json_object_set_new(opt ? R : cx, opt ? opt : k->space.params[i].name,
                            json_integer((json_int_t)c->v[i]));
    }
    char defs[BT__MAX_PDEFINES][96];
    int nd = 0;
    bt_status st = bt__kdesc_pdefines(k, p, g, defs, &nd, diag);
    if (st != BT_OK)
        return st;
    for (int i = 0; i < nd; i++) {
        char *eq = strchr(defs[i], '=');
        if (!eq)
            return BT_INTERNAL;
        *eq = '\0';
        json_object_set_new(cx, defs[i], json_integer(strtoll(eq + 1, NULL, 10)));
    }
    return BT_OK;
}

/* The arguments: signature, divisibility and specialized values. */
static bt_status add_args(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                          const bt_gpu *g, json_t *R, bt_diag *diag)
{
    json_t *sig = json_object(), *div = json_array(), *spec = json_object();
    json_object_set_new(R, "signature", sig);
    json_object_set_new(R, "divisible_by_16", div);
    json_object_set_new(R, "specialize", spec);
    int64_t *slots = malloc(sizeof *slots * (size_t)(k->nslots > 0 ? k->nslots : 1));
    if (!slots)
        return BT_NOMEM;
    bt__kdesc_fill_slots(k, c, p, g, slots);
    bt_status st = BT_OK;
    for (int i = 0; i < k->nargs && st == BT_OK; i++) {
        const bt__argspec *a = &k->args[i];
        const char *t = triton_type(bt__arg_dtype(k, a, p));
        if (!t || (a->role != BT__KARG_BUFFER && a->role != BT__KARG_SCALAR)) {
            bt__diag_set(diag, "argument '%s': not a kind or type a Triton kernel takes", a->name);
            st = BT_INVALID_ARG;
        } else if (a->role == BT__KARG_BUFFER) {
            char ptr[16];
            snprintf(ptr, sizeof ptr, "*%s", t);
            json_object_set_new(sig, a->name, json_string(ptr));
            json_array_append_new(div, json_string(a->name));
        } else if (!strcmp(t, "fp32") || !strcmp(t, "fp64")) {
            json_object_set_new(sig, a->name, json_string(t));
        } else {
            int64_t v;
            st = bt__kexpr_eval(k, &a->size, slots, &v, diag);
            if (st == BT_OK)
                json_object_set_new(spec, a->name, json_integer((json_int_t)v));
        }
    }
    free(slots);
    return st;
}

bt_status bt__triton_request(const bt_kdesc *k, const bt__ksource *s, const bt_config *c,
                             const bt_problem *p, const bt_gpu *g, char **out, bt_diag *diag)
{
    *out = NULL;
    if (!p || !s || !s->path || !k->entry) {
        bt__diag_set(diag, "'%s': a Triton request needs a problem, a Triton source file and an "
                     "entry", k->name);
        return BT_INVALID_ARG;
    }
    json_t *R = json_object(), *cx = json_object();
    if (!R || !cx) {
        json_decref(R);
        json_decref(cx);
        return BT_NOMEM;
    }
    json_object_set_new(R, "source", json_string(s->path));
    json_object_set_new(R, "entry", json_string(k->entry));
    json_object_set_new(R, "constexprs", cx);
    bt_status st = add_params(k, c, p, g, R, cx, diag);
    if (st == BT_OK)
        st = add_args(k, c, p, g, R, diag);
    if (st == BT_OK && !(*out = json_dumps(R, JSON_COMPACT)))
        st = BT_NOMEM;
    json_decref(R);
    return st;
}
