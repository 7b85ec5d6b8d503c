/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_t1.c — T1 input files read as specs (src/core/t1.c, t1py.c; docs/t1.md): the Python of
 * "Values" and "Size" evaluated as Kernel Tuner evaluates it; Kernel Tuner's own T1 test files
 * (tests/data/t1/, CUDA) and ours (OpenCL) loaded into the description the spec loader builds —
 * parameters, conditions, problem sizes, grid and block, arguments, expected outputs; and every
 * error, the spec loader's own included, at the T1 file's field, line and column.
 */
#include "test_util.h"

#include "core/kdesc.h"
#include "core/t1.h"
#include "engine/engine.h"

#include <unistd.h>

/* ---------------------------------------------------------------------------------------------
 * Values and sizes
 * ------------------------------------------------------------------------------------------- */
static void values_are(const char *text, const int64_t *want, size_t n)
{
    int64_t *v = NULL;
    size_t got = 0;
    bt__t1err e = {0};
    if (bt__t1_values(text, 65536, &v, &got, &e) != BT_OK)
        fail_msg("%s: %s (at %zu)", text, e.msg, e.off);
    if (got != n)
        fail_msg("%s: %zu values, want %zu", text, got, n);
    for (size_t i = 0; i < n; i++)
        if (v[i] != want[i])
            fail_msg("%s: value %zu is %lld, want %lld", text, i, (long long)v[i],
                     (long long)want[i]);
    free(v);
}

static void values_fail(const char *text, size_t off, const char *msg)
{
    int64_t *v = (int64_t *)1;
    size_t n = 7;
    bt__t1err e = {0};
    if (bt__t1_values(text, 100, &v, &n, &e) != BT_PARSE || e.off != off || !strstr(e.msg, msg))
        fail_msg("%s: at %zu '%s', want %zu '%s'", text, e.off, e.msg, off, msg);
    assert_null(v);
    assert_int_equal(n, 0);
}

static void test_values_as_python_reads_them(void **state)
{
    (void)state;
    /* the forms of Kernel Tuner's test T1 files */
    values_are("[i for i in range(3,35,2)]",
               (int64_t[]){3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33}, 16);
    values_are("[16*i for i in range(1,9)]", (int64_t[]){16, 32, 48, 64, 80, 96, 112, 128}, 8);
    values_are("[2**i for i in range(6)]", (int64_t[]){1, 2, 4, 8, 16, 32}, 6);
    values_are("[128+64*i for i in range(15)]",
               (int64_t[]){128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960,
                           1024}, 15);
    values_are("[0, 1]", (int64_t[]){0, 1}, 2);
    /* and the rest of what Python writes for a list */
    values_are(" [ 1, 2 , 4, ] ", (int64_t[]){1, 2, 4}, 3);
    values_are("(8, 4)", (int64_t[]){8, 4}, 2);
    values_are("(5,)", (int64_t[]){5}, 1);
    values_are("list(range(1, 4))", (int64_t[]){1, 2, 3}, 3);
    values_are("range(10, 0, -3)", (int64_t[]){10, 7, 4, 1}, 4);
    values_are("[i for i in range(1, 9) if i % 3 != 0 and i > 1]", (int64_t[]){2, 4, 5, 7, 8}, 5);
    values_are("[x // 2 for x in [8, 6, 4]]", (int64_t[]){4, 3, 2}, 3);
    values_are("[max(i, 3) for i in range(5)]", (int64_t[]){3, 3, 3, 3, 4}, 5);
    /* what it is not, at the offset of the fault */
    values_fail("[1, 2.5]", 4, "floating-point");
    values_fail("[i/2 for i in range(4)]", 2, "true division");
    values_fail("[i for i in rnage(4)]", 12, "expected a Python list");
    values_fail("[i for (i, j) in range(4)]", 7, "expected a name after 'for'");
    values_fail("[i for i in range(4) for j in range(2)]", 21, "one 'for' per list");
    values_fail("[i for i in range(0, 9, 0)]", 18, "step must not be zero");
    values_fail("range(1000)", 6, "at most 100");
    values_fail("[]", 0, "the list is empty");
    values_fail("(4)", 0, "one value, not a tuple");
    values_fail("4", 0, "expected a Python list");
    values_fail("[i for i in range(3) if j]", 24, "unknown name 'j'");
    values_fail("[i for if in range(3)]", 7, "cannot be a loop variable");
}

