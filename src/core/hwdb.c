/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hwdb.c — the hardware table: the GPUs blocktune can plan for without a device.
 *
 * Owns: reading and validating gpus.json (docs/gpus.md) from the installed copy, the copy built
 * into the library or a user's file; overlaying a user's file on a table (all or nothing);
 * loose lookup by name with "closest" suggestions; and a row's JSON form, so that a table can be
 * printed in the format it is read in.
 *
 * jansson keeps no positions once a document is parsed, so the diagnostics for a value that
 * parsed but is wrong (a negative SM count) find it again in the text with the JSON position
 * finder the spec loader uses too (core/jpos.h).
 */
#include "core/hwdb.h"
#include "core/datadir.h"
#include "core/jpos.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME "blocktune-gpus"
#define FORMAT_VERSION 1
#define KEY_MAX 128    /* a name key; names and aliases are at most 95 characters */
#define ALIASES_MAX 32 /* aliases per row */
#define EMBEDDED_NAME "(built-in) data/gpus.json"

struct bt_gpudb {
    bt_gpu *rows;
    size_t *origin; /* per row: index into origins */
    size_t n;
    char **origins; /* the files the rows came from, in load order */
    size_t norigins;
};

/* ---------------------------------------------------------------------------------------------
 * Field tables: the numeric fields of a row, in file order, and the peak kinds.
 * ------------------------------------------------------------------------------------------- */
typedef enum field_type { F_INT, F_I64, F_NUM } field_type;

typedef struct field_spec {
    const char *key;
    field_type type;
    size_t off;
    int min; /* 1: must be positive; 0: must not be negative */
} field_spec;

#define FI(name, min)                                                                              \
    {                                                                                              \
#name, F_INT, offsetof(bt_gpu, name), min                                                  \
    }
#define FL(name, min)                                                                              \
    {                                                                                              \
#name, F_I64, offsetof(bt_gpu, name), min                                                  \
    }
#define FN(name, min)                                                                              \
    {                                                                                              \
#name, F_NUM, offsetof(bt_gpu, name), min                                                  \
    }
static const field_spec num_fields[] = {
    FI(sm_count, 1),
    FI(warp_size, 1),
    FI(max_threads_per_sm, 1),
    FI(max_warps_per_sm, 1),
    FI(max_blocks_per_sm, 1),
    FI(max_threads_per_block, 1),
    FI(regs_per_sm, 1),
    FI(regs_per_block, 1),
    FI(max_regs_per_thread, 1),
    FI(reg_alloc_unit, 1),
    FL(smem_per_sm, 1),
    FL(smem_per_block, 1),
    FL(smem_per_block_optin, 1),
    FL(smem_reserved_per_block, 0),
    FL(l2_bytes, 1),
    FL(mem_bytes, 1),
    FN(mem_bw_gbps, 1),
    FN(clock_mhz, 1),
};
#undef FI
#undef FL
#undef FN

static const char *const string_fields[] = {
    "name", "aliases", "vendor", "arch", "compute_capability", "peak_tflops", "source"};

static const char *const peak_names[BT_PEAK__COUNT] = {
    [BT_PEAK_FP64] = "fp64",       [BT_PEAK_FP32] = "fp32",       [BT_PEAK_FP16] = "fp16",
    [BT_PEAK_TF32_TC] = "tf32_tc", [BT_PEAK_FP16_TC] = "fp16_tc", [BT_PEAK_BF16_TC] = "bf16_tc",
    [BT_PEAK_FP8_TC] = "fp8_tc",   [BT_PEAK_INT8_TC] = "int8_tc", [BT_PEAK_FP64_TC] = "fp64_tc",
};

const char *bt_peak_kind_name(bt_peak_kind k)
{
    if ((int)k < 0 || k >= BT_PEAK__COUNT)
        return "unknown";
    return peak_names[k];
}

int bt__peak_kind_from_name(const char *name)
{
    for (int k = 0; name && k < BT_PEAK__COUNT; k++)
        if (strcmp(peak_names[k], name) == 0)
            return k;
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Name keys (loose matching).
 * ------------------------------------------------------------------------------------------- */
char *bt__gpu_name_key(const char *name, char *buf, size_t size)
{
    static const char *const prefixes[] = {"nvidia", "geforce", "tesla"};
    if (!buf || size == 0)
        return buf;
    size_t n = 0;
    for (const char *p = name ? name : ""; *p && n + 1 < size; p++) {
        if (*p == ' ' || *p == '\t' || *p == '-' || *p == '_')
            continue;
        buf[n++] = (char)tolower((unsigned char)*p);
    }
    buf[n] = '\0';
    /* Strip vendor/brand words while something is left after them: "NVIDIA GeForce RTX 4090". */
    for (bool again = true; again;) {
        again = false;
        for (size_t i = 0; i < BT__ARRAY_LEN(prefixes); i++) {
            size_t l = strlen(prefixes[i]);
            if (n > l && strncmp(buf, prefixes[i], l) == 0) {
                memmove(buf, buf + l, n - l + 1);
                n -= l;
                again = true;
            }
        }
    }
    return buf;
}

/* The keys a row answers to: [0] its name, then its aliases; raw[] holds them as written. */
typedef struct row_keys {
    size_t n;
    char key[ALIASES_MAX + 1][KEY_MAX];
    char raw[ALIASES_MAX + 1][KEY_MAX];
} row_keys;

static void get_row_keys(const bt_gpu *g, row_keys *k)
{
    k->n = 0;
    snprintf(k->raw[0], KEY_MAX, "%s", g->name);
    bt__gpu_name_key(g->name, k->key[0], KEY_MAX);
    k->n = 1;
    const char *p = g->aliases;
    while (*p && k->n < ALIASES_MAX + 1) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            size_t m = len < KEY_MAX - 1 ? len : KEY_MAX - 1;
            memcpy(k->raw[k->n], p, m);
            k->raw[k->n][m] = '\0';
            bt__gpu_name_key(k->raw[k->n], k->key[k->n], KEY_MAX);
            k->n++;
        }
        p += len;
        if (*p == ',')
            p++;
    }
}

