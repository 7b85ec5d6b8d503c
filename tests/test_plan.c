/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_plan.c — the analytic model and the planner against the seeds' worked numbers, the rule
 * sets, spec loading errors and the speed of filtering a large space.
 */
#include "test_util.h"

#include "backends/cuda/nvrtc.h"
#include "core/plan.h"
#include "engine/build.h"
#include "engine/engine.h"

#include <math.h>

static const bt_gpu *gpu(bt_gpudb *db, const char *name)
{
    const bt_gpu *g = NULL;
    bt_diag d;
    assert_int_equal(bt_gpudb_find(db, name, &g, &d), BT_OK);
    return g;
}

typedef struct fx {
    bt_gpudb *db;
    bt_kdesc *gemm;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    bt_diag d;
    if (bt_gpudb_load_default(&f->db, &d) != BT_OK || bt_kdesc_builtin("gemm", &f->gemm, &d) != BT_OK)
        return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    bt_kdesc_destroy(f->gemm);
    bt_gpudb_destroy(f->db);
    free(f);
    return 0;
}

/* Plans one gemm config, returns the plan (caller frees). */
static bt_plan *plan_one(fx *f, const char *gpu_name, const char *dtype, const char *cfg,
                         const char *rules)
{
    bt_problem *p;
    bt_diag d;
    assert_int_equal(bt_problem_create(f->gemm, &p), BT_OK);
    assert_int_equal(bt_problem_set_dtype(p, dtype, &d), BT_OK);
    bt_config c;
    assert_int_equal(bt__kdesc_parse_config(f->gemm, cfg, &c, &d), BT_OK);
    bt_plan_options o = {.rules = rules, .only = &c};
    bt_plan *pl = NULL;
    assert_int_equal(bt_plan_create(f->gemm, p, gpu(f->db, gpu_name), &o, &pl, &d), BT_OK);
    bt_problem_destroy(p);
    return pl;
}

static const bt__cfg_eval *the_eval(const bt_plan *pl)
{
    return pl->ncand ? &pl->cand[0] : &pl->elim[0];
}

static void test_a100_fp16_ridge_is_about_156(void **state)
{
    fx *f = *state;
    bt_plan *pl = plan_one(f, "A100-SXM4-80GB", "fp16",
                           "BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=3,GROUP_M=8", NULL);
    double ridge = pl->model.roof.ridge;
    assert_true(ridge > 150 && ridge < 160);
    assert_true(pl->model.roof.peak_tflops > 300 && pl->model.roof.peak_tflops < 320);
    assert_false(pl->model.roof.memory_bound); /* 4096^3 fp16: intensity ~1365 */
    bt_plan_destroy(pl);
}

static const char *CFG_5STAGES = "block_m=128,BLOCK_N=256,block_k=64,num_warps=8,num_stages=5,group_m=8";
static const char *CFG_4STAGES = "BLOCK_M=128,BLOCK_N=256,BLOCK_K=64,num_warps=8,num_stages=4,GROUP_M=8";

static void test_five_stages_128x256x64_fp16_is_245760_bytes_and_rejected(void **state)
{
    fx *f = *state;
    const char *gpus[] = {"A100-SXM4-80GB", "H100-SXM", "h200"};
    for (size_t i = 0; i < 3; i++) {
        bt_plan *pl = plan_one(f, gpus[i], "fp16", CFG_5STAGES, NULL);
        const bt__cfg_eval *ev = the_eval(pl);
        assert_int_equal(ev->smem, 245760);
        assert_false(ev->valid);
        assert_true(ev->broken & (1u << BT__RULE_SMEM));
        assert_non_null(strstr(ev->reasons, "shared memory 245760 B >"));
        assert_non_null(strstr(ev->reasons, "5 \u00d7 (128\u00d7" "64 + 64\u00d7" "256) \u00d7 2"));
        if (i > 0)
            assert_non_null(strstr(ev->reasons, "> 232448 B per block"));
        bt_plan_destroy(pl);
    }
}

static void test_four_stages_fit_hopper_but_not_a100(void **state)
{
    fx *f = *state;
    bt_plan *pl = plan_one(f, "H100-SXM", "fp16", CFG_4STAGES, NULL);
    assert_int_equal(the_eval(pl)->smem, 196608);
    assert_true(the_eval(pl)->valid);
    assert_int_equal(the_eval(pl)->blocks_per_sm, 1);
    assert_string_equal(the_eval(pl)->limiter, "shared memory");
    bt_plan_destroy(pl);
    pl = plan_one(f, "NVIDIA H200", "fp16", CFG_4STAGES, NULL);
    assert_true(the_eval(pl)->valid);
    bt_plan_destroy(pl);
    pl = plan_one(f, "A100-SXM4-80GB", "fp16", CFG_4STAGES, NULL);
    assert_false(the_eval(pl)->valid);
    assert_non_null(strstr(the_eval(pl)->reasons, "196608 B > 166912 B per block"));
    bt_plan_destroy(pl);
}

static void test_128x128_fp32_accumulator_is_64KiB(void **state)
{
    fx *f = *state;
    bt_plan *pl = plan_one(f, "A100-SXM4-80GB", "fp32",
                           "BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=3,GROUP_M=8", NULL);
    assert_int_equal(the_eval(pl)->acc_bytes, 65536);
    /* 64 KiB over 256 threads = 64 fp32 registers each for the accumulator alone */
    assert_true(the_eval(pl)->regs >= 64);
    bt_plan_destroy(pl);
}

/* The compile weight (the work one thread's code unrolls: the tiles' product over the threads)
 * orders a round's compiles, the heaviest first, ties as given; a kernel without tiles keeps its
 * order. */
