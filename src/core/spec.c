/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec.c — loads a kernel spec (JSON, docs/spec.md) into a bt_kdesc: the root and the sections of
 * the config space (params, problem, configs, constraints, rules), the model, the tuning key,
 * tolerances, the reference and the boundary sizes; and the built-in kernels. Arguments are
 * loaded by spec_args.c, the launch geometry and problem defines by spec_launch.c, with the
 * helpers of specld.c; using a loaded description (problems, configs, slots, evaluation) is
 * kdesc.c's.
 *
 * A T1 input file (t1.c) loads through the same path, translated into a spec first.
 *
 * Loading is all-or-nothing: the description is built privately and handed out only when every
 * field has been checked. Every error names file:line:column and the field (positions come from
 * jpos.c, since jansson does not keep them). Every list the loader keeps in a fixed-size array is
 * bounded with an error, and a name listed twice is an error.
 */
#include "core/family.h"
#include "core/specld.h"
#include "core/t1.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------------------------------
 * Sections
 * ------------------------------------------------------------------------------------------- */

static bt__param_role role_from_name(const char *name)
{
    if (bt__streq_nocase(name, "num_warps"))
        return BT__ROLE_NUM_WARPS;
    if (bt__streq_nocase(name, "num_stages"))
        return BT__ROLE_NUM_STAGES;
    if (bt__streq_nocase(name, "num_ctas"))
        return BT__ROLE_NUM_CTAS;
    return BT__ROLE_NONE;
}

static bt_status load_params(bt__ld *L, const json_t *params)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(params) || json_object_size(params) == 0)
        return bt__ld_fail(L, "params", "expected an object with at least one parameter");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)params, name, v)
    {
        char path[160];
        snprintf(path, sizeof path, "params.%s", name);
        if (!bt__ld_ident(name))
            return bt__ld_fail(L, path, "parameter name '%s' is not an identifier", name);
        const json_t *vals = v;
        const json_t *pow2 = NULL, *range = NULL;
        bt__param_role role = role_from_name(name);
        if (json_is_object(v)) {
            static const char *const keys[] = {"values", "pow2", "range", "role", NULL};
            BT__TRY(bt__ld_keys(L, v, path, keys));
            vals = json_object_get(v, "values");
            pow2 = json_object_get(v, "pow2");
            range = json_object_get(v, "range");
            if ((vals != NULL) + (pow2 != NULL) + (range != NULL) != 1)
                return bt__ld_fail(L, path, "give exactly one of \"values\", \"pow2\" or \"range\"");
            json_t *r = json_object_get(v, "role");
            if (r) {
                char rp[192];
                snprintf(rp, sizeof rp, "%s.role", path);
                const char *rs;
                BT__TRY(bt__ld_str(L, r, rp, &rs));
                if (!strcmp(rs, "tile"))
                    role = BT__ROLE_TILE;
                else if (!strcmp(rs, "num_warps"))
                    role = BT__ROLE_NUM_WARPS;
                else if (!strcmp(rs, "num_stages"))
                    role = BT__ROLE_NUM_STAGES;
                else if (!strcmp(rs, "num_ctas"))
                    role = BT__ROLE_NUM_CTAS;
                else if (!strcmp(rs, "none"))
                    role = BT__ROLE_NONE;
                else
                    return bt__ld_fail(L, rp,
                                "unknown role '%s' (tile, num_warps, num_stages, num_ctas, none)",
                                rs);
            }
        }
        bt_diag d;
        bt__diag_clear(&d);
        bt_status st;
        if (vals) {
            char vp[192];
            snprintf(vp, sizeof vp, "%s%s", path, vals == v ? "" : ".values");
            if (!json_is_array(vals))
                return bt__ld_fail(L, vp, "expected a list of integers but found %s", bt__ld_jtype(vals));
            size_t n = json_array_size(vals);
            if (n == 0 || n > 65536)
                return bt__ld_fail(L, vp, "a parameter needs 1..65536 values (got %zu)", n);
            int64_t *arr = malloc(sizeof *arr * n);
            if (!arr)
                return BT_NOMEM;
            for (size_t i = 0; i < n; i++) {
                char ip[220];
                snprintf(ip, sizeof ip, "%s[%zu]", vp, i);
                st = bt__ld_int(L, json_array_get(vals, i), ip, &arr[i]);
                if (st) {
                    free(arr);
                    return st;
                }
            }
            st = bt__space_add_list(&k->space, name, arr, (int)n, &d);
            free(arr);
            if (st)
                return bt__ld_fail(L, vp, "%s", d.msg);
        } else {
            const json_t *a = pow2 ? pow2 : range;
            char ap[192];
            snprintf(ap, sizeof ap, "%s.%s", path, pow2 ? "pow2" : "range");
            size_t want = pow2 ? 2 : 3;
            if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > want)
                return bt__ld_fail(L, ap, pow2 ? "expected [lo, hi]" : "expected [lo, hi] or [lo, hi, step]");
            int64_t lo, hi, step = 1;
            BT__TRY(bt__ld_int(L, json_array_get(a, 0), ap, &lo));
            BT__TRY(bt__ld_int(L, json_array_get(a, 1), ap, &hi));
            if (json_array_size(a) == 3)
                BT__TRY(bt__ld_int(L, json_array_get(a, 2), ap, &step));
            st = pow2 ? bt__space_add_pow2(&k->space, name, lo, hi, &d)
                      : bt__space_add_range(&k->space, name, lo, hi, step, &d);
            if (st)
                return bt__ld_fail(L, ap, "%s", d.msg);
        }
        k->space.params[k->space.nparams - 1].role = role;
    }
    return BT_OK;
}

