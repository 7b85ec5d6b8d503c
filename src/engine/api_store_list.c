/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_store_list.c — the public writers of what a results store holds (what `blocktune cache
 * list` and `cache show` print): the winners as a table or a JSON document, and every measurement
 * of the keys matching a substring with each key's provenance.
 */
#include "engine/api_store.h"

#include "core/util.h"
#include "store/store.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

typedef struct list_ctx {
    FILE *f;
    int n;
} list_ctx;

static int table_row(const bt__winner *w, void *user)
{
    list_ctx *c = user;
    if (c->n++ == 0)
        fprintf(c->f, "%-12s %-24s %-40s %10s %7s  %s\n", "kernel", "device", "key", "median_ms",
                "margin", "config");
    fprintf(c->f, "%-12s %-24s %-40s %10.4f %6.1f%%  %s%s%s\n", w->m.kernel, w->m.device_name,
            w->m.key, w->m.median_ms, w->margin >= 0 ? 100 * w->margin : 0.0, w->m.config_json,
            w->tie ? " (tie)" : "", strcmp(w->origin, "tuned") ? " [imported]" : "");
    return 0;
}

bt_status bt_store_write_winners_table(bt_store *s, FILE *f, bt_diag *diag)
{
    bt__store *st = bt__store_handle(s);
    if (!st || !f)
        return BT_INVALID_ARG;
    list_ctx c = {f, 0};
    bt_status r = bt__store_winners(st, NULL, NULL, table_row, &c, diag);
    if (r)
        return r;
    int64_t nm = 0, nw = 0;
    bt__store_counts(st, &nm, &nw, NULL);
    fprintf(f, "%s%lld winners, %lld measurements in %s\n", c.n ? "\n" : "", (long long)nw,
            (long long)nm, bt__store_path(st));
    return ferror(f) ? BT_IO : BT_OK;
}

static int json_row(const bt__winner *w, void *user)
{
    json_t *x = json_object();
    json_object_set_new(x, "kernel", json_string(w->m.kernel));
    json_object_set_new(x, "device", json_string(w->m.device_name));
    json_object_set_new(x, "device_uuid", json_string(w->m.device_uuid));
    json_object_set_new(x, "key", json_string(w->m.key));
    json_t *k = json_loads(w->m.key_json, 0, NULL), *c = json_loads(w->m.config_json, 0, NULL);
    json_object_set_new(x, "problem", k ? k : json_null());
    json_object_set_new(x, "config", c ? c : json_null());
    json_object_set_new(x, "median_ms", json_real(w->m.median_ms));
    json_object_set_new(x, "margin", w->margin >= 0 ? json_real(w->margin) : json_null());
    json_object_set_new(x, "tie", json_boolean(w->tie));
    json_object_set_new(x, "origin", json_string(w->origin));
    json_object_set_new(x, "source_hash", json_string(w->m.source_hash));
    json_object_set_new(x, "blocktune", json_string(w->m.blocktune_version));
    char ts[40];
    bt__utc_iso(w->m.timestamp, ts, sizeof ts);
    json_object_set_new(x, "timestamp", json_string(ts));
    json_array_append_new(user, x);
    return 0;
}

bt_status bt_store_write_winners_json(bt_store *s, FILE *f, bt_diag *diag)
{
    bt__store *st = bt__store_handle(s);
    if (!st || !f)
        return BT_INVALID_ARG;
    json_t *arr = json_array();
    if (!arr)
        return BT_NOMEM;
    bt_status r = bt__store_winners(st, NULL, NULL, json_row, arr, diag);
    if (r) {
        json_decref(arr);
        return r;
    }
    int64_t nm = 0, nw = 0;
    bt__store_counts(st, &nm, &nw, NULL);
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("blocktune-cache-list/1"));
    json_object_set_new(o, "store", json_string(bt__store_path(st)));
    json_object_set_new(o, "winners", arr);
    json_object_set_new(o, "measurements", json_integer(nm));
    int rc = json_dumpf(o, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8));
    fputc('\n', f);
    json_decref(o);
    return rc == 0 && !ferror(f) ? BT_OK : BT_IO;
}

/* One measurement row of `show` (the head of its key first when the key changes). */
static void show_row(sqlite3_stmt *q, FILE *f, size_t n, char *last, size_t last_size)
{
    char head[1024];
    snprintf(head, sizeof head, "%s on %s [%s]", sqlite3_column_text(q, 0),
             sqlite3_column_text(q, 1), sqlite3_column_text(q, 2));
    if (strcmp(head, last) != 0) {
        fprintf(f, "%s%s\n  driver %s, compiler %s, blocktune %s, source %s\n", n ? "\n" : "",
                head, sqlite3_column_text(q, 13), sqlite3_column_text(q, 14),
                sqlite3_column_text(q, 15), sqlite3_column_text(q, 16));
        fprintf(f, "  %-1s %-14s %10s %10s %10s %6s %5s %8s  %s\n", "", "status", "median_ms",
                "p20_ms", "p80_ms", "reps", "regs", "smem", "config");
        snprintf(last, last_size, "%s", head);
    }
    char t[3][32] = {"-", "-", "-"};
    for (int i = 0; i < 3; i++)
        if (sqlite3_column_type(q, 5 + i) != SQLITE_NULL)
            snprintf(t[i], sizeof t[i], "%.4f", sqlite3_column_double(q, 5 + i));
    const unsigned char *err = sqlite3_column_text(q, 11);
    fprintf(f, "  %-1s %-14s %10s %10s %10s %6lld %5lld %8lld  %s%s%s\n",
            sqlite3_column_int(q, 12) ? "*" : "", sqlite3_column_text(q, 4), t[0], t[1], t[2],
            (long long)sqlite3_column_int64(q, 8), (long long)sqlite3_column_int64(q, 9),
            (long long)sqlite3_column_int64(q, 10), sqlite3_column_text(q, 3), err ? "  " : "",
            err ? (const char *)err : "");
}

bt_status bt_store_write_measurements(bt_store *s, const char *key, FILE *f, size_t *rows,
                                      bt_diag *diag)
{
    bt__store *st = bt__store_handle(s);
    if (rows)
        *rows = 0;
    if (!st || !key || !f)
        return BT_INVALID_ARG;
    sqlite3_stmt *q = NULL;
    const char *sql =
        "SELECT m.kernel, m.device_name, m.key, m.config_json, m.status, m.median_ms, m.p20_ms, "
        "m.p80_ms, m.reps, m.regs, m.smem_bytes, m.error, w.config_json IS NOT NULL, "
        "m.driver, m.compiler, m.blocktune_version, m.source_hash, m.timestamp "
        "FROM measurements m LEFT JOIN winners w ON w.kernel = m.kernel AND "
        "w.source_hash = m.source_hash AND w.options = m.options AND w.device = m.device AND "
        "w.key = m.key AND w.config_json = m.config_json WHERE instr(m.key, ?1) > 0 "
        "ORDER BY m.kernel, m.device, m.key, m.status != 'ok', m.median_ms";
    if (sqlite3_prepare_v2(bt__store_db(st), sql, -1, &q, NULL) != SQLITE_OK) {
        bt__diag_set(diag, "%s: %s", bt__store_path(st), sqlite3_errmsg(bt__store_db(st)));
        return BT_STORE;
    }
    sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
    size_t n = 0;
    char last[1024] = "";
    while (sqlite3_step(q) == SQLITE_ROW)
        show_row(q, f, n++, last, sizeof last);
    sqlite3_finalize(q);
    if (rows)
        *rows = n;
    return ferror(f) ? BT_IO : BT_OK;
}
