/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_gpus.c — `blocktune gpus`: prints the hardware table (every row as a table, one row in full
 * with the source of its numbers, or either as a gpus.json document), after overlaying the user's
 * --gpu-file tables.
 */
#include "cli.h"
#include "cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPU_FILES 16

static void usage(FILE *f)
{
    fprintf(
        f, "usage: blocktune gpus [--gpu-file FILE]... [--json] [NAME]\n"
           "\n"
           "Prints the hardware table: the GPUs blocktune can plan for without a device. A row\n"
           "holds the limits the occupancy model uses (SMs, threads, warps, blocks, registers,\n"
           "shared memory per SM and per block), the memory system (L2, capacity, bandwidth) and\n"
           "the dense peak rates the roofline uses, with the documents the numbers come from.\n"
           "\n"
           "  NAME             show one GPU in full, with its ridge points and sources. Matching\n"
           "                   is loose: case, spaces, '-', '_' and a leading NVIDIA, GeForce or\n"
           "                   Tesla are ignored, aliases count, and a unique prefix or part of a\n"
           "                   name is enough: 'h200', \"NVIDIA H200\", a100-sxm4-80gb, 4090.\n"
           "                   Plain 'a100' means A100-SXM4-80GB, 'h100' means H100-SXM.\n"
           "  --gpu-file FILE  overlay FILE (the same format) on the table: its rows replace the\n"
           "                   rows of the same name and add the others. May be repeated.\n"
           "  --json           print the rows as a gpus.json document instead, a starting point\n"
           "                   for a --gpu-file of your own.\n"
           "  -h, --help       show this help.\n"
           "\n"
           "The table is $BLOCKTUNE_DATA_DIR/gpus.json if there is one, else the installed\n"
           "gpus.json, else the copy built into blocktune. docs/gpus.md describes the format.\n"
           "Peaks are dense (no structured sparsity), in TFLOP/s (int8: TOP/s); tensor-core\n"
           "peaks of GeForce cards are those with fp32 accumulation.\n"
           "\n"
           "examples:\n"
           "  blocktune gpus                              the whole table\n"
           "  blocktune gpus h200                         one GPU in full\n"
           "  blocktune gpus --json H100-SXM > my.json    edit the name and numbers, then:\n"
           "  blocktune gpus --gpu-file my.json           your GPU beside the others\n");
    bt_cli_exit_help(f, "the table could not be read or written");
}

/* "228" for whole units, else "1.5". */
static void fmt_units(char *buf, size_t size, int64_t bytes, int64_t unit)
{
    if (bytes % unit == 0)
        snprintf(buf, size, "%lld", (long long)(bytes / unit));
    else
        snprintf(buf, size, "%.1f", (double)bytes / (double)unit);
}

/* A peak: "-" where the unit does not exist. */
static void fmt_peak(char *buf, size_t size, double v)
{
    if (v > 0)
        snprintf(buf, size, "%g", v);
    else
        snprintf(buf, size, "-");
}

