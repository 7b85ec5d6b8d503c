/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_util.h — pieces the libFuzzer targets share (header only; each target is one program):
 * the check that aborts (libFuzzer saves the input), the NUL-terminated copy of an input, the
 * diagnostic contract, and the walk of a loaded kernel (a config's text round trip and the
 * model's evaluation of single configs on a GPU of the hardware table).
 */
#ifndef BT_FUZZ_UTIL_H
#define BT_FUZZ_UTIL_H

#include "blocktune.h"
#include "core/kdesc.h"
#include "core/space.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                          \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);              \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

/* The input as a C string (up to its first NUL); NULL when out of memory. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

/* A failed call names its reason; a position it names lies inside `text` (a line that exists,
 * a column at most one past that line's end). */
static inline void fuzz_check_diag(const bt_diag *d, const char *text)
{
    FUZZ_CHECK(d->msg[0] != '\0');
    FUZZ_CHECK(d->line >= 0 && d->column >= 0);
    if (d->line == 0 || !text)
        return;
    const char *l = text;
    for (int i = 1; i < d->line; i++) {
        l = strchr(l, '\n');
        FUZZ_CHECK(l != NULL);
        l++;
    }
    size_t len = strcspn(l, "\n");
    FUZZ_CHECK((size_t)d->column <= len + 1);
}

/* The hardware table, loaded once. */
static inline const bt_gpudb *fuzz_gpudb(void)
{
    static bt_gpudb *db;
    if (!db) {
        bt_diag d = {0};
        FUZZ_CHECK(bt_gpudb_load_default(&db, &d) == BT_OK && bt_gpudb_count(db) > 0);
    }
    return db;
}

/* Plans config c of k (the default problem) on GPU `which` of the table, and writes the plan. */
static inline void fuzz_plan_one(const bt_kdesc *k, const bt_config *c, unsigned which)
{
    static FILE *devnull;
    if (!devnull)
        FUZZ_CHECK((devnull = fopen("/dev/null", "w")) != NULL);
    const bt_gpudb *db = fuzz_gpudb();
    const bt_gpu *gpu = bt_gpudb_at(db, which % bt_gpudb_count(db));
    bt_problem *p = NULL;
    if (bt_problem_create(k, &p) != BT_OK)
        return;
    bt_plan_options o = {.only = c};
    bt_plan *plan = NULL;
    bt_diag d = {0};
    bt_status st = bt_plan_create(k, p, gpu, &o, &plan, &d);
    if (st == BT_OK) {
        FUZZ_CHECK(bt_plan_write_json(plan, devnull) == BT_OK);
        FUZZ_CHECK(bt_plan_write_table(plan, devnull, 0) == BT_OK);
        bt_plan_destroy(plan);
    } else {
        FUZZ_CHECK(plan == NULL && st != BT_INTERNAL);
    }
    bt_problem_destroy(p);
}

/* Config i of k formatted as "--config" text parses back to the same values. */
static inline void fuzz_config_roundtrip(const bt_kdesc *k, const bt_config *c)
{
    char text[BT_MAX_PARAMS * (BT_NAME_MAX + 24)];
    bt__config_format(&k->space, c, ", ", text, sizeof text);
    bt_config back;
    bt_diag d = {0};
    bt_status st = bt__kdesc_parse_config(k, text, &back, &d);
    if (st != BT_OK) {
        fprintf(stderr, "config '%s' does not parse back: %s\n", text, d.msg);
        abort();
    }
    FUZZ_CHECK(back.nparams == c->nparams);
    FUZZ_CHECK(!memcmp(back.v, c->v, sizeof(int64_t) * (size_t)c->nparams));
}

#endif
