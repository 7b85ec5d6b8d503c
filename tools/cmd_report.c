/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_report.c — `blocktune report`: one self-contained HTML page (docs/report.md) over tune JSON
 * files (`blocktune tune --json`) and/or the results store (a kernel, a key, or everything), with
 * the peers' timings of a peers file.
 */
#include "cli.h"
#include "cli_opts.h"

#include "core/util.h"
#include "report/report.h"
#include "report_store.h"

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

/* A file's documents into the list: a tune document, or each key's of a sweep document. */
static int expand_sweep(json_t *doc, const char *file, json_t ***docs, char ***src, size_t *n)
{
    const json_t *sw = json_object_get(doc, "sweep");
    size_t m = json_is_array(sw) ? json_array_size(sw) : 1;
    json_t **g = realloc(*docs, sizeof *g * (*n + m + 1));
    char **gs = g ? realloc(*src, sizeof *gs * (*n + m + 1)) : NULL;
    if (g)
        *docs = g;
    if (gs)
        *src = gs;
    if (!g || !gs) {
        json_decref(doc);
        return 1;
    }
    for (size_t i = 0; i < m; i++) {
        (*docs)[*n] = json_is_array(sw) ? json_incref(json_array_get(sw, i)) : json_incref(doc);
        (*src)[(*n)++] = bt__strdup(file);
    }
    json_decref(doc);
    return 0;
}

/* The documents: the files (each key of a sweep file), then the store's keys. */
static int gather(const args *A, json_t ***docs, char ***src, size_t *n)
{
    bt_diag d = {0};
    *docs = calloc((size_t)A->nfiles + 1, sizeof **docs);
    *src = calloc((size_t)A->nfiles + 1, sizeof **src);
    if (!*docs || !*src)
        return 1;
    for (int i = 0; i < A->nfiles; i++) {
        json_t *doc = NULL;
        bt_status st = bt__report_load_tune(A->files[i], &doc, &d);
        if (st)
            return bt_cli_fail(st, &d);
        if (expand_sweep(doc, A->files[i], docs, src, n))
            return 1;
    }
    if (!A->store)
        return 0;
    json_t **sd = NULL;
    size_t ns = 0;
    char *path = NULL;
    bt_status st = bt__cli_store_docs(strcmp(A->store, "default") ? A->store : NULL, A->kernel,
                                      A->key, A->device, &sd, &ns, &path, &d);
    if (st) {
        free(path);
        return bt_cli_fail(st, &d);
    }
    json_t **g = realloc(*docs, sizeof *g * (*n + ns + 1));
    char **gs = g ? realloc(*src, sizeof *gs * (*n + ns + 1)) : NULL;
    if (g)
        *docs = g;
    if (gs)
        *src = gs;
    for (size_t i = 0; i < ns; i++) {
        if (!g || !gs) {
            json_decref(sd[i]);
            continue;
        }
        char buf[600];
        snprintf(buf, sizeof buf, "store:%s", path);
        (*docs)[*n] = sd[i];
        (*src)[(*n)++] = bt__strdup(buf);
    }
    if (!ns)
        fprintf(stderr, "blocktune report: no measurements in %s match%s%s%s%s%s%s\n", path,
                A->kernel ? " kernel " : "", A->kernel ? A->kernel : "", A->key ? " key " : "",
                A->key ? A->key : "", A->device ? " device " : "", A->device ? A->device : "");
    free(sd);
    free(path);
    return !g || !gs ? 1 : 0;
}

/* The page into memory, then to the file in one piece (or to standard output). */
static int write_page(const args *A, json_t **docs, char **src, size_t n, json_t *peers)
{
    bt__report_doc *rd = calloc(n ? n : 1, sizeof *rd);
    char *buf = NULL;
    size_t size = 0;
    FILE *m = rd ? open_memstream(&buf, &size) : NULL;
    if (!m) {
        free(rd);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        rd[i] = (bt__report_doc){docs[i], src[i]};
    bt__report_opts o = {A->title, peers, A->peers};
    bt_diag d = {0};
    bt_status st = bt__report_html(rd, n, &o, m, &d);
    fclose(m);
    free(rd);
    if (!st && !strcmp(A->out, "-"))
        st = fwrite(buf, 1, size, stdout) == size ? BT_OK : BT_IO;
    else if (!st)
        st = bt__write_file_atomic(A->out, buf, size, &d);
    free(buf);
    if (st)
        return bt_cli_fail(st, &d);
    if (strcmp(A->out, "-"))
        fprintf(stderr, "blocktune report: wrote %s (%zu tune%s)\n", A->out, n, n == 1 ? "" : "s");
    return 0;
}

int bt_cmd_report(int argc, char **argv)
{
    args A = {.files = calloc((size_t)argc, sizeof(char *))};
    if (!A.files)
        return BT_EXIT_FAIL;
    json_t **docs = NULL, *peers = NULL;
    char **src = NULL;
    size_t n = 0;
    int rc = parse(argc, argv, &A);
    if (rc == BT_CLI_HELP) {
        free(A.files);
        return 0;
    }
    if (!rc)
        rc = gather(&A, &docs, &src, &n);
    if (!rc && A.peers) {
        bt_diag d = {0};
        bt_status st = bt__report_load_peers(A.peers, &peers, &d);
        if (st)
            rc = bt_cli_fail(st, &d);
    }
    if (!rc && !n) {
        fprintf(stderr, "blocktune report: nothing to report\n");
        rc = 1;
    }
    if (!rc)
        rc = write_page(&A, docs, src, n, peers);
    for (size_t i = 0; i < n; i++) {
        json_decref(docs[i]);
        free(src[i]);
    }
    free(docs);
    free(src);
    json_decref(peers);
    free(A.files);
    return rc;
}
