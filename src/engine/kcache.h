/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcache.h — the on-disk cache of compiled kernels (internal); see kcache.c.
 */
#ifndef BT_ENGINE_KCACHE_H
#define BT_ENGINE_KCACHE_H

#include "backends/backend.h"

#include <stdbool.h>
#include <stdint.h>

/* The key of a compile: the backend, device and compiler that build it, and everything of the
 * request (source, defines, options, target, the names it resolves). */
uint64_t bt__kcache_key(const char *backend, const char *device, const char *compiler,
                        const bt__compile_req *req);
/* The same in two parts: the head covers what every config of a kernel shares (the backend,
 * device, compiler, source, options and target), the tail adds the request's defines and names,
 * so that keying many configs of one source hashes the source once:
 * bt__kcache_key(...) == bt__kcache_key_tail(bt__kcache_key_head(...), req). */
uint64_t bt__kcache_key_head(const char *backend, const char *device, const char *compiler,
                             const bt__compile_req *req);
uint64_t bt__kcache_key_tail(uint64_t head, const bt__compile_req *req);
/* A hit fills out (malloc'd data); a miss or a damaged file returns false. */
bool bt__kcache_get(uint64_t key, bt__blob *out);
/* Whether the cache has an entry for key (not read: a damaged one is found so only by get). */
bool bt__kcache_has(uint64_t key);
/* Best effort: a failure to write only costs a recompile later. */
void bt__kcache_put(uint64_t key, const bt__blob *blob);

/* The compiler identity a binary built ahead of time for a GPU of the hardware table is kept
 * under (blocktune precompile), whichever compiler version built it: a first launch with
 * another version loads it too (a driver that cannot run it refuses it, and it is compiled). */
#define BT__KCACHE_PRECOMPILED "precompiled"
/* The user's kernel cache folder (<cache dir>/kernels); NULL when the cache is off. malloc'd. */
char *bt__kcache_user_dir(void);
/* The installed binaries built ahead of time: bt_set_precompiled_dir, else
 * $BLOCKTUNE_PRECOMPILED_DIR, else <datadir>/precompiled; NULL when the cache is off. malloc'd. */
char *bt__kcache_shipped_dir(void);
/* The same in a given folder (dir NULL: a miss). put_in makes the folder, reports errors, and
 * with compress keeps the binary zlib-compressed (a quarter of the size; get_in inflates it). */
bool bt__kcache_get_in(const char *dir, uint64_t key, bt__blob *out);
bool bt__kcache_has_in(const char *dir, uint64_t key);
bt_status bt__kcache_put_in(const char *dir, uint64_t key, const bt__blob *blob, bool compress,
                            bt_diag *diag);

#endif
