/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_launch.c — the spec's launch geometry and problem defines (docs/spec.md#launch):
 *   - "launch": {"grid": [...], "block": [...], "local_mem": e}, or Kernel Tuner's way: the block
 *     from parameters named block_size_x/y/z when "block" is absent, and the grid as a problem
 *     size divided by parameters ("problem_size": ["n"], "grid_div": {"x": ["block_size_x",
 *     "tile_size_x"]}: grid.x = cdiv(n, block_size_x * tile_size_x));
 *   - "defines": {"WIDTH": "n", "FSIZE": "fh * fw"}: problem values passed to the compiler as -D,
 *     evaluated per problem by kdesc.c (they are not parameters: the space does not grow).
 */
#include "core/specld.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const block_params[3] = {"block_size_x", "block_size_y", "block_size_z"};
static const char *const dim_names[3] = {"x", "y", "z"};

/* "grid" or "block": a list of 1 to 3 expressions; missing dimensions are 1. */
static bt_status load_dims(bt__ld *L, const json_t *a, const char *p, bt__kexpr dst[3])
{
    if (!json_is_array(a) || json_array_size(a) < 1 || json_array_size(a) > 3)
        return bt__ld_fail(L, p, "expected a list of 1 to 3 expressions");
    for (size_t i = 0; i < 3; i++) {
        char ip[80];
        snprintf(ip, sizeof ip, "%s[%zu]", p, i);
        if (i < json_array_size(a))
            BT__TRY(bt__ld_expr(L, json_array_get(a, i), ip, &dst[i]));
        else
            BT__TRY(bt__ld_expr_text(L, "1", ip, &dst[i]));
    }
    return BT_OK;
}

/* No "block": the parameters block_size_x/y/z (1 where absent). */
static bt_status block_from_params(bt__ld *L, const char *where)
{
    bt_kdesc *k = L->k;
    bool any = false;
    for (int d = 0; d < 3; d++)
        any |= bt__ld_param(k, block_params[d]) >= 0;
    if (!any)
        return bt__ld_fail(L, where, "missing \"block\" (or parameters named block_size_x, "
                           "block_size_y, block_size_z for it)");
    for (int d = 0; d < 3; d++) {
        char p[64];
        snprintf(p, sizeof p, "launch.block[%d]", d);
        BT__TRY(bt__ld_expr_text(L, bt__ld_param(k, block_params[d]) >= 0 ? block_params[d] : "1",
                                 p, &k->block[d]));
    }
    return BT_OK;
}

/* Appends "(text)" of an expression value to b, after checking that it parses (so that a typo is
 * reported at its own position). */
static bt_status add_factor(bt__ld *L, const json_t *v, const char *p, bt__sbuf *b, const char *sep)
{
    bt__kexpr x = {0};
    bt_status st = bt__ld_expr(L, v, p, &x);
    if (st == BT_OK)
        bt__sbuf_printf(b, "%s(%s)", sep, bt__expr_source(x.e));
    bt__kexpr_free(&x);
    return st;
}

/* grid[d] = cdiv(problem_size[d], product of grid_div's factors for d). */
static bt_status grid_from_div(bt__ld *L, const json_t *ps, const json_t *gd)
{
    bt_kdesc *k = L->k;
    if (!json_is_array(ps) || json_array_size(ps) < 1 || json_array_size(ps) > 3)
        return bt__ld_fail(L, "launch.problem_size", "expected a list of 1 to 3 expressions");
    if (gd) {
        if (!json_is_object(gd))
            return bt__ld_fail(L, "launch.grid_div", "expected {\"x\": [...], \"y\": [...], "
                               "\"z\": [...]}");
        static const char *const keys[] = {"x", "y", "z", NULL};
        BT__TRY(bt__ld_keys(L, gd, "launch.grid_div", keys));
    }
    for (int d = 0; d < 3; d++) {
        char p[64], gp[64];
        snprintf(p, sizeof p, "launch.grid[%d]", d);
        if ((size_t)d >= json_array_size(ps)) {
            if (gd && json_object_get(gd, dim_names[d]))
                return bt__ld_fail(L, "launch.grid_div", "grid_div.%s has no problem_size[%d] to "
                                   "divide", dim_names[d], d);
            BT__TRY(bt__ld_expr_text(L, "1", p, &k->grid[d]));
            continue;
        }
        bt__sbuf b = {0};
        char pp[64];
        snprintf(pp, sizeof pp, "launch.problem_size[%d]", d);
        bt_status st = add_factor(L, json_array_get(ps, (size_t)d), pp, &b, "cdiv(");
        const json_t *f = gd ? json_object_get(gd, dim_names[d]) : NULL;
        snprintf(gp, sizeof gp, "launch.grid_div.%s", dim_names[d]);
        if (!st && f && json_is_array(f) && (json_array_size(f) < 1 ||
                                             json_array_size(f) > BT__MAX_GRID_DIV))
            st = bt__ld_fail(L, gp, "expected a list of 1 to %d factors", BT__MAX_GRID_DIV);
        for (size_t i = 0; !st && f && json_is_array(f) && i < json_array_size(f); i++) {
            char ip[112];
            snprintf(ip, sizeof ip, "%s[%zu]", gp, i);
            st = add_factor(L, json_array_get(f, i), ip, &b, i ? " * " : ", ");
        }
        if (!st && f && !json_is_array(f))
            st = add_factor(L, f, gp, &b, ", ");
        if (!st && !f) /* Kernel Tuner's default: the block size of that dimension */
            bt__sbuf_printf(&b, ", %s", bt__ld_param(k, block_params[d]) >= 0 ? block_params[d]
                                                                                : "1");
        if (!st)
            bt__sbuf_printf(&b, ")");
        if (!st)
            st = b.s ? bt__ld_expr_text(L, b.s, f ? gp : pp, &k->grid[d]) : BT_NOMEM;
        bt__sbuf_free(&b);
        BT__TRY(st);
    }
    return BT_OK;
}

