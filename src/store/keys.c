/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keys.c — problem keys (canonical text, JSON, the nearest-size distance), the decisions log
 * (BLOCKTUNE_LOG) and the tuning modes (tune, wisdom-only, retune).
 */
#include "store/store.h"

#include "core/util.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void bt__keyvals_format(const bt__keyvals *k, char *buf, size_t size)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->n && at < size; i++)
        at += (size_t)snprintf(buf + at, size - at, "%s%s=%lld", i ? "," : "", k->names[i],
                               (long long)k->v[i]);
    if (k->dtype[0] && at < size)
        snprintf(buf + at, size - at, "%sdtype=%s", k->n ? "," : "", k->dtype);
}

char *bt__keyvals_json(const bt__keyvals *k)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    for (int i = 0; i < k->n; i++)
        json_object_set_new(o, k->names[i], json_integer((json_int_t)k->v[i]));
    if (k->dtype[0])
        json_object_set_new(o, "dtype", json_string(k->dtype));
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return s;
}

bt_status bt__keyvals_parse(const char *text, bt__keyvals *out)
{
    memset(out, 0, sizeof *out);
    if (!text)
        return BT_PARSE;
    const char *p = text;
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq || eq == p)
            return BT_PARSE;
        const char *end = strchr(eq, ',');
        if (!end)
            end = eq + strlen(eq);
        size_t nlen = (size_t)(eq - p), vlen = (size_t)(end - eq - 1);
        if (nlen == 5 && !strncmp(p, "dtype", 5)) {
            if (vlen == 0 || vlen >= sizeof out->dtype || out->dtype[0])
                return BT_PARSE;
            memcpy(out->dtype, eq + 1, vlen);
        } else {
            if (nlen >= BT_NAME_MAX || out->n >= BT__KEY_MAX || vlen == 0 || vlen > 20)
                return BT_PARSE;
            char num[24];
            memcpy(num, eq + 1, vlen);
            num[vlen] = '\0';
            char *e;
            errno = 0;
            long long v = strtoll(num, &e, 10);
            if (*e || errno)
                return BT_PARSE;
            memcpy(out->names[out->n], p, nlen);
            out->names[out->n][nlen] = '\0';
            out->v[out->n++] = v;
        }
        p = *end ? end + 1 : end;
    }
    return out->n || out->dtype[0] ? BT_OK : BT_PARSE;
}

bt__kdist bt__keyvals_distance(const bt__keyvals *a, const bt__keyvals *b)
{
    bt__kdist r = {-1, 0, 0, -1};
    if (a->n != b->n || strcmp(a->dtype, b->dtype) != 0)
        return r;
    double logd = 0;
    int ndiff = 0;
    for (int i = 0; i < a->n; i++) {
        if (strcmp(a->names[i], b->names[i]) != 0)
            return r;
        double x = a->v[i] < 1 ? 1.0 : (double)a->v[i];
        double y = b->v[i] < 1 ? 1.0 : (double)b->v[i];
        logd += fabs(log2(x) - log2(y));
        if (a->v[i] != b->v[i] && ndiff++ == 0) {
            r.var = i;
            r.value = b->v[i];
            r.d = fabs((double)a->v[i] - (double)b->v[i]);
        }
    }
    r.tier = ndiff > 1;
    if (r.tier)
        r.d = logd, r.var = -1, r.value = 0;
    return r;
}

bool bt__kdist_closer(const bt__kdist *x, const bt__kdist *y)
{
    if (x->tier < 0)
        return false;
    if (y->tier < 0 || x->tier != y->tier)
        return y->tier < 0 || x->tier < y->tier;
    if (x->d != y->d)
        return x->d < y->d;
    return x->tier == 0 && (x->var < y->var || (x->var == y->var && x->value < y->value));
}

/* ---------------------------------------------------------------------------------------------
 * Decisions log
 * ------------------------------------------------------------------------------------------- */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static bool env_log(void)
{
    const char *v = getenv("BLOCKTUNE_LOG");
    return v && v[0] && strcmp(v, "0") != 0;
}

bool bt__decision_log_enabled(void)
{
    bt_log_fn fn;
    void *user;
    return bt__setting_log(&fn, &user) || env_log();
}

void bt__decision_log(const char *fmt, ...)
{
    bt_log_fn fn;
    void *user;
    if (bt__setting_log(&fn, &user)) { /* the embedder's callback (bt_set_log_callback) */
        char line[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof line, fmt, ap);
        va_end(ap);
        fn(line, user);
        return;
    }
    if (!env_log())
        return;
    const char *v = getenv("BLOCKTUNE_LOG");
    pthread_mutex_lock(&log_lock);
    FILE *f = stderr;
    if (strchr(v, '/')) {
        f = fopen(v, "a");
        if (!f)
            f = stderr;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("blocktune: ", f);
    vfprintf(f, fmt, ap);
    fputc('\n', f);
    va_end(ap);
    if (f != stderr)
        fclose(f);
    else
        fflush(f);
    pthread_mutex_unlock(&log_lock);
}

/* ---------------------------------------------------------------------------------------------
 * Modes
 * ------------------------------------------------------------------------------------------- */
bt_status bt__tune_mode_parse(const char *text, bt_tune_mode *out, bt_diag *diag)
{
    static const char *names[] = {"tune", "wisdom-only", "retune"};
    for (int i = 0; i < 3; i++) {
        if (text && bt__streq_nocase(text, names[i])) {
            *out = (bt_tune_mode)i;
            return BT_OK;
        }
    }
    bt__diag_set(diag, "unknown mode '%s' (modes: tune, wisdom-only, retune)", text ? text : "");
    return BT_INVALID_ARG;
}

bt_tune_mode bt__tune_mode_from_env(void)
{
    int set = bt__setting_mode();
    if (set >= 0)
        return (bt_tune_mode)set;
    const char *v = getenv("BLOCKTUNE_MODE");
    bt_tune_mode m = BT_MODE_TUNE;
    if (v && v[0] && bt__tune_mode_parse(v, &m, NULL) != BT_OK)
        m = BT_MODE_TUNE; /* refused by bt__tune_mode_env_check where a kernel is created */
    return m;
}

bt_status bt__tune_mode_env_check(bt_diag *diag)
{
    const char *v = getenv("BLOCKTUNE_MODE");
    bt_tune_mode m;
    if (bt__setting_mode() >= 0 || !v || !v[0] || bt__tune_mode_parse(v, &m, NULL) == BT_OK)
        return BT_OK;
    bt__diag_set(diag, "BLOCKTUNE_MODE=%.100s is not a mode; the modes are tune, wisdom-only and "
                       "retune (or leave BLOCKTUNE_MODE unset for tune)", v);
    return BT_INVALID_ARG;
}
