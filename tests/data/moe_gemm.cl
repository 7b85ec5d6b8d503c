/* moe_gemm.cl — a batched GEMM per expert, c[e] = a[e] (M x K) * w[e] (K x N), whose parameters
 * carry the names of vLLM's fused-MoE configs (BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps,
 * num_stages) and whose problem has vLLM's E and N: tests/cli/vllm.sh sweeps M and exports it in
 * vLLM's layout. One work-item per output element; the work-group is BLOCK_SIZE_N x BLOCK_SIZE_M
 * and the k loop runs in chunks of BLOCK_SIZE_K. GROUP_SIZE_M, num_warps and num_stages only
 * have to exist here (they shape a Triton launch, not this one). */
__kernel void moe_gemm(__global const float *a, __global const float *w, __global float *c,
                       int M, int N, int K)
{
    int n = get_global_id(0), m = get_global_id(1), e = get_global_id(2);
    if (m >= M || n >= N)
        return;
    const __global float *ar = a + ((size_t)e * M + m) * K;
    const __global float *wc = w + (size_t)e * K * N + n;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += BLOCK_SIZE_K)
        for (int k = k0; k < k0 + BLOCK_SIZE_K && k < K; k++)
            acc += ar[k] * wc[(size_t)k * N];
    c[((size_t)e * M + m) * N + n] = acc;
}
