/*
 * test_spec.c — the spec loader: every list it keeps in a fixed-size array bounded with an error
 * at file:line:column (params, problem variables, key, args, tiles, boundary sizes, dtypes, tensor
 * maps, constraints, source lists, defines, grid_div factors, rules) and every name listed twice
 * rejected; unreadable specs, sources and data files named with the reason; and the Kernel Tuner
 * additions: problem defines, block_size_x/y/z, problem_size / grid_div, constant memory, input
 * files and expected answers.
 */
#include "test_util.h"

#include "core/datafile.h"
#include "core/kdesc.h"
#include "core/plan.h"
#include "core/util.h"

#include <sys/stat.h>
#include <unistd.h>

/* A growing string. */
typedef struct txt {
    char *s;
    size_t n;
} txt;

static void tx(txt *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx(txt *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int need = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    t->s = realloc(t->s, t->n + (size_t)need + 1);
    assert_non_null(t->s);
    va_start(ap, fmt);
    vsnprintf(t->s + t->n, (size_t)need + 1, fmt, ap);
    va_end(ap);
    t->n += (size_t)need;
}

/* Loads text and expects BT_PARSE (or want) naming `field` with `msg` at `line`; nothing loaded. */
static void expect_error(const char *what, const char *text, bt_status want, const char *field,
                         const char *msg, int line)
{
    bt_kdesc *k = (bt_kdesc *)1;
    bt_diag d;
    bt_status st = bt_kdesc_load_string(text, "bad.json", &k, &d);
    if (st != want || strcmp(d.field, field) || !strstr(d.msg, msg) || (line && d.line != line))
        fail_msg("%s: status %d (want %d), %s:%d:%d field '%s': %s", what, st, want, d.file,
                 d.line, d.column, d.field, d.msg);
    assert_null(k);
    assert_string_equal(d.file, "bad.json");
    assert_true(d.column > 0);
}

static bt_kdesc *load_ok(const char *text)
{
    bt_kdesc *k = NULL;
    bt_diag d;
    bt_status st = bt_kdesc_load_string(text, "ok.json", &k, &d);
    if (st)
        fail_msg("load: %s:%d:%d %s: %s", d.file, d.line, d.column, d.field, d.msg);
    return k;
}

/* ---------------------------------------------------------------------------------------------
 * Bounds and duplicates: one case per array the loader fills
 * ------------------------------------------------------------------------------------------- */

/* A key listing more than 16 variables (or one twice) used to write past key_slots[16]. */
static void test_key_is_bounded_and_unique(void **state)
{
    (void)state;
    txt t = {0};
    tx(&t, "{\"name\": \"k\", \"params\": {\"B\": [1]},\n \"problem\": {");
    for (int i = 0; i < 16; i++)
        tx(&t, "%s\"v%d\": 1", i ? ", " : "", i);
    tx(&t, "},\n \"key\": [");
    for (int i = 0; i < 40; i++)
        tx(&t, "%s\"v%d\"", i ? ", " : "", i % 16);
    tx(&t, "]}");
    expect_error("key of 40", t.s, BT_PARSE, "key", "40 key entries: at most 17", 3);
    free(t.s);
    expect_error("key twice",
                 "{\"name\": \"k\", \"params\": {\"B\": [1]}, \"problem\": {\"n\": 1, \"m\": 2},\n"
                 " \"key\": [\"n\", \"m\", \"n\"]}",
                 BT_PARSE, "key[2]", "'n' is in the key twice (key[0])", 2);
    expect_error("dtype twice",
                 "{\"name\": \"k\", \"params\": {\"B\": [1]}, \"problem\": {\"n\": 1},\n"
                 " \"key\": [\"dtype\", \"n\", \"dtype\"]}",
                 BT_PARSE, "key[2]", "twice", 2);
    /* the full key (16 variables and the dtype) still loads */
    t = (txt){0};
    tx(&t, "{\"name\": \"k\", \"params\": {\"B\": [1]}, \"problem\": {");
    for (int i = 0; i < 16; i++)
        tx(&t, "%s\"v%d\": 1", i ? ", " : "", i);
    tx(&t, "}, \"key\": [\"dtype\"");
    for (int i = 0; i < 16; i++)
        tx(&t, ", \"v%d\"", i);
    tx(&t, "]}");
    bt_kdesc *k = load_ok(t.s);
    assert_int_equal(k->nkey, 16);
    assert_true(k->key_dtype);
    bt_kdesc_free(k);
    free(t.s);
}

/* Builds a spec with `n` items made by `item(i)` inside `fmt` (one %s). */
static char *spec_with(const char *fmt, int n, void (*item)(txt *, int))
{
    txt body = {0}, t = {0};
    tx(&body, "%s", "");
    for (int i = 0; i < n; i++) {
        if (i)
            tx(&body, ", ");
        item(&body, i);
    }
    tx(&t, fmt, body.s);
    free(body.s);
    return t.s;
}

static void it_param(txt *t, int i) { tx(t, "\"P%d\": [1]", i); }
static void it_problem(txt *t, int i) { tx(t, "\"v%d\": 1", i); }
static void it_arg(txt *t, int i) { tx(t, "{\"name\": \"a%d\", \"size\": 4}", i); }
static void it_tile(txt *t, int i) { tx(t, "{\"param\": \"P%d\", \"dim\": \"n\"}", i % 2); }
static void it_tile_distinct(txt *t, int i) { tx(t, "{\"param\": \"P%d\", \"dim\": \"n\"}", i); }
static void it_boundary(txt *t, int i) { tx(t, "{\"n\": %d}", i + 1); }
static void it_dtype(txt *t, int i)
{
    static const char *const d[] = {"fp32", "fp16", "bf16", "fp64", "fp8", "int8", "int32", "int64"};
    tx(t, "\"%s\"", d[i % 8]);
}
static void it_tmap(txt *t, int i)
{
    tx(t, "{\"name\": \"tm%d\", \"kind\": \"tensormap\", \"buffer\": \"A\", \"dims\": [\"n\"], "
          "\"box\": [8]}", i);
}
static void it_constraint(txt *t, int i) { tx(t, "\"P0 >= %d\"", -i); }
static void it_source(txt *t, int i) { tx(t, "{\"inline\": \"int x%d;\"}", i); }
static void it_define(txt *t, int i) { tx(t, "\"D%d\": \"n\"", i); }
static void it_factor(txt *t, int i) { tx(t, "\"P%d\"", i % 2); }
static void it_rule(txt *t, int i) { tx(t, "\"%s\"", i % 2 ? "smem_limit" : "threads_limit"); }
static void it_output(txt *t, int i) { tx(t, "\"%s\"", i ? "y" : "x"); }

static void test_every_list_is_bounded_and_unique(void **state)
{
    (void)state;
    static const char *const base2 = "{\"name\": \"b\", \"problem\": {\"n\": 64},\n"
                                     " \"params\": {\"P0\": [1, 2], \"P1\": [1]},\n";
    static const struct {
        const char *name;
        const char *fmt; /* with %s for the list */
        int n;
        void (*item)(txt *, int);
        const char *field, *msg;
    } cases[] = {
        {"params", "{\"name\": \"b\",\n \"params\": {%s}}", 33, it_param, "params.P32",
         "too many parameters (at most 32)"},
        {"problem", "{\"name\": \"b\", \"params\": {\"B\": [1]},\n \"problem\": {%s}}", 17, it_problem,
         "problem.v16", "too many problem variables (at most 16)"},
        {"args", "%s \"args\": [%s]}", 33, it_arg, "args", "at most 32 arguments"},
        {"tiles", "%s \"model\": {\"tiles\": [%s]}}", 9, it_tile_distinct, "model.tiles",
         "at most 8 tiles"},
        {"tiles twice", "%s \"model\": {\"tiles\": [%s]}}", 3, it_tile, "model.tiles[2].param",
         "'P0' is a tile twice (model.tiles[0])"},
        {"boundary", "%s \"boundary\": [%s]}", 17, it_boundary, "boundary",
         "at most 16 problem sizes"},
        {"boundary twice", "%s \"boundary\": [%s, {\"n\": 2}]}", 3, it_boundary, "boundary[3]",
         "the same boundary size as boundary[1]"},
        {"dtypes", "%s \"dtypes\": [%s]}", 9, it_dtype, "dtypes", "a list of 1..8 names"},
        {"dtypes twice", "%s \"dtypes\": [%s, \"fp16\"]}", 3, it_dtype, "dtypes[3]",
         "dtype 'fp16' is listed twice (dtypes[1])"},
        {"tensormaps", "%s \"args\": [{\"name\": \"A\", \"size\": \"n\"}, %s]}", 5, it_tmap, "args",
         "at most 4 tensormap arguments"},
        {"constraints", "%s \"constraints\": [%s]}", 4097, it_constraint, "constraints",
         "4097 constraints: at most 4096"},
        {"sources", "%s \"sources\": {\"cuda\": [%s]}}", 65, it_source, "sources.cuda",
         "65 source files: at most 64"},
        {"defines", "%s \"defines\": {%s}}", 17, it_define, "defines", "17 defines: at most 16"},
        {"grid_div", "%s \"launch\": {\"problem_size\": [\"n\"], \"grid_div\": {\"x\": [%s]}, "
                     "\"block\": [32]}}",
         9, it_factor, "launch.grid_div.x", "a list of 1 to 8 factors"},
        {"rules", "%s \"rules\": [%s]}", 40, it_rule, "rules", "longer than 63 characters"},
        {"outputs twice", "%s \"args\": [{\"name\": \"x\", \"size\": 4}, {\"name\": \"y\", "
                          "\"size\": 4}], \"outputs\": [%s, \"x\"]}",
         2, it_output, "outputs[2]", "'x' is listed twice"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *list = spec_with("%s", cases[c].n, cases[c].item);
        txt t = {0};
        if (!strncmp(cases[c].fmt, "%s", 2))
            tx(&t, cases[c].fmt, base2, list);
        else
            tx(&t, cases[c].fmt, list);
        expect_error(cases[c].name, t.s, BT_PARSE, cases[c].field, cases[c].msg, 0);
        free(t.s);
        free(list);
    }
    /* names twice: parameters and arguments (JSON objects with a key twice are invalid JSON) */
    expect_error("arg twice",
                 "{\"name\": \"b\", \"params\": {\"B\": [1]},\n \"args\": [{\"name\": \"x\", "
                 "\"size\": 4}, {\"name\": \"x\", \"size\": 8}]}",
                 BT_PARSE, "args[1].name", "argument 'x' defined twice (args[0])", 2);
    expect_error("define twice",
                 "{\"name\": \"b\", \"params\": {\"B\": [1]}, \"problem\": {\"n\": 1},\n"
                 " \"defines\": {\"W\": \"n\", \"W\": \"n\"}}",
                 BT_PARSE, "", "duplicate object key", 2);
}

/* ---------------------------------------------------------------------------------------------
 * Files: a directory or an unreadable file named with the reason
 * ------------------------------------------------------------------------------------------- */
static const char *data_dir(void)
{
    const char *d = getenv("BT_TEST_DATA");
    return d ? d : BT_SOURCE_DIR "/tests/data";
}

static void test_a_directory_is_named_as_one(void **state)
{
    (void)state;
    bt_kdesc *k = (bt_kdesc *)1;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_file(data_dir(), &k, &d), BT_IO);
    assert_null(k);
    assert_non_null(strstr(d.msg, data_dir()));
    assert_non_null(strstr(d.msg, "is a directory"));
    assert_null(strstr(d.msg, "Input/output error"));
    assert_int_equal(bt_kdesc_load_file("/nonexistent/spec.json", &k, &d), BT_IO);
    assert_non_null(strstr(d.msg, "No such file or directory"));
    /* a source or a data file that is a directory */
    expect_error("source dir",
                 "{\"name\": \"s\", \"problem\": {\"n\": 8}, \"params\": {\"B\": [8]},\n"
                 " \"sources\": {\"opencl\": \"/tmp\"}, \"entry\": \"k\",\n"
                 " \"launch\": {\"grid\": [1], \"block\": [\"B\"]},\n"
                 " \"args\": [{\"name\": \"y\", \"size\": \"n\", \"output\": true}]}",
                 BT_IO, "sources.opencl", "cannot read source '/tmp': is a directory", 2);
    expect_error("data dir",
                 "{\"name\": \"s\", \"problem\": {\"n\": 8}, \"params\": {\"B\": [8]},\n"
                 " \"args\": [{\"name\": \"x\", \"size\": \"n\", \"file\": \"/tmp\"}]}",
                 BT_IO, "args[0].file", "cannot read data file '/tmp': is a directory", 2);
    /* a path of more than 256 segments is resolved whole (it was cut after 256) */
    txt t = {0};
    tx(&t, "{\"name\": \"s\", \"params\": {\"B\": [8]}, \"sources\": {\"opencl\": \"");
    for (int i = 0; i < 300; i++) /* up to the root: 300 segments kept before the path */
        tx(&t, "../");
    tx(&t, "%s/planted.cl\"}, \"entry\": \"planted\", \"launch\": {\"grid\": [1], \"block\": "
           "[\"B\"]}, \"args\": [{\"name\": \"y\", \"size\": 8, \"output\": true}]}",
       data_dir() + 1);
    bt_kdesc *ok = load_ok(t.s);
    assert_non_null(strstr(ok->src_opencl, "planted"));
    bt_kdesc_free(ok);
    free(t.s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_is_bounded_and_unique),
        cmocka_unit_test(test_every_list_is_bounded_and_unique),
        cmocka_unit_test(test_a_directory_is_named_as_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
