/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_overhead.c — host cost of a cached launch through blocktune against the bare driver
 * call, on a tiny kernel (vector_add, n = 1024): (a) bt_kernel_launch (key lookup, geometry and
 * arguments from the spec, backend launch), (b) the backend's launch alone, (c) cuLaunchKernel
 * called directly on the same CUfunction. Five runs of 20000 launches each; medians in µs.
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

#define RUNS 5
#define PER 20000

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned smem, void *stream, void **params, void **extra);
typedef int (*sync_fn)(void);
typedef int (*retain_fn)(void **ctx, int dev);
typedef int (*setcur_fn)(void *ctx);

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
    for (size_t i = 0; i < kn->cap; i++)
        if (kn->tab[i].used)
            e = kn->tab[i]; /* the only entry */
    int64_t grid[3], block[3], dyn;
    bt__geometry(k, &e.cfg, p, &bt_device_get_info(dev)->props, grid, block, &dyn, &d);
    bool triton = !strcmp(kn->src->lang, "triton"); /* its n is an int32 scalar */
    bt__karg args[4] = {{BT__ARG_BUF, {.buf = b[0]->b}}, {BT__ARG_BUF, {.buf = b[1]->b}},
                        {BT__ARG_BUF, {.buf = b[2]->b}}, {BT__ARG_I64, {.i64 = 1024}}};
    if (triton)
        args[3] = (bt__karg){BT__ARG_I32, {.i32 = 1024}};
    uint32_t g32[3] = {(uint32_t)grid[0], 1, 1}, b32[3] = {(uint32_t)block[0], 1, 1};

    double ra[RUNS], rb[RUNS], rc[RUNS];
    for (int r = 0; r < RUNS; r++) {
        double t = now();
        for (int i = 0; i < PER; i++)
            bt_kernel_launch(kn, p, b, 3, &d);
        ra[r] = (now() - t) / PER * 1e6;
        bt_device_sync(dev, &d);
        t = now();
        for (int i = 0; i < PER; i++)
            kn->iface->launch(kn->bdev, e.fn, g32, b32, 0, args, 4, NULL, &d);
        rb[r] = (now() - t) / PER * 1e6;
        bt_device_sync(dev, &d);
    }
    int have_raw = 0;
    void *lib = !strncmp(id, "cuda", 4) ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) : NULL;
    if (lib) {
        launch_fn L = (launch_fn)dlsym(lib, "cuLaunchKernel");
        sync_fn S = (sync_fn)dlsym(lib, "cuCtxSynchronize");
        retain_fn Rt = (retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
        setcur_fn Sc = (setcur_fn)dlsym(lib, "cuCtxSetCurrent");
        void *ctx = NULL;
        if (L && S && Rt && Sc && Rt(&ctx, bt_device_get_info(dev)->index) == 0 && Sc(ctx) == 0) {
            void *cufn = *(void **)e.fn; /* struct bt__bfn starts with its CUfunction */
            /* device pointers: struct bt__bbuf starts with its CUdeviceptr */
            unsigned long long px = *(unsigned long long *)b[0]->b, py = *(unsigned long long *)b[1]->b,
                               pz = *(unsigned long long *)b[2]->b;
            long long n = 1024;
            int n32 = 1024;
            unsigned long long none = 0; /* Triton's global_scratch, profile_scratch */
            void *params[6] = {&px, &py, &pz, &n, NULL, NULL};
            if (triton) {
                params[3] = &n32;
                params[4] = params[5] = &none;
            }
            for (int r = 0; r < RUNS; r++) {
                double t = now();
                for (int i = 0; i < PER; i++)
                    L(cufn, g32[0], 1, 1, b32[0], 1, 1, 0, NULL, params, NULL);
                rc[r] = (now() - t) / PER * 1e6;
                S();
            }
            have_raw = 1;
        }
    }
    qsort(ra, RUNS, sizeof *ra, cmpd);
    qsort(rb, RUNS, sizeof *rb, cmpd);
    if (have_raw)
        qsort(rc, RUNS, sizeof *rc, cmpd);
    printf("{\"device\": \"%s\", \"kernel\": \"%s\", \"launches_per_run\": %d, \"runs\": %d,\n",
           bt_device_get_info(dev)->name, k->name, PER, RUNS);
    printf(" \"bt_kernel_launch_us\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f},\n", ra[2], ra[0], ra[4]);
    printf(" \"backend_launch_us\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f},\n", rb[2], rb[0], rb[4]);
    if (have_raw)
        printf(" \"cuLaunchKernel_us\": {\"median\": %.3f, \"min\": %.3f, \"max\": %.3f},\n", rc[2], rc[0], rc[4]);
    printf(" \"overhead_vs_bare_us\": %.3f}\n", have_raw ? ra[2] - rc[2] : ra[2] - rb[2]);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(b[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
    return 0;
}
