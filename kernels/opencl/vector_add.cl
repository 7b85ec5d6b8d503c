/* SPDX-License-Identifier: Apache-2.0 */
/* vector_add.cl — z = x + y. A work-group of BT_THREADS items covers BLOCK_SIZE elements; each
 * item handles BLOCK_SIZE / (BT_THREADS * VEC) vectors of VEC elements, all loads issued before
 * the stores. The tail past n is masked element by element. */
#define PER_ITEM (BLOCK_SIZE / (BT_THREADS * VEC))

__kernel void vector_add(__global const ST *x, __global const ST *y, __global ST *z, long n)
{
    const long base = (long)get_group_id(0) * BLOCK_SIZE;
    const int t = (int)get_local_id(0);
    float a[PER_ITEM * VEC], b[PER_ITEM * VEC];
    for (int j = 0; j < PER_ITEM; j++) {
        long i = base + ((long)j * BT_THREADS + t) * VEC;
        for (int v = 0; v < VEC; v++) {
            a[j * VEC + v] = i + v < n ? LOAD(x, i + v) : 0.0f;
            b[j * VEC + v] = i + v < n ? LOAD(y, i + v) : 0.0f;
        }
    }
    for (int j = 0; j < PER_ITEM; j++) {
        long i = base + ((long)j * BT_THREADS + t) * VEC;
        for (int v = 0; v < VEC; v++)
            if (i + v < n)
                STORE(z, i + v, a[j * VEC + v] + b[j * VEC + v]);
    }
}
