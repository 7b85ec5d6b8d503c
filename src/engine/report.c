/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report.c — the tune report (candidate table with measured median and spread, GB/s or TFLOP/s
 * and efficiency against the roofline, eliminated and failed configs with their reasons, the
 * winner and its margin, provenance) as text and as JSON.
 */
#include "engine/engine.h"

#include "core/util.h"
#include "engine/fam.h"
#include "engine/record.h"
#include "engine/report.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void problem_text(const bt_result *r, char *buf, size_t n)
{
    const bt_kdesc *k = r->k;
    size_t o = 0;
    for (int i = 0; i < k->nproblem && o < n; i++) {
        int w = snprintf(buf + o, n - o, "%s=%lld ", k->problem_names[i], (long long)r->problem.values[i]);
        if (w > 0)
            o += (size_t)w;
    }
    if (o < n)
        snprintf(buf + o, n - o, "dtype=%s", bt__dtype_name(r->problem.dtype));
}

/* The first lines: kernel, device and problem; the space; the search; times; the roofline. */
static void write_header(const bt_result *r, FILE *f, bool known, bool mem)
{
    const bt__roofline *rf = &r->plan->model.roof;
    char prob[256];
    problem_text(r, prob, sizeof prob);
    fprintf(f, "blocktune tune: %s on %s (%s, %s), %s\n", r->k->name, r->dev.id, r->dev.name,
            r->dev.platform, prob);
    size_t failed = 0, ok = 0;
    for (size_t i = 0; i < r->n; i++)
        failed += r->e[i].status != BT__CS_OK, ok += r->e[i].status == BT__CS_OK;
    fprintf(f, "space %llu configs: %zu eliminated by the model, %zu %s of %zu valid, %zu not "
               "measured; %zu ok, %zu failed\n",
            (unsigned long long)r->plan->total, r->plan->nelim + r->plan->elim_dropped, r->n,
            r->replayed ? "replayed from the store (none measured here)" : "measured",
            r->plan->ncand, r->not_measured, ok, failed);
    char lim[64] = "none", tl[64] = "none";
    if (r->budget)
        snprintf(lim, sizeof lim, "%zu measurements", r->budget);
    if (r->opts.time_limit_s > 0)
        snprintf(tl, sizeof tl, "%g s", r->opts.time_limit_s);
    char tg[80] = "";
    if (r->target_ms > 0)
        snprintf(tg, sizeof tg, ", target %.4g ms%s (+%g %%)", r->target_ms,
                 r->opts.target_ms < 0 ? " (the roofline floor)" : "", r->opts.within_pct);
    else if (r->opts.target_ms < 0)
        snprintf(tg, sizeof tg, ", no target (the device's roofline is unknown)");
    char rd[160] = ""; /* configs the search weighed cheaper (measure.c ready_configs) */
    if (r->ready)
        snprintf(rd, sizeof rd, "; %d valid configs' binaries were in the kernel cache: a config "
                 "to compile had to promise %g %% more improvement", r->ready,
                 100 * BT__COMPILE_GAIN);
    fprintf(f, "search: strategy %s, stopped on %s after %llu round(s) of up to %d configs, %.2f s; "
               "budget %s, time limit %s%s%s\n",
            r->strategy, r->stop, (unsigned long long)r->search_rounds,
            r->round_size ? r->round_size : r->compile_threads,
            r->t_search, lim, tl, tg, rd);
    int cached = 0, pre = 0;
    for (size_t i = 0; i < r->n; i++) {
        cached += r->e[i].cached;
        pre += r->e[i].cached && r->e[i].precompiled;
    }
    char prec[64] = ""; /* how many of those blocktune precompile built (docs/wisdom.md) */
    if (pre)
        snprintf(prec, sizeof prec, ", %d of them precompiled", pre);
    if (r->graph_note[0])
        fprintf(f, "%s\n", r->graph_note);
    if (r->stored_only[0])
        fprintf(f, "MEASURED NOTHING NEW: %s; the configs the results store holds are reported, "
                   "each ok one re-verified here\n", r->stored_only);
    if (r->verify_note[0])
        fprintf(f, "NOT VERIFIED at a boundary size: %s\n", r->verify_note);
    if (r->replayed)
        fprintf(f, "REPLAYED FROM THE STORE: the key's winner and %d configs' outcomes were measured "
                   "and verified by an earlier tune; nothing was compiled, run or verified here "
                   "(--mode retune measures again)\n", r->replayed);
    else if (r->from_store)
        fprintf(f, "%d configs were measured before (results store): their numbers are reused, "
                   "each re-verified here\n", r->from_store);
    char store_note[2200];
    if (bt__result_store_note(r, store_note, sizeof store_note))
        fprintf(f, "%s\n", store_note);
    if (r->recoveries)
        fprintf(f, "the device faulted %d time(s); the context was rebuilt and the tune went on\n",
                r->recoveries);
    char xc[160] = "";
    if (r->xc_known && !r->xc_started)
        snprintf(xc, sizeof xc, "; Triton: no compile pool started");
    else if (r->xc_known && r->xc_ready_s >= 0)
        snprintf(xc, sizeof xc, "; Triton: compile pool ready %.2f s after its start, its "
                 "compiles %.2f s", r->xc_ready_s, r->xc_compile_s);
    else if (r->xc_known)
        snprintf(xc, sizeof xc, "; Triton: compile pool not ready, its compiles %.2f s",
                 r->xc_compile_s);
    char ref[96] = "";
    if (r->t_ref > 0 && r->t_ref_upload > 0.005)
        snprintf(ref, sizeof ref, " (device reference %.2f s, reference copied to the device "
                 "%.2f s)", r->t_ref, r->t_ref_upload);
    else if (r->t_ref > 0)
        snprintf(ref, sizeof ref, " (device reference %.2f s)", r->t_ref);
    else if (r->t_ref_upload > 0.005)
        snprintf(ref, sizeof ref, " (reference copied to the device %.2f s)", r->t_ref_upload);
    fprintf(f, "time: data %.2f s%s, compile %.2f s (%d threads, %d of %zu from the kernel cache%s), "
               "verify %.2f s, measure %.2f s (finals %.2f s), total %.2f s%s\n\n",
            r->t_data, ref, r->t_compile, r->compile_threads, cached, r->n, prec, r->t_verify,
            r->t_measure, r->t_finals, r->t_total, xc);
    if (known)
        fprintf(f, "Roofline: %s-bound (intensity %.2f FLOP/B, ridge %.1f for %s at %.0f GB/s); floor %.2f us\n\n",
                mem ? "memory" : "compute", rf->intensity, rf->ridge, rf->peak_name, rf->bw_gbps, rf->floor_us);
    else
        fprintf(f, "Roofline: unknown for this device (it reports no bandwidth or peak and matches no\n"
                   "hardware-table row); intensity %.2f FLOP/B, so throughput is shown in %s and no\n"
                   "efficiency is claimed\n\n",
                rf->intensity, mem ? "GB/s" : "TFLOP/s");
}

