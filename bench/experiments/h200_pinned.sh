#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_pinned.sh — issue 14: the host cost of a cached launch (examples/engine's engine_cuda,
# wisdom-only) with its thread pinned to a CPU near the GPU (the PCI device's local_cpulist),
# as an engine pins its launch thread, and not pinned (ENGINE_PIN=0), alternating, three each,
# each a new process; every run prints the median difference with its 95 % interval.
#   device run (build/ and .carry/{lib,prefix,eng} carried): bash bench/experiments/h200_pinned.sh
set -u
BT_RUN=pinned . bench/device_env.sh
export LD_LIBRARY_PATH="$PWD/.carry/prefix/lib:$LD_LIBRARY_PATH"
log "CPUs allowed: $(grep Cpus_allowed_list /proc/self/status | cut -f2); NUMA: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) nodes"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1; head -3 "$OUT/topo.txt" | tee -a "$OUT/summary.txt"
for i in 1 2 3; do
  for pin in 1 0; do
    log "engine_cuda wisdom-only, ENGINE_PIN=$pin, run $i"
    ENGINE_PIN=$pin timeout 100 .carry/eng/engine_cuda 256 1024 1024 wisdom-only \
      "$OUT/engine_cuda_pin${pin}_$i.json" > "$OUT/engine_cuda_pin${pin}_$i.log" 2>&1
    echo "rc=$?" | tee -a "$OUT/summary.txt"; grep "host cost" "$OUT/engine_cuda_pin${pin}_$i.log" | tee -a "$OUT/summary.txt"
  done
done
