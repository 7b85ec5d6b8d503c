/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hwdb.c — the hardware table: the shipped rows and the numbers the model depends on, loose
 * name lookup, diagnostics for malformed tables (file:line:column, row and field), and user
 * overlays (replacing, adding, all-or-nothing).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/hwdb.h"
#include "core/util.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOURCE_TABLE BT_SOURCE_DIR "/data/gpus.json"

static bt_gpudb *g_db;  /* the source tree's data/gpus.json */
static char g_tmp[256]; /* a scratch directory */

/* ---------------------------------------------------------------------------------------------
 * Helpers.
 * ------------------------------------------------------------------------------------------- */
static const bt_gpu *must_find(const bt_gpudb *db, const char *name)
{
    const bt_gpu *g = NULL;
    bt_diag d;
    bt_status st = bt_gpudb_find(db, name, &g, &d);
    if (st != BT_OK)
        fail_msg("find '%s': %s: %s", name, bt_err_name(st), d.msg);
    assert_non_null(g);
    return g;
}

static void assert_near(double got, double want, double rel)
{
    if (fabs(got - want) > rel * fabs(want))
        fail_msg("got %g, want %g (within %g%%)", got, want, rel * 100);
}

/* Writes text to <g_tmp>/<name> and returns the path (static buffer, one at a time). */
static const char *write_tmp(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* 1-based line and column of the first `needle` in text. */
static void pos_of(const char *text, const char *needle, int *line, int *col)
{
    const char *p = strstr(text, needle);
    assert_non_null(p);
    *line = 1;
    const char *bol = text;
    for (const char *q = text; q < p; q++)
        if (*q == '\n') {
            (*line)++;
            bol = q + 1;
        }
    *col = (int)(p - bol) + 1;
}

#define SM_LINE "      \"sm_count\": 108,\n"

/* One A100-like row; `extra` is inserted after the name, `sm_line` stands for the sm_count
 * line (empty to leave the field out). */
static char *make_row(const char *name, const char *extra, const char *sm_line)
{
    bt__sbuf b = {0};
    bt__sbuf_printf(
        &b,
        "    {\n"
        "      \"name\": \"%s\",\n"
        "%s"
        "      \"vendor\": \"NVIDIA\", \"arch\": \"ampere\", \"compute_capability\": \"8.0\",\n"
        "%s"
        "      \"warp_size\": 32, \"max_threads_per_sm\": 2048, \"max_warps_per_sm\": 64,\n"
        "      \"max_blocks_per_sm\": 32, \"max_threads_per_block\": 1024,\n"
        "      \"regs_per_sm\": 65536, \"regs_per_block\": 65536, \"max_regs_per_thread\": 255,\n"
        "      \"reg_alloc_unit\": 256, \"smem_per_sm\": 167936, \"smem_per_block\": 49152,\n"
        "      \"smem_per_block_optin\": 166912, \"smem_reserved_per_block\": 1024,\n"
        "      \"l2_bytes\": 41943040, \"mem_bytes\": 42949672960, \"mem_bw_gbps\": 1555,\n"
        "      \"clock_mhz\": 1410,\n"
        "      \"peak_tflops\": {\"fp64\": 9.7, \"fp32\": 19.5, \"fp16\": 78, \"tf32_tc\": 156,\n"
        "                      \"fp16_tc\": 312, \"bf16_tc\": 312, \"fp8_tc\": 0, \"int8_tc\": "
        "624,\n"
        "                      \"fp64_tc\": 19.5},\n"
        "      \"source\": \"test row\"\n"
        "    }",
        name, extra ? extra : "", sm_line ? sm_line : SM_LINE);
    assert_false(b.oom);
    return b.s;
}

/* A document holding the given rows (NULL-terminated; each freed). */
static char *make_doc(char *first, ...)
{
    bt__sbuf b = {0};
    bt__sbuf_printf(&b, "{\"format\": \"blocktune-gpus\", \"version\": 1, \"gpus\": [\n");
    va_list ap;
    va_start(ap, first);
    int i = 0;
    for (char *r = first; r; r = va_arg(ap, char *), i++) {
        bt__sbuf_printf(&b, "%s%s", i ? ",\n" : "", r);
        free(r);
    }
    va_end(ap);
    bt__sbuf_printf(&b, "\n]}\n");
    assert_false(b.oom);
    return b.s;
}

/* Loads text as a file and expects failure `want`; returns the diag (static). */
static const bt_diag *load_fails(const char *text, bt_status want)
{
    static bt_diag d;
    bt_gpudb *db = (bt_gpudb *)1;
    const char *path = write_tmp("bad.json", text);
    bt_status st = bt_gpudb_load_file(path, &db, &d);
    if (st != want)
        fail_msg("want %s, got %s: %s", bt_err_name(want), bt_err_name(st), d.msg);
    assert_null(db);
    assert_string_equal(d.file, path);
    return &d;
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "%s/bt_test_hwdb_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_tmp))
        return -1;
    bt_diag d;
    if (bt_gpudb_load_file(SOURCE_TABLE, &g_db, &d) != BT_OK) {
        char buf[2048];
        fprintf(stderr, "cannot load %s: %s\n", SOURCE_TABLE, bt_diag_format(&d, buf, sizeof buf));
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bt_gpudb_destroy(g_db);
    static const char *const files[] = {"bad.json", "good.json", "overlay.json", "gpus.json",
                                        "round.json"};
    char path[512];
    for (size_t i = 0; i < BT__ARRAY_LEN(files); i++) {
        snprintf(path, sizeof path, "%s/%s", g_tmp, files[i]);
        unlink(path);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/dir%d/gpus.json", g_tmp, i);
        unlink(path);
        snprintf(path, sizeof path, "%s/dir%d", g_tmp, i);
        rmdir(path);
    }
    rmdir(g_tmp);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The shipped table.
 * ------------------------------------------------------------------------------------------- */
static const char *const required_rows[] = {
    "A100-SXM4-40GB",
    "A100-SXM4-80GB",
    "A100-PCIe-40GB",
    "A100-PCIe-80GB",
    "H100-SXM",
    "H100-PCIe",
    "H200-SXM",
    "L4",
    "L40S",
    "A10",
    "RTX-4090",
    "RTX-3090",
    "T4",
    "V100-SXM2",
};

static void test_required_rows_present_with_sources(void **state)
{
    (void)state;
    assert_int_equal(bt_gpudb_count(g_db), BT__ARRAY_LEN(required_rows));
    for (size_t i = 0; i < BT__ARRAY_LEN(required_rows); i++) {
        const bt_gpu *g = must_find(g_db, required_rows[i]);
        assert_string_equal(g->name, required_rows[i]);
        assert_string_equal(g->vendor, "NVIDIA");
        assert_non_null(strstr(g->source, "CUDA C++ Programming Guide"));
        assert_true(strstr(g->source, "datasheet") || strstr(g->source, "whitepaper"));
    }
}

static void test_embedded_copy_matches_source_file(void **state)
{
    (void)state;
    size_t size = 0;
    const char *text = bt__embedded("data/gpus.json", &size);
    assert_non_null(text);
    bt_gpudb *emb = NULL;
    bt_diag d;
    assert_int_equal(bt__gpudb_load_text(text, size, "embedded", &emb, &d), BT_OK);
    assert_int_equal(bt_gpudb_count(emb), bt_gpudb_count(g_db));
    for (size_t i = 0; i < bt_gpudb_count(emb); i++)
        assert_memory_equal(bt_gpudb_at(emb, i), bt_gpudb_at(g_db, i), sizeof(bt_gpu));
    assert_string_equal(bt__gpudb_row_origin(emb, 0), "embedded");
    bt_gpudb_destroy(emb);
}

static void test_a100_pinned_numbers(void **state)
{
    (void)state;
    const bt_gpu *g = must_find(g_db, "A100-SXM4-40GB");
    assert_int_equal(g->cc_major, 8);
    assert_int_equal(g->cc_minor, 0);
    assert_int_equal(g->sm_count, 108);
    assert_int_equal(g->smem_per_sm, 167936);
    assert_int_equal(g->smem_per_block_optin, 166912);
    assert_int_equal(g->smem_per_block, 49152);
    assert_int_equal(g->smem_reserved_per_block, 1024);
    assert_int_equal(g->l2_bytes, 41943040);
    assert_near(g->mem_bw_gbps, 1555, 1e-9);
    assert_near(g->peak_tflops[BT_PEAK_FP16_TC], 312, 1e-9);
    assert_near(g->peak_tflops[BT_PEAK_FP32], 19.5, 1e-9);
    assert_int_equal(g->regs_per_sm, 65536);
    assert_int_equal(g->max_threads_per_sm, 2048);
    assert_int_equal(g->max_blocks_per_sm, 32);
    assert_near(must_find(g_db, "A100-SXM4-80GB")->mem_bw_gbps, 2039, 1e-9);
    /* The seed's "fp32 GEMM peak ~19.5, fp16 tensor ~312" must be the same row's numbers. */
    assert_true(g->peak_tflops[BT_PEAK_FP16_TC] / g->peak_tflops[BT_PEAK_FP32] > 15);
}

static void test_a100_80gb_ridge_matches_seed(void **state)
{
    (void)state;
    /* Seed 000: "312e12 / 2e12 = 156 FLOPs/byte". */
    const bt_gpu *g = must_find(g_db, "A100-SXM4-80GB");
    double ridge = g->peak_tflops[BT_PEAK_FP16_TC] * 1e12 / (g->mem_bw_gbps * 1e9);
    assert_near(ridge, 156, 0.05);
}

static void test_hopper_pinned_numbers(void **state)
{
    (void)state;
    const char *const names[] = {"H100-SXM", "H200-SXM"};
    for (size_t i = 0; i < 2; i++) {
        const bt_gpu *g = must_find(g_db, names[i]);
        assert_int_equal(g->cc_major, 9);
        assert_int_equal(g->sm_count, 132);
        assert_int_equal(g->smem_per_sm, 233472);
        assert_int_equal(g->smem_per_block_optin, 232448);
        assert_int_equal(g->max_warps_per_sm, 64);
        assert_int_equal(g->max_threads_per_sm, 2048);
        assert_int_equal(g->max_blocks_per_sm, 32);
        assert_near(g->peak_tflops[BT_PEAK_FP16_TC], 989.4, 1e-9);
        assert_near(g->peak_tflops[BT_PEAK_BF16_TC], 989.4, 1e-9);
        assert_near(g->peak_tflops[BT_PEAK_FP8_TC], 1979, 1e-3);
        assert_near(g->peak_tflops[BT_PEAK_INT8_TC], 1979, 1e-3);
        assert_near(g->peak_tflops[BT_PEAK_TF32_TC], 494.7, 1e-9);
        assert_near(g->peak_tflops[BT_PEAK_FP32], 66.9, 1e-9);
        assert_near(g->peak_tflops[BT_PEAK_FP64], 33.5, 1e-9);
        assert_near(g->peak_tflops[BT_PEAK_FP64_TC], 66.9, 1e-9);
    }
    const bt_gpu *h100 = must_find(g_db, "H100-SXM");
    assert_int_equal(h100->l2_bytes, 52428800);
    assert_near(h100->mem_bw_gbps, 3350, 1e-9);
    const bt_gpu *h200 = must_find(g_db, "H200-SXM");
    assert_int_equal(h200->l2_bytes, 62914560);
    assert_near(h200->mem_bw_gbps, 4800, 1e-9);
    assert_int_equal(h200->mem_bytes, 141LL << 30);
}

/* Per compute capability limits (CUDA C++ Programming Guide), checked on every row. */
static void test_per_architecture_limits(void **state)
{
    (void)state;
    static const struct {
        int cc, threads, blocks;
        int64_t smem_kib, optin_kib, reserved;
    } lim[] = {
        {70, 2048, 32, 96, 96, 0},      {75, 1024, 16, 64, 64, 0},
        {80, 2048, 32, 164, 163, 1024}, {86, 1536, 16, 100, 99, 1024},
        {89, 1536, 24, 100, 99, 1024},  {90, 2048, 32, 228, 227, 1024},
    };
    for (size_t i = 0; i < bt_gpudb_count(g_db); i++) {
        const bt_gpu *g = bt_gpudb_at(g_db, i);
        int cc = g->cc_major * 10 + g->cc_minor;
        size_t k = 0;
        while (k < BT__ARRAY_LEN(lim) && lim[k].cc != cc)
            k++;
        if (k == BT__ARRAY_LEN(lim))
            fail_msg("%s: unexpected compute capability %d.%d", g->name, g->cc_major, g->cc_minor);
        assert_int_equal(g->max_threads_per_sm, lim[k].threads);
        assert_int_equal(g->max_warps_per_sm, lim[k].threads / 32);
        assert_int_equal(g->max_blocks_per_sm, lim[k].blocks);
        assert_int_equal(g->smem_per_sm, lim[k].smem_kib * 1024);
        assert_int_equal(g->smem_per_block_optin, lim[k].optin_kib * 1024);
        assert_int_equal(g->smem_reserved_per_block, lim[k].reserved);
        assert_int_equal(g->smem_per_block, 49152);
        assert_int_equal(g->warp_size, 32);
        assert_int_equal(g->max_threads_per_block, 1024);
        assert_int_equal(g->regs_per_sm, 65536);
        assert_int_equal(g->regs_per_block, 65536);
        assert_int_equal(g->max_regs_per_thread, 255);
        assert_int_equal(g->reg_alloc_unit, 256);
    }
}

/* fp32 peak = SMs x fp32 lanes per SM x 2 x boost clock: catches a wrong SM count or clock. */
static void test_fp32_peak_agrees_with_sms_and_clock(void **state)
{
    (void)state;
    for (size_t i = 0; i < bt_gpudb_count(g_db); i++) {
        const bt_gpu *g = bt_gpudb_at(g_db, i);
        int cc = g->cc_major * 10 + g->cc_minor;
        int lanes = (cc == 86 || cc == 89 || cc == 90) ? 128 : 64;
        double want = g->sm_count * lanes * 2.0 * g->clock_mhz * 1e6 / 1e12;
        if (fabs(g->peak_tflops[BT_PEAK_FP32] - want) > 0.02 * want)
            fail_msg("%s: fp32 %g TFLOP/s, but %d SMs x %d lanes x 2 x %g MHz = %g", g->name,
                     g->peak_tflops[BT_PEAK_FP32], g->sm_count, lanes, g->clock_mhz, want);
    }
}

static void test_peak_units_exist_only_where_the_hardware_has_them(void **state)
{
    (void)state;
    for (size_t i = 0; i < bt_gpudb_count(g_db); i++) {
        const bt_gpu *g = bt_gpudb_at(g_db, i);
        int cc = g->cc_major * 10 + g->cc_minor;
        const double *p = g->peak_tflops;
        /* fp8 tensor cores arrived with Ada (8.9) and Hopper (9.0). */
        assert_true(cc >= 89 ? p[BT_PEAK_FP8_TC] > 0 : p[BT_PEAK_FP8_TC] == 0);
        /* tf32 and bf16 tensor cores arrived with Ampere. */
        assert_true(cc >= 80 ? p[BT_PEAK_TF32_TC] > 0 : p[BT_PEAK_TF32_TC] == 0);
        assert_true(cc >= 80 ? p[BT_PEAK_BF16_TC] > 0 : p[BT_PEAK_BF16_TC] == 0);
        /* fp64 tensor cores: the big data-centre chips only. */
        assert_true((cc == 80 || cc == 90) ? p[BT_PEAK_FP64_TC] > 0 : p[BT_PEAK_FP64_TC] == 0);
        /* int8 tensor cores arrived with Turing. */
        assert_true(cc >= 75 ? p[BT_PEAK_INT8_TC] > 0 : p[BT_PEAK_INT8_TC] == 0);
        /* Every row has fp16 tensor cores, faster than its CUDA cores. */
        assert_true(p[BT_PEAK_FP16_TC] > p[BT_PEAK_FP32]);
        assert_true(p[BT_PEAK_FP64] > 0 && p[BT_PEAK_FP16] > 0);
        assert_true(g->mem_bw_gbps > 0 && g->mem_bytes >= (16LL << 30));
    }
}

static void test_peak_kind_names(void **state)
{
    (void)state;
    assert_string_equal(bt_peak_kind_name(BT_PEAK_FP64), "fp64");
    assert_string_equal(bt_peak_kind_name(BT_PEAK_FP16_TC), "fp16_tc");
    assert_string_equal(bt_peak_kind_name(BT_PEAK_FP64_TC), "fp64_tc");
    assert_string_equal(bt_peak_kind_name(BT_PEAK__COUNT), "unknown");
    assert_string_equal(bt_peak_kind_name((bt_peak_kind)-1), "unknown");
    for (int k = 0; k < BT_PEAK__COUNT; k++)
        assert_int_equal(bt__peak_kind_from_name(bt_peak_kind_name((bt_peak_kind)k)), k);
    assert_int_equal(bt__peak_kind_from_name("fp16tc"), -1);
}

/* ---------------------------------------------------------------------------------------------
 * Lookup.
 * ------------------------------------------------------------------------------------------- */
static void test_loose_matching(void **state)
{
    (void)state;
    static const struct {
        const char *query, *want;
    } cases[] = {
        {"h200", "H200-SXM"},
        {"NVIDIA H200", "H200-SXM"},
        {"nvidia h200", "H200-SXM"},
        {"H200-SXM", "H200-SXM"},
        {"h200_sxm", "H200-SXM"},
        {"a100-sxm4-80gb", "A100-SXM4-80GB"},
        {"A100 SXM4 40GB", "A100-SXM4-40GB"},
        {"NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"},
        {"NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"},
        {"a100", "A100-SXM4-80GB"},
        {"h100", "H100-SXM"},
        {"NVIDIA H100 80GB HBM3", "H100-SXM"},
        {"NVIDIA H100 PCIe", "H100-PCIe"},
        {"NVIDIA GeForce RTX 4090", "RTX-4090"},
        {"rtx4090", "RTX-4090"},
        {"4090", "RTX-4090"},
        {"Tesla T4", "T4"},
        {"Tesla V100-SXM2-16GB", "V100-SXM2"},
        {"l4", "L4"},   /* exact beats the prefix of L40S */
        {"a10", "A10"}, /* exact beats the prefix of the A100s */
        {"l40", "L40S"},
        {"3090", "RTX-3090"},
    };
    for (size_t i = 0; i < BT__ARRAY_LEN(cases); i++) {
        const bt_gpu *g = must_find(g_db, cases[i].query);
        if (strcmp(g->name, cases[i].want) != 0)
            fail_msg("'%s' found %s, want %s", cases[i].query, g->name, cases[i].want);
    }
    /* Exact-only lookup (for device names): no prefix guesses. */
    assert_ptr_equal(bt__gpudb_find_exact(g_db, "NVIDIA L40S"), must_find(g_db, "L40S"));
    assert_ptr_equal(bt__gpudb_find_exact(g_db, "NVIDIA H200"), must_find(g_db, "H200-SXM"));
    assert_null(bt__gpudb_find_exact(g_db, "NVIDIA L40"));
    assert_null(bt__gpudb_find_exact(g_db, "NVIDIA A10G"));
    assert_null(bt__gpudb_find_exact(g_db, "NVIDIA"));
    assert_null(bt__gpudb_find_exact(NULL, "h200"));
    char key[128];
    assert_string_equal(bt__gpu_name_key("NVIDIA GeForce RTX-4090", key, sizeof key), "rtx4090");
    assert_string_equal(bt__gpu_name_key("Tesla", key, sizeof key), "tesla");
}

static void test_ambiguous_name_lists_the_matches(void **state)
{
    (void)state;
    const bt_gpu *g = (const bt_gpu *)1;
    bt_diag d;
    assert_int_equal(bt_gpudb_find(g_db, "a100-sxm4", &g, &d), BT_NOT_FOUND);
    assert_null(g);
    assert_non_null(strstr(d.msg, "ambiguous"));
    assert_non_null(strstr(d.msg, "A100-SXM4-80GB"));
    assert_non_null(strstr(d.msg, "A100-SXM4-40GB"));
    assert_null(strstr(d.msg, "PCIe"));
}

static void test_unknown_name_lists_closest(void **state)
{
    (void)state;
    const bt_gpu *g = (const bt_gpu *)1;
    bt_diag d;
    assert_int_equal(bt_gpudb_find(g_db, "h300", &g, &d), BT_NOT_FOUND);
    assert_null(g);
    assert_non_null(strstr(d.msg, "unknown GPU 'h300'"));
    const char *c = strstr(d.msg, "closest: ");
    assert_non_null(c);
    assert_non_null(strstr(c, "H200-SXM"));
    assert_non_null(strstr(c, "H100-SXM"));
    /* Three names: two commas. */
    int commas = 0;
    for (const char *p = c; *p; p++)
        commas += *p == ',';
    assert_int_equal(commas, 2);

    assert_int_equal(bt_gpudb_find(g_db, "", &g, &d), BT_NOT_FOUND);
    assert_int_equal(bt_gpudb_find(g_db, "NVIDIA", &g, &d), BT_NOT_FOUND);
    assert_int_equal(bt_gpudb_find(g_db, "x", &g, &d), BT_NOT_FOUND);
}

static void test_null_arguments(void **state)
{
    (void)state;
    const bt_gpu *g = (const bt_gpu *)1;
    bt_diag d;
    assert_int_equal(bt_gpudb_find(NULL, "h200", &g, &d), BT_INVALID_ARG);
    assert_null(g);
    assert_int_equal(bt_gpudb_find(g_db, NULL, &g, NULL), BT_INVALID_ARG);
    assert_int_equal(bt_gpudb_count(NULL), 0);
    assert_null(bt_gpudb_at(g_db, bt_gpudb_count(g_db)));
    assert_null(bt_gpudb_at(NULL, 0));
    bt_gpudb_destroy(NULL);
    assert_int_equal(bt_gpudb_load_file(NULL, NULL, NULL), BT_INVALID_ARG);
    assert_int_equal(bt_gpudb_merge_file(NULL, SOURCE_TABLE, NULL), BT_INVALID_ARG);
}

/* ---------------------------------------------------------------------------------------------
 * Loading.
 * ------------------------------------------------------------------------------------------- */
static void test_missing_file_is_an_io_error(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/no-such.json", g_tmp);
    bt_gpudb *db = (bt_gpudb *)1;
    bt_diag d;
    assert_int_equal(bt_gpudb_load_file(path, &db, &d), BT_IO);
    assert_null(db);
    assert_string_equal(d.file, path);
    assert_non_null(strstr(d.msg, "No such file"));
}

static void test_load_default_prefers_data_dir(void **state)
{
    (void)state;
    char dir[512], path[600];
    bt_gpudb *db = NULL;
    bt_diag d;
    /* A table of one row in $BLOCKTUNE_DATA_DIR wins. */
    snprintf(dir, sizeof dir, "%s/dir0", g_tmp);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/gpus.json", dir);
    char *doc = make_doc(make_row("Only-GPU", NULL, NULL), NULL);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(doc, f);
    fclose(f);
    free(doc);
    setenv("BLOCKTUNE_DATA_DIR", dir, 1);
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    assert_int_equal(bt_gpudb_count(db), 1);
    assert_string_equal(bt_gpudb_at(db, 0)->name, "Only-GPU");
    assert_string_equal(bt__gpudb_row_origin(db, 0), path);
    bt_gpudb_destroy(db);

    /* A malformed one there is an error, not skipped. */
    snprintf(dir, sizeof dir, "%s/dir1", g_tmp);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/gpus.json", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"blocktune-gpus\",\n \"version\": 1, \"gpus\": [}\n", f);
    fclose(f);
    setenv("BLOCKTUNE_DATA_DIR", dir, 1);
    db = (bt_gpudb *)1;
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_PARSE);
    assert_null(db);
    assert_string_equal(d.file, path);
    assert_int_equal(d.line, 2);

    /* No table there: the installed or built-in one. */
    snprintf(dir, sizeof dir, "%s/dir2", g_tmp);
    mkdir(dir, 0700);
    setenv("BLOCKTUNE_DATA_DIR", dir, 1);
    assert_int_equal(bt_gpudb_load_default(&db, &d), BT_OK);
    assert_true(bt_gpudb_count(db) >= 1);
    bt_gpudb_destroy(db);
    unsetenv("BLOCKTUNE_DATA_DIR");
}

static void test_syntax_error_names_line_and_column(void **state)
{
    (void)state;
    /* The sm_count line loses its comma: jansson stops at the next line's first key. */
    char *doc =
        make_doc(make_row("A", NULL, NULL), make_row("B", NULL, "      \"sm_count\": 108\n"), NULL);
    int line, col;
    const char *second = strstr(doc, "\"B\"");
    pos_of(second, "\"warp_size\"", &line, &col);
    int before = 0;
    for (const char *q = doc; q < second; q++)
        before += *q == '\n';
    const bt_diag *d = load_fails(doc, BT_PARSE);
    assert_int_equal(d->line, before + line);
    assert_true(d->column > 0);
    assert_non_null(strstr(d->msg, "invalid JSON"));
    char buf[2048], want[600];
    snprintf(want, sizeof want, "%s:%d:%d: ", d->file, d->line, d->column);
    assert_memory_equal(bt_diag_format(d, buf, sizeof buf), want, strlen(want));
    free(doc);

    d = load_fails("", BT_PARSE);
    assert_non_null(strstr(d->msg, "invalid JSON"));
    d = load_fails("[1, 2]", BT_PARSE);
    assert_non_null(strstr(d->msg, "expected an object"));
    /* Duplicate keys are not silently collapsed. */
    doc = make_doc(make_row("A", "      \"arch\": \"x\",\n", NULL), NULL);
    d = load_fails(doc, BT_PARSE);
    assert_non_null(strstr(d->msg, "duplicate"));
    free(doc);
}

static void test_missing_field_is_named(void **state)
{
    (void)state;
    char *doc = make_doc(make_row("A", NULL, NULL), make_row("L4-test", NULL, ""), NULL);
    const bt_diag *d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[1].sm_count");
    assert_non_null(strstr(d->msg, "missing"));
    assert_non_null(strstr(d->msg, "L4-test"));
    int line, col;
    pos_of(doc, "{\n      \"name\": \"L4-test\"", &line, &col);
    assert_int_equal(d->line, line); /* the row's opening brace */
    assert_int_equal(d->column, col);
    free(doc);

    doc = make_doc(make_row("A", NULL, NULL), NULL);
    char *p = strstr(doc, "\"fp8_tc\": 0, ");
    memmove(p, p + strlen("\"fp8_tc\": 0, "), strlen(p + strlen("\"fp8_tc\": 0, ")) + 1);
    d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[0].peak_tflops.fp8_tc");
    assert_non_null(strstr(d->msg, "write 0"));
    free(doc);
}

static void test_negative_or_mistyped_field_is_named_with_its_line(void **state)
{
    (void)state;
    char *doc = make_doc(make_row("A", NULL, NULL),
                         make_row("L4-test", NULL, "      \"sm_count\": -4,\n"), NULL);
    const bt_diag *d = load_fails(doc, BT_PARSE);
    int line, col;
    pos_of(doc, "\"sm_count\": -4", &line, &col);
    assert_int_equal(d->line, line);
    assert_int_equal(d->column, col);
    assert_string_equal(d->field, "gpus[1].sm_count");
    assert_non_null(strstr(d->msg, "positive integer"));
    assert_non_null(strstr(d->msg, "-4"));
    assert_non_null(strstr(d->msg, "\"L4-test\""));
    free(doc);

    doc = make_doc(make_row("A", NULL, "      \"sm_count\": \"108\",\n"), NULL);
    d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[0].sm_count");
    assert_non_null(strstr(d->msg, "got a string"));
    free(doc);

    doc = make_doc(make_row("A", NULL, "      \"sm_count\": 10.5,\n"), NULL);
    d = load_fails(doc, BT_PARSE);
    assert_non_null(strstr(d->msg, "integer"));
    free(doc);

    /* A nested value: the line of the peak itself. */
    doc = make_doc(make_row("A", NULL, NULL), NULL);
    char *p = strstr(doc, "\"int8_tc\": 624");
    memcpy(p, "\"int8_tc\": -24", strlen("\"int8_tc\": -24"));
    d = load_fails(doc, BT_PARSE);
    pos_of(doc, "\"int8_tc\"", &line, &col);
    assert_string_equal(d->field, "gpus[0].peak_tflops.int8_tc");
    assert_int_equal(d->line, line);
    assert_int_equal(d->column, col);
    free(doc);

    /* Limits that disagree with each other. */
    doc = make_doc(make_row("A", NULL, NULL), NULL);
    p = strstr(doc, "\"max_warps_per_sm\": 64");
    memcpy(p, "\"max_warps_per_sm\": 48", strlen("\"max_warps_per_sm\": 48"));
    d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[0].max_warps_per_sm");
    free(doc);
    doc = make_doc(make_row("A", NULL, NULL), NULL);
    p = strstr(doc, "\"smem_per_block_optin\": 166912");
    memcpy(p, "\"smem_per_block_optin\": 266912", strlen("\"smem_per_block_optin\": 266912"));
    d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[0].smem_per_block_optin");
    free(doc);
}

/* Every numeric field of every shipped row, made negative in turn: the diag names that row and
 * field and points at the line and column where it is written. */
static void test_every_field_error_points_at_its_place(void **state)
{
    (void)state;
    static const char *const fields[] = {
        "sm_count",
        "warp_size",
        "max_threads_per_sm",
        "max_warps_per_sm",
        "max_blocks_per_sm",
        "max_threads_per_block",
        "regs_per_sm",
        "regs_per_block",
        "max_regs_per_thread",
        "reg_alloc_unit",
        "smem_per_sm",
        "smem_per_block",
        "smem_per_block_optin",
        "smem_reserved_per_block",
        "l2_bytes",
        "mem_bytes",
        "mem_bw_gbps",
        "clock_mhz",
        "fp64",
        "fp16_tc",
        "fp64_tc",
    };
    size_t size = 0;
    char *text = bt__read_file(SOURCE_TABLE, &size);
    assert_non_null(text);
    int checked = 0;
    for (size_t f = 0; f < BT__ARRAY_LEN(fields); f++) {
        char needle[64];
        snprintf(needle, sizeof needle, "\"%s\": ", fields[f]);
        bool peak = strncmp(fields[f], "fp", 2) == 0;
        size_t row = 0;
        for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle), row++) {
            const char *v = p + strlen(needle);
            size_t vlen = strspn(v, "0123456789.");
            bt__sbuf b = {0};
            bt__sbuf_printf(&b, "%.*s-1%s", (int)(v - text), text, v + vlen);
            assert_false(b.oom);
            bt_gpudb *db = NULL;
            bt_diag d;
            assert_int_equal(bt__gpudb_load_text(b.s, b.len, "t.json", &db, &d), BT_PARSE);
            char want[96];
            snprintf(want, sizeof want, "gpus[%zu].%s%s", row, peak ? "peak_tflops." : "",
                     fields[f]);
            assert_string_equal(d.field, want);
            int line = 1;
            const char *bol = b.s;
            for (const char *q = b.s; q < b.s + (p - text); q++)
                if (*q == '\n') {
                    line++;
                    bol = q + 1;
                }
            assert_int_equal(d.line, line);
            assert_int_equal(d.column, (int)(b.s + (p - text) - bol) + 1);
            bt__sbuf_free(&b);
            checked++;
        }
        assert_int_equal(row, bt_gpudb_count(g_db));
    }
    assert_int_equal(checked, (int)(BT__ARRAY_LEN(fields) * bt_gpudb_count(g_db)));
    free(text);
}

