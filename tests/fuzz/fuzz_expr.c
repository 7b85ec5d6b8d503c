/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_expr.c — libFuzzer target for the expression language (src/core/expr.c).
 *
 * Built with the other targets by CMake (-DBT_FUZZ=ON) and run by tests/fuzz/run.sh; seeds:
 * expr_seeds/, dictionary: expr.dict (docs/fuzzing.md).
 *
 * For every input it parses the bytes (up to the first NUL) against a small symbol table and
 * checks the parse contract (NULL output and a column inside the input on failure), and that a
 * reference recognizer written here (below) refuses the input too, unless the library refused it
 * for a limit (length, nesting, stack). For what parses, it evaluates against several slot vectors including INT64_MIN/INT64_MAX (the sanitizers
 * catch overflow and out-of-bounds) and checks:
 *   - the result against a reference evaluator written here independently (a direct recursive
 *     walk of the source in 128-bit arithmetic, so overflow is found by range checks rather than
 *     by the builtins the library uses), which reads the language as docs/spec.md defines it
 *     (Python's chained comparisons, not/and/or, in / not in, //, True/False, Python's words
 *     refused): it accepts the source, same status, same value;
 *   - that evaluation is deterministic and rendering into buffers of every small size is safe;
 *   - that substituting non-negative slot values for the names (bt__expr_render, with "×" turned
 *     back into '*') gives a constant expression that evaluates to the same status and value.
 */
#include "core/expr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"a", "b", "c", "K", "BLOCK_M", "num_stages", "x1"};
#define NNAMES ((int)(sizeof names / sizeof names[0]))

static bt__symtab *syms;

static void check(int cond)
{
    if (!cond)
        abort();
}

/* --- reference evaluator and recognizer ------------------------------------------------- */

typedef __int128 wide;

typedef struct ref_eval {
    const char *s;
    const int64_t *slots;
    int err;   /* an evaluation error on a live path */
    int bad;   /* the source is not in the language */
    int depth; /* nesting, counted where the library counts it */
    int deep;  /* nested beyond REF_MAX_DEPTH: the reference gave up (input the library refused) */
} ref_eval;

#define REF_MAX_DEPTH 1000

static wide r_ternary(ref_eval *p, int live);
static wide r_unary(ref_eval *p, int live);

static void r_ws(ref_eval *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
        p->s++;
}

static int r_ident(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
}

/* Consumes the punctuation `op` if it is next and not the start of a longer operator
 * ("*" of "**", "/" of "//", "<" of "<=", ">" of ">=", "!" of "!="). */
static int r_punct(ref_eval *p, const char *op)
{
    r_ws(p);
    size_t n = strlen(op);
    if (p->bad || strncmp(p->s, op, n) != 0)
        return 0;
    if (n == 1) {
        char longer = op[0] == '*' || op[0] == '/' ? op[0]
                      : op[0] == '<' || op[0] == '>' || op[0] == '!' ? '='
                                                                      : 0;
        if (longer && p->s[1] == longer)
            return 0;
    }
    p->s += n;
    return 1;
}

/* Consumes the keyword `w` if it is next as a whole word. */
static int r_word(ref_eval *p, const char *w)
{
    r_ws(p);
    size_t n = strlen(w);
    if (p->bad || strncmp(p->s, w, n) != 0 || r_ident((unsigned char)p->s[n]))
        return 0;
    p->s += n;
    return 1;
}

/* 'not' followed by 'in': consumes both. */
static int r_not_in(ref_eval *p)
{
    const char *at = p->s;
    if (r_word(p, "not") && r_word(p, "in"))
        return 1;
    p->s = at;
    return 0;
}

static void r_expect(ref_eval *p, const char *op)
{
    if (!r_punct(p, op))
        p->bad = 1;
}

/* Nesting: one level per ternary (parentheses, arguments, branches, list elements), prefix
 * operator and power. Returns 0 (and stops the walk) past REF_MAX_DEPTH. */
static int r_enter(ref_eval *p)
{
    if (++p->depth > REF_MAX_DEPTH)
        p->deep = p->bad = 1;
    return !p->bad;
}

/* Records an error on a live path when v is outside int64. */
static wide r_fit(ref_eval *p, int live, wide v)
{
    if (live && (v > INT64_MAX || v < INT64_MIN))
        p->err = 1;
    return live && !p->err ? v : 0;
}

