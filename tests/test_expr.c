/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_expr.c — tests of the expression language (src/core/expr.c): symbol table, precedence,
 * functions, short-circuit, evaluation and parse errors with their exact messages and columns,
 * rendering, queries, limits against hostile input, and evaluation speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/expr.h"
#include "core/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names every test can use, and their values. */
static const struct {
    const char *name;
    int64_t value;
} fixture[] = {
    {"M", 1000},
    {"N", 512},
    {"K", 0},
    {"BLOCK_M", 128},
    {"BLOCK_N", 256},
    {"BLOCK_K", 64},
    {"num_stages", 5},
    {"elem_bytes", 2},
    {"smem_per_block", 232448},
    {"x", 7},
    {"neg", -7},
    {"big", INT64_MAX},
    {"small", INT64_MIN},
    {"one", 1},
    {"block_size_x", 32},
    {"block_size_y", 8},
    {"tile_size_x", 4},
};

static bt__symtab *syms;
static int64_t slots[32];

static int setup(void **state)
{
    (void)state;
    syms = bt__symtab_new();
    if (!syms)
        return -1;
    for (size_t i = 0; i < BT__ARRAY_LEN(fixture); i++) {
        int s = bt__symtab_add(syms, fixture[i].name);
        if (s != (int)i)
            return -1;
        slots[s] = fixture[i].value;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bt__symtab_free(syms);
    syms = NULL;
    return 0;
}

static int slot_of(const char *name)
{
    int s = bt__symtab_find(syms, name);
    assert_true(s >= 0);
    return s;
}

/* Parses and evaluates src; fails the test (printing the diag) unless both succeed. */
static int64_t ev(const char *src)
{
    bt__expr *e = NULL;
    bt_diag d = {0};
    bt_status st = bt__expr_parse(src, syms, &e, &d);
    if (st != BT_OK)
        print_error("parse of \"%s\" failed: %s\n", src, d.msg);
    assert_int_equal(st, BT_OK);
    int64_t v = 0;
    st = bt__expr_eval(e, slots, &v, &d);
    if (st != BT_OK)
        print_error("eval of \"%s\" failed: %s\n", src, d.msg);
    assert_int_equal(st, BT_OK);
    bt__expr_free(e);
    return v;
}

/* Asserts that src fails to parse with exactly `msg` at `column`. */
static void parse_fails(const char *src, int column, const char *msg)
{
    bt__expr *e = (bt__expr *)&e; /* must be reset to NULL */
    bt_diag d = {0};
    d.line = 42; /* the parser must leave line and file alone */
    strcpy(d.file, "spec.json");
    bt_status st = bt__expr_parse(src, syms, &e, &d);
    if (st != BT_PARSE || strcmp(d.msg, msg) != 0 || d.column != column)
        print_error("source \"%s\":\n  got      [%s] column %d (status %d)\n  expected [%s] "
                    "column %d\n",
                    src, d.msg, d.column, st, msg, column);
    assert_int_equal(st, BT_PARSE);
    assert_null(e);
    assert_string_equal(d.msg, msg);
    assert_int_equal(d.column, column);
    assert_int_equal(d.line, 42);
    assert_string_equal(d.file, "spec.json");
}

/* Asserts that src parses but evaluation fails with exactly `msg`. */
static void eval_fails(const char *src, const char *msg)
{
    bt__expr *e = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__expr_parse(src, syms, &e, &d), BT_OK);
    int64_t v = 12345;
    bt_status st = bt__expr_eval(e, slots, &v, &d);
    if (st != BT_EVAL || strcmp(d.msg, msg) != 0)
        print_error("source \"%s\":\n  got      [%s] (status %d, value %" PRId64
                    ")\n  expected [%s]\n",
                    src, d.msg, st, v, msg);
    assert_int_equal(st, BT_EVAL);
    assert_string_equal(d.msg, msg);
    assert_int_equal(v, 0);
    /* A NULL diag is allowed too. */
    assert_int_equal(bt__expr_eval(e, slots, &v, NULL), BT_EVAL);
    bt__expr_free(e);
}

/* ---------------------------------------------------------------------------------------------- */

static void test_symtab_assigns_slots_and_rejects_bad_names(void **state)
{
    (void)state;
    bt__symtab *t = bt__symtab_new();
    assert_non_null(t);
    assert_int_equal(bt__symtab_count(t), 0);
    assert_int_equal(bt__symtab_add(t, "BLOCK_M"), 0);
    assert_int_equal(bt__symtab_add(t, "_x9"), 1);
    assert_int_equal(bt__symtab_add(t, "BLOCK_M"), 0); /* existing slot */
    assert_int_equal(bt__symtab_add(t, "block_m"), 2); /* case-sensitive */
    assert_int_equal(bt__symtab_count(t), 3);
    /* invalid identifiers */
    assert_int_equal(bt__symtab_add(t, ""), -1);
    assert_int_equal(bt__symtab_add(t, "9lives"), -1);
    assert_int_equal(bt__symtab_add(t, "a-b"), -1);
    assert_int_equal(bt__symtab_add(t, "a b"), -1);
    assert_int_equal(bt__symtab_add(t, "é"), -1);
    assert_int_equal(bt__symtab_add(t, NULL), -1);
    /* reserved words */
    const char *reserved[] = {"true",  "false", "cdiv", "min",  "max",  "is_pow2", "log2",
                              "align_up", "abs", "clamp", "True", "False", "and", "or",
                              "not",   "in",    "is",   "if",   "else", "None",    "lambda"};
    for (size_t i = 0; i < BT__ARRAY_LEN(reserved); i++) {
        assert_true(bt__expr_is_reserved(reserved[i]));
        assert_int_equal(bt__symtab_add(t, reserved[i]), -1);
    }
    assert_false(bt__expr_is_reserved("TRUE"));
    assert_int_equal(bt__symtab_add(t, "TRUE"), 3); /* names are case-sensitive, so allowed */
    assert_int_equal(bt__symtab_count(t), 4);
    /* lookups */
    assert_int_equal(bt__symtab_find(t, "_x9"), 1);
    assert_int_equal(bt__symtab_find(t, "BLOCK"), -1);
    assert_int_equal(bt__symtab_find(t, "BLOCK_MM"), -1);
    assert_int_equal(bt__symtab_find(t, "Block_M"), -1);
    assert_int_equal(bt__symtab_find_nocase(t, "_X9"), 1);
    assert_int_equal(bt__symtab_find_nocase(t, "nope"), -1);
    assert_string_equal(bt__symtab_name(t, 2), "block_m");
    assert_null(bt__symtab_name(t, 4));
    assert_null(bt__symtab_name(t, -1));
    /* many names (growth) */
    char name[16];
    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof name, "p%d", i);
        assert_int_equal(bt__symtab_add(t, name), 4 + i);
    }
    assert_int_equal(bt__symtab_find(t, "p99"), 103);
    bt__symtab_free(t);
    bt__symtab_free(NULL);
    assert_int_equal(bt__symtab_count(NULL), 0);
    assert_int_equal(bt__symtab_find(NULL, "x"), -1);
}

