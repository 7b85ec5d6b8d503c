# device_env.sh — sourced by the bench/h200*.sh scripts on the device machine (repository root,
# build/ and .carry/ carried along). Everything is written to a work folder, $OUT, and packed into
# $FINAL/<name>.tgz on exit with summary.txt beside it (the device tool brings back few files).
#   BT_RUN=gemm . bench/device_env.sh
FINAL=${OUT:-/tmp/bt-out}
BT_RUN_NAME=${BT_RUN:?set BT_RUN to the run name}
OUT=/tmp/bt-$BT_RUN_NAME
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/$BT_RUN_NAME.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL/" 2>/dev/null' EXIT
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
export BLOCKTUNE_CACHE_DIR=/tmp/bt-cache PYTHONUNBUFFERED=1
# built binaries look for their kernels under the path they were built at
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
bt=build/blocktune
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$OUT/provenance.txt" 2>&1
