#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_gemm_epi.sh — bench/NOTES.md 21: the tensor-core GEMMs' epilogue in 16-byte stores (EPI=1:
# quad exchanges, whole 32-byte sectors) against 4-byte pair stores (EPI=0), on the configs that
# win the large shapes; every candidate verified at the problem and the boundary sizes, and all
# of them re-measured interleaved in one tune per shape. FAMILIES picks gemm_wgmma and/or
# gemm_mma (default both). Run from the repository root with build/ and .carry/ carried along:
#   device run: bash bench/experiments/h200_gemm_epi.sh
set -u
BT_RUN=gemmepi . bench/device_env.sh
FAMILIES=${FAMILIES:-wgmma mma}
epi_tune() { # FAMILY SHAPES...: each shape "M N K dtype"
  local fam=$1; shift
  for shape in "$@"; do
    set -- $shape
    local name=epi_${fam}_$1x$2x$3_$4
    tune "$name" "$OUT/x_epi_$fam.json" --m $1 --n $2 --k $3 --dtype $4 --store none \
      --warmup-ms 10 --rep-ms 40 --strategy exhaustive --finalists 16
    grep -E "^ +[0-9]+ BLOCK" "$OUT/$name.txt" | cut -c1-200 | tee -a "$OUT/summary.txt"
  done
}
for fam in $FAMILIES; do
  case $fam in
    wgmma)
      python3 bench/spec_variant.py gemm_wgmma "$OUT/x_epi_wgmma.json" \
        'BLOCK_M=128|256,BLOCK_N=128|256,CONSUMERS=2,num_stages=4,GROUP_M=8,CLUSTER_M=1|2,PINGPONG=0,SCHED=0,EPI=0|1'
      epi_tune wgmma "4096 4096 4096 fp16" "4096 4096 4096 bf16" "8192 8192 8192 fp16" ;;
    mma)
      python3 bench/spec_variant.py gemm_mma "$OUT/x_epi_mma.json" \
        'BLOCK_M=128|256,BLOCK_N=128|256,BLOCK_K=64,num_warps=8,WARPS_M=2|4,num_stages=2,GROUP_M=8,SPLIT_K=1,VEC=1,EPI=0|1'
      epi_tune mma "4096 4096 4096 fp16" "8192 8192 8192 bf16" ;;
  esac
done
