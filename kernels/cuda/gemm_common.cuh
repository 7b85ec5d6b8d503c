/* gemm_common.cuh — what the CUDA GEMM kernels share; each one's spec places it before the
 * kernel's own file ("sources": {"cuda": ["../cuda/gemm_common.cuh", "../cuda/gemm_mma.cu"]}),
 * after the prelude. The grouped tile order (GROUP_M), and the output type of the tensor-core
 * families with its stores. */

/* Tile t of a num_m × num_n grid of tiles in grouped order: GROUP_M rows of tiles are walked
 * column by column, so that tiles running at the same time share rows of A and columns of B in
 * L2. Gives the tile's row and column (in tiles). */
__device__ __forceinline__ void grouped_tile(int t, int num_m, int num_n, int *pm, int *pn)
{
    const int in_group = GROUP_M * num_n;
    const int first_m = (t / in_group) * GROUP_M;
    const int gsize = min(num_m - first_m, GROUP_M);
    *pm = first_m + (t % in_group) % gsize;
    *pn = (t % in_group) / gsize;
}

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
