#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# smallm.sh — issue 18 item 1 on the H200, in one device call of about 5 minutes (bench/NOTES.md
# 24 has the prediction and the record):
#  1. blocktune tunes the TMA small-M kernels (sm_90a: gemm_smallm_nt_tma, B as
#     torch.nn.functional.linear's (N, K) weight; gemm_smallm_tma, B as (K, N)) at every small-M
#     shape of the issue's table (1×4096×4096, 1×8192×28672, 1×28672×8192, and M = 1, 2, 4, 8, 16,
#     32, 64 at N = K = 8192; fp16), both layouts: 20 whole tunes (compile + verify at the problem
#     and the boundary sizes + search + finals) of --time-limit 9, store off, default strategy;
#  2. the register-streaming kernels (gemm_smallm_nt, gemm_smallm), which led cuBLAS at M = 1 in
#     run-smallm1, at the four M = 1 shapes, their spaces cut to run-smallm1's M = 1 winners
#     (bench/spec_variant.py): a few seconds each; the table takes the faster of 1 and 2 (and
#     where a TMA tune found no winner, the register kernels' whole space stands in);
#  3. the cache flush: the TMA winner at 1×4096×4096 and 1×8192×8192 (nt), one config, measured
#     under each flush (BLOCKTUNE_CUDA_FLUSH=read, the default, and =write, the fill this backend
#     used before; src/backends/cuda/cuda.c says why);
#  4. bench/peers/smallm_peers.py times cuBLAS (F.linear and torch.matmul) at the same shapes the
#     same way, with the same flush (the backend's read sweep; and both flushes for 3), and prints
#     one table against the targets.
# The kernel cache stays warm from tune to tune (the compiled kernels do not depend on N and K).
# The specs are given by path. Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/smallm.sh
set -u
BT_RUN=smallm . bench/device_env.sh
rm -rf "$BLOCKTUNE_CACHE_DIR"
TUNE_OPTS=${TUNE_OPTS:---warmup-ms 10 --rep-ms 40 --time-limit 9}
export TUNE_TIMEOUT=${TUNE_TIMEOUT:-40}
nvcc --version 2>/dev/null | tail -2 >> "$OUT/provenance.txt"
t_start=$(date +%s)
shapes="1x8192x8192 1x4096x4096 1x8192x28672 1x28672x8192 2x8192x8192 4x8192x8192 8x8192x8192
        16x8192x8192 32x8192x8192 64x8192x8192"
dims() { local IFS=x; set -- $1; echo "--m $1 --n $2 --k $3"; }
nt_spec() { [ "$1" = nt ] && echo "$2_nt$3" || echo "$2$3"; } # nt_spec LAYOUT gemm_smallm _tma

# 1. the TMA kernels
for s in $shapes; do
  for layout in nt kn; do
    tune "tune_${layout}_$s" "kernels/specs/$(nt_spec $layout gemm_smallm _tma).json" $(dims $s) \
      --dtype fp16 --store none $TUNE_OPTS
  done
done
log "TMA tunes took $(( $(date +%s) - t_start )) s"

# 2. the register kernels at M = 1, cut to run-smallm1's M = 1 winners (its smallm_table.md)
w_nt="(WARP_N == 2 && DEPTH == 4 && num_warps == 4 && WARPS_K == 4 && SPLIT_K == 1) ||
      (WARP_N == 8 && DEPTH == 1 && num_warps == 8 && WARPS_K == 2 && SPLIT_K == 2 && CLUSTER == 2) ||
      (WARP_N == 2 && DEPTH == 2 && num_warps == 8 && WARPS_K == 8 && SPLIT_K == 1) ||
      (WARP_N == 4 && DEPTH == 1 && num_warps == 8 && WARPS_K == 8 && SPLIT_K == 1)"
w_kn="(WARP_N == 256 && DEPTH == 4 && num_warps == 8 && WARPS_K == 8 && SPLIT_K == 4 && CLUSTER == 4) ||
      (WARP_N == 128 && DEPTH == 1 && num_warps == 8 && WARPS_K == 2 && SPLIT_K == 8 && CLUSTER == 2) ||
      (WARP_N == 256 && DEPTH == 4 && num_warps == 8 && WARPS_K == 4 && SPLIT_K == 2 && CLUSTER == 2) ||
      (WARP_N == 256 && DEPTH == 4 && num_warps == 4 && WARPS_K == 1 && SPLIT_K == 16 && CLUSTER == 1)"
# (the parameter lists cut too, so that the tune JSON does not list 60000 eliminated configs)
python3 bench/spec_variant.py gemm_smallm_nt "$OUT/reg_nt.json" \
  "BLOCK_M=1,WARP_N=2|4|8,DEPTH=1|2|4,num_warps=4|8,WARPS_K=2|4|8,SPLIT_K=1|2,CLUSTER=1|2,VEC=1" "$w_nt"
python3 bench/spec_variant.py gemm_smallm "$OUT/reg_kn.json" \
  "BLOCK_M=1,WARP_N=128|256,DEPTH=1|4,num_warps=4|8,WARPS_K=1|2|4|8,SPLIT_K=2|4|8|16,CLUSTER=1|2|4,VEC=1" "$w_kn"
for s in 1x8192x8192 1x4096x4096 1x8192x28672 1x28672x8192; do
  for layout in nt kn; do
    tune "tune_${layout}reg_$s" "$OUT/reg_$layout.json" $(dims $s) --dtype fp16 --store none \
      $TUNE_OPTS
  done
done
# 2b. a safety net for a first run on the hardware: where a TMA tune has no winner (every config
# failed, e.g. a descriptor the emulation cannot check), the register kernels' whole space
# stands in for it (at most 10 such tunes, --time-limit 6)
fallbacks=0
for s in $shapes; do
  for layout in nt kn; do
    [ -e "$OUT/tune_${layout}reg_$s.json" ] && continue
    python3 -c 'import json, sys; sys.exit(0 if (json.load(open(sys.argv[1])).get("winner") or {}).get("median_ms") else 1)' \
      "$OUT/tune_${layout}_$s.json" 2>/dev/null && continue
    [ $fallbacks -ge 10 ] && break 2
    fallbacks=$((fallbacks + 1))
    tune "tune_${layout}reg_$s" "kernels/specs/$(nt_spec $layout gemm_smallm "").json" $(dims $s) \
      --dtype fp16 --store none --warmup-ms 10 --rep-ms 40 --time-limit 6
  done
done
log "tunes took $(( $(date +%s) - t_start )) s ($fallbacks stand-ins for TMA tunes without a winner)"

# 3. one config (the TMA winner) under each cache flush
for s in 1x4096x4096 1x8192x8192; do
  cfg=$(python3 -c 'import json, sys
w = json.load(open(sys.argv[1]))["winner"]["config"]
print(",".join("%s=%s" % kv for kv in w.items()))' "$OUT/tune_nt_$s.json" 2>/dev/null) || continue
  python3 bench/spec_variant.py gemm_smallm_nt_tma "$OUT/pin_nt_$s.json" "$cfg"
  for mode in read write; do
    BLOCKTUNE_CUDA_FLUSH=$mode tune "flush_${mode}_nt_$s" "$OUT/pin_nt_$s.json" $(dims $s) \
      --dtype fp16 --store none --warmup-ms 10 --rep-ms 100 --no-boundary
  done
done

log "cuBLAS in the same run (bench/peers/smallm_peers.py), and the table"
timeout 150 python3 bench/peers/smallm_peers.py "$OUT" 2>&1 | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv >> "$OUT/provenance.txt" 2>&1
log "whole run $(( $(date +%s) - t_start )) s"