/* The ok entries' indices, fastest median first (malloc'd; NULL with *m = 0 when none or out of
 * memory). */
size_t *bt__result_ok_order(const bt_result *r, size_t *m)
{
    *m = 0;
    size_t *order = malloc(sizeof *order * (r->n ? r->n : 1));
    if (!order)
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].status == BT__CS_OK)
            order[(*m)++] = i;
    /* the winner first (a finalist that left the rounds early may show a lower median: the
     * leader's later rounds drifted), then by median */
    for (size_t a = 1; a < *m; a++)
        for (size_t b = a; b > 0 && (int)order[b - 1] != r->winner &&
                           ((int)order[b] == r->winner ||
                            r->e[order[b]].st.median < r->e[order[b - 1]].st.median);
             b--) {
            size_t t = order[b];
            order[b] = order[b - 1];
            order[b - 1] = t;
        }
    return order;
}

void bt__result_row(const bt_result *r, size_t i, bt__row_cols *c)
{
    const bt__entry *e = &r->e[i];
    bt__config_format(&r->k->space, &e->ev.cfg, " ", c->cfg, sizeof c->cfg);
    c->smem = (long long)(e->ev.smem ? e->ev.smem : e->ev.dyn_smem);
    if (e->res.regs_per_thread > 0)
        snprintf(c->regs, sizeof c->regs, "%d", e->res.regs_per_thread);
    else
        snprintf(c->regs, sizeof c->regs, "~%lld", (long long)e->ev.regs);
    /* blocks per SM: the model's estimate, and with the compiler's registers and shared
     * memory the exact figure by the occupancy rules that know the device (backend.h:
     * occupancy; CUDA's for a GPU with a compute capability); '!' = they differ */
    c->blk_model = (long long)e->ev.blocks_per_sm;
    c->blk_exact = e->res.regs_per_thread > 0
                       ? bt__backend_occupancy(&r->dev.props, &e->res,
                                               (int)(e->block[0] * e->block[1] * e->block[2]),
                                               e->dyn_smem, NULL)
                       : -1;
    snprintf(c->blk, sizeof c->blk, "%lld", c->blk_model);
    if (c->blk_exact >= 0)
        snprintf(c->blk, sizeof c->blk, "%lld/%d%s", c->blk_model, c->blk_exact,
                 c->blk_exact != c->blk_model ? "!" : "");
    c->occupancy = e->ev.occupancy;
    c->status = e->status != BT__CS_OK       ? bt__cfg_status_name(e->status)
                : (int)i == r->winner        ? "WINNER"
                : e->from_store              ? "ok (stored)"
                                             : "ok";
}

