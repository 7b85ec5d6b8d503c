#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# simulate.sh — judges every search strategy on the five recorded Kernel Tuner spaces
# (tests/data/kt/) with `blocktune simulate`, 100 seeded runs each, then what `tune` does by
# default (the default strategy under the default measurement budget, both read from
# src/search/strategy.h; DEFAULT_RUNS seeded runs, run to the budget), and writes
# bench/results/simulation.md (tables + provenance), bench/results/simulation.json (the
# strategies) and bench/results/simulation-default.json (the default).
#
#   bench/simulate.sh [extra blocktune simulate options for the first part, e.g. --runs 20]
#
# Environment: BLOCKTUNE (the binary; default build/blocktune, built if missing), BT_KT_CACHES
# (the directory of the caches; default tests/data/kt), JOBS (threads; default 2), DEFAULT_RUNS
# (seeded runs of the default; default 300, 0 skips that part).
# No GPU is needed: a "measurement" replays the recorded time and costs the recorded compile and
# benchmark time. Takes a few minutes on 2 cores.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
bt="${BLOCKTUNE:-$here/build/blocktune}"
caches="${BT_KT_CACHES:-$here/tests/data/kt}"
jobs="${JOBS:-2}"
druns="${DEFAULT_RUNS:-300}"
dstrat="$(sed -n 's/^#define BT__SEARCH_DEFAULT_LARGE "\(.*\)"$/\1/p' src/search/strategy.h)"
dbudget="$(sed -n 's/^#define BT__SEARCH_DEFAULT_BUDGET \([0-9]*\)$/\1/p' src/search/strategy.h)"
[ -n "$dstrat" ] && [ -n "$dbudget" ] || { echo "simulate.sh: no default in strategy.h" >&2; exit 1; }
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
if [ "$druns" -gt 0 ]; then
    dargs=(simulate "${files[@]}" --strategy "$dstrat" --budget "$dbudget" --full --runs "$druns"
           --seed 1 --jobs "$jobs")
    dcmdline="blocktune ${dargs[*]//$caches/\$CACHES}"
    start=$(date +%s)
    "$bt" "${dargs[@]}" --json-out "$out/simulation-default.json.tmp" >/dev/null
    dsecs=$(( $(date +%s) - start ))
fi
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
    if [ "$druns" -gt 0 ]; then
        echo
        echo "## The default at tune's default budget"
        echo
        echo "What \`tune\` does without --strategy, --budget or --time-limit on a space of more than"
        echo "128 valid configs: \`$dstrat\` for $dbudget measurements. Command: \`$dcmdline\`"
        echo "(${dsecs} s; JSON: simulation-default.json). \"within 5%\": the share of runs whose best"
        echo "is within 5% of the recorded best, with its 95% Wilson interval."
        echo
        python3 - "$out/simulation-default.json.tmp" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
print("| space | runs (seeds) | within 5% | 95% interval | measurements: median | mean |")
print("|---|--:|--:|--:|--:|--:|")
for sp in d["spaces"]:
    st = sp["strategies"][0]
    n, p, z = sp["runs"], st["success"][1], 1.96
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    # --full: every run measures until the budget or until the strategy stops.
    med = str(st["evals_run_median"])
    print(f"| {sp['space']} | {n} ({sp['seed']}..{sp['seed'] + n - 1}) | {p * 100:.0f}% "
          f"| {max(0, mid - half) * 100:.0f}–{min(1, mid + half) * 100:.0f}% | {med} "
          f"| {st['evals_mean']:.1f} |")
PY
    fi
} >"$out/simulation.md.tmp"
mv "$out/simulation.md.tmp" "$out/simulation.md"
mv "$out/simulation.json.tmp" "$out/simulation.json"
[ "$druns" -gt 0 ] && mv "$out/simulation-default.json.tmp" "$out/simulation-default.json"
rm -f "$out/simulation.tables.tmp"
echo "wrote $out/simulation.md and simulation.json (${secs} s)"
