/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_family.c — kernel families (core/family.h, engine/fam.h): `gemm` as the front door to the
 * GEMM families, planned with no device (which families run, which are ruled out and why, the
 * budget's split, the plan report's section), the loader's checks of a family's interface with
 * file:line:column errors, and on the mock CUDA driver a front door of two vadd families tuned
 * across families, its choice stored as {"family": i, ...}, and a new handle dispatching that
 * stored choice without tuning (launch and lookup), and in wisdom-only mode (set through the
 * public options, which must reach the families) a size never tuned dispatched from the nearest.
 */
#include "core/family.h"
#include "backends/cuda/cuda.h"
#include "engine/fam.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

static bt_gpudb *g_db;
static bt_kdesc *g_gemm;

static int setup(void **state)
{
    (void)state;
    bt_diag d;
    return bt_gpudb_load_default(&g_db, &d) == BT_OK && bt_kdesc_builtin("gemm", &g_gemm, &d) == BT_OK
               ? 0
               : -1;
}

static int teardown(void **state)
{
    (void)state;
    bt_kdesc_destroy(g_gemm);
    bt_gpudb_destroy(g_db);
    return 0;
}

/* The family plan of gemm at M×N×K in dtype on gpu (any backend's languages). */
static bt__famplan *plan(const char *gpu, int64_t m, int64_t n, int64_t k, const char *dtype)
{
    bt_diag d;
    const bt_gpu *g = NULL;
    assert_int_equal(bt_gpudb_find(g_db, gpu, &g, &d), BT_OK);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(g_gemm, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "M", m, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "N", n, &d), BT_OK);
    assert_int_equal(bt_problem_set(p, "K", k, &d), BT_OK);
    assert_int_equal(bt_problem_set_dtype(p, dtype, &d), BT_OK);
    bt__famplan *fp = NULL;
    if (bt__famplan_create(g_gemm, p, g, NULL, NULL, &fp, &d) != BT_OK)
        fail_msg("famplan: %s", d.msg);
    bt_problem_destroy(p);
    return fp;
}

static const bt__famplan_entry *fam(const bt__famplan *fp, const char *name)
{
    for (int i = 0; i < fp->n; i++)
        if (!strcmp(fp->e[i].k->name, name))
            return &fp->e[i];
    fail_msg("no family %s", name);
    return NULL;
}

/* The case: fp16 3001×2999×1031 on an H200 must not go to the SIMT kernel; rows that are
 * not 16-byte multiples go to the tensor-core families that load them (mma.sync's element path,
 * wgmma fed by ordinary loads), not to the TMA one. */
