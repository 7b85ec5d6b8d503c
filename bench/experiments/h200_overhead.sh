#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_overhead.sh — the host cost of a cached launch on the H200 (issue 14), run from the
# repository root with build/ and .carry/{lib,prefix,eng} carried: examples/engine's engine_cuda
# (bt_kernel_launch_ex on the engine's own stream against its own cuLaunchKernel, alternating
# batches of 256 launches; tuned, then wisdom-only) and bench/launch_overhead.c for the built-in
# vector_add and the Triton vector_add spec. Part of h200_round4.sh and h200_round5.sh.
set -u
BT_RUN=overhead . bench/device_env.sh
export LD_LIBRARY_PATH="$PWD/.carry/prefix/lib:$LD_LIBRARY_PATH"
for mode in tune wisdom-only; do
  log "engine_cuda 256 1024 1024 $mode"
  timeout 150 .carry/eng/engine_cuda 256 1024 1024 $mode "$OUT/engine_cuda_$mode.json" \
    > "$OUT/engine_cuda_$mode.log" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"; grep "host cost" "$OUT/engine_cuda_$mode.log" | tee -a "$OUT/summary.txt"
done
for spec in "" examples/triton/vector_add.json; do
  log "bt_launch_overhead ${spec:-builtin}"
  BLOCKTUNE_CACHE_DIR=/tmp/bt-overhead timeout 120 build/bt_launch_overhead cuda:0 $spec 2>&1 |
    tee -a "$OUT/summary.txt"
done
