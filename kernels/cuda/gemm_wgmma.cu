/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_wgmma.cu — C = A·B on Hopper tensor cores (sm_90a): row-major A (M×K), B (K×N) in fp16 or
 * bf16, C (M×N) in the same type or in fp32 (problem OUT_FP32=1), fp32 accumulation; K and N
 * multiples of 8 (16-byte rows, which TMA needs), any M.
 *
 * Persistent and warp-specialised: the grid has at most one block per SM, and each block walks
 * the BLOCK_M×BLOCK_N tiles blockIdx.x, blockIdx.x + gridDim.x, ... in grouped order (GROUP_M
 * rows of tiles share B in L2) — or, with SCHED=1, takes the next tile from a global counter
 * (S[0]) so that a block that started late holds nobody up; the producer passes each tile's
 * index to the consumers in its first stage, and the last block out sets the counters back to
 * zero, so nothing needs clearing between launches.
 *
 * Warpgroup 0 is the producer: one thread issues TMA copies (cp.async.bulk.tensor, 128-byte
 * swizzle) of A (BLOCK_M×BLOCK_K) and B (BLOCK_K×BLOCK_N), in boxes 64 columns wide, into a
 * ring of num_stages shared-memory stages, each with a "full" mbarrier (the copy engine completes
 * it with the bytes it wrote) and an "empty" one (the consumers release it). Warpgroups
 * 1..CONSUMERS each own BLOCK_M/CONSUMERS rows of the tile (or, with PINGPONG=1, whole tiles in
 * turn, so that one's epilogue overlaps the other's math) and issue wgmma (m64nBLOCK_Nk16)
 * straight from shared memory: A K-major, B N-major (transposed by the instruction), so neither
 * operand is rearranged on the way. A consumer keeps one k-tile of wgmma in flight and releases
 * the stage before it; its epilogue (fp32 → fp16/bf16, 16-byte stores after an exchange within
 * each quad of lanes, masked at M and N) overlaps the producer's copies for its next tile. Out-of-range rows and columns of a copy arrive as zeros,
 * so any M and any K tail need no masks in the main loop. CLUSTER_M=2 pairs vertically adjacent
 * tiles in a 2-CTA cluster: each block loads half of their common B and multicasts it, and a
 * stage is free again once the consumers of both blocks have released it.
 *
 * The wgmma wrappers between the GENERATED markers come from gen_wgmma.py; the mbarrier, TMA and
 * descriptor helpers are sm90.cuh's (listed before this file in the spec). */
#if !defined(BT_DTYPE_FP16) && !defined(BT_DTYPE_BF16)
#error "gemm_wgmma takes fp16 or bf16"
#endif
#if defined(BT_DTYPE_FP16)
#define WG_AB "f16.f16"
#else
#define WG_AB "bf16.bf16"
#endif
#define BM BLOCK_M
#define BN BLOCK_N
#define BK BLOCK_K
#define KA (BK / 64) /* 128-byte swizzle atoms of A along K per stage, 64 elements each */
#define STAGES num_stages
#define CONS CONSUMERS
#ifndef PINGPONG
#define PINGPONG 0
#endif
#if PINGPONG
#define WM BM /* each consumer owns whole tiles, alternating with the other */
#define ROW0(c) 0
#else
#define WM (BM / CONS) /* rows per consumer warpgroup */
#define ROW0(c) ((c) * WM)
#endif
#define MB (WM / 64)   /* m64 blocks per consumer */
#define A_BYTES (BM * BK * 2)
#define B_BYTES (BK * BN * 2)
#define STAGE_BYTES (A_BYTES + B_BYTES)
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef WAIT_ALL
#define WAIT_ALL 0
#endif
#ifndef SCHED
#define SCHED 0
#endif
#if CLUSTER_M > 1
#define CLUSTER_ATTR __cluster_dims__(CLUSTER_M, 1, 1)
#else
#define CLUSTER_ATTR
#endif
#ifndef B_LBO
#define B_LBO (BK * 128) /* N-major B: bytes from one 64-column box (BK rows) to the next */
#endif
#ifndef B_SBO
#define B_SBO 1024       /* bytes from one group of 8 K rows to the next */
#endif

