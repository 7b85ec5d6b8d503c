/* SPDX-License-Identifier: Apache-2.0 */
/*
 * specld.c — the spec loader's helpers (specld.h): errors at a field's file:line:column, typed
 * getters, expressions, files relative to the spec (checked to be readable regular files) and
 * sources; and the path map that sends a translated spec's fields to the original's (a T1 file).
 */
#include "core/specld.h"

#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */
bt_status bt__ldmap_add(bt__ldmap *m, const char *from, const char *to, bool verbatim)
{
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 32;
        bt__ldmap_entry *e = realloc(m->e, sizeof *e * (size_t)cap);
        if (!e)
            return BT_NOMEM;
        m->e = e;
        m->cap = cap;
    }
    bt__ldmap_entry *e = &m->e[m->n++];
    snprintf(e->from, sizeof e->from, "%s", from);
    snprintf(e->to, sizeof e->to, "%s", to);
    e->verbatim = verbatim;
    return BT_OK;
}

void bt__ldmap_free(bt__ldmap *m)
{
    free(m->e);
    memset(m, 0, sizeof *m);
}

const char *bt__ldmap_find(const bt__ldmap *m, const char *path, bool *verbatim)
{
    const bt__ldmap_entry *best = NULL;
    size_t bestn = 0;
    for (int i = 0; i < m->n; i++) {
        size_t n = strlen(m->e[i].from);
        if (strncmp(path, m->e[i].from, n) != 0 ||
            (path[n] && path[n] != '.' && path[n] != '[') || (best && n <= bestn))
            continue;
        best = &m->e[i];
        bestn = n;
    }
    *verbatim = best && best->verbatim && !path[bestn];
    return best ? best->to : "";
}

/* The field a message names for the spec path `path`, and its position (0:0 when unknown): the
 * path itself, or through the map the original's field, at its nearest enclosing field when the
 * original leaves it out. *verbatim: a column inside the field's text is the file's too. */
static const char *locate(bt__ld *L, const char *path, int *line, int *col, bool *verbatim)
{
    *line = *col = 0;
    *verbatim = true;
    if (!L->map) {
        bt__jpos_find(L->pos, path, line, col);
        return path;
    }
    const char *to = bt__ldmap_find(L->map, path, verbatim);
    if (!bt__jpos_find(L->pos, to, line, col))
        bt__jpos_nearest(L->pos, to, line, col);
    return to;
}

static bt_status failv(bt__ld *L, const char *path, bt_status st, const char *fmt, va_list ap)
{
    if (!L->diag)
        return st;
    bt__diag_clear(L->diag);
    snprintf(L->diag->file, sizeof L->diag->file, "%s", L->file);
    if (path) {
        int line, col;
        bool verbatim;
        bt__diag_field(L->diag, locate(L, path, &line, &col, &verbatim));
        L->diag->line = line;
        L->diag->column = col;
    }
    vsnprintf(L->diag->msg, sizeof L->diag->msg, fmt, ap);
    return st;
}

bt_status bt__ld_fail(bt__ld *L, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bt_status st = failv(L, path, BT_PARSE, fmt, ap);
    va_end(ap);
    return st;
}

bt_status bt__ld_fail_st(bt__ld *L, const char *path, bt_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    st = failv(L, path, st, fmt, ap);
    va_end(ap);
    return st;
}

const char *bt__ld_jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

bt_status bt__ld_keys(bt__ld *L, const json_t *obj, const char *path, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        bool ok = false;
        const char *best = NULL;
        int bestd = 1000;
        for (const char *const *a = allowed; *a; a++) {
            if (!strcmp(key, *a)) {
                ok = true;
                break;
            }
            int d = bt__edit_distance(key, *a);
            if (d < bestd) {
                bestd = d;
                best = *a;
            }
        }
        if (!ok) {
            char p[256];
            snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
            if (best && bestd <= 3)
                return bt__ld_fail(L, p, "unknown field '%s' (did you mean '%s'?)", key, best);
            return bt__ld_fail(L, p, "unknown field '%s'", key);
        }
    }
    return BT_OK;
}

bt_status bt__ld_bound(bt__ld *L, const json_t *v, const char *path, size_t max, const char *what)
{
    if (json_is_array(v) && json_array_size(v) > max)
        return bt__ld_fail(L, path, "%zu %s: at most %zu", json_array_size(v), what, max);
    if (json_is_object(v) && json_object_size(v) > max)
        return bt__ld_fail(L, path, "%zu %s: at most %zu", json_object_size(v), what, max);
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Typed values
 * ------------------------------------------------------------------------------------------- */
bt_status bt__ld_int(bt__ld *L, const json_t *v, const char *path, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return BT_OK;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9e18) {
            *out = (int64_t)d;
            return BT_OK;
        }
    }
    return bt__ld_fail(L, path, "expected an integer but found %s", bt__ld_jtype(v));
}

