/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tables.c — the report's tables: the summary of a tune (winner, margin or tie, the search), the
 * candidate table as the text report has it, the failed configs with their errors and compiler
 * logs, the eliminated configs grouped by the rule that removed them with counts, the peers
 * against the winner, and the provenance block.
 */
#include "report/rep_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void num(FILE *f, double v)
{
    char b[48];
    bt__fmt_num(v, b, sizeof b);
    fputs(b, f);
}

void bt__table_summary(FILE *f, const bt__tview *v)
{
    fprintf(f, "<p class=\"summary\">");
    if (v->winner_i < 0) {
        fprintf(f, v->n ? "<strong>No winner</strong>: no config passed verification and measurement."
                        : "<strong>No winner</strong>: no config is valid for this problem (each "
                          "one's reasons are under Eliminated).");
    } else {
        const json_t *w = bt__tview_cfg(v, (size_t)v->winner_i);
        char cfg[512];
        bt__jobj_text(json_object_get(w, "config"), " ", cfg, sizeof cfg);
        double ms = bt__tview_median(v, (size_t)v->winner_i);
        fprintf(f, "Winner <code>");
        bt__esc(f, cfg);
        fprintf(f, "</code>: median %.2f µs", ms * 1e3);
        double q = bt__tview_thru(v, ms), e = bt__tview_eff(v, ms);
        if (q > 0)
            fprintf(f, ", %.4g %s", q, bt__tview_unit(v));
        if (e >= 0)
            fprintf(f, " = %.1f%% of the roofline", e * 100);
        double margin = bt__jnum(v->winner, "margin", -1), nb = bt__jnum(v->winner, "noise_band", -1);
        bool tie = json_is_true(json_object_get(v->winner, "tie"));
        if (margin >= 0 && (v->runner_i >= 0 || margin > 0)) {
            fprintf(f, tie ? "; a <strong>tie</strong> with the runner-up (margin %.2f%%"
                           : "; margin over the runner-up %.2f%%", margin * 100);
            if (nb >= 0)
                fprintf(f, tie ? " inside the noise band %.2f%%)" : " (noise band %.2f%%)", nb * 100);
            else
                fprintf(f, "%s", tie ? ", within the noise)" : "");
        }
        fprintf(f, ".");
    }
    const json_t *s = v->search;
    if (s)
        fprintf(f, " Search: %s, stopped on %s; %.0f measured of %.0f valid, %.0f from the store.",
                bt__jstr(s, "strategy", "?"), bt__jstr(s, "stop", "?"), bt__jnum(s, "measured", 0),
                bt__jnum(s, "valid", 0), bt__jnum(s, "from_store", 0));
    fprintf(f, "</p>\n");
}

/* A cell with a number in fmt, or a dash when the member is absent. */
static void cell(FILE *f, const json_t *x, const char *key, const char *fmt, double scale)
{
    json_t *y = json_object_get(x, key);
    if (json_is_number(y))
        fprintf(f, fmt, json_number_value(y) * scale);
    else
        fprintf(f, "<td class=\"num\">–</td>");
}

