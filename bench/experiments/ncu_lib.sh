# SPDX-License-Identifier: Apache-2.0
# ncu_lib.sh — sourced by the round scripts of bench/experiments/ after bench/device_env.sh (which
# gives OUT and log): Nsight Compute on a tune's winner and on torch's (cuBLAS's) kernel.
#   cfg_of JSON               a tune JSON's winning kernel (a front door's: the family's) and
#                             config as P=v,P=v
#   ncu_tune NAME JSON ARGS   ncu on that winner at the tune's sizes (bench/ncu_one.sh)
#   ncu_torch NAME PYTHON     ncu on the first GEMM-like kernel the snippet launches after 5
#   ncu_matmul NAME M N K     ncu_torch on torch.matmul of random fp16 M x K and K x N
cfg_of() { # a tune JSON's winning kernel (a front door's: the family's) and config as P=v,P=v
  python3 - "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))  # a front door's JSON names the winning family as its kernel
print(t["kernel"], ",".join(f"{k}={v}" for k, v in t["winner"]["config"].items() if k != "family"))
PY
}
ncu_tune() { # NAME JSON ARGS...: ncu on the winner of tune JSON at the tune's sizes
  local name=$1 json=$2 spec c; shift 2
  read -r spec c < <(cfg_of "$json")
  log "ncu $name: $spec $c"
  bash bench/ncu_one.sh "$spec" "$c" "$OUT/ncu_$name.txt" "$@" 2>&1 | tee -a "$OUT/summary.txt"
}
ncu_torch() { # NAME PYTHON: ncu on torch's (cuBLAS's) kernel in the snippet
  log "ncu $1 (cuBLAS)"
  timeout 200 ncu --clock-control none -k 'regex:gemv|gemm|nvjet|splitK|cutlass|xmma|Kernel' \
    --launch-skip 5 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section LaunchStats python3 -c "$2" > "$OUT/ncu_$1.txt" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"
  grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|SM Frequency|Issued Ipc" \
    "$OUT/ncu_$1.txt" | head -12 | tee -a "$OUT/summary.txt"
}
ncu_matmul() { # NAME M N K: cuBLAS's kernel for an fp16 M x K by K x N product
  ncu_torch "$1" "import torch
a = torch.randn($2, $4, device='cuda', dtype=torch.float16); b = torch.randn($4, $3, device='cuda', dtype=torch.float16)
for _ in range(8): a @ b
torch.cuda.synchronize()"
}
