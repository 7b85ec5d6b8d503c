#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_wisdom.sh KERNEL... — the shipped H200 wisdom (wisdom/NVIDIA_H200*.json) after a change to the
# sources of the named built-in kernels: every other entry is imported as it is, the named
# kernels' entries are dropped and each of their keys is tuned again (time limit 20 s), and the
# store is exported again into $OUT/wisdom/ (a file per physical GPU the entries were measured
# on). The CUDA tests run first. Run from the repository root with build/ and .carry/ carried
# along:
#   device run: bash bench/experiments/h200_wisdom.sh gemm
set -u
BT_RUN=wisdom . bench/device_env.sh
cuda_tests
db="$OUT/wisdom.db"
$bt cache --db "$db" import wisdom/ 2>&1 | tee -a "$OUT/summary.txt"
for k in "$@"; do
  $bt cache --db "$db" forget "$k" --yes 2>&1 | tee -a "$OUT/summary.txt"
  python3 - "$k" <<'PY' > "$OUT/keys_$k.txt"
import glob, json, sys
for f in sorted(glob.glob("wisdom/NVIDIA_H200*.json")):
  for e in json.load(open(f))["entries"]:
    if e["kernel"] == sys.argv[1]:
        key = dict(e["key"]); dt = key.pop("dtype")
        print(" ".join(f"--{n.lower()} {v}" for n, v in key.items()), "--dtype", dt)
PY
  while read -r sizes; do
    tune "tune_${k}_$(echo $sizes | tr -c 'a-z0-9' _)" "$k" $sizes --store "$db" --time-limit 20
  done < "$OUT/keys_$k.txt"
done
mkdir -p "$OUT/wisdom"
$bt cache --db "$db" export --device "NVIDIA H200" "$OUT/wisdom/" 2>&1 | tee -a "$OUT/summary.txt"
$bt cache --db "$db" list 2>&1 | tee -a "$OUT/summary.txt"
