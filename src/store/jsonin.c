/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonin.c — one JSON document from a file or memory, plain or gzip, streamed into jansson's
 * callback reader: raw bytes are read (or taken from memory) in chunks, inflated chunk by chunk
 * when the first bytes are the gzip magic (every gzip member), and counted against the limits of
 * jsonin.h before jansson sees them. See jsonin.h.
 */
#include "store/jsonin.h"

#include "core/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define CHUNK 65536

typedef struct src {
    const char *name;
    FILE *f;                   /* the file, or NULL for memory */
    const unsigned char *mem;  /* memory input */
    size_t mem_len, mem_pos;
    bool gz, zeof, zend;       /* gzip; raw input exhausted; inside no member (ended cleanly) */
    z_stream zs;
    unsigned char *in;         /* raw chunk (file input) */
    size_t max_bytes, max_values, bytes, values;
    bt_status st;              /* why the callback stopped (BT_OK: it did not) */
    char err[300];
} src;

/* Raw bytes into zs.next_in/avail_in (file: a chunk; memory: all that is left). */
static void refill(src *s)
{
    if (s->f) {
        size_t n = fread(s->in, 1, CHUNK, s->f);
        if (n == 0 && ferror(s->f)) {
            s->st = BT_IO;
            snprintf(s->err, sizeof s->err, "cannot read: %s", strerror(errno));
        }
        s->zs.next_in = s->in;
        s->zs.avail_in = (uInt)n;
        s->zeof = n == 0;
    } else {
        size_t left = s->mem_len - s->mem_pos, n = left > (1u << 30) ? (1u << 30) : left;
        s->zs.next_in = (unsigned char *)s->mem + s->mem_pos;
        s->zs.avail_in = (uInt)n;
        s->mem_pos += n;
        s->zeof = n == 0;
    }
}

/* Inflated (or plain) bytes into buf: 0 at the end, (size_t)-1 on an error (s->st). */
static size_t produce(src *s, unsigned char *buf, size_t len)
{
    if (!s->gz) {
        if (s->zs.avail_in == 0 && !s->zeof)
            refill(s);
        size_t n = s->zs.avail_in < len ? s->zs.avail_in : len;
        memcpy(buf, s->zs.next_in, n);
        s->zs.next_in += n;
        s->zs.avail_in -= (uInt)n;
        return s->st == BT_OK ? n : (size_t)-1;
    }
    s->zs.next_out = buf;
    s->zs.avail_out = (uInt)len;
    while (s->zs.avail_out == len && s->st == BT_OK) {
        if (s->zs.avail_in == 0 && !s->zeof)
            refill(s);
        if (s->zs.avail_in == 0 && s->zeof) {
            if (!s->zend) {
                s->st = BT_CORRUPT;
                snprintf(s->err, sizeof s->err, "truncated gzip data");
            }
            break;
        }
        if (s->zend) { /* another gzip member follows */
            inflateReset(&s->zs);
            s->zend = false;
        }
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            s->zend = true;
        else if (rc != Z_OK && rc != Z_BUF_ERROR) {
            s->st = BT_CORRUPT;
            snprintf(s->err, sizeof s->err, "corrupt gzip data (%s)",
                     s->zs.msg ? s->zs.msg : "zlib error");
        }
    }
    return s->st == BT_OK ? len - s->zs.avail_out : (size_t)-1;
}

