/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wisdom.c — wisdom files (docs/wisdom.md): export of a store's winners (and top-k) as JSON, the
 * transactional import that rejects malformed or hostile input naming file:line:column, the
 * in-memory user/shipped wisdom sets and the lookup order (vllm.c writes vLLM's layout).
 */
#include "store/store.h"

#include "core/jpos.h"
#include "core/util.h"
#include "core/datadir.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>


#define MAX_STR 4096              /* longest string field accepted from a file */
#define MAX_FILE (256u << 20)     /* largest wisdom file read */
#define MAX_ENTRIES 1000000

/* One entry of a wisdom document: its measurement (strings owned), key, rank and selection. */
typedef struct wentry {
    bt__measurement m;
    bt__keyvals kv;
    int rank;      /* 0: the winner; k: the k-th runner-up */
    double margin;
    int tie;
    char *origin;  /* "wisdom:<file>" */
} wentry;

struct bt__wisdom {
    wentry *e;
    size_t n, cap;
    /* while loading for some kernels (bt__wisdom_load_*): only documents that name one of them */
    const char *const *only;
    size_t nonly;
};

static void wentry_clear(wentry *e)
{
    bt__measurement_clear(&e->m);
    free(e->origin);
    e->origin = NULL;
}

static void entries_free(wentry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        wentry_clear(&e[i]);
    free(e);
}

/* ---------------------------------------------------------------------------------------------
 * Export
 * ------------------------------------------------------------------------------------------- */
static json_t *jnum(double v)
{
    return v < 0 || isnan(v) || isinf(v) ? NULL : json_real(v);
}

static void set_num(json_t *o, const char *k, double v)
{
    json_t *j = jnum(v);
    if (j)
        json_object_set_new(o, k, j);
}

static void set_int(json_t *o, const char *k, int64_t v)
{
    if (v >= 0)
        json_object_set_new(o, k, json_integer((json_int_t)v));
}

typedef struct export_ctx {
    bt__store *s;
    const bt__wisdom_export_opts *o;
    json_t *entries;
    const char *device;       /* the one device of this document */
    bt__measurement head;     /* the newest winner's provenance (strings owned) */
    bt_status st;
    bt_diag *diag;
} export_ctx;

static json_t *entry_json(const bt__measurement *m, int rank, double margin, int tie,
                          const char *source, const bt__measurement *head)
{
    json_t *e = json_object();
    json_t *key = json_loads(m->key_json, 0, NULL);
    json_t *cfg = json_loads(m->config_json, 0, NULL);
    if (!e || !key || !cfg) {
        json_decref(e);
        json_decref(key);
        json_decref(cfg);
        return NULL;
    }
    json_object_set_new(e, "kernel", json_string(m->kernel));
    json_object_set_new(e, "source_hash", json_string(m->source_hash));
    if (m->options[0])
        json_object_set_new(e, "options", json_string(m->options));
    json_object_set_new(e, "key", key);
    json_object_set_new(e, "config", cfg);
    json_object_set_new(e, "rank", json_integer(rank));
    set_num(e, "median_ms", m->median_ms);
    set_num(e, "p20_ms", m->p20_ms);
    set_num(e, "p80_ms", m->p80_ms);
    set_num(e, "min_ms", m->min_ms);
    set_num(e, "mad_ms", m->mad_ms);
    set_int(e, "reps", m->reps);
    set_num(e, "max_rel_err", m->max_rel_err);
    set_int(e, "regs", m->regs);
    set_int(e, "local_bytes", m->local_bytes);
    set_int(e, "smem_bytes", m->smem_bytes);
    set_num(e, "compile_ms", m->compile_ms);
    if (rank == 0) {
        set_num(e, "margin", margin);
        json_object_set_new(e, "tie", json_boolean(tie));
    }
    json_object_set_new(e, "source", json_string(source ? source : "tuned"));
    set_num(e, "timestamp", m->timestamp);
    /* Provenance that differs from the header's. */
    if (strcmp(m->driver, head->driver) != 0)
        json_object_set_new(e, "driver", json_string(m->driver));
    if (strcmp(m->compiler, head->compiler) != 0)
        json_object_set_new(e, "compiler", json_string(m->compiler));
    if (strcmp(m->blocktune_version, head->blocktune_version) != 0)
        json_object_set_new(e, "blocktune_version", json_string(m->blocktune_version));
    return e;
}

static int newest_cb(const bt__winner *w, void *user)
{
    export_ctx *c = user;
    if (c->head.kernel && c->head.timestamp >= w->m.timestamp)
        return 0;
    bt__measurement_clear(&c->head);
    const bt__measurement *m = &w->m;
    c->head.kernel = bt__strdup(m->kernel);
    c->head.device_name = bt__strdup(m->device_name);
    c->head.device_uuid = bt__strdup(m->device_uuid);
    c->head.device_arch = bt__strdup(m->device_arch);
    c->head.driver = bt__strdup(m->driver);
    c->head.compiler = bt__strdup(m->compiler);
    c->head.blocktune_version = bt__strdup(m->blocktune_version);
    c->head.timestamp = m->timestamp;
    if (!c->head.device_name || !c->head.device_uuid || !c->head.device_arch ||
        !c->head.driver || !c->head.compiler || !c->head.blocktune_version)
        return BT_NOMEM;
    return 0;
}

typedef struct top_ctx {
    export_ctx *c;
    const char *winner_cfg;
    int rank;
} top_ctx;

static int top_cb(const bt__measurement *m, void *user)
{
    top_ctx *t = user;
    if (!strcmp(m->config_json, t->winner_cfg))
        return 0;
    json_t *e = entry_json(m, ++t->rank, 0, 0, "tuned", &t->c->head);
    if (!e || json_array_append_new(t->c->entries, e) != 0)
        return BT_NOMEM;
    return 0;
}

static int export_cb(const bt__winner *w, void *user)
{
    export_ctx *c = user;
    /* One device per document: match the identity of the header's winner. */
    const char *ident = w->m.device_uuid[0] ? w->m.device_uuid : w->m.device_name;
    const char *hident = c->head.device_uuid[0] ? c->head.device_uuid : c->head.device_name;
    if (strcmp(ident, hident) != 0)
        return 0;
    json_t *e = entry_json(&w->m, 0, w->margin, w->tie, w->origin, &c->head);
    if (!e || json_array_append_new(c->entries, e) != 0)
        return BT_NOMEM;
    if (c->o->top_k > 1) {
        top_ctx t = {c, w->m.config_json, 0};
        bt__store_ident id = {w->m.kernel, w->m.source_hash, w->m.options, ident, w->m.key};
        bt_status st = bt__store_top(c->s, &id, c->o->top_k, top_cb, &t, c->diag);
        if (st != BT_OK)
            return st;
    }
    return 0;
}

typedef struct dev_list {
    char **names; /* identities: uuid or name */
    char **labels;
    size_t n;
} dev_list;

static int devs_cb(const bt__winner *w, void *user)
{
    dev_list *d = user;
    const char *ident = w->m.device_uuid[0] ? w->m.device_uuid : w->m.device_name;
    for (size_t i = 0; i < d->n; i++)
        if (!strcmp(d->names[i], ident))
            return 0;
    char **a = realloc(d->names, (d->n + 1) * sizeof *a);
    if (!a)
        return BT_NOMEM;
    d->names = a;
    char **b = realloc(d->labels, (d->n + 1) * sizeof *b);
    if (!b)
        return BT_NOMEM;
    d->labels = b;
    d->names[d->n] = bt__strdup(ident);
    d->labels[d->n] = bt__strdup(w->m.device_name);
    d->n++;
    return d->names[d->n - 1] && d->labels[d->n - 1] ? 0 : BT_NOMEM;
}

static void dev_list_free(dev_list *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->names[i]);
        free(d->labels[i]);
    }
    free(d->names);
    free(d->labels);
}

