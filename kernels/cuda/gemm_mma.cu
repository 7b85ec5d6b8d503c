/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_mma.cu — C = A·B on tensor cores with mma.sync (sm_80 and newer): row-major A (M×K),
 * B (K×N) in fp16 or bf16, C (M×N) in the same type or in fp32 (problem OUT_FP32=1), fp32
 * accumulation, any M, N, K.
 *
 * One block computes a BLOCK_M×BLOCK_N tile of C (tiles in grouped order: GROUP_M rows of tiles
 * share B in L2), split over WARPS_M × (num_warps / WARPS_M) warps; each warp owns a tile of
 * (BLOCK_M/WARPS_M)×(BLOCK_N/WARPS_N) built from m16n8k16 instructions, its A and B fragments read
 * by ldmatrix (B transposed on the way) from shared memory whose rows are padded by 16 bytes, so
 * that the eight rows of every ldmatrix fall in distinct banks.
 *
 * K advances in BLOCK_K steps. With VEC=1 (the spec allows it only when K and N are multiples of
 * 8, so that every row of A and B is 16-byte aligned; buffers from bt_buffer_create are) the
 * tiles arrive by cp.async in a ring of num_stages buffers, num_stages-1 tiles in flight (rows
 * and columns outside the matrix are zero-filled by the copy itself). With VEC=0 (any K and N)
 * each thread loads the same 8-element chunks element by element into registers one tile ahead
 * (one address per chunk, zeros past the edges) and stores them as 16-byte shared-memory writes
 * after the current tile's math (two buffers). VEC is a compile-time choice so that neither
 * path's registers burden the other.
 *
 * SPLIT_K > 1 (for small M): blockIdx.y splits the K tiles; each split adds its fp32 partial tile
 * into the workspace W with atomics, and the last split to finish a tile (a ticket in T) converts
 * it into C and zeroes its part of W and its ticket again, so the workspace needs no clearing
 * between launches. */
#if !defined(BT_DTYPE_FP16) && !defined(BT_DTYPE_BF16)
#error "gemm_mma takes fp16 or bf16"
#endif
#define BM BLOCK_M
#define BN BLOCK_N
#define BK BLOCK_K
#define STAGES num_stages
/* EPI=1 (16-bit output, SPLIT_K=1, N a multiple of 8): 16-byte stores gathered across each quad
 * of lanes (quad_chunk, gemm_tc.cuh) instead of pairs. Not in the default space: on the H200 it
 * helped some warp layouts and hurt others, and doubled the space (bench/NOTES.md 21); kept to
 * re-run that comparison (bench/h200_gemm_epi.sh). */
#ifndef EPI
#define EPI 0
#endif
#if EPI && defined(BT_TYPE_C_FP32)
#error "EPI=1 is for 16-bit output"
#endif
#define WARPS_N (num_warps / WARPS_M)
#define WTM (BM / WARPS_M) /* warp tile rows */
#define WTN (BN / WARPS_N) /* warp tile columns */
#define MI (WTM / 16)
#define NI (WTN / 8)
#define AS (BK + 8) /* padded row strides, in elements */
#define BS (BN + 8)
#define A_STAGE (BM * AS)
#define B_STAGE (BK * BS)
#define NT BT_THREADS

#if defined(BT_DTYPE_FP16)
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#endif

