/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_store.h — tune documents made from the results store (report_store.c), for
 * bt_report_add_store (api_report.c) and so `blocktune report --store`.
 */
#ifndef BT_ENGINE_REPORT_STORE_H
#define BT_ENGINE_REPORT_STORE_H

#include "blocktune.h"
#include "store/store.h"

#include <jansson.h>

/* One blocktune-tune/1 document per (kernel, device, key) of the store s that holds
 * measurements, selected by kernel (exact), key (a substring) and device (name or UUID); each
 * filter NULL for any. *docs (malloc'd, each json_decref'd by the caller) and *n. */
bt_status bt__report_store_docs(bt__store *s, const char *kernel, const char *key,
                                const char *device, json_t ***docs, size_t *n, bt_diag *d);

#endif
