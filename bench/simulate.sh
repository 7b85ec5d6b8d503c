#!/usr/bin/env bash
# simulate.sh — judges every search strategy on the five recorded Kernel Tuner spaces
# (tests/data/kt/) with `blocktune simulate`, 100 seeded runs each, and writes
# bench/results/simulation.md (tables + provenance) and bench/results/simulation.json.
#
#   bench/simulate.sh [extra blocktune simulate options, e.g. --runs 20]
#
# Environment: BLOCKTUNE (the binary; default build/blocktune, built if missing), BT_KT_CACHES
# (the directory of the caches; default tests/data/kt), JOBS (threads; default 2).
# No GPU is needed: a "measurement" replays the recorded time and costs the recorded compile and
# benchmark time. Takes a few minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
bt="${BLOCKTUNE:-$here/build/blocktune}"
caches="${BT_KT_CACHES:-$here/tests/data/kt}"
jobs="${JOBS:-2}"
out="$here/bench/results"

if [ ! -x "$bt" ]; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build -j "$jobs" >/dev/null
fi
files=()
for f in convolution_milo_A100 convolution_milo_A4000 convolution_milo_W6600 \
         dedispersion_milo_A100 dedispersion_milo_W6600; do
    p="$caches/$f.json.gz"
    [ -f "$p" ] || { echo "simulate.sh: missing $p (set BT_KT_CACHES)" >&2; exit 1; }
    files+=("$p")
done
mkdir -p "$out"
args=(simulate "${files[@]}" --strategy all --runs 100 --seed 1 --jobs "$jobs" "$@")
cmdline="blocktune ${args[*]//$caches/\$CACHES}"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
git diff --quiet HEAD -- src tools 2>/dev/null || commit="$commit (+ uncommitted changes)"
cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)"
start=$(date +%s)
"$bt" "${args[@]}" --json-out "$out/simulation.json.tmp" >"$out/simulation.tables.tmp"
secs=$(( $(date +%s) - start ))
{
    echo "# Search strategies on recorded spaces"
    echo
    echo "Produced by \`bench/simulate.sh\`; do not edit by hand."
    echo
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "- git commit: $commit"
    echo "- blocktune: $("$bt" --version)"
    echo "- command: \`$cmdline\` (\$CACHES = tests/data/kt)"
    echo "- machine: $(uname -srm), ${cpu:-unknown CPU}, $(nproc) cores, $jobs threads; ${secs} s"
    echo "- spaces: tests/data/kt/ (Kernel Tuner caches from"
    echo "  AutoTuningAssociation/benchmark_hub, see the README there)"
    echo
    echo "How to read: each cell of \"to X%\" is the number of measurements (compile + benchmark of one"
    echo "config) a run needed until its best was within X% of the best recorded config, median and"
    echo "90th percentile over 100 seeded runs; \">N\" means the runs at that percentile did not get"
    echo "there within the budget N. \"best @B\" is the median best found after B measurements, as %"
    echo "over the recorded best. \"time to 5%\" is the simulated tuning time (recorded compile +"
    echo "benchmark time) to get within 5%."
    echo
    cat "$out/simulation.tables.tmp"
} >"$out/simulation.md.tmp"
mv "$out/simulation.md.tmp" "$out/simulation.md"
mv "$out/simulation.json.tmp" "$out/simulation.json"
rm -f "$out/simulation.tables.tmp"
echo "wrote $out/simulation.md and simulation.json (${secs} s)"
