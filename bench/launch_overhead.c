/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_overhead.c — host cost of a cached launch through blocktune against the bare driver
 * call, on a tiny kernel (vector_add, n = 1024): (a) bt_kernel_launch (key lookup, geometry and
 * arguments from the spec, backend launch), (b) the backend's launch alone, (c) cuLaunchKernel
 * called directly on the same CUfunction, (a) and (c) on one stream of this program's. 3000
 * batches of 64 launches each, the three ways alternating batch by batch (each batch below
 * the launch queue's depth, so no launch waits for the GPU); per-launch medians, p20 and p80 in
 * µs, and the same of the paired difference (a) - (c) of each round.
 * With a spec (examples/triton/vector_add.json: a Triton kernel of the same arguments) that
 * kernel instead; its bare call passes Triton's parameters (x, y, out, n as i32, the two NULL
 * scratch pointers), so (a) - (c) is what blocktune's dispatch of a Triton kernel costs.
 *
 *   usage: launch_overhead [DEVICE [SPEC.json]]      (default cuda:0, the built-in vector_add)
 */
#include "engine/engine.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define ROUNDS 3000
#define BATCH 64

/* The q-quantile (nearest rank) of v[0..ROUNDS); v is left as it was. */
static double quantile(const double *v, double q)
{
    static double c[ROUNDS];
    memcpy(c, v, sizeof c);
    qsort(c, ROUNDS, sizeof *c, cmpd);
    return c[(int)(q * (ROUNDS - 1) + 0.5)];
}

static void print_q(const char *name, const double *v)
{
    printf(" \"%s\": {\"median\": %.3f, \"p20\": %.3f, \"p80\": %.3f, \"min\": %.3f},\n", name,
           quantile(v, 0.5), quantile(v, 0.2), quantile(v, 0.8), quantile(v, 0.0));
}

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned smem, void *stream, void **params, void **extra);
typedef int (*sync_fn)(void);
typedef int (*retain_fn)(void **ctx, int dev);
typedef int (*setcur_fn)(void *ctx);
typedef int (*screate_fn)(void **stream, unsigned flags);

