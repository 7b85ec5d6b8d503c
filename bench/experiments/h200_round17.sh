#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round17.sh A — one device call (build/ and .carry/lib carried):
#   A  issue 15: a finalist that left the interleaved rounds early ranks behind those that stayed
#      (run-round16's 4096^3 winner had its 52 runs of the first round only: it had left as
#      slower, then the leader's later rounds drifted 5 % on a warming GPU); the seed list and the
#      anchors' 108 configs from C at 4096^3 (bt_mm4096) beside triton.autotune (tri_mm), whose
#      script now also re-times the space's best and blocktune's winners in turns; the decorator
#      (h200_decorator.sh) with the leader's second round of the finals; test_cuda and
#      test_engine on the GPU
# The consoles and summaries are packed into round17_<part>.tgz; the parts' own archives lie beside.
set -u
ROUND=round17
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     part triton bash bench/experiments/h200_triton.sh bt_mm4096
     part tri_mm bash bench/experiments/h200_triton.sh tri_mm
     (cd /tmp/bt-triton-shared 2>/dev/null && tar czf "$FINAL/tune_json.tgz" ./*.json)
     pack A
     part decorator bash bench/experiments/h200_decorator.sh
     pack B ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
