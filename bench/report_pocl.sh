#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# report_pocl.sh OUT — a small example of the HTML report on the CPU (PoCL): softmax at three
# sizes (a sweep) and the planted spec (failures of two kinds), each tune writing its text report,
# JSON, CSV and page into OUT and every measurement into one results store; then one page over the
# four JSON files (report.html) and one over the store (store.html, `report --db`), and OUT/
# provenance.txt (the commit, the device, the commands). The store is a temporary file: the JSON
# files hold the same measurements. Short budgets: the numbers are a shared CPU's, not a GPU's, and
# only show what the pages hold. PoCL's device memory is capped at 1 GiB (POCL_MEMORY_LIMIT, as
# the tests do) so that the cache flush before each timed run writes 128 MiB, not 1 GiB.
set -eu
out="${1:?usage: bench/report_pocl.sh OUT}"
bt="${BT:-build/blocktune}"
export POCL_MEMORY_LIMIT="${POCL_MEMORY_LIMIT:-1}"
mkdir -p "$out"
store="$(mktemp -d)"
trap 'rm -rf "$store"' EXIT
quick=(--warmup-ms 2 --rep-ms 10 --threads 2 --store "$store/store.db")
log=()
run() { log+=("$*"); "$@"; }
tune() { # tune NAME ARGS...
    local name="$1"; shift
    run "$bt" tune "${quick[@]}" "$@" --json "$out/$name.json" --csv "$out/$name.csv" \
        --html "$out/$name.html" >"$out/$name.txt"
}
for c in 256 1024 4096; do tune softmax_64x$c softmax --rows 64 --cols $c; done
tune planted tests/data/planted.json --rep-ms 8
run "$bt" report "$out"/softmax_64x256.json "$out"/softmax_64x1024.json \
    "$out"/softmax_64x4096.json "$out/planted.json" --title "blocktune on PoCL (CPU)" \
    -o "$out/report.html"
run "$bt" report --db "$store/store.db" --title "blocktune on PoCL (CPU): the store" \
    -o "$out/store.html"
{
    echo "made $(date -u '+%Y-%m-%d %H:%M UTC') by bench/report_pocl.sh on $(uname -n)"
    echo "blocktune $("$bt" --version | cut -d' ' -f2), commit $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- src tools include kernels 2>/dev/null || echo ' (with local changes)')"
    echo "POCL_MEMORY_LIMIT=$POCL_MEMORY_LIMIT; $(nproc) CPU cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    "$bt" devices 2>/dev/null | grep -v '^(' || true
    echo "commands (STORE: a temporary results store):"
    for c in "${log[@]}"; do echo "  ${c//$store/STORE}"; done
} >"$out/provenance.txt"
