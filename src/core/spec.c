/*
 * spec.c — loads a kernel spec (JSON, docs/spec.md) into a bt_kdesc, and the small public
 * functions around it (built-in kernels, problems, --config parsing).
 *
 * Loading is all-or-nothing: the description is built privately and handed out only when every
 * field has been checked. Every error names file:line:column and the field (positions come from
 * jpos.c, since jansson does not keep them).
 */
#include "core/jpos.h"
#include "core/kdesc.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Loader context and error helpers
 * ------------------------------------------------------------------------------------------- */
typedef struct ld {
    bt_kdesc *k;
    const char *file;
    bt__jpos *pos;
    bt_diag *diag;
    bool embedded; /* sources resolve against the embedded files */
} ld;

static bt_status failv(ld *L, const char *path, bt_status st, const char *fmt, va_list ap)
{
    if (!L->diag)
        return st;
    bt__diag_clear(L->diag);
    snprintf(L->diag->file, sizeof L->diag->file, "%s", L->file);
    int line = 0, col = 0;
    if (path && bt__jpos_find(L->pos, path, &line, &col)) {
        L->diag->line = line;
        L->diag->column = col;
    }
    if (path)
        bt__diag_field(L->diag, path);
    vsnprintf(L->diag->msg, sizeof L->diag->msg, fmt, ap);
    return st;
}

static bt_status fail(ld *L, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bt_status fail(ld *L, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bt_status st = failv(L, path, BT_PARSE, fmt, ap);
    va_end(ap);
    return st;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        bt_status st_ = (x);                                                                       \
        if (st_ != BT_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Rejects keys not in `allowed`, suggesting the closest. */
static bt_status check_keys(ld *L, const json_t *obj, const char *path, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        const char *best = NULL;
        int bestd = 1000;
        for (const char *const *a = allowed; *a; a++) {
            if (!strcmp(key, *a)) {
                ok = true;
                break;
            }
            int d = bt__edit_distance(key, *a);
            if (d < bestd) {
                bestd = d;
                best = *a;
            }
        }
        if (!ok) {
            char p[256];
            snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
            if (best && bestd <= 3)
                return fail(L, p, "unknown field '%s' (did you mean '%s'?)", key, best);
            return fail(L, p, "unknown field '%s'", key);
        }
    }
    return BT_OK;
}

static bt_status get_int(ld *L, const json_t *v, const char *path, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return BT_OK;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9e18) {
            *out = (int64_t)d;
            return BT_OK;
        }
    }
    return fail(L, path, "expected an integer but found %s", jtype(v));
}

static bt_status get_num(ld *L, const json_t *v, const char *path, double *out)
{
    if (!json_is_number(v))
        return fail(L, path, "expected a number but found %s", jtype(v));
    *out = json_number_value(v);
    return BT_OK;
}

static bt_status get_bool(ld *L, const json_t *v, const char *path, bool *out)
{
    if (!json_is_boolean(v))
        return fail(L, path, "expected true or false but found %s", jtype(v));
    *out = json_is_true(v);
    return BT_OK;
}

static bt_status get_str(ld *L, const json_t *v, const char *path, const char **out)
{
    if (!json_is_string(v))
        return fail(L, path, "expected a string but found %s", jtype(v));
    *out = json_string_value(v);
    return BT_OK;
}

/* Parses an expression given as a string or an integer into x. */
static bt_status get_expr(ld *L, const json_t *v, const char *path, bt__kexpr *x)
{
    char buf[32];
    const char *src;
    bool is_str = json_is_string(v);
    if (is_str)
        src = json_string_value(v);
    else if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        src = buf;
    } else
        return fail(L, path, "expected an expression (string or integer) but found %s", jtype(v));
    snprintf(x->field, sizeof x->field, "%s", path);
    bt__jpos_find(L->pos, path, &x->line, &x->col);
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = bt__expr_parse(src, L->k->syms, &x->e, &d);
    if (st != BT_OK) {
        if (L->diag) {
            bt__diag_clear(L->diag);
            snprintf(L->diag->file, sizeof L->diag->file, "%s", L->file);
            L->diag->line = x->line;
            /* the expression's column counts from its first character, after the quote */
            L->diag->column = x->col + (is_str ? 1 : 0) + (d.column > 0 ? d.column - 1 : 0);
            bt__diag_field(L->diag, path);
            snprintf(L->diag->msg, sizeof L->diag->msg, "in '%.300s': %.600s", src, d.msg);
        }
        return st == BT_NOMEM ? st : BT_PARSE;
    }
    return BT_OK;
}

static void kexpr_free(bt__kexpr *x)
{
    bt__expr_free(x->e);
    x->e = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Paths and sources
 * ------------------------------------------------------------------------------------------- */

/* Joins dir and rel and removes "." and "dir/.." segments. */
static char *path_join_norm(const char *dir, const char *rel)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *joined = malloc(n);
    if (!joined)
        return NULL;
    if (rel[0] == '/' || !dir[0])
        snprintf(joined, n, "%s", rel);
    else
        snprintf(joined, n, "%s/%s", dir, rel);
    /* normalise in place */
    char *segs[256];
    int ns = 0;
    bool abs = joined[0] == '/';
    char *save = NULL;
    char *copy = bt__strdup(joined);
    if (!copy) {
        free(joined);
        return NULL;
    }
    for (char *t = strtok_r(copy, "/", &save); t && ns < 256; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, "."))
            continue;
        if (!strcmp(t, "..") && ns > 0 && strcmp(segs[ns - 1], "..")) {
            ns--;
            continue;
        }
        segs[ns++] = t;
    }
    size_t o = 0;
    if (abs)
        joined[o++] = '/';
    for (int i = 0; i < ns; i++) {
        size_t l = strlen(segs[i]);
        if (i)
            joined[o++] = '/';
        memcpy(joined + o, segs[i], l);
        o += l;
    }
    joined[o] = '\0';
    free(copy);
    return joined;
}

/* A source: "file.cl", {"file": "..."} or {"inline": "..."}. */
static bt_status load_one_source(ld *L, const json_t *v, const char *path, char **out)
{
    const char *file = NULL, *inl = NULL;
    char p2[256];
    if (json_is_string(v))
        file = json_string_value(v);
    else if (json_is_object(v)) {
        static const char *const keys[] = {"file", "inline", NULL};
        TRY(check_keys(L, v, path, keys));
        json_t *f = json_object_get(v, "file"), *i = json_object_get(v, "inline");
        if ((f != NULL) == (i != NULL))
            return fail(L, path, "give exactly one of \"file\" or \"inline\"");
        snprintf(p2, sizeof p2, "%s.%s", path, f ? "file" : "inline");
        TRY(get_str(L, f ? f : i, p2, f ? &file : &inl));
    } else
        return fail(L, path, "expected a file name or {\"file\"|\"inline\": ...} but found %s",
                    jtype(v));
    if (inl) {
        *out = bt__strdup(inl);
        return *out ? BT_OK : BT_NOMEM;
    }
    char *full = path_join_norm(L->k->dir ? L->k->dir : "", file);
    if (!full)
        return BT_NOMEM;
    if (L->embedded) {
        size_t size;
        const char *data = bt__embedded(full, &size);
        if (!data) {
            bt_status st = fail(L, json_is_string(v) ? path : p2,
                                "built-in source '%s' is not embedded", full);
            free(full);
            return st;
        }
        *out = malloc(size + 1);
        if (!*out) {
            free(full);
            return BT_NOMEM;
        }
        memcpy(*out, data, size);
        (*out)[size] = '\0';
        free(full);
        return BT_OK;
    }
    *out = bt__read_file(full, NULL);
    if (!*out) {
        bt_status st = fail(L, json_is_string(v) ? path : p2, "cannot read source '%s': %s", full,
                            strerror(errno));
        free(full);
        return st == BT_PARSE ? BT_IO : st;
    }
    free(full);
    return BT_OK;
}

