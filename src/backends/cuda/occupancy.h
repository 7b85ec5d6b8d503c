/* SPDX-License-Identifier: Apache-2.0 */
/*
 * occupancy.h — exact CUDA occupancy from a hardware description, without a device (internal).
 */
#ifndef BT_BACKENDS_CUDA_OCCUPANCY_H
#define BT_BACKENDS_CUDA_OCCUPANCY_H

#include "blocktune.h"

#include <stdint.h>

/* The number of blocks of threads_per_block threads, each using regs_per_thread registers per
 * thread and smem_per_block bytes of shared memory (static + dynamic, without the system's
 * reservation, which is added here), that one SM of g holds at once, by the rules the CUDA
 * occupancy calculator applies for g's compute capability. Shared memory above the default 48 KiB
 * per block is assumed to be opted in (cuFuncSetAttribute), up to g->smem_per_block_optin.
 *
 * *limiter (when non-NULL) receives a static string naming what binds: "warps" (threads per SM),
 * "blocks" (blocks per SM), "registers" (the SM's register file), "smem" (the SM's shared
 * memory); on ties the first of that order. When the block cannot run at all the result is 0 and
 * the limiter says why: "threads_per_block", "regs_per_thread", "regs_per_block",
 * "smem_per_block", or "invalid" for a non-positive thread count, a negative register or smem
 * count, or a g without SM limits. Fields of g left 0 take the values of g's compute capability
 * where CUDA fixes them (warp 32, registers allocated per warp in units of 256, at most 255 per
 * thread). */
int bt__cuda_occupancy(const bt_gpu *g, int threads_per_block, int regs_per_thread,
                       int64_t smem_per_block, const char **limiter);

#endif
