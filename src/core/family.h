/* SPDX-License-Identifier: Apache-2.0 */
/*
 * family.h — kernel families (internal): a spec whose "families" list names other built-in specs
 * (and itself) that compute the same thing, so that one name (`gemm`) is the front door to all of
 * them and the choice of family is one more tunable. The loader (spec_family.c) checks at load
 * time that every family has the front door's problem variables and buffer arguments (same
 * names, roles, element types and sizes; any other buffer of a family is a self-cleaning
 * workspace) and the same reference, with file:line:column errors at the family's entry; the
 * family plan (famplan.c) plans each family with the model, rules out those that cannot run or
 * cannot win, with reasons, and splits a measurement budget over the rest. docs/spec.md#families.
 */
#ifndef BT_CORE_FAMILY_H
#define BT_CORE_FAMILY_H

#include "core/kdesc.h"
#include "core/plan.h"

#include <stdio.h>

#define BT__MAX_FAMILIES 8

struct bt__kfamily {
    char name[BT_NAME_MAX];
    bt_kdesc *k;     /* the family's own spec (the front door itself when self) */
    bool self;       /* the front door's own source and space */
    bool unit_set;   /* "unit": how its sources compute where the spec's model says otherwise */
    bt__compute_unit unit;
    bt__kexpr when;  /* over the front door's symbols; NULL: always */
    int pmap[BT__MAX_PROBLEM]; /* family problem variable i <- front door's index; -1: default */
    int amap[BT__MAX_ARGS];    /* family argument i <- front door's argument; -1: its own */
};

/* Family f of k's problem for front-door problem p: shared variables by name, the family's
 * defaults for the rest, the same dtype. */
void bt__family_problem(const bt_kdesc *k, int f, const bt_problem *p, bt_problem *out);
/* The family index of k by name (case-insensitive), -1 when none. */
int bt__family_find(const bt_kdesc *k, const char *name);

/* Why a family is not measured for a problem. */
typedef enum bt__fam_verdict {
    BT__FAM_RUN = 0,     /* planned and worth measuring */
    BT__FAM_NO_SOURCE,   /* no source in a language the backend compiles */
    BT__FAM_DTYPE,       /* the problem's dtype is not one of the family's */
    BT__FAM_WHEN,        /* its "when" condition is false for the problem */
    BT__FAM_NO_CONFIG,   /* the model leaves no valid config (target, layout, size rules) */
    BT__FAM_CANNOT_WIN,  /* its floor or best prediction is beyond another family's best */
} bt__fam_verdict;

typedef struct bt__famplan_entry {
    int fam;
    const bt_kdesc *k;
    bt_problem problem; /* the family's problem */
    bt_plan *plan;      /* NULL when not planned (no source, dtype, when) */
    bt__fam_verdict verdict;
    char why[400];
    double best_us;     /* the model's best prediction (by_floor: the roofline floor, for a family
                           that ranks by its own perf expression), at least its unit's floor */
    bool by_floor;
    size_t budget;      /* measurements given to it (0: no bound) */
} bt__famplan_entry;

typedef struct bt__famplan {
    const bt_kdesc *k;
    int n;
    bt__famplan_entry e[BT__MAX_FAMILIES];
    int best; /* entry with the best prediction among those that run; -1 when none runs */
} bt__famplan;

/* Plans every family of front door k for problem p on gpu g: langs (NULL-terminated, NULL: any)
 * are the languages the device's backend compiles. Families that cannot run or cannot win get a
 * verdict and a reason; the plans of the others are kept (freed by bt__famplan_free). */
bt_status bt__famplan_create(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                             const char *const *langs, const bt_plan_options *po,
                             bt__famplan **out, bt_diag *diag);
void bt__famplan_free(bt__famplan *fp);
/* Family f of front door k alone at p: its verdict (no "cannot win": that compares families) and
 * its plan when it runs, into *e (the plan freed with bt_plan_destroy(e->plan)). */
bt_status bt__famplan_family(const bt_kdesc *k, int f, const bt_problem *p, const bt_gpu *g,
                             const char *const *langs, const bt_plan_options *po,
                             bt__famplan_entry *e, bt_diag *diag);
/* Splits `total` measurements (0: no bound, every family unbounded) over the families that run,
 * in proportion to how close each one's best prediction is to the best family's (the best gets
 * the largest share), at least min(4, its valid configs) each. */
void bt__famplan_budget(bt__famplan *fp, size_t total);
/* The "Families" section of a plan report (text). */
void bt__famplan_write(const bt__famplan *fp, FILE *f);
/* Number of families that run. */
int bt__famplan_running(const bt__famplan *fp);

#endif