/* SRC, or a list of them, concatenated in order (shared helpers first: "cuda": ["common.cuh",
 * "kernel.cu"]). An element names its place as path[i]. */
static bt_status load_source(ld *L, const json_t *v, const char *path, char **out)
{
    if (!json_is_array(v))
        return load_one_source(L, v, path, out);
    size_t n = json_array_size(v);
    if (n == 0)
        return fail(L, path, "an empty list of sources");
    char *all = NULL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char p2[256], *part = NULL;
        snprintf(p2, sizeof p2, "%s[%zu]", path, i);
        const json_t *e = json_array_get(v, i);
        bt_status st = json_is_array(e) ? fail(L, p2, "expected a file name or {\"file\"|\"inline\": ...}"
                                                       " but found a list")
                                        : load_one_source(L, e, p2, &part);
        if (st) {
            free(all);
            return st;
        }
        size_t pl = strlen(part);
        char *grown = realloc(all, len + pl + 2);
        if (!grown) {
            free(part);
            free(all);
            return BT_NOMEM;
        }
        all = grown;
        memcpy(all + len, part, pl);
        len += pl;
        if (pl && part[pl - 1] != '\n') /* the next file starts on a line of its own */
            all[len++] = '\n';
        all[len] = '\0';
        free(part);
    }
    *out = all;
    return BT_OK;
}

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

static bt_status load_params(ld *L, const json_t *params)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(params) || json_object_size(params) == 0)
        return fail(L, "params", "expected an object with at least one parameter");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)params, name, v)
    {
        char path[160];
        snprintf(path, sizeof path, "params.%s", name);
        bool ident = isalpha((unsigned char)name[0]) || name[0] == '_';
        for (const char *c = name; *c; c++)
            ident = ident && (isalnum((unsigned char)*c) || *c == '_');
        if (!ident)
            return fail(L, path, "parameter name '%s' is not an identifier", name);
        const json_t *vals = v;
        const json_t *pow2 = NULL, *range = NULL;
        bt__param_role role = role_from_name(name);
        if (json_is_object(v)) {
            static const char *const keys[] = {"values", "pow2", "range", "role", NULL};
            TRY(check_keys(L, v, path, keys));
            vals = json_object_get(v, "values");
            pow2 = json_object_get(v, "pow2");
            range = json_object_get(v, "range");
            if ((vals != NULL) + (pow2 != NULL) + (range != NULL) != 1)
                return fail(L, path, "give exactly one of \"values\", \"pow2\" or \"range\"");
            json_t *r = json_object_get(v, "role");
            if (r) {
                char rp[192];
                snprintf(rp, sizeof rp, "%s.role", path);
                const char *rs;
                TRY(get_str(L, r, rp, &rs));
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
                    return fail(L, rp,
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
                return fail(L, vp, "expected a list of integers but found %s", jtype(vals));
            size_t n = json_array_size(vals);
            if (n == 0 || n > 65536)
                return fail(L, vp, "a parameter needs 1..65536 values (got %zu)", n);
            int64_t *arr = malloc(sizeof *arr * n);
            if (!arr)
                return BT_NOMEM;
            for (size_t i = 0; i < n; i++) {
                char ip[220];
                snprintf(ip, sizeof ip, "%s[%zu]", vp, i);
                st = get_int(L, json_array_get(vals, i), ip, &arr[i]);
                if (st) {
                    free(arr);
                    return st;
                }
            }
            st = bt__space_add_list(&k->space, name, arr, (int)n, &d);
            free(arr);
            if (st)
                return fail(L, vp, "%s", d.msg);
        } else {
            const json_t *a = pow2 ? pow2 : range;
            char ap[192];
            snprintf(ap, sizeof ap, "%s.%s", path, pow2 ? "pow2" : "range");
            size_t want = pow2 ? 2 : 3;
            if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > want)
                return fail(L, ap, pow2 ? "expected [lo, hi]" : "expected [lo, hi] or [lo, hi, step]");
            int64_t lo, hi, step = 1;
            TRY(get_int(L, json_array_get(a, 0), ap, &lo));
            TRY(get_int(L, json_array_get(a, 1), ap, &hi));
            if (json_array_size(a) == 3)
                TRY(get_int(L, json_array_get(a, 2), ap, &step));
            st = pow2 ? bt__space_add_pow2(&k->space, name, lo, hi, &d)
                      : bt__space_add_range(&k->space, name, lo, hi, step, &d);
            if (st)
                return fail(L, ap, "%s", d.msg);
        }
        k->space.params[k->space.nparams - 1].role = role;
    }
    return BT_OK;
}

/* Builds the symbol table once the params and problem variables are known. */
static bt_status build_syms(ld *L)
{
    bt_kdesc *k = L->k;
    k->syms = bt__symtab_new();
    if (!k->syms)
        return BT_NOMEM;
    for (int i = 0; i < k->space.nparams; i++)
        if (bt__symtab_add(k->syms, k->space.params[i].name) != i) {
            char p[160];
            snprintf(p, sizeof p, "params.%s", k->space.params[i].name);
            return fail(L, p, "'%s' cannot be a parameter name (reserved)", k->space.params[i].name);
        }
    k->slot_problem0 = k->space.nparams;
    for (int i = 0; i < k->nproblem; i++) {
        int s = bt__symtab_add(k->syms, k->problem_names[i]);
        if (s != k->slot_problem0 + i) {
            char p[160];
            snprintf(p, sizeof p, "problem.%s", k->problem_names[i]);
            return fail(L, p, "problem variable '%s' clashes with a parameter or is reserved",
                        k->problem_names[i]);
        }
    }
    k->slot_elem_bytes = bt__symtab_add(k->syms, "elem_bytes");
    if (k->slot_elem_bytes != k->slot_problem0 + k->nproblem)
        return fail(L, "params", "'elem_bytes' is reserved");
    int nd;
    const bt__dev_sym *ds = bt__dev_syms(&nd);
    k->slot_dev0 = k->slot_elem_bytes + 1;
    for (int i = 0; i < nd; i++)
        if (bt__symtab_add(k->syms, ds[i].name) != k->slot_dev0 + i)
            return fail(L, "params", "'%s' is a device limit and cannot be redefined", ds[i].name);
    k->nslots = bt__symtab_count(k->syms);
    return BT_OK;
}

static bt_status load_problem(ld *L, const json_t *prob)
{
    bt_kdesc *k = L->k;
    if (!prob)
        return BT_OK;
    if (!json_is_object(prob))
        return fail(L, "problem", "expected an object of variables with default values");
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)prob, name, v)
    {
        char p[160];
        snprintf(p, sizeof p, "problem.%s", name);
        if (k->nproblem >= BT__MAX_PROBLEM)
            return fail(L, p, "too many problem variables (at most %d)", BT__MAX_PROBLEM);
        if (strlen(name) >= BT_NAME_MAX)
            return fail(L, p, "name too long");
        int64_t d;
        TRY(get_int(L, v, p, &d));
        if (d < 0)
            return fail(L, p, "a problem size must be >= 0 (got %lld)", (long long)d);
        snprintf(k->problem_names[k->nproblem], BT_NAME_MAX, "%s", name);
        k->problem_defaults[k->nproblem++] = d;
    }
    return BT_OK;
}

