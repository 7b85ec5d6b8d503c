#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round10.sh A — this round's first device call (build/ and .carry/lib carried):
#   A  issue 15: the decorator against @triton.autotune (h200_decorator.sh) with the tune's
#      phases in the BLOCKTUNE_LOG line (data, compile, verify, measure, finals, the pool's start)
#      and the call's set-up before the launch, to see where the cold 4 s and warm 0.6 s go;
#      issue 18 item 1: the read ceiling at a small-M GEMM's bytes (h200_ceiling.sh)
# The consoles and summaries are packed into round10_<part>.tgz; the parts' own archives lie beside.
set -u
ROUND=round10
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part decorator bash bench/experiments/h200_decorator.sh
     part ceiling bash bench/experiments/h200_ceiling.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