static void test_precedence_and_associativity(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int64_t want;
    } cases[] = {
        {"1 + 2 * 3", 7},
        {"(1 + 2) * 3", 9},
        {"10 - 4 - 3", 3},   /* left-assoc */
        {"100 / 10 / 5", 2}, /* left-assoc */
        {"100 / (10 / 5)", 50},
        {"2 * 3 % 4", 2}, /* (2*3)%4, same level left to right */
        {"2 + 3 % 4", 5},
        {"-2**2", -4}, /* ** binds tighter than unary minus */
        {"(-2)**2", 4},
        {"2**3**2", 512}, /* right-assoc */
        {"(2**3)**2", 64},
        {"2**-0", 1},
        {"-2**3", -8},
        {"2 * 3 ** 2", 18},
        {"-x ** 2", -49},
        {"!0", 1},
        {"!5", 0},
        {"!!5", 1},
        {"!0 + 1", 2}, /* unary binds tighter than + */
        {"- -3", 3},
        {"+3", 3},
        {"-+-3", 3},
        {"7 / 2", 3},
        {"7 / -2", -3}, /* truncation toward zero */
        {"-7 / 2", -3},
        {"-7 % 3", -1}, /* sign of the dividend */
        {"7 % -3", 1},
        {"-7 % -3", -1},
        {"1 < 2", 1},
        {"2 <= 2", 1},
        {"3 > 4", 0},
        {"4 >= 5", 0},
        {"1 < 2 < 3", 1}, /* chained as in Python and mathematics: 1 < 2 && 2 < 3 */
        {"3 > 2 > 1", 1}, /* 3 > 2 && 2 > 1 (C would read (3>2)>1 == 0) */
        {"1 == 1 == 1", 1},
        {"2 == 2 == 2", 1}, /* 2 == 2 && 2 == 2 */
        {"1 < 2 == 1", 0},  /* one level: 1 < 2 && 2 == 1 */
        {"(1 < 2) == 1", 1},
        {"1 < 3 > 2", 1},
        {"1 < 3 > 4", 0},
        {"5 > 3 < 4 <= 4 != 0", 1},
        {"1 != 2", 1},
        {"1 + 1 == 2", 1},
        {"1 || 0 && 0", 1}, /* && binds tighter than || */
        {"(1 || 0) && 0", 0},
        {"0 && 1 || 1", 1},
        {"2 && 3", 1}, /* results are 0/1 */
        {"0 || 7", 1},
        {"0 || 0", 0},
        {"1 ? 2 : 3", 2},
        {"0 ? 2 : 3", 3},
        {"0 ? 1 : 0 ? 2 : 3", 3}, /* right-assoc: 0 ? 1 : (0 ? 2 : 3) */
        {"1 ? 0 ? 4 : 5 : 6", 5}, /* nested in the middle */
        {"1 ? 2 : 3 + 10", 2},    /* ?: is the loosest */
        {"(1 ? 2 : 3) + 10", 12},
        {"0 || 1 ? 10 : 20", 10},
        {"x > 5 ? x * 2 : x", 14},
        {"neg < 0 ? -neg : neg", 7},
        {"M - N * 2 + 1", -23},
        {"BLOCK_M * BLOCK_K + BLOCK_K * BLOCK_N", 128 * 64 + 64 * 256},
        {"num_stages * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * elem_bytes", 245760},
        {"((((x))))", 7},
        {"  x\t+\n1\r", 8},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(cases); i++) {
        int64_t got = ev(cases[i].src);
        if (got != cases[i].want)
            print_error("\"%s\" = %" PRId64 ", expected %" PRId64 "\n", cases[i].src, got,
                        cases[i].want);
        assert_int_equal(got, cases[i].want);
    }
}

static void test_literals(void **state)
{
    (void)state;
    assert_int_equal(ev("0"), 0);
    assert_int_equal(ev("42"), 42);
    assert_int_equal(ev("0x40"), 64);
    assert_int_equal(ev("0XfF"), 255);
    assert_int_equal(ev("0x7fffffffffffffff"), INT64_MAX);
    assert_int_equal(ev("9223372036854775807"), INT64_MAX);
    assert_int_equal(ev("-9223372036854775807 - 1"), INT64_MIN);
    assert_int_equal(ev("007"), 7);
    assert_int_equal(ev("true"), 1);
    assert_int_equal(ev("false"), 0);
    assert_int_equal(ev("true + true"), 2);
    assert_int_equal(ev("big"), INT64_MAX);
    assert_int_equal(ev("small"), INT64_MIN);
}

