/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.h — what the tune's writers share (internal): the text table's columns of one config,
 * the measured configs fastest first, whether the device's roofline is known, and the result as
 * the tune JSON document (report.c); the CSV (report_csv.c) and HTML (report_html.c) writers use
 * them so that every format says the same.
 */
#ifndef BT_ENGINE_REPORT_H
#define BT_ENGINE_REPORT_H

#include "engine/engine.h"

#include <jansson.h>
#include <stdbool.h>

/* The text table's columns of entry i that are not plain numbers of the entry. */
typedef struct bt__row_cols {
    char cfg[256];      /* "BLOCK_N=512 num_warps=4 CS=0" */
    long long smem;     /* shared memory, B */
    char regs[16];      /* "88" from the compiler, "~88" the model's estimate */
    char blk[24];       /* blocks per SM: "2" (model), "2/3!" (model/exact, '!' = they differ) */
    long long blk_model;
    int blk_exact;      /* -1: not known (no compiler registers, or not a CUDA device) */
    double occupancy;   /* the model's, 0..1 */
    const char *status; /* "WINNER", "ok (stored)", "ok", or the failure's status name */
} bt__row_cols;
void bt__result_row(const bt_result *r, size_t i, bt__row_cols *c);

/* The indices of the entries that measured, fastest median first (malloc'd; NULL when out of
 * memory, with *m = 0). */
size_t *bt__result_ok_order(const bt_result *r, size_t *m);

/* True when the device's peaks are known (a roofline and efficiencies); *mem: throughput is shown
 * in GB/s (memory-bound, or a low intensity when the roofline is unknown), else TFLOP/s. */
bool bt__result_roofline_known(const bt_result *r, bool *mem);

/* The result as the tune JSON document (docs/tune-json.md); NULL when out of memory. */
json_t *bt__result_to_json(const bt_result *r);
/* The tune JSON document as `--json` writes it (its text: reals to 8 significant digits), or NULL
 * when out of memory; the caller frees it. The page of `--html` is drawn from this text read back,
 * so that it holds the numbers of the file, rounded the same. */
char *bt__result_json_text(const bt_result *r);

#endif
