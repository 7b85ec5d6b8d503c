/* SPDX-License-Identifier: Apache-2.0 */
/*
 * page.c — the HTML page of the report: the head (inline style, light and dark by
 * prefers-color-scheme, no external resource of any kind), a table of contents, a sweep section
 * per kernel and device with several keys, and a section per tune (summary, roofline, time against
 * each parameter with its legend, peers, candidates, failures, eliminations, provenance); a few
 * lines of our own script link a config's points and row on hover. Everything reads without it.
 */
#include "report/rep_int.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PEERS 16

static const char style[] =
    ":root{color-scheme:light dark;--bg:#fff;--fg:#1a1a1a;--muted:#666;--grid:#e4e4e4;"
    "--plot:#fafafa;--line:#bbb;--roof:#222;--ok:#2f6db5;--win:#e0a000;--band:rgba(224,160,0,.18);"
    "--compile_failed:#d2691e;--wrong_result:#c62828;--launch_failed:#7b1fa2;"
    "--resources_exceeded:#795548;--timed_out:#ad1457;--other:#757575;--peer:#2e7d32;"
    "--hl:#00a0a0;--rowwin:#fff4d6;--pk1:#8e24aa;--pk2:#00838f;--pk3:#6d4c41}\n"
    "@media (prefers-color-scheme:dark){:root{--bg:#15171a;--fg:#e4e4e4;--muted:#9aa0a6;"
    "--grid:#2c3035;--plot:#1b1e22;--line:#555;--roof:#ddd;--ok:#6fa8ff;--win:#ffc940;"
    "--band:rgba(255,201,64,.16);--compile_failed:#ff9d5c;--wrong_result:#ff6b6b;"
    "--launch_failed:#ce93d8;--resources_exceeded:#bcaaa4;--timed_out:#f48fb1;--other:#aaa;"
    "--peer:#81c784;--hl:#4dd0e1;--rowwin:#3a3220;--pk1:#e1a6ee;--pk2:#4dd0e1;--pk3:#d7b29d}}\n"
    "body{background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,'Segoe UI',"
    "Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:0 16px 48px}\n"
    "h1{font-size:1.6em;margin:.8em 0 .2em}h2{margin-top:2em;border-bottom:1px solid var(--grid)}"
    "h3{margin:1.4em 0 .4em}code,pre{font-family:ui-monospace,'DejaVu Sans Mono',monospace;"
    "font-size:.92em}pre{white-space:pre-wrap;max-height:18em;overflow:auto}\n"
    ".note,.meta,caption{color:var(--muted)}caption{text-align:left;padding:4px 0}"
    "figure{margin:0}figcaption{color:var(--muted);font-size:.9em}\n"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:12px}"
    "svg.chart{width:100%;height:auto;max-width:760px;font-size:12px}\n"
    "svg .plot{fill:var(--plot);stroke:var(--line)}svg .grid{stroke:var(--grid)}"
    "svg .axis2{stroke:var(--muted)}svg text{fill:var(--fg)}svg .tick{fill:var(--muted)}"
    "svg .label{font-size:13px}svg text.note{fill:var(--muted);font-size:11px}\n"
    "svg .roof{fill:none;stroke:var(--roof);stroke-width:2}svg .intensity{stroke:var(--muted);"
    "stroke-dasharray:4 3}svg .band{fill:var(--band)}svg .spread{stroke:var(--fg);"
    "stroke-width:1.5}svg .peerline{stroke:var(--peer);stroke-dasharray:6 4;stroke-width:1.5}"
    "svg .peer{fill:var(--peer);stroke:var(--bg)}svg .peer.pk1{fill:var(--pk1)}"
    "svg .peer.pk2{fill:var(--pk2)}svg .peer.pk3{fill:var(--pk3)}svg .peerline.pk1{stroke:var(--pk1)}"
    "svg .peerline.pk2{stroke:var(--pk2)}svg .peerline.pk3{stroke:var(--pk3)}svg .sweepline{fill:none;stroke:var(--ok);"
    "stroke-width:1.5}\n"
    ".pt{stroke:var(--bg);stroke-width:1;fill-opacity:.8}.st-ok{fill:var(--ok)}"
    ".pt.finalist{stroke:var(--fg);stroke-width:2}.pt.winner{fill:var(--win);stroke:var(--fg);"
    "stroke-width:2;fill-opacity:1}.pt.hl,tr.hl{outline:2px solid var(--hl)}"
    ".pt.hl{stroke:var(--hl);stroke-width:3}\n"
    "circle.pt:not(.st-ok){fill:none;stroke-width:2}"
    "circle.st-compile_failed{stroke:var(--compile_failed)}circle.st-wrong_result{stroke:var(--wrong_result)}"
    "circle.st-launch_failed{stroke:var(--launch_failed)}"
    "circle.st-resources_exceeded{stroke:var(--resources_exceeded)}circle.st-timed_out{stroke:var(--timed_out)}"
    "circle.st-invalid{stroke:var(--other)}circle.st-compile_failed{stroke-dasharray:3 2}"
    "circle.st-launch_failed{stroke-dasharray:1 2}circle.st-timed_out{stroke-dasharray:6 2 1 2}"
    "circle.st-resources_exceeded{stroke-dasharray:6 2}\n"
    ".swatch{display:inline-block;width:10px;height:10px;border-radius:50%;margin-right:5px;"
    "border:2px solid var(--other)}.swatch.st-ok{background:var(--ok);border-color:var(--ok)}"
    ".swatch.st-compile_failed{border-color:var(--compile_failed);border-style:dashed}"
    ".swatch.st-wrong_result{border-color:var(--wrong_result)}"
    ".swatch.st-launch_failed{border-color:var(--launch_failed);border-style:dotted}"
    ".swatch.st-resources_exceeded{border-color:var(--resources_exceeded);border-style:dashed}"
    ".swatch.st-timed_out{border-color:var(--timed_out);border-style:double}"
    ".swatch.winner{background:var(--win);border-color:var(--fg)}.swatch.finalist{border-color:var(--fg);"
    "background:var(--ok)}.swatch.band{border-radius:0;background:var(--band);border-color:var(--band)}"
    ".swatch.peer{border-radius:0;transform:rotate(45deg);background:var(--peer);border-color:var(--peer)}"
    ".swatch.peer.pk1{background:var(--pk1);border-color:var(--pk1)}"
    ".swatch.peer.pk2{background:var(--pk2);border-color:var(--pk2)}"
    ".swatch.peer.pk3{background:var(--pk3);border-color:var(--pk3)}\n"
    "ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 18px;font-size:.9em}\n"
    "table{border-collapse:collapse;margin:.6em 0;font-size:.9em}th,td{padding:3px 8px;"
    "border-bottom:1px solid var(--grid);text-align:left;vertical-align:top}td.num{text-align:right;"
    "font-variant-numeric:tabular-nums;white-space:nowrap}tr.winner{background:var(--rowwin)}\n"
    ".bar{display:inline-block;height:.7em;background:var(--ok);margin-left:6px;opacity:.6}"
    "dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}dt{color:var(--muted)}"
    "dd{margin:0;word-break:break-word}nav ul{columns:2;font-size:.92em}\n";

