/* SPDX-License-Identifier: Apache-2.0 */
/* reduce.cu — out[0] = sum of x[0..n). PROGS_PER_SM blocks per SM stride over the input, four
 * VEC-wide loads in flight per thread per step; each block writes a partial; the last block to
 * finish (a ticket on `counter`, zeroed before every run by reset_to_zero) adds the partials in
 * index order, so the result does not depend on which block finished last. */
extern "C" __global__ void __launch_bounds__(BT_THREADS)
reduce(const ST *__restrict__ x, float *partials, unsigned *counter, float *out, long long n)
{
    __shared__ float scratch[32];
    __shared__ bool last;
    const long long stride = (long long)gridDim.x * BT_THREADS * VEC;
    long long i = ((long long)blockIdx.x * BT_THREADS + threadIdx.x) * VEC;
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (; i + 3 * stride + VEC <= n; i += 4 * stride) {
        Vec<VEC> v[4];
#pragma unroll
        for (int u = 0; u < 4; u++)
            v[u] = vload<VEC>(x + i + u * stride);
#pragma unroll
        for (int u = 0; u < 4; u++)
#pragma unroll
            for (int e = 0; e < VEC; e++)
                acc[u] += bt_to_f(v[u].e[e]);
    }
    for (; i < n; i += stride)
        for (int e = 0; e < VEC; e++)
            if (i + e < n)
                acc[0] += LOAD(x, i + e);
    float s = block_sum((acc[0] + acc[1]) + (acc[2] + acc[3]), scratch);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = s;
        __threadfence();
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    float p = 0.0f;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += BT_THREADS)
        p += ((volatile float *)partials)[b];
    p = block_sum(p, scratch);
    if (threadIdx.x == 0)
        out[0] = p;
}