typedef struct pctx {
    const char *text;
    size_t size;
    const char *name; /* the file, for diagnostics */
    bt_diag *diag;
} pctx;

/* Sets *line and *column to where gpus[row].key.sub is written (row < 0: the top-level member
 * `key`; the key of a member, the opening brace of a row), or to the nearest enclosing thing
 * that could be found (core/jpos.h). */
static void locate(const pctx *c, long row, const char *key, const char *sub, int *line,
                   int *column)
{
    char path[256];
    int w = row >= 0 ? snprintf(path, sizeof path, "gpus[%ld]", row) : 0;
    path[w] = '\0';
    if (key && w >= 0 && (size_t)w < sizeof path)
        w += snprintf(path + w, sizeof path - (size_t)w, "%s%s", w ? "." : "", key);
    if (key && sub && w >= 0 && (size_t)w < sizeof path)
        snprintf(path + w, sizeof path - (size_t)w, ".%s", sub);
    /* the scanner reads NUL-terminated text; the table's may not be */
    char *text = malloc(c->size + 1);
    bt__jpos *m = NULL;
    if (text) {
        memcpy(text, c->text, c->size);
        text[c->size] = '\0';
        m = bt__jpos_build(text);
    }
    bt__jpos_nearest(m, path, line, column);
    bt__jpos_free(m);
    free(text);
}

/* Fills c->diag for a problem with gpus[row].key[.sub] (row < 0: a top-level field) and returns
 * st. `rowname`, when known, is appended so that the row is named as well as numbered. */
__attribute__((format(printf, 7, 8))) static bt_status fail_at(const pctx *c, bt_status st,
                                                               long row, const char *rowname,
                                                               const char *key, const char *sub,
                                                               const char *fmt, ...)
{
    bt_diag *d = c->diag;
    if (!d)
        return st;
    bt__diag_clear(d);
    snprintf(d->file, sizeof d->file, "%s", c->name);
    locate(c, row, key, sub, &d->line, &d->column);
    char field[128];
    int w = 0;
    field[0] = '\0';
    if (row >= 0)
        w = snprintf(field, sizeof field, "gpus[%ld]", row);
    if (key && w >= 0 && (size_t)w < sizeof field)
        w += snprintf(field + w, sizeof field - (size_t)w, "%s%s", row >= 0 ? "." : "", key);
    if (sub && w >= 0 && (size_t)w < sizeof field)
        snprintf(field + w, sizeof field - (size_t)w, ".%s", sub);
    bt__diag_field(d, field);
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (rowname && rowname[0])
        snprintf(d->msg, sizeof d->msg, "%s (in row \"%.96s\")", msg, rowname);
    else
        snprintf(d->msg, sizeof d->msg, "%s", msg);
    return st;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "something else";
}

/* ---------------------------------------------------------------------------------------------
 * Parsing one row.
 * ------------------------------------------------------------------------------------------- */
static const char *closest_of(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    int bd = INT_MAX;
    for (size_t i = 0; i < n; i++) {
        int d = bt__edit_distance(word, names[i]);
        if (d < bd) {
            bd = d;
            best = names[i];
        }
    }
    return bd <= 3 ? best : NULL;
}

static bool is_known_row_field(const char *key)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(string_fields); i++)
        if (strcmp(key, string_fields[i]) == 0)
            return true;
    for (size_t i = 0; i < BT__ARRAY_LEN(num_fields); i++)
        if (strcmp(key, num_fields[i].key) == 0)
            return true;
    return false;
}

static const char *closest_row_field(const char *key)
{
    const char *names[BT__ARRAY_LEN(string_fields) + BT__ARRAY_LEN(num_fields)];
    size_t n = 0;
    for (size_t i = 0; i < BT__ARRAY_LEN(string_fields); i++)
        names[n++] = string_fields[i];
    for (size_t i = 0; i < BT__ARRAY_LEN(num_fields); i++)
        names[n++] = num_fields[i].key;
    return closest_of(key, names, n);
}

/* Copies the string member `key` of o into dst. Missing: an error when required, else "". */
static bt_status get_string(const pctx *c, size_t row, const char *rowname, const json_t *o,
                            const char *key, char *dst, size_t cap, bool required)
{
    const json_t *v = json_object_get(o, key);
    dst[0] = '\0';
    if (!v) {
        if (required)
            return fail_at(c, BT_PARSE, (long)row, rowname, key, NULL, "missing required field");
        return BT_OK;
    }
    if (!json_is_string(v))
        return fail_at(c, BT_PARSE, (long)row, rowname, key, NULL, "expected a string, got %s",
                       type_name(v));
    size_t len = json_string_length(v);
    if (len >= cap)
        return fail_at(c, BT_PARSE, (long)row, rowname, key, NULL,
                       "too long (%zu characters; at most %zu)", len, cap - 1);
    if (strlen(json_string_value(v)) != len)
        return fail_at(c, BT_PARSE, (long)row, rowname, key, NULL, "contains a NUL character");
    if (required && len == 0)
        return fail_at(c, BT_PARSE, (long)row, rowname, key, NULL, "must not be empty");
    memcpy(dst, json_string_value(v), len + 1);
    return BT_OK;
}

