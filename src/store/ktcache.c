/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ktcache.c — reading and writing Kernel Tuner cache files (plain JSON or gzip), see ktcache.h.
 *
 * Reading: the file is streamed into jansson (jsonin.c: inflated on the fly when it starts with
 * the gzip magic, refused past the input limit; syntax errors carry line:column), then checked
 * field by field (semantic errors name the field); the header and every entry are also kept as
 * JSON text, so that writing gives back every field.
 * Writing: the header, then one cache entry per line, as Kernel Tuner writes it.
 */
#include "store/ktcache.h"

#include "core/util.h"
#include "store/jsonin.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---------------------------------------------------------------------------------------------
 * Failure kinds
 * ------------------------------------------------------------------------------------------- */
static const struct {
    bt__kt_fail kind;
    const char *name;
    bt_status status;
} fail_table[] = {
    {BT__KT_INVALID, "InvalidConfig", BT_INVALID_CONFIG},
    {BT__KT_COMPILE_FAILED, "CompilationFailedConfig", BT_COMPILE},
    {BT__KT_RUNTIME_FAILED, "RuntimeFailedConfig", BT_LAUNCH},
    {BT__KT_OTHER_FAILED, "FailedConfig", BT_BACKEND},
};

const char *bt__kt_fail_name(bt__kt_fail f)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(fail_table); i++)
        if (fail_table[i].kind == f)
            return fail_table[i].name;
    return "";
}

bt_status bt__kt_fail_status(bt__kt_fail f)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(fail_table); i++)
        if (fail_table[i].kind == f)
            return fail_table[i].status;
    return BT_OK;
}

static bt__kt_fail fail_from_text(const char *s)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(fail_table); i++)
        if (!strcmp(fail_table[i].name, s))
            return fail_table[i].kind;
    return BT__KT_OTHER_FAILED;
}

/* ---------------------------------------------------------------------------------------------
 * gzip (writing; reading is jsonin.c)
 * ------------------------------------------------------------------------------------------- */
/* Compresses `n` bytes into a malloc'd gzip buffer. NULL on allocation failure. */
static unsigned char *gzip_bytes(const char *in, size_t n, size_t *out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return NULL;
    uLong bound = deflateBound(&zs, (uLong)n);
    unsigned char *out = malloc(bound);
    if (!out) {
        deflateEnd(&zs);
        return NULL;
    }
    zs.next_in = (unsigned char *)in;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)bound;
    int rc = deflate(&zs, Z_FINISH);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------------------------- */
static void record_free(bt__kt_record *r);

static void record_init(bt__kt_record *r)
{
    memset(r, 0, sizeof *r);
    r->time_ms = NAN;
    r->compile_ms = r->verification_ms = r->benchmark_ms = r->strategy_ms = r->framework_ms = NAN;
}

void bt__ktcache_free(bt__ktcache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nrecs; i++)
        record_free(&c->recs[i]);
    free(c->recs);
    free(c->problem_size_json);
    free(c->header_json);
    bt__space_clear(&c->space);
    free(c);
}

static int cmp_rec(const void *a, const void *b)
{
    uint64_t x = ((const bt__kt_record *)a)->index, y = ((const bt__kt_record *)b)->index;
    return x < y ? -1 : x > y;
}

static void recompute_summary(bt__ktcache *c)
{
    c->nfailed = 0;
    c->has_best = false;
    for (size_t i = 0; i < c->nrecs; i++) {
        const bt__kt_record *r = &c->recs[i];
        if (r->fail != BT__KT_OK) {
            c->nfailed++;
            continue;
        }
        if (!c->has_best || r->time_ms < c->best_ms) {
            c->has_best = true;
            c->best_ms = r->time_ms;
            c->best_index = r->index;
        }
    }
}

const bt__kt_record *bt__ktcache_find(const bt__ktcache *c, uint64_t index)
{
    size_t lo = 0, hi = c->nrecs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->recs[mid].index < index)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < c->nrecs && c->recs[lo].index == index ? &c->recs[lo] : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------------------------- */

