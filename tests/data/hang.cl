/* hang.cl — y = x + 1, except that HANG=1 configs spin forever on a volatile read (a kernel that
 * never finishes): the tune must record them as timed out and go on. */
__kernel void hang(__global const float *x, __global float *y, int n)
{
    int i = get_global_id(0);
#if HANG
    volatile __global const float *p = x;
    while (p[0] == p[0])
        ;
#endif
    if (i < n)
        y[i] = x[i] + 1.0f;
}
