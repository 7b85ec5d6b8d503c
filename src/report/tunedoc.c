/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tunedoc.c — the report's reading of one tune document (docs/tune-json.md): numbers and strings
 * with defaults, a config's text, the winner and runner-up among the configs, the throughput unit
 * and efficiency, and the rule that eliminated a config.
 */
#include "report/rep_int.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double bt__jnum(const json_t *o, const char *key, double dflt)
{
    json_t *x = json_object_get(o, key);
    return json_is_number(x) ? json_number_value(x) : dflt;
}

const char *bt__jstr(const json_t *o, const char *key, const char *dflt)
{
    json_t *x = json_object_get(o, key);
    return json_is_string(x) ? json_string_value(x) : dflt;
}

void bt__jobj_text(const json_t *o, const char *sep, char *buf, size_t size)
{
    size_t off = 0;
    const char *k;
    json_t *x;
    buf[0] = '\0';
    json_object_foreach((json_t *)o, k, x) {
        if (off >= size)
            break;
        int w;
        if (json_is_integer(x))
            w = snprintf(buf + off, size - off, "%s%s=%lld", off ? sep : "", k,
                         (long long)json_integer_value(x));
        else if (json_is_real(x))
            w = snprintf(buf + off, size - off, "%s%s=%g", off ? sep : "", k, json_real_value(x));
        else if (json_is_string(x))
            w = snprintf(buf + off, size - off, "%s%s=%s", off ? sep : "", k, json_string_value(x));
        else
            w = snprintf(buf + off, size - off, "%s%s=?", off ? sep : "", k);
        if (w > 0)
            off += (size_t)w;
    }
}

/* The index of the config whose "config" equals cfg, or -1. */
static long find_config(const json_t *configs, const json_t *cfg)
{
    if (!cfg)
        return -1;
    for (size_t i = 0; i < json_array_size(configs); i++)
        if (json_equal(json_object_get(json_array_get(configs, i), "config"), (json_t *)cfg))
            return (long)i;
    return -1;
}

void bt__tview_init(bt__tview *v, const json_t *doc, size_t index)
{
    memset(v, 0, sizeof *v);
    v->doc = doc;
    v->configs = json_object_get(doc, "configs");
    v->n = json_array_size(v->configs);
    v->roof = json_object_get(doc, "roofline");
    v->winner = json_object_get(doc, "winner");
    v->prov = json_object_get(doc, "provenance");
    v->search = json_object_get(doc, "search");
    v->elim = json_object_get(doc, "eliminated");
    v->kernel = bt__jstr(doc, "kernel", "?");
    v->device = bt__jstr(v->prov, "device", "unknown device");
    v->dtype = bt__jstr(json_object_get(doc, "problem"), "dtype", "");
    bt__jobj_text(json_object_get(doc, "problem"), " ", v->problem, sizeof v->problem);
    snprintf(v->id, sizeof v->id, "t%zu", index + 1);
    v->winner_i = json_is_object(v->winner) ? find_config(v->configs, json_object_get(v->winner, "config")) : -1;
    v->runner_i = json_is_object(v->winner) ? find_config(v->configs, json_object_get(v->winner, "runner_up")) : -1;
    v->flops = bt__jnum(v->roof, "flops", 0);
    v->bytes = bt__jnum(v->roof, "bytes", 0);
    v->intensity = bt__jnum(v->roof, "intensity", v->bytes > 0 ? v->flops / v->bytes : 0);
    v->peak_tflops = bt__jnum(v->roof, "peak_tflops", 0);
    v->bw_gbps = bt__jnum(v->roof, "bandwidth_gbps", 0);
    v->floor_us = bt__jnum(v->roof, "floor_us", 0);
    double ridge = bt__jnum(v->roof, "ridge", 0);
    const char *bound = bt__jstr(v->roof, "bound", "");
    if (ridge > 0 && v->floor_us > 0 && !(v->bw_gbps > 0 && v->peak_tflops > 0)) {
        /* an older document (no peaks): the floor is the bound side's time, so its rate follows,
         * and the ridge (peak / bandwidth) gives the other */
        if (!strcmp(bound, "memory") && v->bytes > 0) {
            v->bw_gbps = v->bytes / (v->floor_us * 1e-6) / 1e9;
            v->peak_tflops = ridge * v->bw_gbps / 1e3;
        } else if (!strcmp(bound, "compute") && v->flops > 0) {
            v->peak_tflops = v->flops / (v->floor_us * 1e-6) / 1e12;
            v->bw_gbps = v->peak_tflops * 1e3 / ridge;
        }
    }
    v->known = ridge > 0 && v->bw_gbps > 0 && v->peak_tflops > 0 && v->floor_us > 0;
    v->mem = v->known ? !strcmp(bound, "memory") : v->intensity < 10;
}