int main(int argc, char **argv)
{
    const char *id = argc > 1 ? argv[1] : "cuda:0";
    bt_diag d = {0};
    bt_device *dev;
    if (bt_device_open(id, &dev, &d)) {
        printf("SKIPPED: %s\n", d.msg);
        return 77;
    }
    bt_kdesc *k = NULL;
    if (argc > 2 ? bt_kdesc_load_file(argv[2], &k, &d) : bt_kdesc_builtin("vector_add", &k, &d)) {
        fprintf(stderr, "%s\n", d.msg);
        return 1;
    }
    bt_kernel *kn;
    if (bt_kernel_create(dev, k, &kn, &d)) {
        fprintf(stderr, "%s\n", d.msg);
        return 1;
    }
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 2;
    o.rep_ms = 5;
    bt__kernel_set_opts(kn, &o);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_problem_set(p, "n", 1024, &d);
    bt_buffer *b[3];
    for (int i = 0; i < 3; i++)
        bt_buffer_create(dev, 4096, &b[i], &d);
    float h[1024];
    for (int i = 0; i < 1024; i++)
        h[i] = (float)i;
    bt_buffer_write(b[0], 0, h, sizeof h, &d);
    bt_buffer_write(b[1], 0, h, sizeof h, &d);
    if (bt_kernel_launch(kn, p, b, 3, &d)) { /* tunes */
        fprintf(stderr, "launch: %s\n", d.msg);
        return 1;
    }
    bt_device_sync(dev, &d);
    /* the cached entry */
    bt__dispatch e = {0};
    bt__dkey key;
    bt__dispatch_key(kn, p, &key);
    if (!bt__dispatch_find(kn, &key, &e)) {
        fprintf(stderr, "no dispatch entry after the launch\n");
        return 1;
    }
    int64_t grid[3], block[3], dyn;
    bt__geometry(k, &e.cfg, p, &bt_device_get_info(dev)->props, grid, block, &dyn, &d);
    bool triton = !strcmp(kn->src->lang, "triton"); /* its n is an int32 scalar */
    bt__karg args[4] = {{BT__ARG_BUF, {.buf = b[0]->b}}, {BT__ARG_BUF, {.buf = b[1]->b}},
                        {BT__ARG_BUF, {.buf = b[2]->b}}, {BT__ARG_I64, {.i64 = 1024}}};
    if (triton)
        args[3] = (bt__karg){BT__ARG_I32, {.i32 = 1024}};
    uint32_t g32[3] = {(uint32_t)grid[0], 1, 1}, b32[3] = {(uint32_t)block[0], 1, 1};

    /* The three ways, alternating batch by batch (the order rotates each round, so drift and
     * clock changes fall on all three); each batch BATCH launches, below the driver's launch
     * queue depth so that no launch waits for the GPU; the stream drained between batches,
     * untimed. (a) and (c) on one stream of this program's (the engine's situation), (b) on
     * the device's own. */
    static double ra[ROUNDS], rb[ROUNDS], rc[ROUNDS], dac[ROUNDS];
    int have_raw = 0;
    launch_fn L = NULL;
    void *cufn = NULL, *stream = NULL, *params[6] = {0};
    unsigned long long px, py, pz, none = 0; /* Triton's global_scratch, profile_scratch */
    long long n64 = 1024;
    int n32 = 1024;
    void *lib = !strncmp(id, "cuda", 4) ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) : NULL;
    sync_fn S = lib ? (sync_fn)dlsym(lib, "cuCtxSynchronize") : NULL;
    if (lib) {
        L = (launch_fn)dlsym(lib, "cuLaunchKernel");
        retain_fn Rt = (retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
        setcur_fn Sc = (setcur_fn)dlsym(lib, "cuCtxSetCurrent");
        screate_fn Sn = (screate_fn)dlsym(lib, "cuStreamCreate");
        void *ctx = NULL;
        if (L && S && Rt && Sc && Sn && Rt(&ctx, bt_device_get_info(dev)->index) == 0 &&
            Sc(ctx) == 0 && Sn(&stream, 1 /* CU_STREAM_NON_BLOCKING */) == 0) {
            cufn = *(void **)e.fn; /* struct bt__bfn starts with its CUfunction */
            /* device pointers: struct bt__bbuf starts with its CUdeviceptr */
            px = *(unsigned long long *)b[0]->b, py = *(unsigned long long *)b[1]->b;
            pz = *(unsigned long long *)b[2]->b;
            params[0] = &px, params[1] = &py, params[2] = &pz, params[3] = &n64;
            if (triton) {
                params[3] = &n32;
                params[4] = params[5] = &none;
            }
            have_raw = 1;
        }
    }
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = stream; /* NULL without the raw driver: the device's stream */
    for (int r = 0; r < ROUNDS; r++) {
        for (int w = 0; w < 3; w++) {
            int way = (r + w) % 3;
            if (way == 2 && !have_raw)
                continue;
            if (S)
                S();
            else
                bt_device_sync(dev, &d);
            double t = now();
            for (int i = 0; i < BATCH; i++) {
                if (way == 0)
                    bt_kernel_launch_ex(kn, p, b, 3, &lo, &d);
                else if (way == 1)
                    kn->iface->launch(kn->bdev, e.fn, g32, b32, 0, args, 4, NULL, &d);
                else
                    L(cufn, g32[0], 1, 1, b32[0], 1, 1, 0, stream, params, NULL);
            }
            double us = (now() - t) / BATCH * 1e6;
            *(way == 0 ? &ra[r] : way == 1 ? &rb[r] : &rc[r]) = us;
        }
        dac[r] = have_raw ? ra[r] - rc[r] : ra[r] - rb[r];
    }
    bt_device_sync(dev, &d);
    if (S)
        S();
    printf("{\"device\": \"%s\", \"kernel\": \"%s\", \"launches_per_batch\": %d, \"batches\": %d,\n",
           bt_device_get_info(dev)->name, k->name, BATCH, ROUNDS);
    print_q("bt_kernel_launch_us", ra);
    print_q("backend_launch_us", rb);
    if (have_raw)
        print_q("cuLaunchKernel_us", rc);
    print_q(have_raw ? "overhead_vs_bare_us" : "overhead_vs_backend_us", dac);
    printf(" \"overhead_median_us\": %.3f}\n", quantile(dac, 0.5));
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(b[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
    return 0;
}
