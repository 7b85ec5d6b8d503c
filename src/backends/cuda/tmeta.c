/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tmeta.c — a Triton kernel's launch metadata (tmeta.h): made from the compile pool's answer,
 * written into and read back from the module blob's section, and applied to a launch (Triton's
 * parameter order and widths, the scratch pointers, the grid times num_ctas), checking that the
 * launch's values are those the compile specialized for.
 */
#include "backends/cuda/tmeta.h"

#include "core/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[] = {"ptr", "int", "uint", "float", "scratch"};

/* --- from the answer ------------------------------------------------------------------------ */

/* A launch_args type ("*fp16", "i32", "u64", "fp32", "scratch") as kind and size; false for one
 * the launch cannot pass. */
static bool param_type(const char *t, int size, uint8_t *kind)
{
    if (t[0] == '*')
        *kind = BT__TP_PTR;
    else if (!strcmp(t, "scratch"))
        *kind = BT__TP_SCRATCH;
    else if (t[0] == 'i')
        *kind = BT__TP_INT;
    else if (t[0] == 'u')
        *kind = BT__TP_UINT;
    else if (!strcmp(t, "fp32") || !strcmp(t, "fp64"))
        *kind = BT__TP_FLOAT;
    else
        return false;
    bool ptrlike = *kind == BT__TP_PTR || *kind == BT__TP_SCRATCH;
    return ptrlike ? size == 8 : size == 1 || size == 2 || size == 4 || size == 8;
}

static int arg_index(const char *const *args, int nargs, const char *name)
{
    for (int i = 0; i < nargs; i++)
        if (args[i] && !strcmp(args[i], name))
            return i;
    return -1;
}

static bool in_list(const json_t *list, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v) if (json_is_string(v) && !strcmp(json_string_value(v), name))
        return true;
    return false;
}

