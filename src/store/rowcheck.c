/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rowcheck.c — what a measurement row must hold before anything trusts it (see
 * bt__measurement_check in store.h): a store is a file that other programs, old versions, a
 * damaged disk or a person with the sqlite3 shell may have written, so every row read back is
 * checked here, and a row that fails is treated as absent.
 */
#include "store/store.h"

#include "core/cfgstatus.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool fail(char *why, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(char *why, size_t size, const char *fmt, ...)
{
    if (why && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, size, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A time that may be unknown (< 0 is "not recorded", as bt__measurement_init sets it) but, when
 * known, is a finite number above 0 (or >= 0 with allow_zero). */
static bool time_ok(double v, bool allow_zero)
{
    if (v == -1.0)
        return true;
    return isfinite(v) && (allow_zero ? v >= 0 : v > 0);
}

static bool config_ok(const char *text, char *why, size_t size)
{
    json_error_t err;
    json_t *o = json_loads(text ? text : "", 0, &err);
    bool ok = json_is_object(o) && json_object_size(o) > 0;
    const char *k;
    json_t *v;
    if (ok)
        json_object_foreach(o, k, v) if (!json_is_integer(v)) ok = false;
    json_decref(o);
    if (!ok)
        return fail(why, size, "config %.120s is not a JSON object of integers",
                    text ? text : "(none)");
    return true;
}

bool bt__measurement_check(const bt__measurement *m, bool winner, char *why, size_t size)
{
    if (why && size)
        why[0] = '\0';
    bt__cfg_status st = bt__cfg_status_parse(m->status);
    if (!bt__cfg_status_final(st))
        return fail(why, size, "status '%.40s' is not one blocktune writes",
                    m->status ? m->status : "");
    if (winner && st != BT__CS_OK)
        return fail(why, size, "a winner whose measurement has status %s", m->status);
    if (!m->key || !m->key[0])
        return fail(why, size, "the key is empty");
    if (!config_ok(m->config_json, why, size))
        return false;
    if (!(m->timestamp >= 0) || !isfinite(m->timestamp))
        return fail(why, size, "timestamp %g is not a time", m->timestamp);
    if (!time_ok(m->compile_ms, true))
        return fail(why, size, "compile_ms %g is not a duration", m->compile_ms);
    if (!time_ok(m->max_rel_err, true))
        return fail(why, size, "max_rel_err %g is not a finite number >= 0", m->max_rel_err);
    /* extra_json is read by the exports, which take a malformed one for absent; here only its
     * shape is looked at (parsing every foreign record on every read would double the cost) */
    if (m->extra_json) {
        size_t n = strlen(m->extra_json);
        if (n < 2 || m->extra_json[0] != '{' || m->extra_json[n - 1] != '}')
            return fail(why, size, "extra_json is not a JSON object");
    }
    if (strcmp(m->status, "ok") != 0)
        return true; /* a failure's times are never used */
    if (!(m->median_ms > 0) || !isfinite(m->median_ms))
        return fail(why, size, "median_ms %g is not a positive time", m->median_ms);
    const struct {
        const char *name;
        double v;
        bool zero;
    } t[] = {{"p20_ms", m->p20_ms, false},
             {"p80_ms", m->p80_ms, false},
             {"min_ms", m->min_ms, false},
             {"mean_ms", m->mean_ms, false},
             {"mad_ms", m->mad_ms, true}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        if (!time_ok(t[i].v, t[i].zero))
            return fail(why, size, "%s %g is not a %s time", t[i].name, t[i].v,
                        t[i].zero ? "finite non-negative" : "positive");
    if (m->p20_ms >= 0 && m->p20_ms > m->median_ms)
        return fail(why, size, "p20_ms %g is above the median %g", m->p20_ms, m->median_ms);
    if (m->p80_ms >= 0 && m->p80_ms < m->median_ms)
        return fail(why, size, "p80_ms %g is below the median %g", m->p80_ms, m->median_ms);
    if (m->min_ms >= 0 && m->min_ms > m->median_ms)
        return fail(why, size, "min_ms %g is above the median %g", m->min_ms, m->median_ms);
    if (m->reps != -1 && m->reps < 1)
        return fail(why, size, "reps %lld is not a count of runs", (long long)m->reps);
    return true;
}
