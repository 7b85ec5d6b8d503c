/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mock_cuda.c — a host-only imitation of the CUDA driver library (libcuda.so.1) for tests on
 * machines without an NVIDIA GPU: test_cuda loads it through $BLOCKTUNE_CUDA_LIBRARY and runs the
 * CUDA backend's device tests against it.
 *
 * It exports the driver entry points the backend resolves (by their versioned names) and behaves
 * like the driver where the backend's correctness depends on it:
 *   - one GPU (an H200-like set of attributes), a primary context with a reference count, and a
 *     per-thread stack of current contexts: a call that needs a context without one current fails
 *     with CUDA_ERROR_INVALID_CONTEXT, which catches a missing push/pop in the backend;
 *   - device memory is host memory; every copy, fill and kernel argument is checked against the
 *     live allocations (CUDA_ERROR_INVALID_VALUE, or an illegal-address fault for a kernel);
 *   - modules must be ELF images (CUBINs) or PTX text (which the driver compiles: the backend's
 *     cache flush); they hold the emulated kernels below, looked up by name as the CUBIN spells
 *     it (C++ kernels by their mangled names), with the parameters the CUBIN's .nv.info section
 *     lists for it (count and sizes, as the driver reads them; the table's when it has none): vadd(a, b, c, n), inc(p, n), rev_dyn(in, out)
 *     (reverses each block through dynamic shared memory), oob(p) (faults like an out-of-bounds
 *     store), bt_flush_read(buf, chunks, sink, key) (the cache flush's read sweep: reads
 *     16 * chunks bytes, writes the XOR to sink only if it is key), bt_verify_<dtype>(out, ref,
 *     idx, io) (blocktune's comparison kernels, block by block as kernels/cuda/bt_verify.cu), and
 *     two kernels of tests/data
 *     in Kernel Tuner's style: convolution_kernel(out, in) (C++ name; a square 2-D convolution
 *     with the module's __constant__ d_filter, sizes taken from the allocations and the symbol)
 *     and the template scale<float, F>(y, x) (F read from the mangled name: each thread scales F
 *     elements, so a grid too small leaves outputs unwritten); two Triton kernels as Triton 3.6
 *     compiles them for examples/triton (the parameters that are not constexprs, then the
 *     global_scratch and profile_scratch pointers): vector_add_kernel(x, y, out, n, gs, ps) (fp32:
 *     out = x + y over n elements; buffers must be 16-byte aligned, as the compile assumed), and
 *     tl_probe(p, i32, i64, f32, gs, ps), which only records (tests of the launch convention);
 *   - cuLaunchKernelEx with the attributes Triton's launcher sets (a cluster dimension that must
 *     divide the grid, the scheduling policy, cooperative, programmatic serialization);
 *     mock_cuda_last_launch returns the last launch's grid, block, shared memory, cluster and
 *     parameter bytes, so tests can check what a launch passed;
 *   - cuModuleGetGlobal finds a variable in the image's ELF symbol table, with its size there,
 *     and gives it device memory of its own (zeroed) for the module's life;
 *   - launches run at once on the host and advance a virtual clock that events read, so timings
 *     are positive and deterministic (mock_cuda_step adds a step to every launch's time from a
 *     chosen point on: a GPU that warms); a fault is reported by the next synchronising call and then
 *     sticks (CUDA_ERROR_ILLEGAL_ADDRESS) until the primary context's last reference goes;
 *   - dynamic shared memory above the function's limit fails the launch (CUDA_ERROR_INVALID_VALUE)
 *     until cuFuncSetAttribute raises the limit;
 *   - stream capture records launches (copying their argument values) into graphs that replay;
 *   - embedding: cuPointerGetAttribute (context, device ordinal, range of an allocation; an
 *     address inside no allocation is CUDA_ERROR_INVALID_VALUE), cuCtxGetDevice, cuStreamGetCtx
 *     and cuStreamWaitEvent (streams run at once, so waiting is only checked); the test-only
 *     mock_cuda_alloc_foreign makes memory that another context or device owns;
 *   - cuTensorMapEncodeTiled checks what the driver checks (a live 16-byte aligned address, strides
 *     multiples of 16, boxes of 1..256 within the swizzle span) and writes what it was given into
 *     the map's words, so that tests can read the request back (mock_tmap_t below).
 * Anything else is not imitated.
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
    OK = 0,
    E_INVALID_VALUE = 1,
    E_OUT_OF_MEMORY = 2,
    E_NOT_INITIALIZED = 3,
    E_INVALID_DEVICE = 101,
    E_INVALID_IMAGE = 200,
    E_INVALID_CONTEXT = 201,
    E_INVALID_HANDLE = 400,
    E_NOT_FOUND = 500,
    E_ILLEGAL_ADDRESS = 700,
    E_CAPTURE_INVALIDATED = 901
};

#define API __attribute__((visibility("default")))
#define MAGIC 0x6d6f636bu

/* Every entry point takes the one lock: the mock is simple, not fast. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_init;
static int g_refs;            /* primary context references */
static CUresult g_sticky;     /* the error every call returns once a fault was seen */
static CUresult g_pending;    /* a fault not yet reported by a synchronising call */
static uint64_t g_clock_ns;   /* virtual time */
static __thread int t_depth;  /* this thread's current-context stack depth */

struct CUctx_st {
    unsigned magic;
};
static struct CUctx_st g_ctx = {MAGIC};

/* ---- memory ---------------------------------------------------------------------------- */

typedef struct alloc {
    unsigned char *p;
    size_t size;
    int owner; /* 0: the primary context; 1: another context of device 0; 2: device 1's context
                  (mock_cuda_alloc_foreign) */
    struct alloc *next;
} alloc;
static alloc *g_allocs;

/* Whether [p, p+n) lies inside one live allocation. */
static int valid_range(CUdeviceptr p, size_t n)
{
    for (alloc *a = g_allocs; a; a = a->next)
        if (p >= (CUdeviceptr)(uintptr_t)a->p && n <= a->size &&
            p - (CUdeviceptr)(uintptr_t)a->p <= a->size - n)
            return 1;
    return 0;
}

/* ---- kernels --------------------------------------------------------------------------- */

typedef struct launch_rec launch_rec;
typedef void (*emu_fn)(const launch_rec *l);

typedef struct kdesc {
    const char *name;
    int nparams;
    size_t psize[8];
    int regs;
    emu_fn run;
    int prefix; /* name is a prefix (a template's instances): the rest gives targ */
} kdesc;

struct CUmod_st;

struct CUfunc_st {
    unsigned magic;
    const kdesc *k;
    int dyn_limit;
    struct CUmod_st *mod;
    int targ; /* a template instance's integer argument */
    int np;        /* its parameters: from the CUBIN's .nv.info when it has them, else k's */
    size_t psize[8];
};

struct launch_rec {
    struct CUfunc_st *f;
    int np; /* parameters passed */
    unsigned grid[3], block[3];
    unsigned dyn;
    unsigned char params[8][8]; /* copies of the argument values */
    unsigned cluster[3];        /* cuLaunchKernelEx's cluster dimension ({1,1,1} without) */
};

/* The last launch enqueued (mock_cuda_last_launch). */
static launch_rec g_last;
static int g_launches;

static void *ptr_arg(const launch_rec *l, int i)
{
    CUdeviceptr p;
    memcpy(&p, l->params[i], sizeof p);
    return (void *)(uintptr_t)p;
}

