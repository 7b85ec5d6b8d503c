/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_args.c — the spec's kernel arguments (docs/spec.md#arguments): buffers, scalars, local
 * memory, constant memory and tensor maps with their dtypes, sizes and initialisers or input
 * files; the "outputs", "reset_to_zero" and "restore_value" lists; and the expected outputs of a
 * "reference": {"answers": ...}. Every list is bounded and a name given twice is an error.
 */
#include "core/datafile.h"
#include "core/specld.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bt_status load_init(bt__ld *L, const json_t *v, const char *path, bt__argspec *a)
{
    if (!json_is_object(v) || json_object_size(v) != 1)
        return bt__ld_fail(L, path,
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
            return bt__ld_num(L, x, p, &a->init_a);
        if (!json_is_array(x) || json_array_size(x) != 2)
            return bt__ld_fail(L, p, "expected two numbers");
        BT__TRY(bt__ld_num(L, json_array_get(x, 0), p, &a->init_a));
        BT__TRY(bt__ld_num(L, json_array_get(x, 1), p, &a->init_b));
        if (a->init == BT__INIT_CONST && a->init_a == 0)
            return BT_OK;
        if ((a->init == BT__INIT_UNIFORM || a->init == BT__INIT_INT) && a->init_b < a->init_a)
            return bt__ld_fail(L, p, "the range is empty (hi < lo)");
        if (a->init == BT__INIT_NORMAL && a->init_b <= 0)
            return bt__ld_fail(L, p, "the standard deviation must be > 0");
        return BT_OK;
    }
    return bt__ld_fail(L, p, "unknown initialiser '%s' (normal, uniform, int, iota, const)", key);
}

/* A "tensormap" argument: {"buffer": NAME, "dims": [...], "box": [...], "swizzle": 128}. The
 * buffer is looked up once every argument is known (resolve_tmaps). */
static bt_status load_tmap(bt__ld *L, const json_t *a, const char *p, bt__argspec *as)
{
    char fp[96];
    static const char *const not_here[] = {"size", "value", "init", "output", "dtype", "file",
                                           "symbol"};
    for (size_t t = 0; t < BT__ARRAY_LEN(not_here); t++)
        if (json_object_get(a, not_here[t]))
            return bt__ld_fail(L, p, "a tensormap takes no \"%s\" (it maps its buffer's elements)",
                        not_here[t]);
    as->role = BT__KARG_TMAP;
    as->tm_buffer = -1;
    const char *s;
    json_t *jb = json_object_get(a, "buffer");
    snprintf(fp, sizeof fp, "%s.buffer", p);
    if (!jb)
        return bt__ld_fail(L, p, "a tensormap needs \"buffer\": the buffer argument it maps");
    BT__TRY(bt__ld_str(L, jb, fp, &s));
    const char *names[2] = {"dims", "box"};
    bt__kexpr *dst[2] = {as->tm_dims, as->tm_box};
    int n[2] = {0, 0};
    for (int w = 0; w < 2; w++) {
        json_t *v = json_object_get(a, names[w]);
        snprintf(fp, sizeof fp, "%s.%s", p, names[w]);
        if (!v)
            return bt__ld_fail(L, p, "a tensormap needs \"%s\"%s", names[w],
                        w ? ": elements copied per request, innermost first"
                          : ": the buffer's dimensions in elements, innermost first");
        if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > BT__TMAP_RANK_MAX)
            return bt__ld_fail(L, fp, "expected a list of 1..%d expressions", BT__TMAP_RANK_MAX);
        n[w] = (int)json_array_size(v);
        for (int i = 0; i < n[w]; i++) {
            char ip[112];
            snprintf(ip, sizeof ip, "%s[%d]", fp, i);
            BT__TRY(bt__ld_expr(L, json_array_get(v, (size_t)i), ip, &dst[w][i]));
        }
    }
    if (n[0] != n[1]) {
        snprintf(fp, sizeof fp, "%s.box", p);
        return bt__ld_fail(L, fp, "box has %d dimensions, dims has %d", n[1], n[0]);
    }
    as->tm_rank = n[0];
    as->tm_swizzle = 128;
    json_t *jsw = json_object_get(a, "swizzle");
    if (jsw) {
        snprintf(fp, sizeof fp, "%s.swizzle", p);
        json_int_t sw = json_is_integer(jsw) ? json_integer_value(jsw) : -1;
        if (sw != 0 && sw != 32 && sw != 64 && sw != 128)
            return bt__ld_fail(L, fp, "swizzle is 0, 32, 64 or 128 (bytes)");
        as->tm_swizzle = (int)sw;
    }
    return BT_OK;
}

