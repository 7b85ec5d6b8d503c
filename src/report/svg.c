/* SPDX-License-Identifier: Apache-2.0 */
/*
 * svg.c — the charts' drawing: escaping for HTML, tick-label numbers, linear and log axes fitted
 * to tick bounds, and the chart frame (an inline SVG with a title and description for screen
 * readers, grid, ticks, labels, axis titles, a second axis for throughput against time).
 */
#include "report/rep_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void bt__esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            /* control characters (a compiler log's escapes) are not allowed in HTML text */
            if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
                fputc('?', f);
            else
                fputc(*s, f);
        }
    }
}

void bt__fmt_num(double v, char *buf, size_t size)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(buf, size, "%s", "–");
    else if (a == 0 || (a >= 1e-3 && a < 1e6)) {
        snprintf(buf, size, "%.3g", v);
        if (strchr(buf, 'e')) /* %.3g of 1e5..1e6 writes an exponent */
            snprintf(buf, size, "%.0f", v);
    } else {
        char m[32];
        int e = (int)floor(log10(a));
        snprintf(m, sizeof m, "%.2g", v / pow(10, e));
        snprintf(buf, size, "%s×10^%d", m, e);
        if (!strcmp(m, "1") || !strcmp(m, "-1"))
            snprintf(buf, size, "%s10^%d", v < 0 ? "-" : "", e);
    }
}

/* A nice linear step (1, 2 or 5 times a power of ten) for about n intervals over span. */
static double nice_step(double span, int n)
{
    double raw = span / n, p = pow(10, floor(log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* The mantissas of log ticks for an axis of d decades. */
static int log_mantissas(double d, const double **out)
{
    static const double m1[] = {1}, m3[] = {1, 2, 5},
                        m10[] = {1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9};
    if (d > 3.5) {
        *out = m1;
        return 1;
    }
    if (d > 1.2) {
        *out = m3;
        return 3;
    }
    *out = m10;
    return 10;
}

void bt__axis_fit(bt__axis *a, double lo, double hi, bool log)
{
    a->log = log;
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi))
        lo = hi = log ? 1 : 0;
    if (log) {
        if (lo <= 0)
            lo = hi > 0 ? hi / 10 : 1;
        if (hi <= lo)
            lo /= 2, hi = lo * 4;
        const double *m;
        int nm = log_mantissas(log10(hi / lo), &m);
        double p = pow(10, floor(log10(lo)));
        double b = p; /* the largest tick <= lo */
        for (int i = 0; i < nm; i++)
            if (m[i] * p <= lo * (1 + 1e-9))
                b = m[i] * p;
        a->lo = b;
        p = pow(10, floor(log10(hi)));
        double t = 10 * p; /* the smallest tick >= hi */
        for (int i = nm - 1; i >= 0; i--)
            if (m[i] * p >= hi * (1 - 1e-9))
                t = m[i] * p;
        a->hi = t;
    } else {
        if (hi - lo < 1e-12 * (fabs(hi) + 1))
            lo -= 1, hi += 1;
        double s = nice_step(hi - lo, 5);
        a->lo = floor(lo / s) * s;
        a->hi = ceil(hi / s) * s;
    }
}

double bt__axis_px(const bt__axis *a, double v)
{
    double f = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
                      : (v - a->lo) / (a->hi - a->lo);
    return a->p0 + f * (a->p1 - a->p0);
}

int bt__axis_ticks(const bt__axis *a, double *t, int max)
{
    int n = 0;
    if (a->log) {
        const double *m;
        int nm = log_mantissas(log10(a->hi / a->lo), &m);
        for (double p = pow(10, floor(log10(a->lo))); p <= a->hi * 1.0001 && n < max; p *= 10)
            for (int i = 0; i < nm && n < max; i++) {
                double v = m[i] * p;
                if (v >= a->lo * 0.9999 && v <= a->hi * 1.0001)
                    t[n++] = v;
            }
    } else {
        double s = nice_step(a->hi - a->lo, 5);
        for (double v = a->lo; v <= a->hi + s * 1e-6 && n < max; v += s)
            t[n++] = fabs(v) < s * 1e-9 ? 0 : v;
    }
    return n;
}

void bt__chart_open(bt__chart *c, FILE *f, const char *id, const char *title, const char *desc)
{
    c->f = f;
    if (!c->w)
        c->w = 640, c->h = 360, c->l = 72, c->r = 72, c->t = 16, c->b = 52;
    c->x.p0 = c->l, c->x.p1 = c->w - c->r;
    c->y.p0 = c->h - c->b, c->y.p1 = c->t;
    fprintf(f, "<svg class=\"chart\" id=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
               "aria-labelledby=\"%s-t %s-d\">\n<title id=\"%s-t\">", id, c->w, c->h, id, id, id);
    bt__esc(f, title);
    fprintf(f, "</title>\n<desc id=\"%s-d\">", id);
    bt__esc(f, desc);
    fprintf(f, "</desc>\n");
}

double bt__chart_x(const bt__chart *c, double v)
{
    return bt__axis_px(&c->x, v);
}

double bt__chart_y(const bt__chart *c, double v)
{
    return bt__axis_px(&c->y, v);
}

static void x_axis(const bt__chart *c, const char *label)
{
    FILE *f = c->f;
    double t[64];
    char s[48];
    int n, every = 1;
    if (c->xcat) { /* at most 24 labels: every k-th value */
        every = (c->ncat + 23) / 24;
        n = 0;
        for (int i = 0; i < c->ncat && n < 64; i += every)
            t[n++] = i;
    } else
        n = bt__axis_ticks(&c->x, t, 64);
    double y0 = c->h - c->b;
    for (int i = 0; i < n; i++) {
        double x = bt__chart_x(c, t[i]);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x,
                c->t, x, y0);
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x, y0 + 16);
        if (c->xcat)
            bt__esc(f, c->xcat[(int)t[i]]);
        else {
            bt__fmt_num(t[i], s, sizeof s);
            bt__esc(f, s);
        }
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
            (c->x.p0 + c->x.p1) / 2, c->h - 12);
    bt__esc(f, label);
    fprintf(f, "</text>\n");
}

