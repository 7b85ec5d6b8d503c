/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chart_param.c — time against each parameter: one chart per parameter of the space, its values
 * in order along x, every measured config a point at its median (log y, with throughput on a
 * second axis) spread a little within its value's column; configs that failed sit in a strip
 * above the plot, coloured and named by status; the finalists ringed with their p20-p80 spread,
 * the winner large, the finals' noise band (the winner's median up to the margin a runner-up
 * needs not to tie) shaded, and the peers as dashed lines.
 */
#include "report/rep_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_VALUES 512

/* The parameter's distinct values over the configs, in increasing order. */
static int param_values(const bt__tview *v, const char *name, double *vals)
{
    int n = 0;
    for (size_t i = 0; i < v->n; i++) {
        double x = bt__jnum(json_object_get(bt__tview_cfg(v, i), "config"), name, NAN);
        if (isnan(x))
            continue;
        int j = 0;
        while (j < n && vals[j] < x)
            j++;
        if ((j < n && vals[j] == x) || n == MAX_VALUES)
            continue;
        memmove(vals + j + 1, vals + j, sizeof *vals * (size_t)(n - j));
        vals[j] = x;
        n++;
    }
    return n;
}

static int value_index(const double *vals, int n, double x)
{
    for (int j = 0; j < n; j++)
        if (vals[j] == x)
            return j;
    return -1;
}

typedef struct pctx {
    bt__chart c;
    const bt__tview *v;
    const char *pname;
    double vals[MAX_VALUES];
    int nv;
    int count[MAX_VALUES], seen[MAX_VALUES];
    double tdiv;       /* ms -> the chart's time unit */
    const char *tunit;
    double fail_y;     /* the failed strip */
    char lab[MAX_VALUES][24];
    const char *labs[MAX_VALUES];
} pctx;

/* Where config i's point goes along x: its value's column, spread by its rank in the column. */
static double point_x(pctx *P, size_t i, bool *ok)
{
    double x = bt__jnum(json_object_get(bt__tview_cfg(P->v, i), "config"), P->pname, NAN);
    int j = value_index(P->vals, P->nv, x);
    *ok = j >= 0;
    if (j < 0)
        return 0;
    int k = P->seen[j]++, m = P->count[j];
    return j + (m > 1 ? -0.3 + 0.6 * (k + 0.5) / m : 0);
}

static void point(pctx *P, size_t i)
{
    FILE *f = P->c.f;
    const json_t *x = bt__tview_cfg(P->v, i);
    bool in;
    double px = bt__chart_x(&P->c, point_x(P, i, &in));
    if (!in)
        return;
    const char *st = bt__jstr(x, "status", "?");
    bool ok = !strcmp(st, "ok"), win = (long)i == P->v->winner_i;
    bool fin = json_is_true(json_object_get(x, "finalist")) || (long)i == P->v->runner_i;
    char cfg[512], t[32];
    bt__jobj_text(json_object_get(x, "config"), " ", cfg, sizeof cfg);
    double ms = bt__tview_median(P->v, i);
    double py = ok ? bt__chart_y(&P->c, ms * P->tdiv) : P->fail_y;
    if (ok && fin) { /* the finalist's p20-p80 */
        double lo = bt__jnum(x, "p20_ms", ms), hi = bt__jnum(x, "p80_ms", ms);
        fprintf(f, "<line class=\"spread\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", px,
                bt__chart_y(&P->c, lo * P->tdiv), px, bt__chart_y(&P->c, hi * P->tdiv));
    }
    fprintf(f, "<circle class=\"pt st-%s%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" data-status=\"%s\" "
               "data-cfg=\"", ok ? "ok" : st, win ? " winner" : fin ? " finalist" : "", px, py,
            win ? 7 : fin ? 5 : 4, st);
    bt__esc(f, cfg);
    fprintf(f, "\"><title>");
    bt__esc(f, cfg);
    if (ok) {
        bt__fmt_num(ms * P->tdiv, t, sizeof t);
        fprintf(f, "%s: median %s %s", win ? " (winner)" : fin ? " (finalist)" : "", t, P->tunit);
        double q = bt__tview_thru(P->v, ms);
        if (q > 0) {
            bt__fmt_num(q, t, sizeof t);
            fprintf(f, ", %s %s", t, bt__tview_unit(P->v));
        }
    } else {
        fprintf(f, ": %s", st);
        const char *err = bt__jstr(x, "error", NULL);
        if (err) {
            fprintf(f, ": ");
            bt__esc(f, err);
        }
    }
    fprintf(f, "</title></circle>\n");
}

/* The finals' noise band: from the winner's median up to where a runner-up would tie. */
static void noise_band(pctx *P)
{
    const bt__tview *v = P->v;
    double nb = bt__jnum(v->winner, "noise_band", 0);
    if (v->winner_i < 0 || !(nb > 0))
        return;
    double wm = bt__tview_median(v, (size_t)v->winner_i) * P->tdiv;
    double y0 = bt__chart_y(&P->c, wm), y1 = bt__chart_y(&P->c, wm * (1 + nb));
    fprintf(P->c.f, "<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                    "<title>the finals' noise band: a config whose median is within %.2f%% of the "
                    "winner's ties with it</title></rect>\n",
            P->c.l, y1, P->c.w - P->c.l - P->c.r, fmax(y0 - y1, 1.0), nb * 100);
}

