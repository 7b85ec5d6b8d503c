/* SPDX-License-Identifier: Apache-2.0 */
/* gemm.cu — C = A·B, row-major, fp32 accumulation on CUDA cores: the engine's GEMM path on CUDA
 * (the tensor-core GEMM is its own kernel family). One block per BLOCK_M x BLOCK_N tile in grouped
 * order (GROUP_M), K in BLOCK_K steps through a ring of num_stages dynamic shared-memory buffers
 * (the next tile loaded num_stages-1 steps ahead); each thread owns BLOCK_M*BLOCK_N/BT_THREADS
 * outputs. Out-of-range elements are zero-filled on load and masked on store. */
#define BM BLOCK_M
#define BN BLOCK_N
#define BK BLOCK_K
#define STAGES num_stages
#define PER_ITEM ((BM * BN) / BT_THREADS)

__device__ __forceinline__ void load_tiles(const ST *A, const ST *B, ST *As, ST *Bs, int M, int N,
                                           int K, int m0, int n0, int k0)
{
    for (int i = threadIdx.x; i < BM * BK; i += BT_THREADS) {
        int r = i / BK, c = i % BK, gr = m0 + r, gc = k0 + c;
        As[i] = (gr < M && gc < K) ? A[(long long)gr * K + gc] : (ST)0;
    }
    for (int i = threadIdx.x; i < BK * BN; i += BT_THREADS) {
        int r = i / BN, c = i % BN, gr = k0 + r, gc = n0 + c;
        Bs[i] = (gr < K && gc < N) ? B[(long long)gr * N + gc] : (ST)0;
    }
}

extern "C" __global__ void __launch_bounds__(BT_THREADS)
gemm(const ST *__restrict__ A, const ST *__restrict__ B, ST *__restrict__ C, int M, int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    ST *As = reinterpret_cast<ST *>(smem_raw);
    ST *Bs = As + STAGES * BM * BK;
    int pm, pn;
    grouped_tile(blockIdx.x, (M + BM - 1) / BM, (N + BN - 1) / BN, &pm, &pn);
    const int m0 = pm * BM, n0 = pn * BN;
    float acc[PER_ITEM];
#pragma unroll
    for (int j = 0; j < PER_ITEM; j++)
        acc[j] = 0.0f;
    const int ktiles = (K + BK - 1) / BK;
    for (int s = 0; s < STAGES - 1 && s < ktiles; s++)
        load_tiles(A, B, As + s * BM * BK, Bs + s * BK * BN, M, N, K, m0, n0, s * BK);
    for (int kt = 0; kt < ktiles; kt++) {
        int nxt = kt + STAGES - 1;
        if (nxt < ktiles)
            load_tiles(A, B, As + (nxt % STAGES) * BM * BK, Bs + (nxt % STAGES) * BK * BN, M, N, K,
                       m0, n0, nxt * BK);
        __syncthreads();
        const ST *a = As + (kt % STAGES) * BM * BK;
        const ST *b = Bs + (kt % STAGES) * BK * BN;
#pragma unroll
        for (int j = 0; j < PER_ITEM; j++) {
            int idx = threadIdx.x + j * BT_THREADS, r = idx / BN, c = idx % BN;
            float s = acc[j];
#pragma unroll 8
            for (int k = 0; k < BK; k++)
                s += LOAD(a, r * BK + k) * LOAD(b, k * BN + c);
            acc[j] = s;
        }
        __syncthreads();
    }
#pragma unroll
    for (int j = 0; j < PER_ITEM; j++) {
        int idx = threadIdx.x + j * BT_THREADS, r = m0 + idx / BN, c = n0 + idx % BN;
        if (r < M && c < N)
            STORE(C, (long long)r * N + c, acc[j]);
    }
}