__device__ __forceinline__ unsigned smem_addr(const void *p)
{
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

/* 16 bytes global → shared, asynchronously; bytes < 16 zero-fills the rest (0: all zeros). */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(unsigned r[4], const ST *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned r[4], const ST *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void mma16816(float c[4], const unsigned a[4], unsigned b0, unsigned b1)
{
    asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* One BK-deep tile of the product from shared memory into the warp's accumulators: per 16-deep
 * step, the warp's A fragments, then B two n8 columns at a time (few registers live). */
__device__ __forceinline__ void tile_math(const ST *As, const ST *Bs, float acc[MI][NI][4], int wm,
                                          int wn, int lane)
{
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++) {
        unsigned a[MI][4];
#pragma unroll
        for (int i = 0; i < MI; i++)
            ldsm_x4(a[i], As + (wm * WTM + i * 16 + (lane & 15)) * AS + kk * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int j = 0; j < NI / 2; j++) {
            unsigned b[4];
            ldsm_x4_t(b, Bs + (kk * 16 + (lane & 15)) * BS + wn * WTN + j * 16 + (lane >> 4) * 8);
#pragma unroll
            for (int i = 0; i < MI; i++) {
                mma16816(acc[i][2 * j], a[i], b[0], b[1]);
                mma16816(acc[i][2 * j + 1], a[i], b[2], b[3]);
            }
        }
    }
}

/* cp.async of K tile kt into a stage: rows of A and B are 16-byte aligned here. */
__device__ __forceinline__ void load_async(const ST *A, const ST *B, ST *As, ST *Bs, int M, int N,
                                           int K, int m0, int n0, int kt)
{
    const int k0 = kt * BK;
#pragma unroll
    for (int c0 = 0; c0 < BM * BK / 8; c0 += NT) {
        int c = c0 + (int)threadIdx.x;
        if (BM * BK / 8 % NT == 0 || c < BM * BK / 8) {
            int r = c / (BK / 8), k = (c % (BK / 8)) * 8, gr = m0 + r, gk = k0 + k;
            int bytes = gr < M && gk < K ? min(16, (K - gk) * 2) : 0;
            cp_async16(As + r * AS + k, bytes ? A + (long long)gr * K + gk : A, bytes);
        }
    }
#pragma unroll
    for (int c0 = 0; c0 < BK * BN / 8; c0 += NT) {
        int c = c0 + (int)threadIdx.x;
        if (BK * BN / 8 % NT == 0 || c < BK * BN / 8) {
            int r = c / (BN / 8), n = (c % (BN / 8)) * 8, gk = k0 + r, gn = n0 + n;
            int bytes = gk < K && gn < N ? min(16, (N - gn) * 2) : 0;
            cp_async16(Bs + r * BS + n, bytes ? B + (long long)gk * N + gn : B, bytes);
        }
    }
}

#define PA ((BM * BK / 8 + NT - 1) / NT) /* 8-element chunks of A per thread and tile */
#define PB ((BK * BN / 8 + NT - 1) / NT)

/* 8 consecutive elements at p packed in 16 bytes, zeros from `valid` on. p is 2-byte aligned;
 * a full chunk that may read one element past its end (`spare`) is read as 32-bit words, shifted
 * by 16 bits when p is odd (half as many loads as element loads: the element path is bound by
 * the load/store unit); otherwise element by element. */
__device__ __forceinline__ uint4 load8(const ST *p, int valid, bool spare)
{
    if (valid >= 8 && spare) {
        const unsigned long long a = (unsigned long long)p;
        const unsigned *w = reinterpret_cast<const unsigned *>(a & ~3ull);
        unsigned x0 = w[0], x1 = w[1], x2 = w[2], x3 = w[3];
        if (a & 2) {
            const unsigned x4 = w[4];
            return make_uint4(__funnelshift_r(x0, x1, 16), __funnelshift_r(x1, x2, 16),
                              __funnelshift_r(x2, x3, 16), __funnelshift_r(x3, x4, 16));
        }
        return make_uint4(x0, x1, x2, x3);
    }
    unsigned e[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
        e[j] = j < valid ? p[j] : 0u;
    return make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
}

/* Element loads of K tile kt into registers, chunked as the cp.async path is (one row and eight
 * columns per chunk: one address per eight loads, one 16-byte shared store per chunk). */
__device__ __forceinline__ void load_chunks(const ST *A, const ST *B, uint4 ra[PA], uint4 rb[PB],
                                            int M, int N, int K, int m0, int n0, int kt)
{
    const int k0 = kt * BK;
    const uint4 z = make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int i = 0; i < PA; i++) {
        int c = i * NT + (int)threadIdx.x;
        int r = c / (BK / 8), k = (c % (BK / 8)) * 8, gr = m0 + r, gk = k0 + k;
        int valid = c < BM * BK / 8 && gr < M ? min(8, K - gk) : 0;
        ra[i] = valid > 0 ? load8(A + (long long)gr * K + gk, valid, gr + 1 < M) : z;
    }
#pragma unroll
    for (int i = 0; i < PB; i++) {
        int c = i * NT + (int)threadIdx.x;
        int r = c / (BN / 8), n = (c % (BN / 8)) * 8, gk = k0 + r, gn = n0 + n;
        int valid = c < BK * BN / 8 && gk < K ? min(8, N - gn) : 0;
        rb[i] = valid > 0 ? load8(B + (long long)gk * N + gn, valid, gk + 1 < K) : z;
    }
}
__device__ __forceinline__ void store_chunks(ST *As, ST *Bs, const uint4 ra[PA], const uint4 rb[PB])
{
#pragma unroll
    for (int i = 0; i < PA; i++) {
        int c = i * NT + (int)threadIdx.x;
        if (c < BM * BK / 8)
            *reinterpret_cast<uint4 *>(As + (c / (BK / 8)) * AS + (c % (BK / 8)) * 8) = ra[i];
    }
#pragma unroll
    for (int i = 0; i < PB; i++) {
        int c = i * NT + (int)threadIdx.x;
        if (c < BK * BN / 8)
            *reinterpret_cast<uint4 *>(Bs + (c / (BN / 8)) * BS + (c % (BN / 8)) * 8) = rb[i];
    }
}

extern "C" __global__ void __launch_bounds__(BT_THREADS)
gemm_mma(const ST *__restrict__ A, const ST *__restrict__ B, CT *__restrict__ C,
         float *__restrict__ W, int *__restrict__ T, int M, int N, int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    ST *As = reinterpret_cast<ST *>(smem_raw);
    ST *Bs = As + STAGES * A_STAGE;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp / WARPS_N, wn = warp % WARPS_N;

    const int pid = blockIdx.x; /* the tile (its ticket in T with SPLIT_K) */
    int pm, pn;
    grouped_tile(pid, (M + BM - 1) / BM, (N + BN - 1) / BN, &pm, &pn);
    const int m0 = pm * BM, n0 = pn * BN;

    /* this split's K tiles */
    const int ktiles = (K + BK - 1) / BK;
    const int per = (ktiles + SPLIT_K - 1) / SPLIT_K;
    const int kt0 = min(ktiles, (int)blockIdx.y * per), kt1 = min(ktiles, kt0 + per);
    const int nk = kt1 - kt0;

    float acc[MI][NI][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int q = 0; q < 4; q++)
                acc[i][j][q] = 0.0f;

    if (VEC) {
#pragma unroll
        for (int s = 0; s < STAGES - 1; s++) {
            if (s < nk)
                load_async(A, B, As + s * A_STAGE, Bs + s * B_STAGE, M, N, K, m0, n0, kt0 + s);
            cp_commit();
        }
        for (int it = 0; it < nk; it++) {
            cp_wait<STAGES - 2>();
            __syncthreads(); /* tile it has landed; everyone is done with tile it-1's buffer */
            int nxt = it + STAGES - 1;
            if (nxt < nk)
                load_async(A, B, As + (nxt % STAGES) * A_STAGE, Bs + (nxt % STAGES) * B_STAGE, M,
                           N, K, m0, n0, kt0 + nxt);
            cp_commit();
            tile_math(As + (it % STAGES) * A_STAGE, Bs + (it % STAGES) * B_STAGE, acc, wm, wn, lane);
        }
        cp_wait<0>();
    } else { /* loads of the next tile in flight during this tile's math, two buffers */
        uint4 ra[PA], rb[PB];
        if (nk > 0) {
            load_chunks(A, B, ra, rb, M, N, K, m0, n0, kt0);
            store_chunks(As, Bs, ra, rb);
        }
        for (int it = 0; it < nk; it++) {
            __syncthreads();
            if (it + 1 < nk)
                load_chunks(A, B, ra, rb, M, N, K, m0, n0, kt0 + it + 1);
            tile_math(As + (it & 1) * A_STAGE, Bs + (it & 1) * B_STAGE, acc, wm, wn, lane);
            if (it + 1 < nk)
                store_chunks(As + ((it + 1) & 1) * A_STAGE, Bs + ((it + 1) & 1) * B_STAGE, ra, rb);
        }
    }

    const int rbase = m0 + wm * WTM + (lane >> 2), cbase = n0 + wn * WTN + (lane & 3) * 2;
#if EPI
    /* 16-byte stores of 16-bit output (gemm_tc.cuh): rows of 8 columns that lie wholly inside the
     * matrix or wholly outside when N is a multiple of 8 and C 16-byte aligned (the same for
     * every thread, so the whole warp takes part in the exchanges) */
    if (SPLIT_K == 1 && NI % 4 == 0 && (N & 7) == 0 && ((unsigned long long)C & 15) == 0) {
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int p = 0; p < NI / 4; p++) {
                    const uint4 w = quad_chunk(reinterpret_cast<const float(&)[NI * 4]>(acc[i]),
                                               p, h, lane & 3);
                    const int r = rbase + i * 16 + h * 8, c = n0 + wn * WTN + p * 32 + (lane & 3) * 8;
                    if (r < M && c < N)
                        *reinterpret_cast<uint4 *>(C + (long long)r * N + c) = w;
                }
        return;
    }
#endif
    if (SPLIT_K == 1) {
        const bool pairs = (N & 1) == 0 && ((unsigned long long)C & 3) == 0;
#pragma unroll
        for (int i = 0; i < MI; i++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int r = rbase + i * 16 + h * 8, c = cbase + j * 8;
                    if (r >= M || c >= N)
                        continue;
                    float v0 = acc[i][j][2 * h], v1 = acc[i][j][2 * h + 1];
                    if (pairs)
                        out2(C + (long long)r * N + c, v0, v1);
                    else {
                        C[(long long)r * N + c] = out1(v0);
                        if (c + 1 < N)
                            C[(long long)r * N + c + 1] = out1(v1);
                    }
                }
        return;
    }
    /* split-K: partial sums into W, the last split of the tile writes C and cleans up */
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int q = 0; q < 4; q++) {
                int r = rbase + i * 16 + (q >> 1) * 8, c = cbase + j * 8 + (q & 1);
                if (r < M && c < N)
                    atomicAdd(W + (long long)r * N + c, acc[i][j][q]);
            }
    __threadfence();
    __syncthreads();
    __shared__ int last;
    if (threadIdx.x == 0)
        last = atomicAdd(T + pid, 1) == SPLIT_K - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    for (int e = threadIdx.x; e < BM * BN; e += NT) {
        int r = m0 + e / BN, c = n0 + e % BN;
        if (r < M && c < N) {
            float *w = W + (long long)r * N + c;
            C[(long long)r * N + c] = out1(__ldcg(w));
            *w = 0.0f;
        }
    }
    if (threadIdx.x == 0)
        T[pid] = 0;
}