/* "dtype": {"if": EXPR, "then": DT, "else": DT}; EXPR may use problem variables only (the
 * buffers are made once per problem, before any config). */
static bt_status load_dtype_if(bt__ld *L, const json_t *jd, const char *fp, bt__argspec *as)
{
    static const char *const keys[] = {"if", "then", "else", NULL};
    BT__TRY(bt__ld_keys(L, jd, fp, keys));
    char p[128];
    json_t *ji = json_object_get(jd, "if");
    if (!ji)
        return bt__ld_fail(L, fp, "a dtype that depends on the problem needs \"if\", \"then\" and \"else\"");
    snprintf(p, sizeof p, "%s.if", fp);
    BT__TRY(bt__ld_expr(L, ji, p, &as->dtype_if));
    bt_kdesc *k = L->k;
    for (int s = 0; s < bt__symtab_count(k->syms); s++)
        if (bt__expr_uses(as->dtype_if.e, s) &&
            (s < k->slot_problem0 || s >= k->slot_problem0 + k->nproblem))
            return bt__ld_fail(L, p, "'%s' is not a problem variable: a buffer's dtype can depend on the "
                        "problem only", bt__symtab_name(k->syms, s));
    const char *names[2] = {"then", "else"};
    bt__dtype *dst[2] = {&as->dtype_then, &as->dtype_else};
    bool *prob[2] = {&as->then_is_problem, &as->else_is_problem};
    for (int b = 0; b < 2; b++) {
        json_t *v = json_object_get(jd, names[b]);
        snprintf(p, sizeof p, "%s.%s", fp, names[b]);
        const char *s;
        if (!v)
            return bt__ld_fail(L, fp, "a dtype that depends on the problem needs \"%s\"", names[b]);
        BT__TRY(bt__ld_str(L, v, p, &s));
        if (!strcmp(s, "T"))
            *prob[b] = true;
        else if (!bt__dtype_parse(s, dst[b]))
            return bt__ld_fail(L, p, "unknown dtype '%s'", s);
    }
    return BT_OK;
}

/* Points every tensormap at the buffer its "buffer" names (load_tmap checked it is a string). */
static bt_status resolve_tmaps(bt__ld *L, const json_t *args)
{
    bt_kdesc *k = L->k;
    int ntm = 0;
    for (int i = 0; i < k->nargs; i++) {
        bt__argspec *as = &k->args[i];
        if (as->role != BT__KARG_TMAP)
            continue;
        if (++ntm > BT__MAX_TMAPS)
            return bt__ld_fail(L, "args", "at most %d tensormap arguments", BT__MAX_TMAPS);
        const json_t *a = json_array_get(args, (size_t)i);
        const char *name = json_string_value(json_object_get(a, "buffer"));
        int b = bt__ld_arg(k, name);
        char fp[96];
        snprintf(fp, sizeof fp, "args[%d].buffer", i);
        if (b < 0 || k->args[b].role != BT__KARG_BUFFER || k->args[b].cmem)
            return bt__ld_fail(L, fp, "'%s' is not a buffer argument", name);
        as->tm_buffer = b;
    }
    return BT_OK;
}


/* Whether s is a C++ (qualified) identifier: a symbol name such as "d_filter" or "ns::table". */
static bool is_symbol(const char *s)
{
    for (;;) {
        size_t n = strcspn(s, ":");
        char part[128];
        if (n == 0 || n >= sizeof part)
            return false;
        memcpy(part, s, n);
        part[n] = '\0';
        if (!bt__ld_ident(part))
            return false;
        if (!s[n])
            return true;
        if (s[n + 1] != ':')
            return false;
        s += n + 2;
    }
}

