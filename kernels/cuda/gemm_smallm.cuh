/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_smallm.cuh — what every small-M GEMM kernel shares: the register-streaming ones
 * (gemm_smallm_reg.cuh; gemm_smallm.cu: B is K×N, gemm_smallm_nt.cu: B is the N×K weight of
 * torch.nn.functional.linear) and the TMA-streaming ones (gemm_smallm_tma.cu, sm_90a). Listed
 * after gemm_tc.cuh (the output type CT, out1) and sm90.cuh (smem_u32, cluster_sync), before the
 * kernel's own files.
 *
 * C (M×N) = A (M×K) · B for M ≤ 64, where the bytes of B are nearly all the traffic (docs/gemm.md):
 * a block owns BN outputs along N for the whole of M (BLOCK_M rows: M's class) and one of SPLIT_K
 * slices of K. finish() sums the block's partial tiles: those of its warps along K through shared
 * memory, the CLUSTER blocks of a thread-block cluster (consecutive K slices, blockIdx.y) through
 * distributed shared memory, and the SPLIT_K / CLUSTER clusters of a tile through fp32 atomics
 * into the workspace W, whose last arrival (a ticket in T) writes C and zeroes its part of W and
 * its ticket again (no clearing between launches).
 *
 * Compile-time parameters used here (the spec's): BLOCK_M, SPLIT_K, CLUSTER. */
#if !defined(BT_DTYPE_FP16) && !defined(BT_DTYPE_BF16)
#error "gemm_smallm takes fp16 or bf16"
#endif
/* EVICT=1 (the default): B is loaded with an L2 evict-first policy, so that the stream of B
 * (read once) does not push A (read by every block) and other data out of L2. 0: plain loads;
 * not in the specs' spaces, kept to compare the two (bench/spec_variant.py). */
#ifndef EVICT
#define EVICT 1
#endif
#define BM BLOCK_M /* rows of A and C a block holds: M's class, M <= BM < 2M (or the least) */
#define NT_ BT_THREADS
#if CLUSTER > 1
#define CLUSTER_ATTR __cluster_dims__(1, CLUSTER, 1) /* along blockIdx.y: consecutive K slices */
#else
#define CLUSTER_ATTR
#endif

/* The L2 policy for B: evict first (EVICT=1), or none. */
__device__ __forceinline__ unsigned long long b_policy()
{
    unsigned long long p = 0;
    if (EVICT)
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(p));
    return p;
}

/* Thread-block clusters (CLUSTER > 1: the CLUSTER blocks of a cluster share a tile and take
 * consecutive K slices). */
__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
/* Adds the V floats (1, or 4 from a 16-byte aligned p) at the same shared-memory offset as p in
 * cluster block `rank` to s[0 .. V). */
template <int V>
__device__ __forceinline__ void ld_cluster(const float *p, unsigned rank, float (&s)[4])
{
    unsigned a;
    float v[4];
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(a) : "r"(smem_u32(p)), "r"(rank));
    if (V == 4)
        asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                     : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                     : "r"(a)
                     : "memory");
    else
        asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v[0]) : "r"(a) : "memory");
#pragma unroll
    for (int j = 0; j < V; j++)
        s[j] += v[j];
}

/* One output of this block's tile (row m of C, column n of the tile): stored when the tile is
 * the whole sum (SPLIT_K == CLUSTER), else added into the workspace. */
__device__ __forceinline__ void emit(CT *C, float *W, int M, int N, int n0, int m, int n, float v)
{
    if (m >= M || n0 + n >= N)
        return;
    const long long i = (long long)m * N + n0 + n;
    if (SPLIT_K == CLUSTER)
        C[i] = out1(v);
    else
        atomicAdd(W + i, v);
}

/* The end of every small-M kernel: the block's tile is BN outputs wide, its warps WN side by
 * side along N (warp w is column w % WN) and WK deep along K (row w / WN: the rows' partial
 * tiles are summed here). acc holds this thread's NACC partial sums, map(i, lane, wn, m, n) says
 * which tile element (row m, column n of the tile) acc[i] is and whether this thread owns it
 * (every element of the tile's first BM rows is owned by exactly one lane of the WN columns'
 * warps of K row 0, and of each other K row when WK > 1; rows from BM on, which tensor-core
 * tiles may have, are past M). smem is the dynamic shared memory, free once every thread is
 * here: it holds the K rows' and the cluster's partial tiles. */
template <int NACC, int BN, int WN, int WK, class Map>
__device__ __forceinline__ void finish(float (&acc)[NACC], const Map &map, unsigned char *smem,
                                       CT *C, float *W, int *T, int M, int N, int n0)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wk = warp / WN, wn = warp % WN;
    const bool lead = wk == 0;
    if (WK > 1) { /* the WK warps of a column add up in shared memory, lane by lane */
        float *red = reinterpret_cast<float *>(smem);
        __syncthreads(); /* every warp is done with A */
        if (!lead)
#pragma unroll
            for (int i = 0; i < NACC; i++)
                red[(((wk - 1) * WN + wn) * NACC + i) * 32 + lane] = acc[i];
        __syncthreads();
        if (lead)
#pragma unroll 1 /* one warp's partials at a time: few registers live */
            for (int w = 1; w < WK; w++)
#pragma unroll
                for (int i = 0; i < NACC; i++)
                    acc[i] += red[(((w - 1) * WN + wn) * NACC + i) * 32 + lane];
    }
    if (CLUSTER > 1) { /* the cluster's blocks add up through distributed shared memory */
        float *P = reinterpret_cast<float *>(smem); /* this block's BM×BN partial tile */
        __syncthreads();                            /* shared memory is free again */
        if (lead)
#pragma unroll
            for (int i = 0; i < NACC; i++) {
                int m, n;
                if (map(i, lane, wn, m, n) && m < BM)
                    P[m * BN + n] = acc[i];
            }
        cluster_sync(); /* every block's tile is written and visible */
        /* each block sums a 1/CLUSTER share of the tile's rows below M: 4 columns at a time
         * (16-byte loads from each peer) where the tile's width allows */
        const int total = min(M, BM) * BN, V = BN % 4 == 0 ? 4 : 1;
        const int per = (total / V + CLUSTER - 1) / CLUSTER * V;
        const int first = (int)cluster_rank() * per, end = min(total, first + per);
        for (int e = first + V * (int)threadIdx.x; e < end; e += V * NT_) {
            float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int q = 0; q < CLUSTER; q++)
                ld_cluster<V>(P + e, q, s);
#pragma unroll
            for (int j = 0; j < V; j++)
                emit(C, W, M, N, n0, e / BN, e % BN + j, s[j]);
        }
        cluster_sync(); /* no block leaves while a peer may still read its tile */
    } else if (lead) {
#pragma unroll
        for (int i = 0; i < NACC; i++) {
            int m, n;
            if (map(i, lane, wn, m, n))
                emit(C, W, M, N, n0, m, n, acc[i]);
        }
    }
    if (SPLIT_K == CLUSTER)
        return;
    /* the last block of the tile to arrive writes C and cleans its part of W and its ticket */
    __shared__ int last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(T + blockIdx.x, 1) == SPLIT_K - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    const int cols = min(BN, N - n0);
    for (int e = threadIdx.x; e < M * cols; e += NT_) {
        float *w = W + (long long)(e / cols) * N + n0 + e % cols;
        C[(long long)(e / cols) * N + n0 + e % cols] = out1(__ldcg(w));
        *w = 0.0f;
    }
    if (threadIdx.x == 0)
        T[blockIdx.x] = 0;
}
