/* SPDX-License-Identifier: Apache-2.0 */
/* saxpy.cl — y = a*x + y, the example user kernel. Tunables: ITEMS (elements per work-item,
 * strided by the group size so loads stay coalesced) and the work-group size (num_warps). */
__kernel void saxpy(__global const float *x, __global float *y, float a, int n)
{
    const int base = get_group_id(0) * get_local_size(0) * ITEMS + get_local_id(0);
    for (int j = 0; j < ITEMS; j++) {
        int i = base + j * (int)get_local_size(0);
        if (i < n)
            y[i] = a * x[i] + y[i];
    }
}
