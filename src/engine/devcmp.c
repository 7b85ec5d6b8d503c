/* SPDX-License-Identifier: Apache-2.0 */
/*
 * devcmp.c — verification on the device: a config's outputs stay where its run left them and
 * blocktune's own comparison kernel (kernels/<language>/bt_verify.* after the language's prelude,
 * one entry per output dtype, compiled once per device through the kernel cache, on a thread of
 * its own from the tune's start) compares them with the problem's reference: a device
 * reference's outputs, kept where they ran in their own dtype (bt__devcmp_keep_ref: scanned for
 * NaN and infinity, which a poisoned element left unwritten is, and copied), or a host
 * reference uploaded once per problem (every element, or the sampled indices and their values, as
 * doubles). Only each
 * block's partial result crosses to the host (checked, bad, non-finite, the first bad and first
 * non-finite index, the largest errors), and the one element the report quotes. The arithmetic
 * and the messages are the host comparison's (host.c): the same tolerances, NaN never passes,
 * an unwritten (poisoned) element is non-finite. A device that cannot build or run the kernel
 * (OpenCL without fp64), or a CPU device (whose memory is the host's), is verified on the host.
 */
#include "engine/tune_ctx.h"

#include "backends/device.h"
#include "core/util.h"
#include "engine/kcache.h"
#include "store/store.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMP_THREADS 128 /* the kernels' BT_CMP_THREADS */
#define CMP_GROUPS 4096 /* at most; each writes 8 words (4096 x 128 threads: every SM full) */
#define CMP_WORDS (8 + 8 * CMP_GROUPS)

/* The comparison source in one of the backend's languages after that language's prelude (its
 * fp16 conversion, compiled with BT_DTYPE_FP16) into a malloc'd *text; false when blocktune has
 * none. */
static bool cmp_source(const bt__backend_iface *I, const char **lang, char **text)
{
    static const char *const ext[][2] = {{"cu", "cuh"}, {"cl", "cl"}};
    for (const char *const *l = I->languages; l && *l; l++)
        for (size_t e = 0; e < BT__ARRAY_LEN(ext); e++) {
            char path[96], ppath[96];
            size_t n, pn = 0;
            snprintf(path, sizeof path, "kernels/%s/bt_verify.%s", *l, ext[e][0]);
            snprintf(ppath, sizeof ppath, "kernels/%s/prelude.%s", *l, ext[e][1]);
            const char *src = bt__embedded(path, &n), *pre = bt__embedded(ppath, &pn);
            if (!src || !pre)
                continue;
            *text = malloc(pn + n + 2);
            if (!*text)
                return false;
            memcpy(*text, pre, pn);
            (*text)[pn] = '\n';
            memcpy(*text + pn + 1, src, n);
            (*text)[pn + 1 + n] = '\0';
            *lang = *l;
            return true;
        }
    return false;
}

/* Whether this tune verifies on the device with blocktune's kernel: its compile request into
 * *req (the source malloc'd into *src) and its kernel cache key. False: none in the backend's
 * languages, BLOCKTUNE_HOST_VERIFY, or a CPU device (whose memory is the host's: reading an
 * output back is a copy, and the host compares on every core without a kernel to compile;
 * BLOCKTUNE_DEVICE_VERIFY still compares there). */
static bool cmp_request(bt__tctx *T, char **src, bt__compile_req *req, uint64_t *key)
{
    const char *lang = NULL;
    *src = NULL;
    bool have = cmp_source(T->I, &lang, src);
    bool force = getenv("BLOCKTUNE_DEVICE_VERIFY") != NULL;
    if (!have || getenv("BLOCKTUNE_HOST_VERIFY") || (bt__device_in_process(T) && !force)) {
        free(*src);
        *src = NULL;
        return false;
    }
    static const char *const defs[] = {"BT_DTYPE_FP16=1"};
    const bt_device_info *di = bt_device_get_info(T->kn->dev);
    *req = (bt__compile_req){.lang = lang, .src = *src, .defines = defs, .ndefines = 1};
    *key = bt__kcache_key(T->I->name, di->name, di->compiler_version, req);
    return true;
}