static void test_compile_weight_orders_the_compiles(void **state)
{
    fx *f = *state;
    const char *cfgs[] = {"BLOCK_M=128,BLOCK_N=256,BLOCK_K=32,num_warps=8,num_stages=4,GROUP_M=8",
                          CFG_4STAGES,
                          "BLOCK_M=64,BLOCK_N=256,BLOCK_K=64,num_warps=4,num_stages=4,GROUP_M=8"};
    const double want[] = {128.0 * 256 * 32 / 256, 128.0 * 256 * 64 / 256, 64.0 * 256 * 64 / 128};
    bt_plan *pl[3];
    bt__entry e[3], *jobs[3];
    memset(e, 0, sizeof e);
    for (int i = 0; i < 3; i++) {
        pl[i] = plan_one(f, "h100", "fp16", cfgs[i], "triton");
        e[i].ev = *the_eval(pl[i]);
        assert_true(bt__model_compile_weight(f->gemm, &e[i].ev) == want[i]);
        jobs[i] = &e[i];
    }
    bt__build_order(f->gemm, jobs, 3); /* 4096, 8192, 8192: the two heavy ones first, in order */
    assert_ptr_equal(jobs[0], &e[1]);
    assert_ptr_equal(jobs[1], &e[2]);
    assert_ptr_equal(jobs[2], &e[0]);
    bt_kdesc *va = NULL; /* reduce's model has no tiles */
    bt_diag d;
    assert_int_equal(bt_kdesc_builtin("reduce", &va, &d), BT_OK);
    assert_true(bt__model_compile_weight(va, &e[0].ev) == 0);
    bt__entry *same[3] = {&e[0], &e[1], &e[2]};
    bt__build_order(va, same, 3);
    assert_ptr_equal(same[0], &e[0]);
    assert_ptr_equal(same[2], &e[2]);
    bt_kdesc_destroy(va);
    for (int i = 0; i < 3; i++)
        bt_plan_destroy(pl[i]);
}

static void test_block_m_96_depends_on_rule_set(void **state)
{
    fx *f = *state;
    const char *cfg = "BLOCK_M=96,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=3,GROUP_M=8";
    bt_plan *pl = plan_one(f, "h200", "fp16", cfg, "triton");
    assert_false(the_eval(pl)->valid);
    assert_non_null(strstr(the_eval(pl)->reasons, "BLOCK_M=96 is not a power of two"));
    assert_false(pl->in_space);
    bt_plan_destroy(pl);
    pl = plan_one(f, "h200", "fp16", cfg, "cuda");
    assert_true(the_eval(pl)->valid);
    bt_plan_destroy(pl);
}

static void test_every_broken_rule_is_kept(void **state)
{
    fx *f = *state;
    /* 96 (not pow2), BLOCK_N=8 (< 16 for tensor cores), 5 x (96x128 + 128x8) x 2 B > 64 KiB */
    bt_plan *pl = plan_one(f, "T4", "fp16",
                           "BLOCK_M=96,BLOCK_N=8,BLOCK_K=128,num_warps=8,num_stages=5,GROUP_M=8", "triton");
    const bt__cfg_eval *ev = the_eval(pl);
    assert_false(ev->valid);
    assert_true(ev->broken & (1u << BT__RULE_POW2_TILES));
    assert_true(ev->broken & (1u << BT__RULE_TC_DIMS));
    assert_true(ev->broken & (1u << BT__RULE_SMEM));
    bt_plan_destroy(pl);
}

static void test_softmax_is_memory_bound(void **state)
{
    fx *f = *state;
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_builtin("softmax", &k, &d), BT_OK);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "rows", 32768, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "COLS", 1024, &d), BT_OK);
    bt_plan *pl;
    assert_int_equal(bt_plan_create(k, p, gpu(f->db, "h200"), NULL, &pl, &d), BT_OK);
    assert_true(pl->model.roof.memory_bound);
    assert_true(pl->model.roof.intensity < 3);
    assert_true(pl->ncand >= 3);
    assert_true(pl->nelim > 0); /* BLOCK_N far above cols is pruned by the constraint */
    /* smem is BLOCK_N x elem for every candidate */
    for (size_t i = 0; i < pl->ncand; i++)
        assert_int_equal(pl->cand[i].smem, pl->cand[i].cfg.v[0] * 4);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

static void test_builtin_spaces_are_wide_enough(void **state)
{
    fx *f = *state;
    const char *const *names = bt_kdesc_builtin_names();
    for (; *names; names++) {
        bt_kdesc *k;
        bt_diag d;
        assert_int_equal(bt_kdesc_builtin(*names, &k, &d), BT_OK);
        bt_problem *p;
        bt_problem_create(k, &p);
        bt_plan *pl;
        assert_int_equal(bt_plan_create(k, p, gpu(f->db, "h200"), NULL, &pl, &d), BT_OK);
        size_t need = strcmp(*names, "gemm") ? 3 : 6;
        if (pl->ncand < need)
            fail_msg("%s has %zu valid configs on h200 (< %zu)", *names, pl->ncand, need);
        /* ranked by predicted time */
        for (size_t i = 1; i < pl->ncand; i++)
            assert_true(pl->cand[i - 1].pred_us <= pl->cand[i].pred_us);
        bt_plan_destroy(pl);
        bt_problem_destroy(p);
        bt_kdesc_destroy(k);
    }
}