static void test_h200_fp16_rules_out_simt_and_wgmma(void **state)
{
    (void)state;
    bt__famplan *fp = plan("h200", 3001, 2999, 1031, "fp16");
    const bt__famplan_entry *simt = fam(fp, "gemm");
    assert_int_equal(simt->verdict, BT__FAM_CANNOT_WIN);
    assert_non_null(strstr(simt->why, "fp16 on CUDA cores, where gemm_mma computes it on tensor "
                                      "cores (134 against 989 TFLOP/s)"));
    const bt__famplan_entry *wg = fam(fp, "gemm_wgmma");
    assert_int_equal(wg->verdict, BT__FAM_NO_CONFIG); /* K, N not multiples of 8 */
    assert_non_null(strstr(wg->why, "(K * elem_bytes) % 16 == 0"));
    assert_int_equal(fam(fp, "gemm_mma")->verdict, BT__FAM_RUN);
    assert_int_equal(fam(fp, "gemm_wgmma_ldg")->verdict, BT__FAM_RUN);
    assert_int_equal(fam(fp, "gemm_smallm")->verdict, BT__FAM_WHEN); /* M > 64 */
    assert_string_equal(fp->e[fp->best].k->name, "gemm_wgmma_ldg");
    assert_int_equal(bt__famplan_running(fp), 2);
    bt__famplan_free(fp);
    /* where the model's prediction would keep SIMT (a launch-bound size: it predicts SIMT
     * fastest at 17×4097×63), 16-bit data still goes to the tensor cores */
    fp = plan("h200", 17, 4097, 63, "fp16");
    assert_int_equal(fam(fp, "gemm")->verdict, BT__FAM_CANNOT_WIN);
    assert_true(fam(fp, "gemm")->best_us < fam(fp, "gemm_mma")->best_us);
    assert_int_equal(fam(fp, "gemm_smallm")->verdict, BT__FAM_RUN);
    bt__famplan_free(fp);
    /* where no tensor-core family runs (a T4, cc 7.5: they need sm_80), SIMT runs */
    fp = plan("t4", 17, 4097, 63, "fp16");
    assert_int_equal(fam(fp, "gemm_mma")->verdict, BT__FAM_NO_CONFIG);
    assert_int_equal(fam(fp, "gemm")->verdict, BT__FAM_RUN);
    bt__famplan_free(fp);
    /* aligned rows: the TMA family runs, the one that loads unaligned rows has no config */
    fp = plan("h200", 4096, 4096, 4096, "fp16");
    assert_int_equal(fam(fp, "gemm_wgmma_ldg")->verdict, BT__FAM_NO_CONFIG);
    assert_non_null(strstr(fam(fp, "gemm_wgmma_ldg")->why, "% 16 != 0"));
    bt__famplan_free(fp);
    /* 4096³: wgmma and mma run, SIMT still cannot win */
    fp = plan("h200", 4096, 4096, 4096, "fp16");
    assert_int_equal(fam(fp, "gemm_wgmma")->verdict, BT__FAM_RUN);
    assert_int_equal(fam(fp, "gemm")->verdict, BT__FAM_CANNOT_WIN);
    bt__famplan_budget(fp, 64);
    size_t sum = 0;
    for (int i = 0; i < fp->n; i++) {
        const bt__famplan_entry *e = &fp->e[i];
        assert_true(e->verdict == BT__FAM_RUN ? e->budget >= 4 : e->budget == 0);
        sum += e->budget;
    }
    assert_true(sum <= 64 && sum >= 60);
    assert_true(fam(fp, "gemm_wgmma")->budget >= fam(fp, "gemm_mma")->budget); /* best predicted */
    bt__famplan_free(fp);
}

static void test_a100_has_no_wgmma_and_small_m_runs(void **state)
{
    (void)state;
    bt__famplan *fp = plan("a100-sxm4-80gb", 1, 8192, 8192, "fp16");
    const bt__famplan_entry *wg = fam(fp, "gemm_wgmma");
    assert_int_equal(wg->verdict, BT__FAM_NO_CONFIG);
    assert_non_null(strstr(wg->why, "'cc == 90' is false (80 == 90) (every one)"));
    assert_int_equal(fam(fp, "gemm_smallm")->verdict, BT__FAM_RUN);
    assert_int_equal(fam(fp, "gemm_mma")->verdict, BT__FAM_RUN);
    bt__famplan_free(fp);
    /* M = 1 on the H200: both small-M families run (the TMA one compared by its floor) */
    fp = plan("h200", 1, 8192, 8192, "fp16");
    assert_int_equal(fam(fp, "gemm_smallm")->verdict, BT__FAM_RUN);
    const bt__famplan_entry *tma = fam(fp, "gemm_smallm_tma");
    assert_int_equal(tma->verdict, BT__FAM_RUN);
    assert_true(tma->by_floor && tma->best_us > 0);
    bt__famplan_free(fp);
}