static int64_t int_of(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* The launch parameters of the answer into m. */
static bt_status answer_params(const json_t *a, const char *const *args, int nargs, bt__tmeta *m,
                               char *msg, size_t size)
{
    const json_t *la = json_object_get(a, "launch_args"), *div = json_object_get(a,
                                                                                "divisible_by_16");
    if (!json_is_array(la) || json_array_size(la) > BT__TMETA_MAX_PARAMS) {
        snprintf(msg, size, "the Triton answer's launch_args are missing or over %d",
                 BT__TMETA_MAX_PARAMS);
        return BT_COMPILE;
    }
    size_t i;
    const json_t *e;
    json_array_foreach(la, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *type = json_string_value(json_object_get(e, "type"));
        bt__tparam *p = &m->p[m->nparams++];
        int64_t sz = int_of(e, "size");
        if (!name || !type || strlen(name) >= sizeof p->name ||
            !param_type(type, (int)sz, &p->kind)) {
            snprintf(msg, size, "Triton launch parameter %zu ('%s', type %s, %lld bytes) is not "
                     "one a launch from C passes", i, name ? name : "?", type ? type : "?",
                     (long long)sz);
            return BT_COMPILE;
        }
        snprintf(p->name, sizeof p->name, "%s", name);
        p->size = (uint8_t)sz;
        p->div16 = in_list(div, name);
        if (p->kind == BT__TP_SCRATCH) {
            p->arg = !strcmp(name, "profile_scratch");
            continue;
        }
        if ((p->arg = arg_index(args, nargs, name)) < 0) {
            snprintf(msg, size, "Triton launch parameter '%s' is no argument of the spec", name);
            return BT_COMPILE;
        }
    }
    return BT_OK;
}

/* The spec's arguments the answer compiled in as constants into m. */
static bt_status answer_consts(const json_t *a, const char *const *args, int nargs, bt__tmeta *m,
                               char *msg, size_t size)
{
    const json_t *cx = json_object_get(a, "constexprs");
    for (int i = 0; i < nargs; i++) {
        bool passed = false;
        for (int j = 0; j < m->nparams && !passed; j++)
            passed = m->p[j].kind != BT__TP_SCRATCH && m->p[j].arg == i;
        if (passed)
            continue;
        const json_t *v = json_object_get(cx, args[i]);
        if ((!json_is_integer(v) && !json_is_boolean(v)) || m->nconsts >= BT__TMETA_MAX_CONSTS ||
            strlen(args[i]) >= sizeof m->c[0].name) {
            snprintf(msg, size, "argument '%s' is neither a launch parameter of the Triton kernel "
                     "nor an integer constant it was compiled with", args[i]);
            return BT_COMPILE;
        }
        bt__tconst *c = &m->c[m->nconsts++];
        snprintf(c->name, sizeof c->name, "%s", args[i]);
        c->arg = i;
        c->value = json_is_integer(v) ? (int64_t)json_integer_value(v) : json_is_true(v);
    }
    return BT_OK;
}

static void scratch_of(const json_t *a, const char *key, uint64_t *size, uint64_t *align)
{
    const json_t *s = json_object_get(a, key);
    int64_t sz = int_of(s, "size"), al = int_of(s, "align");
    *size = sz > 0 ? (uint64_t)sz : 0;
    *align = al > 0 ? (uint64_t)al : 1;
}

bt_status bt__tmeta_from_answer(const json_t *a, const char *const *args, int nargs,
                                bt__tmeta *m, char *msg, size_t size)
{
    memset(m, 0, sizeof *m);
    const char *ver = json_string_value(json_object_get(a, "triton_version"));
    const char *kernel = json_string_value(json_object_get(a, "kernel"));
    const char *key = json_string_value(json_object_get(a, "key"));
    int64_t shared = int_of(a, "shared"), warps = int_of(a, "num_warps"),
            ctas = int_of(a, "num_ctas");
    const json_t *cl = json_object_get(a, "cluster_dims");
    if (!ver || !kernel || shared < 0 || shared > UINT32_MAX || warps < 1 || warps > 32 ||
        ctas < 1 || ctas > 16 || strlen(kernel) >= sizeof m->kernel) {
        snprintf(msg, size, "the Triton answer lacks its version, kernel, shared memory, "
                 "num_warps or num_ctas");
        return BT_COMPILE;
    }
    snprintf(m->triton_version, sizeof m->triton_version, "%s", ver);
    snprintf(m->kernel, sizeof m->kernel, "%s", kernel);
    snprintf(m->key, sizeof m->key, "%s", key ? key : "");
    m->shared = (uint32_t)shared;
    m->num_warps = (int)warps;
    m->num_ctas = (int)ctas;
    for (int d = 0; d < 3; d++) {
        const json_t *v = json_array_get(cl, (size_t)d);
        m->cluster[d] = json_is_integer(v) && json_integer_value(v) > 0
                            ? (uint32_t)json_integer_value(v)
                            : (d ? 1u : (uint32_t)ctas);
    }
    scratch_of(a, "global_scratch", &m->scratch_size[0], &m->scratch_align[0]);
    scratch_of(a, "profile_scratch", &m->scratch_size[1], &m->scratch_align[1]);
    m->cooperative = json_is_true(json_object_get(a, "launch_cooperative_grid"));
    m->pdl = json_is_true(json_object_get(a, "launch_pdl"));
    bt_status st = answer_params(a, args, nargs, m, msg, size);
    return st ? st : answer_consts(a, args, nargs, m, msg, size);
}

/* --- the blob's section --------------------------------------------------------------------- */

char *bt__tmeta_text(const bt__tmeta *m)
{
    json_t *params = json_array(), *consts = json_array();
    for (int i = 0; i < m->nparams; i++)
        json_array_append_new(params, json_pack("[s,i,s,i,b]", m->p[i].name, m->p[i].arg,
                                                kind_names[m->p[i].kind], m->p[i].size,
                                                m->p[i].div16));
    for (int i = 0; i < m->nconsts; i++)
        json_array_append_new(consts, json_pack("[s,i,I]", m->c[i].name, m->c[i].arg,
                                                (json_int_t)m->c[i].value));
    json_t *o = json_pack(
        "{s:i,s:s,s:s,s:s,s:I,s:i,s:i,s:[I,I,I],s:[I,I],s:[I,I],s:b,s:b,s:o,s:o}", "version",
        BT__TMETA_VERSION, "triton_version", m->triton_version, "kernel", m->kernel, "key",
        m->key, "shared", (json_int_t)m->shared, "num_warps", m->num_warps, "num_ctas",
        m->num_ctas, "cluster", (json_int_t)m->cluster[0], (json_int_t)m->cluster[1],
        (json_int_t)m->cluster[2], "global_scratch", (json_int_t)m->scratch_size[0],
        (json_int_t)m->scratch_align[0], "profile_scratch", (json_int_t)m->scratch_size[1],
        (json_int_t)m->scratch_align[1], "cooperative", m->cooperative, "pdl", m->pdl, "params",
        params, "consts", consts);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

static bt_status corrupt(bt_diag *diag, const char *what)
{
    bt__diag_set(diag, "module_load: the blob's Triton section is malformed (%s)", what);
    return BT_CORRUPT;
}

/* The parameter and constant lists of a section. */
static bt_status parse_lists(json_t *params, json_t *consts, bt__tmeta *m,
                             bt_diag *diag)
{
    if (json_array_size(params) > BT__TMETA_MAX_PARAMS ||
        json_array_size(consts) > BT__TMETA_MAX_CONSTS)
        return corrupt(diag, "too many parameters");
    size_t i;
    json_t *e;
    json_array_foreach(params, i, e) {
        bt__tparam *p = &m->p[m->nparams++];
        const char *name, *kind;
        int arg, sz, div;
        if (json_unpack(e, "[s,i,s,i,b]", &name, &arg, &kind, &sz, &div) ||
            strlen(name) >= sizeof p->name || arg < 0)
            return corrupt(diag, "a parameter");
        size_t k = 0;
        while (k < BT__ARRAY_LEN(kind_names) && strcmp(kind_names[k], kind))
            k++;
        if (k == BT__ARRAY_LEN(kind_names) || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
            return corrupt(diag, "a parameter's kind or size");
        snprintf(p->name, sizeof p->name, "%s", name);
        p->arg = arg;
        p->kind = (uint8_t)k;
        p->size = (uint8_t)sz;
        p->div16 = div;
    }
    json_array_foreach(consts, i, e) {
        bt__tconst *c = &m->c[m->nconsts++];
        const char *name;
        json_int_t v;
        if (json_unpack(e, "[s,i,I]", &name, &c->arg, &v) || strlen(name) >= sizeof c->name ||
            c->arg < 0)
            return corrupt(diag, "a constant");
        snprintf(c->name, sizeof c->name, "%s", name);
        c->value = (int64_t)v;
    }
    return BT_OK;
}

bt_status bt__tmeta_parse(const char *text, size_t n, bt__tmeta *m, bt_diag *diag)
{
    memset(m, 0, sizeof *m);
    json_error_t err;
    json_t *o = json_loadb(text, n, 0, &err);
    if (!o)
        return corrupt(diag, err.text);
    int version = 0, cop = 0, pdl = 0;
    const char *ver, *kernel, *key;
    json_int_t shared, cl[3], sc[2][2];
    json_t *params, *consts;
    bt_status st = BT_OK;
    if (json_unpack(o, "{s:i}", "version", &version) || version != BT__TMETA_VERSION) {
        bt__diag_set(diag, "module_load: the blob's Triton section is of version %d, this "
                     "blocktune reads %d", version, BT__TMETA_VERSION);
        st = BT_CORRUPT;
    } else if (json_unpack(o, "{s:s,s:s,s:s,s:I,s:i,s:i,s:[I,I,I],s:[I,I],s:[I,I],s:b,s:b,s:o,"
                              "s:o}",
                           "triton_version", &ver, "kernel", &kernel, "key", &key, "shared",
                           &shared, "num_warps", &m->num_warps, "num_ctas", &m->num_ctas,
                           "cluster", &cl[0], &cl[1], &cl[2], "global_scratch", &sc[0][0],
                           &sc[0][1], "profile_scratch", &sc[1][0], &sc[1][1], "cooperative",
                           &cop, "pdl", &pdl, "params", &params, "consts", &consts) ||
               strlen(ver) >= sizeof m->triton_version || strlen(kernel) >= sizeof m->kernel ||
               strlen(key) >= sizeof m->key || shared < 0 || shared > UINT32_MAX ||
               m->num_warps < 1 || m->num_ctas < 1 || sc[0][0] < 0 || sc[1][0] < 0 ||
               sc[0][1] < 1 || sc[1][1] < 1) {
        st = corrupt(diag, "a field");
    } else {
        snprintf(m->triton_version, sizeof m->triton_version, "%s", ver);
        snprintf(m->kernel, sizeof m->kernel, "%s", kernel);
        snprintf(m->key, sizeof m->key, "%s", key);
        m->shared = (uint32_t)shared;
        for (int d = 0; d < 3; d++)
            m->cluster[d] = (uint32_t)cl[d];
        for (int w = 0; w < 2; w++) {
            m->scratch_size[w] = (uint64_t)sc[w][0];
            m->scratch_align[w] = (uint64_t)sc[w][1];
        }
        m->cooperative = cop;
        m->pdl = pdl;
        st = parse_lists(params, consts, m, diag);
    }
    json_decref(o);
    return st;
}

/* --- a launch ------------------------------------------------------------------------------- */

bt_status bt__tmeta_grid(const bt__tmeta *m, const char *fn, const uint32_t grid[3],
                         const uint32_t block[3], uint32_t out[3], bt_diag *diag)
{
    if (block[0] != (uint32_t)(32 * m->num_warps) || block[1] != 1 || block[2] != 1) {
        bt__diag_set(diag, "launch of %s: block (%u,%u,%u), but the Triton kernel runs (%d,1,1) "
                     "threads (32 * num_warps %d)", fn, block[0], block[1], block[2],
                     32 * m->num_warps, m->num_warps);
        return BT_INVALID_ARG;
    }
    uint64_t x = (uint64_t)grid[0] * (uint64_t)m->num_ctas;
    if (x > UINT32_MAX) {
        bt__diag_set(diag, "launch of %s: grid x %u times num_ctas %d overflows", fn, grid[0],
                     m->num_ctas);
        return BT_INVALID_ARG;
    }
    out[0] = (uint32_t)x;
    out[1] = grid[1];
    out[2] = grid[2];
    return BT_OK;
}

uint64_t bt__tmeta_scratch_bytes(const bt__tmeta *m, int which, const uint32_t grid[3])
{
    return (uint64_t)grid[0] * grid[1] * grid[2] * (uint64_t)m->num_ctas *
           m->scratch_size[which];
}

/* An integer argument's value, false when the argument is no integer. */
static bool int_value(const bt__karg *g, int64_t *v)
{
    if (g->kind == BT__ARG_I32)
        *v = g->u.i32;
    else if (g->kind == BT__ARG_I64)
        *v = g->u.i64;
    else
        return false;
    return true;
}

/* An integer v into a parameter of p's width and signedness (little-endian, as the driver reads
 * it). False when it does not fit. */
static bool put_int(const bt__tparam *p, int64_t v, uint64_t *slot)
{
    int bits = 8 * p->size;
    if (p->kind == BT__TP_INT && bits < 64) {
        int64_t lo = -((int64_t)1 << (bits - 1)), hi = ((int64_t)1 << (bits - 1)) - 1;
        if (v < lo || v > hi)
            return false;
    } else if (p->kind == BT__TP_UINT && (v < 0 || (bits < 64 && v >= ((int64_t)1 << bits)))) {
        return false;
    }
    *slot = 0;
    memcpy(slot, &v, p->size); /* the low bytes on a little-endian host */
    return true;
}

/* One parameter's value into *slot. */
static bt_status param_value(const bt__tparam *p, const char *fn, const bt__karg *g,
                             uint64_t address, uint64_t *slot, bt_diag *diag)
{
    int64_t v;
    switch (p->kind) {
    case BT__TP_PTR:
        if (g->kind != BT__ARG_BUF)
            break;
        if (p->div16 && address % 16) {
            bt__diag_set(diag, "launch of %s: buffer '%s' at 0x%" PRIx64 " is not 16-byte "
                         "aligned, which the Triton compile assumed (divisible_by_16): pass an "
                         "aligned address", fn, p->name, address);
            return BT_INVALID_ARG;
        }
        *slot = address;
        return BT_OK;
    case BT__TP_INT:
    case BT__TP_UINT:
        if (!int_value(g, &v))
            break;
        if (!put_int(p, v, slot)) {
            bt__diag_set(diag, "launch of %s: argument '%s' = %" PRId64 " does not fit the "
                         "%s%d Triton compiled it as", fn, p->name, v,
                         p->kind == BT__TP_INT ? "i" : "u", 8 * p->size);
            return BT_INVALID_ARG;
        }
        if (p->div16 && v % 16) {
            bt__diag_set(diag, "launch of %s: argument '%s' = %" PRId64 " is not a multiple of "
                         "16, which the Triton compile assumed (it was specialized on another "
                         "value: put what sets it in the spec's key)", fn, p->name, v);
            return BT_INVALID_ARG;
        }
        return BT_OK;
    case BT__TP_FLOAT:
        if (p->size == 4 && g->kind == BT__ARG_F32) {
            memcpy(slot, &g->u.f32, 4);
            return BT_OK;
        }
        if (p->size == 8 && g->kind == BT__ARG_F64) {
            memcpy(slot, &g->u.f64, 8);
            return BT_OK;
        }
        break;
    default:
        break;
    }
    bt__diag_set(diag, "launch of %s: argument '%s' (kind %d) does not fit the Triton parameter "
                 "of type %s, %d bytes", fn, p->name, (int)g->kind, kind_names[p->kind], p->size);
    return BT_INVALID_ARG;
}

bt_status bt__tmeta_params(const bt__tmeta *m, const char *fn, const bt__karg *args, int nargs,
                           const uint64_t *addr, const uint64_t scratch[2], uint64_t *vals,
                           void **params, int *np, bt_diag *diag)
{
    *np = 0;
    for (int i = 0; i < m->nconsts; i++) {
        const bt__tconst *c = &m->c[i];
        int64_t v;
        if (c->arg >= nargs || !int_value(&args[c->arg], &v) || v != c->value) {
            bt__diag_set(diag, "launch of %s: argument '%s' must be %" PRId64 ", the constant "
                         "Triton compiled in (it was specialized on that value: put what sets it "
                         "in the spec's key)", fn, c->name, c->value);
            return BT_INVALID_ARG;
        }
    }
    for (int i = 0; i < m->nparams; i++) {
        const bt__tparam *p = &m->p[i];
        params[i] = &vals[i];
        if (p->kind == BT__TP_SCRATCH) {
            vals[i] = scratch[p->arg ? 1 : 0];
            continue;
        }
        if (p->arg >= nargs) {
            bt__diag_set(diag, "launch of %s: %d arguments, the Triton parameter '%s' takes "
                         "argument %d", fn, nargs, p->name, p->arg);
            return BT_INVALID_ARG;
        }
        bt_status st = param_value(p, fn, &args[p->arg], addr[p->arg], &vals[i], diag);
        if (st != BT_OK)
            return st;
    }
    *np = m->nparams;
    return BT_OK;
}
