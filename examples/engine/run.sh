#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# run.sh [OUT_DIR] — the engine examples on this machine's GPU, as the integrator runs them on the
# H200: install blocktune into a temporary prefix, build examples/engine against it with
# find_package and with pkg-config, run engine_cuda (tune mode, then wisdom-only, at two sizes)
# and engine_opencl, and write each run's JSON and log to OUT_DIR (default
# bench/results/engine-<date>/). Exit non-zero when a run fails.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/bench/results/engine-$(date -u +%Y-%m-%d)}
mkdir -p "$out"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cmake -S "$root" -B "$T/build" -DCMAKE_BUILD_TYPE=Release -DBT_BUILD_TESTS=OFF >/dev/null
cmake --build "$T/build" -j"$(nproc)" >/dev/null
cmake --install "$T/build" --prefix "$T/prefix" >/dev/null
cmake -S "$root/examples/engine" -B "$T/eng" -DCMAKE_PREFIX_PATH="$T/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$T/eng" >/dev/null
PKG_CONFIG_PATH=$(dirname "$(find "$T/prefix" -name blocktune.pc)") \
    make -s -C "$root/examples/engine" -f Makefile.pkg-config O="$T" all
export BLOCKTUNE_CACHE_DIR=$T/cache
fail=0
for size in "256 1024 1024" "1024 4096 4096"; do
    tag=$(echo "$size" | tr ' ' x)
    for mode in tune wisdom-only; do
        "$T/eng/engine_cuda" $size $mode "$out/engine_cuda_${tag}_$mode.json" \
            > "$out/engine_cuda_${tag}_$mode.log" 2>&1 || fail=1
        cat "$out/engine_cuda_${tag}_$mode.log"
    done
done
"$T/engine_cuda" 256 1024 1024 tune "$out/engine_cuda_pkgconfig.json" > "$out/engine_cuda_pkgconfig.log" 2>&1 || fail=1
"$T/eng/engine_opencl" > "$out/engine_opencl.log" 2>&1 || [ $? = 77 ] || fail=1
cat "$out/engine_opencl.log"
echo "run.sh: results in $out"
exit $fail