static int int_arg(const launch_rec *l, int i)
{
    int v;
    memcpy(&v, l->params[i], sizeof v);
    return v;
}

static void fault(void)
{
    if (!g_pending)
        g_pending = E_ILLEGAL_ADDRESS;
}

static void emu_vadd(const launch_rec *l)
{
    float *a = ptr_arg(l, 0), *b = ptr_arg(l, 1), *c = ptr_arg(l, 2);
    int n = int_arg(l, 3);
    size_t threads = (size_t)l->grid[0] * l->block[0];
    size_t m = (size_t)n < threads ? (size_t)n : threads;
    size_t bytes = m * sizeof(float);
    if (n < 0 || (m && (!valid_range((uintptr_t)a, bytes) || !valid_range((uintptr_t)b, bytes) ||
                        !valid_range((uintptr_t)c, bytes)))) {
        fault();
        return;
    }
    for (size_t i = 0; i < m; i++)
        c[i] = a[i] + b[i];
}

static void emu_inc(const launch_rec *l)
{
    int *p = ptr_arg(l, 0);
    int n = int_arg(l, 1);
    size_t threads = (size_t)l->grid[0] * l->block[0];
    size_t m = (size_t)n < threads ? (size_t)n : threads;
    if (n < 0 || (m && !valid_range((uintptr_t)p, m * sizeof(int)))) {
        fault();
        return;
    }
    for (size_t i = 0; i < m; i++)
        p[i] += 1;
}

static void emu_rev_dyn(const launch_rec *l)
{
    const int *in = ptr_arg(l, 0);
    int *out = ptr_arg(l, 1);
    size_t B = l->block[0], n = (size_t)l->grid[0] * B;
    if (l->dyn < B * sizeof(int) || !valid_range((uintptr_t)in, n * sizeof(int)) ||
        !valid_range((uintptr_t)out, n * sizeof(int))) {
        fault();
        return;
    }
    for (size_t g = 0; g < l->grid[0]; g++)
        for (size_t t = 0; t < B; t++)
            out[g * B + t] = in[g * B + B - 1 - t];
}

static void emu_oob(const launch_rec *l)
{
    (void)l;
    fault();
}

/* The bytes of the live allocation that starts at p, 0 when none does. */
static size_t alloc_size(const void *p)
{
    for (alloc *a = g_allocs; a; a = a->next)
        if (a->p == p)
            return a->size;
    return 0;
}

static int isqrt_exact(size_t v, size_t *r)
{
    size_t s = 0;
    while ((s + 1) * (s + 1) <= v)
        s++;
    *r = s;
    return s * s == v;
}

static const void *module_global(const struct CUmod_st *m, const char *name, size_t *size);

/* convolution_kernel(out, in): out[y][x] = sum of d_filter[j][i] * in[y + j][x + i] over a square
 * image of W x W and filter of F x F (in is (W + F - 1)^2). */
static void emu_conv(const launch_rec *l)
{
    float *out = ptr_arg(l, 0);
    const float *in = ptr_arg(l, 1);
    size_t fbytes = 0, W, F, P;
    const float *filt = module_global(l->f->mod, "d_filter", &fbytes);
    if (!filt || !isqrt_exact(alloc_size(out) / sizeof(float), &W) ||
        !isqrt_exact(fbytes / sizeof(float), &F) ||
        !isqrt_exact(alloc_size(in) / sizeof(float), &P) || P != W + F - 1) {
        fault();
        return;
    }
    for (size_t y = 0; y < W; y++)
        for (size_t x = 0; x < W; x++) {
            float s = 0;
            for (size_t j = 0; j < F; j++)
                for (size_t i = 0; i < F; i++)
                    s += filt[j * F + i] * in[(y + j) * P + x + i];
            out[y * W + x] = s;
        }
}

/* scale<float, F>(y, x): y[i] = 2 x[i] for the grid.x * block.x * F elements the launch covers. */
static void emu_scale(const launch_rec *l)
{
    float *y = ptr_arg(l, 0);
    const float *x = ptr_arg(l, 1);
    size_t n = alloc_size(y) / sizeof(float);
    if (!n || alloc_size(x) < n * sizeof(float) || l->f->targ < 1) {
        fault();
        return;
    }
    size_t m = (size_t)l->grid[0] * l->block[0] * (size_t)l->f->targ;
    for (size_t i = 0; i < n && i < m; i++)
        y[i] = 2 * x[i];
}

static void emu_flush_read(const launch_rec *l)
{
    const uint32_t *buf = ptr_arg(l, 0);
    uint64_t chunks;
    uint32_t key, x = 0;
    memcpy(&chunks, l->params[1], sizeof chunks);
    memcpy(&key, l->params[3], sizeof key);
    if (chunks > SIZE_MAX / 16 || !valid_range((uintptr_t)buf, (size_t)chunks * 16)) {
        fault();
        return;
    }
    for (uint64_t i = 0; i < chunks * 4; i++)
        x ^= buf[i];
    if (x == key) {
        uint32_t *sink = ptr_arg(l, 2);
        if (!valid_range((uintptr_t)sink, sizeof *sink)) {
            fault();
            return;
        }
        *sink = x;
    }
}

/* ---- blocktune's comparison kernels (kernels/cuda/bt_verify.cu), emulated ------------------- */
/* bt_verify_<dtype>(out, ref, idx, io): each block of the grid-stride loop over io[0] items
 * (mode io[1]: 0 scan for NaN/Inf, 1 out[i] against ref[i], 2 out[idx[s]] against ref[s], 3 as 1
 * with ref in the output's own type; rtol,
 * atol as the bits of io[2], io[3]) writes its 8 words at io[8 + 8 b], as the kernel does. */
