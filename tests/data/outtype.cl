/* outtype.cl — z = x + y; z is half when the spec's dtype condition picked fp16 for it
 * (BT_TYPE_z_FP16), float otherwise (outtype.cu is its CUDA twin). */
#ifdef BT_TYPE_z_FP16
#define ZT half
#define PUT(p, i, v) vstore_half((v), (i), (p))
#else
#define ZT float
#define PUT(p, i, v) ((p)[i] = (v))
#endif
__kernel void outtype(__global const float *x, __global const float *y, __global ZT *z, int n)
{
    int i = get_global_id(0);
    if (i < n)
        PUT(z, i, x[i] + y[i]);
}