static void test_unknown_field_suggests_the_known_one(void **state)
{
    (void)state;
    char *doc = make_doc(make_row("A", "      \"sm_cuont\": 3,\n", NULL), NULL);
    const bt_diag *d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[0].sm_cuont");
    assert_non_null(strstr(d->msg, "did you mean 'sm_count'"));
    int line, col;
    pos_of(doc, "\"sm_cuont\"", &line, &col);
    assert_int_equal(d->line, line);
    free(doc);

    /* '_' fields are comments. */
    doc = make_doc(make_row("A", "      \"_note\": \"measured by me\",\n", NULL), NULL);
    bt_gpudb *db = NULL;
    bt_diag dd;
    assert_int_equal(bt__gpudb_load_text(doc, strlen(doc), "t", &db, &dd), BT_OK);
    bt_gpudb_destroy(db);
    free(doc);
}

static void test_format_and_version_are_checked(void **state)
{
    (void)state;
    const bt_diag *d =
        load_fails("{\"format\": \"kernel-tuner\", \"version\": 1, \"gpus\": []}", BT_PARSE);
    assert_string_equal(d->field, "format");
    d = load_fails("{\"format\": \"blocktune-gpus\", \"version\": 2, \"gpus\": []}",
                   BT_UNSUPPORTED);
    assert_string_equal(d->field, "version");
    assert_non_null(strstr(d->msg, "version 2"));
    d = load_fails("{\"format\": \"blocktune-gpus\", \"version\": 1}", BT_PARSE);
    assert_string_equal(d->field, "gpus");
    d = load_fails("{\"format\": \"blocktune-gpus\", \"version\": 1, \"gpus\": [],\n \"extra\": 1}",
                   BT_PARSE);
    assert_string_equal(d->field, "extra");
    assert_int_equal(d->line, 2);
    d = load_fails("{\"format\": \"blocktune-gpus\", \"version\": 1, \"gpus\": [3]}", BT_PARSE);
    assert_string_equal(d->field, "gpus[0]");
    assert_non_null(strstr(d->msg, "expected an object"));
}