static void print_table(const bt_gpudb *db)
{
    size_t n = bt_gpudb_count(db);
    int w = 4;
    for (size_t i = 0; i < n; i++) {
        int l = (int)strlen(bt_gpudb_at(db, i)->name);
        if (l > w)
            w = l;
    }
    printf("%-*s  %-7s %-4s %4s %8s %8s %6s %7s   %s\n", w, "", "", "", "", "smem/SM", "smem/blk",
           "L2", "mem BW", "--------- dense TFLOP/s ---------");
    printf("%-*s  %-7s %-4s %4s %8s %8s %6s %7s   %7s %8s %8s %7s\n", w, "name", "arch", "cc",
           "SMs", "KiB", "opt-in", "MiB", "GB/s", "fp32", "fp16 TC", "bf16 TC", "fp8 TC");
    for (size_t i = 0; i < n; i++) {
        const bt_gpu *g = bt_gpudb_at(db, i);
        char cc[16], sm[32], blk[32], l2[32], p[4][32];
        if (g->cc_major || g->cc_minor)
            snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        else
            snprintf(cc, sizeof cc, "-");
        fmt_units(sm, sizeof sm, g->smem_per_sm, 1024);
        fmt_units(blk, sizeof blk, g->smem_per_block_optin, 1024);
        fmt_units(l2, sizeof l2, g->l2_bytes, 1024 * 1024);
        fmt_peak(p[0], sizeof p[0], g->peak_tflops[BT_PEAK_FP32]);
        fmt_peak(p[1], sizeof p[1], g->peak_tflops[BT_PEAK_FP16_TC]);
        fmt_peak(p[2], sizeof p[2], g->peak_tflops[BT_PEAK_BF16_TC]);
        fmt_peak(p[3], sizeof p[3], g->peak_tflops[BT_PEAK_FP8_TC]);
        printf("%-*s  %-7s %-4s %4d %8s %8s %6s %7g   %7s %8s %8s %7s\n", w, g->name, g->arch, cc,
               g->sm_count, sm, blk, l2, g->mem_bw_gbps, p[0], p[1], p[2], p[3]);
    }
    printf("\n%zu GPUs; peak TFLOP/s are dense, '-' marks a unit the GPU does not have.\n", n);
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *o = bt_gpudb_origin(db, i);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(bt_gpudb_origin(db, j), o) == 0;
        if (!seen)
            printf("%s %s", prev ? "," : "from:", o);
        prev = o;
    }
    printf("%s'blocktune gpus NAME' shows one in full, with its sources.\n", prev ? "\n" : "");
}

/* Prints text wrapped at 100 columns, each line after the first indented by `indent`. */
static void print_wrapped(const char *text, int indent)
{
    int col = indent;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, " ");
        if (col > indent && col + 1 + (int)len > 100) {
            printf("\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            putchar(' ');
            col++;
        }
        printf("%.*s", (int)len, p);
        col += (int)len;
        p += len;
        while (*p == ' ')
            p++;
    }
    putchar('\n');
}

static void print_full(const bt_gpudb *db, const bt_gpu *g)
{
    char a[32], b[32];
    const int ind = 26;
    printf("%s  (%s %s", g->name, g->vendor, g->arch);
    if (g->cc_major || g->cc_minor)
        printf(", compute capability %d.%d", g->cc_major, g->cc_minor);
    printf(")\n");
    if (g->aliases[0]) {
        printf("  %-*s", ind - 2, "aliases");
        const char *p = g->aliases;
        while (*p) {
            size_t len = strcspn(p, ",");
            printf("%.*s%s", (int)len, p, p[len] ? ", " : "\n");
            p += len + (p[len] ? 1 : 0);
        }
    }
    printf("  %-*s%d\n", ind - 2, "SMs", g->sm_count);
    printf("  %-*s%d\n", ind - 2, "warp size", g->warp_size);
    printf("  %-*s%d per SM (%d warps), %d per block\n", ind - 2, "threads", g->max_threads_per_sm,
           g->max_warps_per_sm, g->max_threads_per_block);
    printf("  %-*s%d at most\n", ind - 2, "blocks per SM", g->max_blocks_per_sm);
    printf("  %-*s%d per SM, %d per block, %d per thread; allocated per warp in units of %d\n",
           ind - 2, "registers", g->regs_per_sm, g->regs_per_block, g->max_regs_per_thread,
           g->reg_alloc_unit);
    fmt_units(a, sizeof a, g->smem_per_sm, 1024);
    printf("  %-*s%lld B (%s KiB)\n", ind - 2, "shared memory per SM", (long long)g->smem_per_sm,
           a);
    fmt_units(a, sizeof a, g->smem_per_block, 1024);
    fmt_units(b, sizeof b, g->smem_per_block_optin, 1024);
    printf("  %-*s%lld B (%s KiB) by default, %lld B (%s KiB) opted in;\n%*s%lld B per block "
           "reserved by the system\n",
           ind - 2, "shared memory per block", (long long)g->smem_per_block, a,
           (long long)g->smem_per_block_optin, b, ind, "", (long long)g->smem_reserved_per_block);
    fmt_units(a, sizeof a, g->l2_bytes, 1024 * 1024);
    printf("  %-*s%lld B (%s MiB)\n", ind - 2, "L2 cache", (long long)g->l2_bytes, a);
    fmt_units(a, sizeof a, g->mem_bytes, 1024LL * 1024 * 1024);
    printf("  %-*s%lld B (%s GiB), %g GB/s\n", ind - 2, "memory", (long long)g->mem_bytes, a,
           g->mem_bw_gbps);
    printf("  %-*s%g MHz\n", ind - 2, "boost clock", g->clock_mhz);
    printf("  %-*s%10s  %8s  %s\n", ind - 2, "dense peaks", "TFLOP/s", "ridge",
           "(FLOP per byte of memory traffic)");
    for (int k = 0; k < BT_PEAK__COUNT; k++) {
        double v = g->peak_tflops[k];
        if (v > 0)
            printf("    %-*s%10g  %8.1f%s\n", ind - 4, bt_peak_kind_name((bt_peak_kind)k), v,
                   v * 1e3 / g->mem_bw_gbps, k == BT_PEAK_INT8_TC ? "  (TOP/s; ops per byte)" : "");
        else
            printf("    %-*s%10s  %8s  (no such unit)\n", ind - 4,
                   bt_peak_kind_name((bt_peak_kind)k), "-", "-");
    }
    printf("  %-*s", ind - 2, "source");
    print_wrapped(g->source, ind);
    for (size_t i = 0; i < bt_gpudb_count(db); i++)
        if (bt_gpudb_at(db, i) == g)
            printf("  %-*s%s\n", ind - 2, "defined in", bt_gpudb_origin(db, i));
}

