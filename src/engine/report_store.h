/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_store.h — tune documents made from the results store, for `blocktune report --store`
 * (report_store.c).
 */
#ifndef BT_TOOLS_REPORT_STORE_H
#define BT_TOOLS_REPORT_STORE_H

#include "blocktune.h"

#include <jansson.h>

/* One blocktune-tune/1 document per (kernel, device, key) of the store at db (NULL: the default
 * store) that holds measurements, selected by kernel (exact), key (a substring) and device (name
 * or UUID); each filter NULL for any. *docs (malloc'd, each json_decref'd by the caller) and *n;
 * *path the store's path (malloc'd). The store is opened for reading only. */
bt_status bt__cli_store_docs(const char *db, const char *kernel, const char *key,
                             const char *device, json_t ***docs, size_t *n, char **path,
                             bt_diag *d);

#endif
