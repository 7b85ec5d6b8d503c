#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_ceiling.sh — issue 18 item 1: how fast can one kernel read the bytes of a small-M GEMM's
# weight at all? The memory-bound targets (1x4096x4096 >= 3.0 TB/s, 1x8192x8192 >= 4.0 TB/s,
# 16x8192x8192 >= 65 TFLOP/s = 4.07 TB/s) are set against HBM's 4.8 TB/s; this measures, the
# way blocktune measures (the same cache flush, events, budgets), the built-in `reduce` (a pure
# read of n fp16 values: no write, no arithmetic to speak of) tuned at the byte counts of those
# shapes' B (33.5 MB, 134 MB, 470 MB), and the small-M family's winners at the same shapes, then
# Nsight Compute's speed-of-light section (DRAM throughput over the kernel's elapsed cycles, clocks
# left alone) on both at 134 MB, and on cuBLAS's kernel of torch.nn.functional.linear at 1x8192x8192.
#   device run (build/ carried): bash bench/experiments/h200_ceiling.sh
# Output: ceiling.tgz (reports, JSON, ncu text), summary.txt.
set -u
BT_RUN=ceiling . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"
# the reduce kernel at B's bytes: 4096*4096, 8192*8192, 8192*28672 fp16 values
for n in 16777216 67108864 234881024; do
  tune "reduce_$n" reduce --n $n --dtype fp16
done
# the small-M families at the shapes (the front door, default options; B as (K, N))
tune gemm_1x4096x4096 gemm --m 1 --n 4096 --k 4096 --dtype fp16
tune gemm_1x8192x8192 gemm --m 1 --n 8192 --k 8192 --dtype fp16
tune gemm_16x8192x8192 gemm --m 16 --n 8192 --k 8192 --dtype fp16
tune gemm_1x8192x28672 gemm --m 1 --n 8192 --k 28672 --dtype fp16
python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
print("| kernel | bytes | median us | effective TB/s |")
print("| --- | --: | --: | --: |")
for f in sorted(os.listdir(out)):
    if not f.endswith(".json") or not f.startswith(("reduce_", "gemm_")):
        continue
    t = json.load(open(os.path.join(out, f)))
    w = t.get("winner") or {}
    r = t.get("roofline") or {}
    ms, by = w.get("median_ms"), r.get("bytes")
    if ms and by:
        print(f"| {f[:-5]} {json.dumps(w.get('config'))} | {by / 1e6:.1f} MB | {ms * 1e3:.1f} | {by / (ms * 1e-3) / 1e12:.2f} |")
PY
cfg() {  # a tune JSON's winning kernel (a front door's: the family's) and config as P=v,P=v
  python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
c = {k: v for k, v in t["winner"]["config"].items() if k != "family"}
print(t["kernel"], ",".join(f"{k}={v}" for k, v in c.items()))
PY
}
if command -v ncu >/dev/null; then
  read -r spec c < <(cfg "$OUT/reduce_67108864.json")
  log "ncu $spec ($c)"
  bash bench/ncu_one.sh reduce "$c" "$OUT/ncu_reduce_134MB.txt" --n 67108864 --dtype fp16 2>&1 | tee -a "$OUT/summary.txt"
  read -r spec c < <(cfg "$OUT/gemm_1x8192x8192.json")
  log "ncu $spec 1x8192x8192 ($c, this run's winner)"
  bash bench/ncu_one.sh "$spec" "$c" "$OUT/ncu_${spec}_1x8192x8192.txt" --m 1 --n 8192 --k 8192 --dtype fp16 2>&1 | tee -a "$OUT/summary.txt"
  log "ncu cuBLAS F.linear 1x8192x8192"
  timeout 300 ncu --clock-control none -k 'regex:gemv|gemm|nvjet|splitK|cutlass|Kernel' --launch-skip 5 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats \
    python3 -c '
import torch, torch.nn.functional as F
a = torch.rand(1, 8192, device="cuda", dtype=torch.float16)
w = torch.rand(8192, 8192, device="cuda", dtype=torch.float16)
for _ in range(8):
    F.linear(a, w)
torch.cuda.synchronize()' > "$OUT/ncu_cublas_1x8192x8192.txt" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Memory Throughput|SM Frequency|DRAM Frequency" "$OUT/ncu_cublas_1x8192x8192.txt" | head -12 | tee -a "$OUT/summary.txt"
else
  log "ncu: not on PATH"
fi
