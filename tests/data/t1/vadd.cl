/* vadd.cl — the kernel of vadd.json (a T1 file): c = a + b over n elements, each work-item
 * adding `items` elements a global size apart (block_size_x and items are -D parameters). */
__kernel void vadd(__global float *c, __global const float *a, __global const float *b, int n)
{
    const int g = get_global_size(0);
    for (int k = 0; k < items; k++) {
        const int i = get_global_id(0) + k * g;
        if (i < n)
            c[i] = a[i] + b[i];
    }
}
