/*
 * fuzz_expr.c — libFuzzer target for the expression language (src/core/expr.c).
 *
 * Built with the other targets by CMake (-DBT_FUZZ=ON) and run by tests/fuzz/run.sh; seeds:
 * expr_seeds/, dictionary: expr.dict (docs/fuzzing.md).
 *
 * For every input it parses the bytes (up to the first NUL) against a small symbol table and
 * checks the parse contract (NULL output and a column inside the input on failure). For what
 * parses, it evaluates against several slot vectors including INT64_MIN/INT64_MAX (the sanitizers
 * catch overflow and out-of-bounds) and checks:
 *   - the result against a reference evaluator written here independently (a direct recursive
 *     walk of the source in 128-bit arithmetic, so overflow is found by range checks rather than
 *     by the builtins the library uses): same status, same value;
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

/* --- reference evaluator (valid input only) ------------------------------------------------ */

typedef __int128 wide;

typedef struct ref_eval {
    const char *s;
    const int64_t *slots;
    int err;
} ref_eval;

static wide r_ternary(ref_eval *p, int live);

static void r_ws(ref_eval *p)
{
    while (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')
        p->s++;
}

/* Consumes the operator `op` if it is next (and, for one-character operators, not the start of a
 * longer one). */
static int r_eat(ref_eval *p, const char *op)
{
    r_ws(p);
    size_t n = strlen(op);
    if (strncmp(p->s, op, n) != 0)
        return 0;
    if (n == 1 && (op[0] == '*' || op[0] == '<' || op[0] == '>' || op[0] == '!') &&
        p->s[1] == (op[0] == '*' ? '*' : '='))
        return 0;
    p->s += n;
    return 1;
}

/* Records an error on a live path when v is outside int64. */
static wide r_fit(ref_eval *p, int live, wide v)
{
    if (live && (v > INT64_MAX || v < INT64_MIN))
        p->err = 1;
    return live && !p->err ? v : 0;
}

static int r_ident(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (c >= '0' && c <= '9');
}

static wide r_unary(ref_eval *p, int live);

static wide r_primary(ref_eval *p, int live)
{
    r_ws(p);
    const char *t = p->s;
    if (*t == '(') {
        p->s++;
        wide v = r_ternary(p, live);
        r_eat(p, ")");
        return v;
    }
    if (*t >= '0' && *t <= '9') {
        wide v = 0;
        if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) {
            for (t += 2; r_ident(*t); t++)
                v = v * 16 + (*t <= '9' ? *t - '0' : (*t | 0x20) - 'a' + 10);
        } else {
            for (; *t >= '0' && *t <= '9'; t++)
                v = v * 10 + (*t - '0');
        }
        p->s = t;
        return v;
    }
    size_t n = 0;
    while (r_ident(t[n]))
        n++;
    p->s = t + n;
    if (n == 4 && !strncmp(t, "true", 4))
        return 1;
    if (n == 5 && !strncmp(t, "false", 5))
        return 0;
    for (int i = 0; i < NNAMES; i++)
        if (strlen(names[i]) == n && !strncmp(t, names[i], n))
            return p->slots[i];
    /* a function call */
    wide a[64];
    int argc = 0;
    r_eat(p, "(");
    do {
        wide v = r_ternary(p, live);
        if (argc < 64)
            a[argc++] = v;
        else
            a[63] = (n == 3 && !strncmp(t, "min", 3)) ? (v < a[63] ? v : a[63])
                                                      : (v > a[63] ? v : a[63]);
    } while (r_eat(p, ","));
    r_eat(p, ")");
    if (!live || p->err)
        return 0;
#define FN(name) (n == sizeof name - 1 && !strncmp(t, name, n))
    if (FN("min") || FN("max")) {
        wide m = a[0];
        for (int i = 1; i < argc; i++)
            if (FN("min") ? a[i] < m : a[i] > m)
                m = a[i];
        return m;
    }
    if (FN("abs"))
        return r_fit(p, live, a[0] < 0 ? -a[0] : a[0]);
    if (FN("is_pow2")) {
        for (wide k = 1; k <= a[0]; k *= 2)
            if (k == a[0])
                return 1;
        return 0;
    }
    if (FN("log2")) {
        if (a[0] <= 0)
            return p->err = 1, 0;
        int l = 0;
        for (wide k = 2; k <= a[0]; k *= 2)
            l++;
        return l;
    }
    if (FN("clamp")) {
        if (a[1] > a[2])
            return p->err = 1, 0;
        return a[0] < a[1] ? a[1] : a[0] > a[2] ? a[2] : a[0];
    }
    if (FN("cdiv")) { /* ceil(a/b) = -floor(-a/b) */
        if (a[1] == 0)
            return p->err = 1, 0;
        wide x = -a[0], q = x / a[1];
        if (x % a[1] != 0 && ((x < 0) != (a[1] < 0)))
            q--;
        return r_fit(p, live, -q);
    }
    if (FN("align_up")) {
        if (a[1] <= 0)
            return p->err = 1, 0;
        wide r = ((a[0] % a[1]) + a[1]) % a[1];
        return r_fit(p, live, r ? a[0] + (a[1] - r) : a[0]);
    }
#undef FN
    abort(); /* the library accepted a function the reference does not know */
}