bt_status bt__ld_launch(bt__ld *L, const json_t *l)
{
    bt_kdesc *k = L->k;
    if (!l && L->triton)
        return bt__ld_fail(L, "", "a Triton spec needs \"launch\": {\"grid\": ...}");
    if (!l) { /* the block may still come from block_size_x/y/z, for the model */
        for (int d = 0; d < 3; d++)
            if (bt__ld_param(k, block_params[d]) >= 0)
                return block_from_params(L, "");
        return BT_OK;
    }
    if (!json_is_object(l))
        return bt__ld_fail(L, "launch", "expected an object with \"grid\" and \"block\"");
    static const char *const keys[] = {"grid", "block", "local_mem", "problem_size", "grid_div",
                                       NULL};
    BT__TRY(bt__ld_keys(L, l, "launch", keys));
    json_t *g = json_object_get(l, "grid"), *b = json_object_get(l, "block"),
           *ps = json_object_get(l, "problem_size"), *gd = json_object_get(l, "grid_div");
    if (g && (ps || gd))
        return bt__ld_fail(L, ps ? "launch.problem_size" : "launch.grid_div",
                           "give \"grid\" or \"problem_size\" (with \"grid_div\"), not both");
    if (gd && !ps)
        return bt__ld_fail(L, "launch.grid_div", "grid_div divides \"problem_size\", which is "
                           "missing");
    if (!g && !ps)
        return bt__ld_fail(L, "launch", "missing \"grid\" (or \"problem_size\" with \"grid_div\")");
    if (L->triton)
        BT__TRY(bt__ld_triton_launch(L, l));
    else if (b)
        BT__TRY(load_dims(L, b, "launch.block", k->block));
    else
        BT__TRY(block_from_params(L, "launch"));
    if (g)
        BT__TRY(load_dims(L, g, "launch.grid", k->grid));
    else
        BT__TRY(grid_from_div(L, ps, gd));
    json_t *lm = json_object_get(l, "local_mem");
    if (lm)
        BT__TRY(bt__ld_expr(L, lm, "launch.local_mem", &k->dyn_smem));
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Problem defines
 * ------------------------------------------------------------------------------------------- */
bt_status bt__ld_defines(bt__ld *L, const json_t *v)
{
    bt_kdesc *k = L->k;
    if (!v)
        return BT_OK;
    if (!json_is_object(v))
        return bt__ld_fail(L, "defines", "expected {\"NAME\": expression over problem variables, "
                           "...}");
    BT__TRY(bt__ld_bound(L, v, "defines", BT__MAX_PDEFINES, "defines"));
    const char *name;
    json_t *x;
    json_object_foreach((json_t *)v, name, x)
    {
        char p[160];
        snprintf(p, sizeof p, "defines.%s", name);
        if (!bt__ld_ident(name) || strlen(name) >= BT_NAME_MAX)
            return bt__ld_fail(L, p, "'%s' is not a macro name (an identifier of at most %d "
                               "characters)", name, BT_NAME_MAX - 1);
        if (!strncmp(name, "BT_", 3))
            return bt__ld_fail(L, p, "'%s': names starting with BT_ are blocktune's own defines",
                               name);
        if (bt__ld_param(k, name) >= 0)
            return bt__ld_fail(L, p, "'%s' is a parameter, which is a define already", name);
        bt__pdefine *pd = &k->pdefines[k->npdefines++];
        snprintf(pd->name, sizeof pd->name, "%s", name);
        BT__TRY(bt__ld_expr(L, x, p, &pd->value));
        for (int s = 0; s < k->slot_problem0; s++)
            if (bt__expr_uses(pd->value.e, s))
                return bt__ld_fail(L, p, "'%s' is a parameter: a define's value may use problem "
                                   "variables, elem_bytes and device limits (parameters reach "
                                   "the kernel as defines already)", bt__symtab_name(k->syms, s));
        for (int i = 0; i < k->nproblem; i++) {
            bool in_key = false;
            for (int j = 0; j < k->nkey; j++)
                in_key |= k->key_slots[j] == k->slot_problem0 + i;
            if (bt__expr_uses(pd->value.e, k->slot_problem0 + i) && !in_key)
                return bt__ld_fail(L, p, "'%s' is not in \"key\": a kernel compiled for one %s "
                                   "would be dispatched for another", k->problem_names[i],
                                   k->problem_names[i]);
        }
        if (bt__expr_uses(pd->value.e, k->slot_elem_bytes) && !k->key_dtype)
            return bt__ld_fail(L, p, "elem_bytes depends on the dtype, which is not in \"key\"");
    }
    return BT_OK;
}
