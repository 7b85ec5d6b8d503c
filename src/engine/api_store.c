/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_store.c — the public calls for the results store and wisdom (what `blocktune cache` does),
 * the strategy and backend listings: thin wrappers over store/, search/ and the device layer,
 * which keep their internal names out of the public header.
 */
#include "engine/api_store.h"

#include "backends/device.h"
#include "core/util.h"
#include "search/strategy.h"
#include "store/ktinterop.h"
#include "store/store.h"
#include "store/t4.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct bt_store {
    bt__store *s;
};

bt_status bt_store_open(const char *path, unsigned flags, bt_store **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (flags & ~(unsigned)(BT_STORE_READONLY | BT_STORE_CREATE) ||
        (flags & BT_STORE_READONLY && flags & BT_STORE_CREATE)) {
        bt__diag_set(diag, "bt_store_open: flags 0x%x (BT_STORE_READONLY or BT_STORE_CREATE)",
                     flags);
        return BT_INVALID_ARG;
    }
    bt_store *s = calloc(1, sizeof *s);
    if (!s)
        return BT_NOMEM;
    struct stat sb;
    bt_status st;
    char *def = path ? NULL : bt__store_default_path();
    const char *where = path ? path : def;
    if (flags & BT_STORE_READONLY)
        st = bt__store_open_read(path, &s->s, diag);
    else if (!(flags & BT_STORE_CREATE) && (!where || stat(where, &sb) != 0)) {
        bt__diag_set(diag, "no store at %s (BT_STORE_CREATE makes one)",
                     where ? where : "the default path (no cache folder)");
        st = BT_NOT_FOUND;
    } else
        st = bt__store_open(path, &s->s, diag);
    free(def);
    if (st) {
        free(s);
        return st;
    }
    *out = s;
    return BT_OK;
}

void bt_store_destroy(bt_store *s)
{
    if (!s)
        return;
    bt__store_close(s->s);
    free(s);
}

bt__store *bt__store_handle(bt_store *s) { return s ? s->s : NULL; }

const char *bt_store_path(const bt_store *s) { return s ? bt__store_path(s->s) : NULL; }

bt_status bt_store_counts(bt_store *s, int64_t *measurements, int64_t *winners, bt_diag *diag)
{
    int64_t m = 0, w = 0;
    if (!s)
        return BT_INVALID_ARG;
    bt_status st = bt__store_counts(s->s, &m, &w, diag);
    if (measurements)
        *measurements = m;
    if (winners)
        *winners = w;
    return st;
}

bt_status bt_store_forget(bt_store *s, const char *selector, int dry_run, int64_t *measurements,
                          int64_t *winners, bt_diag *diag)
{
    int64_t m = 0, w = 0;
    if (!s || !selector)
        return BT_INVALID_ARG;
    bt_status st = bt__store_forget(s->s, selector, dry_run, &m, &w, diag);
    if (measurements)
        *measurements = m;
    if (winners)
        *winners = w;
    return st;
}

bt_status bt_store_verify(bt_store *s, char **report, bt_diag *diag)
{
    if (report)
        *report = NULL;
    if (!s)
        return BT_INVALID_ARG;
    char *rep = NULL;
    bt_status st = bt__store_verify(s->s, &rep, diag);
    if (report)
        *report = rep;
    else
        free(rep);
    return st;
}

/* --- winners ---------------------------------------------------------------------------------- */
typedef struct winner_row {
    char *kernel, *key, *config, *device, *origin;
    double median_ms;
} winner_row;

struct bt_winner_list {
    winner_row *rows;
    size_t n, cap;
    bool nomem;
};

static int add_winner(const bt__winner *w, void *user)
{
    bt_winner_list *l = user;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        winner_row *r = realloc(l->rows, cap * sizeof *r);
        if (!r) {
            l->nomem = true;
            return 1;
        }
        l->rows = r;
        l->cap = cap;
    }
    const bt__measurement *m = &w->m;
    winner_row *r = &l->rows[l->n];
    r->kernel = bt__strdup(m->kernel ? m->kernel : "");
    r->key = bt__strdup(m->key ? m->key : "");
    r->config = bt__strdup(m->config_json ? m->config_json : "{}");
    r->device = bt__strdup(m->device_name ? m->device_name : "");
    r->origin = bt__strdup(w->origin ? w->origin : "tuned");
    r->median_ms = m->median_ms;
    l->n++;
    if (!r->kernel || !r->key || !r->config || !r->device || !r->origin) {
        l->nomem = true;
        return 1;
    }
    return 0;
}

