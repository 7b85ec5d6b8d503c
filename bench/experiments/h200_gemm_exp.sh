#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_gemm_exp.sh — the experiments of bench/NOTES.md 16–18 in one device call:
#   16. the fp32-output path (OUT_FP32=1) of both tensor-core families, and the CUDA tests;
#   17. why 2-CTA clusters were slower: cluster-scope vs CTA-scope remote releases (RREL), all
#       candidates interleaved in one tune, with Nsight Compute's launch and occupancy sections;
#   18. the SM clock and power while GEMMs run (nvidia-smi sampled every 200 ms) and shared
#       memory's load under the cooperative 128×256 kernel (ncu's full set).
# Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/h200_gemm_exp.sh
set -u
BT_RUN=gemmexp . bench/device_env.sh
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
  --format=csv,nounits -lms 200 > "$OUT/smi.csv" 2>&1 & SMI=$!
cuda_tests
grep -E "output_dtype" "$OUT/test_engine.log" | tee -a "$OUT/summary.txt"
# 16: fp32 output
Q="--warmup-ms 10 --rep-ms 40 --store none"
tune out32_wgmma_4096_fp16 gemm_wgmma --m 4096 --n 4096 --k 4096 --dtype fp16 --out_fp32 1 $Q --time-limit 5
tune out32_wgmma_16x8192x8192_bf16 gemm_wgmma --m 16 --n 8192 --k 8192 --dtype bf16 --out_fp32 1 $Q --time-limit 4
tune out32_mma_3001x2999x1031_bf16 gemm_mma --m 3001 --n 2999 --k 1031 --dtype bf16 --out_fp32 1 $Q --time-limit 5
tune out32_mma_4096_fp16 gemm_mma --m 4096 --n 4096 --k 4096 --dtype fp16 --out_fp32 1 $Q --time-limit 4
# 17: clusters, every candidate re-measured interleaved in the same tune
python3 bench/spec_variant.py gemm_wgmma "$OUT/x_cluster.json" \
  'BLOCK_M=128|256,BLOCK_N=128|256,CONSUMERS=2,num_stages=4,GROUP_M=8,PINGPONG=0,SCHED=0,CLUSTER_M=1|2,RREL=0|1' \
  'CLUSTER_M > 1 || RREL == 1'
for s in 4096 8192; do
  tune cluster_${s}_fp16 "$OUT/x_cluster.json" --m $s --n $s --k $s --dtype fp16 $Q \
    --strategy exhaustive --finalists 9 --no-boundary
  grep -E "^ +[0-9]+ BLOCK" "$OUT/cluster_${s}_fp16.txt" | tee -a "$OUT/summary.txt"
done
S=--m\ 4096\ --n\ 4096\ --k\ 4096\ --dtype\ fp16
for r in 1 0; do
  log "ncu cluster RREL=$r"
  bash bench/ncu_one.sh gemm_wgmma "BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,num_stages=4,GROUP_M=8,PINGPONG=0,SCHED=0,CLUSTER_M=2,RREL=$r" \
    "$OUT/ncu_cluster_rrel$r.txt" $S --device cuda:0 2>&1 | tee -a "$OUT/summary.txt"
  grep -iE "cluster|Waves Per SM|Grid Size" "$OUT/ncu_cluster_rrel$r.txt" | head -12 | tee -a "$OUT/summary.txt"
done
# 18: shared memory under the best cooperative config
log "ncu full set, CLUSTER_M=1 128x256"
NCU_OPTS="--set full" bash bench/ncu_one.sh gemm_wgmma "BLOCK_M=128,BLOCK_N=256,CONSUMERS=2,num_stages=4,GROUP_M=8,PINGPONG=0,SCHED=0,CLUSTER_M=1" \
  "$OUT/ncu_full_128x256.txt" $S --device cuda:0 2>&1 | tee -a "$OUT/summary.txt"
grep -iE "shared|pipe|tensor" "$OUT/ncu_full_128x256.txt" | head -40 | tee -a "$OUT/summary.txt"
kill $SMI 2>/dev/null
python3 - "$OUT/smi.csv" <<'PY' | tee -a "$OUT/summary.txt"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))[1:]
def watts(r):
    try: return float(r[2])
    except (ValueError, IndexError): return 0.0
busy = [r for r in rows if len(r) >= 5 and watts(r) > 300]
if not busy: print("nvidia-smi samples:", rows[:3])
if busy:
    clk = sorted(float(r[1]) for r in busy); pw = sorted(float(r[2]) for r in busy)
    print(f"samples above 300 W: {len(busy)}; SM clock p10/p50/p90 {clk[len(clk)//10]:.0f}/{clk[len(clk)//2]:.0f}/{clk[9*len(clk)//10]:.0f} MHz;"
          f" power p50/p90/max {pw[len(pw)//2]:.0f}/{pw[9*len(pw)//10]:.0f}/{pw[-1]:.0f} W")
    from collections import Counter
    print("event reasons while busy:", Counter(r[4].strip() for r in busy).most_common(4))
PY