bool bt__result_roofline_known(const bt_result *r, bool *mem)
{
    const bt__roofline *rf = &r->plan->model.roof;
    bool known = rf->ridge > 0 && rf->bw_gbps > 0;
    /* without device peaks (a CPU device with no hardware-table row) the roofline is unknown;
     * low-intensity kernels are still reported in GB/s */
    *mem = known ? rf->memory_bound : rf->intensity < 10;
    return known;
}

/* The measured configs, fastest median first. */
static void write_candidates(const bt_result *r, FILE *f, bool known, bool mem)
{
    fprintf(f, "Candidates (measured; median and p20-p80 of device-timed runs after a cache flush;\n"
               "regs from the compiler where the backend tells; blk/SM = model/exact, ! = they differ)\n");
    fprintf(f, "  %3s %-44s %9s %5s %8s %4s %11s %19s %5s %9s %6s %s\n", "#", "config", "smem", "regs",
            "blk/SM", "occ", "median us", "p20-p80 us", "reps", mem ? "GB/s" : "TFLOP/s", "eff", "status");
    size_t m;
    size_t *order = bt__result_ok_order(r, &m);
    bool screened = false;
    for (size_t j = 0; j < m; j++)
        screened |= r->e[order[j]].st.screened;
    if (screened)
        fprintf(f, "  (\"screening\": a screening median, the short first measurement of every "
                   "config; the others' are\n   full-budget ones: the finalists' interleaved)\n");
    for (size_t j = 0; j < m; j++) {
        const bt__entry *e = &r->e[order[j]];
        bt__row_cols c;
        bt__result_row(r, order[j], &c);
        char spread[40];
        snprintf(spread, sizeof spread, "%.2f-%.2f", e->st.p20 * 1e3, e->st.p80 * 1e3);
        char effs[16];
        if (known)
            snprintf(effs, sizeof effs, "%5.1f%%", e->eff * 100);
        else
            snprintf(effs, sizeof effs, "%6s", "n/a");
        fprintf(f, "  %3zu %-44s %9lld %5s %8s %3.0f%% %11.2f %19s %5d %9.2f %s %s%s%s\n", j + 1,
                c.cfg, c.smem, c.regs, c.blk, c.occupancy * 100, e->st.median * 1e3, spread,
                e->st.n, mem ? e->gbps : e->tflops, effs, c.status,
                e->st.screened ? ", screening" : "",
                e->left_tied     ? ", left the finals tied"
                : e->left_rounds ? ", left the finals early"
                                 : "");
    }
    free(order);
}