static void test_functions(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int64_t want;
    } cases[] = {
        /* cdiv: the exact ceiling for every sign */
        {"cdiv(M, BLOCK_M)", 8},
        {"cdiv(1024, 128)", 8},
        {"cdiv(1025, 128)", 9},
        {"cdiv(0, 5)", 0},
        {"cdiv(1, 5)", 1},
        {"cdiv(-7, 2)", -3},
        {"cdiv(7, -2)", -3},
        {"cdiv(-7, -2)", 4},
        {"cdiv(big, 1)", INT64_MAX},
        {"cdiv(big, 2)", INT64_MAX / 2 + 1},
        {"cdiv(small, 1)", INT64_MIN},
        {"cdiv(small, 2)", INT64_MIN / 2},
        {"cdiv(small, big)", -1},
        /* min / max, 2+ arguments */
        {"min(3, 1)", 1},
        {"max(3, 1)", 3},
        {"min(5, 3, 9, -2, 4)", -2},
        {"max(5, 3, 9, -2, 4)", 9},
        {"min(small, big)", INT64_MIN},
        {"max(small, big)", INT64_MAX},
        {"max(BLOCK_M, BLOCK_N, BLOCK_K) / min(BLOCK_M, BLOCK_N)", 2},
        /* is_pow2 */
        {"is_pow2(1)", 1},
        {"is_pow2(2)", 1},
        {"is_pow2(64)", 1},
        {"is_pow2(96)", 0},
        {"is_pow2(0)", 0},
        {"is_pow2(-4)", 0},
        {"is_pow2(small)", 0},
        {"is_pow2(big)", 0},
        {"is_pow2(0x4000000000000000)", 1},
        /* log2 (floor) */
        {"log2(1)", 0},
        {"log2(2)", 1},
        {"log2(3)", 1},
        {"log2(1024)", 10},
        {"log2(1023)", 9},
        {"log2(big)", 62},
        /* align_up */
        {"align_up(100, 16)", 112},
        {"align_up(96, 16)", 96},
        {"align_up(0, 16)", 0},
        {"align_up(1, 1)", 1},
        {"align_up(-7, 4)", -4},
        {"align_up(-8, 4)", -8},
        {"align_up(small, 4)", INT64_MIN},
        {"align_up(big - 7, 8)", INT64_MAX - 7},
        {"align_up(big, 1)", INT64_MAX},
        {"align_up(5, big)", INT64_MAX},
        /* abs */
        {"abs(-5)", 5},
        {"abs(5)", 5},
        {"abs(0)", 0},
        {"abs(small + 1)", INT64_MAX},
        /* clamp */
        {"clamp(5, 0, 10)", 5},
        {"clamp(-5, 0, 10)", 0},
        {"clamp(50, 0, 10)", 10},
        {"clamp(3, 3, 3)", 3},
        /* nesting and argument expressions */
        {"cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", 16},
        {"min(x > 5 ? 1 : 2, 3)", 1},
        {"max(min(1, 2), min(3, 4))", 3},
        {"2 ** log2(BLOCK_M)", 128},
        {"-abs(-3)", -3},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(cases); i++) {
        int64_t got = ev(cases[i].src);
        if (got != cases[i].want)
            print_error("\"%s\" = %" PRId64 ", expected %" PRId64 "\n", cases[i].src, got,
                        cases[i].want);
        assert_int_equal(got, cases[i].want);
    }
}

static void test_power_edge_cases(void **state)
{
    (void)state;
    assert_int_equal(ev("0 ** 0"), 1);
    assert_int_equal(ev("0 ** 5"), 0);
    assert_int_equal(ev("1 ** big"), 1);
    assert_int_equal(ev("(-1) ** big"), -1);
    assert_int_equal(ev("(-1) ** (big - 1)"), 1);
    assert_int_equal(ev("2 ** 62"), (int64_t)1 << 62);
    assert_int_equal(ev("(-2) ** 63"), INT64_MIN);
    assert_int_equal(ev("3 ** 39"), 4052555153018976267LL);
    assert_int_equal(ev("10 ** 18"), 1000000000000000000LL);
}

static void test_short_circuit_guards_division(void **state)
{
    (void)state;
    /* K is 0 in the fixture: every guarded division below would fail if evaluated. */
    assert_int_equal(ev("K > 0 && N / K > 2"), 0);
    assert_int_equal(ev("K == 0 || N / K > 2"), 1);
    assert_int_equal(ev("K ? N / K : -1"), -1);
    assert_int_equal(ev("K != 0 ? N % K : 0"), 0);
    assert_int_equal(ev("K == 0 ? 0 : cdiv(N, K)"), 0);
    assert_int_equal(ev("0 && 1 / 0"), 0);
    assert_int_equal(ev("1 || 1 / 0"), 1);
    assert_int_equal(ev("0 && 1 / 0 || 1"), 1);
    assert_int_equal(ev("1 ? 5 : big * big"), 5);
    assert_int_equal(ev("0 ? big * big : 0 ? 1 / 0 : 6"), 6);
    assert_int_equal(ev("(K > 0 && N / K > 2) + (K == 0 || log2(K) > 0)"), 1);
    assert_int_equal(ev("min(K == 0 ? 1 : M / K, 7)"), 1);
    /* the non-guarded forms do fail */
    eval_fails("K >= 0 && N / K > 2", "division by zero in 'N / K'");
    eval_fails("K != 0 || N / K > 2", "division by zero in 'N / K'");
    eval_fails("1 ? N / K : 0", "division by zero in 'N / K'");
}