static void candidate_row(FILE *f, const bt__tview *v, size_t i, size_t rank)
{
    const json_t *x = bt__tview_cfg(v, i);
    char cfg[512];
    bt__jobj_text(json_object_get(x, "config"), " ", cfg, sizeof cfg);
    bool win = (long)i == v->winner_i;
    fprintf(f, "<tr%s data-cfg=\"", win ? " class=\"winner\"" : "");
    bt__esc(f, cfg);
    fprintf(f, "\"><td class=\"num\">%zu</td><td><code>", rank);
    bt__esc(f, cfg);
    fprintf(f, "</code></td>");
    cell(f, x, "smem_bytes", "<td class=\"num\">%.0f</td>", 1);
    double regs = bt__jnum(x, "regs_per_thread", -1);
    if (regs > 0)
        fprintf(f, "<td class=\"num\">%.0f</td>", regs);
    else
        cell(f, x, "regs_estimate", "<td class=\"num\">~%.0f</td>", 1);
    double bm = bt__jnum(x, "blocks_per_sm", -1), bx = bt__jnum(x, "blocks_per_sm_exact", -1);
    if (bm >= 0 && bx >= 0)
        fprintf(f, "<td class=\"num\">%.0f/%.0f%s</td>", bm, bx, bm != bx ? "!" : "");
    else
        cell(f, x, "blocks_per_sm", "<td class=\"num\">%.0f</td>", 1);
    cell(f, x, "occupancy", "<td class=\"num\">%.0f%%</td>", 100);
    cell(f, x, "median_ms", "<td class=\"num\">%.2f</td>", 1e3);
    double p20 = bt__jnum(x, "p20_ms", NAN), p80 = bt__jnum(x, "p80_ms", NAN);
    if (isfinite(p20) && isfinite(p80))
        fprintf(f, "<td class=\"num\">%.2f-%.2f</td>", p20 * 1e3, p80 * 1e3);
    else
        fprintf(f, "<td class=\"num\">–</td>");
    cell(f, x, "reps", "<td class=\"num\">%.0f</td>", 1);
    double q = bt__tview_thru(v, bt__tview_median(v, i)), e = bt__tview_eff(v, bt__tview_median(v, i));
    if (q > 0)
        fprintf(f, "<td class=\"num\">%.2f</td>", q);
    else
        fprintf(f, "<td class=\"num\">–</td>");
    if (e >= 0)
        fprintf(f, "<td class=\"num\">%.1f%%</td>", e * 100);
    else
        fprintf(f, "<td class=\"num\">n/a</td>");
    fprintf(f, "<td>%s%s</td></tr>\n",
            win ? "WINNER" : json_is_true(json_object_get(x, "from_store")) ? "ok (stored)" : "ok",
            !win && json_is_true(json_object_get(x, "finalist")) ? ", finalist" : "");
}

void bt__table_candidates(FILE *f, const bt__tview *v)
{
    size_t m;
    size_t *o = bt__tview_ok_order(v, &m);
    fprintf(f, "<table class=\"cands\"><caption>Candidates: the %zu configs that measured, fastest "
               "median first (median and p20-p80 of device-timed runs after a cache flush; regs "
               "from the compiler where the backend tells, ~ the model's estimate; blk/SM = "
               "model/exact, ! = they differ)</caption>\n<thead><tr><th scope=\"col\">#</th>"
               "<th scope=\"col\">config</th><th scope=\"col\">smem B</th><th scope=\"col\">regs</th>"
               "<th scope=\"col\">blk/SM</th><th scope=\"col\">occ</th><th scope=\"col\">median µs</th>"
               "<th scope=\"col\">p20-p80 µs</th><th scope=\"col\">reps</th><th scope=\"col\">%s</th>"
               "<th scope=\"col\">eff</th><th scope=\"col\">status</th></tr></thead>\n<tbody>\n",
            m, bt__tview_unit(v));
    for (size_t j = 0; o && j < m; j++)
        candidate_row(f, v, o[j], j + 1);
    fprintf(f, "</tbody></table>\n");
    free(o);
}

