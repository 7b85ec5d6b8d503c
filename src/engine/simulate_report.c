/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simulate_report.c — the writers of a bt_simulation (api_simulate.c): per recorded space a
 * Markdown table of every strategy (measurements to within 2/5/10 % of the best, median and p90,
 * the share of runs that got within 5 %, the best found at fixed budgets, simulated time), the
 * verdict against random sampling, a summary table over several spaces; or one JSON document.
 */
#include "engine/simulation.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *basename_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* --- formatting ------------------------------------------------------------------------------ */
/* Set with a time limit: a run that never got there may have stopped on time, not on the
 * budget. (Set by the writers before they format, from the simulation's options.) */
static _Thread_local bool time_limited;

static char *fmt_evals(uint64_t v, uint64_t budget, char *buf, size_t n)
{
    if (v == UINT64_MAX && time_limited)
        snprintf(buf, n, "never");
    else if (v == UINT64_MAX)
        snprintf(buf, n, ">%llu", (unsigned long long)budget);
    else
        snprintf(buf, n, "%llu", (unsigned long long)v);
    return buf;
}

static char *fmt_pct(double v, char *buf, size_t n)
{
    if (isnan(v))
        snprintf(buf, n, "-");
    else if (isinf(v))
        snprintf(buf, n, "none");
    else
        snprintf(buf, n, "%.1f%%", v);
    return buf;
}

