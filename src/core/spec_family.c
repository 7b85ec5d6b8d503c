/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_family.c — a spec's "families" (core/family.h, docs/spec.md#families): each entry names a
 * built-in spec ("gemm_mma", or {"spec": NAME, "when": EXPR, "unit": "simt"|"tensor"}; the spec's
 * own name is its own source and space), loaded and checked against the front door at load time:
 * the same reference, every problem variable of the front door, every buffer argument by name with
 * the same role, output flag, element type and size (at the front door's default problem and its
 * boundary sizes); a family's other buffers must be self-cleaning workspaces (constant init, reset
 * to zero). Errors name the family's entry at its file:line:column. Also the mapping of a front
 * door's problem to a family's.
 */
#include "core/family.h"

#include "core/specld.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

int bt__family_find(const bt_kdesc *k, const char *name)
{
    for (int i = 0; name && i < k->nfam; i++)
        if (k->fam[i].name[0] && bt__streq_nocase(k->fam[i].name, name))
            return i;
    return -1;
}

void bt__family_problem(const bt_kdesc *k, int f, const bt_problem *p, bt_problem *out)
{
    const bt__kfamily *F = &k->fam[f];
    memset(out, 0, sizeof *out);
    out->k = F->k;
    out->dtype = p->dtype;
    for (int i = 0; i < F->k->nproblem; i++)
        out->values[i] = F->pmap[i] >= 0 ? p->values[F->pmap[i]] : F->k->problem_defaults[i];
}

/* The problem of the front door k at boundary b (-1: its defaults) in dtype t. */
static void fd_problem(const bt_kdesc *k, int b, bt__dtype t, bt_problem *p)
{
    memset(p, 0, sizeof *p);
    p->k = k;
    p->dtype = t;
    for (int i = 0; i < k->nproblem; i++)
        p->values[i] = b >= 0 && k->boundary[b][i] >= 0 ? k->boundary[b][i] : k->problem_defaults[i];
}

static int64_t arg_size(const bt_kdesc *k, const bt__argspec *a, const bt_problem *p, bool *ok)
{
    int64_t slots[BT__STACK_SLOTS], v = 0;
    if (bt__kdesc_stack_slots(k, NULL, p, NULL, slots) != BT_OK ||
        bt__expr_eval(a->size.e, slots, &v, NULL) != BT_OK)
        *ok = false;
    return v;
}

/* Buffer argument a of the front door against the family's argument of the same name. */
static bt_status check_buffer(bt__ld *L, const char *path, bt__kfamily *F, int ai)
{
    const bt_kdesc *k = L->k, *fk = F->k;
    const bt__argspec *a = &k->args[ai];
    int fi = bt__ld_arg(fk, a->name);
    const bt__argspec *b = fi >= 0 ? &fk->args[fi] : NULL;
    if (!b || b->role != BT__KARG_BUFFER)
        return bt__ld_fail(L, path, "family '%s' has no buffer argument '%s' (every buffer of "
                           "'%s' must be one of each family's)", F->name, a->name, k->name);
    if (a->output != b->output)
        return bt__ld_fail(L, path, "family '%s': argument '%s' is %s there but %s in '%s'",
                           F->name, a->name, b->output ? "an output" : "an input",
                           a->output ? "an output" : "an input", k->name);
    for (int bi = -1; bi < k->nboundary; bi++)
        for (int d = 0; d < k->ndtypes; d++) {
            bt_problem p, fp;
            fd_problem(k, bi, k->dtypes[d], &p);
            bt__family_problem(k, (int)(F - k->fam), &p, &fp);
            bool ok = true;
            int64_t sa = arg_size(k, a, &p, &ok), sb = arg_size(fk, b, &fp, &ok);
            bt__dtype ta = bt__arg_dtype(k, a, &p), tb = bt__arg_dtype(fk, b, &fp);
            if (!ok || sa != sb) {
                char at[160] = "";
                for (int i = 0, o = 0; i < k->nproblem && o < (int)sizeof at; i++)
                    o += snprintf(at + o, sizeof at - (size_t)o, "%s%s=%lld", i ? ", " : "",
                                  k->problem_names[i], (long long)p.values[i]);
                return bt__ld_fail(L, path, "family '%s': argument '%s' holds %lld elements at "
                                   "%s where '%s''s holds %lld (sizes must agree)", F->name,
                                   a->name, (long long)sb, at, k->name, (long long)sa);
            }
            bool fam_dtype = false;
            for (int j = 0; j < fk->ndtypes; j++)
                fam_dtype |= fk->dtypes[j] == k->dtypes[d];
            if (fam_dtype && ta != tb)
                return bt__ld_fail(L, path, "family '%s': argument '%s' is %s for %s problems, "
                                   "%s in '%s'", F->name, a->name, bt__dtype_name(tb),
                                   bt__dtype_name(k->dtypes[d]), bt__dtype_name(ta), k->name);
        }
    F->amap[fi] = ai;
    return BT_OK;
}

