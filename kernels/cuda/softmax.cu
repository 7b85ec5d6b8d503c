/* softmax.cu — y = softmax(x) along each row, one block per row. The row is walked in chunks of
 * BLOCK_N elements held in registers (BLOCK_N / BT_THREADS per thread, loaded VEC at a time,
 * all loads of a chunk in flight together). A row that fits in one chunk is read once: max, sum
 * and the output come from registers. A longer row keeps a running (max, sum) over its chunks and
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
    float m = BT_NEG_INF, s = 0.0f;
    for (int c0 = 0; c0 < cols; c0 += BLOCK_N) {
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int i = c0 + (j * BT_THREADS + t) * W;
            if (vec_ok && i + W <= cols) {
                Vec<W> q = vload<W>(xr + i);
#pragma unroll
                for (int e = 0; e < W; e++)
                    v[j][e] = bt_to_f(q.e[e]);
            } else {
#pragma unroll
                for (int e = 0; e < W; e++)
                    v[j][e] = i + e < cols ? LOAD(xr, i + e) : BT_NEG_INF;
            }
        }
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
    if (cols <= BLOCK_N) { /* the whole row is still in registers */
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int i = (j * BT_THREADS + t) * W;
            if (vec_ok && i + W <= cols) {
                Vec<W> q;
#pragma unroll
                for (int e = 0; e < W; e++)
                    q.e[e] = bt_from_f(__expf(v[j][e] - m) * inv);
                vstore<W>(yr + i, q);
            } else {
                for (int e = 0; e < W; e++)
                    if (i + e < cols)
                        STORE(yr, i + e, __expf(v[j][e] - m) * inv);
            }
        }
        return;
    }
    for (int i = t * W; i < cols; i += BT_THREADS * W) {
        if (vec_ok && i + W <= cols) {
            Vec<W> q = vload<W>(xr + i);
#pragma unroll
            for (int e = 0; e < W; e++)
                q.e[e] = bt_from_f(__expf(bt_to_f(q.e[e]) - m) * inv);
            vstore<W>(yr + i, q);
        } else {
            for (int e = 0; e < W && i + e < cols; e++)
                STORE(yr, i + e, __expf(LOAD(xr, i + e) - m) * inv);
        }
    }
}
