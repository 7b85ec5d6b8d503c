/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kdesc.c — a loaded kernel description in use: problems (bt_problem_*), its configs (count, the
 * i-th, --config text), the symbol slots of a config/problem/GPU, expressions evaluated with their
 * spec positions, an argument's element type per problem and the problem defines. Everything here
 * reads a bt_kdesc that spec.c built; nothing here loads one.
 */
#include "core/kdesc.h"

#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void bt_problem_destroy(bt_problem *p) { free(p); }

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
        int64_t slots[BT__STACK_SLOTS], v = 0;
        bool yes = bt__kdesc_stack_slots(k, NULL, p, NULL, slots) == BT_OK &&
                   bt__expr_eval(a->dtype_if.e, slots, &v, NULL) == BT_OK && v != 0;
        if (yes ? a->then_is_problem : a->else_is_problem)
            return p->dtype;
        return yes ? a->dtype_then : a->dtype_else;
    }
    return a->dtype_is_problem ? p->dtype : a->dtype;
}

bt_status bt__kdesc_stack_slots(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                                const bt_gpu *g, int64_t slots[BT__STACK_SLOTS])
{
    if (k->nslots > BT__STACK_SLOTS)
        return BT_INTERNAL;
    bt__kdesc_fill_slots(k, c, p, g, slots);
    return BT_OK;
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

bt_status bt__kdesc_parse_config(const bt_kdesc *k, const char *text, bt_config *out, bt_diag *diag)
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
        /* decimal ("010" is ten, not octal eight), or hexadecimal with 0x */
        const char *digits = val;
        while (isspace((unsigned char)*digits))
            digits++;
        const char *after_sign = digits + (*digits == '-' || *digits == '+');
        bool hex = after_sign[0] == '0' && (after_sign[1] == 'x' || after_sign[1] == 'X');
        long long v = strtoll(val, &end, hex ? 16 : 10);
        while (isspace((unsigned char)*end))
            end++;
        if (errno == ERANGE) {
            bt__diag_set(diag, "value of '%s' in --config does not fit in 64 bits: '%s'", key, val);
            st = BT_INVALID_ARG;
            break;
        }
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

bt_status bt__kdesc_pdefines(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                             char defs[][96], int *n, bt_diag *diag)
{
    *n = 0;
    if (!k->npdefines)
        return BT_OK;
    int64_t slots[BT__STACK_SLOTS];
    if (bt__kdesc_stack_slots(k, NULL, p, g, slots) != BT_OK)
        return BT_INTERNAL;
    for (int i = 0; i < k->npdefines; i++) {
        int64_t v;
        bt_status st = bt__kexpr_eval(k, &k->pdefines[i].value, slots, &v, diag);
        if (st)
            return st;
        snprintf(defs[(*n)++], 96, "%s=%lld", k->pdefines[i].name, (long long)v);
    }
    return BT_OK;
}

const bt__ksource *bt__kdesc_source(const bt_kdesc *k, const char *lang)
{
    for (int i = 0; k && lang && i < k->nsrc; i++)
        if (!strcmp(k->src[i].lang, lang))
            return &k->src[i];
    return NULL;
}

/* True for a whole line (l, n bytes, no newline) that is only a licence tag: a C block comment,
 * a C++ line comment or a '#' comment whose text starts "SPDX-License-Identifier:". */
static bool spdx_line(const char *l, size_t n)
{
    static const char tag[] = "SPDX-License-Identifier:";
    size_t lead = n >= 3 && !strncmp(l, "/* ", 3) ? 3 : n >= 3 && !strncmp(l, "// ", 3) ? 3
                  : n >= 2 && !strncmp(l, "# ", 2) ? 2 : 0;
    if (!lead || n < lead + sizeof tag - 1 || strncmp(l + lead, tag, sizeof tag - 1))
        return false;
    return lead != 3 || l[0] != '/' || l[1] != '*' || (n >= 2 && !strncmp(l + n - 2, "*/", 2));
}

/* The hash covers the text as compiled except licence-tag lines (spdx_line): a kernel gains or
 * changes its SPDX line without losing its stored results or shipped wisdom. */
uint64_t bt__kdesc_source_hash(const bt_kdesc *k, const bt__ksource *s)
{
    uint64_t h = BT__FNV_SEED;
    for (const char *l = s->text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l), with_nl = n + (nl != NULL);
        if (!spdx_line(l, n))
            h = bt__fnv1a(l, with_nl, h);
        l += with_nl;
    }
    if (k->options)
        h = bt__fnv1a(k->options, strlen(k->options), h);
    return h;
}