/* Hover or focus on a config's point or row marks the same config everywhere in its section. */
static const char script[] =
    "(function(){\n"
    "  function clear(){document.querySelectorAll('.hl').forEach(function(e){e.classList.remove('hl');});}\n"
    "  function mark(ev){\n"
    "    var t=ev.target&&ev.target.closest?ev.target.closest('[data-cfg]'):null;\n"
    "    clear();\n"
    "    if(!t)return;\n"
    "    var s=t.closest('section'),c=t.getAttribute('data-cfg');\n"
    "    if(!s)return;\n"
    "    s.querySelectorAll('[data-cfg]').forEach(function(e){if(e.getAttribute('data-cfg')===c)e.classList.add('hl');});\n"
    "  }\n"
    "  document.addEventListener('mouseover',mark);\n"
    "  document.addEventListener('focusin',mark);\n"
    "})();\n";

/* One legend entry per peer name (a diamond on the roofline, a dashed line over time). */
static void peer_legend(FILE *f, const bt__peer *peers, int n)
{
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(peers[j].name, peers[i].name);
        if (seen)
            continue;
        fprintf(f, "<li><span class=\"swatch peer pk%d\"></span>peer: ", peers[i].color);
        bt__esc(f, peers[i].name);
        fprintf(f, "</li>");
    }
}

