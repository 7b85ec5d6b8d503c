/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_precompile.c — `blocktune precompile`: builds, with no device, the binary of every winner
 * of wisdom (the shipped wisdom, or the files given) for the GPU it was tuned on, where a first
 * launch looks before it compiles (bt_precompile).
 */
#include "cli.h"
#include "cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPECS 64

static void usage(FILE *f)
{
    fprintf(
        f, "usage: blocktune precompile [--out DIR [--prune]] [--gpu NAME] [--spec FILE]...\n"
           "                            [--threads N] [--all] [WISDOM FILE|DIR]...\n"
           "\n"
           "Builds, with no GPU, the binary of every winner that wisdom holds, for the GPU it was\n"
           "tuned on, and keeps it where a key's first launch looks before it compiles: a\n"
           "wisdom-only first launch then loads the binary (milliseconds) instead of compiling\n"
           "it (tens to hundreds of milliseconds with NVRTC, seconds with Triton). Each entry is\n"
           "looked up the way a launch of its key looks it up; one a launch would never take (tuned\n"
           "for another source of the kernel, a kernel or GPU blocktune does not know) is skipped\n"
           "and listed with the reason. A binary already there is not built again. The driver\n"
           "checks a binary when it loads it: one it cannot run is compiled as before.\n"
           "\n"
           "  WISDOM           wisdom files (blocktune cache export) or folders of them; none:\n"
           "                   the shipped wisdom, the files a launch reads without being told.\n"
           "  --out DIR        the folder to write (made when missing); default: the kernel\n"
           "                   cache folder (<cache dir>/kernels), read by every launch of this\n"
           "                   user. A package builds into a folder it installs as\n"
           "                   <datadir>/blocktune/precompiled, read by every user (docs/wisdom.md).\n"
           "  --gpu NAME       build for this row of the hardware table (blocktune gpus) whatever\n"
           "                   device the wisdom names; default: the row of each entry's device.\n"
           "  --spec FILE      the spec of a kernel that is not built in, for its entries. May be\n"
           "                   repeated.\n"
           "  --threads N      compile threads (default: every core).\n"
           "  --prune          then remove the binaries of --out DIR that no entry uses (what an\n"
           "                   older wisdom or kernel source left); only with --out.\n"
           "  --all            list every entry, not only those skipped or failed.\n"
           "  -h, --help       show this help.\n"
           "\n"
           "CUDA C kernels need NVRTC (the CUDA toolkit's libnvrtc), Triton kernels python3 with\n"
           "triton ($BLOCKTUNE_PYTHON); OpenCL binaries are made by the driver on the device, so\n"
           "OpenCL entries are skipped.\n"
           "\n"
           "examples:\n"
           "  blocktune precompile                         the shipped wisdom, into the kernel cache\n"
           "  blocktune cache export h200.json && blocktune precompile h200.json\n"
           "  blocktune precompile --out pkg/share/blocktune/precompiled\n");
    bt_cli_exit_help(f, "an entry failed to compile, or the folder could not be written");
}

enum { O_OUT, O_GPU, O_SPEC, O_THREADS, O_ALL, O_PRUNE };
static const bt_cli_opt opts[] = {{"out", 0, 1, O_OUT},     {"gpu", 0, 1, O_GPU},
                                  {"spec", 0, 1, O_SPEC},   {"threads", 0, 1, O_THREADS},
                                  {"all", 0, 0, O_ALL},     {"prune", 0, 0, O_PRUNE}};

int bt_cmd_precompile(int argc, char **argv)
{
    bt_precompile_options *o = NULL;
    if (bt_precompile_options_create(&o) != BT_OK)
        return bt_cli_fail(BT_NOMEM, NULL);
    bt_kdesc *specs[MAX_SPECS];
    int nspecs = 0, all = 0, prune = 0, out_given = 0, rc = BT_EXIT_OK;
    bt_cli_parser P;
    bt_cli_begin(&P, "precompile", opts, (int)(sizeof opts / sizeof *opts), 0, argc, argv);
    bt_diag d = BT_DIAG_INIT;
    for (int id; rc == BT_EXIT_OK && (id = bt_cli_next(&P)) != BT_CLI_END;) {
        bt_status st = BT_OK;
        if (id == BT_CLI_HELP) {
            usage(stdout);
            goto out;
        } else if (id == BT_CLI_ERROR) {
            rc = BT_EXIT_USAGE;
        } else if (id == O_OUT) {
            out_given = 1;
            st = bt_precompile_options_set_output(o, P.value);
        } else if (id == O_PRUNE) {
            prune = 1;
            st = bt_precompile_options_set_prune(o, 1);
        } else if (id == O_GPU) {
            st = bt_precompile_options_set_gpu(o, P.value);
        } else if (id == O_THREADS) {
            char *end;
            long n = strtol(P.value, &end, 10);
            if (*end || n < 0 || n > 4096)
                rc = bt_cli_usage_error("precompile", "--threads takes a count (0: every core), "
                                        "not '%s'", P.value);
            else
                st = bt_precompile_options_set_threads(o, (int)n);
        } else if (id == O_ALL) {
            all = 1;
        } else if (id == O_SPEC) {
            if (nspecs == MAX_SPECS) {
                rc = bt_cli_usage_error("precompile", "at most %d --spec options", MAX_SPECS);
            } else if ((st = bt_kdesc_load_file(P.value, &specs[nspecs], &d)) == BT_OK) {
                st = bt_precompile_options_add_kernel(o, specs[nspecs++]);
            } else {
                bt_cli_fail(st, &d);
                rc = BT_EXIT_USAGE;
                st = BT_OK;
            }
        } else {
            st = bt_precompile_options_add_wisdom(o, P.value);
        }
        if (st != BT_OK)
            rc = bt_cli_fail(st, NULL);
    }
    if (rc == BT_EXIT_OK && prune && !out_given)
        rc = bt_cli_usage_error("precompile", "--prune needs --out DIR (a folder of precompiled "
                                "binaries alone: the kernel cache holds other binaries too)");
    if (rc != BT_EXIT_OK)
        goto out;
    bt_precompile_options_set_progress(o, 1);
    bt_precompile_result *r = NULL;
    bt_status st = bt_precompile(o, &r, &d);
    if (st != BT_OK) {
        rc = bt_cli_fail(st, &d);
        goto out;
    }
    int failed = 0;
    bt_precompile_result_counts(r, NULL, NULL, NULL, &failed);
    if (bt_precompile_result_write(r, stdout, all) != BT_OK || fflush(stdout) != 0 || failed)
        rc = BT_EXIT_FAIL;
    bt_precompile_result_destroy(r);
out:
    for (int i = 0; i < nspecs; i++)
        bt_kdesc_destroy(specs[i]);
    bt_precompile_options_destroy(o);
    return rc;
}
