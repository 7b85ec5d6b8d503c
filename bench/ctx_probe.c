/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctx_probe.c — what the CUDA driver does with a launch whose current context is not the one
 * its function and stream belong to, and what asking for the current context costs: the facts
 * behind the CUDA backend's launch without cuCtxGetCurrent (src/backends/cuda/cuda.c,
 * launch_fast). Context A (the primary context) loads a kernel that writes 1 and owns a stream;
 * then the kernel is launched on A's stream (1) with another context B current, (2) with none
 * current, (3) with A current, and on the legacy stream with B current (4); each launch's
 * CUresult, and whether the kernel ran (the flag read back with A current). Then 10^6 calls of
 * cuCtxGetCurrent timed, and cuLaunchKernel with A current. One JSON object on stdout.
 *   build: cc -O2 -I$CUDA/include bench/ctx_probe.c -o build/bt_ctx_probe -L$CUDA/lib64/stubs -lcuda
 */
#include <cuda.h>
#include <stdio.h>
#include <time.h>

static const char *ptx =
    ".version 7.0\n.target sm_50\n.address_size 64\n"
    ".visible .entry setone(.param .u64 p)\n{\n .reg .u64 %a;\n .reg .u32 %v;\n"
    " ld.param.u64 %a, [p];\n cvta.to.global.u64 %a, %a;\n mov.u32 %v, 1;\n"
    " st.global.u32 [%a], %v;\n ret;\n}\n";

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            printf("{\"error\": \"%s = %d\"}\n", #x, (int)r_);                                     \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

static CUdeviceptr flag;
static CUfunction fn;
static CUcontext A;

/* Launches fn on s with `cur` current (NULL: none), then reads the flag with A current. */
static int trial(CUcontext cur, CUstream s, int *ran)
{
    unsigned zero = 0, got = 0;
    cuCtxSetCurrent(A);
    cuMemcpyHtoD(flag, &zero, 4);
    cuCtxSetCurrent(cur);
    void *params[] = {&flag};
    CUresult r = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, params, NULL);
    cuCtxSetCurrent(A);
    cuCtxSynchronize();
    cuMemcpyDtoH(&got, flag, 4);
    *ran = got == 1;
    return (int)r;
}

int main(void)
{
    CUdevice dev;
    CUcontext B;
    CUmodule mod;
    CUstream sA;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&A, dev));
    CK(cuCtxSetCurrent(A));
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&fn, mod, "setone"));
    CK(cuStreamCreate(&sA, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&flag, 4));
    CK(cuCtxCreate(&B, NULL, 0, dev)); /* current now */
    int ran[4], r[4];
    r[0] = trial(B, sA, &ran[0]);
    r[1] = trial(NULL, sA, &ran[1]);
    r[2] = trial(A, sA, &ran[2]);
    r[3] = trial(B, CU_STREAM_LEGACY, &ran[3]);
    CK(cuCtxSetCurrent(A));
    enum { N = 1000000 };
    CUcontext c;
    double t0 = now();
    for (int i = 0; i < N; i++)
        cuCtxGetCurrent(&c);
    double get_ns = (now() - t0) / N * 1e9;
    void *params[] = {&flag};
    double best = 1e9;
    for (int round = 0; round < 200; round++) {
        CK(cuStreamSynchronize(sA));
        t0 = now();
        for (int i = 0; i < 64; i++)
            cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, sA, params, NULL);
        double us = (now() - t0) / 64 * 1e6;
        if (us < best)
            best = us;
    }
    CK(cuStreamSynchronize(sA));
    int ver = 0;
    cuDriverGetVersion(&ver);
    printf("{\"driver\": %d,\n \"B_current_A_stream\": {\"result\": %d, \"ran\": %d},\n"
           " \"none_current_A_stream\": {\"result\": %d, \"ran\": %d},\n"
           " \"A_current_A_stream\": {\"result\": %d, \"ran\": %d},\n"
           " \"B_current_legacy_stream\": {\"result\": %d, \"ran\": %d},\n"
           " \"cuCtxGetCurrent_ns\": %.1f, \"cuLaunchKernel_min_batch_us\": %.3f}\n",
           ver, r[0], ran[0], r[1], ran[1], r[2], ran[2], r[3], ran[3], get_ns, best);
    cuCtxDestroy(B);
    return 0;
}