/* Builds the symbol table once the params and problem variables are known. */
static bt_status build_syms(bt__ld *L)
{
    bt_kdesc *k = L->k;
    k->syms = bt__symtab_new();
    if (!k->syms)
        return BT_NOMEM;
    for (int i = 0; i < k->space.nparams; i++)
        if (bt__symtab_add(k->syms, k->space.params[i].name) != i) {
            char p[160];
            snprintf(p, sizeof p, "params.%s", k->space.params[i].name);
            return bt__ld_fail(L, p, "'%s' cannot be a parameter name (reserved)", k->space.params[i].name);
        }
    k->slot_problem0 = k->space.nparams;
    for (int i = 0; i < k->nproblem; i++) {
        int s = bt__symtab_add(k->syms, k->problem_names[i]);
        if (s != k->slot_problem0 + i) {
            char p[160];
            snprintf(p, sizeof p, "problem.%s", k->problem_names[i]);
            return bt__ld_fail(L, p, "problem variable '%s' clashes with a parameter or is reserved",
                        k->problem_names[i]);
        }
    }
    k->slot_elem_bytes = bt__symtab_add(k->syms, "elem_bytes");
    if (k->slot_elem_bytes != k->slot_problem0 + k->nproblem)
        return bt__ld_fail(L, "params", "'elem_bytes' is reserved");
    int nd;
    const bt__dev_sym *ds = bt__dev_syms(&nd);
    k->slot_dev0 = k->slot_elem_bytes + 1;
    for (int i = 0; i < nd; i++)
        if (bt__symtab_add(k->syms, ds[i].name) != k->slot_dev0 + i)
            return bt__ld_fail(L, "params", "'%s' is a device limit and cannot be redefined", ds[i].name);
    k->nslots = bt__symtab_count(k->syms);
    return BT_OK;
}

static bt_status load_problem(bt__ld *L, const json_t *prob)
{
    bt_kdesc *k = L->k;
    if (!prob)
        return BT_OK;
    if (!json_is_object(prob))
        return bt__ld_fail(L, "problem", "expected an object of variables with default values");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)prob, name, v)
    {
        char p[160];
        snprintf(p, sizeof p, "problem.%s", name);
        if (k->nproblem >= BT__MAX_PROBLEM)
            return bt__ld_fail(L, p, "too many problem variables (at most %d)", BT__MAX_PROBLEM);
        if (strlen(name) >= BT_NAME_MAX)
            return bt__ld_fail(L, p, "name too long");
        int64_t d;
        BT__TRY(bt__ld_int(L, v, p, &d));
        if (d < 0)
            return bt__ld_fail(L, p, "a problem size must be >= 0 (got %lld)", (long long)d);
        snprintf(k->problem_names[k->nproblem], BT_NAME_MAX, "%s", name);
        k->problem_defaults[k->nproblem++] = d;
    }
    return BT_OK;
}

/* Reads {"PARAM": value, ...} at path into cfg: every parameter set, none unknown; in_space also
 * requires each value to be one of its parameter's values. */
static bt_status parse_config_object(bt__ld *L, const json_t *obj, const char *path, bt_config *cfg,
                                     bool in_space)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(obj))
        return bt__ld_fail(L, path, "expected an object of parameter values");
    memset(cfg, 0, sizeof *cfg);
    cfg->nparams = k->space.nparams;
    bool seen[BT_MAX_PARAMS] = {0};
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        char vp[200];
        snprintf(vp, sizeof vp, "%s.%s", path, name);
        int pi = bt__ld_param(k, name);
        if (pi < 0)
            return bt__ld_fail(L, vp, "'%s' is not a parameter of this kernel", name);
        BT__TRY(bt__ld_int(L, v, vp, &cfg->v[pi]));
        if (in_space && bt__space_value_pos(&k->space, pi, cfg->v[pi]) < 0)
            return bt__ld_fail(L, vp, "value %lld is not among the values of '%s'",
                        (long long)cfg->v[pi], name);
        seen[pi] = true;
    }
    for (int pi = 0; pi < k->space.nparams; pi++)
        if (!seen[pi])
            return bt__ld_fail(L, path, "the config does not set '%s'", k->space.params[pi].name);
    return BT_OK;
}

static bt_status load_configs(bt__ld *L, const json_t *arr)
{
    bt_kdesc *k = L->k;
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return bt__ld_fail(L, "configs", "expected a non-empty list of configs");
    BT__TRY(bt__ld_bound(L, arr, "configs", BT__MAX_CONFIGS, "configs"));
    size_t n = json_array_size(arr);
    k->configs = calloc(n, sizeof *k->configs);
    if (!k->configs)
        return BT_NOMEM;
    k->nconfigs = n;
    for (size_t i = 0; i < n; i++) {
        char p[64];
        snprintf(p, sizeof p, "configs[%zu]", i);
        BT__TRY(parse_config_object(L, json_array_get(arr, i), p, &k->configs[i], true));
    }
    return BT_OK;
}

