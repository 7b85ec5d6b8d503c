#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_check.sh — the CUDA code paths' tests on the H200 (no benchmarks): NVRTC's log on that
# machine, the CUDA backend tests, the engine tests on the GPU (the planted fault included), and
# plan --exact. Run on the device machine from the repository root with build/ and .carry/.
set -u
BT_RUN=check . bench/device_env.sh
log "nvrtc log"; build/bt_nvrtc_log 2>&1 | tee -a "$OUT/summary.txt"
log "test_cuda"; timeout 150 build/test_cuda > "$OUT/test_cuda.log" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
grep -E "FAILED|PASSED|ERROR|LINE|SKIP" "$OUT/test_cuda.log" | head -20 | tee -a "$OUT/summary.txt"
log "test_engine (GPU)"; timeout 300 build/test_engine > "$OUT/test_engine.log" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
grep -E "FAILED|PASSED|ERROR|LINE|SKIP|restarting|faulted|WINNER|launch_failed" "$OUT/test_engine.log" | head -30 | tee -a "$OUT/summary.txt"
log "plan --exact on the H200"; timeout 120 build/blocktune plan softmax --gpu h200 --rows 4096 --cols 8192 --exact > "$OUT/plan_exact.txt" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
head -16 "$OUT/plan_exact.txt" | tee -a "$OUT/summary.txt"
