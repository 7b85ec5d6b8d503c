#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_gemm.sh — issue 6's table in one run on the H200: blocktune tunes both tensor-core GEMM
# families (gemm_wgmma: sm_90a, TMA + wgmma; gemm_mma: mma.sync) at every shape and dtype of the
# table, then cuBLAS and Triton are timed in the same run (bench/peers/gemm_h200.py), and
# bench/gemm_table.py writes the side-by-side table (gemm_table.md) from the JSON files.
# Each tune is the whole thing (compile + verify at the problem and the boundary sizes + search
# + measure), cold kernel cache, store off, the default strategy for the space's size, and
# --time-limit 9: the whole tune aims to end within 9 s (the 10 s for a whole tune, less
# a second for the process to start and open the device); its wall time is in the table. Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/h200_gemm.sh
set -u
BT_RUN=gemm . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"
TUNE_OPTS=${TUNE_OPTS:---warmup-ms 10 --rep-ms 40 --time-limit 9}
gemm_tune() { local name=$1; shift; tune "tune_$name" "$@" --store none $TUNE_OPTS; }
nvcc --version | tail -2 >> "$OUT/provenance.txt" 2>&1
for dt in fp16 bf16; do
  for s in 4096 8192; do
    gemm_tune wgmma_${s}_$dt gemm_wgmma --m $s --n $s --k $s --dtype $dt
    gemm_tune mma_${s}_$dt gemm_mma --m $s --n $s --k $s --dtype $dt
  done
done
gemm_tune wgmma_16x8192x8192_fp16 gemm_wgmma --m 16 --n 8192 --k 8192 --dtype fp16
gemm_tune mma_16x8192x8192_fp16 gemm_mma --m 16 --n 8192 --k 8192 --dtype fp16
gemm_tune wgmma_3001x2999x1031_fp16 gemm_wgmma --m 3001 --n 2999 --k 1031 --dtype fp16
gemm_tune mma_3001x2999x1031_fp16 gemm_mma --m 3001 --n 2999 --k 1031 --dtype fp16
log "peers in the same run (cuBLAS, Triton)"
timeout 400 python3 bench/peers/gemm_h200.py 2>&1 | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt" 2>&1
log "ncu: cuBLAS's kernel for 4096^3 fp16 (its SM clock and tensor-pipe load, beside ours: NOTES 12)"
timeout 150 ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --kernel-name 'regex:.*(gemm|nvjet|xmma|cutlass).*' --launch-skip 2 --launch-count 1 python3 -c "
import torch
a = torch.randn(4096, 4096, device='cuda', dtype=torch.float16); b = torch.randn_like(a)
for _ in range(6): a @ b
torch.cuda.synchronize()" > "$OUT/ncu_cublas.txt" 2>&1
grep -E "==PROF==|SM Frequency|Duration|Compute \(SM\)|Issued Ipc" "$OUT/ncu_cublas.txt" | tail -6 | tee -a "$OUT/summary.txt"
python3 bench/gemm_table.py "$OUT" > "$OUT/gemm_table.md" 2>&1; cat "$OUT/gemm_table.md"
