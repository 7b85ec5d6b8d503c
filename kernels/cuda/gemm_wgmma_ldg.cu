/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_wgmma_ldg.cu — C = A·B on Hopper tensor cores (sm_90a) for the shapes TMA cannot copy:
 * row-major A (M×K), B (K×N) in fp16 or bf16 whose rows are not 16-byte multiples (K or N not a
 * multiple of 8; any alignment of the buffers too), C (M×N) in the same type or in fp32 (problem
 * OUT_FP32=1), fp32 accumulation, any M, N, K.
 *
 * The consumers are gemm_wgmma's: persistent blocks walk the BLOCK_M×BLOCK_N tiles blockIdx.x,
 * blockIdx.x + gridDim.x, ... in grouped order (GROUP_M); CONSUMERS warpgroups each own
 * BLOCK_M/CONSUMERS rows of a tile and issue wgmma m64nBLOCK_Nk16 from a ring of num_stages
 * shared-memory stages in the layout a 128-byte-swizzled TMA copy leaves (A K-major in boxes of
 * 64 columns, B N-major in boxes of 64 columns of BLOCK_K rows), releasing each stage on its
 * "empty" mbarrier once the wgmma reading it are done.
 *
 * What differs is the producer. TMA needs 16-byte aligned rows, so here PRODUCERS warpgroups copy
 * with ordinary loads: the stage is cut into 16-byte chunks of the destination (8 elements of a
 * row of A, or of a K row of B), chunk c of a stage going to thread c % 128, c + 128, ... of the
 * producer warpgroup that owns the stage (stage instance g of the ring belongs to producer
 * g % PRODUCERS, so two producers fill alternate stages and their load latencies overlap). A
 * thread reads the two aligned 16-byte blocks that cover its chunk's 16 bytes wherever they start
 * (rows are only 2-byte aligned), 8 chunks' loads in flight at once, and shifts the 32
 * bytes down by the chunk's misalignment (whole words by selects, half words by a funnel shift);
 * a block that holds no element of the chunk's row is not read, so nothing outside a row is
 * touched but the rest of an aligned block that holds part of it. Elements past M, K or N become
 * zeros. The chunk is stored to where the swizzle puts it (16-byte unit u of 128-byte row r at
 * unit u ^ (r % 8)), then each thread fences its writes for the async proxy (wgmma reads through
 * it) and arrives on the stage's "full" mbarrier, which completes when all 128 have.
 *
 * The epilogue stores pairs where the address allows (an even element of C at an aligned
 * address) and single elements otherwise: C's rows are not 16-byte multiples either.
 *
 * wgmma.cuh has the instruction wrappers, sm90.cuh the mbarrier and descriptor helpers,
 * gemm_tc.cuh the output type. */
#if !defined(BT_DTYPE_FP16) && !defined(BT_DTYPE_BF16)
#error "gemm_wgmma_ldg takes fp16 or bf16"
#endif
#define BM BLOCK_M
#define BN BLOCK_N
#define BK BLOCK_K
#if BK != 64
#error "BLOCK_K is one 128-byte swizzle row of 16-bit elements: 64"
#endif
#define STAGES num_stages
#define CONS CONSUMERS
#define PROD PRODUCERS
#define WM (BM / CONS) /* rows per consumer warpgroup */
#define MB (WM / 64)   /* m64 blocks per consumer */
#define A_BYTES (BM * BK * 2)
#define B_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#define A_CHUNKS (BM * BK / 8)              /* 16-byte chunks of A per stage */
#define CHUNKS (A_CHUNKS + BK * BN / 8)     /* ... of the whole stage */
#define CPT (CHUNKS / 128)                  /* per producer thread */
#define BATCH 8                             /* chunks whose loads are in flight at once */
#if CHUNKS % 128 != 0
#error "a stage's chunks must split evenly over a warpgroup"
#endif
#define B_LBO (BK * 128) /* N-major B: bytes from one 64-column box (BK rows) to the next */
#define B_SBO 1024       /* bytes from one group of 8 K rows to the next */

__device__ __forceinline__ void tile_of(int t, int num_m, int num_n, int *m0, int *n0)
{
    int pm, pn;
    grouped_tile(t, num_m, num_n, &pm, &pn);
    *m0 = pm * BM;
    *n0 = pn * BN;
}

/* Where chunk c of a stage comes from and goes to: its first element in the matrix, the elements
 * of the row left from there (0 past the edges), and its byte offset in the stage (swizzled). */
