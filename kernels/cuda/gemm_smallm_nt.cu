/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_smallm_nt.cu — C = A·Bᵀ for small M (the decode step of an LLM): A (M×K) row-major, B the
 * N×K weight of torch.nn.functional.linear (K contiguous), C (M×N) in the inputs' type or fp32
 * (OUT_FP32), fp16/bf16 in, fp32 accumulation, M ≤ 64, any N and K. The block structure and the
 * copy of A into shared memory are gemm_smallm_reg.cuh's, the split-K reduction
 * gemm_smallm.cuh's.
 *
 * Each warp owns TN rows of B (outputs along N) and streams them over its K steps; a batch of U
 * steps of 16-byte loads per thread is in flight before any of it is used.
 *
 * WARP_N (TN) >= 16: tensor cores (MATH=1, TN = 16·RT). The product is computed transposed,
 * Cᵀ = B·Aᵀ, so that the weight is mma's A operand (16 rows of B per m16n8k16) and the
 * activations its B operand (M in MJ = cdiv(BM, 8) tiles of 8): small M wastes at most 7/8 of
 * an 8-wide tile, not 15/16 of a 16-row one. One K step is 32 elements. Lane 4g + t loads 16
 * bytes of row g and of row g + 8 of each 16-row tile of B (x, y) at k = 8t .. 8t+7 of the step,
 * and 16 bytes of row 8j + g of A (z_j, from shared memory) at the same k. Of the step's two k16
 * halves h, the mma k slots {2t, 2t+1, 2t+8, 2t+9} of lane t stand for k = 8t + 4h + {0,1,2,3},
 * the same in both operands, so the sum runs over k in another order:
 *   a0 = x.word[2h]  a1 = y.word[2h]  a2 = x.word[2h+1]  a3 = y.word[2h+1]  (rows g, g+8 of B)
 *   b0 = z_j.word[2h]  b1 = z_j.word[2h+1]                  (column g of Aᵀ: row 8j+g of A)
 * and the accumulators of tile (r, j) are c0, c1 = C[8j+2t][n], C[8j+2t+1][n] for the warp's row
 * n = 16r+g of B, c2, c3 the same for row 16r+g+8. No shared memory for B, no shuffles, no
 * transposes.
 *
 * WARP_N <= 8: CUDA cores (MATH=0, BM ≤ 4). A K step is 256 elements: lane l's 16 bytes at 8l of
 * each of the warp's TN rows; fp32 dot products of BM × TN, summed across the warp at the end.
 *
 * VEC=1 (K a multiple of 8: 16-byte rows) loads 16 bytes at a time; VEC=0 loads the same chunks
 * element by element with masks (any K). */
#define MATH (TN >= 16)
#if MATH
#define KSTEP 32
#define RT (TN / 16)       /* 16-row tiles of B per warp */
#define MJ ((BM + 7) / 8)  /* 8-wide tiles of M */
#define NACC (RT * MJ * 4) /* accumulators per thread */
#define NLD (2 * RT)       /* 16-byte loads per thread and K step: rows g + 8i */
#else
#define KSTEP 256
#define NACC (BM * TN)
#define NLD TN /* one per row */
#endif
#define KALIGN (KSTEP > 64 ? KSTEP : 64)

/* acc[i] of lane `lane` in warp column wn is the sum for row m of C, column n of the tile. */
struct MapNT {
    __device__ __forceinline__ bool operator()(int i, int lane, int wn, int &m, int &n) const
    {
#if MATH
        const int q = i & 3, j = (i >> 2) % MJ, r = (i >> 2) / MJ;
        n = wn * TN + 16 * r + (lane >> 2) + 8 * (q >> 1);
        m = 8 * j + 2 * (lane & 3) + (q & 1);
        return true;
#else
        m = i / TN; /* after the warp sum every lane holds all of them: lane i % 32 writes */
        n = wn * TN + i % TN;
        return (i & 31) == lane;
#endif
    }
};

