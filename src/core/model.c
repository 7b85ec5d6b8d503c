/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.c — the analytic model of one config (seeds 000 §1-4, 001 §1-8) with the validity rules it
 * checks (their names and sets: rules.c), and the roofline of a problem. docs/model.md explains
 * every number.
 */
#include "core/model.h"

#include "core/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define R(x) (1u << (x))

/* ---------------------------------------------------------------------------------------------
 * Peaks and roofline
 * ------------------------------------------------------------------------------------------- */
double bt__peak_for(const bt_gpu *g, bt__dtype t, bt__compute_unit u, bool allow_tf32,
                    const char **name)
{
    bt_peak_kind k = BT_PEAK_FP32;
    const char *n = "fp32";
    if (u == BT__UNIT_TENSOR) {
        switch (t) {
        case BT__DT_FP16: k = BT_PEAK_FP16_TC, n = "fp16 tensor"; break;
        case BT__DT_BF16: k = BT_PEAK_BF16_TC, n = "bf16 tensor"; break;
        case BT__DT_FP8: k = BT_PEAK_FP8_TC, n = "fp8 tensor"; break;
        case BT__DT_INT8: k = BT_PEAK_INT8_TC, n = "int8 tensor"; break;
        case BT__DT_FP64: k = BT_PEAK_FP64_TC, n = "fp64 tensor"; break;
        case BT__DT_FP32:
            if (allow_tf32)
                k = BT_PEAK_TF32_TC, n = "tf32 tensor";
            else
                k = BT_PEAK_FP32, n = "fp32 (no tf32)";
            break;
        default: k = BT_PEAK_FP32, n = "fp32"; break;
        }
        if (g->peak_tflops[k] <= 0) { /* no such tensor unit: fall back to CUDA cores */
            k = t == BT__DT_FP64 ? BT_PEAK_FP64 : BT_PEAK_FP32;
            n = t == BT__DT_FP64 ? "fp64 (no tensor unit)" : "fp32 (no tensor unit)";
        }
    } else {
        if (t == BT__DT_FP64)
            k = BT_PEAK_FP64, n = "fp64";
        else if ((t == BT__DT_FP16 || t == BT__DT_BF16) && g->peak_tflops[BT_PEAK_FP16] > 0)
            k = BT_PEAK_FP16, n = "fp16";
    }
    if (name)
        *name = n;
    return g->peak_tflops[k];
}

bt_status bt__model_init(bt__model *m, const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                         uint32_t rules, bt_diag *diag)
{
    memset(m, 0, sizeof *m);
    m->k = k;
    m->p = p;
    m->g = g;
    m->rules = rules;
    m->slots = calloc((size_t)k->nslots, sizeof *m->slots);
    if (!m->slots)
        return BT_NOMEM;
    bt__kdesc_fill_slots(k, NULL, p, g, m->slots);
    if (k->npdefines) { /* a define the problem cannot take is the problem's error */
        char defs[BT__MAX_PDEFINES][96];
        int n;
        bt_status st = bt__kdesc_pdefines(k, p, g, defs, &n, diag);
        if (st)
            return st;
    }
    bt__roofline *r = &m->roof;
    int64_t v;
    if (k->flops.e) {
        bt_status st = bt__kexpr_eval(k, &k->flops, m->slots, &v, diag);
        if (st)
            return st;
        r->flops = (double)v;
    }
    if (k->bytes.e) {
        bt_status st = bt__kexpr_eval(k, &k->bytes, m->slots, &v, diag);
        if (st)
            return st;
        r->bytes = (double)v;
    }
    r->peak_tflops = bt__peak_for(g, p->dtype, k->unit, k->allow_tf32, &r->peak_name);
    r->bw_gbps = g->mem_bw_gbps;
    r->intensity = r->bytes > 0 ? r->flops / r->bytes : 0;
    r->ridge = r->bw_gbps > 0 ? r->peak_tflops * 1e12 / (r->bw_gbps * 1e9) : 0;
    r->memory_bound = r->intensity < r->ridge;
    double tc = r->peak_tflops > 0 ? r->flops / (r->peak_tflops * 1e12) : 0;
    double tm = r->bw_gbps > 0 ? r->bytes / (r->bw_gbps * 1e9) : 0;
    r->floor_us = (tc > tm ? tc : tm) * 1e6;
    return BT_OK;
}