static double vemu_get(const char *dt, const void *out, uint64_t i)
{
    if (!strcmp(dt, "fp32"))
        return ((const float *)out)[i];
    if (!strcmp(dt, "fp64"))
        return ((const double *)out)[i];
    if (!strcmp(dt, "int32"))
        return ((const int32_t *)out)[i];
    if (!strcmp(dt, "int64"))
        return (double)((const int64_t *)out)[i];
    if (!strcmp(dt, "int8"))
        return ((const int8_t *)out)[i];
    if (!strcmp(dt, "fp8"))
        return ((const uint8_t *)out)[i];
    uint16_t h = ((const uint16_t *)out)[i];
    uint32_t u;
    if (!strcmp(dt, "bf16"))
        u = (uint32_t)h << 16;
    else { /* fp16 */
        uint32_t sg = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1fu, m = h & 0x3ffu;
        if (e == 0x1f)
            u = sg | 0x7f800000u | (m << 13);
        else if (e == 0) {
            float f = (float)m * 5.9604644775390625e-8f;
            return sg ? -f : f;
        } else
            u = sg | ((e + 112u) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static size_t vemu_size(const char *dt)
{
    return !strcmp(dt, "fp64") || !strcmp(dt, "int64") ? 8
           : !strcmp(dt, "fp32") || !strcmp(dt, "int32") ? 4
           : !strcmp(dt, "int8") || !strcmp(dt, "fp8")   ? 1
                                                         : 2;
}
static int vemu_same_nf(double o, double r, int sign)
{
    return !isfinite(r) && !!isnan(o) == !!isnan(r) &&
           (!sign || isnan(o) || !!signbit(o) == !!signbit(r));
}
static void emu_verify(const launch_rec *l)
{
    const char *dt = l->f->k->name + strlen("bt_verify_");
    const void *out = ptr_arg(l, 0);
    const double *ref = ptr_arg(l, 1);
    const int64_t *idx = ptr_arg(l, 2);
    int64_t *io = ptr_arg(l, 3);
    uint64_t G = l->grid[0], T = l->block[0];
    if (!valid_range((uintptr_t)io, (size_t)(8 + 8 * G) * 8)) {
        fault();
        return;
    }
    uint64_t items = (uint64_t)io[0];
    int mode = (int)io[1], typed = mode == 3;
    if (typed)
        mode = 1;
    size_t rs = typed ? vemu_size(dt) : 8;
    double rtol, atol;
    memcpy(&rtol, &io[2], 8);
    memcpy(&atol, &io[3], 8);
    for (uint64_t b = 0; b < G; b++) {
        uint64_t w[8] = {0, 0, 0, UINT64_MAX, UINT64_MAX, 0, 0, 0};
        double ma = 0, mr = 0;
        for (uint64_t s = b * T; s < items; s += G * T)
            for (uint64_t j = s; j < s + T && j < items; j++) {
                uint64_t i = j;
                if (mode == 2) {
                    if (!valid_range((uintptr_t)(idx + j), 8)) {
                        fault();
                        return;
                    }
                    i = (uint64_t)idx[j];
                }
                if (!valid_range((uintptr_t)out + i * vemu_size(dt), vemu_size(dt)) ||
                    (mode && !valid_range((uintptr_t)ref + j * rs, rs))) {
                    fault();
                    return;
                }
                double o = vemu_get(dt, out, i),
                       r = typed ? vemu_get(dt, ref, j) : mode ? ref[j] : 0;
                if (!isfinite(o)) {
                    if (mode == 2)
                        w[7] += vemu_same_nf(o, r, 0);
                    else if (mode == 1 && vemu_same_nf(o, r, 1))
                        w[0]++;
                    else if (w[2]++, i < w[3])
                        w[3] = i;
                    continue;
                }
                w[0]++;
                if (mode == 0) {
                    ma = fmax(ma, fabs(o));
                    continue;
                }
                int bad = !isfinite(r);
                if (!(mode == 1 && bad)) {
                    double err = fabs(o - r), rel = err / fmax(fabs(r), 1e-30);
                    ma = fmax(ma, err);
                    if (fabs(r) > atol)
                        mr = fmax(mr, rel);
                    bad |= err > atol + rtol * fabs(r);
                }
                if (bad && (w[1]++, i < w[4]))
                    w[4] = i;
            }
        memcpy(&w[5], &ma, 8);
        memcpy(&w[6], &mr, 8);
        memcpy(&io[8 + 8 * b], w, sizeof w);
    }
}
#define VERIFY_KERNELS                                                                            \
    {"bt_verify_fp32", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                      \
        {"bt_verify_fp16", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                  \
        {"bt_verify_bf16", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                  \
        {"bt_verify_fp64", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                  \
        {"bt_verify_fp8", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                   \
        {"bt_verify_int8", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                  \
        {"bt_verify_int32", 4, {8, 8, 8, 8}, 32, emu_verify, 0},                                 \
        {"bt_verify_int64", 4, {8, 8, 8, 8}, 32, emu_verify, 0},
/* ---- end of the comparison kernels ---------------------------------------------------------- */
/* vector_add_kernel(x, y, out, n, global_scratch, profile_scratch), fp32: examples/triton's
 * vector add as Triton 3.6 compiles it (BLOCK is a constexpr, so every element below n is
 * written; a misaligned buffer faults, as the vectorized access the compile chose would). A
 * CUBIN of 5 parameters is the specialization for n == 1 (Triton makes an integer argument equal
 * to 1 a constant). */
static void emu_tl_vadd(const launch_rec *l)
{
    const float *x = ptr_arg(l, 0), *y = ptr_arg(l, 1);
    float *out = ptr_arg(l, 2);
    int n = l->np == 6 ? int_arg(l, 3) : l->np == 5 ? 1 : -1;
    size_t bytes = (size_t)(n > 0 ? n : 0) * sizeof(float);
    if (n < 0 || l->block[0] % 32 || l->block[1] != 1 || l->block[2] != 1 ||
        ((uintptr_t)x | (uintptr_t)y | (uintptr_t)out) % 16 ||
        (n && (!valid_range((uintptr_t)x, bytes) || !valid_range((uintptr_t)y, bytes) ||
               !valid_range((uintptr_t)out, bytes)))) {
        fault();
        return;
    }
    for (int i = 0; i < n; i++)
        out[i] = x[i] + y[i];
}

static void emu_record(const launch_rec *l)
{
    (void)l; /* the launch is in g_last */
}

static const kdesc g_kernels[] = {
    {"vadd", 4, {8, 8, 8, 4}, 16, emu_vadd, 0},
    {"inc", 2, {8, 4}, 10, emu_inc, 0},
    {"rev_dyn", 2, {8, 8}, 12, emu_rev_dyn, 0},
    {"oob", 1, {8}, 8, emu_oob, 0},
    {"bt_flush_read", 4, {8, 8, 8, 4}, 16, emu_flush_read, 0},
    {"_Z18convolution_kernelPfPKf", 2, {8, 8}, 24, emu_conv, 0},
    {"_Z5scaleIfLi", 2, {8, 8}, 12, emu_scale, 1}, /* scale<float, F>: ..Li<F>EEvPT_PKS0_ */
    VERIFY_KERNELS
    {"vector_add_kernel", 6, {8, 8, 8, 4, 8, 8}, 26, emu_tl_vadd, 0},
    {"tl_probe", 6, {8, 4, 8, 4, 8, 8}, 32, emu_record, 0},
};
#define NKERNELS (sizeof g_kernels / sizeof g_kernels[0])

/* A variable of a module (cuModuleGetGlobal), in device memory of its own. */
typedef struct mglobal {
    char name[128];
    alloc *mem;
    struct mglobal *next;
} mglobal;

struct CUmod_st {
    unsigned magic;
    struct CUfunc_st fns[NKERNELS];
    unsigned char *image; /* a copy of the ELF image */
    size_t image_size;
    mglobal *globals;
};

/* The kernel parameters of `name` in the image, as the driver reads them: the EIATTR_KPARAM_INFO
 * entries (0x17) of its .nv.info.<name> section (each: ordinal at byte 4, size in bits 18-31 of
 * the word at byte 8). Returns their count (at most 8 recorded), -1 when the image has none. */
static int elf_params(const unsigned char *b, size_t size, const char *name, size_t psize[8])
{
    uint64_t shoff;
    uint16_t shentsize, shnum, shstrndx;
    if (size < 64 || memcmp(b, "\x7f" "ELF", 4) || b[4] != 2)
        return -1;
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&shentsize, b + 0x3a, 2);
    memcpy(&shnum, b + 0x3c, 2);
    memcpy(&shstrndx, b + 0x3e, 2);
    if (shentsize < 64 || shoff > size || (uint64_t)shnum * shentsize > size - shoff ||
        shstrndx >= shnum)
        return -1;
    uint64_t stroff, strsz;
    memcpy(&stroff, b + shoff + (uint64_t)shstrndx * shentsize + 0x18, 8);
    memcpy(&strsz, b + shoff + (uint64_t)shstrndx * shentsize + 0x20, 8);
    if (stroff > size || strsz > size - stroff)
        return -1;
    char want[160];
    snprintf(want, sizeof want, ".nv.info.%s", name);
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *h = b + shoff + (uint64_t)i * shentsize;
        uint32_t nm;
        uint64_t off, sz;
        memcpy(&nm, h, 4);
        memcpy(&off, h + 0x18, 8);
        memcpy(&sz, h + 0x20, 8);
        if (nm >= strsz || off > size || sz > size - off ||
            strncmp((const char *)b + stroff + nm, want, strsz - nm))
            continue;
        int n = 0;
        for (uint64_t p = off; p + 2 <= off + sz;) {
            uint8_t fmt = b[p], attr = b[p + 1];
            uint16_t len;
            if (fmt != 4) { /* EIFMT_NVAL 1: 2 bytes; BVAL 2, HVAL 3: 4 bytes */
                p += fmt == 1 ? 2 : 4;
                continue;
            }
            memcpy(&len, b + p + 2, 2);
            if (attr == 0x17 && len >= 12 && p + 4 + len <= off + sz) {
                uint16_t ord;
                uint32_t info;
                memcpy(&ord, b + p + 8, 2);
                memcpy(&info, b + p + 12, 4);
                if (ord < 8)
                    psize[ord] = (info >> 18) & 0x3fff;
                n = ord + 1 > n ? ord + 1 : n;
            }
            p += 4 + (uint64_t)len;
        }
        return n;
    }
    return -1;
}

/* The ELF object symbol `name` of the image: its size, or -1 when there is none. */
static long long elf_object_size(const unsigned char *b, size_t size, const char *name)
{
    uint64_t shoff;
    uint16_t shentsize, shnum;
    if (size < 64 || memcmp(b, "\x7f" "ELF", 4) || b[4] != 2)
        return -1;
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&shentsize, b + 0x3a, 2);
    memcpy(&shnum, b + 0x3c, 2);
    if (shentsize < 64 || shoff > size || (uint64_t)shnum * shentsize > size - shoff)
        return -1;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *h = b + shoff + (uint64_t)i * shentsize;
        uint32_t type, link;
        uint64_t off, sz, entsize;
        memcpy(&type, h + 4, 4);
        memcpy(&off, h + 0x18, 8);
        memcpy(&sz, h + 0x20, 8);
        memcpy(&link, h + 0x28, 4);
        memcpy(&entsize, h + 0x38, 8);
        if (type != 2 /* SHT_SYMTAB */ || entsize < 24 || off > size || sz > size - off ||
            link >= shnum)
            continue;
        const unsigned char *sh = b + shoff + (uint64_t)link * shentsize;
        uint64_t stroff, strsz;
        memcpy(&stroff, sh + 0x18, 8);
        memcpy(&strsz, sh + 0x20, 8);
        if (stroff > size || strsz > size - stroff)
            return -1;
        for (uint64_t k = 0; k + entsize <= sz; k += entsize) {
            const unsigned char *sym = b + off + k;
            uint32_t nm;
            uint64_t ssize;
            memcpy(&nm, sym, 4);
            memcpy(&ssize, sym + 16, 8);
            if ((sym[4] & 0xf) == 1 /* STT_OBJECT */ && nm < strsz &&
                strnlen((const char *)b + stroff + nm, strsz - nm) == strlen(name) &&
                !strcmp((const char *)b + stroff + nm, name))
                return (long long)ssize;
        }
    }
    return -1;
}

static const void *module_global(const struct CUmod_st *m, const char *name, size_t *size)
{
    for (const mglobal *g = m ? m->globals : NULL; g; g = g->next)
        if (!strcmp(g->name, name)) {
            *size = g->mem->size;
            return g->mem->p;
        }
    return NULL;
}

/* Frees a module with its image and its variables' memory. */
static void free_module(void *p)
{
    struct CUmod_st *m = p;
    while (m->globals) {
        mglobal *g = m->globals;
        m->globals = g->next;
        for (alloc **pa = &g_allocs; *pa; pa = &(*pa)->next)
            if (*pa == g->mem) {
                *pa = g->mem->next;
                break;
            }
        free(g->mem->p);
        free(g->mem);
        free(g);
    }
    free(m->image);
    free(m);
}

/* ---- streams, events, graphs ----------------------------------------------------------- */

struct CUstream_st {
    unsigned magic;
    int capturing;
    launch_rec *recs;
    int nrecs;
    int invalidated;
};

struct CUevent_st {
    unsigned magic;
    int recorded;
    uint64_t t;
};

struct CUgraph_st {
    unsigned magic;
    launch_rec *recs;
    int nrecs;
};

struct CUgraphExec_st {
    unsigned magic;
    launch_rec *recs;
    int nrecs;
};

/* Every live handle, so that the context's destruction frees what a lost context's owner could
 * not (as the driver does). */
typedef struct tracked {
    void *p;
    void (*destroy)(void *);
    struct tracked *next;
} tracked;
static tracked *g_tracked;

static int track(void *p, void (*destroy)(void *))
{
    tracked *t = malloc(sizeof *t);
    if (!t)
        return 0;
    *t = (tracked){p, destroy, g_tracked};
    g_tracked = t;
    return 1;
}

static void untrack(void *p)
{
    for (tracked **pt = &g_tracked; *pt; pt = &(*pt)->next)
        if ((*pt)->p == p) {
            tracked *t = *pt;
            *pt = t->next;
            free(t);
            return;
        }
}

static void free_plain(void *p) { free(p); }

static void free_stream(void *p)
{
    struct CUstream_st *s = p;
    free(s->recs);
    free(s);
}

static void free_graph(void *p)
{
    struct CUgraph_st *g = p;
    free(g->recs);
    free(g);
}

static void free_exec(void *p)
{
    struct CUgraphExec_st *x = p;
    free(x->recs);
    free(x);
}

/* A step in every launch's time, as a GPU that warms and lowers its clock (mock_cuda_step):
 * armed, then a launch of grid g_step_after seen, then from the next launch of grid g_step_from
 * on every launch takes g_step_ns longer. */
static unsigned g_step_after, g_step_from;
static uint64_t g_step_ns;
static int g_step_state; /* 0 off, 1 armed, 2 the first grid seen, 3 on */

static void run_rec(const launch_rec *l)
{
    uint64_t threads = (uint64_t)l->grid[0] * l->grid[1] * l->grid[2] * l->block[0] *
                       l->block[1] * l->block[2];
    unsigned grid = l->grid[0] * l->grid[1] * l->grid[2];
    if (g_step_state == 1 && grid == g_step_after)
        g_step_state = 2;
    else if (g_step_state == 2 && grid == g_step_from)
        g_step_state = 3;
    g_clock_ns += 2000 + threads / 16 + (g_step_state == 3 ? g_step_ns : 0);
    if (!g_pending)
        l->f->k->run(l);
}

/* ---- common checks --------------------------------------------------------------------- */

#define LOCK() pthread_mutex_lock(&g_lock)
#define RET(x)                                                                                     \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        pthread_mutex_unlock(&g_lock);                                                             \
        return r_;                                                                                 \
    } while (0)

/* The error a call that needs a current context returns first, or OK. */
static CUresult need_ctx(void)
{
    if (!g_init)
        return E_NOT_INITIALIZED;
    if (g_sticky)
        return g_sticky;
    if (t_depth <= 0 || g_refs <= 0)
        return E_INVALID_CONTEXT;
    return OK;
}

/* A synchronising call reports a pending fault, which then sticks. */
static CUresult sync_point(void)
{
    if (g_pending) {
        g_sticky = g_pending;
        g_pending = 0;
        return g_sticky;
    }
    return OK;
}

/* ---- the exported API ------------------------------------------------------------------ */

/* Not a driver function: the calling thread's current-context depth, for tests that check that
 * every push of the backend is popped. */
API int mock_ctx_depth(void)
{
    return t_depth;
}

API CUresult cuInit(unsigned int flags)
{
    if (flags)
        return E_INVALID_VALUE;
    LOCK();
    g_init = 1;
    RET(OK);
}

API CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return E_INVALID_VALUE;
    *v = 13000;
    return OK;
}

API CUresult cuDeviceGetCount(int *n)
{
    if (!g_init)
        return E_NOT_INITIALIZED;
    *n = 1;
    return OK;
}

API CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!g_init)
        return E_NOT_INITIALIZED;
    if (ordinal != 0)
        return E_INVALID_DEVICE;
    *d = 0;
    return OK;
}

API CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    if (d != 0)
        return E_INVALID_DEVICE;
    const char *n = "blocktune mock GPU";
    if (len <= 0)
        return E_INVALID_VALUE;
    strncpy(name, n, (size_t)len - 1);
    name[len - 1] = '\0';
    return OK;
}