struct Chunk {
    const ST *src;
    int valid;
    unsigned dst;
};
__device__ __forceinline__ Chunk chunk_at(int c, const ST *A, const ST *B, int M, int N, int K,
                                          int m0, int n0, int k0)
{
    Chunk ch;
    if (c < A_CHUNKS) { /* A: row r of the tile, 8 columns u of its 64 */
        const int r = c / 8, u = c % 8, m = m0 + r, k = k0 + u * 8;
        ch.valid = m < M ? min(max(K - k, 0), 8) : 0;
        ch.src = A + ((long long)min(m, M - 1) * K + min(k, K - 1));
        ch.dst = (unsigned)r * 128 + (unsigned)((u ^ (r & 7)) << 4);
    } else { /* B: K row r of the tile, 8 columns u of box b (64 columns) */
        const int c2 = c - A_CHUNKS, r = c2 / (BN / 8), b = (c2 % (BN / 8)) / 8, u = c2 % 8;
        const int k = k0 + r, n = n0 + b * 64 + u * 8;
        ch.valid = k < K ? min(max(N - n, 0), 8) : 0;
        ch.src = B + ((long long)min(k, K - 1) * N + min(n, N - 1));
        ch.dst = A_BYTES + (unsigned)b * (BK * 128) + (unsigned)r * 128 +
                 (unsigned)((u ^ (r & 7)) << 4);
    }
    return ch;
}

/* The two aligned 16-byte blocks that cover the chunk's `valid` elements from ch.src; a block with
 * none of them is not read (zeros). */
__device__ __forceinline__ void chunk_load(const Chunk &ch, uint4 &lo, uint4 &hi)
{
    const unsigned long long a = (unsigned long long)ch.src;
    const uint4 *blk = reinterpret_cast<const uint4 *>(a & ~15ull);
    const unsigned end = (unsigned)(a & 15) + 2u * (unsigned)ch.valid; /* bytes from blk */
    lo = make_uint4(0, 0, 0, 0);
    hi = lo;
    if (end > (unsigned)(a & 15))
        lo = __ldg(blk);
    if (end > 16)
        hi = __ldg(blk + 1);
}

/* The chunk's 16 bytes out of the 32 loaded: shifted down by its misalignment (an even number of
 * bytes below 16), elements from `valid` on zeroed. */
__device__ __forceinline__ uint4 chunk_align(const Chunk &ch, const uint4 &lo, const uint4 &hi)
{
    const unsigned sh = (unsigned)((unsigned long long)ch.src & 15);
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    unsigned y[6], x[5];
#pragma unroll
    for (int i = 0; i < 6; i++) /* whole words: by 2 when sh >= 8 ... */
        y[i] = (sh & 8) ? w[i + 2] : w[i];
#pragma unroll
    for (int i = 0; i < 5; i++) /* ... then by 1 when sh % 8 >= 4 */
        x[i] = (sh & 4) ? y[i + 1] : y[i];
    const unsigned s = (sh & 2) * 8; /* and half a word: 0 or 16 bits */
    unsigned o[4];
#pragma unroll
    for (int j = 0; j < 4; j++)
        o[j] = __funnelshift_r(x[j], x[j + 1], s);
    if (ch.valid < 8) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const unsigned keep = (2 * j < ch.valid ? 0xFFFFu : 0u) |
                                  (2 * j + 1 < ch.valid ? 0xFFFF0000u : 0u);
            o[j] &= keep;
        }
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

__device__ __forceinline__ void st_shared_v4(unsigned addr, const uint4 &v)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(v.x), "r"(v.y),
                 "r"(v.z), "r"(v.w)
                 : "memory");
}

/* One element, or the pair at (idx, idx + 1) of C when both are in the row and the address
 * allows one store. */
__device__ __forceinline__ void store_pair(CT *C, long long idx, bool second, float lo, float hi)
{
    CT *p = C + idx;
    if (second && ((unsigned long long)p & (2 * sizeof(CT) - 1)) == 0) {
        out2(p, lo, hi);
    } else {
        p[0] = out1(lo);
        if (second)
            p[1] = out1(hi);
    }
}

