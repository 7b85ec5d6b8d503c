/* SPDX-License-Identifier: Apache-2.0 */
/*
 * args.c — a config's launch for a problem: its geometry (grid, block, dynamic shared memory),
 * its scalar and local-memory arguments, and its tensor-map arguments (TMA): a spec's "tensormap"
 * arguments evaluated for a config and problem into requests, encoded over the launch's buffers.
 * A tensor map holds the buffer's address, so it is encoded per launch (by the tuner for its own
 * buffers, by bt_kernel_launch for the caller's); the request (dims, strides, box, swizzle) comes
 * from the config and the problem: bt_kernel_launch keeps it with the dispatch entry, the tuner
 * evaluates it for each launch (a few expressions, outside the timed region).
 */
#include "engine/engine.h"
#include "core/util.h"

#include <string.h>

bt_status bt__geometry(const bt_kdesc *k, const bt_config *c, const bt_problem *p, const bt_gpu *g,
                       int64_t grid[3], int64_t block[3], int64_t *dyn_smem, bt_diag *diag)
{
    int64_t slots[BT__STACK_SLOTS];
    if (bt__kdesc_stack_slots(k, c, p, g, slots) != BT_OK)
        return BT_INTERNAL;
    for (int d = 0; d < 3; d++) {
        bt_status st = bt__kexpr_eval(k, &k->grid[d], slots, &grid[d], diag);
        if (!st)
            st = bt__kexpr_eval(k, &k->block[d], slots, &block[d], diag);
        if (st)
            return st;
        if (grid[d] < 0 || block[d] < 1 || grid[d] > INT32_MAX || block[d] > 65536) {
            bt__diag_set(diag, "launch geometry out of range: grid[%d]=%lld block[%d]=%lld", d,
                         (long long)grid[d], d, (long long)block[d]);
            return BT_INVALID_ARG;
        }
    }
    *dyn_smem = 0;
    if (k->dyn_smem.e)
        return bt__kexpr_eval(k, &k->dyn_smem, slots, dyn_smem, diag);
    return BT_OK;
}

bt_status bt__scalar_karg(const bt__argspec *a, int64_t v, bt__karg *out, bt_diag *diag)
{
    if (a->role == BT__KARG_LOCAL) {
        out->kind = BT__ARG_LOCAL, out->u.local_bytes = (size_t)v;
        return BT_OK;
    }
    switch (a->dtype) {
    case BT__DT_INT64: out->kind = BT__ARG_I64, out->u.i64 = v; return BT_OK;
    case BT__DT_FP32: out->kind = BT__ARG_F32, out->u.f32 = (float)v; return BT_OK;
    case BT__DT_FP64: out->kind = BT__ARG_F64, out->u.f64 = (double)v; return BT_OK;
    default:
        out->kind = BT__ARG_I32, out->u.i32 = (int32_t)v;
        if (v > INT32_MAX || v < INT32_MIN) {
            bt__diag_set(diag, "scalar '%s' = %lld does not fit int32", a->name, (long long)v);
            return BT_INVALID_ARG;
        }
        return BT_OK;
    }
}

bt_status bt__tmap_reqs(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                        const bt_gpu *g, bt__tmap_req out[BT__MAX_TMAPS], bt_diag *diag)
{
    int64_t slots[BT__STACK_SLOTS];
    bt__kdesc_fill_slots(k, c, p, g, slots);
    int j = 0;
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role != BT__KARG_TMAP)
            continue;
        bt__tmap_req *q = &out[j++];
        memset(q, 0, sizeof *q);
        const bt__argspec *b = &k->args[a->tm_buffer];
        q->dtype = (int)bt__arg_dtype(k, b, p);
        q->elem_bytes = bt__dtype_size((bt__dtype)q->dtype);
        q->rank = a->tm_rank;
        q->swizzle = a->tm_swizzle;
        uint64_t stride = (uint64_t)q->elem_bytes;
        for (int d = 0; d < a->tm_rank; d++) {
            int64_t dim, box;
            bt_status st = bt__kexpr_eval(k, &a->tm_dims[d], slots, &dim, diag);
            if (!st)
                st = bt__kexpr_eval(k, &a->tm_box[d], slots, &box, diag);
            if (st)
                return st;
            if (dim < 1 || box < 1 || box > 256) {
                bt__diag_set(diag, "tensormap '%s': dimension %d has %lld elements and a box of "
                             "%lld (dims >= 1, box 1..256)", a->name, d, (long long)dim,
                             (long long)box);
                return BT_INVALID_ARG;
            }
            q->dims[d] = (uint64_t)dim;
            q->box[d] = (uint32_t)box;
            q->strides[d] = stride;
            stride *= (uint64_t)dim;
        }
    }
    return BT_OK;
}

bt_status bt__tmap_bind(const bt_kdesc *k, const bt__backend_iface *I, bt__bdev *D,
                        const bt__tmap_req *reqs, bt__karg *args, bt__tmap_blob *store,
                        bt_diag *diag)
{
    int j = 0;
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (a->role != BT__KARG_TMAP)
            continue;
        if (!I->tmap_encode) {
            bt__diag_set(diag, "argument '%s' is a tensor map, which the %s backend cannot make",
                         a->name, I->name);
            return BT_UNSUPPORTED;
        }
        bt_status st = I->tmap_encode(D, args[a->tm_buffer].u.buf, &reqs[j], store[j].b, diag);
        if (st) {
            bt__diag_prefix(diag, "tensormap '%s': ", a->name);
            return st;
        }
        args[i].kind = BT__ARG_TMAP;
        args[i].u.tmap = store[j].b;
        j++;
    }
    return BT_OK;
}