static void y_axis(const bt__chart *c, const char *label)
{
    FILE *f = c->f;
    double t[64];
    char s[48];
    int n = bt__axis_ticks(&c->y, t, 64);
    for (int i = 0; i < n; i++) {
        double y = bt__chart_y(c, t[i]);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", c->l,
                y, c->w - c->r, y);
        bt__fmt_num(t[i], s, sizeof s);
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", c->l - 6,
                y + 4);
        bt__esc(f, s);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text class=\"label\" transform=\"translate(16 %.1f) rotate(-90)\" "
               "text-anchor=\"middle\">", (c->y.p0 + c->y.p1) / 2);
    bt__esc(f, label);
    fprintf(f, "</text>\n");
}

void bt__chart_axes(const bt__chart *c, const char *xlabel, const char *ylabel)
{
    fprintf(c->f, "<rect class=\"plot\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>\n",
            c->l, c->t, c->w - c->l - c->r, c->h - c->t - c->b);
    x_axis(c, xlabel);
    y_axis(c, ylabel);
}

void bt__chart_axis_inverse(const bt__chart *c, double k, const char *label)
{
    FILE *f = c->f;
    if (!(k > 0) || !c->y.log)
        return;
    bt__axis q = {.log = true, .lo = k / c->y.hi, .hi = k / c->y.lo};
    double t[64];
    char s[48];
    int n = bt__axis_ticks(&q, t, 64);
    double x = c->w - c->r;
    for (int i = 0; i < n; i++) {
        double y = bt__chart_y(c, k / t[i]);
        fprintf(f, "<line class=\"axis2\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x, y,
                x + 4, y);
        bt__fmt_num(t[i], s, sizeof s);
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\">", x + 6, y + 4);
        bt__esc(f, s);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "<text class=\"label\" transform=\"translate(%.1f %.1f) rotate(90)\" "
               "text-anchor=\"middle\">", c->w - 14, (c->y.p0 + c->y.p1) / 2);
    bt__esc(f, label);
    fprintf(f, "</text>\n");
}

void bt__chart_close(const bt__chart *c)
{
    fprintf(c->f, "</svg>\n");
}

void bt__peer_mark(FILE *f, double px, double py, const bt__peer *p, const char *what)
{
    fprintf(f, "<rect class=\"peer pk%d\" x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" "
               "transform=\"rotate(45 %.1f %.1f)\" data-peer=\"", p->color, px - 4.5, py - 4.5, px,
            py);
    bt__esc(f, p->name);
    fprintf(f, "\"><title>peer ");
    bt__esc(f, p->name);
    fprintf(f, ": ");
    bt__esc(f, what);
    fprintf(f, "</title></rect>\n");
}
