/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_store.c — tune documents (docs/tune-json.md) made from the results store for `blocktune
 * report --store`: one per (kernel, device, key) that the filters select, holding the key's
 * measurements of one source (the winner's source hash, else the newest), the winner with its
 * margin, and the provenance the rows keep. The roofline and the eliminated configs are not
 * stored: they come from the plan made again, for a built-in kernel, on the same device when it
 * is here or its hardware-table row; without either the document has none, and the page says so.
 */
#include "engine/report_store.h"

#include "core/plan.h"
#include "core/util.h"
#include "store/store.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* The rows of one key. */
typedef struct rows {
    bt__measurement *m;
    size_t n, cap;
} rows;

static int row_cb(const bt__measurement *m, void *user)
{
    rows *R = user;
    if (R->n == R->cap) {
        size_t cap = R->cap ? R->cap * 2 : 64;
        bt__measurement *g = realloc(R->m, sizeof *g * cap);
        if (!g)
            return BT_NOMEM;
        R->m = g, R->cap = cap;
    }
    bt__measurement *c = &R->m[R->n++];
    *c = *m;
    char **s[] = {&c->kernel, &c->source_hash, &c->options, &c->device_name, &c->device_uuid,
                  &c->device_arch, &c->driver, &c->compiler, &c->blocktune_version, &c->key,
                  &c->key_json, &c->config_json, &c->status, &c->error, &c->extra_json};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        *s[i] = bt__strdup(*s[i]);
    return 0;
}

static void rows_free(rows *R)
{
    for (size_t i = 0; i < R->n; i++)
        bt__measurement_clear(&R->m[i]);
    free(R->m);
}

typedef struct wfind {
    const char *key;
    bt__winner w;
    bool found;
} wfind;

static int winner_cb(const bt__winner *w, void *user)
{
    wfind *F = user;
    if (F->found || strcmp(w->m.key, F->key))
        return 0;
    F->found = true;
    F->w.margin = w->margin, F->w.tie = w->tie;
    F->w.m.source_hash = bt__strdup(w->m.source_hash);
    F->w.m.options = bt__strdup(w->m.options);
    F->w.m.config_json = bt__strdup(w->m.config_json);
    F->w.origin = bt__strdup(w->origin);
    return 0;
}

static void set_num(json_t *o, const char *k, double v)
{
    if (v >= 0 && isfinite(v))
        json_object_set_new(o, k, json_real(v));
}

static json_t *config_json(const bt__measurement *m)
{
    json_t *x = json_object();
    json_object_set_new(x, "config", json_loads(m->config_json, 0, NULL));
    json_object_set_new(x, "status", json_string(m->status));
    if (m->error)
        json_object_set_new(x, "error", json_string(m->error));
    set_num(x, "compile_s", m->compile_ms >= 0 ? m->compile_ms / 1e3 : -1);
    if (!strcmp(m->status, "ok")) {
        set_num(x, "median_ms", m->median_ms);
        set_num(x, "p20_ms", m->p20_ms);
        set_num(x, "p80_ms", m->p80_ms);
        set_num(x, "min_ms", m->min_ms);
        set_num(x, "mad_ms", m->mad_ms);
        if (m->reps > 0)
            json_object_set_new(x, "reps", json_integer(m->reps));
        set_num(x, "max_rel_err", m->max_rel_err);
    }
    json_object_set_new(x, "regs_per_thread", json_integer(m->regs > 0 ? m->regs : -1));
    if (m->smem_bytes >= 0)
        json_object_set_new(x, "smem_bytes", json_integer(m->smem_bytes));
    json_object_set_new(x, "from_store", json_true());
    return x;
}

/* The device's properties: the same device when it is here, else its hardware-table row. */
static bool device_props(const char *name, bt_gpu *out)
{
    bt_device_list *devs = NULL;
    bool found = false;
    if (bt_devices_list(&devs, NULL) == BT_OK)
        for (size_t i = 0; i < bt_device_list_count(devs) && !found; i++)
            if (!strcmp(bt_device_list_at(devs, i)->name, name))
                *out = bt_device_list_at(devs, i)->props, found = true;
    bt_device_list_destroy(devs);
    bt_gpudb *db = NULL;
    const bt_gpu *g = NULL;
    if (!found && bt_gpudb_load_default(&db, NULL) == BT_OK && bt_gpudb_find(db, name, &g, NULL) == BT_OK)
        *out = *g, found = true;
    bt_gpudb_destroy(db);
    return found;
}

/* The plan of a built-in kernel at the key on the device, as plan JSON; NULL with why in note. */
static json_t *plan_again(const char *kernel, const json_t *key, const char *device, char *note,
                          size_t size)
{
    bt_kdesc *k = NULL;
    bt_problem *p = NULL;
    bt_plan *pl = NULL;
    json_t *out = NULL;
    bt_gpu g;
    if (bt_kdesc_builtin(kernel, &k, NULL) != BT_OK) {
        snprintf(note, size, "not a built-in kernel: no roofline or eliminated configs (the "
                             "store keeps measurements only)");
        goto done;
    }
    if (!device_props(device, &g)) {
        snprintf(note, size, "the device is neither here nor in the hardware table: no roofline "
                             "or eliminated configs");
        goto done;
    }
    bt_problem_create(k, &p);
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)key, name, v) {
        if (json_is_integer(v))
            bt_problem_set(p, name, json_integer_value(v), NULL);
        else if (!strcmp(name, "dtype") && json_is_string(v))
            bt_problem_set_dtype(p, json_string_value(v), NULL);
    }
    if (p && bt_plan_create(k, p, &g, NULL, &pl, NULL) == BT_OK)
        out = bt__plan_to_json(pl);
    else
        snprintf(note, size, "the model could not be made again for this key");