static char *fmt_time(double s, char *buf, size_t n)
{
    if (isinf(s))
        snprintf(buf, n, "never");
    else if (s < 120)
        snprintf(buf, n, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.1f min", s / 60);
    else
        snprintf(buf, n, "%.1f h", s / 3600);
    return buf;
}

static void json_u64_or_null(FILE *f, uint64_t v)
{
    if (v == UINT64_MAX)
        fprintf(f, "null");
    else
        fprintf(f, "%llu", (unsigned long long)v);
}

static void json_num_or_null(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.9g", v);
    else
        fprintf(f, "null");
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* --- one space -------------------------------------------------------------------------------- */

static void print_space_md(FILE *f, const bt__sim_space *sp, const bt__sim_options *o)
{
    const char *path = sp->name;
    const bt__sim_space_info *info = &sp->info;
    const bt__sim_row *rows = sp->rows;
    size_t nrows = sp->nrows;
    char a[64], b[64], t[64];
    fprintf(f, "## %s\n\n", basename_of(path));
    fprintf(f, "%s on %s: %llu recorded configs of %llu (%llu fail), best %.4g ms; configs within "
           "2/5/10%% of the best: %llu/%llu/%llu; random sampling expects %.0f/%.0f/%.0f "
           "measurements to find one.\n",
           sp->kernel[0] ? sp->kernel : "?", sp->device[0] ? sp->device : "?",
           (unsigned long long)info->recorded, (unsigned long long)info->total,
           (unsigned long long)info->failed, info->best_ms, (unsigned long long)info->within[0],
           (unsigned long long)info->within[1], (unsigned long long)info->within[2],
           info->random_expect[0], info->random_expect[1], info->random_expect[2]);
    uint64_t budget = o->budget && o->budget < info->recorded ? o->budget : info->recorded;
    fprintf(f, "%llu runs per strategy (seeds %llu..%llu), budget %llu measurements",
           (unsigned long long)o->runs, (unsigned long long)o->seed,
           (unsigned long long)(o->seed + o->runs - 1), (unsigned long long)budget);
    if (o->time_limit_s > 0)
        fprintf(f, ", time limit %s simulated", fmt_time(o->time_limit_s, t, sizeof t));
    fprintf(f, ".\n\n");
    fprintf(f, "| strategy | to 2%%: median | p90 | to 5%%: median | p90 | to 10%%: median | p90 "
           "| within 5%% | best @10 | @25 | @50 | @100 | @200 | @500 | @1000 | time to 5%% |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (size_t i = 0; i < nrows; i++) {
        const bt__sim_row *r = &rows[i];
        if (r->st != BT_OK) {
            fprintf(f, "| %s | %s |||||||||||||||\n", r->s->name, r->why);
            continue;
        }
        const bt__sim_stats *s = &r->stats;
        fprintf(f, "| %s ", r->s->name);
        for (int k = 0; k < BT__SIM_NTHRESH; k++)
            fprintf(f, "| %s | %s ", fmt_evals(s->evals_med[k], s->budget, a, sizeof a),
                   fmt_evals(s->evals_p90[k], s->budget, b, sizeof b));
        fprintf(f, "| %.0f%% ", s->success[1] * 100);
        for (int k = 0; k < BT__SIM_NBUDGETS; k++)
            fprintf(f, "| %s ", fmt_pct(s->best_at_pct[k], a, sizeof a));
        fprintf(f, "| %s |\n", fmt_time(s->time_med[1], t, sizeof t));
    }
    /* Verdict: the best strategy against random, at 5%. */
    const bt__sim_row *rnd = NULL, *best = NULL;
    for (size_t i = 0; i < nrows; i++) {
        if (rows[i].st != BT_OK)
            continue;
        if (!strcmp(rows[i].s->name, "random"))
            rnd = &rows[i];
        else if (strcmp(rows[i].s->name, "exhaustive") &&
                 (!best || rows[i].stats.evals_med[1] < best->stats.evals_med[1]))
            best = &rows[i];
    }
    if (rnd && best) {
        uint64_t rm = rnd->stats.evals_med[1], bm = best->stats.evals_med[1];
        fprintf(f, "\nTo within 5%%: best strategy %s, median %s measurements; random %s",
               best->s->name, fmt_evals(bm, best->stats.budget, a, sizeof a),
               fmt_evals(rm, rnd->stats.budget, b, sizeof b));
        if (bm != UINT64_MAX && rm != UINT64_MAX) {
            double ratio = (double)bm / (double)rm;
            fprintf(f, " (ratio %.3f; target <= 0.25: %s)", ratio,
                   ratio <= 0.25        ? "met"
                   : (double)rm / 4 < 1 ? "not met: impossible, random needs under 4 measurements"
                                        : "NOT met");
        }
        fprintf(f, ".\n");
    }
    fprintf(f, "\n");
}


/* "name ratio: met" for a strategy's median to 5% against random's. */
static void print_ratio_cell(FILE *f, const bt__sim_row *best, const bt__sim_row *rnd)
{
    uint64_t rm = rnd->stats.evals_med[1];
    if (!best || best->stats.evals_med[1] == UINT64_MAX) {
        fprintf(f, " - |");
        return;
    }
    uint64_t bm = best->stats.evals_med[1];
    if (rm == UINT64_MAX) { /* random never got there: the ratio is below bm / budget */
        fprintf(f, " %s < %.2f: %s |", best->s->name, (double)bm / (double)rnd->stats.budget,
               (double)bm * 4 <= (double)rnd->stats.budget ? "met" : "unknown (raise --budget)");
        return;
    }
    double ratio = (double)bm / (double)rm;
    fprintf(f, " %s %.2f: %s |", best->s->name, ratio,
           ratio <= 0.25        ? "met"
           : (double)rm / 4 < 1 ? "impossible (< 1)"
                                : "not met");
}

/* One table over all spaces: median (p90) measurements to within 5% per strategy, and whether
 * the best non-exhaustive strategy needs at most 1/4 of random sampling's median. */
static void print_summary_md(FILE *f, const bt__sim_space *sum, int nspaces)
{
    char a[32], b[32];
    fprintf(f, "## Summary: measurements to get within 5%% of the best, median (p90)\n\n");
    fprintf(f, "| strategy |");
    for (int s = 0; s < nspaces; s++)
        fprintf(f, " %s |", basename_of(sum[s].name));
    fprintf(f, "\n|---|");
    for (int s = 0; s < nspaces; s++)
        fprintf(f, "--:|");
    fprintf(f, "\n");
    for (size_t i = 0; i < sum[0].nrows; i++) {
        fprintf(f, "| %s |", sum[0].rows[i].s->name);
        for (int s = 0; s < nspaces; s++) {
            const bt__sim_row *r = &sum[s].rows[i];
            if (r->st != BT_OK)
                fprintf(f, " no model |");
            else
                fprintf(f, " %s (%s) |", fmt_evals(r->stats.evals_med[1], r->stats.budget, a, sizeof a),
                       fmt_evals(r->stats.evals_p90[1], r->stats.budget, b, sizeof b));
        }
        fprintf(f, "\n");
    }
    /* The verdict row, when random was run. */
    size_t ri = SIZE_MAX;
    for (size_t i = 0; i < sum[0].nrows; i++)
        if (!strcmp(sum[0].rows[i].s->name, "random"))
            ri = i;
    if (ri == SIZE_MAX) {
        fprintf(f, "\n");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the best strategy per space; pass 1: the default strategy for large spaces */
        if (pass == 0)
            fprintf(f, "| **best / random** |");
        else
            fprintf(f, "\n| **default (%s) / random** |", BT__SEARCH_DEFAULT_LARGE);
        for (int s = 0; s < nspaces; s++) {
            const bt__sim_row *rnd = &sum[s].rows[ri], *best = NULL;
            for (size_t i = 0; i < sum[s].nrows; i++) {
                const bt__sim_row *r = &sum[s].rows[i];
                if (r->st != BT_OK || i == ri || !strcmp(r->s->name, "exhaustive"))
                    continue;
                if (pass == 1 ? !strcmp(r->s->name, BT__SEARCH_DEFAULT_LARGE)
                              : !best || r->stats.evals_med[1] < best->stats.evals_med[1])
                    best = r;
            }
            print_ratio_cell(f, best, rnd);
        }
    }
    fprintf(f, "\n\nTarget: the best strategy needs at most 1/4 of the measurements random sampling "
           "needs (medians).\n");
}

static void print_space_json(FILE *f, const bt__sim_space *sp, const bt__sim_options *o,
                             bool first)
{
    const char *path = sp->name;
    const bt__sim_space_info *info = &sp->info;
    const bt__sim_row *rows = sp->rows;
    size_t nrows = sp->nrows;
    fprintf(f, "%s  {\"space\": ", first ? "" : ",\n");
    json_string(f, basename_of(path));
    fprintf(f, ", \"path\": ");
    json_string(f, path);
    fprintf(f, ", \"kernel\": ");
    json_string(f, sp->kernel);
    fprintf(f, ", \"device\": ");
    json_string(f, sp->device);
    fprintf(f, ",\n   \"configs\": %llu, \"recorded\": %llu, \"failed\": %llu, \"best_ms\": ",
            (unsigned long long)info->total, (unsigned long long)info->recorded,
            (unsigned long long)info->failed);
    json_num_or_null(f, info->best_ms);
    fprintf(f, ", \"runs\": %llu, \"seed\": %llu, \"time_limit_s\": ", (unsigned long long)o->runs,
            (unsigned long long)o->seed);
    json_num_or_null(f, o->time_limit_s > 0 ? o->time_limit_s : INFINITY);
    fprintf(f,
            ",\n   \"thresholds_pct\": [2, 5, 10], \"within\": [%llu, %llu, %llu], "
            "\"random_expect\": [",
            (unsigned long long)info->within[0], (unsigned long long)info->within[1],
            (unsigned long long)info->within[2]);
    for (int k = 0; k < BT__SIM_NTHRESH; k++) {
        fprintf(f, "%s", k ? ", " : "");
        json_num_or_null(f, info->random_expect[k]);
    }
    fprintf(f, "],\n   \"strategies\": [");
    for (size_t i = 0; i < nrows; i++) {
        const bt__sim_row *r = &rows[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, r->s->name);
        if (r->st != BT_OK) {
            fprintf(f, ", \"supported\": false, \"why\": ");
            json_string(f, r->why);
            fprintf(f, "}");
            continue;
        }
        const bt__sim_stats *s = &r->stats;
        fprintf(f,
                ", \"supported\": true, \"budget\": %llu, \"evals_mean\": %.2f, "
                "\"evals_run_median\": %llu",
                (unsigned long long)s->budget, s->evals_mean,
                (unsigned long long)s->evals_run_med);
        const char *names[] = {"evals_median", "evals_p90"};
        const uint64_t *arrs[] = {s->evals_med, s->evals_p90};
        for (int a = 0; a < 2; a++) {
            fprintf(f, ", \"%s\": [", names[a]);
            for (int k = 0; k < BT__SIM_NTHRESH; k++) {
                fprintf(f, "%s", k ? ", " : "");
                json_u64_or_null(f, arrs[a][k]);
            }
            fprintf(f, "]");
        }
        fprintf(f, ", \"success\": [%.2f, %.2f, %.2f], \"time_median_s\": [", s->success[0],
                s->success[1], s->success[2]);
        for (int k = 0; k < BT__SIM_NTHRESH; k++) {
            fprintf(f, "%s", k ? ", " : "");
            json_num_or_null(f, s->time_med[k]);
        }
        fprintf(f, "],\n     \"best_at\": {");
        bool any = false;
        for (int k = 0; k < BT__SIM_NBUDGETS; k++) {
            if (isnan(s->best_at_pct[k]))
                continue;
            fprintf(f, "%s\"%llu\": ", any ? ", " : "", (unsigned long long)bt__sim_budgets[k]);
            json_num_or_null(f, s->best_at_pct[k]);
            any = true;
        }
        fprintf(f, "}, \"invalid_proposals\": %llu, \"duplicate_proposals\": %llu}",
                (unsigned long long)s->invalid_proposals,
                (unsigned long long)s->duplicate_proposals);
    }
    fprintf(f, "]}");
}

bt_status bt_simulation_write_table(const bt_simulation *sim, FILE *f)
{
    if (!sim || !f)
        return BT_INVALID_ARG;
    time_limited = sim->o.time_limit_s > 0;
    for (size_t i = 0; i < sim->n; i++)
        print_space_md(f, &sim->spaces[i], &sim->o);
    if (sim->n > 1)
        print_summary_md(f, sim->spaces, (int)sim->n);
    return ferror(f) ? BT_IO : BT_OK;
}

bt_status bt_simulation_write_json(const bt_simulation *sim, FILE *f)
{
    if (!sim || !f)
        return BT_INVALID_ARG;
    time_limited = sim->o.time_limit_s > 0;
    fprintf(f, "{\"command\": \"simulate\", \"blocktune\": \"%s\", \"spaces\": [\n", bt_version());
    for (size_t i = 0; i < sim->n; i++)
        print_space_json(f, &sim->spaces[i], &sim->o, i == 0);
    fprintf(f, "\n]}\n");
    return ferror(f) ? BT_IO : BT_OK;
}
