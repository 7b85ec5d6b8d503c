/*
 * jpos.h — source positions of JSON values (internal).
 *
 * jansson parses values but forgets where they were; spec errors must name file:line:column. This
 * scanner walks the (already validated) JSON text once and records the line and column of every
 * value under its path: "params.BLOCK_M", "args[2].size", "constraints[0]".
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

#endif