static bt_status get_number_field(const pctx *c, size_t row, const char *rowname, const json_t *o,
                                  const field_spec *f, bt_gpu *g)
{
    const json_t *v = json_object_get(o, f->key);
    const char *what = f->min ? "positive" : "non-negative";
    if (!v)
        return fail_at(c, BT_PARSE, (long)row, rowname, f->key, NULL, "missing required field");
    if (f->type == F_NUM) {
        if (!json_is_number(v))
            return fail_at(c, BT_PARSE, (long)row, rowname, f->key, NULL,
                           "expected a %s number, got %s", what, type_name(v));
        double x = json_number_value(v);
        if (!(f->min ? x > 0 : x >= 0))
            return fail_at(c, BT_PARSE, (long)row, rowname, f->key, NULL,
                           "expected a %s number, got %g", what, x);
        *(double *)(void *)((char *)g + f->off) = x;
        return BT_OK;
    }
    if (!json_is_integer(v))
        return fail_at(c, BT_PARSE, (long)row, rowname, f->key, NULL,
                       "expected a %s integer, got %s", what, type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < f->min)
        return fail_at(c, BT_PARSE, (long)row, rowname, f->key, NULL,
                       "expected a %s integer, got %lld", what, (long long)x);
    if (f->type == F_INT) {
        if (x > INT_MAX)
            return fail_at(c, BT_PARSE, (long)row, rowname, f->key, NULL,
                           "%lld is too large (at most %d)", (long long)x, INT_MAX);
        *(int *)(void *)((char *)g + f->off) = (int)x;
    } else {
        *(int64_t *)(void *)((char *)g + f->off) = (int64_t)x;
    }
    return BT_OK;
}

static bt_status get_aliases(const pctx *c, size_t row, const char *rowname, const json_t *o,
                             bt_gpu *g)
{
    const json_t *a = json_object_get(o, "aliases");
    g->aliases[0] = '\0';
    if (!a)
        return BT_OK;
    if (!json_is_array(a))
        return fail_at(c, BT_PARSE, (long)row, rowname, "aliases", NULL,
                       "expected an array of strings, got %s", type_name(a));
    if (json_array_size(a) > ALIASES_MAX)
        return fail_at(c, BT_PARSE, (long)row, rowname, "aliases", NULL,
                       "too many aliases (%zu; at most %d)", json_array_size(a), ALIASES_MAX);
    size_t used = 0;
    size_t i;
    const json_t *v;
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v))
            return fail_at(c, BT_PARSE, (long)row, rowname, "aliases", NULL,
                           "alias %zu: expected a string, got %s", i, type_name(v));
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        char key[KEY_MAX];
        if (len == 0 || len > 95 || strlen(s) != len || strchr(s, ','))
            return fail_at(c, BT_PARSE, (long)row, rowname, "aliases", NULL,
                           "alias %zu: must be 1 to 95 characters, without commas", i);
        if (bt__gpu_name_key(s, key, sizeof key)[0] == '\0')
            return fail_at(c, BT_PARSE, (long)row, rowname, "aliases", NULL,
                           "alias %zu (\"%s\"): nothing is left once case, spaces, '-' and '_' "
                           "are ignored",
                           i, s);
        if (used + (used ? 1 : 0) + len >= sizeof g->aliases)
            return fail_at(c, BT_PARSE, (long)row, rowname, "aliases", NULL,
                           "the aliases are too long together (at most %zu characters, "
                           "joined by commas)",
                           sizeof g->aliases - 1);
        if (used)
            g->aliases[used++] = ',';
        memcpy(g->aliases + used, s, len + 1);
        used += len;
    }
    return BT_OK;
}

static bt_status get_cc(const pctx *c, size_t row, const char *rowname, const json_t *o, bt_gpu *g)
{
    const json_t *v = json_object_get(o, "compute_capability");
    g->cc_major = g->cc_minor = 0;
    if (!v)
        return BT_OK;
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    int ma = 0, mi = 0, used = 0;
    if (!json_is_string(v) || sscanf(s, "%3d.%3d%n", &ma, &mi, &used) != 2 ||
        (size_t)used != strlen(s) || ma < 0 || mi < 0 || !isdigit((unsigned char)s[0]))
        return fail_at(c, BT_PARSE, (long)row, rowname, "compute_capability", NULL,
                       "expected a string \"major.minor\" such as \"8.6\"");
    g->cc_major = ma;
    g->cc_minor = mi;
    return BT_OK;
}