static void test_fp32_and_opencl_keep_the_portable_one(void **state)
{
    (void)state;
    bt__famplan *fp = plan("h200", 1024, 1024, 1024, "fp32");
    assert_int_equal(bt__famplan_running(fp), 1);
    assert_int_equal(fam(fp, "gemm_mma")->verdict, BT__FAM_DTYPE);
    assert_non_null(strstr(fam(fp, "gemm_mma")->why, "not fp32"));
    assert_int_equal(fam(fp, "gemm")->verdict, BT__FAM_RUN);
    bt__famplan_free(fp);
    /* an OpenCL device: only gemm has an OpenCL source */
    bt_diag d;
    const bt_gpu *g = NULL;
    assert_int_equal(bt_gpudb_find(g_db, "h200", &g, &d), BT_OK);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(g_gemm, &p), BT_OK);
    assert_int_equal(bt_problem_set_dtype(p, "fp16", &d), BT_OK);
    const char *const cl[] = {"opencl", NULL};
    assert_int_equal(bt__famplan_create(g_gemm, p, g, cl, NULL, &fp, &d), BT_OK);
    assert_int_equal(fam(fp, "gemm_mma")->verdict, BT__FAM_NO_SOURCE);
    assert_int_equal(fam(fp, "gemm")->verdict, BT__FAM_RUN);
    assert_int_equal(bt__famplan_running(fp), 1);
    bt__famplan_free(fp);
    bt_problem_destroy(p);
}

/* plan gemm prints the families; a family on its own (gemm_wgmma) prints none */
static void test_plan_report_has_the_families(void **state)
{
    (void)state;
    const char *names[] = {"gemm", "gemm_wgmma"};
    for (int i = 0; i < 2; i++) {
        bt_diag d;
        bt_kdesc *k = NULL;
        assert_int_equal(bt_kdesc_builtin(names[i], &k, &d), BT_OK);
        bt_problem *p = NULL;
        assert_int_equal(bt_problem_create(k, &p), BT_OK);
        assert_int_equal(bt_problem_set_dtype(p, "fp16", &d), BT_OK);
        const bt_gpu *g = NULL;
        assert_int_equal(bt_gpudb_find(g_db, "h200", &g, &d), BT_OK);
        bt_plan *pl = NULL;
        assert_int_equal(bt_plan_create(k, p, g, NULL, &pl, &d), BT_OK);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        assert_int_equal(bt_plan_write_table(pl, f, 0), BT_OK);
        fclose(f);
        const char *sec = strstr(text, "Families of gemm (6;");
        if (i == 0) {
            assert_non_null(sec);
            assert_non_null(strstr(sec, "gemm_wgmma           measure"));
            assert_non_null(strstr(sec, "<- best predicted"));
        } else
            assert_null(sec);
        free(text);
        bt_plan_destroy(pl);
        bt_problem_destroy(p);
        bt_kdesc_destroy(k);
    }
}

/* A spec text: gemm's problem and arguments with the given families. */
static bt_status load_front(const char *families, const char *b_size, bt_kdesc **k, bt_diag *d)
{
    char json[3000];
    snprintf(json, sizeof json,
             "{\"blocktune_spec\": 1, \"name\": \"front\",\n"
             " \"sources\": {\"cuda\": {\"inline\": \"x\"}}, \"entry\": \"front\",\n"
             " \"dtypes\": [\"fp16\"], \"problem\": {\"M\": 64, \"N\": 64, \"K\": 64},\n"
             " \"params\": {\"B\": [1]}, \"launch\": {\"grid\": [1], \"block\": [32]},\n"
             " \"args\": [{\"name\": \"A\", \"dtype\": \"T\", \"size\": \"M * K\"},\n"
             "   {\"name\": \"B\", \"dtype\": \"T\", \"size\": \"%s\"},\n"
             "   {\"name\": \"C\", \"dtype\": \"T\", \"size\": \"M * N\", \"output\": true}],\n"
             " \"reference\": {\"host\": \"gemm\"},\n"
             " \"families\": %s}\n",
             b_size, families);
    return bt_kdesc_load_string(json, "front.json", k, d);
}

