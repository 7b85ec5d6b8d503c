/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonin.h — reading one JSON document from a file or from memory, plain or gzip (detected from
 * the magic bytes), streamed into jansson in chunks (internal; see jsonin.c).
 *
 * Memory is bounded: the input is never held whole, inflated or not, and the document may not
 * exceed BT__JSONIN_MAX_MB MiB of JSON text nor BT__JSONIN_MAX_VALUES structural characters (',',
 * ':', '[', '{': an upper bound on the number of values jansson builds). Both limits can be raised
 * with $BLOCKTUNE_MAX_INPUT_MB (the value limit scales with it). A document over a limit is
 * refused as soon as the limit is passed (a 1 MiB gzip bomb costs milliseconds, not gigabytes).
 */
#ifndef BT_STORE_JSONIN_H
#define BT_STORE_JSONIN_H

#include "blocktune.h"

#include <jansson.h>
#include <stddef.h>

#define BT__JSONIN_MAX_MB 64
#define BT__JSONIN_MAX_VALUES (4u << 20)

/* Parses the file at path (flags: jansson's decoding flags). On failure NULL, *st says why
 * (BT_NOT_FOUND, BT_IO, BT_CORRUPT for bad gzip data, BT_PARSE with line:column in diag,
 * BT_UNSUPPORTED over a limit) and diag names the file. */
json_t *bt__jsonin_file(const char *path, size_t flags, bt_status *st, bt_diag *diag);
/* The same from memory; `name` stands for the file in diagnostics. */
json_t *bt__jsonin_mem(const void *data, size_t size, const char *name, size_t flags,
                       bt_status *st, bt_diag *diag);

#endif