static void test_gemm_waves_and_last_tile(void **state)
{
    fx *f = *state;
    bt_problem *p;
    bt_diag d;
    bt_problem_create(f->gemm, &p);
    bt_problem_set(p, "M", 3001, &d);
    bt_problem_set(p, "N", 2999, &d);
    bt_problem_set(p, "K", 1031, &d);
    bt_problem_set_dtype(p, "fp16", &d);
    bt_config c;
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=4,GROUP_M=8", &c, &d), BT_OK);
    bt_plan_options o = {.only = &c};
    bt_plan *pl;
    assert_int_equal(bt_plan_create(f->gemm, p, gpu(f->db, "h200"), &o, &pl, &d), BT_OK);
    const bt__cfg_eval *ev = the_eval(pl);
    assert_int_equal(ev->grid, 24 * 47); /* cdiv(3001,128) x cdiv(2999,64) */
    assert_float_equal(ev->last_tile_eff[0], (3001 % 128) / 128.0, 1e-9);
    assert_float_equal(ev->last_tile_eff[1], (2999 % 64) / 64.0, 1e-9);
    assert_float_equal(ev->last_tile_eff[2], (1031 % 32) / 32.0, 1e-9);
    assert_false(ev->vector_ok); /* K*2 and N*2 not multiples of 16 */
    assert_true(ev->tensor_core);
    int64_t slots = ev->blocks_per_sm * 132;
    assert_int_equal(ev->waves, (ev->grid + slots - 1) / slots);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
}

static void test_spec_errors_name_file_line_column(void **state)
{
    (void)state;
    bt_kdesc *k = (bt_kdesc *)1;
    bt_diag d;
    const char *bad_expr = "{\n  \"name\": \"x\",\n  \"problem\": {\"n\": 10},\n"
                           "  \"params\": {\"B\": [1, 2]},\n"
                           "  \"constraints\": [\"B * (n + 2\"]\n}\n";
    assert_int_equal(bt_kdesc_load_string(bad_expr, "bad.json", &k, &d), BT_PARSE);
    assert_null(k);
    assert_string_equal(d.file, "bad.json");
    assert_int_equal(d.line, 5);
    assert_string_equal(d.field, "constraints[0]");
    assert_true(d.column > 19); /* inside the string, past its quote at column 19 */
    const char *typo = "{\"name\": \"x\", \"params\": {\"B\": [1]}, \"constraint\": []}";
    assert_int_equal(bt_kdesc_load_string(typo, "t.json", &k, &d), BT_PARSE);
    assert_non_null(strstr(d.msg, "did you mean 'constraints'"));
    const char *syntax = "{\"name\": \"x\",\n \"params\": {\"B\": [1,]}}";
    assert_int_equal(bt_kdesc_load_string(syntax, "s.json", &k, &d), BT_PARSE);
    assert_int_equal(d.line, 2);
    const char *unknown = "{\"name\": \"x\", \"params\": {\"B\": [1]},\n \"constraints\": [\"B < BB\"]}";
    assert_int_equal(bt_kdesc_load_string(unknown, "u.json", &k, &d), BT_PARSE);
    assert_non_null(strstr(d.msg, "BB"));
    assert_int_equal(d.line, 2);
    const char *cfgs = "{\"name\": \"x\", \"params\": {\"B\": [1, 2], \"C\": [3]},\n"
                       " \"configs\": [{\"B\": 1, \"C\": 3}, {\"B\": 4, \"C\": 3}]}";
    assert_int_equal(bt_kdesc_load_string(cfgs, "c.json", &k, &d), BT_PARSE);
    assert_string_equal(d.field, "configs[1].B");
    assert_non_null(strstr(d.msg, "not among the values"));
    const char *ref = "{\"name\": \"x\", \"params\": {\"B\": [1, 2], \"C\": [3]},\n"
                      " \"reference\": {\"config\": {\"B\": 1}}}";
    assert_int_equal(bt_kdesc_load_string(ref, "r.json", &k, &d), BT_PARSE);
    assert_non_null(strstr(d.msg, "does not set 'C'"));
    const char *ok = "{\"name\": \"x\", \"params\": {\"B\": [1, 2], \"C\": [3]},\n"
                     " \"configs\": [{\"B\": 2, \"C\": 3}]}";
    assert_int_equal(bt_kdesc_load_string(ok, "o.json", &k, &d), BT_OK);
    assert_true(bt__kdesc_count(k) == 1);
    bt_config one;
    bt__kdesc_config_at(k, 0, &one);
    assert_int_equal(one.v[0], 2);
    bt_kdesc_destroy(k);
    const char *dup = "{\"name\": \"x\", \"params\": {\"B\": [1, 1]}}";
    assert_int_equal(bt_kdesc_load_string(dup, "d.json", &k, &d), BT_PARSE);
    assert_non_null(strstr(d.msg, "twice"));
}

/* A spec made of `format` with `piece` in it fails to load at `line`, naming `field` with a message
 * that contains `msg`; nothing is loaded. */
static void expect_spec_error(const char *format, const char *piece, const char *field,
                              const char *msg, int line, size_t which)
{
    char text[1024];
    snprintf(text, sizeof text, format, piece);
    bt_kdesc *k = (bt_kdesc *)1;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_string(text, "bad.json", &k, &d), BT_PARSE);
    assert_null(k);
    if (strcmp(d.field, field) || !strstr(d.msg, msg))
        fail_msg("case %zu: field '%s' msg '%s'", which, d.field, d.msg);
    assert_int_equal(d.line, line);
}

/* "tensormap" arguments: parsed with their buffer, dims and box; the request for a config has
 * dense row-major strides and a box that may use parameters; mistakes name the field. */