static bt_status get_peaks(const pctx *c, size_t row, const char *rowname, const json_t *o,
                           bt_gpu *g)
{
    const json_t *p = json_object_get(o, "peak_tflops");
    if (!p)
        return fail_at(c, BT_PARSE, (long)row, rowname, "peak_tflops", NULL,
                       "missing required field");
    if (!json_is_object(p))
        return fail_at(c, BT_PARSE, (long)row, rowname, "peak_tflops", NULL,
                       "expected an object {\"fp32\": TFLOP/s, ...}, got %s", type_name(p));
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)p, key, v)
    {
        if (bt__peak_kind_from_name(key) >= 0 || key[0] == '_')
            continue;
        const char *near = closest_of(key, peak_names, BT_PEAK__COUNT);
        return fail_at(c, BT_PARSE, (long)row, rowname, "peak_tflops", key,
                       "unknown peak kind%s%s%s (the kinds: fp64, fp32, fp16, tf32_tc, fp16_tc, "
                       "bf16_tc, fp8_tc, int8_tc, fp64_tc)",
                       near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    for (int k = 0; k < BT_PEAK__COUNT; k++) {
        v = json_object_get(p, peak_names[k]);
        bool positive = k == BT_PEAK_FP32;
        if (!v)
            return fail_at(c, BT_PARSE, (long)row, rowname, "peak_tflops", peak_names[k],
                           "missing (every kind is required; write 0 where the GPU has no such "
                           "unit)");
        if (!json_is_number(v) ||
            !(positive ? json_number_value(v) > 0 : json_number_value(v) >= 0))
            return fail_at(c, BT_PARSE, (long)row, rowname, "peak_tflops", peak_names[k],
                           "expected a %s number of TFLOP/s, got %s",
                           positive ? "positive" : "non-negative", type_name(v));
        g->peak_tflops[k] = json_number_value(v);
    }
    return BT_OK;
}

/* Checks that the limits of a row agree with each other (typos show up here). */
static bt_status check_row(const pctx *c, size_t row, const bt_gpu *g)
{
    const char *rn = g->name;
    long r = (long)row;
    if ((int64_t)g->max_warps_per_sm * g->warp_size != g->max_threads_per_sm)
        return fail_at(c, BT_PARSE, r, rn, "max_warps_per_sm", NULL,
                       "max_warps_per_sm x warp_size (%d x %d) must equal max_threads_per_sm "
                       "(%d)",
                       g->max_warps_per_sm, g->warp_size, g->max_threads_per_sm);
    if (g->max_threads_per_block > g->max_threads_per_sm)
        return fail_at(c, BT_PARSE, r, rn, "max_threads_per_block", NULL,
                       "%d is more than max_threads_per_sm (%d)", g->max_threads_per_block,
                       g->max_threads_per_sm);
    if (g->regs_per_block > g->regs_per_sm)
        return fail_at(c, BT_PARSE, r, rn, "regs_per_block", NULL,
                       "%d is more than regs_per_sm (%d)", g->regs_per_block, g->regs_per_sm);
    if (g->smem_per_block > g->smem_per_block_optin)
        return fail_at(c, BT_PARSE, r, rn, "smem_per_block", NULL,
                       "%lld is more than smem_per_block_optin (%lld)",
                       (long long)g->smem_per_block, (long long)g->smem_per_block_optin);
    if (g->smem_per_block_optin + g->smem_reserved_per_block > g->smem_per_sm)
        return fail_at(c, BT_PARSE, r, rn, "smem_per_block_optin", NULL,
                       "smem_per_block_optin + smem_reserved_per_block (%lld + %lld) is more "
                       "than smem_per_sm (%lld)",
                       (long long)g->smem_per_block_optin, (long long)g->smem_reserved_per_block,
                       (long long)g->smem_per_sm);
    return BT_OK;
}

static bt_status parse_row(const pctx *c, size_t row, const json_t *o, bt_gpu *g)
{
    bt_status st;
    memset(g, 0, sizeof *g);
    if (!json_is_object(o))
        return fail_at(c, BT_PARSE, (long)row, NULL, NULL, NULL,
                       "expected an object (one GPU), got %s", type_name(o));
    if ((st = get_string(c, row, NULL, o, "name", g->name, sizeof g->name, true)))
        return st;
    char key[KEY_MAX];
    if (bt__gpu_name_key(g->name, key, sizeof key)[0] == '\0')
        return fail_at(c, BT_PARSE, (long)row, g->name, "name", NULL,
                       "nothing is left once case, spaces, '-' and '_' are ignored");
    const char *rn = g->name;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (is_known_row_field(k) || k[0] == '_')
            continue;
        const char *near = closest_row_field(k);
        return fail_at(c, BT_PARSE, (long)row, rn, k, NULL,
                       "unknown field%s%s%s (fields starting with '_' are ignored; docs/gpus.md "
                       "lists the fields)",
                       near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
    }
    if ((st = get_aliases(c, row, rn, o, g)) ||
        (st = get_string(c, row, rn, o, "vendor", g->vendor, sizeof g->vendor, true)) ||
        (st = get_string(c, row, rn, o, "arch", g->arch, sizeof g->arch, true)) ||
        (st = get_cc(c, row, rn, o, g)))
        return st;
    for (size_t i = 0; i < BT__ARRAY_LEN(num_fields); i++)
        if ((st = get_number_field(c, row, rn, o, &num_fields[i], g)))
            return st;
    if ((st = get_peaks(c, row, rn, o, g)) ||
        (st = get_string(c, row, rn, o, "source", g->source, sizeof g->source, true)))
        return st;
    return check_row(c, row, g);
}

/* ---------------------------------------------------------------------------------------------
 * Parsing a table.
 * ------------------------------------------------------------------------------------------- */
static const char *same_name_rule =
    "names and aliases compare ignoring case, spaces, '-', '_' and a leading NVIDIA/GeForce/Tesla";

/* Fails if a name or alias of row j is also a name or alias of an earlier row. */
static bt_status check_unique(const pctx *c, const bt_gpu *rows, size_t n)
{
    row_keys *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    bt_status st = BT_OK;
    if (!a || !b) {
        st = BT_NOMEM;
        goto out;
    }
    for (size_t j = 1; j < n && !st; j++) {
        get_row_keys(&rows[j], b);
        for (size_t i = 0; i < j && !st; i++) {
            get_row_keys(&rows[i], a);
            for (size_t x = 0; x < b->n && !st; x++) {
                for (size_t y = 0; y < a->n && !st; y++) {
                    if (strcmp(b->key[x], a->key[y]) != 0)
                        continue;
                    if (x == 0 && y == 0)
                        st = fail_at(c, BT_PARSE, (long)j, NULL, "name", NULL,
                                     "\"%s\" is the name of gpus[%zu] (\"%s\") already (%s)",
                                     rows[j].name, i, rows[i].name, same_name_rule);
                    else
                        st =
                            fail_at(c, BT_PARSE, (long)j, rows[j].name, x == 0 ? "name" : "aliases",
                                    NULL, "\"%s\" also names gpus[%zu] (\"%s\") (%s)", b->raw[x], i,
                                    rows[i].name, same_name_rule);
                }
            }
        }
    }
out:
    free(a);
    free(b);
    return st;
}

/* Parses and validates a whole document. On success *rows_out (malloc'd, the caller's) holds
 * *n_out rows; on failure nothing is allocated and c->diag says why. */
static bt_status parse_table(const pctx *c, bt_gpu **rows_out, size_t *n_out)
{
    *rows_out = NULL;
    *n_out = 0;
    json_error_t err;
    json_t *root = json_loadb(c->text, c->size, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        if (c->diag) {
            bt__diag_clear(c->diag);
            snprintf(c->diag->file, sizeof c->diag->file, "%s", c->name);
            c->diag->line = err.line > 0 ? err.line : 0;
            c->diag->column = err.column > 0 ? err.column : 0;
            bt__diag_set(c->diag, "invalid JSON: %s", err.text);
        }
        return BT_PARSE;
    }
    bt_status st = BT_OK;
    bt_gpu *rows = NULL;
    if (!json_is_object(root)) {
        st = fail_at(c, BT_PARSE, -1, NULL, NULL, NULL,
                     "expected an object {\"format\": \"" FORMAT_NAME "\", \"version\": 1, "
                     "\"gpus\": [...]}");
        goto out;
    }
    const json_t *f = json_object_get(root, "format");
    if (!json_is_string(f) || strcmp(json_string_value(f), FORMAT_NAME) != 0) {
        st = fail_at(c, BT_PARSE, -1, NULL, "format", NULL,
                     "not a blocktune GPU table: expected \"format\": \"" FORMAT_NAME "\"");
        goto out;
    }
    const json_t *ver = json_object_get(root, "version");
    if (!json_is_integer(ver)) {
        st = fail_at(c, BT_PARSE, -1, NULL, "version", NULL, "%s",
                     ver ? "expected an integer" : "missing required field");
        goto out;
    }
    if (json_integer_value(ver) != FORMAT_VERSION) {
        st = fail_at(c, BT_UNSUPPORTED, -1, NULL, "version", NULL,
                     "version %lld is not supported; this blocktune reads version %d",
                     (long long)json_integer_value(ver), FORMAT_VERSION);
        goto out;
    }
    const char *k;
    const json_t *v;
    json_object_foreach(root, k, v)
    {
        if (strcmp(k, "format") && strcmp(k, "version") && strcmp(k, "gpus") && k[0] != '_') {
            st = fail_at(c, BT_PARSE, -1, NULL, k, NULL,
                         "unknown field (expected format, version and gpus; fields starting "
                         "with '_' are ignored)");
            goto out;
        }
    }
    const json_t *gpus = json_object_get(root, "gpus");
    if (!json_is_array(gpus)) {
        st = fail_at(c, BT_PARSE, -1, NULL, "gpus", NULL, "%s",
                     gpus ? "expected an array of GPU objects" : "missing required field");
        goto out;
    }
    size_t n = json_array_size(gpus);
    rows = calloc(n ? n : 1, sizeof *rows);
    if (!rows) {
        st = BT_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n && !st; i++)
        st = parse_row(c, i, json_array_get(gpus, i), &rows[i]);
    if (!st)
        st = check_unique(c, rows, n);
    if (!st) {
        *rows_out = rows;
        *n_out = n;
        rows = NULL;
    }
out:
    free(rows);
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Loading, merging, freeing.
 * ------------------------------------------------------------------------------------------- */
void bt_gpudb_destroy(bt_gpudb *db)
{
    if (!db)
        return;
    for (size_t i = 0; i < db->norigins; i++)
        free(db->origins[i]);
    free(db->origins);
    free(db->origin);
    free(db->rows);
    free(db);
}

bt_status bt__gpudb_load_text(const char *text, size_t size, const char *name, bt_gpudb **out,
                              bt_diag *diag)
{
    if (out)
        *out = NULL;
    bt__diag_clear(diag);
    if (!text || !out) {
        bt__diag_set(diag, "bt__gpudb_load_text: text and out must not be NULL");
        return BT_INVALID_ARG;
    }
    pctx c = {text, size, name ? name : "(string)", diag};
    bt_gpu *rows;
    size_t n;
    bt_status st = parse_table(&c, &rows, &n);
    if (st)
        return st;
    bt_gpudb *db = calloc(1, sizeof *db);
    if (db) {
        db->rows = rows;
        db->n = n;
        db->origin = calloc(n ? n : 1, sizeof *db->origin); /* all 0: origins[0] */
        db->origins = calloc(1, sizeof *db->origins);
        if (db->origins) {
            db->origins[0] = bt__strdup(c.name);
            db->norigins = db->origins[0] ? 1 : 0;
        }
    } else {
        free(rows);
    }
    if (!db || !db->origin || db->norigins != 1) {
        bt_gpudb_destroy(db);
        bt__diag_set(diag, "out of memory loading %s", c.name);
        return BT_NOMEM;
    }
    *out = db;
    return BT_OK;
}

static bool key_in(const char *key, const row_keys *k)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(key, k->key[i]) == 0)
            return true;
    return false;
}