/* The comparison kernel compiled ahead on a thread of its own, into the kernel cache. */
struct bt__cmp_ahead {
    pthread_t th;
    const bt__backend_iface *I;
    bt__bdev *D;
    bt__compile_req req;
    char *src;
    uint64_t key;
};

static void *cmp_ahead_main(void *arg)
{
    struct bt__cmp_ahead *A = arg;
    bt__blob blob = {0};
    char *log = NULL;
    if (A->I->compile(A->D, &A->req, &blob, &log) == BT_OK)
        bt__kcache_put(A->key, &blob);
    free(blob.data);
    free(log);
    return NULL;
}

void bt__devcmp_ahead(bt__tctx *T)
{
    struct bt__cmp_ahead *A = calloc(1, sizeof *A);
    if (!A)
        return;
    A->I = T->I;
    A->D = T->D;
    if (!cmp_request(T, &A->src, &A->req, &A->key) || bt__kcache_has(A->key) ||
        pthread_create(&A->th, NULL, cmp_ahead_main, A) != 0) {
        free(A->src);
        free(A);
        return;
    }
    T->cmp.ahead = A;
}

/* Waits for the compile started ahead, if any (its binary is then in the kernel cache, or its
 * failure is met again by cmp_ready with the compiler's log). */
static void cmp_ahead_join(bt__tctx *T)
{
    struct bt__cmp_ahead *A = T->cmp.ahead;
    if (!A)
        return;
    pthread_join(A->th, NULL);
    free(A->src);
    free(A);
    T->cmp.ahead = NULL;
}

/* Builds and loads the comparison module once per tune (again after a fault). */
static bool cmp_ready(bt__tctx *T)
{
    bt__devcmp *C = &T->cmp;
    if (C->tried)
        return C->ok;
    C->tried = true;
    cmp_ahead_join(T);
    char *src = NULL;
    bt__compile_req req;
    uint64_t key;
    if (!cmp_request(T, &src, &req, &key))
        return false;
    bt__blob blob = {0};
    char *log = NULL;
    bt_diag d = {0};
    bt_status st = BT_OK;
    if (!bt__kcache_get(key, &blob)) {
        st = T->I->compile(T->D, &req, &blob, &log);
        if (!st)
            bt__kcache_put(key, &blob);
    }
    if (!st)
        st = T->I->module_load(T->D, blob.data, blob.size, &C->mod, &d);
    for (int t = 0; !st && t < BT__DT__COUNT; t++) {
        char name[48];
        bt__kres res;
        snprintf(name, sizeof name, "bt_verify_%s", bt__dtype_name((bt__dtype)t));
        st = T->I->function_get(T->D, C->mod, name, &C->fn[t], &res, &d);
    }
    free(blob.data);
    free(src);
    if (st) {
        bt__decision_log("verifying on the host: the comparison kernel is not available here "
                         "(%s%s%.300s)", bt_strerror(st), d.msg[0] || log ? ": " : "",
                         d.msg[0] ? d.msg : log ? log : "");
        bt__devcmp_free(T);
        C->tried = true;
    }
    free(log);
    C->ok = st == BT_OK;
    return C->ok;
}

void bt__devcmp_free(bt__tctx *T)
{
    cmp_ahead_join(T);
    if (T->cmp.mod)
        T->I->module_free(T->D, T->cmp.mod);
    memset(&T->cmp, 0, sizeof T->cmp);
}

void bt__devcmp_pdata_free(bt__tctx *T, bt__pdata *d)
{
    for (int i = 0; i < BT__MAX_ARGS; i++)
        if (d->dref[i])
            T->I->buf_free(T->D, d->dref[i]);
    if (d->didx)
        T->I->buf_free(T->D, d->didx);
    if (d->dio)
        T->I->buf_free(T->D, d->dio);
}

