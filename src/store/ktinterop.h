/*
 * ktinterop.h — Kernel Tuner caches in and out of the results store (internal); see ktinterop.c.
 */
#ifndef BT_STORE_KTINTEROP_H
#define BT_STORE_KTINTEROP_H

#include "store/ktcache.h"
#include "store/store.h"

/* Imports every record of a Kernel Tuner cache (plain or .gz) in one transaction; the fastest
 * becomes its key's winner. A malformed file imports nothing (file:line:column in diag). */
bt_status bt__kt_import(bt__store *s, const char *path, int *nrows, bt_diag *diag);
/* Writes the store's measurements of kernel/device/key as a Kernel Tuner cache. */
bt_status bt__kt_export(bt__store *s, const char *kernel, const char *device, const char *key,
                        const char *path, int *nrows, bt_diag *diag);

#endif