static void peer_lines(pctx *P, const bt__peer *peers, int np)
{
    for (int i = 0; i < np; i++) {
        double y = peers[i].time_ms * P->tdiv;
        if (y < P->c.y.lo || y > P->c.y.hi)
            continue;
        double py = bt__chart_y(&P->c, y);
        fprintf(P->c.f, "<line class=\"peerline pk%d\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                        "y2=\"%.1f\" data-peer=\"", peers[i].color, P->c.l, py, P->c.w - P->c.r, py);
        bt__esc(P->c.f, peers[i].name);
        /* labels alternate between the right and the left end, so that close lines stay legible */
        fprintf(P->c.f, "\"/><text class=\"note\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">",
                i % 2 ? P->c.l + 4 : P->c.w - P->c.r - 4, py - 4, i % 2 ? "start" : "end");
        bt__esc(P->c.f, peers[i].name);
        fprintf(P->c.f, "</text>\n");
    }
}

/* The time range of the ok configs and the peers, in ms. */
static void time_range(const bt__tview *v, const bt__peer *peers, int np, double *lo, double *hi)
{
    *lo = INFINITY, *hi = 0;
    for (size_t i = 0; i < v->n; i++)
        if (bt__tview_ok(v, i)) {
            const json_t *x = bt__tview_cfg(v, i);
            double m = bt__tview_median(v, i);
            *lo = fmin(*lo, fmin(m, bt__jnum(x, "p20_ms", m)));
            *hi = fmax(*hi, fmax(m, bt__jnum(x, "p80_ms", m)));
        }
    for (int i = 0; i < np; i++)
        *lo = fmin(*lo, peers[i].time_ms), *hi = fmax(*hi, peers[i].time_ms);
    if (!isfinite(*lo))
        *lo = 1e-3, *hi = 1;
}

static void one_param(FILE *f, const bt__tview *v, const char *name, int k, const bt__peer *peers,
                      int np)
{
    pctx *P = calloc(1, sizeof *P);
    if (!P)
        return;
    P->v = v, P->pname = name;
    P->nv = param_values(v, name, P->vals);
    for (int j = 0; j < P->nv; j++) {
        bt__fmt_num(P->vals[j], P->lab[j], sizeof P->lab[j]);
        P->labs[j] = P->lab[j];
    }
    for (size_t i = 0; i < v->n; i++) {
        int j = value_index(P->vals, P->nv,
                            bt__jnum(json_object_get(bt__tview_cfg(v, i), "config"), name, NAN));
        if (j >= 0)
            P->count[j]++;
    }
    double lo, hi;
    time_range(v, peers, np, &lo, &hi);
    P->tdiv = hi < 1 ? 1e3 : 1, P->tunit = hi < 1 ? "µs" : "ms";
    char id[64], title[512], desc[512], ylab[64];
    snprintf(id, sizeof id, "%s-p%d", v->id, k);
    snprintf(title, sizeof title, "Median time against %s: %s %s on %s", name, v->kernel,
             v->problem, v->device);
    snprintf(desc, sizeof desc, "One point per measured config (%zu), at its median time (log) "
             "over the values of %s; failed configs in the strip at the top.", v->n, name);
    P->c = (bt__chart){.w = 640, .h = 340, .l = 72, .r = 72, .t = 40, .b = 52,
                       .xcat = P->labs, .ncat = P->nv};
    bt__chart_open(&P->c, f, id, title, desc);
    P->c.x = (bt__axis){.lo = -0.5, .hi = P->nv - 0.5, .p0 = P->c.l, .p1 = P->c.w - P->c.r};
    bt__axis_fit(&P->c.y, lo * P->tdiv, hi * P->tdiv, true);
    snprintf(ylab, sizeof ylab, "median time, %s (log)", P->tunit);
    bt__chart_axes(&P->c, name, ylab);
    char q[64];
    snprintf(q, sizeof q, "%s", bt__tview_unit(v));
    double kthru = bt__tview_thru(v, 1.0) * P->tdiv; /* throughput = kthru / time in the unit */
    bt__chart_axis_inverse(&P->c, kthru, q);
    P->fail_y = P->c.t - 20;
    size_t nok = 0;
    for (size_t i = 0; i < v->n; i++)
        nok += bt__tview_ok(v, i);
    if (nok < v->n)
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">failed</text>\n",
                P->c.l - 6, P->fail_y + 4);
    noise_band(P);
    peer_lines(P, peers, np);
    for (size_t i = 0; i < v->n; i++)
        if ((long)i != v->winner_i)
            point(P, i);
    if (v->winner_i >= 0)
        point(P, (size_t)v->winner_i);
    bt__chart_close(&P->c);
    free(P);
}

void bt__chart_params(FILE *f, const bt__tview *v, const bt__peer *peers, int npeers)
{
    const json_t *first = json_object_get(bt__tview_cfg(v, 0), "config");
    const char *name;
    json_t *val;
    int k = 0;
    json_object_foreach((json_t *)first, name, val) {
        fprintf(f, "<figure class=\"param\">\n");
        one_param(f, v, name, k++, peers, npeers);
        fprintf(f, "<figcaption>Median time against <code>");
        bt__esc(f, name);
        fprintf(f, "</code>, every measured config a point.</figcaption>\n</figure>\n");
    }
}