static void test_every_eval_error_kind(void **state)
{
    (void)state;
    eval_fails("N / K", "division by zero in 'N / K'");
    eval_fails("1 + N % K", "modulo by zero in 'N % K'");
    eval_fails("cdiv(M, K)", "division by zero in 'cdiv(M, K)'");
    eval_fails("x + cdiv(M, BLOCK_M - 128) * 2", "division by zero in 'cdiv(M, BLOCK_M - 128)'");
    eval_fails("align_up(M, K)", "align_up by zero alignment 0 in 'align_up(M, K)'");
    eval_fails("align_up(M, -16)", "align_up by negative alignment -16 in 'align_up(M, -16)'");
    eval_fails("log2(K)", "log2 of non-positive value 0 in 'log2(K)'");
    eval_fails("log2(neg)", "log2 of non-positive value -7 in 'log2(neg)'");
    eval_fails("2 ** -1", "negative exponent -1 in '2 ** -1'");
    eval_fails("x ** neg", "negative exponent -7 in 'x ** neg'");
    eval_fails("clamp(x, 10, 0)", "clamp with lo 10 > hi 0 in 'clamp(x, 10, 0)'");
    /* overflow, every operation that can */
    eval_fails("big + one", "integer overflow in 'big + one' (9223372036854775807 + 1)");
    eval_fails("small - 1", "integer overflow in 'small - 1' (-9223372036854775808 - 1)");
    eval_fails("(big)*2", "integer overflow in '(big)*2' (9223372036854775807 * 2)");
    eval_fails("small / -1", "integer overflow in 'small / -1' (-9223372036854775808 / -1)");
    eval_fails("-small", "integer overflow in '-small' (negating -9223372036854775808)");
    eval_fails("abs(small)", "integer overflow in 'abs(small)' (abs of -9223372036854775808)");
    eval_fails("2 ** 63", "integer overflow in '2 ** 63' (2 ** 63)");
    eval_fails("3 ** 40", "integer overflow in '3 ** 40' (3 ** 40)");
    eval_fails("10 ** 19", "integer overflow in '10 ** 19' (10 ** 19)");
    eval_fails("2 ** big", "integer overflow in '2 ** big' (2 ** 9223372036854775807)");
    eval_fails("cdiv(small, -1)",
               "integer overflow in 'cdiv(small, -1)' (cdiv(-9223372036854775808, -1))");
    eval_fails("align_up(big, 16)",
               "integer overflow in 'align_up(big, 16)' (align_up(9223372036854775807, 16))");
    /* INT64_MIN % -1 is mathematically 0 and must not trap */
    assert_int_equal(ev("small % -1"), 0);
    assert_int_equal(ev("small % 1"), 0);
    assert_int_equal(ev("small / 1"), INT64_MIN);
    /* the failing sub-expression is named, not the whole expression */
    eval_fails("M > 0 && (BLOCK_M * big) > 0",
               "integer overflow in 'BLOCK_M * big' (128 * 9223372036854775807)");
    /* long sub-expressions are shortened */
    char src[400], msg[512];
    strcpy(src, "(1");
    for (int i = 0; i < 60; i++)
        strcat(src, " + 1");
    strcat(src, ") / K");
    bt__expr *e = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__expr_parse(src, syms, &e, &d), BT_OK);
    int64_t v;
    assert_int_equal(bt__expr_eval(e, slots, &v, &d), BT_EVAL);
    snprintf(msg, sizeof msg, "division by zero in '%.117s...'", src);
    assert_string_equal(d.msg, msg);
    bt__expr_free(e);
}

static void test_eval_rejects_bad_arguments(void **state)
{
    (void)state;
    bt__expr *e = NULL;
    bt_diag d = {0};
    int64_t v = 99;
    assert_int_equal(bt__expr_parse("x + 1", syms, &e, &d), BT_OK);
    assert_int_equal(bt__expr_eval(e, NULL, &v, &d), BT_INVALID_ARG);
    assert_int_equal(v, 0);
    assert_int_equal(bt__expr_eval(e, slots, NULL, &d), BT_INVALID_ARG);
    assert_int_equal(bt__expr_eval(NULL, slots, &v, &d), BT_INVALID_ARG);
    bt__expr_free(e);
    /* a constant needs no slots */
    assert_int_equal(bt__expr_parse("2 + 3", syms, &e, &d), BT_OK);
    assert_int_equal(bt__expr_eval(e, NULL, &v, &d), BT_OK);
    assert_int_equal(v, 5);
    bt__expr_free(e);
    /* parse: NULL source or output */
    assert_int_equal(bt__expr_parse(NULL, syms, &e, &d), BT_INVALID_ARG);
    assert_null(e);
    assert_int_equal(bt__expr_parse("1", syms, NULL, &d), BT_INVALID_ARG);
    /* a NULL symbol table means no names */
    assert_int_equal(bt__expr_parse("1 + 2", NULL, &e, NULL), BT_OK);
    bt__expr_free(e);
    assert_int_equal(bt__expr_parse("x", NULL, &e, &d), BT_PARSE);
    assert_string_equal(d.msg, "unknown name 'x' at column 1");
    bt__expr_free(NULL);
}