static int print_json(const bt_gpudb *db, const bt_gpu *only)
{
    bt_status st = bt_gpudb_write_json(db, only, stdout);
    return st ? bt_cli_fail(st, NULL) : 0;
}

enum { O_GPU_FILE, O_JSON };
static const bt_cli_opt gpus_opts[] = {{"gpu-file", 0, 1, O_GPU_FILE}, {"json", 0, 0, O_JSON}};

int bt_cmd_gpus(int argc, char **argv)
{
    const char *files[MAX_GPU_FILES];
    int nfiles = 0, json = 0;
    char name[512] = "";
    size_t nlen = 0;
    bt_cli_parser P;
    bt_cli_begin(&P, "gpus", gpus_opts, 2, 0, argc, argv);
    for (int id; (id = bt_cli_next(&P)) != BT_CLI_END;) {
        if (id == BT_CLI_HELP) {
            usage(stdout);
            return 0;
        } else if (id == BT_CLI_ERROR) {
            return BT_EXIT_USAGE;
        } else if (id == O_JSON) {
            json = 1;
        } else if (id == O_GPU_FILE) {
            if (!P.value[0])
                return bt_cli_usage_error("gpus", "--gpu-file needs a file name");
            if (nfiles == MAX_GPU_FILES)
                return bt_cli_usage_error("gpus", "at most %d --gpu-file options", MAX_GPU_FILES);
            files[nfiles++] = P.value;
        } else {
            /* Words of one name may come unquoted: `blocktune gpus nvidia h200`. */
            int w = snprintf(name + nlen, sizeof name - nlen, "%s%s", nlen ? " " : "", P.value);
            if (w < 0 || (size_t)w >= sizeof name - nlen)
                return bt_cli_usage_error("gpus", "the GPU name is too long");
            nlen += (size_t)w;
        }
    }

    bt_diag d;
    bt_gpudb *db = NULL;
    bt_status st = bt_gpudb_load_default(&db, &d);
    if (st)
        return bt_cli_fail(st, &d);
    for (int k = 0; k < nfiles; k++) {
        st = bt_gpudb_merge_file(db, files[k], &d);
        if (st) {
            bt_cli_fail(st, &d);
            bt_gpudb_destroy(db);
            return BT_EXIT_USAGE; /* the user's file is bad input, whatever the failure */
        }
    }
    const bt_gpu *g = NULL;
    if (name[0]) {
        st = bt_gpudb_find(db, name, &g, &d);
        if (st) {
            bt_cli_fail(st, &d);
            bt_gpudb_destroy(db);
            return BT_EXIT_USAGE;
        }
    }
    int rc = 0;
    if (json)
        rc = print_json(db, g);
    else if (g)
        print_full(db, g);
    else
        print_table(db);
    bt_gpudb_destroy(db);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