API CUresult cuDeviceGetUuid_v2(unsigned char *uuid, CUdevice d)
{
    if (d != 0)
        return E_INVALID_DEVICE;
    for (int i = 0; i < 16; i++)
        uuid[i] = (unsigned char)(0xa0 + i);
    return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
    if (!g_init)
        return E_NOT_INITIALIZED;
    if (d != 0)
        return E_INVALID_DEVICE;
    static const int table[][2] = {
        {1, 1024},      {2, 1024},     {3, 1024},    {4, 64},       {5, 2147483647},
        {6, 65535},     {7, 65535},    {8, 49152},   {10, 32},      {12, 65536},
        {13, 1980000},  {16, 132},     {18, 0},      {36, 3201000}, {37, 6144},
        {38, 62914560}, {39, 2048},    {75, 9},      {76, 0},       {81, 233472},
        {82, 65536},    {97, 232448},  {106, 32},    {111, 1024},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i][0] == attr) {
            *v = table[i][1];
            return OK;
        }
    return E_INVALID_VALUE;
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    if (d != 0)
        return E_INVALID_DEVICE;
    *bytes = (size_t)141 << 30;
    return OK;
}

API CUresult cuDevicePrimaryCtxRetain(struct CUctx_st **ctx, CUdevice d)
{
    LOCK();
    if (!g_init)
        RET(E_NOT_INITIALIZED);
    if (d != 0)
        RET(E_INVALID_DEVICE);
    g_refs++;
    *ctx = &g_ctx;
    RET(OK);
}