static void test_every_parse_error_kind(void **state)
{
    (void)state;
    /* missing operands */
    parse_fails("", 1, "expected an operand but found end of input at column 1");
    parse_fails("   ", 4, "expected an operand but found end of input at column 4");
    parse_fails("BLOCK_M*", 9, "expected an operand but found end of input at column 9");
    parse_fails("BLOCK_M * * 2", 11, "expected an operand but found '*' at column 11");
    parse_fails("x + )", 5, "expected an operand but found ')' at column 5");
    parse_fails("()", 2, "expected an operand but found ')' at column 2");
    parse_fails("x ** ", 6, "expected an operand but found end of input at column 6");
    parse_fails("!", 2, "expected an operand but found end of input at column 2");
    /* unbalanced and misplaced punctuation */
    parse_fails("(BLOCK_M+1, 2)", 11, "expected ')' but found ',' at column 11");
    parse_fails("(x + 1", 7, "expected ')' but found end of input at column 7");
    parse_fails("((x + 1)", 9, "expected ')' but found end of input at column 9");
    parse_fails("x ? 1", 6, "expected ':' but found end of input at column 6");
    parse_fails("x ? 1 , 2", 7, "expected ':' but found ',' at column 7");
    parse_fails("x ? 1 : ", 9, "expected an operand but found end of input at column 9");
    /* trailing garbage */
    parse_fails("x + 1)", 6, "expected an operator or end of input but found ')' at column 6");
    parse_fails("BLOCK_M BLOCK_N", 9,
                "expected an operator or end of input but found 'BLOCK_N' at column 9");
    parse_fails("1 2", 3, "expected an operator or end of input but found '2' at column 3");
    parse_fails("x : 1", 3, "expected an operator or end of input but found ':' at column 3");
    parse_fails("max(1, 2) (3)", 11,
                "expected an operator or end of input but found '(' at column 11");
    /* characters and operators the language does not have */
    parse_fails("x = 1", 3, "unexpected '=' at column 3 (did you mean '=='?)");
    parse_fails("x & 1", 3,
                "unexpected '&' at column 3 (did you mean '&&'? there are no bitwise operators)");
    parse_fails("x | 1", 3,
                "unexpected '|' at column 3 (did you mean '||'? there are no bitwise operators)");
    parse_fails("x << 1", 3,
                "unexpected '<<' at column 3: there are no bitwise operators (a shift by k is "
                "'* 2**k' or '// 2**k')");
    parse_fails("x + @", 5, "unexpected character '@' at column 5");
    parse_fails("x ^ 2", 3, "unexpected '^' at column 3: there are no bitwise operators; a power "
                            "is '**'");
    parse_fails("x;", 2, "unexpected character ';' at column 2");
    parse_fails("1.5", 1, "floating-point number '1.5' at column 1: expressions are integer-only");
    parse_fails("x + \x01", 5, "unexpected byte 0x01 at column 5");
    parse_fails("x \xc3\x97 2", 3, "unexpected byte 0xc3 at column 3");
    /* numbers */
    parse_fails("9223372036854775808", 1,
                "number '9223372036854775808' does not fit in a signed 64-bit integer at column 1");
    parse_fails("1 + 99999999999999999999999", 5,
                "number '99999999999999999999999' does not fit in a signed 64-bit integer at "
                "column 5");
    parse_fails("0x8000000000000000", 1,
                "number '0x8000000000000000' does not fit in a signed 64-bit integer at column 1");
    parse_fails("x + 12ab", 5, "malformed number '12ab' at column 5");
    parse_fails("0x", 1, "malformed number '0x' at column 1");
    parse_fails("0xg1", 1, "malformed number '0xg1' at column 1");
    /* names and functions */
    parse_fails("x + nope", 5, "unknown name 'nope' at column 5");
    parse_fails("frobnicate(1)", 1, "unknown function 'frobnicate' at column 1");
    parse_fails("2 * BLOCK_M(1)", 5, "'BLOCK_M' at column 5 is a name, not a function");
    parse_fails("cdiv + 1", 6, "expected '(' after function 'cdiv' but found '+' at column 6");
    parse_fails("max", 4, "expected '(' after function 'max' but found end of input at column 4");
    parse_fails("true(1)", 1, "unknown function 'true' at column 1");
    parse_fails("min(1, 2", 9,
                "expected ',' or ')' but found end of input at column 9 (function 'min' takes 2 "
                "or more arguments)");
    parse_fails("cdiv(1 2)", 8,
                "expected ',' but found '2' at column 8 (function 'cdiv' takes 2 arguments)");
    parse_fails("abs(1 2)", 7,
                "expected ')' but found '2' at column 7 (function 'abs' takes 1 argument)");
}

static void test_wrong_argument_counts_name_function_and_count(void **state)
{
    (void)state;
    parse_fails("abs(BLOCK_M, 2)", 12,
                "expected ')' but found ',' at column 12 (function 'abs' takes 1 argument)");
    parse_fails("cdiv(M)", 7,
                "expected ',' but found ')' at column 7 (function 'cdiv' takes 2 arguments)");
    parse_fails("cdiv(M, BLOCK_M, 2)", 16,
                "expected ')' but found ',' at column 16 (function 'cdiv' takes 2 arguments)");
    parse_fails("cdiv()", 6,
                "expected an operand but found ')' at column 6 (function 'cdiv' takes 2 "
                "arguments)");
    parse_fails("min(x)", 6,
                "expected ',' but found ')' at column 6 (function 'min' takes 2 or more "
                "arguments)");
    parse_fails("max()", 5,
                "expected an operand but found ')' at column 5 (function 'max' takes 2 or more "
                "arguments)");
    parse_fails("is_pow2(1, 2)", 10,
                "expected ')' but found ',' at column 10 (function 'is_pow2' takes 1 argument)");
    parse_fails("log2()", 6,
                "expected an operand but found ')' at column 6 (function 'log2' takes 1 "
                "argument)");
    parse_fails("align_up(64)", 12,
                "expected ',' but found ')' at column 12 (function 'align_up' takes 2 "
                "arguments)");
    parse_fails("clamp(1, 2)", 11,
                "expected ',' but found ')' at column 11 (function 'clamp' takes 3 arguments)");
    parse_fails("clamp(1, 2, 3, 4)", 14,
                "expected ')' but found ',' at column 14 (function 'clamp' takes 3 arguments)");
    parse_fails("min(1, 2,)", 10, "expected an operand but found ')' at column 10");
    /* 2+ arguments are fine for min/max */
    assert_int_equal(ev("min(9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2)"), 0);
}

static void test_unknown_names_suggest_the_closest(void **state)
{
    (void)state;
    parse_fails("BLOK_M * 2", 1, "unknown name 'BLOK_M' at column 1 (did you mean 'BLOCK_M'?)");
    parse_fails("2*BLOK_M", 3, "unknown name 'BLOK_M' at column 3 (did you mean 'BLOCK_M'?)");
    parse_fails("block_n", 1, "unknown name 'block_n' at column 1 (did you mean 'BLOCK_N'?)");
    parse_fails("num_stage + 1", 1,
                "unknown name 'num_stage' at column 1 (did you mean 'num_stages'?)");
    parse_fails("smem_per_blok", 1,
                "unknown name 'smem_per_blok' at column 1 (did you mean 'smem_per_block'?)");
    parse_fails("BLOCK_Q", 1, "unknown name 'BLOCK_Q' at column 1 (did you mean 'BLOCK_M'?)");
    /* nothing close: no suggestion, and one-letter names are not "corrected" */
    parse_fails("warp_count", 1, "unknown name 'warp_count' at column 1");
    parse_fails("y", 1, "unknown name 'y' at column 1");
    /* functions */
    parse_fails("cieldiv(M, BLOCK_M)", 1,
                "unknown function 'cieldiv' at column 1 (did you mean 'cdiv'?)");
    parse_fails("x + ceil_div(M, 2)", 5,
                "unknown function 'ceil_div' at column 5 (did you mean 'cdiv'?)");
    parse_fails("align(M, 16)", 1,
                "unknown function 'align' at column 1 (did you mean 'align_up'?)");
    parse_fails("is_pow(8)", 1, "unknown function 'is_pow' at column 1 (did you mean 'is_pow2'?)");
    parse_fails("Min(1, 2)", 1, "unknown function 'Min' at column 1 (did you mean 'min'?)");
    parse_fails("sqrt(4)", 1, "unknown function 'sqrt' at column 1");
    /* an overly long name is shortened in the message, not overrun */
    char src[700], msg[800];
    memset(src, 'a', 600);
    src[600] = '\0';
    snprintf(msg, sizeof msg, "unknown name '%.255s...' at column 1", src);
    parse_fails(src, 1, msg);
}

