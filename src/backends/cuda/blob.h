/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blob.h — the CUDA backend's module blob (internal): what its compile returns and module_load
 * takes, for CUDA C (NVRTC) and Triton sources alike.
 */
#ifndef BT_BACKENDS_CUDA_BLOB_H
#define BT_BACKENDS_CUDA_BLOB_H

#include "backends/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* Blob container: header, then (BTCUBIN2) names_bytes of resolved names — nnames pairs of
 * NUL-terminated strings, padded to 8 bytes — then the CUBIN of `size` bytes. sm is the target
 * (90), flags bit 0 the "a" variant; the checksum is FNV-1a of the names and the CUBIN. BTCUBIN1
 * blobs (no names) still load. */
#define BLOB_MAGIC "BTCUBIN2"
#define BLOB_MAGIC_V1 "BTCUBIN1"
typedef struct blob_hdr {
    char magic[8];
    uint32_t sm;
    uint32_t flags;
    uint64_t size;
    uint64_t hash;
    uint32_t nnames, names_bytes; /* BTCUBIN2 only */
} blob_hdr;
#define BLOB_HDR_V1 32 /* the BTCUBIN1 header: no names fields */
enum { BLOB_SM_A = 1 };

/* A blob (malloc'd into *out) of the CUBIN (consumed: freed and NULLed, also on failure) for sm
 * (90) and its `a` variant, with the nnames pairs (the name as the source spells it, the name in
 * the CUBIN). */
bt_status bt__cuda_blob_pack(int sm, bool arch_specific, const char *const *names,
                            const char *const *low, int nnames, bt__blob *cubin, bt__blob *out);

/* Checks a blob made by bt__cuda_blob_pack (or by a blocktune before names: BTCUBIN1): the
 * header into *h, *hlen its length. BT_CORRUPT with the reason otherwise. */
bt_status bt__cuda_blob_check(const void *bin, size_t size, blob_hdr *h, size_t *hlen,
                              bt_diag *diag);

#endif
