/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_cuda.c — blocktune inside an engine written the way engines are: the CUDA runtime owns
 * the memory (cudaMalloc) and the stream (its own non-blocking cudaStream_t); each step of the
 * model (softmax -> GEMM -> layernorm, fp32) runs through blocktune on those very pointers and
 * that stream. Two ways, both checked against the host:
 *   1. dispatch: bt_kernel_launch_ex (the first launch of a key looks up the store and wisdom,
 *      else tunes on scratch copies of the engine's tensors; later launches are a table lookup);
 *   2. lookup: bt_kernel_lookup gives each kernel's config, geometry, arguments and CUfunction,
 *      and the engine launches it with its own cuLaunchKernel.
 * Then the host cost of one launch: bt_kernel_launch_ex against the engine's own cuLaunchKernel
 * of the same function (enqueue only, averaged over many), the number issue 14 bounds (0.1 us),
 * with the thread pinned to a CPU near the GPU as an engine pins its launch thread
 * ($ENGINE_PIN=0: not pinned), and the median difference's 95 % interval.
 *
 *   usage: engine_cuda [M K N] [tune|wisdom-only] [RESULTS.json]
 * Exit 0 when both ways match the host, 77 when there is no CUDA device.
 */
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu */
#include <blocktune.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_ref.h"

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "engine_cuda: %s: %s\n", #call, cudaGetErrorString(e_));               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define BT(call)                                                                                   \
    do {                                                                                           \
        bt_status st_ = (call);                                                                    \
        if (st_ != BT_OK) {                                                                        \
            fprintf(stderr, "engine_cuda: %s: %s: %s\n", #call, bt_err_name(st_), g_diag.msg);     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static bt_diag g_diag = BT_DIAG_INIT;

/* The engine's own launch of a looked-up kernel: function, geometry, parameters. */
typedef struct own {
    CUfunction fn;
    uint32_t grid[3], block[3];
    size_t dyn;
    CUdeviceptr ptrs[4];
    int64_t scalars[8];
    void *params[8];
} own;

static void own_init(own *w, const engine_step *s)
{
    memset(w, 0, sizeof *w);
    void *fn = NULL;
    BT(bt_choice_function(s->choice, &fn, &g_diag));
    w->fn = (CUfunction)fn;
    bt_choice_geometry(s->choice, w->grid, w->block, &w->dyn);
    int nb = 0, np = 0;
    for (int i = 0; i < 8; i++) {
        int64_t v = 0;
        bt_arg_kind kind = bt_choice_arg(s->choice, i, &v, NULL);
        if (kind == BT_ARG_END)
            break;
        if (kind == BT_ARG_BUFFER) {
            w->ptrs[nb] = (CUdeviceptr)s->handles[nb];
            w->params[np++] = &w->ptrs[nb++];
        } else if (kind == BT_ARG_INT32 || kind == BT_ARG_INT64) {
            w->scalars[i] = v; /* an int32 parameter reads the low 4 bytes (little-endian) */
            w->params[np++] = &w->scalars[i];
        } else {
            fprintf(stderr, "engine_cuda: %s: argument %d is not one this engine passes\n",
                    s->name, i);
            exit(1);
        }
    }
}

/* Pins the calling thread to one CPU, as an engine pins its launch thread: the first CPU near the
 * GPU (its PCI device's local_cpulist) that this process may use, else the one it runs on; so
 * that no migration falls inside the measurement. $ENGINE_PIN=0 leaves it free. Returns the CPU,
 * -1 when not pinned. */
static int pin_near_gpu(int dev)
{
    const char *env = getenv("ENGINE_PIN");
    if (env && !strcmp(env, "0"))
        return -1;
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -1;
    int cpu = -1;
    char bus[64] = "", path[160], list[4096] = "";
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, dev) == cudaSuccess) {
        for (char *c = bus; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", bus);
        FILE *f = fopen(path, "r");
        if (f) {
            if (!fgets(list, sizeof list, f))
                list[0] = '\0';
            fclose(f);
        }
    }
    for (char *p = list; *p && cpu < 0;) { /* "0-15,32-47" */
        char *end;
        long a = strtol(p, &end, 10), b = a;
        if (end == p)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && cpu < 0; c++)
            if (c < CPU_SETSIZE && CPU_ISSET((int)c, &allowed))
                cpu = (int)c;
        p = *end == ',' ? end + 1 : end;
        if (!*p || *p == '\n')
            break;
    }
    if (cpu < 0)
        cpu = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return cpu >= 0 && sched_setaffinity(0, sizeof one, &one) == 0 ? cpu : -1;
}

static void own_launch(const own *w, cudaStream_t stream)
{
    CUresult r = cuLaunchKernel(w->fn, w->grid[0], w->grid[1], w->grid[2], w->block[0],
                                w->block[1], w->block[2], (unsigned)w->dyn, (CUstream)stream,
                                (void **)w->params, NULL);
    if (r != CUDA_SUCCESS) {
        const char *msg = "?";
        cuGetErrorString(r, &msg);
        fprintf(stderr, "engine_cuda: cuLaunchKernel: %s\n", msg);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    engine_dims dm = {256, 1024, 1024};
    if (argc > 3)
        dm = (engine_dims){atoi(argv[1]), atoi(argv[2]), atoi(argv[3])};
    const char *mode = argc > 4 ? argv[4] : "tune";
    const char *json = argc > 5 ? argv[5] : NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    /* the engine: the runtime's primary context, its own stream and memory */
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    size_t nx = (size_t)dm.M * dm.K, nw = (size_t)dm.K * dm.N, ny = (size_t)dm.M * dm.N;
    float *hx = malloc(nx * 4), *hw = malloc(nw * 4), *hg = malloc(dm.N * 4), *hb = malloc(dm.N * 4);
    float *hy = malloc(ny * 4);
    double *ref = malloc(ny * sizeof(double));
    engine_inputs(&dm, hx, hw, hg, hb);
    engine_reference(&dm, hx, hw, hg, hb, ref);
    float *x, *p, *w, *h, *g, *b, *y;
    CK(cudaMalloc((void **)&x, nx * 4));
    CK(cudaMalloc((void **)&p, nx * 4));
    CK(cudaMalloc((void **)&w, nw * 4));
    CK(cudaMalloc((void **)&h, ny * 4));
    CK(cudaMalloc((void **)&g, dm.N * 4));
    CK(cudaMalloc((void **)&b, dm.N * 4));
    CK(cudaMalloc((void **)&y, ny * 4));
    CK(cudaMemcpyAsync(x, hx, nx * 4, cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(w, hw, nw * 4, cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(g, hg, dm.N * 4, cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(b, hb, dm.N * 4, cudaMemcpyHostToDevice, stream));

    /* blocktune on the engine's context, memory and stream */
    bt_device *dev;
    BT(bt_device_wrap_cuda(0, NULL, &dev, &g_diag));
    bt_tune_options *o;
    BT(bt_tune_options_create(&o));
    BT(bt_tune_options_set_mode(o, strcmp(mode, "wisdom-only") ? BT_MODE_TUNE
                                                                : BT_MODE_WISDOM_ONLY));
    BT(bt_tune_options_set_time_limit_s(o, 20)); /* what a first launch may spend tuning */
    engine_step st[3];
    const uint64_t t[7] = {(uintptr_t)x, (uintptr_t)p, (uintptr_t)w, (uintptr_t)h,
                           (uintptr_t)g, (uintptr_t)b, (uintptr_t)y};
    if (engine_steps_init(st, dev, o, &dm, t, &g_diag)) {
        fprintf(stderr, "engine_cuda: %s\n", g_diag.msg);
        return 1;
    }
    bt_tune_options_destroy(o);
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = stream;

    /* 1. dispatch through blocktune, a few steps */
    double t0 = engine_now_us();
    for (int it = 0; it < 3; it++)
        if (engine_steps_launch(st, &lo, &g_diag))
            return 1;
    CK(cudaStreamSynchronize(stream));
    double first_us = engine_now_us() - t0;
    CK(cudaMemcpy(hy, y, ny * 4, cudaMemcpyDeviceToHost));
    double err1 = engine_error(&dm, hy, ref);
    if (engine_row_step(&dm) > 1)
        printf("engine_cuda: the host checks every %d-th row (its double GEMM would take minutes)\n",
               engine_row_step(&dm));
    int tunes = 0;
    for (int i = 0; i < 3; i++)
        tunes += bt_kernel_tune_count(st[i].kn);
    printf("engine_cuda: %dx%dx%d fp32, dispatch: 3 steps in %.1f ms (%d tunes), max error %.2e\n",
           dm.M, dm.K, dm.N, first_us / 1e3, tunes, err1);

    /* 2. lookup, and the engine's own cuLaunchKernel */
    CK(cudaMemsetAsync(y, 0, ny * 4, stream));
    if (engine_steps_lookup(st, &g_diag))
        return 1;
    own mine[3];
    for (int i = 0; i < 3; i++)
        own_init(&mine[i], &st[i]);
    for (int it = 0; it < 3; it++)
        for (int i = 0; i < 3; i++)
            own_launch(&mine[i], stream);
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(hy, y, ny * 4, cudaMemcpyDeviceToHost));
    double err2 = engine_error(&dm, hy, ref);
    printf("engine_cuda: lookup + own cuLaunchKernel: max error %.2e\n", err2);

    /* 3. the hot path's host cost: enqueue only, softmax. Batches of 64 launches (below the
     * driver's launch queue depth, so no launch waits for the GPU; the stream is drained between
     * batches, untimed), bt_kernel_launch_ex and the engine's own cuLaunchKernel alternating
     * batch by batch (ABBA, so drift and clock changes fall on both), 3000 batches each: the
     * medians per launch, and the median of the paired differences with its p20-p80. */
    enum { BATCH = 64, PAIRS = 3000 };
    static double tb[PAIRS], to[PAIRS], dd[PAIRS];
    int cpu = pin_near_gpu(0);
    for (int round = 0; round < PAIRS; round++) {
        for (int half = 0; half < 2; half++) {
            int bt_first = (round + half) % 2 == 0;
            CK(cudaStreamSynchronize(stream));
            double a = engine_now_us();
            for (int i = 0; i < BATCH; i++) {
                if (bt_first)
                    bt_kernel_launch_ex(st[0].kn, st[0].p, st[0].bufs, 2, &lo, NULL);
                else
                    own_launch(&mine[0], stream);
            }
            double t = (engine_now_us() - a) / BATCH;
            if (bt_first)
                tb[round] = t;
            else
                to[round] = t;
        }
        dd[round] = tb[round] - to[round];
    }
    CK(cudaStreamSynchronize(stream));
    double bt_us = engine_median(tb, PAIRS), own_us = engine_median(to, PAIRS);
    double d20 = engine_quantile(dd, PAIRS, 0.2), d80 = engine_quantile(dd, PAIRS, 0.8);
    double diff = engine_median(dd, PAIRS);
    /* the median's 95 % interval from order statistics: ranks n/2 -+ 1.96 sqrt(n)/2 */
    double half = 1.96 * 0.5 * sqrt((double)PAIRS) / PAIRS;
    double ci_lo = engine_quantile(dd, PAIRS, 0.5 - half);
    double ci_hi = engine_quantile(dd, PAIRS, 0.5 + half);
    char where[32] = "not pinned";
    if (cpu >= 0)
        snprintf(where, sizeof where, "pinned to CPU %d", cpu);
    printf("engine_cuda: host cost per launch (%d x %d launches, alternating, %s): "
           "bt_kernel_launch_ex %.3f us, own cuLaunchKernel %.3f us, difference %.3f us "
           "(95%% interval of the median %.3f..%.3f; p20-p80 %.3f..%.3f)\n", PAIRS, BATCH,
           where, bt_us, own_us, diff, ci_lo, ci_hi, d20, d80);
    int ok = err1 < 1e-3 && err2 < 1e-3;
    if (json) {
        FILE *f = fopen(json, "w");
        if (f) {
            fprintf(f, "{\"M\": %d, \"K\": %d, \"N\": %d, \"mode\": \"%s\", \"tunes\": %d,\n"
                       " \"max_error_dispatch\": %.3e, \"max_error_lookup\": %.3e,\n"
                       " \"host_us_bt_launch\": %.4f, \"host_us_own_launch\": %.4f,\n"
                       " \"host_us_difference\": %.4f, \"host_us_difference_p20\": %.4f,\n"
                       " \"host_us_difference_p80\": %.4f, \"host_us_difference_ci95\": [%.4f, %.4f],\n"
                       " \"cpu\": %d, \"ok\": %s}\n",
                    dm.M, dm.K, dm.N, mode, tunes, err1, err2, bt_us, own_us, diff, d20, d80,
                    ci_lo, ci_hi, cpu, ok ? "true" : "false");
            fclose(f);
        }
    }
    engine_steps_free(st);
    bt_device_destroy(dev);
    /* the engine's objects are still the engine's: blocktune freed none of them */
    float *all[] = {x, p, w, h, g, b, y};
    for (int i = 0; i < 7; i++)
        CK(cudaFree(all[i]));
    CK(cudaStreamDestroy(stream));
    free(hx), free(hw), free(hg), free(hb), free(hy), free(ref);
    printf("engine_cuda: %s\n", ok ? "ok" : "WRONG RESULTS");
    return ok ? 0 : 1;
}