static void test_render_substitutes_values(void **state)
{
    (void)state;
    static const struct {
        const char *src, *want;
    } cases[] = {
        {"num_stages * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * elem_bytes",
         "5 × (128×64 + 64×256) × 2"},
        {"2 ** x", "2 ** 7"},
        {"x**2*x", "7**2×7"},
        {"cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", "cdiv(1000, 128) × cdiv(512, 256)"},
        {"neg < 0 && true", "-7 < 0 && true"},
        {"  x   +   0x10 ", "  7   +   0x10 "},
        {"x ? small : big", "7 ? -9223372036854775808 : 9223372036854775807"},
        {"max(x,one)", "max(7,1)"},
        {"42", "42"},
    };
    char buf[256];
    for (size_t i = 0; i < BT__ARRAY_LEN(cases); i++) {
        bt__expr *e = NULL;
        assert_int_equal(bt__expr_parse(cases[i].src, syms, &e, NULL), BT_OK);
        assert_ptr_equal(bt__expr_render(e, slots, buf, sizeof buf), buf);
        assert_string_equal(buf, cases[i].want);
        bt__expr_free(e);
    }
    /* without values: names stay, * still becomes × */
    bt__expr *e = NULL;
    assert_int_equal(bt__expr_parse("BLOCK_M*BLOCK_K ** 2", syms, &e, NULL), BT_OK);
    assert_string_equal(bt__expr_render(e, NULL, buf, sizeof buf), "BLOCK_M×BLOCK_K ** 2");
    /* truncation: never splits a value or the UTF-8 sign, always NUL-terminated */
    assert_string_equal(bt__expr_render(e, slots, buf, 4), "128");
    assert_string_equal(bt__expr_render(e, slots, buf, 5), "128");
    assert_string_equal(bt__expr_render(e, slots, buf, 6), "128×");
    assert_string_equal(bt__expr_render(e, slots, buf, 3), "");
    assert_string_equal(bt__expr_render(e, slots, buf, 1), "");
    buf[0] = 'z';
    assert_ptr_equal(bt__expr_render(e, slots, buf, 0), buf);
    assert_int_equal(buf[0], 'z');
    assert_null(bt__expr_render(e, slots, NULL, 10));
    bt__expr_free(e);
}

static void test_source_uses_and_is_const(void **state)
{
    (void)state;
    bt__expr *e = NULL;
    const char *src = "cdiv(M, BLOCK_M) * BLOCK_N";
    assert_int_equal(bt__expr_parse(src, syms, &e, NULL), BT_OK);
    assert_string_equal(bt__expr_source(e), src);
    assert_ptr_not_equal(bt__expr_source(e), src); /* a copy */
    assert_true(bt__expr_uses(e, slot_of("M")));
    assert_true(bt__expr_uses(e, slot_of("BLOCK_M")));
    assert_true(bt__expr_uses(e, slot_of("BLOCK_N")));
    assert_false(bt__expr_uses(e, slot_of("N")));
    assert_false(bt__expr_uses(e, slot_of("BLOCK_K")));
    assert_false(bt__expr_uses(e, -1));
    assert_false(bt__expr_uses(e, 1000));
    assert_false(bt__expr_is_const(e));
    assert_int_equal(bt__expr_slots_needed(e), slot_of("BLOCK_N") + 1);
    bt__expr_free(e);

    assert_int_equal(bt__expr_parse("2 ** 10 + max(1, 2) * true", syms, &e, NULL), BT_OK);
    assert_true(bt__expr_is_const(e));
    assert_int_equal(bt__expr_slots_needed(e), 0);
    assert_false(bt__expr_uses(e, 0));
    bt__expr_free(e);

    /* a name only in the branch not taken still counts as used */
    assert_int_equal(bt__expr_parse("1 ? 2 : one", syms, &e, NULL), BT_OK);
    assert_true(bt__expr_uses(e, slot_of("one")));
    assert_false(bt__expr_is_const(e));
    bt__expr_free(e);

    assert_null(bt__expr_source(NULL));
    assert_false(bt__expr_uses(NULL, 0));
    assert_false(bt__expr_is_const(NULL));
}

/* Builds a string of `n` copies of `a`, then `mid`, then `n` copies of `b` (caller frees). */
static char *nest(const char *a, int n, const char *mid, const char *b)
{
    size_t la = strlen(a), lm = strlen(mid), lb = strlen(b);
    char *s = malloc(la * (size_t)n + lm + lb * (size_t)n + 1);
    assert_non_null(s);
    char *p = s;
    for (int i = 0; i < n; i++, p += la)
        memcpy(p, a, la);
    memcpy(p, mid, lm);
    p += lm;
    for (int i = 0; i < n; i++, p += lb)
        memcpy(p, b, lb);
    *p = '\0';
    return s;
}

