/*
 * cmd_tune.c — `blocktune tune`: compile, verify, measure and select on a device, and print the
 * seeds' report.
 */
#include "cli.h"

#include "engine/record.h"
#include "search/strategy.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void tune_help(FILE *f)
{
    size_t ns;
    const bt__strategy *const *all = bt__strategies(&ns);
    fprintf(f,
        "usage: blocktune tune KERNEL|SPEC.json [--device ID] [sizes] [--dtype T]\n"
        "                      [--strategy NAME] [--budget N] [--time-limit S]\n"
        "                      [--exhaustive-max N] [--target-ms T|roofline] [--within P]\n"
        "                      [--seed K] [--threads N] [--finalists N]\n"
        "                      [--warmup-ms MS] [--rep-ms MS] [--rules SET] [--no-boundary]\n"
        "                      [--json FILE] [--store PATH|none] [--mode tune|retune] [--graph]\n"
        "\n"
        "Tunes KERNEL for one problem on a device: the model prunes the space (with reasons),\n"
        "then a search strategy proposes valid configs in rounds of --threads configs; each\n"
        "round is compiled in parallel, verified against a reference on random inputs with\n"
        "poisoned outputs (and at the spec's boundary sizes), timed with device events after a\n"
        "cache flush, and every outcome (a failure too) goes back to the strategy, until the\n"
        "strategy is done or a budget stops it. The best few are re-measured interleaved\n"
        "before the winner is declared with its margin over the runner-up.\n"
        "\n"
        "  KERNEL            built-in: gemm, softmax, layernorm, reduce, vector_add (CUDA and\n"
        "                    OpenCL); gemm_mma (tensor cores, sm_80+), gemm_wgmma (sm_90a: TMA +\n"
        "                    wgmma) on CUDA only; or a spec file (docs/spec.md)\n"
        "  --device ID       opencl:0, cuda:0 ... (default: a GPU, else a CPU device;\n"
        "                    'blocktune devices' lists them)\n"
        "  sizes             problem variables by name, e.g. --n 16777216, --m 512 --n 512 --k 512\n"
        "  --dtype T         fp32, fp16, bf16 (default: the kernel's first)\n"
        "  --strategy NAME   search strategy (default: exhaustive when the plan has at most\n"
        "                    --exhaustive-max valid configs, else forest), one of:\n");
    for (size_t i = 0; i < ns; i++)
        fprintf(f, "                      %-11s %s\n", all[i]->name, all[i]->summary);
    fprintf(f,
        "  --budget N        measure at most N configs, failures included (default: exhaustive\n"
        "                    measures every valid config, other strategies 64 unless\n"
        "                    --time-limit is given); --max-configs N is the same\n"
        "  --time-limit S    aim to end the whole tune within S seconds: no round of the search\n"
        "                    starts that would end too late to leave the final re-measurement\n"
        "                    its time (the first round always runs)\n"
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
        "  --warmup-ms MS    warm-up budget per config (default 25)\n"
        "  --rep-ms MS       measurement budget per config (default 100)\n"
        "  --rules SET       rule set override (triton, cuda, limits, all)\n"
        "  --no-boundary     skip verification at the boundary sizes\n"
        "  --timeout S       a config whose run takes longer than S seconds is recorded as timed\n"
        "                    out; a kernel that hangs is recorded and the tune restarts past it\n"
        "                    (default 10)\n"
        "  --graph           time replays of graph-captured launches (CUDA): for kernels shorter\n"
        "                    than ~20 us, where gaps between launches dominate\n"
        "  --json FILE       also write the full result as JSON (docs/tune-json.md)\n"
        "  --store PATH      the results store (default: $BLOCKTUNE_CACHE_DIR/blocktune.db, else\n"
        "                    ~/.cache/blocktune/blocktune.db); every measurement is committed as\n"
        "                    it finishes, so a killed tune resumes; 'none' keeps nothing. A write\n"
        "                    that fails, or a damaged store (refused), ends the tune with exit\n"
        "                    status 1 after its report, saying what was not stored\n"
        "  --mode MODE       tune (default): reuse stored measurements; retune: measure again\n"
        "\n"
        "examples:\n"
        "  blocktune tune vector_add --n 16777216\n"
        "  blocktune tune gemm --m 4096 --n 4096 --k 4096 --strategy forest --budget 200\n");
}

/* Replaces this process with a fresh run of the same command: the store holds every outcome so
 * far (the failed config included), so the new run resumes past it. At most 16 times. */
