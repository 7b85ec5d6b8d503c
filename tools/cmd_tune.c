/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_tune.c — `blocktune tune`: compile, verify, measure and select on a device, and print the
 * tune report (engine/report.c). The tune runs in a child process under a supervisor (supervise): a kernel that
 * crashes the process (a CPU device runs kernels in-process), hangs, or faults the device ends
 * that child; the supervisor says which config it was and starts another child, which resumes
 * from the store past it.
 */
#include "cli.h"
#include "cli_num.h"
#include "cli_opts.h"
#include "sweep.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void tune_help(FILE *f)
{
    fprintf(f,
        "usage: blocktune tune KERNEL|SPEC.json [--device ID] [sizes] [--dtype T]\n"
        "                      [--strategy NAME] [--budget N] [--time-limit S]\n"
        "                      [--exhaustive-max N] [--target-ms T|roofline] [--within P]\n"
        "                      [--seed K] [--threads N] [--finalists N]\n"
        "                      [--warmup-ms MS] [--rep-ms MS] [--rules SET] [--no-boundary]\n"
        "                      [--json FILE] [--csv FILE] [--html FILE]\n"
        "                      [--store PATH|none] [--mode tune|retune] [--graph]\n"
        "                      [--mpi-mixed-devices]  (under mpirun: docs/mpi.md)\n"
        "\n"
        "Tunes KERNEL for one problem on a device: the model prunes the space (with reasons),\n"
        "then a search strategy proposes valid configs in rounds of --threads configs; each\n"
        "round is compiled in parallel, verified against a reference on random inputs with\n"
        "poisoned outputs (and at the spec's boundary sizes), timed with device events after a\n"
        "cache flush, and every outcome (a failure too) goes back to the strategy, until the\n"
        "strategy is done or a budget stops it. The best few are re-measured interleaved\n"
        "before the winner is declared with its margin over the runner-up.\n"
        "\n"
        "  KERNEL            a spec file (docs/spec.md), a T1 input file (docs/t1.md) or a\n"
        "                    built-in kernel (each runs on the backends whose language its\n"
        "                    spec has a source in):\n"
        "                    ");
    bt_cli_print_builtins(f, 20);
    fprintf(f,
        "  --device ID       opencl:0, cuda:0 ... (default: a GPU, else a CPU device;\n"
        "                    'blocktune devices' lists them)\n"
        "  sizes             problem variables by name, e.g. --n 16777216, --m 512 --n 512 --k 512\n"
        "                    A list or range sweeps a variable: --m 1,2,4,8, --m 64..256:64,\n"
        "                    --m pow2:1..4096 (and lists of them, --m 1,pow2:8..64); each size\n"
        "                    (with several swept variables: each combination) is tuned as its\n"
        "                    own key and stored as a normal winner, compiled binaries shared\n"
        "                    between keys; the report is a table of the keys (winner, median,\n"
        "                    efficiency), --json one document holding a tune document per key\n"
        "                    (docs/tune-json.md#sweeps), --html the sweep's page; --time-limit\n"
        "                    is then each key's; Ctrl-C reports the keys finished\n"
        "  --dtype T         fp32, fp16, bf16 (default: the kernel's first)\n"
        "  --strategy NAME   search strategy (default: exhaustive when the plan has at most\n"
        "                    --exhaustive-max valid configs, else forest), one of:\n");
    for (int i = 0; i < bt_strategy_count(); i++)
        fprintf(f, "                      %-11s %s\n", bt_strategy_name(i),
                bt_strategy_description(i));
    fprintf(f,
        "  --budget N        measure at most N configs, failures included (default: exhaustive\n"
        "                    measures every valid config, other strategies 64 for a spec with\n"
        "                    a model kind, whose model ranks the configs first, 128 for one\n"
        "                    without, unless --time-limit is given); --max-configs N is the same\n"
        "  --time-limit S    aim to end the whole tune within S seconds: no round of the search\n"
        "                    starts that would end too late to leave the final re-measurement\n"
        "                    its time (the first round always runs); it is a deadline that\n"
        "                    holds across the tune's restarts\n"
        "  --target-ms T     stop the search once a config's median is within --within P %%\n"
        "                    of T ms; T = roofline: the model's time floor for the problem\n"
        "  --within P        the target's tolerance in percent (default 0)\n"
        "  --exhaustive-max N  spaces of at most N valid configs are searched exhaustively by\n"
        "                    default (default 128)\n"
        "  --seed K          seeds the random inputs and the strategy (default 1): the same seed\n"
        "                    and --threads propose the same configs\n"
        "  --threads N       compile threads, and configs per round (default: all cores)\n"
        "  --finalists N     re-measure the best N (1-16, default 3) interleaved, round by\n"
        "                    round, before declaring the winner\n"
        "  --warmup-ms MS    warm-up budget per config (default 25, at most 60000)\n"
        "  --rep-ms MS       measurement budget per config (default 100, at most 60000)\n"
        "  --screen-ms MS    screening budget: every config is first measured with MS of runs\n"
        "                    (at least 10; default rep-ms / 8, 0 = off), the finalists and the\n"
        "                    configs within the screening noise of the cut at the full budgets\n"
        "  --rules SET       rule set override (triton, cuda, limits, all)\n"
        "  --no-boundary     skip verification at the boundary sizes\n"
        "  --timeout S       a config whose run takes longer than S seconds (counted from when\n"
        "                    the device starts it: a CPU device compiles a binary at its first\n"
        "                    launch, allowed 600 s) is recorded as timed out; one still running\n"
        "                    at 3 S is hung: the tune restarts past it (default 10, at most 3600)\n"
        "  --graph           time replays of graph-captured launches (CUDA): for kernels shorter\n"
        "                    than ~20 us, where gaps between launches dominate\n"
        "  --mpi-mixed-devices  under mpirun (one rank per device, docs/mpi.md): allow ranks\n"
        "                    whose devices are of another model than rank 0's\n"
        "  --json FILE       also write the full result as JSON (docs/tune-json.md); FILE '-'\n"
        "                    (of --json, --csv or --html, one) writes it to standard output\n"
        "                    and the report table to standard error\n"
        "  --csv FILE        also write one row per measured config: every column of the table\n"
        "                    and the numbers behind it (docs/report.md#csv)\n"
        "  --html FILE       also write the result as one self-contained HTML page: roofline,\n"
        "                    time against each parameter, eliminations by rule, candidates\n"
        "                    (docs/report.md; 'blocktune report' makes it from --json files)\n"
        "  --store PATH      the results store (default: $BLOCKTUNE_CACHE_DIR/blocktune.db, else\n"
        "                    ~/.cache/blocktune/blocktune.db); every measurement is committed as\n"
        "                    it finishes, so a killed tune resumes; 'none' keeps nothing. A write\n"
        "                    that fails, or a damaged store (refused), ends the tune with exit\n"
        "                    status 1 after its report, saying what was not stored\n"
        "  --mode MODE       tune (default): reuse stored measurements; retune: measure again\n"
        "\n"
        "The tune runs in a child process. A kernel that crashes it (a CPU device runs kernels\n"
        "in the process), hangs or faults the device ends that process; the config is named,\n"
        "recorded in the store as failed (on a CPU device a config is recorded as in flight\n"
        "before its first run: interrupting the tune leaves that record too; --mode retune\n"
        "measures it again) and a new process resumes past it, at most 16 times; then, or when\n"
        "the time limit has passed, what the store holds is reported with the reason. With\n"
        "--store none nothing carries over: a crash ends the tune (exit status 1).\n"
        "\n"
        "examples:\n"
        "  blocktune tune vector_add --n 16777216\n"
        "  blocktune tune gemm --m 4096 --n 4096 --k 4096 --strategy forest --budget 200\n"
        "  blocktune tune gemm --m pow2:1..4096 --n 8192 --k 8192 --budget 100\n");
    bt_cli_exit_help(f, "no config won, a store write failed, a crash the tune could not "
                        "resume past");
}

