/* SPDX-License-Identifier: Apache-2.0 */
/*
 * space.h — config spaces: named integer parameters and deterministic enumeration (internal).
 *
 * A parameter's values are given as an explicit list, a power-of-two range or a stepped range,
 * and are expanded into a sorted-as-given value array. The space is the cartesian product of the
 * parameters' values; config i of the space is the mixed-radix decoding of i with the LAST
 * parameter varying fastest (itertools.product order). Nothing is materialised: spaces of 10^5+
 * configs are walked by index, so memory stays O(sum of value counts).
 *
 * Launch parameters (num_warps, num_stages, num_ctas) are ordinary parameters that carry a role
 * the model understands; tile parameters carry the problem dimension they tile.
 */
#ifndef BT_CORE_SPACE_H
#define BT_CORE_SPACE_H

#include "blocktune.h"

#include <stdbool.h>
#include <stdint.h>

/* Limits of a space (internal since 0.2: the public bt_config is opaque, so raising them breaks
 * no caller). */
#define BT_MAX_PARAMS 32
#define BT_NAME_MAX 48

/* A config: one value per parameter of the kernel's space, in the space's parameter order. The
 * public API hands configs out inside a bt__config_obj (names, cached text). */
struct bt_config {
    int nparams;
    int64_t v[BT_MAX_PARAMS];
};

typedef enum bt__param_role {
    BT__ROLE_NONE = 0,
    BT__ROLE_NUM_WARPS,
    BT__ROLE_NUM_STAGES,
    BT__ROLE_NUM_CTAS,
    BT__ROLE_TILE, /* a tile size: BLOCK_M, BLOCK_SIZE ... (pow2 rules apply to these) */
} bt__param_role;

typedef struct bt__param {
    char name[BT_NAME_MAX];
    int64_t *values; /* malloc'd, nvalues entries, in the order given */
    int nvalues;
    bt__param_role role;
} bt__param;

typedef struct bt__space {
    int nparams;
    bt__param params[BT_MAX_PARAMS];
    uint64_t total; /* product of nvalues; UINT64_MAX if it overflows */
} bt__space;

void bt__space_init(bt__space *s);
void bt__space_clear(bt__space *s); /* frees value arrays */

/* Adds a parameter with explicit values (copied). BT_INVALID_ARG on a duplicate name, an empty
 * list, a duplicate value or more than BT_MAX_PARAMS parameters (diag says which). */
bt_status bt__space_add_list(bt__space *s, const char *name, const int64_t *values, int n,
                             bt_diag *diag);
/* Powers of two lo, 2lo, ... <= hi (lo must itself be a power of two, 1 <= lo <= hi). */
bt_status bt__space_add_pow2(bt__space *s, const char *name, int64_t lo, int64_t hi,
                             bt_diag *diag);
/* lo, lo+step, ... <= hi (step > 0). */
bt_status bt__space_add_range(bt__space *s, const char *name, int64_t lo, int64_t hi,
                              int64_t step, bt_diag *diag);

/* Index of a parameter by name (case-insensitive), or -1. */
int bt__space_find(const bt__space *s, const char *name);
/* Decodes config `index` (< total). */
void bt__space_config_at(const bt__space *s, uint64_t index, bt_config *out);
/* Encodes a config back to its index; false if a value is not in its parameter's list. */
bool bt__space_index_of(const bt__space *s, const bt_config *c, uint64_t *index);
/* Position of value v in parameter p's list, or -1. */
int bt__space_value_pos(const bt__space *s, int p, int64_t v);
/* The one config formatter. As text: "BLOCK_M=128<sep>BLOCK_N=256..." into buf (truncated to
 * size), e.g. sep ", " for messages, " " for report tables; returns buf. */
char *bt__config_format(const bt__space *s, const bt_config *c, const char *sep, char *buf,
                        size_t size);
/* As a JSON object {"BLOCK_M": 128, ...} in the space's parameter order (a new reference; NULL
 * when out of memory), and as its compact text (malloc'd; NULL when out of memory). */
struct json_t *bt__config_to_json(const bt__space *s, const bt_config *c);
char *bt__config_json(const bt__space *s, const bt_config *c);

/* A config as the public API hands it out (config.c): the values first, so that a bt_config *
 * of the public API is the object's address, with the space that names them and the texts
 * bt_config_text / bt_config_json made on request. */
typedef struct bt__config_obj {
    bt_config c;
    const bt__space *space;
    char *text, *json;
} bt__config_obj;
/* A new public config of space s (bt_config_destroy frees it); NULL when out of memory. */
bt_config *bt__config_new(const bt__space *s, const bt_config *c);
/* Frees an object's texts (not the object: one embedded in a result). */
void bt__config_obj_clear(bt__config_obj *o);

#endif
