/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache.c — the on-disk cache of compiled kernels: a re-tune compiles nothing it compiled
 * before. Key = hash of (backend, device name, compiler version, source, defines, options);
 * files live in $BLOCKTUNE_CACHE_DIR/kernels (else $XDG_CACHE_HOME/blocktune/kernels, else
 * ~/.cache/blocktune/kernels), are written to a temporary file and renamed (atomic), and carry a
 * header with the full key hash and the payload size so a damaged file is a miss, not a crash.
 * BLOCKTUNE_NO_KERNEL_CACHE=1 turns the cache off.
 */
#include "engine/kcache.h"

#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define KC_MAGIC 0x42544b43u /* "BTKC" */

typedef struct kc_header {
    uint32_t magic, version;
    uint64_t key;
    uint64_t size;
    uint64_t sum;
} kc_header;

static bool kc_path(uint64_t key, char *buf, size_t size, bool create)
{
    const char *off = getenv("BLOCKTUNE_NO_KERNEL_CACHE");
    if (off && off[0] && strcmp(off, "0"))
        return false;
    char *dir = bt__cache_dir();
    if (!dir)
        return false;
    char kdir[960];
    snprintf(kdir, sizeof kdir, "%s/kernels", dir);
    free(dir);
    if (create && bt__mkdirs(kdir, NULL) != BT_OK)
        return false;
    snprintf(buf, size, "%s/%016llx.bin", kdir, (unsigned long long)key);
    return true;
}

uint64_t bt__kcache_key(const char *backend, const char *device, const char *compiler,
                        const bt__compile_req *req)
{
    uint64_t h = BT__FNV_SEED;
    const char *parts[] = {"blocktune-kcache-2", backend,      device,
                           compiler,             req->src,     req->options,
                           req->target};
    for (size_t i = 0; i < BT__ARRAY_LEN(parts); i++) {
        const char *p = parts[i] ? parts[i] : "";
        h = bt__fnv1a(p, strlen(p) + 1, h);
    }
    for (int i = 0; i < req->ndefines; i++)
        h = bt__fnv1a(req->defines[i], strlen(req->defines[i]) + 1, h);
    for (int i = 0; req->names && i < req->nnames; i++) /* a blob holds the names it resolved */
        h = bt__fnv1a(req->names[i], strlen(req->names[i]) + 1, h);
    return h;
}

bool bt__kcache_get(uint64_t key, bt__blob *out)
{
    char path[1024];
    if (!kc_path(key, path, sizeof path, false))
        return false;
    size_t size;
    char *data = bt__read_file(path, &size);
    if (!data)
        return false;
    kc_header h;
    bool ok = size >= sizeof h;
    if (ok) {
        memcpy(&h, data, sizeof h);
        ok = h.magic == KC_MAGIC && h.version == 1 && h.key == key && h.size == size - sizeof h &&
             h.sum == bt__fnv1a(data + sizeof h, h.size, BT__FNV_SEED);
    }
    if (!ok) {
        free(data);
        return false;
    }
    out->data = malloc(h.size ? h.size : 1);
    if (!out->data) {
        free(data);
        return false;
    }
    memcpy(out->data, data + sizeof h, h.size);
    out->size = h.size;
    free(data);
    return true;
}

bool bt__kcache_has(uint64_t key)
{
    char path[1024];
    struct stat sb;
    return kc_path(key, path, sizeof path, false) && stat(path, &sb) == 0;
}

void bt__kcache_put(uint64_t key, const bt__blob *blob)
{
    char path[1024];
    if (!kc_path(key, path, sizeof path, true))
        return;
    kc_header h = {KC_MAGIC, 1, key, blob->size, bt__fnv1a(blob->data, blob->size, BT__FNV_SEED)};
    char *buf = malloc(sizeof h + blob->size);
    if (!buf)
        return;
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, blob->data, blob->size);
    bt__write_file_atomic(path, buf, sizeof h + blob->size, NULL); /* best effort */
    free(buf);
}