double bt__tview_thru(const bt__tview *v, double median_ms)
{
    if (!(median_ms > 0))
        return 0;
    return v->mem ? v->bytes / (median_ms * 1e-3) / 1e9 : v->flops / (median_ms * 1e-3) / 1e12;
}

const char *bt__tview_unit(const bt__tview *v)
{
    return v->mem ? "GB/s" : "TFLOP/s";
}

double bt__tview_eff(const bt__tview *v, double median_ms)
{
    return v->known && median_ms > 0 ? v->floor_us / (median_ms * 1e3) : -1;
}

const json_t *bt__tview_cfg(const bt__tview *v, size_t i)
{
    return json_array_get(v->configs, i);
}

bool bt__tview_ok(const bt__tview *v, size_t i)
{
    return !strcmp(bt__jstr(bt__tview_cfg(v, i), "status", ""), "ok");
}

double bt__tview_median(const bt__tview *v, size_t i)
{
    return bt__jnum(bt__tview_cfg(v, i), "median_ms", NAN);
}

size_t *bt__tview_ok_order(const bt__tview *v, size_t *m)
{
    *m = 0;
    size_t *o = malloc(sizeof *o * (v->n ? v->n : 1));
    if (!o)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (bt__tview_ok(v, i))
            o[(*m)++] = i;
    for (size_t a = 1; a < *m; a++) /* stable: equal medians keep the measured order */
        for (size_t b = a; b > 0 && bt__tview_median(v, o[b]) < bt__tview_median(v, o[b - 1]); b--) {
            size_t t = o[b];
            o[b] = o[b - 1];
            o[b - 1] = t;
        }
    return o;
}

void bt__reason_rule(const char *reasons, char *buf, size_t size)
{
    const char *s = reasons ? reasons : "";
    size_t len = strcspn(s, "\n");
    /* "... (smem_limit)": the rule's name */
    if (len > 2 && s[len - 1] == ')') {
        size_t open = len - 1;
        while (open > 0 && s[open - 1] != '(')
            open--;
        bool name = open > 0 && open < len - 1;
        for (size_t i = open; name && i < len - 1; i++)
            name = islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_';
        if (name) {
            snprintf(buf, size, "%.*s", (int)(len - 1 - open), s + open);
            return;
        }
    }
    /* "constraint 'EXPR' is false (...)": the constraint */
    if (!strncmp(s, "constraint '", 12)) {
        const char *q = memchr(s + 12, '\'', len - 12);
        if (q) {
            snprintf(buf, size, "%.*s", (int)(q + 1 - s), s);
            return;
        }
    }
    /* else the words before the first number or colon */
    size_t cut = 0;
    while (cut < len && !isdigit((unsigned char)s[cut]) && s[cut] != ':')
        cut++;
    while (cut > 0 && (s[cut - 1] == ' ' || s[cut - 1] == '='))
        cut--;
    if (cut == 0)
        snprintf(buf, size, "%s", len ? "other" : "no reason given");
    else
        snprintf(buf, size, "%.*s", (int)cut, s);
}
