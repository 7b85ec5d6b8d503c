/* SPDX-License-Identifier: Apache-2.0 */
/* vector_add.cu — z = x + y. A block of BT_THREADS threads covers BLOCK_SIZE elements; each thread
 * issues all its PER_ITEM loads of VEC elements (16 bytes for fp32 with VEC=4) before any add or
 * store, so several loads are in flight per thread. Full blocks take the vector path; the last
 * partial block is masked element by element. */
#define PER_ITEM (BLOCK_SIZE / (BT_THREADS * VEC))

extern "C" __global__ void __launch_bounds__(BT_THREADS)
vector_add(const ST *__restrict__ x, const ST *__restrict__ y, ST *__restrict__ z, long long n)
{
    const long long base = (long long)blockIdx.x * BLOCK_SIZE;
    const int t = threadIdx.x;
    if (base + BLOCK_SIZE <= n) {
        Vec<VEC> a[PER_ITEM], b[PER_ITEM];
#pragma unroll
        for (int j = 0; j < PER_ITEM; j++) {
            const long long i = base + ((long long)j * BT_THREADS + t) * VEC;
            a[j] = vload<VEC>(x + i);
            b[j] = vload<VEC>(y + i);
        }
#pragma unroll
        for (int j = 0; j < PER_ITEM; j++) {
            const long long i = base + ((long long)j * BT_THREADS + t) * VEC;
            Vec<VEC> r;
#pragma unroll
            for (int v = 0; v < VEC; v++)
                r.e[v] = bt_from_f(bt_to_f(a[j].e[v]) + bt_to_f(b[j].e[v]));
            vstore<VEC>(z + i, r);
        }
        return;
    }
    for (int j = 0; j < PER_ITEM; j++) {
        const long long i = base + ((long long)j * BT_THREADS + t) * VEC;
        for (int v = 0; v < VEC; v++)
            if (i + v < n)
                STORE(z, i + v, LOAD(x, i + v) + LOAD(y, i + v));
    }
}
