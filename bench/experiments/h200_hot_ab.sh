#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_hot_ab.sh — issue 14: does placing the launch path's functions together (a BT__HOT macro,
# __attribute__((hot)): .text.hot, two code pages instead of five) lower a cached launch's host
# cost? examples/engine's engine_cuda (wisdom-only) against two libraries, alternating A B A B A B
# in one call: A = .carry/prefix_a/lib (the tree before, d3453c4), B = .carry/prefix/lib (the
# same with the attribute). It did not (bench/NOTES.md 35), and the attribute was not kept.
#   device run (build/ and .carry/{lib,prefix,prefix_a,eng} carried): bash bench/experiments/h200_hot_ab.sh
set -u
BT_RUN=hot . bench/device_env.sh
for i in 1 2 3; do
  for v in a b; do
    lib=$PWD/.carry/prefix/lib
    [ "$v" = a ] && lib=$PWD/.carry/prefix_a/lib
    log "engine_cuda wisdom-only, library $v: $(LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH ldd .carry/eng/engine_cuda | grep -o '/[^ ]*libblocktune[^ ]*')"
    LD_LIBRARY_PATH=$lib:$LD_LIBRARY_PATH timeout 100 .carry/eng/engine_cuda 256 1024 1024 wisdom-only \
      "$OUT/engine_cuda_${v}_$i.json" > "$OUT/engine_cuda_${v}_$i.log" 2>&1
    echo "rc=$?" | tee -a "$OUT/summary.txt"; grep "host cost" "$OUT/engine_cuda_${v}_$i.log" | tee -a "$OUT/summary.txt"
  done
done