bt_status bt__ld_num(bt__ld *L, const json_t *v, const char *path, double *out)
{
    if (!json_is_number(v))
        return bt__ld_fail(L, path, "expected a number but found %s", bt__ld_jtype(v));
    *out = json_number_value(v);
    if (!isfinite(*out))
        return bt__ld_fail(L, path, "expected a finite number");
    return BT_OK;
}

bt_status bt__ld_bool(bt__ld *L, const json_t *v, const char *path, bool *out)
{
    if (!json_is_boolean(v))
        return bt__ld_fail(L, path, "expected true or false but found %s", bt__ld_jtype(v));
    *out = json_is_true(v);
    return BT_OK;
}

bt_status bt__ld_str(bt__ld *L, const json_t *v, const char *path, const char **out)
{
    if (!json_is_string(v))
        return bt__ld_fail(L, path, "expected a string but found %s", bt__ld_jtype(v));
    *out = json_string_value(v);
    return BT_OK;
}

/* Parses src for the field at path; col_shift is where the expression starts in the field's
 * text (1 past a string's quote). */
static bt_status parse_at(bt__ld *L, const char *src, const char *path, int col_shift,
                          bt__kexpr *x)
{
    bool verbatim;
    snprintf(x->field, sizeof x->field, "%s", locate(L, path, &x->line, &x->col, &verbatim));
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = bt__expr_parse(src, L->k->syms, &x->e, &d);
    if (st != BT_OK) {
        if (L->diag) {
            bt__diag_clear(L->diag);
            snprintf(L->diag->file, sizeof L->diag->file, "%s", L->file);
            L->diag->line = x->line;
            /* the expression's column counts from its first character, after the quote; a
             * rewritten text (not verbatim) is pointed at as a whole */
            L->diag->column = x->col;
            if (verbatim)
                L->diag->column += col_shift + (d.column > 0 ? d.column - 1 : 0);
            bt__diag_field(L->diag, x->field);
            snprintf(L->diag->msg, sizeof L->diag->msg, "in '%.300s': %.600s", src, d.msg);
        }
        return st == BT_NOMEM ? st : BT_PARSE;
    }
    return BT_OK;
}

bt_status bt__ld_expr(bt__ld *L, const json_t *v, const char *path, bt__kexpr *x)
{
    char buf[32];
    if (json_is_string(v))
        return parse_at(L, json_string_value(v), path, 1, x);
    if (!json_is_integer(v))
        return bt__ld_fail(L, path, "expected an expression (string or integer) but found %s",
                           bt__ld_jtype(v));
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
    return parse_at(L, buf, path, 0, x);
}

bt_status bt__ld_expr_text(bt__ld *L, const char *src, const char *path, bt__kexpr *x)
{
    return parse_at(L, src, path, 0, x);
}