/* A child's exit status asking the supervisor for a fresh process: the store holds every
 * outcome so far (the config that hung or faulted included), so the next child resumes past it. */
#define RESTART_EXIT 75
#define MAX_RESTARTS 16

/* What a tune's process needs: the command line, parsed. */
typedef struct tune_cmd {
    const char *kernel, *device, *dtype, *json, *csv, *html, *rules, *store;
    bt_tune_options *o;
    int mpi_flags;       /* --mpi-mixed-devices */
    int mpi_role;        /* bt_mpi_cli_begin's: 0 not under MPI, 1 rank 0, 2 another rank */
    int nset;
    const char **set_names, **set_values;
    bool keep;           /* a store is kept (not --store none) */
    double time_limit_s; /* the user's: a deadline for all the tune's processes together */
    bt_sweep *sweep;     /* several sizes (sweep.c), NULL: one */
} tune_cmd;

static bool g_keep; /* for on_hang: the store is kept */

/* Seconds on a monotonic clock (the supervisor's deadline). */
static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_hang(void *user)
{
    (void)user;
    const char *what = "";
    if (bt_inflight_get(NULL, &what) == BT_INFLIGHT_REFERENCE) {
        fprintf(stderr, "blocktune tune: %s hung: every config is verified against it, so the "
                        "tune cannot go on\n", what);
        _exit(1);
    }
    fprintf(stderr, "blocktune tune: a kernel hung (recorded as timed out)%s\n",
            g_keep ? "" : "; with --store none nothing carries over to a new process: giving up");
    fflush(NULL);
    _exit(g_keep ? RESTART_EXIT : 1); /* a hung kernel cannot be stopped any other way */
}

