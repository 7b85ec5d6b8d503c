#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_wisdom_sweep.sh [--dry] — issue 19 item 5 in ONE device call (≤ ~560 s wall): the shipped
# H200 wisdom for the layer shapes of common open models, tuned through the `gemm` front door by
# sweeps, cuBLAS beside every GEMM key, the store exported as wisdom, and a wisdom-only first
# launch in a fresh process timed. Run from the repository root with build/ and .carry/ carried:
#   device run: bash bench/experiments/h200_wisdom_sweep.sh
#   here (PoCL, tiny shapes, proves the script end to end): bash bench/experiments/h200_wisdom_sweep.sh --dry
#   BT_SWEEP_MISSING=1: only the gemm keys that wisdom/ lacks (completing a run that ran out of
#   time), with wisdom-only first launches on wisdom/ as shipped before the sweep
#
# What is tuned (fp16; M = 1 … 4096 in powers of two, 13 sizes):
#   Llama-3-8B  hidden 4096, MLP 14336;  Mistral-Nemo hidden 5120, MLP 14336;
#   Llama-3-70B hidden 8192, MLP 28672;  per model (N, K) = (h, h), (mlp, h), (h, mlp):
#   9 shapes × 13 sizes = 117 gemm keys; softmax and layernorm at cols 4096, 5120, 8192 and rows
#   1, 4, 16 … 4096 (7; nearest-size dispatch covers the rows between): 42 keys.
#
# The trade-off (a default front-door tune of one key cost 20–50 s on the H200, run-round3):
#   --budget 32     measurements per key over all families (split by the families' predictions,
#                   at least 4 each: famplan.c), half the default 64. At M ≤ 64 the five
#                   families have 10–13 valid configs each, so each still measures its model-
#                   ranked best third or more; at M ≥ 128 wgmma and mma share it, ~20 + ~10,
#                   which at 4096³ found a winner within the finals' noise of the 64-budget one
#                   (run-round3: wgmma's 32 measured at budget 64 found the 724 TFLOP/s winner).
#   --warmup-ms 5 --rep-ms 20 --screen-ms 2
#                   a fifth of the default budgets: the kernels here run 4 µs – 4 ms, so 20 ms is
#                   still ≥ 5 runs at the largest and ≥ 1000 at the smallest; the screening keeps
#                   its 10-run floor; the finalists are re-measured interleaved at 5 + 20 ms,
#                   and the families' winners again (5 rounds): the choice stays on
#                   interleaved full-budget medians, only with wider noise bands (ties are said).
#   --time-limit 4  per key (a sweep's limit is each key's), split over the families by their
#                   predictions; the first round of each family always runs.
#   boundary verification stays ON: wisdom serves sizes between the tuned ones (nearest M), so
#                   a winner must be right at ragged M (M = 3, 17, 63 …), not only at 2^k.
#   the kernel cache is shared by every key (sizes are run-time arguments): only the first keys
#                   of the first shapes compile.
# Expected: ~3 s a key at M ≥ 128 (two families), ~4–5 s at M ≤ 64 (five); 117 keys ≈ 420 s is
# at the edge of the budget, so the sizes run in two passes, M = 1, 16, 256, 4096 of every shape
# first (36 keys, the coarse cover), then the other nine; every sweep is stopped (SIGINT: the
# keys it finished are stored and reported) at its share of a deadline, so the command ends in
# time and what did not fit is a row "not tuned" in the table, covered by the nearest size.
# Outputs (in the run's archive; wisdom/*.json and summary.txt also beside it): summary.txt,
# provenance.txt, sweep_*.json/txt, cublas.jsonl, table.md, wisdom/*.json (the shipped files:
# the existing wisdom/ imported, then this run's winners), first_launch*.json (+ its log).
set -u
DRY=0
[ "${1:-}" = "--dry" ] && DRY=1
START=$(date +%s)
if [ $DRY = 1 ]; then
  export OUT=${OUT:-/tmp/bt-wisdom-dry} BT_DEVICE=opencl:0 POCL_MEMORY_LIMIT=1
  SHAPES="64x64"; PASS1="1,4"; PASS2="2"; ROWS="1,4"; COLS="64"; FIRST="4 64 64"; NEAR="3 64 64"
  END=$((START + 900))
