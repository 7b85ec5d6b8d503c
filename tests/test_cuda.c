/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cuda.c — the CUDA backend: error names, loading (a missing driver, the toolkit's stub),
 * exact occupancy against known cases, the ptxas -v parser against NVRTC 13's real wording, NVRTC
 * compiles without a device (defines, resources, errors naming the line, 8 programs from 4
 * threads, sm_90a, the small-M GEMM kernels without spills), and the device path through the
 * vtable: listing and info, buffers, compile + load + launch checked exactly against the host,
 * timers, cache flushing, dynamic shared memory above 48 KiB, graph-timed launches, refused
 * launches, corrupt blobs, and a faulting kernel after which every call fails cleanly.
 *
 * The NVRTC tests need libnvrtc (skipped with the reason otherwise). The device tests run on the
 * first CUDA GPU; on a machine without one they print "SKIPPED: no CUDA device (...)" and run
 * against tests/mock/mock_cuda.c, a host-only imitation of the driver, instead — set
 * BLOCKTUNE_CUDA_LIBRARY to choose the driver library yourself. Built as a standalone executable
 * (build/test_cuda) so that it can be run as is on a GPU machine.
 */
#include "test_util.h"

#include "backends/cuda/cuda.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/occupancy.h"
#include "backends/device.h"
#include "core/kdesc.h"
#include "core/plan.h"
#include "core/util.h"
#include "engine/build.h"
#include "engine/engine.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The device under test (opened once for the device group) and whether it is the mock. */
static bt_device *g_dev;
static const bt__backend_iface *g_if;
static bt__bdev *g_bd;
static int g_mock;
static bool g_nvrtc;
static bt_diag g_nvrtc_why;

/* xorshift64*: reproducible random data without touching rand()'s global state. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dULL;
}

#define NEED_NVRTC()                                                                               \
    do {                                                                                           \
        if (!g_nvrtc) {                                                                            \
            printf("SKIPPED: no NVRTC (%s)\n", g_nvrtc_why.msg);                                   \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static const char *vadd_src =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n";

/* The kernels the mock driver imitates, in one CUDA source. */
static const char *kernels_src =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n"
    "extern \"C\" __global__ void inc(int *p, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        p[i] += 1;\n"
    "}\n"
    "extern \"C\" __global__ void rev_dyn(const int *in, int *out)\n"
    "{\n"
    "    extern __shared__ int tmp[];\n"
    "    int l = threadIdx.x, n = blockDim.x, base = blockIdx.x * n;\n"
    "    tmp[l] = in[base + l];\n"
    "    __syncthreads();\n"
    "    out[base + l] = tmp[n - 1 - l];\n"
    "}\n"
    "extern \"C\" __global__ void oob(int *p)\n"
    "{\n"
    "    p[(size_t)1 << 40] = 1;\n"
    "}\n";

/* Compiles through the device's vtable (backend.h: compile): src with its defines, options, the
 * names to resolve and the target (NULL: the device's own). */
static bt_status dev_compile(const char *src, const char *const *defs, int ndefs, const char *opts,
                             const char *const *names, int nnames, const char *target,
                             bt__blob *blob, char **log)
{
    bt__compile_req req = {.src = src, .defines = defs, .ndefines = ndefs, .options = opts,
                           .target = target, .names = names, .nnames = nnames};
    return g_if->compile(g_bd, &req, blob, log);
}

/* ---------------------------------------------------------------------------------------------
 * Names and loading (no device)
 * ------------------------------------------------------------------------------------------- */

static void test_error_and_arch_names(void **state)
{
    (void)state;
    assert_string_equal(bt__cuda_error_name(700), "CUDA_ERROR_ILLEGAL_ADDRESS");
    assert_string_equal(bt__cuda_error_name(34), "CUDA_ERROR_STUB_LIBRARY");
    assert_string_equal(bt__cuda_error_name(0), "CUDA_SUCCESS");
    assert_string_equal(bt__cuda_error_name(123456), "CUDA_ERROR_UNKNOWN_CODE");
    assert_string_equal(bt__nvrtc_error_name(6), "NVRTC_ERROR_COMPILATION");
    assert_string_equal(bt__nvrtc_error_name(5), "NVRTC_ERROR_INVALID_OPTION");
    assert_string_equal(bt__nvrtc_error_name(-1), "NVRTC_ERROR_UNKNOWN");
    assert_string_equal(bt__cuda_arch_name(9, 0), "hopper");
    assert_string_equal(bt__cuda_arch_name(8, 0), "ampere");
    assert_string_equal(bt__cuda_arch_name(8, 6), "ampere");
    assert_string_equal(bt__cuda_arch_name(8, 9), "ada");
    assert_string_equal(bt__cuda_arch_name(7, 0), "volta");
    assert_string_equal(bt__cuda_arch_name(7, 5), "turing");
    assert_string_equal(bt__cuda_arch_name(10, 0), "blackwell");
    assert_string_equal(bt__cuda_arch_name(12, 0), "blackwell");
    assert_string_equal(bt__cuda_arch_name(42, 0), "unknown");
}

/* Loads the backend directly with $BLOCKTUNE_CUDA_LIBRARY set to path (restored afterwards). */
static bt_status load_with(const char *path, void **ctx, bt_diag *d)
{
    char *old = getenv(BT__CUDA_LIBRARY_ENV) ? strdup(getenv(BT__CUDA_LIBRARY_ENV)) : NULL;
    setenv(BT__CUDA_LIBRARY_ENV, path, 1);
    bt_status st = bt__backend_cuda.load(ctx, d);
    if (old) {
        setenv(BT__CUDA_LIBRARY_ENV, old, 1);
        free(old);
    } else {
        unsetenv(BT__CUDA_LIBRARY_ENV);
    }
    return st;
}

static void test_missing_driver(void **state)
{
    (void)state;
    void *ctx = (void *)&ctx;
    bt_diag d = {0};
    assert_int_equal(load_with("/nonexistent/libcuda-blocktune-test.so.1", &ctx, &d),
                     BT_NO_BACKEND);
    assert_null(ctx);
    assert_non_null(strstr(d.msg, "/nonexistent/libcuda-blocktune-test.so.1"));
    assert_non_null(strstr(d.msg, BT__CUDA_LIBRARY_ENV));
}

/* The toolkit's stub exports every entry point but is no driver: cuInit says so, and the backend
 * must not list it. */
static void test_stub_driver_refused(void **state)
{
    (void)state;
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    if (access(stub, R_OK) != 0) {
        printf("SKIPPED: no %s on this machine\n", stub);
        skip();
    }
    void *ctx = (void *)&ctx;
    bt_diag d = {0};
    assert_int_equal(load_with(stub, &ctx, &d), BT_NO_BACKEND);
    assert_null(ctx);
    assert_non_null(strstr(d.msg, "stub"));
    assert_non_null(strstr(d.msg, "cuInit: CUDA_ERROR_STUB_LIBRARY (34)"));
}

/* ---------------------------------------------------------------------------------------------
 * Occupancy (no device)
 * ------------------------------------------------------------------------------------------- */

/* H100/H200 as the driver reports them (sm_90). */
static bt_gpu hopper(void)
{
    bt_gpu g;
    memset(&g, 0, sizeof g);
    g.cc_major = 9;
    g.cc_minor = 0;
    g.warp_size = 32;
    g.max_threads_per_sm = 2048;
    g.max_warps_per_sm = 64;
    g.max_blocks_per_sm = 32;
    g.max_threads_per_block = 1024;
    g.regs_per_sm = 65536;
    g.regs_per_block = 65536;
    g.max_regs_per_thread = 255;
    g.reg_alloc_unit = 256;
    g.smem_per_sm = 233472;
    g.smem_per_block = 49152;
    g.smem_per_block_optin = 232448;
    g.smem_reserved_per_block = 1024;
    return g;
}

#define OCC(g, t, r, s, want, why)                                                                 \
    do {                                                                                           \
        const char *lim_ = NULL;                                                                   \
        int got_ = bt__cuda_occupancy(&(g), t, r, s, &lim_);                                       \
        if (got_ != (want) || !lim_ || strcmp(lim_, why) != 0)                                     \
            fail_msg("occupancy(%d threads, %d regs, %lld smem) = %d (%s), want %d (%s)", t, r,    \
                     (long long)(s), got_, lim_ ? lim_ : "NULL", want, why);                       \
    } while (0)

static void test_occupancy_hopper(void **state)
{
    (void)state;
    bt_gpu g = hopper();
    OCC(g, 256, 32, 0, 8, "warps");              /* 2048 threads per SM */
    OCC(g, 256, 128, 0, 2, "registers");         /* 4096 regs per warp, 16 warps per SM */
    OCC(g, 128, 32, 96 * 1024, 2, "smem");       /* 97 KiB per block in 228 KiB */
    OCC(g, 1024, 64, 0, 1, "registers");
    OCC(g, 32, 16, 0, 32, "blocks");
    OCC(g, 100, 33, 0, 12, "registers");         /* 33 x 32 rounds up to 1280 per warp */
    OCC(g, 64, 0, 0, 32, "warps");               /* a tie goes to the first: warps */
    OCC(g, 128, 32, 227 * 1024, 1, "smem");      /* the opt-in maximum */
    OCC(g, 128, 32, 48 * 1024, 4, "smem");       /* 49 KiB per block */
    OCC(g, 2048, 32, 0, 0, "threads_per_block");
    OCC(g, 256, 256, 0, 0, "regs_per_thread");
    OCC(g, 1024, 72, 0, 0, "regs_per_block");    /* 2304 x 32 warps > 65536 */
    OCC(g, 128, 32, 228 * 1024, 0, "smem_per_block");
    OCC(g, 0, 32, 0, 0, "invalid");
    OCC(g, 128, -1, 0, 0, "invalid");
    OCC(g, 128, 32, -5, 0, "invalid");
    assert_int_equal(bt__cuda_occupancy(NULL, 128, 32, 0, NULL), 0);
    bt_gpu empty;
    memset(&empty, 0, sizeof empty);
    OCC(empty, 128, 32, 0, 0, "invalid");
}

static void test_occupancy_other_archs(void **state)
{
    (void)state;
    /* A100 (sm_80): 164 KiB of shared memory per SM. */
    bt_gpu a100 = hopper();
    a100.cc_major = 8;
    a100.smem_per_sm = 167936;
    a100.smem_per_block_optin = 166912;
    OCC(a100, 128, 32, 48 * 1024, 3, "smem");
    OCC(a100, 256, 32, 0, 8, "warps");
    /* Turing (sm_75): 1024 threads and 16 blocks per SM, 64 KiB, 256-byte granularity, no
     * reservation. */
    bt_gpu t4 = hopper();
    t4.cc_major = 7;
    t4.cc_minor = 5;
    t4.max_threads_per_sm = 1024;
    t4.max_warps_per_sm = 32;
    t4.max_blocks_per_sm = 16;
    t4.smem_per_sm = 65536;
    t4.smem_per_block_optin = 65536;
    t4.smem_reserved_per_block = 0;
    OCC(t4, 256, 32, 0, 4, "warps");
    OCC(t4, 32, 32, 0, 16, "blocks");
    OCC(t4, 64, 32, 4097, 15, "smem"); /* 4097 rounds up to 4352 */
    /* Fields the table left 0 take CUDA's fixed values (warp 32, unit 256, 255 per thread, the
     * 1 KiB reservation from sm_80 on). */
    bt_gpu sparse = hopper();
    sparse.warp_size = 0;
    sparse.reg_alloc_unit = 0;
    sparse.max_regs_per_thread = 0;
    sparse.smem_reserved_per_block = 0;
    OCC(sparse, 256, 128, 0, 2, "registers");
    OCC(sparse, 128, 32, 96 * 1024, 2, "smem");
}

/* ---------------------------------------------------------------------------------------------
 * ptxas -v parsing (no device): logs captured from NVRTC 13.0 (-arch=sm_90 --ptxas-options=-v)
 * ------------------------------------------------------------------------------------------- */

static const char *log13 =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'k2' for 'sm_90'\n"
    "ptxas info    : Function properties for k2\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 8 registers, used 0 barriers\n"
    "ptxas info    : Compile time = 6.438 ms\n"
    "ptxas info    : Compiling entry function 'k' for 'sm_90'\n"
    "ptxas info    : Function properties for k\n"
    "ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 "
    "bytes smem\n"
    "ptxas info    : Compile time = 115.715 ms";

/* A mangled template kernel with spills and a non-inlined callee printed after it. */
static const char *log13_spill =
    "ptxas warning : For profile sm_90 adjusting per thread register count of 16 to lower bound "
    "of 24\n"
    "ptxas info    : Overriding maximum register limit 256 for '_Z2ktILi3EEvPf' with  24 of "
    "maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z2ktILi3EEvPf' for 'sm_90'\n"
    "ptxas info    : Function properties for _Z2ktILi3EEvPf\n"
    "ptxas         .     1600 bytes stack frame, 2300 bytes spill stores, 2672 bytes spill loads\n"
    "ptxas info    : Used 24 registers, used 0 barriers, 1600 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 174.618 ms\n"
    "ptxas info    : Function properties for _Z1fPfi\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";

/* The CUDA 11/12 wording: an indented stack line and cmem terms. */
static const char *log12 =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function '_Z4axpyfPfS_i' for 'sm_80'\n"
    "ptxas info    : Function properties for _Z4axpyfPfS_i\n"
    "    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    "ptxas info    : Used 10 registers, 2048 bytes smem, 376 bytes cmem[0]\n";

static void test_resources_from_logs(void **state)
{
    (void)state;
    int regs = 0;
    int64_t spill = 0, smem = 0, stack = 0;
    assert_int_equal(bt__nvrtc_resources(log13, "k", &regs, &spill, &smem, &stack), BT_OK);
    assert_int_equal(regs, 32);
    assert_int_equal(spill, 0);
    assert_int_equal(smem, 1024);
    assert_int_equal(stack, 256);
    assert_int_equal(bt__nvrtc_resources(log13, "k2", &regs, &spill, &smem, &stack), BT_OK);
    assert_int_equal(regs, 8);
    assert_int_equal(smem, 0);
    assert_int_equal(stack, 0);

    assert_int_equal(
        bt__nvrtc_resources(log13_spill, "_Z2ktILi3EEvPf", &regs, &spill, &smem, &stack), BT_OK);
    assert_int_equal(regs, 24);
    assert_int_equal(spill, 2300 + 2672);
    assert_int_equal(stack, 1600);
    assert_int_equal(smem, 0);
    /* The callee has properties but is no entry. */
    assert_int_equal(bt__nvrtc_resources(log13_spill, "_Z1fPfi", &regs, &spill, &smem, &stack),
                     BT_NOT_FOUND);
    assert_int_equal(regs, -1);

    assert_int_equal(bt__nvrtc_resources(log12, "_Z4axpyfPfS_i", &regs, &spill, &smem, &stack),
                     BT_OK);
    assert_int_equal(regs, 10);
    assert_int_equal(spill, 8);
    assert_int_equal(smem, 2048);
    assert_int_equal(stack, 8);

    /* A prefix of a name is not the name; NULL out-pointers are fine. */
    assert_int_equal(bt__nvrtc_resources(log13, "k3", &regs, NULL, NULL, NULL), BT_NOT_FOUND);
    assert_int_equal(bt__nvrtc_resources(log12, "_Z4axpy", NULL, NULL, NULL, NULL), BT_NOT_FOUND);
    assert_int_equal(bt__nvrtc_resources(log13, "k", NULL, NULL, NULL, NULL), BT_OK);
    assert_int_equal(bt__nvrtc_resources("", "k", &regs, NULL, NULL, NULL), BT_NOT_FOUND);
    assert_int_equal(bt__nvrtc_resources(NULL, "k", &regs, NULL, NULL, NULL), BT_INVALID_ARG);
    assert_int_equal(bt__nvrtc_resources(log13, NULL, &regs, NULL, NULL, NULL), BT_INVALID_ARG);
}

/* ---------------------------------------------------------------------------------------------
 * NVRTC (no device)
 * ------------------------------------------------------------------------------------------- */

static void test_nvrtc_compile_with_defines(void **state)
{
    (void)state;
    NEED_NVRTC();
    const char *src = "typedef ELEM_T elem;\n"
                      "extern \"C\" __global__ void scale(elem *o)\n"
                      "{\n"
                      "    __shared__ elem tile[TILE];\n"
                      "    tile[threadIdx.x % TILE] = (elem)threadIdx.x * FACTOR;\n"
                      "    __syncthreads();\n"
                      "    o[threadIdx.x] = tile[(threadIdx.x + 1) % TILE];\n"
                      "}\n";
    const char *defs[] = {"ELEM_T=unsigned int", "TILE=300", "FACTOR=3"};
    bt__blob cubin = {(void *)&cubin, 99};
    char *log = NULL;
    bt_diag d = {0};
    bt_status st = bt__nvrtc_compile(src, defs, 3, "  -DUNUSED=1  ", 9, 0, false, &cubin, &log, &d);
    if (st != BT_OK)
        fprintf(stderr, "%s\n%s\n", d.msg, log ? log : "");
    assert_int_equal(st, BT_OK);
    assert_non_null(cubin.data);
    assert_true(cubin.size > 64);
    assert_memory_equal(cubin.data, "\x7f" "ELF", 4);
    assert_non_null(log);
    if (!strstr(log, "for 'sm_90'"))
        fail_msg("no ptxas line for sm_90 in the NVRTC log (%zu bytes):\n%s", strlen(log), log);
    int regs = -1;
    int64_t spill = -1, smem = -1, stack = -1;
    assert_int_equal(bt__nvrtc_resources(log, "scale", &regs, &spill, &smem, &stack), BT_OK);
    assert_true(regs > 0 && regs <= 255);
    assert_int_equal(smem, 300 * 4); /* TILE and T both reached the compiler */
    assert_int_equal(spill, 0);
    free(cubin.data);
    free(log);

    /* Another target: the log names it. */
    const char *defs2[] = {"ELEM_T=double", "TILE=16", "FACTOR=2"};
    assert_int_equal(bt__nvrtc_compile(src, defs2, 3, NULL, 8, 0, false, &cubin, &log, NULL),
                     BT_OK);
    assert_non_null(strstr(log, "for 'sm_80'"));
    assert_int_equal(bt__nvrtc_resources(log, "scale", &regs, &spill, &smem, &stack), BT_OK);
    assert_int_equal(smem, 16 * 8);
    free(cubin.data);
    free(log);

    /* A malformed define is refused before NVRTC, with a log. */
    const char *bad[] = {"=3"};
    assert_int_equal(bt__nvrtc_compile(src, bad, 1, NULL, 9, 0, false, &cubin, &log, &d),
                     BT_INVALID_ARG);
    assert_null(cubin.data);
    assert_non_null(strstr(log, "'=3'"));
    free(log);
}

static void test_nvrtc_resources_live(void **state)
{
    (void)state;
    NEED_NVRTC();
    /* Forcing 24 registers on a kernel that keeps 48 floats live makes ptxas spill. */
    const char *src = "extern \"C\" __global__ void heavy(float *a)\n"
                      "{\n"
                      "    float v[48];\n"
                      "    for (int j = 0; j < 48; j++) v[j] = a[threadIdx.x * 48 + j];\n"
                      "    for (int r = 0; r < 10; r++)\n"
                      "        for (int j = 0; j < 48; j++) v[j] = v[j] * v[(j + r) % 48] + 1.0f;\n"
                      "    float s = 0;\n"
                      "    for (int j = 0; j < 48; j++) s += v[j];\n"
                      "    a[threadIdx.x] = s;\n"
                      "}\n";
    bt__blob cubin = {0};
    char *log = NULL;
    assert_int_equal(
        bt__nvrtc_compile(src, NULL, 0, "--maxrregcount=24", 9, 0, false, &cubin, &log, NULL),
        BT_OK);
    int regs = -1;
    int64_t spill = -1, smem = -1, stack = -1;
    assert_int_equal(bt__nvrtc_resources(log, "heavy", &regs, &spill, &smem, &stack), BT_OK);
    assert_true(regs > 0 && regs <= 24);
    assert_true(spill > 0);
    assert_true(stack > 0);
    free(cubin.data);
    free(log);
}

static void test_cubin_resources_match_ptxas(void **state)
{
    (void)state;
    NEED_NVRTC();
    const char *src = "extern \"C\" __global__ void probe(float *o, int n)\n"
                      "{\n"
                      "    __shared__ float s[300];\n"
                      "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    s[threadIdx.x] = i;\n"
                      "    __syncthreads();\n"
                      "    if (i < n) o[i] = s[255 - threadIdx.x];\n"
                      "}\n";
    bt__blob cubin = {0};
    char *log = NULL;
    assert_int_equal(bt__nvrtc_compile(src, NULL, 0, NULL, 9, 0, false, &cubin, &log, NULL), BT_OK);
    int lr = 0, cr = 0;
    int64_t ls = 0, cs = 0, cf = 0;
    assert_int_equal(bt__nvrtc_resources(log, "probe", &lr, NULL, &ls, NULL), BT_OK);
    assert_int_equal(bt__cubin_resources(cubin.data, cubin.size, "probe", &cr, &cf, &cs), BT_OK);
    assert_int_equal(cr, lr);
    assert_int_equal(cs, 1200);
    assert_int_equal(cs, ls);
    assert_int_equal(bt__cubin_resources(cubin.data, cubin.size, "nope", &cr, NULL, NULL), BT_NOT_FOUND);
    assert_int_equal(bt__cubin_resources(cubin.data, 40, "probe", &cr, NULL, NULL), BT_INVALID_ARG);
    ((unsigned char *)cubin.data)[0x28] ^= 0x7f; /* a wild section table offset */
    assert_int_equal(bt__cubin_resources(cubin.data, cubin.size, "probe", &cr, NULL, NULL), BT_CORRUPT);
    free(cubin.data);
    free(log);
}

static void test_nvrtc_compile_errors(void **state)
{
    (void)state;
    NEED_NVRTC();
    const char *src = "extern \"C\" __global__ void bad(int *o)\n"
                      "{\n"
                      "    o[0] = undeclared_name_xyz;\n"
                      "}\n";
    bt__blob cubin = {(void *)&cubin, 99};
    char *log = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__nvrtc_compile(src, NULL, 0, NULL, 9, 0, false, &cubin, &log, &d),
                     BT_COMPILE);
    assert_null(cubin.data);
    assert_int_equal(cubin.size, 0);
    assert_non_null(log);
    assert_non_null(strstr(log, "nvrtcCompileProgram: NVRTC_ERROR_COMPILATION (6)"));
    assert_non_null(strstr(log, "kernel.cu(3)")); /* the line of the error */
    assert_non_null(strstr(log, "undeclared_name_xyz"));
    assert_non_null(strstr(d.msg, "kernel.cu(3)"));
    assert_non_null(strstr(d.msg, "sm_90"));
    free(log);

    /* An option NVRTC does not know is a compile error too, named in the log. */
    assert_int_equal(bt__nvrtc_compile(vadd_src, NULL, 0, "--no-such-option", 9, 0, false, &cubin,
                                       &log, &d),
                     BT_COMPILE);
    assert_non_null(strstr(log, "NVRTC_ERROR_INVALID_OPTION"));
    assert_non_null(strstr(log, "--no-such-option"));
    free(log);

    /* An architecture NVRTC 13 no longer targets. */
    assert_int_equal(bt__nvrtc_compile(vadd_src, NULL, 0, NULL, 3, 5, false, &cubin, &log, &d),
                     BT_UNSUPPORTED);
    assert_non_null(strstr(log, "sm_35"));
    free(log);
    assert_int_equal(bt__nvrtc_compile(NULL, NULL, 0, NULL, 9, 0, false, &cubin, &log, &d),
                     BT_INVALID_ARG);
    assert_non_null(log);
    free(log);
}