bt_status bt__wisdom_export_string(bt__store *s, const bt__wisdom_export_opts *opts, char **out,
                                   bt_diag *diag)
{
    *out = NULL;
    bt__wisdom_export_opts dflt = {0};
    if (!opts)
        opts = &dflt;
    export_ctx c = {.s = s, .o = opts, .diag = diag};
    bt__measurement_init(&c.head);
    const char *device = opts->device;
    dev_list devs = {0};
    bt_status st = bt__store_winners(s, opts->kernel, device, devs_cb, &devs, diag);
    if (st != BT_OK) {
        dev_list_free(&devs);
        return st;
    }
    if (devs.n == 0) {
        dev_list_free(&devs);
        bt__diag_set(diag, "%s: no winners%s%s%s%s to export", bt__store_path(s),
                     opts->kernel ? " of " : "", opts->kernel ? opts->kernel : "",
                     device ? " on " : "", device ? device : "");
        return BT_NOT_FOUND;
    }
    if (devs.n > 1) {
        bt__sbuf b = {0};
        for (size_t i = 0; i < devs.n; i++)
            bt__sbuf_printf(&b, "%s%s (%s)", i ? ", " : "", devs.labels[i], devs.names[i]);
        bt__diag_set(diag, "the store holds winners of %zu devices: %s; a wisdom file holds one "
                           "(pick one with --device or export to a directory)",
                     devs.n, b.s ? b.s : "");
        bt__sbuf_free(&b);
        dev_list_free(&devs);
        return BT_INVALID_ARG;
    }
    st = bt__store_winners(s, opts->kernel, devs.names[0], newest_cb, &c, diag);
    dev_list_free(&devs);
    json_t *root = json_object();
    c.entries = json_array();
    if (st == BT_OK && (!root || !c.entries))
        st = BT_NOMEM;
    if (st == BT_OK)
        st = bt__store_winners(s, opts->kernel, c.head.device_uuid[0] ? c.head.device_uuid
                                                                      : c.head.device_name,
                               export_cb, &c, diag);
    if (st != BT_OK) {
        json_decref(root);
        json_decref(c.entries);
        bt__measurement_clear(&c.head);
        return st;
    }
    char created[32];
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    json_object_set_new(root, "format", json_string(BT__WISDOM_FORMAT));
    json_object_set_new(root, "format_version", json_integer(BT__WISDOM_FORMAT_VERSION));
    json_object_set_new(root, "blocktune_version", json_string(c.head.blocktune_version));
    json_object_set_new(root, "device", json_string(c.head.device_name));
    json_object_set_new(root, "uuid", json_string(c.head.device_uuid));
    json_object_set_new(root, "arch", json_string(c.head.device_arch));
    json_object_set_new(root, "driver", json_string(c.head.driver));
    json_object_set_new(root, "compiler", json_string(c.head.compiler));
    json_object_set_new(root, "created", json_string(created));
    json_object_set_new(root, "entries", c.entries);
    *out = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
    json_decref(root);
    bt__measurement_clear(&c.head);
    return *out ? BT_OK : BT_NOMEM;
}

bt_status bt__wisdom_export_file(bt__store *s, const bt__wisdom_export_opts *opts,
                                 const char *path, bt_diag *diag)
{
    char *text = NULL;
    bt_status st = bt__wisdom_export_string(s, opts, &text, diag);
    if (st != BT_OK)
        return st;
    size_t n = strlen(text);
    text[n] = '\n'; /* replaces the NUL; the size below includes the newline */
    st = bt__write_file_atomic(path, text, n + 1, diag);
    free(text);
    return st;
}

/* A file name from a device name: letters, digits, '-', '.', '_' kept, the rest '_'. */
static void sanitize(const char *in, char *out, size_t size)
{
    size_t j = 0;
    for (const char *p = in; *p && j + 1 < size; p++) {
        char ch = *p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 ch == '-' || ch == '.' || ch == '_';
        out[j++] = ok ? ch : '_';
    }
    out[j] = '\0';
    if (!j || out[0] == '.')
        out[0] = '_', out[j ? j : 1] = '\0';
}