static bt_status load_model(bt__ld *L, const json_t *m)
{
    bt_kdesc *k = L->k;
    k->inner_tile = -1;
    k->vector_bytes = 16;
    if (!m)
        return BT_OK;
    if (!json_is_object(m))
        return bt__ld_fail(L, "model", "expected an object");
    static const char *const keys[] = {"kind", "unit", "smem", "static_smem", "regs", "threads",
                                       "accumulator_bytes", "tensor_core", "vector_ok",
                                       "vector_bytes", "traffic", "perf", "tiles", "inner", NULL};
    BT__TRY(bt__ld_keys(L, m, "model", keys));
    json_t *v;
    if ((v = json_object_get(m, "kind"))) {
        const char *s;
        BT__TRY(bt__ld_str(L, v, "model.kind", &s));
        static const char *const kinds[] = {"generic", "gemm", "rowwise", "reduction", "pointwise"};
        int found = -1;
        for (int i = 0; i < 5; i++)
            if (!strcmp(s, kinds[i]))
                found = i;
        if (found < 0)
            return bt__ld_fail(L, "model.kind", "unknown kind '%s' (generic, gemm, rowwise, reduction, pointwise)", s);
        k->kind = (bt__kind)found;
    }
    if ((v = json_object_get(m, "unit"))) {
        const char *s;
        BT__TRY(bt__ld_str(L, v, "model.unit", &s));
        if (!strcmp(s, "tensor"))
            k->unit = BT__UNIT_TENSOR;
        else if (!strcmp(s, "simt"))
            k->unit = BT__UNIT_SIMT;
        else
            return bt__ld_fail(L, "model.unit", "unknown unit '%s' (tensor, simt)", s);
    }
    struct {
        const char *key;
        bt__kexpr *x;
    } ex[] = {{"smem", &k->smem},           {"regs", &k->regs},
              {"threads", &k->threads},     {"accumulator_bytes", &k->acc_bytes},
              {"tensor_core", &k->tensor_core}, {"vector_ok", &k->vector_ok},
              {"traffic", &k->traffic},     {"perf", &k->perf},
              {"static_smem", &k->static_smem}};
    for (size_t i = 0; i < BT__ARRAY_LEN(ex); i++)
        if ((v = json_object_get(m, ex[i].key))) {
            char p[64];
            snprintf(p, sizeof p, "model.%s", ex[i].key);
            BT__TRY(bt__ld_expr(L, v, p, ex[i].x));
        }
    if ((v = json_object_get(m, "vector_bytes"))) {
        int64_t vb;
        BT__TRY(bt__ld_int(L, v, "model.vector_bytes", &vb));
        if (vb < 1 || vb > 64 || (vb & (vb - 1)))
            return bt__ld_fail(L, "model.vector_bytes", "expected a power of two in 1..64");
        k->vector_bytes = (int)vb;
    }
    if ((v = json_object_get(m, "inner"))) {
        const char *s;
        BT__TRY(bt__ld_str(L, v, "model.inner", &s));
        k->inner_tile = bt__ld_param(k, s);
        if (k->inner_tile < 0)
            return bt__ld_fail(L, "model.inner", "'%s' is not a parameter", s);
    }
    if ((v = json_object_get(m, "tiles"))) {
        if (!json_is_array(v) || json_array_size(v) > BT__MAX_TILES)
            return bt__ld_fail(L, "model.tiles", "expected a list of at most %d tiles", BT__MAX_TILES);
        for (size_t i = 0; i < json_array_size(v); i++) {
            char p[64];
            snprintf(p, sizeof p, "model.tiles[%zu]", i);
            json_t *t = json_array_get(v, i);
            if (!json_is_object(t))
                return bt__ld_fail(L, p, "expected {\"param\": ..., \"dim\": ...}");
            static const char *const tk[] = {"param", "dim", "reduction", NULL};
            BT__TRY(bt__ld_keys(L, t, p, tk));
            const char *pn, *dn;
            char pp[96];
            snprintf(pp, sizeof pp, "%s.param", p);
            json_t *jp = json_object_get(t, "param"), *jd = json_object_get(t, "dim");
            if (!jp || !jd)
                return bt__ld_fail(L, p, "a tile needs \"param\" and \"dim\"");
            BT__TRY(bt__ld_str(L, jp, pp, &pn));
            int pi = bt__ld_param(k, pn);
            if (pi < 0)
                return bt__ld_fail(L, pp, "'%s' is not a parameter", pn);
            for (int t2 = 0; t2 < k->ntiles; t2++)
                if (k->tiles[t2].param == pi)
                    return bt__ld_fail(L, pp, "'%s' is a tile twice (model.tiles[%d])", pn, t2);
            snprintf(pp, sizeof pp, "%s.dim", p);
            BT__TRY(bt__ld_str(L, jd, pp, &dn));
            int di = bt__ld_problem(k, dn);
            if (di < 0)
                return bt__ld_fail(L, pp, "'%s' is not a problem variable", dn);
            bt__tile *tl = &k->tiles[k->ntiles++];
            tl->param = pi;
            tl->dim_slot = k->slot_problem0 + di;
            tl->reduction = false;
            json_t *r = json_object_get(t, "reduction");
            if (r) {
                snprintf(pp, sizeof pp, "%s.reduction", p);
                BT__TRY(bt__ld_bool(L, r, pp, &tl->reduction));
            }
            k->space.params[pi].role = BT__ROLE_TILE;
        }
    }
    return BT_OK;
}

