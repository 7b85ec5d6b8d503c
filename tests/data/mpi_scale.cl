/* SPDX-License-Identifier: Apache-2.0 */
/* mpi_scale.cl — y = 2x, UNROLL elements per work-item (tests/cli/mpi.sh). */
__kernel void mpi_scale(__global const float *x, __global float *y, int n)
{
    int i = get_global_id(0) * UNROLL;
    for (int u = 0; u < UNROLL; u++)
        if (i + u < n)
            y[i + u] = 2.0f * x[i + u];
}
