/* SPDX-License-Identifier: Apache-2.0 */
/* gemm_smallm_reg.cuh — the register-streaming small-M kernels' shared part (gemm_smallm.cu: B
 * is K×N; gemm_smallm_nt.cu: B is the N×K weight of torch.nn.functional.linear), listed after
 * gemm_smallm.cuh (the reduction, finish) and before the kernel's own file in both specs.
 *
 * A block owns BN = WN·TN outputs along N for the whole of M (WN = num_warps / WK warps side by
 * side, TN each) and one of SPLIT_K slices of K; its WK warps along K take the slice's K steps in
 * turn. The block first copies its slice of A into shared memory (stage_a: BM rows, zeros past M
 * and past the slice), then streams B straight from global memory into registers, U steps of
 * 16-byte loads per thread in flight, and multiplies on CUDA cores (MATH=0) or on tensor cores
 * (MATH=1, mma.sync m16n8k16, fp32 accumulation). A batch's loads are issued together and used
 * after the last is issued; the next batch's are issued after that math (the warps of an SM
 * overlap each other's waits). finish() (gemm_smallm.cuh) then sums the partial tiles.
 *
 * Compile-time parameters (the spec's): BLOCK_M, WARP_N, DEPTH, WARPS_K, num_warps, SPLIT_K,
 * CLUSTER, VEC; each kernel derives MATH (tensor cores or not) from WARP_N. */
/* short names for the spec's parameters (only the command line's -D names reach the headers) */
#define TN WARP_N  /* outputs along N per warp */
#define U DEPTH    /* K steps of B loaded per batch: 16-byte loads in flight per thread */
#define WK WARPS_K /* warps along K in a block */
#define WN (num_warps / WK) /* warps side by side along N */
#define BN (WN * TN)        /* the block's outputs along N */
/* elements after each row of A in shared memory (64 bytes: conflict-free 16-byte reads) */
#define APAD 32

#if defined(BT_DTYPE_FP16)
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
#else
#define MMA_OP "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
#endif

/* The 32-bit word i (a compile-time constant once unrolled) of a 16-byte vector. */
__device__ __forceinline__ unsigned word(const uint4 &v, int i)
{
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
/* The two 16-bit elements of a word as floats (low element first in memory). */
__device__ __forceinline__ float lo_f(unsigned w)
{
    return bt_to_f((unsigned short)(w & 0xffffu));
}
__device__ __forceinline__ float hi_f(unsigned w)
{
    return bt_to_f((unsigned short)(w >> 16));
}

/* D = A·B + D for one m16n8k16 tile: a0..a3 the A fragment (16×16, row), b0, b1 the B fragment
 * (16×8, col), c the fp32 accumulators. PTX ISA, "Matrix Fragments for mma.m16n8k16" with
 * .f16/.bf16: lane = 4·g + t (g = lane/4, t = lane%4) holds
 *   a0: A[g][2t, 2t+1]   a1: A[g+8][2t, 2t+1]   a2: A[g][2t+8, 2t+9]   a3: A[g+8][2t+8, 2t+9]
 *   b0: B[2t, 2t+1][g]   b1: B[2t+8, 2t+9][g]   (k rows, n column; the lower k in the low half)
 *   c0, c1: C[g][2t, 2t+1]   c2, c3: C[g+8][2t, 2t+1]
 * Only the pairing of k between A and B matters to the sum, so both kernels give the k slots
 * {2t, 2t+1, 2t+8, 2t+9} of lane t four consecutive elements of a chunk the lane loaded itself,
 * the same four k in both operands (each kernel's file gives its mapping;
 * gemm_smallm_frags.py checks both on the host). */
__device__ __forceinline__ void mma16816(float *c, unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1)
{
    asm volatile(MMA_OP " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* 16 bytes of B (streamed: read once, kept out of L1), only when ok (zeros otherwise; the address
 * is not touched). */
__device__ __forceinline__ uint4 ldb16(const void *p, bool ok, unsigned long long pol)
{
    uint4 v;
    if (EVICT)
        asm volatile(
            "{\n.reg .pred q;\nsetp.ne.b32 q, %5, 0;\nmov.b32 %0, 0;\nmov.b32 %1, 0;\n"
            "mov.b32 %2, 0;\nmov.b32 %3, 0;\n@q ld.global.nc.L1::no_allocate.L2::cache_hint"
            ".v4.u32 {%0,%1,%2,%3}, [%4], %6;\n}\n"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p), "r"((int)ok), "l"(pol));
    else
        asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %5, 0;\nmov.b32 %0, 0;\nmov.b32 %1, 0;\n"
                     "mov.b32 %2, 0;\nmov.b32 %3, 0;\n@q ld.global.nc.L1::no_allocate"
                     ".v4.u32 {%0,%1,%2,%3}, [%4];\n}\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p), "r"((int)ok));
    return v;
}
/* 8 bytes of B, the same way. */
__device__ __forceinline__ uint2 ldb8(const void *p, bool ok, unsigned long long pol)
{
    uint2 v;
    if (EVICT)
        asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %3, 0;\nmov.b32 %0, 0;\nmov.b32 %1, 0;\n"
                     "@q ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0,%1}, [%2], %4;\n}\n"
                     : "=r"(v.x), "=r"(v.y)
                     : "l"(p), "r"((int)ok), "l"(pol));
    else
        asm volatile("{\n.reg .pred q;\nsetp.ne.b32 q, %3, 0;\nmov.b32 %0, 0;\nmov.b32 %1, 0;\n"
                     "@q ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];\n}\n"
                     : "=r"(v.x), "=r"(v.y)
                     : "l"(p), "r"((int)ok));
    return v;
}

