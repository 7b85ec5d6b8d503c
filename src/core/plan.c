/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plan.c — the planner: runs the model over a kernel's whole space for a GPU with no device, ranks
 * the valid configs by predicted time, keeps every eliminated config with all its reasons, and
 * writes its report (tile size analysis table, eliminated configs, roofline,
 * recommendation) as text, JSON (docs/plan-json.md) or CSV. The compiler's exact counts
 * (plan --exact) come from the engine (engine/exact.c: bt_plan_create), which compiles through a
 * backend; this file only shows them and drops what they prove cannot launch.
 */
#include "core/plan.h"

#include "core/util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Eliminated configs beyond this many are counted, not kept (a 10^7 space stays in memory). */
#define BT__MAX_KEPT_ELIMINATED 200000

static int cmp_pred(const void *a, const void *b)
{
    const bt__cfg_eval *x = a, *y = b;
    if (x->pred_us < y->pred_us)
        return -1;
    if (x->pred_us > y->pred_us)
        return 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static bt_status push(bt__cfg_eval **arr, size_t *n, size_t *cap, const bt__cfg_eval *ev)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        bt__cfg_eval *na = realloc(*arr, nc * sizeof *na);
        if (!na)
            return BT_NOMEM;
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = *ev;
    return BT_OK;
}

