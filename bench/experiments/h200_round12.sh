#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round12.sh A — the last call of the round (build/ and .carry/lib carried):
#   A  issue 15: the decorator (h200_decorator.sh) after the wisdom lookup parses only the
#      documents that name the kernel; the Triton matmul's seed list and the anchors' 108 configs
#      at 4096^3 cold / warm / stored (h200_triton.sh bt_mm4096) with the compiles started with the
#      tune; issue 18 items 4 and 5: the default tunes (h200_cost.sh) with forest's trust-region
#      step (the built-in families keep a budget of 64); test_cuda and test_engine on the GPU
# The consoles and summaries are packed into round12_<part>.tgz; the parts' own archives lie beside.
set -u
ROUND=round12
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part decorator bash bench/experiments/h200_decorator.sh
     part triton bash bench/experiments/h200_triton.sh bt_mm4096
     part cost bash bench/experiments/h200_cost.sh
     part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
