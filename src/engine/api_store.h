/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_store.h — the internal store behind a public bt_store handle (api_store.c), for the other
 * public calls that read a store (api_report.c, api_store_list.c).
 */
#ifndef BT_ENGINE_API_STORE_H
#define BT_ENGINE_API_STORE_H

#include "blocktune.h"
#include "store/store.h"

/* The store s wraps (NULL for NULL). */
bt__store *bt__store_handle(bt_store *s);

#endif
