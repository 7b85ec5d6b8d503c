/* convolution.cu — blocktune's stand-in for the kernel that Kernel Tuner's test_T1_input.json
 * names (written for blocktune, not Kernel Tuner's file): the same entry and parameters, so that
 * the T1 file loads, plans and compiles. A 4096 x 4096 image convolved with a filter of
 * filter_width x filter_height from constant memory; each thread computes tile_size_x x
 * tile_size_y outputs; read_only loads the input through __ldg; use_padding has no effect here. */
#define IMAGE_W 4096
#define IMAGE_H 4096
#define INPUT_W (IMAGE_W + filter_width - 1)

__constant__ float d_filter[33 * 33];

#if read_only
#define LOAD(p) __ldg(p)
#else
#define LOAD(p) (*(p))
#endif

__global__ void convolution_kernel(float *output, float *input, float *filter)
{
    const int x0 = blockIdx.x * block_size_x * tile_size_x + threadIdx.x;
    const int y0 = blockIdx.y * block_size_y * tile_size_y + threadIdx.y;
    for (int ty = 0; ty < tile_size_y; ty++) {
        for (int tx = 0; tx < tile_size_x; tx++) {
            const int x = x0 + tx * block_size_x, y = y0 + ty * block_size_y;
            if (x >= IMAGE_W || y >= IMAGE_H)
                continue;
            float sum = 0.0f;
            for (int j = 0; j < filter_height; j++)
                for (int i = 0; i < filter_width; i++)
                    sum += d_filter[j * filter_width + i] * LOAD(input + (y + j) * INPUT_W + x + i);
            output[y * IMAGE_W + x] = sum;
        }
    }
}
