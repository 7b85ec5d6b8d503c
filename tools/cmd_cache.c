/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_cache.c — `blocktune cache`: list, show, export, import, forget and verify the results
 * store (src/store/store.h) and its wisdom files.
 */
#include "cli.h"
#include "cli_num.h"
#include "cli_opts.h"

#include "core/util.h"
#include "store/ktinterop.h"
#include "store/store.h"
#include "store/t4.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void help(FILE *f)
{
    fprintf(f,
            "usage: blocktune cache [--db PATH] <subcommand> [options]\n\n"
            "The results store keeps every measured config and the winner of every key, with\n"
            "provenance (device, driver, compiler, blocktune version, source hash).\n"
            "Default store: $BLOCKTUNE_CACHE_DIR/blocktune.db, else\n"
            "$XDG_CACHE_HOME/blocktune/blocktune.db, else ~/.cache/blocktune/blocktune.db.\n\n"
            "subcommands:\n"
            "  list [--json]             the winners: kernel, device, key, config, median;\n"
            "                            --json: as a JSON document (docs/report.md#cache-list)\n"
            "  show KEY                  every measurement of the keys containing KEY\n"
            "                            (e.g. 'M=4096,N=4096'), fastest first; * marks winners\n"
            "  export [--device NAME] [--kernel NAME] [--top K] [--vllm] FILE|DIR\n"
            "                            write wisdom (winners, and with --top K the K fastest of\n"
            "                            each key) as JSON; a DIR (existing, or ending in '/')\n"
            "                            gets one file per device. --vllm writes vLLM's fused-MoE\n"
            "                            config files into DIR: one per (E, N, device, dtype, block\n"
            "                            shape) of the winners keyed by M, E and N, mapping M to\n"
            "                            BLOCK_SIZE_M/N/K, GROUP_SIZE_M, num_warps, num_stages\n"
            "  import FILE|DIR           read wisdom, or a Kernel Tuner cache (.json or .json.gz:\n"
            "                            every recorded config with every field, failures too,\n"
            "                            its fastest the winner); all or nothing (errors say\n"
            "                            file:line:col)\n"
            "  export-kt --kernel K --device D --key KEY FILE\n"
            "                            write the key's configs as a Kernel Tuner cache (every\n"
            "                            field of imported entries as it was; blocktune's rows with\n"
            "                            time = the mean of the runs, failures as Kernel Tuner\n"
            "                            spells them); Kernel Tuner's simulation mode reads it\n"
            "  export-t4 --kernel K --device D --key KEY FILE|-\n"
            "                            write the key's measurements as T4 results (the auto-\n"
            "                            tuning results schema Kernel Tuner ships, version 1.0.0)\n"
            "  forget SELECTOR [--yes]   delete rows: a kernel name, a key substring, or 'all'\n"
            "                            ('all' only lists what it would delete without --yes)\n"
            "  verify                    PRAGMA integrity_check, every winner has its measurement\n"
            "                            row, and every row holds what blocktune trusts (rows that\n"
            "                            fail are listed; reads skip them with a warning)\n\n"
            "options (every subcommand):\n"
            "  --db PATH                 use this store instead of the default; only import and\n"
            "                            forget create a missing one\n\n"
            "examples:\n"
            "  blocktune cache export --top 3 h200.json\n"
            "  blocktune cache forget gemm && blocktune cache import h200.json\n"
            "  BLOCKTUNE_LOG=1 shows each dispatch decision and where its config came from.\n");
    bt_cli_exit_help(f, "show or forget matched nothing, 'forget all' without --yes, an import "
                        "or export failed, a damaged store");
}

/* The command line of `cache`, every subcommand's options together (--db and --yes may come
 * anywhere, as they always could). */
enum { O_DB, O_YES, O_JSON, O_DEVICE, O_KERNEL, O_TOP, O_VLLM, O_KEY };
static const bt_cli_opt cache_opts[] = {
    {"db", 0, 1, O_DB},         {"yes", 0, 0, O_YES},       {"json", 0, 0, O_JSON},
    {"device", 0, 1, O_DEVICE}, {"kernel", 0, 1, O_KERNEL}, {"top", 0, 1, O_TOP},
    {"vllm", 0, 0, O_VLLM},     {"key", 0, 1, O_KEY},
};
typedef struct cache_args {
    const char *db, *device, *kernel, *key, *sub, *arg;
    int yes, json, vllm, top_k, nargs;
    unsigned seen; /* 1 << O_* of the options given */
} cache_args;