static int param_index(const bt_kdesc *k, const char *name)
{
    for (int i = 0; i < k->space.nparams; i++)
        if (!strcmp(k->space.params[i].name, name))
            return i;
    return -1;
}

static int problem_index(const bt_kdesc *k, const char *name)
{
    for (int i = 0; i < k->nproblem; i++)
        if (!strcmp(k->problem_names[i], name))
            return i;
    return -1;
}

/* Reads {"PARAM": value, ...} at path into cfg: every parameter set, none unknown; in_space also
 * requires each value to be one of its parameter's values. */
static bt_status parse_config_object(ld *L, const json_t *obj, const char *path, bt_config *cfg,
                                     bool in_space)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(obj))
        return fail(L, path, "expected an object of parameter values");
    memset(cfg, 0, sizeof *cfg);
    cfg->nparams = k->space.nparams;
    bool seen[BT_MAX_PARAMS] = {0};
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)obj, name, v)
    {
        char vp[200];
        snprintf(vp, sizeof vp, "%s.%s", path, name);
        int pi = param_index(k, name);
        if (pi < 0)
            return fail(L, vp, "'%s' is not a parameter of this kernel", name);
        TRY(get_int(L, v, vp, &cfg->v[pi]));
        if (in_space && bt__space_value_pos(&k->space, pi, cfg->v[pi]) < 0)
            return fail(L, vp, "value %lld is not among the values of '%s'",
                        (long long)cfg->v[pi], name);
        seen[pi] = true;
    }
    for (int pi = 0; pi < k->space.nparams; pi++)
        if (!seen[pi])
            return fail(L, path, "the config does not set '%s'", k->space.params[pi].name);
    return BT_OK;
}

static bt_status load_configs(ld *L, const json_t *arr)
{
    bt_kdesc *k = L->k;
    if (!json_is_array(arr) || json_array_size(arr) == 0)
        return fail(L, "configs", "expected a non-empty list of configs");
    size_t n = json_array_size(arr);
    k->configs = calloc(n, sizeof *k->configs);
    if (!k->configs)
        return BT_NOMEM;
    k->nconfigs = n;
    for (size_t i = 0; i < n; i++) {
        char p[64];
        snprintf(p, sizeof p, "configs[%zu]", i);
        TRY(parse_config_object(L, json_array_get(arr, i), p, &k->configs[i], true));
    }
    return BT_OK;
}

static bt_status load_model(ld *L, const json_t *m)
{
    bt_kdesc *k = L->k;
    k->inner_tile = -1;
    k->vector_bytes = 16;
    if (!m)
        return BT_OK;
    if (!json_is_object(m))
        return fail(L, "model", "expected an object");
    static const char *const keys[] = {"kind", "unit", "smem", "regs", "threads",
                                       "accumulator_bytes", "tensor_core", "vector_ok",
                                       "vector_bytes", "traffic", "perf", "tiles", "inner", NULL};
    TRY(check_keys(L, m, "model", keys));
    json_t *v;
    if ((v = json_object_get(m, "kind"))) {
        const char *s;
        TRY(get_str(L, v, "model.kind", &s));
        static const char *const kinds[] = {"generic", "gemm", "rowwise", "reduction", "pointwise"};
        int found = -1;
        for (int i = 0; i < 5; i++)
            if (!strcmp(s, kinds[i]))
                found = i;
        if (found < 0)
            return fail(L, "model.kind", "unknown kind '%s' (generic, gemm, rowwise, reduction, pointwise)", s);
        k->kind = (bt__kind)found;
    }
    if ((v = json_object_get(m, "unit"))) {
        const char *s;
        TRY(get_str(L, v, "model.unit", &s));
        if (!strcmp(s, "tensor"))
            k->unit = BT__UNIT_TENSOR;
        else if (!strcmp(s, "simt"))
            k->unit = BT__UNIT_SIMT;
        else
            return fail(L, "model.unit", "unknown unit '%s' (tensor, simt)", s);
    }
    struct {
        const char *key;
        bt__kexpr *x;
    } ex[] = {{"smem", &k->smem},           {"regs", &k->regs},
              {"threads", &k->threads},     {"accumulator_bytes", &k->acc_bytes},
              {"tensor_core", &k->tensor_core}, {"vector_ok", &k->vector_ok},
              {"traffic", &k->traffic},     {"perf", &k->perf}};
    for (size_t i = 0; i < BT__ARRAY_LEN(ex); i++)
        if ((v = json_object_get(m, ex[i].key))) {
            char p[64];
            snprintf(p, sizeof p, "model.%s", ex[i].key);
            TRY(get_expr(L, v, p, ex[i].x));
        }
    if ((v = json_object_get(m, "vector_bytes"))) {
        int64_t vb;
        TRY(get_int(L, v, "model.vector_bytes", &vb));
        if (vb < 1 || vb > 64 || (vb & (vb - 1)))
            return fail(L, "model.vector_bytes", "expected a power of two in 1..64");
        k->vector_bytes = (int)vb;
    }
    if ((v = json_object_get(m, "inner"))) {
        const char *s;
        TRY(get_str(L, v, "model.inner", &s));
        k->inner_tile = param_index(k, s);
        if (k->inner_tile < 0)
            return fail(L, "model.inner", "'%s' is not a parameter", s);
    }
    if ((v = json_object_get(m, "tiles"))) {
        if (!json_is_array(v) || json_array_size(v) > BT__MAX_TILES)
            return fail(L, "model.tiles", "expected a list of at most %d tiles", BT__MAX_TILES);
        for (size_t i = 0; i < json_array_size(v); i++) {
            char p[64];
            snprintf(p, sizeof p, "model.tiles[%zu]", i);
            json_t *t = json_array_get(v, i);
            if (!json_is_object(t))
                return fail(L, p, "expected {\"param\": ..., \"dim\": ...}");
            static const char *const tk[] = {"param", "dim", "reduction", NULL};
            TRY(check_keys(L, t, p, tk));
            const char *pn, *dn;
            char pp[96];
            snprintf(pp, sizeof pp, "%s.param", p);
            json_t *jp = json_object_get(t, "param"), *jd = json_object_get(t, "dim");
            if (!jp || !jd)
                return fail(L, p, "a tile needs \"param\" and \"dim\"");
            TRY(get_str(L, jp, pp, &pn));
            int pi = param_index(k, pn);
            if (pi < 0)
                return fail(L, pp, "'%s' is not a parameter", pn);
            snprintf(pp, sizeof pp, "%s.dim", p);
            TRY(get_str(L, jd, pp, &dn));
            int di = problem_index(k, dn);
            if (di < 0)
                return fail(L, pp, "'%s' is not a problem variable", dn);
            bt__tile *tl = &k->tiles[k->ntiles++];
            tl->param = pi;
            tl->dim_slot = k->slot_problem0 + di;
            tl->reduction = false;
            json_t *r = json_object_get(t, "reduction");
            if (r) {
                snprintf(pp, sizeof pp, "%s.reduction", p);
                TRY(get_bool(L, r, pp, &tl->reduction));
            }
            k->space.params[pi].role = BT__ROLE_TILE;
        }
    }
    return BT_OK;
}