done:
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    return out;
}

/* The plan's roofline and eliminated configs (reasons joined by lines) into doc. */
static void add_plan(json_t *doc, json_t *plan)
{
    json_object_set(doc, "roofline", json_object_get(plan, "roofline"));
    json_t *el = json_array();
    json_t *x;
    size_t i;
    json_array_foreach(json_object_get(plan, "eliminated"), i, x) {
        bt__sbuf b = {0};
        json_t *r;
        size_t j;
        json_array_foreach(json_object_get(x, "reasons"), j, r)
            bt__sbuf_printf(&b, "%s%s", j ? "\n" : "", json_string_value(r));
        json_t *e = json_object();
        json_object_set(e, "config", json_object_get(x, "config"));
        json_object_set_new(e, "reasons", json_string(b.s ? b.s : ""));
        bt__sbuf_free(&b);
        json_array_append_new(el, e);
    }
    json_object_set_new(doc, "eliminated", el);
    json_object_set(doc, "eliminated_not_listed", json_object_get(plan, "eliminated_not_listed"));
}

static json_t *provenance(const bt__measurement *m, const char *path)
{
    json_t *p = json_object();
    char ts[40];
    bt__utc_iso(m->timestamp, ts, sizeof ts);
    json_object_set_new(p, "device_id", json_string(m->device_uuid));
    json_object_set_new(p, "device", json_string(m->device_name));
    json_object_set_new(p, "api", json_string(m->device_arch));
    json_object_set_new(p, "driver", json_string(m->driver));
    json_object_set_new(p, "compiler", json_string(m->compiler));
    json_object_set_new(p, "blocktune", json_string(m->blocktune_version));
    json_object_set_new(p, "source_hash", json_string(m->source_hash));
    json_object_set_new(p, "timestamp", json_string(ts));
    json_object_set_new(p, "store", json_string(path));
    return p;
}