/* The signals that end a process because someone asked (not a crash of the tune). */
static bool interrupt_signal(int sig)
{
    return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT || sig == SIGPIPE;
}

/* A child that died by signal sig, the shared in-flight note saying what ran: says which config
 * and whether a new process can resume past it. Returns true when it can. */
static bool crashed(int sig, bool keep)
{
    char what[600];
    const char *running = "";
    int stored = 0;
    bt_inflight_kind kind = bt_inflight_get(&stored, &running);
    if (kind == BT_INFLIGHT_NONE)
        snprintf(what, sizeof what, "not while running a kernel");
    else
        snprintf(what, sizeof what, "while running %.500s", running);
    fprintf(stderr, "blocktune tune: the tune's process died (signal %d, %s) %s\n", sig,
            strsignal(sig), what);
    if (kind == BT_INFLIGHT_CONFIG && stored) {
        fprintf(stderr, "blocktune tune: the config is recorded in the store as failed (%s)\n",
                BT_INFLIGHT_ERROR);
        return true;
    }
    if (kind == BT_INFLIGHT_CONFIG)
        fprintf(stderr, "blocktune tune: %s: a new run would crash on it again, so the tune "
                        "ends here; keep a store (--store PATH) to resume past it\n",
                keep ? "it could not be recorded in the store" : "with --store none nothing "
                                                                 "carries over");
    else if (kind == BT_INFLIGHT_REFERENCE)
        fprintf(stderr, "blocktune tune: every config is verified against the reference, so "
                        "the tune cannot go on\n");
    return false;
}

static int run_tune(tune_cmd *c, const char *stored_only);

/* Runs the tune in a child process, again after a child that asked for it (a hang or a device
 * fault, recorded in the store) or that died by a signal while running a config recorded in
 * flight, at most MAX_RESTARTS times. The time limit is a deadline that restarts do not reset.
 * When the restarts give up, or the deadline has passed, a last child reports what the store
 * holds, with the reason. Returns the exit status. */
