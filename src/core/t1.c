/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t1.c — a T1 input file translated into the blocktune spec that spec.c loads (t1.h,
 * docs/t1.md): the tuning parameters and conditions, the kernel (file, name, language, compiler
 * options), the launch (LocalSize as the block; Kernel Tuner's ProblemSize divided by
 * GridDivX/Y/Z, or else GlobalSize), the arguments and the expected outputs. Every spec field is
 * mapped back to the T1 field it came from (specld.h), so that the loader's errors name the T1
 * file's field; what blocktune cannot do as T1 means it is an error here, at its field.
 */
#include "core/t1.h"

#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CS "ConfigurationSpace"
#define KS "KernelSpecification"
#define MAX_VALUES 65536 /* per parameter, as the spec loader allows */

typedef struct t1 {
    bt__ld *L;
    bt__ldmap *map;
    json_t *spec;     /* what is built (the fields below are borrowed from it) */
    const json_t *ks; /* KernelSpecification */
    bool cuda;        /* Language CUDA, else OpenCL */
    const char *pnames[BT_MAX_PARAMS];
    int64_t *pvals[BT_MAX_PARAMS];
    size_t pn[BT_MAX_PARAMS];
    bt__t1names nm;
    char psname[3][16];
    const char *names[BT__MAX_ARGS]; /* the arguments' names, and the outputs' */
    const char *outs[BT__MAX_ARGS];
    int nargs, nout;
    char dflt[BT__MAX_ARGS][24]; /* "arg3": the name of an argument that has no Name */
    bool oom;
} t1;

static const char *const dims[3] = {"X", "Y", "Z"};

bool bt__t1_is(const json_t *root)
{
    return json_is_object(root) &&
           (json_object_get(root, KS) != NULL || json_object_get(root, CS) != NULL);
}

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */
static void put(t1 *T, json_t *obj, const char *key, json_t *v)
{
    if (!v || json_object_set_new(obj, key, v))
        T->oom = true;
}

static void add(t1 *T, json_t *arr, json_t *v)
{
    if (!v || json_array_append_new(arr, v))
        T->oom = true;
}

static void map(t1 *T, const char *from, const char *to, bool verbatim)
{
    if (bt__ldmap_add(T->map, from, to, verbatim) != BT_OK)
        T->oom = true;
}

/* An error in the Python text of the string at path, at its offset. */
static bt_status pyfail(t1 *T, bt_status st, const char *path, const bt__t1err *e)
{
    if (st == BT_NOMEM)
        return st;
    st = bt__ld_fail(T->L, path, "%s", e->msg);
    if (T->L->diag && T->L->diag->column > 0)
        T->L->diag->column += 1 + (int)e->off; /* past the opening quote */
    return st;
}

/* The string at obj.key (path: the field) must be one of names: its index into *out (-1 when
 * absent and !required). */
static bt_status pick(t1 *T, const json_t *obj, const char *key, const char *path,
                      const char *const *names, bool required, int *out)
{
    char p[128];
    snprintf(p, sizeof p, "%s.%s", path, key);
    const json_t *v = json_object_get(obj, key);
    const char *s;
    *out = -1;
    if (!v)
        return required ? bt__ld_fail(T->L, path, "missing \"%s\"", key) : BT_OK;
    BT__TRY(bt__ld_str(T->L, v, p, &s));
    for (int i = 0; names[i]; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return BT_OK;
        }
    bt__sbuf all = {0};
    for (int i = 0; names[i]; i++)
        bt__sbuf_printf(&all, "%s%s", i ? ", " : "", names[i]);
    bt_status st = bt__ld_fail(T->L, p, "unknown %s '%s' (%s)", key, s, all.s ? all.s : "");
    bt__sbuf_free(&all);
    return st;
}

/* A required member obj.key at path, or an error. */
static bt_status need(t1 *T, const json_t *obj, const char *key, const char *path,
                      const json_t **out)
{
    if (!(*out = json_object_get(obj, key)))
        return bt__ld_fail(T->L, path, "missing \"%s\"", key);
    return BT_OK;
}

/* A required list obj.key of at least min and at most max entries (`what`, for messages). */
static bt_status need_list(t1 *T, const json_t *obj, const char *key, const char *parent,
                           size_t min, size_t max, const char *what, const json_t **out)
{
    char p[64];
    snprintf(p, sizeof p, "%s.%s", parent, key);
    BT__TRY(need(T, obj, key, parent, out));
    if (!json_is_array(*out) || json_array_size(*out) < min)
        return bt__ld_fail(T->L, p, "expected a%s list of %s", min ? " non-empty" : "", what);
    if (json_array_size(*out) > max)
        return bt__ld_fail(T->L, p, "%zu %s: at most %zu", json_array_size(*out), what, max);
    return BT_OK;
}

/* An expression as T1 writes one (a string, or an integer) at path, as text in buf. */
static bt_status expr_text(t1 *T, const json_t *v, const char *path, char *buf, size_t n)
{
    if (json_is_integer(v))
        snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v) && strlen(json_string_value(v)) < n)
        snprintf(buf, n, "%s", json_string_value(v));
    else
        return bt__ld_fail(T->L, path, json_is_string(v) ? "longer than %zu characters"
                                                         : "expected an expression (a string)", n);
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The configuration space
 * ------------------------------------------------------------------------------------------- */
