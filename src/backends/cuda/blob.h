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

/* Blob container: header, then names_bytes of resolved names — nnames pairs of NUL-terminated
 * strings, padded to 8 bytes — then (BTCUBIN3) meta_bytes of the Triton section (tmeta.h: the
 * launch metadata as versioned JSON text, NUL-padded to 8 bytes; 0 for CUDA C), then the CUBIN
 * of `size` bytes. sm is the target (90), flags bit 0 the "a" variant; the checksum is FNV-1a of
 * everything after the header. BTCUBIN2 (no section) and BTCUBIN1 (no names) blobs still load. */
#define BLOB_MAGIC "BTCUBIN3"
#define BLOB_MAGIC_V2 "BTCUBIN2"
#define BLOB_MAGIC_V1 "BTCUBIN1"
typedef struct blob_hdr {
    char magic[8];
    uint32_t sm;
    uint32_t flags;
    uint64_t size;
    uint64_t hash;
    uint32_t nnames, names_bytes; /* from BTCUBIN2 */
    uint32_t meta_bytes, reserved; /* BTCUBIN3 */
} blob_hdr;
#define BLOB_HDR_V1 32 /* the BTCUBIN1 header: no names fields */
#define BLOB_HDR_V2 40 /* the BTCUBIN2 header: no section */
enum { BLOB_SM_A = 1 };

/* A blob (malloc'd into *out) of the CUBIN (consumed: freed and NULLed, also on failure) for sm
 * (90) and its `a` variant, with the nnames pairs (the name as the source spells it, the name in
 * the CUBIN) and the Triton section `meta` (NULL: none). */
bt_status bt__cuda_blob_pack(int sm, bool arch_specific, const char *const *names,
                            const char *const *low, int nnames, const char *meta, bt__blob *cubin,
                            bt__blob *out);

/* Checks a blob made by bt__cuda_blob_pack (or by an older blocktune: BTCUBIN2, BTCUBIN1): the
 * header into *h (meta_bytes 0 before BTCUBIN3), *hlen its length. BT_CORRUPT with the reason
 * otherwise. The names start at bin + *hlen, the section after them, the CUBIN after it. */
bt_status bt__cuda_blob_check(const void *bin, size_t size, blob_hdr *h, size_t *hlen,
                              bt_diag *diag);

#endif
