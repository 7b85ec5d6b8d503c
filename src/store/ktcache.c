/*
 * ktcache.c — reading and writing Kernel Tuner cache files (plain JSON or gzip), see ktcache.h.
 *
 * Reading: the bytes are inflated when they start with the gzip magic, parsed with jansson
 * (syntax errors carry line:column), then checked field by field (semantic errors name the field).
 * Writing: the header, then one cache entry per line, as Kernel Tuner writes it.
 */
#include "store/ktcache.h"

#include "core/util.h"

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
 * gzip
 * ------------------------------------------------------------------------------------------- */

/* Inflates gzip bytes (all members) into a malloc'd NUL-terminated buffer; NULL and a diag on
 * corrupt input or allocation failure. */
static char *gunzip(const unsigned char *in, size_t n, size_t *out_len, const char *name,
                    bt_diag *diag, bt_status *st)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 32) != Z_OK) {
        *st = BT_NOMEM;
        return NULL;
    }
    size_t cap = n * 8 + 4096, len = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        inflateEnd(&zs);
        *st = BT_NOMEM;
        return NULL;
    }
    zs.next_in = (unsigned char *)in;
    size_t left = n;
    int rc = Z_OK;
    for (;;) {
        if (cap - len < 65536) {
            size_t ncap = cap * 2;
            char *nb = realloc(buf, ncap + 1);
            if (!nb) {
                free(buf);
                inflateEnd(&zs);
                *st = BT_NOMEM;
                return NULL;
            }
            buf = nb;
            cap = ncap;
        }
        uInt chunk_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
        zs.avail_in = chunk_in;
        size_t room = cap - len;
        zs.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
        uInt avail_out0 = zs.avail_out;
        zs.next_out = (unsigned char *)buf + len;
        rc = inflate(&zs, Z_NO_FLUSH);
        len += avail_out0 - zs.avail_out;
        left -= chunk_in - zs.avail_in;
        if (rc == Z_STREAM_END) {
            if (left == 0)
                break;
            inflateReset(&zs); /* another gzip member follows */
            continue;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            bt__diag_set(diag, "%s: corrupt gzip data (%s)", name, zs.msg ? zs.msg : "zlib error");
            free(buf);
            inflateEnd(&zs);
            *st = BT_CORRUPT;
            return NULL;
        }
        if (rc == Z_BUF_ERROR && left == 0 && zs.avail_out > 0) {
            bt__diag_set(diag, "%s: truncated gzip data", name);
            free(buf);
            inflateEnd(&zs);
            *st = BT_CORRUPT;
            return NULL;
        }
    }
    inflateEnd(&zs);
    buf[len] = '\0';
    *out_len = len;
    return buf;
}

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
        free(c->recs[i].times);
    free(c->recs);
    free(c->problem_size_json);
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
    return BT_OK;
}