/* Rewrites g->aliases without the aliases whose key is one of k's. */
static void drop_aliases(bt_gpu *g, const row_keys *k)
{
    char kept[sizeof g->aliases] = "";
    size_t used = 0;
    const char *p = g->aliases;
    while (*p) {
        size_t len = strcspn(p, ",");
        char raw[KEY_MAX], key[KEY_MAX];
        size_t m = len < KEY_MAX - 1 ? len : KEY_MAX - 1;
        memcpy(raw, p, m);
        raw[m] = '\0';
        if (len > 0 && !key_in(bt__gpu_name_key(raw, key, sizeof key), k)) {
            if (used)
                kept[used++] = ',';
            memcpy(kept + used, p, len);
            used += len;
            kept[used] = '\0';
        }
        p += len;
        if (*p == ',')
            p++;
    }
    memcpy(g->aliases, kept, sizeof kept);
}

bt_status bt__gpudb_merge_text(bt_gpudb *db, const char *text, size_t size, const char *name,
                               bt_diag *diag)
{
    bt__diag_clear(diag);
    if (!db || !text) {
        bt__diag_set(diag, "bt__gpudb_merge_text: db and text must not be NULL");
        return BT_INVALID_ARG;
    }
    pctx c = {text, size, name ? name : "(string)", diag};
    bt_gpu *add;
    size_t nadd;
    bt_status st = parse_table(&c, &add, &nadd);
    if (st)
        return st;

    /* Build the merged table beside the old one; the old one is replaced only at the end. */
    size_t cap = db->n + nadd;
    bt_gpu *rows = malloc((cap ? cap : 1) * sizeof *rows);
    size_t *origin = malloc((cap ? cap : 1) * sizeof *origin);
    long *from = malloc((cap ? cap : 1) * sizeof *from); /* index in add, or -1 */
    char **origins = malloc((db->norigins + 1) * sizeof *origins);
    char *oname = bt__strdup(c.name);
    row_keys *rk = malloc(sizeof *rk);
    if (!rows || !origin || !from || !origins || !oname || !rk) {
        st = BT_NOMEM;
        bt__diag_set(diag, "out of memory merging %s", c.name);
        goto out;
    }
    if (db->n) {
        memcpy(rows, db->rows, db->n * sizeof *rows);
        memcpy(origin, db->origin, db->n * sizeof *origin);
    }
    size_t n = db->n;
    for (size_t i = 0; i < n; i++)
        from[i] = -1;
    for (size_t a = 0; a < nadd; a++) {
        char ka[KEY_MAX], kr[KEY_MAX];
        bt__gpu_name_key(add[a].name, ka, sizeof ka);
        size_t j = 0;
        while (j < n && strcmp(ka, bt__gpu_name_key(rows[j].name, kr, sizeof kr)) != 0)
            j++;
        if (j == n)
            n++;
        rows[j] = add[a];
        origin[j] = db->norigins;
        from[j] = (long)a;
    }
    /* A new row's alias may not be another row's name; a name or alias it shares with an older
     * row's alias is taken from the older row (the overlay wins). */
    for (size_t j = 0; j < n && !st; j++) {
        if (from[j] < 0)
            continue;
        get_row_keys(&rows[j], rk);
        for (size_t o = 0; o < n && !st; o++) {
            if (from[o] >= 0)
                continue;
            char kn[KEY_MAX];
            bt__gpu_name_key(rows[o].name, kn, sizeof kn);
            for (size_t x = 1; x < rk->n; x++) {
                if (strcmp(rk->key[x], kn) == 0) {
                    st = fail_at(&c, BT_PARSE, from[j], rows[j].name, "aliases", NULL,
                                 "alias \"%s\" is the name of the table's row \"%s\"; to "
                                 "replace that row, give yours its name",
                                 rk->raw[x], rows[o].name);
                    break;
                }
            }
            if (!st)
                drop_aliases(&rows[o], rk);
        }
    }
    if (st)
        goto out;

    memcpy(origins, db->origins, db->norigins * sizeof *origins);
    origins[db->norigins] = oname;
    oname = NULL;
    free(db->origins);
    free(db->rows);
    free(db->origin);
    db->origins = origins;
    db->norigins++;
    db->rows = rows;
    db->origin = origin;
    db->n = n;
    origins = NULL;
    rows = NULL;
    origin = NULL;
out:
    free(add);
    free(rows);
    free(origin);
    free(from);
    free(origins);
    free(oname);
    free(rk);
    return st;
}

