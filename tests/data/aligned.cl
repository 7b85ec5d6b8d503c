/* aligned.cl — y = 2x (aligned.cu is its CUDA twin). VEC=4 handles four elements per work-item
 * and no tail: the elements past the last multiple of 4 stay unwritten, so it is wrong at n = 17
 * or 4099 (outside its constraint) and right at n = 4096 or 1000. */
__kernel void aligned(__global const float *x, __global float *y, int n)
{
    int i = get_global_id(0);
#if VEC == 4
    if (4 * i + 3 < n)
        vstore4(vload4(i, x) * 2.0f, i, y);
#else
    if (i < n)
        y[i] = 2.0f * x[i];
#endif
}