void bt__kexpr_free(bt__kexpr *x)
{
    bt__expr_free(x->e);
    x->e = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------------------------- */
bool bt__ld_ident(const char *name)
{
    if (!name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
        return false;
    for (const char *c = name; *c; c++)
        if (!(isalnum((unsigned char)*c) || *c == '_'))
            return false;
    return true;
}

int bt__ld_param(const bt_kdesc *k, const char *name)
{
    for (int i = 0; i < k->space.nparams; i++)
        if (!strcmp(k->space.params[i].name, name))
            return i;
    return -1;
}

int bt__ld_problem(const bt_kdesc *k, const char *name)
{
    for (int i = 0; i < k->nproblem; i++)
        if (!strcmp(k->problem_names[i], name))
            return i;
    return -1;
}

int bt__ld_arg(const bt_kdesc *k, const char *name)
{
    for (int i = 0; i < k->nargs; i++)
        if (!strcmp(k->args[i].name, name))
            return i;
    return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Files and sources
 * ------------------------------------------------------------------------------------------- */

/* Joins dir and rel and removes "." and "dir/.." segments; NULL when out of memory. */
static char *path_join_norm(const char *dir, const char *rel)
{
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *joined = malloc(n);
    if (!joined)
        return NULL;
    if (rel[0] == '/' || !dir[0])
        snprintf(joined, n, "%s", rel);
    else
        snprintf(joined, n, "%s/%s", dir, rel);
    /* normalise in place: at most one segment per byte */
    char **segs = malloc(sizeof *segs * n);
    char *copy = bt__strdup(joined);
    if (!segs || !copy) {
        free(segs);
        free(copy);
        free(joined);
        return NULL;
    }
    size_t ns = 0;
    bool abs = joined[0] == '/';
    char *save = NULL;
    for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
        if (!strcmp(t, "."))
            continue;
        if (!strcmp(t, "..") && ns > 0 && strcmp(segs[ns - 1], "..")) {
            ns--;
            continue;
        }
        segs[ns++] = t;
    }
    size_t o = 0;
    if (abs)
        joined[o++] = '/';
    for (size_t i = 0; i < ns; i++) {
        size_t l = strlen(segs[i]);
        if (i)
            joined[o++] = '/';
        memcpy(joined + o, segs[i], l);
        o += l;
    }
    joined[o] = '\0';
    free(segs);
    free(copy);
    return joined;
}

bt_status bt__ld_file(bt__ld *L, const char *rel, const char *path, const char *what, char **out)
{
    *out = NULL;
    if (!rel[0])
        return bt__ld_fail(L, path, "an empty file name");
    char *full = path_join_norm(L->k->dir ? L->k->dir : "", rel);
    if (!full)
        return BT_NOMEM;
    struct stat sb;
    const char *why = NULL;
    if (stat(full, &sb) != 0)
        why = strerror(errno);
    else if (S_ISDIR(sb.st_mode))
        why = "is a directory";
    else if (!S_ISREG(sb.st_mode))
        why = "is not a regular file";
    if (why) {
        bt_status st = bt__ld_fail_st(L, path, BT_IO, "cannot read %s '%s': %s", what, full, why);
        free(full);
        return st;
    }
    *out = full;
    return BT_OK;
}

/* A source: "file.cl", {"file": "..."} or {"inline": "..."}. */
static bt_status load_one_source(bt__ld *L, const json_t *v, const char *path, char **out)
{
    const char *file = NULL, *inl = NULL;
    char p2[256];
    if (json_is_string(v))
        file = json_string_value(v);
    else if (json_is_object(v)) {
        static const char *const keys[] = {"file", "inline", NULL};
        BT__TRY(bt__ld_keys(L, v, path, keys));
        json_t *f = json_object_get(v, "file"), *i = json_object_get(v, "inline");
        if ((f != NULL) == (i != NULL))
            return bt__ld_fail(L, path, "give exactly one of \"file\" or \"inline\"");
        snprintf(p2, sizeof p2, "%s.%s", path, f ? "file" : "inline");
        BT__TRY(bt__ld_str(L, f ? f : i, p2, f ? &file : &inl));
    } else
        return bt__ld_fail(L, path,
                           "expected a file name or {\"file\"|\"inline\": ...} but found %s",
                           bt__ld_jtype(v));
    if (inl) {
        *out = bt__strdup(inl);
        return *out ? BT_OK : BT_NOMEM;
    }
    const char *fpath = json_is_string(v) ? path : p2;
    if (L->embedded) {
        char *full = path_join_norm(L->k->dir ? L->k->dir : "", file);
        if (!full)
            return BT_NOMEM;
        size_t size;
        const char *data = bt__embedded(full, &size);
        if (!data) {
            bt_status st = bt__ld_fail(L, fpath, "built-in source '%s' is not embedded", full);
            free(full);
            return st;
        }
        free(full);
        *out = malloc(size + 1);
        if (!*out)
            return BT_NOMEM;
        memcpy(*out, data, size);
        (*out)[size] = '\0';
        return BT_OK;
    }
    char *full;
    bt_status st = bt__ld_file(L, file, fpath, "source", &full);
    if (st)
        return st;
    *out = bt__read_file(full, NULL);
    if (!*out) {
        st = bt__ld_fail_st(L, fpath, BT_IO, "cannot read source '%s': %s", full, strerror(errno));
        free(full);
        return st;
    }
    free(full);
    return BT_OK;
}

bt_status bt__ld_source(bt__ld *L, const json_t *v, const char *path, char **out)
{
    if (!json_is_array(v))
        return load_one_source(L, v, path, out);
    size_t n = json_array_size(v);
    if (n == 0)
        return bt__ld_fail(L, path, "an empty list of sources");
    BT__TRY(bt__ld_bound(L, v, path, BT__MAX_SOURCES, "source files"));
    char *all = NULL;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char p2[256], *part = NULL;
        snprintf(p2, sizeof p2, "%s[%zu]", path, i);
        const json_t *e = json_array_get(v, i);
        bt_status st = json_is_array(e) ? bt__ld_fail(L, p2, "expected a file name or "
                                                              "{\"file\"|\"inline\": ...} but "
                                                              "found a list")
                                        : load_one_source(L, e, p2, &part);
        if (st) {
            free(all);
            return st;
        }
        size_t pl = strlen(part);
        char *grown = realloc(all, len + pl + 2);
        if (!grown) {
            free(part);
            free(all);
            return BT_NOMEM;
        }
        all = grown;
        memcpy(all + len, part, pl);
        len += pl;
        if (pl && part[pl - 1] != '\n') /* the next file starts on a line of its own */
            all[len++] = '\n';
        all[len] = '\0';
        free(part);
    }
    *out = all;
    return BT_OK;
}

/* s->text becomes pre (may be NULL) + "\n" + s->text. The newline is part of every kernel's text
 * as blocktune has always compiled it (after the prelude, or alone): the source hash that keys
 * stored results and shipped wisdom covers it. */
static bt_status compose(bt__ksource *s, const char *pre)
{
    size_t pl = pre ? strlen(pre) : 0, sl = strlen(s->text);
    char *out = malloc(pl + sl + 2);
    if (!out)
        return BT_NOMEM;
    if (pl)
        memcpy(out, pre, pl);
    out[pl] = '\n';
    memcpy(out + pl + 1, s->text, sl + 1);
    free(s->text);
    s->text = out;
    return BT_OK;
}

/* Composes each of the n sources with its language's prelude from `prelude` (NULL: none). */
static bt_status compose_all(bt__ld *L, const json_t *prelude, const char *ppath, bt__ksource *src,
                             int n)
{
    if (prelude && !json_is_object(prelude))
        return bt__ld_fail(L, ppath, "expected {\"LANGUAGE\": source, ...}, e.g. {\"cuda\": "
                           "\"prelude.cuh\"}");
    const char *lang;
    json_t *x;
    json_object_foreach((json_t *)prelude, lang, x) {
        bool known = false;
        for (int i = 0; i < n; i++)
            known |= !strcmp(src[i].lang, lang);
        if (!known)
            return bt__ld_fail(L, ppath, "a prelude for '%s', which has no source", lang);
    }
    for (int i = 0; i < n; i++) {
        const json_t *p = prelude ? json_object_get(prelude, src[i].lang) : NULL;
        char p2[256], *pre = NULL;
        snprintf(p2, sizeof p2, "%s.%s", ppath, src[i].lang);
        if (p)
            BT__TRY(bt__ld_source(L, p, p2, &pre));
        bt_status st = compose(&src[i], pre);
        free(pre);
        BT__TRY(st);
    }
    return BT_OK;
}

bt_status bt__ld_sources(bt__ld *L, const json_t *v, const char *path, const json_t *prelude,
                         const char *prelude_path, bt__ksource *out, int *n)
{
    if (!json_is_object(v) || json_object_size(v) == 0)
        return bt__ld_fail(L, path, "expected {\"LANGUAGE\": source, ...}, e.g. {\"opencl\": "
                           "\"k.cl\", \"cuda\": \"k.cu\"}");
    BT__TRY(bt__ld_bound(L, v, path, BT__MAX_LANGS, "languages"));
    const char *lang;
    json_t *x;
    json_object_foreach((json_t *)v, lang, x) {
        char p2[256];
        snprintf(p2, sizeof p2, "%s.%s", path, lang);
        bool name_ok = lang[0] >= 'a' && lang[0] <= 'z' && strlen(lang) < BT__LANG_MAX;
        for (const char *c = lang; name_ok && *c; c++)
            name_ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
        if (!name_ok)
            return bt__ld_fail(L, p2, "'%s' is not a language name (lowercase letters, digits "
                               "and '_', at most %d characters: \"cuda\", \"opencl\")", lang,
                               BT__LANG_MAX - 1);
        bt__ksource *s = &out[*n];
        memset(s, 0, sizeof *s);
        snprintf(s->lang, sizeof s->lang, "%s", lang);
        (*n)++; /* counted first: whatever a failure leaves loaded is freed with k */
        BT__TRY(bt__ld_source(L, x, p2, &s->text));
    }
    return compose_all(L, prelude, prelude_path, out, *n);
}
