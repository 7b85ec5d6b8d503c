/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules.c — the validity rules a plan applies (names) and the rule sets that group them (triton,
 * cuda, limits, all), parsed from a spec's "rules" or --rules. The model (model.c) checks them.
 */
#include "core/kdesc.h"

#include "core/util.h"

#include <stdio.h>
#include <string.h>

static const char *const rule_names[BT__RULE__COUNT] = {
    [BT__RULE_POW2_TILES] = "pow2_tiles", [BT__RULE_TC_DIMS] = "tc_dims",
    [BT__RULE_WARP_WIDTH] = "warp_width", [BT__RULE_SMEM] = "smem_limit",
    [BT__RULE_THREADS] = "threads_limit", [BT__RULE_NUM_WARPS] = "num_warps_set",
    [BT__RULE_STAGES] = "stages_min",     [BT__RULE_FITS_SM] = "fits_sm",
    [BT__RULE_SMEM_STATIC] = "smem_static", [BT__RULE_ACC_REGS] = "accumulator_regs",
};

const char *bt__rule_name(bt__rule r) { return (unsigned)r < BT__RULE__COUNT ? rule_names[r] : "?"; }

#define R(x) (1u << (x))
#define LIMITS                                                                                     \
    (R(BT__RULE_SMEM) | R(BT__RULE_THREADS) | R(BT__RULE_STAGES) | R(BT__RULE_FITS_SM) |           \
     R(BT__RULE_SMEM_STATIC))
static const struct {
    const char *name;
    uint32_t mask;
    const char *summary;
} rule_sets[] = {
    {"triton",
     LIMITS | R(BT__RULE_POW2_TILES) | R(BT__RULE_TC_DIMS) | R(BT__RULE_NUM_WARPS) |
         R(BT__RULE_ACC_REGS),
     "Triton-style kernels: pow2 tiles, tensor-core dims >= 16, num_warps a power of two <= 32, "
     "the accumulator (held by every thread of the block) within the registers of a thread"},
    {"cuda", LIMITS | R(BT__RULE_WARP_WIDTH) | R(BT__RULE_TC_DIMS),
     "hand-written CUDA/OpenCL kernels: any tile size, inner tile width a multiple of the warp"},
    {"limits", LIMITS, "hardware limits only"},
    {"all", (1u << BT__RULE__COUNT) - 1, "every rule"},
};

bool bt__rules_parse(const char *text, uint32_t *mask, bt_diag *diag)
{
    *mask = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    char *save = NULL;
    for (char *w = strtok_r(buf, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
        bool found = false;
        for (size_t i = 0; i < BT__ARRAY_LEN(rule_sets) && !found; i++)
            if (bt__streq_nocase(w, rule_sets[i].name)) {
                *mask |= rule_sets[i].mask;
                found = true;
            }
        for (int r = 0; r < BT__RULE__COUNT && !found; r++)
            if (bt__streq_nocase(w, rule_names[r])) {
                *mask |= R(r);
                found = true;
            }
        if (!found) {
            bt__diag_set(diag,
                         "unknown rule or rule set '%s' (sets: triton, cuda, limits, all; rules: "
                         "pow2_tiles, tc_dims, warp_width, smem_limit, threads_limit, "
                         "num_warps_set, stages_min, fits_sm, smem_static, accumulator_regs)",
                         w);
            return false;
        }
    }
    return true;
}
