/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.c — reading the report's inputs: a tune JSON document (docs/tune-json.md) and a peers file
 * (docs/report.md#peers), each checked for what the report reads, every error naming
 * file:line:column and the field; and matching peers to a tune.
 */
#include "report/rep_int.h"

#include "core/jpos.h"
#include "core/util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Fills diag with name, the position of path in text (when known), the field and msg. */
static bt_status fail_at(bt_diag *diag, const char *text, const char *name, const char *path,
                         const char *msg)
{
    bt__diag_set(diag, "%s", msg);
    if (!diag)
        return BT_PARSE;
    snprintf(diag->file, sizeof diag->file, "%s", name ? name : "");
    bt__diag_field(diag, path);
    bt__jpos *m = text ? bt__jpos_build(text) : NULL;
    /* a member that is missing: the position of the object that lacks it */
    char at[128];
    snprintf(at, sizeof at, "%s", path);
    while (m && !bt__jpos_find(m, at, &diag->line, &diag->column) && at[0]) {
        char *cut = strrchr(at, '.'), *br = strrchr(at, '[');
        cut = br > cut ? br : cut;
        if (cut)
            *cut = '\0';
        else
            at[0] = '\0';
    }
    bt__jpos_free(m);
    return BT_PARSE;
}

static bool positive(const json_t *o, const char *key)
{
    double v = bt__jnum(o, key, NAN);
    return isfinite(v) && v > 0;
}

/* configs[i]: an object with a config object of numbers, a status, and a median when ok. */
static bt_status check_config(const json_t *x, size_t i, const char *text, const char *name,
                              bt_diag *diag)
{
    char path[64];
    snprintf(path, sizeof path, "configs[%zu]", i);
    if (!json_is_object(x))
        return fail_at(diag, text, name, path, "a config entry must be an object");
    const json_t *cfg = json_object_get(x, "config");
    snprintf(path, sizeof path, "configs[%zu].config", i);
    if (!json_is_object(cfg) || !json_object_size(cfg))
        return fail_at(diag, text, name, path, "must be a non-empty object of parameter values");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)cfg, k, v) if (!json_is_number(v))
        return fail_at(diag, text, name, path, "every parameter value must be a number");
    snprintf(path, sizeof path, "configs[%zu].status", i);
    const char *st = bt__jstr(x, "status", NULL);
    if (!st || !st[0])
        return fail_at(diag, text, name, path, "must be a status string (\"ok\", \"compile_failed\", ...)");
    snprintf(path, sizeof path, "configs[%zu].median_ms", i);
    if (!strcmp(st, "ok") && !positive(x, "median_ms"))
        return fail_at(diag, text, name, path, "an ok config needs a positive finite median_ms");
    return BT_OK;
}

/* A sweep document (blocktune tune --json over several sizes): each member of "sweep" a tune
 * document; a failure names sweep[i] and the member's field (no line: the member's own path). */
static bt_status check_sweep(json_t *doc, const char *text, const char *name, bt_diag *diag)
{
    const json_t *sw = json_object_get(doc, "sweep");
    if (!json_is_array(sw))
        return fail_at(diag, text, name, "sweep", "must be an array of tune documents");
    for (size_t i = 0; i < json_array_size(sw); i++) {
        bt_status st = bt__report_check_tune(json_array_get(sw, i), NULL, name, diag);
        if (st && diag) {
            char f[sizeof diag->field], m[sizeof diag->msg];
            snprintf(f, sizeof f, "sweep[%zu]%s%.90s", i, diag->field[0] ? "." : "", diag->field);
            snprintf(m, sizeof m, "%.900s", diag->msg);
            return fail_at(diag, text, name, f, m);
        }
        if (st)
            return st;
    }
    return BT_OK;
}

