#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round2.sh — one device call for the merges of this round (build/, .carry/ carried):
# the tune costs (h200_cost.sh), MPI on one GPU (h200_mpi.sh, Open MPI packed in .carry/ompi),
# the engine example at both sizes, and the tests that failed on the H200 in run-embed. Each part's
# summary is kept as summary_<part>.txt beside its archive.
set -u
FINAL=${OUT:-/tmp/bt-out}
part() { local name=$1; shift; "$@" > "$FINAL/console_$name.txt" 2>&1;
         cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
part cost bash bench/experiments/h200_cost.sh
part mpi bash bench/experiments/h200_mpi.sh
part embed bash -c '
BT_RUN=embed2 . bench/device_env.sh
export LD_LIBRARY_PATH="$PWD/.carry/prefix/lib:$LD_LIBRARY_PATH"
for t in test_backends test_api test_embed_cuda; do
  log "$t"; timeout 200 "build/$t" > "$OUT/$t.log" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "FAILED|PASSED|SKIP|ERROR|LINE|bytes" "$OUT/$t.log" | head -8 | tee -a "$OUT/summary.txt"
done
for size in "256 1024 1024" "1024 4096 4096"; do
  for mode in tune wisdom-only; do
    log "engine_cuda $size $mode"
    timeout 150 .carry/eng/engine_cuda $size $mode "$OUT/e_$mode.json" > "$OUT/e.log" 2>&1
    echo "rc=$?" | tee -a "$OUT/summary.txt"; tail -9 "$OUT/e.log" | tee -a "$OUT/summary.txt"
  done
done
log "launch overhead"; timeout 60 build/bt_launch_overhead 2>&1 | tail -6 | tee -a "$OUT/summary.txt"'