static void test_sizes_over_problem_size_and_parameter_extremes(void **state)
{
    (void)state;
    const char *params[] = {"fw", "fh"};
    const int64_t fw[] = {3, 17, 33, 5}, fh[] = {9, 1};
    const int64_t *values[] = {fw, fh};
    const size_t nvalues[] = {4, 2};
    bt__t1names nm = {{"problem_size_x", "problem_size_y", NULL}, 2, false, params, values,
                      nvalues, 2};
    char *out = NULL;
    bt__t1err e = {0};
    assert_int_equal(bt__t1_size("(ProblemSize[0]+max(fw)-1) * (ProblemSize[ 1 ]+min( fh )-1)",
                                 &nm, &out, &e), BT_OK);
    assert_string_equal(out, "(problem_size_x+33-1) * (problem_size_y+1-1)");
    free(out);
    assert_int_equal(bt__t1_size("max(4, 5) * 2", &nm, &out, &e), BT_OK); /* a function too */
    assert_string_equal(out, "max(4, 5) * 2");
    free(out);
    static const struct {
        const char *text;
        size_t off;
        const char *msg;
    } bad[] = {
        {"ProblemSize[2] * 4", 0, "there is no ProblemSize[2]"},
        {"1 + ProblemSize", 4, "ProblemSize is a list"},
        {"ProblemSize[x]", 0, "write ProblemSize[0]"},
        {"64 * fw", 5, "'fw' is a parameter"},
        {"", 0, "an empty size"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        out = (char *)1;
        if (bt__t1_size(bad[i].text, &nm, &out, &e) != BT_PARSE || e.off != bad[i].off ||
            !strstr(e.msg, bad[i].msg))
            fail_msg("%s: at %zu '%s'", bad[i].text, e.off, e.msg);
        assert_null(out);
    }
    nm.ps_scalar = true; /* "ProblemSize": 100 */
    nm.nps = 1;
    assert_int_equal(bt__t1_size("ProblemSize * 2", &nm, &out, &e), BT_OK);
    assert_string_equal(out, "problem_size_x * 2");
    free(out);
}

/* ---------------------------------------------------------------------------------------------
 * Files: Kernel Tuner's and ours
 * ------------------------------------------------------------------------------------------- */
static bt_kdesc *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/t1/%s", BT_SOURCE_DIR, name);
    bt_kdesc *k = NULL;
    bt_diag d;
    if (bt_kdesc_load_file(path, &k, &d) != BT_OK)
        fail_msg("%s:%d:%d: %s: %s", d.file, d.line, d.column, d.field, d.msg);
    return k;
}

static int64_t size_of(const bt_kdesc *k, int arg)
{
    int64_t slots[256], v = -1;
    bt__kdesc_fill_slots(k, NULL, NULL, NULL, slots);
    assert_int_equal(bt__kexpr_eval(k, &k->args[arg].size, slots, &v, NULL), BT_OK);
    return v;
}

static void launch_of(const bt_kdesc *k, const char *cfg, int64_t grid[3], int64_t block[3])
{
    bt_problem *p;
    bt_config c;
    bt_diag d;
    int64_t dyn;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    if (bt__kdesc_parse_config(k, cfg, &c, &d) != BT_OK ||
        bt__geometry(k, &c, p, NULL, grid, block, &dyn, &d) != BT_OK)
        fail_msg("%s: %s", cfg, d.msg);
    bt_problem_free(p);
}