static void test_tensormap_arguments(void **state)
{
    (void)state;
    const char *spec =
        "{\"name\": \"t\", \"problem\": {\"M\": 100, \"K\": 72}, \"dtypes\": [\"bf16\"],\n"
        " \"params\": {\"BM\": [64, 128]},\n"
        " \"args\": [{\"name\": \"A\", \"size\": \"M * K\"},\n"
        "          {\"name\": \"tm\", \"kind\": \"tensormap\", \"buffer\": \"A\", \"dims\": [\"K\", \"M\"],\n"
        "           \"box\": [64, \"BM\"], \"swizzle\": 128}]}";
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_string(spec, "tm.json", &k, &d), BT_OK);
    assert_int_equal(k->nargs, 2);
    assert_int_equal(k->args[1].role, BT__KARG_TMAP);
    assert_int_equal(k->args[1].tm_buffer, 0);
    assert_int_equal(k->args[1].tm_rank, 2);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_config c;
    assert_int_equal(bt__kdesc_parse_config(k, "BM=128", &c, &d), BT_OK);
    bt_gpudb *db;
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    bt__tmap_req q[BT__MAX_TMAPS];
    assert_int_equal(bt__tmap_reqs(k, &c, p, gpu(db, "h200"), q, &d), BT_OK);
    assert_int_equal(q[0].dtype, BT__DT_BF16);
    assert_int_equal(q[0].elem_bytes, 2);
    assert_true(q[0].dims[0] == 72 && q[0].dims[1] == 100);
    assert_true(q[0].strides[0] == 2 && q[0].strides[1] == 144);
    assert_true(q[0].box[0] == 64 && q[0].box[1] == 128 && q[0].swizzle == 128);
    /* a box the copy engine cannot take is refused when the request is made, with the argument */
    assert_int_equal(bt_problem_set(p, "M", 0, &d), BT_OK);
    assert_int_equal(bt__tmap_reqs(k, &c, p, gpu(db, "h200"), q, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "tensormap 'tm'"));
    bt_problem_destroy(p);
    bt_gpudb_destroy(db);
    bt_kdesc_destroy(k);

    static const struct {
        const char *arg, *field, *msg;
    } bad[] = {
        {"{\"name\": \"tm\", \"kind\": \"tensormap\", \"buffer\": \"B\", \"dims\": [\"K\"], \"box\": [8]}",
         "args[1].buffer", "not a buffer"},
        {"{\"name\": \"tm\", \"kind\": \"tensormap\", \"buffer\": \"A\", \"dims\": [\"K\", \"M\"], \"box\": [8]}",
         "args[1].box", "box has 1 dimensions, dims has 2"},
        {"{\"name\": \"tm\", \"kind\": \"tensormap\", \"buffer\": \"A\", \"dims\": [\"K\"], \"box\": [8], "
         "\"swizzle\": 48}",
         "args[1].swizzle", "0, 32, 64 or 128"},
        {"{\"name\": \"tm\", \"kind\": \"tensormap\", \"buffer\": \"A\", \"dims\": [\"K\"], \"box\": [8], "
         "\"size\": 4}",
         "args[1]", "takes no \"size\""},
        {"{\"name\": \"tm\", \"kind\": \"tensormap\", \"dims\": [\"K\"], \"box\": [8]}", "args[1]",
         "needs \"buffer\""},
        {"{\"name\": \"x\", \"size\": 4, \"box\": [8]}", "args[1]", "belongs to a tensormap"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_spec_error("{\"name\": \"t\", \"problem\": {\"M\": 100, \"K\": 72},\n"
                          " \"params\": {\"BM\": [64]},\n"
                          " \"args\": [{\"name\": \"A\", \"size\": \"M * K\"},\n  %s]}",
                          bad[i].arg, bad[i].field, bad[i].msg, 4, i);
}

/* "dtype": {"if", "then", "else"}: the condition may use problem variables only; mistakes name
 * the field. */
static void test_dtype_that_depends_on_the_problem(void **state)
{
    (void)state;
    static const struct {
        const char *dtype, *field, *msg;
    } bad[] = {
        {"{\"if\": \"BM > 32\", \"then\": \"fp32\", \"else\": \"T\"}", "args[0].dtype.if",
         "'BM' is not a problem variable"},
        {"{\"if\": \"F\", \"then\": \"fp32\"}", "args[0].dtype", "needs \"else\""},
        {"{\"if\": \"F\", \"then\": \"fp33\", \"else\": \"T\"}", "args[0].dtype.then", "unknown dtype 'fp33'"},
        {"{\"if\": \"F\", \"then\": \"fp32\", \"else\": \"T\", \"elif\": 1}", "args[0].dtype.elif", "did you mean 'if'"},
    };
    bt_kdesc *k;
    bt_diag d;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        expect_spec_error("{\"name\": \"t\", \"problem\": {\"n\": 8, \"F\": 0}, \"params\": {\"BM\": [64]},\n"
                          " \"args\": [{\"name\": \"z\", \"size\": \"n\", \"dtype\": %s}]}",
                          bad[i].dtype, bad[i].field, bad[i].msg, 2, i);
    const char *scalar = "{\"name\": \"t\", \"problem\": {\"n\": 8, \"F\": 0}, \"params\": {\"BM\": [64]},\n"
                         " \"args\": [{\"name\": \"s\", \"kind\": \"scalar\", \"value\": \"n\", "
                         "\"dtype\": {\"if\": \"F\", \"then\": \"int64\", \"else\": \"int32\"}}]}";
    assert_int_equal(bt_kdesc_load_string(scalar, "s.json", &k, &d), BT_PARSE);
    assert_non_null(strstr(d.msg, "only a buffer's dtype"));
    const char *ok = "{\"name\": \"t\", \"problem\": {\"n\": 8, \"F\": 0}, \"dtypes\": [\"bf16\"],\n"
                     " \"params\": {\"BM\": [64]},\n"
                     " \"args\": [{\"name\": \"z\", \"size\": \"n\", "
                     "\"dtype\": {\"if\": \"F == 1\", \"then\": \"fp32\", \"else\": \"T\"}}]}";
    assert_int_equal(bt_kdesc_load_string(ok, "o.json", &k, &d), BT_OK);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt__arg_dtype(k, &k->args[0], p), BT__DT_BF16);
    assert_int_equal(bt_problem_set(p, "F", 1, &d), BT_OK);
    assert_int_equal(bt__arg_dtype(k, &k->args[0], p), BT__DT_FP32);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

/* "sources": a list of sources is their concatenation, in order, each on lines of its own;
 * mistakes name the element. */
static void test_sources_in_a_list(void **state)
{
    (void)state;
    const char *fmt = "{\"name\": \"t\", \"problem\": {\"n\": 8}, \"params\": {\"B\": [64]},\n"
                      " \"sources\": {\"cuda\": %s},\n"
                      " \"entry\": \"k\", \"launch\": {\"grid\": [\"n\"], \"block\": [\"B\"]},\n"
                      " \"args\": [{\"name\": \"z\", \"size\": \"n\", \"output\": true}]}";
    char text[1024];
    snprintf(text, sizeof text, fmt,
             "[{\"inline\": \"#define TWO 2\"}, {\"inline\": \"int a = TWO;\\n\"}, "
             "{\"inline\": \"int b;\"}]");
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_string(text, "l.json", &k, &d), BT_OK);
    /* (compiled after a newline, which follows the prelude when the spec has one) */
    assert_string_equal(bt__kdesc_source(k, "cuda")->text, "\n#define TWO 2\nint a = TWO;\nint b;\n");
    bt_kdesc_destroy(k);
    static const struct {
        const char *src, *field, *msg;
    } bad[] = {
        {"[]", "sources.cuda", "an empty list"},
        {"[{\"inline\": \"int a;\"}, 5]", "sources.cuda[1]", "expected a file name"},
        {"[[\"a.cu\"]]", "sources.cuda[0]", "found a list"},
        {"[{\"inline\": \"int a;\"}, \"no_such_file.cu\"]", "sources.cuda[1]", "cannot read source"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        bt_status want = strstr(bad[i].msg, "cannot read") ? BT_IO : BT_PARSE;
        snprintf(text, sizeof text, fmt, bad[i].src);
        k = (bt_kdesc *)1;
        assert_int_equal(bt_kdesc_load_string(text, "bad.json", &k, &d), want);
        assert_null(k);
        if (strcmp(d.field, bad[i].field) || !strstr(d.msg, bad[i].msg))
            fail_msg("case %zu: field '%s' msg '%s'", i, d.field, d.msg);
        assert_int_equal(d.line, 2);
    }
}

static void test_division_by_zero_eliminates_the_config_only(void **state)
{
    fx *f = *state;
    const char *spec = "{\"name\": \"z\", \"problem\": {\"n\": 100},"
                       " \"params\": {\"D\": [0, 1, 2]},"
                       " \"constraints\": [\"n / D > 10\"]}";
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_string(spec, "z.json", &k, &d), BT_OK);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_plan *pl;
    assert_int_equal(bt_plan_create(k, p, gpu(f->db, "h200"), NULL, &pl, &d), BT_OK);
    assert_int_equal(pl->ncand, 2);
    assert_int_equal(pl->nelim, 1);
    assert_non_null(strstr(pl->elim[0].reasons, "division by zero"));
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

/* Found by tests/fuzz/fuzz_config: plan --config with values near INT64_MAX overflowed the model's
 * integer arithmetic (num_warps * warp_size, cdiv, registers per block: undefined behaviour,
 * caught by UBSan, and wrapped to negative thread counts). The arithmetic saturates: such a
 * config is eliminated for what it is. */
static void test_huge_config_values_saturate(void **state)
{
    fx *f = *state;
    bt_plan *pl = plan_one(f, "h200", "fp16",
                           "BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,num_warps=9223372036854775807,"
                           "num_stages=3,GROUP_M=8",
                           NULL);
    const bt__cfg_eval *ev = the_eval(pl);
    assert_false(ev->valid);
    assert_true(ev->threads == INT64_MAX);
    assert_non_null(strstr(ev->reasons, "threads_limit"));
    bt_plan_destroy(pl);
    pl = plan_one(f, "h200", "fp16",
                  "BLOCK_M=9223372036854775807,BLOCK_N=128,BLOCK_K=32,num_warps=4,"
                  "num_stages=-9223372036854775808,GROUP_M=8",
                  NULL);
    ev = the_eval(pl);
    assert_false(ev->valid);
    assert_false(isnan(ev->pred_us));
    bt_plan_destroy(pl);
}

static void test_parse_config_errors(void **state)
{
    fx *f = *state;
    bt_config c;
    bt_diag d;
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_M=64", &c, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "BLOCK_N"));
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_Q=64", &c, &d), BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "BLOCK_Q"));
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_M=sixty", &c, &d), BT_INVALID_ARG);
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_M", &c, &d), BT_INVALID_ARG);
}

static void test_100k_configs_filter_in_well_under_a_second(void **state)
{
    fx *f = *state;
    /* 10 * 10 * 10 * 10 * 12 = 120000 configs */
    const char *spec =
        "{\"name\": \"big\", \"problem\": {\"M\": 4096, \"N\": 4096, \"K\": 4096},"
        " \"params\": {\"BLOCK_M\": {\"range\": [16, 160, 16]}, \"BLOCK_N\": {\"range\": [16, 160, 16]},"
        "  \"BLOCK_K\": {\"range\": [8, 80, 8]}, \"num_stages\": {\"range\": [1, 10]},"
        "  \"num_warps\": [1, 2, 4, 8, 16, 32, 3, 5, 6, 7, 12, 24]},"
        " \"constraints\": [\"BLOCK_M * BLOCK_N >= 32 * num_warps * warp_size\"],"
        " \"rules\": \"cuda\","
        " \"model\": {\"kind\": \"gemm\", \"unit\": \"tensor\", \"inner\": \"BLOCK_N\","
        "  \"tiles\": [{\"param\": \"BLOCK_M\", \"dim\": \"M\"}, {\"param\": \"BLOCK_N\", \"dim\": \"N\"}],"
        "  \"smem\": \"num_stages * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * elem_bytes\"},"
        " \"launch\": {\"grid\": [\"cdiv(M, BLOCK_M)\", \"cdiv(N, BLOCK_N)\"], \"block\": [\"num_warps*warp_size\"]},"
        " \"flops\": \"2*M*N*K\", \"bytes\": \"(M*K+K*N+M*N)*elem_bytes\"}";
    bt_kdesc *k;
    bt_diag d;
    assert_int_equal(bt_kdesc_load_string(spec, "big.json", &k, &d), BT_OK);
    assert_true(bt__kdesc_count(k) == 120000);
    bt_problem *p;
    bt_problem_create(k, &p);
    bt_plan *pl;
    /* CPU time of this thread: what the planner costs, whatever else the machine is doing */
    struct timespec c0, c1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    double t0 = bt_test_now();
    assert_int_equal(bt_plan_create(k, p, gpu(f->db, "h200"), NULL, &pl, &d), BT_OK);
    double wall = bt_test_now() - t0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    double dt = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    printf("# 120000 configs planned in %.3f s of CPU (%.3f s wall; %zu valid)\n", dt, wall, pl->ncand);
    assert_int_equal(pl->ncand + pl->nelim, 120000);
    if (!bt_test_sanitized())
        assert_true(dt < 1.0);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
}

static void test_json_has_the_documented_fields(void **state)
{
    fx *f = *state;
    bt_plan *pl = plan_one(f, "h200", "fp16", CFG_5STAGES, NULL);
    json_t *j = bt__plan_to_json(pl);
    json_t *rf = json_object_get(j, "roofline");
    const char *keys[] = {"flops", "bytes", "intensity", "ridge", "bound"};
    for (size_t i = 0; i < 5; i++)
        assert_non_null(json_object_get(rf, keys[i]));
    json_t *e = json_array_get(json_object_get(j, "eliminated"), 0);
    assert_non_null(e);
    assert_true(json_array_size(json_object_get(e, "reasons")) >= 1);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(e, "config"), "num_stages")), 5);
    json_decref(j);
    bt_plan_destroy(pl);
}

