/* kt_scale.cu — a template kernel in Kernel Tuner's style (tests/data/kt_scale.json): the entry is
 * the instance "scale<float, items_per_thread>", whose template argument is a tunable parameter
 * (a -D define that NVRTC expands in the name); the length is the define N. Each thread scales
 * ITEMS consecutive elements: y = 2 x. */
template <typename T, int ITEMS>
__global__ void scale(T *y, const T *x)
{
    const int first = (blockIdx.x * blockDim.x + threadIdx.x) * ITEMS;
#pragma unroll
    for (int k = 0; k < ITEMS; k++)
        if (first + k < N)
            y[first + k] = T(2) * x[first + k];
}
