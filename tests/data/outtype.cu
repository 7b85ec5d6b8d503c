/* outtype.cu — the CUDA twin of outtype.cl. */
#ifdef BT_TYPE_z_FP16
typedef unsigned short ZT;
__device__ __forceinline__ ZT put(float v)
{
    unsigned short h;
    asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h) : "f"(v));
    return h;
}
#else
typedef float ZT;
__device__ __forceinline__ ZT put(float v) { return v; }
#endif
extern "C" __global__ void outtype(const float *x, const float *y, ZT *z, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        z[i] = put(x[i] + y[i]);
}
