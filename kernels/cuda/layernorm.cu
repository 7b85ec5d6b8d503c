/* SPDX-License-Identifier: Apache-2.0 */
/* layernorm.cu — y = (x - mean) / sqrt(var + 1e-5) * gamma + beta along each row, one block per
 * row. A row of at most BLOCK_N elements is held in registers and read once (mean, then the
 * variance from the registers, then the output). Longer rows: Welford statistics over chunks,
 * combined across the block (Chan), then a second read to write the output. */
#define VEC ((BT_ELEM_BYTES == 4) ? 4 : 8)
#define PER_THREAD (BLOCK_N / BT_THREADS)
#define VPT (PER_THREAD >= VEC ? PER_THREAD / VEC : 1)
#define W (PER_THREAD >= VEC ? VEC : PER_THREAD)
#define LN_EPS 1e-5f

extern "C" __global__ void __launch_bounds__(BT_THREADS)
layernorm(const ST *__restrict__ x, const ST *__restrict__ gamma, const ST *__restrict__ beta,
          ST *__restrict__ y, int rows, int cols)
{
    __shared__ float scratch[32];
    __shared__ float sh_n[32], sh_mean[32], sh_m2[32];
    const long long r = blockIdx.x;
    const ST *xr = x + r * cols;
    ST *yr = y + r * cols;
    const int t = threadIdx.x;
    const bool vec_ok = (cols % W) == 0;
    float mean, rstd;
    float v[VPT][W];
    if (cols <= BLOCK_N) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int i = (j * BT_THREADS + t) * W;
            if (vec_ok && i + W <= cols) {
                Vec<W> q = vload_s<W>(xr + i);
#pragma unroll
                for (int e = 0; e < W; e++)
                    v[j][e] = bt_to_f(q.e[e]);
            } else {
#pragma unroll
                for (int e = 0; e < W; e++)
                    v[j][e] = i + e < cols ? LOAD(xr, i + e) : 0.0f;
            }
#pragma unroll
            for (int e = 0; e < W; e++)
                s += v[j][e];
        }
        mean = block_sum(s, scratch) / cols;
        float q2 = 0.0f;
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int i = (j * BT_THREADS + t) * W;
#pragma unroll
            for (int e = 0; e < W; e++)
                if (i + e < cols) {
                    float d = v[j][e] - mean;
                    q2 += d * d;
                }
        }
        rstd = rsqrtf(block_sum(q2, scratch) / cols + LN_EPS);
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int i = (j * BT_THREADS + t) * W;
            if (vec_ok && i + W <= cols) {
                Vec<W> g = vload<W>(gamma + i), b = vload<W>(beta + i), o;
#pragma unroll
                for (int e = 0; e < W; e++)
                    o.e[e] = bt_from_f((v[j][e] - mean) * rstd * bt_to_f(g.e[e]) + bt_to_f(b.e[e]));
                vstore_s<W>(yr + i, o);
            } else {
                for (int e = 0; e < W; e++)
                    if (i + e < cols)
                        STORE(yr, i + e, (v[j][e] - mean) * rstd * LOAD(gamma, i + e) + LOAD(beta, i + e));
            }
        }
        return;
    }
    /* long rows: per-thread Welford, then Chan's combination across warps and the block */
    float n = 0.0f, mu = 0.0f, m2 = 0.0f;
    for (int i = t; i < cols; i += BT_THREADS) {
        float a = LOAD(xr, i);
        n += 1.0f;
        float d = a - mu;
        mu += d / n;
        m2 += d * (a - mu);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float nb = __shfl_xor_sync(0xffffffffu, n, o), mb = __shfl_xor_sync(0xffffffffu, mu, o),
              qb = __shfl_xor_sync(0xffffffffu, m2, o);
        float nn = n + nb;
        if (nn > 0.0f) {
            float d = mb - mu;
            mu += d * nb / nn;
            m2 += qb + d * d * n * nb / nn;
            n = nn;
        }
    }
    const int w = t >> 5, l = t & 31;
    if (l == 0) {
        sh_n[w] = n;
        sh_mean[w] = mu;
        sh_m2[w] = m2;
    }
    __syncthreads();
    if (t == 0) {
        float N = 0.0f, MU = 0.0f, M2 = 0.0f;
        for (int k = 0; k < BT_THREADS / 32; k++) {
            float nb = sh_n[k], nn = N + nb;
            if (nn > 0.0f) {
                float d = sh_mean[k] - MU;
                MU += d * nb / nn;
                M2 += sh_m2[k] + d * d * N * nb / nn;
                N = nn;
            }
        }
        sh_mean[0] = MU;
        sh_m2[0] = M2;
    }
    __syncthreads();
    mean = sh_mean[0];
    rstd = rsqrtf(sh_m2[0] / cols + LN_EPS);
    for (int i = t; i < cols; i += BT_THREADS)
        STORE(yr, i, (LOAD(xr, i) - mean) * rstd * LOAD(gamma, i) + LOAD(beta, i));
    (void)v;
}
