#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_precompiled.sh — issue 19 item 5 on the H200: a fresh install's wisdom-only first launch
# with the binaries `blocktune precompile` built at build time on a machine with no GPU
# (.carry/prefix/share/blocktune/precompiled, installed by `cmake --install`).
#   1. bt_first_launch (bench/first_launch.c, statically linked) copied into the install's bin/,
#      so that it reads the install's data folder, each run in a new process with an empty cache
#      folder: gemm keys of the shipped wisdom (M = 16 and 1 at the layer shapes, 256 at
#      5120², 4096 at 8192²) and between its sizes (M = 24, 100: the nearest size's config), twice;
#      and M = 16 and 1 with the precompiled folder hidden (BLOCKTUNE_PRECOMPILED_DIR=/nonexistent:
#      the NVRTC compile those binaries save), in the same run;
#   2. the same shipped wisdom precompiled here with this machine's NVRTC: the same file names
#      (keys) as the install's;
#   3. a Triton kernel (bench/experiments/precompile/: examples/triton/vector_add with one config)
#      tuned with its one binary from a folder blocktune precompile filled on the machine with no
#      GPU (.carry/tpre) and no Python (BLOCKTUNE_PYTHON=/nonexistent): compiled 0, verified.
#   device run: bash bench/experiments/h200_precompiled.sh
set -u
BT_RUN=precompiled . bench/device_env.sh
P=$PWD/.carry/prefix
cp build/bt_first_launch "$P/bin/"
fl=$P/bin/bt_first_launch
log "installed precompiled binaries: $(ls "$P/share/blocktune/precompiled" | grep -c '\.bin$')"
first() { # TAG [VAR=VALUE...] COMMAND...: a first launch with an empty cache folder
  local tag=$1 fresh; shift
  fresh=$(mktemp -d)
  env BLOCKTUNE_CACHE_DIR="$fresh" BLOCKTUNE_LOG=1 "$@" > "$OUT/first_$tag.json" 2> "$OUT/first_$tag.log"
  echo "$tag rc=$?: $(cat "$OUT/first_$tag.json")" | tee -a "$OUT/summary.txt"
  grep -m4 -E "dispatching|family .* from|binary" "$OUT/first_$tag.log" | tee -a "$OUT/summary.txt"
  rm -rf "$fresh"
}
for round in 1 2; do
  for run in "16:16 4096 4096" "1_14336:1 14336 4096" "24:24 4096 4096" "100:100 8192 8192" \
             "256_5120:256 5120 5120" "4096_8192:4096 8192 8192"; do
    first "pre${round}_${run%%:*}" timeout 60 "$fl" cuda:0 ${run#*:} fp16
  done
  first "nopre${round}_16" BLOCKTUNE_PRECOMPILED_DIR=/nonexistent timeout 60 "$fl" cuda:0 16 4096 4096 fp16
  first "nopre${round}_1_14336" BLOCKTUNE_PRECOMPILED_DIR=/nonexistent timeout 60 "$fl" cuda:0 1 14336 4096 fp16
done
log "the shipped wisdom precompiled on this machine"
t0=$(date +%s%N)
BLOCKTUNE_CACHE_DIR=$OUT/pc-cache $bt precompile --out "$OUT/devpre" wisdom > "$OUT/devpre.txt" 2>&1
echo "rc=$? in $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(tail -1 "$OUT/devpre.txt")" | tee -a "$OUT/summary.txt"
diff <(ls "$OUT/devpre") <(ls "$P/share/blocktune/precompiled") > "$OUT/devpre.diff" \
  && log "the same $(ls "$OUT/devpre" | wc -l) file names as the install's" \
  || log "file names differ: $(wc -l < "$OUT/devpre.diff") lines of diff"
rm -rf "$OUT/devpre"
log "Triton: one config, its binary from .carry/tpre, no Python"
fresh=$(mktemp -d)
BLOCKTUNE_CACHE_DIR=$fresh BLOCKTUNE_PRECOMPILED_DIR=$PWD/.carry/tpre BLOCKTUNE_PYTHON=/nonexistent \
  timeout 120 $bt tune bench/experiments/precompile/triton_vector_add_one.json --n 16777216 \
  --dtype fp32 --device cuda:0 --no-boundary > "$OUT/triton_tune.txt" 2>&1
echo "rc=$?" | tee -a "$OUT/summary.txt"
grep -E "^space|^time|WINNER|compile_failed|rror" "$OUT/triton_tune.txt" | tee -a "$OUT/summary.txt"
rm -rf "$fresh"