/* Fails with a field-named diag; used by the checks below. */
static bt_status field_error(bt_diag *diag, const char *name, bt_status st, const char *field,
                             const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static bt_status field_error(bt_diag *diag, const char *name, bt_status st, const char *field,
                             const char *fmt, ...)
{
    if (diag) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->msg, sizeof diag->msg, fmt, ap);
        va_end(ap);
        snprintf(diag->file, sizeof diag->file, "%s", name);
        bt__diag_field(diag, field);
    }
    return st;
}

/* An integer parameter value: JSON integers, reals with an integral value, booleans. */
static bool json_int_value(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v) ? 1 : 0;
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9.0e15) {
            *out = (int64_t)d;
            return true;
        }
    }
    return false;
}

static double json_num_or_nan(const json_t *v)
{
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static bool is_known_entry_field(const char *k)
{
    static const char *const known[] = {
        "time",           "times",         "compile_time",   "verification_time",
        "benchmark_time", "strategy_time", "framework_time", "timestamp"};
    for (size_t i = 0; i < BT__ARRAY_LEN(known); i++)
        if (!strcmp(k, known[i]))
            return true;
    return false;
}

static bt_status parse_header(bt__ktcache *c, json_t *root, const char *name, bt_diag *diag)
{
    const char *s;
    if ((s = json_string_value(json_object_get(root, "device_name"))))
        snprintf(c->device_name, sizeof c->device_name, "%s", s);
    if ((s = json_string_value(json_object_get(root, "kernel_name"))))
        snprintf(c->kernel_name, sizeof c->kernel_name, "%s", s);
    s = json_string_value(json_object_get(root, "objective"));
    snprintf(c->objective, sizeof c->objective, "%s", s ? s : "time");
    json_t *ps = json_object_get(root, "problem_size");
    c->problem_size_json = ps ? json_dumps(ps, JSON_ENCODE_ANY) : bt__strdup("null");
    if (!c->problem_size_json)
        return BT_NOMEM;

    json_t *keys = json_object_get(root, "tune_params_keys");
    json_t *params = json_object_get(root, "tune_params");
    if (!json_is_array(keys) || json_array_size(keys) == 0)
        return field_error(diag, name, BT_PARSE, "tune_params_keys",
                           "expected a non-empty array of parameter names");
    if (!json_is_object(params))
        return field_error(diag, name, BT_PARSE, "tune_params",
                           "expected an object of parameter value lists");
    if (json_array_size(keys) > BT_MAX_PARAMS)
        return field_error(diag, name, BT_UNSUPPORTED, "tune_params_keys",
                           "%zu parameters (blocktune spaces hold at most %d)",
                           json_array_size(keys), BT_MAX_PARAMS);
    size_t i;
    json_t *k;
    json_array_foreach(keys, i, k)
    {
        char field[128];
        snprintf(field, sizeof field, "tune_params_keys[%zu]", i);
        const char *pname = json_string_value(k);
        if (!pname)
            return field_error(diag, name, BT_PARSE, field, "expected a parameter name (string)");
        json_t *vals = json_object_get(params, pname);
        snprintf(field, sizeof field, "tune_params.%s", pname);
        if (!json_is_array(vals) || json_array_size(vals) == 0)
            return field_error(diag, name, BT_PARSE, field,
                               "expected a non-empty array of values for '%s'", pname);
        size_t nv = json_array_size(vals);
        int64_t *v = malloc(sizeof *v * nv);
        if (!v)
            return BT_NOMEM;
        for (size_t j = 0; j < nv; j++) {
            if (!json_int_value(json_array_get(vals, j), &v[j])) {
                free(v);
                char f2[160];
                snprintf(f2, sizeof f2, "tune_params.%s[%zu]", pname, j);
                return field_error(diag, name, BT_UNSUPPORTED, f2,
                                   "value is not an integer (blocktune spaces are integer)");
            }
        }
        bt_diag d2;
        bt__diag_clear(&d2);
        bt_status st = bt__space_add_list(&c->space, pname, v, (int)nv, &d2);
        free(v);
        if (st != BT_OK)
            return field_error(diag, name, st, field, "%s", d2.msg);
    }
    if (c->space.total == UINT64_MAX)
        return field_error(diag, name, BT_UNSUPPORTED, "tune_params",
                           "the space has more than 2^64 configs");
    return BT_OK;
}

/* Parameter values of a cache entry: from its fields where present, else from its key. */
static bt_status entry_config(const bt__ktcache *c, const char *key, json_t *e, bt_config *cfg,
                              const char *name, bt_diag *diag)
{
    const bt__space *sp = &c->space;
    cfg->nparams = sp->nparams;
    const char *kp = key;
    char field[256];
    for (int p = 0; p < sp->nparams; p++) {
        int64_t from_key = 0;
        bool have_key = false;
        if (kp) {
            char *end;
            errno = 0;
            long long v = strtoll(kp, &end, 10);
            if (end != kp && errno == 0 && (*end == ',' || *end == '\0')) {
                from_key = v;
                have_key = true;
                kp = *end == ',' ? end + 1 : NULL;
            } else {
                kp = NULL;
            }
        }
        json_t *jv = json_object_get(e, sp->params[p].name);
        int64_t v;
        snprintf(field, sizeof field, "cache[\"%.100s\"].%s", key, sp->params[p].name);
        if (jv) {
            if (!json_int_value(jv, &v))
                return field_error(diag, name, BT_UNSUPPORTED, field, "value is not an integer");
        } else if (have_key) {
            v = from_key;
        } else {
            return field_error(diag, name, BT_PARSE, field,
                               "parameter missing from the entry and its key");
        }
        if (bt__space_value_pos(sp, p, v) < 0)
            return field_error(diag, name, BT_PARSE, field, "value %lld is not in tune_params.%s",
                               (long long)v, sp->params[p].name);
        cfg->v[p] = v;
    }
    return BT_OK;
}

static bt_status parse_entry(bt__ktcache *c, const char *key, json_t *e, bt__kt_record *r,
                             const char *name, bt_diag *diag)
{
    char field[256];
    snprintf(field, sizeof field, "cache[\"%.100s\"]", key);
    if (!json_is_object(e))
        return field_error(diag, name, BT_PARSE, field, "expected an object");
    bt_config cfg;
    bt_status st = entry_config(c, key, e, &cfg, name, diag);
    if (st != BT_OK)
        return st;
    bt__space_index_of(&c->space, &cfg, &r->index);

    json_t *t = json_object_get(e, "time");
    snprintf(field, sizeof field, "cache[\"%.100s\"].time", key);
    if (json_is_number(t)) {
        r->time_ms = json_number_value(t);
        if (!(r->time_ms >= 0) || isinf(r->time_ms))
            return field_error(diag, name, BT_PARSE, field, "time must be a finite number >= 0");
    } else if (json_is_string(t)) {
        r->fail = fail_from_text(json_string_value(t));
        snprintf(r->fail_text, sizeof r->fail_text, "%s", json_string_value(t));
    } else {
        return field_error(diag, name, BT_PARSE, field,
                           "expected a time in ms or a failure string such as "
                           "\"CompilationFailedConfig\"");
    }
    json_t *ts = json_object_get(e, "times");
    if (json_is_array(ts) && json_array_size(ts) > 0) {
        r->ntimes = (int)json_array_size(ts);
        r->times = malloc(sizeof *r->times * (size_t)r->ntimes);
        if (!r->times)
            return BT_NOMEM;
        for (int i = 0; i < r->ntimes; i++)
            r->times[i] = json_num_or_nan(json_array_get(ts, (size_t)i));
    }
    r->compile_ms = json_num_or_nan(json_object_get(e, "compile_time"));
    r->verification_ms = json_num_or_nan(json_object_get(e, "verification_time"));
    r->benchmark_ms = json_num_or_nan(json_object_get(e, "benchmark_time"));
    r->strategy_ms = json_num_or_nan(json_object_get(e, "strategy_time"));
    r->framework_ms = json_num_or_nan(json_object_get(e, "framework_time"));
    const char *stamp = json_string_value(json_object_get(e, "timestamp"));
    if (stamp)
        snprintf(r->timestamp, sizeof r->timestamp, "%s", stamp);
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v)
    {
        if (!json_is_number(v) || is_known_entry_field(k) || bt__space_find(&c->space, k) >= 0)
            continue;
        if (r->nmetrics < BT__KT_MAX_METRICS && strlen(k) < sizeof r->metric_name[0]) {
            snprintf(r->metric_name[r->nmetrics], sizeof r->metric_name[0], "%s", k);
            r->metric[r->nmetrics++] = json_number_value(v);
        }
    }
    r->entry_json = json_dumps(e, JSON_PRESERVE_ORDER);
    r->key_text = bt__strdup(key);
    return r->entry_json && r->key_text ? BT_OK : BT_NOMEM;
}