static bt_status load_launch(ld *L, const json_t *l)
{
    bt_kdesc *k = L->k;
    if (!l)
        return BT_OK;
    if (!json_is_object(l))
        return fail(L, "launch", "expected an object with \"grid\" and \"block\"");
    static const char *const keys[] = {"grid", "block", "local_mem", NULL};
    TRY(check_keys(L, l, "launch", keys));
    const char *names[2] = {"grid", "block"};
    bt__kexpr *dst[2] = {k->grid, k->block};
    for (int g = 0; g < 2; g++) {
        json_t *a = json_object_get(l, names[g]);
        char p[64];
        snprintf(p, sizeof p, "launch.%s", names[g]);
        if (!a)
            return fail(L, "launch", "missing \"%s\"", names[g]);
        if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
            return fail(L, p, "expected a list of 1 to 3 expressions");
        for (size_t i = 0; i < 3; i++) {
            char ip[80];
            snprintf(ip, sizeof ip, "%s[%zu]", p, i);
            if (i < json_array_size(a))
                TRY(get_expr(L, json_array_get(a, i), ip, &dst[g][i]));
            else {
                json_t *one = json_integer(1);
                bt_status st = get_expr(L, one, ip, &dst[g][i]);
                json_decref(one);
                TRY(st);
            }
        }
    }
    json_t *lm = json_object_get(l, "local_mem");
    if (lm)
        TRY(get_expr(L, lm, "launch.local_mem", &k->dyn_smem));
    return BT_OK;
}

static bt_status load_init(ld *L, const json_t *v, const char *path, bt__argspec *a)
{
    if (!json_is_object(v) || json_object_size(v) != 1)
        return fail(L, path,
                    "expected one of {\"normal\": [mean, std]}, {\"uniform\": [lo, hi]}, "
                    "{\"int\": [lo, hi]}, {\"iota\": [start, step]}, {\"const\": x}");
    const char *key = json_object_iter_key(json_object_iter((json_t *)v));
    json_t *x = json_object_get(v, key);
    char p[192];
    snprintf(p, sizeof p, "%s.%s", path, key);
    static const struct {
        const char *name;
        bt__init_kind kind;
        int nargs;
    } inits[] = {{"normal", BT__INIT_NORMAL, 2}, {"uniform", BT__INIT_UNIFORM, 2},
                 {"int", BT__INIT_INT, 2},       {"iota", BT__INIT_IOTA, 2},
                 {"const", BT__INIT_CONST, 1}};
    for (size_t i = 0; i < BT__ARRAY_LEN(inits); i++) {
        if (strcmp(key, inits[i].name))
            continue;
        a->init = inits[i].kind;
        if (inits[i].nargs == 1)
            return get_num(L, x, p, &a->init_a);
        if (!json_is_array(x) || json_array_size(x) != 2)
            return fail(L, p, "expected two numbers");
        TRY(get_num(L, json_array_get(x, 0), p, &a->init_a));
        TRY(get_num(L, json_array_get(x, 1), p, &a->init_b));
        if (a->init == BT__INIT_CONST && a->init_a == 0)
            return BT_OK;
        if ((a->init == BT__INIT_UNIFORM || a->init == BT__INIT_INT) && a->init_b < a->init_a)
            return fail(L, p, "the range is empty (hi < lo)");
        if (a->init == BT__INIT_NORMAL && a->init_b <= 0)
            return fail(L, p, "the standard deviation must be > 0");
        return BT_OK;
    }
    return fail(L, p, "unknown initialiser '%s' (normal, uniform, int, iota, const)", key);
}

static int arg_index(const bt_kdesc *k, const char *name)
{
    for (int i = 0; i < k->nargs; i++)
        if (!strcmp(k->args[i].name, name))
            return i;
    return -1;
}

/* A "tensormap" argument: {"buffer": NAME, "dims": [...], "box": [...], "swizzle": 128}. The
 * buffer is looked up once every argument is known (resolve_tmaps). */
static bt_status load_tmap(ld *L, const json_t *a, const char *p, bt__argspec *as)
{
    char fp[96];
    static const char *const not_here[] = {"size", "value", "init", "output", "dtype"};
    for (size_t t = 0; t < BT__ARRAY_LEN(not_here); t++)
        if (json_object_get(a, not_here[t]))
            return fail(L, p, "a tensormap takes no \"%s\" (it maps its buffer's elements)",
                        not_here[t]);
    as->role = BT__KARG_TMAP;
    as->tm_buffer = -1;
    const char *s;
    json_t *jb = json_object_get(a, "buffer");
    snprintf(fp, sizeof fp, "%s.buffer", p);
    if (!jb)
        return fail(L, p, "a tensormap needs \"buffer\": the buffer argument it maps");
    TRY(get_str(L, jb, fp, &s));
    const char *names[2] = {"dims", "box"};
    bt__kexpr *dst[2] = {as->tm_dims, as->tm_box};
    int n[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        json_t *v = json_object_get(a, names[w]);
        snprintf(fp, sizeof fp, "%s.%s", p, names[w]);
        if (!v)
            return fail(L, p, "a tensormap needs \"%s\"%s", names[w],
                        w ? ": elements copied per request, innermost first"
                          : ": the buffer's dimensions in elements, innermost first");
        if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > BT__TMAP_RANK_MAX)
            return fail(L, fp, "expected a list of 1..%d expressions", BT__TMAP_RANK_MAX);
        n[w] = (int)json_array_size(v);
        for (int i = 0; i < n[w]; i++) {
            char ip[112];
            snprintf(ip, sizeof ip, "%s[%d]", fp, i);
            TRY(get_expr(L, json_array_get(v, (size_t)i), ip, &dst[w][i]));
        }
    }
    if (n[0] != n[1]) {
        snprintf(fp, sizeof fp, "%s.box", p);
        return fail(L, fp, "box has %d dimensions, dims has %d", n[1], n[0]);
    }
    as->tm_rank = n[0];
    as->tm_swizzle = 128;
    json_t *jsw = json_object_get(a, "swizzle");
    if (jsw) {
        snprintf(fp, sizeof fp, "%s.swizzle", p);
        json_int_t sw = json_is_integer(jsw) ? json_integer_value(jsw) : -1;
        if (sw != 0 && sw != 32 && sw != 64 && sw != 128)
            return fail(L, fp, "swizzle is 0, 32, 64 or 128 (bytes)");
        as->tm_swizzle = (int)sw;
    }
    return BT_OK;
}

/* "dtype": {"if": EXPR, "then": DT, "else": DT}; EXPR may use problem variables only (the
 * buffers are made once per problem, before any config). */
static bt_status load_dtype_if(ld *L, const json_t *jd, const char *fp, bt__argspec *as)
{
    static const char *const keys[] = {"if", "then", "else", NULL};
    TRY(check_keys(L, jd, fp, keys));
    char p[128];
    json_t *ji = json_object_get(jd, "if");
    if (!ji)
        return fail(L, fp, "a dtype that depends on the problem needs \"if\", \"then\" and \"else\"");
    snprintf(p, sizeof p, "%s.if", fp);
    TRY(get_expr(L, ji, p, &as->dtype_if));
    bt_kdesc *k = L->k;
    for (int s = 0; s < bt__symtab_count(k->syms); s++)
        if (bt__expr_uses(as->dtype_if.e, s) &&
            (s < k->slot_problem0 || s >= k->slot_problem0 + k->nproblem))
            return fail(L, p, "'%s' is not a problem variable: a buffer's dtype can depend on the "
                        "problem only", bt__symtab_name(k->syms, s));
    const char *names[2] = {"then", "else"};
    bt__dtype *dst[2] = {&as->dtype_then, &as->dtype_else};
    bool *prob[2] = {&as->then_is_problem, &as->else_is_problem};
    for (int b = 0; b < 2; b++) {
        json_t *v = json_object_get(jd, names[b]);
        snprintf(p, sizeof p, "%s.%s", fp, names[b]);
        const char *s;
        if (!v)
            return fail(L, fp, "a dtype that depends on the problem needs \"%s\"", names[b]);
        TRY(get_str(L, v, p, &s));
        if (!strcmp(s, "T"))
            *prob[b] = true;
        else if (!bt__dtype_parse(s, dst[b]))
            return fail(L, p, "unknown dtype '%s'", s);
    }
    return BT_OK;
}

