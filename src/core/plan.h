/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan.h — the planner's result object (internal view of bt_plan), shared by the writers, the
 * engine (exact counts, and the tuner, which starts from a plan) and the tests.
 */
#ifndef BT_CORE_PLAN_H
#define BT_CORE_PLAN_H

#include "core/model.h"

#include <jansson.h>

struct bt_plan {
    const bt_kdesc *k;
    bt_problem problem;
    bt_gpu gpu;
    uint32_t rules;
    char rules_name[64];
    bt__model model;
    uint64_t total;
    bt__cfg_eval *cand; /* valid, sorted by predicted time */
    size_t ncand;
    bt__cfg_eval *elim; /* eliminated, in enumeration order */
    size_t nelim;
    size_t elim_dropped; /* eliminated beyond the kept maximum (counted only) */
    size_t broken_count[32];
    bool only, in_space;
    bool exact;
    char exact_compiler[32], exact_target[32]; /* "NVRTC", "sm_90a" */
    int exact_compiled, exact_cached, exact_failed;
    double exact_seconds;
    double seconds;
};

/* The model's plan of k for problem p on gpu (bt_plan_create without opts->exact, which this
 * ignores: the public bt_plan_create in engine/exact.c adds the compiler's counts). */
bt_status bt__plan_model(const bt_kdesc *k, const bt_problem *p, const bt_gpu *gpu,
                         const bt_plan_options *opts, bt_plan **out, bt_diag *diag);
/* The text report of one spec's plan (bt_plan_write_table, in famplan.c, adds a front door's
 * families after it). */
bt_status bt__plan_write_table_own(const bt_plan *pl, FILE *f, int all);
/* After the exact counts (x_ fields) are in: a candidate no block of which fits on an SM by the
 * compiler's registers and shared memory (not the model's estimate) cannot launch, and moves to
 * the eliminated configs saying so (rule fits_sm, when the plan's rules have it). */
bt_status bt__plan_drop_unfit(bt_plan *pl);

/* The plan as JSON (docs/plan-json.md); caller decrefs. */
json_t *bt__plan_to_json(const bt_plan *pl);

#endif