static void test_kernel_tuners_convolution(void **state)
{
    (void)state;
    bt_kdesc *k = load("test_T1_input.json");
    assert_string_equal(k->name, "convolution"); /* General.BenchmarkName */
    assert_string_equal(k->entry, "convolution_kernel");
    assert_string_equal(k->options, "-std=c++11");
    assert_int_equal(k->nsrc, 1);
    assert_string_equal(k->src[0].lang, "cuda");
    assert_int_equal(k->space.nparams, 8);
    assert_string_equal(k->space.params[0].name, "filter_width");
    assert_int_equal(k->space.params[0].nvalues, 16);
    assert_int_equal(k->space.params[0].values[15], 33);
    assert_int_equal(k->space.params[3].nvalues, 6); /* block_size_y: 2**i, i < 6 */
    assert_int_equal(k->space.params[3].values[5], 32);
    assert_true(k->space.total == 3145728);
    assert_int_equal(k->nconstraints, 1);
    assert_string_equal(bt__expr_source(k->constraints[0].e),
                        "use_padding==0 or (block_size_x % 32 != 0)");
    assert_int_equal(k->nproblem, 2); /* "ProblemSize": [4096, 4096] */
    assert_string_equal(k->problem_names[0], "problem_size_x");
    assert_true(k->problem_defaults[0] == 4096 && k->problem_defaults[1] == 4096);
    /* the grid is Kernel Tuner's: ProblemSize over GridDivX/Y (its GlobalSize is not used) */
    int64_t grid[3], block[3];
    launch_of(k, "filter_width=3,filter_height=3,block_size_x=48,block_size_y=4,tile_size_x=3,"
                 "tile_size_y=5,use_padding=0,read_only=0", grid, block);
    assert_true(block[0] == 48 && block[1] == 4 && block[2] == 1);
    assert_true(grid[0] == 29 && grid[1] == 205 && grid[2] == 1); /* cdiv(4096, 144), (.., 20) */
    /* d_filter ("MemType": "Constant") is a kernel parameter and the __constant__ symbol */
    assert_int_equal(k->nargs, 4);
    assert_true(k->args[0].output && !k->args[1].output);
    assert_true(size_of(k, 1) == (4096 + 33 - 1) * (4096 + 33 - 1));
    assert_true(size_of(k, 2) == 33 * 33);
    assert_true(k->args[1].init == BT__INIT_NORMAL); /* FillType Random: numpy.random.randn */
    assert_true(k->args[2].role == BT__KARG_BUFFER && !k->args[2].cmem);
    assert_true(k->args[3].cmem);
    assert_string_equal(k->args[3].symbol, "d_filter");
    bt_kdesc_free(k);
}

static void test_kernel_tuners_vector_add(void **state)
{
    (void)state;
    bt_kdesc *k = load("test_cache_file_T1_input.json");
    assert_string_equal(k->name, "vector_add");
    assert_int_equal(k->space.nparams, 1);
    assert_int_equal(k->space.params[0].nvalues, 15);
    assert_int_equal(k->nproblem, 1); /* "ProblemSize": 100 */
    assert_true(k->problem_defaults[0] == 100);
    int64_t grid[3], block[3];
    launch_of(k, "block_size_x=192", grid, block);
    /* GridDivY names no parameter, but ProblemSize has no y: the grid is 1 there, as in Kernel
     * Tuner */
    assert_true(grid[0] == 1 && grid[1] == 1 && block[0] == 192);
    assert_int_equal(k->nargs, 4);
    assert_true(k->args[2].output && k->args[3].role == BT__KARG_SCALAR);
    assert_true(size_of(k, 3) == 10000000 && size_of(k, 0) == 10000000);
    assert_true(k->args[0].init == BT__INIT_NORMAL && !k->args[0].output);
    bt_kdesc_free(k);
}