/* Points every tensormap at the buffer its "buffer" names (load_tmap checked it is a string). */
static bt_status resolve_tmaps(ld *L, const json_t *args)
{
    bt_kdesc *k = L->k;
    int ntm = 0;
    for (int i = 0; i < k->nargs; i++) {
        bt__argspec *as = &k->args[i];
        if (as->role != BT__KARG_TMAP)
            continue;
        if (++ntm > BT__MAX_TMAPS)
            return fail(L, "args", "at most %d tensormap arguments", BT__MAX_TMAPS);
        const json_t *a = json_array_get(args, (size_t)i);
        const char *name = json_string_value(json_object_get(a, "buffer"));
        int b = arg_index(k, name);
        char fp[96];
        snprintf(fp, sizeof fp, "args[%d].buffer", i);
        if (b < 0 || k->args[b].role != BT__KARG_BUFFER)
            return fail(L, fp, "'%s' is not a buffer argument", name);
        as->tm_buffer = b;
    }
    return BT_OK;
}

static bt_status load_args(ld *L, const json_t *args)
{
    bt_kdesc *k = L->k;
    if (!args)
        return BT_OK;
    if (!json_is_array(args) || json_array_size(args) > BT__MAX_ARGS)
        return fail(L, "args", "expected a list of at most %d arguments", BT__MAX_ARGS);
    for (size_t i = 0; i < json_array_size(args); i++) {
        char p[64];
        snprintf(p, sizeof p, "args[%zu]", i);
        json_t *a = json_array_get(args, i);
        if (!json_is_object(a))
            return fail(L, p, "expected an object");
        static const char *const keys[] = {"name", "kind", "dtype", "size", "value", "init",
                                           "output", "constant", "buffer", "dims", "box",
                                           "swizzle", NULL};
        TRY(check_keys(L, a, p, keys));
        bt__argspec *as = &k->args[k->nargs];
        memset(as, 0, sizeof *as);
        k->nargs++; /* counted first: whatever a failure below leaves parsed is freed with k */
        char fp[96];
        const char *s;
        snprintf(fp, sizeof fp, "%s.name", p);
        json_t *jn = json_object_get(a, "name");
        if (!jn)
            return fail(L, p, "an argument needs a \"name\"");
        TRY(get_str(L, jn, fp, &s));
        if (!s[0] || strlen(s) >= BT_NAME_MAX)
            return fail(L, fp, "name must be 1..%d characters", BT_NAME_MAX - 1);
        if (arg_index(k, s) >= 0)
            return fail(L, fp, "argument '%s' defined twice", s);
        snprintf(as->name, sizeof as->name, "%s", s);
        const char *kind = "buffer";
        json_t *jk = json_object_get(a, "kind");
        snprintf(fp, sizeof fp, "%s.kind", p);
        if (jk)
            TRY(get_str(L, jk, fp, &kind));
        if (!strcmp(kind, "buffer"))
            as->role = BT__KARG_BUFFER;
        else if (!strcmp(kind, "scalar"))
            as->role = BT__KARG_SCALAR;
        else if (!strcmp(kind, "local"))
            as->role = BT__KARG_LOCAL;
        else if (!strcmp(kind, "tensormap")) {
            TRY(load_tmap(L, a, p, as));
            continue;
        } else
            return fail(L, fp, "unknown kind '%s' (buffer, scalar, local, tensormap)", kind);
        static const char *const tm_only[] = {"buffer", "dims", "box", "swizzle"};
        for (size_t t = 0; t < BT__ARRAY_LEN(tm_only); t++)
            if (json_object_get(a, tm_only[t]))
                return fail(L, p, "\"%s\" belongs to a tensormap argument, not a %s", tm_only[t],
                            kind);
        const char *dt = as->role == BT__KARG_SCALAR ? "int32" : "T";
        json_t *jd = json_object_get(a, "dtype");
        snprintf(fp, sizeof fp, "%s.dtype", p);
        if (jd && json_is_object(jd)) { /* bt__arg_dtype picks the branch per problem */
            if (as->role != BT__KARG_BUFFER)
                return fail(L, fp, "only a buffer's dtype can depend on the problem");
            TRY(load_dtype_if(L, jd, fp, as));
        } else {
            if (jd)
                TRY(get_str(L, jd, fp, &dt));
            if (!strcmp(dt, "T"))
                as->dtype_is_problem = true;
            else if (!bt__dtype_parse(dt, &as->dtype))
                return fail(L, fp, "unknown dtype '%s'", dt);
        }
        const char *szkey = as->role == BT__KARG_SCALAR ? "value" : "size";
        json_t *jsz = json_object_get(a, szkey);
        snprintf(fp, sizeof fp, "%s.%s", p, szkey);
        if (!jsz)
            return fail(L, p, "argument '%s' needs \"%s\"", as->name, szkey);
        if (as->role == BT__KARG_SCALAR && json_object_get(a, "size"))
            return fail(L, p, "a scalar takes \"value\", not \"size\"");
        TRY(get_expr(L, jsz, fp, &as->size));
        as->init = BT__INIT_NORMAL;
        as->init_a = 0;
        as->init_b = 1;
        json_t *ji = json_object_get(a, "init");
        if (ji) {
            snprintf(fp, sizeof fp, "%s.init", p);
            TRY(load_init(L, ji, fp, as));
        }
        json_t *jo = json_object_get(a, "output");
        if (jo) {
            snprintf(fp, sizeof fp, "%s.output", p);
            TRY(get_bool(L, jo, fp, &as->output));
        }
        json_t *jc = json_object_get(a, "constant");
        if (jc) {
            snprintf(fp, sizeof fp, "%s.constant", p);
            TRY(get_bool(L, jc, fp, &as->constant));
        }
        if (as->output && as->role != BT__KARG_BUFFER)
            return fail(L, p, "only buffers can be outputs");
    }
    return resolve_tmaps(L, args);
}

/* "outputs", "reset_to_zero", "restore_value": lists of buffer argument names. */
static bt_status load_arg_list(ld *L, const json_t *v, const char *field, int which)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_array(v))
        return fail(L, field, "expected a list of argument names");
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[96];
        snprintf(p, sizeof p, "%s[%zu]", field, i);
        const char *s;
        TRY(get_str(L, json_array_get(v, i), p, &s));
        int ai = arg_index(k, s);
        if (ai < 0)
            return fail(L, p, "'%s' is not an argument", s);
        if (k->args[ai].role != BT__KARG_BUFFER)
            return fail(L, p, "'%s' is not a buffer", s);
        if (which == 0)
            k->args[ai].output = true;
        else if (which == 1)
            k->args[ai].reset_to_zero = true;
        else
            k->args[ai].restore_value = true;
    }
    return BT_OK;
}

static bt_status load_tolerance(ld *L, const json_t *v)
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
        return fail(L, "tolerance", "expected {\"rtol\": x, \"atol\": y} or per-dtype objects");
    json_t *r = json_object_get(v, "rtol"), *a = json_object_get(v, "atol");
    if (r || a) {
        static const char *const keys[] = {"rtol", "atol", NULL};
        TRY(check_keys(L, v, "tolerance", keys));
        double rt = 0, at = 0;
        if (r)
            TRY(get_num(L, r, "tolerance.rtol", &rt));
        if (a)
            TRY(get_num(L, a, "tolerance.atol", &at));
        if (rt < 0 || at < 0)
            return fail(L, "tolerance", "tolerances must be >= 0");
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
            return fail(L, p, "unknown dtype '%s'", key);
        if (!json_is_object(x))
            return fail(L, p, "expected {\"rtol\": x, \"atol\": y}");
        static const char *const keys[] = {"rtol", "atol", NULL};
        TRY(check_keys(L, x, p, keys));
        json_t *xr = json_object_get(x, "rtol"), *xa = json_object_get(x, "atol");
        if (xr)
            TRY(get_num(L, xr, p, &k->tol[t].rtol));
        if (xa)
            TRY(get_num(L, xa, p, &k->tol[t].atol));
    }
    return BT_OK;
}