static bt_status one_param(t1 *T, const json_t *item, const char *p, json_t *params)
{
    static const char *const keys[] = {"Name", "Type", "Values", "Default", NULL};
    static const char *const types[] = {"int", "uint", "float", "bool", "string", NULL};
    char fp[128];
    const json_t *v;
    const char *name, *text;
    int type, i = T->nm.nparams;
    if (!json_is_object(item))
        return bt__ld_fail(T->L, p, "expected an object");
    BT__TRY(bt__ld_keys(T->L, item, p, keys));
    snprintf(fp, sizeof fp, "%s.Name", p);
    BT__TRY(need(T, item, "Name", p, &v));
    BT__TRY(bt__ld_str(T->L, v, fp, &name));
    if (!bt__ld_ident(name) || strlen(name) >= BT_NAME_MAX)
        return bt__ld_fail(T->L, fp, "'%s' is not a parameter name (an identifier of at most %d "
                           "characters: it reaches the kernel as a define)", name, BT_NAME_MAX - 1);
    for (int j = 0; j < i; j++)
        if (!strcmp(T->pnames[j], name))
            return bt__ld_fail(T->L, fp, "parameter '%s' is listed twice (TuningParameters[%d])",
                               name, j);
    BT__TRY(pick(T, item, "Type", p, types, true, &type));
    if (type > 1)
        return bt__ld_fail(T->L, (snprintf(fp, sizeof fp, "%s.Type", p), fp),
                           "Type '%s': blocktune's parameters are integers (int, uint)",
                           types[type]);
    snprintf(fp, sizeof fp, "%s.Values", p);
    BT__TRY(need(T, item, "Values", p, &v));
    BT__TRY(bt__ld_str(T->L, v, fp, &text));
    bt__t1err e;
    bt_status st = bt__t1_values(text, MAX_VALUES, &T->pvals[i], &T->pn[i], &e);
    if (st)
        return pyfail(T, st, fp, &e);
    T->pnames[i] = name;
    T->nm.nparams++;
    json_t *arr = json_array();
    put(T, params, name, arr);
    for (size_t k = 0; arr && k < T->pn[i]; k++) {
        if (type == 1 && T->pvals[i][k] < 0)
            return bt__ld_fail(T->L, fp, "Type uint, but the value %lld is negative",
                               (long long)T->pvals[i][k]);
        add(T, arr, json_integer(T->pvals[i][k]));
    }
    char from[160];
    snprintf(from, sizeof from, "params.%s", name);
    map(T, from, fp, false);
    return BT_OK;
}

static bt_status load_params(t1 *T, const json_t *cs)
{
    const json_t *tp;
    const char *p = CS ".TuningParameters";
    BT__TRY(need_list(T, cs, "TuningParameters", CS, 1, BT_MAX_PARAMS, "parameters", &tp));
    json_t *params = json_object();
    put(T, T->spec, "params", params);
    map(T, "params", p, false);
    for (size_t i = 0; params && i < json_array_size(tp); i++) {
        char ip[96];
        snprintf(ip, sizeof ip, "%s[%zu]", p, i);
        BT__TRY(one_param(T, json_array_get(tp, i), ip, params));
    }
    T->nm.params = T->pnames;
    T->nm.values = (const int64_t *const *)T->pvals;
    T->nm.nvalues = T->pn;
    return BT_OK;
}

