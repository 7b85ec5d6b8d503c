#!/usr/bin/env bash
# smallm.sh — issue 18 item 1 on the H200: blocktune tunes the small-M GEMM family in both layouts
# (gemm_smallm_nt: B as torch.nn.functional.linear's (N, K) weight; gemm_smallm: B as (K, N)) at
# every small-M shape of the table (1×4096×4096, 1×8192×28672, 1×28672×8192, and
# M = 1, 2, 4, 8, 16, 32, 64 at N = K = 8192; fp16), then bench/peers/smallm_peers.py times
# cuBLAS (F.linear and torch.matmul) at the same shapes the same way (cache flush before every
# run, CUDA events, median and p20/p80) and prints one table against the targets.
# Each tune is the whole thing (compile + verify at the problem and the boundary sizes + search +
# finals), store off, default strategy; the kernel cache stays warm from tune to tune (the
# compiled kernels do not depend on the problem). 20 tunes of --time-limit 12 plus the peers keep
# the run under 8 minutes. The specs are given by path, so this works whether or not the build
# lists them as built-ins. Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/smallm.sh
set -u
BT_RUN=smallm . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"
TUNE_OPTS=${TUNE_OPTS:---warmup-ms 10 --rep-ms 40 --time-limit 12}
export TUNE_TIMEOUT=${TUNE_TIMEOUT:-60}
nvcc --version 2>/dev/null | tail -2 >> "$OUT/provenance.txt"
t_start=$(date +%s)
for shape in "1 8192 8192" "1 4096 4096" "1 8192 28672" "1 28672 8192" "2 8192 8192" \
             "4 8192 8192" "8 8192 8192" "16 8192 8192" "32 8192 8192" "64 8192 8192"; do
  set -- $shape
  for layout in nt kn; do
    spec=kernels/specs/gemm_smallm.json; [ $layout = nt ] && spec=kernels/specs/gemm_smallm_nt.json
    tune "tune_${layout}_$1x$2x$3" "$spec" --m $1 --n $2 --k $3 --dtype fp16 --store none $TUNE_OPTS
  done
done
log "tunes took $(( $(date +%s) - t_start )) s"
log "cuBLAS in the same run (bench/peers/smallm_peers.py), and the table"
timeout 150 python3 bench/peers/smallm_peers.py "$OUT" 2>&1 | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt" 2>&1
log "whole run $(( $(date +%s) - t_start )) s"