static bt_status load_reference(ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_object(v))
        return fail(L, "reference", "expected {\"host\": ...}, {\"config\": {...}} or a kernel");
    static const char *const keys[] = {"host", "config", "sources", "entry", "grid", "block", NULL};
    TRY(check_keys(L, v, "reference", keys));
    json_t *h = json_object_get(v, "host"), *c = json_object_get(v, "config"),
           *s = json_object_get(v, "sources");
    if ((h != NULL) + (c != NULL) + (s != NULL) != 1)
        return fail(L, "reference", "give exactly one of \"host\", \"config\" or \"sources\"");
    if (h) {
        const char *name;
        TRY(get_str(L, h, "reference.host", &name));
        snprintf(k->ref_host, sizeof k->ref_host, "%s", name);
        k->ref = BT__REF_HOST;
        return BT_OK;
    }
    if (c) {
        TRY(parse_config_object(L, c, "reference.config", &k->ref_config, false));
        k->ref = BT__REF_CONFIG;
        return BT_OK;
    }
    /* a reference kernel: its own sources, entry and geometry; same arguments */
    if (!json_is_object(s))
        return fail(L, "reference.sources", "expected {\"opencl\": ..., \"cuda\": ...}");
    json_t *x;
    if ((x = json_object_get(s, "opencl")))
        TRY(load_source(L, x, "reference.sources.opencl", &k->ref_src_opencl));
    if ((x = json_object_get(s, "cuda")))
        TRY(load_source(L, x, "reference.sources.cuda", &k->ref_src_cuda));
    const char *e = k->entry;
    if ((x = json_object_get(v, "entry")))
        TRY(get_str(L, x, "reference.entry", &e));
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
            return fail(L, a ? p : "reference", "a reference kernel needs \"%s\": a list of 1 to 3 expressions", names[g]);
        for (size_t i = 0; i < 3; i++) {
            char ip[80];
            snprintf(ip, sizeof ip, "%s[%zu]", p, i);
            json_t *one = i < json_array_size(a) ? json_incref(json_array_get(a, i)) : json_integer(1);
            bt_status st = get_expr(L, one, ip, &dst[g][i]);
            json_decref(one);
            TRY(st);
        }
    }
    k->ref = BT__REF_KERNEL;
    return BT_OK;
}

static bt_status load_key(ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v) { /* default: every problem variable and the dtype */
        for (int i = 0; i < k->nproblem; i++)
            k->key_slots[k->nkey++] = k->slot_problem0 + i;
        k->key_dtype = true;
        return BT_OK;
    }
    if (!json_is_array(v))
        return fail(L, "key", "expected a list of problem variable names (and \"dtype\")");
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[64];
        snprintf(p, sizeof p, "key[%zu]", i);
        const char *s;
        TRY(get_str(L, json_array_get(v, i), p, &s));
        if (!strcmp(s, "dtype")) {
            k->key_dtype = true;
            continue;
        }
        int pi = problem_index(k, s);
        if (pi < 0)
            return fail(L, p, "'%s' is not a problem variable", s);
        k->key_slots[k->nkey++] = k->slot_problem0 + pi;
    }
    return BT_OK;
}

static bt_status load_boundary(ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_array(v) || json_array_size(v) > BT__MAX_BOUNDARY)
        return fail(L, "boundary", "expected a list of at most %d problem sizes", BT__MAX_BOUNDARY);
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[64];
        snprintf(p, sizeof p, "boundary[%zu]", i);
        json_t *b = json_array_get(v, i);
        if (!json_is_object(b))
            return fail(L, p, "expected an object of problem variables");
        for (int j = 0; j < BT__MAX_PROBLEM; j++)
            k->boundary[k->nboundary][j] = -1;
        const char *name;
        json_t *x;
        json_object_foreach(b, name, x)
        {
            char vp[160];
            snprintf(vp, sizeof vp, "%s.%s", p, name);
            int pi = problem_index(k, name);
            if (pi < 0)
                return fail(L, vp, "'%s' is not a problem variable", name);
            TRY(get_int(L, x, vp, &k->boundary[k->nboundary][pi]));
            if (k->boundary[k->nboundary][pi] < 0)
                return fail(L, vp, "a problem size must be >= 0");
        }
        k->nboundary++;
    }
    return BT_OK;
}