static wide r_number(ref_eval *p)
{
    const char *t = p->s;
    wide v = 0;
    int digits = 0;
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
        for (t += 2;; t++) {
            int d = *t >= '0' && *t <= '9'   ? *t - '0'
                    : *t >= 'a' && *t <= 'f' ? *t - 'a' + 10
                    : *t >= 'A' && *t <= 'F' ? *t - 'A' + 10
                                             : -1;
            if (d < 0)
                break;
            digits = 1;
            v = v > INT64_MAX ? v : v * 16 + d;
        }
    } else {
        for (; *t >= '0' && *t <= '9'; t++, digits = 1)
            v = v > INT64_MAX ? v : v * 10 + (*t - '0');
    }
    p->s = t;
    /* integers only: no fraction, exponent, suffix; and int64 */
    if (!digits || r_ident((unsigned char)*t) || *t == '.' || v > INT64_MAX)
        p->bad = 1;
    return p->bad ? 0 : v;
}

static int r_is(const char *t, size_t n, const char *w)
{
    return strlen(w) == n && !strncmp(t, w, n);
}

/* A call of function t[0..n) (the '(' is next): evaluated when live. */
static wide r_call(ref_eval *p, const char *t, size_t n, int live)
{
    static const struct {
        const char *name;
        int lo, hi; /* argument counts; hi 0: unlimited */
    } fns[] = {{"cdiv", 2, 2},     {"min", 2, 0}, {"max", 2, 0},   {"is_pow2", 1, 1},
               {"log2", 1, 1},     {"abs", 1, 1}, {"clamp", 3, 3}, {"align_up", 2, 2}};
    int f = -1;
    for (int i = 0; i < (int)(sizeof fns / sizeof fns[0]); i++)
        if (r_is(t, n, fns[i].name))
            f = i;
    if (f < 0) {
        p->bad = 1;
        return 0;
    }
    int is_min = r_is(t, n, "min");
    wide a[3] = {0, 0, 0}, m = 0;
    int argc = 0;
    r_expect(p, "(");
    do {
        wide v = r_ternary(p, live);
        if (argc < 3)
            a[argc] = v;
        m = argc == 0 ? v : is_min ? (v < m ? v : m) : (v > m ? v : m);
        argc++;
    } while (!p->bad && r_punct(p, ","));
    r_expect(p, ")");
    if (argc < fns[f].lo || (fns[f].hi && argc > fns[f].hi))
        p->bad = 1;
    if (!live || p->err || p->bad)
        return 0;
    if (r_is(t, n, "min") || r_is(t, n, "max"))
        return m;
    if (r_is(t, n, "abs"))
        return r_fit(p, live, a[0] < 0 ? -a[0] : a[0]);
    if (r_is(t, n, "is_pow2")) {
        for (wide k = 1; k <= a[0]; k *= 2)
            if (k == a[0])
                return 1;
        return 0;
    }
    if (r_is(t, n, "log2")) {
        if (a[0] <= 0)
            return p->err = 1, 0;
        int l = 0;
        for (wide k = 2; k <= a[0]; k *= 2)
            l++;
        return l;
    }
    if (r_is(t, n, "clamp")) {
        if (a[1] > a[2])
            return p->err = 1, 0;
        return a[0] < a[1] ? a[1] : a[0] > a[2] ? a[2] : a[0];
    }
    if (r_is(t, n, "cdiv")) { /* ceil(a/b) = -floor(-a/b) */
        if (a[1] == 0)
            return p->err = 1, 0;
        wide x = -a[0], q = x / a[1];
        if (x % a[1] != 0 && ((x < 0) != (a[1] < 0)))
            q--;
        return r_fit(p, live, -q);
    }
    /* align_up */
    if (a[1] <= 0)
        return p->err = 1, 0;
    wide r = ((a[0] % a[1]) + a[1]) % a[1];
    return r_fit(p, live, r ? a[0] + (a[1] - r) : a[0]);
}