__device__ __forceinline__ void st_shared_s32(unsigned addr, int v)
{
    asm volatile("st.shared.s32 [%0], %1;\n" ::"r"(addr), "r"(v) : "memory");
}
__device__ __forceinline__ int ld_shared_s32(unsigned addr)
{
    int v;
    asm volatile("ld.shared.s32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
    return v;
}
/* The same copy into every CTA of the cluster in mask (same shared-memory offset, and completing
 * on the barrier at the same offset in each). */
__device__ __forceinline__ void tma_load_mc(unsigned dst, const TmaDesc *map, int c0, int c1,
                                            unsigned bar, unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}
/* Arrives on the barrier at offset bar in the shared memory of cluster CTA `cta`, with the
 * default semantics (release at CTA scope): the stage's reads were wgmma's, complete once
 * wgmma.wait_group returned. RREL=1 asks for release at cluster scope instead, which made every
 * cluster config 35-50 % slower on the H200 (bench/NOTES.md 17); kept to re-run that test. */
#ifndef RREL
#define RREL 0
#endif
__device__ __forceinline__ void mbar_arrive_cta(unsigned bar, unsigned cta)
{
#if RREL
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
                 "r"(cta)
                 : "memory");
#else
    asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar), "r"(cta)
                 : "memory");
#endif
}