static wide r_power(ref_eval *p, int live)
{
    wide b = r_primary(p, live);
    if (!r_eat(p, "**"))
        return b;
    wide e = r_unary(p, live);
    if (!live || p->err)
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
    if (r_eat(p, "-"))
        return r_fit(p, live, -r_unary(p, live));
    if (r_eat(p, "+"))
        return r_unary(p, live);
    if (r_eat(p, "!"))
        return !r_unary(p, live);
    return r_power(p, live);
}

static wide r_mul(ref_eval *p, int live)
{
    wide l = r_unary(p, live);
    for (;;) {
        int o = r_eat(p, "*") ? '*' : r_eat(p, "/") ? '/' : r_eat(p, "%") ? '%' : 0;
        if (!o)
            return l;
        wide r = r_unary(p, live);
        if (!live || p->err)
            continue;
        if (o != '*' && r == 0)
            p->err = 1;
        else
            l = r_fit(p, live, o == '*' ? l * r : o == '/' ? l / r : l % r);
    }
}

static wide r_add(ref_eval *p, int live)
{
    wide l = r_mul(p, live);
    for (;;) {
        int o = r_eat(p, "+") ? '+' : r_eat(p, "-") ? '-' : 0;
        if (!o)
            return l;
        wide r = r_mul(p, live);
        l = r_fit(p, live, o == '+' ? l + r : l - r);
    }
}

static wide r_rel(ref_eval *p, int live)
{
    wide l = r_add(p, live);
    for (;;) {
        if (r_eat(p, "<="))
            l = l <= r_add(p, live);
        else if (r_eat(p, ">="))
            l = l >= r_add(p, live);
        else if (r_eat(p, "<"))
            l = l < r_add(p, live);
        else if (r_eat(p, ">"))
            l = l > r_add(p, live);
        else
            return l;
    }
}

static wide r_eq(ref_eval *p, int live)
{
    wide l = r_rel(p, live);
    for (;;) {
        if (r_eat(p, "=="))
            l = l == r_rel(p, live);
        else if (r_eat(p, "!="))
            l = l != r_rel(p, live);
        else
            return l;
    }
}

static wide r_and(ref_eval *p, int live)
{
    wide l = r_eq(p, live);
    while (r_eat(p, "&&")) {
        int go = live && !p->err && l != 0;
        wide r = r_eq(p, go);
        l = go ? r != 0 : 0;
    }
    return l;
}

static wide r_or(ref_eval *p, int live)
{
    wide l = r_and(p, live);
    while (r_eat(p, "||")) {
        int go = live && !p->err && l == 0;
        wide r = r_and(p, go);
        l = go ? r != 0 : 1;
    }
    return l;
}

static wide r_ternary(ref_eval *p, int live)
{
    wide c = r_or(p, live);
    if (!r_eat(p, "?"))
        return c;
    int ok = live && !p->err;
    wide a = r_ternary(p, ok && c != 0);
    r_eat(p, ":");
    wide b = r_ternary(p, ok && c == 0);
    return c ? a : b;
}

/* Evaluates a source the library parsed: BT_OK with *out, or BT_EVAL. */
static bt_status reference_eval(const char *src, const int64_t *slots, int64_t *out)
{
    ref_eval p = {src, slots, 0};
    wide v = r_ternary(&p, 1);
    r_ws(&p);
    check(*p.s == '\0'); /* the reference consumed exactly what the library accepted */
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
    bt_status sr = reference_eval(bt__expr_source(e), slots, &vr);
    if (sr != s1 || (s1 == BT_OK && vr != v1)) {
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