static bt_status load_tolerance(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    /* defaults by dtype: what the arithmetic can promise against an fp64 host reference */
    for (int t = 0; t < BT__DT__COUNT; t++)
        k->tol[t] = (bt__tolerance){1e-5, 1e-6};
    k->tol[BT__DT_FP32] = (bt__tolerance){1e-4, 1e-5};
    k->tol[BT__DT_FP16] = (bt__tolerance){1e-2, 1e-3};
    k->tol[BT__DT_BF16] = (bt__tolerance){3e-2, 1e-2};
    k->tol[BT__DT_FP8] = (bt__tolerance){1e-1, 1e-1};
    k->tol[BT__DT_FP64] = (bt__tolerance){1e-10, 1e-12};
    k->tol[BT__DT_INT8] = k->tol[BT__DT_INT32] = k->tol[BT__DT_INT64] = (bt__tolerance){0, 0};
    if (!v)
        return BT_OK;
    if (!json_is_object(v))
        return bt__ld_fail(L, "tolerance", "expected {\"rtol\": x, \"atol\": y} or per-dtype objects");
    json_t *r = json_object_get(v, "rtol"), *a = json_object_get(v, "atol");
    if (r || a) {
        static const char *const keys[] = {"rtol", "atol", NULL};
        BT__TRY(bt__ld_keys(L, v, "tolerance", keys));
        double rt = 0, at = 0;
        if (r)
            BT__TRY(bt__ld_num(L, r, "tolerance.rtol", &rt));
        if (a)
            BT__TRY(bt__ld_num(L, a, "tolerance.atol", &at));
        if (rt < 0 || at < 0)
            return bt__ld_fail(L, "tolerance", "tolerances must be >= 0");
        for (int t = 0; t < BT__DT__COUNT; t++)
            k->tol[t] = (bt__tolerance){r ? rt : k->tol[t].rtol, a ? at : k->tol[t].atol};
        return BT_OK;
    }
    const char *key;
    json_t *x;
    json_object_foreach((json_t *)v, key, x)
    {
        char p[96];
        snprintf(p, sizeof p, "tolerance.%s", key);
        bt__dtype t;
        if (!bt__dtype_parse(key, &t))
            return bt__ld_fail(L, p, "unknown dtype '%s'", key);
        if (!json_is_object(x))
            return bt__ld_fail(L, p, "expected {\"rtol\": x, \"atol\": y}");
        static const char *const keys[] = {"rtol", "atol", NULL};
        BT__TRY(bt__ld_keys(L, x, p, keys));
        json_t *xr = json_object_get(x, "rtol"), *xa = json_object_get(x, "atol");
        if (xr)
            BT__TRY(bt__ld_num(L, xr, p, &k->tol[t].rtol));
        if (xa)
            BT__TRY(bt__ld_num(L, xa, p, &k->tol[t].atol));
    }
    return BT_OK;
}

/* "names": {"x": "x_ptr", ...}: the host reference's names for the spec's arguments and problem
 * variables (strings, at most 8 pairs). */
static bt_status ref_names(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_object(v) || json_object_size(v) > BT__ARRAY_LEN(k->ref_names))
        return bt__ld_fail(L, "reference.names", "expected an object of at most %d names "
                           "(\"x\": \"x_ptr\": the reference's name, the spec's)",
                           (int)BT__ARRAY_LEN(k->ref_names));
    const char *ref;
    json_t *s;
    json_object_foreach((json_t *)v, ref, s) {
        char p[BT_NAME_MAX + 24];
        snprintf(p, sizeof p, "reference.names.%s", ref);
        const char *name;
        BT__TRY(bt__ld_str(L, s, p, &name));
        if (strlen(ref) >= BT_NAME_MAX || strlen(name) >= BT_NAME_MAX)
            return bt__ld_fail(L, p, "name too long");
        snprintf(k->ref_names[k->nref_names][0], BT_NAME_MAX, "%s", ref);
        snprintf(k->ref_names[k->nref_names++][1], BT_NAME_MAX, "%s", name);
    }
    return BT_OK;
}

static bt_status load_reference(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_object(v))
        return bt__ld_fail(L, "reference", "expected {\"host\": ...}, {\"config\": {...}}, "
                           "{\"answers\": {...}} or a kernel");
    static const char *const keys[] = {"host", "names", "config", "answers", "sources", "entry",
                                       "grid", "block", NULL};
    BT__TRY(bt__ld_keys(L, v, "reference", keys));
    json_t *h = json_object_get(v, "host"), *c = json_object_get(v, "config"),
           *s = json_object_get(v, "sources"), *a = json_object_get(v, "answers");
    if ((h != NULL) + (c != NULL) + (s != NULL) + (a != NULL) != 1)
        return bt__ld_fail(L, "reference", "give exactly one of \"host\", \"config\", "
                           "\"answers\" or \"sources\"");
    if (a)
        return bt__ld_answers(L, a);
    if (h) {
        const char *name;
        BT__TRY(bt__ld_str(L, h, "reference.host", &name));
        snprintf(k->ref_host, sizeof k->ref_host, "%s", name);
        k->ref = BT__REF_HOST;
        return ref_names(L, json_object_get(v, "names"));
    }
    if (json_object_get(v, "names"))
        return bt__ld_fail(L, "reference.names", "names go with a \"host\" reference");
    if (c) {
        BT__TRY(parse_config_object(L, c, "reference.config", &k->ref_config, false));
        k->ref = BT__REF_CONFIG;
        return BT_OK;
    }
    /* a reference kernel: its own sources, entry and geometry; same arguments */
    BT__TRY(bt__ld_sources(L, s, "reference.sources", NULL, "reference", k->ref_src,
                           &k->nref_src));
    json_t *x;
    const char *e = k->entry;
    if ((x = json_object_get(v, "entry")))
        BT__TRY(bt__ld_str(L, x, "reference.entry", &e));
    k->ref_entry = bt__strdup(e);
    if (!k->ref_entry)
        return BT_NOMEM;
    const char *names[2] = {"grid", "block"};
    bt__kexpr *dst[2] = {k->ref_grid, k->ref_block};
    for (int g = 0; g < 2; g++) {
        json_t *a = json_object_get(v, names[g]);
        char p[64];
        snprintf(p, sizeof p, "reference.%s", names[g]);
        if (!a || !json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
            return bt__ld_fail(L, a ? p : "reference", "a reference kernel needs \"%s\": a list of 1 to 3 expressions", names[g]);
        for (size_t i = 0; i < 3; i++) {
            char ip[80];
            snprintf(ip, sizeof ip, "%s[%zu]", p, i);
            json_t *one = i < json_array_size(a) ? json_incref(json_array_get(a, i)) : json_integer(1);
            bt_status st = bt__ld_expr(L, one, ip, &dst[g][i]);
            json_decref(one);
            BT__TRY(st);
        }
    }
    k->ref = BT__REF_KERNEL;
    return BT_OK;
}

