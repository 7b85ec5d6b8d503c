/* SPDX-License-Identifier: Apache-2.0 */
/* prelude.cl — prepended by blocktune to every built-in OpenCL kernel.
 * Storage type ST and LOAD/STORE for the problem dtype (BT_DTYPE_FP32 / _FP16 / _BF16, set by the
 * engine). fp16 uses the core vload_half/vstore_half (no cl_khr_fp16 needed); bf16 is the upper
 * half of an fp32, stored with round-to-nearest-even. Arithmetic is always in float. */
#if defined(BT_DTYPE_FP16)
typedef ushort ST;
inline float bt_h2f(ushort h)
{
    uint sign = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
    if (e == 0x1fu)
        return as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0)
        return as_float(sign) + (float)m * 5.9604644775390625e-8f; /* m * 2^-24 */
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}
inline ushort bt_f2h(float f)
{
    uint u = as_uint(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (ushort)(sign | 0x7e00u);
    if (a >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return (ushort)(sign | 0x7c00u);
    if (a < 0x38800000u) { /* subnormal half: round m * 2^24 to nearest even */
        float v = as_float(a) * 16777216.0f;
        return (ushort)(sign | (uint)rint(v));
    }
    uint r = a + 0xfffu + ((a >> 13) & 1u) - 0x38000000u;
    return (ushort)(sign | (r >> 13));
}
#define LOAD(p, i) bt_h2f((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = bt_f2h(v))
#elif defined(BT_DTYPE_BF16)
typedef ushort ST;
#define LOAD(p, i) as_float(((uint)(p)[(i)]) << 16)
inline ushort bt_f2bf(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}
#define STORE(p, i, v) ((p)[(i)] = bt_f2bf(v))
#else
typedef float ST;
#define LOAD(p, i) ((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = (v))
#endif
#ifndef BT_THREADS
#define BT_THREADS 256
#endif
