/* SPDX-License-Identifier: Apache-2.0 */
/* bt_verify.cl — blocktune's own comparison kernels (internal; compiled once per device through
 * the kernel cache, src/engine/devcmp.c): a config's output, left on the device, compared with
 * the reference there, so that only a few bytes per work-group cross to the host. One entry per
 * output dtype, bt_verify_<dtype>(out, ref, idx, io), the same arithmetic in fp64 as the host
 * comparison (src/engine/host.c, bt__verify_compare); a device without cl_khr_fp64 fails to
 * build it and is verified on the host. Compiled after prelude.cl with BT_DTYPE_FP16 (its fp16
 * conversion, bt_h2f). The layout of io is kernels/cuda/bt_verify.cu's:
 *   io[0] the items, io[1] the mode (0: scan every element for NaN/Inf, no reference, the
 *   largest |out| as the absolute error; 1: dense, out[i] against ref[i]; 2: sampled, out[idx[s]]
 *   against ref[s]; 3: dense against a reference of the output's own type), io[2], io[3] the
 *   bits of rtol and atol; group g writes its 8 words at io[8 + 8 g]: checked, bad, non-finite, the first
 *   non-finite index, the first bad index (~0: none), the bits of the largest absolute and
 *   relative errors, and the sampled non-finite outputs the reference explains. */
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define BT_CMP_THREADS 128
#define BT_NONE 0xfffffffffffffffful

typedef struct bt_acc {
    ulong checked, bad, nf, first_nf, first_bad, explained;
    double max_abs, max_rel;
} bt_acc;

inline bool bt_same_nonfinite(double o, double r, bool sign)
{
    return !isfinite(r) && (isnan(o) != 0) == (isnan(r) != 0) &&
           (!sign || isnan(o) || (signbit(o) != 0) == (signbit(r) != 0));
}

/* One element: o the output at index i, r its reference (mode 1, 2). */
inline void bt_item(bt_acc *a, int mode, double o, double r, ulong i, double rtol, double atol)
{
    if (!isfinite(o)) {
        if (mode == 2) { /* counted by the scan; explained when the reference agrees */
            if (bt_same_nonfinite(o, r, false))
                a->explained++;
            return;
        }
        if (mode == 1 && bt_same_nonfinite(o, r, true)) {
            a->checked++;
            return;
        }
        a->nf++;
        a->first_nf = min(a->first_nf, i);
        return;
    }
    a->checked++;
    if (mode == 0) { /* against zeros, as the host checks outputs for being written */
        a->max_abs = fmax(a->max_abs, fabs(o));
        return;
    }
    if (mode == 1 && !isfinite(r)) {
        a->bad++;
        a->first_bad = min(a->first_bad, i);
        return;
    }
    double err = fabs(o - r), rel = err / fmax(fabs(r), 1e-30);
    a->max_abs = fmax(a->max_abs, err);
    if (fabs(r) > atol)
        a->max_rel = fmax(a->max_rel, rel);
    if (!isfinite(r) || err > atol + rtol * fabs(r)) {
        a->bad++;
        a->first_bad = min(a->first_bad, i);
    }
}

/* The group's accumulators reduced (local memory, a tree) and written to its words of io. */
inline void bt_group_store(const bt_acc *a, __global long *io, __local ulong (*s)[BT_CMP_THREADS])
{
    const int t = (int)get_local_id(0);
    s[0][t] = a->checked, s[1][t] = a->bad, s[2][t] = a->nf, s[3][t] = a->first_nf;
    s[4][t] = a->first_bad, s[5][t] = as_ulong(a->max_abs), s[6][t] = as_ulong(a->max_rel);
    s[7][t] = a->explained;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = BT_CMP_THREADS / 2; h > 0; h >>= 1) {
        if (t < h) {
            s[0][t] += s[0][t + h], s[1][t] += s[1][t + h], s[2][t] += s[2][t + h];
            s[3][t] = min(s[3][t], s[3][t + h]), s[4][t] = min(s[4][t], s[4][t + h]);
            /* non-negative doubles order as their bits */
            s[5][t] = max(s[5][t], s[5][t + h]), s[6][t] = max(s[6][t], s[6][t + h]);
            s[7][t] += s[7][t + h];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t < 8)
        io[8 + 8 * (long)get_group_id(0) + t] = (long)s[t][0];
}

#define BT_VERIFY_KERNEL(NAME, T, CONV)                                                           \
    __kernel __attribute__((reqd_work_group_size(BT_CMP_THREADS, 1, 1))) void NAME(              \
        __global const T *out, __global const double *ref, __global const long *idx,             \
        __global long *io)                                                                       \
    {                                                                                            \
        __local ulong s[8][BT_CMP_THREADS];                                                      \
        const ulong items = (ulong)io[0];                                                        \
        const int mode = (int)io[1];                                                             \
        const double rtol = as_double(io[2]), atol = as_double(io[3]);                           \
        bt_acc a = {0, 0, 0, BT_NONE, BT_NONE, 0, 0.0, 0.0};                                     \
        const ulong step = (ulong)get_num_groups(0) * BT_CMP_THREADS;                            \
        for (ulong j = (ulong)get_group_id(0) * BT_CMP_THREADS + get_local_id(0); j < items;     \
             j += step) {                                                                        \
            const ulong i = mode == 2 ? (ulong)idx[j] : j;                                       \
            const T v = out[i];                                                                  \
            const double o = (double)(CONV);                                                     \
            double r = 0.0;                                                                      \
            if (mode == 3) { /* the reference in the output's own type */                        \
                const T v = ((__global const T *)ref)[j];                                        \
                r = (double)(CONV);                                                              \
            } else if (mode)                                                                     \
                r = ref[j];                                                                      \
            bt_item(&a, mode == 3 ? 1 : mode, o, r, i, rtol, atol);                              \
        }                                                                                        \
        bt_group_store(&a, io, s);                                                               \
    }

BT_VERIFY_KERNEL(bt_verify_fp32, float, v)
BT_VERIFY_KERNEL(bt_verify_fp16, ushort, bt_h2f(v))
BT_VERIFY_KERNEL(bt_verify_bf16, ushort, as_float(((uint)v) << 16))
BT_VERIFY_KERNEL(bt_verify_fp64, double, v)
BT_VERIFY_KERNEL(bt_verify_fp8, uchar, v)
BT_VERIFY_KERNEL(bt_verify_int8, char, v)
BT_VERIFY_KERNEL(bt_verify_int32, int, v)
BT_VERIFY_KERNEL(bt_verify_int64, long, v)