static void test_deep_nesting_is_rejected_cleanly(void **state)
{
    (void)state;
    char msg[128];
    /* 255 levels of parentheses are fine (the top level is one more) */
    char *s = nest("(", BT__EXPR_MAX_DEPTH - 1, "x", ")");
    assert_int_equal(ev(s), 7);
    free(s);
    /* one more is an error at the paren that crosses the limit */
    s = nest("(", BT__EXPR_MAX_DEPTH, "x", ")");
    snprintf(msg, sizeof msg, "expression nested too deeply (more than %d levels) at column %d",
             BT__EXPR_MAX_DEPTH, BT__EXPR_MAX_DEPTH + 1);
    parse_fails(s, BT__EXPR_MAX_DEPTH + 1, msg);
    free(s);
    /* hostile inputs far beyond the limit: an error, never a stack overflow */
    static const struct {
        const char *open, *mid, *close;
    } hostile[] = {
        {"(", "1", ")"},   {"-", "1", ""},    {"!", "1", ""},       {"2**", "1", ""},
        {"1?", "1", ":1"}, {"1?1:", "1", ""}, {"min(1,", "1", ")"}, {"abs(", "1", ")"},
        {"(", "", ""},     {"-(", "1", ")"},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(hostile); i++) {
        s = nest(hostile[i].open, 8000, hostile[i].mid, hostile[i].close);
        assert_true(strlen(s) <= BT__EXPR_MAX_LEN);
        bt__expr *e = NULL;
        bt_diag d = {0};
        assert_int_equal(bt__expr_parse(s, syms, &e, &d), BT_PARSE);
        if (!strstr(d.msg, "nested too deeply"))
            print_error("%s...: %s\n", hostile[i].open, d.msg);
        assert_null(e);
        assert_non_null(strstr(d.msg, "nested too deeply"));
        free(s);
    }
    /* long flat chains are not nesting: 10000 additions parse and evaluate */
    s = nest("1+", 10000, "1", "");
    assert_int_equal(ev(s), 10001);
    free(s);
    /* 7**22 fits, 7**23 does not: the message quotes the product up to the 23rd factor */
    s = nest("x*", 30, "1", "");
    char *want = nest("x*", 22, "x", "");
    snprintf(msg, sizeof msg, "integer overflow in '%s' (3909821048582988049 * 7)", want);
    eval_fails(s, msg);
    free(want);
    free(s);
    /* over-long source */
    s = nest(" ", BT__EXPR_MAX_LEN, "1", "");
    bt__expr *e = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__expr_parse(s, syms, &e, &d), BT_PARSE);
    assert_null(e);
    snprintf(msg, sizeof msg, "expression too long (%d bytes, at most %d)", BT__EXPR_MAX_LEN + 1,
             BT__EXPR_MAX_LEN);
    assert_string_equal(d.msg, msg);
    free(s);
}

static void test_stack_limit_is_enforced_at_parse_time(void **state)
{
    (void)state;
    /* Each nesting level leaves operands pending: a+(b*(c+...)). Within the depth limit the stack
     * can still grow past BT__EXPR_MAX_STACK; that is a parse error, not an evaluation overrun. */
    char *s = nest("1==1<1+1*clamp(1,1,", 240, "1", "))");
    bt__expr *e = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__expr_parse(s, syms, &e, &d), BT_PARSE);
    assert_null(e);
    assert_non_null(strstr(d.msg, "expression too complex"));
    free(s);
    /* the same shape, shallower, fits and evaluates */
    s = nest("1==1<1+1*clamp(1,1,", 50, "1", ")");
    assert_int_equal(ev(s), 1);
    free(s);
    /* min/max with many arguments need only two stack entries */
    char big[30000];
    strcpy(big, "max(0");
    for (int i = 1; i <= 3000; i++) {
        char num[16];
        snprintf(num, sizeof num, ",%d", i);
        strcat(big, num);
    }
    strcat(big, ")");
    assert_int_equal(ev(big), 3000);
}

/* Kernel Tuner's restriction strings are Python expressions: and/or/not, True/False, 'in' and
 * 'not in' a list, //, chained comparisons; what Python has and this language does not is a
 * parse error saying what to write instead. */
