#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ncu_one.sh — Nsight Compute on one config of a built-in spec, for the "why" in bench/NOTES.md.
#   bash bench/ncu_one.sh SPEC 'NAME=V,NAME=V,...' OUTFILE blocktune-tune-size-options...
# writes a one-config copy of the spec (/tmp/ncu_<spec>.json, bench/spec_variant.py), tunes it under
# ncu (speed of light, compute and memory workloads, warp states, source counters) and keeps
# ncu's report text in OUTFILE.
set -u
spec=$1 cfg=$2 out=$3; shift 3
python3 bench/spec_variant.py "$spec" "/tmp/ncu_$spec.json" "$cfg"
timeout 300 ncu --clock-control none --kernel-name "$spec" --launch-skip 6 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats \
  --section SchedulerStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
  --section SourceCounters --section Occupancy --section LaunchStats ${NCU_OPTS:-} \
  build/blocktune tune "/tmp/ncu_$spec.json" "$@" --no-boundary --rep-ms 2 --warmup-ms 1 \
  --store none > "$out" 2>&1
echo "ncu $spec $cfg: rc=$?"
grep -E "SM Frequency|Duration|Compute \(SM\) Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Issued Ipc|Eligible Warps|Est. Speedup|stalled|Bank" "$out" | head -30
