/*
 * plan.h — the planner's result object (internal view of bt_plan), shared by the writers, the
 * tuner (which starts from a plan) and the tests.
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
    int exact_compiled, exact_cached, exact_failed;
    double exact_seconds;
    double seconds;
};

/* plan --exact (engine/exact.c): compiles every candidate with NVRTC for the plan's GPU and fills
 * the x_ fields. BT_NO_BACKEND without NVRTC, BT_UNSUPPORTED for a kernel without CUDA source or a
 * GPU without a compute capability. */
bt_status bt__plan_exact(bt_plan *pl, bt_diag *diag);

/* The plan as JSON (docs/plan-json.md); caller decrefs. */
json_t *bt__plan_to_json(const bt_plan *pl);

#endif
