#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_final.sh — CUDA tests once more, the row-wise kernels re-tuned with the streaming-load
# parameter (CS) beside Triton in the same run, and the shipped wisdom produced: every built-in
# kernel tuned at its common shapes into one store, exported as wisdom/<device>.json.
set -u
BT_RUN=final . bench/device_env.sh
cuda_tests
tune softmax_32768x1024 softmax --rows 32768 --cols 1024
tune softmax_8192x8192 softmax --rows 8192 --cols 8192
tune softmax_4096x30000 softmax --rows 4096 --cols 30000
tune layernorm_32768x4096 layernorm --rows 32768 --cols 4096
tune layernorm_8192x8192 layernorm --rows 8192 --cols 8192
log "peers in the same run"
BASELINE_OUT="$OUT" timeout 200 python3 bench/peers/triton_h200_mem.py > "$OUT/peers.log" 2>&1; echo "rc=$?"
grep -E "copy|softmax|layernorm" "$OUT/peers.log" | tee -a "$OUT/summary.txt"
log "wisdom: the other common shapes"
for n in 16777216 268435456; do tune vadd_$n vector_add --n $n; tune reduce_$n reduce --n $n; done
tune softmax_4096x4096 softmax --rows 4096 --cols 4096
tune layernorm_4096x4096 layernorm --rows 4096 --cols 4096
tune gemm_1024 gemm --m 1024 --n 1024 --k 1024 --strategy model --budget 16
mkdir -p "$OUT/wisdom"
$bt cache export --device "NVIDIA H200" "$OUT/wisdom/" 2>&1 | tee -a "$OUT/summary.txt"
$bt cache list 2>&1 | tee -a "$OUT/summary.txt"
