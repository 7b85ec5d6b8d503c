/* SPDX-License-Identifier: Apache-2.0 */
/*
 * famplan.c — the plan of a front door's families (core/family.h): each family's problem, the
 * families that cannot run (no source for the backend, the dtype, a false "when", no valid config
 * by the model's rules: the target, the layout, the size) and those that cannot win (the floor of
 * the unit its sources compute on, or its best prediction, beyond the model's error band of
 * another family's best prediction), with reasons; the plans of the others; the split of a
 * measurement budget over them; and the "Families" section of the plan report (bt_plan_write_table:
 * plan.c's report of the spec's own plan, then this section for a front door).
 */
#include "core/family.h"

#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How far the model's best prediction may be from a measurement (docs/model.md: ranks, not
 * times): a family predicted more than this many times slower than the best one is not measured. */
#define BT__FAM_MODEL_BAND 4.0

void bt__famplan_free(bt__famplan *fp)
{
    if (!fp)
        return;
    for (int i = 0; i < fp->n; i++)
        bt_plan_destroy(fp->e[i].plan);
    free(fp);
}

int bt__famplan_running(const bt__famplan *fp)
{
    int n = 0;
    for (int i = 0; fp && i < fp->n; i++)
        n += fp->e[i].verdict == BT__FAM_RUN;
    return n;
}

static bool has_language(const bt_kdesc *k, const char *const *langs)
{
    for (const char *const *l = langs; l && *l; l++)
        if (bt__kdesc_source(k, *l))
            return true;
    return !langs;
}

/* The first reason line of the plan's first eliminated config, and how many of the kept
 * eliminated configs share it. */
static void no_config_reason(const bt_plan *pl, char *why, size_t n)
{
    if (!pl->nelim || !pl->elim[0].reasons) {
        snprintf(why, n, "no config in its space");
        return;
    }
    char line[300];
    snprintf(line, sizeof line, "%s", pl->elim[0].reasons);
    line[strcspn(line, "\n")] = '\0';
    size_t same = 0;
    for (size_t i = 0; i < pl->nelim; i++)
        same += pl->elim[i].reasons && strstr(pl->elim[i].reasons, line) != NULL;
    snprintf(why, n, "no valid config of %llu: %s (%s)", (unsigned long long)pl->total, line,
             same == pl->nelim && !pl->elim_dropped ? "every one" : "the first; see plan NAME");
}

/* Plans family f, or says why it cannot run. */
static bt_status plan_one(const bt_kdesc *k, int f, const bt_problem *p, const bt_gpu *g,
                          const char *const *langs, const bt_plan_options *po,
                          bt__famplan_entry *e, bt_diag *diag)
{
    const bt__kfamily *F = &k->fam[f];
    const bt_kdesc *fk = F->k;
    e->fam = f;
    e->k = fk;
    bt__family_problem(k, f, p, &e->problem);
    bool dtype_ok = false;
    for (int i = 0; i < fk->ndtypes; i++)
        dtype_ok |= fk->dtypes[i] == p->dtype;
    int64_t slots[BT__STACK_SLOTS], yes = 1;
    if (!has_language(fk, langs)) {
        e->verdict = BT__FAM_NO_SOURCE;
        snprintf(e->why, sizeof e->why, "no source the backend compiles (it has: %s%s%s)",
                 fk->nsrc ? fk->src[0].lang : "none", fk->nsrc > 1 ? ", " : "",
                 fk->nsrc > 1 ? fk->src[1].lang : "");
        return BT_OK;
    }
    if (!dtype_ok) {
        e->verdict = BT__FAM_DTYPE;
        snprintf(e->why, sizeof e->why, "takes %s%s%s, not %s", bt__dtype_name(fk->dtypes[0]),
                 fk->ndtypes > 1 ? " and " : "", fk->ndtypes > 1 ? bt__dtype_name(fk->dtypes[1]) : "",
                 bt__dtype_name(p->dtype));
        return BT_OK;
    }
    if (F->when.e) {
        bt_status st = bt__kdesc_stack_slots(k, NULL, p, g, slots);
        if (!st)
            st = bt__kexpr_eval(k, &F->when, slots, &yes, diag);
        if (st)
            return st;
        if (!yes) {
            e->verdict = BT__FAM_WHEN;
            snprintf(e->why, sizeof e->why, "its condition (%s) is false for this problem",
                     F->when.field);
            return BT_OK;
        }
    }
    bt_plan_options own = {0};
    bt_status st = bt__plan_model(fk, &e->problem, g, F->self ? po : &own, &e->plan, diag);
    if (st)
        return st;
    if (!e->plan->ncand) {
        e->verdict = BT__FAM_NO_CONFIG;
        no_config_reason(e->plan, e->why, sizeof e->why);
        return BT_OK;
    }
    return BT_OK;
}

/* The floor of family e's problem on the unit its sources compute on ("unit"), in us; 0 when the
 * family names none. */
