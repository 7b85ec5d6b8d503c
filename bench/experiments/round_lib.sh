# SPDX-License-Identifier: Apache-2.0
# round_lib.sh — sourced by bench/experiments/h200_roundNN.sh (from round 10 on) after it sets
# ROUND (e.g. round17): the parts of one device call and their packing.
#   part NAME CMD...  runs CMD with its console in $FINAL/console_NAME.txt, prints rc=, and moves
#                     the summary.txt the part left in $FINAL to summary_NAME.txt (so a part that
#                     writes none is not shown the one before it)
#   pack TAG          packs the consoles and summaries into $FINAL/${ROUND}_TAG.tgz and removes them
# FINAL is the device tool's $OUT (else /tmp/bt-out); T0 the call's start, for the closing line.
FINAL=${OUT:-/tmp/bt-out}
T0=$(date +%s)
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; rm -f "$FINAL/summary.txt"; }
pack() { (cd "$FINAL" && tar czf "${ROUND}_$1.tgz" console_*.txt summary_*.txt && rm -f console_*.txt summary_*.txt); }
