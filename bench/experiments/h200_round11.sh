#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round11.sh A — after run-round10's findings (build/ and .carry/lib carried):
#   A  issue 15: the decorator against @triton.autotune (h200_decorator.sh) with the comparison
#      kernel and the exhaustive search's compiles started with the tune, the device reference's
#      data phase trimmed and the finals in 8 rounds (a finalist clearly slower leaves after the
#      second); issue 18 item 4: what a default tune costs (h200_cost.sh); test_cuda and
#      test_engine on the GPU
# The consoles and summaries are packed into round11_<part>.tgz; the parts' own archives lie beside.
set -u
ROUND=round11
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part decorator bash bench/experiments/h200_decorator.sh
     part cost bash bench/experiments/h200_cost.sh
     part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