/* The configs that failed, with their errors and the first lines of a compiler log. */
static void write_failed(const bt_result *r, FILE *f)
{
    char cfg[256];
    bool any_failed = false;
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        if (e->status == BT__CS_OK)
            continue;
        if (!any_failed)
            fprintf(f, "\nFailed (never eligible to win)\n");
        any_failed = true;
        bt__config_format(&r->k->space, &e->ev.cfg, " ", cfg, sizeof cfg);
        fprintf(f, "  %-44s %s: %s\n", cfg, bt__cfg_status_name(e->status), e->error ? e->error : "");
        if (e->log && e->log[0]) {
            /* the first lines of the compiler log */
            const char *s = e->log;
            for (int line = 0; line < 6 && *s; line++) {
                const char *nl = strchr(s, '\n');
                int len = nl ? (int)(nl - s) : (int)strlen(s);
                fprintf(f, "      | %.*s\n", len > 160 ? 160 : len, s);
                s += len + (nl ? 1 : 0);
            }
        }
    }
}

/* The first ten configs the model eliminated, each with its first reason. */
static void write_eliminated(const bt_result *r, FILE *f)
{
    char cfg[256];
    size_t ne = r->plan->nelim + r->plan->elim_dropped;
    fprintf(f, "\nEliminated by the model before compiling: %zu\n", ne);
    for (size_t i = 0; i < r->plan->nelim && i < 10; i++) {
        const bt__cfg_eval *ev = &r->plan->elim[i];
        bt__config_format(&r->k->space, &ev->cfg, " ", cfg, sizeof cfg);
        const char *nl = ev->reasons ? strchr(ev->reasons, '\n') : NULL;
        int len = ev->reasons ? (nl ? (int)(nl - ev->reasons) : (int)strlen(ev->reasons)) : 0;
        fprintf(f, "  %-44s %.*s%s\n", cfg, len, ev->reasons ? ev->reasons : "", nl ? " (+ more)" : "");
    }
    if (ne > 10)
        fprintf(f, "  ... %zu more ('blocktune plan' lists them all)\n", ne - 10);
}

/* The winner's verification, in words that each name a check that ran in this process: the
 * reference (its label is set once the reference was made), what the comparison at the problem
 * said, and the boundary sizes it passed. */
static void write_verified(const bt_result *r, const bt__entry *w, FILE *f)
{
    int nb = r->opts.verify_boundary ? r->k->nboundary : 0;
    char bnd[200] = "";
    if (w->boundary_checked && w->boundary_checked == nb)
        snprintf(bnd, sizeof bnd, "; and at every boundary size");
    else if (w->boundary_checked && w->boundary_checked + w->boundary_na == nb)
        snprintf(bnd, sizeof bnd, "; and at %d of %d boundary sizes (its constraints exclude "
                 "the others)", w->boundary_checked, nb);
    else if (nb)
        snprintf(bnd, sizeof bnd, "; and at %d of %d boundary sizes (%d outside its constraints, "
                 "%d not verified)", w->boundary_checked, nb, w->boundary_na,
                 nb - w->boundary_checked - w->boundary_na);
    if (!r->reference[0] || !w->ver.ok || w->ver.checked == 0)
        fprintf(f, "  NOT VERIFIED: no reference was made in this run\n");
    else if (r->k->ref == BT__REF_NONE)
        fprintf(f, "  checked: %s, %s%s\n", r->reference, w->ver.msg, bnd);
    else
        fprintf(f, "  verified: %s, %s%s\n", r->reference, w->ver.msg, bnd);
}