static bt_status parse_root(bt__ktcache *c, json_t *root, const char *name, bt_diag *diag)
{
    if (!json_is_object(root))
        return field_error(diag, name, BT_PARSE, "",
                           "expected a JSON object (a Kernel Tuner cache)");
    bt_status st = parse_header(c, root, name, diag);
    if (st != BT_OK)
        return st;
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

bt_status bt__ktcache_load_mem(const void *data, size_t size, const char *name, bt__ktcache **out,
                               bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    if (!name)
        name = "<memory>";
    const unsigned char *bytes = data;
    char *text = NULL;
    size_t len = size;
    bt_status st = BT_OK;
    if (size >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
        text = gunzip(bytes, size, &len, name, diag, &st);
        if (!text) {
            if (diag)
                snprintf(diag->file, sizeof diag->file, "%s", name);
            return st;
        }
    }
    json_error_t jerr;
    json_t *root = json_loadb(text ? text : (const char *)data, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    if (!root) {
        if (diag) {
            snprintf(diag->file, sizeof diag->file, "%s", name);
            diag->line = jerr.line > 0 ? jerr.line : 0;
            diag->column = jerr.column > 0 ? jerr.column : 0;
            bt__diag_set(diag, "%s", jerr.text);
        }
        return BT_PARSE;
    }
    bt__ktcache *c = calloc(1, sizeof *c);
    if (!c) {
        json_decref(root);
        return BT_NOMEM;
    }
    bt__space_init(&c->space);
    st = parse_root(c, root, name, diag);
    json_decref(root);
    if (st != BT_OK) {
        bt__ktcache_free(c);
        return st;
    }
    *out = c;
    return BT_OK;
}

bt_status bt__ktcache_load(const char *path, bt__ktcache **out, bt_diag *diag)
{
    *out = NULL;
    bt__diag_clear(diag);
    size_t size;
    char *data = bt__read_file(path, &size);
    if (!data) {
        if (diag) {
            snprintf(diag->file, sizeof diag->file, "%s", path);
            bt__diag_set(diag, "cannot read: %s", strerror(errno));
        }
        return errno == ENOENT ? BT_NOT_FOUND : BT_IO;
    }
    bt_status st = bt__ktcache_load_mem(data, size, path, out, diag);
    free(data);
    return st;
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
    if (r->ntimes > 0) {
        copy.times = malloc(sizeof *copy.times * (size_t)r->ntimes);
        if (!copy.times)
            return BT_NOMEM;
        memcpy(copy.times, r->times, sizeof *copy.times * (size_t)r->ntimes);
    }
    bt__kt_record *old = (bt__kt_record *)bt__ktcache_find(c, r->index);
    if (old) {
        free(old->times);
        *old = copy;
    } else {
        bt__kt_record *nr = realloc(c->recs, sizeof *nr * (c->nrecs + 1));
        if (!nr) {
            free(copy.times);
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

/* Sets key k to a real, skipping NAN (JSON has none). Returns false on allocation failure. */
static bool set_real(json_t *o, const char *k, double v)
{
    if (isnan(v) || isinf(v))
        return true;
    return json_object_set_new(o, k, json_real(v)) == 0;
}

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

char *bt__ktcache_dump(const bt__ktcache *c)
{
    bt__sbuf b = {0};
    const bt__space *sp = &c->space;
    bt__sbuf_printf(&b, "{\n\"device_name\": ");
    sbuf_json(&b, json_string(c->device_name), 0);
    bt__sbuf_printf(&b, ",\n\"kernel_name\": ");
    sbuf_json(&b, json_string(c->kernel_name), 0);
    bt__sbuf_printf(&b, ",\n\"problem_size\": %s,\n\"tune_params_keys\": [",
                    c->problem_size_json ? c->problem_size_json : "null");
    for (int p = 0; p < sp->nparams; p++) {
        bt__sbuf_printf(&b, "%s", p ? ", " : "");
        sbuf_json(&b, json_string(sp->params[p].name), 0);
    }
    bt__sbuf_printf(&b, "],\n\"tune_params\": {");
    for (int p = 0; p < sp->nparams; p++) {
        bt__sbuf_printf(&b, "%s\n", p ? "," : "");
        sbuf_json(&b, json_string(sp->params[p].name), 0);
        bt__sbuf_printf(&b, ": [");
        for (int i = 0; i < sp->params[p].nvalues; i++)
            bt__sbuf_printf(&b, "%s%lld", i ? ", " : "", (long long)sp->params[p].values[i]);
        bt__sbuf_printf(&b, "]");
    }
    bt__sbuf_printf(&b, "\n},\n\"objective\": ");
    sbuf_json(&b, json_string(c->objective[0] ? c->objective : "time"), 0);
    bt__sbuf_printf(&b, ",\n\"cache\": {");
    for (size_t i = 0; i < c->nrecs; i++) {
        const bt__kt_record *r = &c->recs[i];
        bt_config cfg;
        bt__space_config_at(sp, r->index, &cfg);
        bt__sbuf_printf(&b, "%s\n\"", i ? "," : "");
        for (int p = 0; p < sp->nparams; p++)
            bt__sbuf_printf(&b, "%s%lld", p ? "," : "", (long long)cfg.v[p]);
        bt__sbuf_printf(&b, "\": ");
        sbuf_json(&b, entry_json(c, r), 0);
    }
    bt__sbuf_printf(&b, "\n}\n}\n");
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
