#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round8.sh A — this round's device call (build/ and .carry/ carried):
#   A  issues 18 item 4 and 15: what a default tune costs, cold / warm kernel cache / warm store
#      (h200_cost.sh), and the decorator against @triton.autotune (h200_decorator.sh), after the
#      finals let a finalist clearly slower than the leader leave the interleaved rounds early;
#      issue 14: the launch path's functions placed together, A/B (h200_hot_ab.sh)
# The consoles and summaries are packed into round8_<part>.tgz; the parts' own archives lie beside.
set -u
FINAL=${OUT:-/tmp/bt-out}
T0=$(date +%s)
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
pack() { (cd "$FINAL" && tar czf "round8_$1.tgz" console_*.txt summary_*.txt && rm -f console_*.txt summary_*.txt); }
case ${1:-} in
  A) part hot bash bench/experiments/h200_hot_ab.sh
     part decorator bash bench/experiments/h200_decorator.sh
     part cost bash bench/experiments/h200_cost.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
