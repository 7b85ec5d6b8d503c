/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model.h — the architecture-aware analytic model, per config (internal).
 *
 * For one config of a kernel, a problem and a GPU: shared memory, estimated registers, threads,
 * blocks per SM with the limiting resource named, occupancy, grid, waves and last-wave fill,
 * last-tile efficiency per tiled dimension, vector alignment, tensor-core eligibility, the rules
 * of the kernel's rule set and its constraints (every broken one kept, with numbers), warnings,
 * and a predicted time used for ranking (docs/model.md). Per problem: the roofline.
 */
#ifndef BT_CORE_MODEL_H
#define BT_CORE_MODEL_H

#include "core/kdesc.h"

#define BT__MAX_WARNINGS 4

typedef struct bt__cfg_eval {
    bt_config cfg;
    uint64_t index;   /* position in the kernel's enumeration */
    bool valid;
    char *reasons;    /* malloc'd, '\n'-separated; NULL when valid */
    uint32_t broken;  /* bit per bt__rule broken; bit 30 constraint, bit 31 evaluation error */
    int nwarnings;
    char warnings[BT__MAX_WARNINGS][200];

    int64_t smem, threads, warps, regs, acc_bytes, dyn_smem;
    int64_t blocks_per_sm, by_smem, by_regs, by_threads, by_blocks; /* -1: not limiting/unknown */
    const char *limiter; /* "shared memory", "registers", "threads", "block limit" */
    double occupancy;
    int64_t grid_dims[3], block_dims[3], grid;
    int64_t waves;
    double last_wave_fill;
    int ntiles;
    double last_tile_eff[BT__MAX_TILES]; /* (dim % tile)/tile, 1 when it divides */
    double tile_eff;                     /* useful / padded work over all tiled dims */
    bool vector_ok, tensor_core;
    double pred_us; /* predicted time (ranking); the perf expression's value when given */

    /* plan --exact: what the compiler says (NVRTC for the GPU's architecture) */
    bool exact;          /* compiled and read */
    bool exact_failed;   /* the compile failed (x_error says why) */
    int x_regs;
    int64_t x_spill, x_smem, x_stack;
    int x_blocks;
    const char *x_limiter;
    double x_occ;
    bool x_disagrees; /* the estimate is far from the compiler's numbers */
    char x_error[160];
} bt__cfg_eval;

#define BT__BROKEN_CONSTRAINT (1u << 30)
#define BT__BROKEN_EVAL (1u << 31)

typedef struct bt__roofline {
    double flops, bytes, intensity, ridge, peak_tflops, bw_gbps, floor_us;
    const char *peak_name; /* "fp16 tensor" ... */
    bool memory_bound;
} bt__roofline;

/* A model context: the kernel, problem and GPU with the constant slots filled once. */
typedef struct bt__model {
    const bt_kdesc *k;
    const bt_problem *p;
    const bt_gpu *g;
    uint32_t rules;
    int64_t *slots; /* k->nslots */
    bt__roofline roof;
} bt__model;

bt_status bt__model_init(bt__model *m, const bt_kdesc *k, const bt_problem *p, const bt_gpu *g,
                         uint32_t rules, bt_diag *diag);
void bt__model_fini(bt__model *m);
/* Evaluates one config into ev (ev->reasons must be freed by bt__cfg_eval_clear). Not
 * thread-safe on one model (it uses m->slots). */
bt_status bt__model_eval(bt__model *m, const bt_config *c, bt__cfg_eval *ev);
void bt__cfg_eval_clear(bt__cfg_eval *ev);
/* What compiling config ev of k takes, relatively: the work one thread's code unrolls, the
 * product of the model's tile sizes (every "tiles" entry, the reduction's too) over the threads
 * per block. On the H200 it ranks the compile times of Triton's tutorial matmul at
 * 3001x2999x1031 with Spearman 0.85 (the 70 valid configs of the anchors' 108, run-round16), and
 * replaying those compile times on 16 threads, the heaviest first ends in 5.6 s where the order
 * measured (the model's fastest predicted first) ends in 8.1 (their sum over 16 is 5.5).
 * 0 when k has no tiles or ev no threads (nothing known: every config alike). */
double bt__model_compile_weight(const bt_kdesc *k, const bt__cfg_eval *ev);
/* Marks ev invalid for a broken rule (bit) and appends the reason. */
void bt__cfg_eval_reason(bt__cfg_eval *ev, uint32_t bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Peak for a dtype and unit ("fp16 tensor"); 0 if the GPU lacks it. */
double bt__peak_for(const bt_gpu *g, bt__dtype t, bt__compute_unit u, bool allow_tf32,
                    const char **name);

#endif