/* Each job compiles one program whose static shared memory is K ints, K its own define, so that a
 * job that got another's options would show it. */
typedef struct compile_job {
    int k;
    bool via_device; /* through the device's vtable compile() instead of bt__nvrtc_compile */
    bt__blob blob;
    bt_status st;
    char *log;
} compile_job;

static const char *setk_fmt = "/* program %d */\n"
                              "extern \"C\" __global__ void setk(int *o)\n"
                              "{\n"
                              "    __shared__ int s[K];\n"
                              "    s[threadIdx.x %% K] = K * 3;\n"
                              "    __syncthreads();\n"
                              "    o[blockIdx.x * blockDim.x + threadIdx.x] = s[0] + EXTRA;\n"
                              "}\n";

static void *compile_thread(void *arg)
{
    compile_job *jobs = arg; /* two jobs per thread */
    for (int j = 0; j < 2; j++) {
        char src[512], def[32];
        snprintf(src, sizeof src, setk_fmt, jobs[j].k);
        snprintf(def, sizeof def, "K=%d", jobs[j].k);
        const char *defs[] = {def};
        if (jobs[j].via_device)
            jobs[j].st = dev_compile(src, defs, 1, "-DEXTRA=1", NULL, 0, NULL, &jobs[j].blob,
                                     &jobs[j].log);
        else
            jobs[j].st = bt__nvrtc_compile(src, defs, 1, "-DEXTRA=1", 9, 0, false, &jobs[j].blob,
                                           &jobs[j].log, NULL);
    }
    return NULL;
}