static void test_loader_checks_the_interface(void **state)
{
    (void)state;
    bt_kdesc *k = NULL;
    bt_diag d;
    assert_int_equal(load_front("[\"front\", \"gemm_mma\", \"gemm_smallm\"]", "K * N", &k, &d),
                     BT_OK);
    assert_int_equal(k->nfam, 3);
    assert_true(k->fam[0].self);
    bt_kdesc_destroy(k);
    const struct {
        const char *families, *b_size, *msg;
        int line;
    } bad[] = {
        {"[\"front\",\n \"gemm_nope\"]", "K * N", "family 'gemm_nope' does not load", 10},
        {"[\"gemm_mma\",\n \"gemm_smallm_nt\"]", "K * N", "checked against reference 'gemm_nt'", 10},
        {"[\"gemm_mma\"]", "2 * K * N", "argument 'B' holds 4096 elements at M=64, N=64, K=64 "
         "where 'front''s holds 8192 (sizes must agree)", 9},
        {"[\"gemm_mma\", \"gemm_mma\"]", "K * N", "listed twice", 9},
        {"[\"gemm_mma\", {\"spec\": \"gemm\", \"unit\": \"fast\"}]", "K * N", "unit is", 9},
        {"[\"vector_add\"]", "K * N", "checked against reference 'vector_add'", 9},
        {"[]", "K * N", "at least one", 9},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        memset(&d, 0, sizeof d);
        assert_int_equal(load_front(bad[i].families, bad[i].b_size, &k, &d), BT_PARSE);
        if (!strstr(d.msg, bad[i].msg) || d.line != bad[i].line || d.column <= 0)
            fail_msg("case %zu: %s:%d:%d: %s", i, d.file, d.line, d.column, d.msg);
        assert_string_equal(d.file, "front.json");
    }
    /* a family file whose buffer is larger: refused naming the argument, at the front door's
     * entry for it */
    FILE *f = fopen(BT_SOURCE_DIR "/tests/data/fam/vfront.json", "r");
    assert_non_null(f);
    char text[4096], json[4200];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char *at = strstr(text, "\"vfam_b.json\"");
    assert_non_null(at);
    *at = '\0';
    snprintf(json, sizeof json, "%s\"%s/tests/data/fam/vfam_bad.json\"%s", text, BT_SOURCE_DIR,
             at + strlen("\"vfam_b.json\""));
    memset(&d, 0, sizeof d);
    assert_int_equal(bt_kdesc_load_string(json, "vfront.json", &k, &d), BT_PARSE);
    if (!strstr(d.msg, "family 'vfam_bad': argument 'y' holds 8192 elements at n=4096 where "
                       "'vfront''s holds 4096") || d.line != 20)
        fail_msg("%d:%d: %s", d.line, d.column, d.msg);
}

/* --- on the mock CUDA driver ------------------------------------------------------------------ */
static char g_tmp[256];

static bt_kernel *spec_kernel(bt_device *dev, const char *path, bt_kdesc **k, const char *store)
{
    bt_diag d;
    if (!*k && bt_kdesc_load_file(path, k, &d) != BT_OK)
        fail_msg("%s: %s:%d:%d: %s", path, d.file, d.line, d.column, d.msg);
    bt_kernel *kn = NULL;
    assert_int_equal(bt_kernel_create(dev, *k, &kn, &d), BT_OK);
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.2;
    o.rep_ms = 0.5;
    o.graph = 1;       /* the mock's cache flush sweeps 50 MB on the host: graph replays skip it */
    o.top_k = 1;       /* no finals within a family (test_engine has them); across them, yes */
    o.store = store;
    o.mode = BT_MODE_TUNE;
    bt__kernel_set_opts(kn, &o);
    return kn;
}

/* kn in wisdom-only mode over the store, through the public options (a front door passes them
 * on to its families). */
static void wisdom_only(bt_kernel *kn, const char *store)
{
    bt_tune_options *o = NULL;
    assert_int_equal(bt_tune_options_create(&o), BT_OK);
    assert_int_equal(bt_tune_options_set_store(o, store), BT_OK);
    assert_int_equal(bt_tune_options_set_mode(o, BT_MODE_WISDOM_ONLY), BT_OK);
    bt_kernel_set_options(kn, o);
    bt_tune_options_destroy(o);
}

static bt_kernel *front_kernel(bt_device *dev, bt_kdesc **k, const char *store)
{
    return spec_kernel(dev, BT_SOURCE_DIR "/tests/data/fam/vfront.json", k, store);
}