bt_status bt__wisdom_export_dir(bt__store *s, const bt__wisdom_export_opts *opts, const char *dir,
                                int *nfiles, bt_diag *diag)
{
    if (nfiles)
        *nfiles = 0;
    bt__wisdom_export_opts o = opts ? *opts : (bt__wisdom_export_opts){0};
    dev_list devs = {0};
    bt_status st = bt__store_winners(s, o.kernel, o.device, devs_cb, &devs, diag);
    if (st == BT_OK && devs.n == 0) {
        bt__diag_set(diag, "%s: no winners to export", bt__store_path(s));
        st = BT_NOT_FOUND;
    }
    if (st == BT_OK && mkdir(dir, 0755) != 0 && errno != EEXIST) {
        bt__diag_set(diag, "cannot create directory %s: %s", dir, strerror(errno));
        st = BT_IO;
    }
    for (size_t i = 0; st == BT_OK && i < devs.n; i++) {
        char base[160], path[4096];
        sanitize(devs.labels[i], base, sizeof base);
        /* Two devices of one name (and so two UUIDs) get the UUID's first 8 characters. */
        int dup = 0;
        for (size_t j = 0; j < devs.n; j++)
            dup += j != i && !strcmp(devs.labels[j], devs.labels[i]);
        if (dup)
            snprintf(path, sizeof path, "%s/%s-%.8s.json", dir, base, devs.names[i]);
        else
            snprintf(path, sizeof path, "%s/%s.json", dir, base);
        o.device = devs.names[i];
        st = bt__wisdom_export_file(s, &o, path, diag);
        if (st == BT_OK && nfiles)
            (*nfiles)++;
    }
    dev_list_free(&devs);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing (shared by import and the in-memory sets). Every error names name:line:column.
 * ------------------------------------------------------------------------------------------- */
typedef struct parser {
    const char *name;
    const char *text; /* the document, NUL-terminated */
    bt__jpos *pos;    /* its values' line:column, built by the first error that needs one */
    bt_diag *diag;
} parser;

static bt_status perr(parser *P, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bt_status perr(parser *P, const char *path, const char *fmt, ...)
{
    if (!P->diag)
        return BT_PARSE;
    bt__diag_clear(P->diag);
    snprintf(P->diag->file, sizeof P->diag->file, "%s", P->name);
    int line = 0, col = 0;
    if (path && !P->pos && P->text)
        P->pos = bt__jpos_build(P->text); /* only on an error: a third of a clean parse */
    if (path && P->pos && bt__jpos_find(P->pos, path, &line, &col)) {
        P->diag->line = line;
        P->diag->column = col;
    }
    if (path)
        bt__diag_field(P->diag, path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(P->diag->msg, sizeof P->diag->msg, fmt, ap);
    va_end(ap);
    return BT_PARSE;
}

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

/* A string member: required or optional (then *out = dflt when absent). Copies. */
static bt_status get_str(parser *P, json_t *o, const char *opath, const char *k, bool required,
                         const char *dflt, size_t maxlen, char **out)
{
    char path[256];
    snprintf(path, sizeof path, "%s%s%s", opath, opath[0] ? "." : "", k);
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (!v) {
        if (required)
            return perr(P, opath[0] ? opath : NULL, "missing \"%s\" (a string)", k);
        *out = bt__strdup(dflt);
        return *out ? BT_OK : BT_NOMEM;
    }
    if (!json_is_string(v))
        return perr(P, path, "expected a string but found %s", jtype(v));
    size_t len = json_string_length(v);
    if (len > maxlen)
        return perr(P, path, "string of %zu bytes is longer than the limit of %zu", len, maxlen);
    if (strlen(json_string_value(v)) != len)
        return perr(P, path, "string contains a NUL character");
    *out = bt__strdup(json_string_value(v));
    return *out ? BT_OK : BT_NOMEM;
}

/* An optional number >= 0 (-1 when absent). */
static bt_status get_num(parser *P, json_t *o, const char *opath, const char *k, double *out)
{
    json_t *v = json_object_get(o, k);
    *out = -1;
    if (!v)
        return BT_OK;
    char path[256];
    snprintf(path, sizeof path, "%s.%s", opath, k);
    if (!json_is_number(v))
        return perr(P, path, "expected a number but found %s", jtype(v));
    double d = json_number_value(v);
    if (!(d >= 0) || isinf(d))
        return perr(P, path, "expected a finite number >= 0, not %g", d);
    *out = d;
    return BT_OK;
}

static bt_status get_int(parser *P, json_t *o, const char *opath, const char *k, int64_t *out)
{
    json_t *v = json_object_get(o, k);
    *out = -1;
    if (!v)
        return BT_OK;
    char path[256];
    snprintf(path, sizeof path, "%s.%s", opath, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return perr(P, path, "expected an integer >= 0 but found %s", jtype(v));
    *out = json_integer_value(v);
    return BT_OK;
}

static bool valid_name(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n >= BT_NAME_MAX)
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_'))
            return false;
    return true;
}

static bt_status parse_key(parser *P, json_t *v, const char *path, bt__keyvals *kv)
{
    memset(kv, 0, sizeof *kv);
    if (!json_is_object(v))
        return perr(P, path, "expected the key as an object ({\"M\": 4096, ..., \"dtype\": "
                             "\"fp16\"}) but found %s", jtype(v));
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        char sub[512];
        snprintf(sub, sizeof sub, "%.255s.%.64s", path, k);
        if (!strcmp(k, "dtype")) {
            if (!json_is_string(x) || json_string_length(x) == 0 ||
                json_string_length(x) >= sizeof kv->dtype || !valid_name(json_string_value(x)))
                return perr(P, sub, "expected a dtype name (\"fp16\") but found %s", jtype(x));
            snprintf(kv->dtype, sizeof kv->dtype, "%s", json_string_value(x));
            continue;
        }
        if (!valid_name(k))
            return perr(P, path, "key variable name \"%.40s\" is not a name", k);
        if (kv->n >= BT__KEY_MAX)
            return perr(P, sub, "more than %d key variables", BT__KEY_MAX);
        if (!json_is_integer(x))
            return perr(P, sub, "expected an integer but found %s", jtype(x));
        snprintf(kv->names[kv->n], BT_NAME_MAX, "%s", k);
        kv->v[kv->n++] = json_integer_value(x);
    }
    if (kv->n == 0 && !kv->dtype[0])
        return perr(P, path, "the key is empty");
    return BT_OK;
}

static bt_status parse_config(parser *P, json_t *v, const char *path, char **out)
{
    *out = NULL;
    if (!json_is_object(v) || json_object_size(v) == 0)
        return perr(P, path, "expected the config as a non-empty object of integers but found %s",
                    jtype(v));
    if (json_object_size(v) > BT_MAX_PARAMS)
        return perr(P, path, "more than %d parameters", BT_MAX_PARAMS);
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        char sub[512];
        snprintf(sub, sizeof sub, "%.255s.%.64s", path, k);
        if (!valid_name(k))
            return perr(P, path, "parameter name \"%.40s\" is not a name", k);
        if (!json_is_integer(x))
            return perr(P, sub, "expected an integer but found %s", jtype(x));
    }
    *out = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    return *out ? BT_OK : BT_NOMEM;
}

typedef struct header {
    char *btver, *device, *uuid, *arch, *driver, *compiler;
} header;

static void header_free(header *h)
{
    free(h->btver);
    free(h->device);
    free(h->uuid);
    free(h->arch);
    free(h->driver);
    free(h->compiler);
}

static bt_status parse_entry(parser *P, json_t *e, const char *path, const header *h, wentry *w)
{
    memset(w, 0, sizeof *w);
    bt__measurement_init(&w->m);
    bt__measurement *m = &w->m;
    if (!json_is_object(e))
        return perr(P, path, "expected an entry object but found %s", jtype(e));
    bt_status st;
    if ((st = get_str(P, e, path, "kernel", true, NULL, 128, &m->kernel)) ||
        (st = get_str(P, e, path, "source_hash", true, NULL, 128, &m->source_hash)) ||
        (st = get_str(P, e, path, "options", false, "", MAX_STR, &m->options)) ||
        (st = get_str(P, e, path, "driver", false, h->driver, MAX_STR, &m->driver)) ||
        (st = get_str(P, e, path, "compiler", false, h->compiler, MAX_STR, &m->compiler)) ||
        (st = get_str(P, e, path, "blocktune_version", false, h->btver, 128,
                      &m->blocktune_version)) ||
        (st = get_str(P, e, path, "source", false, "tuned", 256, &w->origin)))
        return st;
    if (!m->kernel[0] || !valid_name(m->kernel))
        return perr(P, path, "\"kernel\" must be a name, not \"%.40s\"", m->kernel);
    char sub[512];
    json_t *key = json_object_get(e, "key"), *cfg = json_object_get(e, "config");
    if (!key)
        return perr(P, path, "missing \"key\" (an object)");
    if (!cfg)
        return perr(P, path, "missing \"config\" (an object)");
    snprintf(sub, sizeof sub, "%s.key", path);
    if ((st = parse_key(P, key, sub, &w->kv)))
        return st;
    snprintf(sub, sizeof sub, "%s.config", path);
    if ((st = parse_config(P, cfg, sub, &m->config_json)))
        return st;
    char keytext[1024];
    bt__keyvals_format(&w->kv, keytext, sizeof keytext);
    m->key = bt__strdup(keytext);
    m->key_json = bt__keyvals_json(&w->kv);
    m->device_name = bt__strdup(h->device);
    m->device_uuid = bt__strdup(h->uuid);
    m->device_arch = bt__strdup(h->arch);
    m->status = bt__strdup("ok");
    if (!m->key || !m->key_json || !m->device_name || !m->device_uuid || !m->device_arch ||
        !m->status)
        return BT_NOMEM;
    int64_t rank = 0;
    if ((st = get_num(P, e, path, "median_ms", &m->median_ms)) ||
        (st = get_num(P, e, path, "p20_ms", &m->p20_ms)) ||
        (st = get_num(P, e, path, "p80_ms", &m->p80_ms)) ||
        (st = get_num(P, e, path, "min_ms", &m->min_ms)) ||
        (st = get_num(P, e, path, "mad_ms", &m->mad_ms)) ||
        (st = get_int(P, e, path, "reps", &m->reps)) ||
        (st = get_num(P, e, path, "max_rel_err", &m->max_rel_err)) ||
        (st = get_int(P, e, path, "regs", &m->regs)) ||
        (st = get_int(P, e, path, "local_bytes", &m->local_bytes)) ||
        (st = get_int(P, e, path, "smem_bytes", &m->smem_bytes)) ||
        (st = get_num(P, e, path, "compile_ms", &m->compile_ms)) ||
        (st = get_num(P, e, path, "timestamp", &m->timestamp)) ||
        (st = get_num(P, e, path, "margin", &w->margin)) || (st = get_int(P, e, path, "rank", &rank)))
        return st;
    if (m->median_ms <= 0) {
        snprintf(sub, sizeof sub, "%s.median_ms", path);
        return perr(P, json_object_get(e, "median_ms") ? sub : path,
                    "\"median_ms\" must be a time > 0 in milliseconds");
    }
    if (rank > 1000000)
        return perr(P, path, "\"rank\" %lld is out of range", (long long)rank);
    w->rank = rank < 0 ? 0 : (int)rank;
    json_t *tie = json_object_get(e, "tie");
    if (tie && !json_is_boolean(tie)) {
        snprintf(sub, sizeof sub, "%s.tie", path);
        return perr(P, sub, "expected a boolean but found %s", jtype(tie));
    }
    w->tie = tie && json_is_true(tie);
    if (w->margin < 0)
        w->margin = 0;
    if (m->timestamp <= 0)
        m->timestamp = 0;
    char why[256]; /* what a read of the store would refuse is refused here, with its place */
    if (!bt__measurement_check(m, w->rank == 0, why, sizeof why))
        return perr(P, path, "%s", why);
    return BT_OK;
}

/* Parses and validates a whole document into entries (*out, *n); all or nothing. */
static bt_status parse_doc(const char *text, size_t len, const char *name, wentry **out,
                           size_t *nout, bt_diag *diag)
{
    *out = NULL;
    *nout = 0;
    parser P = {name, text, NULL, diag};
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        if (diag) {
            bt__diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", name);
            diag->line = err.line > 0 ? err.line : 0;
            diag->column = err.column > 0 ? err.column : 0;
            if ((diag->line <= 0 || diag->column <= 0) && err.position > 0) {
                /* At the end of the input jansson gives no column: count it from the offset. */
                size_t pos = (size_t)err.position <= len ? (size_t)err.position : len;
                int line = 1, col = 1;
                for (size_t i = 0; i < pos; i++, col++)
                    if (text[i] == '\n')
                        line++, col = 0;
                diag->line = line;
                diag->column = col > 0 ? col : 1;
            }
            bt__diag_set(diag, "not valid JSON: %s", err.text);
        }
        return BT_PARSE;
    }
    bt_status st = BT_OK;
    header h = {0};
    wentry *e = NULL;
    size_t n = 0;
    if (!json_is_object(root)) {
        st = perr(&P, NULL, "a wisdom file is a JSON object, not %s", jtype(root));
        goto done;
    }
    json_t *fmt = json_object_get(root, "format");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), BT__WISDOM_FORMAT) != 0) {
        st = perr(&P, fmt ? "format" : NULL, "not a wisdom file: \"format\" must be \"%s\"",
                  BT__WISDOM_FORMAT);
        goto done;
    }
    json_t *ver = json_object_get(root, "format_version");
    if (!json_is_integer(ver)) {
        st = perr(&P, ver ? "format_version" : NULL, "\"format_version\" must be an integer");
        goto done;
    }
    if (json_integer_value(ver) != BT__WISDOM_FORMAT_VERSION) {
        st = perr(&P, "format_version", "format version %lld is not supported (this blocktune "
                                        "reads version %d)",
                  (long long)json_integer_value(ver), BT__WISDOM_FORMAT_VERSION);
        goto done;
    }
    if ((st = get_str(&P, root, "", "blocktune_version", false, "", 128, &h.btver)) ||
        (st = get_str(&P, root, "", "device", true, NULL, 256, &h.device)) ||
        (st = get_str(&P, root, "", "uuid", false, "", 64, &h.uuid)) ||
        (st = get_str(&P, root, "", "arch", false, "", 128, &h.arch)) ||
        (st = get_str(&P, root, "", "driver", false, "", MAX_STR, &h.driver)) ||
        (st = get_str(&P, root, "", "compiler", false, "", MAX_STR, &h.compiler)))
        goto done;
    if (!h.device[0]) {
        st = perr(&P, "device", "\"device\" must not be empty");
        goto done;
    }
    json_t *ents = json_object_get(root, "entries");
    if (!json_is_array(ents)) {
        st = perr(&P, ents ? "entries" : NULL, "\"entries\" must be an array");
        goto done;
    }
    size_t count = json_array_size(ents);
    if (count > MAX_ENTRIES) {
        st = perr(&P, "entries", "%zu entries is more than the limit of %d", count, MAX_ENTRIES);
        goto done;
    }
    e = calloc(count ? count : 1, sizeof *e);
    if (!e) {
        st = BT_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        char path[64];
        snprintf(path, sizeof path, "entries[%zu]", i);
        st = parse_entry(&P, json_array_get(ents, i), path, &h, &e[i]);
        n = i + 1;
        if (st != BT_OK)
            goto done;
        size_t olen = strlen(name) + 8;
        free(e[i].origin); /* the file's "source": imported rows say where they came from */
        e[i].origin = malloc(olen);
        if (!e[i].origin) {
            st = BT_NOMEM;
            goto done;
        }
        const char *base = strrchr(name, '/');
        snprintf(e[i].origin, olen, "wisdom:%s", base ? base + 1 : name);
    }