static bt_status load_key(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v) { /* default: every problem variable and the dtype */
        for (int i = 0; i < k->nproblem; i++)
            k->key_slots[k->nkey++] = k->slot_problem0 + i;
        k->key_dtype = true;
        return BT_OK;
    }
    if (!json_is_array(v))
        return bt__ld_fail(L, "key", "expected a list of problem variable names (and \"dtype\")");
    /* each problem variable at most once, and "dtype": the key_slots array holds them all */
    BT__TRY(bt__ld_bound(L, v, "key", BT__MAX_PROBLEM + 1, "key entries"));
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[64];
        snprintf(p, sizeof p, "key[%zu]", i);
        const char *s;
        BT__TRY(bt__ld_str(L, json_array_get(v, i), p, &s));
        int pi = strcmp(s, "dtype") ? bt__ld_problem(k, s) : -2;
        if (pi == -1)
            return bt__ld_fail(L, p, "'%s' is not a problem variable", s);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(s, json_string_value(json_array_get(v, j))))
                return bt__ld_fail(L, p, "'%s' is in the key twice (key[%zu])", s, j);
        if (pi == -2)
            k->key_dtype = true;
        else
            k->key_slots[k->nkey++] = k->slot_problem0 + pi;
    }
    return BT_OK;
}

static bt_status load_boundary(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_array(v) || json_array_size(v) > BT__MAX_BOUNDARY)
        return bt__ld_fail(L, "boundary", "expected a list of at most %d problem sizes", BT__MAX_BOUNDARY);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[64];
        snprintf(p, sizeof p, "boundary[%zu]", i);
        json_t *b = json_array_get(v, i);
        if (!json_is_object(b))
            return bt__ld_fail(L, p, "expected an object of problem variables");
        for (int j = 0; j < BT__MAX_PROBLEM; j++)
            k->boundary[k->nboundary][j] = -1;
        const char *name;
        json_t *x;
        json_object_foreach(b, name, x)
        {
            char vp[160];
            snprintf(vp, sizeof vp, "%s.%s", p, name);
            int pi = bt__ld_problem(k, name);
            if (pi < 0)
                return bt__ld_fail(L, vp, "'%s' is not a problem variable", name);
            BT__TRY(bt__ld_int(L, x, vp, &k->boundary[k->nboundary][pi]));
            if (k->boundary[k->nboundary][pi] < 0)
                return bt__ld_fail(L, vp, "a problem size must be >= 0");
        }
        for (int j = 0; j < k->nboundary; j++)
            if (!memcmp(k->boundary[j], k->boundary[k->nboundary], sizeof k->boundary[j]))
                return bt__ld_fail(L, p, "the same boundary size as boundary[%d]", j);
        k->nboundary++;
    }
    return BT_OK;
}

/* "dtypes": a name or a list of distinct names; the first is the default. */
static bt_status load_dtypes(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    k->ndtypes = 1;
    k->dtypes[0] = BT__DT_FP32;
    if (!v)
        return BT_OK;
    if (json_is_string(v)) {
        if (!bt__dtype_parse(json_string_value(v), &k->dtypes[0]))
            return bt__ld_fail(L, "dtypes", "unknown dtype '%s'", json_string_value(v));
        return BT_OK;
    }
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > BT__MAX_DTYPES)
        return bt__ld_fail(L, "dtypes", "expected a dtype name or a list of 1..%d names",
                           BT__MAX_DTYPES);
    k->ndtypes = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[32];
        const char *s;
        snprintf(p, sizeof p, "dtypes[%zu]", i);
        BT__TRY(bt__ld_str(L, json_array_get(v, i), p, &s));
        bt__dtype t;
        if (!bt__dtype_parse(s, &t))
            return bt__ld_fail(L, p, "unknown dtype '%s' (fp32, fp16, bf16, fp64, fp8, int8, "
                               "int32, int64)", s);
        for (int j = 0; j < k->ndtypes; j++)
            if (k->dtypes[j] == t)
                return bt__ld_fail(L, p, "dtype '%s' is listed twice (dtypes[%d])", s, j);
        k->dtypes[k->ndtypes++] = t;
    }
    return BT_OK;
}

/* "blocktune_spec", "name", "description", "dtypes", "allow_tf32". */
static bt_status load_header(bt__ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    json_t *v;
    const char *s;
    if ((v = json_object_get(root, "blocktune_spec"))) {
        int64_t ver;
        BT__TRY(bt__ld_int(L, v, "blocktune_spec", &ver));
        if (ver != 1)
            return bt__ld_fail(L, "blocktune_spec", "unsupported spec version %lld (this "
                               "blocktune reads 1)", (long long)ver);
    }
    if (!(v = json_object_get(root, "name")))
        return bt__ld_fail(L, "", "missing \"name\"");
    BT__TRY(bt__ld_str(L, v, "name", &s));
    if (!s[0])
        return bt__ld_fail(L, "name", "the name is empty");
    if (!(k->name = bt__strdup(s)))
        return BT_NOMEM;
    if ((v = json_object_get(root, "description"))) {
        BT__TRY(bt__ld_str(L, v, "description", &s));
        if (!(k->description = bt__strdup(s)))
            return BT_NOMEM;
    }
    BT__TRY(load_dtypes(L, json_object_get(root, "dtypes")));
    if ((v = json_object_get(root, "allow_tf32")))
        BT__TRY(bt__ld_bool(L, v, "allow_tf32", &k->allow_tf32));
    return BT_OK;
}

