/* SPDX-License-Identifier: Apache-2.0 */
/*
 * userdata.c — a spec's own data and names in a tune (userdata.h): problem defines, the names a
 * CUDA compile resolves, constant memory, input files and expected outputs.
 */
#include "engine/userdata.h"

#include "core/datafile.h"
#include "core/pool.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bt__problem_defines(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g, char defs[][96])
{
    int n = 0;
    if (bt__kdesc_pdefines(k, p, g, defs, &n, NULL) != BT_OK)
        return 0;
    return n;
}

_Static_assert(BT__MAX_ENTRY + 1 <= 136 && sizeof(((bt__argspec *)0)->symbol) + 1 <= 136,
               "a resolved name (the entry, or '&' and a symbol) fits names[i]");

void bt__compile_req_of(const bt_kdesc *k, const bt__ksource *src, const char *const *defines,
                        int ndefines, char names[][136], const char *ptrs[],
                        bt__compile_req *req)
{
    int n = 0;
    if (k->entry) {
        snprintf(names[n], 136, "%s", k->entry);
        ptrs[n] = names[n];
        n++;
        for (int i = 0; i < k->nargs; i++)
            if (k->args[i].cmem) {
                snprintf(names[n], 136, "&%s", k->args[i].symbol);
                ptrs[n] = names[n];
                n++;
            }
    }
    *req = (bt__compile_req){
        .lang = src->lang,
        .src = src->text,
        .defines = defines,
        .ndefines = ndefines,
        .options = k->options,
        .target = src->target[0] ? src->target : NULL,
        .names = n ? ptrs : NULL,
        .nnames = n,
    };
}

bt_status bt__cmem_bind(const bt_kdesc *k, const bt__backend_iface *I, bt__bdev *D, bt__bmod *mod,
                        const bt_problem *p, const bt_gpu *g, bt__karg *args, bt_diag *diag)
{
    if (!I->module_set_global)
        return BT_OK;
    int64_t slots[BT__STACK_SLOTS];
    bool filled = false;
    for (int i = 0; i < k->nargs; i++) {
        const bt__argspec *a = &k->args[i];
        if (!a->cmem)
            continue;
        if (!filled) {
            if (bt__kdesc_stack_slots(k, NULL, p, g, slots) != BT_OK)
                return BT_INTERNAL;
            filled = true;
        }
        int64_t count;
        bt_status st = bt__kexpr_eval(k, &a->size, slots, &count, diag);
        if (st)
            return st;
        size_t bytes = (size_t)(count > 0 ? count : 0) * (size_t)bt__dtype_size(bt__arg_dtype(k, a, p));
        st = I->module_set_global(D, mod, a->symbol, args[i].u.buf, bytes, diag);
        if (st) {
            bt__diag_prefix(diag, "constant memory '%s': ", a->name);
            return st;
        }
        args[i].kind = BT__ARG_NONE;
    }
    return BT_OK;
}

/* Reads a data file of `count` elements (raw files in raw_dtype) into a host buffer of its own
 * dtype, for conversion by the caller. */
static bt_status read_array(const char *path, bt__dtype raw_dtype, size_t count, bt__hostbuf *out,
                            bt_diag *diag)
{
    void *data = NULL;
    bt__dtype dt;
    bt_status st = bt__datafile_read(path, raw_dtype, count, &data, &dt, diag);
    if (st)
        return st;
    *out = (bt__hostbuf){dt, count, data};
    return BT_OK;
}

bt_status bt__arg_fill(const bt__argspec *a, bt__hostbuf *hb, uint64_t seed, int arg,
                       bt_diag *diag)
{
    if (!a->file) {
        bt__hostbuf_fill(hb, a->init, a->init_a, a->init_b, seed, (uint64_t)arg,
                         bt__pool_cores());
        return BT_OK;
    }
    bt__hostbuf f;
    bt_status st = read_array(a->file, hb->dtype, hb->count, &f, diag);
    if (st) {
        bt__diag_prefix(diag, "argument '%s': ", a->name);
        return st;
    }
    if (f.dtype == hb->dtype)
        memcpy(hb->data, f.data, bt__hostbuf_bytes(hb));
    else
        for (size_t i = 0; i < hb->count; i++)
            bt__hostbuf_set(hb, i, bt__hostbuf_get(&f, i));
    bt__hostbuf_free(&f);
    return BT_OK;
}

bt_status bt__answers_load(const bt_kdesc *k, const bt__hostbuf *host, double **ref, bool caller,
                           bt_diag *diag)
{
    if (caller) {
        bt__diag_set(diag, "kernel '%s' is verified against answer files, which hold the outputs "
                     "of the spec's own inputs, not of the caller's buffers: tune it first "
                     "(blocktune tune, bt_kernel_tune), then launches dispatch the stored winner",
                     k->name);
        return BT_UNSUPPORTED;
    }
    for (int i = 0; i < k->nargs; i++) {
        if (!k->args[i].answer)
            continue;
        bt__hostbuf f;
        bt_status st = read_array(k->args[i].answer, host[i].dtype, host[i].count, &f, diag);
        if (st) {
            bt__diag_prefix(diag, "the answer for output '%s': ", k->args[i].name);
            return st;
        }
        for (size_t j = 0; j < f.count; j++)
            ref[i][j] = bt__hostbuf_get(&f, j);
        bt__hostbuf_free(&f);
    }
    return BT_OK;
}