/* The legend of a tune's parameter charts, with the count of each status. */
static void legend(FILE *f, const bt__tview *v, const bt__peer *peers, int npeers)
{
    const char *st[32];
    size_t cnt[32] = {0}, ns = 0;
    for (size_t i = 0; i < v->n; i++) {
        const char *s = bt__jstr(bt__tview_cfg(v, i), "status", "?");
        size_t j = 0;
        while (j < ns && strcmp(st[j], s))
            j++;
        if (j == ns && ns < 32)
            st[ns++] = s;
        if (j < ns)
            cnt[j]++;
    }
    fprintf(f, "<ul class=\"legend\" aria-label=\"legend\">");
    for (size_t j = 0; j < ns; j++) {
        fprintf(f, "<li data-status=\"");
        bt__esc(f, st[j]);
        fprintf(f, "\" data-count=\"%zu\"><span class=\"swatch st-", cnt[j]);
        bt__esc(f, st[j]);
        fprintf(f, "\"></span>");
        bt__esc(f, st[j]);
        fprintf(f, "%s: %zu</li>", strcmp(st[j], "ok") ? " (failed, in the top strip)" : "",
                cnt[j]);
    }
    bool fin = v->runner_i >= 0;
    for (size_t i = 0; i < v->n; i++)
        fin |= json_is_true(json_object_get(bt__tview_cfg(v, i), "finalist"));
    if (v->winner_i >= 0)
        fprintf(f, "<li><span class=\"swatch winner\"></span>winner</li>");
    if (fin)
        fprintf(f, "<li><span class=\"swatch finalist\"></span>finalist (re-measured; bar: "
                   "p20-p80)</li>");
    if (bt__jnum(v->winner, "noise_band", 0) > 0)
        fprintf(f, "<li><span class=\"swatch band\"></span>the finals' noise band</li>");
    peer_legend(f, peers, npeers);
    fprintf(f, "</ul>\n");
}

static void tune_section(FILE *f, const bt__tview *v, const char *source, const json_t *peers)
{
    bt__peer pp[MAX_PEERS];
    int np = peers ? bt__peers_match(peers, v, pp, MAX_PEERS) : 0;
    fprintf(f, "<section class=\"tune\" id=\"%s\" data-kernel=\"", v->id);
    bt__esc(f, v->kernel);
    fprintf(f, "\" data-key=\"");
    bt__esc(f, v->problem);
    fprintf(f, "\" data-measured=\"%zu\">\n<h2>", v->n);
    bt__esc(f, v->kernel);
    fprintf(f, " <code>");
    bt__esc(f, v->problem);
    fprintf(f, "</code> on ");
    bt__esc(f, v->device);
    fprintf(f, "</h2>\n");
    const char *note = bt__jstr(v->doc, "note", NULL);
    if (note) {
        fprintf(f, "<p class=\"note\">");
        bt__esc(f, note);
        fprintf(f, "</p>\n");
    }
    bt__table_summary(f, v);
    fprintf(f, "<h3>Roofline</h3>\n<figure>\n");
    bt__chart_roofline(f, v, pp, np);
    fprintf(f, "<figcaption>The device's roofline (log-log) with the kernel's intensity; each "
               "config that measured is a point, the winner large, finalists ringed%s.</figcaption>"
               "\n</figure>\n", np ? ", peers as diamonds" : "");
    if (v->n) {
        fprintf(f, "<h3>Time against each parameter</h3>\n");
        legend(f, v, pp, np);
        fprintf(f, "<div class=\"grid2\">\n");
        bt__chart_params(f, v, pp, np);
        fprintf(f, "</div>\n");
    } else
        fprintf(f, "<p>No config was measured.</p>\n");
    if (np) {
        fprintf(f, "<h3>Peers</h3>\n");
        bt__table_peers(f, v, pp, np);
    }
    fprintf(f, "<h3>Candidates</h3>\n");
    bt__table_candidates(f, v);
    bt__table_failed(f, v);
    fprintf(f, "<h3>Eliminated</h3>\n");
    bt__table_eliminated(f, v);
    bt__table_provenance(f, v, source);
    fprintf(f, "</section>\n");
}

/* The sweep's legend: the winners, and each peer that has a point. */
static void sweep_legend(FILE *f, const bt__tview *v, const size_t *idx, size_t m,
                         const json_t *peers)
{
    bt__peer all[MAX_PEERS], one[MAX_PEERS];
    int na = 0;
    for (size_t i = 0; peers && i < m; i++) {
        int n = bt__peers_match(peers, &v[idx[i]], one, MAX_PEERS);
        for (int j = 0; j < n && na < MAX_PEERS; j++)
            all[na++] = one[j];
    }
    fprintf(f, "<ul class=\"legend\" aria-label=\"legend\"><li><span class=\"swatch winner\">"
               "</span>the winner of a key (joined in size order)</li>");
    peer_legend(f, all, na);
    fprintf(f, "</ul>\n");
}

/* Keys of one kernel on one device with the same dtype and size names: a sweep. */
static bool same_sweep(const bt__tview *a, const bt__tview *b)
{
    if (strcmp(a->kernel, b->kernel) || strcmp(a->device, b->device) || strcmp(a->dtype, b->dtype))
        return false;
    const json_t *pa = json_object_get(a->doc, "problem"), *pb = json_object_get(b->doc, "problem");
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)pa, k, x) if (!json_object_get(pb, k)) return false;
    return json_object_size(pa) == json_object_size(pb);
}