/* 8 elements from p (any 2-byte alignment): element e only when e < valid (zeros after). */
__device__ __forceinline__ uint4 ld8_elems(const ST *p, int valid)
{
    unsigned e[8];
#pragma unroll
    for (int j = 0; j < 8; j++)
        e[j] = j < valid ? (unsigned)__ldg(p + j) : 0u;
    return make_uint4(e[0] | e[1] << 16, e[2] | e[3] << 16, e[4] | e[5] << 16, e[6] | e[7] << 16);
}

/* The K slice of one block: cdiv(K, SPLIT_K) rounded up to `align` elements (a multiple of 64,
 * and of the kernel's K step). The spec's shared-memory formula computes the same number. */
__device__ __forceinline__ int chunk_k(int K, int align)
{
    return ((K + SPLIT_K - 1) / SPLIT_K + align - 1) / align * align;
}

/* This block's slice of K (blockIdx.y of SPLIT_K): [kb, ke), kc long in shared memory (ke - kb
 * where K does not end it), in nsteps K steps of kstep, nbatch batches of U steps. */
struct Slice {
    int kc, kb, ke, nsteps, nbatch;
};
__device__ __forceinline__ Slice k_slice(int K, int align, int kstep)
{
    Slice s;
    s.kc = chunk_k(K, align);
    s.kb = blockIdx.y * s.kc;
    s.ke = min(K, s.kb + s.kc);
    s.nsteps = s.ke > s.kb ? (s.ke - s.kb + kstep - 1) / kstep : 0;
    s.nbatch = (s.nsteps + U - 1) / U;
    return s;
}

/* Copies A[0:BM, kb:kb+kc) into As (row stride kc + APAD), zeros where the row is M or more or
 * the column ke or more. With 16-byte rows (K a multiple of 8, A aligned) by cp.async, which
 * the caller completes with a_wait() before the barrier that precedes the first read. */
__device__ __forceinline__ void stage_a(ST *As, const ST *A, int M, int K, int kb, int ke, int kc)
{
    const int stride = kc + APAD;
    if ((K & 7) == 0 && ((unsigned long long)A & 15) == 0) {
        const int per_row = kc / 8;
        for (int c = threadIdx.x; c < BM * per_row; c += NT_) {
            const int r = c / per_row, k = (c % per_row) * 8;
            const bool ok = r < M && kb + k < ke;
            const ST *src = ok ? A + (long long)r * K + kb + k : A;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                             smem_u32(As + r * stride + k)),
                         "l"(src), "r"(ok ? 16 : 0)
                         : "memory");
        }
        asm volatile("cp.async.commit_group;\n" ::: "memory");
    } else {
        for (int c = threadIdx.x; c < BM * kc; c += NT_) {
            const int r = c / kc, k = c % kc;
            As[r * stride + k] = r < M && kb + k < ke ? A[(long long)r * K + kb + k] : (ST)0;
        }
    }
}
__device__ __forceinline__ void a_wait()
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

__device__ __forceinline__ uint4 lds16(const ST *p)
{
    return *reinterpret_cast<const uint4 *>(p);
}

/* Where a thread of either kernel works: its lane, its warp's row along K (wk) and column along N
 * (wn), the block's first output column n0 and its K slice, with A's slice (BM rows, row stride
 * kc + APAD) in shared memory at As, copied there asynchronously (stream_batches waits). */
struct Place {
    ST *As;
    int lane, wk, wn, n0;
    Slice sl;
};
__device__ __forceinline__ Place place(unsigned char *smem, const ST *A, int M, int K, int align,
                                       int kstep)
{
    Place p;
    p.As = reinterpret_cast<ST *>(smem);
    p.lane = threadIdx.x & 31;
    p.wk = (threadIdx.x >> 5) / WN;
    p.wn = (threadIdx.x >> 5) % WN;
    p.n0 = blockIdx.x * BN;
    p.sl = k_slice(K, align, kstep);
    stage_a(p.As, A, M, K, p.sl.kb, p.sl.ke, p.sl.kc);
    return p;
}

/* The main loop of both kernels over this warp's batches wk, wk + WK, ...: load(b) issues the
 * loads of batch b into the registers that compute(b) multiplies. The first batch is issued
 * before A's copy is waited for, the next after this one's math. */
template <class Load, class Compute>
__device__ __forceinline__ void stream_batches(int nbatch, int wk, const Load &load,
                                               const Compute &compute)
{
    load(wk);
    a_wait();
    __syncthreads();
    for (int b = wk; b < nbatch; b += WK) {
        compute(b);
        if (b + WK < nbatch)
            load(b + WK);
    }
}