else
  export BT_DEVICE=${BT_DEVICE:-cuda:0}
  SHAPES="4096x4096 14336x4096 4096x14336 5120x5120 14336x5120 5120x14336 8192x8192 28672x8192 8192x28672"
  PASS1="1,16,256,4096"; PASS2="2,4,8,32,64,128,512,1024,2048"
  ROWS="1,4,16,64,256,1024,4096"; COLS="4096,5120,8192"; FIRST="16 4096 4096"; NEAR="24 4096 4096"
  END=$((START + ${BT_WALL_S:-540}))
fi
BT_RUN=wsweep . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"; mkdir -p "$BLOCKTUNE_CACHE_DIR"
db="$OUT/sweep.db"
KNOBS="--dtype fp16 --warmup-ms 5 --rep-ms 20 --screen-ms 2"
GEMM_KNOBS="$KNOBS --budget 32 --time-limit 4"
ROW_KNOBS="$KNOBS --time-limit 2"

{
  echo "date: $(date -u +%FT%TZ)"; echo "git: $(git rev-parse HEAD 2>/dev/null || echo '(no git)')"
  echo "command: bash bench/experiments/h200_wisdom_sweep.sh $*"
  echo "device: $BT_DEVICE"; echo "gemm knobs: $GEMM_KNOBS"; echo "row knobs: $ROW_KNOBS"
  nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
  nvidia-smi | sed -n 3p  # driver and CUDA version
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
  $bt devices
} >> "$OUT/provenance.txt" 2>&1

