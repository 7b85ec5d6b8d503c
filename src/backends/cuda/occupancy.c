/* SPDX-License-Identifier: Apache-2.0 */
/*
 * occupancy.c — blocks per SM of a CUDA kernel from its resources and the GPU's limits, as the
 * hardware schedules them (the rules of CUDA's occupancy calculator), with no device needed.
 *
 * Four limits, each a number of resident blocks per SM:
 *   warps      the SM's warp slots / the block's warps (threads rounded up to whole warps);
 *   registers  registers are given to warps, regs x 32 rounded up to the allocation unit (256);
 *              each of the SM's 4 sub-partitions holds regs_per_sm / 4 of them and whole warps
 *              only; a block must also fit regs_per_block, checked with its warps rounded up to
 *              a multiple of the sub-partitions (how the hardware checks it);
 *   smem       shared memory per block plus the system's reservation (1 KiB from sm_80 on),
 *              rounded up to the allocation granularity (128 B from sm_80 on, 256 B before),
 *              against the SM's shared memory with the largest carveout;
 *   blocks     the SM's block slots.
 * bt__cuda_occupancy_of is the backend's vtable entry over a compiled function's resources.
 */
#include "backends/cuda/occupancy.h"

#include "backends/cuda/cuda.h"

#include <limits.h>
#include <stddef.h>

static int64_t round_up(int64_t x, int64_t unit)
{
    return unit > 0 ? (x + unit - 1) / unit * unit : x;
}

static int fail(const char **limiter, const char *why)
{
    if (limiter)
        *limiter = why;
    return 0;
}

int bt__cuda_occupancy(const bt_gpu *g, int threads_per_block, int regs_per_thread,
                       int64_t smem_per_block, const char **limiter)
{
    if (!g || threads_per_block <= 0 || regs_per_thread < 0 || smem_per_block < 0)
        return fail(limiter, "invalid");
    int cc = g->cc_major;
    int warp = g->warp_size > 0 ? g->warp_size : 32;
    int max_warps = g->max_warps_per_sm > 0 ? g->max_warps_per_sm
                                             : g->max_threads_per_sm / warp;
    if (g->max_threads_per_sm > 0 && g->max_threads_per_sm / warp < max_warps)
        max_warps = g->max_threads_per_sm / warp;
    if (max_warps <= 0 || g->max_blocks_per_sm <= 0 || g->regs_per_sm <= 0 ||
        g->smem_per_sm <= 0)
        return fail(limiter, "invalid");

    int max_tpb = g->max_threads_per_block > 0 ? g->max_threads_per_block : 1024;
    if (threads_per_block > max_tpb)
        return fail(limiter, "threads_per_block");
    int64_t warps_pb = (threads_per_block + warp - 1) / warp;

    /* Registers. */
    int max_rpt = g->max_regs_per_thread > 0 ? g->max_regs_per_thread : 255;
    if (regs_per_thread > max_rpt)
        return fail(limiter, "regs_per_thread");
    int64_t unit = g->reg_alloc_unit > 0 ? g->reg_alloc_unit : 256;
    int partitions = (cc == 6 && g->cc_minor == 0) ? 2 : 4;
    int64_t regs_warp = round_up((int64_t)regs_per_thread * warp, unit);
    int64_t regs_pb_limit = g->regs_per_block > 0 ? g->regs_per_block : g->regs_per_sm;
    if (regs_warp * round_up(warps_pb, partitions) > regs_pb_limit ||
        regs_warp * warps_pb > regs_pb_limit)
        return fail(limiter, "regs_per_block");
    int64_t by_regs = INT_MAX;
    if (regs_warp > 0)
        by_regs = (g->regs_per_sm / partitions / regs_warp) * partitions / warps_pb;

    /* Shared memory. */
    int64_t gran = (cc >= 1 && cc < 8) ? 256 : 128;
    int64_t reserved = g->smem_reserved_per_block;
    if (reserved <= 0)
        reserved = cc >= 8 ? 1024 : 0;
    int64_t optin = g->smem_per_block_optin > g->smem_per_block ? g->smem_per_block_optin
                                                                : g->smem_per_block;
    if (optin <= 0)
        optin = g->smem_per_sm - reserved;
    int64_t alloc = round_up(smem_per_block + reserved, gran);
    if (alloc > optin + reserved)
        return fail(limiter, "smem_per_block");
    int64_t by_smem = alloc > 0 ? g->smem_per_sm / alloc : INT_MAX;

    int64_t by_warps = max_warps / warps_pb;
    int64_t by_blocks = g->max_blocks_per_sm;

    /* The smallest, ties to the first in this order. */
    int64_t best = by_warps;
    const char *why = "warps";
    if (by_regs < best) {
        best = by_regs;
        why = "registers";
    }
    if (by_smem < best) {
        best = by_smem;
        why = "smem";
    }
    if (by_blocks < best) {
        best = by_blocks;
        why = "blocks";
    }
    if (limiter)
        *limiter = why;
    return best > INT_MAX ? INT_MAX : (int)best;
}

int bt__cuda_occupancy_of(const bt_gpu *g, const bt__kres *res, int threads, int64_t dyn_smem,
                          const char **limiter)
{
    if (!g || g->cc_major <= 0 || !res)
        return -1;
    int64_t smem = (res->static_smem > 0 ? res->static_smem : 0) + dyn_smem;
    return bt__cuda_occupancy(g, threads, res->regs_per_thread, smem, limiter);
}