/* Resources of `entry` from a compile: the log's ptxas report, else the CUBIN inside the blob (an
 * NVRTC build seen on the H200 drops the report from logs after a failed compile in the process;
 * the CUBIN always has them). */
static bt_status resources_of(const char *log, const bt__blob *blob, const char *entry, int *regs,
                              int64_t *smem)
{
    if (bt__nvrtc_resources(log, entry, regs, NULL, smem, NULL) == BT_OK)
        return BT_OK;
    const unsigned char *b = blob->data;
    for (size_t off = 0; b && off + 4 <= blob->size && off < 256; off++)
        if (!memcmp(b + off, "\x7f" "ELF", 4))
            return bt__cubin_resources(b + off, blob->size - off, entry, regs, NULL, smem);
    return BT_NOT_FOUND;
}

/* Runs 8 compiles on 4 threads and checks each one's resources. */
static void compile_8_on_4(compile_job *jobs, bool via_device)
{
    memset(jobs, 0, 8 * sizeof *jobs);
    for (int i = 0; i < 8; i++) {
        jobs[i].k = 100 + 7 * i;
        jobs[i].via_device = via_device;
    }
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        assert_int_equal(pthread_create(&th[t], NULL, compile_thread, &jobs[2 * t]), 0);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    for (int i = 0; i < 8; i++) {
        if (jobs[i].st != BT_OK)
            fprintf(stderr, "job %d: %s\n%s\n", i, bt_err_name(jobs[i].st), jobs[i].log);
        assert_int_equal(jobs[i].st, BT_OK);
        assert_non_null(jobs[i].log);
        int regs = 0;
        int64_t smem = 0;
        assert_int_equal(resources_of(jobs[i].log, &jobs[i].blob, "setk", &regs, &smem), BT_OK);
        assert_int_equal(smem, 4 * jobs[i].k);
    }
}

static void test_nvrtc_from_threads(void **state)
{
    (void)state;
    NEED_NVRTC();
    compile_job jobs[8];
    compile_8_on_4(jobs, false);
    for (int i = 0; i < 8; i++) {
        assert_memory_equal(jobs[i].blob.data, "\x7f" "ELF", 4);
        free(jobs[i].blob.data);
        free(jobs[i].log);
    }
}

/* wgmma exists only on the architecture-specific sm_90a target. */
static void test_nvrtc_sm90a(void **state)
{
    (void)state;
    NEED_NVRTC();
    const char *src = "extern \"C\" __global__ void w(int *o)\n"
                      "{\n"
                      "    asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
                      "    o[0] = 1;\n"
                      "}\n";
    bt__blob cubin = {0};
    char *log = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__nvrtc_compile(src, NULL, 0, NULL, 9, 0, false, &cubin, &log, &d),
                     BT_COMPILE);
    assert_non_null(strstr(log, "wgmma"));
    free(log);
    assert_int_equal(bt__nvrtc_compile(src, NULL, 0, NULL, 9, 0, true, &cubin, &log, &d), BT_OK);
    /* the target shows in the ptxas report when NVRTC gives one, and in the CUBIN's flags always */
    assert_true(strstr(log, "for 'sm_90a'") || strstr(log, "ptxas") == NULL);
    free(cubin.data);
    free(log);
    /* The target's name is "sm_90a" both ways, and an options string never asks for it. */
    char name[16];
    bt__nvrtc_target_name(9, 0, true, name, sizeof name);
    assert_string_equal(name, "sm_90a");
    bt__nvrtc_target_name(10, 0, false, name, sizeof name);
    assert_string_equal(name, "sm_100");
    int maj = 0, min = 0;
    bool a = false;
    assert_true(bt__nvrtc_target_parse("sm_90a", &maj, &min, &a) && maj == 9 && min == 0 && a);
    assert_true(bt__nvrtc_target_parse("sm_120", &maj, &min, &a) && maj == 12 && min == 0 && !a);
    assert_false(bt__nvrtc_target_parse("sm_9", &maj, &min, &a));
    assert_false(bt__nvrtc_target_parse("sm_90b", &maj, &min, &a));
    assert_false(bt__nvrtc_target_parse("compute_90", &maj, &min, &a));
    assert_false(bt__nvrtc_target_parse(NULL, &maj, &min, &a));
    assert_int_equal(bt__nvrtc_compile(src, NULL, 0, "--bt-sm90a", 9, 0, false, &cubin, &log, &d),
                     BT_COMPILE); /* the old private token is an unknown option now */
    free(log);
}

/* ---------------------------------------------------------------------------------------------
 * The small-M GEMMs (kernels/specs/gemm_smallm*.json) compile for sm_90 / sm_90a
 * ------------------------------------------------------------------------------------------- */

/* A built-in spec (kernels/specs/NAME.json). */
static bt_kdesc *smallm_spec(const char *name)
{
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    if (bt_kdesc_builtin(name, &k, &d) != BT_OK)
        fail_msg("%s: %s", name, d.msg);
    return k;
}

/* One compile of a config: the defines blocktune passes, and what came of it. */
/* Whether k's CUDA source is built for Hopper's architecture-specific target (spec "sm90a"). */
static bool needs_sm90a(const bt_kdesc *k)
{
    const bt__ksource *src = bt__kdesc_source(k, "cuda");
    return src && !strcmp(src->target, "sm_90a");
}

typedef struct sm_job {
    const bt_kdesc *k;
    const char *src;
    char defs[BT__MAX_DEFINES][96];
    int nd;
    char key[1400]; /* the defines, SPLIT_K as its finish variant */
    char what[300];
    int64_t est_regs;
    bt_status st;
    int regs;
    int64_t spill, stack;
    bool warned;
} sm_job;

typedef struct sm_pool {
    sm_job *jobs;
    size_t n, next;
    pthread_mutex_t mu;
} sm_pool;

static void *sm_worker(void *arg)
{
    sm_pool *P = arg;
    for (;;) {
        pthread_mutex_lock(&P->mu);
        size_t i = P->next++;
        pthread_mutex_unlock(&P->mu);
        if (i >= P->n)
            return NULL;
        sm_job *j = &P->jobs[i];
        const char *dp[BT__MAX_DEFINES];
        for (int d = 0; d < j->nd; d++)
            dp[d] = j->defs[d];
        bt__blob cubin = {0};
        char *log = NULL;
        j->st = bt__nvrtc_compile(j->src, dp, j->nd, NULL, 9, 0, needs_sm90a(j->k), &cubin, &log,
                                  NULL);
        j->regs = -1;
        j->spill = j->stack = -1;
        if (j->st == BT_OK) {
            j->warned = strcasestr(log, "warning") != NULL;
            if (bt__nvrtc_resources(log, j->k->entry, &j->regs, &j->spill, NULL, &j->stack) !=
                BT_OK) /* no ptxas report (bench/NOTES.md 22): the CUBIN's frame size */
                j->st = bt__cubin_resources(cubin.data, cubin.size, j->k->entry, &j->regs,
                                            &j->stack, NULL);
        }
        if (j->st != BT_OK || j->warned)
            fprintf(stderr, "%s:\n%s\n", j->what, log ? log : "(no log)");
        free(cubin.data);
        free(log);
    }
}

