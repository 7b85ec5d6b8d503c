/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dtype.c — element types: names, sizes, parsing; and the device symbols that expressions see.
 */
#include "core/kdesc.h"
#include "core/util.h"

#include <string.h>

static const struct {
    const char *name;
    int size;
    const char *aliases[4];
} dtypes[BT__DT__COUNT] = {
    [BT__DT_FP32] = {"fp32", 4, {"float32", "float", "f32", NULL}},
    [BT__DT_FP16] = {"fp16", 2, {"float16", "half", "f16", NULL}},
    [BT__DT_BF16] = {"bf16", 2, {"bfloat16", NULL}},
    [BT__DT_FP64] = {"fp64", 8, {"float64", "double", "f64", NULL}},
    [BT__DT_FP8] = {"fp8", 1, {"fp8e4m3", "e4m3", NULL}},
    [BT__DT_INT8] = {"int8", 1, {"i8", NULL}},
    [BT__DT_INT32] = {"int32", 4, {"i32", "int", NULL}},
    [BT__DT_INT64] = {"int64", 8, {"i64", "long", NULL}},
};

const char *bt__dtype_name(bt__dtype t) { return (unsigned)t < BT__DT__COUNT ? dtypes[t].name : "?"; }
int bt__dtype_size(bt__dtype t) { return (unsigned)t < BT__DT__COUNT ? dtypes[t].size : 0; }

bool bt__dtype_parse(const char *s, bt__dtype *out)
{
    for (int i = 0; i < BT__DT__COUNT; i++) {
        if (bt__streq_nocase(s, dtypes[i].name)) {
            *out = (bt__dtype)i;
            return true;
        }
        for (int a = 0; dtypes[i].aliases[a]; a++)
            if (bt__streq_nocase(s, dtypes[i].aliases[a])) {
                *out = (bt__dtype)i;
                return true;
            }
    }
    return false;
}

static int64_t g_smem_block(const bt_gpu *g) { return g->smem_per_block_optin ? g->smem_per_block_optin : g->smem_per_block; }
static int64_t g_smem_block_default(const bt_gpu *g) { return g->smem_per_block; }
static int64_t g_smem_sm(const bt_gpu *g) { return g->smem_per_sm; }
static int64_t g_regs_sm(const bt_gpu *g) { return g->regs_per_sm; }
static int64_t g_regs_block(const bt_gpu *g) { return g->regs_per_block; }
static int64_t g_regs_thread(const bt_gpu *g) { return g->max_regs_per_thread; }
static int64_t g_threads_block(const bt_gpu *g) { return g->max_threads_per_block; }
static int64_t g_threads_sm(const bt_gpu *g) { return g->max_threads_per_sm; }
static int64_t g_warps_sm(const bt_gpu *g) { return g->max_warps_per_sm; }
static int64_t g_blocks_sm(const bt_gpu *g) { return g->max_blocks_per_sm; }
static int64_t g_sm_count(const bt_gpu *g) { return g->sm_count; }
static int64_t g_warp(const bt_gpu *g) { return g->warp_size; }
static int64_t g_l2(const bt_gpu *g) { return g->l2_bytes; }
static int64_t g_cc(const bt_gpu *g) { return g->cc_major * 10 + g->cc_minor; }

static const bt__dev_sym dev_syms[] = {
    {"smem_per_block", g_smem_block},
    {"smem_per_block_default", g_smem_block_default},
    {"smem_per_sm", g_smem_sm},
    {"regs_per_sm", g_regs_sm},
    {"regs_per_block", g_regs_block},
    {"max_regs_per_thread", g_regs_thread},
    {"max_threads_per_block", g_threads_block},
    {"max_threads_per_sm", g_threads_sm},
    {"max_warps_per_sm", g_warps_sm},
    {"max_blocks_per_sm", g_blocks_sm},
    {"sm_count", g_sm_count},
    {"warp_size", g_warp},
    {"l2_bytes", g_l2},
    {"cc", g_cc},
};

const bt__dev_sym *bt__dev_syms(int *count)
{
    *count = (int)BT__ARRAY_LEN(dev_syms);
    return dev_syms;
}
