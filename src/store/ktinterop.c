/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ktinterop.c — Kernel Tuner caches in and out of the results store, without loss: every recorded
 * config of a cache becomes a measurement row (failures with Kernel Tuner's own strings), its
 * fastest config the winner of its key, and the cache's header and each entry are kept verbatim
 * (the header in `spaces`, each entry in its row's extra_json as {"kt_key", "kt_entry"}); the
 * measurements of one kernel/device/key go back out as a Kernel Tuner cache that gives back those
 * entries as they were, and writes blocktune's own rows as Kernel Tuner would (`time` the mean of
 * the runs, failures as InvalidConfig / CompilationFailedConfig / RuntimeFailedConfig).
 * Keys of imported caches are the cache's problem_size (dim0=..,dim1=..), the source hash
 * "kernel-tuner" (no source is known), the compiler "Kernel Tuner".
 */
#include "store/ktinterop.h"

#include "core/util.h"
#include "store/store.h"

#include "core/cfgstatus.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KT_SOURCE "kernel-tuner"

static const char *status_of(bt__kt_fail f)
{
    switch (f) {
    case BT__KT_OK: return bt__cfg_status_name(BT__CS_OK);
    case BT__KT_INVALID: return bt__cfg_status_name(BT__CS_INVALID);
    case BT__KT_COMPILE_FAILED: return bt__cfg_status_name(BT__CS_COMPILE);
    default: return bt__cfg_status_name(BT__CS_LAUNCH);
    }
}

/* Kernel Tuner's failure for a blocktune status: what it writes in place of the time. */
static bt__kt_fail fail_of(const char *status)
{
    switch (bt__cfg_status_parse(status)) {
    case BT__CS_OK: return BT__KT_OK;
    case BT__CS_COMPILE: return BT__KT_COMPILE_FAILED;
    case BT__CS_INVALID: return BT__KT_INVALID;
    default: return BT__KT_RUNTIME_FAILED; /* resources, launch, wrong result, time-out */
    }
}

/* problem_size JSON ([4096, 4096], 4096 or null) as keyvals dim0, dim1, ... */
static void kt_key(const bt__ktcache *c, bt__keyvals *kv)
{
    memset(kv, 0, sizeof *kv);
    json_t *p = json_loads(c->problem_size_json ? c->problem_size_json : "null", JSON_DECODE_ANY, NULL);
    if (json_is_integer(p)) {
        snprintf(kv->names[0], BT_NAME_MAX, "dim0");
        kv->v[kv->n++] = json_integer_value(p);
    } else if (json_is_array(p)) {
        for (size_t i = 0; i < json_array_size(p) && kv->n < BT__KEY_MAX; i++)
            if (json_is_integer(json_array_get(p, i))) {
                snprintf(kv->names[kv->n], BT_NAME_MAX, "dim%zu", i);
                kv->v[kv->n++] = json_integer_value(json_array_get(p, i));
            }
    }
    json_decref(p);
    if (kv->n == 0) { /* a cache without a problem size still needs a key in the store */
        snprintf(kv->names[0], BT_NAME_MAX, "problem_size");
        kv->v[kv->n++] = 0;
    }
}

static char *config_json(const bt__ktcache *c, uint64_t index)
{
    bt_config cfg;
    bt__space_config_at(&c->space, index, &cfg);
    return bt__config_json(&c->space, &cfg);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Linear-interpolated quantile q of n sorted values. */
static double quantile(const double *t, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    return lo + 1 < n ? t[lo] + (pos - lo) * (t[lo + 1] - t[lo]) : t[lo];
}

/* Kernel Tuner's timestamp, str(datetime.now(timezone.utc)) ("2023-12-22 10:35:38.815893+00:00"),
 * as unix seconds; 0 (now) when it does not read as one. */
static double kt_time_parse(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    double sec = 0;
    int tzh = 0, tzm = 0, n = 0;
    char sign = '+';
    if (sscanf(s, "%d-%d-%d %d:%d:%lf%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &sec, &n) != 6)
        return 0;
    sscanf(s + n, "%c%d:%d", &sign, &tzh, &tzm);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_sec = (int)sec;
    double t = (double)timegm(&tm) + (sec - (int)sec);
    double off = (tzh * 3600.0 + tzm * 60.0) * (sign == '-' ? -1 : 1);
    return t > 0 ? t - off : 0;
}

/* The same format back from unix seconds (UTC). */
static void kt_time_format(double t, char *buf, size_t size)
{
    time_t sec = (time_t)t;
    struct tm tm;
    gmtime_r(&sec, &tm);
    char head[32];
    strftime(head, sizeof head, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, size, "%s.%06d+00:00", head, (int)((t - (double)sec) * 1e6));
}

/* The numbers of an ok record: the median, p20, p80 and min of its runs when it has them, else
 * its time (the mean) stands for the median. */
static void fill_times(const bt__kt_record *r, bt__measurement *m)
{
    m->mean_ms = r->time_ms;
    m->median_ms = m->min_ms = r->time_ms;
    double *t = r->ntimes > 0 ? malloc(sizeof *t * (size_t)r->ntimes) : NULL;
    int n = 0;
    for (int i = 0; t && i < r->ntimes; i++)
        if (isfinite(r->times[i]) && r->times[i] > 0)
            t[n++] = r->times[i];
    if (n > 0) {
        qsort(t, (size_t)n, sizeof *t, cmp_double);
        m->median_ms = quantile(t, n, 0.5);
        m->p20_ms = quantile(t, n, 0.2);
        m->p80_ms = quantile(t, n, 0.8);
        m->min_ms = t[0];
        m->reps = n;
    }
    free(t);
}

/* {"kt_key": key, "kt_entry": entry} (malloc'd), from the record's kept text (JSON already: it
 * is joined, not parsed again). */
static char *extra_of(const bt__kt_record *r)
{
    json_t *k = r->key_text ? json_string(r->key_text) : NULL;
    char *key = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
    json_decref(k);
    bt__sbuf b = {0};
    if (key && r->entry_json)
        bt__sbuf_printf(&b, "{\"kt_key\":%s,\"kt_entry\":%s}", key, r->entry_json);
    free(key);
    if (b.oom || !b.s) {
        bt__sbuf_free(&b);
        return NULL;
    }
    return b.s;
}

/* One record as a measurement row of the import (strings borrowed from c and the arguments). */
static bt_status import_record(bt__store *s, const bt__ktcache *c, const bt__kt_record *r,
                               char *key, char *kj, const char *origin, bt_diag *diag)
{
    char *cj = config_json(c, r->index);
    char *extra = extra_of(r);
    if (!cj || !extra) {
        free(cj);
        free(extra);
        return BT_NOMEM;
    }
    bt__measurement m;
    bt__measurement_init(&m);
    m.kernel = (char *)c->kernel_name;
    m.source_hash = (char *)KT_SOURCE;
    m.options = (char *)"";
    m.device_name = (char *)c->device_name;
    m.device_uuid = (char *)"";
    m.device_arch = (char *)"";
    m.driver = (char *)"";
    m.compiler = (char *)"Kernel Tuner";
    m.blocktune_version = (char *)bt_version();
    m.key = key;
    m.key_json = kj;
    m.config_json = cj;
    m.status = (char *)status_of(r->fail);
    m.error = r->fail != BT__KT_OK ? (char *)r->fail_text : NULL; /* Kernel Tuner's string */
    if (r->fail == BT__KT_OK)
        fill_times(r, &m);
    m.compile_ms = isfinite(r->compile_ms) && r->compile_ms >= 0 ? r->compile_ms : -1;
    m.timestamp = r->timestamp[0] ? kt_time_parse(r->timestamp) : 0;
    m.extra_json = extra;
    bool win = c->has_best && r->index == c->best_index;
    bt_status st = bt__store_put_row_internal(s, &m, win, 0, 0, origin, diag);
    free(cj);
    free(extra);
    return st;
}

bt_status bt__kt_import(bt__store *s, const char *path, int *nrows, bt_diag *diag)
{
    *nrows = 0;
    bt__ktcache *c = NULL;
    bt_status st = bt__ktcache_load(path, &c, diag);
    if (st)
        return st;
    bt__keyvals kv;
    kt_key(c, &kv);
    char key[512];
    bt__keyvals_format(&kv, key, sizeof key);
    char *kj = bt__keyvals_json(&kv);
    char origin[600];
    snprintf(origin, sizeof origin, "kernel-tuner:%s", path);
    if (!kj) {
        bt__ktcache_free(c);
        return BT_NOMEM;
    }
    st = bt__store_begin(s, diag);
    if (st == BT_OK) {
        bt__store_ident id = {c->kernel_name, KT_SOURCE, "", c->device_name, key};
        st = bt__store_put_space(s, &id, c->header_json, origin, diag);
    }
    for (size_t i = 0; st == BT_OK && i < c->nrecs; i++) {
        st = import_record(s, c, &c->recs[i], key, kj, origin, diag);
        if (st == BT_OK)
            (*nrows)++;
    }
    if (st == BT_OK)
        st = bt__store_commit(s, diag);
    else {
        bt__store_rollback(s);
        *nrows = 0;
    }
    free(kj);
    bt__ktcache_free(c);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Out of the store
 * ------------------------------------------------------------------------------------------- */
typedef struct exp_ctx {
    bt__measurement *rows;
    size_t n, cap;
    bool oom;
} exp_ctx;

static int collect(const bt__measurement *m, void *user)
{
    exp_ctx *x = user;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        bt__measurement *r = realloc(x->rows, cap * sizeof *r);
        if (!r) {
            x->oom = true;
            return 1;
        }
        x->rows = r;
        x->cap = cap;
    }
    bt__measurement *d = &x->rows[x->n++];
    bt__measurement_init(d);
    d->config_json = bt__strdup(m->config_json);
    d->status = bt__strdup(m->status);
    d->error = bt__strdup(m->error);
    d->device_name = bt__strdup(m->device_name);
    d->extra_json = bt__strdup(m->extra_json);
    d->median_ms = m->median_ms;
    d->mean_ms = m->mean_ms;
    d->compile_ms = m->compile_ms;
    d->timestamp = m->timestamp;
    if (!d->config_json || !d->status || !d->device_name || (m->error && !d->error) ||
        (m->extra_json && !d->extra_json)) {
        x->oom = true;
        return 1;
    }
    return 0;
}

static void free_rows(exp_ctx *x)
{
    for (size_t i = 0; i < x->n; i++)
        bt__measurement_clear(&x->rows[i]);
    free(x->rows);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A space over each parameter's measured values (in order of first appearance, or sorted). */
static bt_status space_of_rows(const exp_ctx *x, const char *kernel, bool sorted, bt__space *sp,
                               bt_diag *diag)
{
    json_t *first = json_loads(x->rows[0].config_json, 0, NULL);
    if (!json_is_object(first)) {
        json_decref(first);
        bt__diag_set(diag, "a stored config of %s is not a JSON object: %.200s", kernel,
                     x->rows[0].config_json);
        return BT_CORRUPT;
    }
    bt_status st = BT_OK;
    const char *pname;
    json_t *pv;
    json_object_foreach(first, pname, pv)
    {
        int64_t *vals = malloc(sizeof *vals * x->n);
        int nv = 0;
        for (size_t i = 0; vals && i < x->n; i++) {
            json_t *o = json_loads(x->rows[i].config_json, 0, NULL);
            json_t *v = json_object_get(o, pname);
            if (json_is_integer(v)) {
                int64_t val = json_integer_value(v);
                bool seen = false;
                for (int j = 0; j < nv && !seen; j++)
                    seen = vals[j] == val;
                if (!seen)
                    vals[nv++] = val;
            }
            json_decref(o);
        }
        if (!vals)
            st = BT_NOMEM;
        else if (sorted)
            qsort(vals, (size_t)nv, sizeof *vals, cmp_i64);
        if (st == BT_OK && bt__space_add_list(sp, pname, vals, nv, diag) != BT_OK)
            st = BT_INVALID_ARG;
        free(vals);
    }
    json_decref(first);
    return st;
}

/* An empty cache for the rows: the recorded header of the key when an import left one (its space
 * in its order), else a space over the measured values and a header built from the key. */
static bt_status empty_cache(bt__store *s, const exp_ctx *x, const char *kernel,
                             const char *device, const char *key, bool sorted, bt__ktcache **out,
                             bt_diag *diag)
{
    *out = NULL;
    char *header = NULL;
    bt_status st = bt__store_get_space(s, kernel, device ? device : x->rows[0].device_name, key,
                                       &header, diag);
    if (st == BT_OK) {
        size_t n = strlen(header);
        /* the header with "cache": {} added, read as a cache file (the same checks) */
        char *doc = malloc(n + 16);
        if (!doc) {
            free(header);
            return BT_NOMEM;
        }
        snprintf(doc, n + 16, "%.*s%s\"cache\":{}}", (int)(n - 1), header, n > 2 ? "," : "");
        free(header);
        st = bt__ktcache_load_mem(doc, strlen(doc), "the stored header", out, diag);
        free(doc);
        return st;
    }
    if (st != BT_NOT_FOUND)
        return st;
    bt__space sp;
    bt__space_init(&sp);
    st = space_of_rows(x, kernel, sorted, &sp, diag);
    if (st == BT_OK)
        st = bt__ktcache_create(&sp, x->rows[0].device_name ? x->rows[0].device_name : device,
                                kernel, out);
    bt__space_clear(&sp);
    bt__keyvals kv; /* problem_size: the key's values (dim0, dim1, ... of an import, or M, N, K) */
    if (st == BT_OK && bt__keyvals_parse(key, &kv) == BT_OK && kv.n > 0) {
        json_t *a = json_array();
        for (int i = 0; i < kv.n; i++)
            json_array_append_new(a, json_integer(kv.v[i]));
        char *ps = json_dumps(a, JSON_COMPACT);
        json_decref(a);
        if (ps) {
            free((*out)->problem_size_json);
            (*out)->problem_size_json = ps;
        }
    }
    return st;
}

/* The record of one row: a Kernel Tuner entry kept at import as it was; blocktune's own as Kernel
 * Tuner writes one (kt_time: `time` is the mean of the runs where known; else the median, which
 * is blocktune's objective and what a replay compares). */
static bt_status row_record(const bt__measurement *m, uint64_t idx, bool kt_time,
                            bt__kt_record *r)
{
    memset(r, 0, sizeof *r);
    r->index = idx;
    r->time_ms = NAN;
    r->compile_ms = r->verification_ms = r->benchmark_ms = r->strategy_ms = r->framework_ms = NAN;
    json_t *x = m->extra_json ? json_loads(m->extra_json, 0, NULL) : NULL;
    json_t *entry = json_object_get(x, "kt_entry");
    const char *ktkey = json_string_value(json_object_get(x, "kt_key"));
    bool ok = !strcmp(m->status, "ok") && m->median_ms > 0;
    r->fail = ok ? BT__KT_OK : fail_of(m->status);
    snprintf(r->fail_text, sizeof r->fail_text, "%s",
             ok ? "" : m->error && json_is_object(entry) ? m->error : bt__kt_fail_name(r->fail));
    if (json_is_object(entry) && ktkey) {
        json_t *t = json_object_get(entry, "time");
        r->time_ms = ok && json_is_number(t) ? json_number_value(t) : NAN;
        r->entry_json = json_dumps(entry, JSON_PRESERVE_ORDER);
        r->key_text = bt__strdup(ktkey);
    } else {
        r->time_ms = !ok ? NAN : kt_time && m->mean_ms > 0 ? m->mean_ms : m->median_ms;
        if (m->timestamp > 0)
            kt_time_format(m->timestamp, r->timestamp, sizeof r->timestamp);
    }
    if (!(r->time_ms > 0) && ok)
        r->time_ms = m->median_ms;
    r->compile_ms = m->compile_ms >= 0 ? m->compile_ms : NAN;
    json_decref(x);
    return (entry && ktkey && (!r->entry_json || !r->key_text)) ? BT_NOMEM : BT_OK;
}

/* The recorded space of rows x, one record per row whose config is in it; later rows replace
 * earlier ones of the same config. */
static bt_status rows_to_cache(bt__store *s, const exp_ctx *x, const char *kernel,
                               const char *device, const char *key, bool sorted, bool kt_time,
                               bt__ktcache **out, int *nrows, bt_diag *diag)
{
    bt__ktcache *c = NULL;
    bt_status st = empty_cache(s, x, kernel, device, key, sorted, &c, diag);
    const bt__space *sp = c ? &c->space : NULL;
    bt__kt_record *recs = st == BT_OK ? calloc(x->n, sizeof *recs) : NULL;
    size_t nrec = 0;
    if (st == BT_OK && !recs)
        st = BT_NOMEM;
    for (size_t i = 0; st == BT_OK && i < x->n; i++) {
        json_t *o = json_loads(x->rows[i].config_json, 0, NULL);
        bt_config cfg = {.nparams = sp->nparams};
        bool complete = json_is_object(o) && json_object_size(o) == (size_t)sp->nparams;
        for (int p = 0; p < sp->nparams && complete; p++) {
            json_t *v = json_object_get(o, sp->params[p].name);
            complete = json_is_integer(v);
            cfg.v[p] = complete ? json_integer_value(v) : 0;
        }
        json_decref(o);
        uint64_t idx;
        if (!complete || !bt__space_index_of(sp, &cfg, &idx))
            continue;
        st = row_record(&x->rows[i], idx, kt_time, &recs[nrec++]);
    }
    if (st == BT_OK) {
        st = bt__ktcache_adopt(c, recs, nrec); /* the newest row of a config wins */
        *nrows = st == BT_OK ? (int)c->nrecs : 0;
    } else if (recs) {
        for (size_t i = 0; i < nrec; i++) {
            free(recs[i].entry_json);
            free(recs[i].key_text);
        }
        free(recs);
    }
    if (st != BT_OK) {
        bt__ktcache_free(c);
        *nrows = 0;
        return st;
    }
    *out = c;
    return BT_OK;
}

/* Every row of kernel/key on device (any status), oldest first; BT_NOT_FOUND when none. */
static bt_status collect_rows(bt__store *s, const char *kernel, const char *device,
                              const char *key, exp_ctx *x, bt_diag *diag)
{
    bt_status st = bt__store_rows(s, kernel, device, key, collect, x, diag);
    if (x->oom)
        return BT_NOMEM;
    if (st == BT_OK && x->n == 0) {
        bt__diag_set(diag, "%s holds no measurements of %s for key %s%s%s", bt__store_path(s),
                     kernel, key, device ? " on " : "", device ? device : "");
        st = BT_NOT_FOUND;
    }
    return st;
}

bt_status bt__kt_export(bt__store *s, const char *kernel, const char *device, const char *key,
                        const char *path, int *nrows, bt_diag *diag)
{
    *nrows = 0;
    exp_ctx x = {0};
    bt__ktcache *c = NULL;
    bt_status st = collect_rows(s, kernel, device, key, &x, diag);
    if (st == BT_OK)
        st = rows_to_cache(s, &x, kernel, device, key, false, true, &c, nrows, diag);
    if (st == BT_OK)
        st = bt__ktcache_write(c, path, diag);
    bt__ktcache_free(c);
    free_rows(&x);
    return st;
}

bt_status bt__kt_from_store(bt__store *s, const char *kernel, const char *device, const char *key,
                            bt__ktcache **out, int *nrows, bt_diag *diag)
{
    *out = NULL;
    *nrows = 0;
    exp_ctx x = {0};
    bt_status st = collect_rows(s, kernel, device, key, &x, diag);
    if (st == BT_OK)
        st = rows_to_cache(s, &x, kernel, device, key, true, false, out, nrows, diag);
    for (size_t i = 0; st == BT_OK && i < (*out)->nrecs; i++) {
        bt__kt_record *r = &(*out)->recs[i];
        if (!(r->compile_ms >= 0))
            r->compile_ms = NAN; /* unknown: costs nothing in a replay */
        r->verification_ms = r->benchmark_ms = r->strategy_ms = r->framework_ms = NAN;
    }
    free_rows(&x);
    return st;
}

bool bt__kt_is_cache(const char *path)
{
    size_t n = strlen(path);
    if (n > 3 && !strcmp(path + n - 3, ".gz"))
        return true;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char head[4097];
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[got] = '\0';
    return strstr(head, "\"tune_params_keys\"") != NULL;
}