/* n bytes of src into a new device buffer *b. */
static bt_status upload(bt__tctx *T, const void *src, size_t n, bt__bbuf **b, bt_diag *diag)
{
    bt_status st = T->I->buf_alloc(T->D, n ? n : 8, b, diag);
    if (!st && n)
        st = T->I->buf_write(T->D, *b, 0, src, n, diag);
    return st;
}

/* d's reference of output i on the device (once per problem): every element, or the sampled
 * ones in sample order with their indices (the partial results' buffer is run_pass's). */
static bt_status upload_ref(bt__tctx *T, bt__pdata *d, int i, bt_diag *diag)
{
    bt_status st = BT_OK;
    if (!d->have_ref || d->dref[i])
        return st;
    if (!d->sample)
        return upload(T, d->ref[i], d->host[i].count * sizeof(double), &d->dref[i], diag);
    int64_t *idx = malloc(sizeof *idx * d->nsample);
    double *val = malloc(sizeof *val * d->nsample);
    st = idx && val ? BT_OK : BT_NOMEM;
    for (size_t s = 0; !st && s < d->nsample; s++) {
        idx[s] = (int64_t)d->sample[s];
        val[s] = d->ref[i][d->sample[s]];
    }
    if (!st && !d->didx)
        st = upload(T, idx, sizeof *idx * d->nsample, &d->didx, diag);
    if (!st)
        st = upload(T, val, sizeof *val * d->nsample, &d->dref[i], diag);
    free(idx);
    free(val);
    return st;
}

bt_status bt__devcmp_upload_refs(bt__tctx *T, bt__pdata *d, bt_diag *diag)
{
    if (!d->have_ref)
        return BT_OK;
    char *src = NULL;
    bt__compile_req req;
    uint64_t key;
    bool on_device = cmp_request(T, &src, &req, &key);
    free(src);
    if (!on_device)
        return BT_OK;
    double t0 = bt__now();
    bt_status st = BT_OK;
    bt_diag dd = {0};
    for (int i = 0; i < T->k->nargs && !st; i++)
        if (T->k->args[i].output)
            st = upload_ref(T, d, i, &dd);
    T->r->t_ref_upload += bt__now() - t0;
    if (st && bt__device_lost(T->kn->dev)) {
        bt__diag_copy(diag, &dd);
        return st;
    }
    if (st) { /* none kept half-written: the first comparison tries again, or the host compares */
        bt__decision_log("the reference was not copied to the device ahead (%s): the first "
                         "comparison copies it", dd.msg[0] ? dd.msg : bt_strerror(st));
        for (int i = 0; i < BT__MAX_ARGS; i++)
            if (d->dref[i] && !d->dref_typed[i]) {
                T->I->buf_free(T->D, d->dref[i]);
                d->dref[i] = NULL;
            }
        if (d->didx)
            T->I->buf_free(T->D, d->didx);
        d->didx = NULL;
    }
    return BT_OK;
}

/* The partial results of one pass, summed over the groups. */
typedef struct pass {
    uint64_t checked, bad, nf, first_nf, first_bad, explained;
    double max_abs, max_rel;
} pass;

/* One launch over `items` (mode 0: scan, 1: dense, 2: sampled; dense against a reference in the
 * output's own dtype is the kernel's mode 3) of output i, its groups' words read back and reduced
 * into *p; d's partial results' buffer made on first use. */
