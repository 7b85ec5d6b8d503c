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

typedef struct bt_cli_cmd {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
} bt_cli_cmd;

/* Prints "blocktune: <diag or message>" to stderr and returns 2 (usage) or 1 (failure). */
int bt_cli_fail(bt_status st, const bt_diag *d);
int bt_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A Unix time as "2026-12-01T17:52:39Z" (UTC); "" when it cannot be formed. */
void bt_cli_utc(double unix_s, char *buf, size_t size);

/* Writes the built-in kernels' names (bt_kdesc_builtin_names) as a comma-separated list wrapped
 * at 90 columns, every line after the first starting with `indent` spaces, and a newline. */
void bt_cli_print_builtins(FILE *f, int indent);

int bt_cmd_plan(int argc, char **argv);
int bt_cmd_tune(int argc, char **argv);
int bt_cmd_gpus(int argc, char **argv);
int bt_cmd_devices(int argc, char **argv);
int bt_cmd_simulate(int argc, char **argv);
int bt_cmd_cache(int argc, char **argv);
int bt_cmd_report(int argc, char **argv);

#endif