static int supervise(tune_cmd *c)
{
    if (c->mpi_role) /* an MPI rank is not forked: a crash is a dead rank (docs/mpi.md) */
        return run_tune(c, "");
    size_t note_size = bt_inflight_size();
    void *note = mmap(NULL, note_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (note == MAP_FAILED) /* unsupervised: a crash ends blocktune */
        return run_tune(c, "");
    bt_inflight_share(note); /* the children write it, this process reads it */
    /* a sweep's time limit is each key's; Ctrl-C ends its child, the supervisor reports */
    double limit = c->time_limit_s, deadline = limit > 0 && !c->sweep ? now_s() + limit : 0;
    size_t swept = bt_sweep_done(c->sweep);
    if (c->sweep)
        signal(SIGINT, SIG_IGN);
    char final[300] = "";
    bool gave_up = false;
    int rc = 1;
    pid_t parent = getpid();
    for (int restarts = 0;;) {
        memset(note, 0, note_size);
        /* a restarted child gets what is left of the time limit (the last one all of it: it
         * only reports) */
        if (restarts && deadline)
            bt_tune_options_set_time_limit_s(c->o, final[0] ? limit
                                                            : fmax(deadline - now_s(), 0.001));
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "blocktune tune: cannot start the tune's process: %s\n",
                    strerror(errno));
            break;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); /* ends with the supervisor */
            signal(SIGINT, SIG_DFL);
            if (getppid() != parent)
                _exit(1);
            int crc = run_tune(c, final);
            fflush(NULL);
            _exit(crc);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (WIFSIGNALED(status) && interrupt_signal(WTERMSIG(status))) {
            rc = 128 + WTERMSIG(status);
            break;
        }
        if (WIFEXITED(status) && WEXITSTATUS(status) != RESTART_EXIT) {
            rc = gave_up ? 1 : WEXITSTATUS(status);
            break;
        }
        if (bt_sweep_done(c->sweep) > swept) /* a sweep's restarts count per key */
            swept = bt_sweep_done(c->sweep), restarts = 0;
        if (final[0] || (WIFSIGNALED(status) && !crashed(WTERMSIG(status), c->keep)))
            break; /* the last child, or a crash nothing can resume past */
        if ((gave_up = ++restarts > MAX_RESTARTS))
            snprintf(final, sizeof final, "the tune was restarted %d times (the last after %s) "
                     "and gave up", MAX_RESTARTS,
                     WIFSIGNALED(status) ? "a crash" : "a hang or a device fault");
        else if (deadline && now_s() >= deadline)
            snprintf(final, sizeof final, "the time limit of %g s passed after %d restart(s)",
                     limit, restarts);
        if (final[0])
            fprintf(stderr, "blocktune tune: %s: reporting what the store holds\n", final);
        else
            fprintf(stderr, "blocktune tune: restarting (%d) to resume from the store\n",
                    restarts);
    }
    bt_inflight_share(NULL);
    munmap(note, note_size);
    if (c->sweep)
        signal(SIGINT, SIG_DFL);
    return rc;
}

/* --json, --csv, --html: r written to path (NULL: not asked for) by w; 1 after saying why not. */
static int write_result(const char *path, bt_status (*w)(const bt_result *, FILE *),
                        const bt_result *r)
{
    if (!path)
        return 0;
    if (!strcmp(path, "-")) /* standard output: the table went to standard error */
        return w(r, stdout) == BT_OK && fflush(stdout) == 0 ? 0 : bt_cli_fail(BT_IO, NULL);
    errno = 0;
    FILE *f = fopen(path, "w");
    bt_status st = f ? w(r, f) : BT_IO;
    if (f && fclose(f) != 0)
        st = BT_IO;
    if (st == BT_OK)
        return 0;
    fprintf(stderr, "blocktune tune: cannot write %s: %s\n", path,
            errno ? strerror(errno) : bt_strerror(st));
    return 1;
}