bt_status bt__report_check_tune(json_t *doc, const char *text, const char *name, bt_diag *diag)
{
    if (!json_is_object(doc))
        return fail_at(diag, text, name, "", "a tune document is a JSON object");
    const char *schema = bt__jstr(doc, "schema", "");
    if (!strcmp(schema, "blocktune-sweep/1"))
        return check_sweep(doc, text, name, diag);
    if (strcmp(schema, "blocktune-tune/1"))
        return fail_at(diag, text, name, "schema", "not a tune document: schema must be "
                       "\"blocktune-tune/1\" or \"blocktune-sweep/1\" (blocktune tune --json "
                       "writes one)");
    if (!bt__jstr(doc, "kernel", NULL))
        return fail_at(diag, text, name, "kernel", "must be a string");
    if (!json_is_object(json_object_get(doc, "problem")))
        return fail_at(diag, text, name, "problem", "must be an object");
    const json_t *cs = json_object_get(doc, "configs");
    if (!json_is_array(cs))
        return fail_at(diag, text, name, "configs", "must be an array");
    for (size_t i = 0; i < json_array_size(cs); i++) {
        bt_status st = check_config(json_array_get(cs, i), i, text, name, diag);
        if (st)
            return st;
    }
    const json_t *el = json_object_get(doc, "eliminated");
    if (el && !json_is_array(el))
        return fail_at(diag, text, name, "eliminated", "must be an array");
    for (size_t i = 0; i < json_array_size(el); i++) {
        char path[64];
        snprintf(path, sizeof path, "eliminated[%zu].reasons", i);
        if (!json_is_string(json_object_get(json_array_get(el, i), "reasons")))
            return fail_at(diag, text, name, path, "must be a string");
    }
    const json_t *w = json_object_get(doc, "winner");
    if (w && !json_is_null(w) && !json_is_object(json_object_get(w, "config")))
        return fail_at(diag, text, name, "winner", "must be null or an object with a config");
    return BT_OK;
}

bt_status bt__report_check_peers(json_t *doc, const char *text, const char *name, bt_diag *diag)
{
    if (strcmp(bt__jstr(doc, "schema", ""), "blocktune-peers/1"))
        return fail_at(diag, text, name, "schema", "a peers file has schema \"blocktune-peers/1\" "
                       "(docs/report.md#peers)");
    const json_t *ps = json_object_get(doc, "peers");
    if (!json_is_array(ps))
        return fail_at(diag, text, name, "peers", "must be an array");
    for (size_t i = 0; i < json_array_size(ps); i++) {
        const json_t *p = json_array_get(ps, i);
        char path[64];
        const char *bad = !json_is_object(p)                           ? ""
                          : !bt__jstr(p, "name", NULL)                 ? "name"
                          : !bt__jstr(p, "kernel", NULL)               ? "kernel"
                          : !json_is_object(json_object_get(p, "problem")) ? "problem"
                          : !positive(p, "time_ms")                    ? "time_ms"
                          : json_object_get(p, "flops") && !positive(p, "flops") ? "flops"
                          : json_object_get(p, "bytes") && !positive(p, "bytes") ? "bytes"
                          : json_object_get(p, "device") && !bt__jstr(p, "device", NULL) ? "device"
                          : json_object_get(p, "statistic") && !bt__jstr(p, "statistic", NULL) ? "statistic"
                          : json_object_get(p, "note") && !bt__jstr(p, "note", NULL) ? "note"
                                                                       : NULL;
        if (!bad)
            continue;
        snprintf(path, sizeof path, "peers[%zu]%s%s", i, bad[0] ? "." : "", bad);
        return fail_at(diag, text, name, path,
                       !bad[0] ? "a peer is an object"
                       : !strcmp(bad, "problem") ? "must be an object of the tune's sizes (and dtype)"
                       : !strcmp(bad, "name") || !strcmp(bad, "kernel") || !strcmp(bad, "device") ||
                               !strcmp(bad, "statistic") || !strcmp(bad, "note")
                           ? "must be a string"
                           : "must be a positive finite number");
    }
    return BT_OK;
}

typedef bt_status (*check_fn)(json_t *, const char *, const char *, bt_diag *);