/* A sweep's name: "KERNEL DTYPE on DEVICE" (no dtype when the problem has none). */
static void sweep_name(FILE *f, const bt__tview *v)
{
    bt__esc(f, v->kernel);
    if (v->dtype && v->dtype[0]) {
        fputc(' ', f);
        bt__esc(f, v->dtype);
    }
    fprintf(f, " on ");
    bt__esc(f, v->device);
}

/* The sweeps: each group of 2 or more views that belong together, in the order of its first. */
static void sweeps(FILE *f, const bt__tview *v, size_t n, const json_t *peers, bool toc)
{
    size_t *idx = malloc(sizeof *idx * (n ? n : 1));
    bool *done = calloc(n ? n : 1, sizeof *done);
    int ns = 0;
    for (size_t i = 0; idx && done && i < n; i++) {
        if (done[i])
            continue;
        size_t m = 0;
        for (size_t j = i; j < n; j++)
            if (!done[j] && same_sweep(&v[i], &v[j]))
                idx[m++] = j, done[j] = true;
        if (m < 2)
            continue;
        ns++;
        if (toc) {
            fprintf(f, "<li><a href=\"#s%d\">sweep: ", ns);
            sweep_name(f, &v[i]);
            fprintf(f, " (%zu keys)</a></li>\n", m);
            continue;
        }
        char id[32];
        snprintf(id, sizeof id, "s%d", ns);
        fprintf(f, "<section class=\"sweep\" id=\"%s\" data-keys=\"%zu\">\n<h2>Sweep: ", id, m);
        sweep_name(f, &v[i]);
        fprintf(f, ", %zu keys</h2>\n<figure>\n", m);
        bt__chart_sweep(f, v, idx, m, peers, id);
        fprintf(f, "<figcaption>The winner of each key against the problem size.</figcaption>"
                   "\n</figure>\n");
        sweep_legend(f, v, idx, m, peers);
        fprintf(f, "</section>\n");
    }
    free(idx);
    free(done);
}

static void head(FILE *f, const bt__tview *v, size_t n, const char *title)
{
    fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
               "<meta name=\"color-scheme\" content=\"light dark\">\n"
               "<meta name=\"generator\" content=\"blocktune %s\">\n<title>", bt_version());
    if (title)
        bt__esc(f, title);
    else if (n == 1) {
        fprintf(f, "blocktune: ");
        bt__esc(f, v[0].kernel);
        fprintf(f, " ");
        bt__esc(f, v[0].problem);
        fprintf(f, " on ");
        bt__esc(f, v[0].device);
    } else
        fprintf(f, "blocktune report: %zu tunes", n);
    fprintf(f, "</title>\n<style>\n%s</style>\n</head>\n<body>\n<header>\n<h1>", style);
    bt__esc(f, title ? title : "blocktune report");
    fprintf(f, "</h1>\n<p class=\"meta\">%zu tune%s, written by blocktune %s. Hover a point for its "
               "numbers; docs/report.md says how to read each chart.</p>\n</header>\n",
            n, n == 1 ? "" : "s", bt_version());
}

static void toc(FILE *f, const bt__tview *v, size_t n, const json_t *peers)
{
    fprintf(f, "<nav aria-label=\"contents\"><ul>\n");
    sweeps(f, v, n, peers, true);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<li><a href=\"#%s\">", v[i].id);
        bt__esc(f, v[i].kernel);
        fprintf(f, " ");
        bt__esc(f, v[i].problem);
        fprintf(f, " on ");
        bt__esc(f, v[i].device);
        fprintf(f, "</a></li>\n");
    }
    fprintf(f, "</ul></nav>\n");
}

bt_status bt__report_html(const bt__report_doc *docs, size_t n, const bt__report_opts *o, FILE *f,
                          bt_diag *diag)
{
    (void)diag;
    bt__tview *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return BT_NOMEM;
    for (size_t i = 0; i < n; i++)
        bt__tview_init(&v[i], docs[i].doc, i);
    const json_t *peers = o ? o->peers : NULL;
    head(f, v, n, o ? o->title : NULL);
    if (n > 1)
        toc(f, v, n, peers);
    fprintf(f, "<main>\n");
    sweeps(f, v, n, peers, false);
    for (size_t i = 0; i < n; i++)
        tune_section(f, &v[i], docs[i].source, peers);
    fprintf(f, "</main>\n<script>\n%s</script>\n</body>\n</html>\n", script);
    free(v);
    return ferror(f) ? BT_IO : BT_OK;
}
