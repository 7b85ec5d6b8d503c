/* SPDX-License-Identifier: Apache-2.0 */
/* sm90.cuh — the inline-PTX building blocks of the Hopper kernels, shared by gemm_wgmma.cu and
 * gemm_smallm_tma.cu (and, for smem_u32 and cluster_sync, the register-streaming small-M kernels):
 * shared-memory addresses, the cluster barrier, mbarriers, TMA copies and wgmma's shared-memory
 * descriptors. Listed in a spec's sources before the kernel's own file, after the prelude.
 * Everything here is inline and compiled only where used, so a spec for sm_80 may list this file
 * for smem_u32 alone; the mbarrier, TMA and cluster functions need sm_90, wgmma sm_90a. */

/* A TMA tensor map as the kernel receives it (`const __grid_constant__ TmaDesc` parameter; the
 * spec's "kind": "tensormap" argument, encoded by the host for every launch). */
struct __align__(64) TmaDesc {
    unsigned long long v[16];
};

/* The shared-memory address (32-bit, .shared window) of a generic pointer into shared memory. */
__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

/* Every thread of every CTA of the cluster arrives and waits (release / acquire). */
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" :::
                     "memory");
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
}
/* TMA: the box at (c0 innermost, c1) of the tensor map into shared memory, completing on bar. */
__device__ __forceinline__ void tma_load(unsigned dst, const TmaDesc *map, int c0, int c1,
                                         unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}
/* The same copy with an L2 cache policy (createpolicy), e.g. evict-first for data read once. */
__device__ __forceinline__ void tma_load_hint(unsigned dst, const TmaDesc *map, int c0, int c1,
                                              unsigned bar, unsigned long long policy)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                 ".L2::cache_hint [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(bar), "l"(policy)
                 : "memory");
}

/* Starts fetching a tensor map (a kernel parameter) into the TMA unit's descriptor cache, so that
 * the first copy through it does not wait for it. */
__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc *map)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}

/* Named barrier `id` (1 .. 15; 0 is __syncthreads') over `count` threads, whole warps. */
__device__ __forceinline__ void named_sync(unsigned id, unsigned count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* A wgmma shared-memory descriptor with 128-byte swizzle. */
__device__ __forceinline__ unsigned long long wg_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
           ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
