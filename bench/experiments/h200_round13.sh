#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round13.sh A — one device call (build/ and .carry/lib carried):
#   A  issue 15: the Triton compile pool whose dispatcher imports Triton once and forks its
#      workers, with Triton's own key kept in the cache: the decorator (h200_decorator.sh, now
#      with cold0 = nothing cached at all), where a cold pool's seconds go
#      (triton_pool_diag.py), the Triton matmul's seed list and the anchors' 108 configs at
#      4096^3 from C (h200_triton.sh bt_mm4096); test_cuda and test_engine on the GPU (the last
#      session's refactors of host.c and build.c had not run here)
# The consoles and summaries are packed into round13_<part>.tgz; the parts' own archives lie beside.
set -u
ROUND=round13
. bench/experiments/round_lib.sh
case ${1:-} in
  A) part tests bash -c 'BT_RUN=tests . bench/device_env.sh; cuda_tests'
     part decorator bash bench/experiments/h200_decorator.sh
     part pooldiag bash -c 'BT_RUN=pooldiag . bench/device_env.sh; python3 bench/experiments/triton_pool_diag.py --workers 16 | tee "$OUT/summary.txt"'
     part triton bash bench/experiments/h200_triton.sh bt_mm4096
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
