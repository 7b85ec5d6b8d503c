#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# round19.sh A — the first device call of this round (build-dev/ and .carry/ carried,
# `bash bench/device_build.sh link` first), on whatever Hopper GPU the tool lends (H100 or H200),
# most important first (each part under its own time limit, so that a short lease still brings
# back the first parts' archives):
#   ldg   gemm_wgmma_ldg (wgmma fed by ordinary loads, for rows that are not 16-byte multiples)
#         tuned with default options at 3001x2999x1031 fp16 (every config verified at the spec's
#         boundary sizes first) and cuBLAS / Triton at that shape in the same call
#         (bench/peers/gemm_h200.py); gemm_mma at 3001x2999x1031 (the family it is to beat);
#         gemm_wgmma_ldg in bf16, with fp32 output, and at 17x4097x63; the `gemm` front door cold
#         at both odd shapes (SIMT now ruled out for 16-bit data) and cuBLAS at 17x4097x63;
#         Nsight Compute on the ldg winner and cuBLAS's kernel
#   cost  gemm_mma and gemm_smallm's default tunes cold, with a warm kernel cache and a warm store
#         (h200_cost.sh: a config to compile now has to promise 2 % more than a ready one)
# Output: round19_A.tgz (consoles, summaries) and the parts' archives ldg19.tgz, cost.tgz.
set -u
ROUND=round19
. bench/experiments/round_lib.sh
part_ldg() {
  BT_RUN=ldg19 . bench/device_env.sh
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  nvcc --version | tail -2 >> "$OUT/provenance.txt" 2>&1
  git -C . log -1 --format='tree at %h' >> "$OUT/provenance.txt" 2>/dev/null
  tune tune_ldg_3001x2999x1031_fp16 gemm_wgmma_ldg --m 3001 --n 2999 --k 1031 --dtype fp16 --store none
  log "peers in the same call (cuBLAS, Triton at the anchors' best config)"
  GEMM_PEER_RUNS=3 GEMM_PEER_SHAPES=3001x2999x1031 timeout 200 \
    python3 bench/peers/gemm_h200.py 2>&1 | tee -a "$OUT/summary.txt"
  cp "$OUT/gemm_peers.json" "$OUT/gemm_peers_odd.json" 2>/dev/null
  tune tune_mma_3001x2999x1031_fp16 gemm_mma --m 3001 --n 2999 --k 1031 --dtype fp16 --store none
  tune tune_ldg_3001x2999x1031_bf16 gemm_wgmma_ldg --m 3001 --n 2999 --k 1031 --dtype bf16 --store none
  tune ldg_out32_3001x2999x1031 gemm_wgmma_ldg --m 3001 --n 2999 --k 1031 --dtype fp16 --out_fp32 1 --store none
  tune tune_ldg_17x4097x63_fp16 gemm_wgmma_ldg --m 17 --n 4097 --k 63 --dtype fp16 --store none
  local s m n k
  for s in 3001x2999x1031 17x4097x63; do
    IFS=x read -r m n k <<<"$s"
    rm -rf "$BLOCKTUNE_CACHE_DIR"
    tune "front_$s" gemm --m "$m" --n "$n" --k "$k" --dtype fp16 --store none
    sed -n '/^Families/,/finals:/p' "$OUT/front_$s.txt" | tee -a "$OUT/summary.txt"
  done
  GEMM_PEER_RUNS=3 GEMM_PEER_SHAPES=17x4097x63 timeout 120 \
    python3 bench/peers/gemm_h200.py 2>&1 | tee -a "$OUT/summary.txt"
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt" 2>&1
  if command -v ncu >/dev/null; then
    . bench/experiments/ncu_lib.sh
    ncu_tune ldg_odd "$OUT/tune_ldg_3001x2999x1031_fp16.json" --m 3001 --n 2999 --k 1031 --dtype fp16
    ncu_matmul cublas_odd 3001 2999 1031
  else
    log "ncu: not on PATH"
  fi
}
case ${1:-} in
  ldg) part_ldg ;;
  A) part ldg timeout -s TERM "${LDG_S:-420}" bash bench/experiments/round19.sh ldg
     part cost timeout -s TERM "${COST_S:-120}" env COST_CASES="mma smallm" bash bench/experiments/h200_cost.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