/* Reads path into a malloc'd buffer; on failure fills diag and returns NULL with errno kept. */
static char *read_table_file(const char *path, size_t *size, bt_diag *diag)
{
    char *text = bt__read_file(path, size);
    if (!text) {
        int e = errno;
        if (diag) {
            bt__diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            bt__diag_set(diag, "cannot read the GPU table: %s", strerror(e));
        }
        errno = e;
    }
    return text;
}

bt_status bt_gpudb_load_file(const char *path, bt_gpudb **out, bt_diag *diag)
{
    if (out)
        *out = NULL;
    bt__diag_clear(diag);
    if (!path || !out) {
        bt__diag_set(diag, "bt_gpudb_load_file: path and out must not be NULL");
        return BT_INVALID_ARG;
    }
    size_t size;
    char *text = read_table_file(path, &size, diag);
    if (!text)
        return errno == ENOMEM ? BT_NOMEM : BT_IO;
    bt_status st = bt__gpudb_load_text(text, size, path, out, diag);
    free(text);
    return st;
}

bt_status bt_gpudb_merge_file(bt_gpudb *db, const char *path, bt_diag *diag)
{
    bt__diag_clear(diag);
    if (!db || !path) {
        bt__diag_set(diag, "bt_gpudb_merge_file: db and path must not be NULL");
        return BT_INVALID_ARG;
    }
    size_t size;
    char *text = read_table_file(path, &size, diag);
    if (!text)
        return errno == ENOMEM ? BT_NOMEM : BT_IO;
    bt_status st = bt__gpudb_merge_text(db, text, size, path, diag);
    free(text);
    return st;
}

