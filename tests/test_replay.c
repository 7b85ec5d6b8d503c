/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_replay.c — a key the results store holds, tuned again (src/engine/replay.c), on the
 * default OpenCL device (PoCL in CI): the stored outcomes are replayed to the strategy and
 * nothing new is measured, compiled, run or written; the winner is the stored one and the report
 * says so; the same seed replays the same proposals; a larger budget than the store covers
 * resumes and measures only the configs it lacks; --mode retune measures everything again.
 */
#include "test_util.h"

#include "engine/engine.h"

#include <unistd.h>

static bt_device *dev;
static char store_path[256];

/* y = 2x + 1 by configs of BLOCK (4 of them, all right). */
#define KERNEL                                                                                     \
    "__kernel void k(__global const float *x, __global float *y, int n) {"                        \
    "  int i = get_global_id(0); if (i < n) y[i] = 2.0f * x[i] + 1.0f; }"

static bt_kdesc *spec(void)
{
    bt_kdesc *k = NULL;
    bt_diag d;
    const char *text =
        "{\"blocktune_spec\": 1, \"name\": \"replayk\","
        " \"sources\": {\"opencl\": {\"inline\": \"" KERNEL "\"}}, \"entry\": \"k\","
        " \"problem\": {\"n\": 2048},"
        " \"params\": {\"BLOCK\": [16, 32, 64, 128]},"
        " \"launch\": {\"grid\": [\"cdiv(n, BLOCK)\"], \"block\": [\"BLOCK\"]},"
        " \"flops\": \"2 * n\", \"bytes\": \"8 * n\","
        " \"args\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"size\": \"n\","
        "             \"init\": {\"uniform\": [-1, 1]}},"
        "            {\"name\": \"y\", \"dtype\": \"fp32\", \"size\": \"n\", \"output\": true},"
        "            {\"name\": \"n\", \"kind\": \"scalar\", \"dtype\": \"int32\", \"value\": \"n\"}],"
        " \"reference\": {\"config\": {\"BLOCK\": 32}},"
        " \"tolerance\": {\"rtol\": 1e-6, \"atol\": 1e-6}}";
    if (bt_kdesc_load_string(text, "replayk.json", &k, &d) != BT_OK)
        fail_msg("%s", d.msg);
    return k;
}

static bt_result *tune(const bt_kdesc *k, const char *strategy, int budget, bt_tune_mode mode)
{
    bt__tune_opts o;
    bt__tune_opts_default(&o);
    o.warmup_ms = 0.01;
    o.rep_ms = 0.05;
    o.rounds = 1;
    o.top_k = 2;
    o.store = store_path;
    o.mode = mode;
    o.strategy = strategy;
    o.budget = budget;
    o.threads = 2;
    bt_kernel *kn;
    bt_diag d;
    if (bt_kernel_create(dev, k, &kn, &d) != BT_OK)
        fail_msg("%s", d.msg);
    bt_problem *p;
    assert_int_equal(bt_problem_create(k, &p), BT_OK);
    bt_result *r = NULL;
    if (bt__kernel_tune_opts(kn, p, &o, &r, &d) != BT_OK)
        fail_msg("tune: %s", d.msg);
    bt_problem_destroy(p);
    bt_kernel_destroy(kn);
    return r;
}

static int64_t winner_block(const bt_result *r)
{
    assert_true(r->winner >= 0);
    return r->e[r->winner].ev.cfg.v[0];
}

#define report bt_test_report

/* Nothing of r ran: every entry replayed from the store, no row written, nothing compiled,
 * verified or measured, no verification claimed. */
static void nothing_ran(const bt_result *r, int replayed)
{
    assert_int_equal(r->replayed, replayed);
    assert_int_equal((int)r->n, replayed);
    assert_int_equal(r->stored, 0);
    assert_int_equal(r->finalists, 0);
    assert_string_equal(r->reference, "");
    for (size_t i = 0; i < r->n; i++) {
        assert_true(r->e[i].from_store);
        assert_false(r->e[i].cached || r->e[i].compile_s > 0 || r->e[i].ver.checked);
    }
    char *text = report(r);
    assert_non_null(strstr(text, "REPLAYED FROM THE STORE"));
    assert_non_null(strstr(text, "replayed from the store (none measured here)"));
    assert_non_null(strstr(text, "NOT VERIFIED: no reference was made in this run"));
    assert_null(strstr(text, "re-verified here"));
    free(text);
}

static void test_a_stored_key_is_replayed(void **state)
{
    (void)state;
    bt_kdesc *k = spec();
    bt_result *first = tune(k, NULL, 0, BT_MODE_TUNE);
    assert_int_equal(first->replayed, 0);
    assert_true(first->stored >= 4);
    bt_result *again = tune(k, NULL, 0, BT_MODE_TUNE);
    nothing_ran(again, 4);
    assert_int_equal(winner_block(again), winner_block(first));
    assert_true(again->e[again->winner].st.median == first->e[first->winner].st.median);
    assert_true(again->margin == first->margin && again->tie == first->tie);
    /* --mode retune: measured again, the rows rewritten */
    bt_result *re = tune(k, NULL, 0, BT_MODE_RETUNE);
    assert_int_equal(re->replayed, 0);
    assert_true(re->stored >= 4 && re->finalists > 0);
    assert_string_equal(re->reference, "baseline config");
    bt_result_destroy(first);
    bt_result_destroy(again);
    bt_result_destroy(re);
    bt_kdesc_destroy(k);
}

/* A seeded strategy under a budget: the replay proposes what the first tune measured; a larger
 * budget measures only what the store lacks. */
static void test_a_seeded_search_replays_and_a_larger_budget_resumes(void **state)
{
    (void)state;
    bt_kdesc *k = spec();
    unlink(store_path);
    bt_result *first = tune(k, "random", 2, BT_MODE_TUNE);
    assert_int_equal((int)first->n, 2);
    bt_result *again = tune(k, "random", 2, BT_MODE_TUNE);
    nothing_ran(again, 2);
    for (size_t i = 0; i < 2; i++)
        assert_int_equal(again->e[i].ev.cfg.v[0], first->e[i].ev.cfg.v[0]);
    assert_int_equal(winner_block(again), winner_block(first));
    bt_result *more = tune(k, "random", 3, BT_MODE_TUNE);
    assert_int_equal(more->replayed, 0);
    assert_int_equal((int)more->n, 3);
    assert_int_equal(more->from_store, 2);
    bt_result_destroy(first);
    bt_result_destroy(again);
    bt_result_destroy(more);
    bt_kdesc_destroy(k);
}

int main(void)
{
    bt_diag d;
    if (bt_device_open("opencl:0", &dev, &d) != BT_OK)
        BT_TEST_SKIP_ALL("no OpenCL device: %s", d.msg);
    char dir[] = "/tmp/bt_replay_XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(store_path, sizeof store_path, "%s/store.db", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_stored_key_is_replayed),
        cmocka_unit_test(test_a_seeded_search_replays_and_a_larger_budget_resumes),
    };
    int failed = cmocka_run_group_tests_name("replay", tests, NULL, NULL);
    unlink(store_path);
    rmdir(dir);
    bt_device_destroy(dev);
    return failed ? 1 : 0;
}
