#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_graph.sh — graph-captured timing of a short kernel against launch-by-launch timing, and the
# exact blocks-per-SM column, on the H200.
set -u
FINAL=${OUT:-/tmp/bt-out}; mkdir -p "$FINAL"
export LD_LIBRARY_PATH="$PWD/.carry/lib:${LD_LIBRARY_PATH:-}" BLOCKTUNE_CACHE_DIR=/tmp/bt-cache
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
for mode in "" "--graph"; do
  echo "== vector_add n=65536 $mode"
  build/blocktune tune vector_add --n 65536 --device cuda:0 --store none $mode 2>&1 | tee -a "$FINAL/graph.txt" | grep -E "graph|^ +[123] |Winner|median"
done
echo "== reduce n=65536 --graph (resets: falls back)"
build/blocktune tune reduce --n 65536 --device cuda:0 --store none --graph 2>&1 | tee -a "$FINAL/graph.txt" | grep -E "graph|WINNER"