/* Loads `path` if it exists. Returns BT_NOT_FOUND (diag untouched) when it does not. */
static bt_status load_if_present(const char *path, bt_gpudb **out, bt_diag *diag)
{
    size_t size;
    char *text = bt__read_file(path, &size);
    if (!text) {
        if (errno == ENOENT || errno == ENOTDIR)
            return BT_NOT_FOUND;
        bt__diag_clear(diag);
        if (diag) {
            snprintf(diag->file, sizeof diag->file, "%s", path);
            bt__diag_set(diag, "cannot read the GPU table: %s", strerror(errno));
        }
        return BT_IO;
    }
    bt_status st = bt__gpudb_load_text(text, size, path, out, diag);
    free(text);
    return st;
}

bt_status bt_gpudb_load_default(bt_gpudb **out, bt_diag *diag)
{
    if (out)
        *out = NULL;
    bt__diag_clear(diag);
    if (!out) {
        bt__diag_set(diag, "bt_gpudb_load_default: out must not be NULL");
        return BT_INVALID_ARG;
    }
    char path[4096];
    const char *dir = getenv("BLOCKTUNE_DATA_DIR");
    bt_status st;
    if (dir && dir[0]) {
        snprintf(path, sizeof path, "%s/gpus.json", dir);
        if ((st = load_if_present(path, out, diag)) != BT_NOT_FOUND)
            return st;
    }
    snprintf(path, sizeof path, "%s/gpus.json", bt__data_dir());
    if ((st = load_if_present(path, out, diag)) != BT_NOT_FOUND)
        return st;
    size_t size = 0;
    const char *text = bt__embedded("data/gpus.json", &size);
    if (!text) {
        bt__diag_set(diag, "no GPU table: none in $BLOCKTUNE_DATA_DIR or the install directory, "
                           "and none built in");
        return BT_NOT_FOUND;
    }
    return bt__gpudb_load_text(text, size, EMBEDDED_NAME, out, diag);
}

size_t bt_gpudb_count(const bt_gpudb *db)
{
    return db ? db->n : 0;
}

const bt_gpu *bt_gpudb_at(const bt_gpudb *db, size_t i)
{
    return db && i < db->n ? &db->rows[i] : NULL;
}

const char *bt__gpudb_row_origin(const bt_gpudb *db, size_t i)
{
    return db && i < db->n ? db->origins[db->origin[i]] : NULL;
}

const char *bt_gpudb_origin(const bt_gpudb *db, size_t i) { return bt__gpudb_row_origin(db, i); }

/* ---------------------------------------------------------------------------------------------
 * Lookup.
 * ------------------------------------------------------------------------------------------- */
/* Lists the names of the rows marked in `hit` into buf as "A, B, C" (at most `max`, then a
 * count of the rest). */
static void list_rows(const bt_gpudb *db, const bool *hit, size_t max, char *buf, size_t size)
{
    size_t shown = 0, total = 0, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < db->n; i++) {
        if (!hit[i])
            continue;
        total++;
        if (shown < max && used < size) {
            int w = snprintf(buf + used, size - used, "%s%s", shown ? ", " : "", db->rows[i].name);
            if (w > 0)
                used += (size_t)w;
            shown++;
        }
    }
    if (total > shown && used < size)
        snprintf(buf + used, size - used, " and %zu more", total - shown);
}

/* Marks the rows with a key for which match(key, q) holds; returns how many. */
static size_t mark_rows(const bt_gpudb *db, const char *q, bool prefix, bool *hit, row_keys *k)
{
    size_t count = 0;
    for (size_t i = 0; i < db->n; i++) {
        hit[i] = false;
        get_row_keys(&db->rows[i], k);
        for (size_t x = 0; x < k->n && !hit[i]; x++)
            hit[i] = prefix ? strncmp(k->key[x], q, strlen(q)) == 0 : strstr(k->key[x], q) != NULL;
        count += hit[i];
    }
    return count;
}

static size_t first_hit(const bool *hit, size_t n)
{
    size_t i = 0;
    while (i < n && !hit[i])
        i++;
    return i;
}

/* The three rows closest to q (edit distance over names and aliases) as "A, B, C". */
static void closest_rows(const bt_gpudb *db, const char *q, row_keys *k, bool *hit, char *buf,
                         size_t size)
{
    int *dist = malloc((db->n ? db->n : 1) * sizeof *dist);
    buf[0] = '\0';
    if (!dist)
        return;
    for (size_t i = 0; i < db->n; i++) {
        get_row_keys(&db->rows[i], k);
        dist[i] = INT_MAX;
        for (size_t x = 0; x < k->n; x++) {
            int d = bt__edit_distance(q, k->key[x]);
            if (d < dist[i])
                dist[i] = d;
        }
        hit[i] = false;
    }
    size_t used = 0;
    for (int pick = 0; pick < 3; pick++) {
        size_t best = db->n;
        for (size_t i = 0; i < db->n; i++)
            if (!hit[i] && (best == db->n || dist[i] < dist[best]))
                best = i;
        if (best == db->n)
            break;
        hit[best] = true;
        if (used < size) {
            int w =
                snprintf(buf + used, size - used, "%s%s", pick ? ", " : "", db->rows[best].name);
            if (w > 0)
                used += (size_t)w;
        }
    }
    free(dist);
}

/* The row whose canonical name, else alias, has key q (unique in a valid table), or NULL. */
static const bt_gpu *exact_match(const bt_gpudb *db, const char *q, row_keys *k)
{
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < db->n; i++) {
            get_row_keys(&db->rows[i], k);
            for (size_t x = pass ? 1 : 0; x < (pass ? k->n : 1); x++)
                if (strcmp(k->key[x], q) == 0)
                    return &db->rows[i];
        }
    }
    return NULL;
}