done:
    header_free(&h);
    bt__jpos_free(P.pos);
    json_decref(root);
    if (st != BT_OK) {
        entries_free(e, n);
        return st;
    }
    *out = e;
    *nout = n;
    return BT_OK;
}

/* Reads a file for parsing; errors name it. */
static bt_status read_doc(const char *path, char **text, size_t *len, bt_diag *diag)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        bt__diag_set(diag, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? BT_NOT_FOUND : BT_IO;
    }
    if (!S_ISREG(sb.st_mode) || (size_t)sb.st_size > MAX_FILE) {
        bt__diag_set(diag, "%s: not a regular file of at most %u MiB", path, MAX_FILE >> 20);
        return BT_INVALID_ARG;
    }
    *text = bt__read_file(path, len);
    if (!*text) {
        bt__diag_set(diag, "%s: %s", path, strerror(errno));
        return BT_IO;
    }
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Import
 * ------------------------------------------------------------------------------------------- */
/* Writes entries inside the open transaction. Rank 0 entries become winners. */
static bt_status write_entries(bt__store *s, wentry *e, size_t n, bt_diag *diag)
{
    for (size_t i = 0; i < n; i++) {
        bt_status st = bt__store_put_row_internal(s, &e[i].m, e[i].rank == 0, e[i].margin,
                                                  e[i].tie, e[i].origin, diag);
        if (st != BT_OK)
            return st;
    }
    return BT_OK;
}