/* import and forget write (creating the store when missing); every other subcommand only reads
 * and never creates a file. */
static int open_store(const char *db, bool write, bt__store **s)
{
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = write ? bt__store_open(db, s, &d) : bt__store_open_read(db, s, &d);
    return st == BT_OK ? 0 : bt_cli_fail(st, &d);
}

static int list_cb(const bt__winner *w, void *user)
{
    int *n = user;
    if ((*n)++ == 0)
        printf("%-12s %-24s %-40s %10s %7s  %s\n", "kernel", "device", "key", "median_ms",
               "margin", "config");
    printf("%-12s %-24s %-40s %10.4f %6.1f%%  %s%s%s\n", w->m.kernel, w->m.device_name, w->m.key,
           w->m.median_ms, w->margin >= 0 ? 100 * w->margin : 0.0, w->m.config_json,
           w->tie ? " (tie)" : "", strcmp(w->origin, "tuned") ? " [imported]" : "");
    return 0;
}

static int list_json_cb(const bt__winner *w, void *user)
{
    json_t *x = json_object();
    json_object_set_new(x, "kernel", json_string(w->m.kernel));
    json_object_set_new(x, "device", json_string(w->m.device_name));
    json_object_set_new(x, "device_uuid", json_string(w->m.device_uuid));
    json_object_set_new(x, "key", json_string(w->m.key));
    json_t *k = json_loads(w->m.key_json, 0, NULL), *c = json_loads(w->m.config_json, 0, NULL);
    json_object_set_new(x, "problem", k ? k : json_null());
    json_object_set_new(x, "config", c ? c : json_null());
    json_object_set_new(x, "median_ms", json_real(w->m.median_ms));
    json_object_set_new(x, "margin", w->margin >= 0 ? json_real(w->margin) : json_null());
    json_object_set_new(x, "tie", json_boolean(w->tie));
    json_object_set_new(x, "origin", json_string(w->origin));
    json_object_set_new(x, "source_hash", json_string(w->m.source_hash));
    json_object_set_new(x, "blocktune", json_string(w->m.blocktune_version));
    char ts[40];
    bt_cli_utc(w->m.timestamp, ts, sizeof ts);
    json_object_set_new(x, "timestamp", json_string(ts));
    json_array_append_new(user, x);
    return 0;
}