/* Compiles jobs[0..n) on up to 16 threads (the cores there are); their number. */
static int compile_all(sm_job *jobs, size_t n)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nth = cores < 1 ? 1 : cores > 16 ? 16 : (int)cores;
    sm_pool P = {jobs, n, 0, PTHREAD_MUTEX_INITIALIZER};
    pthread_t th[16];
    for (int t = 0; t < nth; t++)
        assert_int_equal(pthread_create(&th[t], NULL, sm_worker, &P), 0);
    for (int t = 0; t < nth; t++)
        pthread_join(th[t], NULL);
    return nth;
}

/* A compile that passes: no error or ptxas warning, no spills, no stack frame, and registers
 * within the spec's estimate + 24 (the model's occupancy depends on the estimate). */
static bool job_ok(const sm_job *j)
{
    return j->st == BT_OK && !j->warned && j->spill <= 0 && j->stack == 0 &&
           j->regs <= j->est_regs + 24;
}

static void job_print(const sm_job *j)
{
    printf("    %s %s: %s%s, %d regs (estimate %lld), %lld B spills, %lld B stack\n", j->k->name,
           j->what, bt_err_name(j->st), j->warned ? ", ptxas warning" : "", j->regs,
           (long long)j->est_regs, (long long)j->spill, (long long)j->stack);
}

/* The value of parameter `name` in c (`dflt` when the spec has no such parameter). */
static int64_t smallm_param(const bt_kdesc *k, const bt_config *c, const char *name, int64_t dflt)
{
    for (int i = 0; i < k->space.nparams; i++)
        if (!strcmp(k->space.params[i].name, name))
            return c->v[i];
    return dflt;
}

/* The finish variant of a config: no split, atomics, a cluster, a cluster and atomics, or the TMA
 * kernels' persistent grid (PERSIST > 0: its own end of unit, whatever SPLIT_K). */
static int smallm_variant(const bt_kdesc *k, const bt_config *c)
{
    int64_t sk = smallm_param(k, c, "SPLIT_K", 1), cl = smallm_param(k, c, "CLUSTER", 1);
    if (smallm_param(k, c, "PERSIST", 0) > 0)
        return 4;
    return sk == 1 ? 0 : cl == 1 ? 1 : sk == cl ? 2 : 3;
}

/* Appends a compile of ev's config unless one that differs at most in SPLIT_K's value (not in
 * its finish variant: SPLIT_K only enters the code through it) or, for the TMA kernels, in
 * num_stages (the ring's length: constants only) is there already. */
static void smallm_add(sm_job **jobs, size_t *n, const bt_kdesc *k, const char *src,
                       const bt__cfg_eval *ev, const bt_problem *p, const bt_gpu *g)
{
    sm_job j;
    memset(&j, 0, sizeof j);
    j.k = k, j.src = src, j.est_regs = ev->regs;
    j.nd = bt__build_defines(k, &ev->cfg, p, g, j.defs);
    snprintf(j.key, sizeof j.key, "%s v%d", k->name, smallm_variant(k, &ev->cfg));
    for (int d = 0; d < j.nd; d++)
        if (strncmp(j.defs[d], "SPLIT_K=", 8) &&
            (!needs_sm90a(k) || strncmp(j.defs[d], "num_stages=", 11))) {
            size_t len = strlen(j.key);
            snprintf(j.key + len, sizeof j.key - len, " %s", j.defs[d]);
        }
    for (size_t o = 0; o < *n; o++)
        if (!strcmp((*jobs)[o].key, j.key))
            return;
    bt__config_format(&k->space, &ev->cfg, " ", j.what, sizeof j.what);
    *jobs = realloc(*jobs, (*n + 1) * sizeof **jobs);
    assert_non_null(*jobs);
    (*jobs)[(*n)++] = j;
}

/* Which candidates of a plan smallm_collect adds: the heaviest per unit (tensor cores or CUDA
 * cores), per unit and finish variant, per BLOCK_N (the TMA kernels' slabs), per BLOCK_N and
 * finish variant, or all of them. */
enum { SM_PER_UNIT, SM_PER_VARIANT, SM_PER_TILE, SM_PER_TILE_VARIANT, SM_ALL };

/* The slot of a candidate under a pick_by (below 16). */
static int smallm_slot(const bt_kdesc *k, const bt__cfg_eval *ev, int pick_by)
{
    int v = smallm_variant(k, &ev->cfg), tile = 0;
    for (int64_t bn = smallm_param(k, &ev->cfg, "BLOCK_N", 64); bn > 64; bn /= 2)
        tile++;
    switch (pick_by) {
    case SM_PER_VARIANT:
        return v * 2 + ev->tensor_core;
    case SM_PER_TILE:
        return tile;
    case SM_PER_TILE_VARIANT:
        return v * 3 + tile;
    default:
        return ev->tensor_core;
    }
}

/* Adds candidates of k's plan for M×N×K: per slot (smallm_slot) the one with the most estimated
 * registers, then the most shared memory (the longest unrolled stage), or all of them. */
static void smallm_collect(const bt_kdesc *k, const char *src, const bt_gpu *g, int M, int N,
                           int K, const char *dtype, int out_fp32, int pick_by, sm_job **jobs,
                           size_t *n)
{
    bt_problem *p;
    bt_diag d = {0};
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "M", M, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "N", N, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "K", K, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "OUT_FP32", out_fp32, &d), BT_OK);
    assert_int_equal(bt_problem_set_dtype(p, dtype, &d), BT_OK);
    bt_plan *pl = NULL;
    assert_int_equal(bt_plan_create(k, p, g, NULL, &pl, &d), BT_OK);
    if (pl->ncand == 0)
        fail_msg("%s: no valid config at %dx%dx%d %s", k->name, M, N, K, dtype);
    const bt__cfg_eval *pick[16] = {0};
    for (size_t c = 0; c < pl->ncand; c++) {
        const bt__cfg_eval *ev = &pl->cand[c];
        int s = smallm_slot(k, ev, pick_by);
        if (pick_by == SM_ALL)
            smallm_add(jobs, n, k, src, ev, p, g);
        else if (!pick[s] || ev->regs > pick[s]->regs ||
                 (ev->regs == pick[s]->regs && ev->smem > pick[s]->smem))
            pick[s] = ev;
    }
    for (int s = 0; s < 16; s++)
        if (pick[s])
            smallm_add(jobs, n, k, src, pick[s], p, g);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
}

/* The register-streaming specs (sm_80+): every M class, 16-byte rows and element loads. By
 * default the heaviest per unit at M's classes 1, 4, 16 and 64, per unit and finish variant at
 * 4, the element loads at 1 and 64, bf16 at 1 and 64 (it differs from fp16 only in conversions
 * and the mma type), C in fp32 at 16. */
static void smallm_collect_reg(const bt_kdesc *k, const char *src, const bt_gpu *g, bool nt,
                               bool all, sm_job **jobs, size_t *n)
{
    static const int ms[] = {1, 2, 3, 7, 13, 29, 63}, quick[] = {1, 3, 13, 63};
    const int odd_n = nt ? 8192 : 8191, odd_k = nt ? 8191 : 8192; /* VEC = 0 */
    if (all) {
        for (int dt = 0; dt < 2; dt++) {
            const char *dtype = dt ? "bf16" : "fp16";
            for (int i = 0; i < 7; i++) {
                smallm_collect(k, src, g, ms[i], 8192, 8192, dtype, 0, SM_ALL, jobs, n);
                smallm_collect(k, src, g, ms[i], odd_n, odd_k, dtype, 0, SM_ALL, jobs, n);
                smallm_collect(k, src, g, ms[i], 4096, 1024, dtype, 0, SM_ALL, jobs, n);
                smallm_collect(k, src, g, ms[i], 8192, 8192, dtype, 1, SM_ALL, jobs, n);
            }
            smallm_collect(k, src, g, 1, 8192, 28672, dtype, 0, SM_ALL, jobs, n);
        }
        return;
    }
    for (int i = 0; i < 4; i++)
        smallm_collect(k, src, g, quick[i], 8192, 8192, "fp16", 0, SM_PER_UNIT, jobs, n);
    smallm_collect(k, src, g, 3, 8192, 8192, "fp16", 0, SM_PER_VARIANT, jobs, n);
    for (int i = 0; i < 2; i++) {
        int M = i ? 63 : 1;
        smallm_collect(k, src, g, M, odd_n, odd_k, "fp16", 0, SM_PER_UNIT, jobs, n);
        smallm_collect(k, src, g, M, 8192, 8192, "bf16", 0, SM_PER_UNIT, jobs, n);
    }
    smallm_collect(k, src, g, 13, 8192, 8192, "fp16", 1, SM_PER_UNIT, jobs, n);
}

/* The TMA specs (sm_90a): BLOCK_M 8, 16, 32, 64 (wgmma's N), BLOCK_N 64, 128, 256 (slabs), the
 * finish variants. By default the heaviest per BLOCK_N and finish variant at M = 1 and 63 (the
 * smallest and largest accumulator tiles), per BLOCK_N at 13 and 29, in bf16 at 63 and with C in
 * fp32 at 13; small problems (N <= 1024) keep every config of a class, so the boundary sizes'
 * configs are compiled too. */
static void smallm_collect_tma(const bt_kdesc *k, const char *src, const bt_gpu *g, bool all,
                               sm_job **jobs, size_t *n)
{
    static const int ms[] = {1, 3, 13, 29, 63};
    if (all) {
        for (int dt = 0; dt < 2; dt++)
            for (int i = 0; i < 5; i++)
                for (int f = 0; f < 2; f++) {
                    const char *dtype = dt ? "bf16" : "fp16";
                    smallm_collect(k, src, g, ms[i], 8192, 8192, dtype, f, SM_ALL, jobs, n);
                    smallm_collect(k, src, g, ms[i], 1000, 4104, dtype, f, SM_ALL, jobs, n);
                }
        return;
    }
    for (int i = 0; i < 2; i++)
        smallm_collect(k, src, g, i ? 63 : 1, 8192, 8192, "fp16", 0, SM_PER_TILE_VARIANT, jobs,
                       n);
    smallm_collect(k, src, g, 13, 8192, 8192, "fp16", 0, SM_PER_TILE, jobs, n);
    smallm_collect(k, src, g, 29, 8192, 8192, "fp16", 0, SM_PER_TILE, jobs, n);
    smallm_collect(k, src, g, 63, 8192, 8192, "bf16", 0, SM_PER_TILE, jobs, n);
    smallm_collect(k, src, g, 13, 8192, 8192, "fp16", 1, SM_PER_TILE, jobs, n);
}