static bt_status import_text(bt__store *s, const char *text, size_t len, const char *name,
                             int *count, bt_diag *diag)
{
    wentry *e = NULL;
    size_t n = 0;
    bt_status st = parse_doc(text, len, name, &e, &n, diag);
    if (st == BT_OK)
        st = write_entries(s, e, n, diag);
    if (st == BT_OK && count)
        *count += (int)n;
    entries_free(e, n);
    return st;
}

bt_status bt__wisdom_import_string(bt__store *s, const char *text, const char *name,
                                   int *nentries, bt_diag *diag)
{
    if (nentries)
        *nentries = 0;
    bt_status st = bt__store_begin(s, diag);
    if (st != BT_OK)
        return st;
    st = import_text(s, text, strlen(text), name ? name : "<string>", nentries, diag);
    if (st == BT_OK)
        st = bt__store_commit(s, diag);
    if (st != BT_OK) {
        bt__store_rollback(s);
        if (nentries)
            *nentries = 0;
    }
    return st;
}

bt_status bt__wisdom_import_file(bt__store *s, const char *path, int *nentries, bt_diag *diag)
{
    if (nentries)
        *nentries = 0;
    char *text = NULL;
    size_t len = 0;
    bt_status st = read_doc(path, &text, &len, diag);
    if (st != BT_OK)
        return st;
    if ((st = bt__store_begin(s, diag)) == BT_OK) {
        st = import_text(s, text, len, path, nentries, diag);
        if (st == BT_OK)
            st = bt__store_commit(s, diag);
        if (st != BT_OK) {
            bt__store_rollback(s);
            if (nentries)
                *nentries = 0;
        }
    }
    free(text);
    return st;
}

