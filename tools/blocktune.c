/* SPDX-License-Identifier: Apache-2.0 */
/*
 * blocktune.c — the CLI entry point: dispatches to the subcommands of the table below. Each
 * subcommand lives in tools/cmd_<name>.c and is thin over the public API.
 */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const bt_cli_cmd commands[] = {
    {"plan", "analyse a kernel's config space for a GPU, with no device (the model)", bt_cmd_plan},
    {"tune", "compile, verify and measure a kernel's configs on a device; pick the winner",
     bt_cmd_tune},
    {"precompile", "build wisdom's winners with no GPU, so that first launches load them",
     bt_cmd_precompile},
    {"gpus", "list the hardware table", bt_cmd_gpus},
    {"devices", "list the devices of every backend that loaded", bt_cmd_devices},
    {"simulate", "replay a recorded space to judge search strategies", bt_cmd_simulate},
    {"cache", "list, show, export, import, forget and verify the results store", bt_cmd_cache},
    {"report", "one self-contained HTML page over tunes' JSON or the results store", bt_cmd_report},
};

int bt_cli_fail(bt_status st, const bt_diag *d)
{
    char buf[2048];
    if (d && (d->msg[0] || d->file[0]))
        fprintf(stderr, "blocktune: %s\n", bt_diag_format(d, buf, sizeof buf));
    else
        fprintf(stderr, "blocktune: %s\n", bt_strerror(st));
    if (st == BT_INVALID_ARG || st == BT_NOT_FOUND || st == BT_PARSE)
        return BT_EXIT_USAGE;
    return st == BT_NO_DEVICE || st == BT_NO_BACKEND ? BT_EXIT_NO_DEVICE : BT_EXIT_FAIL;
}

void bt_cli_exit_help(FILE *f, const char *note)
{
    fprintf(f, "\nexit status (docs/cli.md):\n"
               "  0  done\n"
               "  1  the work failed (%s)\n"
               "  2  usage: an unknown option, a bad value, an unknown kernel, size, GPU or\n"
               "     dtype, an input file that is not there or does not parse\n"
               "  3  no such device, or its backend (CUDA, OpenCL) is not there\n"
               "  128+N  interrupted by signal N (130: Ctrl-C)\n",
            note ? note : "a write, a store, nothing matched");
}

int bt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "blocktune %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'blocktune %s --help')\n", cmd);
    va_end(ap);
    return BT_EXIT_USAGE;
}

void bt_cli_print_builtins(FILE *f, int indent)
{
    int col = indent;
    for (const char *const *n = bt_kdesc_builtin_names(); *n; n++) {
        int len = (int)strlen(*n) + (n[1] ? 1 : 0);
        if (col > indent && col + 1 + len > 90) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%s%s", *n, n[1] ? "," : "");
        col += len;
    }
    fputc('\n', f);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: blocktune <command> [options]\n\n"
               "blocktune finds the fastest launch configuration of a GPU kernel: it prunes the\n"
               "config space with an architecture-aware model, then compiles, verifies and\n"
               "measures what is left, and caches the winner per problem key.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n'blocktune <command> --help' explains each command. Every command takes\n"
               "--opt value and --opt=value and -h/--help; --json (plan, gpus, devices, cache\n"
               "list, simulate) prints the result as JSON alone on standard output (tune:\n"
               "--json FILE, '-' for standard output).\n");
    bt_cli_exit_help(f, NULL);
    fprintf(f, "\nblocktune %s\n", bt_version());
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("blocktune %s\n", bt_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "blocktune: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