/* Batch b (steps bU .. bU+U-1) of this thread's chunks of B: row i of the thread at k. */
__device__ __forceinline__ void load_batch(uint4 (&w)[U][NLD], const ST *const (&rows)[NLD],
                                           const bool (&rok)[NLD], int b, int kb, int ke, int koff,
                                           unsigned long long pol)
{
#pragma unroll
    for (int u = 0; u < U; u++) {
        const int k = kb + (b * U + u) * KSTEP + koff;
#pragma unroll
        for (int i = 0; i < NLD; i++) {
            const bool ok = rok[i] && k < ke;
            if (VEC)
                w[u][i] = ldb16(rows[i] + k, ok, pol);
            else
                w[u][i] = ok ? ld8_elems(rows[i] + k, ke - k) : make_uint4(0, 0, 0, 0);
        }
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
        uint4 z[MJ];
#pragma unroll
        for (int j = 0; j < MJ; j++)
            z[j] = BM >= 8 || g < BM ? lds16(As + (8 * j + g) * astr + kl) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int r = 0; r < RT; r++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int j = 0; j < MJ; j++)
                    mma16816(&acc[(r * MJ + j) * 4], word(w[u][2 * r], 2 * h),
                             word(w[u][2 * r + 1], 2 * h), word(w[u][2 * r], 2 * h + 1),
                             word(w[u][2 * r + 1], 2 * h + 1), word(z[j], 2 * h),
                             word(z[j], 2 * h + 1));
#else
        const int kl = s * KSTEP + 8 * lane;
        float af[BM][8];
#pragma unroll
        for (int m = 0; m < BM; m++) {
            const uint4 v = lds16(As + m * astr + kl);
#pragma unroll
            for (int q = 0; q < 4; q++) {
                af[m][2 * q] = lo_f(word(v, q));
                af[m][2 * q + 1] = hi_f(word(v, q));
            }
        }
#pragma unroll
        for (int r = 0; r < TN; r++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                const float w0 = lo_f(word(w[u][r], q)), w1 = hi_f(word(w[u][r], q));
#pragma unroll
                for (int m = 0; m < BM; m++)
                    acc[m * TN + r] =
                        fmaf(af[m][2 * q + 1], w1, fmaf(af[m][2 * q], w0, acc[m * TN + r]));
            }
#endif
    }
}

extern "C" __global__ void __launch_bounds__(BT_THREADS, 1) CLUSTER_ATTR
    gemm_smallm_nt(const ST *__restrict__ A, const ST *__restrict__ B, CT *__restrict__ C,
                   float *__restrict__ W, int *__restrict__ T, int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem[];
    const Place pl = place(smem, A, M, K, KALIGN, KSTEP);
#if MATH
    const int koff = 8 * (pl.lane & 3), row0 = pl.n0 + pl.wn * TN + (pl.lane >> 2), rstep = 8;
#else
    const int koff = 8 * pl.lane, row0 = pl.n0 + pl.wn * TN, rstep = 1;
#endif
    const ST *rows[NLD];
    bool rok[NLD];
#pragma unroll
    for (int i = 0; i < NLD; i++) {
        const int row = row0 + rstep * i;
        rok[i] = row < N;
        rows[i] = B + (long long)(rok[i] ? row : 0) * K;
    }
    const unsigned long long pol = b_policy();
    float acc[NACC] = {};
    uint4 w[U][NLD];
    stream_batches(
        pl.sl.nbatch, pl.wk,
        [&](int b) { load_batch(w, rows, rok, b, pl.sl.kb, pl.sl.ke, koff, pol); },
        [&](int b) { compute(acc, w, pl.As, pl.sl.kc + APAD, b, pl.sl.nsteps, pl.lane); });
#if !MATH
#pragma unroll
    for (int i = 0; i < NACC; i++)
        acc[i] = warp_sum(acc[i]);
#endif
    finish<NACC, BN, WN, WK>(acc, MapNT(), smem, C, W, T, M, N, pl.n0);
}