static bt_status parse_root(bt__ktcache *c, json_t *root, const char *name, bt_diag *diag)
{
    if (!json_is_object(root))
        return field_error(diag, name, BT_PARSE, "",
                           "expected a JSON object (a Kernel Tuner cache)");
    bt_status st = parse_header(c, root, name, diag);
    if (st != BT_OK)
        return st;
    json_t *head = json_copy(root); /* shallow: the header's values are shared, not copied */
    if (!head || json_object_del(head, "cache") < -1) {
        json_decref(head);
        return BT_NOMEM;
    }
    c->header_json = json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(head);
    if (!c->header_json)
        return BT_NOMEM;
    json_t *cache = json_object_get(root, "cache");
    if (!json_is_object(cache))
        return field_error(diag, name, BT_PARSE, "cache", "expected an object of entries");
    size_t n = json_object_size(cache);
    c->recs = calloc(n ? n : 1, sizeof *c->recs);
    if (!c->recs)
        return BT_NOMEM;
    const char *key;
    json_t *e;
    json_object_foreach(cache, key, e)
    {
        bt__kt_record *r = &c->recs[c->nrecs];
        record_init(r);
        c->nrecs++; /* counted now so that a partial record is freed */
        st = parse_entry(c, key, e, r, name, diag);
        if (st != BT_OK)
            return st;
    }
    qsort(c->recs, c->nrecs, sizeof *c->recs, cmp_rec);
    for (size_t i = 1; i < c->nrecs; i++) {
        if (c->recs[i].index == c->recs[i - 1].index) {
            bt_config cfg;
            char buf[512];
            bt__space_config_at(&c->space, c->recs[i].index, &cfg);
            return field_error(diag, name, BT_PARSE, "cache", "two entries for the config %s",
                               bt__config_format(&c->space, &cfg, ", ", buf, sizeof buf));
        }
    }
    recompute_summary(c);
    return BT_OK;
}

