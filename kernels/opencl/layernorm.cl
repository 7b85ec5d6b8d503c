/* SPDX-License-Identifier: Apache-2.0 */
/* layernorm.cl — y = (x - mean) / sqrt(var + 1e-5) * gamma + beta along each row, one work-group
 * per row. Pass 1: per-item Welford (count, mean, M2), combined across the group with Chan's
 * formula; pass 2 writes the output. Rows of at most BLOCK_N elements are staged in local memory
 * so they are read from global memory once. */
#define LN_EPS 1e-5f
__kernel void layernorm(__global const ST *x, __global const ST *gamma, __global const ST *beta,
                        __global ST *y, int rows, int cols)
{
    __local ST row_buf[BLOCK_N];
    __local float rn[BT_THREADS], rmean[BT_THREADS], rm2[BT_THREADS];
    const int t = (int)get_local_id(0);
    const long r = get_group_id(0);
    __global const ST *xr = x + r * cols;
    const bool staged = cols <= BLOCK_N;
    float n = 0.0f, mean = 0.0f, m2 = 0.0f;
    for (int i = t; i < cols; i += BT_THREADS) {
        float v = LOAD(xr, i);
        if (staged)
            row_buf[i] = xr[i];
        n += 1.0f;
        float d = v - mean;
        mean += d / n;
        m2 += d * (v - mean);
    }
    rn[t] = n;
    rmean[t] = mean;
    rm2[t] = m2;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BT_THREADS / 2; k > 0; k >>= 1) {
        if (t < k) {
            float na = rn[t], nb = rn[t + k], nn = na + nb;
            if (nn > 0.0f) {
                float d = rmean[t + k] - rmean[t];
                rmean[t] += d * nb / nn;
                rm2[t] += rm2[t + k] + d * d * na * nb / nn;
                rn[t] = nn;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float mu = rmean[0], rstd = rsqrt(rm2[0] / (float)cols + LN_EPS);
    __global ST *yr = y + r * cols;
    for (int i = t; i < cols; i += BT_THREADS) {
        float v = staged ? LOAD(row_buf, i) : LOAD(xr, i);
        STORE(yr, i, (v - mu) * rstd * LOAD(gamma, i) + LOAD(beta, i));
    }
}