/* How the finals were made up: the top ones, the promoted, the challengers. */
static void write_finals(const bt_result *r, FILE *f)
{
    double scr = bt__screen_ms(&r->opts);
    if (scr > 0 && r->screened)
        fprintf(f, "  %d configs were first screened (%.3g ms warm-up, %.3g ms of runs, at least "
                   "%d%s);\n  the finalists were re-measured at the full %g + %g ms\n",
                r->screened, r->opts.warmup_ms * scr / r->opts.rep_ms, scr, BT__SCREEN_MIN_RUNS,
                r->graph_note[0] && !strstr(r->graph_note, "asked for") ? " runs, 5 graph replays"
                                                                       : " runs",
                r->opts.warmup_ms, r->opts.rep_ms);
    if (r->screen_cut)
        fprintf(f, "  %d of the screenings ended after their first %d runs: slower than %.3g x the "
                   "fastest median measured before them\n",
                r->screen_cut, BT__EST_RUNS, BT__SCREEN_CUT);
    char why[300] = "";
    int at = 0;
    if (r->promoted)
        at += snprintf(why + at, sizeof why - (size_t)at, "%d of them because their screening "
                       "median was within the screening noise of the cut", r->promoted);
    if (r->challengers)
        snprintf(why + at, sizeof why - (size_t)at, "%s%d because their first median beat the "
                 "winner's interleaved one", at ? "; " : "", r->challengers);
    char rounds[64];
    if (r->rounds_run > 0 && r->rounds_run < r->rounds)
        snprintf(rounds, sizeof rounds, "%d of %d rounds", r->rounds_run, r->rounds);
    else
        snprintf(rounds, sizeof rounds, "%d rounds", r->rounds);
    fprintf(f, "  the top %d were re-measured interleaved over %s before choosing%s%s%s\n",
            r->finalists, rounds, why[0] ? " (" : "", why, why[0] ? ")" : "");
    if (r->left_early - r->left_tied)
        fprintf(f, "  %d of them left the rounds early, clearly slower than the leader (beyond "
                   "the noise band and two standard errors; after the first round, beyond three "
                   "noise bands and six standard errors): they rank behind the finalists that "
                   "stayed, whose later rounds may run on a warmer GPU\n",
                r->left_early - r->left_tied);
    if (r->left_tied)
        fprintf(f, "  %d of them left the rounds early, tied with the leader (their medians' "
                   "difference, two standard errors added, inside the noise band after two rounds "
                   "or more: more runs would not part them); they rank behind it\n",
                r->left_tied);
    if (r->not_promoted)
        fprintf(f, "  NOTE: %d more configs were within the screening noise of the cut but not "
                   "re-measured (the finals hold at most 16, or the time limit)\n",
                r->not_promoted);
}

/* The winner: its numbers, its verification, its margin over the runner-up or the tie. */
static void write_winner(const bt_result *r, FILE *f, bool known, bool mem)
{
    const bt__roofline *rf = &r->plan->model.roof;
    char cfg[256];
    fprintf(f, "\nWinner\n");
    if (r->winner < 0) {
        if (r->n == 0)
            fprintf(f, "  none: no config is valid for this problem (each one's reasons are under "
                       "Eliminated).\n");
        else
            fprintf(f, "  none: no config passed verification and measurement.\n");
        size_t timed_out = 0;
        for (size_t i = 0; i < r->n; i++)
            timed_out += r->e[i].status == BT__CS_TIMEOUT;
        if (r->n && timed_out == r->n)
            fprintf(f, "  every config ran longer than the %.1f s timeout: at this problem size "
                       "the device may need a longer one (--timeout)\n", r->opts.timeout_s);
    } else {
        const bt__entry *w = &r->e[r->winner];
        bt__config_format(&r->k->space, &w->ev.cfg, " ", cfg, sizeof cfg);
        fprintf(f, "  %s\n  median %.2f us (p20 %.2f, p80 %.2f, min %.2f, MAD %.3f us, %d runs), ",
                cfg, w->st.median * 1e3, w->st.p20 * 1e3, w->st.p80 * 1e3, w->st.min * 1e3,
                w->st.mad * 1e3, w->st.n);
        if (!(rf->flops > 0) && !(rf->bytes > 0)) /* not 0 GB/s: nothing to divide by */
            fprintf(f, "no throughput (the spec gives no flops or bytes expression)\n");
        else if (!known)
            fprintf(f, "%.2f %s (no roofline for this device)\n", mem ? w->gbps : w->tflops,
                    mem ? "GB/s" : "TFLOP/s");
        else if (mem)
            fprintf(f, "%.1f GB/s = %.1f%% of the %.0f GB/s roofline\n", w->gbps, w->eff * 100, rf->bw_gbps);
        else
            fprintf(f, "%.2f TFLOP/s = %.1f%% of the %.1f TFLOP/s %s peak\n", w->tflops, w->eff * 100,
                    rf->peak_tflops, rf->peak_name);
        write_verified(r, w, f);
        if (r->runner_up >= 0) {
            bt__config_format(&r->k->space, &r->e[r->runner_up].ev.cfg, " ", cfg, sizeof cfg);
            if (r->tie)
                fprintf(f, "  TIE within noise with the runner-up (%s): margin %.2f%% < noise band %.2f%%\n",
                        cfg, r->margin * 100, r->noise * 100);
            else
                fprintf(f, "  margin over the runner-up (%s): %.2f%% (noise band %.2f%%)\n", cfg,
                        r->margin * 100, r->noise * 100);
            write_finals(r, f);
        } else
            fprintf(f, "  no runner-up: only one config passed\n");
    }
}