/* A data file named at `path` (an input's "file", an answer): resolved against the spec's
 * directory, a regular file, and a .npy header that blocktune reads; the path goes to *out. */
static bt_status load_datafile(bt__ld *L, const json_t *v, const char *path, char **out)
{
    const char *rel;
    BT__TRY(bt__ld_str(L, v, path, &rel));
    BT__TRY(bt__ld_file(L, rel, path, "data file", out));
    bt__datafile f;
    bt_diag d = {0};
    bt_status st = bt__datafile_probe(*out, &f, &d);
    if (st)
        return bt__ld_fail_st(L, path, st == BT_IO ? BT_IO : BT_PARSE, "%s", d.msg);
    return BT_OK;
}

/* The "dtype" of a buffer, scalar or local argument (default int32 for scalars, "T" else). */
static bt_status load_dtype(bt__ld *L, const json_t *a, const char *p, bt__argspec *as)
{
    char fp[96];
    const char *dt = as->role == BT__KARG_SCALAR ? "int32" : "T";
    json_t *jd = json_object_get(a, "dtype");
    snprintf(fp, sizeof fp, "%s.dtype", p);
    if (jd && json_is_object(jd)) { /* bt__arg_dtype picks the branch per problem */
        if (as->role != BT__KARG_BUFFER)
            return bt__ld_fail(L, fp, "only a buffer's dtype can depend on the problem");
        return load_dtype_if(L, jd, fp, as);
    }
    if (jd)
        BT__TRY(bt__ld_str(L, jd, fp, &dt));
    if (!strcmp(dt, "T"))
        as->dtype_is_problem = true;
    else if (!bt__dtype_parse(dt, &as->dtype))
        return bt__ld_fail(L, fp, "unknown dtype '%s'", dt);
    return BT_OK;
}

/* The kind of argument a: its role, and for constant memory the symbol. A tensormap is loaded
 * whole here (*done). */
static bt_status load_kind(bt__ld *L, const json_t *a, const char *p, bt__argspec *as, bool *done)
{
    char fp[96];
    const char *kind = "buffer";
    json_t *jk = json_object_get(a, "kind"), *jc = json_object_get(a, "constant");
    snprintf(fp, sizeof fp, "%s.kind", p);
    if (jk)
        BT__TRY(bt__ld_str(L, jk, fp, &kind));
    if (jc) { /* "constant": true is the same as "kind": "constant" */
        char cp[96];
        snprintf(cp, sizeof cp, "%s.constant", p);
        BT__TRY(bt__ld_bool(L, jc, cp, &as->cmem));
        if (as->cmem && strcmp(kind, "buffer") && strcmp(kind, "constant"))
            return bt__ld_fail(L, cp, "a %s cannot be in constant memory", kind);
    }
    *done = false;
    if (!strcmp(kind, "buffer") || !strcmp(kind, "constant")) {
        as->role = BT__KARG_BUFFER;
        as->cmem |= !strcmp(kind, "constant");
    } else if (!strcmp(kind, "scalar"))
        as->role = BT__KARG_SCALAR;
    else if (!strcmp(kind, "local"))
        as->role = BT__KARG_LOCAL;
    else if (!strcmp(kind, "tensormap")) {
        *done = true;
        return load_tmap(L, a, p, as);
    } else
        return bt__ld_fail(L, fp, "unknown kind '%s' (buffer, scalar, local, constant, tensormap)",
                           kind);
    static const char *const tm_only[] = {"buffer", "dims", "box", "swizzle"};
    for (size_t t = 0; t < BT__ARRAY_LEN(tm_only); t++)
        if (json_object_get(a, tm_only[t]))
            return bt__ld_fail(L, p, "\"%s\" belongs to a tensormap argument, not a %s",
                               tm_only[t], kind);
    json_t *js = json_object_get(a, "symbol");
    snprintf(fp, sizeof fp, "%s.symbol", p);
    if (js && !as->cmem)
        return bt__ld_fail(L, fp, "only a constant-memory argument (\"kind\": \"constant\") has a "
                           "symbol");
    if (as->cmem) {
        const char *sym = as->name;
        if (js)
            BT__TRY(bt__ld_str(L, js, fp, &sym));
        if (strlen(sym) >= sizeof as->symbol || !is_symbol(sym))
            return bt__ld_fail(L, js ? fp : p, "'%s' is not a C++ name for the __constant__ "
                               "symbol%s", sym, js ? "" : " (give \"symbol\")");
        snprintf(as->symbol, sizeof as->symbol, "%s", sym);
    }
    return BT_OK;
}

