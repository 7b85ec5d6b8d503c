/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache.c — the on-disk cache of compiled kernels: a re-tune compiles nothing it compiled
 * before. Key = hash of (backend, device name, compiler version, source, defines, options);
 * files live in $BLOCKTUNE_CACHE_DIR/kernels (else $XDG_CACHE_HOME/blocktune/kernels, else
 * ~/.cache/blocktune/kernels), are written to a temporary file and renamed (atomic), and carry a
 * header with the full key hash and the payload size so a damaged file is a miss, not a crash.
 * BLOCKTUNE_NO_KERNEL_CACHE=1 turns the cache off. The same file format holds binaries built
 * ahead of time (blocktune precompile, engine/precompile.c) in another folder: the installed
 * <datadir>/precompiled (or bt_set_precompiled_dir, $BLOCKTUNE_PRECOMPILED_DIR), read only.
 */
#include "engine/kcache.h"

#include "core/datadir.h"
#include "core/util.h"
#include "store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#define KC_MAGIC 0x42544b43u /* "BTKC" */

typedef struct kc_header {
    uint32_t magic, version;
    uint64_t key;
    uint64_t size;
    uint64_t sum;
} kc_header;

static bool cache_off(void)
{
    const char *off = getenv("BLOCKTUNE_NO_KERNEL_CACHE");
    return off && off[0] && strcmp(off, "0");
}

char *bt__kcache_user_dir(void)
{
    if (cache_off())
        return NULL;
    char *dir = bt__cache_dir();
    bt__sbuf k = {0};
    if (dir)
        bt__sbuf_printf(&k, "%s/kernels", dir);
    free(dir);
    return k.s;
}

char *bt__kcache_shipped_dir(void)
{
    if (cache_off())
        return NULL;
    char *set = bt__setting_precompiled_dir();
    if (set)
        return set;
    const char *env = getenv("BLOCKTUNE_PRECOMPILED_DIR");
    if (env && env[0])
        return bt__strdup(env);
    bt__sbuf k = {0};
    bt__sbuf_printf(&k, "%s/precompiled", bt__data_dir());
    return k.s;
}

static void kc_file(const char *dir, uint64_t key, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%016llx.bin", dir, (unsigned long long)key);
}

uint64_t bt__kcache_key_head(const char *backend, const char *device, const char *compiler,
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
    return h;
}

uint64_t bt__kcache_key_tail(uint64_t head, const bt__compile_req *req)
{
    uint64_t h = head;
    for (int i = 0; i < req->ndefines; i++)
        h = bt__fnv1a(req->defines[i], strlen(req->defines[i]) + 1, h);
    for (int i = 0; req->names && i < req->nnames; i++) /* a blob holds the names it resolved */
        h = bt__fnv1a(req->names[i], strlen(req->names[i]) + 1, h);
    return h;
}

uint64_t bt__kcache_key(const char *backend, const char *device, const char *compiler,
                        const bt__compile_req *req)
{
    return bt__kcache_key_tail(bt__kcache_key_head(backend, device, compiler, req), req);
}

/* A version-2 payload (8 bytes of raw size, then a zlib stream) into out (malloc'd). */
static bool inflate_blob(const char *p, uint64_t size, bt__blob *out)
{
    uint64_t raw;
    if (size < sizeof raw)
        return false;
    memcpy(&raw, p, sizeof raw);
    if (raw > ((uint64_t)1 << 31))
        return false;
    out->data = malloc(raw ? raw : 1);
    uLongf n = (uLongf)raw;
    if (!out->data)
        return false;
    if (uncompress(out->data, &n, (const Bytef *)p + sizeof raw, (uLong)(size - sizeof raw)) !=
            Z_OK ||
        n != raw) {
        free(out->data);
        out->data = NULL;
        return false;
    }
    out->size = raw;
    return true;
}

bool bt__kcache_get_in(const char *dir, uint64_t key, bt__blob *out)
{
    if (!dir)
        return false;
    char path[1200];
    kc_file(dir, key, path, sizeof path);
    size_t size;
    char *data = bt__read_file(path, &size);
    if (!data)
        return false;
    kc_header h = {0};
    bool ok = size >= sizeof h;
    if (ok) {
        memcpy(&h, data, sizeof h);
        ok = h.magic == KC_MAGIC && (h.version == 1 || h.version == 2) && h.key == key &&
             h.size == size - sizeof h && h.sum == bt__fnv1a(data + sizeof h, h.size, BT__FNV_SEED);
    }
    if (ok && h.version == 2) { /* compressed: the raw size, then zlib's stream */
        ok = inflate_blob(data + sizeof h, h.size, out);
    } else if (ok) {
        out->data = malloc(h.size ? h.size : 1);
        if ((ok = out->data != NULL)) {
            memcpy(out->data, data + sizeof h, h.size);
            out->size = h.size;
        }
    }
    free(data);
    return ok;
}

bool bt__kcache_has_in(const char *dir, uint64_t key)
{
    char path[1200];
    struct stat sb;
    if (!dir)
        return false;
    kc_file(dir, key, path, sizeof path);
    return stat(path, &sb) == 0;
}

bt_status bt__kcache_put_in(const char *dir, uint64_t key, const bt__blob *blob, bool compress,
                            bt_diag *diag)
{
    char path[1200];
    if (!dir)
        return BT_INVALID_ARG;
    bt_status st = bt__mkdirs(dir, diag);
    if (st != BT_OK)
        return st;
    kc_file(dir, key, path, sizeof path);
    uint64_t raw = blob->size;
    uLongf zlen = compress ? compressBound((uLong)raw) : 0;
    size_t cap = sizeof(kc_header) + (compress ? sizeof raw + zlen : raw);
    char *buf = malloc(cap);
    if (!buf)
        return BT_NOMEM;
    char *pay = buf + sizeof(kc_header);
    uint64_t psize = raw;
    if (compress) {
        memcpy(pay, &raw, sizeof raw);
        if (compress2((Bytef *)pay + sizeof raw, &zlen, (const Bytef *)blob->data, (uLong)raw,
                      Z_BEST_COMPRESSION) != Z_OK) {
            free(buf);
            bt__diag_set(diag, "%s: zlib could not compress the binary", path);
            return BT_INTERNAL;
        }
        psize = sizeof raw + zlen;
    } else {
        memcpy(pay, blob->data, raw);
    }
    kc_header h = {KC_MAGIC, compress ? 2 : 1, key, psize, bt__fnv1a(pay, psize, BT__FNV_SEED)};
    memcpy(buf, &h, sizeof h);
    st = bt__write_file_atomic(path, buf, sizeof h + psize, diag);
    free(buf);
    return st;
}

bool bt__kcache_get(uint64_t key, bt__blob *out)
{
    char *dir = bt__kcache_user_dir();
    bool hit = bt__kcache_get_in(dir, key, out);
    free(dir);
    return hit;
}

bool bt__kcache_has(uint64_t key)
{
    char *dir = bt__kcache_user_dir();
    bool hit = bt__kcache_has_in(dir, key);
    free(dir);
    return hit;
}

void bt__kcache_put(uint64_t key, const bt__blob *blob)
{
    char *dir = bt__kcache_user_dir();
    if (dir) /* best effort: a failure to write only costs a compile later */
        bt__kcache_put_in(dir, key, blob, false, NULL);
    free(dir);
}
