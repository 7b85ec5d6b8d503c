#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_front.sh — issue 18 item 2 on the H200: `blocktune tune gemm` (the front door: it chooses
# among gemm_wgmma, gemm_mma, gemm_smallm, gemm_smallm_tma and its own SIMT kernel) with default
# options at the issue's shapes, each a whole tune from a cold kernel cache and an empty store,
# with its wall time, the family that won, its margin and TFLOP/s; then cuBLAS (torch.matmul) at
# the same shapes in the same run, each timed with CUDA events after an L2 flush (median of 50).
# Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/h200_front.sh
set -u
BT_RUN=front . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"
TUNE_TIMEOUT=${TUNE_TIMEOUT:-400}
shapes="3001x2999x1031 4096x4096x4096 1x8192x8192 16x8192x8192 64x8192x8192"
for s in $shapes; do
  IFS=x read -r m n k <<<"$s"
  tune "front_$s" gemm --m "$m" --n "$n" --k "$k" --dtype fp16
  # the family section of the report: the winner, its margin, every family's verdict and times
  sed -n '/^Families of gemm:/,/The choice:/p' "$OUT/front_$s.txt" | tee -a "$OUT/summary.txt"
done
log "the plan of each shape (the families' predictions and why the others were ruled out)"
for s in $shapes; do
  IFS=x read -r m n k <<<"$s"
  $bt plan gemm --gpu h200 --m "$m" --n "$n" --k "$k" --dtype fp16 |
    sed -n '/^Families of gemm/,$p' > "$OUT/plan_$s.txt" 2>&1
done
log "a second launch of the same keys: dispatched from the store (no tune)"
for s in $shapes; do
  IFS=x read -r m n k <<<"$s"
  tune "again_$s" gemm --m "$m" --n "$n" --k "$k" --dtype fp16
done
log "cuBLAS (torch.matmul) in the same run"
timeout 300 python3 bench/peers/cublas_shapes.py $shapes 2>&1 | tee -a "$OUT/summary.txt"