static void test_duplicate_names_in_one_file_are_rejected(void **state)
{
    (void)state;
    char *doc = make_doc(make_row("My-GPU", NULL, NULL), make_row("my gpu", NULL, NULL), NULL);
    const bt_diag *d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[1].name");
    assert_non_null(strstr(d->msg, "My-GPU"));
    free(doc);

    doc = make_doc(make_row("GPU-One", "      \"aliases\": [\"one\"],\n", NULL),
                   make_row("GPU-Two", "      \"aliases\": [\"ONE\"],\n", NULL), NULL);
    d = load_fails(doc, BT_PARSE);
    assert_string_equal(d->field, "gpus[1].aliases");
    assert_non_null(strstr(d->msg, "GPU-One"));
    free(doc);
}

/* ---------------------------------------------------------------------------------------------
 * Overlays.
 * ------------------------------------------------------------------------------------------- */
static bt_gpudb *load_source_copy(void)
{
    bt_gpudb *db = NULL;
    bt_diag d;
    assert_int_equal(bt_gpudb_load_file(SOURCE_TABLE, &db, &d), BT_OK);
    return db;
}

static void assert_same_table(const bt_gpudb *a, const bt_gpudb *b)
{
    assert_int_equal(bt_gpudb_count(a), bt_gpudb_count(b));
    for (size_t i = 0; i < bt_gpudb_count(a); i++) {
        assert_memory_equal(bt_gpudb_at(a, i), bt_gpudb_at(b, i), sizeof(bt_gpu));
        assert_string_equal(bt__gpudb_row_origin(a, i), bt__gpudb_row_origin(b, i));
    }
}