/* Plans k (one config of it when cfg is given) on GPU g; the caller frees the plan. */
static bt_plan *plan_on(const bt_kdesc *k, const bt_gpu *g, const char *cfg, bool exact)
{
    bt_diag d;
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_config c;
    if (cfg)
        assert_int_equal(bt__kdesc_parse_config(k, cfg, &c, &d), BT_OK);
    bt_plan_options o = {.only = cfg ? &c : NULL, .exact = exact};
    bt_plan *pl = NULL;
    bt_status st = bt_plan_create(k, p, g, &o, &pl, &d);
    if (st)
        fail_msg("plan: %s", d.msg);
    bt_problem_destroy(p);
    return pl;
}

/* Plans one config of a spec (text) on a GPU of the table; caller frees the plan and *kout. */
static bt_plan *plan_spec(fx *f, const char *text, const char *gpu_name, const char *cfg,
                          bool exact, bt_kdesc **kout)
{
    bt_kdesc *k;
    bt_diag d;
    if (bt_kdesc_load_string(text, "t.json", &k, &d) != BT_OK)
        fail_msg("spec: %s:%d:%d %s", d.file, d.line, d.column, d.msg);
    *kout = k;
    return plan_on(k, gpu(f->db, gpu_name), cfg, exact);
}

/* CUDA limits static __shared__ arrays to 48 KiB per block (more must be dynamic): a config above
 * it is eliminated with the numbers; the same bytes requested as dynamic memory are not. */