/* Every M class of the four specs, C in the inputs' type and in fp32, compiled with NVRTC for
 * sm_90 (the TMA specs for sm_90a): no errors, no ptxas warnings, no spills, no stack frame, and
 * the spec's register estimate not far below the compiler's count (the model's occupancy depends
 * on it). By default the heaviest configs (smallm_collect_reg, smallm_collect_tma);
 * BT_SMALLM_ALL=1 compiles every config of the spaces at more problems, in both dtypes (SPLIT_K
 * values that differ only in number, not in finish variant, once): hours on two cores.
 * BT_SMALLM_VERBOSE=1 prints every kernel's registers. */
static void test_smallm_compiles(void **state)
{
    (void)state;
    NEED_NVRTC();
    if (getenv("BT_SANITIZED")) {
        printf("SKIPPED in the sanitizer tree: this sweep compiles kernels with NVRTC (minutes), "
               "which checks the kernels, not blocktune's C; the plain tree runs it\n");
        skip();
    }
    const char *env = getenv("BT_SMALLM_ALL"), *venv = getenv("BT_SMALLM_VERBOSE");
    bool all = env && *env == '1', verbose = venv && *venv == '1';
    bt_gpudb *db = NULL;
    const bt_gpu *g = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    assert_int_equal(bt_gpudb_find(db, "h200", &g, &d), BT_OK);
    enum { NSPEC = 4 };
    const char *names[NSPEC] = {"gemm_smallm", "gemm_smallm_nt", "gemm_smallm_tma",
                                "gemm_smallm_nt_tma"};
    bt_kdesc *ks[NSPEC];
    const char *src[NSPEC];
    sm_job *jobs = NULL;
    size_t n = 0, ntma = 0;
    for (int s = 0; s < NSPEC; s++) {
        ks[s] = smallm_spec(names[s]);
        const bt__ksource *ksrc = bt__kdesc_source(ks[s], "cuda");
        assert_non_null(ksrc);
        src[s] = ksrc->text;
        assert_non_null(src[s]);
        assert_int_equal(strcmp(ksrc->target, "sm_90a") == 0, s >= 2);
        size_t before = n;
        if (s < 2)
            smallm_collect_reg(ks[s], src[s], g, s == 1, all, &jobs, &n);
        else
            smallm_collect_tma(ks[s], src[s], g, all, &jobs, &n);
        if (s >= 2)
            ntma += n - before;
    }
    int nth = compile_all(jobs, n);
    int bad = 0, maxregs = 0;
    for (size_t i = 0; i < n; i++) {
        sm_job *j = &jobs[i];
        bool ok = job_ok(j);
        if (!ok || verbose) {
            job_print(j);
            bad += !ok;
        }
        if (j->regs > maxregs)
            maxregs = j->regs;
    }
    printf("    %zu small-M kernels compiled (%zu of them TMA kernels for sm_90a, the rest for "
           "sm_90; %d threads), at most %d registers, %d failed\n",
           n, ntma, nth, maxregs, bad);
    assert_int_equal(bad, 0);
    assert_true(n >= (all ? 1000u : 40u));
    assert_true(ntma >= (all ? 200u : 20u));
    free(jobs);
    for (int s = 0; s < NSPEC; s++)
        bt_kdesc_destroy(ks[s]);
    bt_gpudb_destroy(db);
}

/* gemm_wgmma_ldg (sm_90a) at 3001x2999x1031: every tile, thread split and producer count (the
 * ring's length is constants only: one of each), in fp16, bf16 and with fp32 output, compiles
 * with no errors, no ptxas warnings, no spills and no stack frame, within the spec's register
 * estimate + 24 (the same bar as the small-M kernels'). */
static void test_wgmma_ldg_compiles(void **state)
{
    (void)state;
    NEED_NVRTC();
    if (getenv("BT_SANITIZED")) {
        printf("SKIPPED in the sanitizer tree: this compiles kernels with NVRTC, which checks the "
               "kernels, not blocktune's C; the plain tree runs it\n");
        skip();
    }
    bt_gpudb *db = NULL;
    const bt_gpu *g = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    assert_int_equal(bt_gpudb_find(db, "h200", &g, &d), BT_OK);
    bt_kdesc *k = smallm_spec("gemm_wgmma_ldg");
    const bt__ksource *ksrc = bt__kdesc_source(k, "cuda");
    assert_true(ksrc && !strcmp(ksrc->target, "sm_90a"));
    sm_job *jobs = NULL;
    size_t n = 0;
    smallm_collect(k, ksrc->text, g, 3001, 2999, 1031, "fp16", 0, SM_ALL, &jobs, &n);
    size_t tiles = n;
    smallm_collect(k, ksrc->text, g, 3001, 2999, 1031, "bf16", 0, SM_PER_UNIT, &jobs, &n);
    smallm_collect(k, ksrc->text, g, 3001, 2999, 1031, "fp16", 1, SM_PER_UNIT, &jobs, &n);
    compile_all(jobs, n);
    int bad = 0;
    for (size_t i = 0; i < n; i++)
        if (!job_ok(&jobs[i])) {
            job_print(&jobs[i]);
            bad++;
        }
    printf("    %zu gemm_wgmma_ldg kernels compiled for sm_90a (%zu tile and thread splits), %d "
           "failed\n", n, tiles, bad);
    assert_int_equal(bad, 0);
    assert_true(tiles >= 15 && n >= tiles + 2);
    free(jobs);
    bt_kdesc_destroy(k);
    bt_gpudb_destroy(db);
}

/* ---------------------------------------------------------------------------------------------
 * Device: listing and info
 * ------------------------------------------------------------------------------------------- */

static void test_devices_list_cuda_first(void **state)
{
    (void)state;
    bt_device_list *list = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_devices_list(&list, &d), BT_OK);
    size_t n = bt_device_list_count(list);
    const bt_device_info *devs = bt_device_list_at(list, 0);
    assert_true(n >= 1);
    /* CUDA is registered first: its devices come first and the first is the default. */
    assert_string_equal(devs[0].id, "cuda:0");
    assert_true(devs[0].is_default);
    int ncuda = 0;
    for (size_t i = 0; i < n; i++) {
        const bt_device_info *x = bt_device_list_at(list, i);
        if (strcmp(x->backend, "cuda") != 0)
            continue;
        const bt_gpu *g = &x->props;
        assert_int_equal(x->index, ncuda++);
        assert_true(x->is_gpu);
        assert_true(x->name[0] != '\0');
        assert_string_equal(x->vendor, "NVIDIA");
        assert_string_equal(x->platform, "CUDA");
        assert_memory_equal(x->api_version, "CUDA ", 5);
        assert_true(x->driver_version[0] != '\0');
        if (g_nvrtc)
            assert_memory_equal(x->compiler_version, "NVRTC ", 6);
        assert_int_equal(strlen(x->uuid), 36);
        assert_true(g->cc_major >= 5);
        assert_string_not_equal(g->arch, "unknown");
        assert_true(g->sm_count > 0);
        assert_int_equal(g->warp_size, 32);
        assert_int_equal(g->max_warps_per_sm * 32, g->max_threads_per_sm);
        assert_true(g->max_threads_per_block >= 512);
        assert_true(g->max_blocks_per_sm >= 16);
        assert_true(g->regs_per_sm >= 32768);
        assert_true(g->regs_per_block >= 32768);
        assert_int_equal(g->max_regs_per_thread, 255);
        assert_int_equal(g->reg_alloc_unit, 256);
        assert_int_equal(g->smem_per_block, 49152);
        assert_true(g->smem_per_block_optin >= g->smem_per_block);
        assert_true(g->smem_per_sm >= g->smem_per_block_optin);
        if (g->cc_major >= 8)
            assert_int_equal(g->smem_reserved_per_block, 1024);
        assert_true(g->l2_bytes >= (1 << 20));
        assert_true(g->mem_bytes >= ((int64_t)1 << 30));
        assert_true(g->mem_bw_gbps >= 0);
        assert_true(g->clock_mhz >= 0);
        assert_string_equal(g->name, x->name);
        /* The occupancy of the device's own numbers is sane: 256 threads x 32 registers fill
         * an SM of every architecture since Volta to its thread limit. */
        const char *lim = NULL;
        assert_int_equal(bt__cuda_occupancy(g, 256, 32, 0, &lim), g->max_threads_per_sm / 256);
        printf("    %s: %s, cc %d.%d (%s), %d SMs, %.0f MHz, L2 %lld B, %.0f GB/s, %s, %s, %s\n",
               x->id, x->name, g->cc_major, g->cc_minor, g->arch, g->sm_count, g->clock_mhz,
               (long long)g->l2_bytes, g->mem_bw_gbps, x->api_version, x->driver_version,
               x->compiler_version);
        if (g_mock) {
            assert_string_equal(x->name, "blocktune mock GPU");
            assert_string_equal(x->uuid, "a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf");
            assert_string_equal(x->api_version, "CUDA 13.0");
            assert_int_equal(g->sm_count, 132);
            assert_int_equal(g->l2_bytes, 62914560);
            assert_true(g->clock_mhz == 1980.0);
            /* 2 x 3201 MHz x 6144 bits / 8 = 4916.7 GB/s */
            assert_true(g->mem_bw_gbps > 4916.0 && g->mem_bw_gbps < 4917.0);
        }
    }
    assert_true(ncuda >= 1);
    bt_device_list_destroy(list);
}

/* ---------------------------------------------------------------------------------------------
 * Device: buffers
 * ------------------------------------------------------------------------------------------- */

static bt__bbuf *alloc(size_t bytes)
{
    bt__bbuf *b = NULL;
    bt_diag d = {0};
    bt_status st = g_if->buf_alloc(g_bd, bytes, &b, &d);
    if (st != BT_OK)
        fprintf(stderr, "buf_alloc(%zu): %s\n", bytes, d.msg);
    assert_int_equal(st, BT_OK);
    assert_non_null(b);
    return b;
}

static bt__karg buf_arg(bt__bbuf *b) { return (bt__karg){.kind = BT__ARG_BUF, .u.buf = b}; }
static bt__karg i32_arg(int32_t v) { return (bt__karg){.kind = BT__ARG_I32, .u.i32 = v}; }

/* Tensor maps (TMA): a valid request encodes (on the mock, into exactly what was asked, and with
 * the context current); the common mistakes are named before the driver sees them. */
