/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t4.h — the results of a store key in the T4 format (internal; see t4.c).
 */
#ifndef BT_STORE_T4_H
#define BT_STORE_T4_H

#include "store/store.h"

/* The T4 schema version written (Kernel Tuner's kernel_tuner/schema/T4/<version>/). */
#define BT__T4_VERSION "1.0.0"

/* Writes every measurement of kernel/key on device (a UUID or name; NULL: every device), any
 * status, as a T4 results document ({"schema_version", "results", "metadata"}) to path ("-":
 * stdout), atomically. *nrows gets the number of results. BT_NOT_FOUND when there is none. */
bt_status bt__t4_export(bt__store *s, const char *kernel, const char *device, const char *key,
                        const char *path, int *nrows, bt_diag *diag);

#endif