void bt__model_fini(bt__model *m)
{
    free(m->slots);
    m->slots = NULL;
}

void bt__cfg_eval_clear(bt__cfg_eval *ev)
{
    free(ev->reasons);
    ev->reasons = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * One config
 * ------------------------------------------------------------------------------------------- */
void bt__cfg_eval_reason(bt__cfg_eval *ev, uint32_t bit, const char *fmt, ...)
{
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ev->valid = false;
    ev->broken |= bit;
    size_t old = ev->reasons ? strlen(ev->reasons) : 0;
    char *r = realloc(ev->reasons, old + strlen(line) + 2);
    if (!r)
        return;
    if (old)
        r[old++] = '\n';
    strcpy(r + old, line);
    ev->reasons = r;
}
#define add_reason bt__cfg_eval_reason

static void add_warning(bt__cfg_eval *ev, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_warning(bt__cfg_eval *ev, const char *fmt, ...)
{
    if (ev->nwarnings >= BT__MAX_WARNINGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev->warnings[ev->nwarnings++], sizeof ev->warnings[0], fmt, ap);
    va_end(ap);
}

/* Evaluates an optional expression; absent → dflt. An error makes the config invalid. */
static bool eval_opt(bt__model *m, bt__cfg_eval *ev, const bt__kexpr *x, int64_t dflt, int64_t *out)
{
    if (!x->e) {
        *out = dflt;
        return true;
    }
    bt_diag d;
    bt__diag_fresh(&d);
    if (bt__expr_eval(x->e, m->slots, out, &d) != BT_OK) {
        add_reason(ev, BT__BROKEN_EVAL, "cannot evaluate %s: %s", x->field, d.msg);
        *out = dflt;
        return false;
    }
    return true;
}

static bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/* Saturating int64 arithmetic: a config given absurd values (plan --config with 2^63 - 1) keeps
 * the model defined and shows the saturated figure, which the limits then reject. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (a > 0 ? INT64_MAX : INT64_MIN) : r;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_mul_overflow(a, b, &r))
        return r;
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

/* The ceiling of a / b for b > 0 (0 otherwise), without overflow. */
static int64_t cdiv64(int64_t a, int64_t b)
{
    if (b <= 0)
        return 0;
    return a / b + (a % b > 0);
}

/* The space's own definition of a valid config. */
static void eval_constraints(bt__model *m, bt__cfg_eval *ev)
{
    const bt_kdesc *k = m->k;
    char rend[400];
    for (int i = 0; i < k->nconstraints; i++) {
        int64_t v;
        bt_diag d;
        bt__diag_fresh(&d);
        if (bt__expr_eval(k->constraints[i].e, m->slots, &v, &d) != BT_OK)
            add_reason(ev, BT__BROKEN_EVAL, "constraint '%s' cannot be evaluated: %s",
                       bt__expr_source(k->constraints[i].e), d.msg);
        else if (!v)
            add_reason(ev, BT__BROKEN_CONSTRAINT, "constraint '%s' is false (%s)",
                       bt__expr_source(k->constraints[i].e),
                       bt__expr_render(k->constraints[i].e, m->slots, rend, sizeof rend));
    }
}

/* The 32-bit registers per thread that the accumulator alone takes (0: no accumulator). */
static int64_t acc_regs(const bt__cfg_eval *ev)
{
    return ev->threads > 0 ? cdiv64(ev->acc_bytes, sat_mul(4, ev->threads)) : 0;
}

/* Threads, block, grid, shared memory (total and static), registers, tensor cores, vectors.
 * Threads per block: model.threads, else launch.block, else num_warps (4 when there is no such
 * parameter) warps. */
static void eval_resources(bt__model *m, bt__cfg_eval *ev, int64_t warp, int64_t *smem_static)
{
    const bt_kdesc *k = m->k;
    const bt_config *c = &ev->cfg;
    int64_t num_warps = k->p_num_warps >= 0 ? c->v[k->p_num_warps] : 4;
    int64_t dflt = sat_mul(num_warps, warp);
    bool have_block = k->block[0].e != NULL;
    for (int d = 0; d < 3 && have_block; d++)
        eval_opt(m, ev, &k->block[d], d == 0 ? dflt : 1, &ev->block_dims[d]);
    int64_t block_threads =
        have_block ? sat_mul(sat_mul(ev->block_dims[0], ev->block_dims[1]), ev->block_dims[2])
                   : dflt;
    eval_opt(m, ev, &k->threads, block_threads, &ev->threads);
    if (!have_block) {
        ev->block_dims[0] = ev->threads;
        ev->block_dims[1] = ev->block_dims[2] = 1;
    }
    ev->warps = cdiv64(ev->threads, warp);
    eval_opt(m, ev, &k->smem, 0, &ev->smem);
    eval_opt(m, ev, &k->dyn_smem, 0, &ev->dyn_smem);
    eval_opt(m, ev, &k->acc_bytes, 0, &ev->acc_bytes);
    /* the model's smem is the block's total (static + dynamic): launch.local_mem is the dynamic
     * part of it; model.static_smem overrides the difference */
    int64_t diff = k->smem.e ? sat_add(ev->smem, -ev->dyn_smem) : 0;
    eval_opt(m, ev, &k->static_smem, diff > 0 ? diff : 0, smem_static);
    /* default register estimate (seed 001 §3): accumulator + inputs + overhead */
    eval_opt(m, ev, &k->regs, sat_add(acc_regs(ev), 32), &ev->regs);
    for (int d = 0; d < 3; d++)
        eval_opt(m, ev, &k->grid[d], 1, &ev->grid_dims[d]);
    ev->grid = sat_mul(sat_mul(ev->grid_dims[0], ev->grid_dims[1]), ev->grid_dims[2]);
    int64_t tc = 0, vo = 1;
    bool dtype_tc = m->p->dtype == BT__DT_FP16 || m->p->dtype == BT__DT_BF16 ||
                    m->p->dtype == BT__DT_FP8 || m->p->dtype == BT__DT_INT8 ||
                    (m->p->dtype == BT__DT_FP32 && k->allow_tf32);
    eval_opt(m, ev, &k->tensor_core, k->unit == BT__UNIT_TENSOR && dtype_tc, &tc);
    ev->tensor_core = tc != 0;
    eval_opt(m, ev, &k->vector_ok, 1, &vo);
    ev->vector_ok = vo != 0;
}

/* The rules of the rule set that do not need occupancy. */
static void eval_rules(bt__model *m, bt__cfg_eval *ev, int64_t warp, int64_t smem_total,
                       int64_t smem_static)
{
    const bt_kdesc *k = m->k;
    const bt_gpu *g = m->g;
    const bt_config *c = &ev->cfg;
    uint32_t R = m->rules;
    char rend[400];
    if (R & R(BT__RULE_POW2_TILES))
        for (int i = 0; i < k->space.nparams; i++)
            if (k->space.params[i].role == BT__ROLE_TILE && !is_pow2(c->v[i]))
                add_reason(ev, R(BT__RULE_POW2_TILES), "%s=%lld is not a power of two (pow2_tiles)",
                           k->space.params[i].name, (long long)c->v[i]);
    if ((R & R(BT__RULE_TC_DIMS)) && k->unit == BT__UNIT_TENSOR)
        for (int t = 0; t < k->ntiles; t++) {
            int64_t v = c->v[k->tiles[t].param];
            if (v < 16)
                add_reason(ev, R(BT__RULE_TC_DIMS),
                           "%s=%lld < 16: a tensor-core dot needs every tile dimension >= 16 "
                           "(tc_dims)",
                           k->space.params[k->tiles[t].param].name, (long long)v);
        }
    if ((R & R(BT__RULE_WARP_WIDTH)) && k->inner_tile >= 0 && c->v[k->inner_tile] % warp)
        add_reason(ev, R(BT__RULE_WARP_WIDTH),
                   "inner tile width %s=%lld is not a multiple of the warp size %lld: lanes idle "
                   "(warp_width)",
                   k->space.params[k->inner_tile].name, (long long)c->v[k->inner_tile],
                   (long long)warp);
    int64_t smem_limit = g->smem_per_block_optin ? g->smem_per_block_optin : g->smem_per_block;
    if ((R & R(BT__RULE_SMEM)) && smem_limit > 0 && smem_total > smem_limit) {
        const bt__kexpr *x = k->smem.e ? &k->smem : &k->dyn_smem;
        add_reason(ev, R(BT__RULE_SMEM), "shared memory %lld B > %lld B per block (%s B) (smem_limit)",
                   (long long)smem_total, (long long)smem_limit,
                   x->e ? bt__expr_render(x->e, m->slots, rend, sizeof rend) : "?");
    }
    /* on a device that distinguishes them (CUDA: 48 KiB static, more by opt-in), static shared
     * memory above the default per-block size does not build */
    if ((R & R(BT__RULE_SMEM_STATIC)) && g->smem_per_block > 0 &&
        g->smem_per_block_optin > g->smem_per_block && smem_static > g->smem_per_block) {
        char how[480];
        if (k->static_smem.e)
            snprintf(how, sizeof how, "%s B", bt__expr_render(k->static_smem.e, m->slots, rend,
                                                              sizeof rend));
        else if (ev->dyn_smem > 0)
            snprintf(how, sizeof how, "model smem %lld B - launch.local_mem %lld B",
                     (long long)ev->smem, (long long)ev->dyn_smem);
        else
            snprintf(how, sizeof how, "%s B", bt__expr_render(k->smem.e, m->slots, rend,
                                                              sizeof rend));
        add_reason(ev, R(BT__RULE_SMEM_STATIC),
                   "static shared memory %lld B > %lld B per block (%s): static __shared__ "
                   "arrays cannot exceed the default per-block size; more must be dynamic "
                   "(launch.local_mem) (smem_static)",
                   (long long)smem_static, (long long)g->smem_per_block, how);
    }
    /* seed 001's register pressure: an accumulator tile is held in registers across the block's
     * threads (a Triton dot's, an mma's); more than a thread may have cannot stay there, and a
     * spilled accumulator is read and written to local memory at every step of the K loop (on
     * the H200 such Triton GEMM configs ran 4-25x slower than the best and took 59 % of the
     * space's compile time: bench/NOTES.md 39). Not from compute capability 10 on, where a
     * tensor-core accumulator lives in tensor memory. */
    bool tensor_memory = g->cc_major >= 10 && k->unit == BT__UNIT_TENSOR;
    if ((R & R(BT__RULE_ACC_REGS)) && g->max_regs_per_thread > 0 && !tensor_memory &&
        acc_regs(ev) > g->max_regs_per_thread)
        add_reason(ev, R(BT__RULE_ACC_REGS),
                   "the accumulator alone needs %lld registers per thread (%lld B over %lld "
                   "threads) > %d: it cannot stay in registers and spills to local memory "
                   "(accumulator_regs)",
                   (long long)acc_regs(ev), (long long)ev->acc_bytes, (long long)ev->threads,
                   g->max_regs_per_thread);
    if ((R & R(BT__RULE_THREADS)) && g->max_threads_per_block > 0 &&
        ev->threads > g->max_threads_per_block)
        add_reason(ev, R(BT__RULE_THREADS), "%lld threads per block > %d allowed (threads_limit)",
                   (long long)ev->threads, g->max_threads_per_block);
    if (ev->threads <= 0)
        add_reason(ev, BT__BROKEN_EVAL, "threads per block is %lld", (long long)ev->threads);
    if ((R & R(BT__RULE_NUM_WARPS)) && k->p_num_warps >= 0) {
        int64_t w = c->v[k->p_num_warps];
        if (!(is_pow2(w) && w <= 32))
            add_reason(ev, R(BT__RULE_NUM_WARPS), "num_warps=%lld not in {1,2,4,8,16,32} (num_warps_set)",
                       (long long)w);
    }
    if ((R & R(BT__RULE_STAGES)) && k->p_num_stages >= 0 && c->v[k->p_num_stages] < 1)
        add_reason(ev, R(BT__RULE_STAGES), "num_stages=%lld < 1 (stages_min)",
                   (long long)c->v[k->p_num_stages]);
}

/* Occupancy (seed 001 §4): blocks per SM from each resource, the minimum names the limiter. The
 * register count is an estimate: a block it says cannot fit is warned about, not eliminated
 * (only the compiler's exact count eliminates: plan --exact, or the tune's own compile). */
static void eval_occupancy(bt__model *m, bt__cfg_eval *ev, int64_t warp, int64_t smem_total)
{
    const bt_gpu *g = m->g;
    int64_t unit = g->reg_alloc_unit > 0 ? g->reg_alloc_unit : 256;
    int64_t regs_eff = ev->regs;
    if (g->max_regs_per_thread > 0 && regs_eff > g->max_regs_per_thread)
        regs_eff = g->max_regs_per_thread; /* the compiler caps and spills */
    int64_t warp_regs = sat_mul(cdiv64(sat_mul(regs_eff, warp), unit), unit);
    int64_t block_regs = sat_mul(warp_regs, ev->warps);
    ev->by_smem = ev->by_regs = ev->by_threads = ev->by_blocks = -1;
    if (g->smem_per_sm > 0 && smem_total > 0)
        ev->by_smem = g->smem_per_sm / sat_add(smem_total, g->smem_reserved_per_block);
    if (g->regs_per_sm > 0 && block_regs > 0) {
        ev->by_regs = (g->regs_per_block > 0 && block_regs > g->regs_per_block)
                          ? 0
                          : g->regs_per_sm / block_regs;
        if (ev->by_regs == 0) {
            add_warning(ev, "estimated ~%lld registers x %lld threads = %lld > %d per block/SM: "
                        "if the estimate holds no block fits (an estimate, so not eliminated; "
                        "plan --exact gives the compiler's count)",
                        (long long)regs_eff, (long long)ev->threads, (long long)block_regs,
                        g->regs_per_block > 0 ? g->regs_per_block : g->regs_per_sm);
            ev->by_regs = 1;
        }
    }
    if (g->max_threads_per_sm > 0 && ev->threads > 0) {
        ev->by_threads = g->max_threads_per_sm / ev->threads;
        if (g->max_warps_per_sm > 0 && ev->warps > 0 && g->max_warps_per_sm / ev->warps < ev->by_threads)
            ev->by_threads = g->max_warps_per_sm / ev->warps;
    }
    if (g->max_blocks_per_sm > 0)
        ev->by_blocks = g->max_blocks_per_sm;
    struct {
        int64_t v;
        const char *name;
    } lim[] = {{ev->by_smem, "shared memory"},
               {ev->by_regs, "registers"},
               {ev->by_threads, "threads"},
               {ev->by_blocks, "block limit"}};
    ev->blocks_per_sm = -1;
    ev->limiter = "none";
    for (size_t i = 0; i < BT__ARRAY_LEN(lim); i++)
        if (lim[i].v >= 0 && (ev->blocks_per_sm < 0 || lim[i].v < ev->blocks_per_sm)) {
            ev->blocks_per_sm = lim[i].v;
            ev->limiter = lim[i].name;
        }
    if (ev->blocks_per_sm < 0)
        ev->blocks_per_sm = 1;
    if (ev->blocks_per_sm == 0 && (m->rules & R(BT__RULE_FITS_SM))) {
        if (ev->by_smem == 0)
            add_reason(ev, R(BT__RULE_FITS_SM), "no block fits on an SM: %lld B shared memory + %lld reserved > %lld per SM (fits_sm)",
                       (long long)smem_total, (long long)g->smem_reserved_per_block, (long long)g->smem_per_sm);
        if (ev->by_threads == 0)
            add_reason(ev, R(BT__RULE_FITS_SM), "no block fits on an SM: %lld threads > %d per SM (fits_sm)",
                       (long long)ev->threads, g->max_threads_per_sm);
    }
    ev->occupancy = g->max_warps_per_sm > 0
                        ? (double)ev->blocks_per_sm * (double)ev->warps / g->max_warps_per_sm
                        : 0;
    if (ev->occupancy > 1)
        ev->occupancy = 1;
}

/* Waves of the grid over the SMs, and the last-tile efficiency per tiled dimension (seed 001
 * §5). Returns the number of block slots of the GPU. */
static int64_t eval_waves(bt__model *m, bt__cfg_eval *ev)
{
    const bt_kdesc *k = m->k;
    const bt_gpu *g = m->g;
    int64_t slots = sat_mul(ev->blocks_per_sm, g->sm_count > 0 ? g->sm_count : 1);
    if (slots > 0 && ev->grid > 0) {
        ev->waves = cdiv64(ev->grid, slots);
        ev->last_wave_fill =
            (double)(ev->grid - (ev->waves - 1) * slots) / (double)slots; /* < slots: no overflow */
    }
    ev->tile_eff = 1;
    ev->ntiles = k->ntiles;
    for (int t = 0; t < k->ntiles; t++) {
        int64_t dim = m->slots[k->tiles[t].dim_slot], tile = ev->cfg.v[k->tiles[t].param];
        if (tile <= 0 || dim <= 0) {
            ev->last_tile_eff[t] = 1;
            continue;
        }
        int64_t rem = dim % tile;
        ev->last_tile_eff[t] = rem ? (double)rem / (double)tile : 1.0;
        ev->tile_eff *= (double)dim / ((double)cdiv64(dim, tile) * (double)tile);
    }
    if (g->sm_count > 0 && ev->grid > 0 && ev->grid < g->sm_count)
        add_warning(ev, "grid of %lld blocks < %d SMs: %lld SMs idle", (long long)ev->grid,
                    g->sm_count, (long long)(g->sm_count - ev->grid));
    if (g->max_regs_per_thread > 0 && ev->regs > g->max_regs_per_thread)
        add_warning(ev, "estimated %lld registers/thread > %d: expect spills to local memory",
                    (long long)ev->regs, g->max_regs_per_thread);
    return slots;
}

/* The predicted time (docs/model.md): roofline terms over efficiencies, or the kernel's own perf
 * expression. */
static void predict(bt__model *m, bt__cfg_eval *ev, int64_t slots)
{
    const bt_kdesc *k = m->k;
    const bt_gpu *g = m->g;
    const bt_config *c = &ev->cfg;
    if (k->perf.e) {
        int64_t pv = 0;
        if (eval_opt(m, ev, &k->perf, 0, &pv))
            ev->pred_us = (double)pv;
        return;
    }
    const bt__roofline *r = &m->roof;
    double peak = r->peak_tflops;
    if (k->unit == BT__UNIT_TENSOR && !ev->tensor_core) { /* falls off the tensor cores */
        peak = bt__peak_for(g, m->p->dtype, BT__UNIT_SIMT, false, NULL);
        if (ev->valid)
            add_warning(ev, "not tensor-core eligible: runs at the %.1f TFLOP/s CUDA-core peak", peak);
    }
    double t_comp = peak > 0 ? r->flops / ev->tile_eff / (peak * 1e12) : 0;
    int64_t traffic = 0;
    eval_opt(m, ev, &k->traffic, (int64_t)r->bytes, &traffic);
    double bw = r->bw_gbps > 0 ? r->bw_gbps * 1e9 : 1e12;
    /* unique bytes come from DRAM; re-reads (traffic) mostly from L2, ~2.5x faster */
    double t_mem = fmax(r->bytes / bw, (double)traffic / (2.5 * bw));
    double warps_sm = (double)ev->blocks_per_sm * (double)ev->warps;
    double need = r->memory_bound ? (g->max_warps_per_sm > 0 ? g->max_warps_per_sm / 4.0 : 16) : 8;
    double eff_occ = warps_sm >= need ? 1 : (warps_sm > 0 ? warps_sm / need : 0.01);
    double eff_wave = (ev->waves > 0 && slots > 0)
                          ? (double)ev->grid / ((double)ev->waves * (double)slots)
                          : 1;
    bool overlap = k->p_num_stages < 0 || c->v[k->p_num_stages] >= 2;
    double t = overlap ? fmax(t_comp, t_mem) : t_comp + t_mem;
    /* a K loop hides load latency with what is in flight ahead of the math: (stages - 1) tiles of
     * the reduction dimension; below ~64 elements the math waits */
    if (k->p_num_stages >= 0) {
        int64_t ahead = sat_add(c->v[k->p_num_stages], -1), bk = 64;
        for (int t2 = 0; t2 < k->ntiles; t2++)
            if (k->tiles[t2].reduction)
                bk = c->v[k->tiles[t2].param];
        double inflight = (double)ahead * (double)bk;
        double pipe = inflight >= 64 ? 1.0 : fmax(0.5, inflight / 64.0);
        t /= pipe;
    }
    if (g->max_regs_per_thread > 0 && ev->regs > g->max_regs_per_thread)
        t *= 1.5;
    ev->pred_us = t / (eff_occ * (eff_wave > 0 ? eff_wave : 1)) * 1e6 + 2.0 /* launch */;
}

double bt__model_compile_weight(const bt_kdesc *k, const bt__cfg_eval *ev)
{
    if (k->ntiles <= 0 || ev->threads <= 0)
        return 0;
    double w = 1;
    for (int i = 0; i < k->ntiles; i++)
        w *= (double)ev->cfg.v[k->tiles[i].param];
    return w / (double)ev->threads;
}

bt_status bt__model_eval(bt__model *m, const bt_config *c, bt__cfg_eval *ev)
{
    const bt_kdesc *k = m->k;
    memset(ev, 0, sizeof *ev);
    ev->cfg = *c;
    ev->valid = true;
    for (int i = 0; i < k->space.nparams; i++)
        m->slots[i] = c->v[i];
    int64_t warp = m->g->warp_size > 0 ? m->g->warp_size : 32;
    eval_constraints(m, ev);
    int64_t smem_static = 0;
    eval_resources(m, ev, warp, &smem_static);
    /* the model's smem is the block's total (static + dynamic); launch.local_mem is only how much
     * of it is requested at launch, so it counts when the model gives no figure */
    int64_t smem_total = k->smem.e ? ev->smem : ev->dyn_smem;
    eval_rules(m, ev, warp, smem_total, smem_static);
    eval_occupancy(m, ev, warp, smem_total);
    int64_t slots = eval_waves(m, ev);
    predict(m, ev, slots);
    return BT_OK;
}