/* "constraints": a list of expressions (C-like or Kernel Tuner's Python restriction strings). */
static bt_status load_constraints(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_array(v))
        return bt__ld_fail(L, "constraints", "expected a list of expressions");
    BT__TRY(bt__ld_bound(L, v, "constraints", BT__MAX_CONSTRAINTS, "constraints"));
    size_t n = json_array_size(v);
    k->constraints = calloc(n ? n : 1, sizeof *k->constraints);
    if (!k->constraints)
        return BT_NOMEM;
    for (size_t i = 0; i < n; i++) {
        char p[48];
        snprintf(p, sizeof p, "constraints[%zu]", i);
        BT__TRY(bt__ld_expr(L, json_array_get(v, i), p, &k->constraints[i]));
        k->nconstraints++;
    }
    return BT_OK;
}

/* "rules": a rule set name or a list of rule names. */
static bt_status load_rules(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    snprintf(k->rules_name, sizeof k->rules_name, "limits");
    if (v) {
        char text[sizeof k->rules_name] = "";
        size_t o = 0;
        if (json_is_string(v))
            o = (size_t)snprintf(text, sizeof text, "%s", json_string_value(v));
        else if (json_is_array(v)) {
            for (size_t i = 0; i < json_array_size(v) && o < sizeof text; i++) {
                char p[48];
                const char *s;
                snprintf(p, sizeof p, "rules[%zu]", i);
                BT__TRY(bt__ld_str(L, json_array_get(v, i), p, &s));
                o += (size_t)snprintf(text + o, sizeof text - o, "%s%s", i ? "," : "", s);
            }
        } else
            return bt__ld_fail(L, "rules", "expected a rule set name or a list of rule names");
        if (o >= sizeof text) /* a word cut short would be read as another */
            return bt__ld_fail(L, "rules", "the rules are longer than %zu characters",
                               sizeof text - 1);
        snprintf(k->rules_name, sizeof k->rules_name, "%s", text);
    }
    bt_diag rd;
    bt__diag_clear(&rd);
    if (!bt__rules_parse(k->rules_name, &k->rules, &rd))
        return bt__ld_fail(L, "rules", "%s", rd.msg);
    return BT_OK;
}

/* The space: "problem", "params" (and the symbol table), "configs", "constraints", "rules",
 * "model" and the parameters' roles. */
static bt_status load_space(bt__ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    json_t *v;
    BT__TRY(load_problem(L, json_object_get(root, "problem")));
    if (!(v = json_object_get(root, "params")))
        return bt__ld_fail(L, "", "missing \"params\" (the config space)");
    BT__TRY(load_params(L, v));
    BT__TRY(build_syms(L));
    if ((v = json_object_get(root, "configs")))
        BT__TRY(load_configs(L, v));
    BT__TRY(load_constraints(L, json_object_get(root, "constraints")));
    BT__TRY(load_rules(L, json_object_get(root, "rules")));
    BT__TRY(load_model(L, json_object_get(root, "model")));
    for (int i = 0; i < k->space.nparams; i++) {
        bt__param_role r = k->space.params[i].role;
        if (r == BT__ROLE_NUM_WARPS)
            k->p_num_warps = i;
        else if (r == BT__ROLE_NUM_STAGES)
            k->p_num_stages = i;
        else if (r == BT__ROLE_NUM_CTAS)
            k->p_num_ctas = i;
    }
    return BT_OK;
}

/* "sources" (with "prelude"), "entry", "options", "sm90a". */
static bt_status load_code(bt__ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    json_t *v;
    const char *s;
    if (json_object_get(root, "prelude") && !json_object_get(root, "sources"))
        return bt__ld_fail(L, "prelude", "a prelude without \"sources\" to put it before");
    if ((v = json_object_get(root, "sources"))) {
        BT__TRY(bt__ld_sources(L, v, "sources", json_object_get(root, "prelude"), "prelude",
                               k->src, &k->nsrc));
        for (int i = 0; i < k->nsrc; i++) /* Triton imports its file: the path is kept */
            if (!strcmp(k->src[i].lang, "triton"))
                BT__TRY(bt__ld_triton_source(L, json_object_get(v, "triton"), "sources.triton",
                                             &k->src[i]));
        json_t *x;
        if (!(x = json_object_get(root, "entry")))
            return bt__ld_fail(L, "", "a spec with sources needs \"entry\" (the kernel function "
                               "name)");
        BT__TRY(bt__ld_str(L, x, "entry", &s));
        if (!s[0] || strlen(s) > BT__MAX_ENTRY)
            return bt__ld_fail(L, "entry", "the entry must be 1..%d characters", BT__MAX_ENTRY);
        if (!(k->entry = bt__strdup(s)))
            return BT_NOMEM;
        if (!k->grid[0].e)
            return bt__ld_fail(L, "", "a spec with sources needs \"launch\": {\"grid\": ..., "
                               "\"block\": ...}");
    }
    if ((v = json_object_get(root, "options"))) {
        BT__TRY(bt__ld_str(L, v, "options", &s));
        if (!(k->options = bt__strdup(s)))
            return BT_NOMEM;
    }
    bool sm90a = false;
    if ((v = json_object_get(root, "sm90a")))
        BT__TRY(bt__ld_bool(L, v, "sm90a", &sm90a));
    /* "sm90a" is the CUDA source's target: Hopper's architecture-specific sm_90a */
    for (int i = 0; sm90a && i < k->nsrc; i++)
        if (!strcmp(k->src[i].lang, "cuda"))
            snprintf(k->src[i].target, sizeof k->src[i].target, "sm_90a");
    return BT_OK;
}

