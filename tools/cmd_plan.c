/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_plan.c — `blocktune plan`: the analytic model over a kernel's space for a GPU of the
 * hardware table, with no device.
 */
#include "cli.h"
#include "cli_num.h"
#include "cli_opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void plan_help(FILE *f)
{
    fprintf(f,
        "usage: blocktune plan KERNEL --gpu NAME [sizes] [--dtype T] [--config k=v,...]\n"
        "                      [--rules SET] [--gpu-file FILE] [--json | --csv] [--all] [--exact]\n"
        "\n"
        "Analyses every config of KERNEL's space for a GPU from the hardware table, with no\n"
        "device: shared memory (stages included), estimated registers, blocks per SM and the\n"
        "resource that limits them, occupancy, waves, last-tile efficiency, vector alignment and\n"
        "tensor-core eligibility; eliminates configs that break the kernel's rules (each with\n"
        "every reason, in numbers); ranks the rest by a predicted time; prints the roofline and\n"
        "which configs are worth measuring.\n"
        "\n"
        "  KERNEL            a spec file (docs/spec.md), a T1 input file (docs/t1.md) or a\n"
        "                    built-in kernel:\n"
        "                    ");
    bt_cli_print_builtins(f, 20);
    fprintf(f,
        "  --gpu NAME        target GPU, matched loosely: h200, 'NVIDIA H200', a100-80gb ...\n"
        "                    ('blocktune gpus' lists them)\n"
        "  --gpu-file FILE   add or override GPUs from your own table (docs/gpus.md)\n"
        "  sizes             problem variables by name: --m 4096 --n 4096 --k 4096 (gemm),\n"
        "                    --rows R --cols C (softmax, layernorm), --n N (vector_add, reduce);\n"
        "                    also --set NAME=VALUE\n"
        "  --dtype T         fp32, fp16, bf16 ... (default: the kernel's first)\n"
        "  --config k=v,...  evaluate one config of your own (keys case-insensitive; every\n"
        "                    parameter must be given), e.g. --config BLOCK_M=96,BLOCK_N=128,...\n"
        "  --rules SET       rule set: triton (pow2 tiles...), cuda (any tile size), limits,\n"
        "                    all, or a comma list of rules (default: the kernel's own)\n"
        "  --json | --csv    machine-readable output (docs/plan-json.md)\n"
        "  --all             list every candidate and every eliminated config\n"
        "  --exact           compile every candidate for the GPU's architecture (no GPU needed;\n"
        "                    NVRTC, or Triton for a Triton spec: BLOCKTUNE_PYTHON names its\n"
        "                    python) and show the exact registers, spills, shared memory and\n"
        "                    occupancy beside the estimates, flagging large disagreements\n"
        "\n"
        "example:\n"
        "  blocktune plan gemm --gpu h200 --m 4096 --n 4096 --k 4096 --dtype fp16\n");
    bt_cli_exit_help(f, "--exact could not compile");
}

static int load_kernel(const char *name, bt_kdesc **k, bt_diag *d)
{
    size_t n = strlen(name);
    if ((n > 5 && !strcmp(name + n - 5, ".json")) || strchr(name, '/'))
        return bt_kdesc_load_file(name, k, d);
    return bt_kdesc_builtin(name, k, d);
}

enum { O_GPU, O_GPU_FILE, O_DTYPE, O_CONFIG, O_RULES, O_SET, O_JSON, O_CSV, O_ALL, O_EXACT };
static const bt_cli_opt plan_opts[] = {
    {"gpu", 0, 1, O_GPU},       {"gpu-file", 0, 1, O_GPU_FILE}, {"dtype", 0, 1, O_DTYPE},
    {"config", 0, 1, O_CONFIG}, {"rules", 0, 1, O_RULES},       {"set", 0, 1, O_SET},
    {"json", 0, 0, O_JSON},     {"csv", 0, 0, O_CSV},           {"all", 0, 0, O_ALL},
    {"exact", 0, 0, O_EXACT},
};

/* The command line of plan. */
typedef struct plan_args {
    const char *kernel, *gpu_name, *gpu_file, *dtype, *config, *rules;
    int json, csv, all, exact, nset;
    char set_names[32][64];
    const char *set_values[32];
} plan_args;

/* A size (--NAME V or --set NAME=V): kept by name, checked once the kernel is known. */
static int add_size(plan_args *A, const char *name, size_t len, const char *value)
{
    if (A->nset == 32)
        return bt_cli_usage_error("plan", "too many sizes");
    snprintf(A->set_names[A->nset], sizeof A->set_names[0], "%.*s", (int)len, name);
    A->set_values[A->nset++] = value;
    return 0;
}

