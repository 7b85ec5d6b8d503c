/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_plan.c — `blocktune plan`: the analytic model over a kernel's space for a GPU of the
 * hardware table, with no device.
 */
#include "cli.h"
#include "cli_num.h"

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
}

static int load_kernel(const char *name, bt_kdesc **k, bt_diag *d)
{
    size_t n = strlen(name);
    if ((n > 5 && !strcmp(name + n - 5, ".json")) || strchr(name, '/'))
        return bt_kdesc_load_file(name, k, d);
    return bt_kdesc_builtin(name, k, d);
}

int bt_cmd_plan(int argc, char **argv)
{
    const char *kernel = NULL, *gpu_name = NULL, *gpu_file = NULL, *dtype = NULL, *config = NULL,
               *rules = NULL;
    int json = 0, csv = 0, all = 0, exact = 0;
    const char *set_names[32];
    const char *set_values[32];
    int nset = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            plan_help(stdout);
            return 0;
        }
        if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!strcmp(a, "--csv")) {
            csv = 1;
            continue;
        }
        if (!strcmp(a, "--all")) {
            all = 1;
            continue;
        }
        if (!strcmp(a, "--exact")) {
            exact = 1;
            continue;
        }
        if (!strncmp(a, "--", 2)) {
            const char *opt = a + 2;
            const char *val = NULL;
            char optbuf[64];
            const char *eq = strchr(opt, '=');
            if (eq) {
                snprintf(optbuf, sizeof optbuf, "%.*s", (int)(eq - opt), opt);
                opt = optbuf;
                val = eq + 1;
            } else if (i + 1 < argc) {
                val = argv[++i];
            } else {
                return bt_cli_usage_error("plan", "option --%s needs a value", opt);
            }
            if (!strcmp(opt, "gpu"))
                gpu_name = val;
            else if (!strcmp(opt, "gpu-file"))
                gpu_file = val;
            else if (!strcmp(opt, "dtype"))
                dtype = val;
            else if (!strcmp(opt, "config"))
                config = val;
            else if (!strcmp(opt, "rules"))
                rules = val;
            else if (!strcmp(opt, "set")) {
                const char *e = strchr(val, '=');
                if (!e || e == val)
                    return bt_cli_usage_error("plan", "--set needs NAME=VALUE, got '%s'", val);
                if (nset == 32)
                    return bt_cli_usage_error("plan", "too many sizes");
                static char names[32][64];
                snprintf(names[nset], sizeof names[nset], "%.*s", (int)(e - val), val);
                set_names[nset] = names[nset];
                set_values[nset++] = e + 1;
            } else {
                if (nset == 32)
                    return bt_cli_usage_error("plan", "too many sizes");
                set_names[nset] = opt; /* a problem variable: checked once the kernel is known */
                set_values[nset++] = val;
                if (opt == optbuf) { /* keep a copy: optbuf is reused */
                    static char keep[32][64];
                    snprintf(keep[nset - 1], sizeof keep[0], "%s", optbuf);
                    set_names[nset - 1] = keep[nset - 1];
                }
            }
            continue;
        }
        if (kernel)
            return bt_cli_usage_error("plan", "unexpected argument '%s'", a);
        kernel = a;
    }
    if (!kernel)
        return bt_cli_usage_error("plan", "which kernel? give a built-in name or a spec file");
    if (!gpu_name)
        return bt_cli_usage_error("plan", "missing --gpu NAME (for example --gpu h200)");
    if (json && csv)
        return bt_cli_usage_error("plan", "--json and --csv exclude each other");

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
        if (!bt_cli_parse_i64(set_values[i], &v)) {
            rc = bt_cli_usage_error("plan", "size --%s needs a decimal integer, got '%s'",
                                    set_names[i], set_values[i]);
            goto out;
        }
        if ((st = bt_problem_set(p, set_names[i], v, &d)) != BT_OK) {
            if (st == BT_NOT_FOUND)
                fprintf(stderr, "blocktune plan: unknown option or size --%s: %s\n", set_names[i], d.msg);
            else
                fprintf(stderr, "blocktune plan: %s\n", d.msg);
            rc = 2;
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
