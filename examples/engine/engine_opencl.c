/* SPDX-License-Identifier: Apache-2.0 */
/*
 * engine_opencl.c — the OpenCL twin of engine_cuda.c: the engine owns its context, its in-order
 * queue and its cl_mem tensors; softmax -> GEMM -> layernorm (fp32) runs through blocktune on
 * them, launched on the engine's queue (bt_device_wrap_opencl, bt_buffer_wrap,
 * bt_kernel_launch_ex), then the same step with the configs only looked up and the engine's
 * own clEnqueueNDRangeKernel of the looked-up cl_kernel. Both are checked against the host.
 * Runs in CI on PoCL (the CPU), with quick tunes.
 *
 *   usage: engine_opencl [M K N] [tune|wisdom-only]
 * Exit 0 when both ways match the host, 77 when there is no OpenCL device.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <blocktune.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_ref.h"

static bt_diag g_diag = BT_DIAG_INIT;
#define BT(call)                                                                                   \
    do {                                                                                           \
        bt_status st_ = (call);                                                                    \
        if (st_ != BT_OK) {                                                                        \
            fprintf(stderr, "engine_opencl: %s: %s: %s\n", #call, bt_err_name(st_), g_diag.msg);   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CL(call)                                                                                   \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "engine_opencl: %s: error %d\n", #call, e_);                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The engine's own launch of the looked-up kernel: its arguments set from the spec's order. */
static void own_launch(const engine_step *s, cl_command_queue q)
{
    void *fn = NULL;
    BT(bt_choice_function(s->choice, &fn, &g_diag));
    cl_kernel k = fn;
    int nb = 0;
    for (cl_uint i = 0;; i++) {
        int64_t v = 0;
        bt_arg_kind kind = bt_choice_arg(s->choice, (int)i, &v, NULL);
        if (kind == BT_ARG_END)
            break;
        cl_int i32 = (cl_int)v;
        cl_long i64 = v;
        cl_mem m = (cl_mem)(uintptr_t)s->handles[nb];
        if (kind == BT_ARG_BUFFER && ++nb)
            CL(clSetKernelArg(k, i, sizeof m, &m));
        else if (kind == BT_ARG_INT32)
            CL(clSetKernelArg(k, i, sizeof i32, &i32));
        else if (kind == BT_ARG_INT64)
            CL(clSetKernelArg(k, i, sizeof i64, &i64));
        else if (kind == BT_ARG_LOCAL)
            CL(clSetKernelArg(k, i, (size_t)v, NULL));
        else {
            fprintf(stderr, "engine_opencl: %s: argument %u is not one this engine passes\n",
                    s->name, i);
            exit(1);
        }
    }
    uint32_t grid[3], block[3];
    size_t dyn;
    bt_choice_geometry(s->choice, grid, block, &dyn);
    size_t global[3], local[3];
    for (int d = 0; d < 3; d++)
        global[d] = (size_t)grid[d] * block[d], local[d] = block[d];
    CL(clEnqueueNDRangeKernel(q, k, 3, NULL, global, local, 0, NULL, NULL));
}

