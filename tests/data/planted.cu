/* planted.cu — the CUDA twin of planted.cl (same modes and meaning). NVRTC folds planted.cl's
 * loop (WORK identical sums of one value) into one multiply, which made WORK=64 as fast as
 * WORK=1 on the H200; here the extra work is a dependent chain it cannot fold (no fast-math: a
 * float recurrence is not reassociated, and acc - acc is not 0 for every float), long enough to
 * be microseconds on a GPU, and the output does not depend on WORK. */
#if MODE == 2
this line is not CUDA C;
#endif
extern "C" __global__ void planted(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
#if MODE == 1
    if (i % 2)
        return;
#endif
    float v = x[i];
    float acc = v;
    for (int w = 0; w < 64 * WORK; w++)
        acc = acc * 0.999f + 1.0f;
    y[i] = (v * 2.0f + 1.0f) + (acc - acc);
}