static void test_tmap_encode(void **state)
{
    (void)state;
    assert_non_null(g_if->tmap_encode);
    bt__bbuf *b = alloc(4096 * 64 * 2);
    _Alignas(64) unsigned char map[128 + 64];
    bt__tmap_req q = {.dtype = BT__DT_FP16, .elem_bytes = 2, .rank = 2, .dims = {64, 4096},
                      .strides = {2, 128}, .box = {64, 128}, .swizzle = 128};
    bt_diag d = {0};
    bt_status st = g_if->tmap_encode(g_bd, b, &q, map, &d);
    if (st)
        fprintf(stderr, "tmap_encode: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    if (g_mock) {
        struct {
            uint64_t magic, addr, dims[2], stride1;
            uint32_t dtype, rank, box[2], swizzle, oob;
        } t;
        memcpy(&t, map, sizeof t);
        assert_true(t.magic == 0x746d6170u && t.dims[0] == 64 && t.dims[1] == 4096);
        assert_true(t.stride1 == 128 && t.box[0] == 64 && t.box[1] == 128 && t.rank == 2);
        assert_int_equal(t.dtype, 6);   /* CU_TENSOR_MAP_DATA_TYPE_FLOAT16 */
        assert_int_equal(t.swizzle, 3); /* CU_TENSOR_MAP_SWIZZLE_128B */
        assert_int_equal(t.oob, 0);     /* out-of-range elements read as zero */
    }
    bt__tmap_req bad = q; /* rows of 100 fp16: 200 bytes, not 16-byte aligned */
    bad.dims[0] = 100;
    bad.strides[1] = 200;
    assert_int_equal(g_if->tmap_encode(g_bd, b, &bad, map, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "multiple of 16"));
    bad = q; /* 128 fp16 = 256 bytes per box row, over the 128-byte swizzle span */
    bad.box[0] = 128;
    assert_int_equal(g_if->tmap_encode(g_bd, b, &bad, map, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "swizzle span"));
    bad = q;
    bad.box[1] = 300;
    assert_int_equal(g_if->tmap_encode(g_bd, b, &bad, map, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "1..256"));
    bad = q;
    bad.swizzle = 48;
    assert_int_equal(g_if->tmap_encode(g_bd, b, &bad, map, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "swizzle"));
    assert_int_equal(g_if->tmap_encode(g_bd, b, &q, map + 8, &d), BT_INVALID_ARG);
    g_if->buf_free(g_bd, b);
}

/* ---------------------------------------------------------------------------------------------
 * Device: compile, load, launch
 * ------------------------------------------------------------------------------------------- */

/* Compiles src for the device and loads it; the module is the caller's to free. */
static bt__bmod *build(const char *src)
{
    bt__blob blob = {0};
    char *log = NULL;
    bt_status st = dev_compile(src, NULL, 0, NULL, NULL, 0, NULL, &blob, &log);
    if (st != BT_OK)
        fprintf(stderr, "compile failed: %s\n%s\n", bt_err_name(st), log ? log : "(no log)");
    assert_int_equal(st, BT_OK);
    assert_non_null(log);
    free(log);
    bt__bmod *m = NULL;
    bt_diag d = {0};
    st = g_if->module_load(g_bd, blob.data, blob.size, &m, &d);
    if (st != BT_OK)
        fprintf(stderr, "module_load: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    free(blob.data);
    return m;
}

/* C++ kernels, a template instance and a __constant__ array, as Kernel Tuner users write them. */
static const char *kt_src =
    "__constant__ float d_filter[FSIZE];\n"
    "__global__ void convolution_kernel(float *output, const float *input)\n"
    "{\n"
    "    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "    if (x >= image_width || y >= image_height)\n"
    "        return;\n"
    "    float s = 0.0f;\n"
    "    for (int j = 0; j < filter_height; j++)\n"
    "        for (int i = 0; i < filter_width; i++)\n"
    "            s += d_filter[j * filter_width + i] *\n"
    "                 input[(y + j) * (image_width + filter_width - 1) + x + i];\n"
    "    output[y * image_width + x] = s;\n"
    "}\n"
    "template <typename T, int PER> __global__ void scale(T *y, const T *x)\n"
    "{\n"
    "    int first = (blockIdx.x * blockDim.x + threadIdx.x) * PER;\n"
    "    for (int k = 0; k < PER; k++)\n"
    "        if (first + k < N)\n"
    "            y[first + k] = T(2) * x[first + k];\n"
    "}\n";

/* compile() with names resolves C++ names, templates and __constant__ symbols; the names travel in the
 * blob (as through the kernel cache) to function_get and module_set_global; a constant-memory
 * argument is no kernel parameter (BT__ARG_NONE); mistakes are named; older blobs still load. */
static void test_cpp_names_templates_and_constant_memory(void **state)
{
    (void)state;
    NEED_NVRTC();
    const char *defs[] = {"FSIZE=9",         "image_width=8", "image_height=8", "filter_width=3",
                          "filter_height=3", "ITEMS=2",       "N=100"};
    const char *names[] = {"convolution_kernel", "scale<float, ITEMS>", "&d_filter"};
    bt__blob blob = {0};
    char *log = NULL;
    bt_diag d = {0};
    bt_status st = dev_compile(kt_src, defs, 7, NULL, names, 3, NULL, &blob, &log);
    if (st)
        fail_msg("compile with names: %s\n%s", bt_err_name(st), log ? log : "");
    free(log);
    /* the blob travels by value (the kernel cache stores its bytes) */
    unsigned char *copy = malloc(blob.size);
    memcpy(copy, blob.data, blob.size);
    bt__bmod *m = NULL;
    assert_int_equal(g_if->module_load(g_bd, copy, blob.size, &m, &d), BT_OK);
    free(copy);
    bt__bfn *conv = NULL, *scale = NULL, *mangled = NULL;
    assert_int_equal(g_if->function_get(g_bd, m, "convolution_kernel", &conv, NULL, &d), BT_OK);
    assert_int_equal(g_if->function_get(g_bd, m, "scale<float, ITEMS>", &scale, NULL, &d), BT_OK);
    assert_int_equal(g_if->function_get(g_bd, m, "_Z5scaleIfLi2EEvPT_PKS0_", &mangled, NULL, &d),
                     BT_OK);
    /* the filter: a symbol that is missing, too small for the data, and right */
    float filt[10], in[100], out[64], x[100], y[100];
    for (int i = 0; i < 10; i++)
        filt[i] = (float)(i + 1) / 8.0f;
    for (int i = 0; i < 100; i++)
        in[i] = x[i] = (float)((int)(rnd() % 2001) - 1000) / 500.0f;
    bt__bbuf *bf = alloc(sizeof filt), *bi = alloc(sizeof in), *bo = alloc(sizeof out),
             *bx = alloc(sizeof x), *by = alloc(sizeof y);
    assert_int_equal(g_if->buf_write(g_bd, bf, 0, filt, sizeof filt, &d), BT_OK);
    assert_int_equal(g_if->buf_write(g_bd, bi, 0, in, sizeof in, &d), BT_OK);
    assert_int_equal(g_if->buf_write(g_bd, bx, 0, x, sizeof x, &d), BT_OK);
    assert_int_equal(g_if->module_set_global(g_bd, m, "nosuch", bf, 36, &d), BT_NOT_FOUND);
    assert_non_null(strstr(d.msg, "no __constant__ symbol 'nosuch'"));
    assert_int_equal(g_if->module_set_global(g_bd, m, "d_filter", bf, 40, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "'d_filter' holds 36 bytes, the argument has 40"));
    assert_int_equal(g_if->module_set_global(g_bd, m, "d_filter", bf, 36, &d), BT_OK);
    /* the filter is no parameter: output, (filter), input */
    bt__karg cargs[] = {buf_arg(bo), {.kind = BT__ARG_NONE}, buf_arg(bi)};
    uint32_t grid[3] = {1, 1, 1}, block[3] = {8, 8, 1};
    st = g_if->launch(g_bd, conv, grid, block, 0, cargs, 3, NULL, &d);
    if (st)
        fail_msg("launch: %s", d.msg);
    bt__karg sargs[] = {buf_arg(by), buf_arg(bx)};
    uint32_t sgrid[3] = {2, 1, 1}, sblock[3] = {32, 1, 1}; /* 2 x 32 threads x 2 items >= 100 */
    assert_int_equal(g_if->launch(g_bd, scale, sgrid, sblock, 0, sargs, 2, NULL, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, bo, 0, out, sizeof out, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, by, 0, y, sizeof y, &d), BT_OK);
    for (int yy = 0; yy < 8; yy++)
        for (int xx = 0; xx < 8; xx++) {
            double want = 0;
            for (int j = 0; j < 3; j++)
                for (int i = 0; i < 3; i++)
                    want += (double)filt[j * 3 + i] * in[(yy + j) * 10 + xx + i];
            if (fabs(out[yy * 8 + xx] - want) > 1e-4 * (1 + fabs(want)))
                fail_msg("out[%d][%d] = %g, want %g", yy, xx, (double)out[yy * 8 + xx], want);
        }
    for (int i = 0; i < 100; i++)
        assert_true(y[i] == 2 * x[i]);
    g_if->module_free(g_bd, m);
    /* a module compiled without the names knows the kernel only by its mangled name */
    bt__blob plain = {0};
    assert_int_equal(dev_compile(kt_src, defs, 7, NULL, NULL, 0, NULL, &plain, &log), BT_OK);
    free(log);
    assert_int_equal(g_if->module_load(g_bd, plain.data, plain.size, &m, &d), BT_OK);
    assert_int_equal(g_if->function_get(g_bd, m, "convolution_kernel", &conv, NULL, &d),
                     BT_NOT_FOUND);
    assert_non_null(strstr(d.msg, "extern \"C\""));
    g_if->module_free(g_bd, m);
    /* blobs of older blocktunes load: before names (BTCUBIN1: a 32-byte header, no name table)
     * and before the Triton section (BTCUBIN2: 40 bytes); this one's header is 48 bytes */
    unsigned char *v1 = malloc(plain.size);
    for (int v = 1; v <= 2; v++) {
        size_t hl = v == 1 ? 32 : 40;
        memcpy(v1, v == 1 ? "BTCUBIN1" : "BTCUBIN2", 8);
        memcpy(v1 + 8, (unsigned char *)plain.data + 8, hl - 8);
        memcpy(v1 + hl, (unsigned char *)plain.data + 48, plain.size - 48);
        assert_int_equal(g_if->module_load(g_bd, v1, plain.size - 48 + hl, &m, &d), BT_OK);
        assert_int_equal(
            g_if->function_get(g_bd, m, "_Z18convolution_kernelPfPKf", &conv, NULL, &d), BT_OK);
        g_if->module_free(g_bd, m);
    }
    free(blob.data);
    /* a name the source does not have fails the compile, naming it */
    const char *typo[] = {"convolution_kernal"};
    assert_int_equal(dev_compile(kt_src, defs, 7, NULL, typo, 1, NULL, &blob, &log), BT_COMPILE);
    assert_non_null(strstr(log, "'convolution_kernal'"));
    free(log);
    assert_null(blob.data);
    free(v1);
    free(plain.data);
    bt__bbuf *bufs[] = {bf, bi, bo, bx, by};
    for (size_t i = 0; i < 5; i++)
        g_if->buf_free(g_bd, bufs[i]);
}

static void test_compile_from_threads_on_device(void **state)
{
    (void)state;
    NEED_NVRTC();
    compile_job jobs[8];
    compile_8_on_4(jobs, true);
    bt_diag d = {0};
    bt__bbuf *out = alloc(64 * sizeof(int));
    for (int i = 0; i < 8; i++) {
        bt__bmod *m = NULL;
        assert_int_equal(g_if->module_load(g_bd, jobs[i].blob.data, jobs[i].blob.size, &m, &d),
                         BT_OK);
        if (!g_mock) { /* the mock cannot run setk */
            bt__bfn *f = NULL;
            bt__kres res;
            assert_int_equal(g_if->function_get(g_bd, m, "setk", &f, &res, &d), BT_OK);
            assert_int_equal(res.static_smem, 4 * jobs[i].k);
            bt__karg args[] = {buf_arg(out)};
            uint32_t grid[3] = {2, 1, 1}, block[3] = {32, 1, 1};
            assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 1, NULL, &d), BT_OK);
            int got[64];
            assert_int_equal(g_if->buf_read(g_bd, out, 0, got, sizeof got, &d), BT_OK);
            for (int j = 0; j < 64; j++)
                assert_int_equal(got[j], jobs[i].k * 3 + 1);
        }
        g_if->module_free(g_bd, m);
        free(jobs[i].blob.data);
        free(jobs[i].log);
    }
    g_if->buf_free(g_bd, out);
}

