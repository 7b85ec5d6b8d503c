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
/* A hit fills out (malloc'd data); a miss or a damaged file returns false. */
bool bt__kcache_get(uint64_t key, bt__blob *out);
/* Whether the cache has an entry for key (not read: a damaged one is found so only by get). */
bool bt__kcache_has(uint64_t key);
/* Best effort: a failure to write only costs a recompile later. */
void bt__kcache_put(uint64_t key, const bt__blob *blob);

#endif