/* A launch of kn at p (n = 1000) over x = i, y = i / 2 and a poisoned z: z = 1.5 i, and nothing
 * was tuned. */
static void launch_adds(bt_kernel *kn, const bt_problem *p, bt_buffer *buf[3])
{
    bt_diag d;
    float c[1000];
    for (int i = 0; i < 1000; i++)
        c[i] = -1;
    assert_int_equal(bt_buffer_write(buf[2], 0, c, sizeof c, &d), BT_OK);
    if (bt_kernel_launch(kn, p, buf, 3, &d) != BT_OK)
        fail_msg("launch: %s", d.msg);
    assert_int_equal(bt_buffer_read(buf[2], 0, c, sizeof c, &d), BT_OK);
    for (int i = 0; i < 1000; i++)
        assert_true(c[i] == 1.5f * (float)i);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
}

static void test_front_door_tunes_stores_and_dispatches(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    char store[300];
    snprintf(store, sizeof store, "%s/s.db", g_tmp);
    bt_kdesc *k = NULL;
    bt_kernel *kn = front_kernel(dev, &k, store);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", 1000, &d), BT_OK);
    bt_result *r = NULL;
    if (bt_kernel_tune(kn, p, NULL, &r, &d) != BT_OK)
        fail_msg("tune: %s", d.msg);
    const struct bt__famres *fr = r->fam;
    assert_non_null(fr);
    assert_int_equal(fr->n, 2);
    assert_true(fr->winner >= 0 && fr->rounds > 0);
    for (int i = 0; i < 2; i++) { /* both measured, verified and in the finals */
        assert_int_equal(fr->e[i].verdict, BT__FAM_RUN);
        assert_int_equal(fr->e[i].measured, 2);
        assert_true(fr->e[i].own_ms > 0 && fr->e[i].final_ms > 0 && fr->e[i].config[0] == '{');
        assert_true(fr->e[i].tune_s > 0); /* what each family's tune took, reported */
    }
    assert_true(fr->finals_s > 0);
    assert_string_equal(r->k->name, fr->e[fr->winner].name);
    assert_non_null(strstr(fr->stored, "stored as vfront's choice for n=1000,dtype=fp32"));
    char *text = bt_test_report(r);
    assert_non_null(strstr(text, "Families of vfront: "));
    assert_non_null(strstr(text, " won"));
    assert_non_null(strstr(text, "The families' finals: "));
    free(text);
    int won = fr->winner;
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    /* the store holds the choice under the front door's name, with the family */
    bt_store *s = NULL;
    bt_winner_list *wl = NULL;
    assert_int_equal(bt_store_open(store, 0, &s, &d), BT_OK);
    assert_int_equal(bt_store_winners(s, "vfront", &wl, &d), BT_OK);
    int rows = 0; /* (its own family's winner is a row of vfront's too, under its own hash) */
    for (size_t i = 0; i < bt_winner_list_count(wl); i++)
        if (!strcmp(bt_winner_list_key(wl, i), "n=1000,dtype=fp32") &&
            strstr(bt_winner_list_config(wl, i), "family")) {
            char want[32];
            snprintf(want, sizeof want, "{\"family\":%d,\"BLOCK\":", won);
            if (!strstr(bt_winner_list_config(wl, i), want))
                fail_msg("stored %s", bt_winner_list_config(wl, i));
            rows++;
        }
    bt_winner_list_destroy(wl);
    bt_store_destroy(s);
    /* a new handle dispatches it from the store: nothing tuned, the output right */
    kn = front_kernel(dev, &k, store);
    float a[1000], b[1000];
    for (int i = 0; i < 1000; i++)
        a[i] = (float)i, b[i] = 0.5f * (float)i;
    bt_buffer *buf[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, sizeof a, &buf[i], &d), BT_OK);
    assert_int_equal(bt_buffer_write(buf[0], 0, a, sizeof a, &d), BT_OK);
    assert_int_equal(bt_buffer_write(buf[1], 0, b, sizeof b, &d), BT_OK);
    launch_adds(kn, p, buf);
    assert_int_equal(bt__fam_chosen(kn, p), won);
    /* the other family's path too (its own handle, or the front door's own source): sent there,
     * it compiles its stored winner and computes the same */
    bt__fam_choose(kn, p, 1 - won);
    launch_adds(kn, p, buf);
    bt__fam_choose(kn, p, won);
    bt_choice *ch = NULL;
    assert_int_equal(bt_kernel_lookup(kn, p, 1, &ch, &d), BT_OK);
    assert_non_null(strstr(bt_choice_config_json(ch), "\"BLOCK\":"));
    bt_choice_destroy(ch);
    assert_int_equal(rows, 1);
    bt_kernel_destroy(kn);
    /* wisdom-only through the public options (which must reach the families): n = 900 was never
     * tuned; the front door takes n = 1000's family choice and its family n = 1000's config (the
     * nearest size, valid here), measures nothing, and the output is right */
    kn = front_kernel(dev, &k, store);
    wisdom_only(kn, store);
    assert_int_equal(bt_problem_set(p, "n", 900, &d), BT_OK);
    if (bt_kernel_lookup(kn, p, 1, &ch, &d) != BT_OK)
        fail_msg("wisdom-only lookup: %s", d.msg);
    /* the routing compiled the nearest size's choice into the family's table: "memory" */
    assert_int_equal(bt_choice_source(ch), BT_SOURCE_MEMORY);
    bt_choice_destroy(ch);
    assert_int_equal(bt__fam_chosen(kn, p), won);
    float c[1000];
    for (int i = 0; i < 1000; i++)
        c[i] = -1;
    assert_int_equal(bt_buffer_write(buf[2], 0, c, sizeof c, &d), BT_OK);
    if (bt_kernel_launch(kn, p, buf, 3, &d) != BT_OK)
        fail_msg("wisdom-only launch: %s", d.msg);
    assert_int_equal(bt_buffer_read(buf[2], 0, c, sizeof c, &d), BT_OK);
    for (int i = 0; i < 1000; i++)
        assert_true(c[i] == (i < 900 ? 1.5f * (float)i : -1.0f));
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_kernel_destroy(kn);
    /* a store that holds only family vfam_b's own tune at n = 1000 (no choice of the front
     * door): in wisdom-only mode the front door sends n = 900 to the family it predicts best
     * (vfam_b: a tie, the first), which must take its own nearest size — only if the options
     * reached it (a family left in tune mode refuses a nearest size and the lookup fails) */
    char store2[300];
    snprintf(store2, sizeof store2, "%s/s2.db", g_tmp);
    bt_kdesc *kb = NULL;
    if (bt_kdesc_load_file(BT_SOURCE_DIR "/tests/data/fam/vfam_b.json", &kb, &d) != BT_OK)
        fail_msg("vfam_b.json: %s", d.msg);
    bt_kernel *kbn = front_kernel(dev, &kb, store2);
    bt_problem *pb = NULL;
    assert_int_equal(bt_problem_create(kb, &pb), BT_OK);
    assert_int_equal(bt_problem_set(pb, "n", 1000, &d), BT_OK);
    if (bt_kernel_tune(kbn, pb, NULL, &r, &d) != BT_OK)
        fail_msg("vfam_b tune: %s", d.msg);
    bt_result_destroy(r);
    bt_problem_destroy(pb);
    bt_kernel_destroy(kbn);
    bt_kdesc_destroy(kb);
    kn = front_kernel(dev, &k, store2);
    wisdom_only(kn, store2);
    if (bt_kernel_lookup(kn, p, 1, &ch, &d) != BT_OK)
        fail_msg("wisdom-only lookup through the family: %s", d.msg);
    assert_int_equal(bt_choice_source(ch), BT_SOURCE_NEAREST_SIZE);
    bt_choice_destroy(ch);
    assert_int_equal(bt__fam_chosen(kn, p), 0);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(buf[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

/* A front door grown by a family (vfront_grown.json: vfront with vfam_c appended, which runs only
 * above n = 2000): the choices vfront stored stay its choices at the keys vfam_c cannot run
 * (n = 1000: dispatched with no tune, and precompile-style lookups find it exact), not where it
 * runs (n = 3000: nothing stored counts, a no-tune lookup fails). A family inserted before the
 * last would re-key every choice (its hash is over the families in order). */
static void test_front_door_grown_by_a_family(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    char store[300];
    snprintf(store, sizeof store, "%s/grown.db", g_tmp);
    bt_kdesc *k = NULL;
    bt_kernel *kn = front_kernel(dev, &k, store);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    int64_t sizes[] = {1000, 3000};
    for (int i = 0; i < 2; i++) {
        bt_result *r = NULL;
        assert_int_equal(bt_problem_set(p, "n", sizes[i], &d), BT_OK);
        if (bt_kernel_tune(kn, p, NULL, &r, &d) != BT_OK)
            fail_msg("tune: %s", d.msg);
        bt_result_destroy(r);
    }
    char old_hash[24];
    snprintf(old_hash, sizeof old_hash, "%s", kn->fam->hash);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    k = NULL;
    kn = spec_kernel(dev, BT_SOURCE_DIR "/tests/data/fam/vfront_grown.json", &k, store);
    assert_int_equal(kn->fam->n, 3);
    assert_string_not_equal(kn->fam->hash, old_hash);
    assert_string_equal(kn->fam->prefix[1], old_hash); /* the hash over the first two */
    assert_string_equal(kn->fam->prefix[2], kn->fam->hash);
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    const char *h[BT__MAX_FAMILIES];
    assert_int_equal(bt_problem_set(p, "n", 1000, &d), BT_OK);
    assert_int_equal(bt__fam_hashes(kn, p, h), 2);
    assert_string_equal(h[1], old_hash);
    int f = -1;
    bt_config c;
    bool found = false, exact = false;
    bt__fam_stored(kn, p, NULL, &f, &c, &found, &exact);
    assert_true(found && exact && (f == 0 || f == 1));
    bt_choice *ch = NULL;
    if (bt_kernel_lookup(kn, p, 1, &ch, &d) != BT_OK)
        fail_msg("lookup at n=1000: %s", d.msg);
    bt_choice_destroy(ch);
    assert_int_equal(bt__fam_chosen(kn, p), f);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    /* n = 3000: vfam_c runs there, so what vfront chose without it is not the choice */
    assert_int_equal(bt_problem_set(p, "n", 3000, &d), BT_OK);
    assert_int_equal(bt__fam_hashes(kn, p, h), 1);
    bt__fam_stored(kn, p, NULL, &f, &c, &found, &exact);
    assert_false(found && exact);
    assert_int_equal(bt_kernel_lookup(kn, p, 1, &ch, &d), BT_NOT_FOUND);
    assert_null(ch);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

/* Wisdom-only, a size whose nearest front-door choice does not fit (vfit.json: at n = 1000 only
 * BLOCK 64 is valid, at n = 1500 only 128): the choice is refused, the family it named resolves
 * the size itself (its own nearest config does not fit either: its model's best, BLOCK 128),
 * nothing is measured and the output is right. */
/* The decisions log, kept whole: whether some line of it says `what`. */
static char g_log[16384];
static void keep_log(const char *line, void *user)
{
    (void)user;
    size_t n = strlen(g_log);
    snprintf(g_log + n, sizeof g_log - n, "%s\n", line);
}

static void test_front_door_nearest_that_does_not_fit(void **state)
{
    (void)state;
    bt_diag d;
    bt_device *dev = NULL;
    if (bt_device_open("cuda:0", &dev, &d) != BT_OK)
        skip();
    char store[300];
    snprintf(store, sizeof store, "%s/fit.db", g_tmp);
    bt_kdesc *k = NULL;
    bt_kernel *kn = spec_kernel(dev, BT_SOURCE_DIR "/tests/data/fam/vfit.json", &k, store);
    bt_problem *p = NULL;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    assert_int_equal(bt_problem_set(p, "n", 1000, &d), BT_OK);
    bt_result *r = NULL;
    if (bt_kernel_tune(kn, p, NULL, &r, &d) != BT_OK)
        fail_msg("tune: %s", d.msg);
    assert_non_null(r->fam);
    int won = r->fam->winner;
    assert_true(won == 0 || won == 1);
    bt_result_destroy(r);
    bt_kernel_destroy(kn);
    kn = spec_kernel(dev, NULL, &k, store);
    wisdom_only(kn, store);
    assert_int_equal(bt_problem_set(p, "n", 1500, &d), BT_OK);
    bt_choice *ch = NULL;
    g_log[0] = '\0';
    bt_set_log_callback(keep_log, NULL);
    if (bt_kernel_lookup(kn, p, 1, &ch, &d) != BT_OK)
        fail_msg("wisdom-only lookup: %s", d.msg);
    bt_set_log_callback(NULL, NULL);
    assert_int_equal(bt__fam_chosen(kn, p), won);
    /* the nearest choice's family, planned alone, not the families' plan */
    assert_non_null(strstr(g_log, "resolves this size itself"));
    assert_int_equal(bt_choice_source(ch), BT_SOURCE_MODEL);
    int64_t block = 0;
    assert_int_equal(bt_choice_param(ch, "BLOCK", &block, &d), BT_OK);
    assert_int_equal(block, 128);
    bt_choice_destroy(ch);
    static float a[1500], b[1500], c[1500];
    for (int i = 0; i < 1500; i++)
        a[i] = (float)i, b[i] = 0.25f * (float)i, c[i] = -1;
    bt_buffer *buf[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(bt_buffer_create(dev, sizeof a, &buf[i], &d), BT_OK);
    assert_int_equal(bt_buffer_write(buf[0], 0, a, sizeof a, &d), BT_OK);
    assert_int_equal(bt_buffer_write(buf[1], 0, b, sizeof b, &d), BT_OK);
    assert_int_equal(bt_buffer_write(buf[2], 0, c, sizeof c, &d), BT_OK);
    if (bt_kernel_launch(kn, p, buf, 3, &d) != BT_OK)
        fail_msg("launch: %s", d.msg);
    assert_int_equal(bt_buffer_read(buf[2], 0, c, sizeof c, &d), BT_OK);
    for (int i = 0; i < 1500; i++)
        assert_true(c[i] == 1.25f * (float)i);
    assert_int_equal(bt_kernel_tune_count(kn), 0);
    for (int i = 0; i < 3; i++)
        bt_buffer_destroy(buf[i]);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    bt_kdesc_destroy(k);
    bt_device_destroy(dev);
}

int main(void)
{
    const struct CMUnitTest plan_tests[] = {
        cmocka_unit_test(test_h200_fp16_rules_out_simt_and_wgmma),
        cmocka_unit_test(test_a100_has_no_wgmma_and_small_m_runs),
        cmocka_unit_test(test_fp32_and_opencl_keep_the_portable_one),
        cmocka_unit_test(test_plan_report_has_the_families),
        cmocka_unit_test(test_loader_checks_the_interface),
    };
    int failed = cmocka_run_group_tests_name("family_plan", plan_tests, setup, teardown);
    /* the device test on the mock driver (hermetic: its own store and kernel cache) */
    setenv(BT__CUDA_LIBRARY_ENV, BT_MOCK_CUDA, 1);
    snprintf(g_tmp, sizeof g_tmp, "/tmp/bt_family_XXXXXX");
    if (!mkdtemp(g_tmp))
        return 1;
    setenv("BLOCKTUNE_CACHE_DIR", g_tmp, 1);
    setenv("BLOCKTUNE_WISDOM_DIR", g_tmp, 1);
    const struct CMUnitTest dev_tests[] = {
        cmocka_unit_test(test_front_door_tunes_stores_and_dispatches),
        cmocka_unit_test(test_front_door_nearest_that_does_not_fit),
        cmocka_unit_test(test_front_door_grown_by_a_family),
    };
    failed += cmocka_run_group_tests_name("family_mock_cuda", dev_tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0)
        failed++;
    return failed;
}