API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    LOCK();
    if (d != 0 || g_refs <= 0)
        RET(E_INVALID_DEVICE);
    if (--g_refs == 0) {
        /* The context is destroyed: its memory and its fault go with it. */
        g_sticky = g_pending = 0;
        while (g_tracked) {
            tracked *t = g_tracked;
            g_tracked = t->next;
            t->destroy(t->p);
            free(t);
        }
        while (g_allocs) {
            alloc *a = g_allocs;
            g_allocs = a->next;
            free(a->p);
            free(a);
        }
    }
    RET(OK);
}

API CUresult cuCtxPushCurrent_v2(struct CUctx_st *ctx)
{
    if (ctx != &g_ctx || g_refs <= 0)
        return E_INVALID_CONTEXT;
    t_depth++;
    return OK;
}

/* The context on top of this thread's stack: the primary one when any is pushed. */
static long g_ctx_queries; /* cuCtxGetCurrent calls (mock_cuda_ctx_queries) */

API CUresult cuCtxGetCurrent(struct CUctx_st **ctx)
{
    __atomic_add_fetch(&g_ctx_queries, 1, __ATOMIC_RELAXED);
    if (!ctx)
        return E_INVALID_VALUE;
    *ctx = t_depth > 0 ? &g_ctx : NULL;
    return OK;
}

API CUresult cuCtxPopCurrent_v2(struct CUctx_st **ctx)
{
    if (t_depth <= 0)
        return E_INVALID_CONTEXT;
    t_depth--;
    if (ctx)
        *ctx = &g_ctx;
    return OK;
}

/* CU_STREAM_LEGACY and CU_STREAM_PER_THREAD: the default streams a caller may launch on (torch's
 * stream 0 arrives as the first). NULL stays refused, to catch a backend that forgot its own
 * stream. Work on them runs at once, like any other. */
static bool default_stream(const struct CUstream_st *s)
{
    return (uintptr_t)s == 0x1 || (uintptr_t)s == 0x2;
}

API CUresult cuStreamCreate(struct CUstream_st **s, unsigned int flags)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (flags != 1) /* the backend asks for a non-blocking stream */
        RET(E_INVALID_VALUE);
    *s = calloc(1, sizeof **s);
    if (!*s || !track(*s, free_stream)) {
        free(*s);
        RET(E_OUT_OF_MEMORY);
    }
    (*s)->magic = MAGIC;
    RET(OK);
}

API CUresult cuStreamDestroy_v2(struct CUstream_st *s)
{
    LOCK();
    if (!s || s->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    s->magic = 0;
    untrack(s);
    free_stream(s);
    RET(OK);
}

API CUresult cuStreamSynchronize(struct CUstream_st *s)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!default_stream(s) && (!s || s->magic != MAGIC))
        RET(E_INVALID_HANDLE);
    RET(sync_point());
}

static size_t g_alloc_limit; /* allocations above it fail (mock_cuda_alloc_limit; 0: none) */

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (bytes == 0)
        RET(E_INVALID_VALUE);
    if (bytes > ((size_t)1 << 34) || (g_alloc_limit && bytes > g_alloc_limit))
        RET(E_OUT_OF_MEMORY);
    alloc *a = calloc(1, sizeof *a);
    unsigned char *mem = a ? aligned_alloc(256, (bytes + 255) / 256 * 256) : NULL;
    if (!mem) {
        free(a);
        RET(E_OUT_OF_MEMORY);
    }
    memset(mem, 0xcd, bytes); /* like fresh device memory: not zero */
    a->p = mem;
    a->size = bytes;
    a->next = g_allocs;
    g_allocs = a;
    *p = (CUdeviceptr)(uintptr_t)mem;
    RET(OK);
}

API CUresult cuMemFree_v2(CUdeviceptr p)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    for (alloc **pa = &g_allocs; *pa; pa = &(*pa)->next) {
        if ((CUdeviceptr)(uintptr_t)(*pa)->p == p) {
            alloc *a = *pa;
            *pa = a->next;
            free(a->p);
            free(a);
            RET(OK);
        }
    }
    RET(E_INVALID_VALUE);
}

static CUresult stream_ok(struct CUstream_st *s)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (default_stream(s))
        return OK;
    if (!s || s->magic != MAGIC)
        return E_INVALID_HANDLE;
    if (s->capturing)
        return E_CAPTURE_INVALIDATED; /* the mock records launches only */
    return OK;
}

API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
                                  struct CUstream_st *s)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (!valid_range(dst, n) || !src)
        RET(E_INVALID_VALUE);
    memcpy((void *)(uintptr_t)dst, src, n);
    g_clock_ns += n / 50 + 1000;
    RET(OK);
}