extern "C" __global__ void __launch_bounds__(128 * (PROD + CONS), 1)
gemm_wgmma_ldg(const ST *__restrict__ A, const ST *__restrict__ B, CT *__restrict__ C, int M,
               int N, int K)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* stages 1024-byte aligned (the swizzle pattern repeats every 1024 bytes), barriers after */
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const unsigned bars = base + STAGES * STAGE_BYTES;
#define FULL(s) (bars + 8u * (unsigned)(s))
#define EMPTY(s) (bars + 8u * (unsigned)(STAGES + (s)))
#define SA(s) (base + (unsigned)(s) * STAGE_BYTES)
#define SB(s) (SA(s) + A_BYTES)
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(FULL(s), 128);
            mbar_init(EMPTY(s), CONS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    const int num_m = (M + BM - 1) / BM, num_n = (N + BN - 1) / BN, ntiles = num_m * num_n;
    const int ktiles = (K + BK - 1) / BK;

    if (wg < PROD) { /* producer wg: the stage instances g with g % PROD == wg */
        int g = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
            int m0, n0;
            tile_of(t, num_m, num_n, &m0, &n0);
            for (int kt = 0; kt < ktiles; kt++, g++) {
                if (PROD > 1 && g % PROD != wg)
                    continue;
                const int s = g % STAGES;
                const unsigned phase = (unsigned)(g / STAGES) & 1u;
                mbar_wait(EMPTY(s), phase ^ 1u);
#pragma unroll 1
                for (int b0 = 0; b0 < CPT; b0 += BATCH) {
                    Chunk ch[BATCH];
                    uint4 lo[BATCH], hi[BATCH];
#pragma unroll
                    for (int i = 0; i < BATCH; i++)
                        if (CPT % BATCH == 0 || b0 + i < CPT) {
                            ch[i] = chunk_at(tid + 128 * (b0 + i), A, B, M, N, K, m0, n0,
                                             kt * BK);
                            chunk_load(ch[i], lo[i], hi[i]);
                        }
#pragma unroll
                    for (int i = 0; i < BATCH; i++)
                        if (CPT % BATCH == 0 || b0 + i < CPT)
                            st_shared_v4(SA(s) + ch[i].dst, chunk_align(ch[i], lo[i], hi[i]));
                }
                /* the generic-proxy writes, seen by wgmma's async-proxy reads */
                asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
                mbar_arrive(FULL(s));
            }
        }
    } else {
        /* consumers */
        const int c = wg - PROD, warp = tid / 32, lane = tid % 32;
        float d[MB][BN / 2];
        int s = 0;
        unsigned phase = 0;
        for (int t = blockIdx.x; t < ntiles; t += gridDim.x) {
            int m0, n0;
            tile_of(t, num_m, num_n, &m0, &n0);
#pragma unroll
            for (int mb = 0; mb < MB; mb++)
#pragma unroll
                for (int i = 0; i < BN / 2; i++)
                    d[mb][i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; kt++) {
                mbar_wait(FULL(s), phase);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) {
                    const unsigned long long db =
                        wg_desc(SB(s) + (unsigned)kk * 16 * 128, B_LBO, B_SBO);
#pragma unroll
                    for (int mb = 0; mb < MB; mb++) {
                        const unsigned long long da =
                            wg_desc(SA(s) + (unsigned)(c * WM + mb * 64) * 128 +
                                        (unsigned)kk * 32,
                                    16, 1024);
                        Wg<BN>::mma(d[mb], da, db);
                    }
                }
                wg_commit();
                wg_wait<1>(); /* the previous k-tile's wgmma are done: release its stage */
                if (prev >= 0 && tid == 0)
                    mbar_arrive(EMPTY(prev));
                prev = s;
                if (++s == STAGES) {
                    s = 0;
                    phase ^= 1u;
                }
            }
            wg_wait<0>();
            if (prev >= 0 && tid == 0)
                mbar_arrive(EMPTY(prev));
            /* epilogue: thread (warp, lane) holds rows 16*warp + lane/4 (+8), columns
             * 8q + 2*(lane%4) of each m64 block */
#pragma unroll
            for (int mb = 0; mb < MB; mb++) {
                const int r = m0 + c * WM + mb * 64 + warp * 16 + lane / 4;
#pragma unroll
                for (int q = 0; q < BN / 8; q++) {
                    const int col = n0 + q * 8 + (lane % 4) * 2;
                    if (col < N) {
                        if (r < M)
                            store_pair(C, (long long)r * N + col, col + 1 < N, d[mb][q * 4 + 0],
                                       d[mb][q * 4 + 1]);
                        if (r + 8 < M)
                            store_pair(C, (long long)(r + 8) * N + col, col + 1 < N,
                                       d[mb][q * 4 + 2], d[mb][q * 4 + 3]);
                    }
                }
            }
        }
    }
}
