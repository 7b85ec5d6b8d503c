#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh SUITE [--device ID] [--out DIR] — blocktune's benchmark suites, on any device.
#
#   memory-bound  vector_add, softmax, layernorm and reduce tuned at the shapes of the results
#                 index (bench/results/README.md), bandwidth in each report
#   gemm          the GEMM families that the device runs (gemm everywhere; gemm_mma on CUDA
#                 sm_80+, gemm_wgmma on sm_90), fp16 and bf16 at 4096³ and 8192³, one small-M
#                 and one odd shape; bench/gemm_table.py tabulates them
#   tune-cost     what a tune costs: an 8-config GEMM space with a cold, then a warm kernel cache,
#                 and measurement quality (build/bt_quality, CUDA's cuda:0 only: five tunes and an
#                 independent timing with CUDA events)
#   launch        the host cost of a launch (build/bt_launch_overhead) and graph-captured timing
#                 of a short kernel against launch by launch
#   peers         the same kernels in torch and Triton (bench/peers/), for the tables beside ours
#
# Runs from the repository root with the build folder `build` (and, on a device machine, .carry/
# with the libraries the build needs). --device picks the device (`blocktune devices` lists them;
# default cuda:0); --out the folder that receives <suite>.tgz and summary.txt (default $OUT, else
# /tmp/bt-out). Every tune's report and JSON are in the archive, the key lines in summary.txt.
# File a run under bench/results/<device>-<date>/run-<suite>/ and add it to
# bench/results/README.md. One-off experiments are not suites: they are numbered entries of
# bench/NOTES.md with their scripts in bench/experiments/.
set -u
usage() { sed -n '3,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }
suite=${1:-}
[ -n "$suite" ] || usage 2
shift
while [ $# -gt 0 ]; do
  case $1 in
    --device) BT_DEVICE=${2:?--device needs an id}; shift 2 ;;
    --device=*) BT_DEVICE=${1#*=}; shift ;;
    --out) OUT=${2:?--out needs a folder}; shift 2 ;;
    --out=*) OUT=${1#*=}; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown option '$1'" >&2; usage 2 ;;
  esac
done
case $suite in
  memory-bound|gemm|tune-cost|launch|peers) ;;
  -h|--help) usage 0 ;;
  *) echo "run.sh: unknown suite '$suite' (memory-bound, gemm, tune-cost, launch, peers)" >&2
     exit 2 ;;
esac
export BT_DEVICE=${BT_DEVICE:-cuda:0}
BT_RUN=$suite . bench/device_env.sh
{ echo "suite: $suite  device: $BT_DEVICE  date: $(date -u +%FT%TZ)  git: $(git rev-parse HEAD 2>/dev/null)"
  $bt devices 2>&1; } >> "$OUT/provenance.txt"

suite_memory_bound() { memory_bound_tunes; }

suite_gemm() {
  local opts="--store none --warmup-ms 10 --rep-ms 40 --time-limit 9" fam s dt
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  tune gemm_fp32_2048 gemm --m 2048 --n 2048 --k 2048 $opts
  for fam in gemm_wgmma gemm_mma; do   # a family the device cannot run fails its tune, said so
    for dt in fp16 bf16; do
      for s in 4096 8192; do
        tune "tune_${fam#gemm_}_${s}_$dt" $fam --m $s --n $s --k $s --dtype $dt $opts
      done
    done
    tune "tune_${fam#gemm_}_16x8192x8192_fp16" $fam --m 16 --n 8192 --k 8192 --dtype fp16 $opts
    tune "tune_${fam#gemm_}_3001x2999x1031_fp16" $fam --m 3001 --n 2999 --k 1031 --dtype fp16 $opts
  done
  python3 bench/gemm_table.py "$OUT" > "$OUT/gemm_table.md" 2>&1; cat "$OUT/gemm_table.md"
}

suite_tune_cost() {
  rm -rf "$BLOCKTUNE_CACHE_DIR"
  local o="--strategy model --budget 8 --warmup-ms 5 --rep-ms 20"
  tune gemm8_cold gemm --m 1024 --n 1024 --k 1024 $o
  tune gemm8_warm gemm --m 1024 --n 1024 --k 1024 $o
  log "measurement quality: five tunes of vector_add n=2^26, and an independent event measurement"
  timeout 200 build/bt_quality 67108864 2>&1 | tee "$OUT/quality.json" |
    tee -a "$OUT/summary.txt"
}

suite_launch() {
  log "launch overhead (host µs per launch of a tiny kernel)"
  build/bt_launch_overhead "$BT_DEVICE" 2>&1 | tee "$OUT/launch_overhead.json" |
    tee -a "$OUT/summary.txt"
  tune vadd_65536 vector_add --n 65536 --store none
  tune vadd_65536_graph vector_add --n 65536 --store none --graph
}

suite_peers() {
  log "peers: memory-bound kernels (torch, Triton)"
  BASELINE_OUT="$OUT" timeout 300 python3 bench/peers/triton_h200_mem.py > "$OUT/peers_mem.log" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"; tail -12 "$OUT/peers_mem.log" | tee -a "$OUT/summary.txt"
  log "peers: GEMM (cuBLAS, Triton)"
  timeout 400 python3 bench/peers/gemm_h200.py > "$OUT/peers_gemm.log" 2>&1
  echo "rc=$?" | tee -a "$OUT/summary.txt"; tail -20 "$OUT/peers_gemm.log" | tee -a "$OUT/summary.txt"
}

"suite_${suite//-/_}"
