#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_issue18.sh A|B — issue 18's table re-measured on the H200, blocktune with default options
# (as a new user would tune) beside cuBLAS and Triton in the same run, and Nsight Compute where a
# target is missed. Two device calls on one warm machine (each well inside the tool's 10 minutes;
# build-dev/ and .carry/ carried, `bash bench/device_build.sh link` first):
#   A  the large and odd GEMMs: gemm_wgmma 4096^3 and 8192^3 in fp16 and bf16, gemm_mma and the
#      `gemm` front door at 3001x2999x1031, the front door at 17x4097x63; cuBLAS and Triton (the
#      anchors' best configs, re-timed) by bench/peers/gemm_h200.py; bench/gemm_table.py's table;
#      ncu on this run's gemm_wgmma 4096^3 winner and on cuBLAS's kernel (the tensor pipe), and
#      on the odd shape's winner and cuBLAS's; then what default tunes cost
#      (bench/experiments/h200_cost.sh: cold, warm kernel cache, warm store); and issue 15's
#      108-config Triton spaces from C at 3001x2999x1031 and 4096^3 (h200_triton.sh bt_odd,
#      bt_mm108: the compiles now heaviest first)
#   B  the small-M rows: the front door (B as K x N) and gemm_smallm_nt_tma (W as N x K, the
#      layout of torch.nn.functional.linear) at 1x4096x4096, 1x8192x8192, 1x8192x28672,
#      1x28672x8192, 16x8192x8192, 64x8192x8192; cuBLAS timed as blocktune times
#      (bench/peers/smallm_peers.py --tuned-only); the read ceiling (the built-in `reduce` over the
#      same bytes) and ncu on the 1x8192x8192 winner, `reduce` and cuBLAS's F.linear kernel;
#      then issue 15's decorator (h200_decorator.sh) once more
# Output: issue18_<part>.tgz (consoles, summaries) and the parts' own archives.
set -u
ROUND=issue18
. bench/experiments/round_lib.sh
. bench/experiments/ncu_lib.sh
part_gemm() {
  BT_RUN=gemm18 . bench/device_env.sh
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  nvcc --version | tail -2 >> "$OUT/provenance.txt" 2>&1
  local dt s
  for dt in fp16 bf16; do
    for s in 4096 8192; do
      tune "tune_wgmma_${s}_$dt" gemm_wgmma --m $s --n $s --k $s --dtype $dt --store none
    done
  done
  tune tune_mma_3001x2999x1031_fp16 gemm_mma --m 3001 --n 2999 --k 1031 --dtype fp16 --store none
  tune tune_front_3001x2999x1031_fp16 gemm --m 3001 --n 2999 --k 1031 --dtype fp16 --store none
  tune tune_front_17x4097x63_fp16 gemm --m 17 --n 4097 --k 63 --dtype fp16 --store none
  log "peers in the same run (cuBLAS, Triton at the anchors' best configs)"
  GEMM_PEER_RUNS=3 timeout 300 python3 bench/peers/gemm_h200.py 2>&1 | tee -a "$OUT/summary.txt"
  python3 bench/gemm_table.py "$OUT" > "$OUT/gemm_table.md" 2>&1; cat "$OUT/gemm_table.md" >> "$OUT/summary.txt"
  if command -v ncu >/dev/null; then
    ncu_tune wgmma_4096 "$OUT/tune_wgmma_4096_fp16.json" --m 4096 --n 4096 --k 4096 --dtype fp16
    ncu_matmul cublas_4096 4096 4096 4096
    ncu_tune mma_odd "$OUT/tune_mma_3001x2999x1031_fp16.json" --m 3001 --n 2999 --k 1031 --dtype fp16
    ncu_matmul cublas_odd 3001 2999 1031
  else
    log "ncu: not on PATH"
  fi
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt" 2>&1
}
part_smallm() {
  BT_RUN=smallm18 . bench/device_env.sh
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  local s m n k
  for s in 1x4096x4096 1x8192x8192 1x8192x28672 1x28672x8192 16x8192x8192 64x8192x8192; do
    IFS=x read -r m n k <<<"$s"
    tune "tune_kn_$s" gemm --m "$m" --n "$n" --k "$k" --dtype fp16 --store none
    tune "tune_nt_$s" gemm_smallm_nt_tma --m "$m" --n "$n" --k "$k" --dtype fp16 --store none
  done
  log "cuBLAS in the same run, timed as blocktune times (smallm_peers.py)"
  timeout 300 python3 bench/peers/smallm_peers.py "$OUT" --tuned-only > "$OUT/smallm_peers.log" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"; cat "$OUT/smallm_table.md" >> "$OUT/summary.txt" 2>/dev/null
  log "the read ceiling: the built-in reduce over B's bytes at 1x8192x8192 (134 MB)"
  tune reduce_67108864 reduce --n 67108864 --dtype fp16 --store none
  if command -v ncu >/dev/null; then
    ncu_tune gemv_1x8192x8192 "$OUT/tune_kn_1x8192x8192.json" --m 1 --n 8192 --k 8192 --dtype fp16
    ncu_tune reduce_134MB "$OUT/reduce_67108864.json" --n 67108864 --dtype fp16
    ncu_torch cublas_linear_1x8192x8192 "import torch, torch.nn.functional as F
a = torch.rand(1, 8192, device='cuda', dtype=torch.float16); w = torch.rand(8192, 8192, device='cuda', dtype=torch.float16)
for _ in range(8): F.linear(a, w)
torch.cuda.synchronize()"
  else
    log "ncu: not on PATH"
  fi
}
case ${1:-} in
  A) part gemm part_gemm
     part cost bash bench/experiments/h200_cost.sh
     part bt_odd bash bench/experiments/h200_triton.sh bt_odd
     part bt_mm108 bash bench/experiments/h200_triton.sh bt_mm108
     pack A ;;
  B) part smallm part_smallm
     part decorator bash bench/experiments/h200_decorator.sh
     pack B ;;
  smallm) part_smallm ;; # B's small-M part alone (round20.sh D)
  *) echo "usage: $0 A|B" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