static void test_our_opencl_files(void **state)
{
    (void)state;
    bt_kdesc *k = load("conv.json");
    assert_string_equal(k->src[0].lang, "opencl");
    assert_int_equal(k->space.params[2].nvalues, 3); /* [i for i in range(1, 5) if i != 3] */
    assert_int_equal(k->space.params[2].values[2], 4);
    assert_int_equal(k->nargs, 3); /* OpenCL: the __constant parameter in its place */
    assert_true(k->args[2].cmem && k->args[1].file && k->args[2].file);
    assert_true(k->ref == BT__REF_ANSWERS && k->args[0].answer);
    assert_true(k->tol[BT__DT_FP32].atol == 1e-4 && k->tol[BT__DT_FP32].rtol == 0);
    int64_t grid[3], block[3];
    launch_of(k, "block_size_x=32,block_size_y=2,tile_size_y=4", grid, block);
    assert_true(grid[0] == 2 && grid[1] == 6 && block[0] == 32 && block[1] == 2);
    bt_kdesc_free(k);
    k = load("vadd.json");
    /* GlobalSize in work-items (GlobalSizeType OpenCL): divided by LocalSize, which must divide
     * it (a condition of its own) */
    assert_int_equal(k->nconstraints, 2);
    launch_of(k, "block_size_x=64,items=2", grid, block);
    assert_true(grid[0] == 8 && block[0] == 64);
    assert_true(k->args[2].init == BT__INIT_CONST && k->args[2].init_a == 0.5);
    assert_true(k->args[3].role == BT__KARG_SCALAR && size_of(k, 3) == 1000);
    bt_kdesc_free(k);
}

/* ---------------------------------------------------------------------------------------------
 * Errors at the T1 field
 * ------------------------------------------------------------------------------------------- */

/* A small T1 document: line 2 the parameters, line 3 the conditions, line 4 the kernel, line 5
 * the launch, line 6 the arguments; each %s replaces one part. */
#define DOC                                                                                        \
    "{\"ConfigurationSpace\": {\n"                                                                 \
    " \"TuningParameters\": [{\"Name\": \"block_size_x\", \"Type\": \"int\", \"Values\": %s}],\n"  \
    " \"Conditions\": [{\"Parameters\": [\"block_size_x\"], \"Expression\": %s}]},\n"              \
    " \"KernelSpecification\": {\"Language\": %s, \"KernelName\": \"k\", \"KernelFile\": %s,\n"    \
    "  \"GlobalSize\": {\"X\": %s}, \"LocalSize\": {\"X\": \"block_size_x\"},\n"                   \
    "  \"Arguments\": [{\"Name\": \"o\", \"Type\": \"float\", \"MemoryType\": \"Vector\", "        \
    "\"AccessType\": \"WriteOnly\", \"Size\": %s}]}}"

typedef struct t1doc {
    const char *values, *cond, *lang, *file, *global, *size;
} t1doc;

static bt_status load_doc(t1doc t, bt_kdesc **k, bt_diag *d)
{
    char text[4096];
    snprintf(text, sizeof text, DOC, t.values ? t.values : "\"[32, 64]\"",
             t.cond ? t.cond : "\"block_size_x >= 32\"", t.lang ? t.lang : "\"OpenCL\"",
             t.file ? t.file : "\"vadd.cl\"", t.global ? t.global : "\"256\"",
             t.size ? t.size : "256");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/t1/inline.json", BT_SOURCE_DIR);
    *k = (bt_kdesc *)1;
    return bt_kdesc_load_string(text, path, k, d); /* KernelFile: relative to the working dir */
}

static void expect(const char *what, t1doc t, bt_status want, const char *field, int line, int col,
                   const char *msg)
{
    bt_kdesc *k;
    bt_diag d;
    bt_status st = load_doc(t, &k, &d);
    if (st != want || strcmp(d.field, field) || d.line != line || (col && d.column != col) ||
        !strstr(d.msg, msg))
        fail_msg("%s: status %d, %d:%d '%s': %s (want %d, %d:%d '%s': %s)", what, st, d.line,
                 d.column, d.field, d.msg, want, line, col, field, msg);
    assert_null(k);
    assert_non_null(strstr(d.file, "inline.json"));
}

