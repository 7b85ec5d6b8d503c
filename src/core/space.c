/* SPDX-License-Identifier: Apache-2.0 */
/*
 * space.c — parameter value expansion and index <-> config decoding for config spaces, and the
 * one formatter of a config (as text and as JSON) that reports, plans, the store and wisdom use.
 */
#include "core/space.h"

#include "core/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bt__space_init(bt__space *s)
{
    memset(s, 0, sizeof *s);
    s->total = 1;
}

void bt__space_clear(bt__space *s)
{
    for (int i = 0; i < s->nparams; i++)
        free(s->params[i].values);
    bt__space_init(s);
}

static void recompute_total(bt__space *s)
{
    uint64_t t = 1;
    for (int i = 0; i < s->nparams; i++) {
        if (__builtin_mul_overflow(t, (uint64_t)s->params[i].nvalues, &t)) {
            s->total = UINT64_MAX;
            return;
        }
    }
    s->total = t;
}

bt_status bt__space_add_list(bt__space *s, const char *name, const int64_t *values, int n,
                             bt_diag *diag)
{
    if (s->nparams >= BT_MAX_PARAMS) {
        bt__diag_set(diag, "too many parameters (at most %d)", BT_MAX_PARAMS);
        return BT_INVALID_ARG;
    }
    if (!name || !name[0] || strlen(name) >= BT_NAME_MAX) {
        bt__diag_set(diag, "parameter name must be 1..%d characters", BT_NAME_MAX - 1);
        return BT_INVALID_ARG;
    }
    if (bt__space_find(s, name) >= 0) {
        bt__diag_set(diag, "parameter '%s' defined twice", name);
        return BT_INVALID_ARG;
    }
    if (n <= 0) {
        bt__diag_set(diag, "parameter '%s' has no values", name);
        return BT_INVALID_ARG;
    }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (values[i] == values[j]) {
                bt__diag_set(diag, "parameter '%s' lists the value %lld twice", name,
                             (long long)values[i]);
                return BT_INVALID_ARG;
            }
    int64_t *v = malloc(sizeof *v * (size_t)n);
    if (!v)
        return BT_NOMEM;
    memcpy(v, values, sizeof *v * (size_t)n);
    bt__param *p = &s->params[s->nparams++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->values = v;
    p->nvalues = n;
    recompute_total(s);
    return BT_OK;
}

#define BT__MAX_EXPANDED 65536

bt_status bt__space_add_pow2(bt__space *s, const char *name, int64_t lo, int64_t hi, bt_diag *diag)
{
    if (lo < 1 || (lo & (lo - 1)) != 0 || hi < lo) {
        bt__diag_set(diag, "pow2 range of '%s' needs a power of two lo >= 1 and hi >= lo (got %lld..%lld)",
                     name, (long long)lo, (long long)hi);
        return BT_INVALID_ARG;
    }
    int64_t vals[64];
    int n = 0;
    for (int64_t v = lo; v <= hi && n < 64; v *= 2) {
        vals[n++] = v;
        if (v > INT64_MAX / 2)
            break;
    }
    return bt__space_add_list(s, name, vals, n, diag);
}

bt_status bt__space_add_range(bt__space *s, const char *name, int64_t lo, int64_t hi, int64_t step,
                              bt_diag *diag)
{
    if (step <= 0 || hi < lo) {
        bt__diag_set(diag, "range of '%s' needs step > 0 and hi >= lo (got %lld..%lld step %lld)",
                     name, (long long)lo, (long long)hi, (long long)step);
        return BT_INVALID_ARG;
    }
    uint64_t count = (uint64_t)(hi - lo) / (uint64_t)step + 1;
    if (count > BT__MAX_EXPANDED) {
        bt__diag_set(diag, "range of '%s' has %llu values (at most %d)", name,
                     (unsigned long long)count, BT__MAX_EXPANDED);
        return BT_INVALID_ARG;
    }
    int64_t *vals = malloc(sizeof *vals * count);
    if (!vals)
        return BT_NOMEM;
    for (uint64_t i = 0; i < count; i++)
        vals[i] = lo + (int64_t)i * step;
    bt_status st = bt__space_add_list(s, name, vals, (int)count, diag);
    free(vals);
    return st;
}

int bt__space_find(const bt__space *s, const char *name)
{
    for (int i = 0; i < s->nparams; i++)
        if (bt__streq_nocase(s->params[i].name, name))
            return i;
    return -1;
}

void bt__space_config_at(const bt__space *s, uint64_t index, bt_config *out)
{
    out->nparams = s->nparams;
    for (int i = s->nparams - 1; i >= 0; i--) {
        uint64_t n = (uint64_t)s->params[i].nvalues;
        out->v[i] = s->params[i].values[index % n];
        index /= n;
    }
    for (int i = s->nparams; i < BT_MAX_PARAMS; i++)
        out->v[i] = 0;
}

int bt__space_value_pos(const bt__space *s, int p, int64_t v)
{
    const bt__param *pp = &s->params[p];
    for (int i = 0; i < pp->nvalues; i++)
        if (pp->values[i] == v)
            return i;
    return -1;
}

bool bt__space_index_of(const bt__space *s, const bt_config *c, uint64_t *index)
{
    uint64_t idx = 0;
    for (int i = 0; i < s->nparams; i++) {
        int pos = bt__space_value_pos(s, i, c->v[i]);
        if (pos < 0)
            return false;
        idx = idx * (uint64_t)s->params[i].nvalues + (uint64_t)pos;
    }
    *index = idx;
    return true;
}

char *bt__config_format(const bt__space *s, const bt_config *c, const char *sep, char *buf,
                        size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nparams && n < size; i++) {
        int w = snprintf(buf + n, size - n, "%s%s=%lld", i ? sep : "", s->params[i].name,
                         (long long)c->v[i]);
        if (w < 0)
            break;
        n += (size_t)w;
    }
    return buf;
}

json_t *bt__config_to_json(const bt__space *s, const bt_config *c)
{
    json_t *o = json_object();
    for (int i = 0; o && i < s->nparams; i++)
        if (json_object_set_new(o, s->params[i].name, json_integer(c->v[i])) != 0) {
            json_decref(o);
            return NULL;
        }
    return o;
}

char *bt__config_json(const bt__space *s, const bt_config *c)
{
    json_t *o = bt__config_to_json(s, c);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    return text;
}