enum { O_DEVICE, O_DTYPE, O_JSON, O_CSV, O_HTML, O_RULES, O_STORE, O_MODE, O_STRATEGY,
       O_NO_BOUNDARY, O_GRAPH, O_MPI_MIXED, O_NUMBERS /* the numeric options follow */, O_WARMUP_MS = O_NUMBERS,
       O_REP_MS, O_MAX_CONFIGS, O_BUDGET, O_TIME_LIMIT, O_WITHIN, O_TARGET_MS, O_EXHAUSTIVE_MAX,
       O_THREADS, O_SEED, O_TIMEOUT, O_FINALISTS, O_SCREEN_MS };
static const bt_cli_opt tune_opts[] = {
    {"device", 0, 1, O_DEVICE},          {"dtype", 0, 1, O_DTYPE},
    {"json", 0, 1, O_JSON},              {"csv", 0, 1, O_CSV},
    {"html", 0, 1, O_HTML},              {"rules", 0, 1, O_RULES},
    {"store", 0, 1, O_STORE},            {"mode", 0, 1, O_MODE},
    {"strategy", 0, 1, O_STRATEGY},      {"no-boundary", 0, 0, O_NO_BOUNDARY},
    {"graph", 0, 0, O_GRAPH},            {"mpi-mixed-devices", 0, 0, O_MPI_MIXED},
    {"warmup-ms", 0, 1, O_WARMUP_MS},
    {"rep-ms", 0, 1, O_REP_MS},          {"max-configs", 0, 1, O_MAX_CONFIGS},
    {"budget", 0, 1, O_BUDGET},          {"time-limit", 0, 1, O_TIME_LIMIT},
    {"within", 0, 1, O_WITHIN},          {"target-ms", 0, 1, O_TARGET_MS},
    {"exhaustive-max", 0, 1, O_EXHAUSTIVE_MAX}, {"threads", 0, 1, O_THREADS},
    {"seed", 0, 1, O_SEED},              {"timeout", 0, 1, O_TIMEOUT},
    {"finalists", 0, 1, O_FINALISTS},   {"screen-ms", 0, 1, O_SCREEN_MS},
};

/* A whole number of at most max from num (the value as read), else a usage error. */
static int whole(const char *opt, const char *val, double num, double max, int *out)
{
    if (num > max || num != (double)(int)num)
        return bt_cli_usage_error("tune", "--%s needs a whole number, got '%s'", opt, val);
    *out = (int)num;
    return 0;
}

/* A setter's status: 0, or the exit status after saying why it refused (in the engine's words:
 * the option, its flag, its range). */
static int took(bt_status st, const bt_tune_options *o)
{
    if (st == BT_OK)
        return 0;
    bt_diag d = {0};
    snprintf(d.msg, sizeof d.msg, "%s", bt_tune_options_error(o));
    return bt_cli_fail(st, &d);
}

/* A numeric option into c's options: a non-negative decimal first, then each one's own range.
 * 0, or the exit status of a usage error. */