bt_status bt_store_winners(bt_store *s, const char *kernel, bt_winner_list **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!s)
        return BT_INVALID_ARG;
    bt_winner_list *l = calloc(1, sizeof *l);
    if (!l)
        return BT_NOMEM;
    bt_status st = bt__store_winners(s->s, kernel, NULL, add_winner, l, diag);
    if (l->nomem)
        st = BT_NOMEM;
    if (st) {
        bt_winner_list_destroy(l);
        return st;
    }
    *out = l;
    return BT_OK;
}

size_t bt_winner_list_count(const bt_winner_list *l) { return l ? l->n : 0; }

static const winner_row *row(const bt_winner_list *l, size_t i)
{
    return l && i < l->n ? &l->rows[i] : NULL;
}

const char *bt_winner_list_kernel(const bt_winner_list *l, size_t i)
{
    return row(l, i) ? row(l, i)->kernel : NULL;
}
const char *bt_winner_list_key(const bt_winner_list *l, size_t i)
{
    return row(l, i) ? row(l, i)->key : NULL;
}
const char *bt_winner_list_config(const bt_winner_list *l, size_t i)
{
    return row(l, i) ? row(l, i)->config : NULL;
}
const char *bt_winner_list_device(const bt_winner_list *l, size_t i)
{
    return row(l, i) ? row(l, i)->device : NULL;
}
const char *bt_winner_list_origin(const bt_winner_list *l, size_t i)
{
    return row(l, i) ? row(l, i)->origin : NULL;
}
double bt_winner_list_median_ms(const bt_winner_list *l, size_t i)
{
    return row(l, i) ? row(l, i)->median_ms : 0;
}

void bt_winner_list_destroy(bt_winner_list *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        winner_row *r = &l->rows[i];
        free(r->kernel), free(r->key), free(r->config), free(r->device), free(r->origin);
    }
    free(l->rows);
    free(l);
}

/* --- wisdom ----------------------------------------------------------------------------------- */
static bool is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bt_status bt_wisdom_import_ex(bt_store *s, const char *path, bt_wisdom_format *format,
                              int *entries, bt_diag *diag)
{
    int n = 0;
    if (entries)
        *entries = 0;
    if (!s || !path)
        return BT_INVALID_ARG;
    bool kt = !is_dir(path) && bt__kt_is_cache(path);
    if (format)
        *format = kt ? BT_WISDOM_KERNEL_TUNER : BT_WISDOM_BLOCKTUNE;
    bt_status st = is_dir(path) ? bt__wisdom_import_dir(s->s, path, &n, diag)
                   : kt         ? bt__kt_import(s->s, path, &n, diag)
                                : bt__wisdom_import_file(s->s, path, &n, diag);
    if (entries)
        *entries = n;
    return st;
}

bt_status bt_wisdom_import(bt_store *s, const char *path, int *entries, bt_diag *diag)
{
    return bt_wisdom_import_ex(s, path, NULL, entries, diag);
}

struct bt_wisdom_export_options {
    char *kernel, *device, *key;
    int top_k;
};

bt_status bt_wisdom_export_options_create(bt_wisdom_export_options **out)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? BT_OK : BT_NOMEM;
}

void bt_wisdom_export_options_destroy(bt_wisdom_export_options *o)
{
    if (!o)
        return;
    free(o->kernel), free(o->device), free(o->key);
    free(o);
}

bt_status bt_wisdom_export_options_set_kernel(bt_wisdom_export_options *o, const char *kernel)
{
    return o ? bt__strset(&o->kernel, kernel) : BT_INVALID_ARG;
}

bt_status bt_wisdom_export_options_set_device(bt_wisdom_export_options *o, const char *device)
{
    return o ? bt__strset(&o->device, device) : BT_INVALID_ARG;
}

bt_status bt_wisdom_export_options_set_key(bt_wisdom_export_options *o, const char *key)
{
    return o ? bt__strset(&o->key, key) : BT_INVALID_ARG;
}

bt_status bt_wisdom_export_options_set_top_k(bt_wisdom_export_options *o, int k)
{
    if (!o || k < 1 || k > 1000)
        return BT_INVALID_ARG;
    o->top_k = k;
    return BT_OK;
}

const char *bt_wisdom_format_name(bt_wisdom_format format)
{
    switch (format) {
    case BT_WISDOM_BLOCKTUNE: return "blocktune wisdom";
    case BT_WISDOM_VLLM: return "vLLM config files";
    case BT_WISDOM_KERNEL_TUNER: return "Kernel Tuner cache";
    case BT_WISDOM_T4: return "T4 results, schema " BT__T4_VERSION;
    }
    return "unknown format";
}

