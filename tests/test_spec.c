/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_spec.c — the spec loader: every list it keeps in a fixed-size array bounded with an error
 * at file:line:column (params, problem variables, key, args, tiles, boundary sizes, dtypes, tensor
 * maps, constraints, source lists, defines, grid_div factors, rules) and every name listed twice
 * rejected; unreadable specs, sources and data files named with the reason; and the Kernel Tuner
 * additions: problem defines, block_size_x/y/z, problem_size / grid_div, constant memory, input
 * files and expected answers; the built-in kernels are the spec files of kernels/specs/, load as
 * files too, and keep the source hashes their stored results and shipped wisdom are keyed by.
 */
#include "test_util.h"

#include "core/datafile.h"
#include "core/kdesc.h"
#include "core/plan.h"
#include "core/util.h"
#include "engine/engine.h"

#include <jansson.h>
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
    bt_kdesc_destroy(k);
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
static void it_entry(txt *t, int i) { tx(t, "%d", i % 10); }

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
        {"entry", "%s \"sources\": {\"cuda\": {\"inline\": \"\"}}, \"launch\": {\"grid\": [1], "
                  "\"block\": [1]}, \"entry\": \"k<%s>\"}",
         64, it_entry, "entry", "the entry must be 1..127 characters"},
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
    assert_string_equal(d.file, data_dir());
    assert_string_equal(d.msg, "cannot read spec: is a directory");
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
    assert_non_null(strstr(bt__kdesc_source(ok, "opencl")->text, "planted"));
    bt_kdesc_destroy(ok);
    free(t.s);
}

/* ---------------------------------------------------------------------------------------------
 * Problem defines
 * ------------------------------------------------------------------------------------------- */