/* "init" or "file" (inputs; exclusive), "output". */
static bt_status load_contents(bt__ld *L, const json_t *a, const char *p, bt__argspec *as)
{
    char fp[96];
    as->init = BT__INIT_NORMAL;
    as->init_a = 0;
    as->init_b = 1;
    json_t *ji = json_object_get(a, "init"), *jf = json_object_get(a, "file"),
           *jo = json_object_get(a, "output");
    if (jo) {
        snprintf(fp, sizeof fp, "%s.output", p);
        BT__TRY(bt__ld_bool(L, jo, fp, &as->output));
        if (as->output && as->role != BT__KARG_BUFFER)
            return bt__ld_fail(L, p, "only buffers can be outputs");
        if (as->output && as->cmem)
            return bt__ld_fail(L, fp, "constant memory is read-only: it cannot be an output");
    }
    if (ji && jf)
        return bt__ld_fail(L, p, "give \"init\" or \"file\", not both");
    if (ji) {
        snprintf(fp, sizeof fp, "%s.init", p);
        BT__TRY(load_init(L, ji, fp, as));
    }
    if (jf) {
        snprintf(fp, sizeof fp, "%s.file", p);
        if (as->role != BT__KARG_BUFFER)
            return bt__ld_fail(L, fp, "only a buffer or constant memory is read from a file");
        if (as->output)
            return bt__ld_fail(L, fp, "an output is poisoned before every run: give its expected "
                               "values in \"reference\": {\"answers\": ...} instead");
        BT__TRY(load_datafile(L, jf, fp, &as->file));
    }
    return BT_OK;
}

/* One argument, args[i]; k->nargs already counts it. */
static bt_status load_arg(bt__ld *L, const json_t *a, size_t i, bt__argspec *as)
{
    bt_kdesc *k = L->k;
    char p[64], fp[96];
    snprintf(p, sizeof p, "args[%zu]", i);
    if (!json_is_object(a))
        return bt__ld_fail(L, p, "expected an object");
    static const char *const keys[] = {"name",   "kind", "dtype",  "size", "value",
                                       "init",   "file", "output", "constant", "symbol",
                                       "buffer", "dims", "box",    "swizzle", NULL};
    BT__TRY(bt__ld_keys(L, a, p, keys));
    const char *s;
    snprintf(fp, sizeof fp, "%s.name", p);
    json_t *jn = json_object_get(a, "name");
    if (!jn)
        return bt__ld_fail(L, p, "an argument needs a \"name\"");
    BT__TRY(bt__ld_str(L, jn, fp, &s));
    if (!s[0] || strlen(s) >= BT_NAME_MAX)
        return bt__ld_fail(L, fp, "name must be 1..%d characters", BT_NAME_MAX - 1);
    for (int j = 0; j + 1 < k->nargs; j++)
        if (!strcmp(k->args[j].name, s))
            return bt__ld_fail(L, fp, "argument '%s' defined twice (args[%d])", s, j);
    snprintf(as->name, sizeof as->name, "%s", s);
    bool done = false;
    BT__TRY(load_kind(L, a, p, as, &done));
    if (done)
        return BT_OK;
    BT__TRY(load_dtype(L, a, p, as));
    const char *szkey = as->role == BT__KARG_SCALAR ? "value" : "size";
    json_t *jsz = json_object_get(a, szkey);
    snprintf(fp, sizeof fp, "%s.%s", p, szkey);
    if (!jsz)
        return bt__ld_fail(L, p, "argument '%s' needs \"%s\"", as->name, szkey);
    if (as->role == BT__KARG_SCALAR && json_object_get(a, "size"))
        return bt__ld_fail(L, p, "a scalar takes \"value\", not \"size\"");
    BT__TRY(bt__ld_expr(L, jsz, fp, &as->size));
    return load_contents(L, a, p, as);
}

