/* kt_conv.cu — a 2-D convolution written the way Kernel Tuner users write it (tests/data/kt_conv
 * and kt_conv_files.json tune it unmodified): a C++ kernel name (not extern "C"), the filter in a
 * __constant__ array filled before each launch, the image and filter sizes as -D defines
 * (image_width, image_height, filter_width, filter_height, FSIZE) rather than arguments, and the
 * tunable block_size_x, block_size_y and tile_size_y (output rows per thread).
 *
 * output[y][x] = sum over j < filter_height, i < filter_width of
 *                d_filter[j][i] * input[y + j][x + i];   input is (image_height + filter_height
 *                - 1) rows of (image_width + filter_width - 1). */
__constant__ float d_filter[FSIZE];

__global__ void convolution_kernel(float *output, const float *input)
{
    const int input_width = image_width + filter_width - 1;
    const int x = blockIdx.x * block_size_x + threadIdx.x;
    const int y0 = (blockIdx.y * block_size_y + threadIdx.y) * tile_size_y;
    if (x >= image_width)
        return;
#pragma unroll
    for (int t = 0; t < tile_size_y; t++) {
        const int y = y0 + t;
        if (y >= image_height)
            break;
        float sum = 0.0f;
        for (int j = 0; j < filter_height; j++)
            for (int i = 0; i < filter_width; i++)
                sum += d_filter[j * filter_width + i] * input[(y + j) * input_width + x + i];
        output[y * image_width + x] = sum;
    }
}
