/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chart_roof.c — the roofline of the device (log-log): attainable FLOP/s against arithmetic
 * intensity (FLOP/B), the memory roof (bandwidth × intensity) up to the ridge and the compute
 * roof (the peak) after it; the kernel's intensity as a vertical line; every config that measured
 * as a point at the FLOP/s its median reaches (the winner and the other finalists marked); the
 * peers' points at their own intensity. Without the device's peaks no roof is drawn, and the chart
 * says so.
 */
#include "report/rep_int.h"

#include <math.h>
#include <string.h>

/* FLOP/s in the chart's unit: GFLOP/s, or TFLOP/s from 1 TFLOP/s up. */
typedef struct unit {
    double div;
    const char *name;
} unit;

static double point_perf(const bt__tview *v, double median_ms, const unit *u)
{
    return v->flops / (median_ms * 1e-3) / u->div;
}

static void roof_lines(const bt__chart *c, const bt__tview *v, const unit *u)
{
    FILE *f = c->f;
    double ridge = v->peak_tflops * 1e3 / v->bw_gbps; /* FLOP/B */
    double peak = v->peak_tflops * 1e12 / u->div;
    double x0 = c->x.lo, x1 = c->x.hi;
    double xr = ridge < x0 ? x0 : ridge > x1 ? x1 : ridge;
    double y0 = v->bw_gbps * 1e9 * x0 / u->div;
    fprintf(f, "<polyline class=\"roof\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
            bt__chart_x(c, x0), bt__chart_y(c, y0 < c->y.lo ? c->y.lo : y0), bt__chart_x(c, xr),
            bt__chart_y(c, fmin(peak, v->bw_gbps * 1e9 * xr / u->div)), bt__chart_x(c, x1),
            bt__chart_y(c, peak));
    char a[32], b[32];
    bt__fmt_num(v->bw_gbps, a, sizeof a);
    bt__fmt_num(peak, b, sizeof b);
    fprintf(f, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\">peak %s %s %s</text>\n",
            bt__chart_x(c, xr) + 4, bt__chart_y(c, peak) - 6,
            bt__jstr(v->roof, "peak", ""), b, u->name);
    fprintf(f, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\">memory %s GB/s</text>\n",
            c->x.p0 + 6, bt__chart_y(c, fmax(y0, c->y.lo)) - 8, a);
}

/* The range of x (intensity) and y (FLOP/s in u) to show. */
static void ranges(const bt__tview *v, const bt__peer *p, int np, const unit *u, double *xl,
                   double *xh, double *yl, double *yh)
{
    *xl = *xh = v->intensity;
    *yl = INFINITY, *yh = 0;
    for (size_t i = 0; i < v->n; i++)
        if (bt__tview_ok(v, i)) {
            double y = point_perf(v, bt__tview_median(v, i), u);
            *yl = fmin(*yl, y), *yh = fmax(*yh, y);
        }
    for (int i = 0; i < np; i++) {
        if (!(p[i].flops > 0 && p[i].bytes > 0))
            continue;
        double in = p[i].flops / p[i].bytes, y = p[i].flops / (p[i].time_ms * 1e-3) / u->div;
        *xl = fmin(*xl, in), *xh = fmax(*xh, in), *yl = fmin(*yl, y), *yh = fmax(*yh, y);
    }
    if (v->known) {
        double ridge = v->peak_tflops * 1e3 / v->bw_gbps;
        *xl = fmin(*xl, ridge), *xh = fmax(*xh, ridge);
        *yh = fmax(*yh, v->peak_tflops * 1e12 / u->div);
    }
    *xl /= 4, *xh *= 4, *yl /= 3, *yh *= 2;
}