const bt_gpu *bt__gpudb_find_exact(const bt_gpudb *db, const char *name)
{
    char q[KEY_MAX];
    if (!db || !name || !bt__gpu_name_key(name, q, sizeof q)[0])
        return NULL;
    row_keys *k = malloc(sizeof *k);
    if (!k)
        return NULL;
    const bt_gpu *g = exact_match(db, q, k);
    free(k);
    return g;
}

bt_status bt_gpudb_find(const bt_gpudb *db, const char *name, const bt_gpu **out, bt_diag *diag)
{
    if (out)
        *out = NULL;
    bt__diag_clear(diag);
    if (!db || !name || !out) {
        bt__diag_set(diag, "bt_gpudb_find: db, name and out must not be NULL");
        return BT_INVALID_ARG;
    }
    char q[KEY_MAX];
    bt__gpu_name_key(name, q, sizeof q);
    row_keys *k = malloc(sizeof *k);
    bool *hit = calloc(db->n ? db->n : 1, sizeof *hit);
    bt_status st = BT_OK;
    if (!k || !hit) {
        st = BT_NOMEM;
        goto out;
    }
    if (q[0]) {
        if ((*out = exact_match(db, q, k)))
            goto out;
        /* Loose: a unique prefix, else a unique substring (two characters at least). */
        for (int pass = 0; pass < 2 && strlen(q) >= 2; pass++) {
            size_t count = mark_rows(db, q, pass == 0, hit, k);
            if (count == 1) {
                *out = &db->rows[first_hit(hit, db->n)];
                goto out;
            }
            if (count > 1) {
                char list[512];
                list_rows(db, hit, 6, list, sizeof list);
                bt__diag_set(diag, "ambiguous GPU name '%s': it matches %s; give more of the name",
                             name, list);
                st = BT_NOT_FOUND;
                goto out;
            }
        }
    }
    char list[512];
    closest_rows(db, q, k, hit, list, sizeof list);
    if (list[0])
        bt__diag_set(diag, "unknown GPU '%s'; closest: %s", name, list);
    else
        bt__diag_set(diag, "unknown GPU '%s'; the GPU table is empty", name);
    st = BT_NOT_FOUND;
out:
    if (st == BT_NOMEM)
        bt__diag_set(diag, "out of memory looking up '%s'", name);
    free(k);
    free(hit);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * JSON form.
 * ------------------------------------------------------------------------------------------- */
static json_t *number_json(double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        return json_integer((json_int_t)v);
    return json_real(v);
}

json_t *bt__gpu_to_json(const bt_gpu *g)
{
    json_t *o = json_object();
    json_t *aliases = json_array();
    json_t *peaks = json_object();
    int bad = !o || !aliases || !peaks;
    if (bad) {
        json_decref(o);
        json_decref(aliases);
        json_decref(peaks);
        return NULL;
    }
    bad |= json_object_set_new(o, "name", json_string(g->name));
    row_keys *k = malloc(sizeof *k);
    if (k) {
        get_row_keys(g, k);
        for (size_t x = 1; x < k->n; x++)
            bad |= json_array_append_new(aliases, json_string(k->raw[x]));
        free(k);
    } else {
        bad = 1;
    }
    bad |= json_object_set_new(o, "aliases", aliases);
    bad |= json_object_set_new(o, "vendor", json_string(g->vendor));
    bad |= json_object_set_new(o, "arch", json_string(g->arch));
    if (g->cc_major || g->cc_minor) {
        char cc[32];
        snprintf(cc, sizeof cc, "%d.%d", g->cc_major, g->cc_minor);
        bad |= json_object_set_new(o, "compute_capability", json_string(cc));
    }
    for (size_t i = 0; i < BT__ARRAY_LEN(num_fields); i++) {
        const field_spec *f = &num_fields[i];
        const void *p = (const char *)g + f->off;
        json_t *v = f->type == F_INT   ? json_integer(*(const int *)p)
                    : f->type == F_I64 ? json_integer((json_int_t) * (const int64_t *)p)
                                       : number_json(*(const double *)p);
        bad |= json_object_set_new(o, f->key, v);
    }
    for (int kind = 0; kind < BT_PEAK__COUNT; kind++)
        bad |= json_object_set_new(peaks, peak_names[kind], number_json(g->peak_tflops[kind]));
    bad |= json_object_set_new(o, "peak_tflops", peaks);
    bad |= json_object_set_new(o, "source", json_string(g->source));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *bt__gpudb_to_json(const bt_gpudb *db, const bt_gpu *only)
{
    json_t *doc = json_object();
    json_t *arr = json_array();
    int bad = !doc || !arr;
    if (bad) {
        json_decref(doc);
        json_decref(arr);
        return NULL;
    }
    bad |= json_object_set_new(doc, "format", json_string(FORMAT_NAME));
    bad |= json_object_set_new(doc, "version", json_integer(FORMAT_VERSION));
    bad |= json_object_set_new(doc, "gpus", arr);
    if (only) {
        bad |= json_array_append_new(arr, bt__gpu_to_json(only));
    } else {
        for (size_t i = 0; i < bt_gpudb_count(db); i++)
            bad |= json_array_append_new(arr, bt__gpu_to_json(&db->rows[i]));
    }
    if (bad) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

bt_status bt_gpudb_write_json(const bt_gpudb *db, const bt_gpu *only, FILE *f)
{
    if (!db || !f)
        return BT_INVALID_ARG;
    json_t *doc = bt__gpudb_to_json(db, only);
    if (!doc)
        return BT_NOMEM;
    int rc = json_dumpf(doc, f, BT__GPUDB_DUMP_FLAGS);
    json_decref(doc);
    if (rc != 0 || fputc('\n', f) == EOF)
        return BT_IO;
    return BT_OK;
}