/* Reverses each block of B ints through B ints of dynamic shared memory, with dyn bytes of it. */
static void run_rev(bt__bfn *f, uint32_t G, uint32_t B, size_t dyn, bt_status want)
{
    size_t n = (size_t)G * B;
    int *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++)
        in[i] = (int)(rnd() & 0xffffff);
    bt__bbuf *bi = alloc(n * sizeof(int)), *bo = alloc(n * sizeof(int));
    bt_diag d = {0};
    assert_int_equal(g_if->buf_write(g_bd, bi, 0, in, n * sizeof(int), &d), BT_OK);
    bt__karg args[] = {buf_arg(bi), buf_arg(bo)};
    uint32_t grid[3] = {G, 1, 1}, block[3] = {B, 1, 1};
    bt_status st = g_if->launch(g_bd, f, grid, block, dyn, args, 2, NULL, &d);
    if (st != want)
        fprintf(stderr, "rev_dyn with %zu bytes: %s (%s)\n", dyn, bt_err_name(st), d.msg);
    assert_int_equal(st, want);
    if (st == BT_OK) {
        assert_int_equal(g_if->buf_read(g_bd, bo, 0, out, n * sizeof(int), &d), BT_OK);
        for (size_t g = 0; g < G; g++)
            for (size_t l = 0; l < B; l++)
                assert_int_equal(out[g * B + l], in[g * B + B - 1 - l]);
    } else {
        assert_true(d.msg[0] != '\0');
    }
    g_if->buf_free(g_bd, bi);
    g_if->buf_free(g_bd, bo);
    free(in);
    free(out);
}

static void test_dynamic_smem_above_48k(void **state)
{
    (void)state;
    NEED_NVRTC();
    const bt_gpu *g = &bt_device_get_info(g_dev)->props;
    bt__bmod *m = build(kernels_src);
    bt__bfn *f = NULL;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "rev_dyn", &f, NULL, &d), BT_OK);
    run_rev(f, 8, 256, 1024, BT_OK);
    if (g->smem_per_block_optin >= 100 * 1024) {
        /* 100 KiB, raised explicitly. */
        assert_non_null(g_if->function_set_dyn_smem);
        assert_int_equal(g_if->function_set_dyn_smem(g_bd, f, 100 * 1024, &d), BT_OK);
        run_rev(f, 8, 256, 100 * 1024, BT_OK);
    }
    /* The opt-in maximum, raised by the launch itself. */
    run_rev(f, 4, 128, (size_t)g->smem_per_block_optin, BT_OK);
    /* One byte more than the device has: refused, with the numbers. */
    run_rev(f, 4, 128, (size_t)g->smem_per_block_optin + 1, BT_RESOURCES);
    assert_int_equal(
        g_if->function_set_dyn_smem(g_bd, f, (size_t)g->smem_per_block_optin + 1, &d),
        BT_RESOURCES);
    assert_non_null(strstr(d.msg, "rev_dyn"));
    g_if->module_free(g_bd, m);
}

static void test_graph_timed(void **state)
{
    (void)state;
    NEED_NVRTC();
    assert_non_null(g_if->launch_graph_timed);
    bt__bmod *m = build(kernels_src);
    bt__bfn *f = NULL;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "inc", &f, NULL, &d), BT_OK);
    enum { N = 5000 };
    int host[N];
    for (int i = 0; i < N; i++)
        host[i] = (int)(rnd() & 0xffff);
    bt__bbuf *b = alloc(sizeof host);
    assert_int_equal(g_if->buf_write(g_bd, b, 0, host, sizeof host, &d), BT_OK);
    bt__karg args[] = {buf_arg(b), i32_arg(N)};
    uint32_t grid[3] = {(N + 127) / 128, 1, 1}, block[3] = {128, 1, 1};
    double ms = -1;
    bt_status st = g_if->launch_graph_timed(g_bd, f, grid, block, 0, args, 2, 10, &ms, &d);
    if (st != BT_OK)
        fprintf(stderr, "launch_graph_timed: %s\n", d.msg);
    assert_int_equal(st, BT_OK);
    printf("    inc over %d ints, graph of 10: %.5f ms per launch\n", N, ms);
    assert_true(ms > 0);
    int back[N];
    assert_int_equal(g_if->buf_read(g_bd, b, 0, back, sizeof back, &d), BT_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(back[i], host[i] + 20); /* a warm-up replay and a timed one, 10 each */
    assert_int_equal(g_if->launch_graph_timed(g_bd, f, grid, block, 0, args, 2, 0, &ms, &d),
                     BT_INVALID_ARG);
    /* A configuration refused before the capture leaves the stream usable. */
    uint32_t huge[3] = {2048, 1, 1};
    assert_int_equal(g_if->launch_graph_timed(g_bd, f, grid, huge, 0, args, 2, 3, &ms, &d),
                     BT_RESOURCES);
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 2, NULL, &d), BT_OK);
    assert_int_equal(g_if->buf_read(g_bd, b, 0, back, sizeof back, &d), BT_OK);
    assert_int_equal(back[0], host[0] + 21);
    g_if->buf_free(g_bd, b);
    g_if->module_free(g_bd, m);
}

static void test_refused_launches(void **state)
{
    (void)state;
    NEED_NVRTC();
    bt__bmod *m = build(kernels_src);
    bt__bfn *f = NULL;
    bt__kres res;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "inc", &f, &res, &d), BT_OK);
    bt__bbuf *b = alloc(1 << 16);
    bt__btimer *t = NULL;
    assert_int_equal(g_if->timer_create(g_bd, &t, &d), BT_OK);
    double ms = -1;
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_INVALID_ARG); /* nothing recorded */
    uint32_t grid[3] = {4, 1, 1}, block[3] = {64, 1, 1};

    /* OpenCL's local-memory argument has no CUDA meaning. */
    bt__karg local[] = {buf_arg(b), {.kind = BT__ARG_LOCAL, .u.local_bytes = 256}};
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, local, 2, t, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "BT__ARG_LOCAL"));
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_INVALID_ARG); /* still nothing */
    bt__karg null_buf[] = {{.kind = BT__ARG_BUF, .u.buf = NULL}, i32_arg(16)};
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, null_buf, 2, NULL, &d),
                     BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "argument 0"));

    bt__karg args[] = {buf_arg(b), i32_arg(256)};
    uint32_t zero[3] = {0, 1, 1};
    assert_int_equal(g_if->launch(g_bd, f, grid, zero, 0, args, 2, NULL, &d), BT_INVALID_ARG);
    uint32_t huge[3] = {(uint32_t)res.max_threads_per_block * 2, 1, 1};
    assert_int_equal(g_if->launch(g_bd, f, grid, huge, 0, args, 2, NULL, &d), BT_RESOURCES);
    assert_non_null(strstr(d.msg, "inc"));
    uint32_t cube[3] = {16, 16, 16}; /* 4096 threads */
    assert_int_equal(g_if->launch(g_bd, f, grid, cube, 0, args, 2, NULL, &d), BT_RESOURCES);
    uint32_t deep[3] = {1, 1, 128}; /* z above 64 */
    assert_int_equal(g_if->launch(g_bd, f, grid, deep, 0, args, 2, NULL, &d), BT_RESOURCES);

    /* The device still works afterwards, and the timer times the next launch. */
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 2, t, &d), BT_OK);
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_OK);
    assert_true(ms > 0);
    assert_int_equal(g_if->sync(g_bd, &d), BT_OK);
    g_if->timer_free(g_bd, t);
    g_if->timer_free(g_bd, NULL);
    g_if->buf_free(g_bd, b);
    g_if->module_free(g_bd, m);
}

/* Both cache flushes of CUDA (the read sweep by default, the fill with BLOCKTUNE_CUDA_FLUSH=write) run
 * and touch no user buffer; another value is refused when the device opens. */
static void test_flush_modes(void **state)
{
    (void)state;
    int data[1024];
    for (int i = 0; i < 1024; i++)
        data[i] = (int)rnd();
    bt_diag d = {0};
    for (int mode = 0; mode < 2; mode++) {
        bt_device *dev = NULL;
        if (mode)
            setenv("BLOCKTUNE_CUDA_FLUSH", "write", 1);
        assert_int_equal(bt_device_open("cuda:0", &dev, &d), BT_OK);
        unsetenv("BLOCKTUNE_CUDA_FLUSH");
        const bt__backend_iface *I = bt__device_iface(dev);
        bt__bdev *D = bt__device_bdev(dev);
        bt__bbuf *b = NULL;
        assert_int_equal(I->buf_alloc(D, sizeof data, &b, &d), BT_OK);
        assert_int_equal(I->buf_write(D, b, 0, data, sizeof data, &d), BT_OK);
        for (int i = 0; i < 3; i++)
            assert_int_equal(I->flush_cache(D, &d), BT_OK);
        assert_int_equal(I->sync(D, &d), BT_OK);
        int back[1024];
        assert_int_equal(I->buf_read(D, b, 0, back, sizeof back, &d), BT_OK);
        assert_memory_equal(data, back, sizeof data); /* flushing touches no user buffer */
        I->buf_free(D, b);
        bt_device_destroy(dev);
    }
    bt_device *bad = NULL;
    setenv("BLOCKTUNE_CUDA_FLUSH", "dirty", 1);
    assert_int_not_equal(bt_device_open("cuda:0", &bad, &d), BT_OK);
    unsetenv("BLOCKTUNE_CUDA_FLUSH");
    assert_null(bad);
    assert_non_null(strstr(d.msg, "BLOCKTUNE_CUDA_FLUSH='dirty'"));
}