static void test_static_shared_memory_above_48k_is_eliminated(void **state)
{
    fx *f = *state;
    const char *fmt = "{\"name\": \"s\", \"problem\": {\"n\": 4096}, \"params\": {\"T\": [8192, 16384]},\n"
                      " \"model\": {\"smem\": \"T * 4\"},\n"
                      " \"launch\": {\"grid\": [\"cdiv(n, T)\"], \"block\": [256]%s}}";
    char text[512];
    snprintf(text, sizeof text, fmt, "");
    bt_kdesc *k;
    bt_plan *pl = plan_spec(f, text, "h200", NULL, false, &k);
    assert_int_equal(pl->ncand, 1); /* T=8192: 32 KiB */
    assert_int_equal(pl->nelim, 1);
    assert_true(pl->elim[0].broken & (1u << BT__RULE_SMEM_STATIC));
    assert_non_null(strstr(pl->elim[0].reasons, "static shared memory 65536 B > 49152 B per block "
                                                 "(16384 \xc3\x97 4 B)"));
    assert_non_null(strstr(pl->elim[0].reasons, "(smem_static)"));
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
    /* dynamic: requested with launch.local_mem (opted in above 48 KiB at launch) */
    snprintf(text, sizeof text, fmt, ", \"local_mem\": \"T * 4\"");
    pl = plan_spec(f, text, "h200", NULL, false, &k);
    assert_int_equal(pl->ncand, 2);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
    /* model.static_smem says what is static when the model's figure is not */
    snprintf(text, sizeof text,
             "{\"name\": \"s\", \"problem\": {\"n\": 4096}, \"params\": {\"T\": [8192, 16384]},\n"
             " \"model\": {\"smem\": \"T * 4\", \"static_smem\": 128},\n"
             " \"launch\": {\"grid\": [\"cdiv(n, T)\"], \"block\": [256]}}");
    pl = plan_spec(f, text, "h200", NULL, false, &k);
    assert_int_equal(pl->ncand, 2);
    bt_plan_destroy(pl);
    /* a device that does not split static from opt-in memory (OpenCL: one local size) keeps only
     * smem_limit */
    bt_gpu g = *gpu(f->db, "h200");
    g.smem_per_block = g.smem_per_block_optin;
    pl = plan_on(k, &g, NULL, false);
    assert_int_equal(pl->ncand, 2);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
}