static bt_status load_root(ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(root))
        return fail(L, "", "a spec is a JSON object");
    static const char *const keys[] = {
        "blocktune_spec", "name",  "description", "sources",       "entry",         "options",
        "sm90a",          "dtypes", "allow_tf32", "problem",       "params",        "configs",
        "constraints",    "rules", "model",       "launch",        "flops",         "bytes",
        "args",           "outputs", "reset_to_zero", "restore_value", "key",       "tolerance",
        "reference",      "boundary", NULL};
    TRY(check_keys(L, root, "", keys));
    json_t *v;
    if ((v = json_object_get(root, "blocktune_spec"))) {
        int64_t ver;
        TRY(get_int(L, v, "blocktune_spec", &ver));
        if (ver != 1)
            return fail(L, "blocktune_spec", "unsupported spec version %lld (this blocktune reads 1)", (long long)ver);
    }
    const char *s;
    if (!(v = json_object_get(root, "name")))
        return fail(L, "", "missing \"name\"");
    TRY(get_str(L, v, "name", &s));
    if (!s[0])
        return fail(L, "name", "the name is empty");
    k->name = bt__strdup(s);
    if ((v = json_object_get(root, "description"))) {
        TRY(get_str(L, v, "description", &s));
        k->description = bt__strdup(s);
    }
    /* dtypes */
    k->ndtypes = 1;
    k->dtypes[0] = BT__DT_FP32;
    if ((v = json_object_get(root, "dtypes"))) {
        if (json_is_string(v)) {
            if (!bt__dtype_parse(json_string_value(v), &k->dtypes[0]))
                return fail(L, "dtypes", "unknown dtype '%s'", json_string_value(v));
        } else if (json_is_array(v) && json_array_size(v) >= 1 && json_array_size(v) <= BT__MAX_DTYPES) {
            k->ndtypes = 0;
            for (size_t i = 0; i < json_array_size(v); i++) {
                char p[32];
                snprintf(p, sizeof p, "dtypes[%zu]", i);
                TRY(get_str(L, json_array_get(v, i), p, &s));
                if (!bt__dtype_parse(s, &k->dtypes[k->ndtypes]))
                    return fail(L, p, "unknown dtype '%s' (fp32, fp16, bf16, fp64, fp8, int8, int32, int64)", s);
                k->ndtypes++;
            }
        } else
            return fail(L, "dtypes", "expected a dtype name or a list of 1..%d names", BT__MAX_DTYPES);
    }
    if ((v = json_object_get(root, "allow_tf32")))
        TRY(get_bool(L, v, "allow_tf32", &k->allow_tf32));
    TRY(load_problem(L, json_object_get(root, "problem")));
    if (!(v = json_object_get(root, "params")))
        return fail(L, "", "missing \"params\" (the config space)");
    TRY(load_params(L, v));
    TRY(build_syms(L));
    if ((v = json_object_get(root, "configs")))
        TRY(load_configs(L, v));
    if ((v = json_object_get(root, "constraints"))) {
        if (!json_is_array(v))
            return fail(L, "constraints", "expected a list of expressions");
        size_t n = json_array_size(v);
        k->constraints = calloc(n ? n : 1, sizeof *k->constraints);
        if (!k->constraints)
            return BT_NOMEM;
        for (size_t i = 0; i < n; i++) {
            char p[48];
            snprintf(p, sizeof p, "constraints[%zu]", i);
            TRY(get_expr(L, json_array_get(v, i), p, &k->constraints[i]));
            k->nconstraints++;
        }
    }
    snprintf(k->rules_name, sizeof k->rules_name, "limits");
    if ((v = json_object_get(root, "rules"))) {
        char text[256] = "";
        if (json_is_string(v))
            snprintf(text, sizeof text, "%s", json_string_value(v));
        else if (json_is_array(v)) {
            size_t o = 0;
            for (size_t i = 0; i < json_array_size(v); i++) {
                char p[48];
                snprintf(p, sizeof p, "rules[%zu]", i);
                TRY(get_str(L, json_array_get(v, i), p, &s));
                int w = snprintf(text + o, sizeof text - o, "%s%s", i ? "," : "", s);
                if (w > 0 && (size_t)w < sizeof text - o)
                    o += (size_t)w;
            }
        } else
            return fail(L, "rules", "expected a rule set name or a list of rule names");
        snprintf(k->rules_name, sizeof k->rules_name, "%s", text);
    }
    bt_diag rd;
    bt__diag_clear(&rd);
    if (!bt__rules_parse(k->rules_name, &k->rules, &rd))
        return fail(L, "rules", "%s", rd.msg);
    TRY(load_model(L, json_object_get(root, "model")));
    for (int i = 0; i < k->space.nparams; i++) {
        bt__param_role r = k->space.params[i].role;
        if (r == BT__ROLE_NUM_WARPS)
            k->p_num_warps = i;
        else if (r == BT__ROLE_NUM_STAGES)
            k->p_num_stages = i;
        else if (r == BT__ROLE_NUM_CTAS)
            k->p_num_ctas = i;
    }
    TRY(load_launch(L, json_object_get(root, "launch")));
    if ((v = json_object_get(root, "flops")))
        TRY(get_expr(L, v, "flops", &k->flops));
    if ((v = json_object_get(root, "bytes")))
        TRY(get_expr(L, v, "bytes", &k->bytes));
    if ((v = json_object_get(root, "sources"))) {
        if (!json_is_object(v))
            return fail(L, "sources", "expected {\"opencl\": ..., \"cuda\": ...}");
        static const char *const sk[] = {"opencl", "cuda", NULL};
        TRY(check_keys(L, v, "sources", sk));
        json_t *x;
        if ((x = json_object_get(v, "opencl")))
            TRY(load_source(L, x, "sources.opencl", &k->src_opencl));
        if ((x = json_object_get(v, "cuda")))
            TRY(load_source(L, x, "sources.cuda", &k->src_cuda));
        if (!(x = json_object_get(root, "entry")))
            return fail(L, "", "a spec with sources needs \"entry\" (the kernel function name)");
        TRY(get_str(L, x, "entry", &s));
        k->entry = bt__strdup(s);
        if (!k->grid[0].e)
            return fail(L, "", "a spec with sources needs \"launch\": {\"grid\": ..., \"block\": ...}");
    }
    if ((v = json_object_get(root, "options"))) {
        TRY(get_str(L, v, "options", &s));
        k->options = bt__strdup(s);
    }
    if ((v = json_object_get(root, "sm90a")))
        TRY(get_bool(L, v, "sm90a", &k->needs_sm90a));
    TRY(load_args(L, json_object_get(root, "args")));
    TRY(load_arg_list(L, json_object_get(root, "outputs"), "outputs", 0));
    TRY(load_arg_list(L, json_object_get(root, "reset_to_zero"), "reset_to_zero", 1));
    TRY(load_arg_list(L, json_object_get(root, "restore_value"), "restore_value", 2));
    if (k->src_opencl || k->src_cuda) {
        bool any_out = false;
        for (int i = 0; i < k->nargs; i++)
            any_out |= k->args[i].output;
        if (!any_out)
            return fail(L, "args", "no argument is marked as an output (\"output\": true or \"outputs\": [...]): nothing could be verified");
    }
    TRY(load_key(L, json_object_get(root, "key")));
    TRY(load_tolerance(L, json_object_get(root, "tolerance")));
    TRY(load_reference(L, json_object_get(root, "reference")));
    TRY(load_boundary(L, json_object_get(root, "boundary")));
    if (!k->name || (json_object_get(root, "description") && !k->description))
        return BT_NOMEM;
    return BT_OK;
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

