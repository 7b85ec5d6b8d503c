/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_opts.c — the option layer every subcommand parses with (cli_opts.h): getopt_long reads the
 * options of the command's table; positional arguments, `--` and the names the table does not
 * hold (sizes, or unknown options) are sorted out here first, so that getopt_long only ever sees
 * an exact name and never takes an abbreviation.
 */
#include "cli_opts.h"

#include "cli.h"

#include <stdio.h>
#include <string.h>

#define REST 0x100 /* flags: past `--`, every argument is positional */

void bt_cli_begin(bt_cli_parser *p, const char *cmd, const bt_cli_opt *opts, int nopts,
                  int flags, int argc, char **argv)
{
    memset(p, 0, sizeof *p);
    p->cmd = cmd;
    p->opts = opts;
    p->nopts = nopts < BT_CLI_MAX_OPTS ? nopts : BT_CLI_MAX_OPTS;
    p->flags = flags;
    p->argc = argc;
    p->argv = argv;
    p->next = 1;
    size_t s = 0;
    p->shortopts[s++] = '+'; /* getopt_long sees only options: nothing to permute */
    p->shortopts[s++] = ':'; /* a missing value returns ':' */
    p->shortopts[s++] = 'h';
    for (int i = 0; i < p->nopts; i++) {
        p->longopts[i] = (struct option){opts[i].name, opts[i].has_value ? required_argument
                                                                          : no_argument,
                                         NULL, 256 + i};
        if (opts[i].short_name) {
            p->shortopts[s++] = opts[i].short_name;
            if (opts[i].has_value)
                p->shortopts[s++] = ':';
        }
    }
    p->longopts[p->nopts] = (struct option){"help", no_argument, NULL, 'h'};
    p->shortopts[s] = '\0';
    optind = 0; /* getopt_long starts afresh (glibc) at argv[1] */
    opterr = 0; /* the messages are ours */
}

/* The table's index of the long option `name` (len characters of it), or -1. */
static int find_long(const bt_cli_parser *p, const char *name, size_t len)
{
    for (int i = 0; i < p->nopts; i++)
        if (strlen(p->opts[i].name) == len && !strncmp(p->opts[i].name, name, len))
            return i;
    return len == 4 && !strncmp(name, "help", 4) ? p->nopts : -1;
}

static int find_short(const bt_cli_parser *p, int c)
{
    for (int i = 0; i < p->nopts; i++)
        if (p->opts[i].short_name && p->opts[i].short_name == c)
            return i;
    return -1;
}

/* `--NAME[=V]` that the table does not hold: a size (BT_CLI_SIZES) or an unknown option. */
static int unknown_long(bt_cli_parser *p, const char *a)
{
    const char *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (!(p->flags & BT_CLI_SIZES)) {
        bt_cli_usage_error(p->cmd, "unknown option '--%.*s'", (int)len, a + 2);
        return BT_CLI_ERROR;
    }
    snprintf(p->namebuf, sizeof p->namebuf, "%.*s", (int)len, a + 2);
    p->name = p->namebuf;
    if (eq) {
        p->value = eq + 1;
        p->next++;
    } else if (p->next + 1 < p->argc) {
        p->value = p->argv[p->next + 1];
        p->next += 2;
    } else {
        bt_cli_usage_error(p->cmd, "option or size --%s needs a value", p->name);
        return BT_CLI_ERROR;
    }
    return BT_CLI_SIZE;
}

/* What getopt_long returned, as bt_cli_next says it. */
static int from_getopt(bt_cli_parser *p, int c)
{
    int i;
    if (c == 'h')
        return BT_CLI_HELP;
    if (c == ':' || c == '?') {
        i = optopt >= 256 ? optopt - 256 : find_short(p, optopt);
        char name[80];
        if (optopt == 'h' && c == '?') /* --help=x */
            snprintf(name, sizeof name, "--help");
        else if (i < 0 || (optopt < 256 && optopt != 0))
            snprintf(name, sizeof name, "-%c", optopt ? optopt : '?');
        else
            snprintf(name, sizeof name, "--%s", p->opts[i].name);
        if (c == ':')
            bt_cli_usage_error(p->cmd, "option %s needs a value", name);
        else if (i >= 0 || optopt == 'h')
            bt_cli_usage_error(p->cmd, "option %s takes no value", name);
        else
            bt_cli_usage_error(p->cmd, "unknown option '%s'", name);
        return BT_CLI_ERROR;
    }
    i = c >= 256 ? c - 256 : find_short(p, c);
    if (i < 0 || i >= p->nopts) {
        bt_cli_usage_error(p->cmd, "unknown option '-%c'", c);
        return BT_CLI_ERROR;
    }
    p->name = p->opts[i].name;
    p->value = p->opts[i].has_value ? optarg : NULL;
    return p->opts[i].id;
}

int bt_cli_next(bt_cli_parser *p)
{
    p->name = p->value = NULL;
    if (p->next >= p->argc)
        return BT_CLI_END;
    const char *a = p->argv[p->next];
    if (p->flags & REST) { /* after `--`: every argument is positional */
        p->value = a;
        p->next++;
        return BT_CLI_ARG;
    }
    if (!strcmp(a, "--")) {
        p->flags |= REST;
        p->next++;
        return bt_cli_next(p);
    }
    if (a[0] != '-' || !a[1]) { /* a positional argument ('-' is one: standard output) */
        if (p->flags & BT_CLI_STOP)
            return BT_CLI_END;
        p->value = a;
        p->next++;
        return BT_CLI_ARG;
    }
    if (a[1] == '-') {
        const char *eq = strchr(a, '=');
        if (find_long(p, a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2)) < 0)
            return unknown_long(p, a);
    }
    if (p->next > 1 || optind != 0)
        optind = p->next;
    int c = getopt_long(p->argc, p->argv, p->shortopts, p->longopts, NULL);
    p->next = optind;
    if (c == -1) /* cannot happen: argv[next] is an option */
        return BT_CLI_END;
    return from_getopt(p, c);
}