API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, struct CUstream_st *s)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (!valid_range(src, n) || !dst)
        RET(E_INVALID_VALUE);
    memcpy(dst, (const void *)(uintptr_t)src, n);
    g_clock_ns += n / 50 + 1000;
    RET(OK);
}

API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                  struct CUstream_st *s)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (!valid_range(dst, n) || !valid_range(src, n))
        RET(E_INVALID_VALUE);
    memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
    g_clock_ns += n / 1000 + 1000;
    RET(OK);
}

static CUresult memset_n(CUdeviceptr dst, const void *v, size_t vs, size_t count,
                         struct CUstream_st *s)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (dst % vs || count > SIZE_MAX / vs || !valid_range(dst, count * vs))
        RET(E_INVALID_VALUE);
    unsigned char *p = (unsigned char *)(uintptr_t)dst;
    size_t done = count ? vs : 0, all = count * vs; /* the pattern, then doubled copies of it */
    if (count)
        memcpy(p, v, vs);
    for (; done < all; done *= 2)
        memcpy(p + done, p, done < all - done ? done : all - done);
    g_clock_ns += count * vs / 1000 + 1000;
    RET(OK);
}

/* What cuTensorMapEncodeTiled writes into the 128 bytes of a map (rank <= 2 recorded). */
typedef struct mock_tmap_t {
    uint64_t magic, addr, dims[2], stride1;
    uint32_t dtype, rank, box[2], swizzle, oob;
} mock_tmap_t;

API CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *addr,
                                    const unsigned long long *dims,
                                    const unsigned long long *strides, const unsigned *box,
                                    const unsigned *estrides, int interleave, int swizzle,
                                    int l2, int oob)
{
    (void)l2;
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!map || ((uintptr_t)map & 63) || rank < 1 || rank > 5 || ((uintptr_t)addr & 15) ||
        !valid_range((CUdeviceptr)(uintptr_t)addr, 1) || interleave || swizzle < 0 || swizzle > 3)
        RET(E_INVALID_VALUE);
    unsigned span = swizzle ? 16u << swizzle : 0;
    unsigned esize = dtype == 6 || dtype == 9 || dtype == 1 ? 2 : dtype == 0 ? 1
                     : dtype == 4 || dtype == 5 || dtype == 8 ? 8 : 4;
    for (unsigned i = 0; i < rank; i++) {
        if (!dims[i] || !box[i] || box[i] > 256 || estrides[i] != 1)
            RET(E_INVALID_VALUE);
        if (i && strides[i - 1] % 16)
            RET(E_INVALID_VALUE);
    }
    if ((box[0] * esize) % 16 || (span && box[0] * esize > span))
        RET(E_INVALID_VALUE);
    mock_tmap_t t = {0x746d6170u, (uint64_t)(uintptr_t)addr, {dims[0], rank > 1 ? dims[1] : 0},
                     rank > 1 ? strides[0] : 0, (uint32_t)dtype, rank,
                     {box[0], rank > 1 ? box[1] : 0}, (uint32_t)swizzle, (uint32_t)oob};
    memset(map, 0, 128);
    memcpy(map, &t, sizeof t);
    RET(OK);
}

API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, struct CUstream_st *s)
{
    return memset_n(dst, &v, 1, n, s);
}

API CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short v, size_t n, struct CUstream_st *s)
{
    return memset_n(dst, &v, 2, n, s);
}

API CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int v, size_t n, struct CUstream_st *s)
{
    return memset_n(dst, &v, 4, n, s);
}

API CUresult cuModuleLoadData(struct CUmod_st **m, const void *image)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!image || (memcmp(image, "\x7f" "ELF", 4) != 0 && memcmp(image, "//", 2) != 0 &&
                   memcmp(image, ".version", 8) != 0))
        RET(E_INVALID_IMAGE);
    /* PTX is NUL-terminated text; an ELF64 image ends with its section header table, or with a
     * section past it */
    const unsigned char *b = image;
    uint64_t shoff, end;
    uint16_t shentsize, shnum;
    if (memcmp(image, "\x7f" "ELF", 4) != 0) {
        end = strlen(image) + 1;
        goto copy;
    }
    memcpy(&shoff, b + 0x28, 8);
    memcpy(&shentsize, b + 0x3a, 2);
    memcpy(&shnum, b + 0x3c, 2);
    end = shoff + (uint64_t)shnum * shentsize;
    for (uint16_t i = 0; i < shnum; i++) {
        uint64_t off, sz;
        uint32_t type;
        memcpy(&type, b + shoff + (uint64_t)i * shentsize + 4, 4);
        memcpy(&off, b + shoff + (uint64_t)i * shentsize + 0x18, 8);
        memcpy(&sz, b + shoff + (uint64_t)i * shentsize + 0x20, 8);
        if (type != 8 /* SHT_NOBITS */ && off + sz > end)
            end = off + sz;
    }
copy:
    *m = calloc(1, sizeof **m);
    if (*m)
        (*m)->image = malloc((size_t)end);
    if (!*m || !(*m)->image || !track(*m, free_module)) {
        if (*m)
            free((*m)->image);
        free(*m);
        RET(E_OUT_OF_MEMORY);
    }
    memcpy((*m)->image, image, (size_t)end);
    (*m)->image_size = (size_t)end;
    (*m)->magic = MAGIC;
    for (size_t i = 0; i < NKERNELS; i++)
        (*m)->fns[i] = (struct CUfunc_st){MAGIC, &g_kernels[i], 49152, *m, 0, 0, {0}};
    RET(OK);
}

API CUresult cuModuleUnload(struct CUmod_st *m)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!m || m->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    m->magic = 0;
    untrack(m);
    free_module(m);
    RET(OK);
}

/* What a lookup in module m by name returns first: no context, a bad handle, or OK. */
static CUresult module_lookup_ok(const struct CUmod_st *m, const char *name)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    return !m || m->magic != MAGIC || !name ? E_INVALID_HANDLE : OK;
}

API CUresult cuModuleGetFunction(struct CUfunc_st **f, struct CUmod_st *m, const char *name)
{
    LOCK();
    CUresult r = module_lookup_ok(m, name);
    if (r)
        RET(r);
    for (size_t i = 0; i < NKERNELS; i++) {
        size_t n = strlen(g_kernels[i].name);
        if (g_kernels[i].prefix ? !strncmp(g_kernels[i].name, name, n)
                                : !strcmp(g_kernels[i].name, name)) {
            if (g_kernels[i].prefix) /* "<F>EE...": the template's integer argument */
                m->fns[i].targ = atoi(name + n);
            struct CUfunc_st *fn = &m->fns[i];
            fn->np = g_kernels[i].nparams;
            memcpy(fn->psize, g_kernels[i].psize, sizeof fn->psize);
            size_t ps[8] = {0};
            int np = elf_params(m->image, m->image_size, name, ps);
            if (np > 8)
                RET(E_INVALID_IMAGE);
            if (np >= 0) {
                fn->np = np;
                memcpy(fn->psize, ps, sizeof ps);
            }
            *f = &m->fns[i];
            RET(OK);
        }
    }
    RET(E_NOT_FOUND);
}

API CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, struct CUmod_st *m,
                                  const char *name)
{
    LOCK();
    CUresult r = module_lookup_ok(m, name);
    if (r)
        RET(r);
    size_t size = 0;
    const void *have = module_global(m, name, &size);
    if (!have) {
        long long sz = elf_object_size(m->image, m->image_size, name);
        mglobal *g = sz > 0 && strlen(name) < sizeof g->name ? calloc(1, sizeof *g) : NULL;
        alloc *a = g ? calloc(1, sizeof *a) : NULL;
        unsigned char *mem = a ? calloc(1, (size_t)sz) : NULL;
        if (!mem) {
            free(a);
            free(g);
            RET(sz > 0 ? E_OUT_OF_MEMORY : E_NOT_FOUND);
        }
        strcpy(g->name, name);
        *a = (alloc){mem, (size_t)sz, 0, g_allocs};
        g_allocs = a;
        g->mem = a;
        g->next = m->globals;
        m->globals = g;
        have = mem;
        size = (size_t)sz;
    }
    if (dptr)
        *dptr = (CUdeviceptr)(uintptr_t)have;
    if (bytes)
        *bytes = size;
    RET(OK);
}

API CUresult cuFuncGetAttribute(int *v, int attr, struct CUfunc_st *f)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!f || f->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    switch (attr) {
    case 0: /* max threads per block */
        *v = 1024;
        break;
    case 1: /* static shared */
    case 2: /* const */
    case 3: /* local */
        *v = 0;
        break;
    case 4:
        *v = f->k->regs;
        break;
    case 8:
        *v = f->dyn_limit;
        break;
    default:
        RET(E_INVALID_VALUE);
    }
    RET(OK);
}

API CUresult cuFuncSetAttribute(struct CUfunc_st *f, int attr, int v)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!f || f->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    if (attr == 14 && (v == 0 || v == 1)) /* NON_PORTABLE_CLUSTER_SIZE_ALLOWED */
        RET(OK);
    if (attr != 8 || v < 0 || v > 232448)
        RET(E_INVALID_VALUE);
    f->dyn_limit = v;
    RET(OK);
}

/* A launch (the lock held): checked, recorded, run or captured. */
static CUresult launch(struct CUfunc_st *f, const unsigned g[3], const unsigned b[3],
                       unsigned shared, const unsigned cluster[3], struct CUstream_st *s,
                       void **params, void **extra)
{
    CUresult r = need_ctx();
    if (r)
        return r;
    if (!f || f->magic != MAGIC || (!default_stream(s) && (!s || s->magic != MAGIC)))
        return E_INVALID_HANDLE;
    if (extra || (!params && f->np) || !g[0] || !g[1] || !g[2] || !b[0] || !b[1] ||
        !b[2] || b[0] > 1024 || b[1] > 1024 || b[2] > 64 || (uint64_t)b[0] * b[1] * b[2] > 1024 ||
        shared > (unsigned)f->dyn_limit || g[0] % cluster[0] || g[1] % cluster[1] ||
        g[2] % cluster[2] || (uint64_t)cluster[0] * cluster[1] * cluster[2] > 16)
        return E_INVALID_VALUE;
    launch_rec l = {f, f->np, {g[0], g[1], g[2]}, {b[0], b[1], b[2]}, shared, {{0}},
                    {cluster[0], cluster[1], cluster[2]}};
    for (int i = 0; i < f->np; i++) {
        if (!params[i])
            return E_INVALID_VALUE;
        memcpy(l.params[i], params[i], f->psize[i]);
    }
    g_last = l;
    g_launches++;
    if (!default_stream(s) && s->capturing) {
        launch_rec *grown = realloc(s->recs, (size_t)(s->nrecs + 1) * sizeof *grown);
        if (!grown)
            return E_OUT_OF_MEMORY;
        s->recs = grown;
        s->recs[s->nrecs++] = l;
        return OK;
    }
    run_rec(&l);
    return OK;
}

API CUresult cuLaunchKernel(struct CUfunc_st *f, unsigned gx, unsigned gy, unsigned gz,
                            unsigned bx, unsigned by, unsigned bz, unsigned shared,
                            struct CUstream_st *s, void **params, void **extra)
{
    LOCK();
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz}, one[3] = {1, 1, 1};
    RET(launch(f, g, b, shared, one, s, params, extra));
}

/* cuLaunchKernelEx's types, as cuda.h lays them out. */
typedef struct {
    int id;
    char pad[4];
    union {
        char pad[64];
        int i;
        struct {
            unsigned x, y, z;
        } dim;
    } value;
} mock_attr;
typedef struct {
    unsigned gx, gy, gz, bx, by, bz, shared;
    struct CUstream_st *stream;
    mock_attr *attrs;
    unsigned nattrs;
} mock_config;

API CUresult cuLaunchKernelEx(const mock_config *c, struct CUfunc_st *f, void **params,
                              void **extra)
{
    LOCK();
    if (!c || (c->nattrs && !c->attrs))
        RET(E_INVALID_VALUE);
    unsigned cluster[3] = {1, 1, 1};
    for (unsigned i = 0; i < c->nattrs; i++) {
        const mock_attr *a = &c->attrs[i];
        if (a->id == 4) { /* CLUSTER_DIMENSION */
            if (!a->value.dim.x || !a->value.dim.y || !a->value.dim.z)
                RET(E_INVALID_VALUE);
            cluster[0] = a->value.dim.x, cluster[1] = a->value.dim.y, cluster[2] = a->value.dim.z;
        } else if (a->id == 5) { /* CLUSTER_SCHEDULING_POLICY_PREFERENCE: default, spread, lb */
            if (a->value.i < 0 || a->value.i > 2)
                RET(E_INVALID_VALUE);
        } else if (a->id != 2 && a->id != 6) { /* COOPERATIVE, PROGRAMMATIC_STREAM_SERIAL. */
            RET(E_INVALID_VALUE);
        }
    }
    const unsigned g[3] = {c->gx, c->gy, c->gz}, b[3] = {c->bx, c->by, c->bz};
    RET(launch(f, g, b, c->shared, cluster, c->stream, params, extra));
}

/* Not a driver function: how many times cuCtxGetCurrent was called. */
API long mock_cuda_ctx_queries(void) { return __atomic_load_n(&g_ctx_queries, __ATOMIC_RELAXED); }

/* Not a driver function: cuMemAlloc of more than `bytes` fails with CUDA_ERROR_OUT_OF_MEMORY
 * from now on (0: no limit but the 16 GiB of any allocation), as a device whose memory is full. */
API void mock_cuda_alloc_limit(size_t bytes)
{
    pthread_mutex_lock(&g_lock);
    g_alloc_limit = bytes;
    pthread_mutex_unlock(&g_lock);
}

/* Not a driver function: from the first launch of grid `from` after a launch of grid `after`
 * (counting from this call), every launch lasts ns longer (a GPU that warms; ns 0: off). */
API int mock_cuda_step(unsigned after, unsigned from, unsigned long long ns)
{
    LOCK();
    g_step_after = after, g_step_from = from, g_step_ns = ns;
    g_step_state = ns ? 1 : 0;
    RET(0);
}

/* Not a driver function: the last launch (cuLaunchKernel or cuLaunchKernelEx) and how many
 * there were; params gets 8 slots of 8 bytes (the parameter values, each in its slot's first
 * bytes). Returns the number of launches so far. */
API int mock_cuda_last_launch(unsigned grid[3], unsigned block[3], unsigned *shared,
                              unsigned cluster[3], unsigned char params[64])
{
    LOCK();
    for (int i = 0; i < 3; i++) {
        grid[i] = g_last.grid[i];
        block[i] = g_last.block[i];
        cluster[i] = g_last.cluster[i];
    }
    *shared = g_last.dyn;
    memcpy(params, g_last.params, 64);
    RET(g_launches);
}