static double unit_floor(const bt_kdesc *k, const bt__famplan_entry *e, const bt_gpu *g,
                         const char **peak_name, double *peak)
{
    const bt__kfamily *F = &k->fam[e->fam];
    if (!F->unit_set || !e->plan)
        return 0;
    const bt__roofline *r = &e->plan->model.roof;
    *peak = bt__peak_for(g, e->problem.dtype, F->unit, false, peak_name);
    double t_c = *peak > 0 ? r->flops / (*peak * 1e12) * 1e6 : 0;
    double t_m = r->bw_gbps > 0 ? r->bytes / (r->bw_gbps * 1e9) * 1e6 : 0;
    return t_c > t_m ? t_c : t_m;
}

/* The prediction that compares across families: the model's best time, or, for a family that
 * ranks by its own perf expression (not a time), its roofline floor; at least the floor of the
 * unit its sources compute on. *floor_us gets that unit floor (0: none). */
static void comparable(const bt__famplan *fp, bt__famplan_entry *e, const bt_gpu *g,
                       double *floor_us, const char **pn, double *peak)
{
    e->by_floor = e->k->perf.e != NULL;
    e->best_us = e->by_floor ? e->plan->model.roof.floor_us : e->plan->cand[0].pred_us;
    *floor_us = unit_floor(fp->k, e, g, pn, peak);
    if (*floor_us > e->best_us)
        e->best_us = *floor_us;
}

/* The unit family e's sources compute on: the family entry's "unit", else its spec model's. */
static bt__compute_unit unit_of(const bt__famplan *fp, const bt__famplan_entry *e)
{
    const bt__kfamily *F = &fp->k->fam[e->fam];
    return F->unit_set ? F->unit : e->k->unit;
}

/* A running family that computes 16-bit data on the tensor cores of this GPU (-1: none). */
static int tensor_family(const bt__famplan *fp, const bt_gpu *g)
{
    bt__dtype t = fp->n ? fp->e[0].problem.dtype : BT__DT_FP32;
    if (t != BT__DT_FP16 && t != BT__DT_BF16)
        return -1;
    const char *name;
    double tc = bt__peak_for(g, t, BT__UNIT_TENSOR, false, &name),
           simt = bt__peak_for(g, t, BT__UNIT_SIMT, false, &name);
    for (int i = 0; tc > simt && i < fp->n; i++)
        if (fp->e[i].verdict == BT__FAM_RUN && unit_of(fp, &fp->e[i]) == BT__UNIT_TENSOR)
            return i;
    return -1;
}

/* Families that cannot win: one on CUDA cores for 16-bit data that a tensor-core family runs too
 * (the same loads and stores, a fraction of the math: what its prediction misses when launch and
 * memory bound both), then a unit floor above, or a prediction beyond the model's band of, the
 * best prediction of a family that the model predicts (a floor never rules out another family). */
static void prune(bt__famplan *fp, const bt_gpu *g)
{
    double fl[BT__MAX_FAMILIES] = {0}, peak[BT__MAX_FAMILIES] = {0};
    const char *pn[BT__MAX_FAMILIES] = {0};
    int ref = -1, tcf = tensor_family(fp, g);
    fp->best = -1;
    for (int i = 0; i < fp->n; i++) {
        bt__famplan_entry *e = &fp->e[i];
        if (e->verdict != BT__FAM_RUN)
            continue;
        comparable(fp, e, g, &fl[i], &pn[i], &peak[i]);
        if (tcf >= 0 && unit_of(fp, e) == BT__UNIT_SIMT) {
            const char *unused;
            e->verdict = BT__FAM_CANNOT_WIN;
            snprintf(e->why, sizeof e->why, "cannot win: %s on CUDA cores, where %s computes it "
                     "on tensor cores (%.0f against %.0f TFLOP/s)",
                     bt__dtype_name(e->problem.dtype), fp->e[tcf].k->name,
                     bt__peak_for(g, e->problem.dtype, BT__UNIT_SIMT, false, &unused),
                     bt__peak_for(g, e->problem.dtype, BT__UNIT_TENSOR, false, &unused));
            continue;
        }
        if (!e->by_floor && (ref < 0 || e->best_us < fp->e[ref].best_us))
            ref = i;
    }
    for (int i = 0; ref >= 0 && i < fp->n; i++) {
        bt__famplan_entry *e = &fp->e[i];
        const bt__famplan_entry *b = &fp->e[ref];
        if (e->verdict != BT__FAM_RUN || i == ref)
            continue;
        if (fl[i] > b->best_us) {
            e->verdict = BT__FAM_CANNOT_WIN;
            snprintf(e->why, sizeof e->why, "cannot win: on %s its floor is %.2f us (the %s "
                     "peak, %.1f TFLOP/s), above %s's best prediction %.2f us",
                     fp->k->fam[e->fam].unit == BT__UNIT_SIMT ? "CUDA cores" : "tensor cores",
                     fl[i], pn[i], peak[i], b->k->name, b->best_us);
        } else if (!e->by_floor && e->best_us > BT__FAM_MODEL_BAND * b->best_us) {
            e->verdict = BT__FAM_CANNOT_WIN;
            snprintf(e->why, sizeof e->why, "cannot win: best prediction %.2f us is %.1fx "
                     "%s's %.2f us (beyond the model's %.0fx band)", e->best_us,
                     e->best_us / b->best_us, b->k->name, b->best_us, BT__FAM_MODEL_BAND);
        }
    }
    for (int i = 0; i < fp->n; i++)
        if (fp->e[i].verdict == BT__FAM_RUN &&
            (fp->best < 0 || fp->e[i].best_us < fp->e[fp->best].best_us))
            fp->best = i;
}

