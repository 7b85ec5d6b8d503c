/* SPDX-License-Identifier: Apache-2.0 */
/*
 * t1py.c — the Python that T1 files hold (t1.h): a tuning parameter's "Values" (a list, a
 * tuple, a list comprehension over range() or a list, list(...), range(...)) evaluated to
 * integers, and an argument's "Size" rewritten into an expression over problem variables, each
 * as Kernel Tuner's tune_kernel_T1 eval()s them. Element expressions are expr.h's language (which
 * reads Python's operators); what it lacks is an error at its offset.
 */
#include "core/t1.h"

#include "core/expr.h"
#include "core/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NEST 16 /* list(list(...)) and comprehensions over comprehensions */

typedef struct vec {
    int64_t *v;
    size_t n, cap;
} vec;

typedef struct pyctx {
    const char *t;
    size_t max;
    int depth;
    bt__t1err *err;
} pyctx;

static bt_status failv(bt__t1err *err, size_t off, const char *fmt, va_list ap)
{
    err->off = off;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    return BT_PARSE;
}

static bt_status fail(pyctx *c, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bt_status fail(pyctx *c, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bt_status st = failv(c->err, off, fmt, ap);
    va_end(ap);
    return st;
}

static bt_status push(pyctx *c, vec *o, int64_t x, size_t off)
{
    if (o->n == c->max)
        return fail(c, off, "more than %zu values", c->max);
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 16;
        int64_t *v = realloc(o->v, sizeof *v * cap);
        if (!v)
            return BT_NOMEM;
        o->v = v;
        o->cap = cap;
    }
    o->v[o->n++] = x;
    return BT_OK;
}