/* One config's point: the winner large, the other finalists ringed. */
static void config_point(const bt__chart *c, const bt__tview *v, size_t i, const unit *u)
{
    const json_t *x = bt__tview_cfg(v, i);
    double ms = bt__tview_median(v, i), y = point_perf(v, ms, u);
    char cfg[512], yv[32], ts[32];
    bt__jobj_text(json_object_get(x, "config"), " ", cfg, sizeof cfg);
    bool win = (long)i == v->winner_i, fin = json_is_true(json_object_get(x, "finalist")) ||
                                                  (long)i == v->runner_i;
    bt__fmt_num(y, yv, sizeof yv);
    bt__fmt_num(ms * 1e3, ts, sizeof ts);
    fprintf(c->f, "<circle class=\"pt st-ok%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" "
                  "data-status=\"ok\" data-cfg=\"",
            win ? " winner" : fin ? " finalist" : "", bt__chart_x(c, v->intensity),
            bt__chart_y(c, y), win ? 7 : fin ? 5 : 3);
    bt__esc(c->f, cfg);
    fprintf(c->f, "\"><title>");
    bt__esc(c->f, cfg);
    fprintf(c->f, "%s: %s µs, %s %s", win ? " (winner)" : fin ? " (finalist)" : "", ts, yv,
            u->name);
    double e = bt__tview_eff(v, ms);
    if (e >= 0)
        fprintf(c->f, ", %.1f%% of the roofline", e * 100);
    fprintf(c->f, "</title></circle>\n");
}

static void peer_point(const bt__chart *c, const bt__peer *p, const unit *u)
{
    double in = p->flops / p->bytes, y = p->flops / (p->time_ms * 1e-3) / u->div;
    char yv[32], ts[32], what[96];
    bt__fmt_num(y, yv, sizeof yv);
    bt__fmt_num(p->time_ms * 1e3, ts, sizeof ts);
    snprintf(what, sizeof what, "%s µs, %s %s", ts, yv, u->name);
    bt__peer_mark(c->f, bt__chart_x(c, in), bt__chart_y(c, y), p, what);
}

void bt__chart_roofline(FILE *f, const bt__tview *v, const bt__peer *peers, int npeers)
{
    if (!(v->flops > 0 && v->bytes > 0)) {
        fprintf(f, "<p class=\"note\">No roofline: the document has no FLOP and byte counts.</p>\n");
        return;
    }
    double xl, xh, yl, yh;
    unit u = {1e9, "GFLOP/s"};
    ranges(v, peers, npeers, &u, &xl, &xh, &yl, &yh);
    if (yh / 2 >= 1e3)
        u = (unit){1e12, "TFLOP/s"}, yl /= 1e3, yh /= 1e3;
    if (!isfinite(yl)) /* nothing measured: show around the roof or the intensity */
        yl = yh > 0 ? yh / 1e4 : 1e-3, yh = yh > 0 ? yh : 1;
    char id[48], title[512], desc[512];
    snprintf(id, sizeof id, "%s-roof", v->id);
    snprintf(title, sizeof title, "Roofline of %s: %s %s", v->device, v->kernel, v->problem);
    snprintf(desc, sizeof desc, "Log-log: attainable %s against arithmetic intensity in FLOP per "
             "byte. The kernel's intensity is %.3g FLOP/B; each measured config is a point at the "
             "FLOP rate its median reaches.%s", u.name, v->intensity,
             v->known ? "" : " The device's peaks are unknown, so no roof is drawn.");
    bt__chart c = {0};
    bt__chart_open(&c, f, id, title, desc);
    bt__axis_fit(&c.x, xl, xh, true);
    bt__axis_fit(&c.y, yl, yh, true);
    char ylab[64];
    snprintf(ylab, sizeof ylab, "attainable %s (log)", u.name);
    bt__chart_axes(&c, "arithmetic intensity, FLOP/B (log)", ylab);
    if (v->known)
        roof_lines(&c, v, &u);
    else
        fprintf(f, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\">device peaks unknown: no roof "
                   "drawn</text>\n", c.l + 8, c.t + 16);
    double kx = bt__chart_x(&c, v->intensity);
    fprintf(f, "<line class=\"intensity\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<text class=\"note\" x=\"%.1f\" y=\"%.1f\">%s: %.3g FLOP/B</text>\n",
            kx, c.t, kx, c.h - c.b, kx + 4, c.h - c.b - 6, v->kernel, v->intensity);
    for (size_t i = 0; i < v->n; i++)
        if (bt__tview_ok(v, i) && (long)i != v->winner_i)
            config_point(&c, v, i, &u);
    for (int i = 0; i < npeers; i++)
        if (peers[i].flops > 0 && peers[i].bytes > 0)
            peer_point(&c, &peers[i], &u);
    if (v->winner_i >= 0 && bt__tview_ok(v, (size_t)v->winner_i)) /* the winner on top */
        config_point(&c, v, (size_t)v->winner_i, &u);
    bt__chart_close(&c);
}
