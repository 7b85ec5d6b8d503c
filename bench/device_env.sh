# SPDX-License-Identifier: Apache-2.0
# device_env.sh — sourced by bench/run.sh and the scripts of bench/experiments/ on the device
# machine (repository root, build/ and .carry/ carried along). Everything is written to a work
# folder, $OUT, and packed into $FINAL/<name>.tgz on exit with summary.txt beside it (the device
# tool brings back few files).
#   BT_RUN=gemm . bench/device_env.sh
FINAL=${OUT:-/tmp/bt-out}
BT_RUN_NAME=${BT_RUN:?set BT_RUN to the run name}
OUT=/tmp/bt-$BT_RUN_NAME
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
# the wisdom a run exports ($OUT/wisdom/*.json) comes back beside the archive
trap 'tar czf "$FINAL/$BT_RUN_NAME.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL/" 2>/dev/null; cp "$OUT"/wisdom/*.json "$FINAL/" 2>/dev/null' EXIT
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
export BLOCKTUNE_CACHE_DIR=/tmp/bt-cache PYTHONUNBUFFERED=1
# built binaries look for their kernels under the path they were built at
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
bt=build/blocktune
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$OUT/provenance.txt" 2>&1
# cuda_tests: test_cuda, then test_engine on the GPU; logs in $OUT, their verdicts in summary.txt
cuda_tests() {
  local t
  for t in test_cuda test_engine; do
    log "$t"; timeout 300 "build/$t" > "$OUT/$t.log" 2>&1; echo "rc=$?" | tee -a "$OUT/summary.txt"
    grep -E "FAILED|PASSED|ERROR|LINE|SKIP" "$OUT/$t.log" | head -20 | tee -a "$OUT/summary.txt"
  done
}
# tune NAME ARGS...: `blocktune tune ARGS` on the GPU ($BT_DEVICE, default cuda:0) with the
# report in $OUT/NAME.txt and the JSON in $OUT/NAME.json; its exit status, wall time and the
# report's key lines go to summary.txt ($TUNE_TIMEOUT seconds at most, default 300)
tune() {
  local name=$1; shift
  log "tune $name: $*"
  local t0=$(date +%s%N)
  timeout "${TUNE_TIMEOUT:-300}" $bt tune "$@" --device "${BT_DEVICE:-cuda:0}" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1 < /dev/null
  local rc=$?
  echo "rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
  grep -E "^space|^search|^time|WINNER|TFLOP/s =|GB/s =|margin|TIE|rror|none:" "$OUT/$name.txt" |
    head -10 | tee -a "$OUT/summary.txt"
}
# memory_bound_tunes: the memory-bound built-in kernels at the shapes of the results tables
# (bench/run.sh memory-bound; experiment 1, bench/experiments/h200.sh)
memory_bound_tunes() {
  tune vadd vector_add --n 268435456
  tune softmax_32768x1024 softmax --rows 32768 --cols 1024
  tune softmax_8192x8192 softmax --rows 8192 --cols 8192
  tune softmax_4096x30000 softmax --rows 4096 --cols 30000
  tune layernorm_32768x4096 layernorm --rows 32768 --cols 4096
  tune layernorm_8192x8192 layernorm --rows 8192 --cols 8192
  tune reduce reduce --n 268435456
}
