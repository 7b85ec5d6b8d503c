/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_smallm_tma.cu — small-M GEMM on Hopper (sm_90a), B streamed through shared memory by TMA:
 * C = A·Bᵀ with B the N×K weight of torch.nn.functional.linear (BT_NT=1: gemm_smallm_nt_tma) or
 * C = A·B with B as K×N (gemm_smallm_tma); A (M×K) and C (M×N) row-major, fp16/bf16 in, fp32
 * accumulation, C in the inputs' type or fp32 (OUT_FP32), M ≤ 64, K (and for K×N, N) a multiple
 * of 8 (16-byte rows, which TMA needs). The block shape and the split-K reduction are
 * gemm_smallm.cuh's (finish); the mbarrier, TMA and descriptor helpers sm90.cuh's.
 *
 * Why: at M ≤ 64 the time is the stream of B out of HBM, and an SM needs ~32 KB of loads in
 * flight to take its share of 4.3 TB/s; loads into registers cap that by registers and occupancy.
 * Here the bytes in flight are shared memory: a producer warp keeps num_stages stages of
 * BLOCK_N × BLOCK_K elements of B (and the same BLOCK_K columns of A) in flight with TMA, each
 * stage completing on a "full" mbarrier, and one consumer warpgroup multiplies each stage on the
 * tensor cores straight from shared memory and hands the stage back on its "empty" mbarrier.
 *
 * The product is computed transposed, Cᵀ = B'·Aᵀ (B' = B as N×K): B's rows (outputs n) are
 * wgmma's M dimension, 64 per instruction, and the activations its N dimension, BLOCK_M of them
 * (M rounded up to 8, 16, 32 or 64; the rows of the copy past M arrive as zeros), so M = 1 costs
 * an m64n8k16, not an m64n64k16. Both operands come from shared memory through descriptors with
 * 128-byte swizzle, as TMA lays them out (boxes 64 elements = 128 bytes wide, 1024-byte aligned);
 * a stage's k16 step kk (0 .. BLOCK_K/16 - 1) is in K box kk/4 at 16·(kk%4) elements:
 *   - A (wgmma's B operand, K-major: A's rows are K-contiguous): BLOCK_K/64 boxes {64 k, BLOCK_M
 *     rows}, BLOCK_M·128 bytes each; the step starts 32·(kk%4) bytes into each 128-byte row, 8-row
 *     groups 1024 bytes apart (SBO): gemm_wgmma's A operand; imm-trans-b = 0.
 *   - B as N×K (wgmma's A operand, K-major): BLOCK_K/64 boxes {64 k, BLOCK_N rows}, BLOCK_N·128
 *     bytes each (a row's BLOCK_K elements are contiguous in memory: BLOCK_K·2 bytes per row and
 *     stage); slab r (rows 64r..64r+63) 8192·r bytes into each, the step as for A; imm-trans-a 0.
 *   - B as K×N (wgmma's A operand, M-major: N-contiguous): BLOCK_N/64 boxes {64 n, BLOCK_K k},
 *     slab r in box r (BLOCK_K·128 bytes each); the step kk starts 16 rows (2048 bytes) in, 8-row
 *     groups of K 1024 bytes apart (SBO), the next 64 n one box on (LBO, unused at m64):
 *     gemm_wgmma's B layout, read with imm-trans-a = 1.
 * Accumulators (wgmma's m64nNk16 layout): thread (warp w of the consumer warpgroup, lane l) holds
 * d[4q + 2h + e] = D[16w + l/4 + 8h][8q + 2(l%4) + e] of each slab, i.e. C[m][n] with
 * m = 8q + 2(l%4) + e and n = 64r + 16w + l/4 + 8h (MapTMA).
 *
 * Work, PERSIST = 0: block (x, y) owns outputs n0 = BLOCK_N·x .. n0 + BLOCK_N - 1 for all of M
 * and the K slice y of SPLIT_K (cdiv(K, SPLIT_K) rounded up to BLOCK_K; a slice past K is empty
 * and adds zeros), summed by gemm_smallm.cuh's finish. PERSIST = 1 or 2: the same (tile, slice)
 * units, but a persistent grid of PERSIST blocks per SM takes them from a counter, the ring
 * running on from one unit into the next (persistent() below says how; bench/NOTES.md 26 why).
 * K past the end of B or A arrives as zeros, so no K tail needs a mask. Threads: 128 consumers
 * (warps 0..3, one warpgroup, as wgmma needs) and one producer warp (warp 4, lane 0 issues; it
 * also prefetches the tensor maps and sets up the barriers, so its first copy waits less).
 *
 * Compile-time parameters (the spec's): BLOCK_M, BLOCK_N, BLOCK_K, num_stages, SPLIT_K, CLUSTER,
 * PERSIST (CLUSTER = 1 when PERSIST > 0). */
#if defined(BT_DTYPE_FP16)
#define SM_AB "f16.f16"
#else
#define SM_AB "bf16.bf16"
#endif
#ifndef BT_NT
#define BT_NT 0
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#if BT_NT
#define ENTRY gemm_smallm_nt_tma
#else
#define ENTRY gemm_smallm_tma
#endif
#define MP BLOCK_M                   /* wgmma's N: the activations' rows (8, 16, 32, 64) */
#define RB (BLOCK_N / 64)            /* 64-row slabs of B per stage: one wgmma each per k16 */
#define KB (BLOCK_K / 64)            /* 64-wide K boxes per stage (B as N×K, and A) */
#define W_BYTES (BLOCK_N * BLOCK_K * 2) /* a stage of B: BLOCK_N outputs × BLOCK_K k */
#define X_BYTES (MP * BLOCK_K * 2)      /* a stage of A: MP rows × BLOCK_K k */
#define STAGE_BYTES (W_BYTES + X_BYTES)
#define STAGES num_stages
#define NACC (RB * MP / 2) /* accumulators per consumer thread */
#define CONSUMER_WARPS 4
#if BT_THREADS != 32 * (CONSUMER_WARPS + 1)
#error "gemm_smallm_tma runs one consumer warpgroup and one producer warp (160 threads)"
#endif

/* D (64 × N) += Wslab (64 × 16) · X (16 × N) for N = 8, 16, 32, 64: wgmma.m64nNk16 with fp32
 * accumulators d[0 .. N/2), both operands from shared memory, TA the imm-trans-a bit (1: B as
 * K×N, M-major), imm-trans-b 0 (A's rows K-major). */
#define SM_R4(a, b, c, d) "%" #a ", %" #b ", %" #c ", %" #d
#define SM_R8(a, b, c, d, e, f, g, h) SM_R4(a, b, c, d) ", " SM_R4(e, f, g, h)
#define SM_ACC4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define SM_ACC16(i) SM_ACC4(i), SM_ACC4(i + 4), SM_ACC4(i + 8), SM_ACC4(i + 12)
#define SM_WGMMA(NN, REGS, XA, XB, XONE, XTA, ...)                                                 \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #XONE ", 0;\n"                              \
                 "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." SM_AB " {" REGS "}, %" #XA   \
                 ", %" #XB ", p, 1, 1, %" #XTA ", 0;\n}\n"                                          \
                 : __VA_ARGS__                                                                     \
                 : "l"(da), "l"(db), "r"(1), "n"(TA))
template <int N, int TA>
__device__ __forceinline__ void wgmma_x(float *d, unsigned long long da, unsigned long long db)
{
    if constexpr (N == 8)
        SM_WGMMA(8, SM_R4(0, 1, 2, 3), 4, 5, 6, 7, SM_ACC4(0));
    else if constexpr (N == 16)
        SM_WGMMA(16, SM_R8(0, 1, 2, 3, 4, 5, 6, 7), 8, 9, 10, 11, SM_ACC4(0), SM_ACC4(4));
    else if constexpr (N == 32)
        SM_WGMMA(32,
                 SM_R8(0, 1, 2, 3, 4, 5, 6, 7) ", " SM_R8(8, 9, 10, 11, 12, 13, 14, 15),
                 16, 17, 18, 19, SM_ACC16(0));
    else
        SM_WGMMA(64,
                 SM_R8(0, 1, 2, 3, 4, 5, 6, 7) ", " SM_R8(8, 9, 10, 11, 12, 13, 14, 15) ", "
                 SM_R8(16, 17, 18, 19, 20, 21, 22, 23) ", " SM_R8(24, 25, 26, 27, 28, 29, 30, 31),
                 32, 33, 34, 35, SM_ACC16(0), SM_ACC16(16));
}

/* acc[i] of lane `lane` in warp wn is the sum for row m of C, column n of the block's tile (the
 * producer warp, wn = 4, holds none). */
struct MapTMA {
    __device__ __forceinline__ bool operator()(int i, int lane, int wn, int &m, int &n) const
    {
        if (wn >= CONSUMER_WARPS)
            return false;
        const int r = i / (MP / 2), j = i % (MP / 2);
        n = 64 * r + 16 * wn + (lane >> 2) + 8 * ((j >> 1) & 1);
        m = 8 * (j >> 2) + 2 * (lane & 3) + (j & 1);
        return true;
    }
};

/* A stage's barriers and buffers, in a function that has the ring's `base` and `bars` (shared
 * addresses) in scope. */
#define FULL(s) (bars + 8u * (unsigned)(s))
#define EMPTY(s) (bars + 8u * (unsigned)(STAGES + (s)))
#define SW(s) (base + (unsigned)(s) * STAGE_BYTES) /* the stage's B */
#define SX(s) (SW(s) + W_BYTES)                    /* the stage's A */

/* The producer's copy of one stage: BLOCK_K columns k.. of B's BLOCK_N rows n0.. (evict-first
 * policy pol) and of A's MP rows, completing on FULL(s) at sw (B) and sx (A). */
__device__ __forceinline__ void load_stage(unsigned sw, unsigned sx, unsigned full, int k, int n0,
                                          unsigned long long pol, const TmaDesc *tmW,
                                          const TmaDesc *tmX)
{
    mbar_expect_tx(full, STAGE_BYTES);
#if BT_NT
#pragma unroll
    for (int a = 0; a < KB; a++) /* a row's BLOCK_K elements back to back */
        tma_load_hint(sw + (unsigned)(a * BLOCK_N * 128), tmW, k + 64 * a, n0, full, pol);
#else
#pragma unroll
    for (int r = 0; r < RB; r++)
        tma_load_hint(sw + (unsigned)(r * BLOCK_K * 128), tmW, n0 + 64 * r, k, full, pol);
#endif
#pragma unroll
    for (int a = 0; a < KB; a++)
        tma_load(sx + (unsigned)(a * MP * 128), tmX, k + 64 * a, 0, full);
}

/* The consumer warpgroup's product of one stage (B at sw, A at sx) into acc, waited for: the
 * stage may be handed back when this returns. */
__device__ __forceinline__ void mma_stage(float *acc, unsigned sw, unsigned sx)
{
    wg_fence();
#pragma unroll
    for (int kk = 0; kk < BLOCK_K / 16; kk++) {
        const unsigned long long dx =
            wg_desc(sx + (unsigned)((kk / 4) * MP * 128 + (kk % 4) * 32), 16, 1024);
#pragma unroll
        for (int r = 0; r < RB; r++) {
#if BT_NT
            const unsigned long long dw =
                wg_desc(sw + (unsigned)((kk / 4) * BLOCK_N * 128 + r * 8192 + (kk % 4) * 32), 16,
                        1024);
#else
            const unsigned long long dw =
                wg_desc(sw + (unsigned)(r * BLOCK_K * 128 + kk * 2048), BLOCK_K * 128, 1024);
#endif
            wgmma_x<MP, BT_NT ? 0 : 1>(acc + r * (MP / 2), dw, dx);
        }
    }
    wg_commit();
    wg_wait<0>();
}

#if PERSIST
/* PERSIST > 0: a persistent grid (PERSIST blocks per SM, at most one per unit) that takes units
 * from the counter Q[0]: unit u is K slice u % nsl of the BLOCK_N outputs from (u / nsl)·BLOCK_N,
 * nsl the K slices that are not empty; a block's first unit is blockIdx.x, the next ones
 * gridDim.x + atomicAdd(Q, 1), fetched one unit ahead. The producer runs straight on from one
 * unit into the next, so the ring never drains between units and a unit's epilogue (below)
 * overlaps the next unit's copies; it tags every stage with its unit (TAG_LAST on a unit's last
 * stage; -1, on a stage without copies, says there is no more work). The last block to leave
 * sets Q[0] and Q[1] back to zero (no clearing between launches). */
#define TAG_LAST 0x40000000

/* The consumer warpgroup's end of unit u (acc holds its sum): C itself when K is one slice, else
 * fp32 atomics into W, and the tile's last unit to arrive (its ticket in T) writes C and zeroes
 * its part of W and its ticket. */
__device__ __forceinline__ void unit_done(const float (&acc)[NACC], int u, int nsl, CT *C, float *W,
                                          int *T, int M, int N)
{
    __shared__ int plast;
    const int x = u / nsl, n0 = x * BLOCK_N, lane = threadIdx.x & 31, wn = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < NACC; i++) {
        int m, n;
        if (MapTMA()(i, lane, wn, m, n) && m < M && n0 + n < N) {
            const long long e = (long long)m * N + n0 + n;
            if (nsl == 1)
                C[e] = out1(acc[i]);
            else
                atomicAdd(W + e, acc[i]);
        }
    }
    if (nsl == 1)
        return;
    __threadfence();
    named_sync(1, 32 * CONSUMER_WARPS);
    if (threadIdx.x == 0)
        plast = atomicAdd(T + x, 1) == nsl - 1;
    named_sync(1, 32 * CONSUMER_WARPS); /* (the next unit's write of plast waits for all of us) */
    if (!plast)
        return;
    __threadfence();
    const int cols = min(BLOCK_N, N - n0);
    for (int e = threadIdx.x; e < M * cols; e += 32 * CONSUMER_WARPS) {
        float *w = W + (long long)(e / cols) * N + n0 + e % cols;
        C[(long long)(e / cols) * N + n0 + e % cols] = out1(__ldcg(w));
        *w = 0.0f;
    }
    if (threadIdx.x == 0)
        T[x] = 0;
}

__device__ __forceinline__ void persistent(unsigned bars, unsigned base, int warp, CT *C, float *W,
                                           int *T, int *Q, int M, int N, int K, const TmaDesc *tmW,
                                           const TmaDesc *tmX)
{
    __shared__ int tag[STAGES];
    const int kc = ((K + SPLIT_K - 1) / SPLIT_K + BLOCK_K - 1) / BLOCK_K * BLOCK_K; /* K slice */
    const int nsl = (K + kc - 1) / kc, units = (N + BLOCK_N - 1) / BLOCK_N * nsl;
    int s = 0;
    unsigned phase = 0;
    if (warp == CONSUMER_WARPS) { /* producer */
        if ((threadIdx.x & 31) == 0) {
            const unsigned long long pol = b_policy(); /* B is read once: evict first */
            int u = blockIdx.x;
            int nxt = u < units ? (int)gridDim.x + atomicAdd(Q, 1) : units;
            while (u < units) {
                const int n0 = u / nsl * BLOCK_N, kb = u % nsl * kc, ke = min(K, kb + kc);
                const int ntiles = (ke - kb + BLOCK_K - 1) / BLOCK_K;
                for (int t = 0; t < ntiles; t++) {
                    mbar_wait(EMPTY(s), phase ^ 1u);
                    *(volatile int *)&tag[s] = t == ntiles - 1 ? u | TAG_LAST : u;
                    load_stage(SW(s), SX(s), FULL(s), kb + BLOCK_K * t, n0, pol, tmW, tmX);
                    if (++s == STAGES) {
                        s = 0;
                        phase ^= 1u;
                    }
                }
                u = nxt;
                if (u < units)
                    nxt = (int)gridDim.x + atomicAdd(Q, 1);
            }
            mbar_wait(EMPTY(s), phase ^ 1u);
            *(volatile int *)&tag[s] = -1; /* no more work */
            mbar_arrive(FULL(s));
        }
        __syncwarp();
    } else { /* the consumer warpgroup */
        float acc[NACC];
#pragma unroll
        for (int i = 0; i < NACC; i++)
            acc[i] = 0.0f;
        for (;;) {
            mbar_wait(FULL(s), phase);
            const int tg = *(volatile int *)&tag[s];
            if (tg < 0)
                break;
            mma_stage(acc, SW(s), SX(s));
            if (threadIdx.x == 0)
                mbar_arrive(EMPTY(s));
            if (++s == STAGES) {
                s = 0;
                phase ^= 1u;
            }
            if (tg & TAG_LAST) {
                unit_done(acc, tg & ~TAG_LAST, nsl, C, W, T, M, N);
#pragma unroll
                for (int i = 0; i < NACC; i++)
                    acc[i] = 0.0f;
            }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(Q + 1, 1) == (int)gridDim.x - 1) {
            Q[0] = 0;
            Q[1] = 0;
        }
    }
}
#endif

extern "C" __global__ void __launch_bounds__(BT_THREADS, 1) CLUSTER_ATTR
    ENTRY(const ST *__restrict__ A, const ST *__restrict__ B, CT *__restrict__ C,
          float *__restrict__ W, int *__restrict__ T, int *__restrict__ Q, int M, int N, int K,
          const __grid_constant__ TmaDesc tmW, const __grid_constant__ TmaDesc tmX)
{
    (void)A, (void)B; /* read through the tensor maps */
    extern __shared__ __align__(16) unsigned char smem_raw[];
    /* stages 1024-byte aligned (the swizzle pattern repeats every 1024 bytes: the spec asks for
     * 1024 bytes more), barriers after */
    const unsigned raw = smem_u32(smem_raw), base = (raw + 1023u) & ~1023u;
    const unsigned bars = base + STAGES * STAGE_BYTES;
    const int warp = threadIdx.x >> 5;
    if (threadIdx.x == 32 * CONSUMER_WARPS) { /* the producer's lane: the first copy waits less */
        tma_prefetch_desc(&tmW);
        tma_prefetch_desc(&tmX);
        for (int s = 0; s < STAGES; s++) {
            mbar_init(FULL(s), 1);
            mbar_init(EMPTY(s), 1);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();
#if PERSIST
    persistent(bars, base, warp, C, W, T, Q, M, N, K, &tmW, &tmX);
#else
    (void)Q;
    unsigned char *smem = smem_raw + (base - raw); /* the ring, for finish once it is drained */
    const int n0 = blockIdx.x * BLOCK_N;
    const int kc = ((K + SPLIT_K - 1) / SPLIT_K + BLOCK_K - 1) / BLOCK_K * BLOCK_K; /* K slice */
    const int kb = blockIdx.y * kc, ke = min(K, kb + kc);
    const int ntiles = ke > kb ? (ke - kb + BLOCK_K - 1) / BLOCK_K : 0;
    float acc[NACC];
#pragma unroll
    for (int i = 0; i < NACC; i++)
        acc[i] = 0.0f;
    if (warp == CONSUMER_WARPS) { /* producer */
        if ((threadIdx.x & 31) == 0) {
            const unsigned long long pol = b_policy(); /* B is read once: evict first */
            int s = 0;
            unsigned phase = 0;
            for (int t = 0; t < ntiles; t++) {
                mbar_wait(EMPTY(s), phase ^ 1u);
                load_stage(SW(s), SX(s), FULL(s), kb + BLOCK_K * t, n0, pol, &tmW, &tmX);
                if (++s == STAGES) {
                    s = 0;
                    phase ^= 1u;
                }
            }
        }
        __syncwarp();
    } else { /* the consumer warpgroup */
        int s = 0;
        unsigned phase = 0;
        for (int t = 0; t < ntiles; t++) {
            mbar_wait(FULL(s), phase);
            mma_stage(acc, SW(s), SX(s)); /* the stage's wgmma are done: hand it back at once */
            if (threadIdx.x == 0)
                mbar_arrive(EMPTY(s));
            if (++s == STAGES) {
                s = 0;
                phase ^= 1u;
            }
        }
    }
    finish<NACC, BLOCK_N, BT_THREADS / 32, 1>(acc, MapTMA(), smem, C, W, T, M, N, n0);
#endif
}