/* A second opening of the same GPU shares its primary context but has its own stream. */
static void test_second_open(void **state)
{
    (void)state;
    bt_device *other = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_device_open("cuda:0", &other, &d), BT_OK);
    const bt__backend_iface *i2 = bt__device_iface(other);
    bt__bdev *b2 = bt__device_bdev(other);
    assert_ptr_equal(i2, g_if);
    bt__bbuf *x = NULL;
    assert_int_equal(i2->buf_alloc(b2, 4096, &x, &d), BT_OK);
    const unsigned char v = 0x3c;
    assert_int_equal(i2->buf_fill(b2, x, 0, 4096, &v, 1, &d), BT_OK);
    unsigned char back[4096];
    assert_int_equal(i2->buf_read(b2, x, 0, back, sizeof back, &d), BT_OK);
    for (int i = 0; i < 4096; i++)
        assert_int_equal(back[i], 0x3c);
    i2->buf_free(b2, x);
    bt_device_destroy(other);
    /* The first device is unaffected by the second's close. */
    bt__bbuf *y = alloc(64);
    g_if->buf_free(g_bd, y);
}

/* Last in the group: a faulting kernel poisons the context for the rest of the process. */
static void test_fault_then_clean_failures(void **state)
{
    (void)state;
    NEED_NVRTC();
    bt__bmod *m = build(kernels_src);
    bt__bfn *f = NULL;
    bt_diag d = {0};
    assert_int_equal(g_if->function_get(g_bd, m, "oob", &f, NULL, &d), BT_OK);
    bt__bbuf *b = alloc(4096);
    bt__btimer *t = NULL;
    assert_int_equal(g_if->timer_create(g_bd, &t, &d), BT_OK);
    bt__karg args[] = {buf_arg(b)};
    uint32_t grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    /* The fault comes asynchronously: normally at the next wait, but the driver may report it
     * already to a call of the launch sequence (the end event's record). */
    bt_status st = g_if->launch(g_bd, f, grid, block, 0, args, 1, t, &d);
    assert_true(st == BT_OK || st == BT_LAUNCH);
    if (st == BT_OK) {
        st = g_if->sync(g_bd, &d);
        assert_non_null(strstr(d.msg, "cuStreamSynchronize: CUDA_ERROR_"));
    }
    printf("    after the faulting kernel: %s: %s\n", bt_err_name(st), d.msg);
    assert_int_equal(st, BT_LAUNCH);
    assert_non_null(strstr(d.msg, "CUDA_ERROR_ILLEGAL_ADDRESS (700)"));
    assert_non_null(strstr(d.msg, "illegal memory access"));
    char first[sizeof d.msg];
    snprintf(first, sizeof first, "%s", d.msg);

    /* Every later call fails the same clean way, naming the first error. */
    double ms = 0;
    bt__bbuf *x = (bt__bbuf *)&d;
    assert_int_equal(g_if->buf_alloc(g_bd, 64, &x, &d), BT_LAUNCH);
    assert_null(x);
    assert_non_null(strstr(d.msg, "context lost after"));
    assert_non_null(strstr(d.msg, first));
    assert_int_equal(g_if->timer_read(g_bd, t, &ms, &d), BT_LAUNCH);
    assert_int_equal(g_if->launch(g_bd, f, grid, block, 0, args, 1, NULL, &d), BT_LAUNCH);
    int v = 0;
    assert_int_equal(g_if->buf_read(g_bd, b, 0, &v, sizeof v, &d), BT_LAUNCH);
    assert_int_equal(g_if->buf_write(g_bd, b, 0, &v, sizeof v, &d), BT_LAUNCH);
    assert_int_equal(g_if->buf_fill(g_bd, b, 0, 4, &v, 4, &d), BT_LAUNCH);
    assert_int_equal(g_if->flush_cache(g_bd, &d), BT_LAUNCH);
    assert_int_equal(g_if->sync(g_bd, &d), BT_LAUNCH);
    bt__btimer *t2 = NULL;
    assert_int_equal(g_if->timer_create(g_bd, &t2, &d), BT_LAUNCH);
    assert_null(t2);
    bt__bfn *f2 = NULL;
    assert_int_equal(g_if->function_get(g_bd, m, "inc", &f2, NULL, &d), BT_LAUNCH);
    assert_int_equal(g_if->function_set_dyn_smem(g_bd, f, 1024, &d), BT_LAUNCH);
    double per = 0;
    assert_int_equal(g_if->launch_graph_timed(g_bd, f, grid, block, 0, args, 1, 2, &per, &d),
                     BT_LAUNCH);
    /* Another opening of the same GPU is refused while this one holds the lost context. */
    bt_device *other = NULL;
    assert_int_equal(bt_device_open("cuda:0", &other, &d), BT_LAUNCH);
    assert_null(other);
    assert_non_null(strstr(d.msg, "context lost"));
    /* Compiling needs no context and still works. */
    bt__blob blob = {0};
    char *log = NULL;
    assert_int_equal(dev_compile(vadd_src, NULL, 0, NULL, NULL, 0, NULL, &blob, &log), BT_OK);
    bt__bmod *m2 = (bt__bmod *)&d;
    assert_int_equal(g_if->module_load(g_bd, blob.data, blob.size, &m2, &d), BT_LAUNCH);
    assert_null(m2);
    free(blob.data);
    free(log);
    /* Freeing releases the host side without a crash. */
    g_if->timer_free(g_bd, t);
    g_if->buf_free(g_bd, b);
    g_if->module_free(g_bd, m);
}

/* After each device test on the mock: every context the backend pushed is popped again. */
static int ctx_balanced(void **state)
{
    (void)state;
    return bt_test_mock_ctx_balanced(g_mock ? getenv(BT__CUDA_LIBRARY_ENV) : NULL);
}

static int device_setup(void **state)
{
    (void)state;
    bt_diag d = {0};
    if (bt_device_open("cuda", &g_dev, &d) != BT_OK) {
        fprintf(stderr, "cannot open a CUDA device: %s\n", d.msg);
        return -1;
    }
    g_if = bt__device_iface(g_dev);
    g_bd = bt__device_bdev(g_dev);
    return 0;
}

static int device_teardown(void **state)
{
    (void)state;
    bt_device_destroy(g_dev);
    g_dev = NULL;
    /* With every device of the GPU closed, the lost mark is gone and the GPU opens again when
     * the driver allows it (the mock always does; a real driver may not). */
    bt_diag d = {0};
    bt_device *again = NULL;
    bt_status st = bt_device_open("cuda:0", &again, &d);
    printf("    reopening cuda:0 after the fault: %s%s%s\n", bt_err_name(st), st ? ": " : "",
           st ? d.msg : "");
    if (g_mock && st != BT_OK)
        return -1;
    bt_device_destroy(again);
    return 0;
}

int main(void)
{
    /* Where a driver is installed and ~/.nv/ComputeCache exists (any earlier CUDA run makes it),
     * NVRTC 13 compiles through the driver's cache and its log has no ptxas lines, which the
     * live resource tests read (seen on the H200: bench/NOTES.md 22). The tests want the compiler
     * itself; blocktune reads registers from the module or the cubin when the log has none. */
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    g_nvrtc = bt__nvrtc_available(&g_nvrtc_why);
    if (!g_nvrtc)
        printf("SKIPPED (NVRTC tests): no NVRTC: %s\n", g_nvrtc_why.msg);

    const struct CMUnitTest offline[] = {
        cmocka_unit_test(test_error_and_arch_names),
        cmocka_unit_test(test_missing_driver),
        cmocka_unit_test(test_occupancy_hopper),
        cmocka_unit_test(test_occupancy_other_archs),
        cmocka_unit_test(test_resources_from_logs),
        cmocka_unit_test(test_nvrtc_compile_with_defines),
        cmocka_unit_test(test_nvrtc_resources_live),
        cmocka_unit_test(test_cubin_resources_match_ptxas),
        cmocka_unit_test(test_nvrtc_compile_errors),
        cmocka_unit_test(test_nvrtc_from_threads),
        cmocka_unit_test(test_nvrtc_sm90a),
        cmocka_unit_test(test_smallm_compiles),
        cmocka_unit_test(test_wgmma_ldg_compiles),
    };
    int failed = cmocka_run_group_tests_name("cuda_offline", offline, NULL, NULL);

    /* The device group: the real driver when one loads and sees a GPU, else the mock. */
    const char *env = getenv(BT__CUDA_LIBRARY_ENV);
    if (!env || !*env) {
        void *ctx = NULL;
        bt_diag d = {0};
        if (bt__backend_cuda.load(&ctx, &d) == BT_OK) {
            bt__backend_cuda.unload(ctx);
        } else {
            printf("SKIPPED: no CUDA device (%s)\n", d.msg);
            printf("running the device tests against the mock driver %s instead\n",
                   BT_MOCK_CUDA);
            setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
            g_mock = 1;
        }
    } else {
        g_mock = strstr(env, "mock") != NULL;
    }
    const struct CMUnitTest device[] = {
        cmocka_unit_test_teardown(test_devices_list_cuda_first, ctx_balanced),
        cmocka_unit_test_teardown(test_tmap_encode, ctx_balanced),
        cmocka_unit_test_teardown(test_cpp_names_templates_and_constant_memory, ctx_balanced),
        cmocka_unit_test_teardown(test_compile_from_threads_on_device, ctx_balanced),
        cmocka_unit_test_teardown(test_dynamic_smem_above_48k, ctx_balanced),
        cmocka_unit_test_teardown(test_graph_timed, ctx_balanced),
        cmocka_unit_test_teardown(test_refused_launches, ctx_balanced),
        cmocka_unit_test_teardown(test_second_open, ctx_balanced),
        cmocka_unit_test_teardown(test_flush_modes, ctx_balanced),
        /* must stay last: */
        cmocka_unit_test_teardown(test_fault_then_clean_failures, ctx_balanced),
    };
    failed += cmocka_run_group_tests_name(g_mock ? "cuda_device_mock" : "cuda_device", device,
                                          device_setup, device_teardown);

    /* After the device group: while the stub is loaded, glibc would hand it out for any
     * dlopen("libcuda.so.1") by its SONAME, so it must not be around when the real driver is
     * looked for. */
    const struct CMUnitTest late[] = {
        cmocka_unit_test(test_stub_driver_refused),
    };
    failed += cmocka_run_group_tests_name("cuda_stub", late, NULL, NULL);
    return failed ? 1 : 0;
}
