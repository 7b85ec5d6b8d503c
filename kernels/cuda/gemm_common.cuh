/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_common.cuh — what every CUDA GEMM kernel shares: the grouped tile order (GROUP_M). Each
 * GEMM's spec lists it before the kernel's own file ("sources": {"cuda": ["../cuda/gemm_common.cuh",
 * "../cuda/gemm.cu"]}), after the prelude; the tensor-core families add gemm_tc.cuh. */

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