void bt__table_failed(FILE *f, const bt__tview *v)
{
    size_t nf = 0;
    for (size_t i = 0; i < v->n; i++)
        nf += !bt__tview_ok(v, i);
    if (!nf)
        return;
    fprintf(f, "<table class=\"failed\"><caption>Failed: %zu configs (never eligible to win)"
               "</caption>\n<thead><tr><th scope=\"col\">config</th><th scope=\"col\">status</th>"
               "<th scope=\"col\">error</th></tr></thead>\n<tbody>\n", nf);
    for (size_t i = 0; i < v->n; i++) {
        if (bt__tview_ok(v, i))
            continue;
        const json_t *x = bt__tview_cfg(v, i);
        char cfg[512];
        bt__jobj_text(json_object_get(x, "config"), " ", cfg, sizeof cfg);
        const char *st = bt__jstr(x, "status", "?"), *log = bt__jstr(x, "compile_log", NULL);
        fprintf(f, "<tr data-cfg=\"");
        bt__esc(f, cfg);
        fprintf(f, "\" data-status=\"");
        bt__esc(f, st);
        fprintf(f, "\"><td><code>");
        bt__esc(f, cfg);
        fprintf(f, "</code></td><td><span class=\"swatch st-");
        bt__esc(f, st);
        fprintf(f, "\"></span>");
        bt__esc(f, st);
        fprintf(f, "</td><td>");
        bt__esc(f, bt__jstr(x, "error", ""));
        if (log && log[0]) {
            fprintf(f, "<details><summary>compiler log</summary><pre>");
            bt__esc(f, log);
            fprintf(f, "</pre></details>");
        }
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</tbody></table>\n");
}

/* --- eliminated configs by rule ------------------------------------------------------------- */
typedef struct rgroup {
    char rule[160];
    size_t count;
    size_t first; /* the first config it removed */
} rgroup;

static int cmp_group(const void *a, const void *b)
{
    const rgroup *x = a, *y = b;
    return x->count != y->count ? (x->count < y->count ? 1 : -1) : strcmp(x->rule, y->rule);
}

/* Groups the listed eliminated configs by the rule of their first reason; *ng their count. */
static rgroup *group_rules(const json_t *el, size_t *ng)
{
    size_t n = json_array_size(el);
    rgroup *g = calloc(n ? n : 1, sizeof *g);
    *ng = 0;
    for (size_t i = 0; g && i < n; i++) {
        char rule[160];
        bt__reason_rule(bt__jstr(json_array_get(el, i), "reasons", ""), rule, sizeof rule);
        size_t j = 0;
        while (j < *ng && strcmp(g[j].rule, rule))
            j++;
        if (j == *ng) {
            snprintf(g[j].rule, sizeof g[j].rule, "%s", rule);
            g[j].first = i;
            (*ng)++;
        }
        g[j].count++;
    }
    if (g)
        qsort(g, *ng, sizeof *g, cmp_group);
    return g;
}

static void group_row(FILE *f, const rgroup *g, const json_t *el, size_t total)
{
    const json_t *x = json_array_get(el, g->first);
    char cfg[512];
    bt__jobj_text(json_object_get(x, "config"), " ", cfg, sizeof cfg);
    fprintf(f, "<tr data-rule=\"");
    bt__esc(f, g->rule);
    fprintf(f, "\" data-count=\"%zu\"><th scope=\"row\"><code>", g->count);
    bt__esc(f, g->rule);
    fprintf(f, "</code></th><td class=\"num\">%zu<span class=\"bar\" style=\"width:%.0fpx\">"
               "</span></td><td><code>", g->count, 120.0 * (double)g->count / (double)total);
    bt__esc(f, cfg);
    fprintf(f, "</code>: ");
    bt__esc(f, bt__jstr(x, "reasons", ""));
    fprintf(f, "</td></tr>\n");
}

void bt__table_eliminated(FILE *f, const bt__tview *v)
{
    size_t nl = json_array_size(v->elim);
    size_t more = (size_t)bt__jnum(v->doc, "eliminated_not_listed", 0);
    if (!nl && !more) {
        fprintf(f, "<p>The model eliminated no config before compiling.</p>\n");
        return;
    }
    size_t ng;
    rgroup *g = group_rules(v->elim, &ng);
    fprintf(f, "<table class=\"elim\"><caption>Eliminated by the model before compiling: %zu "
               "configs, grouped by the rule that removed each (the first it broke; a config may "
               "break more)</caption>\n<thead><tr><th scope=\"col\">rule</th><th scope=\"col\">"
               "configs</th><th scope=\"col\">the first it removed, with every reason</th></tr>"
               "</thead>\n<tbody>\n", nl + more);
    for (size_t j = 0; g && j < ng; j++)
        group_row(f, &g[j], v->elim, nl + more);
    if (more)
        fprintf(f, "<tr data-rule=\"(not listed)\" data-count=\"%zu\"><th scope=\"row\">not listed"
                   "</th><td class=\"num\">%zu</td><td>the plan keeps the first configs it "
                   "eliminates; 'blocktune plan' lists them all</td></tr>\n", more, more);
    fprintf(f, "</tbody></table>\n");
    free(g);
}

void bt__table_peers(FILE *f, const bt__tview *v, const bt__peer *peers, int np)
{
    if (np <= 0)
        return;
    double wm = v->winner_i >= 0 ? bt__tview_median(v, (size_t)v->winner_i) : NAN;
    fprintf(f, "<table class=\"peers\"><caption>Peers (from the peers file)</caption>\n<thead><tr>"
               "<th scope=\"col\">peer</th><th scope=\"col\">time µs</th><th scope=\"col\">%s</th>"
               "<th scope=\"col\">blocktune's winner against it</th><th scope=\"col\">note</th>"
               "</tr></thead>\n<tbody>\n", bt__tview_unit(v));
    for (int i = 0; i < np; i++) {
        const bt__peer *p = &peers[i];
        fprintf(f, "<tr data-peer=\"");
        bt__esc(f, p->name);
        fprintf(f, "\"><th scope=\"row\">");
        bt__esc(f, p->name);
        fprintf(f, "</th><td class=\"num\">%.2f", p->time_ms * 1e3);
        if (p->statistic) {
            fprintf(f, " (");
            bt__esc(f, p->statistic);
            fprintf(f, ")");
        }
        fprintf(f, "</td><td class=\"num\">");
        num(f, bt__tview_thru(v, p->time_ms));
        fprintf(f, "</td><td class=\"num\">");
        if (isfinite(wm))
            fprintf(f, "%+.1f%% time", (wm / p->time_ms - 1) * 100);
        else
            fprintf(f, "–");
        fprintf(f, "</td><td>");
        bt__esc(f, p->note ? p->note : "");
        fprintf(f, "</td></tr>\n");
    }
    fprintf(f, "</tbody></table>\n");
}

/* One row of the provenance list: a string member, or a number. */
static void prov_item(FILE *f, const char *label, const json_t *o, const char *key)
{
    const json_t *x = json_object_get(o, key);
    if (!x || json_is_null(x))
        return;
    fprintf(f, "<dt>");
    bt__esc(f, label);
    fprintf(f, "</dt><dd>");
    if (json_is_string(x))
        bt__esc(f, json_string_value(x));
    else if (json_is_number(x))
        num(f, json_number_value(x));
    else if (json_is_boolean(x))
        fprintf(f, "%s", json_is_true(x) ? "yes" : "no");
    fprintf(f, "</dd>");
}

void bt__table_provenance(FILE *f, const bt__tview *v, const char *source)
{
    fprintf(f, "<details class=\"prov\" open><summary>Provenance</summary><dl>");
    fprintf(f, "<dt>from</dt><dd>");
    bt__esc(f, source);
    fprintf(f, "</dd>");
    static const char *const pk[][2] = {
        {"device", "device"}, {"device id", "device_id"}, {"API", "api"}, {"driver", "driver"},
        {"compiler", "compiler"}, {"blocktune", "blocktune"}, {"source hash", "source_hash"},
        {"timestamp", "timestamp"}, {"warm-up ms", "warmup_ms"}, {"rep ms", "rep_ms"},
        {"seed", "seed"}};
    for (size_t i = 0; i < sizeof pk / sizeof pk[0]; i++)
        prov_item(f, pk[i][0], v->prov, pk[i][1]);
    const json_t *t = json_object_get(v->doc, "time"), *s = json_object_get(v->doc, "store");
    prov_item(f, "compile s", t, "compile_s");
    prov_item(f, "verify s", t, "verify_s");
    prov_item(f, "measure s", t, "measure_s");
    prov_item(f, "total s", t, "total_s");
    prov_item(f, "search rounds", v->search, "rounds");
    prov_item(f, "round size", v->search, "round_size");
    prov_item(f, "budget", v->search, "budget");
    prov_item(f, "time limit s", v->search, "time_limit_s");
    prov_item(f, "store", s, "path");
    prov_item(f, "rows stored", s, "stored");
    prov_item(f, "store writes failed", s, "failed");
    prov_item(f, "store error", s, "error");
    fprintf(f, "</dl></details>\n");
}