static int tune_number(int id, const char *opt, const char *val, tune_cmd *c)
{
    bt_tune_options *o = c->o;
    double num = 0;
    int whole_num = 0, rc = 0;
    if (id == O_TARGET_MS && !strcmp(val, "roofline"))
        return took(bt_tune_options_set_target_ms(o, -1), o);
    if (!bt_cli_parse_double(val, &num)) /* decimal, finite, not negative */
        return bt_cli_usage_error("tune", "--%s needs a non-negative decimal number, got '%s'",
                                  opt, val);
    switch (id) {
    case O_WARMUP_MS: return took(bt_tune_options_set_warmup_ms(o, num), o);
    case O_REP_MS: return took(bt_tune_options_set_rep_ms(o, num), o);
    case O_SCREEN_MS: return took(bt_tune_options_set_screen_ms(o, num), o);
    case O_MAX_CONFIGS:
    case O_BUDGET:
        if ((rc = whole(opt, val, num, 1e9, &whole_num)) != 0)
            return rc;
        return took(bt_tune_options_set_budget(o, whole_num), o);
    case O_TIME_LIMIT:
        c->time_limit_s = num;
        return took(bt_tune_options_set_time_limit_s(o, num), o);
    case O_WITHIN: return took(bt_tune_options_set_within_pct(o, num), o);
    case O_EXHAUSTIVE_MAX:
        if ((rc = whole(opt, val, num, 1e9, &whole_num)) != 0)
            return rc;
        return took(bt_tune_options_set_exhaustive_max(o, whole_num), o);
    case O_TIMEOUT: return took(bt_tune_options_set_timeout_s(o, num), o);
    case O_TARGET_MS:
        if (num <= 0)
            return bt_cli_usage_error("tune", "--target-ms needs a time above 0 or 'roofline', "
                                              "got '%s'", val);
        return took(bt_tune_options_set_target_ms(o, num), o);
    case O_THREADS:
        if (num > 1024 || num != (double)(int)num)
            return bt_cli_usage_error("tune", "--threads needs a whole number from 0 (all "
                                              "cores) to 1024, got '%s'", val);
        return took(bt_tune_options_set_threads(o, (int)num), o);
    case O_FINALISTS:
        if (num < 1 || num > 16 || num != (double)(int)num)
            return bt_cli_usage_error("tune", "--finalists needs a whole number from 1 to 16, "
                                              "got '%s'", val);
        return took(bt_tune_options_set_top_k(o, (int)num), o);
    default: { /* O_SEED */
        uint64_t seed = 0;
        if (!bt_cli_parse_u64(val, &seed))
            return bt_cli_usage_error("tune", "--seed needs a whole number from 0 to 2^64-1, "
                                              "got '%s'", val);
        return took(bt_tune_options_set_seed(o, seed), o);
    }
    }
}

/* --mode and --strategy. 0, or the exit status of a usage error. */
static int tune_word(int id, const char *val, bt_tune_options *o)
{
    if (id == O_MODE) {
        if (!strcmp(val, "tune"))
            return took(bt_tune_options_set_mode(o, BT_MODE_TUNE), o);
        if (!strcmp(val, "retune"))
            return took(bt_tune_options_set_mode(o, BT_MODE_RETUNE), o);
        return bt_cli_usage_error("tune", "--mode is tune or retune (wisdom-only applies to "
                                          "launches, not to an explicit tune), got '%s'", val);
    }
    for (int j = 0; j < bt_strategy_count(); j++)
        if (!strcasecmp(bt_strategy_name(j), val))
            return took(bt_tune_options_set_strategy(o, val), o);
    fprintf(stderr, "blocktune tune: unknown strategy '%s' (one of:", val);
    for (int j = 0; j < bt_strategy_count(); j++)
        fprintf(stderr, "%s %s", j ? "," : "", bt_strategy_name(j));
    fprintf(stderr, ")\n");
    return BT_EXIT_USAGE;
}

/* The command line into c (its sizes into names/values). 0, BT_CLI_HELP after the help, or the
 * exit status of a usage error. */