bt_status bt__famplan_create(const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                             const char *const *langs, const bt_plan_options *po,
                             bt__famplan **out, bt_diag *diag)
{
    *out = NULL;
    if (!k->nfam)
        return BT_INVALID_ARG;
    bt__famplan *fp = calloc(1, sizeof *fp);
    if (!fp)
        return BT_NOMEM;
    fp->k = k;
    fp->best = -1;
    for (int f = 0; f < k->nfam; f++) {
        fp->n = f + 1;
        bt_status st = plan_one(k, f, p, g, langs, po, &fp->e[f], diag);
        if (st) {
            bt__famplan_free(fp);
            return st;
        }
    }
    prune(fp, g);
    *out = fp;
    return BT_OK;
}

bt_status bt__famplan_family(const bt_kdesc *k, int f, const bt_problem *p, const bt_gpu *g,
                             const char *const *langs, const bt_plan_options *po,
                             bt__famplan_entry *e, bt_diag *diag)
{
    memset(e, 0, sizeof *e);
    if (f < 0 || f >= k->nfam) {
        bt__diag_set(diag, "'%s' has no family %d", k->name, f);
        return BT_INVALID_ARG;
    }
    bt_status st = plan_one(k, f, p, g, langs, po, e, diag);
    if (st) {
        bt_plan_destroy(e->plan);
        e->plan = NULL;
    }
    return st;
}

void bt__famplan_budget(bt__famplan *fp, size_t total)
{
    double wsum = 0;
    for (int i = 0; i < fp->n; i++)
        if (fp->e[i].verdict == BT__FAM_RUN)
            wsum += fp->e[fp->best].best_us / fp->e[i].best_us;
    for (int i = 0; i < fp->n; i++) {
        bt__famplan_entry *e = &fp->e[i];
        e->budget = 0;
        if (e->verdict != BT__FAM_RUN || !total)
            continue;
        size_t share = (size_t)floor((double)total * (fp->e[fp->best].best_us / e->best_us) / wsum);
        size_t lo = e->plan->ncand < 4 ? e->plan->ncand : 4;
        e->budget = share < lo ? lo : share > e->plan->ncand ? e->plan->ncand : share;
    }
}

static const char *verdict_name(bt__fam_verdict v)
{
    static const char *const n[] = {"measure", "no source", "dtype", "condition", "no config",
                                    "cannot win"};
    return n[v];
}

void bt__famplan_write(const bt__famplan *fp, FILE *f)
{
    fprintf(f, "\nFamilies of %s (%d; the choice of family is one more tunable):\n", fp->k->name,
            fp->n);
    fprintf(f, "  %-20s %-11s %10s %8s %15s\n", "family", "verdict", "configs", "valid",
            "best pred");
    /* ">=": the family ranks by its own perf expression; its roofline floor is compared */
    for (int i = 0; i < fp->n; i++) {
        const bt__famplan_entry *e = &fp->e[i];
        char best[32] = "-", total[24] = "-", valid[24] = "-";
        if (e->plan) {
            snprintf(total, sizeof total, "%llu", (unsigned long long)e->plan->total);
            snprintf(valid, sizeof valid, "%zu", e->plan->ncand);
        }
        if (e->plan && e->plan->ncand && e->best_us > 0)
            snprintf(best, sizeof best, "%s%.2f us", e->by_floor ? ">= " : "", e->best_us);
        fprintf(f, "  %-20s %-11s %10s %8s %15s%s\n", e->k->name, verdict_name(e->verdict), total,
                valid, best, i == fp->best ? "  <- best predicted" : "");
        if (e->verdict != BT__FAM_RUN)
            fprintf(f, "      %s\n", e->why);
    }
}

bt_status bt_plan_write_table(const bt_plan *pl, FILE *f, int all)
{
    bt_status st = bt__plan_write_table_own(pl, f, all);
    if (st || !pl->k->nfam || pl->only)
        return st;
    bt__famplan *fp = NULL; /* a front door: its families, each planned on its own */
    bt_plan_options po = {.rules = pl->rules_name};
    bt_diag d;
    if (bt__famplan_create(pl->k, &pl->problem, &pl->gpu, NULL, &po, &fp, &d) == BT_OK)
        bt__famplan_write(fp, f);
    else
        fprintf(f, "\nFamilies of %s: not planned (%s)\n", pl->k->name, d.msg);
    bt__famplan_free(fp);
    return ferror(f) ? BT_IO : BT_OK;
}
