#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round5.sh — one device call (build/ and .carry/ carried) after this round's merges: the
# host cost of a launch (issue 14: the word-wise dispatch key), the Triton tunes of the seed's 7
# and the anchors' 108 matmul configs cold, warm and stored (issue 15: no torch import in the
# compile workers, boundary compiles in the round, workers warm at start, Triton's version in the
# kernel-cache key), vector_add 2^28's default tune (issue 18 item 4: inputs made in parallel,
# parallel references), then the wisdom sweep (issue 19 item 5) with the time left.
set -u
FINAL=${OUT:-/tmp/bt-out}
T0=$(date +%s)
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
vadd() {
  BT_RUN=vadd . bench/device_env.sh
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  for phase in cold warm_kcache; do
    [ $phase = warm_kcache ] && rm -f "$BLOCKTUNE_CACHE_DIR/blocktune.db"*
    tune "vadd_$phase" vector_add --n 268435456
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('  time', j['time'])" \
      "$OUT/vadd_$phase.json" | tee -a "$OUT/summary.txt"
  done
}
part overhead bash bench/experiments/h200_overhead.sh
part triton bash bench/experiments/h200_triton.sh bt_mm4096
part vadd vadd
left=$(( 560 - ($(date +%s) - T0) ))
echo "== wisdom sweep with ${left} s"
part wisdom env BT_WALL_S=$left bash bench/experiments/h200_wisdom_sweep.sh
