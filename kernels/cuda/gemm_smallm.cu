/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_smallm.cu — C = A·B for small M (the decode step of an LLM): A (M×K), B (K×N), C (M×N)
 * row-major, fp16/bf16 in, fp32 accumulation, C in the inputs' type or fp32 (OUT_FP32), M ≤ 64,
 * any N and K: the problem and arguments of gemm, gemm_mma and gemm_wgmma. The block structure
 * and the copy of A into shared memory are gemm_smallm_reg.cuh's, the split-K reduction
 * gemm_smallm.cuh's.
 *
 * Each warp owns TN columns of B and streams them over its K steps; a batch of U steps of loads
 * per thread is in flight before any of it is used.
 *
 * WARP_N (TN) = 32, 64 or 128: tensor cores (MATH=1). A is mma's A operand (M in
 * MT = cdiv(BM, 16) tiles of 16 rows, from shared memory), B its B operand, built in registers
 * from row loads: no shared memory and no ldmatrix for B. One K step is 32 rows. Lane 4g + t
 * loads VW columns (VW·g .. VW·g+VW-1 of each group c of 8·VW columns; VW = 8, 16-byte loads, or
 * VW = 4 at TN = 32, 8-byte loads: half the accumulators for large M) of the 8 rows
 * k = 8t .. 8t+7 of the step (r_0 .. r_7), and 16 bytes of rows g and g + 8 of each A tile at
 * the same k (x, y). The n index g of mma tile j (0 .. VW-1) stands for column VW·g + j of the
 * group, and of the step's two k16 halves h, the k slots {2t, 2t+1, 2t+8, 2t+9} of lane t stand
 * for rows 8t + 4h + {0, 1, 2, 3}, the same in both operands, so the sum runs over k in another
 * order:
 *   a0 = x.word[2h]  a1 = y.word[2h]  a2 = x.word[2h+1]  a3 = y.word[2h+1]
 *   b0 = prmt(r_4h.word[j/2], r_4h+1.word[j/2])  b1 = prmt(r_4h+2.word[j/2], r_4h+3.word[j/2])
 * where prmt takes the low halves of both words for even j, the high halves for odd j (row 2t
 * in the low half, 2t+1 in the high). The accumulators of tile (i, c, j): c0 = C[16i+g][2t·VW+j],
 * c1 = C[16i+g][(2t+1)·VW+j], c2 and c3 the same for row 16i+g+8 (columns of group c).
 *
 * WARP_N = 256: CUDA cores (MATH=0, BM ≤ 4): lane l owns 8 consecutive columns (16-byte loads);
 * a K step is 8 rows, A's 8 values of the step in each row of A read as one broadcast 16-byte
 * load.
 *
 * VEC=1 (N a multiple of 8: 16-byte rows of B) loads whole chunks; VEC=0 loads the same chunks
 * element by element with masks (any N). A's copy handles any K either way. */
#define MATH (TN < 256)
#if MATH
#define KSTEP 32
#define VW (TN >= 64 ? 8 : 4)   /* columns per lane and load: 16-byte loads, or 8-byte (TN 32) */
#define CG (TN / (8 * VW))      /* column groups (of 8·VW) per warp */
#define MT ((BM + 15) / 16)     /* 16-row tiles of M */
#define NACC (MT * CG * VW * 4) /* accumulators per thread: VW mma tiles per group and M tile */
#define NLD (8 * CG)            /* loads per thread and K step: 8 rows of each group */
#else
#define KSTEP 8
#define VN 8 /* columns per lane */
#define NACC (BM * VN)
#define NLD 8 /* one per row */
#endif
#define KALIGN 64

/* acc[i] of lane `lane` in warp column wn is the sum for row m of C, column n of the tile. */
struct MapKN {
    __device__ __forceinline__ bool operator()(int i, int lane, int wn, int &m, int &n) const
    {
#if MATH
        const int q = i & 3, j = (i >> 2) % VW, c = (i >> 2) / VW % CG, mi = (i >> 2) / VW / CG;
        m = 16 * mi + (lane >> 2) + 8 * (q >> 1);
        n = wn * TN + 8 * VW * c + VW * (2 * (lane & 3) + (q & 1)) + j;
#else
        m = i / VN;
        n = wn * TN + VN * lane + i % VN;
#endif
        return true;
    }
};

/* Batch b (steps bU .. bU+U-1) of this thread's chunks of B: load i = 8c + r of a step is row
 * k0 + r (MATH=1: k0 = 8t) of column chunk c (MATH=0: one chunk, r = i). */