static bt_status load(const char *path, check_fn check, json_t **out, bt_diag *diag)
{
    *out = NULL;
    size_t size;
    char *text = bt__read_file(path, &size);
    if (!text) {
        bt__diag_set(diag, "cannot read %s: %s", path, strerror(errno));
        return BT_IO;
    }
    json_error_t je;
    json_t *doc = json_loadb(text, size, JSON_DECODE_ANY, &je);
    if (!doc) {
        bt__diag_set(diag, "%s", je.text);
        if (diag) {
            snprintf(diag->file, sizeof diag->file, "%s", path);
            diag->line = je.line;
            diag->column = je.column;
        }
        free(text);
        return BT_PARSE;
    }
    bt_status st = check(doc, text, path, diag);
    free(text);
    if (st)
        json_decref(doc);
    else
        *out = doc;
    return st;
}

bt_status bt__report_load_tune(const char *path, json_t **out, bt_diag *diag)
{
    return load(path, bt__report_check_tune, out, diag);
}

bt_status bt__report_load_peers(const char *path, json_t **out, bt_diag *diag)
{
    return load(path, bt__report_check_peers, out, diag);
}

/* The peer's sizes are all the tune's (dtype included), and its device, when given, is part of
 * the tune's device name or id (case ignored). */
static bool peer_matches(const json_t *p, const bt__tview *v)
{
    if (strcmp(bt__jstr(p, "kernel", ""), v->kernel))
        return false;
    const json_t *prob = json_object_get(v->doc, "problem");
    const char *k;
    json_t *x;
    json_object_foreach(json_object_get(p, "problem"), k, x) {
        const json_t *y = json_object_get(prob, k);
        if (!y || !(json_equal(x, (json_t *)y) ||
                    (json_is_number(x) && json_is_number(y) &&
                     json_number_value(x) == json_number_value(y))))
            return false;
    }
    const char *dev = bt__jstr(p, "device", NULL);
    return !dev || strcasestr(v->device, dev) || strcasestr(bt__jstr(v->prov, "device_id", ""), dev);
}

/* A peer's colour: the rank of its name among the distinct names of its kernel's peers in the
 * file (mod 4), so that a name keeps its colour on every key of the kernel. */
static int name_rank(const json_t *ps, size_t i)
{
    const json_t *p = json_array_get(ps, i);
    const char *kernel = bt__jstr(p, "kernel", ""), *name = bt__jstr(p, "name", "");
    const char *seen[64];
    int ns = 0;
    for (size_t j = 0; j <= i; j++) {
        const json_t *pj = json_array_get(ps, j);
        if (strcmp(bt__jstr(pj, "kernel", ""), kernel))
            continue;
        const char *nj = bt__jstr(pj, "name", "");
        int r = 0;
        while (r < ns && strcmp(seen[r], nj))
            r++;
        if (!strcmp(nj, name))
            return r % 4;
        if (r == ns && ns < 64)
            seen[ns++] = nj;
    }
    return 0;
}

int bt__peers_match(const json_t *peers, const bt__tview *v, bt__peer *out, int max)
{
    int n = 0;
    const json_t *ps = json_object_get(peers, "peers");
    for (size_t i = 0; i < json_array_size(ps) && n < max; i++) {
        const json_t *p = json_array_get(ps, i);
        if (!peer_matches(p, v))
            continue;
        out[n++] = (bt__peer){bt__jstr(p, "name", "?"), bt__jstr(p, "note", NULL),
                              bt__jstr(p, "statistic", NULL), bt__jnum(p, "time_ms", 0),
                              bt__jnum(p, "flops", v->flops), bt__jnum(p, "bytes", v->bytes), 0};
        if (!(out[n - 1].flops > 0 && out[n - 1].bytes > 0))
            out[n - 1].flops = out[n - 1].bytes = 0;
        out[n - 1].color = name_rank(ps, i);
    }
    return n;
}