/* Triton's rules: a config whose accumulator alone needs more registers per thread than a thread
 * may have (the accumulator is held across the block's threads) is eliminated with the numbers;
 * the ones within it are kept; on a GPU with tensor memory (cc 10) a tensor-core one is kept. */
static void test_accumulator_beyond_the_registers_is_eliminated(void **state)
{
    fx *f = *state;
    const char *text =
        "{\"name\": \"mm\", \"problem\": {\"M\": 4096, \"N\": 4096}, \"rules\": \"triton\",\n"
        " \"params\": {\"BM\": [128, 256], \"BN\": [128, 256], \"num_warps\": [4, 8]},\n"
        " \"model\": {\"kind\": \"gemm\", \"unit\": \"tensor\", \"accumulator_bytes\": \"BM * BN * 4\"},\n"
        " \"launch\": {\"grid\": [\"cdiv(M, BM) * cdiv(N, BN)\"], \"block\": [\"num_warps * 32\"]}}";
    bt_kdesc *k;
    bt_plan *pl = plan_spec(f, text, "h200", NULL, false, &k);
    /* BM*BN / threads: 128x128 w4 = 128, w8 = 64; 128x256 and 256x128 w4 = 256 (out), w8 = 128;
     * 256x256 w4 = 512 (out), w8 = 256 (out) */
    assert_int_equal(pl->ncand, 4);
    assert_int_equal(pl->nelim, 4);
    for (size_t i = 0; i < pl->nelim; i++)
        assert_true(pl->elim[i].broken & (1u << BT__RULE_ACC_REGS));
    bool saw512 = false;
    for (size_t i = 0; i < pl->nelim; i++)
        saw512 |= strstr(pl->elim[i].reasons, "the accumulator alone needs 512 registers per "
                                              "thread (262144 B over 128 threads) > 255") != NULL;
    assert_true(saw512);
    bt_plan_destroy(pl);
    /* tensor memory holds a tensor-core accumulator from compute capability 10 */
    bt_gpu g = *gpu(f->db, "h200");
    g.cc_major = 10;
    pl = plan_on(k, &g, NULL, false);
    assert_int_equal(pl->ncand, 8);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
}

/* An estimated register count (model.regs, or the default) never eliminates: it warns and says it
 * is an estimate. Kernel Tuner's pnpoly lost 320 valid configs to a guess. */
static void test_estimated_registers_warn_but_do_not_eliminate(void **state)
{
    fx *f = *state;
    const char *text = "{\"name\": \"r\", \"problem\": {\"n\": 1000000},\n"
                       " \"params\": {\"block_size_x\": [256, 1024]},\n"
                       " \"model\": {\"regs\": 120},\n"
                       " \"launch\": {\"grid\": [\"cdiv(n, block_size_x)\"]}}";
    bt_kdesc *k;
    bt_plan *pl = plan_spec(f, text, "h200", NULL, false, &k);
    assert_int_equal(pl->ncand, 2);
    assert_int_equal(pl->nelim, 0);
    const bt__cfg_eval *big = pl->cand[0].threads == 1024 ? &pl->cand[0] : &pl->cand[1];
    assert_int_equal(big->threads, 1024);
    bool warned = false;
    for (int w = 0; w < big->nwarnings; w++)
        warned |= strstr(big->warnings[w], "estimated ~120 registers x 1024 threads = 122880 > "
                                           "65536") != NULL &&
                  strstr(big->warnings[w], "an estimate, so not eliminated") != NULL;
    assert_true(warned);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
}

/* plan --exact: the compiler's exact count does eliminate, and says it is exact. */
static void test_exact_registers_eliminate(void **state)
{
    fx *f = *state;
    bt_diag d;
    if (!bt__nvrtc_available(&d)) {
        printf("SKIPPED: no NVRTC (%s)\n", d.msg);
        skip();
    }
    const char *text =
        "{\"name\": \"heavy\", \"problem\": {\"n\": 1024},\n"
        " \"params\": {\"block_size_x\": [128, 1024]},\n"
        " \"sources\": {\"cuda\": {\"inline\": \"extern \\\"C\\\" __global__ void heavy(float *o, "
        "const float *in) { float a[96];\\n#pragma unroll\\n for (int i = 0; i < 96; i++) a[i] = "
        "in[i * 1024 + threadIdx.x]; float s = 0;\\n#pragma unroll\\n for (int i = 0; i < 96; "
        "i++)\\n#pragma unroll\\n for (int j = i; j < 96; j += 7) s += a[i] * a[j] / (a[95 - i] + "
        "1.0f); o[threadIdx.x] = s; }\"}},\n"
        " \"entry\": \"heavy\", \"model\": {\"regs\": 16},\n"
        " \"launch\": {\"grid\": [1]},\n"
        " \"args\": [{\"name\": \"o\", \"size\": \"n\", \"output\": true}, {\"name\": \"in\", "
        "\"size\": \"96 * n\"}]}";
    bt_kdesc *k;
    bt_plan *pl = plan_spec(f, text, "h200", NULL, true, &k);
    assert_int_equal(pl->ncand, 1);
    assert_int_equal(pl->nelim, 1);
    const bt__cfg_eval *ev = &pl->elim[0];
    assert_int_equal(ev->cfg.v[0], 1024);
    assert_true(ev->x_regs > 64);
    assert_true(ev->broken & (1u << BT__RULE_FITS_SM));
    assert_non_null(strstr(ev->reasons, "exact counts from NVRTC for sm_90"));
    assert_true(pl->cand[0].exact && pl->cand[0].x_blocks > 0);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
}

