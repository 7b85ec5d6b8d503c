/* planted.cl — a test kernel with planted faults: MODE 0 is right; MODE 1 skips every other
 * element (fast and wrong); MODE 2 does not compile. WORK repeats the arithmetic, so WORK=1 is
 * clearly the fastest; PAD changes nothing (configs that differ only in PAD tie). */
#if MODE == 2
this line is not OpenCL C;
#endif
__kernel void planted(__global const float *x, __global float *y, int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
#if MODE == 1
    if (i % 2)
        return;
#endif
    float v = x[i];
    float acc = 0.0f;
    for (int w = 0; w < WORK; w++)
        acc += v * 2.0f + 1.0f;
    y[i] = acc / WORK;
}