/* The cache of a parsed document (root is released here). */
static bt_status from_root(json_t *root, const char *name, bt__ktcache **out, bt_diag *diag)
{
    bt__ktcache *c = calloc(1, sizeof *c);
    if (!c) {
        json_decref(root);
        return BT_NOMEM;
    }
    bt__space_init(&c->space);
    bt_status st = parse_root(c, root, name, diag);
    json_decref(root);
    if (st != BT_OK) {
        bt__ktcache_free(c);
        return st;
    }
    *out = c;
    return BT_OK;
}

bt_status bt__ktcache_load_mem(const void *data, size_t size, const char *name, bt__ktcache **out,
                               bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    if (!name)
        name = "<memory>";
    bt_status st;
    json_t *root = bt__jsonin_mem(data, size, name, JSON_REJECT_DUPLICATES, &st, diag);
    return root ? from_root(root, name, out, diag) : st;
}

bt_status bt__ktcache_load(const char *path, bt__ktcache **out, bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    bt_status st;
    json_t *root = bt__jsonin_file(path, JSON_REJECT_DUPLICATES, &st, diag);
    return root ? from_root(root, path, out, diag) : st;
}

/* ---------------------------------------------------------------------------------------------
 * Building and writing
 * ------------------------------------------------------------------------------------------- */
