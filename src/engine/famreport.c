/* SPDX-License-Identifier: Apache-2.0 */
/*
 * famreport.c — the "Families" section of a front door's tune report (engine/fam.h), text and
 * JSON: the family that won and its margin over the best of the others, and for every family what
 * happened to it (measured with how many configs of what budget, its winner's median in its own
 * tune and in the interleaved finals; or why it did not run).
 */
#include "engine/fam.h"

#include <stdio.h>

static const char *verdict_text(const bt__famres_entry *e)
{
    static const char *const n[] = {"measured", "no source", "dtype", "condition", "no config",
                                    "cannot win"};
    return e->verdict == BT__FAM_RUN && !e->config[0] ? "failed" : n[e->verdict];
}

void bt__famres_write(const struct bt__famres *fr, FILE *f)
{
    fprintf(f, "\nFamilies of %s: ", fr->front);
    if (fr->winner < 0)
        fprintf(f, "no family produced a verified winner\n");
    else {
        const bt__famres_entry *w = &fr->e[fr->winner];
        int other = -1;
        for (int i = 0; i < fr->n; i++) {
            double t = fr->rounds ? fr->e[i].final_ms : fr->e[i].own_ms;
            double to = other < 0 ? 0 : fr->rounds ? fr->e[other].final_ms : fr->e[other].own_ms;
            if (i != fr->winner && t > 0 && (other < 0 || t < to))
                other = i;
        }
        if (other < 0)
            fprintf(f, "%s won (the only family measured)\n", w->name);
        else if (fr->tie)
            fprintf(f, "%s won, tied with %s within 1%% (%.1f%%; the interleaved finals)\n",
                    w->name, fr->e[other].name, fr->margin * 100);
        else
            fprintf(f, "%s won, %.2fx the speed of the best other family (%s; %d interleaved "
                       "rounds)\n",
                    w->name, 1 + fr->margin, fr->e[other].name, fr->rounds);
    }
    fprintf(f, "  %-18s %-10s %6s %8s %7s %11s %11s %9s\n", "family", "verdict", "budget",
            "measured", "tune", "own median", "final", "vs winner");
    for (int i = 0; i < fr->n; i++) {
        const bt__famres_entry *e = &fr->e[i];
        char budget[16] = "-", meas[16] = "-", secs[16] = "-", own[24] = "-", fin[24] = "-",
             vs[16] = "";
        if (e->verdict == BT__FAM_RUN) {
            snprintf(budget, sizeof budget, e->budget ? "%zu" : "all", e->budget);
            snprintf(meas, sizeof meas, "%zu", e->measured);
            snprintf(secs, sizeof secs, "%.2f s", e->tune_s);
        }
        if (e->own_ms > 0)
            snprintf(own, sizeof own, "%.4f ms", e->own_ms);
        if (e->final_ms > 0)
            snprintf(fin, sizeof fin, "%.4f ms", e->final_ms);
        double t = fr->rounds ? e->final_ms : e->own_ms;
        double tw = fr->winner < 0 ? 0 : fr->rounds ? fr->e[fr->winner].final_ms
                                                    : fr->e[fr->winner].own_ms;
        if (i == fr->winner)
            snprintf(vs, sizeof vs, "winner");
        else if (t > 0 && tw > 0)
            snprintf(vs, sizeof vs, "%+.1f%%", (t / tw - 1) * 100);
        fprintf(f, "  %-18s %-10s %6s %8s %7s %11s %11s %9s\n", e->name, verdict_text(e), budget,
                meas, secs, own, fin, vs);
        if (e->why[0])
            fprintf(f, "      %s\n", e->why);
        else if (e->config[0])
            fprintf(f, "      %s\n", e->config);
    }
    if (fr->rounds)
        fprintf(f, "  The families' finals: %d interleaved rounds, %.2f s.\n", fr->rounds,
                fr->finals_s);
    if (fr->stored[0])
        fprintf(f, "  The choice: %s.\n", fr->stored);
}

json_t *bt__famres_json(const struct bt__famres *fr)
{
    json_t *o = json_object(), *a = json_array();
    json_object_set_new(o, "front_door", json_string(fr->front));
    json_object_set_new(o, "winner", fr->winner >= 0 ? json_string(fr->e[fr->winner].name)
                                                      : json_null());
    json_object_set_new(o, "margin", json_real(fr->margin));
    json_object_set_new(o, "tie", json_boolean(fr->tie));
    json_object_set_new(o, "final_rounds", json_integer(fr->rounds));
    json_object_set_new(o, "finals_s", json_real(fr->finals_s));
    for (int i = 0; i < fr->n; i++) {
        const bt__famres_entry *e = &fr->e[i];
        json_t *x = json_object();
        json_object_set_new(x, "family", json_string(e->name));
        json_object_set_new(x, "verdict", json_string(verdict_text(e)));
        if (e->why[0])
            json_object_set_new(x, "reason", json_string(e->why));
        json_object_set_new(x, "budget", json_integer((json_int_t)e->budget));
        json_object_set_new(x, "measured", json_integer((json_int_t)e->measured));
        json_object_set_new(x, "tune_s", json_real(e->tune_s));
        json_object_set_new(x, "predicted_us", e->pred_us > 0 ? json_real(e->pred_us) : json_null());
        json_object_set_new(x, "prediction_is_floor", json_boolean(e->by_floor));
        json_object_set_new(x, "config", e->config[0] ? json_loads(e->config, 0, NULL) : json_null());
        json_object_set_new(x, "median_ms", e->own_ms > 0 ? json_real(e->own_ms) : json_null());
        json_object_set_new(x, "final_median_ms", e->final_ms > 0 ? json_real(e->final_ms)
                                                                   : json_null());
        json_array_append_new(a, x);
    }
    json_object_set_new(o, "families", a);
    json_object_set_new(o, "stored", fr->stored[0] ? json_string(fr->stored) : json_null());
    return o;
}
