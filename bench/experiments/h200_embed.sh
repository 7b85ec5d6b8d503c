#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_embed.sh — the 0.2.0 embedding on the H200 (issue 14) and the CUDA tests after the round's
# merges: examples/engine's engine_cuda (CUDA runtime memory and stream, softmax → GEMM →
# layernorm through blocktune, then by lookup with the engine's own cuLaunchKernel, and the host
# cost of a launch against a bare cuLaunchKernel) at two sizes, tuned then wisdom-only; the CUDA
# and engine tests on the GPU; Kernel Tuner's T1 test file tuned with our stand-in kernel; the
# launch overhead. The device has no -dev headers, so the installed package and the examples
# are built here and carried:
#   cmake --install build --prefix $PWD/.carry/prefix
#   cmake -S examples/engine -B .carry/eng -DCMAKE_PREFIX_PATH=$PWD/.carry/prefix
#   cmake --build .carry/eng
#   device run (build/ and .carry/ carried): bash bench/experiments/h200_embed.sh
set -u
BT_RUN=embed . bench/device_env.sh
export LD_LIBRARY_PATH="$PWD/.carry/prefix/lib:$LD_LIBRARY_PATH" BT_SOURCE_DIR=$PWD
for t in test_cuda test_engine test_embed_cuda test_verify test_backends test_ktstyle test_api; do
  log "$t"; timeout 200 "build/$t" > "$OUT/$t.log" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "FAILED|PASSED|SKIP" "$OUT/$t.log" | head -8 | tee -a "$OUT/summary.txt"
done
mkdir -p "$OUT/engine"
for size in "256 1024 1024" "1024 4096 4096"; do
  tag=$(echo "$size" | tr ' ' x)
  for mode in tune wisdom-only; do
    log "engine_cuda $size $mode"
    timeout 120 .carry/eng/engine_cuda $size $mode "$OUT/engine/engine_cuda_${tag}_$mode.json" \
      > "$OUT/engine/engine_cuda_${tag}_$mode.log" 2>&1
    echo "rc=$?" | tee -a "$OUT/summary.txt"
    tail -12 "$OUT/engine/engine_cuda_${tag}_$mode.log" | tee -a "$OUT/summary.txt"
  done
done
log "launch overhead"; timeout 60 build/bt_launch_overhead 2>&1 | tail -8 | tee -a "$OUT/summary.txt"
tune t1_kt_convolution tests/data/t1/test_T1_input.json --store none --time-limit 20
# issue 19: a sweep of the small-M family over M = 1 ... 4096 (13 sizes) at N = K = 8192, fp16,
# each key with a 15 s limit; the table is the report (summary.txt keeps its lines)
TUNE_TIMEOUT=330 tune smallm_sweep gemm_smallm --m pow2:1..4096 --n 8192 --k 8192 --dtype fp16 \
  --time-limit 15 --store "$OUT/sweep.db"
grep -E "^ *[0-9]+ " "$OUT/smallm_sweep.txt" | head -20 | tee -a "$OUT/summary.txt"