bt_status bt__ktcache_create(const bt__space *space, const char *device_name,
                             const char *kernel_name, bt__ktcache **out)
{
    *out = NULL;
    bt__ktcache *c = calloc(1, sizeof *c);
    if (!c)
        return BT_NOMEM;
    bt__space_init(&c->space);
    for (int p = 0; p < space->nparams; p++) {
        bt_status st = bt__space_add_list(&c->space, space->params[p].name, space->params[p].values,
                                          space->params[p].nvalues, NULL);
        if (st != BT_OK) {
            bt__ktcache_free(c);
            return st;
        }
        c->space.params[p].role = space->params[p].role;
    }
    snprintf(c->device_name, sizeof c->device_name, "%s", device_name ? device_name : "");
    snprintf(c->kernel_name, sizeof c->kernel_name, "%s", kernel_name ? kernel_name : "");
    snprintf(c->objective, sizeof c->objective, "time");
    c->problem_size_json = bt__strdup("null");
    if (!c->problem_size_json) {
        bt__ktcache_free(c);
        return BT_NOMEM;
    }
    *out = c;
    return BT_OK;
}

bt_status bt__ktcache_add(bt__ktcache *c, const bt__kt_record *r)
{
    if (r->index >= c->space.total)
        return BT_INVALID_ARG;
    bt__kt_record copy = *r;
    copy.times = NULL;
    copy.entry_json = r->entry_json ? bt__strdup(r->entry_json) : NULL;
    copy.key_text = r->key_text ? bt__strdup(r->key_text) : NULL;
    if ((r->entry_json && !copy.entry_json) || (r->key_text && !copy.key_text)) {
        free(copy.entry_json);
        free(copy.key_text);
        return BT_NOMEM;
    }
    if (r->ntimes > 0) {
        copy.times = malloc(sizeof *copy.times * (size_t)r->ntimes);
        if (!copy.times) {
            free(copy.entry_json);
            free(copy.key_text);
            return BT_NOMEM;
        }
        memcpy(copy.times, r->times, sizeof *copy.times * (size_t)r->ntimes);
    }
    bt__kt_record *old = (bt__kt_record *)bt__ktcache_find(c, r->index);
    if (old) {
        free(old->times);
        free(old->entry_json);
        free(old->key_text);
        *old = copy;
    } else {
        bt__kt_record *nr = realloc(c->recs, sizeof *nr * (c->nrecs + 1));
        if (!nr) {
            free(copy.times);
            free(copy.entry_json);
            free(copy.key_text);
            return BT_NOMEM;
        }
        c->recs = nr;
        size_t pos = c->nrecs;
        while (pos > 0 && c->recs[pos - 1].index > r->index) {
            c->recs[pos] = c->recs[pos - 1];
            pos--;
        }
        c->recs[pos] = copy;
        c->nrecs++;
    }
    recompute_summary(c);
    return BT_OK;
}

static void record_free(bt__kt_record *r)
{
    free(r->times);
    free(r->entry_json);
    free(r->key_text);
}

/* Orders by index, then by position (so that the last of equal indexes sorts last). */
typedef struct pos_rec {
    size_t pos;
    uint64_t index;
} pos_rec;

static int cmp_pos(const void *a, const void *b)
{
    const pos_rec *x = a, *y = b;
    if (x->index != y->index)
        return x->index < y->index ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

bt_status bt__ktcache_adopt(bt__ktcache *c, bt__kt_record *recs, size_t n)
{
    bool bad = c->nrecs > 0;
    for (size_t i = 0; i < n && !bad; i++)
        bad = recs[i].index >= c->space.total;
    pos_rec *order = bad || n == 0 ? NULL : malloc(sizeof *order * n);
    bt__kt_record *sorted = order ? malloc(sizeof *sorted * n) : NULL;
    if (bad || (n > 0 && !sorted)) {
        for (size_t i = 0; i < n; i++)
            record_free(&recs[i]);
        free(recs);
        free(order);
        return bad ? BT_INVALID_ARG : BT_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (pos_rec){i, recs[i].index};
    qsort(order, n, sizeof *order, cmp_pos);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && order[i + 1].index == order[i].index) {
            record_free(&recs[order[i].pos]); /* replaced by a later row */
            continue;
        }
        sorted[m++] = recs[order[i].pos];
    }
    free(order);
    free(recs);
    free(c->recs);
    c->recs = sorted;
    c->nrecs = m;
    recompute_summary(c);
    return BT_OK;
}