/* The compiler that built the measured modules: the one a module names (a Triton kernel's
 * "Triton 3.6.0", as its store rows say), else the device's. */
static const char *compiler_of(const bt_result *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].res.compiler[0])
            return r->e[i].res.compiler;
    return r->dev.compiler_version;
}

bt_status bt_result_write_table(const bt_result *r, FILE *f)
{
    bool mem;
    bool known = bt__result_roofline_known(r, &mem);
    write_header(r, f, known, mem);
    write_candidates(r, f, known, mem);
    write_failed(r, f);
    write_eliminated(r, f);
    write_winner(r, f, known, mem);
    char scr[48] = "";
    if (bt__screen_ms(&r->opts) > 0)
        snprintf(scr, sizeof scr, "screening %.1f ms, ", bt__screen_ms(&r->opts));
    fprintf(f, "\nProvenance: device %s \"%s\" (%s; driver %s; compiler %s), blocktune %s, source %s, "
               "warm-up %.0f ms, rep %.0f ms, %sseed %llu, %s\n",
            r->dev.id, r->dev.name, r->dev.api_version, r->dev.driver_version, compiler_of(r),
            bt_version(), r->source_hash, r->opts.warmup_ms, r->opts.rep_ms, scr,
            (unsigned long long)r->opts.seed, r->timestamp);
    if (r->fam)
        bt__famres_write(r->fam, f);
    return ferror(f) ? BT_IO : BT_OK;
}