static void test_problem_defines(void **state)
{
    (void)state;
    bt_kdesc *k = load_ok("{\"name\": \"d\", \"problem\": {\"n\": 100, \"fw\": 3, \"fh\": 5},\n"
                          " \"params\": {\"B\": [1, 2]},\n"
                          " \"defines\": {\"WIDTH\": \"n\", \"FSIZE\": \"fw * fh\", \"TWO\": 2,"
                          " \"EB\": \"elem_bytes\"}}");
    assert_int_equal(k->npdefines, 4);
    assert_int_equal(bt__kdesc_count(k), 2); /* not parameters: the space does not grow */
    bt_problem *p;
    bt_diag d;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    char defs[BT__MAX_PDEFINES][96];
    int n = 0;
    assert_int_equal(bt__kdesc_pdefines(k, p, NULL, defs, &n, &d), BT_OK);
    assert_int_equal(n, 4);
    assert_string_equal(defs[0], "WIDTH=100");
    assert_string_equal(defs[1], "FSIZE=15");
    assert_string_equal(defs[2], "TWO=2");
    assert_string_equal(defs[3], "EB=4");
    assert_int_equal(bt_problem_set(p, "n", 17, &d), BT_OK); /* per problem, boundary sizes too */
    assert_int_equal(bt__kdesc_pdefines(k, p, NULL, defs, &n, &d), BT_OK);
    assert_string_equal(defs[0], "WIDTH=17");
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    /* a define the problem cannot take is the plan's error, naming the define */
    k = load_ok("{\"name\": \"d\", \"problem\": {\"n\": 100, \"m\": 0},\n"
                " \"params\": {\"B\": [1]}, \"defines\": {\"Q\": \"n / m\"}}");
    bt_gpudb *db;
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    const bt_gpu *g = NULL;
    assert_int_equal(bt_gpudb_find(db, "h200", &g, &d), BT_OK);
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_plan *pl = NULL;
    assert_int_equal(bt_plan_create(k, p, g, NULL, &pl, &d), BT_EVAL);
    assert_string_equal(d.field, "defines.Q");
    assert_non_null(strstr(d.msg, "division by zero"));
    bt_problem_destroy(p);
    bt_gpudb_destroy(db);
    bt_kdesc_destroy(k);
    static const struct {
        const char *defines, *key, *field, *msg;
    } bad[] = {
        {"{\"2X\": \"n\"}", "", "defines.2X", "not a macro name"},
        {"{\"BT_N\": \"n\"}", "", "defines.BT_N", "blocktune's own defines"},
        {"{\"B\": \"n\"}", "", "defines.B", "'B' is a parameter, which is a define already"},
        {"{\"W\": \"n * B\"}", "", "defines.W", "'B' is a parameter"},
        {"{\"W\": \"m\"}", ", \"key\": [\"n\", \"dtype\"]", "defines.W",
         "'m' is not in \"key\": a kernel compiled for one m would be dispatched for another"},
        {"{\"W\": \"elem_bytes\"}", ", \"key\": [\"n\", \"m\"]", "defines.W",
         "elem_bytes depends on the dtype"},
        {"{\"W\": \"n +\"}", "", "defines.W", "expected an operand"},
        {"[\"n\"]", "", "defines", "expected {\"NAME\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"name\": \"d\", \"problem\": {\"n\": 1, \"m\": 2},\n"
                                    " \"params\": {\"B\": [1]}%s, \"defines\": %s}",
                 bad[i].key, bad[i].defines);
        expect_error(bad[i].field, text, BT_PARSE, bad[i].field, bad[i].msg, 2);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Launch: block_size_x/y/z, problem_size and grid_div
 * ------------------------------------------------------------------------------------------- */
static void geometry(const char *spec, const char *cfg, int64_t grid[3], int64_t block[3])
{
    bt_kdesc *k = load_ok(spec);
    bt_problem *p;
    bt_diag d;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_config c;
    assert_int_equal(bt__kdesc_parse_config(k, cfg, &c, &d), BT_OK);
    int64_t dyn;
    if (bt__geometry(k, &c, p, NULL, grid, block, &dyn, &d) != BT_OK)
        fail_msg("geometry: %s", d.msg);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

static void test_block_size_names_and_grid_div(void **state)
{
    (void)state;
    int64_t grid[3], block[3];
    /* Kernel Tuner's defaults: block from block_size_x/y, grid_div x/y by them */
    geometry("{\"name\": \"g\", \"problem\": {\"w\": 1000, \"h\": 30},\n"
             " \"params\": {\"block_size_x\": [32], \"block_size_y\": [4]},\n"
             " \"launch\": {\"problem_size\": [\"w\", \"h\"]}}",
             "block_size_x=32,block_size_y=4", grid, block);
    assert_true(block[0] == 32 && block[1] == 4 && block[2] == 1);
    assert_true(grid[0] == 32 && grid[1] == 8 && grid[2] == 1); /* cdiv(1000,32), cdiv(30,4) */
    /* grid_div over several parameters, a divisor that is an expression, problem_size expressions */
    geometry("{\"name\": \"g\", \"problem\": {\"w\": 1000, \"h\": 30},\n"
             " \"params\": {\"block_size_x\": [32], \"tile\": [4], \"block_size_y\": [2]},\n"
             " \"launch\": {\"problem_size\": [\"w + 24\", \"h\"],\n"
             "            \"grid_div\": {\"x\": [\"block_size_x\", \"tile\"], \"y\": \"block_size_y * 5\"}}}",
             "block_size_x=32,tile=4,block_size_y=2", grid, block);
    assert_true(grid[0] == 8 && grid[1] == 3 && grid[2] == 1);
    /* "block" given: it wins; a z block_size alone */
    geometry("{\"name\": \"g\", \"problem\": {\"n\": 100},\n"
             " \"params\": {\"block_size_z\": [2]},\n"
             " \"launch\": {\"grid\": [\"n\"]}}",
             "block_size_z=2", grid, block);
    assert_true(block[0] == 1 && block[1] == 1 && block[2] == 2 && grid[0] == 100);
    static const struct {
        const char *launch, *field, *msg;
    } bad[] = {
        {"{\"grid\": [1]}", "launch", "missing \"block\" (or parameters named block_size_x"},
        {"{\"problem_size\": [\"n\"], \"grid\": [1], \"block\": [1]}", "launch.problem_size",
         "give \"grid\" or \"problem_size\""},
        {"{\"grid_div\": {\"x\": [\"B\"]}, \"block\": [1]}", "launch.grid_div",
         "grid_div divides \"problem_size\", which is missing"},
        {"{\"problem_size\": [\"n\"], \"grid_div\": {\"y\": [\"B\"]}, \"block\": [1]}",
         "launch.grid_div", "grid_div.y has no problem_size[1] to divide"},
        {"{\"problem_size\": [\"n\"], \"grid_div\": {\"x\": [\"B\", \"BB\"]}, \"block\": [1]}",
         "launch.grid_div.x[1]", "unknown name 'BB'"},
        {"{\"problem_size\": [\"n\"], \"grid_div\": {\"w\": [\"B\"]}, \"block\": [1]}",
         "launch.grid_div.w", "unknown field 'w'"},
        {"{\"problem_size\": [], \"block\": [1]}", "launch.problem_size", "1 to 3 expressions"},
        {"{\"block\": [1]}", "launch", "missing \"grid\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"name\": \"g\", \"problem\": {\"n\": 10},\n"
                                    " \"params\": {\"B\": [1]},\n \"launch\": %s}",
                 bad[i].launch);
        expect_error(bad[i].field, text, BT_PARSE, bad[i].field, bad[i].msg, 3);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Constant memory, input files, answers
 * ------------------------------------------------------------------------------------------- */
static void test_constant_memory_arguments(void **state)
{
    (void)state;
    bt_kdesc *k = load_ok("{\"name\": \"c\", \"problem\": {\"n\": 8}, \"params\": {\"B\": [1]},\n"
                          " \"args\": [{\"name\": \"d_filter\", \"kind\": \"constant\", \"size\": 9},\n"
                          "          {\"name\": \"f\", \"kind\": \"constant\", \"symbol\": \"ns::table\", \"size\": 4},\n"
                          "          {\"name\": \"g\", \"constant\": true, \"size\": 4}]}");
    assert_true(k->args[0].cmem && k->args[0].role == BT__KARG_BUFFER);
    assert_string_equal(k->args[0].symbol, "d_filter");
    assert_string_equal(k->args[1].symbol, "ns::table");
    assert_true(k->args[2].cmem);
    bt_kdesc_destroy(k);
    static const struct {
        const char *args, *field, *msg;
    } bad[] = {
        {"{\"name\": \"c\", \"kind\": \"constant\", \"size\": 4, \"output\": true}", "args[0].output",
         "constant memory is read-only"},
        {"{\"name\": \"c-1\", \"kind\": \"constant\", \"size\": 4}", "args[0]",
         "'c-1' is not a C++ name for the __constant__ symbol (give \"symbol\")"},
        {"{\"name\": \"c\", \"kind\": \"constant\", \"symbol\": \"a::\", \"size\": 4}",
         "args[0].symbol", "not a C++ name"},
        {"{\"name\": \"c\", \"symbol\": \"s\", \"size\": 4}", "args[0].symbol",
         "only a constant-memory argument"},
        {"{\"name\": \"c\", \"kind\": \"scalar\", \"constant\": true, \"value\": 4}",
         "args[0].constant", "a scalar cannot be in constant memory"},
        {"{\"name\": \"c\", \"kind\": \"constant\", \"size\": 4}], \"outputs\": [\"c\"",
         "outputs[0]", "'c' is constant memory, which is read-only"},
        {"{\"name\": \"c\", \"kind\": \"constant\", \"size\": \"n\"}, {\"name\": \"t\", \"kind\": "
         "\"tensormap\", \"buffer\": \"c\", \"dims\": [\"n\"], \"box\": [8]}",
         "args[1].buffer", "'c' is not a buffer argument"},
        {"{\"name\": \"c\", \"size\": \"n\"}, {\"name\": \"t\", \"kind\": \"tensormap\", "
         "\"buffer\": \"c\", \"dims\": [\"n\"], \"box\": [8], \"symbol\": \"s\"}",
         "args[1]", "a tensormap takes no \"symbol\""},
        {"{\"name\": \"c\", \"kind\": \"cmem\", \"size\": 4}", "args[0].kind",
         "unknown kind 'cmem' (buffer, scalar, local, constant, tensormap)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[768];
        snprintf(text, sizeof text, "{\"name\": \"c\", \"problem\": {\"n\": 8}, \"params\": {\"B\": [1]},\n"
                                    " \"args\": [%s]}", bad[i].args);
        expect_error(bad[i].field, text, BT_PARSE, bad[i].field, bad[i].msg, 2);
    }
}

/* Writes bytes to a scratch file; returns its path (static per slot). */
static const char *scratch(int slot, const void *data, size_t n)
{
    static char paths[4][64];
    snprintf(paths[slot], sizeof paths[slot], "/tmp/bt_test_spec_%d_%d", (int)getpid(), slot);
    FILE *f = fopen(paths[slot], "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return paths[slot];
}

/* A .npy file: the header dict `dict` padded to 64 bytes, then n bytes of data. */
static const char *npy(int slot, const char *dict, const void *data, size_t n)
{
    unsigned char buf[4096];
    size_t hl = strlen(dict) + 1, pad = (64 - (10 + hl) % 64) % 64;
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)((hl + pad) & 0xff);
    buf[9] = (unsigned char)((hl + pad) >> 8);
    memcpy(buf + 10, dict, hl - 1);
    memset(buf + 10 + hl - 1, ' ', pad);
    buf[10 + hl - 1 + pad] = '\n';
    memcpy(buf + 10 + hl + pad, data, n);
    return scratch(slot, buf, 10 + hl + pad + n);
}

/* src with every "F" (a file name) replaced by the path. */
static void subst_file(char *dst, size_t n, const char *src, const char *path)
{
    size_t o = 0;
    for (const char *f; (f = strstr(src, "\"F\"")) != NULL; src = f + 3)
        o += (size_t)snprintf(dst + o, n - o, "%.*s\"%s\"", (int)(f - src), src, path);
    snprintf(dst + o, n - o, "%s", src);
}

static void test_input_files_and_answers(void **state)
{
    (void)state;
    float f32[6] = {1, 2, 3, 4, 5, 6};
    double f64[6] = {1, 2, 3, 4, 5, 6};
    const char *in = npy(0, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", f64,
                         sizeof f64);
    const char *raw = scratch(1, f32, sizeof f32);
    const char *ans = npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", f32,
                          sizeof f32);
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"f\", \"problem\": {\"n\": 6}, \"params\": {\"B\": [1]},\n"
             " \"args\": [{\"name\": \"x\", \"size\": \"n\", \"file\": \"%s\"},\n"
             "          {\"name\": \"c\", \"kind\": \"constant\", \"size\": \"n\", \"file\": \"%s\"},\n"
             "          {\"name\": \"y\", \"size\": \"n\", \"output\": true}],\n"
             " \"reference\": {\"answers\": {\"y\": \"%s\"}}}", in, raw, ans);
    bt_kdesc *k = load_ok(text);
    assert_int_equal(k->ref, BT__REF_ANSWERS);
    assert_string_equal(k->args[0].file, in);
    assert_string_equal(k->args[2].answer, ans);
    /* read per problem: an .npy in its own dtype, a raw file in the argument's */
    void *data;
    bt__dtype dt;
    bt_diag d;
    assert_int_equal(bt__datafile_read(in, BT__DT_FP32, 6, &data, &dt, &d), BT_OK);
    assert_int_equal(dt, BT__DT_FP64);
    assert_true(((double *)data)[5] == 6);
    free(data);
    assert_int_equal(bt__datafile_read(raw, BT__DT_FP32, 6, &data, &dt, &d), BT_OK);
    assert_true(dt == BT__DT_FP32 && ((float *)data)[2] == 3);
    free(data);
    assert_int_equal(bt__datafile_read(in, BT__DT_FP32, 7, &data, &dt, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "holds 6 elements (2, 3), the argument needs 7"));
    assert_int_equal(bt__datafile_read(raw, BT__DT_FP64, 6, &data, &dt, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "holds 24 bytes, the argument needs 6 elements of fp64 (48 bytes)"));
    bt_kdesc_destroy(k);
    /* files the loader refuses, at the field */
    static const struct {
        const char *dict;
        size_t bytes;
        const char *msg;
    } npys[] = {
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", 24, "big-endian"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, "Fortran order"},
        {"{'descr': '<u2', 'fortran_order': False, 'shape': (6,), }", 12, "dtype '<u2' is not supported"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }", 24,
         "the .npy header says (7,) elements of fp32 (28 bytes) but the file holds 24"},
        {"{'fortran_order': False, 'shape': (6,), }", 24, "malformed .npy header"},
    };
    for (size_t i = 0; i < sizeof npys / sizeof *npys; i++) {
        const char *bad = npy(3, npys[i].dict, f32, npys[i].bytes);
        snprintf(text, sizeof text, "{\"name\": \"f\", \"problem\": {\"n\": 6}, \"params\": {\"B\": [1]},\n"
                                    " \"args\": [{\"name\": \"x\", \"size\": \"n\", \"file\": \"%s\"}]}",
                 bad);
        expect_error(npys[i].msg, text, BT_PARSE, "args[0].file", npys[i].msg, 2);
    }
    static const struct {
        const char *args, *ref, *field, *msg;
    } bad[] = {
        {"{\"name\": \"x\", \"size\": 6, \"file\": \"F\", \"init\": {\"const\": 1}}", "", "args[0]",
         "give \"init\" or \"file\", not both"},
        {"{\"name\": \"x\", \"size\": 6, \"file\": \"F\", \"output\": true}", "", "args[0].file",
         "an output is poisoned before every run"},
        {"{\"name\": \"s\", \"kind\": \"scalar\", \"value\": 6, \"file\": \"F\"}", "", "args[0].file",
         "only a buffer or constant memory is read from a file"},
        {"{\"name\": \"y\", \"size\": 6, \"output\": true}, {\"name\": \"x\", \"size\": 6}",
         ", \"reference\": {\"answers\": {\"x\": \"F\"}}", "reference.answers.x",
         "'x' is not an output argument"},
        {"{\"name\": \"y\", \"size\": 6, \"output\": true}, {\"name\": \"z\", \"size\": 6, \"output\": true}",
         ", \"reference\": {\"answers\": {\"y\": \"F\"}}", "reference.answers",
         "output 'z' has no answer"},
        {"{\"name\": \"y\", \"size\": 6, \"output\": true}",
         ", \"reference\": {\"answers\": {\"y\": \"F\"}}, \"boundary\": [{\"n\": 3}]", "boundary",
         "argument 'y' is read from a file, which holds one problem's data"},
        {"{\"name\": \"y\", \"size\": 6, \"output\": true}",
         ", \"reference\": {\"answers\": {\"y\": \"F\"}, \"host\": \"gemm\"}", "reference",
         "give exactly one of"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char args[512], ref[512], big[1200];
        subst_file(args, sizeof args, bad[i].args, raw);
        subst_file(ref, sizeof ref, bad[i].ref, raw);
        snprintf(big, sizeof big, "{\"name\": \"f\", \"problem\": {\"n\": 6}, \"params\": {\"B\": [1]},\n"
                                    " \"args\": [%s]%s}", args, ref);
        expect_error(bad[i].field, big, BT_PARSE, bad[i].field, bad[i].msg, 0);
    }
    for (int s = 0; s < 4; s++) {
        char p[64];
        snprintf(p, sizeof p, "/tmp/bt_test_spec_%d_%d", (int)getpid(), s);
        unlink(p);
    }
}

/* Kernel Tuner's restriction strings in "constraints", and what is not supported named at the
 * column in the file. */
static void test_restriction_strings_in_a_spec(void **state)
{
    (void)state;
    bt_kdesc *k = load_ok("{\"name\": \"r\", \"params\": {\"block_size_x\": [16, 32, 64], "
                          "\"block_size_y\": [1, 2, 4]},\n"
                          " \"constraints\": [\"block_size_x*block_size_y<=64\", "
                          "\"block_size_y in [1, 2] or block_size_x == 16\"]}");
    bt_gpudb *db;
    bt_diag d;
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    const bt_gpu *g = NULL;
    assert_int_equal(bt_gpudb_find(db, "h200", &g, &d), BT_OK);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_plan *pl;
    assert_int_equal(bt_plan_create(k, p, g, NULL, &pl, &d), BT_OK);
    /* valid: 16x1 16x2 16x4 32x1 32x2 64x1 */
    assert_int_equal(pl->ncand, 6);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_gpudb_destroy(db);
    bt_kdesc_destroy(k);
    expect_error("python is", "{\"name\": \"r\", \"params\": {\"x\": [1]},\n \"constraints\": [\"x is 1\"]}",
                 BT_PARSE, "constraints[0]", "Python's 'is' at column 3 is not supported", 2);
    bt_kdesc *k2 = (bt_kdesc *)1;
    assert_int_equal(bt_kdesc_load_string("{\"name\": \"r\", \"params\": {\"x\": [1]},\n"
                                          " \"constraints\": [\"x in range(3)\"]}",
                                          "r.json", &k2, &d),
                     BT_PARSE);
    assert_int_equal(d.line, 2);
    assert_int_equal(d.column, 18 + 1 + 5); /* the string's quote, then 'range' at its column 6 */
}

/* ---------------------------------------------------------------------------------------------
 * The built-in kernels: derived from kernels/specs/, loadable as files, their hashes kept
 * ------------------------------------------------------------------------------------------- */

/* Every source hash a built-in kernel has had since its wisdom was shipped: the hash keys the
 * results store and the wisdom files (in wisdom/), so a change of a built-in's source text
 * (prelude included) or options re-keys what was measured. Change a row only on purpose, and
 * say so where the change is made. */
static const struct {
    const char *kernel, *lang, *hash;
} pinned[] = {
    {"gemm", "opencl", "718d7cad4e424e6c"},       {"gemm", "cuda", "b7c2f43eb7914b46"},
    {"gemm_mma", "cuda", "2621b0f3e25e44a3"},     {"gemm_smallm", "cuda", "cc54756af6755839"},
    {"gemm_smallm_nt", "cuda", "d8c2cbe1920afcde"}, {"gemm_wgmma", "cuda", "78d00fc3032706d7"},
    {"layernorm", "opencl", "da31b3c42b909ad7"},  {"layernorm", "cuda", "2c175605a718210d"},
    {"reduce", "opencl", "af8a5dcb4a0d5b50"},     {"reduce", "cuda", "d847507d23a01114"},
    {"softmax", "opencl", "9fb09939b2b23ff7"},    {"softmax", "cuda", "031119a208e424de"},
    {"gemm_smallm_nt_tma", "cuda", "ad62b61683b460a9"},
    {"gemm_smallm_tma", "cuda", "a341b7dab28691f7"},
    {"gemm_wgmma_ldg", "cuda", "db44b0aa4d294173"},
    {"vector_add", "opencl", "b0ff331305f5ddbd"}, {"vector_add", "cuda", "fd6ba326e91e3fa4"},
};

static void hash_text(const bt_kdesc *k, const bt__ksource *s, char out[20])
{
    snprintf(out, 20, "%016llx", (unsigned long long)bt__kdesc_source_hash(k, s));
}

/* The built-ins are the specs of kernels/specs/ (every one, sorted), each loads from its file as
 * it loads built in (the same sources, prelude included, the same hashes), and the hashes are
 * the pinned ones. */
static void test_builtins_are_the_spec_files(void **state)
{
    (void)state;
    const char *const *names = bt_kdesc_builtin_names();
    size_t n = 0, files = 0;
    for (; names[n]; n++)
        if (n)
            assert_true(strcmp(names[n - 1], names[n]) < 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/kernels/specs", BT_SOURCE_DIR);
    for (size_t i = 0; i < n; i++) {
        char file[1200];
        snprintf(file, sizeof file, "%s/%s.json", path, names[i]);
        struct stat sb;
        files += stat(file, &sb) == 0;
        bt_kdesc *kb = NULL, *kf = NULL;
        bt_diag d = {0};
        assert_int_equal(bt_kdesc_builtin(names[i], &kb, &d), BT_OK);
        if (bt_kdesc_load_file(file, &kf, &d) != BT_OK)
            fail_msg("%s: %s", file, d.msg);
        assert_int_equal(kb->nsrc, kf->nsrc);
        assert_true(kb->nsrc >= 1);
        for (int s = 0; s < kb->nsrc; s++) {
            assert_string_equal(kb->src[s].lang, kf->src[s].lang);
            assert_string_equal(kb->src[s].text, kf->src[s].text);
            assert_string_equal(kb->src[s].target, kf->src[s].target);
            char h[20];
            hash_text(kb, &kb->src[s], h);
            bool found = false;
            for (size_t p = 0; p < sizeof pinned / sizeof pinned[0]; p++)
                if (!strcmp(pinned[p].kernel, names[i]) && !strcmp(pinned[p].lang, kb->src[s].lang)) {
                    found = true;
                    if (strcmp(pinned[p].hash, h) != 0)
                        fail_msg("%s (%s): source hash %s, pinned %s", names[i], kb->src[s].lang,
                                 h, pinned[p].hash);
                }
            if (!found)
                fail_msg("%s (%s): hash %s is not pinned (add it to pinned[])", names[i],
                         kb->src[s].lang, h);
        }
        bt_kdesc_destroy(kb);
        bt_kdesc_destroy(kf);
    }
    assert_int_equal(files, n);
    assert_true(n >= 9);
    /* a spec of one's own keeps its hash too (its text is a newline, then its source) */
    bt_kdesc *own = NULL;
    bt_diag od = {0};
    snprintf(path, sizeof path, "%s/examples/saxpy/saxpy.json", BT_SOURCE_DIR);
    assert_int_equal(bt_kdesc_load_file(path, &own, &od), BT_OK);
    char oh[20];
    hash_text(own, bt__kdesc_source(own, "opencl"), oh);
    assert_string_equal(oh, "be4b5c80738acb31");
    bt_kdesc_destroy(own);
    /* an unknown name lists the built-ins */
    bt_kdesc *k = NULL;
    bt_diag d = {0};
    assert_int_equal(bt_kdesc_builtin("no_such_kernel", &k, &d), BT_NOT_FOUND);
    assert_non_null(strstr(d.msg, "gemm_smallm_nt"));
    /* gemm_wgmma's CUDA source names its target; the rest build for the device's own */
    assert_int_equal(bt_kdesc_builtin("gemm_wgmma", &k, &d), BT_OK);
    assert_string_equal(bt__kdesc_source(k, "cuda")->target, "sm_90a");
    assert_null(bt__kdesc_source(k, "opencl"));
    bt_kdesc_destroy(k);
}

/* A licence line is not part of the source hash (the shipped kernels gained theirs without
 * losing stored results); any other change of the text, a comment included, is. */
static void test_hash_skips_licence_lines(void **state)
{
    (void)state;
    bt_kdesc k = {0};
    bt__ksource a = {.text = "__global__ void f() {}\n"};
    bt__ksource b = {.text = "/* SPDX-License-Identifier: Apache-2.0 */\n__global__ void f() {}\n"};
    bt__ksource c = {.text = "// SPDX-License-Identifier: MIT\n__global__ void f() {}\n"};
    bt__ksource d = {.text = "/* a comment */\n__global__ void f() {}\n"};
    bt__ksource e = {.text = "/* SPDX-License-Identifier: MIT\n__global__ void f() {}\n"};
    bt__ksource f = {.text = "__global__ void f() {} // SPDX-License-Identifier: MIT\n"};
    uint64_t h = bt__kdesc_source_hash(&k, &a);
    assert_true(bt__kdesc_source_hash(&k, &b) == h);
    assert_true(bt__kdesc_source_hash(&k, &c) == h);
    assert_true(bt__kdesc_source_hash(&k, &d) != h);
    assert_true(bt__kdesc_source_hash(&k, &e) != h); /* an unclosed comment is text */
    assert_true(bt__kdesc_source_hash(&k, &f) != h); /* a tag after code is text */
}

/* The wisdom shipped in wisdom/ is keyed by the source hash of the kernel it was measured with:
 * each entry's hash is what the built-in's CUDA source hashes to now (a front door's choices,
 * keyed by the hash over its families, are test_wisdom_files'). */
static void test_shipped_wisdom_keys_match_the_sources(void **state)
{
    (void)state;
    size_t checked = 0, front = 0;
    for (size_t i = 0;; i++) {
        const char *path;
        size_t size;
        const char *data = bt__embedded_at(i, &path, &size);
        if (!data)
            break;
        if (strncmp(path, "wisdom/", 7) != 0)
            continue;
        json_error_t err;
        json_t *root = json_loadb(data, size, 0, &err);
        assert_non_null(root);
        json_t *entries = json_object_get(root, "entries");
        size_t e;
        json_t *x;
        json_array_foreach(entries, e, x) {
            const char *kernel = json_string_value(json_object_get(x, "kernel"));
            const char *hash = json_string_value(json_object_get(x, "source_hash"));
            assert_non_null(kernel);
            assert_non_null(hash);
            /* a front door's choice ({"family": i, ...}) is keyed by the front door's hash over
             * its families' sources: test_wisdom_files checks those on a device handle */
            if (json_object_get(json_object_get(x, "config"), "family")) {
                front++;
                continue;
            }
            bt_kdesc *k = NULL;
            bt_diag d = {0};
            if (bt_kdesc_builtin(kernel, &k, &d) != BT_OK)
                fail_msg("%s: entry %zu names '%s': %s", path, e, kernel, d.msg);
            char h[20];
            hash_text(k, bt__kdesc_source(k, "cuda"), h);
            if (strcmp(h, hash) != 0)
                fail_msg("%s: entry %zu (%s) is keyed %s, the source hashes to %s", path, e,
                         kernel, hash, h);
            bt_kdesc_destroy(k);
            checked++;
        }
        json_decref(root);
    }
    assert_true(checked >= 5);
    assert_true(front >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_is_bounded_and_unique),
        cmocka_unit_test(test_every_list_is_bounded_and_unique),
        cmocka_unit_test(test_a_directory_is_named_as_one),
        cmocka_unit_test(test_problem_defines),
        cmocka_unit_test(test_block_size_names_and_grid_div),
        cmocka_unit_test(test_constant_memory_arguments),
        cmocka_unit_test(test_input_files_and_answers),
        cmocka_unit_test(test_restriction_strings_in_a_spec),
        cmocka_unit_test(test_builtins_are_the_spec_files),
        cmocka_unit_test(test_hash_skips_licence_lines),
        cmocka_unit_test(test_shipped_wisdom_keys_match_the_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
