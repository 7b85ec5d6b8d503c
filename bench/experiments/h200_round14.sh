#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round14.sh A — one device call (build/ and .carry/lib carried):
#   A  issue 15: the decorator (h200_decorator.sh) with its compile pool forked from the caller's
#      interpreter, the screening that ends after 5 runs for a config slower than 1.25x the
#      fastest before it and the finalists that leave after the first round when decisively
#      slower; the Triton matmul's seed list and the anchors' 108 configs at 4096^3 from C
#      (h200_triton.sh bt_mm4096); issue 18 item 4: the default tunes cold / warm kernel cache /
#      warm store (h200_cost.sh); test_cuda and test_engine on the GPU
# The consoles and summaries are packed into round14_<part>.tgz; the parts' own archives lie beside.
set -u
ROUND=round14
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     part decorator bash bench/experiments/h200_decorator.sh
     part triton bash bench/experiments/h200_triton.sh bt_mm4096
     part cost bash bench/experiments/h200_cost.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
