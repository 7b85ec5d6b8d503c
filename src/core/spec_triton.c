/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spec_triton.c — what a spec with a Triton source (`"sources": {"triton": "matmul.py"}`,
 * docs/spec.md#triton-kernels) loads differently: the source is one Python file whose absolute
 * path is kept (Triton imports it), the block is Triton's own (32 * num_warps threads: "block"
 * and "local_mem" are refused, the shared memory is all the compiler's), and the arguments are
 * the ones Triton's calling convention passes (buffers as typed pointers, int32/int64/fp32/fp64
 * scalars); a kernel's other constants are "defines" (constexprs per problem).
 */
#include "core/specld.h"
#include "core/util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool bt__ld_is_triton(const json_t *root)
{
    const json_t *s = json_object_get(root, "sources");
    return json_is_object(s) && json_object_get(s, "triton");
}

bt_status bt__ld_triton_source(bt__ld *L, const json_t *v, const char *path, bt__ksource *s)
{
    if (!json_is_string(v))
        return bt__ld_fail(L, path, "a Triton source is one Python file name (Triton imports the "
                           "file), not %s", bt__ld_jtype(v));
    if (L->embedded)
        return bt__ld_fail(L, path, "a built-in spec cannot have a Triton source");
    char *full;
    BT__TRY(bt__ld_file(L, json_string_value(v), path, "source", &full));
    char *abs = realpath(full, NULL);
    if (!abs) {
        bt_status st = bt__ld_fail_st(L, path, BT_IO, "cannot resolve source '%s': %s", full,
                                      strerror(errno));
        free(full);
        return st;
    }
    free(full);
    s->path = abs;
    return BT_OK;
}

bt_status bt__ld_triton_launch(bt__ld *L, const json_t *l)
{
    bt_kdesc *k = L->k;
    static const char *const refused[] = {"block", "local_mem"};
    for (size_t i = 0; i < BT__ARRAY_LEN(refused); i++)
        if (json_object_get(l, refused[i])) {
            char p[64];
            snprintf(p, sizeof p, "launch.%s", refused[i]);
            return bt__ld_fail(L, p, "a Triton kernel runs 32 * num_warps threads with the shared "
                               "memory its compiler says: no \"%s\"", refused[i]);
        }
    const char *warps = k->p_num_warps >= 0 ? k->space.params[k->p_num_warps].name : NULL;
    /* all of a Triton kernel's shared memory is dynamic: the static part is 0 */
    if (!k->static_smem.e)
        BT__TRY(bt__ld_expr_text(L, "0", "model.static_smem", &k->static_smem));
    char text[160];
    snprintf(text, sizeof text, "32 * %s", warps ? warps : "4");
    BT__TRY(bt__ld_expr_text(L, text, "launch", &k->block[0]));
    BT__TRY(bt__ld_expr_text(L, "1", "launch", &k->block[1]));
    return bt__ld_expr_text(L, "1", "launch", &k->block[2]);
}

/* A Triton kernel's argument: a plain buffer or an int32/int64/fp32/fp64 scalar. */
static bt_status check_arg(bt__ld *L, int i)
{
    const bt__argspec *a = &L->k->args[i];
    char p[48];
    snprintf(p, sizeof p, "args[%d]", i);
    if (a->role == BT__KARG_SCALAR) {
        bt__dtype t = a->dtype;
        if (a->dtype_is_problem || a->dtype_if.e ||
            (t != BT__DT_INT32 && t != BT__DT_INT64 && t != BT__DT_FP32 && t != BT__DT_FP64))
            return bt__ld_fail(L, p, "a Triton kernel's scalar '%s' must be int32, int64, fp32 or "
                               "fp64", a->name);
        return BT_OK;
    }
    if (a->role != BT__KARG_BUFFER || a->cmem)
        return bt__ld_fail(L, p, "a Triton kernel takes buffers and scalars only ('%s' is not one; "
                           "a constant is a \"defines\" entry)", a->name);
    return BT_OK;
}

bt_status bt__ld_triton_check(bt__ld *L, const json_t *root)
{
    bt_kdesc *k = L->k;
    if (k->nsrc != 1)
        return bt__ld_fail(L, "sources", "a Triton source cannot be given with sources in other "
                           "languages (the parameters mean different things)");
    static const char *const refused[] = {"prelude", "options", "sm90a"};
    for (size_t i = 0; i < BT__ARRAY_LEN(refused); i++)
        if (json_object_get(root, refused[i]))
            return bt__ld_fail(L, refused[i], "a Triton kernel takes no \"%s\"", refused[i]);
    if (k->ref == BT__REF_KERNEL)
        return bt__ld_fail(L, "reference", "a Triton kernel's reference is a host reference, a "
                           "config or answers (no reference kernel yet)");
    for (int i = 0; i < k->space.nparams; i++)
        if (!bt__ld_ident(k->space.params[i].name))
            return bt__ld_fail(L, "params", "'%s' is not a Python name",
                               k->space.params[i].name);
    for (int i = 0; i < k->nargs; i++)
        BT__TRY(check_arg(L, i));
    return BT_OK;
}
