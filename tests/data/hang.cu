/* hang.cu — the CUDA twin of hang.cl. */
extern "C" __global__ void hang(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if HANG
    volatile const float *p = x;
    while (p[0] == p[0])
        ;
#endif
    if (i < n)
        y[i] = x[i] + 1.0f;
}
