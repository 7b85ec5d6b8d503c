#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_round3.sh — one device call (build/ carried) for the Triton path and the gemm front door:
# blocktune tunes of the seed's 7 and the anchors' 108 matmul configs at 4096^3 (cold, warm,
# stored) and triton.autotune on the same kernels (h200_triton.sh bt_mm4096, tri_mm), the launch
# overhead of a Triton kernel, `tune gemm` at the issue's shapes (h200_front.sh), and
# @blocktune.autotune beside @triton.autotune (h200_decorator.sh). Each part's console and
# summary are kept as console_<part>.txt and summary_<part>.txt; its archive as <run>.tgz.
set -u
FINAL=${OUT:-/tmp/bt-out}
part() { local name=$1; shift; echo "== part $name ($(date +%T))"; "$@" > "$FINAL/console_$name.txt" 2>&1;
         echo "rc=$?"; cp "$FINAL/summary.txt" "$FINAL/summary_$name.txt" 2>/dev/null; }
part bt_mm bash bench/experiments/h200_triton.sh bt_mm4096
part tri_mm bash bench/experiments/h200_triton.sh tri_mm
part overhead bash bench/experiments/h200_triton.sh overhead
part front env TUNE_TIMEOUT=80 bash bench/experiments/h200_front.sh
part decorator bash bench/experiments/h200_decorator.sh
