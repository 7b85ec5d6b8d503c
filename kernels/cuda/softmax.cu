/* SPDX-License-Identifier: Apache-2.0 */
/* softmax.cu — y = softmax(x) along each row, one block per row. The row is walked in chunks of
 * BLOCK_N elements held in registers (BLOCK_N / BT_THREADS per thread, loaded VEC at a time,
 * all loads of a chunk in flight together). A row that fits in one chunk is read once, and each
 * element's exp is computed once: max, exp and sum, then the output, all from registers. A longer row keeps a running (max, sum) over its chunks and
 * is read again to write the output (that second read mostly hits L2). */
#define VEC ((BT_ELEM_BYTES == 4) ? 4 : 8)
#define PER_THREAD (BLOCK_N / BT_THREADS)
#define VPT (PER_THREAD >= VEC ? PER_THREAD / VEC : 1)
#define W (PER_THREAD >= VEC ? VEC : PER_THREAD)

extern "C" __global__ void __launch_bounds__(BT_THREADS)
softmax(const ST *__restrict__ x, ST *__restrict__ y, int rows, int cols)
{
    __shared__ float scratch[32];
    const long long r = blockIdx.x;
    const ST *xr = x + r * cols;
    ST *yr = y + r * cols;
    const int t = threadIdx.x;
    const bool vec_ok = (cols % W) == 0;
    float v[VPT][W];
    /* loads chunk c0 of the row into v (masked with -inf) */
#define LOAD_CHUNK(c0)                                                                             \
    _Pragma("unroll") for (int j = 0; j < VPT; j++)                                                \
    {                                                                                              \
        const int i = (c0) + (j * BT_THREADS + t) * W;                                             \
        if (vec_ok && i + W <= cols) {                                                             \
            Vec<W> q = vload_s<W>(xr + i);                                                           \
            _Pragma("unroll") for (int e = 0; e < W; e++) v[j][e] = bt_to_f(q.e[e]);               \
        } else {                                                                                   \
            _Pragma("unroll") for (int e = 0; e < W; e++) v[j][e] =                                \
                i + e < cols ? LOAD(xr, i + e) : BT_NEG_INF;                                       \
        }                                                                                          \
    }
    if (cols <= BLOCK_N) { /* one read: the row stays in registers, exp computed once */
        LOAD_CHUNK(0);
        float m = BT_NEG_INF;
#pragma unroll
        for (int j = 0; j < VPT; j++)
#pragma unroll
            for (int e = 0; e < W; e++)
                m = fmaxf(m, v[j][e]);
        m = block_max(m, scratch);
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < VPT; j++)
#pragma unroll
            for (int e = 0; e < W; e++) {
                v[j][e] = __expf(v[j][e] - m);
                s += v[j][e];
            }
        const float inv = 1.0f / block_sum(s, scratch);
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int i = (j * BT_THREADS + t) * W;
            if (vec_ok && i + W <= cols) {
                Vec<W> q;
#pragma unroll
                for (int e = 0; e < W; e++)
                    q.e[e] = bt_from_f(v[j][e] * inv);
                vstore_s<W>(yr + i, q);
            } else {
                for (int e = 0; e < W; e++)
                    if (i + e < cols)
                        STORE(yr, i + e, v[j][e] * inv);
            }
        }
        return;
    }
    /* longer rows: a running (max, sum) over chunks, then a second read to write */
    float m = BT_NEG_INF, s = 0.0f;
    for (int c0 = 0; c0 < cols; c0 += BLOCK_N) {
        LOAD_CHUNK(c0);
        float cm = BT_NEG_INF;
#pragma unroll
        for (int j = 0; j < VPT; j++)
#pragma unroll
            for (int e = 0; e < W; e++)
                cm = fmaxf(cm, v[j][e]);
        cm = block_max(cm, scratch);
        float nm = fmaxf(m, cm), cs = 0.0f;
#pragma unroll
        for (int j = 0; j < VPT; j++)
#pragma unroll
            for (int e = 0; e < W; e++)
                cs += __expf(v[j][e] - nm);
        cs = block_sum(cs, scratch);
        s = s * __expf(m - nm) + cs;
        m = nm;
    }
    const float inv = 1.0f / s;
    for (int i = t * W; i < cols; i += BT_THREADS * W) {
        if (vec_ok && i + W <= cols) {
            Vec<W> q = vload_s<W>(xr + i);
#pragma unroll
            for (int e = 0; e < W; e++)
                q.e[e] = bt_from_f(__expf(bt_to_f(q.e[e]) - m) * inv);
            vstore_s<W>(yr + i, q);
        } else {
            for (int e = 0; e < W && i + e < cols; e++)
                STORE(yr, i + e, __expf(LOAD(xr, i + e) - m) * inv);
        }
    }
}