/* The *.json files of dir, sorted, malloc'd (free each and the array). A missing dir is empty. */
static bt_status list_json(const char *dir, char ***out, size_t *n, bt_diag *diag)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT)
            return BT_OK;
        bt__diag_set(diag, "%s: %s", dir, strerror(errno));
        return BT_IO;
    }
    char **v = NULL;
    size_t cnt = 0;
    struct dirent *de;
    bt_status st = BT_OK;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.')
            continue;
        char **nv = realloc(v, (cnt + 1) * sizeof *nv);
        size_t pl = strlen(dir) + l + 2;
        char *p = malloc(pl);
        if (!nv || !p) {
            free(p);
            if (nv)
                v = nv;
            st = BT_NOMEM;
            break;
        }
        v = nv;
        snprintf(p, pl, "%s/%s", dir, de->d_name);
        v[cnt++] = p;
    }
    closedir(d);
    if (st != BT_OK) {
        for (size_t i = 0; i < cnt; i++)
            free(v[i]);
        free(v);
        return st;
    }
    for (size_t i = 1; i < cnt; i++) /* insertion sort: few files */
        for (size_t j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
            char *t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *out = v;
    *n = cnt;
    return BT_OK;
}

bt_status bt__wisdom_import_dir(bt__store *s, const char *dir, int *nentries, bt_diag *diag)
{
    if (nentries)
        *nentries = 0;
    char **files = NULL;
    size_t n = 0;
    bt_status st = list_json(dir, &files, &n, diag);
    if (st != BT_OK)
        return st;
    if (n == 0) {
        bt__diag_set(diag, "%s: no *.json wisdom files", dir);
        free(files);
        return BT_NOT_FOUND;
    }
    if ((st = bt__store_begin(s, diag)) == BT_OK) {
        for (size_t i = 0; st == BT_OK && i < n; i++) {
            char *text = NULL;
            size_t len = 0;
            st = read_doc(files[i], &text, &len, diag);
            if (st == BT_OK)
                st = import_text(s, text, len, files[i], nentries, diag);
            free(text);
        }
        if (st == BT_OK)
            st = bt__store_commit(s, diag);
        if (st != BT_OK) {
            bt__store_rollback(s);
            if (nentries)
                *nentries = 0;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * In-memory wisdom sets
 * ------------------------------------------------------------------------------------------- */
bt__wisdom *bt__wisdom_new(void)
{
    return calloc(1, sizeof(bt__wisdom));
}

void bt__wisdom_free(bt__wisdom *w)
{
    if (!w)
        return;
    entries_free(w->e, w->n);
    free(w);
}

size_t bt__wisdom_count(const bt__wisdom *w)
{
    return w ? w->n : 0;
}

/* Whether text names one of w->only in quotes ("gemm"), or w loads every document: a document
 * that does not name a kernel cannot hold an entry for it, and is not parsed. */
static bool names_wanted(const bt__wisdom *w, const char *text, size_t len)
{
    if (!w->only)
        return true;
    for (size_t i = 0; i < w->nonly; i++) {
        char q[BT_NAME_MAX + 3];
        int ql = snprintf(q, sizeof q, "\"%s\"", w->only[i]);
        if (ql > 0 && (size_t)ql < sizeof q && memmem(text, len, q, (size_t)ql))
            return true;
    }
    return false;
}

static bt_status add_text(bt__wisdom *w, const char *text, size_t len, const char *name,
                          bt_diag *diag)
{
    if (!names_wanted(w, text, len))
        return BT_OK;
    wentry *e = NULL;
    size_t n = 0;
    bt_status st = parse_doc(text, len, name, &e, &n, diag);
    if (st != BT_OK)
        return st;
    if (n == 0) { /* a document without entries adds nothing (and w->e may still be NULL) */
        free(e);
        return BT_OK;
    }
    if (w->n + n > w->cap) {
        size_t cap = w->cap ? w->cap : 16;
        while (cap < w->n + n)
            cap *= 2;
        wentry *ne = realloc(w->e, cap * sizeof *ne);
        if (!ne) {
            entries_free(e, n);
            return BT_NOMEM;
        }
        w->e = ne;
        w->cap = cap;
    }
    memcpy(w->e + w->n, e, n * sizeof *e);
    w->n += n;
    free(e);
    return BT_OK;
}

bt_status bt__wisdom_add_string(bt__wisdom *w, const char *text, const char *name, bt_diag *diag)
{
    return add_text(w, text, strlen(text), name ? name : "<string>", diag);
}

bt_status bt__wisdom_add_dir(bt__wisdom *w, const char *dir, bt_diag *diag)
{
    char **files = NULL;
    size_t n = 0;
    bt_status st = list_json(dir, &files, &n, diag);
    for (size_t i = 0; st == BT_OK && i < n; i++) {
        char *text = NULL;
        size_t len = 0;
        st = read_doc(files[i], &text, &len, diag);
        if (st == BT_OK)
            st = add_text(w, text, len, files[i], diag);
        free(text);
    }
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return st;
}

bt_status bt__wisdom_add_path(bt__wisdom *w, const char *path, bt_diag *diag)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        bt__diag_set(diag, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? BT_NOT_FOUND : BT_IO;
    }
    if (S_ISDIR(sb.st_mode))
        return bt__wisdom_add_dir(w, path, diag);
    char *text = NULL;
    size_t len = 0;
    bt_status st = read_doc(path, &text, &len, diag);
    if (st == BT_OK)
        st = add_text(w, text, len, path, diag);
    free(text);
    return st;
}

const bt__measurement *bt__wisdom_at(const bt__wisdom *w, size_t i, int *rank)
{
    if (!w || i >= w->n)
        return NULL;
    if (rank)
        *rank = w->e[i].rank;
    return &w->e[i].m;
}

bt_status bt__wisdom_load_user(bt__wisdom **out, const char *const *names, size_t nnames,
                               bt_diag *diag)
{
    *out = NULL;
    bt__wisdom *w = bt__wisdom_new();
    if (!w)
        return BT_NOMEM;
    w->only = names;
    w->nonly = nnames;
    const char *env = getenv("BLOCKTUNE_USER_WISDOM_DIR");
    char *dir = bt__setting_user_wisdom();
    if (dir) {
    } else if (env && env[0]) {
        dir = bt__strdup(env);
    } else {
        char *cache = bt__cache_dir();
        if (cache) {
            size_t l = strlen(cache) + 8;
            dir = malloc(l);
            if (dir)
                snprintf(dir, l, "%s/wisdom", cache);
            free(cache);
        }
    }
    bt_status st = dir ? bt__wisdom_add_dir(w, dir, diag) : BT_OK;
    free(dir);
    if (st != BT_OK) {
        bt__wisdom_free(w);
        return st;
    }
    w->only = NULL; /* the names were the caller's, for the load */
    w->nonly = 0;
    *out = w;
    return BT_OK;
}

bt_status bt__wisdom_load_shipped(bt__wisdom **out, const char *const *names, size_t nnames,
                                  bt_diag *diag)
{
    *out = NULL;
    bt__wisdom *w = bt__wisdom_new();
    if (!w)
        return BT_NOMEM;
    w->only = names;
    w->nonly = nnames;
    const char *env = getenv("BLOCKTUNE_WISDOM_DIR");
    char *set = bt__setting_shipped_wisdom();
    bt_status st = BT_OK;
    if (set || (env && env[0])) {
        st = bt__wisdom_add_dir(w, set ? set : env, diag);
        free(set);
    } else {
        /* The files compiled in, then installed files that are not among them. */
        const char *path, *data;
        size_t size;
        for (size_t i = 0; st == BT_OK && (data = bt__embedded_at(i, &path, &size)); i++) {
            size_t l = strlen(path);
            if (strncmp(path, "wisdom/", 7) == 0 && l > 5 && !strcmp(path + l - 5, ".json"))
                st = add_text(w, data, size, path, diag);
        }
        char **files = NULL;
        size_t n = 0;
        if (st == BT_OK)
        {
            char dir[4200];
            snprintf(dir, sizeof dir, "%s/wisdom", bt__data_dir());
            st = list_json(dir, &files, &n, diag);
        }
        for (size_t i = 0; st == BT_OK && i < n; i++) {
            char emb[512];
            const char *base = strrchr(files[i], '/');
            snprintf(emb, sizeof emb, "wisdom/%s", base ? base + 1 : files[i]);
            if (bt__embedded(emb, NULL))
                continue;
            char *text = NULL;
            size_t len = 0;
            st = read_doc(files[i], &text, &len, diag);
            if (st == BT_OK)
                st = add_text(w, text, len, files[i], diag);
            free(text);
        }
        for (size_t i = 0; i < n; i++)
            free(files[i]);
        free(files);
    }
    if (st != BT_OK) {
        bt__wisdom_free(w);
        return st;
    }
    w->only = NULL; /* the names were the caller's, for the load */
    w->nonly = 0;
    *out = w;
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Lookup
 * ------------------------------------------------------------------------------------------- */
const char *bt__wisdom_source_name(bt__wisdom_source s)
{
    static const char *names[] = {"store",        "user-wisdom", "shipped-wisdom",
                                  "nearest-size", "same-arch",   "default"};
    return (unsigned)s < BT__ARRAY_LEN(names) ? names[s] : "?";
}

/* The best candidate found so far. */
typedef struct cand {
    const bt__lookup_query *q;
    bool found;
    bt__kdist dist;
    char *config;
    char key[256];
    char device[128];
    double median;
} cand;

static void cand_offer(cand *c, const bt__measurement *m, bt__kdist dist)
{
    if (dist.tier < 0 || (c->found && !bt__kdist_closer(&dist, &c->dist)))
        return;
    bool exact = dist.tier == 0 && dist.d == 0;
    if (!exact && c->q && c->q->fits && !c->q->fits(c->q->fits_user, m->config_json))
        return; /* another key's config that is not valid here: the next nearest may be */
    char *cfg = bt__strdup(m->config_json);
    if (!cfg)
        return;
    free(c->config);
    c->config = cfg;
    c->found = true;
    c->dist = dist;
    c->median = m->median_ms;
    snprintf(c->key, sizeof c->key, "%s", m->key);
    snprintf(c->device, sizeof c->device, "%s", m->device_name);
}

static bool entry_matches(const bt__lookup_query *q, const bt__measurement *m)
{
    if (strcmp(m->kernel, q->kernel) != 0)
        return false;
    if (q->source_hash && m->source_hash[0] && strcmp(m->source_hash, q->source_hash) != 0)
        return false;
    return strcmp(m->options, q->options ? q->options : "") == 0;
}

/* Offers each winner entry of w that passes: same device (by name, or by arch when by_arch). */
static void scan_set(const bt__wisdom *w, const bt__lookup_query *q, bool by_arch, bool exact,
                     cand *c)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        const wentry *e = &w->e[i];
        if (e->rank != 0 || !entry_matches(q, &e->m))
            continue;
        if (by_arch ? !(q->arch && q->arch[0] && !strcmp(e->m.device_arch, q->arch))
                    : !bt__streq_nocase(e->m.device_name, q->device_name))
            continue;
        bt__kdist d = bt__keyvals_distance(q->key, &e->kv);
        if (exact && (d.tier != 0 || d.d != 0))
            continue;
        cand_offer(c, &e->m, d);
    }
}

typedef struct store_scan {
    const bt__lookup_query *q;
    bool by_arch;
    cand *c;
} store_scan;

static int store_scan_cb(const bt__winner *w, void *user)
{
    store_scan *ss = user;
    const bt__lookup_query *q = ss->q;
    if (!entry_matches(q, &w->m))
        return 0;
    if (ss->by_arch ? !(q->arch && q->arch[0] && !strcmp(w->m.device_arch, q->arch))
                    : !(bt__streq_nocase(w->m.device_name, q->device_name) ||
                        (q->device_uuid && q->device_uuid[0] &&
                         !strcmp(w->m.device_uuid, q->device_uuid))))
        return 0;
    bt__keyvals kv;
    if (bt__keyvals_parse(w->m.key, &kv) != BT_OK)
        return 0;
    cand_offer(ss->c, &w->m, bt__keyvals_distance(q->key, &kv));
    return 0;
}

bt_status bt__wisdom_lookup(bt__store *store, const bt__wisdom *user, const bt__wisdom *shipped,
                            const bt__lookup_query *q, bt__lookup_result *out, bt_diag *diag)
{
    memset(out, 0, sizeof *out);
    out->source = BT__SRC_DEFAULT;
    out->median_ms = -1;
    if (!q || !q->kernel || !q->device_name || !q->key) {
        bt__diag_set(diag, "wisdom look-up needs a kernel, a device name and a key");
        return BT_INVALID_ARG;
    }
    char key[1024];
    bt__keyvals_format(q->key, key, sizeof key);
    bt_status result = BT_OK;
    cand c = {.q = q};
    bt__wisdom_source src = BT__SRC_DEFAULT;

    /* 1. The store, exact key: this device's UUID, then its name. */
    if (store) {
        const char *devs[2] = {q->device_uuid && q->device_uuid[0] ? q->device_uuid : NULL,
                               q->device_name};
        for (int i = 0; i < 2 && !c.found; i++) {
            if (!devs[i])
                continue;
            bt__store_ident id = {q->kernel, q->source_hash, q->options, devs[i], key};
            bt__winner w;
            bt_status st = bt__store_get_winner(store, &id, &w, diag);
            if (st == BT_OK) {
                cand_offer(&c, &w.m, (bt__kdist){0, 0, 0, -1});
                src = BT__SRC_STORE;
            } else if (st != BT_NOT_FOUND) {
                result = st;
                store = NULL; /* go on without it */
            }
            bt__winner_clear(&w);
        }
    }
    /* 2, 3. User wisdom, then shipped wisdom, exact key on this device. */
    if (!c.found) {
        scan_set(user, q, false, true, &c);
        if (c.found)
            src = BT__SRC_USER;
    }
    if (!c.found) {
        scan_set(shipped, q, false, true, &c);
        if (c.found)
            src = BT__SRC_SHIPPED;
    }
    /* 4. The nearest problem size on this device, over all three. */
    if (!c.found) {
        if (store) {
            store_scan ss = {q, false, &c};
            if (bt__store_winners(store, q->kernel, NULL, store_scan_cb, &ss, diag) != BT_OK)
                result = BT_STORE;
        }
        scan_set(user, q, false, false, &c);
        scan_set(shipped, q, false, false, &c);
        if (c.found)
            src = BT__SRC_NEAREST;
    }
    /* 5. Another device of the same arch: the exact key, else the nearest. */
    if (!c.found && q->arch && q->arch[0]) {
        if (store) {
            store_scan ss = {q, true, &c};
            if (bt__store_winners(store, q->kernel, NULL, store_scan_cb, &ss, diag) != BT_OK)
                result = BT_STORE;
        }
        scan_set(user, q, true, false, &c);
        scan_set(shipped, q, true, false, &c);
        if (c.found)
            src = BT__SRC_SAME_ARCH;
    }
    out->source = src;
    if (c.found) {
        out->config_json = c.config;
        out->distance = c.dist.d;
        out->median_ms = c.median;
        snprintf(out->matched_key, sizeof out->matched_key, "%s", c.key);
        snprintf(out->matched_device, sizeof out->matched_device, "%s", c.device);
        char how[160] = "the same key";
        if (c.dist.tier == 0 && c.dist.var >= 0)
            snprintf(how, sizeof how, "the nearest %s, %.0f away, with the same other keys",
                     q->key->names[c.dist.var], c.dist.d);
        else if (c.dist.tier == 1)
            snprintf(how, sizeof how, "no key with the same other keys; log2 distance %.2f",
                     c.dist.d);
        bt__decision_log("%s [%s] on %s: %s from %s (tuned for [%s] on %s: %s; median %.4f ms)",
                         q->kernel, key, q->device_name, c.config, bt__wisdom_source_name(src),
                         c.key, c.device, how, c.median);
    } else {
        bt__decision_log("%s [%s] on %s: no wisdom; the kernel's default config", q->kernel, key,
                         q->device_name);
    }
    return result == BT_OK ? BT_OK : BT_OK; /* the look-up itself always answers */
}

