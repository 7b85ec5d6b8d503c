/* crash.cl — y = x + 1, except that CRASH > 0 configs write far outside every buffer (an address
 * that cannot be mapped, computed from n so that the compiler cannot see it): on a CPU device
 * (PoCL runs kernels in the process) that kills the process with SIGSEGV. The tune must record
 * such a config as failed and resume past it. */
#ifndef SPIN
#define SPIN 0
#endif

__kernel void crash(__global const float *x, __global float *y, int n)
{
    int i = get_global_id(0);
    if (i >= n)
        return;
#if CRASH
    /* SPIN > 0 (crash_many.json): the crash comes after a busy loop (about a second), so that a run
     * of crashes takes longer than crash.sh's time limit whatever the machine */
    float a = x[i];
    for (long j = 0; j < (long)SPIN * n; j++)
        a = a * 0.999f + 1.0f;
    __global float *far = y - ((long)n << 44);
    far[i] = a;
#endif
    y[i] = x[i] + 1.0f;
}
