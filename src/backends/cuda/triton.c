/* SPDX-License-Identifier: Apache-2.0 */
/*
 * triton.c — the CUDA backend's "triton" language: a config's compile request (bt__triton_request)
 * goes to the Triton compile pool (tpool.h) for the device's or the GPU's target, and its answer
 * becomes what the backend's entries give back: a module blob of the CUBIN Triton built with its
 * launch metadata (compile; tmeta.h maps the launch parameters onto the spec's arguments, which
 * the request's names[1..] list in order), or the exact registers, spills, shared memory and stack frame (offline compile, `plan --exact`).
 * Triton's typed failures map to statuses: compile_error and crashed → BT_COMPILE, timeout →
 * BT_TIMEOUT, bad_request → BT_INVALID_ARG (the spec does not fit the kernel), anything else →
 * BT_INTERNAL; out_of_resources is BT_RESOURCES for a compile and, offline, the resources it
 * measured (the plan's occupancy rule then eliminates the config, with the exact numbers).
 * The xcompiler entries: "Triton <version>" (from the probe record, with no Python, where it
 * holds), the pool started ahead in the background, and what the pool cost.
 */
#include "backends/cuda/cuda.h"

#include "backends/cuda/blob.h"
#include "backends/cuda/tmeta.h"
#include "backends/cuda/tpool.h"
#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t num(const json_t *a, const char *key)
{
    const json_t *v = json_object_get(a, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

/* A failed answer's status, and its reason into msg ("Triton compile_error: ..."). */
static bt_status failure(const json_t *a, char *msg, size_t size)
{
    const json_t *e = json_object_get(a, "error");
    const char *kind = json_string_value(json_object_get(e, "kind"));
    const char *text = json_string_value(json_object_get(e, "message"));
    kind = kind ? kind : "internal";
    text = text ? text : "(no message)";
    if (!strcmp(kind, "out_of_resources")) {
        const char *what = json_string_value(json_object_get(e, "resource"));
        snprintf(msg, size, "out of resources: %s %lld > %lld (Triton: %s)", what ? what : "?",
                 (long long)num(e, "required"), (long long)num(e, "limit"), text);
        return BT_RESOURCES;
    }
    snprintf(msg, size, "Triton %s: %s", kind, text);
    if (!strcmp(kind, "compile_error") || !strcmp(kind, "crashed"))
        return BT_COMPILE;
    if (!strcmp(kind, "timeout"))
        return BT_TIMEOUT;
    if (!strcmp(kind, "bad_request"))
        return BT_INVALID_ARG;
    return BT_INTERNAL;
}

/* Sends req for target and waits: BT_OK with *a (the answer; also for out_of_resources when
 * keep_oor), else the status with the reason in diag. */
static bt_status ask(const bt__compile_req *req, const char *target, int64_t max_shared,
                     bool keep_oor, json_t **a, bt_diag *diag)
{
    bt_status st = bt__tpool_request(req->src, target, max_shared, a, diag);
    if (st != BT_OK || json_is_true(json_object_get(*a, "ok")))
        return st;
    st = failure(*a, diag->msg, sizeof diag->msg);
    if (st == BT_RESOURCES && keep_oor)
        return BT_OK;
    json_decref(*a);
    *a = NULL;
    return st;
}

/* The launch metadata of answer a as the blob's section text (malloc'd into *text): the spec's
 * arguments are req->names[1..nnames). */
static bt_status launch_meta(const json_t *a, const bt__compile_req *req, char **text,
                             bt_diag *d)
{
    bt__tmeta *m = malloc(sizeof *m);
    if (!m)
        return BT_NOMEM;
    int nargs = req->names && req->nnames > 1 ? req->nnames - 1 : 0;
    bt_status st = bt__tmeta_from_answer(a, nargs ? req->names + 1 : NULL, nargs, m, d->msg,
                                         sizeof d->msg);
    if (st == BT_OK && !(*text = bt__tmeta_text(m)))
        st = BT_NOMEM;
    free(m);
    return st;
}

bt_status bt__cuda_triton_compile(int major, int minor, size_t max_shared,
                                  const bt__compile_req *req, bt__blob *out, char **log)
{
    char target[16];
    snprintf(target, sizeof target, "sm_%d%d", major, minor);
    bt_diag d = {0};
    json_t *a = NULL;
    bt_status st = ask(req, target, (int64_t)max_shared, false, &a, &d);
    const char *cubin = json_string_value(json_object_get(a, "cubin"));
    const char *kernel = json_string_value(json_object_get(a, "kernel"));
    const char *ptx_target = json_string_value(json_object_get(a, "ptx_target"));
    bt__blob bin = {0};
    if (st == BT_OK && (!cubin || !kernel || !(bin.data = bt__read_file(cubin, &bin.size)))) {
        st = BT_INTERNAL;
        bt__diag_set(&d, "the Triton compile pool's answer names no readable CUBIN (%s)",
                     cubin ? cubin : "none");
    }
    char *meta = NULL;
    if (st == BT_OK)
        st = launch_meta(a, req, &meta, &d);
    if (st == BT_OK) {
        const char *entry = req->nnames ? req->names[0] : kernel;
        bool a_variant = ptx_target && ptx_target[strlen(ptx_target) - 1] == 'a';
        st = bt__cuda_blob_pack(major * 10 + minor, a_variant, &entry, &kernel, 1, meta, &bin,
                                out);
    }
    free(bin.data);
    free(meta);
    json_decref(a);
    if (log)
        *log = bt__strdup(d.msg);
    return st;
}

bt_status bt__cuda_triton_target(const bt_gpu *g, const char *want, bt__offline_target *out,
                                 bt_diag *diag)
{
    if (g->cc_major <= 0) {
        bt__diag_set(diag, "a Triton compile needs the GPU's compute capability; '%s' has none "
                     "in the table", g->name);
        return BT_UNSUPPORTED;
    }
    bt_status st = bt__tpool_version(out->version, sizeof out->version, diag);
    if (st != BT_OK) {
        bt__diag_prefix(diag, "a Triton compile needs Triton: ");
        return st;
    }
    snprintf(out->compiler, sizeof out->compiler, "Triton");
    if (want && *want)
        snprintf(out->target, sizeof out->target, "%s", want);
    else
        snprintf(out->target, sizeof out->target, "sm_%d%d", g->cc_major, g->cc_minor);
    return BT_OK;
}

bt_status bt__cuda_triton_offline(const bt_gpu *g, const bt__compile_req *req, bt__kres *res,
                                  char **log, bt_diag *diag)
{
    char target[16];
    snprintf(target, sizeof target, "sm_%d%d", g->cc_major, g->cc_minor);
    json_t *a = NULL;
    bt_status st = ask(req, req->target ? req->target : target, g->smem_per_block_optin, true, &a,
                       diag);
    if (st == BT_OK) {
        int64_t stores = num(a, "spill_stores"), loads = num(a, "spill_loads");
        res->regs_per_thread = (int)num(a, "registers");
        res->spill_bytes = stores >= 0 && loads >= 0 ? stores + loads : -1;
        res->static_smem = num(a, "shared"); /* all dynamic at launch; the whole block's here */
        res->local_bytes = num(a, "stack_frame");
        res->from_cache = json_is_true(json_object_get(a, "cached"));
        if (res->regs_per_thread < 0 || res->static_smem < 0) {
            st = BT_INTERNAL;
            bt__diag_set(diag, "the Triton compile pool's answer has no registers or shared memory");
        }
    }
    json_decref(a);
    if (log)
        *log = st == BT_OK ? NULL : bt__strdup(diag->msg);
    return st;
}

bt_status bt__cuda_xcompiler_id(const char *lang, bool start, char *buf, size_t size,
                                bt_diag *diag)
{
    if (!lang || strcmp(lang, "triton"))
        return BT_UNSUPPORTED;
    char v[32];
    bt_status st = BT_OK;
    if (!bt__tpool_version_known(v, sizeof v))
        st = start ? bt__tpool_version(v, sizeof v, diag) : BT_NOT_FOUND;
    if (st == BT_OK)
        snprintf(buf, size, "Triton %s", v);
    return st;
}

void bt__cuda_xcompiler_start(const char *lang)
{
    if (lang && !strcmp(lang, "triton"))
        bt__tpool_start();
}

bt_status bt__cuda_xcompiler_times(const char *lang, bt__xcompiler_times *out)
{
    if (!lang || strcmp(lang, "triton"))
        return BT_UNSUPPORTED;
    bt__tpool_stats s;
    bt__tpool_times(&s);
    out->started = s.started;
    out->by_embedder = s.by_embedder;
    out->ready_s = s.ready_s;
    out->compile_s = s.compile_s;
    return BT_OK;
}
