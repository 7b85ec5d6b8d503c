/* SPDX-License-Identifier: Apache-2.0 */
/*
 * api_report.c — the public calls for one HTML page over several tunes (bt_report_*): tune JSON
 * files (each key of a sweep file), the keys of a results store (report_store.c), a peers file
 * and a title, written by src/report/ (what `blocktune report` does).
 */
#include "engine/api_store.h"
#include "engine/report_store.h"

#include "core/util.h"
#include "report/report.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bt_report {
    json_t **docs; /* checked blocktune-tune/1 documents */
    char **src;    /* where each came from: a file, "store:PATH" */
    size_t n, cap;
    char *title, *peers_source;
    json_t *peers;
};

bt_status bt_report_create(bt_report **out)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = calloc(1, sizeof **out);
    return *out ? BT_OK : BT_NOMEM;
}

void bt_report_destroy(bt_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        json_decref(r->docs[i]);
        free(r->src[i]);
    }
    free(r->docs);
    free(r->src);
    free(r->title);
    free(r->peers_source);
    json_decref(r->peers);
    free(r);
}

size_t bt_report_count(const bt_report *r) { return r ? r->n : 0; }

/* Adds doc (its reference taken) from src. */
static bt_status add(bt_report *r, json_t *doc, const char *src)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        json_t **d = realloc(r->docs, cap * sizeof *d);
        if (d)
            r->docs = d;
        char **s = d ? realloc(r->src, cap * sizeof *s) : NULL;
        if (s)
            r->src = s;
        if (!d || !s) {
            json_decref(doc);
            return BT_NOMEM;
        }
        r->cap = cap;
    }
    char *copy = bt__strdup(src);
    if (!copy) {
        json_decref(doc);
        return BT_NOMEM;
    }
    r->docs[r->n] = doc;
    r->src[r->n++] = copy;
    return BT_OK;
}

bt_status bt_report_add_tune_file(bt_report *r, const char *path, bt_diag *diag)
{
    if (!r || !path)
        return BT_INVALID_ARG;
    json_t *doc = NULL;
    bt_status st = bt__report_load_tune(path, &doc, diag);
    if (st)
        return st;
    /* a sweep document: each key's tune document */
    const json_t *sw = json_object_get(doc, "sweep");
    size_t m = json_is_array(sw) ? json_array_size(sw) : 1;
    for (size_t i = 0; i < m && st == BT_OK; i++)
        st = add(r, json_is_array(sw) ? json_incref(json_array_get(sw, i)) : json_incref(doc),
                 path);
    json_decref(doc);
    return st;
}

bt_status bt_report_add_store(bt_report *r, bt_store *s, const char *kernel, const char *key,
                              const char *device, size_t *added, bt_diag *diag)
{
    if (added)
        *added = 0;
    if (!r || !s)
        return BT_INVALID_ARG;
    json_t **docs = NULL;
    size_t n = 0;
    bt_status st = bt__report_store_docs(bt__store_handle(s), kernel, key, device, &docs, &n, diag);
    const char *path = bt_store_path(s);
    char *src = malloc(strlen(path) + 7);
    if (src)
        snprintf(src, strlen(path) + 7, "store:%s", path);
    if (!src)
        st = st ? st : BT_NOMEM;
    size_t i = 0;
    for (; i < n && st == BT_OK; i++)
        st = add(r, docs[i], src);
    for (; i < n; i++)
        json_decref(docs[i]);
    if (added && st == BT_OK)
        *added = n;
    free(docs);
    free(src);
    return st;
}

bt_status bt_report_set_peers_file(bt_report *r, const char *path, bt_diag *diag)
{
    if (!r || !path)
        return BT_INVALID_ARG;
    json_t *peers = NULL;
    bt_status st = bt__report_load_peers(path, &peers, diag);
    if (st)
        return st;
    char *copy = bt__strdup(path);
    if (!copy) {
        json_decref(peers);
        return BT_NOMEM;
    }
    json_decref(r->peers);
    free(r->peers_source);
    r->peers = peers;
    r->peers_source = copy;
    return BT_OK;
}

bt_status bt_report_set_title(bt_report *r, const char *title)
{
    if (!r)
        return BT_INVALID_ARG;
    char *copy = title ? bt__strdup(title) : NULL;
    if (title && !copy)
        return BT_NOMEM;
    free(r->title);
    r->title = copy;
    return BT_OK;
}

bt_status bt_report_set_source(bt_report *r, const char *source)
{
    if (!r || !source)
        return BT_INVALID_ARG;
    for (size_t i = 0; i < r->n; i++) {
        char *copy = bt__strdup(source);
        if (!copy)
            return BT_NOMEM;
        free(r->src[i]);
        r->src[i] = copy;
    }
    return BT_OK;
}

bt_status bt_report_write_html(const bt_report *r, FILE *f, bt_diag *diag)
{
    if (!r || !f)
        return BT_INVALID_ARG;
    bt__report_doc *rd = calloc(r->n ? r->n : 1, sizeof *rd);
    if (!rd)
        return BT_NOMEM;
    for (size_t i = 0; i < r->n; i++)
        rd[i] = (bt__report_doc){r->docs[i], r->src[i]};
    bt__report_opts o = {r->title, r->peers, r->peers_source};
    bt_status st = bt__report_html(rd, r->n, &o, f, diag);
    free(rd);
    return st;
}

bt_status bt_report_write_html_file(const bt_report *r, const char *path, bt_diag *diag)
{
    if (!r || !path)
        return BT_INVALID_ARG;
    char *buf = NULL;
    size_t size = 0;
    FILE *m = open_memstream(&buf, &size);
    if (!m)
        return BT_NOMEM;
    bt_status st = bt_report_write_html(r, m, diag);
    if (fclose(m) != 0 && !st)
        st = BT_NOMEM;
    if (!st)
        st = bt__write_file_atomic(path, buf, size, diag);
    free(buf);
    return st;
}
