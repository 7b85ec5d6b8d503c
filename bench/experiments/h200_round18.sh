#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round18.sh A — one device call (build-dev/ and .carry/ carried; bash bench/device_build.sh
# here first, and the patched source of h200_mma_u16.sh's header):
#   tests      test_cuda, test_engine, test_embed_cuda and test_devcmp on the GPU (the finals that
#              let a tied finalist go, the device reference kept on the device: verify mode 3)
#   decorator  issue 15: @blocktune.autotune against @triton.autotune, the warm first call <= 0.3 s
#              (0.318-0.333 s in run-round17; the device reference's outputs no longer cross to
#              the host)
#   cost       issue 18 item 4: default tunes cold / warm kernel cache / warm store (the warm
#              kernel cache <= 2 s for a GEMM family: the finals' tie exit and forest's ready
#              configs)
#   bt_mm108, tri_mm_par  issue 15: the anchors' 108 configs at 4096^3 from C, and the space's best
#              by Triton's do_bench with blocktune's winners re-timed in turns (within 2 %)
#   mma        issue 18 item 3: gemm_mma's element path with 16-byte loads (h200_mma_u16.sh)
#   bt_odd, tri_odd_par  the same as bt_mm108/tri_mm_par at 3001x2999x1031
# The consoles and summaries are packed into round18_<part>.tgz; the parts' own archives beside.
set -u
ROUND=round18
. bench/experiments/round_lib.sh
gpu_tests() {
  BT_RUN=tests . bench/device_env.sh
  cuda_tests
  local t
  for t in test_embed_cuda test_devcmp; do
    log "$t"; timeout 300 "build/$t" > "$OUT/$t.log" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
    grep -E "FAILED|PASSED|ERROR|LINE|SKIP" "$OUT/$t.log" | head -20 | tee -a "$OUT/summary.txt"
  done
}
case ${1:-} in
  A) part tests gpu_tests
     part decorator bash bench/experiments/h200_decorator.sh
     pack A
     part cost bash bench/experiments/h200_cost.sh
     part bt_mm108 bash bench/experiments/h200_triton.sh bt_mm108
     part tri_mm_par bash bench/experiments/h200_triton.sh tri_mm_par
     pack B
     part mma bash bench/experiments/h200_mma_u16.sh
     part bt_odd bash bench/experiments/h200_triton.sh bt_odd
     part tri_odd_par bash bench/experiments/h200_triton.sh tri_odd_par
     (cd /tmp/bt-triton-shared 2>/dev/null && tar czf "$FINAL/tune_json.tgz" ./*.json)
     pack C ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