static int parse_tune(int argc, char **argv, tune_cmd *c, char (*names)[64], const char **values)
{
    bt_cli_parser P;
    bt_cli_begin(&P, "tune", tune_opts, sizeof tune_opts / sizeof tune_opts[0], BT_CLI_SIZES,
                 argc, argv);
    const char **slot[] = {[O_DEVICE] = &c->device, [O_DTYPE] = &c->dtype, [O_JSON] = &c->json,
                           [O_CSV] = &c->csv,       [O_HTML] = &c->html,   [O_RULES] = &c->rules,
                           [O_STORE] = &c->store};
    for (int id, rc = 0; (id = bt_cli_next(&P)) != BT_CLI_END; rc = 0) {
        const char *v = P.value;
        if (id == BT_CLI_HELP) {
            tune_help(stdout);
            return BT_CLI_HELP;
        } else if (id == BT_CLI_ERROR) {
            return BT_EXIT_USAGE;
        } else if (id == BT_CLI_ARG) {
            if (c->kernel)
                return bt_cli_usage_error("tune", "unexpected argument '%s'", v);
            c->kernel = v;
        } else if (id == BT_CLI_SIZE) {
            if (c->nset == 32)
                return bt_cli_usage_error("tune", "too many sizes");
            snprintf(names[c->nset], 64, "%s", P.name);
            values[c->nset++] = v;
        } else if (id == O_NO_BOUNDARY) {
            rc = took(bt_tune_options_set_verify_boundary(c->o, 0), c->o);
        } else if (id == O_GRAPH) {
            rc = took(bt_tune_options_set_graph(c->o, 1), c->o);
        } else if (id == O_MPI_MIXED) {
            c->mpi_flags = BT_MPI_MIXED_DEVICES;
        } else if (id == O_MODE || id == O_STRATEGY) {
            rc = tune_word(id, v, c->o);
        } else if (id >= O_NUMBERS) {
            rc = tune_number(id, P.name, v, c);
        } else {
            *slot[id] = v;
        }
        if (rc)
            return rc;
    }
    if (!c->kernel)
        return bt_cli_usage_error("tune", "which kernel? give a built-in name or a spec file");
    int rc = took(bt_tune_options_set_rules(c->o, c->rules), c->o);
    if (rc || (rc = took(bt_tune_options_set_store(c->o, c->store), c->o)) != 0)
        return rc;
    int to_stdout = 0;
    for (int i = O_JSON; i <= O_HTML; i++)
        to_stdout += *slot[i] && !strcmp(*slot[i], "-");
    if (to_stdout > 1)
        return bt_cli_usage_error("tune", "only one of --json, --csv and --html can be '-' "
                                          "(standard output)");
    return 0;
}

/* After the command line: the tune, supervised, over one size or a sweep. */
static int tune_parsed(tune_cmd *c)
{
    c->keep = !(c->store && !strcmp(c->store, "none"));
    static char mpi_dev[32]; /* under mpirun: rank 0 alone reports (docs/mpi.md) */
    int rc = bt_mpi_cli_begin(c->o, c->mpi_flags, &c->device, mpi_dev, sizeof mpi_dev,
                              &c->mpi_role);
    if (rc)
        return rc;
    if (c->mpi_role == 2)
        c->json = c->csv = c->html = NULL;
    const char *kernel = c->kernel, *json = c->json, *csv = c->csv, *html = c->html;
    rc = bt_sweep_plan(c->nset, c->set_names, c->set_values, json || html, &c->sweep);
    if (rc || !c->sweep)
        return bt_mpi_cli_end(c->o, rc ? rc : supervise(c));
    if (csv)
        rc = bt_cli_usage_error("tune", "--csv writes one tune's configs: not with a sweep (use --json)");
    else if ((json && !strcmp(json, "-")) || (html && !strcmp(html, "-")))
        rc = bt_cli_usage_error("tune", "a sweep writes its --json and --html to files, not '-'");
    else
        rc = bt_sweep_report(c->sweep, kernel, json, html, supervise(c));
    bt_sweep_free(c->sweep);
    return bt_mpi_cli_end(c->o, rc);
}

int bt_cmd_tune(int argc, char **argv)
{
    static char name_buf[32][64];
    static const char *set_values[32];
    const char *set_names[32];
    tune_cmd c = {0};
    if (bt_tune_options_create(&c.o) || bt_tune_options_set_progress(c.o, 1))
        return bt_cli_fail(BT_NOMEM, NULL);
    c.set_names = set_names;
    c.set_values = set_values;
    int rc = parse_tune(argc, argv, &c, name_buf, set_values);
    if (rc) {
        bt_tune_options_destroy(c.o);
        return rc == BT_CLI_HELP ? 0 : rc;
    }
    for (int i = 0; i < c.nset; i++)
        set_names[i] = name_buf[i];
    rc = tune_parsed(&c);
    bt_tune_options_destroy(c.o);
    return rc;
}