static void test_failed_merge_leaves_the_table_unchanged(void **state)
{
    (void)state;
    bt_gpudb *db = load_source_copy();
    bt_diag d;
    /* A good first row, replacing H100-SXM, and a bad second: nothing of it may land. */
    char *doc = make_doc(make_row("H100-SXM", NULL, NULL), make_row("New", NULL, ""), NULL);
    const char *path = write_tmp("overlay.json", doc);
    assert_int_equal(bt_gpudb_merge_file(db, path, &d), BT_PARSE);
    assert_string_equal(d.file, path);
    assert_string_equal(d.field, "gpus[1].sm_count");
    assert_same_table(db, g_db);
    free(doc);

    /* A syntax error. */
    path = write_tmp("overlay.json", "{\"format\": \"blocktune-gpus\", \"version\": 1,\n"
                                     "  \"gpus\": [ {\"name\": \"X\",, } ]}\n");
    assert_int_equal(bt_gpudb_merge_file(db, path, &d), BT_PARSE);
    assert_int_equal(d.line, 2);
    assert_true(d.column > 0);
    assert_same_table(db, g_db);

    /* An alias that is another row's name. */
    doc = make_doc(make_row("My-GPU", "      \"aliases\": [\"H100 SXM\"],\n", NULL), NULL);
    path = write_tmp("overlay.json", doc);
    assert_int_equal(bt_gpudb_merge_file(db, path, &d), BT_PARSE);
    assert_string_equal(d.field, "gpus[0].aliases");
    assert_non_null(strstr(d.msg, "H100-SXM"));
    assert_same_table(db, g_db);
    free(doc);

    /* A missing file. */
    char missing[512];
    snprintf(missing, sizeof missing, "%s/none.json", g_tmp);
    assert_int_equal(bt_gpudb_merge_file(db, missing, &d), BT_IO);
    assert_same_table(db, g_db);
    bt_gpudb_destroy(db);
}

