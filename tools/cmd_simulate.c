/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_simulate.c — `blocktune simulate`: replays recorded spaces (Kernel Tuner cache files, or
 * the measurements of one kernel and key in a blocktune results store) as if they were devices and reports, over seeded runs, how many measurements each search strategy
 * needs to get within 2%, 5% and 10% of the recorded best, and the best found at fixed budgets.
 * Output: a Markdown table per space, or JSON (--json).
 */
#include "cli.h"
#include "cli_num.h"
#include "cli_opts.h"

#include "core/util.h"
#include "search/simulate.h"
#include "search/strategy.h"
#include "store/ktcache.h"
#include "store/ktinterop.h"
#include "store/store.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(FILE *f)
{
    size_t n;
    const bt__strategy *const *all = bt__strategies(&n);
    fprintf(f,
            "usage: blocktune simulate SPACE... [--strategy NAME|all] [--runs R] [--budget N]\n"
            "                          [--seed K] [--time-limit S] [--jobs J] [--full] [--json]\n"
            "                          [--json-out FILE] [--kernel K --key KEY [--device D]]\n"
            "\n"
            "Replays recorded config spaces as if they were a device, to judge search strategies\n"
            "without a GPU. SPACE is a Kernel Tuner cache file (JSON, or gzip-compressed JSON),\n"
            "e.g. the five in tests/data/kt/, or store:PATH, a blocktune results\n"
            "store (store: alone is the default store), whose measurements of kernel --kernel K\n"
            "for problem key --key KEY (as 'blocktune cache list' shows it, e.g.\n"
            "'M=512,N=512,K=512,dtype=fp32'), on device --device D (a name or UUID; default:\n"
            "every device) are the recorded space: each parameter's measured values, every\n"
            "measured config a record (the newest when measured again), failures with their\n"
            "status. A config with no record is invalid (never measured); a \"measurement\"\n"
            "returns the recorded time and costs the recorded compile + benchmark time (so\n"
            "--time-limit is simulated time; a store records compile time only); a recorded\n"
            "failure fails.\n"
            "\n"
            "For every strategy, R runs with seeds K, K+1, ... report the median and 90th\n"
            "percentile of the measurements needed to get within 2%%, 5%% and 10%% of the\n"
            "recorded best (\">N\": the runs at that percentile never got there within the\n"
            "budget N; \"never\" with --time-limit), the share of runs that got within 5%%,\n"
            "the median best found after 10/25/50/100/200/500/1000 measurements (%% over the\n"
            "best), and the median simulated tuning time to get within 5%%. With several\n"
            "spaces, a summary table follows.\n"
            "\n"
            "options:\n"
            "  --strategy NAME|all  strategy to judge (default: all), one of:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "                         %-11s %s\n", all[i]->name, all[i]->summary);
    fprintf(
        f, "  --runs R             seeded runs per strategy (default 100)\n"
           "  --budget N           measurements per run (default: every recorded config)\n"
           "  --seed K             first seed (default 1)\n"
           "  --time-limit S       simulated seconds per run (default: none)\n"
           "  --jobs J             runs in parallel on J threads (default 1; results do not\n"
           "                       depend on it)\n"
           "  --full               run every run to its budget (by default a run stops once no\n"
           "                       reported number can change; same numbers, slower)\n"
           "  --json               machine-readable output (instead of the tables)\n"
           "  --json-out FILE      also write the JSON to FILE\n"
           "  --kernel K           the kernel of every store: SPACE\n"
           "  --key KEY            its problem key (canonical text)\n"
           "  --device D           only its measurements on device D (name or UUID)\n"
           "\n"
           "example:\n"
           "  blocktune simulate tests/data/kt/convolution_milo_A100.json.gz \\\n"
           "      --strategy all --runs 100\n"
           "  blocktune simulate store:tuned.db --kernel gemm --key 'M=67,N=45,K=33,dtype=fp32'\n");
    bt_cli_exit_help(f, "a space could not be read, --json-out could not be written");
}

static const char *basename_of(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* --- formatting ------------------------------------------------------------------------------ */
/* Set with --time-limit: a run that never got there may have stopped on time, not on the budget. */
static bool time_limited;

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
        fprintf(f, "%.6g", v);
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
typedef struct sim_row {
    const bt__strategy *s;
    bt_status st;
    char why[1200];
    bt__sim_stats stats;
} sim_row;

static void print_space_md(const char *path, const bt__ktcache *c, const bt__sim_space_info *info,
                           const bt__sim_options *o, const sim_row *rows, size_t nrows)
{
    char a[64], b[64], t[64];
    printf("## %s\n\n", basename_of(path));
    printf("%s on %s: %llu recorded configs of %llu (%llu fail), best %.4g ms; configs within "
           "2/5/10%% of the best: %llu/%llu/%llu; random sampling expects %.0f/%.0f/%.0f "
           "measurements to find one.\n",
           c->kernel_name[0] ? c->kernel_name : "?", c->device_name[0] ? c->device_name : "?",
           (unsigned long long)info->recorded, (unsigned long long)info->total,
           (unsigned long long)info->failed, info->best_ms, (unsigned long long)info->within[0],
           (unsigned long long)info->within[1], (unsigned long long)info->within[2],
           info->random_expect[0], info->random_expect[1], info->random_expect[2]);
    uint64_t budget = o->budget && o->budget < info->recorded ? o->budget : info->recorded;
    printf("%llu runs per strategy (seeds %llu..%llu), budget %llu measurements",
           (unsigned long long)o->runs, (unsigned long long)o->seed,
           (unsigned long long)(o->seed + o->runs - 1), (unsigned long long)budget);
    if (o->time_limit_s > 0)
        printf(", time limit %s simulated", fmt_time(o->time_limit_s, t, sizeof t));
    printf(".\n\n");
    printf("| strategy | to 2%%: median | p90 | to 5%%: median | p90 | to 10%%: median | p90 "
           "| within 5%% | best @10 | @25 | @50 | @100 | @200 | @500 | @1000 | time to 5%% |\n");
    printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (size_t i = 0; i < nrows; i++) {
        const sim_row *r = &rows[i];
        if (r->st != BT_OK) {
            printf("| %s | %s |||||||||||||||\n", r->s->name, r->why);
            continue;
        }
        const bt__sim_stats *s = &r->stats;
        printf("| %s ", r->s->name);
        for (int k = 0; k < BT__SIM_NTHRESH; k++)
            printf("| %s | %s ", fmt_evals(s->evals_med[k], s->budget, a, sizeof a),
                   fmt_evals(s->evals_p90[k], s->budget, b, sizeof b));
        printf("| %.0f%% ", s->success[1] * 100);
        for (int k = 0; k < BT__SIM_NBUDGETS; k++)
            printf("| %s ", fmt_pct(s->best_at_pct[k], a, sizeof a));
        printf("| %s |\n", fmt_time(s->time_med[1], t, sizeof t));
    }
    /* Verdict: the best strategy against random, at 5%. */
    const sim_row *rnd = NULL, *best = NULL;
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
        printf("\nTo within 5%%: best strategy %s, median %s measurements; random %s",
               best->s->name, fmt_evals(bm, best->stats.budget, a, sizeof a),
               fmt_evals(rm, rnd->stats.budget, b, sizeof b));
        if (bm != UINT64_MAX && rm != UINT64_MAX) {
            double ratio = (double)bm / (double)rm;
            printf(" (ratio %.3f; target <= 0.25: %s)", ratio,
                   ratio <= 0.25        ? "met"
                   : (double)rm / 4 < 1 ? "not met: impossible, random needs under 4 measurements"
                                        : "NOT met");
        }
        printf(".\n");
    }
    printf("\n");
}

/* Every space's rows, for the summary after the per-space tables. */
typedef struct summary_space {
    const char *name;
    sim_row rows[64];
    size_t nrows;
} summary_space;

/* "name ratio: met" for a strategy's median to 5% against random's. */
static void print_ratio_cell(const sim_row *best, const sim_row *rnd)
{
    uint64_t rm = rnd->stats.evals_med[1];
    if (!best || best->stats.evals_med[1] == UINT64_MAX) {
        printf(" - |");
        return;
    }
    uint64_t bm = best->stats.evals_med[1];
    if (rm == UINT64_MAX) { /* random never got there: the ratio is below bm / budget */
        printf(" %s < %.2f: %s |", best->s->name, (double)bm / (double)rnd->stats.budget,
               (double)bm * 4 <= (double)rnd->stats.budget ? "met" : "unknown (raise --budget)");
        return;
    }
    double ratio = (double)bm / (double)rm;
    printf(" %s %.2f: %s |", best->s->name, ratio,
           ratio <= 0.25        ? "met"
           : (double)rm / 4 < 1 ? "impossible (< 1)"
                                : "not met");
}

/* One table over all spaces: median (p90) measurements to within 5% per strategy, and whether
 * the best non-exhaustive strategy needs at most 1/4 of random sampling's median. */
static void print_summary_md(const summary_space *sum, int nspaces)
{
    char a[32], b[32];
    printf("## Summary: measurements to get within 5%% of the best, median (p90)\n\n");
    printf("| strategy |");
    for (int s = 0; s < nspaces; s++)
        printf(" %s |", sum[s].name);
    printf("\n|---|");
    for (int s = 0; s < nspaces; s++)
        printf("--:|");
    printf("\n");
    for (size_t i = 0; i < sum[0].nrows; i++) {
        printf("| %s |", sum[0].rows[i].s->name);
        for (int s = 0; s < nspaces; s++) {
            const sim_row *r = &sum[s].rows[i];
            if (r->st != BT_OK)
                printf(" no model |");
            else
                printf(" %s (%s) |", fmt_evals(r->stats.evals_med[1], r->stats.budget, a, sizeof a),
                       fmt_evals(r->stats.evals_p90[1], r->stats.budget, b, sizeof b));
        }
        printf("\n");
    }
    /* The verdict row, when random was run. */
    size_t ri = SIZE_MAX;
    for (size_t i = 0; i < sum[0].nrows; i++)
        if (!strcmp(sum[0].rows[i].s->name, "random"))
            ri = i;
    if (ri == SIZE_MAX) {
        printf("\n");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        /* pass 0: the best strategy per space; pass 1: the default strategy for large spaces */
        if (pass == 0)
            printf("| **best / random** |");
        else
            printf("\n| **default (%s) / random** |", BT__SEARCH_DEFAULT_LARGE);
        for (int s = 0; s < nspaces; s++) {
            const sim_row *rnd = &sum[s].rows[ri], *best = NULL;
            for (size_t i = 0; i < sum[s].nrows; i++) {
                const sim_row *r = &sum[s].rows[i];
                if (r->st != BT_OK || i == ri || !strcmp(r->s->name, "exhaustive"))
                    continue;
                if (pass == 1 ? !strcmp(r->s->name, BT__SEARCH_DEFAULT_LARGE)
                              : !best || r->stats.evals_med[1] < best->stats.evals_med[1])
                    best = r;
            }
            print_ratio_cell(best, rnd);
        }
    }
    printf("\n\nTarget: the best strategy needs at most 1/4 of the measurements random sampling "
           "needs (medians).\n");
}

static void print_space_json(FILE *f, const char *path, const bt__ktcache *c,
                             const bt__sim_space_info *info, const bt__sim_options *o,
                             const sim_row *rows, size_t nrows, bool first)
{
    fprintf(f, "%s  {\"space\": ", first ? "" : ",\n");
    json_string(f, basename_of(path));
    fprintf(f, ", \"path\": ");
    json_string(f, path);
    fprintf(f, ", \"kernel\": ");
    json_string(f, c->kernel_name);
    fprintf(f, ", \"device\": ");
    json_string(f, c->device_name);
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
        const sim_row *r = &rows[i];
        fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
        json_string(f, r->s->name);
        if (r->st != BT_OK) {
            fprintf(f, ", \"supported\": false, \"why\": ");
            json_string(f, r->why);
            fprintf(f, "}");
            continue;
        }
        const bt__sim_stats *s = &r->stats;
        fprintf(f, ", \"supported\": true, \"budget\": %llu, \"evals_mean\": %.2f",
                (unsigned long long)s->budget, s->evals_mean);
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

/* A SPACE: a Kernel Tuner cache file, or store:PATH (the default store when PATH is empty) with
 * the kernel, device and key to read from it. */
static bt_status load_space(const char *space, const char *kernel, const char *device,
                            const char *key, bt__ktcache **out, bt_diag *d)
{
    bt__diag_clear(d);
    if (strncmp(space, "store:", 6))
        return bt__ktcache_load(space, out, d);
    struct stat sb;
    if (space[6] && stat(space + 6, &sb) != 0) { /* opening would create an empty store */
        bt__diag_set(d, "no results store at %s: %s", space + 6, strerror(errno));
        return BT_IO;
    }
    bt__store *s = NULL;
    bt_status st = bt__store_open_read(space[6] ? space + 6 : NULL, &s, d);
    if (st != BT_OK)
        return st;
    int nrows = 0;
    st = bt__kt_from_store(s, kernel, device, key, out, &nrows, d);
    bt__store_close(s);
    return st;
}

enum { O_STRATEGY, O_JSON_OUT, O_KERNEL, O_KEY, O_DEVICE, O_RUNS, O_BUDGET, O_SEED, O_TIME_LIMIT,
       O_JOBS, O_JSON, O_FULL };
static const bt_cli_opt sim_opts[] = {
    {"strategy", 0, 1, O_STRATEGY}, {"json-out", 0, 1, O_JSON_OUT}, {"kernel", 0, 1, O_KERNEL},
    {"key", 0, 1, O_KEY},           {"device", 0, 1, O_DEVICE},     {"runs", 0, 1, O_RUNS},
    {"budget", 0, 1, O_BUDGET},     {"seed", 0, 1, O_SEED},         {"time-limit", 0, 1, O_TIME_LIMIT},
    {"jobs", 0, 1, O_JOBS},         {"json", 0, 0, O_JSON},         {"full", 0, 0, O_FULL},
};

/* The command line of simulate. */
typedef struct sim_args {
    const char *strategy, *json_out, *st_kernel, *st_key, *st_device;
    bool json;
    const char **spaces;
    int nspaces;
} sim_args;

/* A numeric option into o. 0, or the exit status of a usage error. */
static int sim_number(int id, const char *val, bt__sim_options *o)
{
    uint64_t u;
    if (id == O_RUNS && (!bt_cli_parse_u64(val, &o->runs) || o->runs == 0 || o->runs > 1000000))
        return bt_cli_usage_error("simulate", "--runs wants 1..1000000, got '%s'", val);
    if (id == O_BUDGET && (!bt_cli_parse_u64(val, &o->budget) || o->budget == 0))
        return bt_cli_usage_error("simulate", "--budget wants a positive count, got '%s'", val);
    if (id == O_SEED && !bt_cli_parse_u64(val, &o->seed))
        return bt_cli_usage_error("simulate", "--seed wants an integer >= 0, got '%s'", val);
    if (id == O_TIME_LIMIT && (!bt_cli_parse_double(val, &o->time_limit_s) ||
                               o->time_limit_s <= 0))
        return bt_cli_usage_error("simulate", "--time-limit wants positive seconds, got '%s'",
                                  val);
    if (id == O_JOBS) {
        if (!bt_cli_parse_u64(val, &u) || u == 0 || u > 64)
            return bt_cli_usage_error("simulate", "--jobs wants 1..64, got '%s'", val);
        o->jobs = (int)u;
    }
    return 0;
}

/* 0, BT_CLI_HELP after the help, or the exit status of a usage error. */
static int parse_sim(int argc, char **argv, sim_args *A, bt__sim_options *o)
{
    bt_cli_parser P;
    bt_cli_begin(&P, "simulate", sim_opts, sizeof sim_opts / sizeof sim_opts[0], 0, argc, argv);
    for (int id, rc; (id = bt_cli_next(&P)) != BT_CLI_END;) {
        const char *v = P.value;
        switch (id) {
        case BT_CLI_HELP: help(stdout); return BT_CLI_HELP;
        case BT_CLI_ERROR: return BT_EXIT_USAGE;
        case BT_CLI_ARG: A->spaces[A->nspaces++] = v; break;
        case O_JSON: A->json = true; break;
        case O_FULL: o->full = true; break;
        case O_STRATEGY: A->strategy = v; break;
        case O_JSON_OUT: A->json_out = v; break;
        case O_KERNEL: A->st_kernel = v; break;
        case O_KEY: A->st_key = v; break;
        case O_DEVICE: A->st_device = v; break;
        default:
            if ((rc = sim_number(id, v, o)))
                return rc;
        }
    }
    if (A->nspaces == 0)
        return bt_cli_usage_error("simulate",
                                  "no SPACE given (a Kernel Tuner cache file, or store:PATH)");
    bool any_store = false;
    for (int sp = 0; sp < A->nspaces; sp++)
        any_store |= !strncmp(A->spaces[sp], "store:", 6);
    if (any_store && (!A->st_kernel || !A->st_key))
        return bt_cli_usage_error("simulate", "a store: SPACE needs --kernel K and --key KEY "
                                              "('blocktune cache list' shows the keys)");
    if (!any_store && (A->st_kernel || A->st_key || A->st_device))
        return bt_cli_usage_error("simulate", "--kernel, --key and --device select from a store: "
                                              "SPACE, and none is given");
    return 0;
}

int bt_cmd_simulate(int argc, char **argv)
{
    bt__sim_options o = {.runs = 100, .seed = 1, .jobs = 1};
    sim_args A = {.strategy = "all", .spaces = calloc((size_t)argc, sizeof(char *))};
    if (!A.spaces)
        return bt_cli_fail(BT_NOMEM, NULL);
    int rc = parse_sim(argc, argv, &A, &o);
    if (rc) {
        free(A.spaces);
        return rc == BT_CLI_HELP ? 0 : rc;
    }
    const char *strategy = A.strategy, *json_out = A.json_out, *st_kernel = A.st_kernel;
    const char *st_key = A.st_key, *st_device = A.st_device, **spaces = A.spaces;
    bool json = A.json;
    int nspaces = A.nspaces;
    time_limited = o.time_limit_s > 0;
    size_t nall;
    const bt__strategy *const *all = bt__strategies(&nall);
    const bt__strategy *chosen[64];
    size_t nchosen = 0;
    if (bt__streq_nocase(strategy, "all")) {
        for (size_t i = 0; i < nall && i < 64; i++)
            chosen[nchosen++] = all[i];
    } else {
        const bt__strategy *s = bt__strategy_find(strategy);
        if (!s) {
            fprintf(stderr, "blocktune simulate: unknown strategy '%s'; strategies:", strategy);
            for (size_t i = 0; i < nall; i++)
                fprintf(stderr, " %s", all[i]->name);
            fprintf(stderr, ", all\n");
            rc = BT_EXIT_USAGE;
            goto done;
        }
        chosen[nchosen++] = s;
    }

    summary_space *sum = calloc((size_t)nspaces, sizeof *sum);
    if (!sum) {
        rc = bt_cli_fail(BT_NOMEM, NULL);
        goto done;
    }
    FILE *jf = json ? stdout : NULL;
    if (json_out && !(jf = fopen(json_out, "w"))) {
        fprintf(stderr, "blocktune simulate: cannot write %s: %s\n", json_out, strerror(errno));
        free(sum);
        rc = 1;
        goto done;
    }
    if (jf)
        fprintf(jf, "{\"command\": \"simulate\", \"blocktune\": \"%s\", \"spaces\": [\n",
                bt_version());
    for (int sp = 0; sp < nspaces && rc == 0; sp++) {
        bt_diag d;
        bt__ktcache *c = NULL;
        bt_status st = load_space(spaces[sp], st_kernel, st_device, st_key, &c, &d);
        if (st != BT_OK) {
            rc = bt_cli_fail(st, &d);
            break;
        }
        bt__recspace rs;
        bt__ktcache_recspace(c, &rs);
        bt__sim_space_info info;
        bt__sim_space_info_of(&rs, &info);
        sim_row *rows = sum[sp].rows;
        sum[sp].name = basename_of(spaces[sp]);
        sum[sp].nrows = nchosen;
        for (size_t i = 0; i < nchosen && rc == 0; i++) {
            rows[i].s = chosen[i];
            rows[i].why[0] = '\0';
            rows[i].st = bt__simulate(&rs, chosen[i], &o, &rows[i].stats, NULL, &d);
            if (rows[i].st == BT_UNSUPPORTED)
                snprintf(rows[i].why, sizeof rows[i].why, "%s: %.1100s", chosen[i]->name, d.msg);
            else if (rows[i].st != BT_OK)
                rc = bt_cli_fail(rows[i].st, &d);
        }
        if (rc == 0) {
            if (jf)
                print_space_json(jf, spaces[sp], c, &info, &o, rows, nchosen, sp == 0);
            if (!json)
                print_space_md(spaces[sp], c, &info, &o, rows, nchosen);
            fflush(stdout);
        }
        bt__ktcache_free(c);
    }
    if (jf) {
        fprintf(jf, "\n]}\n");
        if (jf != stdout && fclose(jf) != 0 && rc == 0) {
            fprintf(stderr, "blocktune simulate: cannot write %s\n", json_out);
            rc = 1;
        }
    }
    if (rc == 0 && !json && nspaces > 1)
        print_summary_md(sum, nspaces);
    free(sum);
done:
    free(spaces);
    return rc;
}