static bt_status load_conditions(t1 *T, const json_t *cs, json_t *cons)
{
    static const char *const keys[] = {"Parameters", "Expression", NULL};
    const json_t *c = json_object_get(cs, "Conditions");
    if (!c)
        return BT_OK;
    if (!json_is_array(c))
        return bt__ld_fail(T->L, CS ".Conditions", "expected a list of conditions");
    for (size_t i = 0; i < json_array_size(c); i++) {
        char p[96], fp[128], from[48];
        const json_t *item = json_array_get(c, i), *v;
        const char *s;
        snprintf(p, sizeof p, CS ".Conditions[%zu]", i);
        if (!json_is_object(item))
            return bt__ld_fail(T->L, p, "expected an object");
        BT__TRY(bt__ld_keys(T->L, item, p, keys));
        BT__TRY(need(T, item, "Parameters", p, &v));
        snprintf(fp, sizeof fp, "%s.Parameters", p);
        if (!json_is_array(v))
            return bt__ld_fail(T->L, fp, "expected a list of parameter names");
        for (size_t j = 0; j < json_array_size(v); j++) {
            char jp[160];
            snprintf(jp, sizeof jp, "%s[%zu]", fp, j);
            BT__TRY(bt__ld_str(T->L, json_array_get(v, j), jp, &s));
            int k = 0;
            while (k < T->nm.nparams && strcmp(T->pnames[k], s))
                k++;
            if (k == T->nm.nparams)
                return bt__ld_fail(T->L, jp, "'%s' is not a tuning parameter", s);
        }
        BT__TRY(need(T, item, "Expression", p, &v));
        snprintf(fp, sizeof fp, "%s.Expression", p);
        BT__TRY(bt__ld_str(T->L, v, fp, &s));
        snprintf(from, sizeof from, "constraints[%zu]", json_array_size(cons));
        map(T, from, fp, true);
        add(T, cons, json_string(s));
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The kernel
 * ------------------------------------------------------------------------------------------- */

/* KernelFile relative to the T1 file's directory, else (as Kernel Tuner looks) to its parent. */
static bt_status kernel_file(t1 *T, const char *rel, char *out, size_t n)
{
    const char *dir = T->L->k->dir ? T->L->k->dir : ".";
    char full[4096];
    struct stat sb;
    snprintf(out, n, "%s", rel);
    snprintf(full, sizeof full, "%s/%s", dir, rel);
    if (rel[0] == '/' || stat(full, &sb) == 0)
        return BT_OK;
    snprintf(full, sizeof full, "%s/../%s", dir, rel);
    if (stat(full, &sb) == 0 && strlen(rel) + 4 < n)
        snprintf(out, n, "../%s", rel);
    return BT_OK; /* otherwise the loader says it cannot read it, at KernelFile */
}

static bt_status load_kernel(t1 *T)
{
    static const char *const langs[] = {"OpenCL", "CUDA", "Vulkan", "Hypertuner", NULL};
    const json_t *ks = T->ks, *v;
    const char *s;
    int lang;
    BT__TRY(pick(T, ks, "Language", KS, langs, true, &lang));
    if (lang > 1)
        return bt__ld_fail(T->L, KS ".Language", "Language '%s' is not supported: blocktune "
                           "compiles OpenCL and CUDA", langs[lang]);
    T->cuda = lang == 1;
    BT__TRY(need(T, ks, "KernelFile", KS, &v));
    BT__TRY(bt__ld_str(T->L, v, KS ".KernelFile", &s));
    char file[4096];
    BT__TRY(kernel_file(T, s, file, sizeof file));
    json_t *src = json_object();
    put(T, T->spec, "sources", src);
    if (src)
        put(T, src, T->cuda ? "cuda" : "opencl", json_string(file));
    map(T, "sources", KS ".KernelFile", false);
    BT__TRY(need(T, ks, "KernelName", KS, &v));
    BT__TRY(bt__ld_str(T->L, v, KS ".KernelName", &s));
    put(T, T->spec, "entry", json_string(s));
    map(T, "entry", KS ".KernelName", true);
    if (!(v = json_object_get(ks, "CompilerOptions")))
        return BT_OK;
    if (!json_is_array(v))
        return bt__ld_fail(T->L, KS ".CompilerOptions", "expected a list of strings");
    bt__sbuf o = {0};
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[64];
        snprintf(p, sizeof p, KS ".CompilerOptions[%zu]", i);
        bt_status st = bt__ld_str(T->L, json_array_get(v, i), p, &s);
        if (st) {
            bt__sbuf_free(&o);
            return st;
        }
        bt__sbuf_printf(&o, "%s%s", i ? " " : "", s);
    }
    put(T, T->spec, "options", json_string(o.s ? o.s : ""));
    T->oom |= o.oom;
    bt__sbuf_free(&o);
    map(T, "options", KS ".CompilerOptions", false);
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The launch
 * ------------------------------------------------------------------------------------------- */

/* LocalSize or GlobalSize: an object of X (required), Y, Z expressions, as texts into e. */
static bt_status size3(t1 *T, const char *key, char e[3][512], bool have[3])
{
    static const char *const keys[] = {"X", "Y", "Z", NULL};
    char p[64];
    const json_t *o;
    snprintf(p, sizeof p, KS ".%s", key);
    BT__TRY(need(T, T->ks, key, KS, &o));
    if (!json_is_object(o))
        return bt__ld_fail(T->L, p, "expected {\"X\": ..., \"Y\": ..., \"Z\": ...}");
    BT__TRY(bt__ld_keys(T->L, o, p, keys));
    for (int d = 0; d < 3; d++) {
        char dp[80];
        const json_t *v = json_object_get(o, dims[d]);
        snprintf(dp, sizeof dp, "%s.%s", p, dims[d]);
        have[d] = v != NULL;
        snprintf(e[d], 512, "1");
        if (!v && d == 0)
            return bt__ld_fail(T->L, p, "missing \"X\"");
        if (v)
            BT__TRY(expr_text(T, v, dp, e[d], 512));
    }
    return BT_OK;
}

/* Kernel Tuner's grid: ProblemSize (a number, an expression or a list of 1 to 3) divided by the
 * factors of GridDivX/Y/Z (a dimension without them by block_size_x/y/z). */
static bt_status grid_from_problem(t1 *T, const json_t *ps, json_t *launch)
{
    bool scalar = !json_is_array(ps);
    size_t n = scalar ? 1 : json_array_size(ps);
    if (n < 1 || n > 3)
        return bt__ld_fail(T->L, KS ".ProblemSize", "expected a size or a list of 1 to 3");
    json_t *pl = json_array(), *prob = json_object(), *gd = json_object();
    put(T, launch, "problem_size", pl);
    put(T, T->spec, "problem", prob);
    put(T, launch, "grid_div", gd); /* taken out again below when it stays empty */
    if (!pl || !prob || !gd)
        return BT_NOMEM;
    T->nm.nps = (int)n;
    T->nm.ps_scalar = scalar;
    for (size_t d = 0; d < n; d++) {
        char p[64], from[48], text[512];
        const json_t *v = scalar ? ps : json_array_get(ps, d);
        snprintf(p, sizeof p, scalar ? KS ".ProblemSize" : KS ".ProblemSize[%zu]", d);
        snprintf(from, sizeof from, "launch.problem_size[%zu]", d);
        BT__TRY(expr_text(T, v, p, text, sizeof text));
        if (json_is_integer(v)) { /* a size: a problem variable, in the tuning key */
            if (json_integer_value(v) < 0)
                return bt__ld_fail(T->L, p, "a problem size must be >= 0");
            snprintf(T->psname[d], sizeof T->psname[d], "problem_size_%c", "xyz"[d]);
            T->nm.ps_names[d] = T->psname[d];
            put(T, prob, T->psname[d], json_integer(json_integer_value(v)));
            snprintf(text, sizeof text, "%s", T->psname[d]);
            char pf[48];
            snprintf(pf, sizeof pf, "problem.%s", T->psname[d]);
            map(T, pf, p, false);
        }
        add(T, pl, json_string(text));
        map(T, from, p, !json_is_integer(v));
    }
    for (int d = 0; d < 3; d++) {
        char key[16], p[48];
        snprintf(key, sizeof key, "GridDiv%s", dims[d]);
        snprintf(p, sizeof p, KS ".%s", key);
        const json_t *f = json_object_get(T->ks, key);
        if (f && !json_is_array(f))
            return bt__ld_fail(T->L, p, "expected a list of expressions");
        /* an empty list is Kernel Tuner's default; past ProblemSize's entries the size is 1,
         * and cdiv(1, any factor) is 1 */
        if (!f || json_array_size(f) == 0 || (size_t)d >= n)
            continue;
        json_t *fl = json_array();
        char dim[2] = {(char)('x' + d), '\0'};
        put(T, gd, dim, fl);
        for (size_t i = 0; fl && i < json_array_size(f); i++) {
            char ip[96], from[48], text[512];
            snprintf(ip, sizeof ip, "%s[%zu]", p, i);
            BT__TRY(expr_text(T, json_array_get(f, i), ip, text, sizeof text));
            add(T, fl, json_string(text));
            snprintf(from, sizeof from, "launch.grid_div.%c[%zu]", 'x' + d, i);
            map(T, from, ip, true);
        }
        char from[32];
        snprintf(from, sizeof from, "launch.grid_div.%c", 'x' + d);
        map(T, from, p, false);
    }
    if (!json_object_size(gd))
        json_object_del(launch, "grid_div");
    map(T, "problem", KS ".ProblemSize", false);
    map(T, "launch.problem_size", KS ".ProblemSize", false);
    return BT_OK;
}

/* GlobalSize as the grid: in blocks (GlobalSizeType CUDA) or in work-items (OpenCL: divided by
 * LocalSize, which must divide it, as OpenCL requires). */
static bt_status grid_from_global(t1 *T, char loc[3][512], json_t *launch, json_t *cons)
{
    static const char *const types[] = {"OpenCL", "CUDA", "Vulkan", NULL};
    char glob[3][512];
    bool have[3];
    int type;
    BT__TRY(size3(T, "GlobalSize", glob, have));
    BT__TRY(pick(T, T->ks, "GlobalSizeType", KS, types, false, &type));
    if (type == 2)
        return bt__ld_fail(T->L, KS ".GlobalSizeType", "GlobalSizeType 'Vulkan' is not "
                           "supported (OpenCL: in work-items, CUDA: in blocks)");
    bool blocks = type < 0 ? T->cuda : type == 1;
    json_t *g = json_array();
    put(T, launch, "grid", g);
    for (int d = 0; g && d < 3; d++) {
        char p[48], from[32], text[1100 + 512];
        snprintf(p, sizeof p, KS ".GlobalSize.%s", dims[d]);
        snprintf(from, sizeof from, "launch.grid[%d]", d);
        if (blocks || !have[d]) {
            add(T, g, json_string(glob[d]));
            map(T, from, p, true);
            continue;
        }
        snprintf(text, sizeof text, "cdiv(%s, %s)", glob[d], loc[d]);
        add(T, g, json_string(text));
        map(T, from, p, false);
        snprintf(text, sizeof text, "(%s) %% (%s) == 0", glob[d], loc[d]);
        snprintf(from, sizeof from, "constraints[%zu]", json_array_size(cons));
        add(T, cons, json_string(text));
        map(T, from, p, false);
    }
    return BT_OK;
}

static bt_status load_launch(t1 *T, json_t *cons)
{
    char loc[3][512];
    bool have[3];
    json_t *launch = json_object();
    put(T, T->spec, "launch", launch);
    if (!launch)
        return BT_NOMEM;
    map(T, "launch", KS, false);
    BT__TRY(size3(T, "LocalSize", loc, have));
    json_t *b = json_array();
    put(T, launch, "block", b);
    for (int d = 0; b && d < 3; d++) {
        char from[32], p[48];
        snprintf(from, sizeof from, "launch.block[%d]", d);
        snprintf(p, sizeof p, KS ".LocalSize.%s", dims[d]);
        add(T, b, json_string(loc[d]));
        map(T, from, p, have[d]);
    }
    const json_t *ps = json_object_get(T->ks, "ProblemSize"), *sm;
    if (ps) {
        char gl[3][512];
        BT__TRY(size3(T, "GlobalSize", gl, have)); /* required by the schema; not used */
        BT__TRY(grid_from_problem(T, ps, launch));
    } else {
        for (int d = 0; d < 3; d++) {
            char key[16];
            snprintf(key, sizeof key, "GridDiv%s", dims[d]);
            if (json_object_get(T->ks, key))
                return bt__ld_fail(T->L, KS, "%s divides ProblemSize, which is missing", key);
        }
        BT__TRY(grid_from_global(T, loc, launch, cons));
    }
    if ((sm = json_object_get(T->ks, "SharedMemory"))) {
        int64_t bytes;
        BT__TRY(bt__ld_int(T->L, sm, KS ".SharedMemory", &bytes));
        if (bytes < 0)
            return bt__ld_fail(T->L, KS ".SharedMemory", "expected a size in bytes >= 0");
        if (bytes > 0 && !T->cuda)
            return bt__ld_fail(T->L, KS ".SharedMemory", "OpenCL's dynamic local memory is a "
                               "kernel argument: give one of MemoryType Local");
        if (bytes > 0)
            put(T, launch, "local_mem", json_integer(bytes));
        map(T, "launch.local_mem", KS ".SharedMemory", false);
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Arguments
 * ------------------------------------------------------------------------------------------- */
static const struct t1type {
    const char *name;
    const char *dtype; /* blocktune's dtype of a buffer or scalar; NULL when there is none */
    int bytes;         /* 0: "custom", whose size is TypeSize */
} t1types[] = {
    {"bool", NULL, 1},      {"int8", "int8", 1},    {"uint8", NULL, 1},     {"int16", NULL, 2},
    {"uint16", NULL, 2},    {"int32", "int32", 4},  {"uint32", NULL, 4},    {"int64", "int64", 8},
    {"uint64", NULL, 8},    {"half", "fp16", 2},    {"half2", NULL, 4},     {"half4", NULL, 8},
    {"half8", NULL, 16},    {"half16", NULL, 32},   {"float", "fp32", 4},   {"float2", NULL, 8},
    {"float4", NULL, 16},   {"float8", NULL, 32},   {"float16", NULL, 64},  {"double", "fp64", 8},
    {"double2", NULL, 16},  {"double4", NULL, 32},  {"double8", NULL, 64},  {"double16", NULL, 128},
    {"custom", NULL, 0},
};

/* One T1 argument being translated into spec argument j (and j + 1 for a CUDA constant). */
typedef struct t1arg {
    const json_t *a;
    char p[64]; /* its path */
    size_t j;
    const char *name;
    const struct t1type *type;
} t1arg;

/* Maps args[j].sub (sub "" for the argument) to the T1 argument's field tsub ("" for itself). */
static void map_arg(t1 *T, const t1arg *A, size_t j, const char *sub, const char *tsub,
                    bool verbatim)
{
    char from[64], to[96];
    snprintf(from, sizeof from, "args[%zu]%s%s", j, sub[0] ? "." : "", sub);
    snprintf(to, sizeof to, "%s%s%s", A->p, tsub[0] ? "." : "", tsub);
    map(T, from, to, verbatim);
}

static bt_status arg_fail(t1 *T, const t1arg *A, const char *field, const char *msg)
{
    char p[96];
    snprintf(p, sizeof p, "%s%s%s", A->p, field[0] ? "." : "", field);
    return bt__ld_fail(T->L, p, "%s", msg);
}

/* "Size" as the spec's: an integer, or the expression rewritten (t1py.c). */
static bt_status arg_size(t1 *T, const t1arg *A, const char *bytes, json_t *o)
{
    char p[96];
    const json_t *v;
    bool verbatim = true;
    snprintf(p, sizeof p, "%s.Size", A->p);
    BT__TRY(need(T, A->a, "Size", A->p, &v));
    char *text = NULL;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        char buf[32];
        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        text = bt__strdup(buf);
    } else if (json_is_string(v)) {
        bt__t1err e;
        bt_status st = bt__t1_size(json_string_value(v), &T->nm, &text, &e);
        if (st)
            return pyfail(T, st, p, &e);
        verbatim = !strcmp(text, json_string_value(v));
    } else
        return bt__ld_fail(T->L, p, "expected a number of elements >= 0 or an expression");
    if (!text)
        return BT_NOMEM;
    if (bytes) { /* local memory is sized in bytes */
        char *b = malloc(strlen(text) + 32);
        if (b)
            sprintf(b, "(%s) * %s", text, bytes);
        free(text);
        if (!(text = b))
            return BT_NOMEM;
        verbatim = false;
    }
    put(T, o, "size", json_string(text));
    free(text);
    map_arg(T, A, A->j, "size", "Size", verbatim);
    return BT_OK;
}

static bt_status arg_scalar(t1 *T, const t1arg *A, json_t *o)
{
    const char *dt = A->type->dtype;
    if (!dt || !strcmp(dt, "int8") || !strcmp(dt, "fp16"))
        return arg_fail(T, A, "Type", "a Scalar's Type is int32, int64, float or double");
    const json_t *v;
    double x;
    char p[96];
    snprintf(p, sizeof p, "%s.FillValue", A->p);
    BT__TRY(need(T, A->a, "FillValue", A->p, &v));
    BT__TRY(bt__ld_num(T->L, v, p, &x));
    if (x != (double)(int64_t)x)
        return bt__ld_fail(T->L, p, "%g: blocktune passes a scalar from an integer expression, so "
                           "its value must be a whole number", x);
    put(T, o, "kind", json_string("scalar"));
    put(T, o, "dtype", json_string(dt));
    put(T, o, "value", json_integer((json_int_t)x));
    map_arg(T, A, A->j, "value", "FillValue", false);
    return BT_OK;
}

static bt_status arg_local(t1 *T, const t1arg *A, json_t *o)
{
    if (T->cuda)
        return arg_fail(T, A, "MemoryType", "MemoryType Local is OpenCL's dynamic local memory; "
                        "on CUDA give SharedMemory (bytes)");
    int64_t bytes = A->type->bytes;
    const json_t *ts = json_object_get(A->a, "TypeSize");
    if (ts)
        bytes = json_integer_value(ts);
    if (bytes <= 0)
        return arg_fail(T, A, "", "a Local argument of Type custom needs TypeSize (bytes)");
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)bytes);
    put(T, o, "kind", json_string("local"));
    return arg_size(T, A, b, o);
}

/* An input's contents: FillType Constant (FillValue), Random (N(0, 1), as Kernel Tuner's
 * numpy.random.randn) or BinaryRaw (DataSource). */
static bt_status arg_fill(t1 *T, const t1arg *A, json_t *o)
{
    static const char *const fills[] = {"Constant", "Random",  "Generator", "Script",
                                        "BinaryRaw", "BinaryHDF", NULL};
    int fill;
    const json_t *v;
    char p[96];
    BT__TRY(pick(T, A->a, "FillType", A->p, fills, true, &fill));
    if (fill == 0) {
        double x;
        snprintf(p, sizeof p, "%s.FillValue", A->p);
        BT__TRY(need(T, A->a, "FillValue", A->p, &v));
        BT__TRY(bt__ld_num(T->L, v, p, &x));
        json_t *init = json_object();
        put(T, o, "init", init);
        if (init)
            put(T, init, "const", json_real(x));
        map_arg(T, A, A->j, "init", "FillValue", false);
    } else if (fill == 1) {
        json_t *init = json_object();
        put(T, o, "init", init);
        if (init)
            put(T, init, "normal", json_pack("[ii]", 0, 1));
        map_arg(T, A, A->j, "init", "FillType", false);
    } else if (fill == 4) {
        const char *s;
        snprintf(p, sizeof p, "%s.DataSource", A->p);
        BT__TRY(need(T, A->a, "DataSource", A->p, &v));
        BT__TRY(bt__ld_str(T->L, v, p, &s));
        put(T, o, "file", json_string(s));
        map_arg(T, A, A->j, "file", "DataSource", false);
    } else {
        snprintf(p, sizeof p, "%s.FillType", A->p);
        return bt__ld_fail(T->L, p, "FillType '%s' is not supported (Constant, Random, BinaryRaw)",
                           fills[fill]);
    }
    return BT_OK;
}

static bt_status arg_vector(t1 *T, const t1arg *A, bool out, json_t *o, json_t *args)
{
    static const char *const memtypes[] = {"Constant", NULL};
    if (!A->type->dtype)
        return arg_fail(T, A, "Type", "a Vector's Type is float, double, half, int8, int32 or "
                        "int64 (the element types blocktune makes, checks and compares)");
    int mt;
    BT__TRY(pick(T, A->a, "MemType", A->p, memtypes, false, &mt));
    put(T, o, "dtype", json_string(A->type->dtype));
    map_arg(T, A, A->j, "dtype", "Type", false);
    BT__TRY(arg_size(T, A, NULL, o));
    if (out && mt == 0)
        return arg_fail(T, A, "MemType", "constant memory is read-only: it cannot be an output");
    if (out && json_object_get(A->a, "DataSource"))
        return arg_fail(T, A, "DataSource", "an output is poisoned before every verified run: "
                        "its expected values belong in ReferenceArguments");
    if (out) {
        put(T, o, "output", json_true());
        map_arg(T, A, A->j, "output", "AccessType", false);
        T->outs[T->nout++] = A->name;
        return BT_OK;
    }
    BT__TRY(arg_fill(T, A, o));
    if (mt != 0)
        return BT_OK;
    if (!T->cuda) { /* OpenCL: the kernel's __constant parameter, in its place */
        put(T, o, "kind", json_string("constant"));
        return BT_OK;
    }
    /* CUDA: as Kernel Tuner does, a kernel parameter and the __constant__ symbol of its name */
    json_t *c = json_deep_copy(o);
    char name[BT_NAME_MAX];
    if (!c || strlen(A->name) + 11 >= sizeof name) {
        json_decref(c);
        return c ? arg_fail(T, A, "Name", "too long for a constant-memory symbol") : BT_NOMEM;
    }
    snprintf(name, sizeof name, "%s__constant", A->name);
    put(T, c, "name", json_string(name));
    put(T, c, "kind", json_string("constant"));
    put(T, c, "symbol", json_string(A->name));
    add(T, args, c);
    map_arg(T, A, A->j + 1, "", "", false);
    map_arg(T, A, A->j + 1, "symbol", "Name", false);
    return BT_OK;
}

static bt_status one_arg(t1 *T, const json_t *a, size_t i, json_t *args)
{
    static const char *const keys[] = {"Name",     "Type",       "Size",       "TypeSize",
                                       "FillType", "FillValue",  "DataSource", "RandomSeed",
                                       "AccessType", "MemoryType", "MemType",  "Output", NULL};
    static const char *const kinds[] = {"Scalar", "Vector", "Local", "Symbol", NULL};
    static const char *const access[] = {"ReadOnly", "WriteOnly", "ReadWrite", NULL};
    const char *names[BT__ARRAY_LEN(t1types) + 1] = {NULL};
    for (size_t t = 0; t < BT__ARRAY_LEN(t1types); t++)
        names[t] = t1types[t].name;
    t1arg A = {a, "", json_array_size(args), NULL, NULL};
    snprintf(A.p, sizeof A.p, KS ".Arguments[%zu]", i);
    if (!json_is_object(a))
        return bt__ld_fail(T->L, A.p, "expected an object");
    BT__TRY(bt__ld_keys(T->L, a, A.p, keys));
    int kind, type, acc;
    BT__TRY(pick(T, a, "MemoryType", A.p, kinds, true, &kind));
    BT__TRY(pick(T, a, "Type", A.p, names, true, &type));
    BT__TRY(pick(T, a, "AccessType", A.p, access, false, &acc));
    A.type = &t1types[type];
    const json_t *v;
    char p[96];
    snprintf(T->dflt[i], sizeof T->dflt[i], "arg%zu", i);
    A.name = T->dflt[i];
    snprintf(p, sizeof p, "%s.Name", A.p);
    if ((v = json_object_get(a, "Name")))
        BT__TRY(bt__ld_str(T->L, v, p, &A.name));
    for (int j = 0; j < T->nargs; j++)
        if (!strcmp(T->names[j], A.name))
            return bt__ld_fail(T->L, p, "argument '%s' is listed twice (Arguments[%d])", A.name,
                               j);
    T->names[T->nargs++] = A.name;
    bool out = acc == 1;
    if ((v = json_object_get(a, "Output"))) /* Kernel Tuner's own examples mark outputs so */
        out |= json_is_true(v) || (json_is_number(v) && json_number_value(v) != 0);
    if (acc == 2)
        return arg_fail(T, &A, "AccessType", "ReadWrite is not supported: blocktune poisons an "
                        "output before every verified run, so an output cannot be an input too");
    if ((v = json_object_get(a, "TypeSize"))) {
        int64_t ts;
        BT__TRY(bt__ld_int(T->L, v, (snprintf(p, sizeof p, "%s.TypeSize", A.p), p), &ts));
        if (A.type->bytes && ts != A.type->bytes)
            return bt__ld_fail(T->L, p, "TypeSize %lld, but a %s is %d bytes", (long long)ts,
                               A.type->name, A.type->bytes);
    }
    if (out && kind != 1)
        return arg_fail(T, &A, "MemoryType", "only a Vector can be an output");
    if (kind == 3)
        return arg_fail(T, &A, "MemoryType", "MemoryType Symbol is not supported (a CUDA "
                        "__constant__ array is a Vector with \"MemType\": \"Constant\")");
    json_t *o = json_object();
    add(T, args, o);
    if (!o)
        return BT_NOMEM;
    put(T, o, "name", json_string(A.name));
    map_arg(T, &A, A.j, "", "", false);
    map_arg(T, &A, A.j, "name", "Name", false);
    if (kind == 0)
        return arg_scalar(T, &A, o);
    if (kind == 2)
        return arg_local(T, &A, o);
    return arg_vector(T, &A, out, o, args);
}

static bt_status load_args(t1 *T)
{
    const json_t *a;
    const char *p = KS ".Arguments";
    BT__TRY(need_list(T, T->ks, "Arguments", KS, 0, BT__MAX_ARGS, "arguments", &a));
    json_t *args = json_array();
    put(T, T->spec, "args", args);
    map(T, "args", p, false);
    for (size_t i = 0; args && i < json_array_size(a); i++)
        BT__TRY(one_arg(T, json_array_get(a, i), i, args));
    if (T->nout == 0)
        return bt__ld_fail(T->L, p, "no argument is an output (AccessType WriteOnly): nothing "
                           "could be checked");
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Expected outputs, the name, the whole document
 * ------------------------------------------------------------------------------------------- */

/* ValidationMethod and ValidationThreshold as a tolerance: element by element, absolute
 * (SideBySideComparison) or relative (SideBySideRelativeComparison); one for the kernel. */
static bt_status ref_tolerance(t1 *T, const json_t *r, const char *p, int *method, double *thr)
{
    static const char *const methods[] = {"AbsoluteDifference", "SideBySideComparison",
                                          "SideBySideRelativeComparison", NULL};
    int m;
    double x = 0;
    char fp[128];
    const json_t *v = json_object_get(r, "ValidationThreshold");
    BT__TRY(pick(T, r, "ValidationMethod", p, methods, false, &m));
    snprintf(fp, sizeof fp, "%s.ValidationMethod", p);
    if (m == 0)
        return bt__ld_fail(T->L, fp, "AbsoluteDifference (a bound on the sum of all differences) "
                           "is not supported: blocktune compares element by element "
                           "(SideBySideComparison, SideBySideRelativeComparison)");
    snprintf(fp, sizeof fp, "%s.ValidationThreshold", p);
    if (v)
        BT__TRY(bt__ld_num(T->L, v, fp, &x));
    if ((m < 0) != (v == NULL))
        return bt__ld_fail(T->L, v ? fp : p, "give ValidationMethod and ValidationThreshold "
                           "together");
    if (x < 0)
        return bt__ld_fail(T->L, fp, "a threshold must be >= 0");
    if (*method != -2 && (*method != m || *thr != x))
        return bt__ld_fail(T->L, v ? fp : p, "differs from ReferenceArguments[0]'s: blocktune "
                           "checks every output with one tolerance");
    *method = m;
    *thr = x;
    return BT_OK;
}

static bt_status one_ref(t1 *T, const json_t *r, const char *p, json_t *answers, int *method,
                         double *thr)
{
    static const char *const keys[] = {"Name",       "TargetName",       "FillType",
                                       "FillValue",  "DataSource",       "RandomSeed",
                                       "ValidationMethod", "ValidationThreshold", NULL};
    static const char *const fills[] = {"Constant", "Random",  "Generator", "Script",
                                        "BinaryRaw", "BinaryHDF", NULL};
    const json_t *v;
    const char *target, *file, *name;
    char fp[128];
    int fill;
    if (!json_is_object(r))
        return bt__ld_fail(T->L, p, "expected an object");
    BT__TRY(bt__ld_keys(T->L, r, p, keys));
    BT__TRY(need(T, r, "Name", p, &v));
    BT__TRY(bt__ld_str(T->L, v, (snprintf(fp, sizeof fp, "%s.Name", p), fp), &name));
    BT__TRY(need(T, r, "TargetName", p, &v));
    BT__TRY(bt__ld_str(T->L, v, (snprintf(fp, sizeof fp, "%s.TargetName", p), fp), &target));
    int o = 0;
    while (o < T->nout && strcmp(T->outs[o], target))
        o++;
    if (o == T->nout)
        return bt__ld_fail(T->L, fp, "'%s' is not an output argument (AccessType WriteOnly)",
                           target);
    if (json_object_get(answers, target))
        return bt__ld_fail(T->L, fp, "'%s' has expected values already", target);
    BT__TRY(pick(T, r, "FillType", p, fills, true, &fill));
    if (fill != 4)
        return bt__ld_fail(T->L, (snprintf(fp, sizeof fp, "%s.FillType", p), fp),
                           "FillType '%s': expected outputs are read from a file (BinaryRaw, "
                           "with DataSource)", fills[fill]);
    BT__TRY(need(T, r, "DataSource", p, &v));
    BT__TRY(bt__ld_str(T->L, v, (snprintf(fp, sizeof fp, "%s.DataSource", p), fp), &file));
    put(T, answers, target, json_string(file));
    char from[160];
    snprintf(from, sizeof from, "reference.answers.%s", target);
    map(T, from, fp, false);
    return ref_tolerance(T, r, p, method, thr);
}

static bt_status load_refs(t1 *T)
{
    const char *p = KS ".ReferenceArguments";
    const json_t *ra = json_object_get(T->ks, "ReferenceArguments");
    if (!ra)
        return BT_OK;
    if (!json_is_array(ra) || json_array_size(ra) == 0)
        return bt__ld_fail(T->L, p, "expected a list of expected outputs");
    json_t *ref = json_object(), *answers = json_object();
    put(T, T->spec, "reference", ref);
    if (!ref || !answers) {
        json_decref(answers);
        return BT_NOMEM;
    }
    put(T, ref, "answers", answers);
    map(T, "reference", p, false);
    int method = -2;
    double thr = 0;
    for (size_t i = 0; i < json_array_size(ra); i++) {
        char ip[80];
        snprintf(ip, sizeof ip, "%s[%zu]", p, i);
        BT__TRY(one_ref(T, json_array_get(ra, i), ip, answers, &method, &thr));
    }
    for (int o = 0; o < T->nout; o++)
        if (!json_object_get(answers, T->outs[o]))
            return bt__ld_fail(T->L, p, "output '%s' has no expected values here: every output "
                               "is checked", T->outs[o]);
    if (method > 0) {
        json_t *tol = json_object();
        put(T, T->spec, "tolerance", tol);
        if (tol) {
            put(T, tol, "atol", json_real(method == 1 ? thr : 0));
            put(T, tol, "rtol", json_real(method == 2 ? thr : 0));
        }
        map(T, "tolerance", KS ".ReferenceArguments[0].ValidationThreshold", false);
    }
    return BT_OK;
}

/* The kernel's name: General.BenchmarkName, else KernelSpecification.BenchmarkName (Kernel
 * Tuner's examples), else the T1 file's name without ".json". */
static bt_status load_name(t1 *T, const json_t *root)
{
    const json_t *g = json_object_get(root, "General"), *v = NULL;
    const char *path = "";
    if (g && json_is_object(g) && (v = json_object_get(g, "BenchmarkName")))
        path = "General.BenchmarkName";
    else if ((v = json_object_get(T->ks, "BenchmarkName")))
        path = KS ".BenchmarkName";
    if (v) {
        const char *s;
        BT__TRY(bt__ld_str(T->L, v, path, &s));
        put(T, T->spec, "name", json_string(s));
        map(T, "name", path, false);
        return BT_OK;
    }
    const char *base = strrchr(T->L->file, '/');
    base = base ? base + 1 : T->L->file;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".json"))
        n -= 5;
    char name[BT_NAME_MAX];
    snprintf(name, sizeof name, "%.*s", (int)(n ? n : 2), n ? base : "t1");
    put(T, T->spec, "name", json_string(name));
    return BT_OK;
}

