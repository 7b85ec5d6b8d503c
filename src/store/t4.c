/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t4.c — a store key's measurements as T4 results, the community's auto-tuning results format
 * (the schema Kernel Tuner ships as kernel_tuner/schema/T4/1.0.0/results-schema.json; a copy with
 * its licence is in tests/data/t4/, and a test validates what this writes against it).
 *
 * One result per stored row: `configuration` (the parameters), `times` (compilation_time,
 * runtimes: the recorded runs of a Kernel Tuner entry, and its framework, search_algorithm,
 * validation and benchmark times where recorded), `invalidity` (correct, compile, runtime,
 * timeout, correctness, constraints from the row's status), `correctness` (1 when the output was
 * verified, else 0), `measurements` (name, value, unit: blocktune's median, p20, p80, min, MAD,
 * mean and reps, or a Kernel Tuner entry's time and metrics), `objectives` (what the winner was
 * chosen by: blocktune's median, or the entry's objective), `timestamp`.
 */
#include "store/t4.h"

#include "core/cfgstatus.h"
#include "core/util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* T4's "invalidity" of a stored status. */
static const char *invalidity(const char *status)
{
    switch (bt__cfg_status_parse(status)) {
    case BT__CS_OK: return "correct";
    case BT__CS_COMPILE: return "compile";
    case BT__CS_TIMEOUT: return "timeout";
    case BT__CS_WRONG: return "correctness";
    case BT__CS_INVALID: return "constraints";
    default: return "runtime";
    }
}

static void add_measurement(json_t *arr, const char *name, json_t *value, const char *unit)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "value", value);
    json_object_set_new(o, "unit", json_string(unit));
    json_array_append_new(arr, o);
}

static void add_ms(json_t *arr, const char *name, double v)
{
    if (v >= 0)
        add_measurement(arr, name, json_real(v), "ms");
}

/* A Kernel Tuner entry's fields: its timings into times, its time and metrics into meas. */
static void from_kt_entry(json_t *entry, json_t *times, json_t *meas, json_t *res)
{
    static const struct {
        const char *kt, *t4;
    } timing[] = {{"compile_time", "compilation_time"}, {"framework_time", "framework"},
                  {"strategy_time", "search_algorithm"}, {"verification_time", "validation"},
                  {"benchmark_time", "benchmark"}};
    for (size_t i = 0; i < BT__ARRAY_LEN(timing); i++) {
        json_t *v = json_object_get(entry, timing[i].kt);
        if (json_is_number(v))
            json_object_set(times, timing[i].t4, v);
    }
    json_t *runs = json_object_get(entry, "times");
    if (json_is_array(runs))
        json_object_set(times, "runtimes", runs);
    json_t *stamp = json_object_get(entry, "timestamp");
    if (json_is_string(stamp))
        json_object_set(res, "timestamp", stamp);
    json_t *conf = json_object_get(res, "configuration");
    const char *k;
    json_t *v;
    json_object_foreach(entry, k, v)
    {
        bool skip = json_object_get(conf, k) || !strcmp(k, "times") || !strcmp(k, "timestamp") ||
                    json_is_string(v); /* a failure in place of the time */
        for (size_t i = 0; i < BT__ARRAY_LEN(timing) && !skip; i++)
            skip = !strcmp(k, timing[i].kt);
        if (!skip)
            add_measurement(meas, k, json_incref(v), !strncmp(k, "time", 4) ? "ms" : "");
    }
}

static json_t *result_of(const bt__measurement *m)
{
    json_t *res = json_object();
    json_t *times = json_object();
    json_t *meas = json_array();
    json_t *conf = json_loads(m->config_json, 0, NULL); /* checked when read */
    json_object_set_new(res, "configuration", conf ? conf : json_object());
    json_t *x = m->extra_json ? json_loads(m->extra_json, 0, NULL) : NULL;
    json_t *entry = json_object_get(x, "kt_entry");
    bool ok = !strcmp(m->status, "ok");
    if (json_is_object(entry)) {
        from_kt_entry(entry, times, meas, res);
    } else {
        if (m->compile_ms >= 0)
            json_object_set_new(times, "compilation_time", json_real(m->compile_ms));
        if (ok) {
            add_ms(meas, "median", m->median_ms);
            add_ms(meas, "p20", m->p20_ms);
            add_ms(meas, "p80", m->p80_ms);
            add_ms(meas, "min", m->min_ms);
            add_ms(meas, "mad", m->mad_ms);
            add_ms(meas, "time", m->mean_ms); /* the mean, as Kernel Tuner names it */
            if (m->reps > 0)
                add_measurement(meas, "reps", json_integer(m->reps), "");
            if (m->max_rel_err >= 0)
                add_measurement(meas, "max_rel_err", json_real(m->max_rel_err), "");
        }
        char stamp[40];
        time_t t = (time_t)m->timestamp;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_set_new(res, "timestamp", json_string(stamp));
    }
    if (!json_object_get(times, "runtimes"))
        json_object_set_new(times, "runtimes", json_array());
    json_object_set_new(res, "times", times);
    json_object_set_new(res, "invalidity", json_string(invalidity(m->status)));
    json_object_set_new(res, "correctness", json_integer(ok ? 1 : 0));
    json_object_set_new(res, "measurements", meas);
    json_t *obj = json_array();
    json_array_append_new(obj, json_string(json_is_object(entry) ? "time" : "median"));
    json_object_set_new(res, "objectives", obj);
    json_decref(x);
    return res;
}

static int add_row(const bt__measurement *m, void *user)
{
    json_t *res = result_of(m);
    return res && json_array_append_new(user, res) == 0 ? 0 : BT_NOMEM;
}

bt_status bt__t4_export(bt__store *s, const char *kernel, const char *device, const char *key,
                        const char *path, int *nrows, bt_diag *diag)
{
    *nrows = 0;
    json_t *results = json_array();
    if (!results)
        return BT_NOMEM;
    bt_status st = bt__store_rows(s, kernel, device, key, add_row, results, diag);
    if (st == BT_OK && json_array_size(results) == 0) {
        bt__diag_set(diag, "%s holds no measurements of %s for key %s%s%s", bt__store_path(s),
                     kernel, key, device ? " on " : "", device ? device : "");
        st = BT_NOT_FOUND;
    }
    json_t *doc = json_object();
    json_t *meta = json_object();
    json_object_set_new(meta, "timeunit", json_string("milliseconds"));
    json_object_set_new(doc, "schema_version", json_string(BT__T4_VERSION));
    json_object_set_new(doc, "results", results);
    json_object_set_new(doc, "metadata", meta);
    char *text = st == BT_OK ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    *nrows = st == BT_OK ? (int)json_array_size(results) : 0;
    json_decref(doc);
    if (st == BT_OK && !text)
        st = BT_NOMEM;
    if (st == BT_OK && !strcmp(path, "-"))
        printf("%s\n", text);
    else if (st == BT_OK)
        st = bt__write_file_atomic(path, text, strlen(text), diag);
    free(text);
    return st;
}
