/* SPDX-License-Identifier: Apache-2.0 */
/* reduce.cl — out[0] = sum of x[0..n). Work-groups stride over the input VEC elements at a time,
 * reduce in local memory and write one partial each; the last group to finish (an atomic ticket
 * on `counter`, which the tuner zeroes before every run: reset_to_zero) adds the partials in a
 * fixed order, so the result does not depend on which group finished last. */
__kernel void reduce(__global const ST *x, __global float *partials, __global volatile int *counter,
                     __global float *out, long n)
{
    __local float red[BT_THREADS];
    __local int last;
    const int t = (int)get_local_id(0);
    const long g = (long)get_group_id(0), ng = (long)get_num_groups(0);
    float acc = 0.0f;
    for (long i = (g * BT_THREADS + t) * VEC; i < n; i += ng * BT_THREADS * VEC)
        for (int v = 0; v < VEC; v++)
            if (i + v < n)
                acc += LOAD(x, i + v);
    red[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BT_THREADS / 2; s > 0; s >>= 1) {
        if (t < s)
            red[t] += red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) {
        partials[g] = red[0];
        mem_fence(CLK_GLOBAL_MEM_FENCE);
        last = atomic_inc(counter) == (int)(ng - 1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!last)
        return;
    mem_fence(CLK_GLOBAL_MEM_FENCE);
    float s2 = 0.0f;
    for (long i = t; i < ng; i += BT_THREADS)
        s2 += ((__global volatile float *)partials)[i];
    red[t] = s2;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BT_THREADS / 2; s > 0; s >>= 1) {
        if (t < s)
            red[t] += red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        out[0] = red[0];
}
