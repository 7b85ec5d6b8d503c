/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_tc.cuh — the output side of the tensor-core GEMMs (gemm_mma, gemm_wgmma), listed after
 * gemm_common.cuh in their specs: the output type and pair stores, and 16-byte chunks gathered
 * from the accumulator layout that mma.sync and wgmma both leave (per 8 columns, lane i of a quad
 * holds columns 2i, 2i+1 of a row and of the row 8 below); gemm_wgmma stores with them (EPI),
 * gemm_mma stores pairs (16-byte stores were no clear gain there: bench/NOTES.md 21). */

/* Two floats rounded to the storage type (fp16 or bf16), packed low then high. */
__device__ __forceinline__ unsigned pack2(float lo, float hi)
{
    return (unsigned)bt_from_f(lo) | ((unsigned)bt_from_f(hi) << 16);
}

/* The output type: the inputs' (ST), or fp32 when the problem asks for it (a spec whose C has
 * "dtype": {"if": "OUT_FP32", "then": "fp32", ...} gets the define BT_TYPE_C_FP32). out2 stores a
 * pair at an even column (aligned for both types). */
#if defined(BT_TYPE_C_FP32)
typedef float CT;
__device__ __forceinline__ CT out1(float v) { return v; }
__device__ __forceinline__ void out2(CT *p, float lo, float hi)
{
    *reinterpret_cast<float2 *>(p) = make_float2(lo, hi);
}
#else
typedef ST CT;
__device__ __forceinline__ CT out1(float v) { return bt_from_f(v); }
__device__ __forceinline__ void out2(CT *p, float lo, float hi)
{
    *reinterpret_cast<unsigned *>(p) = pack2(lo, hi);
}
#endif

/* 16-byte stores instead of 4-byte pairs (whole 32-byte sectors): for one row (h: the row or the
 * row 8 below), the four lanes of a quad hold the pairs at columns 8q + 2i (lane i) of
 * q = 4p..4p+3 in v[q * 4 + 2h], v[q * 4 + 2h + 1]; three butterfly exchanges give lane j the
 * eight columns of q = 4p + j, packed. Every lane of the warp must take part. */
__device__ __forceinline__ unsigned sel4(unsigned a0, unsigned a1, unsigned a2, unsigned a3, int i)
{
    return i == 0 ? a0 : i == 1 ? a1 : i == 2 ? a2 : a3;
}
template <int NV>
__device__ __forceinline__ uint4 quad_chunk(const float (&v)[NV], int p, int h, int j)
{
    unsigned u[4], o[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
        u[k] = pack2(v[(4 * p + k) * 4 + 2 * h], v[(4 * p + k) * 4 + 2 * h + 1]);
#pragma unroll
    for (int m = 0; m < 4; m++) { /* from lane j^m: its pair of q = 4p + j, at position j^m */
        const unsigned send = sel4(u[0], u[1], u[2], u[3], j ^ m);
        o[m] = m ? __shfl_xor_sync(0xffffffffu, send, m) : send;
    }
    return make_uint4(sel4(o[0], o[1], o[2], o[3], j), sel4(o[0], o[1], o[2], o[3], 1 ^ j),
                      sel4(o[0], o[1], o[2], o[3], 2 ^ j), sel4(o[0], o[1], o[2], o[3], 3 ^ j));
}
