#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# round20.sh A — the first device call of round 20 (build-dev/ and .carry/ carried,
# `bash bench/device_build.sh link` first), on whatever Hopper GPU the tool lends:
#   cost  h200_cost.sh for vector_add 2^28, gemm_mma 4096^3 and gemm_smallm 1x8192x8192: the
#         trust-region step's compile threshold (1978ed4) on a GPU, and vector_add's verify share
#   vt    where vector_add's verify time and a warm-store re-tune's wall time go: a blocktune
#         built with bench/experiments/verify-timing.patch (build-dev/blocktune-vt; BT_VT=1
#         prints wall-clock stamps of the child's steps and the verify phase's parts), vector_add
#         cold, warm kernel cache, warm store, gemm_smallm warm store; `blocktune --version` and
#         `blocktune devices` timed for the process's own start; vector_add with a warm kernel
#         cache once more with BT_VT_REF32=1 (the fp64 host reference uploaded as fp32 and
#         compared as a reference of the output's own type)
# round20.sh B — the second call: h200_cost.sh for vector_add (the host reference now copied in the
# data phase, the comparison on 4096 groups), gemm_wgmma 4096^3 and the extra case (vector_add
# verified on the host for contrast, test_devcmp on the GPU).
# round20.sh C — the third call, the tree as it lands (75de31b's planner on every core, which call A
# ran, reverted): h200_cost.sh for vector_add, gemm_mma and gemm_smallm again, and gemm_wgmma's
# default tune at 4096^3 fp16 and bf16 beside cuBLAS and Triton (bench/peers/gemm_h200.py) on this
# card.
# round20.sh D — issue 18's small-M rows on this card: h200_issue18.sh's small-M part (the front
# door with B as (K, N) and gemm_smallm_nt_tma with the weight as (N, K) at the six shapes, cuBLAS
# timed as blocktune times in the same call, the read ceiling, ncu).
# Output: round20_A.tgz / round20_B.tgz / round20_C.tgz / round20_D.tgz (consoles, summaries) and cost.tgz, vt.tgz.
set -u
ROUND=round20
. bench/experiments/round_lib.sh
part_vt() {
  BT_RUN=vt . bench/device_env.sh
  bt=build/blocktune-vt
  export BT_VT=1
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  local n
  for n in vadd_cold vadd_warm_kcache; do
    [ "$n" = vadd_warm_kcache ] && rm -f "$BLOCKTUNE_CACHE_DIR/blocktune.db"*
    echo "start $(date +%s.%N)" >> "$OUT/summary.txt"
    tune "$n" vector_add --n 268435456
    grep "^VT" "$OUT/$n.txt" | tee -a "$OUT/summary.txt"
  done
  rm -f "$BLOCKTUNE_CACHE_DIR/blocktune.db"*
  BT_VT_REF32=1 tune vadd_warm_kcache_ref32 vector_add --n 268435456
  grep "^VT" "$OUT/vadd_warm_kcache_ref32.txt" | tee -a "$OUT/summary.txt"
  echo "start $(date +%s.%N)" >> "$OUT/summary.txt"
  tune vadd_warm_store vector_add --n 268435456
  grep "^VT" "$OUT/vadd_warm_store.txt" | tee -a "$OUT/summary.txt"
  tune smallm_cold gemm_smallm --m 1 --n 8192 --k 8192 --dtype fp16
  echo "start $(date +%s.%N)" >> "$OUT/summary.txt"
  tune smallm_warm_store gemm_smallm --m 1 --n 8192 --k 8192 --dtype fp16
  grep "^VT" "$OUT/smallm_warm_store.txt" | tee -a "$OUT/summary.txt"
  local t0
  for n in 1 2; do
    t0=$(date +%s%N); $bt --version > /dev/null 2>&1
    echo "--version $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
    t0=$(date +%s%N); $bt devices > "$OUT/devices.txt" 2>&1
    echo "devices $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
  done
}
part_big() {
  BT_RUN=big20 . bench/device_env.sh
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  tune wgmma_4096_fp16 gemm_wgmma --m 4096 --n 4096 --k 4096 --dtype fp16 --store none
  tune wgmma_4096_bf16 gemm_wgmma --m 4096 --n 4096 --k 4096 --dtype bf16 --store none
  log "peers in the same call (cuBLAS, Triton at the anchors' best config)"
  GEMM_PEER_RUNS=3 GEMM_PEER_SHAPES=4096x4096x4096 timeout 150 \
    python3 bench/peers/gemm_h200.py 2>&1 | tee -a "$OUT/summary.txt"
}
case ${1:-} in
  vt) part_vt ;;
  big) part_big ;;
  A) part cost timeout -s TERM "${COST_S:-200}" env COST_CASES="vadd mma smallm" bash bench/experiments/h200_cost.sh
     part vt timeout -s TERM "${VT_S:-150}" bash bench/experiments/round20.sh vt
     pack A ;;
  B) part cost timeout -s TERM "${COST_S:-240}" env COST_CASES="vadd wgmma extra" bash bench/experiments/h200_cost.sh
     pack B ;;
  C) part cost timeout -s TERM "${COST_S:-200}" env COST_CASES="vadd mma smallm" bash bench/experiments/h200_cost.sh
     part big timeout -s TERM "${BIG_S:-200}" bash bench/experiments/round20.sh big
     pack C ;;
  D) part smallm timeout -s TERM "${SMALLM_S:-400}" bash bench/experiments/h200_issue18.sh smallm
     pack D ;;
  *) echo "usage: $0 A|B|C|D" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