static wide r_primary(ref_eval *p, int live)
{
    r_ws(p);
    if (p->bad)
        return 0;
    const char *t = p->s;
    if (r_punct(p, "(")) {
        wide v = r_ternary(p, live);
        r_expect(p, ")");
        return v;
    }
    if (*t >= '0' && *t <= '9')
        return r_number(p);
    size_t n = 0;
    while (r_ident((unsigned char)t[n]))
        n++;
    if (n == 0 || (*t >= '0' && *t <= '9')) {
        p->bad = 1; /* no operand here */
        return 0;
    }
    p->s = t + n;
    r_ws(p);
    if (*p->s == '(')
        return r_call(p, t, n, live);
    if (r_is(t, n, "true") || r_is(t, n, "True"))
        return 1;
    if (r_is(t, n, "false") || r_is(t, n, "False"))
        return 0;
    for (int i = 0; i < NNAMES; i++)
        if (r_is(t, n, names[i]))
            return p->slots[i];
    /* keywords (and, or, not, in; Python's is, if, else, lambda, for, None), function names
     * without '(' and unknown names are no operand */
    p->bad = 1;
    return 0;
}

/* A prefix operator's operand, one level deeper. */
static wide r_deeper(ref_eval *p, wide (*operand)(ref_eval *, int), int live)
{
    if (!r_enter(p))
        return 0;
    wide v = operand(p, live);
    p->depth--;
    return v;
}

static wide r_power(ref_eval *p, int live)
{
    wide b = r_primary(p, live);
    if (!r_punct(p, "**"))
        return b;
    wide e = r_deeper(p, r_unary, live);
    if (!live || p->err || p->bad)
        return 0;
    if (e < 0)
        return p->err = 1, 0;
    if (b == 0 || b == 1)
        return e == 0 ? 1 : b;
    if (b == -1)
        return e % 2 ? -1 : 1;
    wide r = 1;
    for (wide i = 0; i < e; i++) {
        r *= b;
        if (r > INT64_MAX || r < INT64_MIN)
            return p->err = 1, 0;
    }
    return r;
}

static wide r_unary(ref_eval *p, int live)
{
    if (r_punct(p, "-"))
        return r_fit(p, live, -r_deeper(p, r_unary, live));
    if (r_punct(p, "+"))
        return r_deeper(p, r_unary, live);
    if (r_punct(p, "!"))
        return !r_deeper(p, r_unary, live);
    return r_power(p, live);
}

static wide r_mul(ref_eval *p, int live)
{
    wide l = r_unary(p, live);
    for (;;) {
        int o = r_punct(p, "*")    ? '*'
                : r_punct(p, "//") ? 'f'
                : r_punct(p, "/")  ? '/'
                : r_punct(p, "%")  ? '%'
                                   : 0;
        if (!o)
            return l;
        wide r = r_unary(p, live);
        if (!live || p->err || p->bad)
            continue;
        if (o != '*' && r == 0) {
            p->err = 1;
        } else if (o == 'f') { /* Python's //: the floor of the exact quotient */
            wide q = l / r;
            if (q * r != l && ((l < 0) != (r < 0)))
                q--;
            l = r_fit(p, live, q);
        } else {
            l = r_fit(p, live, o == '*' ? l * r : o == '/' ? l / r : l % r);
        }
    }
}

static wide r_add(ref_eval *p, int live)
{
    wide l = r_mul(p, live);
    for (;;) {
        int o = r_punct(p, "+") ? '+' : r_punct(p, "-") ? '-' : 0;
        if (!o)
            return l;
        wide r = r_mul(p, live);
        l = r_fit(p, live, o == '+' ? l + r : l - r);
    }
}

/* The comparison operator next, consumed: '<' '>' 'L' (<=) 'G' (>=) '=' '!', or 0. */
static int r_compare_op(ref_eval *p)
{
    return r_punct(p, "==")   ? '='
           : r_punct(p, "!=") ? '!'
           : r_punct(p, "<=") ? 'L'
           : r_punct(p, ">=") ? 'G'
           : r_punct(p, "<")  ? '<'
           : r_punct(p, ">")  ? '>'
                              : 0;
}

/* 'in' or 'not in' and its list [..] / tuple (..,) (a parenthesized single element without a
 * comma is no tuple); every element is evaluated when live. Whether x is among them. */
static int r_in_list(ref_eval *p, int live, wide x)
{
    const char *close = r_punct(p, "[") ? "]" : r_punct(p, "(") ? ")" : NULL;
    if (!close) {
        p->bad = 1;
        return 0;
    }
    int found = 0, count = 0, comma = 0;
    while (!p->bad && !r_punct(p, close)) {
        wide v = r_ternary(p, live);
        count++;
        found |= live && v == x;
        comma = r_punct(p, ",");
        if (!comma) {
            r_expect(p, close);
            break;
        }
    }
    if (*close == ')' && count == 1 && !comma)
        p->bad = 1;
    return found;
}