void bt_kdesc_free(bt_kdesc *k)
{
    if (!k)
        return;
    free(k->name);
    free(k->description);
    free(k->file);
    free(k->dir);
    free(k->src_opencl);
    free(k->src_cuda);
    free(k->entry);
    free(k->options);
    bt__space_clear(&k->space);
    free(k->configs);
    for (int i = 0; i < k->nconstraints; i++)
        kexpr_free(&k->constraints[i]);
    free(k->constraints);
    bt__kexpr *all[] = {&k->smem, &k->regs,  &k->threads, &k->acc_bytes, &k->tensor_core,
                        &k->vector_ok, &k->traffic, &k->perf, &k->dyn_smem, &k->flops,
                        &k->bytes};
    for (size_t i = 0; i < BT__ARRAY_LEN(all); i++)
        kexpr_free(all[i]);
    for (int i = 0; i < 3; i++) {
        kexpr_free(&k->grid[i]);
        kexpr_free(&k->block[i]);
        kexpr_free(&k->ref_grid[i]);
        kexpr_free(&k->ref_block[i]);
    }
    for (int i = 0; i < k->nargs; i++) {
        kexpr_free(&k->args[i].size);
        kexpr_free(&k->args[i].dtype_if);
        for (int d = 0; d < BT__TMAP_RANK_MAX; d++) {
            kexpr_free(&k->args[i].tm_dims[d]);
            kexpr_free(&k->args[i].tm_box[d]);
        }
    }
    free(k->ref_src_opencl);
    free(k->ref_src_cuda);
    free(k->ref_entry);
    bt__symtab_free(k->syms);
    free(k);
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
    ld L = {k, file, pos, diag, embedded};
    bt_status st = (k->file && k->dir) ? load_root(&L, root) : BT_NOMEM;
    bt__jpos_free(pos);
    json_decref(root);
    if (st != BT_OK) {
        bt_kdesc_free(k);
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
    char *text = bt__read_file(path, NULL);
    if (!text) {
        if (diag) {
            bt__diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            bt__diag_set(diag, "cannot read spec: %s", strerror(errno));
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

static const char *const builtin_names[] = {"gemm", "gemm_mma", "gemm_wgmma", "softmax",
                                            "layernorm", "reduce", "vector_add", NULL};

const char *const *bt_kdesc_builtin_names(void) { return builtin_names; }

bt_status bt_kdesc_builtin(const char *name, bt_kdesc **out, bt_diag *diag)
{
    if (!out || !name)
        return BT_INVALID_ARG;
    *out = NULL;
    bt__diag_clear(diag);
    const char *canon = NULL;
    for (const char *const *n = builtin_names; *n; n++)
        if (bt__streq_nocase(*n, name))
            canon = *n;
    if (!canon) {
        bt__sbuf list = {0};
        for (const char *const *n = builtin_names; *n; n++)
            bt__sbuf_printf(&list, "%s%s", n == builtin_names ? "" : ", ", *n);
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

/* ---------------------------------------------------------------------------------------------
 * Problems, configs, slots
 * ------------------------------------------------------------------------------------------- */

bt_status bt_problem_create(const bt_kdesc *k, bt_problem **out)
{
    if (!out || !k)
        return BT_INVALID_ARG;
    bt_problem *p = calloc(1, sizeof *p);
    if (!p) {
        *out = NULL;
        return BT_NOMEM;
    }
    p->k = k;
    memcpy(p->values, k->problem_defaults, sizeof p->values);
    p->dtype = k->dtypes[0];
    *out = p;
    return BT_OK;
}

void bt_problem_free(bt_problem *p) { free(p); }

bt_status bt_problem_set(bt_problem *p, const char *name, int64_t value, bt_diag *diag)
{
    if (!p || !name)
        return BT_INVALID_ARG;
    const bt_kdesc *k = p->k;
    for (int i = 0; i < k->nproblem; i++)
        if (bt__streq_nocase(k->problem_names[i], name)) {
            if (value < 0) {
                bt__diag_set(diag, "problem size %s must be >= 0 (got %lld)", name, (long long)value);
                return BT_INVALID_ARG;
            }
            p->values[i] = value;
            return BT_OK;
        }
    bt__sbuf list = {0};
    for (int i = 0; i < k->nproblem; i++)
        bt__sbuf_printf(&list, "%s%s", i ? ", " : "", k->problem_names[i]);
    bt__diag_set(diag, "kernel '%s' has no problem variable '%s' (it has: %s)", k->name, name,
                 list.s ? list.s : "none");
    bt__sbuf_free(&list);
    return BT_NOT_FOUND;
}

bt_status bt_problem_set_dtype(bt_problem *p, const char *dtype, bt_diag *diag)
{
    if (!p || !dtype)
        return BT_INVALID_ARG;
    bt__dtype t;
    bool known = bt__dtype_parse(dtype, &t);
    if (known)
        for (int i = 0; i < p->k->ndtypes; i++)
            if (p->k->dtypes[i] == t) {
                p->dtype = t;
                return BT_OK;
            }
    bt__sbuf list = {0};
    for (int i = 0; i < p->k->ndtypes; i++)
        bt__sbuf_printf(&list, "%s%s", i ? ", " : "", bt__dtype_name(p->k->dtypes[i]));
    bt__diag_set(diag, "%s dtype '%s' for kernel '%s' (it supports: %s)",
                 known ? "unsupported" : "unknown", dtype, p->k->name, list.s ? list.s : "");
    bt__sbuf_free(&list);
    return BT_INVALID_ARG;
}

uint64_t bt__kdesc_count(const bt_kdesc *k)
{
    return k->configs ? k->nconfigs : k->space.total;
}

void bt__kdesc_config_at(const bt_kdesc *k, uint64_t i, bt_config *out)
{
    if (k->configs)
        *out = k->configs[i];
    else
        bt__space_config_at(&k->space, i, out);
}

bt__dtype bt__arg_dtype(const bt_kdesc *k, const bt__argspec *a, const bt_problem *p)
{
    if (a->dtype_if.e) {
        int64_t slots[256], v = 0;
        bt__kdesc_fill_slots(k, NULL, p, NULL, slots);
        bool yes = bt__expr_eval(a->dtype_if.e, slots, &v, NULL) == BT_OK && v != 0;
        if (yes ? a->then_is_problem : a->else_is_problem)
            return p->dtype;
        return yes ? a->dtype_then : a->dtype_else;
    }
    return a->dtype_is_problem ? p->dtype : a->dtype;
}

void bt__kdesc_fill_slots(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                          const bt_gpu *g, int64_t *slots)
{
    for (int i = 0; i < k->space.nparams; i++)
        slots[i] = c ? c->v[i] : 0;
    for (int i = 0; i < k->nproblem; i++)
        slots[k->slot_problem0 + i] = p ? p->values[i] : k->problem_defaults[i];
    slots[k->slot_elem_bytes] = bt__dtype_size(p ? p->dtype : k->dtypes[0]);
    int nd;
    const bt__dev_sym *ds = bt__dev_syms(&nd);
    for (int i = 0; i < nd; i++)
        slots[k->slot_dev0 + i] = g ? ds[i].get(g) : 0;
}

bt_status bt__kexpr_eval(const bt_kdesc *k, const bt__kexpr *x, const int64_t *slots,
                         int64_t *out, bt_diag *diag)
{
    bt_status st = bt__expr_eval(x->e, slots, out, diag);
    if (st != BT_OK && diag) {
        char msg[sizeof diag->msg];
        snprintf(msg, sizeof msg, "%s", diag->msg);
        bt__diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", k->file ? k->file : "");
        diag->line = x->line;
        diag->column = x->col;
        bt__diag_field(diag, x->field);
        snprintf(diag->msg, sizeof diag->msg, "%s", msg);
    }
    return st;
}

bt_status bt_kdesc_parse_config(const bt_kdesc *k, const char *text, bt_config *out, bt_diag *diag)
{
    if (!k || !text || !out)
        return BT_INVALID_ARG;
    bt__diag_clear(diag);
    memset(out, 0, sizeof *out);
    out->nparams = k->space.nparams;
    bool seen[BT_MAX_PARAMS] = {0};
    char *copy = bt__strdup(text);
    if (!copy)
        return BT_NOMEM;
    bt_status st = BT_OK;
    char *save = NULL;
    for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*item))
            item++;
        if (!*item)
            continue;
        char *eq = strchr(item, '=');
        if (!eq) {
            bt__diag_set(diag, "malformed --config item '%s': expected NAME=VALUE", item);
            st = BT_INVALID_ARG;
            break;
        }
        *eq = '\0';
        char *key = item, *val = eq + 1;
        size_t kl = strlen(key);
        while (kl && isspace((unsigned char)key[kl - 1]))
            key[--kl] = '\0';
        int pi = bt__space_find(&k->space, key);
        if (pi < 0) {
            bt__sbuf list = {0};
            for (int i = 0; i < k->space.nparams; i++)
                bt__sbuf_printf(&list, "%s%s", i ? ", " : "", k->space.params[i].name);
            bt__diag_set(diag, "unknown parameter '%s' in --config (kernel '%s' has: %s)", key,
                         k->name, list.s ? list.s : "");
            bt__sbuf_free(&list);
            st = BT_INVALID_ARG;
            break;
        }
        char *end;
        errno = 0;
        long long v = strtoll(val, &end, 0);
        while (isspace((unsigned char)*end))
            end++;
        if (errno || end == val || *end) {
            bt__diag_set(diag, "value of '%s' in --config is not an integer: '%s'", key, val);
            st = BT_INVALID_ARG;
            break;
        }
        if (seen[pi]) {
            bt__diag_set(diag, "parameter '%s' given twice in --config", k->space.params[pi].name);
            st = BT_INVALID_ARG;
            break;
        }
        seen[pi] = true;
        out->v[pi] = v;
    }
    free(copy);
    if (st != BT_OK)
        return st;
    bt__sbuf missing = {0};
    for (int i = 0; i < k->space.nparams; i++)
        if (!seen[i])
            bt__sbuf_printf(&missing, "%s%s", missing.len ? ", " : "", k->space.params[i].name);
    if (missing.len) {
        bt__diag_set(diag, "--config does not set: %s", missing.s);
        bt__sbuf_free(&missing);
        return BT_INVALID_ARG;
    }
    return BT_OK;
}
