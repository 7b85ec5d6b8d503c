/* SPDX-License-Identifier: Apache-2.0 */
/* softmax.cl — y = softmax(x) along each row of a rows x cols matrix, one work-group per row.
 * Pass 1 keeps a running (max, sum) per item (online softmax), combined across the group; pass 2
 * writes exp(x - max) / sum. When the row fits in BLOCK_N elements it is staged in local memory
 * during pass 1 and pass 2 reads it from there: one read of the row instead of two. */
__kernel void softmax(__global const ST *x, __global ST *y, int rows, int cols)
{
    __local ST row_buf[BLOCK_N];
    __local float rm[BT_THREADS], rs[BT_THREADS];
    const int t = (int)get_local_id(0);
    const long r = get_group_id(0);
    __global const ST *xr = x + r * cols;
    const bool staged = cols <= BLOCK_N;
    float m = -INFINITY, s = 0.0f;
    for (int c0 = 0; c0 < cols; c0 += BLOCK_N) {
        int end = min(cols, c0 + BLOCK_N);
        for (int i = c0 + t; i < end; i += BT_THREADS) {
            float v = LOAD(xr, i);
            if (staged)
                row_buf[i] = xr[i];
            if (v > m) {
                s = s * exp(m - v) + 1.0f;
                m = v;
            } else {
                s += exp(v - m);
            }
        }
    }
    rm[t] = m;
    rs[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = BT_THREADS / 2; k > 0; k >>= 1) {
        if (t < k) {
            float m2 = rm[t + k], s2 = rs[t + k], m1 = rm[t], s1 = rs[t];
            float mm = fmax(m1, m2);
            rs[t] = (s1 == 0.0f ? 0.0f : s1 * exp(m1 - mm)) + (s2 == 0.0f ? 0.0f : s2 * exp(m2 - mm));
            rm[t] = mm;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float M = rm[0], inv = 1.0f / rs[0];
    __global ST *yr = y + r * cols;
    for (int i = t; i < cols; i += BT_THREADS) {
        float v = staged ? LOAD(row_buf, i) : LOAD(xr, i);
        STORE(yr, i, exp(v - M) * inv);
    }
}