/* The tune itself, in the supervisor's child: the kernel, the problem, the device, the tune and
 * its report. stored_only (non-empty): measure nothing new, report what the store holds. */
static int run_tune(tune_cmd *c, const char *stored_only)
{
    const char *kernel = c->kernel;
    bt_diag d = {0};
    bt_status st;
    bt_kdesc *k = NULL;
    bt_problem *p = NULL;
    bt_device *dev = NULL;
    bt_kernel *kn = NULL;
    bt_result *r = NULL;
    int rc = 0;
    size_t n = strlen(kernel);
    st = ((n > 5 && !strcmp(kernel + n - 5, ".json")) || strchr(kernel, '/'))
             ? bt_kdesc_load_file(kernel, &k, &d)
             : bt_kdesc_builtin(kernel, &k, &d);
    if (st) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_problem_create(k, &p))) {
        rc = bt_cli_fail(st, NULL);
        goto out;
    }
    for (int i = 0; i < c->nset; i++) {
        if (bt_sweep_swept(c->sweep, c->set_names[i]))
            continue;
        int64_t v;
        if (!bt_cli_parse_i64(c->set_values[i], &v)) {
            rc = bt_cli_usage_error("tune", "size --%s needs a decimal integer, got '%s'",
                                    c->set_names[i], c->set_values[i]);
            goto out;
        }
        if ((st = bt_problem_set(p, c->set_names[i], v, &d))) {
            fprintf(stderr, "blocktune tune: %s--%s: %s%s\n",
                    st == BT_NOT_FOUND ? "unknown option or size " : "", c->set_names[i], d.msg,
                    st == BT_NOT_FOUND ? " (see 'blocktune tune --help')" : "");
            rc = BT_EXIT_USAGE;
            goto out;
        }
    }
    if (c->dtype && (st = bt_problem_set_dtype(p, c->dtype, &d))) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_device_open(c->device, &dev, &d))) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_kernel_create(dev, k, &kn, &d))) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    g_keep = c->keep;
    bt_kernel_set_hang_handler(kn, on_hang, NULL);
    bt_kernel_set_stored_only(kn, stored_only);
    if (c->sweep) {
        bt_sweep_names(c->sweep, bt_device_get_info(dev)->name, bt_kdesc_name(k));
        rc = bt_sweep_tune(c->sweep, kn, p, c->o, c->mpi_role != 2, c->keep && !stored_only[0],
                           RESTART_EXIT);
        goto out;
    }
    if ((st = bt_kernel_tune(kn, p, c->o, &r, &d))) {
        /* A fault poisoned the device for this process; the store holds every outcome so far,
         * the faulting config included: a fresh process resumes past it. */
        rc = bt_cli_fail(st, &d);
        if (bt_kernel_device_lost(kn) && c->keep && !stored_only[0])
            rc = RESTART_EXIT;
        goto out;
    }
    bt_result_set_time_limit_s(r, c->time_limit_s); /* the user's limit, not what was left */
    bool dash = (c->json && !strcmp(c->json, "-")) || (c->csv && !strcmp(c->csv, "-")) ||
                (c->html && !strcmp(c->html, "-"));
    bt_result_write_table(r, dash ? stderr : stdout);
    rc |= write_result(c->json, bt_result_write_json, r);
    rc |= write_result(c->csv, bt_result_write_csv, r);
    rc |= write_result(c->html, bt_result_write_html, r);
    if (!bt_result_winner(r, NULL, NULL))
        rc = 1;
    char store_note[2200];
    if (bt_result_store_note(r, store_note, sizeof store_note)) {
        fprintf(stderr, "blocktune tune: %s\n", store_note);
        rc = 1;
    }
out:
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    bt_device_destroy(dev);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    return rc;
}