/* `list --json`: {"schema", "store", "winners": [...], "measurements"}. */
static int cmd_list_json(bt__store *s)
{
    json_t *arr = json_array();
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = bt__store_winners(s, NULL, NULL, list_json_cb, arr, &d);
    if (st != BT_OK) {
        json_decref(arr);
        return bt_cli_fail(st, &d);
    }
    int64_t nm = 0, nw = 0;
    bt__store_counts(s, &nm, &nw, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("blocktune-cache-list/1"));
    json_object_set_new(o, "store", json_string(bt__store_path(s)));
    json_object_set_new(o, "winners", arr);
    json_object_set_new(o, "measurements", json_integer(nm));
    int rc = json_dumpf(o, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    putchar('\n');
    json_decref(o);
    return rc == 0 && !ferror(stdout) ? 0 : 1;
}

static int cmd_list(bt__store *s)
{
    int n = 0;
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = bt__store_winners(s, NULL, NULL, list_cb, &n, &d);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    int64_t nm = 0, nw = 0;
    bt__store_counts(s, &nm, &nw, NULL);
    printf("%s%lld winners, %lld measurements in %s\n", n ? "\n" : "", (long long)nw,
           (long long)nm, bt__store_path(s));
    return 0;
}

static int cmd_show(bt__store *s, const char *key)
{
    sqlite3_stmt *st = NULL;
    const char *sql =
        "SELECT m.kernel, m.device_name, m.key, m.config_json, m.status, m.median_ms, m.p20_ms, "
        "m.p80_ms, m.reps, m.regs, m.smem_bytes, m.error, w.config_json IS NOT NULL, "
        "m.driver, m.compiler, m.blocktune_version, m.source_hash, m.timestamp "
        "FROM measurements m LEFT JOIN winners w ON w.kernel = m.kernel AND "
        "w.source_hash = m.source_hash AND w.options = m.options AND w.device = m.device AND "
        "w.key = m.key AND w.config_json = m.config_json WHERE instr(m.key, ?1) > 0 "
        "ORDER BY m.kernel, m.device, m.key, m.status != 'ok', m.median_ms";
    if (sqlite3_prepare_v2(bt__store_db(s), sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "blocktune: %s\n", sqlite3_errmsg(bt__store_db(s)));
        return 1;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    int n = 0;
    char last[1024] = "";
    while (sqlite3_step(st) == SQLITE_ROW) {
        char head[1024];
        snprintf(head, sizeof head, "%s on %s [%s]", sqlite3_column_text(st, 0),
                 sqlite3_column_text(st, 1), sqlite3_column_text(st, 2));
        if (strcmp(head, last) != 0) {
            printf("%s%s\n  driver %s, compiler %s, blocktune %s, source %s\n", n ? "\n" : "",
                   head, sqlite3_column_text(st, 13), sqlite3_column_text(st, 14),
                   sqlite3_column_text(st, 15), sqlite3_column_text(st, 16));
            printf("  %-1s %-14s %10s %10s %10s %6s %5s %8s  %s\n", "", "status", "median_ms",
                   "p20_ms", "p80_ms", "reps", "regs", "smem", "config");
            snprintf(last, sizeof last, "%s", head);
        }
        char med[32] = "-", p20[32] = "-", p80[32] = "-";
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            snprintf(med, sizeof med, "%.4f", sqlite3_column_double(st, 5));
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            snprintf(p20, sizeof p20, "%.4f", sqlite3_column_double(st, 6));
        if (sqlite3_column_type(st, 7) != SQLITE_NULL)
            snprintf(p80, sizeof p80, "%.4f", sqlite3_column_double(st, 7));
        const unsigned char *err = sqlite3_column_text(st, 11);
        printf("  %-1s %-14s %10s %10s %10s %6lld %5lld %8lld  %s%s%s\n",
               sqlite3_column_int(st, 12) ? "*" : "", sqlite3_column_text(st, 4), med, p20, p80,
               (long long)sqlite3_column_int64(st, 8), (long long)sqlite3_column_int64(st, 9),
               (long long)sqlite3_column_int64(st, 10), sqlite3_column_text(st, 3),
               err ? "  " : "", err ? (const char *)err : "");
        n++;
    }
    sqlite3_finalize(st);
    if (!n) {
        fprintf(stderr, "blocktune: no measurements for a key containing '%s' in %s "
                        "('blocktune cache list' shows the keys)\n",
                key, bt__store_path(s));
        return 1;
    }
    return 0;
}

static int is_dir_target(const char *path)
{
    struct stat sb;
    size_t n = strlen(path);
    return (n && path[n - 1] == '/') || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
}

static int cmd_export(bt__store *s, const cache_args *A)
{
    bt__wisdom_export_opts o = {.device = A->device, .kernel = A->kernel, .top_k = A->top_k};
    int vllm = A->vllm;
    const char *target = A->arg;
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st;
    int n = 0;
    if (vllm) {
        st = bt__wisdom_export_vllm_dir(s, o.kernel, o.device, target, &n, &d);
        if (st == BT_OK)
            printf("wrote %d vLLM config file%s to %s\n", n, n == 1 ? "" : "s", target);
    } else if (!strcmp(target, "-")) {
        char *text = NULL;
        st = bt__wisdom_export_string(s, &o, &text, &d);
        if (st == BT_OK)
            printf("%s\n", text);
        free(text);
    } else if (is_dir_target(target)) {
        st = bt__wisdom_export_dir(s, &o, target, &n, &d);
        if (st == BT_OK)
            printf("wrote %d wisdom file%s to %s\n", n, n == 1 ? "" : "s", target);
    } else {
        st = bt__wisdom_export_file(s, &o, target, &d);
        if (st == BT_OK)
            printf("wrote %s\n", target);
    }
    return st == BT_OK ? 0 : bt_cli_fail(st, &d);
}

static int cmd_import_kt(bt__store *s, const char *target)
{
    bt_diag d;
    bt__diag_clear(&d);
    int n = 0;
    bt_status st = bt__kt_import(s, target, &n, &d);
    if (st != BT_OK) {
        int rc = bt_cli_fail(st, &d);
        fprintf(stderr, "blocktune: nothing was imported\n");
        return rc;
    }
    printf("imported %d measurements from the Kernel Tuner cache %s\n", n, target);
    return 0;
}

/* export-kt and export-t4: one key's measurements as a Kernel Tuner cache or as T4 results. */
static int cmd_export_key(bt__store *s, const char *sub, const cache_args *A)
{
    const char *kernel = A->kernel, *device = A->device, *key = A->key, *file = A->arg;
    if (!kernel || !device || !key || !file)
        return bt_cli_usage_error("cache", "%s needs --kernel K --device D --key KEY FILE", sub);
    bt_diag d;
    bt__diag_clear(&d);
    int n = 0;
    bool kt = !strcmp(sub, "export-kt");
    if (kt && !strcmp(file, "-"))
        return bt_cli_usage_error("cache", "export-kt writes a FILE (.json, or .json.gz)");
    bt_status st = kt ? bt__kt_export(s, kernel, device, key, file, &n, &d)
                      : bt__t4_export(s, kernel, device, key, file, &n, &d);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    fprintf(strcmp(file, "-") ? stdout : stderr, "wrote %d %s of %s [%s] on %s to %s (%s)\n", n,
            kt ? "configs" : "results", kernel, key, device, file,
            kt ? "Kernel Tuner cache" : "T4 results, schema " BT__T4_VERSION);
    return 0;
}

static int cmd_import(bt__store *s, const char *target)
{
    bt_diag d;
    bt__diag_clear(&d);
    int n = 0;
    struct stat sb;
    if (!(stat(target, &sb) == 0 && S_ISDIR(sb.st_mode)) && bt__kt_is_cache(target))
        return cmd_import_kt(s, target);
    bt_status st = stat(target, &sb) == 0 && S_ISDIR(sb.st_mode)
                       ? bt__wisdom_import_dir(s, target, &n, &d)
                       : bt__wisdom_import_file(s, target, &n, &d);
    if (st != BT_OK) {
        int rc = bt_cli_fail(st, &d);
        fprintf(stderr, "blocktune: nothing was imported\n");
        return rc;
    }
    printf("imported %d entr%s from %s\n", n, n == 1 ? "y" : "ies", target);
    return 0;
}

static int cmd_forget(bt__store *s, const char *sel, int yes)
{
    bt_diag d;
    bt__diag_clear(&d);
    int64_t nm = 0, nw = 0;
    int dry = !strcmp(sel, "all") && !yes;
    bt_status st = bt__store_forget(s, sel, dry, &nm, &nw, &d);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    if (dry) {
        printf("would delete %lld measurements and %lld winners (everything in %s); "
               "run 'blocktune cache forget all --yes' to do it\n",
               (long long)nm, (long long)nw, bt__store_path(s));
        return 1;
    }
    if (nm == 0 && nw == 0) {
        fprintf(stderr, "blocktune: nothing matches '%s' (a kernel name, a key substring, or "
                        "'all')\n", sel);
        return 1;
    }
    printf("deleted %lld measurements and %lld winners matching '%s'\n", (long long)nm,
           (long long)nw, sel);
    return 0;
}

static int cmd_verify(bt__store *s)
{
    char *rep = NULL;
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = bt__store_verify(s, &rep, &d);
    if (rep && rep[0])
        fputs(rep, stdout);
    free(rep);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    int64_t nm = 0, nw = 0;
    bt__store_counts(s, &nm, &nw, NULL);
    printf("ok: %s passes integrity_check; all %lld winners have their measurements, and all "
           "%lld measurements hold what blocktune trusts\n",
           bt__store_path(s), (long long)nw, (long long)nm);
    return 0;
}

/* The subcommands: their positional arguments and the options each takes beside --db. */
static const struct cache_sub {
    const char *name, *arg; /* arg: what its one argument is (NULL: none) */
    unsigned opts;
    int writes; /* creates a missing store */
} subs[] = {
    {"list", NULL, 1u << O_JSON, 0},
    {"show", "a KEY or part of one", 0, 0},
    {"export", "a FILE or DIR", 1u << O_DEVICE | 1u << O_KERNEL | 1u << O_TOP | 1u << O_VLLM, 0},
    {"import", "a FILE or DIR", 0, 1},
    {"forget", "a kernel, a key substring or 'all'", 1u << O_YES, 1},
    {"verify", NULL, 0, 0},
    {"export-kt", "a FILE", 1u << O_DEVICE | 1u << O_KERNEL | 1u << O_KEY, 0},
    {"export-t4", "a FILE or -", 1u << O_DEVICE | 1u << O_KERNEL | 1u << O_KEY, 0},
};

/* One option's value into A. 0, or the exit status of a usage error. */
static int cache_opt(cache_args *A, int id, const char *v)
{
    uint64_t k;
    A->seen |= 1u << id;
    switch (id) {
    case O_DB: A->db = v; break;
    case O_YES: A->yes = 1; break;
    case O_JSON: A->json = 1; break;
    case O_VLLM: A->vllm = 1; break;
    case O_DEVICE: A->device = v; break;
    case O_KERNEL: A->kernel = v; break;
    case O_KEY: A->key = v; break;
    case O_TOP:
        if (!bt_cli_parse_u64(v, &k) || k < 1 || k > 1000)
            return bt_cli_usage_error("cache", "--top takes a count from 1 to 1000, not '%s'", v);
        A->top_k = (int)k;
        break;
    }
    return 0;
}

/* The command line into A; the subcommand's row in *sub. 0, BT_CLI_HELP, or a usage error. */
static int parse_cache(int argc, char **argv, cache_args *A, const struct cache_sub **sub)
{
    bt_cli_parser P;
    bt_cli_begin(&P, "cache", cache_opts, sizeof cache_opts / sizeof cache_opts[0], 0, argc, argv);
    for (int id, rc; (id = bt_cli_next(&P)) != BT_CLI_END;) {
        if (id == BT_CLI_HELP) {
            help(stdout);
            return BT_CLI_HELP;
        }
        if (id == BT_CLI_ERROR)
            return BT_EXIT_USAGE;
        if (id != BT_CLI_ARG && (rc = cache_opt(A, id, P.value)))
            return rc;
        if (id == BT_CLI_ARG && !A->sub)
            A->sub = P.value;
        else if (id == BT_CLI_ARG && A->nargs++ == 0)
            A->arg = P.value;
    }
    if (!A->sub) {
        help(stderr);
        return BT_EXIT_USAGE;
    }
    *sub = NULL;
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        if (!strcmp(A->sub, subs[i].name))
            *sub = &subs[i];
    const struct cache_sub *u = *sub;
    if (!u)
        return bt_cli_usage_error("cache", "unknown subcommand '%s'", A->sub);
    for (int o = O_YES; o <= O_KEY; o++)
        if ((A->seen >> o & 1) && !(u->opts >> o & 1) && o != O_YES)
            return bt_cli_usage_error("cache", "'%s' does not take --%s", u->name,
                                      cache_opts[o].name);
    if (u->arg && A->nargs != 1)
        return bt_cli_usage_error("cache", "'%s' takes one argument (%s)", u->name, u->arg);
    if (!u->arg && A->nargs)
        return bt_cli_usage_error("cache", "'%s' takes no argument, not '%s'", u->name, A->arg);
    return 0;
}

int bt_cmd_cache(int argc, char **argv)
{
    cache_args A = {0};
    const struct cache_sub *u = NULL;
    int rc = parse_cache(argc, argv, &A, &u);
    if (rc)
        return rc == BT_CLI_HELP ? 0 : rc;
    bt__store *s = NULL;
    if ((rc = open_store(A.db, u->writes, &s)))
        return rc;
    const char *sub = u->name;
    if (!strcmp(sub, "list"))
        rc = A.json ? cmd_list_json(s) : cmd_list(s);
    else if (!strcmp(sub, "show"))
        rc = cmd_show(s, A.arg);
    else if (!strcmp(sub, "export"))
        rc = cmd_export(s, &A);
    else if (!strcmp(sub, "export-kt") || !strcmp(sub, "export-t4"))
        rc = cmd_export_key(s, sub, &A);
    else if (!strcmp(sub, "import"))
        rc = cmd_import(s, A.arg);
    else if (!strcmp(sub, "forget"))
        rc = cmd_forget(s, A.arg, A.yes);
    else
        rc = cmd_verify(s);
    bt__store_close(s);
    return rc;
}