/* blocktune's format: a file, a folder (one file per device), or "-" (standard output). */
static bt_status export_blocktune(bt__store *s, const bt__wisdom_export_opts *eo,
                                  const char *path, int *files, bt_diag *diag)
{
    bt_status st;
    if (!strcmp(path, "-")) {
        char *text = NULL;
        if ((st = bt__wisdom_export_string(s, eo, &text, diag)) == BT_OK)
            st = printf("%s\n", text) < 0 || fflush(stdout) ? BT_IO : BT_OK;
        free(text);
        *files = st == BT_OK;
    } else if (is_dir(path) || path[strlen(path) - 1] == '/') {
        st = bt__wisdom_export_dir(s, eo, path, files, diag);
    } else if ((st = bt__wisdom_export_file(s, eo, path, diag)) == BT_OK) {
        *files = 1;
    }
    return st;
}

bt_status bt_wisdom_export_ex(bt_store *s, bt_wisdom_format format,
                              const bt_wisdom_export_options *o, const char *path, int *files,
                              int *rows, bt_diag *diag)
{
    int n = 0, r = 0;
    if (files)
        *files = 0;
    if (rows)
        *rows = 0;
    if (!s || !path || !path[0])
        return BT_INVALID_ARG;
    const char *kernel = o ? o->kernel : NULL, *device = o ? o->device : NULL;
    const char *key = o ? o->key : NULL;
    if ((format == BT_WISDOM_KERNEL_TUNER || format == BT_WISDOM_T4) && !kernel) {
        bt__diag_set(diag, "bt_wisdom_export: the Kernel Tuner and T4 formats need a kernel");
        return BT_INVALID_ARG;
    }
    bt__wisdom_export_opts eo = {kernel, device, o ? o->top_k : 0};
    bt_status st;
    switch (format) {
    case BT_WISDOM_BLOCKTUNE:
        st = export_blocktune(s->s, &eo, path, &n, diag);
        break;
    case BT_WISDOM_VLLM:
        st = bt__wisdom_export_vllm_dir(s->s, kernel, device, path, &n, diag);
        break;
    case BT_WISDOM_KERNEL_TUNER:
    case BT_WISDOM_T4:
        if (format == BT_WISDOM_KERNEL_TUNER && !strcmp(path, "-")) {
            bt__diag_set(diag, "a Kernel Tuner cache is written to a FILE (.json, or .json.gz)");
            return BT_INVALID_ARG;
        }
        st = format == BT_WISDOM_T4 ? bt__t4_export(s->s, kernel, device, key, path, &r, diag)
                                    : bt__kt_export(s->s, kernel, device, key, path, &r, diag);
        n = st == BT_OK;
        break;
    default:
        bt__diag_set(diag, "bt_wisdom_export: unknown format %d", (int)format);
        return BT_INVALID_ARG;
    }
    if (files)
        *files = n;
    if (rows)
        *rows = r;
    return st;
}

bt_status bt_wisdom_export(bt_store *s, bt_wisdom_format format, const char *kernel,
                           const char *device, const char *key, const char *path, int *files,
                           bt_diag *diag)
{
    if (format == BT_WISDOM_VLLM && !kernel) { /* 0.2.0's rule; bt_wisdom_export_ex has none */
        bt__diag_set(diag, "bt_wisdom_export: the vLLM format needs a kernel");
        return BT_INVALID_ARG;
    }
    bt_wisdom_export_options o = {(char *)kernel, (char *)device, (char *)key, 0};
    return bt_wisdom_export_ex(s, format, &o, path, files, NULL, diag);
}

/* --- strategies and backends ------------------------------------------------------------------ */
static const bt__strategy *strategy_at(int i)
{
    size_t n = 0;
    const bt__strategy *const *all = bt__strategies(&n);
    return i >= 0 && (size_t)i < n ? all[i] : NULL;
}

int bt_strategy_count(void)
{
    size_t n = 0;
    bt__strategies(&n);
    return (int)n;
}

const char *bt_strategy_name(int i) { return strategy_at(i) ? strategy_at(i)->name : NULL; }

const char *bt_strategy_description(int i)
{
    return strategy_at(i) ? strategy_at(i)->summary : NULL;
}

int bt_backend_count(void) { return bt__device_backend_count(); }

int bt_backend_status(int i, const char **name, const char **reason)
{
    const char *r = NULL;
    if (!bt__device_backend_status(i, name, &r))
        return -1;
    if (reason)
        *reason = r;
    return r ? 0 : 1;
}