/* The document of one key: rows of the winner's source (else the newest row's). */
static json_t *key_doc(bt__store *s, const char *kernel, const char *device, const char *key,
                       bt_diag *d)
{
    rows R = {0};
    wfind F = {.key = key};
    bt__measurement_init(&F.w.m);
    json_t *doc = NULL;
    if (bt__store_rows(s, kernel, device, key, row_cb, &R, d) != BT_OK || !R.n ||
        bt__store_winners(s, kernel, device, winner_cb, &F, d) != BT_OK)
        goto done;
    const bt__measurement *last = &R.m[R.n - 1];
    const char *src = F.found ? F.w.m.source_hash : last->source_hash;
    const char *opt = F.found ? F.w.m.options : last->options;
    doc = json_object();
    json_object_set_new(doc, "schema", json_string("blocktune-tune/1"));
    json_object_set_new(doc, "kernel", json_string(kernel));
    json_t *key_obj = json_loads(last->key_json, 0, NULL);
    json_object_set_new(doc, "problem", key_obj ? key_obj : json_object());
    json_t *cs = json_array();
    const bt__measurement *newest = last;
    for (size_t i = 0; i < R.n; i++)
        if (!strcmp(R.m[i].source_hash, src) && !strcmp(R.m[i].options, opt)) {
            json_array_append_new(cs, config_json(&R.m[i]));
            newest = &R.m[i];
        }
    json_object_set_new(doc, "configs", cs);
    char note[200] = "";
    json_t *plan = plan_again(kernel, json_object_get(doc, "problem"), device, note, sizeof note);
    if (plan) {
        add_plan(doc, plan);
        snprintf(note, sizeof note, "from the results store; the roofline and the eliminated "
                                    "configs are the model's, made again for this key");
    }
    json_object_set_new(doc, "note", json_string(note));
    json_decref(plan);
    if (F.found) {
        json_t *w = json_object();
        json_object_set_new(w, "config", json_loads(F.w.m.config_json, 0, NULL));
        json_object_set_new(w, "margin", json_real(F.w.margin >= 0 ? F.w.margin : 0));
        json_object_set_new(w, "tie", json_boolean(F.w.tie));
        json_object_set_new(w, "origin", json_string(F.w.origin ? F.w.origin : "tuned"));
        json_object_set_new(doc, "winner", w);
    } else
        json_object_set_new(doc, "winner", json_null());
    json_object_set_new(doc, "provenance", provenance(newest, bt__store_path(s)));
done:
    rows_free(&R);
    bt__winner_clear(&F.w);
    return doc;
}

bt_status bt__report_store_docs(bt__store *s, const char *kernel, const char *key,
                                const char *device, json_t ***docs, size_t *n, bt_diag *d)
{
    *docs = NULL, *n = 0;
    bt_status st = BT_OK;
    sqlite3_stmt *q = NULL;
    const char *sql = "SELECT DISTINCT kernel, device_name, key FROM measurements WHERE "
                      "(?1 IS NULL OR kernel = ?1) AND (?2 IS NULL OR instr(key, ?2) > 0) AND "
                      "(?3 IS NULL OR device_name = ?3 OR device_uuid = ?3) "
                      "ORDER BY kernel, device_name, key";
    if (sqlite3_prepare_v2(bt__store_db(s), sql, -1, &q, NULL) != SQLITE_OK) {
        bt__diag_set(d, "%s: %s", bt__store_path(s), sqlite3_errmsg(bt__store_db(s)));
        return BT_STORE;
    }
    const char *args[3] = {kernel, key, device};
    for (int i = 0; i < 3; i++)
        if (args[i])
            sqlite3_bind_text(q, i + 1, args[i], -1, SQLITE_TRANSIENT);
    size_t cap = 0;
    while (st == BT_OK && sqlite3_step(q) == SQLITE_ROW) {
        json_t *doc = key_doc(s, (const char *)sqlite3_column_text(q, 0),
                              (const char *)sqlite3_column_text(q, 1),
                              (const char *)sqlite3_column_text(q, 2), d);
        if (!doc)
            continue; /* no readable row (each bad one was warned about) */
        if (*n == cap) {
            json_t **g = realloc(*docs, sizeof *g * (cap = cap ? cap * 2 : 16));
            if (!g) {
                json_decref(doc);
                st = BT_NOMEM;
                break;
            }
            *docs = g;
        }
        (*docs)[(*n)++] = doc;
    }
    sqlite3_finalize(q);
    return st;
}
