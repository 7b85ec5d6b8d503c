/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.h — the HTML report (internal; docs/report.md): one self-contained page (inline CSS,
 * inline SVG drawn here, a few lines of our own JavaScript for highlighting; no network) over one
 * or more tune JSON documents (docs/tune-json.md), with an optional peers file.
 *
 * Layer: src/report depends on core (and jansson) only; the engine (bt_result_write_html) and the
 * tools (`blocktune report`) call it. Its files:
 *   load.c         reading and checking tune and peers documents (errors name file:line:column)
 *   tunedoc.c      reading a tune document: config text, throughput unit, rules of eliminations
 *   svg.c          scales, ticks, axes, escaping
 *   chart_roof.c   the roofline
 *   chart_param.c  time against each parameter
 *   chart_sweep.c  the winner's efficiency against the problem size
 *   tables.c       candidates, failures, eliminations by rule, peers, provenance
 *   page.c         the page: head, style, script, sections
 */
#ifndef BT_REPORT_REPORT_H
#define BT_REPORT_REPORT_H

#include "blocktune.h"

#include <jansson.h>
#include <stdio.h>

/* One tune document and where it came from (a file, "store:PATH", "this tune"). */
typedef struct bt__report_doc {
    json_t *doc;        /* a checked blocktune-tune/1 document (borrowed) */
    const char *source;
} bt__report_doc;

typedef struct bt__report_opts {
    const char *title;  /* NULL: "blocktune report" */
    json_t *peers;      /* a checked blocktune-peers/1 document, or NULL */
    const char *peers_source;
} bt__report_opts;

/* Reads and checks a tune JSON file (bt__report_check_tune); free *out with json_decref. */
bt_status bt__report_load_tune(const char *path, json_t **out, bt_diag *diag);
/* Reads and checks a peers file (docs/report.md#peers). */
bt_status bt__report_load_peers(const char *path, json_t **out, bt_diag *diag);
/* Checks what the report reads of a tune document: schema, kernel, problem, each config's
 * config object and status, an ok config's positive finite median_ms. text (may be NULL) is the
 * document's JSON text, for the line and column of an error; name stands for the file. */
bt_status bt__report_check_tune(json_t *doc, const char *text, const char *name, bt_diag *diag);
bt_status bt__report_check_peers(json_t *doc, const char *text, const char *name, bt_diag *diag);

/* Writes the page over docs[0..n) to f. BT_IO when writing fails. */
bt_status bt__report_html(const bt__report_doc *docs, size_t n, const bt__report_opts *o, FILE *f,
                          bt_diag *diag);

#endif