static int cmp_index(const void *a, const void *b)
{
    const bt__cfg_eval *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

bt_status bt__plan_drop_unfit(bt_plan *pl)
{
    if (!(pl->rules & (1u << BT__RULE_FITS_SM)))
        return BT_OK;
    size_t keep = 0, cap = pl->nelim;
    for (size_t i = 0; i < pl->ncand; i++) {
        bt__cfg_eval ev = pl->cand[i];
        if (!ev.exact || ev.x_blocks > 0) {
            pl->cand[keep++] = ev;
            continue;
        }
        bt__cfg_eval_reason(&ev, 1u << BT__RULE_FITS_SM,
                            "no block fits on an SM: %d registers x %lld threads, %lld B shared "
                            "memory (exact counts from %s for %s; the limit: %s) (fits_sm)",
                            ev.x_regs, (long long)ev.threads, (long long)ev.x_smem,
                            pl->exact_compiler, pl->exact_target,
                            ev.x_limiter ? ev.x_limiter : "?");
        pl->broken_count[BT__RULE_FITS_SM]++;
        if (pl->nelim >= BT__MAX_KEPT_ELIMINATED) {
            pl->elim_dropped++;
            bt__cfg_eval_clear(&ev);
            continue;
        }
        bt_status st = push(&pl->elim, &pl->nelim, &cap, &ev);
        if (st) {
            bt__cfg_eval_clear(&ev);
            pl->ncand = keep + (pl->ncand - i - 1);
            memmove(&pl->cand[keep], &pl->cand[i + 1], sizeof *pl->cand * (pl->ncand - keep));
            return st;
        }
    }
    pl->ncand = keep;
    if (pl->nelim > 1)
        qsort(pl->elim, pl->nelim, sizeof *pl->elim, cmp_index); /* enumeration order */
    return BT_OK;
}

bt_status bt__plan_model(const bt_kdesc *k, const bt_problem *p, const bt_gpu *gpu,
                         const bt_plan_options *opts, bt_plan **out, bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    if (!k || !p || !gpu)
        return BT_INVALID_ARG;
    bt__diag_clear(diag);
    bt_plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return BT_NOMEM;
    pl->k = k;
    pl->problem = *p;
    pl->gpu = *gpu;
    pl->rules = k->rules;
    snprintf(pl->rules_name, sizeof pl->rules_name, "%s", k->rules_name);
    if (opts && opts->rules) {
        if (!bt__rules_parse(opts->rules, &pl->rules, diag)) {
            free(pl);
            return BT_INVALID_ARG;
        }
        snprintf(pl->rules_name, sizeof pl->rules_name, "%s", opts->rules);
    }
    bt_status st = bt__model_init(&pl->model, k, &pl->problem, &pl->gpu, pl->rules, diag);
    if (st) {
        bt__model_fini(&pl->model);
        free(pl);
        return st;
    }
    size_t ccap = 0, ecap = 0;
    double t0 = bt__now();
    if (opts && opts->only) {
        pl->only = true;
        bt__cfg_eval ev;
        bt__model_eval(&pl->model, opts->only, &ev);
        uint64_t idx;
        ev.index = UINT64_MAX;
        if (!k->configs && bt__space_index_of(&k->space, opts->only, &idx))
            ev.index = idx;
        pl->in_space = ev.index != UINT64_MAX;
        for (size_t i = 0; !pl->in_space && k->configs && i < k->nconfigs; i++)
            pl->in_space = !memcmp(k->configs[i].v, opts->only->v, sizeof(int64_t) * (size_t)k->space.nparams);
        pl->total = 1;
        st = push(ev.valid ? &pl->cand : &pl->elim, ev.valid ? &pl->ncand : &pl->nelim,
                  ev.valid ? &ccap : &ecap, &ev);
        if (st)
            bt__cfg_eval_clear(&ev);
    } else {
        pl->total = bt__kdesc_count(k);
        for (uint64_t i = 0; i < pl->total && st == BT_OK; i++) {
            bt_config c;
            bt__kdesc_config_at(k, i, &c);
            bt__cfg_eval ev;
            bt__model_eval(&pl->model, &c, &ev);
            ev.index = i;
            for (int r = 0; r < 32; r++)
                if (ev.broken & (1u << r))
                    pl->broken_count[r]++;
            if (ev.valid)
                st = push(&pl->cand, &pl->ncand, &ccap, &ev);
            else if (pl->nelim < BT__MAX_KEPT_ELIMINATED)
                st = push(&pl->elim, &pl->nelim, &ecap, &ev);
            else {
                pl->elim_dropped++;
                bt__cfg_eval_clear(&ev);
                continue;
            }
            if (st)
                bt__cfg_eval_clear(&ev);
        }
    }
    pl->seconds = bt__now() - t0;
    if (st) {
        bt_plan_destroy(pl);
        return st;
    }
    if (pl->ncand > 1)
        qsort(pl->cand, pl->ncand, sizeof *pl->cand, cmp_pred);
    *out = pl;
    return BT_OK;
}

void bt_plan_destroy(bt_plan *pl)
{
    if (!pl)
        return;
    for (size_t i = 0; i < pl->nelim; i++)
        bt__cfg_eval_clear(&pl->elim[i]);
    for (size_t i = 0; i < pl->ncand; i++)
        bt__cfg_eval_clear(&pl->cand[i]);
    free(pl->elim);
    free(pl->cand);
    bt__model_fini(&pl->model);
    free(pl);
}

/* ---------------------------------------------------------------------------------------------
 * Shared formatting
 * ------------------------------------------------------------------------------------------- */
static const char *human_bytes(double b, char *buf, size_t n)
{
    if (b >= 1 << 30)
        snprintf(buf, n, "%.1f GiB", b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, n, "%.1f MiB", b / (1 << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", b / 1024);
    else
        snprintf(buf, n, "%.0f B", b);
    return buf;
}

static void tile_eff_text(const bt_plan *pl, const bt__cfg_eval *ev, char *buf, size_t n)
{
    const bt_kdesc *k = pl->k;
    size_t o = 0;
    buf[0] = '\0';
    if (ev->ntiles == 0) {
        snprintf(buf, n, "-");
        return;
    }
    for (int t = 0; t < ev->ntiles && o < n; t++) {
        int w = snprintf(buf + o, n - o, "%s%s:%.2f", t ? " " : "",
                         k->problem_names[k->tiles[t].dim_slot - k->slot_problem0],
                         ev->last_tile_eff[t]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
}

/* How many of the ranked candidates are worth measuring: those predicted within 1.5x of the best,
 * at least 3 (or all), at most 8. */
static size_t worth_measuring(const bt_plan *pl)
{
    if (pl->ncand == 0)
        return 0;
    size_t n = 0;
    double best = pl->cand[0].pred_us;
    while (n < pl->ncand && n < 8 && pl->cand[n].pred_us <= best * 1.5)
        n++;
    if (n < 3)
        n = pl->ncand < 3 ? pl->ncand : 3;
    return n;
}

static void problem_text(const bt_plan *pl, char *buf, size_t n)
{
    const bt_kdesc *k = pl->k;
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < k->nproblem && o < n; i++) {
        int w = snprintf(buf + o, n - o, "%s%s=%lld", i ? " " : "", k->problem_names[i],
                         (long long)pl->problem.values[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
    if (o < n)
        snprintf(buf + o, n - o, "%sdtype=%s", o ? " " : "", bt__dtype_name(pl->problem.dtype));
}

/* ---------------------------------------------------------------------------------------------
 * Text
 * ------------------------------------------------------------------------------------------- */
/* The first lines: kernel, GPU and problem; the space; the exact compile; the roofline. */
static void write_head(const bt_plan *pl, FILE *f)
{
    const bt_kdesc *k = pl->k;
    const bt_gpu *g = &pl->gpu;
    const bt__roofline *r = &pl->model.roof;
    char prob[256], b1[32];
    problem_text(pl, prob, sizeof prob);
    fprintf(f, "blocktune plan: %s on %s (%s, sm_%d%d, %d SMs), %s\n", k->name, g->name, g->arch,
            g->cc_major, g->cc_minor, g->sm_count, prob);
    fprintf(f, "rules: %s   space: %llu configs, %zu valid, %zu eliminated   (model: %.3f s, no device)\n\n",
            pl->rules_name, (unsigned long long)pl->total, pl->ncand, pl->nelim + pl->elim_dropped,
            pl->seconds);
    if (pl->only && !pl->in_space)
        fprintf(f, "note: this config is not in the kernel's space; evaluated as given.\n\n");
    if (pl->exact) {
        size_t dis = 0;
        for (size_t i = 0; i < pl->ncand; i++)
            dis += pl->cand[i].x_disagrees;
        fprintf(f, "exact: %d compiled with %s for %s, %d from the cache, %d failed, in %.2f s; "
                   "the estimate disagrees with the compiler on %zu of %zu\n\n",
                pl->exact_compiled, pl->exact_compiler, pl->exact_target, pl->exact_cached,
                pl->exact_failed, pl->exact_seconds, dis, pl->ncand);
    }

    /* roofline */
    fprintf(f, "Roofline\n");
    fprintf(f, "  FLOPs %.4g, bytes %s (%.4g), intensity %.2f FLOP/B\n", r->flops,
            human_bytes(r->bytes, b1, sizeof b1), r->bytes, r->intensity);
    fprintf(f, "  peak %.1f TFLOP/s (%s), bandwidth %.0f GB/s, ridge %.1f FLOP/B -> %s-bound\n",
            r->peak_tflops, r->peak_name, r->bw_gbps, r->ridge,
            r->memory_bound ? "memory" : "compute");
    fprintf(f, "  time floor %.2f us (max of FLOPs/peak and bytes/bandwidth)\n\n", r->floor_us);
}

/* The valid configs ranked by predicted time (the first 30 unless all), with their exact counts
 * and warnings. */
static void write_candidates(const bt_plan *pl, FILE *f, int all)
{
    char b1[32];
    size_t show = pl->ncand;
    if (!all && show > 30)
        show = 30;
    int cw = 20;
    for (size_t i = 0; i < show; i++) {
        char cfg[256];
        bt__config_format(&pl->k->space, &pl->cand[i].cfg, " ", cfg, sizeof cfg);
        if ((int)strlen(cfg) > cw)
            cw = (int)strlen(cfg);
    }
    fprintf(f, "Candidates (ranked by predicted time)\n");
    fprintf(f, "  %4s  %-*s %10s %5s %6s %5s %-14s %7s %11s %6s %-16s %5s %3s %9s\n", "rank", cw, "config",
            "smem", "regs", "blk/SM", "occ", "limiter", "grid", "waves(fill)", "tile%", "last tile", "vec",
            "TC", "pred us");
    for (size_t i = 0; i < show; i++) {
        const bt__cfg_eval *ev = &pl->cand[i];
        char cfg[256], te[96], wv[32];
        bt__config_format(&pl->k->space, &ev->cfg, " ", cfg, sizeof cfg);
        tile_eff_text(pl, ev, te, sizeof te);
        snprintf(wv, sizeof wv, "%lld(%.0f%%)", (long long)ev->waves, ev->last_wave_fill * 100);
        fprintf(f, "  %4zu  %-*s %10s %5lld %6lld %4.0f%% %-14s %7lld %11s %5.1f%% %-16s %5s %3s %9.2f\n",
                i + 1, cw, cfg, human_bytes((double)((ev->smem ? ev->smem : ev->dyn_smem)), b1, sizeof b1),
                (long long)ev->regs, (long long)ev->blocks_per_sm, ev->occupancy * 100, ev->limiter,
                (long long)ev->grid, wv, ev->tile_eff * 100, te,
                ev->vector_ok ? "16B" : "scalar", ev->tensor_core ? "yes" : "no", ev->pred_us);
        if (pl->exact && ev->exact)
            fprintf(f, "        exact (%s): %d regs, %lld B spills, %lld B smem, %lld B stack -> %d "
                       "blocks/SM (%s), occupancy %.0f%%%s\n",
                    pl->gpu.name, ev->x_regs, (long long)ev->x_spill, (long long)ev->x_smem,
                    (long long)ev->x_stack, ev->x_blocks, ev->x_limiter ? ev->x_limiter : "?",
                    ev->x_occ * 100, ev->x_disagrees ? "   <-- the estimate disagrees" : "");
        else if (pl->exact && ev->exact_failed)
            fprintf(f, "        exact: compile failed: %s\n", ev->x_error);
        for (int w = 0; w < ev->nwarnings; w++)
            fprintf(f, "        warning: %s\n", ev->warnings[w]);
    }
    if (show < pl->ncand)
        fprintf(f, "  ... %zu more (--all lists them)\n", pl->ncand - show);
    if (pl->ncand == 0)
        fprintf(f, "  (none: every config was eliminated)\n");
}

/* The eliminated configs: how many each rule broke, then each (the first 20 unless all) with
 * every reason. */
static void write_eliminated(const bt_plan *pl, FILE *f, int all)
{
    size_t ne = pl->nelim + pl->elim_dropped;
    fprintf(f, "\nEliminated: %zu config%s\n", ne, ne == 1 ? "" : "s");
    if (ne && !pl->only) {
        const char *sep = "";
        fprintf(f, "  by rule (a config may break several):");
        for (int rr = 0; rr < 32; rr++) {
            if (!pl->broken_count[rr])
                continue;
            const char *name = rr == 30 ? "constraints" : rr == 31 ? "evaluation errors"
                                                                    : bt__rule_name((bt__rule)rr);
            fprintf(f, "%s %s %zu", sep, name, pl->broken_count[rr]);
            sep = ",";
        }
        fputc('\n', f);
    }
    size_t eshow = pl->nelim;
    if (!all && eshow > 20)
        eshow = 20;
    for (size_t i = 0; i < eshow; i++) {
        const bt__cfg_eval *ev = &pl->elim[i];
        char cfg[256];
        bt__config_format(&pl->k->space, &ev->cfg, " ", cfg, sizeof cfg);
        fprintf(f, "  %s\n", cfg);
        const char *s = ev->reasons ? ev->reasons : "";
        while (*s) {
            const char *nl = strchr(s, '\n');
            int len = nl ? (int)(nl - s) : (int)strlen(s);
            fprintf(f, "      - %.*s\n", len, s);
            s += len + (nl ? 1 : 0);
        }
    }
    if (eshow < ne)
        fprintf(f, "  ... %zu more (--all lists them)\n", ne - eshow);
}

/* What to measure, and the advice of the roofline. */
static void write_advice(const bt_plan *pl, FILE *f)
{
    const bt__roofline *r = &pl->model.roof;
    fprintf(f, "\nRecommendation\n");
    if (pl->ncand == 0) {
        fprintf(f, "  Nothing to measure: widen the space or relax the rules (--rules).\n");
        return;
    }
    size_t w = worth_measuring(pl);
    const bt__cfg_eval *best = &pl->cand[0];
    fprintf(f, "  Measure these %zu (predicted within 1.5x of the best; the model ranks, only a\n"
               "  measurement decides):\n", w);
    for (size_t i = 0; i < w; i++) {
        char cfg[256];
        bt__config_format(&pl->k->space, &pl->cand[i].cfg, " ", cfg, sizeof cfg);
        fprintf(f, "    %s   (%.2f us predicted, %lld blocks/SM limited by %s)\n", cfg,
                pl->cand[i].pred_us, (long long)pl->cand[i].blocks_per_sm, pl->cand[i].limiter);
    }
    if (r->memory_bound)
        fprintf(f, "  The problem is memory-bound (%.2f < %.1f FLOP/B): the best a config can do is\n"
                   "  the bandwidth floor %.2f us; favour configs that keep enough warps per SM to\n"
                   "  hide memory latency (>= 4 blocks/SM or >= 25%% occupancy) and full 16-byte loads.\n",
                r->intensity, r->ridge, r->floor_us);
    else
        fprintf(f, "  The problem is compute-bound (%.1f >= %.1f FLOP/B): favour large tiles that feed\n"
                   "  the %s units (1-2 blocks/SM is fine), full waves and pipelined loads.\n",
                r->intensity, r->ridge, r->peak_name);
    fprintf(f, "  Best predicted: %.2f us = %.0f%% of the roofline floor%s.\n", best->pred_us,
            best->pred_us > 0 ? 100.0 * r->floor_us / best->pred_us : 0,
            best->nwarnings ? " (see its warnings)" : "");
}

bt_status bt__plan_write_table_own(const bt_plan *pl, FILE *f, int all)
{
    write_head(pl, f);
    write_candidates(pl, f, all);
    write_eliminated(pl, f, all);
    write_advice(pl, f);
    return ferror(f) ? BT_IO : BT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * JSON (schema in docs/plan-json.md)
 * ------------------------------------------------------------------------------------------- */
static json_t *eval_json(const bt_plan *pl, const bt__cfg_eval *ev, size_t rank)
{
    const bt_kdesc *k = pl->k;
    json_t *o = json_object();
    if (rank)
        json_object_set_new(o, "rank", json_integer((json_int_t)rank));
    json_object_set_new(o, "config", bt__config_to_json(&pl->k->space, &ev->cfg));
    json_object_set_new(o, "smem_bytes", json_integer((ev->smem ? ev->smem : ev->dyn_smem)));
    json_object_set_new(o, "regs_per_thread", json_integer(ev->regs));
    json_object_set_new(o, "accumulator_bytes", json_integer(ev->acc_bytes));
    json_object_set_new(o, "threads_per_block", json_integer(ev->threads));
    json_object_set_new(o, "blocks_per_sm", json_integer(ev->blocks_per_sm));
    json_t *lim = json_object();
    json_object_set_new(lim, "shared_memory", ev->by_smem >= 0 ? json_integer(ev->by_smem) : json_null());
    json_object_set_new(lim, "registers", ev->by_regs >= 0 ? json_integer(ev->by_regs) : json_null());
    json_object_set_new(lim, "threads", ev->by_threads >= 0 ? json_integer(ev->by_threads) : json_null());
    json_object_set_new(lim, "block_limit", ev->by_blocks >= 0 ? json_integer(ev->by_blocks) : json_null());
    json_object_set_new(o, "blocks_per_sm_by", lim);
    json_object_set_new(o, "limiter", json_string(ev->limiter));
    json_object_set_new(o, "occupancy", json_real(ev->occupancy));
    json_t *grid = json_array();
    for (int d = 0; d < 3; d++)
        json_array_append_new(grid, json_integer(ev->grid_dims[d]));
    json_object_set_new(o, "grid", grid);
    json_object_set_new(o, "grid_blocks", json_integer(ev->grid));
    json_object_set_new(o, "waves", json_integer(ev->waves));
    json_object_set_new(o, "last_wave_fill", json_real(ev->last_wave_fill));
    json_t *lte = json_object();
    for (int t = 0; t < ev->ntiles; t++)
        json_object_set_new(lte, k->problem_names[k->tiles[t].dim_slot - k->slot_problem0],
                            json_real(ev->last_tile_eff[t]));
    json_object_set_new(o, "last_tile_efficiency", lte);
    json_object_set_new(o, "tile_efficiency", json_real(ev->tile_eff));
    json_object_set_new(o, "vector_aligned", json_boolean(ev->vector_ok));
    json_object_set_new(o, "tensor_core", json_boolean(ev->tensor_core));
    json_object_set_new(o, "predicted_us", json_real(ev->pred_us));
    json_t *w = json_array();
    for (int i = 0; i < ev->nwarnings; i++)
        json_array_append_new(w, json_string(ev->warnings[i]));
    json_object_set_new(o, "warnings", w);
    if (ev->exact) {
        json_t *x = json_object();
        json_object_set_new(x, "regs_per_thread", json_integer(ev->x_regs));
        json_object_set_new(x, "spill_bytes", json_integer(ev->x_spill));
        json_object_set_new(x, "smem_bytes", json_integer(ev->x_smem));
        json_object_set_new(x, "stack_bytes", json_integer(ev->x_stack));
        json_object_set_new(x, "blocks_per_sm", json_integer(ev->x_blocks));
        json_object_set_new(x, "limiter", json_string(ev->x_limiter ? ev->x_limiter : ""));
        json_object_set_new(x, "occupancy", json_real(ev->x_occ));
        json_object_set_new(x, "estimate_disagrees", json_boolean(ev->x_disagrees));
        json_object_set_new(o, "exact", x);
    } else if (ev->exact_failed) {
        json_object_set_new(o, "exact", json_pack("{s:s}", "error", ev->x_error));
    }
    if (!ev->valid) {
        json_t *rs = json_array();
        const char *s = ev->reasons ? ev->reasons : "";
        while (*s) {
            const char *nl = strchr(s, '\n');
            size_t len = nl ? (size_t)(nl - s) : strlen(s);
            json_array_append_new(rs, json_stringn(s, len));
            s += len + (nl ? 1 : 0);
        }
        json_object_set_new(o, "reasons", rs);
    }
    return o;
}

json_t *bt__plan_to_json(const bt_plan *pl)
{
    const bt_kdesc *k = pl->k;
    const bt__roofline *r = &pl->model.roof;
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("blocktune-plan/1"));
    json_object_set_new(o, "kernel", json_string(k->name));
    json_object_set_new(o, "gpu", json_string(pl->gpu.name));
    json_object_set_new(o, "dtype", json_string(bt__dtype_name(pl->problem.dtype)));
    json_t *prob = json_object();
    for (int i = 0; i < k->nproblem; i++)
        json_object_set_new(prob, k->problem_names[i], json_integer(pl->problem.values[i]));
    json_object_set_new(o, "problem", prob);
    json_object_set_new(o, "rules", json_string(pl->rules_name));
    json_object_set_new(o, "space_size", json_integer((json_int_t)pl->total));
    json_t *rf = json_object();
    json_object_set_new(rf, "flops", json_real(r->flops));
    json_object_set_new(rf, "bytes", json_real(r->bytes));
    json_object_set_new(rf, "intensity", json_real(r->intensity));
    json_object_set_new(rf, "ridge", json_real(r->ridge));
    json_object_set_new(rf, "peak_tflops", json_real(r->peak_tflops));
    json_object_set_new(rf, "peak", json_string(r->peak_name));
    json_object_set_new(rf, "bandwidth_gbps", json_real(r->bw_gbps));
    json_object_set_new(rf, "bound", json_string(r->memory_bound ? "memory" : "compute"));
    json_object_set_new(rf, "floor_us", json_real(r->floor_us));
    json_object_set_new(o, "roofline", rf);
    json_t *c = json_array();
    for (size_t i = 0; i < pl->ncand; i++)
        json_array_append_new(c, eval_json(pl, &pl->cand[i], i + 1));
    json_object_set_new(o, "candidates", c);
    json_t *e = json_array();
    for (size_t i = 0; i < pl->nelim; i++)
        json_array_append_new(e, eval_json(pl, &pl->elim[i], 0));
    json_object_set_new(o, "eliminated", e);
    json_object_set_new(o, "eliminated_not_listed", json_integer((json_int_t)pl->elim_dropped));
    json_t *rec = json_array();
    size_t w = worth_measuring(pl);
    for (size_t i = 0; i < w; i++)
        json_array_append_new(rec, bt__config_to_json(&pl->k->space, &pl->cand[i].cfg));
    json_object_set_new(o, "recommended", rec);
    return o;
}

bt_status bt_plan_write_json(const bt_plan *pl, FILE *f)
{
    json_t *o = bt__plan_to_json(pl);
    if (!o)
        return BT_NOMEM;
    int rc = json_dumpf(o, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    json_decref(o);
    fputc('\n', f);
    return rc == 0 && !ferror(f) ? BT_OK : BT_IO;
}

/* ---------------------------------------------------------------------------------------------
 * CSV: one row per config, valid first (ranked), then eliminated with reasons joined by "; ".
 * ------------------------------------------------------------------------------------------- */
static void csv_row(const bt_plan *pl, FILE *f, const bt__cfg_eval *ev, size_t rank)
{
    for (int i = 0; i < pl->k->space.nparams; i++)
        fprintf(f, "%lld,", (long long)ev->cfg.v[i]);
    fprintf(f, "%s,%zu,%lld,%lld,%lld,%.4f,%s,%lld,%lld,%.4f,%.4f,%d,%d,%.3f,\"", ev->valid ? "valid" : "eliminated",
            rank, (long long)((ev->smem ? ev->smem : ev->dyn_smem)), (long long)ev->regs,
            (long long)ev->blocks_per_sm, ev->occupancy, ev->limiter, (long long)ev->grid,
            (long long)ev->waves, ev->last_wave_fill, ev->tile_eff, ev->vector_ok, ev->tensor_core,
            ev->pred_us);
    for (const char *s = ev->reasons ? ev->reasons : ""; *s; s++) {
        if (*s == '\n')
            fputs("; ", f);
        else if (*s == '"')
            fputs("\"\"", f);
        else
            fputc(*s, f);
    }
    fputs("\"\n", f);
}

bt_status bt_plan_write_csv(const bt_plan *pl, FILE *f)
{
    for (int i = 0; i < pl->k->space.nparams; i++)
        fprintf(f, "%s,", pl->k->space.params[i].name);
    fprintf(f, "status,rank,smem_bytes,regs_per_thread,blocks_per_sm,occupancy,limiter,grid_blocks,"
               "waves,last_wave_fill,tile_efficiency,vector_aligned,tensor_core,predicted_us,reasons\n");
    for (size_t i = 0; i < pl->ncand; i++)
        csv_row(pl, f, &pl->cand[i], i + 1);
    for (size_t i = 0; i < pl->nelim; i++)
        csv_row(pl, f, &pl->elim[i], 0);
    return ferror(f) ? BT_IO : BT_OK;
}
