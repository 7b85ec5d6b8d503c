/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jpos.h — source positions of JSON values (internal).
 *
 * jansson parses values but forgets where they were; errors in specs and in the hardware table
 * must name file:line:column. This scanner walks the (already validated) JSON text once and
 * records the line and column of every value, and of every object member's key, under its path:
 * "params.BLOCK_M", "args[2].size", "constraints[0]", "gpus[3].peaks.fp16" (the root is "").
 * Columns count characters (UTF-8 code points), from 1.
 */
#ifndef BT_CORE_JPOS_H
#define BT_CORE_JPOS_H

#include <stdbool.h>

typedef struct bt__jpos bt__jpos;

/* Builds the map; NULL on allocation failure. Malformed text yields a partial map. */
bt__jpos *bt__jpos_build(const char *text);
void bt__jpos_free(bt__jpos *m);
/* Position (1-based) of the value at path; false if unknown. For a string value the column is that
 * of the opening quote. */
bool bt__jpos_find(const bt__jpos *m, const char *path, int *line, int *column);
/* Position of the key of the member at path (the opening quote of "sm_count" in
 * "sm_count": -4); for an array element or the root, of the value itself. False if unknown. */
bool bt__jpos_find_member(const bt__jpos *m, const char *path, int *line, int *column);
/* bt__jpos_find_member of path, else of the nearest enclosing path that is known
 * ("gpus[3].peaks.fp16", "gpus[3].peaks", "gpus[3]", "gpus", the root); 1:1 when none is
 * (m may be NULL). */
void bt__jpos_nearest(const bt__jpos *m, const char *path, int *line, int *column);

#endif
