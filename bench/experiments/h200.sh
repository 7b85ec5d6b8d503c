#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200.sh — the CUDA issue's measurements on the H200, blocktune and the peers in one run.
# Runs on the device machine from the repository root, with the build folder `build` (built on
# the development machine) and .carry/lib (libcmocka for the tests) carried along:
#   device run: bash bench/experiments/h200.sh     (writes everything under $OUT, prints a summary last)
set -u
BT_RUN=results . bench/device_env.sh
{
  echo "date: $(date -u +%FT%TZ)"; echo "git: $(git rev-parse HEAD 2>/dev/null)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvcc --version | tail -2
} > "$OUT/provenance.txt" 2>&1
cat "$OUT/provenance.txt"
log "devices"; $bt devices 2>&1 | tee -a "$OUT/summary.txt"
cuda_tests
memory_bound_tunes
tune gemm_fp32_2048 gemm --m 2048 --n 2048 --k 2048 --strategy model --budget 8
log "measurement quality: five tunes of vector_add n=2^26, and an independent event measurement"
timeout 200 build/bt_quality 67108864 2>&1 | tee "$OUT/quality.json" | tee -a "$OUT/summary.txt"
log "tuning cost: gemm fp32 1024^3, 8 configs, cold kernel cache then warm"
rm -rf /tmp/bt-cache
tune gemm8_cold gemm --m 1024 --n 1024 --k 1024 --strategy model --budget 8 --warmup-ms 5 --rep-ms 20
tune gemm8_warm gemm --m 1024 --n 1024 --k 1024 --strategy model --budget 8 --warmup-ms 5 --rep-ms 20
log "launch overhead (host us per launch of a tiny kernel)"
build/bt_launch_overhead cuda:0 2>&1 | tee "$OUT/launch_overhead.json" | tee -a "$OUT/summary.txt"
log "peers (torch / Triton)"
BASELINE_OUT="$OUT" timeout 300 python3 bench/peers/triton_h200_mem.py > "$OUT/peers.log" 2>&1; echo "peers rc=$?"
grep -E "copy|best|torch|layernorm|reduce" "$OUT/peers.log" | tail -12 | tee -a "$OUT/summary.txt"