/* "outputs", "reset_to_zero", "restore_value": lists of buffer argument names, each once. */
static bt_status load_arg_list(bt__ld *L, const json_t *v, const char *field, int which)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_array(v))
        return bt__ld_fail(L, field, "expected a list of argument names");
    BT__TRY(bt__ld_bound(L, v, field, BT__MAX_ARGS, "names"));
    bool seen[BT__MAX_ARGS] = {false};
    for (size_t i = 0; i < json_array_size(v); i++) {
        char p[96];
        snprintf(p, sizeof p, "%s[%zu]", field, i);
        const char *s;
        BT__TRY(bt__ld_str(L, json_array_get(v, i), p, &s));
        int ai = bt__ld_arg(k, s);
        if (ai < 0)
            return bt__ld_fail(L, p, "'%s' is not an argument", s);
        if (k->args[ai].role != BT__KARG_BUFFER)
            return bt__ld_fail(L, p, "'%s' is not a buffer", s);
        if (k->args[ai].cmem)
            return bt__ld_fail(L, p, "'%s' is constant memory, which is read-only", s);
        if (seen[ai])
            return bt__ld_fail(L, p, "'%s' is listed twice", s);
        seen[ai] = true;
        if (which == 0)
            k->args[ai].output = true;
        else if (which == 1)
            k->args[ai].reset_to_zero = true;
        else
            k->args[ai].restore_value = true;
    }
    return BT_OK;
}

bt_status bt__ld_args(bt__ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    const json_t *args = json_object_get(root, "args");
    if (args) {
        if (!json_is_array(args) || json_array_size(args) > BT__MAX_ARGS)
            return bt__ld_fail(L, "args", "expected a list of at most %d arguments", BT__MAX_ARGS);
        for (size_t i = 0; i < json_array_size(args); i++) {
            bt__argspec *as = &k->args[k->nargs];
            memset(as, 0, sizeof *as);
            k->nargs++; /* counted first: whatever a failure leaves parsed is freed with k */
            BT__TRY(load_arg(L, json_array_get(args, i), i, as));
        }
        BT__TRY(resolve_tmaps(L, args));
    }
    static const char *const lists[] = {"outputs", "reset_to_zero", "restore_value"};
    for (int w = 0; w < 3; w++)
        BT__TRY(load_arg_list(L, json_object_get(root, lists[w]), lists[w], w));
    if (k->nsrc) {
        bool any_out = false;
        for (int i = 0; i < k->nargs; i++)
            any_out |= k->args[i].output;
        if (!any_out)
            return bt__ld_fail(L, "args", "no argument is marked as an output (\"output\": true or "
                               "\"outputs\": [...]): nothing could be verified");
    }
    return BT_OK;
}

bt_status bt__ld_answers(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!json_is_object(v) || json_object_size(v) == 0)
        return bt__ld_fail(L, "reference.answers", "expected {\"output name\": \"file.npy\", ...}");
    const char *name;
    json_t *f;
    json_object_foreach((json_t *)v, name, f)
    {
        char p[160];
        snprintf(p, sizeof p, "reference.answers.%s", name);
        int ai = bt__ld_arg(k, name);
        if (ai < 0 || !k->args[ai].output)
            return bt__ld_fail(L, p, "'%s' is not an output argument", name);
        BT__TRY(load_datafile(L, f, p, &k->args[ai].answer));
    }
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].output && !k->args[i].answer)
            return bt__ld_fail(L, "reference.answers", "output '%s' has no answer: every output "
                               "is checked", k->args[i].name);
    k->ref = BT__REF_ANSWERS;
    return BT_OK;
}

void bt__ld_args_free(bt_kdesc *k)
{
    for (int i = 0; i < k->nargs; i++) {
        bt__kexpr_free(&k->args[i].size);
        bt__kexpr_free(&k->args[i].dtype_if);
        for (int d = 0; d < BT__TMAP_RANK_MAX; d++) {
            bt__kexpr_free(&k->args[i].tm_dims[d]);
            bt__kexpr_free(&k->args[i].tm_box[d]);
        }
        free(k->args[i].file);
        free(k->args[i].answer);
    }
}
