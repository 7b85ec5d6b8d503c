/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jpos.c — a one-pass JSON scanner that records the position of every value, and of the key of
 * every object member, by path (see jpos.h). The one JSON position finder of the tree: the spec
 * loader and the hardware table both use it.
 */
#include "core/jpos.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *path;
    int line, col;   /* the value */
    int kline, kcol; /* the member's key; the value's own position for an element or the root */
} entry;

struct bt__jpos {
    entry *v;
    size_t n, cap;
    bool oom;
};

typedef struct scan {
    const char *s;
    size_t i;
    int line, col;
    bt__jpos *m;
    int depth;
} scan;

static void adv(scan *sc)
{
    if (!sc->s[sc->i])
        return;
    if (sc->s[sc->i] == '\n') {
        sc->line++;
        sc->col = 1;
    } else if (((unsigned char)sc->s[sc->i] & 0xC0) != 0x80) {
        sc->col++; /* count code points, not UTF-8 continuation bytes */
    }
    sc->i++;
}

static void skip_ws(scan *sc)
{
    while (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t' || sc->s[sc->i] == '\n' ||
           sc->s[sc->i] == '\r')
        adv(sc);
}

static void add(bt__jpos *m, const char *path, int line, int col, int kline, int kcol)
{
    if (m->oom)
        return;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        entry *v = realloc(m->v, cap * sizeof *v);
        if (!v) {
            m->oom = true;
            return;
        }
        m->v = v;
        m->cap = cap;
    }
    size_t len = strlen(path);
    char *p = malloc(len + 1);
    if (!p) {
        m->oom = true;
        return;
    }
    memcpy(p, path, len + 1);
    m->v[m->n++] = (entry){p, line, col, kline > 0 ? kline : line, kline > 0 ? kcol : col};
}

/* Reads a JSON string at sc (opening quote) into out (unescaped where simple). */
static void read_string(scan *sc, char *out, size_t size)
{
    size_t o = 0;
    adv(sc); /* quote */
    while (sc->s[sc->i] && sc->s[sc->i] != '"') {
        char c = sc->s[sc->i];
        if (c == '\\') {
            adv(sc);
            c = sc->s[sc->i];
            if (c == 'n')
                c = '\n';
            else if (c == 't')
                c = '\t';
            else if (c == 'u') {
                for (int k = 0; k < 4 && sc->s[sc->i + 1]; k++)
                    adv(sc);
                c = '?';
            }
        }
        if (o + 1 < size)
            out[o++] = c;
        adv(sc);
    }
    if (sc->s[sc->i] == '"')
        adv(sc);
    out[o] = '\0';
}

/* The value at sc, recorded under path[0..plen); (kline, kcol) is where its member's key is
 * written (0: it is an array element or the root). */
static void value(scan *sc, char *path, size_t plen, size_t cap, int kline, int kcol)
{
    skip_ws(sc);
    add(sc->m, path, sc->line, sc->col, kline, kcol);
    char c = sc->s[sc->i];
    if (++sc->depth > 512) {
        sc->i = strlen(sc->s);
        return;
    }
    if (c == '{') {
        adv(sc);
        for (;;) {
            skip_ws(sc);
            if (sc->s[sc->i] == '}') {
                adv(sc);
                break;
            }
            if (sc->s[sc->i] != '"')
                break;
            char key[256];
            int kl = sc->line, kc = sc->col;
            read_string(sc, key, sizeof key);
            skip_ws(sc);
            if (sc->s[sc->i] == ':')
                adv(sc);
            int w = snprintf(path + plen, cap - plen, "%s%s", plen ? "." : "", key);
            size_t nl = (w > 0 && (size_t)w < cap - plen) ? plen + (size_t)w : plen;
            value(sc, path, nl, cap, kl, kc);
            path[plen] = '\0';
            skip_ws(sc);
            if (sc->s[sc->i] == ',')
                adv(sc);
            else if (sc->s[sc->i] == '}') {
                adv(sc);
                break;
            } else
                break;
        }
    } else if (c == '[') {
        adv(sc);
        for (int idx = 0;; idx++) {
            skip_ws(sc);
            if (sc->s[sc->i] == ']') {
                adv(sc);
                break;
            }
            if (!sc->s[sc->i])
                break;
            int w = snprintf(path + plen, cap - plen, "[%d]", idx);
            size_t nl = (w > 0 && (size_t)w < cap - plen) ? plen + (size_t)w : plen;
            value(sc, path, nl, cap, 0, 0);
            path[plen] = '\0';
            skip_ws(sc);
            if (sc->s[sc->i] == ',')
                adv(sc);
            else if (sc->s[sc->i] == ']') {
                adv(sc);
                break;
            } else
                break;
        }
    } else if (c == '"') {
        /* skip the string without keeping it */
        adv(sc);
        while (sc->s[sc->i] && sc->s[sc->i] != '"') {
            if (sc->s[sc->i] == '\\')
                adv(sc);
            adv(sc);
        }
        if (sc->s[sc->i] == '"')
            adv(sc);
    } else {
        while (sc->s[sc->i] && !strchr(",]} \t\r\n", sc->s[sc->i]))
            adv(sc);
    }
    sc->depth--;
}

bt__jpos *bt__jpos_build(const char *text)
{
    bt__jpos *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    scan sc = {text, 0, 1, 1, m, 0};
    char path[1024] = "";
    value(&sc, path, 0, sizeof path, 0, 0);
    if (m->oom) {
        bt__jpos_free(m);
        return NULL;
    }
    return m;
}

void bt__jpos_free(bt__jpos *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    free(m);
}

static const entry *lookup(const bt__jpos *m, const char *path)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (strcmp(m->v[i].path, path) == 0)
            return &m->v[i];
    return NULL;
}

bool bt__jpos_find(const bt__jpos *m, const char *path, int *line, int *column)
{
    const entry *e = lookup(m, path);
    if (e) {
        *line = e->line;
        *column = e->col;
    }
    return e != NULL;
}

bool bt__jpos_find_member(const bt__jpos *m, const char *path, int *line, int *column)
{
    const entry *e = lookup(m, path);
    if (e) {
        *line = e->kline;
        *column = e->kcol;
    }
    return e != NULL;
}

void bt__jpos_nearest(const bt__jpos *m, const char *path, int *line, int *column)
{
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    *line = 1;
    *column = 1;
    for (;;) {
        if (bt__jpos_find_member(m, p, line, column))
            return;
        char *cut = strrchr(p, '.'), *br = strrchr(p, '[');
        if (br > cut)
            cut = br;
        if (!cut) {
            if (p[0])
                bt__jpos_find_member(m, "", line, column);
            return;
        }
        *cut = '\0';
    }
}
