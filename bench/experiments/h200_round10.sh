#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round10.sh A — this round's first device call (build/ and .carry/lib carried):
#   A  issue 15: the decorator against @triton.autotune (h200_decorator.sh) with the tune's
#      phases in the BLOCKTUNE_LOG line (data, compile, verify, measure, finals, the pool's start)
#      and the call's set-up before the launch, to see where the cold 4 s and warm 0.6 s go;
#      issue 18 item 1: the read ceiling at a small-M GEMM's bytes (h200_ceiling.sh)
# The consoles and summaries are packed into round10_<part>.tgz; the parts' own archives lie beside.
set -u
FINAL=${OUT:-/tmp/bt-out}
T0=$(date +%s)
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
pack() { (cd "$FINAL" && tar czf "round10_$1.tgz" console_*.txt summary_*.txt && rm -f console_*.txt summary_*.txt); }
case ${1:-} in
  A) part decorator bash bench/experiments/h200_decorator.sh
     part ceiling bash bench/experiments/h200_ceiling.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
