/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_opts.h — the one option layer of the command-line tool (cli_opts.c), over getopt_long.
 *
 * Every subcommand lists its options in a table and reads them with bt_cli_next, which gives the
 * same rules everywhere: `--opt value` and `--opt=value`, `-h`/`--help`, long names only as
 * spelled (no abbreviations: `--n` is a size of tune, never `--no-boundary`), `--` ends the
 * options, and an unknown option, a missing value or a value given to a flag is a usage error
 * that names the option and points to `blocktune CMD --help` (exit status 2, docs/cli.md).
 */
#ifndef BT_TOOLS_CLI_OPTS_H
#define BT_TOOLS_CLI_OPTS_H

#include <getopt.h>

/* One option of a subcommand. id is what bt_cli_next returns for it (>= 0, the command's own). */
typedef struct bt_cli_opt {
    const char *name; /* the long name without "--" */
    char short_name;  /* 'o' for -o; 0: none */
    int has_value;    /* 1: takes a value (--name V, --name=V, -o V) */
    int id;
} bt_cli_opt;

/* What bt_cli_next returns besides an option's id. */
enum {
    BT_CLI_END = -1,   /* no more arguments */
    BT_CLI_ARG = -2,   /* a positional argument, in value */
    BT_CLI_SIZE = -3,  /* an unknown --NAME V(or =V) of a command that takes sizes: name, value */
    BT_CLI_HELP = -4,  /* -h or --help */
    BT_CLI_ERROR = -5, /* a usage error, already said on stderr: exit with BT_EXIT_USAGE */
};

/* Flags of bt_cli_begin. */
enum {
    BT_CLI_SIZES = 1, /* unknown `--NAME VALUE` / `--NAME=VALUE` are problem sizes (BT_CLI_SIZE) */
    BT_CLI_STOP = 2,  /* stop at the first positional argument and return BT_END with optind
                         pointing at it (`cache [--db P] SUB ...`: the rest is the subcommand's) */
};

#define BT_CLI_MAX_OPTS 48

typedef struct bt_cli_parser {
    const char *cmd; /* "plan", "cache export": the name the messages give */
    const bt_cli_opt *opts;
    int nopts, flags, argc;
    char **argv;
    struct option longopts[BT_CLI_MAX_OPTS + 2];
    char shortopts[2 * BT_CLI_MAX_OPTS + 8];
    char namebuf[128];
    /* after each bt_cli_next */
    const char *name;  /* the option's long name (an option, a size) */
    const char *value; /* its value, or the positional argument; NULL for a flag */
    int next;          /* the index of the first argument not read yet (after BT_CLI_END: the
                          first that BT_CLI_STOP left, or argc) */
} bt_cli_parser;

/* Starts reading argv[1..argc-1] (argv[0] is the command's name) with the options opts. */
void bt_cli_begin(bt_cli_parser *p, const char *cmd, const bt_cli_opt *opts, int nopts,
                  int flags, int argc, char **argv);
/* The next option (its id), positional argument, size, help request, error, or the end. */
int bt_cli_next(bt_cli_parser *p);

#endif