/* GENERATED BEGIN (gen_wgmma.py) */
__device__ __forceinline__ void wgmma_n64(float (&d)[32], unsigned long long da,
                                           unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." WG_AB " {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
                 "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
                 "%26, %27, %28, %29, %30, %31"
                 "}, %32, %33, p, 1, 1, 0, 1;\n}\n"
                 :
                   "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31])
                 : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n128(float (&d)[64], unsigned long long da,
                                           unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32." WG_AB " {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
                 "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
                 "%26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
                 "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "
                 "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
                 "%62, %63"
                 "}, %64, %65, p, 1, 1, 0, 1;\n}\n"
                 :
                   "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                 : "l"(da), "l"(db), "r"(1));
}
__device__ __forceinline__ void wgmma_n256(float (&d)[128], unsigned long long da,
                                           unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32." WG_AB " {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, "
                 "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, "
                 "%26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
                 "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, "
                 "%50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
                 "%62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
                 "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, "
                 "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, "
                 "%98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
                 "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, "
                 "%118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p, 1, 1, 0, 1;\n}\n"
                 :
                   "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]),
                   "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
                   "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
                   "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
                   "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
                   "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
                   "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]),
                   "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
                   "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
                   "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
                   "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]),
                   "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
                   "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]),
                   "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
                   "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]),
                   "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]),
                   "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]),
                   "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
                   "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),
                   "+f"(d[126]), "+f"(d[127])
                 : "l"(da), "l"(db), "r"(1));
}
/* GENERATED END */

template <int N> struct Wg;
template <> struct Wg<64> {
    static __device__ __forceinline__ void mma(float (&d)[32], unsigned long long a,
                                               unsigned long long b) { wgmma_n64(d, a, b); }
};
template <> struct Wg<128> {
    static __device__ __forceinline__ void mma(float (&d)[64], unsigned long long a,
                                               unsigned long long b) { wgmma_n128(d, a, b); }
};
template <> struct Wg<256> {
    static __device__ __forceinline__ void mma(float (&d)[128], unsigned long long a,
                                               unsigned long long b) { wgmma_n256(d, a, b); }
};

__device__ __forceinline__ void tile_of(int t, int num_m, int num_n, int *m0, int *n0)
{
    int pm, pn;
    grouped_tile(t, num_m, num_n, &pm, &pn);
    *m0 = pm * BM;
    *n0 = pn * BN;
}

/* EPI=1 (the default for 16-bit output): each row's outputs leave in 16-byte stores, whole
 * 32-byte sectors (quad_chunk, gemm_tc.cuh), instead of 4-byte pairs that fill half of each
 * sector (EPI=0, and fp32 output); 4-10 % faster on the H200 at every tile shape (NOTES 21). */
#ifndef EPI
#if defined(BT_TYPE_C_FP32)
#define EPI 0
#else
#define EPI 1
#endif
#endif
#if EPI && defined(BT_TYPE_C_FP32)
#error "EPI=1 is for 16-bit output"
#endif
extern "C" __global__ void __launch_bounds__(128 * (CONS + 1), 1) CLUSTER_ATTR
gemm_wgmma(const ST *__restrict__ A, const ST *__restrict__ B, CT *__restrict__ C, int M, int N,
           int K, int *__restrict__ S, const __grid_constant__ TmaDesc tmA,
           const __grid_constant__ TmaDesc tmB)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    /* stages 1024-byte aligned (the swizzle pattern repeats every 1024 bytes), barriers after */
    const unsigned base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const unsigned bars = base + STAGES * STAGE_BYTES;
#define FULL(s) (bars + 8u * (unsigned)(s))
#define EMPTY(s) (bars + 8u * (unsigned)(STAGES + (s)))
#define ORD(c) (bars + 8u * (unsigned)(2 * STAGES + (c))) /* pingpong: consumer c's turn */
#define SLOT(s) (bars + 8u * (unsigned)(2 * STAGES + 2) + 4u * (unsigned)(s)) /* SCHED: tile id */
#define SA(s) (base + (unsigned)(s) * STAGE_BYTES)
#define SB(s) (SA(s) + A_BYTES)
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    /* a cluster of CLUSTER_M blocks works on CLUSTER_M vertically adjacent tiles at once: each
     * loads its own A and a 1/CLUSTER_M share of the common B, multicast to all of them */
    const unsigned rank = CLUSTER_M > 1 ? blockIdx.x % CLUSTER_M : 0;
    const int cid = blockIdx.x / CLUSTER_M, nclusters = gridDim.x / CLUSTER_M;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(FULL(s), 1);
            mbar_init(EMPTY(s), (PINGPONG ? 1 : CONS) * CLUSTER_M);
        }
        mbar_init(ORD(0), 1);
        mbar_init(ORD(1), 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    if (CLUSTER_M > 1)
        cluster_sync(); /* no block multicasts into a barrier its peer has not made yet */
    else
        __syncthreads();
    const int num_m = (M + BM - 1) / BM, num_n = (N + BN - 1) / BN;
    const int num_ms = (num_m + CLUSTER_M - 1) / CLUSTER_M, ntiles = num_ms * num_n;
    const int ktiles = (K + BK - 1) / BK;

    if (wg == 0) { /* producer */
        if (tid == 0) {
            int s = 0;
            unsigned phase = 0;
            for (int t = SCHED ? atomicAdd(S, 1) : cid; t < ntiles;
                 t = SCHED ? atomicAdd(S, 1) : t + nclusters) {
                int m0, n0;
                tile_of(t, num_ms, num_n, &m0, &n0);
                m0 = (m0 * CLUSTER_M + (int)rank * BM);
                for (int kt = 0; kt < ktiles; kt++) {
                    mbar_wait(EMPTY(s), phase ^ 1u);
                    if (SCHED && kt == 0)
                        st_shared_s32(SLOT(s), t); /* published by the arrive below */
                    mbar_expect_tx(FULL(s), STAGE_BYTES);
#pragma unroll
                    for (int a = 0; a < KA; a++) /* A: BM rows x 64 columns per box */
                        tma_load(SA(s) + (unsigned)a * (BM * 128), &tmA, kt * BK + a * 64, m0,
                                 FULL(s));
#pragma unroll
                    for (int c = 0; c < BN / 64; c++) {
                        if (CLUSTER_M == 1)
                            tma_load(SB(s) + (unsigned)c * (BK * 128), &tmB, n0 + c * 64, kt * BK,
                                     FULL(s));
                        else if (c % CLUSTER_M == (int)rank)
                            tma_load_mc(SB(s) + (unsigned)c * (BK * 128), &tmB, n0 + c * 64,
                                        kt * BK, FULL(s), (unsigned short)((1u << CLUSTER_M) - 1));
                    }
                    if (++s == STAGES) {
                        s = 0;
                        phase ^= 1u;
                    }
                }
            }
            if (SCHED) {
                /* no tiles left: a stage whose slot says so, completed with no bytes */
                mbar_wait(EMPTY(s), phase ^ 1u);
                st_shared_s32(SLOT(s), -1);
                mbar_arrive(FULL(s));
                /* the last block out puts the counters back to zero for the next launch */
                __threadfence();
                if (atomicAdd(S + 1, 1) == (int)gridDim.x - 1) {
                    atomicExch(S, 0);
                    atomicExch(S + 1, 0);
                }
            }
        }
    } else {
        /* consumers */
        const int c = wg - 1, warp = tid / 32, lane = tid % 32;
        /* a stage is free again once every consumer of every block that received it let go */
        auto release = [&](unsigned bar) {
            if (CLUSTER_M == 1)
                mbar_arrive(bar);
            else
                for (unsigned p = 0; p < CLUSTER_M; p++)
                    mbar_arrive_cta(bar, p);
        };
        float d[MB][BN / 2];
        int s = 0;
        unsigned phase = 0;
        for (int t = cid, j = 0;; t += nclusters, j++) {
            if (SCHED) { /* the tile the producer took, in the slot of its first stage */
                mbar_wait(FULL(s), phase);
                t = ld_shared_s32(SLOT(s));
                if (t < 0)
                    break;
            } else if (t >= ntiles) {
                break;
            } else if (PINGPONG) { /* consumer c takes every other tile; the ring runs through all */
                if (j % 2 != c)
                    continue;
                /* its turn: the other consumer has issued its last k-tile, so this one waits on
                 * ring phases at most one round ahead (parity waits cannot tell rounds apart) */
                const int n = j / 2;
                if (c == 1)
                    mbar_wait(ORD(1), (unsigned)n & 1u);
                else if (n >= 1)
                    mbar_wait(ORD(0), (unsigned)(n - 1) & 1u);
                const long long g = (long long)j * ktiles;
                s = (int)(g % STAGES);
                phase = (unsigned)(g / STAGES) & 1u;
            }
            int m0, n0;
            tile_of(t, num_ms, num_n, &m0, &n0);
            m0 = (m0 * CLUSTER_M + (int)rank * BM);
#pragma unroll
            for (int mb = 0; mb < MB; mb++)
#pragma unroll
                for (int i = 0; i < BN / 2; i++)
                    d[mb][i] = 0.0f;
            int prev = -1;
            for (int kt = 0; kt < ktiles; kt++) {
                if (!SCHED || kt > 0)
                    mbar_wait(FULL(s), phase);
                wg_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) {
                    const unsigned long long db =
                        wg_desc(SB(s) + (unsigned)kk * 16 * 128, B_LBO, B_SBO);
#pragma unroll
                    for (int mb = 0; mb < MB; mb++) {
                        const unsigned long long da =
                            wg_desc(SA(s) + (unsigned)(kk / 4) * (BM * 128) +
                                        (unsigned)(ROW0(c) + mb * 64) * 128 +
                                        (unsigned)(kk % 4) * 32,
                                    16, 1024);
                        Wg<BN>::mma(d[mb], da, db);
                    }
                }
                wg_commit();
#if WAIT_ALL
                wg_wait<0>(); /* this k-tile's wgmma are done: release its stage at once */
                if (tid == 0)
                    release(EMPTY(s));
#else
                wg_wait<1>(); /* the previous k-tile's wgmma are done: release its stage */
                if (prev >= 0 && tid == 0)
                    release(EMPTY(prev));
                prev = s;
#endif
                if (++s == STAGES) {
                    s = 0;
                    phase ^= 1u;
                }
            }
            if (PINGPONG && tid == 0)
                mbar_arrive(ORD(1 - c)); /* the other consumer's math can queue behind ours */
            wg_wait<0>();
            if (prev >= 0 && tid == 0)
                release(EMPTY(prev));
            /* epilogue: thread (warp, lane) holds rows 16*warp + lane/4 (+8), columns
             * 8q + 2*(lane%4) of each m64 block */
#if EPI
#pragma unroll
            for (int mb = 0; mb < MB; mb++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int r = m0 + ROW0(c) + mb * 64 + warp * 16 + lane / 4 + 8 * h;
#pragma unroll
                    for (int p = 0; p < BN / 32; p++) {
                        uint4 w = quad_chunk(d[mb], p, h, lane & 3);
                        const int col = n0 + p * 32 + (lane & 3) * 8;
                        if (r < M && col < N)
                            *reinterpret_cast<uint4 *>(C + (long long)r * N + col) = w;
                    }
                }
#else
#pragma unroll
            for (int mb = 0; mb < MB; mb++) {
                const int r = m0 + ROW0(c) + mb * 64 + warp * 16 + lane / 4;
#pragma unroll
                for (int q = 0; q < BN / 8; q++) {
                    const int col = n0 + q * 8 + (lane % 4) * 2;
                    if (col < N) {
                        if (r < M)
                            out2(C + (long long)r * N + col, d[mb][q * 4 + 0], d[mb][q * 4 + 1]);
                        if (r + 8 < M)
                            out2(C + (long long)(r + 8) * N + col, d[mb][q * 4 + 2],
                                 d[mb][q * 4 + 3]);
                    }
                }
            }
#endif
        }
    }
    if (CLUSTER_M > 1)
        cluster_sync(); /* no block leaves while a peer may still write into its shared memory */
}
