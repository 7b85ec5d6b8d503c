/* planted.cu — the CUDA twin of planted.cl (same modes and meaning). */
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
    float acc = 0.0f;
    for (int w = 0; w < WORK; w++)
        acc += v * 2.0f + 1.0f;
    y[i] = acc / WORK;
}
