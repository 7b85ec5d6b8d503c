#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round6.sh A|B|C|D|E — this round's device calls (build/ and .carry/ carried), one part a call:
#   A  issue 14: the host cost of a launch after the lock-free dispatch table (h200_overhead.sh);
#      issue 19: the gemm keys the shipped wisdom lacks, swept (h200_wisdom_sweep.sh with
#      BT_SWEEP_MISSING=1, which also times wisdom-only first launches on wisdom/ as shipped —
#      M = 16 at 4096², not in it, takes the nearest size through its family alone — and on the
#      completed wisdom), with the time left of ~560 s
#   B  issue 14: the host cost again after the launch path's reads were packed together (the
#      kernel's copy of its key and buffer-argument list, the entry's hot fields first), in
#      batches of 64 alternating, 3000 each; issue 15: the Triton vector_add and softmax specs cold, warm and stored, the CUDA C
#      built-ins at the same sizes, triton.autotune on the same kernels and configs, then the
#      decorator against @triton.autotune (h200_triton.sh bt_mem, builtin_mem, tri_mem;
#      h200_decorator.sh)
#   C  issue 14: the driver's answer to a launch with another context current, or none, and
#      what cuCtxGetCurrent costs (build/bt_ctx_probe, bench/ctx_probe.c), then the host cost
#      again with the launch that does not ask for the current context; issue 15: the anchors'
#      108 matmul configs at 3001×2999×1031, blocktune then triton.autotune with its do_bench of
#      every config (h200_triton.sh bt_odd, tri_odd) in the time left
#   D  issue 15 again after C: exhaustive proposes every valid config in one round (a round of
#      16 waited for its slowest Triton compile: 116 s at the odd shape), the odd shape and the
#      108 configs at 4096³ cold, warm and stored; then the best of the odd shape's space by
#      Triton's do_bench, its cache filled by 16 processes (tri_odd ran out of time in C)
#   E  issues 19 and 14 after D: wisdom-only first launches of gemm in a fresh install (the
#      wisdom compiled into the library, an empty cache: cold, warm kernel cache, M = 24 and 100
#      between tuned sizes, M = 1 at 14336×4096), then engine_cuda's host cost once more
# Few files come back from a device call: the consoles and per-part summaries are packed into
# round6_<part>.tgz; the parts' own archives (<run>.tgz) and the exported wisdom lie beside it.
set -u
FINAL=${OUT:-/tmp/bt-out}
T0=$(date +%s)
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; ( "$@" ) > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
pack() { (cd "$FINAL" && tar czf "round6_$1.tgz" console_*.txt summary_*.txt && rm -f console_*.txt summary_*.txt); }
case ${1:-} in
  A) part overhead bash bench/experiments/h200_overhead.sh
     left=$(( 560 - ($(date +%s) - T0) ))
     echo "== wisdom sweep of the missing keys with ${left} s"
     part wisdom env BT_SWEEP_MISSING=1 BT_WALL_S=$left bash bench/experiments/h200_wisdom_sweep.sh
     pack A ;;
  B) part overhead bash bench/experiments/h200_overhead.sh
     for p in bt_mem builtin_mem tri_mem; do part "$p" bash bench/experiments/h200_triton.sh "$p"; done
     part decorator bash bench/experiments/h200_decorator.sh
     pack B ;;
  C) echo "== ctx_probe"; build/bt_ctx_probe | tee "$FINAL/ctx_probe.json"
     part overhead bash bench/experiments/h200_overhead.sh
     part bt_odd bash bench/experiments/h200_triton.sh bt_odd
     left=$(( 575 - ($(date +%s) - T0) ))
     echo "== triton.autotune at the odd shape with ${left} s"
     part tri_odd env TRI_TIMEOUT=$left bash bench/experiments/h200_triton.sh tri_odd
     pack C ;;
  D) for p in bt_odd bt_mm108; do part "$p" bash bench/experiments/h200_triton.sh "$p"; done
     left=$(( 560 - ($(date +%s) - T0) ))
     part tri_odd_par env TRI_TIMEOUT=$left bash bench/experiments/h200_triton.sh tri_odd_par
     pack D ;;
  E) BT_RUN=first . bench/device_env.sh
     fresh=$(mktemp -d)
     for run in "cold:16 4096 4096" "warm_kernel_cache:16 4096 4096" "nearest_24:24 4096 4096" \
                "nearest_100:100 8192 8192" "cold_1:1 14336 4096"; do
       tag=${run%%:*}; size=${run#*:}
       BLOCKTUNE_CACHE_DIR=$fresh BLOCKTUNE_LOG=1 timeout 60 build/bt_first_launch cuda:0 $size fp16 \
         > "$OUT/first_launch_$tag.json" 2> "$OUT/first_launch_$tag.log"
       echo "$tag rc=$?: $(cat "$OUT/first_launch_$tag.json")" | tee -a "$OUT/summary.txt"
       grep -m4 -i "dispatching\|from nearest\|not taking" "$OUT/first_launch_$tag.log" | tee -a "$OUT/summary.txt"
     done
     rm -rf "$fresh"
     export LD_LIBRARY_PATH="$PWD/.carry/prefix/lib:$LD_LIBRARY_PATH"
     log "engine_cuda 256 1024 1024 wisdom-only"
     timeout 100 .carry/eng/engine_cuda 256 1024 1024 wisdom-only "$OUT/engine_cuda.json" \
       > "$OUT/engine_cuda.log" 2>&1
     echo "rc=$?" | tee -a "$OUT/summary.txt"; grep "host cost" "$OUT/engine_cuda.log" | tee -a "$OUT/summary.txt" ;;
  *) echo "usage: $0 A|B|C|D|E" >&2; exit 2 ;;
esac
echo "== done in $(( $(date +%s) - T0 )) s"