/* Without model.threads the block's threads come from launch.block (and block_size_x/y/z), not
 * from a default of 4 warps. */
static void test_threads_come_from_the_launch_block(void **state)
{
    fx *f = *state;
    const char *text = "{\"name\": \"t\", \"problem\": {\"n\": 1000},\n"
                       " \"params\": {\"B\": [64, 512]},\n"
                       " \"launch\": {\"grid\": [\"cdiv(n, B)\"], \"block\": [\"B\", 2]}}";
    bt_kdesc *k;
    bt_plan *pl = plan_spec(f, text, "h200", "B=512", false, &k);
    assert_int_equal(pl->cand[0].threads, 1024);
    assert_int_equal(pl->cand[0].warps, 32);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
    pl = plan_spec(f, text, "h200", "B=64", false, &k);
    assert_int_equal(pl->cand[0].threads, 128);
    assert_int_equal(pl->cand[0].block_dims[1], 2);
    bt_plan_destroy(pl);
    bt_kdesc_destroy(k);
}

/* plan --config with values near 2^63: the model saturates instead of overflowing (UBSan aborts
 * the sanitizer build on an overflow) and the limits reject the config. */
static void test_huge_config_values_do_not_overflow(void **state)
{
    fx *f = *state;
    const char *const *names = bt_kdesc_builtin_names();
    for (size_t i = 0; names[i]; i++) {
        bt_kdesc *k;
        bt_diag d;
        assert_int_equal(bt_kdesc_builtin(names[i], &k, &d), BT_OK);
        char cfg[2048] = "";
        size_t o = 0;
        for (int p = 0; p < k->space.nparams; p++)
            o += (size_t)snprintf(cfg + o, sizeof cfg - o, "%s%s=%s", p ? "," : "",
                                  k->space.params[p].name, p % 2 ? "9223372036854775807"
                                                                 : "-9223372036854775807");
        for (int pass = 0; pass < 2; pass++) {
            bt_problem *pr;
            bt_problem_create(k, &pr);
            bt_config c;
            assert_int_equal(bt__kdesc_parse_config(k, cfg, &c, &d), BT_OK);
            if (pass)
                for (int p = 0; p < k->space.nparams; p++)
                    c.v[p] = INT64_MAX;
            bt_plan_options po = {.only = &c};
            bt_plan *pl;
            assert_int_equal(bt_plan_create(k, pr, gpu(f->db, "h200"), &po, &pl, &d), BT_OK);
            assert_int_equal(pl->nelim, 1);
            assert_non_null(pl->elim[0].reasons);
            bt_plan_destroy(pl);
            bt_problem_destroy(pr);
        }
        bt_kdesc_destroy(k);
    }
    /* --config: decimal (a leading zero is not octal), 0x hexadecimal, and out of range said */
    bt_config c;
    bt_diag d;
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_M=010,BLOCK_N=0x40,BLOCK_K=32,"
                                                    "num_warps=4,num_stages=3,GROUP_M=8", &c, &d),
                     BT_OK);
    assert_int_equal(c.v[0], 10);
    assert_int_equal(c.v[1], 64);
    assert_int_equal(bt__kdesc_parse_config(f->gemm, "BLOCK_M=99999999999999999999,BLOCK_N=64,"
                                                    "BLOCK_K=32,num_warps=4,num_stages=3,GROUP_M=8",
                                           &c, &d),
                     BT_INVALID_ARG);
    assert_non_null(strstr(d.msg, "does not fit in 64 bits"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a100_fp16_ridge_is_about_156),
        cmocka_unit_test(test_five_stages_128x256x64_fp16_is_245760_bytes_and_rejected),
        cmocka_unit_test(test_four_stages_fit_hopper_but_not_a100),
        cmocka_unit_test(test_128x128_fp32_accumulator_is_64KiB),
        cmocka_unit_test(test_block_m_96_depends_on_rule_set),
        cmocka_unit_test(test_compile_weight_orders_the_compiles),
        cmocka_unit_test(test_every_broken_rule_is_kept),
        cmocka_unit_test(test_sources_in_a_list),
        cmocka_unit_test(test_softmax_is_memory_bound),
        cmocka_unit_test(test_builtin_spaces_are_wide_enough),
        cmocka_unit_test(test_gemm_waves_and_last_tile),
        cmocka_unit_test(test_spec_errors_name_file_line_column),
        cmocka_unit_test(test_division_by_zero_eliminates_the_config_only),
        cmocka_unit_test(test_parse_config_errors),
        cmocka_unit_test(test_huge_config_values_saturate),
        cmocka_unit_test(test_tensormap_arguments),
        cmocka_unit_test(test_dtype_that_depends_on_the_problem),
        cmocka_unit_test(test_100k_configs_filter_in_well_under_a_second),
        cmocka_unit_test(test_json_has_the_documented_fields),
        cmocka_unit_test(test_static_shared_memory_above_48k_is_eliminated),
        cmocka_unit_test(test_accumulator_beyond_the_registers_is_eliminated),
        cmocka_unit_test(test_estimated_registers_warn_but_do_not_eliminate),
        cmocka_unit_test(test_exact_registers_eliminate),
        cmocka_unit_test(test_threads_come_from_the_launch_block),
        cmocka_unit_test(test_huge_config_values_do_not_overflow),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