left() { echo $((END - $(date +%s))); }
# sweep NAME SECONDS ARGS...: `blocktune tune ARGS` (a sweep) into $OUT/NAME.{txt,json}, stopped
# with SIGINT after SECONDS (the keys finished are stored and in the report), its wall time logged
sweep() {
  local name=$1 secs=$2; shift 2
  [ "$secs" -lt 5 ] && { log "sweep $name: skipped (no time left)"; return; }
  log "sweep $name (${secs} s at most): $*"
  local t0=$(date +%s%N)
  timeout -s INT -k 20 "$secs" $bt tune "$@" --device "$BT_DEVICE" --store "$db" \
    --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1 < /dev/null
  local rc=$?
  echo "rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
  sed -n '/^Sweep:/,$p' "$OUT/$name.txt" | tee -a "$OUT/summary.txt"
}
# gemm_pass MS DEADLINE: every shape at sizes MS, each shape's sweep given an equal share of
# what is left until DEADLINE (seconds since START) — a slow shape does not starve the rest
gemm_pass() {
  local ms=$1 deadline=$2 tag=$3 n=0 s
  set -- $SHAPES
  local count=$#
  for s in $SHAPES; do
    local N=${s%x*} K=${s#*x} rest=$((START + deadline - $(date +%s)))
    local share=$(( rest / (count - n) )); n=$((n + 1))
    sweep "gemm_${tag}_${N}x${K}" "$share" gemm --m "$ms" --n "$N" --k "$K" $GEMM_KNOBS
  done
}

# first_launches WISDOM_DIR TAG:M N K ...: a wisdom-only first launch of gemm in a fresh process
# (an empty store and kernel cache, the given wisdom) per argument, its JSON and log in $OUT
first_launches() {
  local wdir=$1 run tag size fresh; shift
  fresh=$(mktemp -d)
  for run in "$@"; do
    tag=${run%%:*}; size=${run#*:}
    BLOCKTUNE_CACHE_DIR=$fresh BLOCKTUNE_WISDOM_DIR=$wdir BLOCKTUNE_LOG=1 timeout 60 \
      build/bt_first_launch "$BT_DEVICE" $size fp16 > "$OUT/first_launch_$tag.json" \
      2> "$OUT/first_launch_$tag.log"
    echo "$tag rc=$?: $(cat "$OUT/first_launch_$tag.json")" | tee -a "$OUT/summary.txt"
    grep -m3 -i "gemm" "$OUT/first_launch_$tag.log" | tee -a "$OUT/summary.txt"
  done
  rm -rf "$fresh"
}

if [ "${BT_SWEEP_MISSING:-0}" = 1 ]; then
  # completing the shipped wisdom: only the gemm keys wisdom/ lacks (a run that ran out of time)
  log "wisdom-only first launches with wisdom/ as shipped, before the sweep"
  first_launches wisdom "shipped_cold:$FIRST" "shipped_warm_kernel_cache:$FIRST" \
    "shipped_nearest:$NEAR"
  mapfile -t MISS < <(python3 bench/wisdom_sweep.py missing wisdom "$SHAPES" "$PASS1,$PASS2")
  log "gemm keys wisdom/ lacks: ${MISS[*]:-none}"
  : > "$OUT/cublas.jsonl"
  for line in "${MISS[@]}"; do
    T=$(left); timeout -k 10 $(( T > 40 ? 40 : T )) python3 bench/wisdom_sweep.py cublas \
      "${line% *}" "${line#* }" "$OUT/cublas_one.jsonl" 2>&1 | tee -a "$OUT/summary.txt"
    cat "$OUT/cublas_one.jsonl" >> "$OUT/cublas.jsonl" 2>/dev/null
  done
  n=0
  for line in "${MISS[@]}"; do
    shape=${line% *}; N=${shape%x*}; K=${shape#*x}
    share=$(( (END - 75 - $(date +%s)) / (${#MISS[@]} - n) )); n=$((n + 1))
    sweep "gemm_miss_${N}x${K}" "$share" gemm --m "${line#* }" --n "$N" --k "$K" $GEMM_KNOBS
  done
else
log "pass 1: gemm at M = $PASS1, every shape (the coarse cover)"
gemm_pass "$PASS1" $(( (END - START) * 36 / 100 )) p1
log "cuBLAS (torch.matmul and F.linear) at every gemm key"
T=$(left); timeout -k 10 $(( T > 80 ? 80 : T )) python3 bench/wisdom_sweep.py cublas "$SHAPES" \
  "$PASS1,$PASS2" "$OUT/cublas.jsonl" 2>&1 | tee -a "$OUT/summary.txt"
log "pass 2: gemm at M = $PASS2, every shape"
gemm_pass "$PASS2" $(( (END - START) * 80 / 100 - 15 )) p2
log "softmax and layernorm: rows $ROWS × cols $COLS"
for kern in softmax layernorm; do
  T=$(( $(left) - 45 )); [ "$kern" = softmax ] && T=$((T / 2))
  sweep "$kern" "$T" "$kern" --rows "$ROWS" --cols "$COLS" $ROW_KNOBS
done
fi
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt" 2>&1

log "the store exported as wisdom (the shipped wisdom/ imported first: the files replace wisdom/)"
$bt cache --db "$db" import wisdom/ 2>&1 | tee -a "$OUT/summary.txt"
mkdir -p "$OUT/wisdom"
dev_filter=(); [ $DRY = 0 ] && dev_filter=(--device "NVIDIA H200")
$bt cache --db "$db" export "${dev_filter[@]}" "$OUT/wisdom/" 2>&1 | tee -a "$OUT/summary.txt"
$bt cache --db "$db" list > "$OUT/store_list.txt" 2>&1
python3 - "$OUT/wisdom" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import collections, glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    c = collections.Counter((e["kernel"], e["key"].get("dtype")) for e in json.load(open(f))["entries"])
    print(f.rsplit("/", 1)[1], dict(sorted(c.items())))
PY

log "wisdom-only first launch of gemm in a fresh process (empty store and kernel cache; the exported wisdom)"
first_launches "$OUT/wisdom" "cold:$FIRST" "warm_kernel_cache:$FIRST" "nearest_size:$NEAR"

log "the table"
python3 bench/wisdom_sweep.py table "$OUT/table.md" "$OUT"/gemm_*.json --cublas "$OUT/cublas.jsonl" \
  > "$OUT/table.log" 2>&1; tail -1 "$OUT/table.log" | tee -a "$OUT/summary.txt"
log "done in $(( $(date +%s) - START )) s"
