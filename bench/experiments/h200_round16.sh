#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round16.sh A — one device call (build/ and .carry/lib carried):
#   A  issue 15: the Triton rule set's accumulator_regs (an accumulator beyond a thread's
#      registers is eliminated before compiling): the seed list and the anchors' 108 configs from
#      C at 4096^3 (bt_mm4096) beside triton.autotune on the same configs (tri_mm), and at
#      3001x2999x1031 (bt_odd) beside Triton's own best of that space by do_bench (tri_odd_par);
#      test_cuda and test_engine on the GPU (test_engine's boundary check now counts the sizes a
#      config's constraints exclude apart)
# The consoles and summaries are packed into round16_<part>.tgz; the parts' own archives lie beside;
# blocktune's tune JSONs of the Triton parts (each candidate's compile seconds and median) are
# packed into tune_json.tgz.
set -u
ROUND=round16
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     part triton bash bench/experiments/h200_triton.sh bt_mm4096
     part tri_mm bash bench/experiments/h200_triton.sh tri_mm
     part odd bash bench/experiments/h200_triton.sh bt_odd
     part odd_best bash bench/experiments/h200_triton.sh tri_odd_par
     (cd /tmp/bt-triton-shared 2>/dev/null && tar czf "$FINAL/tune_json.tgz" ./*.json)
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
