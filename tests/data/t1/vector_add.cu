/* vector_add.cu — blocktune's stand-in for the kernel that Kernel Tuner's
 * test_cache_file_T1_input.json names (written for blocktune): c = a + b over n elements. */
__global__ void vector_add(float *c, float *a, float *b, int n)
{
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
