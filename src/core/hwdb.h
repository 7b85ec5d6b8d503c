/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hwdb.h — internal side of the hardware table (hwdb.c): loading from text, the name key used
 * for loose matching, where each row came from, and a row's JSON form (the gpus.json format).
 */
#ifndef BT_CORE_HWDB_H
#define BT_CORE_HWDB_H

#include "blocktune.h"

#include <jansson.h>
#include <stddef.h>

/* Parses a table from text (not necessarily NUL-terminated); `name` stands for the file in
 * diagnostics. Same rules as bt_gpudb_load_file. *out is NULL on failure. */
bt_status bt__gpudb_load_text(const char *text, size_t size, const char *name, bt_gpudb **out,
                              bt_diag *diag);
/* Overlays the rows of a table given as text, as bt_gpudb_merge_file does: all or nothing. */
bt_status bt__gpudb_merge_text(bt_gpudb *db, const char *text, size_t size, const char *name,
                               bt_diag *diag);

/* Where row i was read from: a file path or "(built-in) data/gpus.json". NULL if i is out of
 * range. The string lives as long as db. */
const char *bt__gpudb_row_origin(const bt_gpudb *db, size_t i);

/* Exact lookup only: the row whose canonical name, else alias, has the same key as `name`; NULL if
 * none. No prefix or substring matching, so that a device that is not in the table ("NVIDIA L40")
 * is not taken for one that is (L40S); the devices layer wants this. */
const bt_gpu *bt__gpudb_find_exact(const bt_gpudb *db, const char *name);

/* The key a GPU name is matched by: lower case, with spaces, '-' and '_' removed and leading
 * "nvidia", "geforce" and "tesla" stripped ("NVIDIA GeForce RTX-4090" -> "rtx4090"). Writes at
 * most size-1 characters and a NUL into buf; returns buf. */
char *bt__gpu_name_key(const char *name, char *buf, size_t size);

/* The peak kind called `name` ("fp16_tc"), or -1. */
int bt__peak_kind_from_name(const char *name);

/* Row g as a JSON object in the gpus.json format (docs/gpus.md). New reference, the caller's to
 * json_decref; NULL when out of memory. */
json_t *bt__gpu_to_json(const bt_gpu *g);
/* A whole gpus.json document holding db's rows, or only `only` when it is not NULL. New
 * reference; NULL when out of memory. Dump it with BT__GPUDB_DUMP_FLAGS. */
json_t *bt__gpudb_to_json(const bt_gpudb *db, const bt_gpu *only);
#define BT__GPUDB_DUMP_FLAGS (JSON_INDENT(2) | JSON_REAL_PRECISION(10))

#endif