API CUresult cuEventCreate(struct CUevent_st **e, unsigned int flags)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (flags != 0 && flags != 2) /* default, or CU_EVENT_DISABLE_TIMING */
        RET(E_INVALID_VALUE);
    *e = calloc(1, sizeof **e);
    if (!*e || !track(*e, free_plain)) {
        free(*e);
        RET(E_OUT_OF_MEMORY);
    }
    (*e)->magic = MAGIC;
    RET(OK);
}

API CUresult cuEventDestroy_v2(struct CUevent_st *e)
{
    LOCK();
    if (!e || e->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    e->magic = 0;
    untrack(e);
    free(e);
    RET(OK);
}

API CUresult cuEventRecord(struct CUevent_st *e, struct CUstream_st *s)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (!e || e->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    e->recorded = 1;
    e->t = g_clock_ns;
    RET(OK);
}

API CUresult cuEventSynchronize(struct CUevent_st *e)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!e || e->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    RET(sync_point());
}

API CUresult cuEventElapsedTime_v2(float *ms, struct CUevent_st *a, struct CUevent_st *b)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!a || !b || a->magic != MAGIC || b->magic != MAGIC || !a->recorded || !b->recorded)
        RET(E_INVALID_HANDLE);
    *ms = (float)((double)(b->t - a->t) / 1e6);
    RET(OK);
}

API CUresult cuStreamBeginCapture_v2(struct CUstream_st *s, int mode)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (mode < 0 || mode > 2)
        RET(E_INVALID_VALUE);
    s->capturing = 1;
    s->nrecs = 0;
    RET(OK);
}

API CUresult cuStreamEndCapture(struct CUstream_st *s, struct CUgraph_st **g)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!s || s->magic != MAGIC || !s->capturing)
        RET(E_INVALID_VALUE);
    s->capturing = 0;
    *g = calloc(1, sizeof **g);
    if (!*g || !track(*g, free_graph)) {
        free(*g);
        RET(E_OUT_OF_MEMORY);
    }
    (*g)->magic = MAGIC;
    (*g)->recs = s->recs;
    (*g)->nrecs = s->nrecs;
    s->recs = NULL;
    s->nrecs = 0;
    RET(OK);
}

API CUresult cuGraphInstantiateWithFlags(struct CUgraphExec_st **x, struct CUgraph_st *g,
                                         unsigned long long flags)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    if (!g || g->magic != MAGIC || flags)
        RET(E_INVALID_VALUE);
    *x = calloc(1, sizeof **x);
    launch_rec *recs = g->nrecs ? malloc((size_t)g->nrecs * sizeof *recs) : NULL;
    if (!*x || (g->nrecs && !recs) || !track(*x, free_exec)) {
        free(*x);
        free(recs);
        RET(E_OUT_OF_MEMORY);
    }
    if (g->nrecs)
        memcpy(recs, g->recs, (size_t)g->nrecs * sizeof *recs);
    (*x)->magic = MAGIC;
    (*x)->recs = recs;
    (*x)->nrecs = g->nrecs;
    RET(OK);
}

API CUresult cuGraphLaunch(struct CUgraphExec_st *x, struct CUstream_st *s)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (!x || x->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    for (int i = 0; i < x->nrecs; i++)
        run_rec(&x->recs[i]);
    RET(OK);
}

API CUresult cuGraphExecDestroy(struct CUgraphExec_st *x)
{
    LOCK();
    if (!x || x->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    x->magic = 0;
    untrack(x);
    free_exec(x);
    RET(OK);
}

API CUresult cuGraphDestroy(struct CUgraph_st *g)
{
    LOCK();
    if (!g || g->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    g->magic = 0;
    untrack(g);
    free_graph(g);
    RET(OK);
}

static const struct {
    int code;
    const char *name, *text;
} g_errors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {E_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {E_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {E_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {E_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {E_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {E_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {E_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {E_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {E_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {E_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
};

API CUresult cuGetErrorName(CUresult e, const char **s)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == e) {
            *s = g_errors[i].name;
            return OK;
        }
    *s = NULL;
    return E_INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult e, const char **s)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == e) {
            *s = g_errors[i].text;
            return OK;
        }
    *s = NULL;
    return E_INVALID_VALUE;
}

/* ---- embedding ------------------------------------------------------------------------- */

static struct CUctx_st g_ctx_other = {MAGIC}; /* another context, for foreign allocations */

/* Test-only: device memory that another context of device 0 (other_device 0) or device 1's
 * context (other_device 1) owns. */
API CUresult mock_cuda_alloc_foreign(CUdeviceptr *p, size_t bytes, int other_device)
{
    LOCK();
    alloc *a = calloc(1, sizeof *a);
    unsigned char *mem = a ? aligned_alloc(256, (bytes + 255) / 256 * 256) : NULL;
    if (!mem) {
        free(a);
        RET(E_OUT_OF_MEMORY);
    }
    a->p = mem;
    a->size = bytes;
    a->owner = other_device ? 2 : 1;
    a->next = g_allocs;
    g_allocs = a;
    *p = (CUdeviceptr)(uintptr_t)mem;
    RET(OK);
}

enum { PA_CONTEXT = 1, PA_DEVICE_ORDINAL = 9, PA_RANGE_START = 11, PA_RANGE_SIZE = 12 };

API CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
    LOCK();
    if (!g_init)
        RET(E_NOT_INITIALIZED);
    if (!data)
        RET(E_INVALID_VALUE);
    alloc *a = g_allocs;
    while (a && !(p >= (CUdeviceptr)(uintptr_t)a->p && p - (CUdeviceptr)(uintptr_t)a->p < a->size))
        a = a->next;
    if (!a)
        RET(E_INVALID_VALUE); /* as the driver answers for memory it does not know */
    switch (attr) {
    case PA_CONTEXT:
        *(struct CUctx_st **)data = a->owner == 0 ? &g_ctx : &g_ctx_other;
        break;
    case PA_DEVICE_ORDINAL:
        *(int *)data = a->owner == 2 ? 1 : 0;
        break;
    case PA_RANGE_START:
        *(CUdeviceptr *)data = (CUdeviceptr)(uintptr_t)a->p;
        break;
    case PA_RANGE_SIZE:
        *(size_t *)data = a->size;
        break;
    default:
        RET(E_INVALID_VALUE);
    }
    RET(OK);
}

API CUresult cuCtxGetDevice(CUdevice *d)
{
    LOCK();
    CUresult r = need_ctx();
    if (r)
        RET(r);
    *d = 0;
    RET(OK);
}

API CUresult cuStreamGetCtx(struct CUstream_st *s, struct CUctx_st **ctx)
{
    LOCK();
    if (!s || s->magic != MAGIC)
        RET(E_INVALID_HANDLE);
    *ctx = &g_ctx;
    RET(OK);
}

API CUresult cuStreamWaitEvent(struct CUstream_st *s, struct CUevent_st *e, unsigned int flags)
{
    LOCK();
    CUresult r = stream_ok(s);
    if (r)
        RET(r);
    if (!e || e->magic != MAGIC || flags != 0)
        RET(e && e->magic == MAGIC ? E_INVALID_VALUE : E_INVALID_HANDLE);
    RET(OK);
}