static void test_errors_name_the_t1_field(void **state)
{
    (void)state;
    /* the document loads as it is (from the source directory, where vadd.cl is) */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/tests/data/t1", BT_SOURCE_DIR);
    char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(dir), 0);
    bt_kdesc *k;
    bt_diag d;
    if (load_doc((t1doc){0}, &k, &d) != BT_OK)
        fail_msg("%d:%d %s: %s", d.line, d.column, d.field, d.msg);
    bt_kdesc_free(k);
    static const struct {
        const char *what;
        t1doc t;
        bt_status st;
        const char *field;
        int line, col; /* col 0: any */
        const char *msg;
    } cases[] = {
        /* t1.c's own: "Values" at the offending character */
        {"values", {.values = "\"[32, 6.4]\""}, BT_PARSE,
         "ConfigurationSpace.TuningParameters[0].Values", 2, 79, "floating-point"},
        /* the spec loader's, mapped: a condition at its column, verbatim */
        {"condition", {.cond = "\"block_size_x >= blok\""}, BT_PARSE,
         "ConfigurationSpace.Conditions[0].Expression", 3, 81, "unknown name 'blok'"},
        {"language", {.lang = "\"Hypertuner\""}, BT_PARSE, "KernelSpecification.Language", 4,
         38, "not supported"},
        {"kernel file", {.file = "\"none.cl\""}, BT_IO, "KernelSpecification.KernelFile", 4, 81,
         "cannot read source"},
        /* a generated field (GlobalSize in work-items over LocalSize) at its T1 field */
        {"global", {.global = "\"n\""}, BT_PARSE, "KernelSpecification.GlobalSize.X", 5, 23,
         "unknown name 'n'"},
        {"size", {.size = "\"max(block_size_x) + y\""}, BT_PARSE,
         "KernelSpecification.Arguments[0].Size", 6, 0, "unknown name 'y'"},
        {"size param", {.size = "\"block_size_x\""}, BT_PARSE,
         "KernelSpecification.Arguments[0].Size", 6, 0, "'block_size_x' is a parameter"},
        {"unknown field", {.global = "\"256\", \"W\": \"1\""}, BT_PARSE,
         "KernelSpecification.GlobalSize.W", 5, 0, "unknown field 'W'"},
        {"no parameters", {.values = "\"[]\""}, BT_PARSE,
         "ConfigurationSpace.TuningParameters[0].Values", 2, 0, "the list is empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        expect(cases[i].what, cases[i].t, cases[i].st, cases[i].field, cases[i].line,
               cases[i].col, cases[i].msg);
    assert_int_equal(chdir(cwd), 0);
    free(cwd);
}

/* Every MemoryType and what each language allows. */
#define ARGS_DOC                                                                                   \
    "{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"block_size_x\", "             \
    "\"Type\": \"int\", \"Values\": \"[64]\"}]},\n"                                               \
    " \"KernelSpecification\": {\"Language\": \"%s\", \"KernelName\": \"k\", "                   \
    "\"KernelFile\": \"vadd.cl\", %s\n"                                                            \
    "  \"GlobalSize\": {\"X\": \"4\"}, \"LocalSize\": {\"X\": \"block_size_x\"},\n"               \
    "  \"Arguments\": [\n"                                                                         \
    "   {\"Name\": \"o\", \"Type\": \"half\", \"MemoryType\": \"Vector\", \"Output\": 1, "         \
    "\"Size\": 256},\n"                                                                           \
    "   {\"Name\": \"q\", \"Type\": \"int8\", \"MemoryType\": \"Vector\", \"FillType\": "          \
    "\"Constant\", \"FillValue\": 3, \"Size\": 256},\n"                                           \
    "   {\"Name\": \"s\", \"Type\": \"double\", \"MemoryType\": \"Scalar\", \"FillValue\": 3},\n"  \
    "   {\"Type\": \"float\", \"MemoryType\": \"%s\", \"Size\": 64}]}}"