/* Sets key k to a real, skipping NAN (JSON has none). Returns false on allocation failure. */
static bool set_real(json_t *o, const char *k, double v)
{
    if (isnan(v) || isinf(v))
        return true;
    return json_object_set_new(o, k, json_real(v)) == 0;
}

/* A record without its entry text, as Kernel Tuner writes an entry. */
static json_t *entry_json(const bt__ktcache *c, const bt__kt_record *r)
{
    bt_config cfg;
    bt__space_config_at(&c->space, r->index, &cfg);
    json_t *o = bt__config_to_json(&c->space, &cfg); /* the config, then the entry's fields */
    if (!o)
        return NULL;
    bool ok = true;
    if (r->fail == BT__KT_OK) {
        ok = ok && set_real(o, "time", r->time_ms);
    } else {
        const char *txt = r->fail_text[0] ? r->fail_text : bt__kt_fail_name(r->fail);
        ok = ok && json_object_set_new(o, "time", json_string(txt)) == 0;
    }
    if (r->ntimes > 0) {
        json_t *a = json_array();
        ok = ok && a;
        for (int i = 0; ok && i < r->ntimes; i++)
            if (!isnan(r->times[i]))
                ok = json_array_append_new(a, json_real(r->times[i])) == 0;
        ok = ok && json_object_set_new(o, "times", a) == 0;
    }
    ok = ok && set_real(o, "compile_time", r->compile_ms);
    ok = ok && set_real(o, "verification_time", r->verification_ms);
    ok = ok && set_real(o, "benchmark_time", r->benchmark_ms);
    for (int m = 0; ok && m < r->nmetrics; m++)
        ok = set_real(o, r->metric_name[m], r->metric[m]);
    ok = ok && set_real(o, "strategy_time", r->strategy_ms);
    ok = ok && set_real(o, "framework_time", r->framework_ms);
    if (ok && r->timestamp[0])
        ok = json_object_set_new(o, "timestamp", json_string(r->timestamp)) == 0;
    if (!ok) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Appends the JSON encoding of a value (taking the reference) to b. */
static void sbuf_json(bt__sbuf *b, json_t *v, size_t flags)
{
    if (!v) {
        b->oom = true;
        return;
    }
    char *s = json_dumps(v, flags | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    json_decref(v);
    if (!s) {
        b->oom = true;
        return;
    }
    bt__sbuf_printf(b, "%s", s);
    free(s);
}

/* The header as recorded: each field but `cache` on its own line, in the file's order. */
static void dump_recorded_header(bt__sbuf *b, const char *header_json)
{
    json_t *h = json_loads(header_json, 0, NULL);
    if (!json_is_object(h)) {
        json_decref(h);
        b->oom = true; /* bt__ktcache never holds one that does not parse */
        return;
    }
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v)
    {
        sbuf_json(b, json_string(k), 0);
        bt__sbuf_printf(b, ": ");
        sbuf_json(b, json_incref(v), 0);
        bt__sbuf_printf(b, ",\n");
    }
    json_decref(h);
}

static void dump_header(bt__sbuf *b, const bt__ktcache *c)
{
    const bt__space *sp = &c->space;
    bt__sbuf_printf(b, "\"device_name\": ");
    sbuf_json(b, json_string(c->device_name), 0);
    bt__sbuf_printf(b, ",\n\"kernel_name\": ");
    sbuf_json(b, json_string(c->kernel_name), 0);
    bt__sbuf_printf(b, ",\n\"problem_size\": %s,\n\"tune_params_keys\": [",
                    c->problem_size_json ? c->problem_size_json : "null");
    for (int p = 0; p < sp->nparams; p++) {
        bt__sbuf_printf(b, "%s", p ? ", " : "");
        sbuf_json(b, json_string(sp->params[p].name), 0);
    }
    bt__sbuf_printf(b, "],\n\"tune_params\": {");
    for (int p = 0; p < sp->nparams; p++) {
        bt__sbuf_printf(b, "%s\n", p ? "," : "");
        sbuf_json(b, json_string(sp->params[p].name), 0);
        bt__sbuf_printf(b, ": [");
        for (int i = 0; i < sp->params[p].nvalues; i++)
            bt__sbuf_printf(b, "%s%lld", i ? ", " : "", (long long)sp->params[p].values[i]);
        bt__sbuf_printf(b, "]");
    }
    bt__sbuf_printf(b, "\n},\n\"objective\": ");
    sbuf_json(b, json_string(c->objective[0] ? c->objective : "time"), 0);
    bt__sbuf_printf(b, ",\n");
}

char *bt__ktcache_dump(const bt__ktcache *c)
{
    bt__sbuf b = {0};
    const bt__space *sp = &c->space;
    bt__sbuf_printf(&b, "{\n");
    if (c->header_json)
        dump_recorded_header(&b, c->header_json);
    else
        dump_header(&b, c);
    bt__sbuf_printf(&b, "\"cache\": {");
    for (size_t i = 0; i < c->nrecs; i++) {
        const bt__kt_record *r = &c->recs[i];
        bt__sbuf_printf(&b, "%s\n", i ? "," : "");
        if (r->key_text) {
            sbuf_json(&b, json_string(r->key_text), 0);
        } else {
            bt_config cfg;
            bt__space_config_at(sp, r->index, &cfg);
            bt__sbuf_printf(&b, "\"");
            for (int p = 0; p < sp->nparams; p++)
                bt__sbuf_printf(&b, "%s%lld", p ? "," : "", (long long)cfg.v[p]);
            bt__sbuf_printf(&b, "\"");
        }
        bt__sbuf_printf(&b, ": ");
        if (r->entry_json) /* as it was read (Kernel Tuner's spacing), not parsed again */
            bt__sbuf_printf(&b, "%s", r->entry_json);
        else
            sbuf_json(&b, entry_json(c, r), 0);
    }
    bt__sbuf_printf(&b, "}\n}\n");
    if (b.oom) {
        bt__sbuf_free(&b);
        return NULL;
    }
    return b.s;
}

bt_status bt__ktcache_write(const bt__ktcache *c, const char *path, bt_diag *diag)
{
    bt__diag_clear(diag);
    char *text = bt__ktcache_dump(c);
    if (!text)
        return BT_NOMEM;
    size_t n = strlen(text);
    bt_status st;
    size_t plen = strlen(path);
    if (plen > 3 && !strcmp(path + plen - 3, ".gz")) {
        size_t zlen;
        unsigned char *z = gzip_bytes(text, n, &zlen);
        free(text);
        if (!z)
            return BT_NOMEM;
        st = bt__write_file_atomic(path, z, zlen, diag);
        free(z);
    } else {
        st = bt__write_file_atomic(path, text, n, diag);
        free(text);
    }
    if (st != BT_OK && diag && !diag->file[0])
        snprintf(diag->file, sizeof diag->file, "%s", path);
    return st;
}

/* --- the cache as a recorded space ------------------------------------------------------------ */
static double ms_or_zero(double v)
{
    return isfinite(v) && v > 0 ? v : 0;
}

static void rec_of(const bt__kt_record *r, bt__rec *out)
{
    out->index = r->index;
    out->fail = bt__kt_fail_status(r->fail);
    out->time_ms = r->fail == BT__KT_OK ? r->time_ms : NAN;
    out->cost_s = (ms_or_zero(r->compile_ms) + ms_or_zero(r->benchmark_ms)) / 1000.0;
}

static bool rs_find(const void *user, uint64_t idx, bt__rec *out)
{
    const bt__kt_record *r = bt__ktcache_find(user, idx);
    if (r)
        rec_of(r, out);
    return r != NULL;
}

static void rs_at(const void *user, size_t i, bt__rec *out)
{
    rec_of(&((const bt__ktcache *)user)->recs[i], out);
}

void bt__ktcache_recspace(const bt__ktcache *c, bt__recspace *out)
{
    *out = (bt__recspace){.space = &c->space,
                          .nrecs = c->nrecs,
                          .nfailed = c->nfailed,
                          .has_best = c->has_best,
                          .best_index = c->best_index,
                          .best_ms = c->best_ms,
                          .find = rs_find,
                          .at = rs_at,
                          .user = c};
}