static void test_kernel_tuner_restriction_strings(void **state)
{
    (void)state;
    static const struct {
        const char *src;
        int64_t want;
    } cases[] = {
        {"block_size_x*block_size_y<=1024", 1},
        {"block_size_x*block_size_y>=32 and tile_size_x in [1,2,4]", 1},
        {"32 <= block_size_x*block_size_y <= 1024", 1},
        {"block_size_x*block_size_y >= 512 or tile_size_x == 4", 1},
        {"x in [1,2]", 0},
        {"x in [1, 7]", 1},
        {"x in (7,)", 1},
        {"x in ()", 0},
        {"x in (1, 7)", 1},
        {"x in [1, 2, ]", 0},
        {"x in []", 0},
        {"x not in [1, 2]", 1},
        {"x not in [7]", 0},
        {"x in [1, x - 0, 3] and x < 10", 1},
        {"(x in [7]) + 1", 2},
        {"not x == 7", 0}, /* Python's not binds looser than == */
        {"not x == 8", 1},
        {"!x == 0", 1},    /* C's ! binds tighter: (!x) == 0 */
        {"not not x", 1},
        {"x == 7 or x == 8", 1},
        {"x != 7 and True", 0},
        {"False or True", 1},
        {"not False and not 0", 1},
        {"x // 2", 3},
        {"neg // 2", -4}, /* floor, as in Python; / truncates */
        {"neg / 2", -3},
        {"x // -2", -4},
        {"neg // -2", 3},
        {"x // 7 * 7", 7},
        {"1 < x < 5", 0},
        {"1 < x < 10 > 3", 1},
        {"1 > 2 < N // K", 0}, /* short-circuits: N // K (K = 0) is never evaluated */
        {"block_size_x % 32 == 0", 1},
        {"x in [7] and block_size_x in [16, 32] and block_size_y not in [1]", 1},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(cases); i++) {
        int64_t got = ev(cases[i].src);
        if (got != cases[i].want)
            print_error("\"%s\" = %" PRId64 ", expected %" PRId64 "\n", cases[i].src, got,
                        cases[i].want);
        assert_int_equal(got, cases[i].want);
    }
    eval_fails("x // K", "division by zero in 'x // K'");
    eval_fails("small // -1", "integer overflow in 'small // -1' (-9223372036854775808 // -1)");
    /* what Kernel Tuner users may write that is not supported */
    parse_fails("x in range(4)", 6,
                "'range' at column 6 is not supported (list the values, or write 'lo <= x < hi')");
    parse_fails("x is 1", 3, "Python's 'is' at column 3 is not supported (use '==' or '!=')");
    parse_fails("x if x else 1", 3,
                "Python's 'if' at column 3 is not supported (a conditional is written "
                "'cond ? a : b')");
    parse_fails("lambda p: 1", 1,
                "Python's 'lambda' at column 1 is not supported (a restriction is an expression "
                "over the parameters)");
    parse_fails("1.5 > x", 1, "floating-point number '1.5' at column 1: expressions are integer-only");
    parse_fails("x < 1e3", 5, "floating-point number '1e3' at column 5: expressions are integer-only");
    parse_fails("'a' == x", 1, "unexpected ''' at column 1: strings are not supported");
    parse_fails("math.ceil(x)", 5,
                "unexpected '.' at column 5: attribute access ('.') is not supported");
    parse_fails("x in [1,2] < 3", 12,
                "a comparison after 'in' (column 3) at column 12: join them with 'and'");
    parse_fails("[1,2]", 1, "a list at column 1: lists are only taken after 'in' ('x in [1, 2]')");
    parse_fails("x in y", 6, "expected a list '[...]' after 'in' but found 'y' at column 6");
    parse_fails("x in [1, 2", 11, "expected ',' or ']' but found end of input at column 11");
    /* Python: (7) is 7, not a tuple, and 'x in 7' is a TypeError */
    parse_fails("x in (7)", 6,
                "'(...)' at column 6 after 'in' is one value, not a tuple (write '(x,)' or '[x]')");
    parse_fails("x not in ((7))", 10,
                "'(...)' at column 10 after 'in' is one value, not a tuple (write '(x,)' or '[x]')");
    parse_fails("x ~ 2", 3, "unexpected '~' at column 3: there are no bitwise operators");
    parse_fails("x >> 1", 3,
                "unexpected '>>' at column 3: there are no bitwise operators (a shift by k is "
                "'* 2**k' or '// 2**k')");
    /* rendering keeps the words and lists */
    bt__expr *e = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__expr_parse("block_size_x*block_size_y<=1024 and x in [1,2]", syms, &e, &d),
                     BT_OK);
    char buf[128];
    assert_string_equal(bt__expr_render(e, slots, buf, sizeof buf),
                        "32\xc3\x97" "8<=1024 and 7 in [1,2]");
    bt__expr_free(e);
}

static void test_parse_failure_leaves_no_leak_or_output(void **state)
{
    (void)state;
    /* Errors at the very end of long, valid-looking input must free everything (ASan checks). */
    const char *srcs[] = {"x + 1 + 2 + cdiv(M, BLOCK_M) * max(1, 2, 3) +",
                          "min(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, nope)",
                          "x ? 1 : 2 ? 3 : 4 ? 5 : BLOK"};
    for (size_t i = 0; i < BT__ARRAY_LEN(srcs); i++) {
        bt__expr *e = (bt__expr *)srcs;
        assert_int_equal(bt__expr_parse(srcs[i], syms, &e, NULL), BT_PARSE);
        assert_null(e);
    }
}

static void test_evaluation_is_fast(void **state)
{
    (void)state;
    const char *src = "num_stages * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * elem_bytes <= "
                      "smem_per_block && BLOCK_M % 16 == 0";
    bt__expr *e = NULL;
    bt_diag d = {0};
    assert_int_equal(bt__expr_parse(src, syms, &e, &d), BT_OK);
    int64_t local[32];
    memcpy(local, slots, sizeof local);
    const int stages = slot_of("num_stages");
    const int n = 1000000;
    int64_t accepted = 0;
    double t0 = bt__now();
    for (int i = 0; i < n; i++) {
        local[stages] = 1 + (i & 7); /* stages 1..8: 1..4 fit, 5..8 do not */
        int64_t v;
        if (bt__expr_eval(e, local, &v, NULL) != BT_OK)
            fail_msg("evaluation failed");
        accepted += v;
    }
    double dt = bt__now() - t0;
    bt__expr_free(e);
    printf("expr speed: %d evaluations of a %zu-byte constraint in %.3f s (%.1f ns each)\n", n,
           strlen(src), dt, dt * 1e9 / n);
    assert_int_equal(accepted, (int64_t)n / 8 * 4);
#if defined(__SANITIZE_ADDRESS__) || defined(BT_SANITIZE)
#define BT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BT_TEST_SANITIZED 1
#endif
#endif
#ifdef BT_TEST_SANITIZED
    printf("expr speed: sanitizer build, time limit not asserted\n");
#else
    assert_true(dt < 0.5);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symtab_assigns_slots_and_rejects_bad_names),
        cmocka_unit_test(test_precedence_and_associativity),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_power_edge_cases),
        cmocka_unit_test(test_short_circuit_guards_division),
        cmocka_unit_test(test_every_eval_error_kind),
        cmocka_unit_test(test_eval_rejects_bad_arguments),
        cmocka_unit_test(test_every_parse_error_kind),
        cmocka_unit_test(test_wrong_argument_counts_name_function_and_count),
        cmocka_unit_test(test_unknown_names_suggest_the_closest),
        cmocka_unit_test(test_render_substitutes_values),
        cmocka_unit_test(test_source_uses_and_is_const),
        cmocka_unit_test(test_deep_nesting_is_rejected_cleanly),
        cmocka_unit_test(test_stack_limit_is_enforced_at_parse_time),
        cmocka_unit_test(test_kernel_tuner_restriction_strings),
        cmocka_unit_test(test_parse_failure_leaves_no_leak_or_output),
        cmocka_unit_test(test_evaluation_is_fast),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
