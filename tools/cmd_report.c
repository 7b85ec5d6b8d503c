/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_report.c — `blocktune report`: one self-contained HTML page (docs/report.md) over tune JSON
 * files (`blocktune tune --json`) and/or the results store (a kernel, a key, or everything), with
 * the peers' timings of a peers file.
 */
#include "cli.h"
#include "cli_opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void report_help(FILE *f)
{
    fprintf(f,
        "usage: blocktune report [TUNE.json ...] [--store|--db PATH|default] [--kernel K] [--key KEY]\n"
        "                        [--device D] [--peers FILE] [--title TEXT] -o FILE.html\n"
        "\n"
        "Writes one self-contained HTML page (no network: inline style, charts drawn as SVG)\n"
        "over the tunes given: the device's roofline with the kernel's intensity, the winner,\n"
        "the finalists and the peers; median time (and GB/s or TFLOP/s) against each parameter,\n"
        "every measured config a point and failures marked by status, with the finals' noise\n"
        "band; the eliminated configs grouped by the rule that removed them; for several keys\n"
        "of one kernel on one device, the winner's efficiency against the problem size; the\n"
        "candidate table and the provenance of each tune. docs/report.md says how to read it.\n"
        "\n"
        "  TUNE.json         a tune's JSON ('blocktune tune --json FILE'); several for a sweep\n"
        "  --store PATH, --db PATH\n"
        "                    also every key of the results store at PATH ('default': the\n"
        "                    default store, as 'blocktune cache' finds it); the store keeps\n"
        "                    measurements, so the roofline and the eliminated configs come from\n"
        "                    the model made again (built-in kernels, a device that is here or in\n"
        "                    the hardware table); --db as 'blocktune cache' spells it\n"
        "  --kernel K        only the store's keys of kernel K\n"
        "  --key KEY         only the store's keys containing KEY (e.g. 'rows=4096')\n"
        "  --device D        only the store's keys measured on device D (name or UUID)\n"
        "  --peers FILE      other tools' timings of the same problems, drawn beside ours\n"
        "                    (format: docs/report.md#peers)\n"
        "  --title TEXT      the page's title (default: 'blocktune report')\n"
        "  -o, --output FILE the page to write ('-': standard output); written whole or not\n"
        "                    at all\n"
        "\n"
        "examples:\n"
        "  blocktune tune softmax --rows 4096 --cols 4096 --json s.json && \\\n"
        "    blocktune report s.json -o s.html\n"
        "  blocktune report --store default --kernel softmax --peers peers.json -o softmax.html\n");
    bt_cli_exit_help(f, "nothing to report, or the page could not be written");
}

typedef struct args {
    const char **files;
    int nfiles;
    const char *store, *kernel, *key, *device, *peers, *title, *out;
} args;

enum { O_STORE, O_DB, O_KERNEL, O_KEY, O_DEVICE, O_PEERS, O_TITLE, O_OUTPUT };
static const bt_cli_opt report_opts[] = {
    {"store", 0, 1, O_STORE}, {"db", 0, 1, O_DB},       {"kernel", 0, 1, O_KERNEL},
    {"key", 0, 1, O_KEY},     {"device", 0, 1, O_DEVICE}, {"peers", 0, 1, O_PEERS},
    {"title", 0, 1, O_TITLE}, {"output", 'o', 1, O_OUTPUT},
};

/* 0, BT_CLI_HELP after the help, or the exit status of a usage error. */
static int parse(int argc, char **argv, args *A)
{
    bt_cli_parser P;
    bt_cli_begin(&P, "report", report_opts, sizeof report_opts / sizeof report_opts[0], 0, argc,
                 argv);
    const char **slot[] = {[O_STORE] = &A->store, [O_DB] = &A->store,   [O_KERNEL] = &A->kernel,
                           [O_KEY] = &A->key,     [O_DEVICE] = &A->device, [O_PEERS] = &A->peers,
                           [O_TITLE] = &A->title, [O_OUTPUT] = &A->out};
    for (int id; (id = bt_cli_next(&P)) != BT_CLI_END;) {
        if (id == BT_CLI_HELP) {
            report_help(stdout);
            return BT_CLI_HELP;
        }
        if (id == BT_CLI_ERROR)
            return BT_EXIT_USAGE;
        if (id == BT_CLI_ARG)
            A->files[A->nfiles++] = P.value;
        else
            *slot[id] = P.value;
    }
    if (!A->nfiles && !A->store)
        return bt_cli_usage_error("report", "give tune JSON files, or --store PATH|default");
    if (!A->store && (A->kernel || A->key || A->device))
        return bt_cli_usage_error("report", "--kernel, --key and --device select keys of --store");
    if (!A->out)
        return bt_cli_usage_error("report", "where to? give -o FILE.html ('-' for standard output)");
    return 0;
}

/* The tunes: the files (each key of a sweep file), then the store's keys; the peers. */
static int gather(const args *A, bt_report *r)
{
    bt_diag d = {0};
    bt_status st;
    for (int i = 0; i < A->nfiles; i++)
        if ((st = bt_report_add_tune_file(r, A->files[i], &d)))
            return bt_cli_fail(st, &d);
    if (A->store) {
        bt_store *s = NULL;
        size_t ns = 0;
        st = bt_store_open(strcmp(A->store, "default") ? A->store : NULL, BT_STORE_READONLY, &s,
                           &d);
        if (!st)
            st = bt_report_add_store(r, s, A->kernel, A->key, A->device, &ns, &d);
        if (!st && !ns)
            fprintf(stderr, "blocktune report: no measurements in %s match%s%s%s%s%s%s\n",
                    bt_store_path(s), A->kernel ? " kernel " : "", A->kernel ? A->kernel : "",
                    A->key ? " key " : "", A->key ? A->key : "", A->device ? " device " : "",
                    A->device ? A->device : "");
        bt_store_destroy(s);
        if (st)
            return bt_cli_fail(st, &d);
    }
    if (A->peers && (st = bt_report_set_peers_file(r, A->peers, &d)))
        return bt_cli_fail(st, &d);
    return 0;
}

/* The page to the file in one piece (or to standard output). */
static int write_page(const args *A, bt_report *r)
{
    bt_diag d = {0};
    bt_status st = bt_report_set_title(r, A->title);
    if (!st && !strcmp(A->out, "-"))
        st = bt_report_write_html(r, stdout, &d);
    else if (!st)
        st = bt_report_write_html_file(r, A->out, &d);
    if (st)
        return bt_cli_fail(st, &d);
    size_t n = bt_report_count(r);
    if (strcmp(A->out, "-"))
        fprintf(stderr, "blocktune report: wrote %s (%zu tune%s)\n", A->out, n, n == 1 ? "" : "s");
    return 0;
}

int bt_cmd_report(int argc, char **argv)
{
    args A = {.files = calloc((size_t)argc, sizeof(char *))};
    bt_report *r = NULL;
    if (!A.files || bt_report_create(&r)) {
        free(A.files);
        return bt_cli_fail(BT_NOMEM, NULL);
    }
    int rc = parse(argc, argv, &A);
    if (!rc)
        rc = gather(&A, r);
    if (!rc && !bt_report_count(r)) {
        fprintf(stderr, "blocktune report: nothing to report\n");
        rc = BT_EXIT_FAIL;
    }
    if (!rc)
        rc = write_page(&A, r);
    bt_report_destroy(r);
    free(A.files);
    return rc == BT_CLI_HELP ? 0 : rc;
}
