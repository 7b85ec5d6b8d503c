/*
 * kcache.h — the on-disk cache of compiled kernels (internal); see kcache.c.
 */
#ifndef BT_ENGINE_KCACHE_H
#define BT_ENGINE_KCACHE_H

#include "backends/backend.h"

#include <stdbool.h>
#include <stdint.h>

uint64_t bt__kcache_key(const char *backend, const char *device, const char *compiler,
                        const char *src, const char *const *defines, int ndefines,
                        const char *options);
/* A hit fills out (malloc'd data); a miss or a damaged file returns false. */
bool bt__kcache_get(uint64_t key, bt__blob *out);
/* Best effort: a failure to write only costs a recompile later. */
void bt__kcache_put(uint64_t key, const bt__blob *blob);

#endif