static void test_overlay_replaces_a_row_and_adds_others(void **state)
{
    (void)state;
    bt_gpudb *db = load_source_copy();
    size_t n = bt_gpudb_count(db);
    bt_diag d;
    char *doc = make_doc(
        make_row("h100 sxm", "      \"aliases\": [\"h100\"],\n", "      \"sm_count\": 100,\n"),
        make_row("My-Lab-GPU", "      \"aliases\": [\"lab\", \"h200\"],\n", NULL), NULL);
    const char *path = write_tmp("overlay.json", doc);
    free(doc);
    assert_int_equal(bt_gpudb_merge_file(db, path, &d), BT_OK);
    assert_int_equal(bt_gpudb_count(db), n + 1);
    /* Replaced in place, under the overlay's spelling, by its numbers. */
    const bt_gpu *g = must_find(db, "H100-SXM");
    assert_int_equal(g->sm_count, 100);
    assert_string_equal(g->name, "h100 sxm");
    assert_ptr_equal(must_find(db, "h100"), g);
    size_t i = 0;
    while (bt_gpudb_at(db, i) != g)
        i++;
    assert_string_equal(bt__gpudb_row_origin(db, i), path);
    assert_int_equal(bt_gpudb_at(g_db, i)->sm_count, 132);
    /* Added, and it took the alias "h200" from H200-SXM. */
    assert_string_equal(must_find(db, "lab")->name, "My-Lab-GPU");
    assert_string_equal(must_find(db, "h200")->name, "My-Lab-GPU");
    assert_string_equal(must_find(db, "H200-SXM")->name, "H200-SXM");
    assert_string_equal(must_find(db, "NVIDIA H200")->name, "My-Lab-GPU"); /* same key */
    assert_null(strstr(must_find(db, "H200-SXM")->aliases, "h200,"));
    /* Other rows are untouched. */
    assert_memory_equal(must_find(db, "T4"), must_find(g_db, "T4"), sizeof(bt_gpu));
    bt_gpudb_destroy(db);
}