int main(int argc, char **argv)
{
    engine_dims dm = {32, 128, 64};
    if (argc > 3)
        dm = (engine_dims){atoi(argv[1]), atoi(argv[2]), atoi(argv[3])};
    const char *mode = argc > 4 ? argv[4] : "tune";
    cl_platform_id plat;
    cl_device_id cdev;
    cl_uint np = 0;
    if (clGetPlatformIDs(1, &plat, &np) != CL_SUCCESS || !np ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &cdev, NULL) != CL_SUCCESS) {
        printf("SKIPPED: no OpenCL device\n");
        return 77;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &cdev, NULL, NULL, &err);
    CL(err);
    cl_command_queue q = clCreateCommandQueue(ctx, cdev, 0, &err);
    CL(err);
    size_t nx = (size_t)dm.M * dm.K, nw = (size_t)dm.K * dm.N, ny = (size_t)dm.M * dm.N;
    float *hx = malloc(nx * 4), *hw = malloc(nw * 4), *hg = malloc(dm.N * 4), *hb = malloc(dm.N * 4);
    float *hy = malloc(ny * 4);
    double *ref = malloc(ny * sizeof(double));
    engine_inputs(&dm, hx, hw, hg, hb);
    engine_reference(&dm, hx, hw, hg, hb, ref);
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nx * 4, hx, &err);
    cl_mem p = clCreateBuffer(ctx, CL_MEM_READ_WRITE, nx * 4, NULL, &err);
    cl_mem w = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, nw * 4, hw, &err);
    cl_mem h = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ny * 4, NULL, &err);
    cl_mem g = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, dm.N * 4, hg, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, dm.N * 4, hb, &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, ny * 4, NULL, &err);
    CL(err);

    bt_device *dev;
    BT(bt_device_wrap_opencl(ctx, cdev, q, &dev, &g_diag));
    bt_tune_options *o;
    BT(bt_tune_options_create(&o));
    BT(bt_tune_options_set_mode(o, strcmp(mode, "wisdom-only") ? BT_MODE_TUNE
                                                                : BT_MODE_WISDOM_ONLY));
    /* quick first-launch tunes for CI: a few configs each */
    BT(bt_tune_options_set_strategy(o, "random"));
    BT(bt_tune_options_set_budget(o, 3));
    BT(bt_tune_options_set_rep_ms(o, 2));
    BT(bt_tune_options_set_warmup_ms(o, 1));
    BT(bt_tune_options_set_verify_boundary(o, 0));
    BT(bt_tune_options_set_top_k(o, 2));
    BT(bt_tune_options_set_rounds(o, 1));
    engine_step st[3];
    const uint64_t t[7] = {(uintptr_t)x, (uintptr_t)p, (uintptr_t)w, (uintptr_t)h,
                           (uintptr_t)g, (uintptr_t)b, (uintptr_t)y};
    if (engine_steps_init(st, dev, o, &dm, t, &g_diag)) {
        fprintf(stderr, "engine_opencl: %s\n", g_diag.msg);
        return 1;
    }
    bt_tune_options_destroy(o);
    bt_launch_options lo = BT_LAUNCH_OPTIONS_INIT;
    lo.stream = q;
    double t0 = engine_now_us();
    for (int it = 0; it < 2; it++)
        if (engine_steps_launch(st, &lo, &g_diag))
            return 1;
    CL(clEnqueueReadBuffer(q, y, CL_TRUE, 0, ny * 4, hy, 0, NULL, NULL));
    double err1 = engine_error(&dm, hy, ref);
    if (engine_row_step(&dm) > 1)
        printf("engine_opencl: the host checks every %d-th row (its double GEMM would take minutes)\n",
               engine_row_step(&dm));
    printf("engine_opencl: %dx%dx%d fp32, dispatch on the engine's queue: %.1f ms, max error "
           "%.2e\n", dm.M, dm.K, dm.N, (engine_now_us() - t0) / 1e3, err1);

    float zero = 0;
    CL(clEnqueueFillBuffer(q, y, &zero, sizeof zero, 0, ny * 4, 0, NULL, NULL));
    if (engine_steps_lookup(st, &g_diag))
        return 1;
    for (int i = 0; i < 3; i++)
        own_launch(&st[i], q);
    CL(clEnqueueReadBuffer(q, y, CL_TRUE, 0, ny * 4, hy, 0, NULL, NULL));
    double err2 = engine_error(&dm, hy, ref);
    printf("engine_opencl: lookup + own clEnqueueNDRangeKernel: max error %.2e\n", err2);
    engine_steps_free(st);
    bt_device_destroy(dev);
    cl_mem all[] = {x, p, w, h, g, b, y};
    for (int i = 0; i < 7; i++)
        CL(clReleaseMemObject(all[i])); /* still the engine's: blocktune released none */
    CL(clReleaseCommandQueue(q));
    CL(clReleaseContext(ctx));
    free(hx), free(hw), free(hg), free(hb), free(hy), free(ref);
    int ok = err1 < 1e-3 && err2 < 1e-3;
    printf("engine_opencl: %s\n", ok ? "ok" : "WRONG RESULTS");
    return ok ? 0 : 1;
}