static void test_argument_kinds(void **state)
{
    (void)state;
    char dir[1024], text[2048];
    snprintf(dir, sizeof dir, "%s/tests/data/t1", BT_SOURCE_DIR);
    char *cwd = getcwd(NULL, 0);
    assert_int_equal(chdir(dir), 0);
    bt_kdesc *k = NULL;
    bt_diag d;
    snprintf(text, sizeof text, ARGS_DOC, "OpenCL", "", "Local");
    if (bt_kdesc_load_string(text, "kinds.json", &k, &d) != BT_OK)
        fail_msg("%d:%d %s: %s", d.line, d.column, d.field, d.msg);
    assert_true(k->args[0].output && k->args[0].dtype == BT__DT_FP16); /* Kernel Tuner's Output */
    assert_true(k->args[1].dtype == BT__DT_INT8 && k->args[1].init == BT__INIT_CONST);
    assert_true(k->args[2].role == BT__KARG_SCALAR && k->args[2].dtype == BT__DT_FP64);
    assert_true(size_of(k, 2) == 3);
    assert_true(k->args[3].role == BT__KARG_LOCAL && size_of(k, 3) == 64 * 4); /* bytes */
    assert_string_equal(k->args[3].name, "arg3"); /* no Name */
    bt_kdesc_free(k);
    /* CUDA: dynamic shared memory is SharedMemory, not an argument */
    snprintf(text, sizeof text, ARGS_DOC, "CUDA", "\"SharedMemory\": 512,", "Vector\", "
             "\"FillType\": \"Random");
    if (bt_kdesc_load_string(text, "kinds.json", &k, &d) != BT_OK)
        fail_msg("%d:%d %s: %s", d.line, d.column, d.field, d.msg);
    assert_non_null(k->dyn_smem.e);
    bt_kdesc_free(k);
    static const struct {
        const char *lang, *extra, *kind, *field, *msg;
    } bad[] = {
        {"CUDA", "", "Local", "KernelSpecification.Arguments[3].MemoryType", "on CUDA give"},
        {"OpenCL", "\"SharedMemory\": 512,", "Local", "KernelSpecification.SharedMemory",
         "MemoryType Local"},
        {"OpenCL", "", "Symbol", "KernelSpecification.Arguments[3].MemoryType", "not supported"},
        {"OpenCL", "", "Vector\", \"AccessType\": \"ReadWrite",
         "KernelSpecification.Arguments[3].AccessType", "an output cannot be an input too"},
        {"OpenCL", "", "Vector\", \"FillType\": \"Script",
         "KernelSpecification.Arguments[3].FillType", "'Script' is not supported"},
        {"OpenCL", "", "Vector\", \"TypeSize\": 8, \"FillType\": \"Random",
         "KernelSpecification.Arguments[3].TypeSize", "a float is 4 bytes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(text, sizeof text, ARGS_DOC, bad[i].lang, bad[i].extra, bad[i].kind);
        k = (bt_kdesc *)1;
        if (bt_kdesc_load_string(text, "kinds.json", &k, &d) != BT_PARSE ||
            strcmp(d.field, bad[i].field) || !strstr(d.msg, bad[i].msg) || d.line < 1)
            fail_msg("%s %s: %d:%d '%s': %s", bad[i].lang, bad[i].kind, d.line, d.column,
                     d.field, d.msg);
        assert_null(k);
    }
    assert_int_equal(chdir(cwd), 0);
    free(cwd);
}

/* A blocktune spec is not mistaken for a T1 file, and a T1 file without half of it is named as
 * one. */
static void test_detection(void **state)
{
    (void)state;
    bt_kdesc *k = NULL;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_string("{\"name\": \"x\", \"params\": {\"B\": [1]}}", "s.json",
                                          &k, &d), BT_OK);
    bt_kdesc_free(k);
    assert_int_equal(bt_kdesc_load_string("{\"ConfigurationSpace\": {\"TuningParameters\": []}}",
                                          "t.json", &k, &d), BT_PARSE);
    assert_string_equal(d.field, "");
    assert_non_null(strstr(d.msg, "missing \"KernelSpecification\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values_as_python_reads_them),
        cmocka_unit_test(test_sizes_over_problem_size_and_parameter_extremes),
        cmocka_unit_test(test_kernel_tuners_convolution),
        cmocka_unit_test(test_kernel_tuners_vector_add),
        cmocka_unit_test(test_our_opencl_files),
        cmocka_unit_test(test_errors_name_the_t1_field),
        cmocka_unit_test(test_argument_kinds),
        cmocka_unit_test(test_detection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
