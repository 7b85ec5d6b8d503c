/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chart_sweep.c — several keys of one kernel on one device (a sweep, or a store holding several
 * sizes): the winner's efficiency (its median against the roofline's time floor, in %) against
 * the problem size — the bytes it moves when memory-bound, its FLOPs when compute-bound, else the
 * product of its sizes — one point per key joined in size order; throughput instead of
 * efficiency when a key's roofline is unknown; the peers' points beside them.
 */
#include "report/rep_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PEERS 16

typedef struct spt {
    double x, y;
    size_t v;
} spt;

/* The size measure of a view: its bytes (MB) or FLOPs (GFLOP), else the product of its sizes. */
static double size_of(const bt__tview *v, int how)
{
    if (how == 0)
        return v->bytes / 1e6;
    if (how == 1)
        return v->flops / 1e9;
    double p = 1;
    const char *k;
    json_t *x;
    json_object_foreach(json_object_get(v->doc, "problem"), k, x)
        if (json_is_integer(x) && json_integer_value(x) > 0)
            p *= (double)json_integer_value(x);
    return p;
}

static int cmp_spt(const void *a, const void *b)
{
    const spt *x = a, *y = b;
    return x->x < y->x ? -1 : x->x > y->x;
}

/* The winner's (or a peer's) figure: efficiency in % when every key's roofline is known, else
 * throughput. */
static double figure(const bt__tview *v, double ms, bool eff)
{
    return eff ? bt__tview_eff(v, ms) * 100 : bt__tview_thru(v, ms);
}

static void sweep_point(FILE *f, const bt__chart *c, const bt__tview *v, const spt *p,
                        const char *unit)
{
    char cfg[512], y[32];
    bt__jobj_text(json_object_get(bt__tview_cfg(v, (size_t)v->winner_i), "config"), " ", cfg,
                  sizeof cfg);
    bt__fmt_num(p->y, y, sizeof y);
    fprintf(f, "<circle class=\"pt st-ok winner sweep\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" data-key=\"",
            bt__chart_x(c, p->x), bt__chart_y(c, p->y));
    bt__esc(f, v->problem);
    fprintf(f, "\"><title>");
    bt__esc(f, v->problem);
    fprintf(f, ": %s %s, winner ", y, unit);
    bt__esc(f, cfg);
    fprintf(f, "</title></circle>\n");
}

static void peer_points(FILE *f, const bt__chart *c, const bt__tview *views, const spt *pts,
                        size_t n, const json_t *peers, bool eff)
{
    for (size_t i = 0; i < n; i++) {
        const bt__tview *v = &views[pts[i].v];
        bt__peer pp[MAX_PEERS];
        int np = bt__peers_match(peers, v, pp, MAX_PEERS);
        for (int j = 0; j < np; j++) {
            double y = figure(v, pp[j].time_ms, eff);
            if (!(y > 0))
                continue;
            char what[320], ys[32];
            bt__fmt_num(y, ys, sizeof ys);
            snprintf(what, sizeof what, "%s %s at %s", ys, eff ? "% of the roofline" :
                     bt__tview_unit(v), v->problem);
            bt__peer_mark(f, bt__chart_x(c, pts[i].x), bt__chart_y(c, y), &pp[j], what);
        }
    }
}

void bt__chart_sweep(FILE *f, const bt__tview *views, const size_t *idx, size_t n,
                     const json_t *peers, const char *id)
{
    spt *pts = calloc(n ? n : 1, sizeof *pts);
    if (!pts)
        return;
    const bt__tview *v0 = &views[idx[0]];
    bool eff = true, counts = true;
    for (size_t i = 0; i < n; i++) {
        eff &= views[idx[i]].known;
        counts &= views[idx[i]].flops > 0 && views[idx[i]].bytes > 0;
    }
    int how = counts ? (v0->mem ? 0 : 1) : 2;
    size_t m = 0;
    double ylo = INFINITY, yhi = 0;
    for (size_t i = 0; i < n; i++) {
        const bt__tview *v = &views[idx[i]];
        if (v->winner_i < 0)
            continue;
        double y = figure(v, bt__tview_median(v, (size_t)v->winner_i), eff);
        double x = size_of(v, how);
        if (!(y > 0) || !(x > 0))
            continue;
        pts[m++] = (spt){x, y, idx[i]};
        ylo = fmin(ylo, y), yhi = fmax(yhi, y);
    }
    if (m == 0) {
        fprintf(f, "<p class=\"note\">No key has a winner with a known size and figure.</p>\n");
        free(pts);
        return;
    }
    qsort(pts, m, sizeof *pts, cmp_spt);
    const char *unit = eff ? "% of the roofline" : bt__tview_unit(v0);
    static const char *xl[] = {"problem size: bytes moved, MB (log)",
                               "problem size: GFLOP (log)", "problem size: product of the sizes (log)"};
    char title[256], desc[512], ylab[64];
    snprintf(title, sizeof title, "%s on %s: the winner's %s against the problem size", v0->kernel,
             v0->device, eff ? "efficiency" : "throughput");
    snprintf(desc, sizeof desc, "%zu keys; one point per key with a winner, joined in size order.",
             m);
    snprintf(ylab, sizeof ylab, "winner, %s", unit);
    bt__chart c = {0};
    bt__chart_open(&c, f, id, title, desc);
    bt__axis_fit(&c.x, pts[0].x / 1.5, pts[m - 1].x * 1.5, true);
    bt__axis_fit(&c.y, eff ? 0 : ylo / 2, eff ? fmax(100, yhi) : yhi * 1.5, !eff);
    bt__chart_axes(&c, xl[how], ylab);
    fprintf(f, "<polyline class=\"sweepline\" points=\"");
    for (size_t i = 0; i < m; i++)
        fprintf(f, "%.1f,%.1f ", bt__chart_x(&c, pts[i].x), bt__chart_y(&c, pts[i].y));
    fprintf(f, "\"/>\n");
    if (peers) /* under the winners */
        peer_points(f, &c, views, pts, m, peers, eff);
    for (size_t i = 0; i < m; i++)
        sweep_point(f, &c, &views[pts[i].v], &pts[i], unit);
    bt__chart_close(&c);
    free(pts);
}
