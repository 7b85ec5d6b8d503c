/* SPDX-License-Identifier: Apache-2.0 */
/* gemm.cl — C = A·B, row-major, fp32 accumulation. One work-group per BLOCK_M x BLOCK_N tile of C,
 * tiles visited in grouped order (GROUP_M rows of tiles at a time, for L2 reuse of B). K advances
 * in BLOCK_K steps through a ring of num_stages local-memory buffers: the tile num_stages-1 steps
 * ahead is loaded while the current one is consumed. Each item owns BLOCK_M*BLOCK_N/BT_THREADS
 * outputs. Out-of-range rows/columns/K are zero-filled on load and masked on store. */
#define BM BLOCK_M
#define BN BLOCK_N
#define BK BLOCK_K
#define STAGES num_stages
#define PER_ITEM ((BM * BN) / BT_THREADS)

inline void load_tiles(__global const ST *A, __global const ST *B, __local ST *As, __local ST *Bs,
                       int M, int N, int K, int m0, int n0, int k0, int t)
{
    for (int i = t; i < BM * BK; i += BT_THREADS) {
        int r = i / BK, c = i % BK;
        int gr = m0 + r, gc = k0 + c;
        As[i] = (gr < M && gc < K) ? A[(long)gr * K + gc] : (ST)0;
    }
    for (int i = t; i < BK * BN; i += BT_THREADS) {
        int r = i / BN, c = i % BN;
        int gr = k0 + r, gc = n0 + c;
        Bs[i] = (gr < K && gc < N) ? B[(long)gr * N + gc] : (ST)0;
    }
}

__kernel void gemm(__global const ST *A, __global const ST *B, __global ST *C, int M, int N, int K)
{
    __local ST As[STAGES][BM * BK];
    __local ST Bs[STAGES][BK * BN];
    const int t = (int)get_local_id(0);
    const int pid = (int)get_group_id(0);
    const int num_m = (M + BM - 1) / BM, num_n = (N + BN - 1) / BN;
    const int in_group = GROUP_M * num_n;
    const int first_m = (pid / in_group) * GROUP_M;
    const int gsize = min(num_m - first_m, GROUP_M);
    const int pm = first_m + (pid % in_group) % gsize;
    const int pn = (pid % in_group) / gsize;
    const int m0 = pm * BM, n0 = pn * BN;
    float acc[PER_ITEM];
    for (int j = 0; j < PER_ITEM; j++)
        acc[j] = 0.0f;
    const int ktiles = (K + BK - 1) / BK;
    for (int s = 0; s < STAGES - 1 && s < ktiles; s++)
        load_tiles(A, B, As[s], Bs[s], M, N, K, m0, n0, s * BK, t);
    for (int kt = 0; kt < ktiles; kt++) {
        int nxt = kt + STAGES - 1;
        if (nxt < ktiles)
            load_tiles(A, B, As[nxt % STAGES], Bs[nxt % STAGES], M, N, K, m0, n0, nxt * BK, t);
        barrier(CLK_LOCAL_MEM_FENCE);
        __local ST *a = As[kt % STAGES];
        __local ST *b = Bs[kt % STAGES];
        for (int j = 0; j < PER_ITEM; j++) {
            int idx = t + j * BT_THREADS;
            int r = idx / BN, c = idx % BN;
            float s = acc[j];
            for (int k = 0; k < BK; k++)
                s += LOAD(a, r * BK + k) * LOAD(b, k * BN + c);
            acc[j] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int j = 0; j < PER_ITEM; j++) {
        int idx = t + j * BT_THREADS;
        int r = m0 + idx / BN, c = n0 + idx % BN;
        if (r < M && c < N)
            STORE(C, (long)r * N + c, acc[j]);
    }
}