/* Python's comparisons: a op1 b op2 c ... is a op1 b and b op2 c ..., each operand evaluated
 * once, those after a false link not at all; 'in' / 'not in' end a chain. A lone operand keeps
 * its value; a chain gives 0 or 1. */
static wide r_compare(ref_eval *p, int live)
{
    wide l = r_add(p, live);
    int links = 0, go = live;
    wide all = 1;
    for (;;) {
        const char *at = p->s;
        int negate = r_not_in(p);
        if (negate || r_word(p, "in")) {
            int found = r_in_list(p, go && !p->err, l);
            if (go)
                all = found != negate;
            at = p->s;
            if (r_compare_op(p) || r_word(p, "in") || r_not_in(p))
                p->bad = 1; /* nothing follows 'in [..]' in a chain */
            p->s = at;
            return all;
        }
        p->s = at;
        int o = r_compare_op(p);
        if (!o)
            return links ? all : l;
        wide r = r_add(p, go && !p->err);
        if (go && !p->err) {
            int holds = o == '=' ? l == r : o == '!' ? l != r : o == '<' ? l < r
                        : o == '>' ? l > r : o == 'L' ? l <= r : l >= r;
            if (!holds)
                all = 0, go = 0;
        }
        l = r;
        links++;
    }
}

/* 'not' binds looser than the comparisons, tighter than and/or. */
static wide r_not(ref_eval *p, int live)
{
    if (r_word(p, "not"))
        return !r_deeper(p, r_not, live);
    return r_compare(p, live);
}

static wide r_and(ref_eval *p, int live)
{
    wide l = r_not(p, live);
    while (r_punct(p, "&&") || r_word(p, "and")) {
        int go = live && !p->err && l != 0;
        wide r = r_not(p, go);
        l = go ? r != 0 : 0;
    }
    return l;
}

static wide r_or(ref_eval *p, int live)
{
    wide l = r_and(p, live);
    while (r_punct(p, "||") || r_word(p, "or")) {
        int go = live && !p->err && l == 0;
        wide r = r_and(p, go);
        l = go ? r != 0 : 1;
    }
    return l;
}

static wide r_ternary(ref_eval *p, int live)
{
    if (!r_enter(p))
        return 0;
    wide c = r_or(p, live);
    if (r_punct(p, "?")) {
        int ok = live && !p->err;
        wide a = r_ternary(p, ok && c != 0);
        r_expect(p, ":");
        wide b = r_ternary(p, ok && c == 0);
        c = c ? a : b;
    }
    p->depth--;
    return c;
}

/* Reads src as the language defines it and evaluates it against slots: BT_OK with *out,
 * BT_EVAL, BT_PARSE when src is not in the language, or -1 when it nests deeper than the
 * reference follows. */
static int reference_eval(const char *src, const int64_t *slots, int64_t *out)
{
    ref_eval p = {src, slots, 0, 0, 0, 0};
    wide v = r_ternary(&p, 1);
    r_ws(&p);
    if (*p.s != '\0')
        p.bad = 1;
    if (p.deep)
        return -1;
    if (p.bad)
        return BT_PARSE;
    if (p.err)
        return BT_EVAL;
    check(v >= INT64_MIN && v <= INT64_MAX);
    *out = (int64_t)v;
    return BT_OK;
}

/* --- checks ----------------------------------------------------------------------------- */

