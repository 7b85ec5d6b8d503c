/*
 * ktinterop.c — Kernel Tuner caches in and out of the results store: every recorded config of a
 * cache becomes a measurement row (failures with their status), its fastest config the winner of
 * its key; and the measurements of one kernel/device/key go back out as a Kernel Tuner cache.
 * Keys of imported caches are the cache's problem_size (dim0=..,dim1=..), the source hash
 * "kernel-tuner" (no source is known), the compiler "Kernel Tuner".
 */
#include "store/ktinterop.h"

#include "core/util.h"
#include "store/store.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *status_of(bt__kt_fail f)
{
    switch (f) {
    case BT__KT_OK: return "ok";
    case BT__KT_INVALID: return "invalid";
    case BT__KT_COMPILE_FAILED: return "compile_failed";
    default: return "launch_failed";
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
    for (size_t i = 0; st == BT_OK && i < c->nrecs; i++) {
        const bt__kt_record *r = &c->recs[i];
        char *cj = config_json(c, r->index);
        if (!cj) {
            st = BT_NOMEM;
            break;
        }
        bt__measurement m;
        bt__measurement_init(&m);
        m.kernel = c->kernel_name;
        m.source_hash = (char *)"kernel-tuner";
        m.options = (char *)"";
        m.device_name = c->device_name;
        m.device_uuid = (char *)"";
        m.device_arch = (char *)"";
        m.driver = (char *)"";
        m.compiler = (char *)"Kernel Tuner";
        m.blocktune_version = (char *)bt_version();
        m.key = key;
        m.key_json = kj;
        m.config_json = cj;
        m.status = (char *)status_of(r->fail);
        m.error = r->fail != BT__KT_OK ? (char *)r->fail_text : NULL;
        if (r->fail == BT__KT_OK) {
            /* the cache's "time" is the mean of "times"; the median comes from times when given */
            double med = r->time_ms, mn = r->time_ms;
            if (r->ntimes > 0) {
                double *t = malloc(sizeof *t * (size_t)r->ntimes);
                if (t) {
                    memcpy(t, r->times, sizeof *t * (size_t)r->ntimes);
                    qsort(t, (size_t)r->ntimes, sizeof *t, cmp_double);
                    med = r->ntimes % 2 ? t[r->ntimes / 2]
                                        : (t[r->ntimes / 2 - 1] + t[r->ntimes / 2]) / 2;
                    mn = t[0];
                    free(t);
                }
            }
            m.median_ms = med;
            m.min_ms = mn;
            m.p20_ms = m.p80_ms = med;
            m.reps = r->ntimes;
        }
        m.compile_ms = r->compile_ms;
        bool win = c->has_best && r->index == c->best_index;
        st = bt__store_put_row_internal(s, &m, win, 0, 0, origin, diag);
        free(cj);
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

typedef struct exp_ctx {
    const char *kernel, *key;
    bt__measurement *rows;
    size_t n, cap;
} exp_ctx;

static int collect(const bt__measurement *m, void *user)
{
    exp_ctx *x = user;
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        bt__measurement *r = realloc(x->rows, cap * sizeof *r);
        if (!r)
            return 1;
        x->rows = r;
        x->cap = cap;
    }
    bt__measurement *d = &x->rows[x->n++];
    bt__measurement_init(d);
    d->config_json = bt__strdup(m->config_json);
    d->status = bt__strdup(m->status);
    d->error = bt__strdup(m->error);
    d->median_ms = m->median_ms;
    d->compile_ms = m->compile_ms;
    d->device_name = bt__strdup(m->device_name);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The recorded space of rows x (a cache over each parameter's measured values: in order of first
 * appearance, or sorted when `sorted`), one record per row that has every parameter; later rows
 * replace earlier ones of the same config. */
static bt_status rows_to_cache(const exp_ctx *x, const char *kernel, const char *device,
                               const char *key, bool sorted, bt__ktcache **out, int *nrows,
                               bt_diag *diag)
{
    *out = NULL;
    bt_status st = BT_OK;
    bt__space sp;
    bt__space_init(&sp);
    json_t *first = json_loads(x->rows[0].config_json, 0, NULL);
    if (!first) {
        bt__diag_set(diag, "a stored config of %s is not JSON: %.200s", kernel,
                     x->rows[0].config_json ? x->rows[0].config_json : "");
        return BT_CORRUPT;
    }
    const char *pname;
    json_t *pv;
    json_object_foreach(first, pname, pv)
    {
        int64_t vals[4096];
        int nv = 0;
        for (size_t i = 0; i < x->n && nv < 4096; i++) {
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
        if (sorted)
            qsort(vals, (size_t)nv, sizeof *vals, cmp_i64);
        if (st == BT_OK && bt__space_add_list(&sp, pname, vals, nv, diag) != BT_OK)
            st = BT_INVALID_ARG;
    }
    json_decref(first);
    bt__ktcache *c = NULL;
    if (st == BT_OK)
        st = bt__ktcache_create(&sp, x->rows[0].device_name ? x->rows[0].device_name : device,
                                kernel, &c);
    if (st == BT_OK) { /* problem_size back from the key's dim0, dim1, ... */
        bt__keyvals kv;
        if (bt__keyvals_parse(key, &kv) == BT_OK && kv.n > 0 && !strncmp(kv.names[0], "dim", 3)) {
            json_t *a = json_array();
            for (int i = 0; i < kv.n; i++)
                json_array_append_new(a, json_integer(kv.v[i]));
            char *ps = json_dumps(a, JSON_COMPACT);
            json_decref(a);
            if (ps) {
                free(c->problem_size_json);
                c->problem_size_json = bt__strdup(ps);
                free(ps);
            }
        }
    }
    for (size_t i = 0; st == BT_OK && i < x->n; i++) {
        json_t *o = json_loads(x->rows[i].config_json, 0, NULL);
        bt_config cfg = {.nparams = sp.nparams};
        bool complete = o != NULL;
        for (int p = 0; p < sp.nparams && complete; p++) {
            json_t *v = json_object_get(o, sp.params[p].name);
            complete = json_is_integer(v);
            cfg.v[p] = complete ? json_integer_value(v) : 0;
        }
        json_decref(o);
        uint64_t idx;
        if (!complete || !bt__space_index_of(&sp, &cfg, &idx))
            continue;
        bt__kt_record r;
        memset(&r, 0, sizeof r);
        r.index = idx;
        const char *status = x->rows[i].status ? x->rows[i].status : "";
        bool ok = !strcmp(status, "ok") && x->rows[i].median_ms > 0;
        r.fail = ok                                   ? BT__KT_OK
                 : !strcmp(status, "compile_failed")  ? BT__KT_COMPILE_FAILED
                 : !strcmp(status, "invalid")         ? BT__KT_INVALID
                 : !strcmp(status, "launch_failed") ||
                           !strcmp(status, "resources_exceeded") || !strcmp(status, "resources")
                     ? BT__KT_RUNTIME_FAILED
                     : BT__KT_OTHER_FAILED;
        snprintf(r.fail_text, sizeof r.fail_text, "%s",
                 ok                               ? ""
                 : r.fail == BT__KT_OTHER_FAILED ? (status[0] ? status : "FailedConfig")
                                                 : bt__kt_fail_name(r.fail));
        r.time_ms = ok ? x->rows[i].median_ms : NAN;
        r.compile_ms = x->rows[i].compile_ms;
        st = bt__ktcache_add(c, &r);
        if (st == BT_OK)
            (*nrows)++;
    }
    bt__space_clear(&sp);
    if (st != BT_OK) {
        bt__ktcache_free(c);
        return st;
    }
    *out = c;
    return BT_OK;
}

static void free_rows(exp_ctx *x)
{
    for (size_t i = 0; i < x->n; i++)
        bt__measurement_clear(&x->rows[i]);
    free(x->rows);
}

bt_status bt__kt_export(bt__store *s, const char *kernel, const char *device, const char *key,
                        const char *path, int *nrows, bt_diag *diag)
{
    *nrows = 0;
    exp_ctx x = {kernel, key, NULL, 0, 0};
    bt__store_ident id = {kernel, NULL, NULL, device, key};
    bt_status st = bt__store_top(s, &id, 1000000, collect, &x, diag);
    if (st == BT_OK && x.n == 0) {
        bt__diag_set(diag, "no measurements of %s for key %s on %s", kernel, key, device);
        st = BT_NOT_FOUND;
    }
    bt__ktcache *c = NULL;
    if (st == BT_OK)
        st = rows_to_cache(&x, kernel, device, key, false, &c, nrows, diag);
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
    exp_ctx x = {kernel, key, NULL, 0, 0};
    bt_status st = bt__store_rows(s, kernel, device, key, collect, &x, diag);
    if (st == BT_OK && x.n == 0) {
        bt__diag_set(diag, "%s holds no measurements of %s for key %s%s%s", bt__store_path(s),
                     kernel, key, device ? " on " : "", device ? device : "");
        st = BT_NOT_FOUND;
    }
    if (st == BT_OK)
        st = rows_to_cache(&x, kernel, device, key, true, out, nrows, diag);
    for (size_t i = 0; st == BT_OK && i < (*out)->nrecs; i++) {
        bt__kt_record *r = &(*out)->recs[i];
        if (!(r->compile_ms >= 0))
            r->compile_ms = NAN; /* unknown: costs nothing in a replay */
        r->verification_ms = r->benchmark_ms = r->strategy_ms = r->framework_ms = NAN;
    }
    free_rows(&x);
    return st;
}
