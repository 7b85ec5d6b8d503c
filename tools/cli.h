/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h — shared pieces of the blocktune command-line tool: the subcommand table entry type and
 * the helpers every subcommand uses to report errors.
 */
#ifndef BT_TOOLS_CLI_H
#define BT_TOOLS_CLI_H

#include "blocktune.h"

#include <stddef.h>
#include <stdio.h>

/* The exit statuses of every subcommand (docs/cli.md; bt_cli_exit_help prints this table). */
enum {
    BT_EXIT_OK = 0,        /* the command did what it was asked */
    BT_EXIT_FAIL = 1,      /* the work failed: no winner, a write that failed, a damaged store,
                              nothing matched */
    BT_EXIT_USAGE = 2,     /* the command line or an input is wrong: an unknown option, a bad
                              value, an unknown kernel, size, GPU or dtype, an input file that
                              is not there or does not parse */
    BT_EXIT_NO_DEVICE = 3, /* no such device, or its backend (CUDA, OpenCL) is not there */
    /* 128 + N: interrupted by signal N (tune: 130 after Ctrl-C) */
};

typedef struct bt_cli_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} bt_cli_cmd;

/* Prints "blocktune: <diag or message>" to stderr and returns the exit status of st:
 * BT_EXIT_USAGE (bad input), BT_EXIT_NO_DEVICE (no device or backend) or BT_EXIT_FAIL. */
int bt_cli_fail(bt_status st, const bt_diag *d);
int bt_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes the built-in kernels' names (bt_kdesc_builtin_names) as a comma-separated list wrapped
 * at 90 columns, every line after the first starting with `indent` spaces, and a newline. */
void bt_cli_print_builtins(FILE *f, int indent);
/* The exit statuses' table, the footer of every help text (note: a line of the command's own,
 * or NULL). */
void bt_cli_exit_help(FILE *f, const char *note);

int bt_cmd_plan(int argc, char **argv);
int bt_cmd_tune(int argc, char **argv);
int bt_cmd_gpus(int argc, char **argv);
int bt_cmd_devices(int argc, char **argv);
int bt_cmd_simulate(int argc, char **argv);
int bt_cmd_cache(int argc, char **argv);
int bt_cmd_report(int argc, char **argv);
int bt_cmd_precompile(int argc, char **argv);

#endif