/* The family's interface against the front door's (see the file's comment). */
static bt_status check_family(bt__ld *L, const char *path, bt__kfamily *F)
{
    const bt_kdesc *k = L->k, *fk = F->k;
    if (fk->nfam)
        return bt__ld_fail(L, path, "family '%s' has families of its own (one level only)",
                           F->name);
    if (fk->ref != k->ref || strcmp(fk->ref_host, k->ref_host) != 0)
        return bt__ld_fail(L, path, "family '%s' is checked against reference '%s', '%s' against "
                           "'%s': a family computes what the front door computes", F->name,
                           fk->ref == BT__REF_HOST ? fk->ref_host : "(not a host reference)",
                           k->name, k->ref == BT__REF_HOST ? k->ref_host : "(not a host reference)");
    for (int i = 0; i < fk->nproblem; i++)
        F->pmap[i] = bt__ld_problem(k, fk->problem_names[i]);
    for (int i = 0; i < k->nproblem; i++)
        if (bt__ld_problem(fk, k->problem_names[i]) < 0)
            return bt__ld_fail(L, path, "family '%s' has no problem variable '%s' (one of '%s')",
                               F->name, k->problem_names[i], k->name);
    for (int i = 0; i < BT__MAX_ARGS; i++)
        F->amap[i] = -1;
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].role == BT__KARG_BUFFER)
            BT__TRY(check_buffer(L, path, F, i));
    for (int i = 0; i < fk->nargs; i++) {
        const bt__argspec *b = &fk->args[i];
        if (b->role == BT__KARG_BUFFER && F->amap[i] < 0 &&
            (b->output || b->init != BT__INIT_CONST || !b->reset_to_zero || b->file))
            return bt__ld_fail(L, path, "family '%s': buffer '%s' is not one of '%s''s and not a "
                               "self-cleaning workspace (constant init, in reset_to_zero)",
                               F->name, b->name, k->name);
    }
    return BT_OK;
}

static bt_status load_entry(bt__ld *L, const json_t *v, const char *path, bt__kfamily *F)
{
    bt_kdesc *k = L->k;
    const char *name = NULL, *unit = NULL;
    const json_t *when = NULL;
    if (json_is_object(v)) {
        static const char *const keys[] = {"spec", "when", "unit", NULL};
        BT__TRY(bt__ld_keys(L, v, path, keys));
        char p[128];
        snprintf(p, sizeof p, "%s.spec", path);
        BT__TRY(bt__ld_str(L, json_object_get(v, "spec"), p, &name));
        if ((when = json_object_get(v, "when"))) {
            snprintf(p, sizeof p, "%s.when", path);
            BT__TRY(bt__ld_expr(L, when, p, &F->when));
        }
        if (json_object_get(v, "unit")) {
            snprintf(p, sizeof p, "%s.unit", path);
            BT__TRY(bt__ld_str(L, json_object_get(v, "unit"), p, &unit));
            if (strcmp(unit, "simt") && strcmp(unit, "tensor"))
                return bt__ld_fail(L, p, "unit is \"simt\" or \"tensor\", not \"%s\"", unit);
            F->unit_set = true;
            F->unit = unit[0] == 's' ? BT__UNIT_SIMT : BT__UNIT_TENSOR;
        }
    } else
        BT__TRY(bt__ld_str(L, v, path, &name));
    size_t len = strlen(name);
    bool file = len > 5 && !strcmp(name + len - 5, ".json");
    if (!file && k->name && bt__streq_nocase(name, k->name)) {
        if (!k->nsrc)
            return bt__ld_fail(L, path, "'%s' lists itself but has no sources", name);
        snprintf(F->name, sizeof F->name, "%s", k->name);
        F->self = true;
        F->k = k;
        for (int i = 0; i < k->nproblem; i++)
            F->pmap[i] = i;
        for (int i = 0; i < BT__MAX_ARGS; i++)
            F->amap[i] = i < k->nargs ? i : -1;
        return BT_OK;
    }
    bt_diag d2;
    memset(&d2, 0, sizeof d2);
    bt_status st = L->load_family ? L->load_family(L, name, file, &F->k, &d2) : BT_INTERNAL;
    if (st != BT_OK && file && d2.file[0])
        return bt__ld_fail(L, path, "family '%s' does not load: %s:%d:%d: %s", name, d2.file,
                           d2.line, d2.column, d2.msg);
    if (st != BT_OK)
        return bt__ld_fail(L, path, "family '%s' does not load: %s", name, d2.msg);
    if (strlen(F->k->name) >= sizeof F->name)
        return bt__ld_fail(L, path, "family name '%s' is too long", F->k->name);
    if (bt__family_find(k, F->k->name) >= 0 || (k->name && bt__streq_nocase(F->k->name, k->name)))
        return bt__ld_fail(L, path, "family '%s' is listed twice (or has the front door's name)",
                           F->k->name);
    snprintf(F->name, sizeof F->name, "%s", F->k->name);
    return check_family(L, path, F);
}

bt_status bt__ld_families(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_array(v) || json_array_size(v) < 1)
        return bt__ld_fail(L, "families", "expected a list of at least one built-in spec name");
    BT__TRY(bt__ld_bound(L, v, "families", BT__MAX_FAMILIES, "families"));
    k->fam = calloc(json_array_size(v), sizeof *k->fam);
    if (!k->fam)
        return BT_NOMEM;
    for (size_t i = 0; i < json_array_size(v); i++) {
        char path[64];
        snprintf(path, sizeof path, "families[%zu]", i);
        k->nfam = (int)i + 1; /* what is loaded so far is freed with k on error */
        BT__TRY(load_entry(L, json_array_get(v, i), path, &k->fam[i]));
    }
    return BT_OK;
}
