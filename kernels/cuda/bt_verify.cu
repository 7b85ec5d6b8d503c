/* SPDX-License-Identifier: Apache-2.0 */
/* bt_verify.cu — blocktune's own comparison kernels (internal; compiled once per device through
 * the kernel cache, src/engine/devcmp.c): a config's output, left on the device, compared with
 * the reference there, so that only a few bytes per block cross to the host. One entry per output
 * dtype, bt_verify_<dtype>(out, ref, idx, io), the same arithmetic in fp64 as the host comparison
 * (src/engine/host.c, bt__verify_compare). Compiled after prelude.cuh with BT_DTYPE_FP16 (its
 * fp16 conversion, bt_to_f):
 *   io[0] the items, io[1] the mode (0: scan every element for NaN/Inf, no reference, the largest
 *   |out| as the absolute error; 1: dense, out[i] against ref[i]; 2: sampled, out[idx[s]] against
 *   ref[s]; 3: dense against a reference of the output's own type, ref then holding T, not
 *   doubles: a device reference's outputs left on the device), io[2], io[3] the bits of
 *   rtol and atol; block b writes its 8 words at io[8 + 8 b]: checked, bad, non-finite, the first
 *   non-finite index, the first bad index (~0: none), the bits of the largest absolute and relative
 *   errors, and the sampled non-finite outputs the reference explains (same non-finite value). */
#define BT_CMP_THREADS 128
#define BT_NONE 0xffffffffffffffffull

typedef unsigned long long u64;

struct bt_acc {
    u64 checked, bad, nf, first_nf, first_bad, explained;
    double max_abs, max_rel;
};

__device__ __forceinline__ bool bt_same_nonfinite(double o, double r, bool sign)
{
    return !isfinite(r) && (isnan(o) != 0) == (isnan(r) != 0) &&
           (!sign || isnan(o) || (signbit(o) != 0) == (signbit(r) != 0));
}

/* One element: o the output at index i, r its reference (mode 1, 2). */
__device__ __forceinline__ void bt_item(bt_acc &a, int mode, double o, double r, u64 i,
                                        double rtol, double atol)
{
    if (!isfinite(o)) {
        if (mode == 2) { /* counted by the scan; explained when the reference agrees */
            if (bt_same_nonfinite(o, r, false))
                a.explained++;
            return;
        }
        if (mode == 1 && bt_same_nonfinite(o, r, true)) {
            a.checked++;
            return;
        }
        a.nf++;
        a.first_nf = min(a.first_nf, i);
        return;
    }
    a.checked++;
    if (mode == 0) { /* against zeros, as the host checks outputs for being written */
        a.max_abs = fmax(a.max_abs, fabs(o));
        return;
    }
    if (mode == 1 && !isfinite(r)) {
        a.bad++;
        a.first_bad = min(a.first_bad, i);
        return;
    }
    double err = fabs(o - r), rel = err / fmax(fabs(r), 1e-30);
    a.max_abs = fmax(a.max_abs, err);
    if (fabs(r) > atol)
        a.max_rel = fmax(a.max_rel, rel);
    if (!isfinite(r) || err > atol + rtol * fabs(r)) {
        a.bad++;
        a.first_bad = min(a.first_bad, i);
    }
}

/* The block's accumulators reduced (shared memory, a tree) and written to its words of io. */
__device__ void bt_block_store(const bt_acc &a, long long *io)
{
    __shared__ u64 s[8][BT_CMP_THREADS];
    const int t = threadIdx.x;
    s[0][t] = a.checked, s[1][t] = a.bad, s[2][t] = a.nf, s[3][t] = a.first_nf;
    s[4][t] = a.first_bad, s[5][t] = __double_as_longlong(a.max_abs);
    s[6][t] = __double_as_longlong(a.max_rel), s[7][t] = a.explained;
    __syncthreads();
    for (int h = BT_CMP_THREADS / 2; h > 0; h >>= 1) {
        if (t < h) {
            s[0][t] += s[0][t + h], s[1][t] += s[1][t + h], s[2][t] += s[2][t + h];
            s[3][t] = min(s[3][t], s[3][t + h]), s[4][t] = min(s[4][t], s[4][t + h]);
            /* non-negative doubles order as their bits */
            s[5][t] = max(s[5][t], s[5][t + h]), s[6][t] = max(s[6][t], s[6][t + h]);
            s[7][t] += s[7][t + h];
        }
        __syncthreads();
    }
    if (t < 8)
        io[8 + 8 * (long long)blockIdx.x + t] = (long long)s[t][0];
}

#define BT_VERIFY_KERNEL(NAME, T, CONV)                                                           \
    extern "C" __global__ void __launch_bounds__(BT_CMP_THREADS)                                \
        NAME(const T *out, const double *ref, const long long *idx, long long *io)              \
    {                                                                                            \
        const u64 items = (u64)io[0];                                                            \
        const int mode = (int)io[1];                                                             \
        const double rtol = __longlong_as_double(io[2]), atol = __longlong_as_double(io[3]);     \
        bt_acc a = {0, 0, 0, BT_NONE, BT_NONE, 0, 0.0, 0.0};                                     \
        const u64 step = (u64)gridDim.x * BT_CMP_THREADS;                                        \
        for (u64 s = (u64)blockIdx.x * BT_CMP_THREADS + threadIdx.x; s < items; s += step) {     \
            const u64 i = mode == 2 ? (u64)idx[s] : s;                                           \
            const T v = out[i];                                                                  \
            const double o = (double)(CONV);                                                     \
            double r = 0.0;                                                                      \
            if (mode == 3) { /* the reference in the output's own type */                        \
                const T v = ((const T *)(const void *)ref)[s];                                   \
                r = (double)(CONV);                                                              \
            } else if (mode)                                                                     \
                r = ref[s];                                                                      \
            bt_item(a, mode == 3 ? 1 : mode, o, r, i, rtol, atol);                               \
        }                                                                                        \
        bt_block_store(a, io);                                                                   \
    }

BT_VERIFY_KERNEL(bt_verify_fp32, float, v)
BT_VERIFY_KERNEL(bt_verify_fp16, unsigned short, bt_to_f(v))
BT_VERIFY_KERNEL(bt_verify_bf16, unsigned short, __uint_as_float(((unsigned)v) << 16))
BT_VERIFY_KERNEL(bt_verify_fp64, double, v)
BT_VERIFY_KERNEL(bt_verify_fp8, unsigned char, v)
BT_VERIFY_KERNEL(bt_verify_int8, signed char, v)
BT_VERIFY_KERNEL(bt_verify_int32, int, v)
BT_VERIFY_KERNEL(bt_verify_int64, long long, v)