static bt_status translate(t1 *T, const json_t *root)
{
    static const char *const top[] = {CS, KS, "Search", "Budget", "General", "$schema", NULL};
    static const char *const ks_keys[] = {
        "Device",      "Language",   "CompilerOptions", "Profiling",  "KernelName",
        "KernelFile",  "GlobalSizeType", "SharedMemory", "SimulationInput", "GlobalSize",
        "LocalSize",   "Arguments",  "ReferenceArguments",
        /* Kernel Tuner's (tune_kernel_T1 and its examples) */
        "ProblemSize", "GridDivX",   "GridDivY",        "GridDivZ",   "BenchmarkName", "Stream",
        NULL};
    static const char *const cs_keys[] = {"TuningParameters", "Conditions", NULL};
    BT__TRY(bt__ld_keys(T->L, root, "", top));
    const json_t *cs = json_object_get(root, CS);
    if (!cs || !(T->ks = json_object_get(root, KS)))
        return bt__ld_fail(T->L, "", "missing \"%s\" (a T1 file has ConfigurationSpace and "
                           "KernelSpecification)", cs ? KS : CS);
    if (!json_is_object(cs))
        return bt__ld_fail(T->L, CS, "expected an object");
    if (!json_is_object(T->ks))
        return bt__ld_fail(T->L, KS, "expected an object");
    BT__TRY(bt__ld_keys(T->L, cs, CS, cs_keys));
    BT__TRY(bt__ld_keys(T->L, T->ks, KS, ks_keys));
    BT__TRY(load_name(T, root));
    BT__TRY(load_params(T, cs));
    json_t *cons = json_array();
    put(T, T->spec, "constraints", cons);
    if (!cons)
        return BT_NOMEM;
    map(T, "constraints", CS ".Conditions", false);
    BT__TRY(load_conditions(T, cs, cons));
    BT__TRY(load_kernel(T));
    BT__TRY(load_launch(T, cons));
    BT__TRY(load_args(T));
    return load_refs(T);
}

bt_status bt__t1_translate(bt__ld *L, const json_t *root, json_t **out, bt__ldmap *map)
{
    t1 *T = calloc(1, sizeof *T);
    *out = NULL;
    if (!T || !(T->spec = json_object())) {
        free(T);
        return BT_NOMEM;
    }
    T->L = L;
    T->map = map;
    bt_status st = translate(T, root);
    if (!st && T->oom)
        st = BT_NOMEM;
    for (int i = 0; i < BT_MAX_PARAMS; i++)
        free(T->pvals[i]);
    if (st)
        json_decref(T->spec);
    else
        *out = T->spec;
    free(T);
    return st;
}
