#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_rec_ab.sh — issue 14: the dispatch entry's launch prepared once (the CUDA backend's
# launch_rec: function, geometry and scalar parameters laid out when the entry is made, only the
# buffers' device pointers set per launch) against the launch path before it. examples/engine's
# engine_cuda (wisdom-only, pinned near the GPU) against two libraries, alternating A B four times
# in one call: A = .carry/prefix_a/lib (252e168, before), B = .carry/prefix/lib (with it). Then
# test_cuda and test_engine on the GPU (launches through the prepared path, results checked).
#   device run (build/ and .carry/{lib,prefix,prefix_a,eng} carried): bash bench/experiments/h200_rec_ab.sh
set -u
BT_RUN=rec . bench/device_env.sh
for i in 1 2 3 4; do
  for v in a b; do
    lib=$PWD/.carry/prefix/lib
    [ "$v" = a ] && lib=$PWD/.carry/prefix_a/lib
    log "engine_cuda wisdom-only, library $v, run $i"
    LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 100 .carry/eng/engine_cuda 256 1024 1024 wisdom-only \
      "$OUT/engine_cuda_${v}_$i.json" > "$OUT/engine_cuda_${v}_$i.log" 2>&1
    echo "rc=$?" | tee -a "$OUT/summary.txt"; grep -E "host cost|max error" "$OUT/engine_cuda_${v}_$i.log" | tee -a "$OUT/summary.txt"
  done
done
cuda_tests
