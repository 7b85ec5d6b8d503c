/* SPDX-License-Identifier: Apache-2.0 */
/*
 * offline.c — the CUDA backend without a device (its vtable's offline entries): the target a
 * compile for a GPU of the hardware table builds, and a compile for it with NVRTC whose resources
 * (registers, spills, static shared memory, stack frame) come from ptxas's report, or from the
 * CUBIN when the log has none. What `plan --exact` runs on a machine with NVRTC and no GPU.
 * Triton sources go to triton.c.
 */
#include "backends/cuda/cuda.h"

#include "backends/cuda/nvrtc.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bt_status bt__cuda_offline_check(const bt_gpu *g, bt_diag *diag)
{
    if (g->cc_major <= 0) {
        bt__diag_set(diag, "a CUDA compile needs the GPU's compute capability; '%s' has none in "
                     "the table", g->name);
        return BT_UNSUPPORTED;
    }
    if (!bt__nvrtc_available(diag)) {
        bt__diag_prefix(diag, "a CUDA compile needs NVRTC: ");
        return BT_NO_BACKEND;
    }
    return BT_OK;
}

bt_status bt__cuda_offline_target(const bt_gpu *g, const char *lang, const char *want,
                                  bt__offline_target *out, bt_diag *diag)
{
    if (lang && !strcmp(lang, "triton"))
        return bt__cuda_triton_target(g, want, out, diag);
    bt_status st = bt__cuda_offline_check(g, diag);
    if (st != BT_OK)
        return st;
    int maj = 0, min = 0;
    bt__nvrtc_version(&maj, &min, NULL);
    snprintf(out->compiler, sizeof out->compiler, "NVRTC");
    snprintf(out->version, sizeof out->version, "%d.%d", maj, min);
    if (want && *want)
        snprintf(out->target, sizeof out->target, "%s", want);
    else
        bt__nvrtc_target_name(g->cc_major, g->cc_minor, false, out->target, sizeof out->target);
    return BT_OK;
}

bt_status bt__cuda_offline_compile(const bt_gpu *g, const bt__compile_req *req, bt__kres *res,
                                   char **log, bt_diag *diag)
{
    res->regs_per_thread = -1;
    res->local_bytes = res->static_smem = res->spill_bytes = -1;
    res->max_threads_per_block = res->preferred_multiple = -1;
    if (log)
        *log = NULL;
    if (req->lang && !strcmp(req->lang, "triton"))
        return bt__cuda_triton_offline(g, req, res, log, diag);
    int major, minor;
    bool arch_specific;
    if (!req->nnames || !req->names || !bt__nvrtc_target_parse(req->target, &major, &minor,
                                                               &arch_specific)) {
        bt__diag_set(diag, "offline compile: no entry name or no target (sm_XY) given");
        return BT_INVALID_ARG;
    }
    if (major != g->cc_major || minor != g->cc_minor) {
        bt__diag_set(diag, "the target %s needs compute capability %d.%d; %s is %d.%d",
                     req->target, major, minor, g->name, g->cc_major, g->cc_minor);
        return BT_UNSUPPORTED;
    }
    bt__blob cubin = {0};
    char *mylog = NULL;
    char **low = NULL;
    bt_status st = bt__nvrtc_compile_named(req->src, req->defines, req->ndefines, req->options,
                                           major, minor, arch_specific, req->names, req->nnames,
                                           &low, &cubin, &mylog, diag);
    /* the entry as the CUBIN names it: a C++ kernel's mangled name */
    const char *entry = low ? low[0] : req->names[0];
    int regs = -1;
    int64_t spill = -1, smem = -1, stack = -1;
    if (st == BT_OK && bt__nvrtc_resources(mylog, entry, &regs, &spill, &smem, &stack) != BT_OK) {
        /* no ptxas report in the log: read the CUBIN (spills are then not known) */
        st = bt__cubin_resources(cubin.data, cubin.size, entry, &regs, &stack, &smem);
        spill = -1;
        if (st != BT_OK)
            bt__diag_set(diag, "no resources of '%s' in the compile log or the CUBIN", entry);
    }
    bt__nvrtc_names_free(low, req->nnames);
    free(cubin.data);
    if (log)
        *log = mylog;
    else
        free(mylog);
    if (st == BT_OK) {
        res->regs_per_thread = regs;
        res->spill_bytes = spill;
        res->static_smem = smem;
        res->local_bytes = stack;
    }
    return st;
}
