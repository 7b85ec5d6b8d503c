/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rep_int.h — what the files of src/report share (internal to src/report; report.h lists them):
 * the view of one tune document, the SVG chart frame and scales, the charts and the tables.
 */
#ifndef BT_REPORT_REP_INT_H
#define BT_REPORT_REP_INT_H

#include "report/report.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* --- tunedoc.c: reading a tune document ------------------------------------------------------ */
/* o's member key as a number (integer or real), or dflt when absent, null or not a number. */
double bt__jnum(const json_t *o, const char *key, double dflt);
/* o's member key as a string, or dflt. */
const char *bt__jstr(const json_t *o, const char *key, const char *dflt);
/* "BLOCK_N=512 num_warps=4 CS=0": an object's members in their order, integers as integers. */
void bt__jobj_text(const json_t *o, const char *sep, char *buf, size_t size);

/* The report's view of one tune document. */
typedef struct bt__tview {
    const json_t *doc, *configs, *roof, *winner, *prov, *search, *elim;
    size_t n;                 /* configs */
    long winner_i, runner_i;  /* indices into configs; -1: none */
    bool known;               /* the device's peak and bandwidth are known: a roof, efficiencies */
    bool mem;                 /* throughput in GB/s (memory-bound, or intensity < 10 when the roof
                                 is unknown), else TFLOP/s */
    double flops, bytes, intensity, peak_tflops, bw_gbps, floor_us;
    const char *kernel, *device, *dtype;
    char problem[256];        /* "rows=256 cols=1000 dtype=fp32" */
    char id[32];              /* the section's HTML id: "t1", "t2" ... */
} bt__tview;
void bt__tview_init(bt__tview *v, const json_t *doc, size_t index);
/* Throughput of a median in the view's unit (GB/s or TFLOP/s); 0 when the document has no FLOP
 * or byte count. */
double bt__tview_thru(const bt__tview *v, double median_ms);
const char *bt__tview_unit(const bt__tview *v);
/* The fraction of the roofline's time floor a median reaches; -1 when the roof is unknown. */
double bt__tview_eff(const bt__tview *v, double median_ms);
/* configs[i] and its fields. */
const json_t *bt__tview_cfg(const bt__tview *v, size_t i);
bool bt__tview_ok(const bt__tview *v, size_t i);
double bt__tview_median(const bt__tview *v, size_t i);
/* The indices of the ok configs, fastest first (malloc'd; *m their count). */
size_t *bt__tview_ok_order(const bt__tview *v, size_t *m);

/* The rule that eliminated a config, from the first line of its reasons: the rule's name where
 * the line ends with one in parentheses ("smem_limit"), the constraint ("constraint 'BLOCK <=
 * n'"), else the line's words before its first number or colon. */
void bt__reason_rule(const char *reasons, char *buf, size_t size);

/* --- svg.c: scales, axes, escaping ---------------------------------------------------------- */
/* Writes s escaped for HTML text and attribute values. */
void bt__esc(FILE *f, const char *s);
/* A number in at most 3 significant digits, no exponent between 1e-3 and 1e6. */
void bt__fmt_num(double v, char *buf, size_t size);

typedef struct bt__axis {
    double lo, hi;  /* the data range shown (lo > 0 on a log axis) */
    bool log;
    double p0, p1;  /* pixels of lo and hi */
} bt__axis;
/* Fits [lo, hi] to tick bounds (lo > 0 on a log axis; a degenerate range is widened). */
void bt__axis_fit(bt__axis *a, double lo, double hi, bool log);
double bt__axis_px(const bt__axis *a, double v);
/* Tick values inside the axis, at most max; returns their count. */
int bt__axis_ticks(const bt__axis *a, double *t, int max);

/* A chart: an inline SVG with a plot area inside margins. */
typedef struct bt__chart {
    FILE *f;
    double w, h;              /* viewBox */
    double l, r, t, b;        /* margins */
    bt__axis x, y;
    const char *const *xcat;  /* categorical x labels (x = 0, 1, ...), or NULL */
    int ncat;
} bt__chart;
/* Opens the SVG: role img, a title and a description for screen readers; sets the pixel ranges
 * of x and y (fit them before drawing, after this). */
void bt__chart_open(bt__chart *c, FILE *f, const char *id, const char *title, const char *desc);
/* Grid, ticks and tick labels of both axes, the axis titles (units included). */
void bt__chart_axes(const bt__chart *c, const char *xlabel, const char *ylabel);
/* A second y axis on the right for a quantity q = k / y (throughput against time), log. */
void bt__chart_axis_inverse(const bt__chart *c, double k, const char *label);
void bt__chart_close(const bt__chart *c);
double bt__chart_x(const bt__chart *c, double v);
double bt__chart_y(const bt__chart *c, double v);

/* --- the charts ------------------------------------------------------------------------------ */
/* Peers (load.c's documents) that match a tune: name, median, and their FLOP and byte counts. */
typedef struct bt__peer {
    const char *name, *note;
    const char *statistic; /* "median", "mean", "min" ... as the peers file says; may be NULL */
    double time_ms, flops, bytes;
    int color;             /* its name's rank among its kernel's peer names, mod 4 (its colour) */
} bt__peer;
/* A peer's mark (a diamond of its colour) at px, py with a tooltip "peer NAME: what". */
void bt__peer_mark(FILE *f, double px, double py, const bt__peer *p, const char *what);
/* The peers of v (matched by kernel, every problem value given, and device when given), at most
 * max, into out; returns their count. */
int bt__peers_match(const json_t *peers, const bt__tview *v, bt__peer *out, int max);

void bt__chart_roofline(FILE *f, const bt__tview *v, const bt__peer *peers, int npeers);
void bt__chart_params(FILE *f, const bt__tview *v, const bt__peer *peers, int npeers);
/* Several keys of one kernel on one device: the winner's efficiency (or throughput) against the
 * problem size. */
void bt__chart_sweep(FILE *f, const bt__tview *views, const size_t *idx, size_t n,
                     const json_t *peers, const char *id);

/* --- tables.c ------------------------------------------------------------------------------- */
void bt__table_summary(FILE *f, const bt__tview *v);
void bt__table_candidates(FILE *f, const bt__tview *v);
void bt__table_failed(FILE *f, const bt__tview *v);
void bt__table_eliminated(FILE *f, const bt__tview *v);
void bt__table_peers(FILE *f, const bt__tview *v, const bt__peer *peers, int npeers);
void bt__table_provenance(FILE *f, const bt__tview *v, const char *source);

#endif