static bt_status run_pass(bt__tctx *T, bt__pdata *d, int i, int mode, size_t items, double rtol,
                          double atol, pass *p, bt_diag *diag)
{
    size_t groups = (items + CMP_THREADS * 8 - 1) / (CMP_THREADS * 8);
    groups = groups < 1 ? 1 : groups > CMP_GROUPS ? CMP_GROUPS : groups;
    int64_t head[8] = {(int64_t)items, mode == 1 && d->dref_typed[i] ? 3 : mode};
    memcpy(&head[2], &rtol, sizeof rtol);
    memcpy(&head[3], &atol, sizeof atol);
    bt_status st = d->dio ? BT_OK : T->I->buf_alloc(T->D, CMP_WORDS * sizeof(int64_t), &d->dio, diag);
    if (!st)
        st = T->I->buf_write(T->D, d->dio, 0, head, sizeof head, diag);
    bt__karg a[4] = {{BT__ARG_BUF, {.buf = d->dev[i]}},
                     {BT__ARG_BUF, {.buf = mode ? d->dref[i] : d->dev[i]}},
                     {BT__ARG_BUF, {.buf = mode == 2 ? d->didx : d->dio}},
                     {BT__ARG_BUF, {.buf = d->dio}}};
    uint32_t grid[3] = {(uint32_t)groups, 1, 1}, block[3] = {CMP_THREADS, 1, 1};
    if (!st)
        st = T->I->launch(T->D, T->cmp.fn[d->host[i].dtype], grid, block, 0, a, 4, NULL, diag);
    int64_t *w = malloc(groups * 8 * sizeof *w);
    if (!st)
        st = w ? T->I->buf_read(T->D, d->dio, 8 * sizeof *w, w, groups * 8 * sizeof *w, diag)
               : BT_NOMEM;
    memset(p, 0, sizeof *p);
    p->first_nf = p->first_bad = UINT64_MAX;
    for (size_t g = 0; !st && g < groups; g++) {
        const int64_t *x = &w[8 * g];
        double ma, mr;
        memcpy(&ma, &x[5], sizeof ma);
        memcpy(&mr, &x[6], sizeof mr);
        p->checked += (uint64_t)x[0], p->bad += (uint64_t)x[1], p->nf += (uint64_t)x[2];
        p->first_nf = (uint64_t)x[3] < p->first_nf ? (uint64_t)x[3] : p->first_nf;
        p->first_bad = (uint64_t)x[4] < p->first_bad ? (uint64_t)x[4] : p->first_bad;
        p->max_abs = fmax(p->max_abs, ma), p->max_rel = fmax(p->max_rel, mr);
        p->explained += (uint64_t)x[7];
    }
    free(w);
    return st;
}

/* Element j of b (output i's dtype), read back alone (the one a message quotes). */
static double element(bt__tctx *T, bt__pdata *d, int i, bt__bbuf *b, size_t j)
{
    uint64_t raw = 0;
    bt__hostbuf one = {d->host[i].dtype, 1, &raw};
    size_t es = (size_t)bt__dtype_size(one.dtype);
    if (T->I->buf_read(T->D, b, j * es, &raw, es, NULL) != BT_OK)
        return NAN;
    return bt__hostbuf_get(&one, 0);
}

/* Output i's reference at j: from the host's array, or the device's typed copy. */
static double ref_element(bt__tctx *T, bt__pdata *d, int i, size_t j)
{
    return d->ref[i] ? d->ref[i][j] : d->dref_typed[i] ? element(T, d, i, d->dref[i], j) : NAN;
}

