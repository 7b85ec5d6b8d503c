/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_simulate.c — `blocktune simulate`: replays recorded spaces (Kernel Tuner cache files, or
 * the measurements of one kernel and key in a blocktune results store) as if they were devices
 * and reports, over seeded runs, how many measurements each search strategy needs to get within
 * 2%, 5% and 10% of the recorded best, and the best found at fixed budgets (bt_simulation_*).
 * Output: a Markdown table per space, or JSON (--json).
 */
#include "cli.h"
#include "cli_num.h"
#include "cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(FILE *f)
{
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
    for (int i = 0; i < bt_strategy_count(); i++)
        fprintf(f, "                         %-11s %s\n", bt_strategy_name(i),
                bt_strategy_description(i));
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

enum { O_STRATEGY, O_JSON_OUT, O_KERNEL, O_KEY, O_DEVICE, O_RUNS, O_BUDGET, O_SEED, O_TIME_LIMIT,
       O_JOBS, O_JSON, O_FULL };
static const bt_cli_opt sim_opts[] = {
    {"strategy", 0, 1, O_STRATEGY}, {"json-out", 0, 1, O_JSON_OUT}, {"kernel", 0, 1, O_KERNEL},
    {"key", 0, 1, O_KEY},           {"device", 0, 1, O_DEVICE},     {"runs", 0, 1, O_RUNS},
    {"budget", 0, 1, O_BUDGET},     {"seed", 0, 1, O_SEED},         {"time-limit", 0, 1, O_TIME_LIMIT},
    {"jobs", 0, 1, O_JOBS},         {"json", 0, 0, O_JSON},         {"full", 0, 0, O_FULL},
};

/* The numbers of the command line (bt_simulation_set_* takes them). */
typedef struct sim_opts_t {
    uint64_t runs, budget, seed;
    double time_limit_s;
    int jobs;
    bool full;
} sim_opts_t;

/* The command line of simulate. */
typedef struct sim_args {
    const char *strategy, *json_out, *st_kernel, *st_key, *st_device;
    bool json;
    const char **spaces;
    int nspaces;
} sim_args;

/* A numeric option into o. 0, or the exit status of a usage error. */
static int sim_number(int id, const char *val, sim_opts_t *o)
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
static int parse_sim(int argc, char **argv, sim_args *A, sim_opts_t *o)
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

/* The simulation's settings from the command line. 0, or an exit status. */
static int configure(bt_simulation *sim, const sim_args *A, const sim_opts_t *o)
{
    if (bt_simulation_set_strategy(sim, A->strategy) != BT_OK) {
        fprintf(stderr, "blocktune simulate: unknown strategy '%s'; strategies:", A->strategy);
        for (int i = 0; i < bt_strategy_count(); i++)
            fprintf(stderr, " %s", bt_strategy_name(i));
        fprintf(stderr, ", all\n");
        return BT_EXIT_USAGE;
    }
    bt_status st = bt_simulation_set_runs(sim, o->runs);
    if (!st)
        st = bt_simulation_set_budget(sim, o->budget);
    if (!st)
        st = bt_simulation_set_seed(sim, o->seed);
    if (!st)
        st = bt_simulation_set_time_limit_s(sim, o->time_limit_s);
    if (!st)
        st = bt_simulation_set_jobs(sim, o->jobs);
    if (!st)
        st = bt_simulation_set_full(sim, o->full);
    return st ? bt_cli_fail(st, NULL) : 0;
}

/* A SPACE: a Kernel Tuner cache file, or store:PATH (the default store when PATH is empty) with
 * the kernel, device and key to read from it. */
static int add_space(bt_simulation *sim, const sim_args *A, const char *space)
{
    bt_diag d = {0};
    bt_status st;
    if (strncmp(space, "store:", 6)) {
        st = bt_simulation_add_file(sim, space, &d);
    } else {
        struct stat sb;
        if (space[6] && stat(space + 6, &sb) != 0) {
            fprintf(stderr, "blocktune: no results store at %s: %s\n", space + 6,
                    strerror(errno));
            return BT_EXIT_FAIL;
        }
        bt_store *s = NULL;
        st = bt_store_open(space[6] ? space + 6 : NULL, BT_STORE_READONLY, &s, &d);
        if (!st)
            st = bt_simulation_add_store(sim, s, A->st_kernel, A->st_key, A->st_device, space,
                                         &d);
        bt_store_destroy(s);
    }
    return st ? bt_cli_fail(st, &d) : 0;
}

/* --json on standard output, --json-out FILE, else the tables. */
static int write_out(const bt_simulation *sim, const sim_args *A)
{
    if (A->json_out) {
        errno = 0;
        FILE *f = fopen(A->json_out, "w");
        bt_status st = f ? bt_simulation_write_json(sim, f) : BT_IO;
        if (!f || fclose(f) != 0 || st) {
            fprintf(stderr, "blocktune simulate: cannot write %s: %s\n", A->json_out,
                    errno ? strerror(errno) : bt_strerror(st ? st : BT_IO));
            return BT_EXIT_FAIL;
        }
    }
    bt_status st = A->json ? bt_simulation_write_json(sim, stdout)
                           : bt_simulation_write_table(sim, stdout);
    return st ? bt_cli_fail(st, NULL) : 0;
}

int bt_cmd_simulate(int argc, char **argv)
{
    sim_opts_t o = {.runs = 100, .seed = 1, .jobs = 1};
    sim_args A = {.strategy = "all", .spaces = calloc((size_t)argc, sizeof(char *))};
    bt_simulation *sim = NULL;
    if (!A.spaces || bt_simulation_create(&sim)) {
        free(A.spaces);
        return bt_cli_fail(BT_NOMEM, NULL);
    }
    int rc = parse_sim(argc, argv, &A, &o);
    if (!rc)
        rc = configure(sim, &A, &o);
    for (int i = 0; i < A.nspaces && !rc; i++)
        rc = add_space(sim, &A, A.spaces[i]);
    if (!rc)
        rc = write_out(sim, &A);
    bt_simulation_destroy(sim);
    free(A.spaces);
    return rc == BT_CLI_HELP ? 0 : rc;
}
