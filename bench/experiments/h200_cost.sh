#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_cost.sh — what a default tune costs (issue 18 item 4): vector_add 2^28, gemm_wgmma 4096^3,
# gemm_mma 4096^3 and gemm_smallm 1x8192x8192 (fp16), each tuned with default options three
# times: cold (empty kernel cache and store), warm kernel cache (store emptied: everything is
# measured again, nothing compiled) and warm store (the key replayed: nothing measured, compiled
# or verified). Prints each run's wall time and phase times (the JSON's time object: data,
# compile, verify, measure, total) and whether it verified on the device. Run on the device
# machine from the repository root with build/ and .carry/ carried along:
#   bash bench/experiments/h200_cost.sh
# Targets: verify <= 10 % of each tune; vector_add whole tune <= 5 s; a GEMM family <= 10 s cold,
# <= 2 s warm kernel cache; warm store <= 1 s with "replayed" = the configs measured cold.
set -u
BT_RUN=cost . bench/device_env.sh
export TUNE_TIMEOUT=240
phases() { # NAME: the phase times of $OUT/NAME.json into summary.txt
  python3 - "$OUT/$1.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except Exception as e:
    print("  no JSON:", e); sys.exit(0)
t, s = j.get("time", {}), j.get("search", {})
print("  phases: " + ", ".join("%s %.2f s" % (k[:-2], v) for k, v in t.items()) +
      "; measured %s, from_store %s, replayed %s, stop '%s'" %
      (s.get("measured"), s.get("from_store"), s.get("replayed"), s.get("stop")))
w = j.get("winner") or {}
print("  winner %s median %s ms" % (w.get("config"), w.get("median_ms")))
PY
}
case_runs() { # NAME ARGS...: cold, warm kernel cache, warm store
  local name=$1; shift
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  tune "${name}_cold" "$@"; phases "${name}_cold"
  rm -f "$BLOCKTUNE_CACHE_DIR/blocktune.db"*
  tune "${name}_warm_kcache" "$@"; phases "${name}_warm_kcache"
  tune "${name}_warm_store" "$@"; phases "${name}_warm_store"
}
# COST_CASES: the cases to run (default all, and the host-verify contrast and test_devcmp)
cases=" ${COST_CASES:-vadd wgmma mma smallm extra} "
has() { case $cases in *" $1 "*) return 0 ;; esac; return 1; }
has vadd && case_runs vadd vector_add --n 268435456
has wgmma && case_runs wgmma gemm_wgmma --m 4096 --n 4096 --k 4096 --dtype fp16
has mma && case_runs mma gemm_mma --m 4096 --n 4096 --k 4096 --dtype fp16
has smallm && case_runs smallm gemm_smallm --m 1 --n 8192 --k 8192 --dtype fp16
if has extra; then
  # the comparison on the host for contrast (the verify phase before this change)
  rm -f "$BLOCKTUNE_CACHE_DIR/blocktune.db"*
  BLOCKTUNE_HOST_VERIFY=1 tune vadd_host_verify vector_add --n 268435456; phases vadd_host_verify
  log "test_devcmp on the GPU"; timeout 300 build/test_devcmp > "$OUT/test_devcmp.log" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "FAILED|PASSED|ERROR|LINE|SKIP" "$OUT/test_devcmp.log" | head -20 | tee -a "$OUT/summary.txt"
fi