static void test_json_round_trip(void **state)
{
    (void)state;
    json_t *doc = bt__gpudb_to_json(g_db, NULL);
    assert_non_null(doc);
    char *text = json_dumps(doc, BT__GPUDB_DUMP_FLAGS);
    json_decref(doc);
    assert_non_null(text);
    bt_gpudb *db = NULL;
    bt_diag d;
    bt_status st = bt__gpudb_load_text(text, strlen(text), "round.json", &db, &d);
    if (st)
        fail_msg("%s: %d:%d: %s: %s", bt_err_name(st), d.line, d.column, d.field, d.msg);
    free(text);
    assert_int_equal(bt_gpudb_count(db), bt_gpudb_count(g_db));
    for (size_t i = 0; i < bt_gpudb_count(db); i++)
        assert_memory_equal(bt_gpudb_at(db, i), bt_gpudb_at(g_db, i), sizeof(bt_gpu));
    bt_gpudb_destroy(db);

    doc = bt__gpudb_to_json(g_db, must_find(g_db, "l40s"));
    assert_int_equal(json_array_size(json_object_get(doc, "gpus")), 1);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_required_rows_present_with_sources),
        cmocka_unit_test(test_embedded_copy_matches_source_file),
        cmocka_unit_test(test_a100_pinned_numbers),
        cmocka_unit_test(test_a100_80gb_ridge_matches_seed),
        cmocka_unit_test(test_hopper_pinned_numbers),
        cmocka_unit_test(test_per_architecture_limits),
        cmocka_unit_test(test_fp32_peak_agrees_with_sms_and_clock),
        cmocka_unit_test(test_peak_units_exist_only_where_the_hardware_has_them),
        cmocka_unit_test(test_peak_kind_names),
        cmocka_unit_test(test_loose_matching),
        cmocka_unit_test(test_ambiguous_name_lists_the_matches),
        cmocka_unit_test(test_unknown_name_lists_closest),
        cmocka_unit_test(test_null_arguments),
        cmocka_unit_test(test_missing_file_is_an_io_error),
        cmocka_unit_test(test_load_default_prefers_data_dir),
        cmocka_unit_test(test_syntax_error_names_line_and_column),
        cmocka_unit_test(test_missing_field_is_named),
        cmocka_unit_test(test_negative_or_mistyped_field_is_named_with_its_line),
        cmocka_unit_test(test_every_field_error_points_at_its_place),
        cmocka_unit_test(test_unknown_field_suggests_the_known_one),
        cmocka_unit_test(test_format_and_version_are_checked),
        cmocka_unit_test(test_duplicate_names_in_one_file_are_rejected),
        cmocka_unit_test(test_failed_merge_leaves_the_table_unchanged),
        cmocka_unit_test(test_overlay_replaces_a_row_and_adds_others),
        cmocka_unit_test(test_json_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