static bool is_id(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

static void trim(const char *t, size_t *lo, size_t *hi)
{
    while (*lo < *hi && isspace((unsigned char)t[*lo]))
        (*lo)++;
    while (*hi > *lo && isspace((unsigned char)t[*hi - 1]))
        (*hi)--;
}

/* Where the bracket opened at t[i] closes, within [i, hi); hi when it does not. */
static size_t closing(const char *t, size_t i, size_t hi)
{
    int depth = 0;
    for (size_t j = i; j < hi; j++) {
        if (t[j] == '(' || t[j] == '[' || t[j] == '{')
            depth++;
        else if ((t[j] == ')' || t[j] == ']' || t[j] == '}') && --depth == 0)
            return j;
    }
    return hi;
}

/* The first occurrence in [lo, hi), outside brackets, of ',' (w = ",") or of the word w (not part
 * of a longer name); hi when there is none. */
static size_t find_top(const char *t, size_t lo, size_t hi, const char *w)
{
    int depth = 0;
    size_t wl = strlen(w);
    for (size_t j = lo; j < hi; j++) {
        char ch = t[j];
        if (ch == '(' || ch == '[' || ch == '{')
            depth++;
        else if (ch == ')' || ch == ']' || ch == '}')
            depth--;
        else if (depth == 0 && w[0] == ',' && ch == ',')
            return j;
        else if (depth == 0 && w[0] != ',' && j + wl <= hi && !strncmp(t + j, w, wl) &&
                 (j == lo || !is_id(t[j - 1])) && (j + wl == hi || !is_id(t[j + wl])))
            return j;
    }
    return hi;
}

/* Whether [lo, hi) is the word w followed by a bracket pair ending at hi; *in gets the first
 * character inside. */
static bool call_of(const char *t, size_t lo, size_t hi, const char *w, size_t *in)
{
    size_t wl = strlen(w), j = lo + wl;
    if (hi - lo <= wl || strncmp(t + lo, w, wl) != 0 || is_id(t[j]))
        return false;
    while (j < hi && isspace((unsigned char)t[j]))
        j++;
    if (j >= hi || t[j] != '(' || closing(t, j, hi) != hi - 1)
        return false;
    *in = j + 1;
    return true;
}

/* Parses the expression at [lo, hi) with the names of syms (NULL: none). */
static bt_status parse(pyctx *c, size_t lo, size_t hi, const bt__symtab *syms, bt__expr **e)
{
    const char *t = c->t;
    trim(t, &lo, &hi);
    if (lo >= hi)
        return fail(c, lo, "an empty element");
    for (size_t j = lo; j < hi; j++)
        if (t[j] == '/' && !(j + 1 < hi && t[j + 1] == '/') && !(j > lo && t[j - 1] == '/'))
            return fail(c, j, "'/' is Python's true division, which gives a float: write '//'");
    char *src = malloc(hi - lo + 1);
    if (!src)
        return BT_NOMEM;
    memcpy(src, t + lo, hi - lo);
    src[hi - lo] = '\0';
    bt_diag d;
    bt__diag_clear(&d);
    bt_status st = bt__expr_parse(src, syms, e, &d);
    if (st != BT_OK && st != BT_NOMEM)
        st = fail(c, lo + (d.column > 0 ? (size_t)d.column - 1 : 0), "in '%.200s': %s", src,
                  d.msg);
    free(src);
    return st;
}

static bt_status eval(pyctx *c, const bt__expr *e, size_t lo, const int64_t *slots, int64_t *out)
{
    bt_diag d;
    bt__diag_clear(&d);
    if (bt__expr_eval(e, slots, out, &d) != BT_OK)
        return fail(c, lo, "%s", d.msg);
    return BT_OK;
}

/* A constant expression's value. */
static bt_status constant(pyctx *c, size_t lo, size_t hi, int64_t *out)
{
    bt__expr *e = NULL;
    BT__TRY(parse(c, lo, hi, NULL, &e));
    bt_status st = eval(c, e, lo, NULL, out);
    bt__expr_free(e);
    return st;
}

/* range(...): the arguments at [lo, hi). */
static bt_status range_of(pyctx *c, size_t lo, size_t hi, vec *o)
{
    int64_t a[3];
    int n = 0;
    for (size_t p = lo; p < hi || n == 0;) {
        size_t comma = find_top(c->t, p, hi, ",");
        if (n == 3)
            return fail(c, p, "range() takes at most 3 arguments");
        BT__TRY(constant(c, p, comma, &a[n++]));
        p = comma + 1;
    }
    int64_t start = n > 1 ? a[0] : 0, stop = n > 1 ? a[1] : a[0], step = n > 2 ? a[2] : 1;
    if (step == 0)
        return fail(c, lo, "range()'s step must not be zero");
    uint64_t count = 0;
    if (step > 0 && start < stop)
        count = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
    else if (step < 0 && start > stop)
        count = ((uint64_t)start - (uint64_t)stop - 1) / (uint64_t)(-(step + 1) + 1ULL) + 1;
    if (count > c->max)
        return fail(c, lo, "range() of %llu values: at most %zu", (unsigned long long)count,
                    c->max);
    for (uint64_t i = 0; i < count; i++)
        BT__TRY(push(c, o, start + (int64_t)i * step, lo));
    return BT_OK;
}

static bt_status list_of(pyctx *c, size_t lo, size_t hi, vec *o);

/* [ELEM for NAME in ITER if COND]: [lo, hi) is inside the brackets, "for" at f. */
static bt_status comprehension(pyctx *c, size_t lo, size_t f, size_t hi, vec *o)
{
    const char *t = c->t;
    size_t p = f + 3, q;
    while (p < hi && isspace((unsigned char)t[p]))
        p++;
    for (q = p; q < hi && is_id(t[q]); q++)
        ;
    char name[64];
    if (q == p || q - p >= sizeof name || isdigit((unsigned char)t[p]))
        return fail(c, p, "expected a name after 'for'");
    memcpy(name, t + p, q - p);
    name[q - p] = '\0';
    size_t in = find_top(t, q, hi, "in");
    for (size_t j = q; j < in; j++)
        if (!isspace((unsigned char)t[j]))
            return fail(c, j, "expected 'in' after 'for %s' (one name, no tuples)", name);
    if (in == hi)
        return fail(c, q, "expected 'in' after 'for %s'", name);
    size_t cond = find_top(t, in + 2, hi, "if");
    if (find_top(t, in + 2, hi, "for") < hi)
        return fail(c, find_top(t, in + 2, hi, "for"), "one 'for' per list (no nested loops)");
    vec it = {0};
    bt__symtab *syms = bt__symtab_new();
    bt__expr *elem = NULL, *pred = NULL;
    if (!syms)
        return BT_NOMEM;
    bt_status st = BT_OK;
    if (bt__symtab_add(syms, name) != 0) /* the slot of the only name is 0 */
        st = bt__expr_is_reserved(name) ? fail(c, p, "'%s' cannot be a loop variable", name)
                                        : BT_NOMEM;
    if (!st)
        st = list_of(c, in + 2, cond, &it);
    if (!st)
        st = parse(c, lo, f, syms, &elem);
    if (!st && cond < hi)
        st = parse(c, cond + 2, hi, syms, &pred);
    for (size_t i = 0; !st && i < it.n; i++) {
        int64_t keep = 1, x;
        if (pred)
            st = eval(c, pred, cond + 2, &it.v[i], &keep);
        if (!st && keep && !(st = eval(c, elem, lo, &it.v[i], &x)))
            st = push(c, o, x, lo);
    }
    bt__expr_free(elem);
    bt__expr_free(pred);
    bt__symtab_free(syms);
    free(it.v);
    return st;
}

/* Comma-separated elements at [lo, hi) (a trailing comma allowed). */
static bt_status elements(pyctx *c, size_t lo, size_t hi, vec *o)
{
    for (size_t p = lo; p < hi;) {
        size_t comma = find_top(c->t, p, hi, ","), a = p, b = comma;
        trim(c->t, &a, &b);
        if (a == b && comma == hi && o->n > 0)
            break; /* [1, 2, ] */
        int64_t x;
        BT__TRY(constant(c, p, comma, &x));
        BT__TRY(push(c, o, x, a));
        p = comma + 1;
    }
    return BT_OK;
}

/* The list at [lo, hi): range(...), list(...), [...] or a tuple. */
static bt_status list_of(pyctx *c, size_t lo, size_t hi, vec *o)
{
    const char *t = c->t;
    size_t in;
    trim(t, &lo, &hi);
    if (++c->depth > MAX_NEST)
        return fail(c, lo, "lists nested more than %d deep", MAX_NEST);
    bt_status st;
    if (call_of(t, lo, hi, "range", &in))
        st = range_of(c, in, hi - 1, o);
    else if (call_of(t, lo, hi, "list", &in) || call_of(t, lo, hi, "tuple", &in))
        st = list_of(c, in, hi - 1, o);
    else if (lo < hi && (t[lo] == '[' || t[lo] == '(') && closing(t, lo, hi) == hi - 1) {
        size_t f = find_top(t, lo + 1, hi - 1, "for");
        if (f < hi - 1)
            st = comprehension(c, lo + 1, f, hi - 1, o);
        else if (t[lo] == '(' && find_top(t, lo + 1, hi - 1, ",") == hi - 1)
            st = fail(c, lo, "'(...)' without a comma is one value, not a tuple: write '[...]'");
        else
            st = elements(c, lo + 1, hi - 1, o);
    } else
        st = fail(c, lo, "expected a Python list: '[1, 2, 4]', '[2**i for i in range(6)]' or "
                         "'list(range(1, 9))'");
    c->depth--;
    return st;
}

bt_status bt__t1_values(const char *text, size_t max, int64_t **vals, size_t *n, bt__t1err *err)
{
    pyctx c = {text, max, 0, err};
    vec o = {0};
    *vals = NULL;
    *n = 0;
    bt_status st = list_of(&c, 0, strlen(text), &o);
    if (!st && o.n == 0)
        st = fail(&c, 0, "the list is empty");
    if (st) {
        free(o.v);
        return st;
    }
    *vals = o.v;
    *n = o.n;
    return BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Sizes
 * ------------------------------------------------------------------------------------------- */

/* "ProblemSize[d]" (or "ProblemSize" when it is one number) at t[i] (the name ends at j): the
 * problem variable into b; *end past what was read. */
static bt_status problem_size(pyctx *c, size_t i, size_t j, const bt__t1names *nm, bt__sbuf *b,
                              size_t *end)
{
    const char *t = c->t;
    size_t k = j;
    while (isspace((unsigned char)t[k]))
        k++;
    int d = 0;
    if (t[k] != '[') {
        if (!nm->ps_scalar || !nm->ps_names[0])
            return fail(c, i, nm->ps_scalar || nm->nps == 0
                                  ? "there is no ProblemSize to use"
                                  : "ProblemSize is a list: write ProblemSize[0]");
        *end = j;
    } else {
        size_t r = closing(t, k, strlen(t));
        char *stop = NULL;
        long v = strtol(t + k + 1, &stop, 10);
        while (stop && isspace((unsigned char)*stop))
            stop++;
        if (!t[r] || stop != t + r || stop == t + k + 1 || v < 0 || v > 2)
            return fail(c, i, "write ProblemSize[0], ProblemSize[1] or ProblemSize[2]");
        d = (int)v;
        *end = r + 1;
    }
    if (d >= nm->nps)
        return fail(c, i, "ProblemSize has %d entr%s: there is no ProblemSize[%d]", nm->nps,
                    nm->nps == 1 ? "y" : "ies", d);
    if (!nm->ps_names[d])
        return fail(c, i, "ProblemSize[%d] depends on parameters: a buffer's size cannot (a "
                          "buffer is made once per problem, before any config)", d);
    bt__sbuf_printf(b, "%s", nm->ps_names[d]);
    return BT_OK;
}

static int param_of(const bt__t1names *nm, const char *t, size_t lo, size_t hi)
{
    for (int p = 0; p < nm->nparams; p++)
        if (strlen(nm->params[p]) == hi - lo && !strncmp(nm->params[p], t + lo, hi - lo))
            return p;
    return -1;
}

/* "max(P)" or "min(P)" of a parameter P at t[i] (the function's name ends at j): its largest or
 * smallest value into b, *end past the ')'; false (nothing written) for any other call. */
static bool extreme(const char *t, size_t i, size_t j, const bt__t1names *nm, bt__sbuf *b,
                    size_t *end)
{
    size_t k = j, a, z;
    while (isspace((unsigned char)t[k]))
        k++;
    if (t[k] != '(')
        return false;
    for (a = k + 1; isspace((unsigned char)t[a]); a++)
        ;
    for (z = a; is_id(t[z]); z++)
        ;
    size_t r = z;
    while (isspace((unsigned char)t[r]))
        r++;
    int p = t[r] == ')' ? param_of(nm, t, a, z) : -1;
    if (p < 0)
        return false;
    bool hi = t[i + 1] == 'a';
    int64_t x = nm->values[p][0];
    for (size_t v = 1; v < nm->nvalues[p]; v++)
        if (hi ? nm->values[p][v] > x : nm->values[p][v] < x)
            x = nm->values[p][v];
    bt__sbuf_printf(b, "%lld", (long long)x);
    *end = r + 1;
    return true;
}

bt_status bt__t1_size(const char *text, const bt__t1names *nm, char **out, bt__t1err *err)
{
    pyctx c = {text, 0, 0, err};
    bt__sbuf b = {0};
    bt_status st = BT_OK;
    *out = NULL;
    for (size_t i = 0, n = strlen(text); i < n && !st;) {
        if (!(isalpha((unsigned char)text[i]) || text[i] == '_') || (i && is_id(text[i - 1]))) {
            bt__sbuf_printf(&b, "%c", text[i++]);
            continue;
        }
        size_t j = i, end = 0;
        while (is_id(text[j]))
            j++;
        if (j - i == 11 && !strncmp(text + i, "ProblemSize", 11))
            st = problem_size(&c, i, j, nm, &b, &end);
        else if (j - i == 3 && (!strncmp(text + i, "max", 3) || !strncmp(text + i, "min", 3)) &&
                 extreme(text, i, j, nm, &b, &end))
            ;
        else if (param_of(nm, text, i, j) >= 0)
            st = fail(&c, i, "'%.*s' is a parameter: a buffer is made once per problem, before "
                             "any config (write max(%.*s) for its largest value)",
                      (int)(j - i), text + i, (int)(j - i), text + i);
        else {
            bt__sbuf_printf(&b, "%.*s", (int)(j - i), text + i);
            end = j;
        }
        i = end;
    }
    if (!st && b.oom)
        st = BT_NOMEM;
    else if (!st && !b.s)
        st = fail(&c, 0, "an empty size");
    if (st) {
        bt__sbuf_free(&b);
        return st;
    }
    *out = b.s;
    return BT_OK;
}
