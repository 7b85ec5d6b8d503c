/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c — a program written against blocktune 0.2.0 and compiled against the frozen copy of
 * its header (blocktune-0.2.0.h, never edited after the release), run against the library of
 * this tree and against a build of it that plays a later release (BT__ABI_GROWN: a bigger
 * bt_diag, bt_launch_options and bt_progress, one more tune option, a newer version number).
 * It checks what the ABI rules promise (docs/api.md): the library writes no byte past the
 * caller's struct, reads no field past its size, and old calls keep their meaning.
 *
 *   usage: consumer   (exit 0 when every check held, 77 with no device for the device checks)
 */
#include "blocktune-0.2.0.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "consumer: FAILED %s (line %d)\n", #cond, __LINE__);                  \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* A struct of the caller's followed by bytes that must stay as they were. */
#define GUARD 64
static int guard_intact(const unsigned char *g)
{
    for (int i = 0; i < GUARD; i++)
        if (g[i] != 0xA5)
            return 0;
    return 1;
}

static int calls;
static int cancel_at_once(const bt_progress *p, void *user)
{
    (void)user;
    calls++;
    /* the library's struct may be bigger; the fields this program knows are where they were */
    if (p->size < sizeof *p || p->configs_done < 1 || p->rounds < 1 || p->elapsed_s < 0)
        failures++;
    return 1;
}

int main(void)
{
    printf("consumer: header %s (0x%06x), library %s (0x%06x)\n", BT_VERSION_STRING,
           BT_VERSION_NUMBER, bt_version(), bt_version_number());
    CHECK(bt_version_number() >= BT_VERSION_NUMBER);
    CHECK(bt_version_number() >> 8 == BT_VERSION_NUMBER >> 8); /* the soname pins major.minor */

    /* diags: BT_DIAG_INIT and `= {0}`, with guard bytes after them */
    struct {
        bt_diag d;
        unsigned char guard[GUARD];
    } g1 = {BT_DIAG_INIT, {0}}, g2;
    memset(g1.guard, 0xA5, GUARD);
    memset(&g2, 0, sizeof g2);
    memset(g2.guard, 0xA5, GUARD);
    bt_kdesc *k = NULL;
    CHECK(bt_kdesc_builtin("no_such_kernel", &k, &g1.d) == BT_NOT_FOUND);
    CHECK(bt_kdesc_builtin("no_such_kernel", &k, &g2.d) == BT_NOT_FOUND);
    CHECK(g1.d.msg[0] && g2.d.msg[0] && k == NULL);
    CHECK(guard_intact(g1.guard) && guard_intact(g2.guard));
    CHECK(g1.d.size == sizeof(bt_diag) && g2.d.size == 0); /* the caller's size is kept */

    /* options: every 0.2.0 setter still takes its values and refuses the same bad ones */
    bt_tune_options *o = NULL;
    CHECK(bt_tune_options_create(&o) == BT_OK);
    CHECK(bt_tune_options_set_budget(o, 2) == BT_OK);
    CHECK(bt_tune_options_set_rep_ms(o, 1) == BT_OK && bt_tune_options_set_warmup_ms(o, 1) == 0);
    CHECK(bt_tune_options_set_rep_ms(o, -1) == BT_INVALID_ARG);
    CHECK(bt_tune_options_set_strategy(o, "random") == BT_OK);
    CHECK(bt_tune_options_set_verify_boundary(o, 0) == BT_OK);
    CHECK(bt_tune_options_set_store(o, "none") == BT_OK);
    CHECK(bt_tune_options_set_rounds(o, 1) == BT_OK && bt_tune_options_set_top_k(o, 1) == 0);
    CHECK(bt_tune_options_set_progress_cb(o, cancel_at_once, NULL) == BT_OK);

    /* a plan with the 0.2.0 plan options */
    CHECK(bt_kdesc_builtin("vector_add", &k, &g1.d) == BT_OK);
    bt_problem *p = NULL;
    CHECK(bt_problem_create(k, &p) == BT_OK);
    CHECK(bt_problem_set(p, "n", 100000, &g1.d) == BT_OK);
    bt_gpudb *db = NULL;
    const bt_gpu *gpu = NULL;
    CHECK(bt_gpudb_load_default(&db, &g1.d) == BT_OK);
    CHECK(bt_gpudb_find(db, "h200", &gpu, &g1.d) == BT_OK);
    bt_config *cfg = NULL;
    CHECK(bt_kdesc_parse_config(k, "BLOCK_SIZE=1024,num_warps=4,VEC=4", &cfg, &g1.d) == BT_OK);
    CHECK(bt_config_count(cfg) == 3 && !strcmp(bt_config_name(cfg, 0), "BLOCK_SIZE"));
    bt_plan_options po = BT_PLAN_OPTIONS_INIT;
    po.only = cfg;
    bt_plan *pl = NULL;
    CHECK(bt_plan_create(k, p, gpu, &po, &pl, &g1.d) == BT_OK);
    bt_plan_destroy(pl);
    bt_config_destroy(cfg);
    bt_gpudb_destroy(db);

    /* a device: launch options of the 0.2.0 size followed by guard bytes (a library that read
     * past them would see 0xA5A5A5A5 in its added field and refuse the launch) */
    bt_device *dev = NULL;
    int rc = 0;
    if (bt_device_open(NULL, &dev, &g1.d) != BT_OK) {
        printf("consumer: no device (%s): the device checks are skipped\n", g1.d.msg);
        rc = 77;
    } else {
        bt_kernel *kn = NULL;
        CHECK(bt_kernel_create(dev, k, &kn, &g1.d) == BT_OK);
        bt_result *r = NULL;
        CHECK(bt_kernel_tune(kn, p, o, &r, &g1.d) == BT_CANCELLED && r == NULL && calls == 1);
        CHECK(guard_intact(g1.guard));
        CHECK(bt_tune_options_set_progress_cb(o, NULL, NULL) == BT_OK);
        bt_kernel_set_options(kn, o);
        size_t bytes = 100000 * 4;
        bt_buffer *b[3];
        for (int i = 0; i < 3; i++)
            CHECK(bt_buffer_create(dev, bytes, &b[i], &g1.d) == BT_OK);
        struct {
            bt_launch_options lo;
            unsigned char guard[GUARD];
        } l = {BT_LAUNCH_OPTIONS_INIT, {0}};
        memset(l.guard, 0xA5, GUARD);
        bt_status st = bt_kernel_launch_ex(kn, p, b, 3, &l.lo, &g1.d);
        if (st)
            fprintf(stderr, "consumer: launch: %s\n", g1.d.msg);
        CHECK(st == BT_OK);
        CHECK(bt_device_sync(dev, &g1.d) == BT_OK);
        for (int i = 0; i < 3; i++)
            bt_buffer_destroy(b[i]);
        bt_kernel_destroy(kn);
        bt_device_destroy(dev);
    }
    bt_tune_options_destroy(o);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    printf("consumer: %d failed checks\n", failures);
    return failures ? 1 : rc;
}
