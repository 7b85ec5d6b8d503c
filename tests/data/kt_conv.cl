/* kt_conv.cl — the OpenCL twin of kt_conv.cu: the same 2-D convolution, sizes as -D defines, the
 * filter as a __constant pointer argument (OpenCL's constant memory), block_size_x, block_size_y
 * and tile_size_y tunable. */
__kernel void convolution_kernel(__global float *output, __global const float *input,
                                 __constant float *d_filter)
{
    const int input_width = image_width + filter_width - 1;
    const int x = get_group_id(0) * block_size_x + get_local_id(0);
    const int y0 = (get_group_id(1) * block_size_y + get_local_id(1)) * tile_size_y;
    if (x >= image_width)
        return;
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
