/* aligned.cu — the CUDA twin of aligned.cl (same parameters and meaning). */
extern "C" __global__ void aligned(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#if VEC == 4
    if (4 * i + 3 < n) {
        float4 v = reinterpret_cast<const float4 *>(x)[i];
        reinterpret_cast<float4 *>(y)[i] = make_float4(2.0f * v.x, 2.0f * v.y, 2.0f * v.z, 2.0f * v.w);
    }
#else
    if (i < n)
        y[i] = 2.0f * x[i];
#endif
}
