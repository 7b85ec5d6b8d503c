/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob.c — the CUDA backend's module blob (blob.h): packing a CUBIN with its name table and, for
 * Triton, its launch metadata (what compile makes, from NVRTC or from Triton) and checking one
 * before it loads.
 */
#include "backends/cuda/blob.h"

#include "core/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bt_status bt__cuda_blob_pack(int sm, bool arch_specific, const char *const *names,
                            const char *const *low, int nnames, const char *meta, bt__blob *cubin,
                            bt__blob *out)
{
    size_t nb = 0;
    for (int i = 0; i < nnames; i++)
        nb += strlen(names[i]) + strlen(low[i]) + 2;
    size_t padded = (nb + 7) & ~(size_t)7;
    size_t mlen = meta ? strlen(meta) : 0, mpadded = (mlen + 7) & ~(size_t)7;
    blob_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, BLOB_MAGIC, 8);
    h.sm = (uint32_t)sm;
    h.flags = arch_specific ? BLOB_SM_A : 0;
    h.size = cubin->size;
    h.nnames = (uint32_t)nnames;
    h.names_bytes = (uint32_t)padded;
    h.meta_bytes = (uint32_t)mpadded;
    unsigned char *data = calloc(1, sizeof h + padded + mpadded + cubin->size);
    if (!data) {
        free(cubin->data);
        cubin->data = NULL;
        return BT_NOMEM;
    }
    unsigned char *p = data + sizeof h;
    for (int i = 0; i < nnames; i++) {
        size_t a = strlen(names[i]) + 1, b = strlen(low[i]) + 1;
        memcpy(p, names[i], a);
        memcpy(p + a, low[i], b);
        p += a + b;
    }
    if (mlen)
        memcpy(data + sizeof h + padded, meta, mlen);
    memcpy(data + sizeof h + padded + mpadded, cubin->data, cubin->size);
    free(cubin->data);
    cubin->data = NULL;
    h.hash = bt__fnv1a(data + sizeof h, padded + mpadded + h.size, BT__FNV_SEED);
    memcpy(data, &h, sizeof h);
    out->data = data;
    out->size = sizeof h + padded + mpadded + h.size;
    return BT_OK;
}

bt_status bt__cuda_blob_check(const void *bin, size_t size, blob_hdr *h, size_t *hlen,
                              bt_diag *diag)
{
    memset(h, 0, sizeof *h);
    if (!bin || size < BLOB_HDR_V1) {
        bt__diag_set(diag, "module_load: blob of %zu bytes is too short", size);
        return BT_CORRUPT;
    }
    *hlen = !memcmp(bin, BLOB_MAGIC_V1, 8)   ? BLOB_HDR_V1
            : !memcmp(bin, BLOB_MAGIC_V2, 8) ? BLOB_HDR_V2
            : !memcmp(bin, BLOB_MAGIC, 8)    ? sizeof *h
                                             : 0;
    if (!*hlen || size < *hlen) {
        bt__diag_set(diag, "module_load: not a blocktune CUDA binary (bad magic)");
        return BT_CORRUPT;
    }
    memcpy(h, bin, *hlen);
    uint64_t rest = size - *hlen, extra = (uint64_t)h->names_bytes + h->meta_bytes;
    if (h->names_bytes % 8 || h->meta_bytes % 8 || extra > rest || h->size != rest - extra) {
        bt__diag_set(diag, "module_load: truncated or malformed binary (%zu bytes, header says "
                     "%llu + %u + %u + %zu)", size, (unsigned long long)h->size, h->names_bytes,
                     h->meta_bytes, *hlen);
        return BT_CORRUPT;
    }
    const unsigned char *payload = (const unsigned char *)bin + *hlen;
    if (bt__fnv1a(payload, (size_t)rest, BT__FNV_SEED) != h->hash) {
        bt__diag_set(diag, "module_load: binary checksum mismatch");
        return BT_CORRUPT;
    }
    /* the names: nnames pairs of NUL-terminated strings inside names_bytes */
    const char *p = (const char *)payload, *end = p + h->names_bytes;
    for (uint32_t i = 0; i < 2 * h->nnames; i++) {
        const char *z = memchr(p, '\0', (size_t)(end - p));
        if (!z) {
            bt__diag_set(diag, "module_load: malformed name table");
            return BT_CORRUPT;
        }
        p = z + 1;
    }
    return BT_OK;
}