static size_t feed(void *buffer, size_t buflen, void *data)
{
    src *s = data;
    if (s->st != BT_OK)
        return (size_t)-1;
    size_t n = produce(s, buffer, buflen);
    if (n == (size_t)-1)
        return n;
    s->bytes += n;
    const unsigned char *b = buffer;
    for (size_t i = 0; i < n; i++)
        s->values += b[i] == ',' || b[i] == ':' || b[i] == '[' || b[i] == '{';
    if (s->bytes > s->max_bytes || s->values > s->max_values) {
        s->st = BT_UNSUPPORTED;
        snprintf(s->err, sizeof s->err,
                 "%s more than %zu %s (the limit for one document; a larger one is refused "
                 "before it is read whole: set BLOCKTUNE_MAX_INPUT_MB to raise it)",
                 s->gz ? "inflates to" : "holds",
                 s->bytes > s->max_bytes ? s->max_bytes >> 20 : s->max_values,
                 s->bytes > s->max_bytes ? "MiB of JSON" : "JSON values");
        return (size_t)-1;
    }
    return n;
}

static void limits(src *s)
{
    const char *v = getenv("BLOCKTUNE_MAX_INPUT_MB");
    char *end;
    unsigned long long mb = v && v[0] ? strtoull(v, &end, 10) : 0;
    if (!v || !v[0] || *end || mb == 0 || mb > (1ull << 20))
        mb = BT__JSONIN_MAX_MB;
    s->max_bytes = (size_t)(mb << 20);
    s->max_values = (size_t)((unsigned long long)BT__JSONIN_MAX_VALUES * mb / BT__JSONIN_MAX_MB);
}

/* Starts the source: detects gzip from the first bytes. */
static bool start(src *s)
{
    limits(s);
    refill(s);
    if (s->st != BT_OK)
        return false;
    s->gz = s->zs.avail_in >= 2 && s->zs.next_in[0] == 0x1f && s->zs.next_in[1] == 0x8b;
    if (s->gz && inflateInit2(&s->zs, 15 + 32) != Z_OK) {
        s->st = BT_NOMEM;
        return false;
    }
    return true;
}

static json_t *parse(src *s, size_t flags, bt_status *st, bt_diag *diag)
{
    json_t *root = NULL;
    json_error_t jerr;
    memset(&jerr, 0, sizeof jerr);
    if (start(s))
        root = json_load_callback(feed, s, flags, &jerr);
    if (s->gz)
        inflateEnd(&s->zs);
    if (root && s->st == BT_OK) {
        *st = BT_OK;
        return root;
    }
    json_decref(root);
    if (diag) {
        bt__diag_clear(diag);
        snprintf(diag->file, sizeof diag->file, "%s", s->name);
        if (s->st != BT_OK) {
            bt__diag_set(diag, "%s", s->err[0] ? s->err : bt_strerror(s->st));
        } else {
            diag->line = jerr.line > 0 ? jerr.line : 0;
            diag->column = jerr.column > 0 ? jerr.column : 0;
            bt__diag_set(diag, "%s", jerr.text);
        }
    }
    *st = s->st != BT_OK ? s->st : BT_PARSE;
    return NULL;
}

json_t *bt__jsonin_file(const char *path, size_t flags, bt_status *st, bt_diag *diag)
{
    src s;
    memset(&s, 0, sizeof s);
    s.name = path;
    s.f = fopen(path, "rb");
    s.in = malloc(CHUNK);
    if (!s.f || !s.in) {
        int e = errno;
        if (s.f)
            fclose(s.f);
        free(s.in);
        *st = !s.in && s.f ? BT_NOMEM : e == ENOENT ? BT_NOT_FOUND : BT_IO;
        if (diag) {
            bt__diag_clear(diag);
            snprintf(diag->file, sizeof diag->file, "%s", path);
            bt__diag_set(diag, "cannot read: %s", strerror(*st == BT_NOMEM ? ENOMEM : e));
        }
        return NULL;
    }
    json_t *root = parse(&s, flags, st, diag);
    fclose(s.f);
    free(s.in);
    return root;
}

json_t *bt__jsonin_mem(const void *data, size_t size, const char *name, size_t flags,
                       bt_status *st, bt_diag *diag)
{
    src s;
    memset(&s, 0, sizeof s);
    s.name = name ? name : "<memory>";
    s.mem = data;
    s.mem_len = size;
    return parse(&s, flags, st, diag);
}
