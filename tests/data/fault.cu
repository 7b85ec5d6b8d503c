/* fault.cu — y = 2x + 1, with FAULT=1 configs writing through a wild pointer: an illegal address
 * that poisons the CUDA context. A tune must record them as launch_failed and go on. */
extern "C" __global__ void fault(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
#if FAULT
    if (i == 0)
        *(volatile float *)(y + ((long long)1 << 40)) = 1.0f;
#endif
    y[i] = x[i] * 2.0f + 1.0f;
}