/* The passes of output i against d's reference (scan only without one) into v. */
static bt_status compare(bt__tctx *T, bt__pdata *d, int i, double rtol, double atol,
                         bt__verify *v, bt_diag *diag)
{
    size_t n = d->host[i].count;
    bool sampled = d->have_ref && d->sample;
    pass a, b;
    bt_status st = run_pass(T, d, i, d->have_ref && !sampled ? 1 : 0, n, rtol, atol, &a, diag);
    if (!st && sampled)
        st = run_pass(T, d, i, 2, d->nsample, rtol, atol, &b, diag);
    if (st)
        return st;
    memset(v, 0, sizeof *v);
    v->nonfinite = (size_t)a.nf;
    v->first_bad = SIZE_MAX;
    const pass *c = sampled ? &b : &a; /* what was compared with the reference */
    v->checked = (size_t)c->checked, v->bad = (size_t)c->bad;
    v->max_abs_err = c->max_abs, v->max_rel_err = c->max_rel;
    if (c->first_bad != UINT64_MAX)
        v->first_bad = (size_t)c->first_bad;
    if (sampled)
        v->nonfinite = a.nf > b.explained ? (size_t)(a.nf - b.explained) : 0;
    if (v->nonfinite)
        v->first_bad = (size_t)a.first_nf;
    if (v->first_bad != SIZE_MAX) {
        v->got = element(T, d, i, d->dev[i], v->first_bad);
        v->want = !d->have_ref ? 0 : ref_element(T, d, i, v->first_bad);
        if (sampled && v->nonfinite) {
            v->want = NAN;
            for (size_t s = 0; s < d->nsample; s++)
                if (d->sample[s] == v->first_bad)
                    v->want = ref_element(T, d, i, v->first_bad);
        }
    }
    bt__verify_message(v, rtol, atol);
    return BT_OK;
}

/* Output dtypes whose poison is a NaN (host.c bt__poison_pattern): a scan that finds no
 * non-finite element proves that every element was written. */
static bool poison_is_nan(bt__dtype t)
{
    return t == BT__DT_FP32 || t == BT__DT_FP16 || t == BT__DT_BF16 || t == BT__DT_FP64;
}

bt_status bt__devcmp_keep_ref(bt__tctx *T, bt__pdata *d, bool *kept, bt_diag *diag)
{
    const bt_kdesc *k = T->k;
    *kept = false;
    for (int i = 0; i < k->nargs; i++)
        if (k->args[i].output && !poison_is_nan(d->host[i].dtype))
            return BT_OK;
    if (d->sample || !cmp_ready(T))
        return BT_OK;
    bt_status st = BT_OK;
    for (int i = 0; i < k->nargs && !st; i++) {
        if (!k->args[i].output)
            continue;
        pass p;
        st = run_pass(T, d, i, 0, d->host[i].count, INFINITY, INFINITY, &p, diag);
        if (!st && p.nf) /* a NaN or an infinity, or the poison left: the host looks */
            return BT_OK;
    }
    for (int i = 0; i < k->nargs && !st; i++) {
        if (!k->args[i].output)
            continue;
        size_t bytes = bt__hostbuf_bytes(&d->host[i]);
        st = T->I->buf_alloc(T->D, bytes, &d->dref[i], diag);
        if (!st)
            st = T->I->buf_copy(T->D, d->dref[i], d->dev[i], bytes, diag);
        d->dref_typed[i] = true;
    }
    if (st) { /* nothing is kept half */
        for (int i = 0; i < k->nargs; i++)
            if (d->dref_typed[i]) {
                if (d->dref[i])
                    T->I->buf_free(T->D, d->dref[i]);
                d->dref[i] = NULL;
                d->dref_typed[i] = false;
            }
        return st;
    }
    *kept = true;
    T->r->refs_kept++;
    return BT_OK;
}

bt_status bt__devcmp_output(bt__tctx *T, bt__pdata *d, int i, double rtol, double atol,
                            bt__verify *v, bt_diag *diag)
{
    if (!cmp_ready(T))
        return BT_UNSUPPORTED;
    bt_diag dd = {0};
    bt_status st = upload_ref(T, d, i, &dd);
    if (!st)
        st = compare(T, d, i, rtol, atol, v, &dd);
    if (!st) {
        T->r->dev_compares++;
        return BT_OK;
    }
    if (bt__device_lost(T->kn->dev)) { /* the config's run broke the device: its failure */
        bt__diag_copy(diag, &dd);
        return st;
    }
    bt__decision_log("verifying on the host from now on: the comparison kernel failed (%s)",
                     dd.msg[0] ? dd.msg : bt_strerror(st));
    bt__devcmp_free(T);
    T->cmp.tried = true;
    return BT_UNSUPPORTED;
}
