#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round4.sh — one device call (build/ and .carry/ carried) measuring what landed since
# run-round3 before the next changes: the host cost of a launch (issue 14; engine_cuda and
# bt_launch_overhead, now alternating batches below the launch queue's depth, after the launch
# path's in-place dispatch entry), where a cold Triton compile's seconds go (issue 15;
# triton_pool_diag.py), what default tunes cost with screening on (issue 18 item 4; h200_cost.sh),
# the `gemm` front door with screening beside cuBLAS (issue 18; h200_front.sh) and the seed's
# 7 Triton matmul configs cold, warm and stored (issue 15; h200_triton.sh). Each part's console
# and summary are kept as console_<part>.txt and summary_<part>.txt.
set -u
FINAL=${OUT:-/tmp/bt-out}
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
diag() {
  BT_RUN=diag . bench/device_env.sh
  timeout 200 python3 bench/experiments/triton_pool_diag.py --workers "$(nproc)" | tee -a "$OUT/summary.txt"
}
part overhead bash bench/experiments/h200_overhead.sh
part diag diag
part seed bash bench/experiments/h200_triton.sh bt_seed
part cost bash bench/experiments/h200_cost.sh
part front env TUNE_TIMEOUT=70 bash bench/experiments/h200_front.sh