/* Turns every UTF-8 "×" back into '*', in place. */
static void unrender(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if ((unsigned char)r[0] == 0xc3 && (unsigned char)r[1] == 0x97) {
            *w++ = '*';
            r += 2;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}

static void exercise(const bt__expr *e, const int64_t *slots, int nonneg)
{
    int64_t v1 = 0, v2 = 0;
    bt_diag d = {0};
    bt_status s1 = bt__expr_eval(e, slots, &v1, &d);
    check(s1 == BT_OK || s1 == BT_EVAL);
    check(s1 == BT_OK || d.msg[0] != '\0');
    bt_status s2 = bt__expr_eval(e, slots, &v2, NULL);
    check(s1 == s2 && v1 == v2);
    int64_t vr = 0;
    int sr = reference_eval(bt__expr_source(e), slots, &vr);
    if (sr != (int)s1 || (s1 == BT_OK && vr != v1)) {
        fprintf(stderr, "mismatch on \"%s\": library %d %lld (%s), reference %d %lld\n",
                bt__expr_source(e), s1, (long long)v1, d.msg, sr, (long long)vr);
        abort();
    }

    static char small[24];
    for (size_t size = 0; size < sizeof small; size++)
        check(bt__expr_render(e, slots, small, size) == small &&
              (size == 0 || strlen(small) < size));
    /* A value takes at most 20 bytes and replaces a name of at least 1; "×" replaces one '*'
     * with 2: 21 bytes per source byte always suffice, so the full rendering is never cut. */
    size_t cap = 21 * strlen(bt__expr_source(e)) + 1;
    char *buf = malloc(cap);
    if (!buf)
        return;
    bt__expr_render(e, NULL, buf, cap);
    check(strlen(buf) < cap - 1);
    bt__expr_render(e, slots, buf, cap);
    check(strlen(buf) < cap - 1);
    if (!nonneg) {
        free(buf);
        return;
    }
    unrender(buf);
    bt__expr *c = NULL;
    bt_status ps = bt__expr_parse(buf, syms, &c, &d);
    if (ps != BT_OK) {
        /* Only the length limit may reject the substituted form (values are longer than names). */
        check(ps == BT_PARSE && strlen(buf) > BT__EXPR_MAX_LEN);
        free(buf);
        return;
    }
    check(bt__expr_is_const(c));
    int64_t v3 = 0;
    bt_status s3 = bt__expr_eval(c, NULL, &v3, NULL);
    check(s3 == s1 && v3 == v1);
    bt__expr_free(c);
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!syms) {
        syms = bt__symtab_new();
        for (int i = 0; i < NNAMES; i++)
            check(bt__symtab_add(syms, names[i]) == i);
    }
    char *src = malloc(size + 1);
    if (!src)
        return 0;
    memcpy(src, data, size);
    src[size] = '\0';
    size_t len = strlen(src);

    bt__expr *e = (bt__expr *)src;
    bt_diag d = {0};
    bt_status st = bt__expr_parse(src, syms, &e, &d);
    if (st != BT_OK) {
        check(st == BT_PARSE && e == NULL && d.msg[0] != '\0');
        check(d.column >= 1 && (size_t)d.column <= len + 1);
        /* Past the limits (length, nesting, stack) the library refuses what may be valid;
         * otherwise the reference must find the source outside the language too. */
        if (!strstr(d.msg, "too long") && !strstr(d.msg, "nested too deeply") &&
            !strstr(d.msg, "too complex")) {
            static const int64_t zeros[NNAMES];
            int64_t vr = 0;
            int sr = reference_eval(src, zeros, &vr);
            if (sr != BT_PARSE && sr != -1) {
                fprintf(stderr, "mismatch on \"%s\": library refuses it (%s), reference %d\n",
                        src, d.msg, sr);
                abort();
            }
        }
        free(src);
        return 0;
    }
    check(e != NULL && strcmp(bt__expr_source(e), src) == 0);
    int any = 0;
    for (int i = 0; i < NNAMES; i++)
        any |= bt__expr_uses(e, i);
    check(any == !bt__expr_is_const(e));
    check(bt__expr_slots_needed(e) <= NNAMES);

    static const int64_t edge[] = {0, 1, -1, 2, 16, 64, INT64_MAX, INT64_MIN, 3, -2};
    int64_t slots[NNAMES];
    /* all zeros, all ones, then rotations of the edge values */
    for (int round = 0; round < 6; round++) {
        int nonneg = 1;
        for (int i = 0; i < NNAMES; i++) {
            slots[i] = round == 0 ? 0
                       : round == 1
                           ? 1
                           : edge[(size_t)(i + round * 3) % (sizeof edge / sizeof edge[0])];
            nonneg &= slots[i] >= 0;
        }
        exercise(e, slots, nonneg);
    }
    /* values taken from the input itself */
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    for (int i = 0; i < NNAMES; i++) {
        h = h * 6364136223846793005ULL + 1442695040888963407ULL;
        slots[i] = (int64_t)(h >> (h & 63 ? (h & 63) : 1)); /* non-negative, varied magnitude */
    }
    exercise(e, slots, 1);
    bt__expr_free(e);
    free(src);
    return 0;
}
