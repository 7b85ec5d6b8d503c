/*
 * args.c — tensor-map launch arguments (TMA): evaluating a spec's "tensormap" arguments for a
 * config and problem into requests, and encoding them over the launch's buffers. A tensor map
 * holds the buffer's address, so it is encoded per launch (by the tuner for its own buffers, by
 * bt_kernel_launch for the caller's); the request (dims, strides, box, swizzle) comes from the
 * config and the problem: bt_kernel_launch keeps it with the dispatch entry, the tuner evaluates
 * it for each launch (a few expressions, outside the timed region).
 */
#include "engine/engine.h"
#include "core/util.h"

#include <string.h>

bt_status bt__tmap_reqs(const bt_kdesc *k, const bt_config *c, const bt_problem *p,
                        const bt_gpu *g, bt__tmap_req out[BT__MAX_TMAPS], bt_diag *diag)
{
    int64_t slots[256];
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