/* A positive number, else null (unknown). */
static json_t *json_known(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

/* The columns the text table shows that the rest of the JSON does not: the model's register
 * estimate, blocks per SM (model, and exact where the compiler told), occupancy; and whether the
 * config was re-measured in the finals. */
static void config_table_json(const bt_result *r, size_t i, json_t *x)
{
    const bt__entry *e = &r->e[i];
    bt__row_cols c;
    bt__result_row(r, i, &c);
    json_object_set_new(x, "regs_estimate", json_integer((json_int_t)e->ev.regs));
    json_object_set_new(x, "blocks_per_sm", json_integer(c.blk_model));
    if (c.blk_exact >= 0)
        json_object_set_new(x, "blocks_per_sm_exact", json_integer(c.blk_exact));
    json_object_set_new(x, "occupancy", json_real(c.occupancy));
    json_object_set_new(x, "finalist", json_boolean(e->finalist));
    json_object_set_new(x, "left_finals_early", json_boolean(e->left_rounds));
    json_object_set_new(x, "left_finals_tied", json_boolean(e->left_tied));
    json_object_set_new(x, "from_store", json_boolean(e->from_store));
    json_object_set_new(x, "screened", json_boolean(e->status == BT__CS_OK && e->st.screened));
}

/* The winner object of the JSON (null when there is none). */
static json_t *winner_json(const bt_result *r)
{
    if (r->winner < 0)
        return json_null();
    json_t *w = json_object();
    json_object_set_new(w, "config", bt__config_to_json(&r->k->space, &r->e[r->winner].ev.cfg));
    json_object_set_new(w, "median_ms", json_real(r->e[r->winner].st.median));
    json_object_set_new(w, "margin", json_real(r->margin));
    json_object_set_new(w, "noise_band", json_real(r->noise));
    json_object_set_new(w, "tie", json_boolean(r->tie));
    json_object_set_new(w, "finalists", json_integer(r->finalists));
    json_object_set_new(w, "challengers", json_integer(r->challengers));
    json_object_set_new(w, "promoted", json_integer(r->promoted));
    json_object_set_new(w, "not_promoted", json_integer(r->not_promoted));
    json_object_set_new(w, "rounds", json_integer(r->rounds));
    json_object_set_new(w, "left_early", json_integer(r->left_early));
    json_object_set_new(w, "left_tied", json_integer(r->left_tied));
    json_object_set_new(w, "rounds_run", json_integer(r->rounds_run));
    json_object_set_new(w, "screen_cut", json_integer(r->screen_cut));
    if (r->runner_up >= 0)
        json_object_set_new(w, "runner_up", bt__config_to_json(&r->k->space, &r->e[r->runner_up].ev.cfg));
    return w;
}

json_t *bt__result_to_json(const bt_result *r)
{
    const bt__roofline *rf = &r->plan->model.roof;
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("blocktune-tune/1"));
    json_object_set_new(o, "kernel", json_string(r->k->name));
    json_t *prob = json_object();
    for (int i = 0; i < r->k->nproblem; i++)
        json_object_set_new(prob, r->k->problem_names[i], json_integer(r->problem.values[i]));
    json_object_set_new(prob, "dtype", json_string(bt__dtype_name(r->problem.dtype)));
    json_object_set_new(o, "problem", prob);
    json_t *rj = json_object();
    json_object_set_new(rj, "flops", json_real(rf->flops));
    json_object_set_new(rj, "bytes", json_real(rf->bytes));
    json_object_set_new(rj, "intensity", json_real(rf->intensity));
    json_object_set_new(rj, "ridge", json_real(rf->ridge));
    json_object_set_new(rj, "bound", json_string(rf->memory_bound ? "memory" : "compute"));
    json_object_set_new(rj, "floor_us", json_real(rf->floor_us));
    json_object_set_new(rj, "peak_tflops", json_known(rf->peak_tflops));
    json_object_set_new(rj, "peak", rf->peak_name && rf->peak_name[0] ? json_string(rf->peak_name) : json_null());
    json_object_set_new(rj, "bandwidth_gbps", json_known(rf->bw_gbps));
    json_object_set_new(o, "roofline", rj);
    json_t *arr = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const bt__entry *e = &r->e[i];
        json_t *x = json_object();
        json_object_set_new(x, "config", bt__config_to_json(&r->k->space, &e->ev.cfg));
        json_object_set_new(x, "status", json_string(bt__cfg_status_name(e->status)));
        json_object_set_new(x, "model_rank", json_integer((json_int_t)e->model_rank));
        json_object_set_new(x, "predicted_us", json_real(e->ev.pred_us));
        json_object_set_new(x, "compile_s", json_real(e->compile_s));
        if (e->error)
            json_object_set_new(x, "error", json_string(e->error));
        if (e->log && e->status == BT__CS_COMPILE)
            json_object_set_new(x, "compile_log", json_string(e->log));
        if (e->status == BT__CS_OK) {
            json_object_set_new(x, "median_ms", json_real(e->st.median));
            json_object_set_new(x, "p20_ms", json_real(e->st.p20));
            json_object_set_new(x, "p80_ms", json_real(e->st.p80));
            json_object_set_new(x, "min_ms", json_real(e->st.min));
            json_object_set_new(x, "mad_ms", json_real(e->st.mad));
            json_object_set_new(x, "reps", json_integer(e->st.n));
            json_object_set_new(x, "gbps", json_real(e->gbps));
            json_object_set_new(x, "tflops", json_real(e->tflops));
            json_object_set_new(x, "efficiency", json_real(e->eff));
            json_object_set_new(x, "max_rel_err", json_real(e->ver.max_rel_err));
        }
        json_object_set_new(x, "regs_per_thread", json_integer(e->res.regs_per_thread));
        json_object_set_new(x, "smem_bytes", json_integer((e->ev.smem ? e->ev.smem : e->ev.dyn_smem)));
        config_table_json(r, i, x);
        json_array_append_new(arr, x);
    }
    json_object_set_new(o, "configs", arr);
    json_t *el = json_array();
    for (size_t i = 0; i < r->plan->nelim; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "config", bt__config_to_json(&r->k->space, &r->plan->elim[i].cfg));
        json_object_set_new(x, "reasons", json_string(r->plan->elim[i].reasons ? r->plan->elim[i].reasons : ""));
        json_array_append_new(el, x);
    }
    json_object_set_new(o, "eliminated", el);
    json_object_set_new(o, "eliminated_not_listed", json_integer((json_int_t)r->plan->elim_dropped));
    json_t *sj = json_object();
    json_object_set_new(sj, "strategy", json_string(r->strategy));
    json_object_set_new(sj, "stop", json_string(r->stop));
    json_object_set_new(sj, "measured", json_integer((json_int_t)r->n));
    json_object_set_new(sj, "valid", json_integer((json_int_t)r->plan->ncand));
    json_object_set_new(sj, "not_measured", json_integer((json_int_t)r->not_measured));
    json_object_set_new(sj, "from_store", json_integer(r->from_store));
    json_object_set_new(sj, "replayed", json_integer(r->replayed));
    json_object_set_new(sj, "rounds", json_integer((json_int_t)r->search_rounds));
    json_object_set_new(sj, "round_size",
                        json_integer(r->round_size ? r->round_size : r->compile_threads));
    json_object_set_new(sj, "ready", json_integer(r->ready));
    json_object_set_new(sj, "budget", r->budget ? json_integer((json_int_t)r->budget) : json_null());
    json_object_set_new(sj, "time_limit_s",
                        r->opts.time_limit_s > 0 ? json_real(r->opts.time_limit_s) : json_null());
    json_object_set_new(sj, "target_ms", r->target_ms > 0 ? json_real(r->target_ms) : json_null());
    json_object_set_new(sj, "within_pct", json_real(r->opts.within_pct));
    json_object_set_new(sj, "seconds", json_real(r->t_search));
    json_object_set_new(o, "search", sj);
    json_object_set_new(o, "store", bt__result_store_json(r));
    json_object_set_new(o, "winner", winner_json(r));
    json_t *pv = json_object();
    json_object_set_new(pv, "device_id", json_string(r->dev.id));
    json_object_set_new(pv, "device", json_string(r->dev.name));
    json_object_set_new(pv, "api", json_string(r->dev.api_version));
    json_object_set_new(pv, "driver", json_string(r->dev.driver_version));
    json_object_set_new(pv, "compiler", json_string(compiler_of(r)));
    json_object_set_new(pv, "blocktune", json_string(bt_version()));
    json_object_set_new(pv, "source_hash", json_string(r->source_hash));
    json_object_set_new(pv, "timestamp", json_string(r->timestamp));
    json_object_set_new(pv, "warmup_ms", json_real(r->opts.warmup_ms));
    json_object_set_new(pv, "rep_ms", json_real(r->opts.rep_ms));
    json_object_set_new(pv, "screen_ms", json_real(bt__screen_ms(&r->opts)));
    json_object_set_new(pv, "seed", json_integer((json_int_t)r->opts.seed));
    json_object_set_new(o, "provenance", pv);
    json_t *t = json_object();
    json_object_set_new(t, "data_s", json_real(r->t_data));
    json_object_set_new(t, "compile_s", json_real(r->t_compile));
    json_object_set_new(t, "verify_s", json_real(r->t_verify));
    json_object_set_new(t, "measure_s", json_real(r->t_measure));
    json_object_set_new(t, "finals_s", json_real(r->t_finals));
    json_object_set_new(t, "reference_s", json_real(r->t_ref));
    json_object_set_new(t, "reference_upload_s", json_real(r->t_ref_upload));
    json_object_set_new(t, "total_s", json_real(r->t_total));
    if (r->xc_known) /* a Triton kernel: its compile pool */
        json_object_set_new(t, "triton", json_pack("{s:b,s:b,s:o,s:f}", "pool_started",
                                                   r->xc_started, "pool_by_embedder",
                                                   r->xc_embedder, "pool_ready_s",
                                                   r->xc_ready_s >= 0 ? json_real(r->xc_ready_s)
                                                                      : json_null(),
                                                   "compile_s", r->xc_compile_s));
    json_object_set_new(o, "time", t);
    if (r->fam)
        json_object_set_new(o, "families", bt__famres_json(r->fam));
    return o;
}

char *bt__result_json_text(const bt_result *r)
{
    json_t *o = bt__result_to_json(r);
    char *text = o ? json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8))
                   : NULL;
    json_decref(o);
    return text;
}

bt_status bt_result_write_json(const bt_result *r, FILE *f)
{
    char *text = bt__result_json_text(r);
    if (!text)
        return BT_NOMEM;
    fputs(text, f);
    fputc('\n', f);
    free(text);
    return !ferror(f) ? BT_OK : BT_IO;
}