__device__ __forceinline__ void load_batch(uint4 (&w)[U][NLD], const ST *B, int N, int col0, int b,
                                           int kb, int ke, int k0, unsigned long long pol)
{
#pragma unroll
    for (int u = 0; u < U; u++)
#pragma unroll
        for (int i = 0; i < NLD; i++) {
#if MATH
            const int k = kb + (b * U + u) * KSTEP + k0 + (i & 7), col = col0 + 8 * VW * (i >> 3);
#else
            const int k = kb + (b * U + u) * KSTEP + i, col = col0;
#endif
            const bool ok = k < ke && col < N;
            const ST *p = B + (long long)(ok ? k : 0) * N + (ok ? col : 0);
#if MATH && VW == 4
            if (VEC) {
                const uint2 v = ldb8(p, ok, pol);
                w[u][i] = make_uint4(v.x, v.y, 0, 0);
            } else
                w[u][i] = ok ? ld8_elems(p, min(4, N - col)) : make_uint4(0, 0, 0, 0);
#else
            if (VEC)
                w[u][i] = ldb16(p, ok, pol);
            else
                w[u][i] = ok ? ld8_elems(p, N - col) : make_uint4(0, 0, 0, 0);
#endif
        }
}

/* The math of batch b: its steps below nsteps (the rest are past the block's K slice). */
__device__ __forceinline__ void compute(float (&acc)[NACC], const uint4 (&w)[U][NLD], const ST *As,
                                        int astr, int b, int nsteps, int lane)
{
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int s = b * U + u;
        if (s >= nsteps)
            break;
#if MATH
        const int g = lane >> 2, t = lane & 3, kl = s * KSTEP + 8 * t;
        uint4 x[MT], y[MT];
#pragma unroll
        for (int i = 0; i < MT; i++) {
            x[i] =
                BM >= 16 || g < BM ? lds16(As + (16 * i + g) * astr + kl) : make_uint4(0, 0, 0, 0);
            y[i] = BM >= 16 ? lds16(As + (16 * i + g + 8) * astr + kl) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int c = 0; c < CG; c++)
#pragma unroll
                for (int j = 0; j < VW; j++) {
                    const unsigned sel = j & 1 ? 0x7632u : 0x5410u;
                    const unsigned b0 = __byte_perm(word(w[u][8 * c + 4 * h], j >> 1),
                                                    word(w[u][8 * c + 4 * h + 1], j >> 1), sel);
                    const unsigned b1 = __byte_perm(word(w[u][8 * c + 4 * h + 2], j >> 1),
                                                    word(w[u][8 * c + 4 * h + 3], j >> 1), sel);
#pragma unroll
                    for (int i = 0; i < MT; i++)
                        mma16816(&acc[((i * CG + c) * VW + j) * 4], word(x[i], 2 * h),
                                 word(y[i], 2 * h), word(x[i], 2 * h + 1), word(y[i], 2 * h + 1),
                                 b0, b1);
                }
#else
        const int kl = s * KSTEP;
        float af[BM][8];
#pragma unroll
        for (int m = 0; m < BM; m++) {
            const uint4 v = lds16(As + m * astr + kl); /* the same address in every lane */
#pragma unroll
            for (int q = 0; q < 4; q++) {
                af[m][2 * q] = lo_f(word(v, q));
                af[m][2 * q + 1] = hi_f(word(v, q));
            }
        }
#pragma unroll
        for (int r = 0; r < 8; r++)
#pragma unroll
            for (int e = 0; e < VN; e++) {
                const float bv = e & 1 ? hi_f(word(w[u][r], e >> 1)) : lo_f(word(w[u][r], e >> 1));
#pragma unroll
                for (int m = 0; m < BM; m++)
                    acc[m * VN + e] = fmaf(af[m][r], bv, acc[m * VN + e]);
            }
#endif
    }
}

extern "C" __global__ void __launch_bounds__(BT_THREADS, 1) CLUSTER_ATTR
    gemm_smallm(const ST *__restrict__ A, const ST *__restrict__ B, CT *__restrict__ C,
                float *__restrict__ W, int *__restrict__ T, int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Place pl = place(smem, A, M, K, KALIGN, KSTEP);
#if MATH
    const int k0 = 8 * (pl.lane & 3), col0 = pl.n0 + pl.wn * TN + VW * (pl.lane >> 2);
#else
    const int k0 = 0, col0 = pl.n0 + pl.wn * TN + VN * pl.lane;
#endif
    const unsigned long long pol = b_policy();
    float acc[NACC] = {};
    uint4 w[U][NLD];
    stream_batches(
        pl.sl.nbatch, pl.wk,
        [&](int b) { load_batch(w, B, N, col0, b, pl.sl.kb, pl.sl.ke, k0, pol); },
        [&](int b) { compute(acc, w, pl.As, pl.sl.kc + APAD, b, pl.sl.nsteps, pl.lane); });
    finish<NACC, BN, WN, WK>(acc, MapKN(), smem, C, W, T, M, N, pl.n0);
}