/* Data read from files holds one problem's sizes: boundary sizes could not be made from it. */
static bt_status check_files_and_boundary(bt__ld *L)
{
    bt_kdesc *k = L->k;
    if (!k->nboundary)
        return BT_OK;
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].file || k->args[i].answer)
            return bt__ld_fail(L, "boundary", "argument '%s' is read from a file, which holds one "
                               "problem's data: boundary sizes cannot be verified with it",
                               k->args[i].name);
    return BT_OK;
}

static bt_status load_root(bt__ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(root))
        return bt__ld_fail(L, "", "a spec is a JSON object");
    static const char *const keys[] = {
        "blocktune_spec", "name",    "description",   "sources",       "entry",     "options",
        "sm90a",          "dtypes",  "allow_tf32",    "problem",       "params",    "configs",
        "constraints",    "rules",   "model",         "launch",        "flops",     "bytes",
        "args",           "outputs", "reset_to_zero", "restore_value", "key",       "tolerance",
        "reference",      "boundary", "defines",      "prelude",  "families", NULL};
    BT__TRY(bt__ld_keys(L, root, "", keys));
    L->triton = bt__ld_is_triton(root);
    BT__TRY(load_header(L, root));
    BT__TRY(load_space(L, root));
    BT__TRY(bt__ld_launch(L, json_object_get(root, "launch")));
    json_t *v;
    if ((v = json_object_get(root, "flops")))
        BT__TRY(bt__ld_expr(L, v, "flops", &k->flops));
    if ((v = json_object_get(root, "bytes")))
        BT__TRY(bt__ld_expr(L, v, "bytes", &k->bytes));
    BT__TRY(load_code(L, root));
    BT__TRY(bt__ld_args(L, root));
    BT__TRY(load_key(L, json_object_get(root, "key")));
    BT__TRY(bt__ld_defines(L, json_object_get(root, "defines")));
    BT__TRY(load_tolerance(L, json_object_get(root, "tolerance")));
    BT__TRY(load_reference(L, json_object_get(root, "reference")));
    BT__TRY(load_boundary(L, json_object_get(root, "boundary")));
    if (L->triton)
        BT__TRY(bt__ld_triton_check(L, root));
    BT__TRY(check_files_and_boundary(L));
    return bt__ld_families(L, json_object_get(root, "families"));
}

/* ---------------------------------------------------------------------------------------------
 * Public entry points
 * ------------------------------------------------------------------------------------------- */

static void kdesc_init(bt_kdesc *k)
{
    memset(k, 0, sizeof *k);
    bt__space_init(&k->space);
    k->p_num_warps = k->p_num_stages = k->p_num_ctas = -1;
    k->inner_tile = -1;
}

void bt_kdesc_destroy(bt_kdesc *k)
{
    if (!k)
        return;
    free(k->name);
    free(k->description);
    free(k->file);
    free(k->dir);
    for (int i = 0; i < k->nsrc; i++) {
        free(k->src[i].text);
        free(k->src[i].path);
    }
    free(k->entry);
    free(k->options);
    bt__space_clear(&k->space);
    free(k->configs);
    for (int i = 0; i < k->nconstraints; i++)
        bt__kexpr_free(&k->constraints[i]);
    free(k->constraints);
    bt__kexpr *all[] = {&k->smem,    &k->regs,      &k->threads,  &k->acc_bytes,
                        &k->tensor_core, &k->vector_ok, &k->traffic, &k->perf,
                        &k->dyn_smem, &k->flops,     &k->bytes,    &k->static_smem};
    for (size_t i = 0; i < BT__ARRAY_LEN(all); i++)
        bt__kexpr_free(all[i]);
    for (int i = 0; i < 3; i++) {
        bt__kexpr_free(&k->grid[i]);
        bt__kexpr_free(&k->block[i]);
        bt__kexpr_free(&k->ref_grid[i]);
        bt__kexpr_free(&k->ref_block[i]);
    }
    bt__ld_args_free(k);
    for (int i = 0; i < k->npdefines; i++)
        bt__kexpr_free(&k->pdefines[i].value);
    for (int i = 0; i < k->nref_src; i++) {
        free(k->ref_src[i].text);
        free(k->ref_src[i].path);
    }
    free(k->ref_entry);
    for (int i = 0; i < k->nfam; i++) { /* a front door's families */
        if (!k->fam[i].self)
            bt_kdesc_destroy(k->fam[i].k);
        bt__kexpr_free(&k->fam[i].when);
    }
    free(k->fam);
    bt__symtab_free(k->syms);
    free(k);
}

/* A family of a front door (spec_family.c): a built-in spec by name, or a spec file NAME.json
 * beside a spec file (not beside a built-in one). */
static bt_status load_family(bt__ld *L, const char *name, bool file, bt_kdesc **out,
                             bt_diag *diag)
{
    if (!file)
        return bt_kdesc_builtin(name, out, diag);
    if (L->embedded) {
        bt__diag_set(diag, "a built-in spec names built-in families");
        return BT_NOT_FOUND;
    }
    if (name[0] == '/')
        return bt_kdesc_load_file(name, out, diag);
    char *full = malloc(strlen(L->k->dir) + strlen(name) + 2);
    if (!full)
        return BT_NOMEM;
    sprintf(full, "%s/%s", L->k->dir, name);
    bt_status st = bt_kdesc_load_file(full, out, diag);
    free(full);
    return st;
}