/* 0, BT_CLI_HELP after the help, or an exit status after a usage error. */
static int parse_plan(int argc, char **argv, plan_args *A)
{
    bt_cli_parser P;
    bt_cli_begin(&P, "plan", plan_opts, sizeof plan_opts / sizeof plan_opts[0], BT_CLI_SIZES,
                 argc, argv);
    for (int id, rc = 0; (id = bt_cli_next(&P)) != BT_CLI_END;) {
        const char *v = P.value, *e;
        switch (id) {
        case BT_CLI_HELP: plan_help(stdout); return BT_CLI_HELP;
        case BT_CLI_ERROR: return BT_EXIT_USAGE;
        case BT_CLI_ARG:
            if (A->kernel)
                return bt_cli_usage_error("plan", "unexpected argument '%s'", v);
            A->kernel = v;
            break;
        case BT_CLI_SIZE: rc = add_size(A, P.name, strlen(P.name), v); break;
        case O_SET:
            if (!(e = strchr(v, '=')) || e == v)
                return bt_cli_usage_error("plan", "--set needs NAME=VALUE, got '%s'", v);
            rc = add_size(A, v, (size_t)(e - v), e + 1);
            break;
        case O_GPU: A->gpu_name = v; break;
        case O_GPU_FILE: A->gpu_file = v; break;
        case O_DTYPE: A->dtype = v; break;
        case O_CONFIG: A->config = v; break;
        case O_RULES: A->rules = v; break;
        case O_JSON: A->json = 1; break;
        case O_CSV: A->csv = 1; break;
        case O_ALL: A->all = 1; break;
        case O_EXACT: A->exact = 1; break;
        }
        if (rc)
            return rc;
    }
    if (!A->kernel)
        return bt_cli_usage_error("plan", "which kernel? give a built-in name or a spec file");
    if (!A->gpu_name)
        return bt_cli_usage_error("plan", "missing --gpu NAME (for example --gpu h200)");
    if (A->json && A->csv)
        return bt_cli_usage_error("plan", "--json and --csv exclude each other");
    return 0;
}

int bt_cmd_plan(int argc, char **argv)
{
    plan_args A = {0};
    int prc = parse_plan(argc, argv, &A);
    if (prc)
        return prc == BT_CLI_HELP ? 0 : prc;
    const char *kernel = A.kernel, *gpu_name = A.gpu_name, *gpu_file = A.gpu_file;
    const char *dtype = A.dtype, *config = A.config, *rules = A.rules;
    int json = A.json, csv = A.csv, all = A.all, exact = A.exact, nset = A.nset;

    bt_diag d = {0};
    bt_status st;
    bt_kdesc *k = NULL;
    bt_gpudb *db = NULL;
    bt_problem *p = NULL;
    bt_plan *pl = NULL;
    bt_config *only = NULL;
    int rc = 0;
    if ((st = load_kernel(kernel, &k, &d)) != BT_OK) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_gpudb_load_default(&db, &d)) != BT_OK ||
        (gpu_file && (st = bt_gpudb_merge_file(db, gpu_file, &d)) != BT_OK)) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    const bt_gpu *gpu;
    if ((st = bt_gpudb_find(db, gpu_name, &gpu, &d)) != BT_OK) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    if ((st = bt_problem_create(k, &p)) != BT_OK) {
        rc = bt_cli_fail(st, NULL);
        goto out;
    }
    for (int i = 0; i < nset; i++) {
        int64_t v;
        if (!bt_cli_parse_i64(A.set_values[i], &v)) {
            rc = bt_cli_usage_error("plan", "size --%s needs a decimal integer, got '%s'",
                                    A.set_names[i], A.set_values[i]);
            goto out;
        }
        if ((st = bt_problem_set(p, A.set_names[i], v, &d)) != BT_OK) {
            if (st == BT_NOT_FOUND)
                fprintf(stderr, "blocktune plan: unknown option or size --%s: %s (see 'blocktune "
                                "plan --help')\n", A.set_names[i], d.msg);
            else
                fprintf(stderr, "blocktune plan: %s\n", d.msg);
            rc = BT_EXIT_USAGE;
            goto out;
        }
    }
    if (dtype && (st = bt_problem_set_dtype(p, dtype, &d)) != BT_OK) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    bt_plan_options opts = BT_PLAN_OPTIONS_INIT;
    opts.rules = rules;
    opts.exact = exact;
    if (config) {
        if ((st = bt_kdesc_parse_config(k, config, &only, &d)) != BT_OK) {
            rc = bt_cli_fail(st, &d);
            goto out;
        }
        opts.only = only;
    }
    if ((st = bt_plan_create(k, p, gpu, &opts, &pl, &d)) != BT_OK) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    st = json ? bt_plan_write_json(pl, stdout)
              : csv ? bt_plan_write_csv(pl, stdout) : bt_plan_write_table(pl, stdout, all);
    if (st != BT_OK)
        rc = bt_cli_fail(st, NULL);
out:
    bt_config_destroy(only);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_gpudb_destroy(db);
    bt_kdesc_destroy(k);
    return rc;
}
