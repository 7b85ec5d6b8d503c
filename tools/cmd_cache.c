/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_cache.c — `blocktune cache`: list, show, export, import, forget and verify the results
 * store and its wisdom files, over the public bt_store_* and bt_wisdom_* calls.
 */
#include "cli.h"
#include "cli_num.h"
#include "cli_opts.h"

#include <stdbool.h>
#include <stdio.h>
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
static int open_store(const char *db, bool write, bt_store **s)
{
    bt_diag d = {0};
    bt_status st = bt_store_open(db, write ? BT_STORE_CREATE : BT_STORE_READONLY, s, &d);
    return st == BT_OK ? 0 : bt_cli_fail(st, &d);
}

static int cmd_list(bt_store *s, bool json)
{
    bt_diag d = {0};
    bt_status st = json ? bt_store_write_winners_json(s, stdout, &d)
                        : bt_store_write_winners_table(s, stdout, &d);
    return st == BT_OK ? 0 : bt_cli_fail(st, &d);
}

static int cmd_show(bt_store *s, const char *key)
{
    bt_diag d = {0};
    size_t n = 0;
    bt_status st = bt_store_write_measurements(s, key, stdout, &n, &d);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    if (!n) {
        fprintf(stderr, "blocktune: no measurements for a key containing '%s' in %s "
                        "('blocktune cache list' shows the keys)\n",
                key, bt_store_path(s));
        return BT_EXIT_FAIL;
    }
    return 0;
}

static int is_dir_target(const char *path)
{
    struct stat sb;
    size_t n = strlen(path);
    return (n && path[n - 1] == '/') || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
}

/* export, export-kt and export-t4: the store's rows in a format, with the options given. */
static int cmd_export(bt_store *s, const char *sub, const cache_args *A)
{
    bt_wisdom_format fmt = !strcmp(sub, "export-kt") ? BT_WISDOM_KERNEL_TUNER
                           : !strcmp(sub, "export-t4") ? BT_WISDOM_T4
                           : A->vllm                 ? BT_WISDOM_VLLM
                                                     : BT_WISDOM_BLOCKTUNE;
    bool keyed = fmt == BT_WISDOM_KERNEL_TUNER || fmt == BT_WISDOM_T4;
    if (keyed && (!A->kernel || !A->device || !A->key))
        return bt_cli_usage_error("cache", "%s needs --kernel K --device D --key KEY FILE", sub);
    bt_wisdom_export_options *o = NULL;
    bt_diag d = {0};
    int files = 0, rows = 0;
    bt_status st = bt_wisdom_export_options_create(&o);
    if (!st && A->kernel)
        st = bt_wisdom_export_options_set_kernel(o, A->kernel);
    if (!st && A->device)
        st = bt_wisdom_export_options_set_device(o, A->device);
    if (!st && A->key)
        st = bt_wisdom_export_options_set_key(o, A->key);
    if (!st && A->top_k)
        st = bt_wisdom_export_options_set_top_k(o, A->top_k);
    if (!st)
        st = bt_wisdom_export_ex(s, fmt, o, A->arg, &files, &rows, &d);
    bt_wisdom_export_options_destroy(o);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    const char *t = A->arg;
    if (keyed)
        fprintf(strcmp(t, "-") ? stdout : stderr, "wrote %d %s of %s [%s] on %s to %s (%s)\n",
                rows, fmt == BT_WISDOM_T4 ? "results" : "configs", A->kernel, A->key, A->device,
                t, bt_wisdom_format_name(fmt));
    else if (fmt == BT_WISDOM_VLLM)
        printf("wrote %d vLLM config file%s to %s\n", files, files == 1 ? "" : "s", t);
    else if (!strcmp(t, "-"))
        ; /* the wisdom itself went to standard output */
    else if (is_dir_target(t))
        printf("wrote %d wisdom file%s to %s\n", files, files == 1 ? "" : "s", t);
    else
        printf("wrote %s\n", t);
    return 0;
}

static int cmd_import(bt_store *s, const char *target)
{
    bt_diag d = {0};
    int n = 0;
    bt_wisdom_format fmt = BT_WISDOM_BLOCKTUNE;
    bt_status st = bt_wisdom_import_ex(s, target, &fmt, &n, &d);
    if (st != BT_OK) {
        int rc = bt_cli_fail(st, &d);
        fprintf(stderr, "blocktune: nothing was imported\n");
        return rc;
    }
    if (fmt == BT_WISDOM_KERNEL_TUNER)
        printf("imported %d measurements from the Kernel Tuner cache %s\n", n, target);
    else
        printf("imported %d entr%s from %s\n", n, n == 1 ? "y" : "ies", target);
    return 0;
}

static int cmd_forget(bt_store *s, const char *sel, int yes)
{
    bt_diag d = {0};
    int64_t nm = 0, nw = 0;
    int dry = !strcmp(sel, "all") && !yes;
    bt_status st = bt_store_forget(s, sel, dry, &nm, &nw, &d);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    if (dry) {
        printf("would delete %lld measurements and %lld winners (everything in %s); "
               "run 'blocktune cache forget all --yes' to do it\n",
               (long long)nm, (long long)nw, bt_store_path(s));
        return BT_EXIT_FAIL;
    }
    if (nm == 0 && nw == 0) {
        fprintf(stderr, "blocktune: nothing matches '%s' (a kernel name, a key substring, or "
                        "'all')\n", sel);
        return BT_EXIT_FAIL;
    }
    printf("deleted %lld measurements and %lld winners matching '%s'\n", (long long)nm,
           (long long)nw, sel);
    return 0;
}

static int cmd_verify(bt_store *s)
{
    char *rep = NULL;
    bt_diag d = {0};
    bt_status st = bt_store_verify(s, &rep, &d);
    if (rep && rep[0])
        fputs(rep, stdout);
    free(rep);
    if (st != BT_OK)
        return bt_cli_fail(st, &d);
    int64_t nm = 0, nw = 0;
    bt_store_counts(s, &nm, &nw, NULL);
    printf("ok: %s passes integrity_check; all %lld winners have their measurements, and all "
           "%lld measurements hold what blocktune trusts\n",
           bt_store_path(s), (long long)nw, (long long)nm);
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
    bt_store *s = NULL;
    if ((rc = open_store(A.db, u->writes, &s)))
        return rc;
    const char *sub = u->name;
    if (!strcmp(sub, "list"))
        rc = cmd_list(s, A.json);
    else if (!strcmp(sub, "show"))
        rc = cmd_show(s, A.arg);
    else if (!strncmp(sub, "export", 6))
        rc = cmd_export(s, sub, &A);
    else if (!strcmp(sub, "import"))
        rc = cmd_import(s, A.arg);
    else if (!strcmp(sub, "forget"))
        rc = cmd_forget(s, A.arg, A.yes);
    else
        rc = cmd_verify(s);
    bt_store_destroy(s);
    return rc;
}
