/* SPDX-License-Identifier: Apache-2.0 */
/* prelude.cuh — prepended by blocktune to every built-in CUDA kernel (compiled with NVRTC).
 * Storage type ST and LOAD/STORE for the problem dtype (BT_DTYPE_FP32 / _FP16 / _BF16): fp16 and
 * bf16 are stored as unsigned short and converted with the PTX cvt instructions (no headers), so
 * arithmetic is always fp32. Raw<B>::T is an unsigned type of B bytes for vector loads. */
#if defined(BT_DTYPE_FP16)
typedef unsigned short ST;
__device__ __forceinline__ float bt_to_f(unsigned short h)
{
    float f;
    asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short bt_from_f(float f)
{
    unsigned short h;
    asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
    return h;
}
#elif defined(BT_DTYPE_BF16)
typedef unsigned short ST;
__device__ __forceinline__ float bt_to_f(unsigned short h) { return __uint_as_float(((unsigned)h) << 16); }
__device__ __forceinline__ unsigned short bt_from_f(float f)
{
    unsigned short h;
    asm("{ .reg .b16 t; cvt.rn.bf16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(f));
    return h;
}
#else
typedef float ST;
__device__ __forceinline__ float bt_to_f(float x) { return x; }
__device__ __forceinline__ float bt_from_f(float x) { return x; }
#endif
#define LOAD(p, i) bt_to_f((p)[(i)])
#define STORE(p, i, v) ((p)[(i)] = bt_from_f(v))
#define BT_NEG_INF __int_as_float(0xff800000)
#ifndef BT_THREADS
#define BT_THREADS 256
#endif

template <int B> struct Raw;
template <> struct Raw<16> { typedef uint4 T; };
template <> struct Raw<8> { typedef uint2 T; };
template <> struct Raw<4> { typedef unsigned T; };
template <> struct Raw<2> { typedef unsigned short T; };
template <> struct Raw<1> { typedef unsigned char T; };

/* N consecutive elements loaded or stored as one access of N * sizeof(ST) bytes (aligned). */
template <int N> struct Vec {
    union {
        typename Raw<N * (int)sizeof(ST)>::T raw;
        ST e[N];
    };
};
template <int N> __device__ __forceinline__ Vec<N> vload(const ST *p)
{
    Vec<N> v;
    v.raw = __ldg(reinterpret_cast<const typename Raw<N * (int)sizeof(ST)>::T *>(p));
    return v;
}
template <int N> __device__ __forceinline__ void vstore(ST *p, const Vec<N> &v)
{
    *reinterpret_cast<typename Raw<N * (int)sizeof(ST)>::T *>(p) = v.raw;
}
/* Streaming variants (cache-streaming: evict first) for data touched once; CS selects them in the
 * kernels that tune it (0: the plain path). */
#ifndef CS
#define CS 0
#endif
template <typename T> __device__ __forceinline__ T bt_ld_cs(const T *p) { return __ldcs(p); }
template <typename T> __device__ __forceinline__ void bt_st_cs(T *p, const T &v) { __stcs(p, v); }
template <int N> __device__ __forceinline__ Vec<N> vload_s(const ST *p)
{
    if (!CS)
        return vload<N>(p);
    Vec<N> v;
    v.raw = bt_ld_cs(reinterpret_cast<const typename Raw<N * (int)sizeof(ST)>::T *>(p));
    return v;
}
template <int N> __device__ __forceinline__ void vstore_s(ST *p, const Vec<N> &v)
{
    if (!CS)
        vstore<N>(p, v);
    else
        bt_st_cs(reinterpret_cast<typename Raw<N * (int)sizeof(ST)>::T *>(p), v.raw);
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
/* Block-wide sum/max; every thread gets the result. scratch: 32 floats of shared memory. */
__device__ __forceinline__ float block_sum(float v, float *scratch)
{
    v = warp_sum(v);
    if (BT_THREADS > 32) {
        const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
        __syncthreads();
        if (l == 0)
            scratch[w] = v;
        __syncthreads();
        v = l < BT_THREADS / 32 ? scratch[l] : 0.0f;
        v = warp_sum(v);
    }
    return v;
}
__device__ __forceinline__ float block_max(float v, float *scratch)
{
    v = warp_max(v);
    if (BT_THREADS > 32) {
        const int w = threadIdx.x >> 5, l = threadIdx.x & 31;
        __syncthreads();
        if (l == 0)
            scratch[w] = v;
        __syncthreads();
        v = l < BT_THREADS / 32 ? scratch[l] : BT_NEG_INF;
        v = warp_max(v);
    }
    return v;
}