static bt_status load_text(const char *text, const char *file, const char *dir, bool embedded,
                           bt_kdesc **out, bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    json_error_t jerr;
    json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (diag) {
            snprintf(diag->file, sizeof diag->file, "%s", file);
            diag->line = jerr.line;
            diag->column = jerr.column;
            snprintf(diag->msg, sizeof diag->msg, "invalid JSON: %s", jerr.text);
        }
        return BT_PARSE;
    }
    bt_kdesc *k = malloc(sizeof *k);
    bt__jpos *pos = bt__jpos_build(text);
    if (!k || !pos) {
        free(k);
        bt__jpos_free(pos);
        json_decref(root);
        return BT_NOMEM;
    }
    kdesc_init(k);
    k->file = bt__strdup(file);
    k->dir = bt__strdup(dir);
    bt__ld L = {k, file, pos, diag, embedded, NULL, false, load_family};
    bt_status st = (k->file && k->dir) ? BT_OK : BT_NOMEM;
    bt__ldmap map = {0};
    if (!st && bt__t1_is(root)) { /* a T1 file: loaded as the spec it says, errors at its fields */
        json_t *spec = NULL;
        st = bt__t1_translate(&L, root, &spec, &map);
        json_decref(root);
        root = spec;
        L.map = &map;
    }
    if (!st)
        st = load_root(&L, root);
    bt__ldmap_free(&map);
    bt__jpos_free(pos);
    json_decref(root);
    if (st != BT_OK) {
        bt_kdesc_destroy(k);
        return st;
    }
    *out = k;
    return BT_OK;
}

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return bt__strdup(".");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 2);
    if (!d)
        return NULL;
    if (n == 0)
        d[n++] = '/';
    else
        memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

bt_status bt_kdesc_load_file(const char *path, bt_kdesc **out, bt_diag *diag)
{
    if (!out || !path)
        return BT_INVALID_ARG;
    *out = NULL;
    struct stat sb;
    const char *why = stat(path, &sb) != 0 ? NULL
                      : S_ISDIR(sb.st_mode) ? "is a directory"
                      : !S_ISREG(sb.st_mode) ? "is not a regular file"
                                             : NULL;
    char *text = why ? NULL : bt__read_file(path, NULL);
    if (!text) {
        if (!why)
            why = strerror(errno);
        if (diag) {
            bt__diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            bt__diag_set(diag, "cannot read spec: %s", why); /* diag->file names it */
        }
        return BT_IO;
    }
    char *dir = dir_of(path);
    if (!dir) {
        free(text);
        return BT_NOMEM;
    }
    bt_status st = load_text(text, path, dir, false, out, diag);
    free(dir);
    free(text);
    return st;
}

bt_status bt_kdesc_load_string(const char *json, const char *name, bt_kdesc **out, bt_diag *diag)
{
    if (!out || !json)
        return BT_INVALID_ARG;
    return load_text(json, name ? name : "<string>", ".", false, out, diag);
}

/* The built-in kernels are the specs embedded from kernels/specs/ (CMakeLists.txt globs them): a
 * spec added there is built in, and nothing else lists them. Their names, sorted, once. */
#define BT__MAX_BUILTINS 64
static char builtin_buf[BT__MAX_BUILTINS][BT_NAME_MAX];
static const char *builtin_names[BT__MAX_BUILTINS + 1];
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void find_builtins(void)
{
    static const char dir[] = "kernels/specs/", ext[] = ".json";
    size_t n = 0;
    const char *path;
    for (size_t i = 0; bt__embedded_at(i, &path, NULL) && n < BT__MAX_BUILTINS; i++) {
        size_t len = strlen(path), stem = len - strlen(dir) - strlen(ext);
        if (len <= strlen(dir) + strlen(ext) || strncmp(path, dir, strlen(dir)) != 0 ||
            strcmp(path + len - strlen(ext), ext) != 0 || stem >= BT_NAME_MAX ||
            memchr(path + strlen(dir), '/', stem))
            continue;
        memcpy(builtin_buf[n], path + strlen(dir), stem);
        builtin_buf[n][stem] = '\0';
        builtin_names[n] = builtin_buf[n];
        n++;
    }
    qsort(builtin_names, n, sizeof *builtin_names, cmp_name);
}

const char *const *bt_kdesc_builtin_names(void)
{
    pthread_once(&builtin_once, find_builtins);
    return builtin_names;
}

bt_status bt_kdesc_builtin(const char *name, bt_kdesc **out, bt_diag *diag)
{
    if (!out || !name)
        return BT_INVALID_ARG;
    *out = NULL;
    bt__diag_clear(diag);
    const char *canon = NULL;
    const char *const *names = bt_kdesc_builtin_names();
    for (const char *const *n = names; *n; n++)
        if (bt__streq_nocase(*n, name))
            canon = *n;
    if (!canon) {
        bt__sbuf list = {0};
        for (const char *const *n = names; *n; n++)
            bt__sbuf_printf(&list, "%s%s", n == names ? "" : ", ", *n);
        bt__diag_set(diag, "unknown kernel '%s' (built-in kernels: %s; or give a spec file)", name,
                     list.s ? list.s : "");
        bt__sbuf_free(&list);
        return BT_NOT_FOUND;
    }
    char path[128];
    snprintf(path, sizeof path, "kernels/specs/%s.json", canon);
    size_t size;
    const char *text = bt__embedded(path, &size);
    if (!text) {
        bt__diag_set(diag, "built-in spec %s is missing from this build", path);
        return BT_INTERNAL;
    }
    return load_text(text, path, "kernels/specs", true, out, diag);
}

const char *bt_kdesc_name(const bt_kdesc *k) { return k ? k->name : NULL; }
