/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ktinterop.h — Kernel Tuner caches in and out of the results store (internal); see ktinterop.c.
 */
#ifndef BT_STORE_KTINTEROP_H
#define BT_STORE_KTINTEROP_H

#include "store/ktcache.h"
#include "store/store.h"

/* Whether path looks like a Kernel Tuner cache: gzip (.gz), or JSON with "tune_params_keys" in
 * its first 4 KiB (wisdom files have none). */
bool bt__kt_is_cache(const char *path);
/* Imports every record of a Kernel Tuner cache (plain or .gz) in one transaction; the fastest
 * becomes its key's winner. A malformed file imports nothing (file:line:column in diag). */
bt_status bt__kt_import(bt__store *s, const char *path, int *nrows, bt_diag *diag);
/* Writes the store's measurements of kernel/device/key as a Kernel Tuner cache. */
bt_status bt__kt_export(bt__store *s, const char *kernel, const char *device, const char *key,
                        const char *path, int *nrows, bt_diag *diag);

/* The store's measurements of kernel/key (any status; on `device`, a UUID or name, or on every
 * device when NULL) as a recorded space for `blocktune simulate`: each parameter's measured
 * values, sorted; one record per measured config (the newest row wins), failures with their
 * status; the compile time where recorded, no benchmark time. BT_NOT_FOUND (diag) when there is
 * no row. Free with bt__ktcache_free. */
bt_status bt__kt_from_store(bt__store *s, const char *kernel, const char *device, const char *key,
                            bt__ktcache **out, int *nrows, bt_diag *diag);

#endif