static char **g_argv;
static int restart(const char *why)
{
    const char *n = getenv("BLOCKTUNE_RESTARTS");
    int restarts = n ? atoi(n) : 0;
    if (restarts >= 16) {
        fprintf(stderr, "blocktune tune: %s, and 16 restarts already: giving up\n", why);
        return -1;
    }
    char buf[16];
    snprintf(buf, sizeof buf, "%d", restarts + 1);
    setenv("BLOCKTUNE_RESTARTS", buf, 1);
    fprintf(stderr, "blocktune tune: %s\nblocktune tune: restarting (%d) to resume from the store\n",
            why, restarts + 1);
    fflush(NULL);
    execv("/proc/self/exe", g_argv);
    fprintf(stderr, "blocktune tune: cannot restart: %s\n", strerror(errno));
    return -1;
}

static void on_hang(void *user)
{
    (void)user;
    if (restart("a kernel hung (recorded as timed out)") != 0)
        _exit(1); /* a hung kernel cannot be stopped any other way */
}

int bt_cmd_tune(int argc, char **argv)
{
    g_argv = argv - 1; /* main's argv: the command line to run again */
    const char *kernel = NULL, *device = NULL, *dtype = NULL, *json = NULL, *rules = NULL;
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.progress = 1;
    const char *set_names[32], *set_values[32];
    static char name_buf[32][64];
    int nset = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            tune_help(stdout);
            return 0;
        }
        if (!strcmp(a, "--no-boundary")) {
            o.verify_boundary = 0;
            continue;
        }
        if (!strcmp(a, "--graph")) {
            o.graph = 1;
            continue;
        }
        if (strncmp(a, "--", 2)) {
            if (kernel)
                return bt_cli_usage_error("tune", "unexpected argument '%s'", a);
            kernel = a;
            continue;
        }
        char opt[64];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq) {
            snprintf(opt, sizeof opt, "%.*s", (int)(eq - a - 2), a + 2);
            val = eq + 1;
        } else {
            snprintf(opt, sizeof opt, "%s", a + 2);
            if (i + 1 >= argc)
                return bt_cli_usage_error("tune", "option --%s needs a value", opt);
            val = argv[++i];
        }
        char *end;
        double num = strtod(val, &end);
        bool numeric = end != val && *end == '\0';
        if (!strcmp(opt, "device"))
            device = val;
        else if (!strcmp(opt, "dtype"))
            dtype = val;
        else if (!strcmp(opt, "json"))
            json = val;
        else if (!strcmp(opt, "rules"))
            rules = val;
        else if (!strcmp(opt, "store"))
            o.store = val;
        else if (!strcmp(opt, "mode")) {
            if (!strcmp(val, "tune"))
                o.mode = BT_MODE_TUNE;
            else if (!strcmp(val, "retune"))
                o.mode = BT_MODE_RETUNE;
            else
                return bt_cli_usage_error("tune", "--mode is tune or retune (wisdom-only applies to "
                                                  "launches, not to an explicit tune), got '%s'", val);
        }
        else if (!strcmp(opt, "target-ms") && !strcmp(val, "roofline"))
            o.target_ms = -1;
        else if (!strcmp(opt, "strategy")) {
            if (!bt__strategy_find(val)) {
                size_t ns;
                const bt__strategy *const *all = bt__strategies(&ns);
                fprintf(stderr, "blocktune tune: unknown strategy '%s' (one of:", val);
                for (size_t j = 0; j < ns; j++)
                    fprintf(stderr, "%s %s", j ? "," : "", all[j]->name);
                fprintf(stderr, ")\n");
                return 2;
            }
            o.strategy = val;
        }
        else if (!strcmp(opt, "warmup-ms") || !strcmp(opt, "rep-ms") || !strcmp(opt, "max-configs") ||
                 !strcmp(opt, "budget") || !strcmp(opt, "time-limit") ||
                 !strcmp(opt, "within") || !strcmp(opt, "target-ms") ||
                 !strcmp(opt, "exhaustive-max") || !strcmp(opt, "threads") ||
                 !strcmp(opt, "seed") || !strcmp(opt, "timeout") || !strcmp(opt, "finalists")) {
            if (!numeric || num < 0)
                return bt_cli_usage_error("tune", "--%s needs a non-negative number, got '%s'", opt, val);
            if (!strcmp(opt, "warmup-ms"))
                o.warmup_ms = num;
            else if (!strcmp(opt, "rep-ms"))
                o.rep_ms = num;
            else if (!strcmp(opt, "max-configs") || !strcmp(opt, "budget")) {
                if (num > 1e9 || num != (double)(int)num)
                    return bt_cli_usage_error("tune", "--%s needs a whole number, got '%s'", opt, val);
                o.budget = (int)num;
            } else if (!strcmp(opt, "time-limit"))
                o.time_limit_s = num;
            else if (!strcmp(opt, "target-ms")) {
                if (num <= 0)
                    return bt_cli_usage_error("tune", "--target-ms needs a time above 0 or 'roofline', got '%s'", val);
                o.target_ms = num;
            } else if (!strcmp(opt, "within"))
                o.within_pct = num;
            else if (!strcmp(opt, "exhaustive-max")) {
                if (num > 1e9 || num != (double)(int)num)
                    return bt_cli_usage_error("tune", "--%s needs a whole number, got '%s'", opt, val);
                o.exhaustive_max = (int)num;
            }
            else if (!strcmp(opt, "threads"))
                o.threads = (int)num;
            else if (!strcmp(opt, "finalists")) {
                if (num < 1 || num > 16 || num != (double)(int)num)
                    return bt_cli_usage_error("tune", "--finalists needs a whole number from 1 to 16, got '%s'", val);
                o.top_k = (int)num;
            }
            else if (!strcmp(opt, "timeout"))
                o.timeout_s = num;
            else
                o.seed = (uint64_t)num;
        } else {
            if (nset == 32)
                return bt_cli_usage_error("tune", "too many sizes");
            snprintf(name_buf[nset], sizeof name_buf[nset], "%s", opt);
            set_names[nset] = name_buf[nset];
            set_values[nset++] = val;
        }
    }
    o.rules = rules;
    if (!kernel)
        return bt_cli_usage_error("tune", "which kernel? give a built-in name or a spec file");
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
    for (int i = 0; i < nset; i++) {
        char *end;
        errno = 0;
        long long v = strtoll(set_values[i], &end, 0);
        if (errno || end == set_values[i] || *end) {
            rc = bt_cli_usage_error("tune", "size --%s needs an integer, got '%s'", set_names[i], set_values[i]);
            goto out;
        }
        if ((st = bt_problem_set(p, set_names[i], v, &d))) {
            fprintf(stderr, "blocktune tune: unknown option or size --%s: %s\n", set_names[i], d.msg);
            rc = 2;
            goto out;
        }
    }
    if (dtype && (st = bt_problem_set_dtype(p, dtype, &d))) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_device_open(device, &dev, &d))) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_kernel_create(dev, k, &kn, &d))) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    {
        /* the built-in gemm runs on the CUDA cores: say which families use the tensor cores */
        const bt_device_info *di = bt_device_get_info(dev);
        const char *dt = dtype ? dtype : "fp32";
        if (!strcmp(kernel, "gemm") && di && di->props.cc_major >= 8 &&
            (!strcmp(dt, "fp16") || !strcmp(dt, "bf16")))
            fprintf(stderr, "blocktune tune: note: gemm is the CUDA-core GEMM; on tensor cores, "
                            "tune gemm_mma (sm_80 and newer)%s\n",
                    di->props.cc_major == 9 ? " or gemm_wgmma (sm_90a: TMA + wgmma)" : "");
    }
    if (!(o.store && !strcmp(o.store, "none")))
        bt_kernel_set_hang_handler(kn, on_hang, NULL);
    if ((st = bt__kernel_tune_opts(kn, p, &o, &r, &d))) {
        /* A fault poisoned the device for this process; the store holds every outcome so far,
         * the faulting config included: a fresh process resumes past it. */
        if (bt_kernel_device_lost(kn) && !(o.store && !strcmp(o.store, "none")))
            restart(d.msg);
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    bt_result_write_table(r, stdout);
    if (json) {
        FILE *f = fopen(json, "w");
        if (!f || bt_result_write_json(r, f) != BT_OK) {
            fprintf(stderr, "blocktune tune: cannot write %s: %s\n", json, strerror(errno));
            rc = 1;
        }
        if (f)
            fclose(f);
    }
    if (!bt_result_winner(r, NULL, NULL))
        rc = 1;
    char store_note[2200];
    if (bt__result_store_note(r, store_note, sizeof store_note)) {
        fprintf(stderr, "blocktune tune: %s\n", store_note);
        rc = 1;
    }
out:
    bt_result_free(r);
    bt_kernel_destroy(kn);
    bt_device_close(dev);
    bt_problem_free(p);
    bt_kdesc_free(k);
    return rc;
}
