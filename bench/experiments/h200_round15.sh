#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round15.sh A — one device call (build/ and .carry/lib carried):
#   A  issue 15: the decorator (h200_decorator.sh) with the workers handing Triton a stand-in for
#      its own key (cold0 and cold both start from nothing); the Triton matmul's seed list and
#      the anchors' 108 configs from C at 4096^3 (bt_mm4096) and at 3001x2999x1031 (bt_odd),
#      exhaustive now in the model's predicted order; Triton's own best of the odd shape's space
#      by do_bench (tri_odd_par, which also times blocktune's odd winners); issue 18 item 4: the
#      default tunes (h200_cost.sh); test_cuda and test_engine on the GPU
# The consoles and summaries are packed into round15_<part>.tgz; the parts' own archives lie beside;
# blocktune's tune JSONs of the Triton parts (each candidate's compile seconds and median) are
# packed into tune_json.tgz.
set -u
ROUND=round15
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     part decorator bash bench/experiments/h200_decorator.sh
     part triton bash bench/experiments/h200_triton.sh bt_mm4096
     part odd bash bench/experiments/h200_triton.sh bt_odd
     part odd_best bash bench/experiments/h200_triton.sh tri_odd_par
     (cd /tmp/bt-triton-shared 2>/dev/null && tar czf "$FINAL/tune_json.tgz" ./*.json)
     part cost bash bench/experiments/h200_cost.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
