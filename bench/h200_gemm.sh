#!/usr/bin/env bash
# h200_gemm.sh — the tensor-core GEMM families on the H200. MODE=check (default): correctness and
# a first timing of gemm_wgmma (every config at 4096³, plus a variant with the N-major B
# descriptor's two strides swapped, to tell which layout reading is right) and of gemm_mma at the
# three shape classes. Writes tune reports and JSON under $OUT.
set -u
MODE=${1:-check}
FINAL=${OUT:-/tmp/bt-out}
OUT=/tmp/bt-gemm
rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/gemm.tgz" -C "$OUT" . ; cp "$OUT/summary.txt" "$FINAL/" 2>/dev/null' EXIT
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}"
export BLOCKTUNE_CACHE_DIR=/tmp/bt-cache PYTHONUNBUFFERED=1
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
bt=build/blocktune
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/provenance.txt" 2>&1
tune() { local name=$1; shift
  log "tune $name: $*"
  local t0=$(date +%s%N)
  timeout 300 $bt tune "$@" --device cuda:0 --store none --json "$OUT/$name.json" > "$OUT/$name.txt" 2>&1; local rc=$?
  echo "rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
  grep -E "^space|^time|WINNER|winner|margin|TIE|TFLOP|wrong|failed" "$OUT/$name.txt" | head -8 | tee -a "$OUT/summary.txt"; }
if [ "$MODE" = check ]; then
  python3 - <<'PY'
import json
s = json.load(open("kernels/specs/gemm_wgmma.json"))
s["name"] = "gemm_wgmma_x"
s["params"] = {"BLOCK_M": [128], "BLOCK_N": [128, 256], "BLOCK_K": [64], "CONSUMERS": [1, 2],
               "num_stages": [4, 5], "GROUP_M": [8], "CLUSTER_M": [1, 2], "WAIT_ALL": [0, 1],
               "GRID_SMS": [132, 128, 120]}
s["constraints"] += ["BLOCK_N == 256 || (CONSUMERS == 1 && num_stages == 5)",
                     "BLOCK_N == 128 || (CONSUMERS == 2 && num_stages == 4)",
                     "CLUSTER_M == 2 || GRID_SMS == 132"]
s["launch"]["grid"] = ["min(cdiv(cdiv(M, BLOCK_M), CLUSTER_M) * cdiv(N, BLOCK_N), GRID_SMS / CLUSTER_M) * CLUSTER_M"]
json.dump(s, open("kernels/specs/gemm_wgmma_x.json", "w"), indent=1)
PY
  tune wgx_4096 kernels/specs/gemm_wgmma_x.json --m 4096 --n 4096 --k 4096 --dtype fp16 --max-configs 300 --rep-ms 30 --warmup-ms 10
  tune wgx_8192 kernels/specs/gemm_wgmma_x.json --m 8192 --n 8192 --k 8192 --dtype fp16 --max-configs 300 --rep-ms 40 --warmup-ms 10 --no-boundary
  log "cuBLAS (torch.matmul), same run"
  timeout 120 python3 - <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import torch, triton
for (m,n,k) in [(4096,4096,4096),(8192,8192,8192)]:
    a=torch.randn(m,k,device='cuda',dtype=torch.float16); b=torch.randn(k,n,device='cuda',dtype=torch.float16)
    ms=triton.testing.do_bench(lambda: a@b, warmup=25, rep=100, return_mode='median')
    print(f"cuBLAS {m}x{n}x{k} fp16: {2*m*n*k/ms/1e9:.1f} TFLOP/s ({ms*1e3:.1f} us)")
PY
fi
