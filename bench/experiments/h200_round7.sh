#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round7.sh A — this round's device call (build/ and .carry/ carried):
#   A  issue 19: a fresh install's wisdom-only first launches with the binaries blocktune
#      precompile built with no GPU (h200_precompiled.sh); issue 15: the decorator against
#      @triton.autotune again, for the second process after the backends load lazily
#      (h200_decorator.sh)
# The consoles and summaries are packed into round7_<part>.tgz; the parts' own archives lie beside.
set -u
FINAL=${OUT:-/tmp/bt-out}
T0=$(date +%s)
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
pack() { (cd "$FINAL" && tar czf "round7_$1.tgz" console_*.txt summary_*.txt && rm -f console_*.txt summary_*.txt); }
case ${1:-} in
  A) part precompiled bash bench/experiments/h200_precompiled.sh
     part decorator bash bench/experiments/h200_decorator.sh
     pack A ;;
  *) echo "usage: $0 A" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
