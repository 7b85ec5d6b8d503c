#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/run.sh — builds the libFuzzer targets (clang, -DBT_FUZZ=ON, in build-fuzz/) and runs
# each for a time with its seeds and dictionary (docs/fuzzing.md).
#
#   tests/fuzz/run.sh [TARGET|all] [SECONDS] [-- LIBFUZZER FLAGS...]
#
# TARGET is a name such as spec or fuzz_spec (default: all, one after another); SECONDS per
# target (default 25). New inputs go to build-fuzz/corpus/TARGET/ (kept between runs: a longer
# campaign continues from it), the seeds are only read, crashes land in build-fuzz/artifacts/.
# Each target's output is in build-fuzz/logs/TARGET.log; its last lines (executions, coverage)
# are printed. Exit status 1 when a target found a crash, a sanitizer report or a leak.
# Environment: CC (default clang), BT_FUZZ_BUILD (default build-fuzz).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root="$PWD"
build="${BT_FUZZ_BUILD:-build-fuzz}"
targets=(expr spec config wisdom ktcache cli_num)

which="${1:-all}"
secs="${2:-25}"
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
extra=("$@")

if [ "$which" != all ]; then
    which="${which#fuzz_}"
    printf '%s\n' "${targets[@]}" | grep -qx "$which" ||
        { echo "run.sh: unknown target '$which' (one of: ${targets[*]})" >&2; exit 2; }
    targets=("$which")
fi

# --- build ------------------------------------------------------------------------------------
cc="${CC:-clang}"
command -v "$cc" >/dev/null || { echo "run.sh: $cc not found (libFuzzer needs clang)" >&2; exit 2; }
cmake -S . -B "$build" -DCMAKE_C_COMPILER="$cc" -DBT_FUZZ=ON -DBT_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null

# --- seeds ------------------------------------------------------------------------------------
# Seeds that live elsewhere in the tree are gathered into build-fuzz/seeds/TARGET.
gather() { # gather TARGET FILES...
    local dir="$build/seeds/$1"; shift
    rm -rf "$dir" && mkdir -p "$dir"
    local f
    for f in "$@"; do [ -f "$f" ] && cp "$f" "$dir/$(echo "${f#./}" | tr / _)"; done
}
gather spec kernels/specs/*.json tests/data/*.json tests/data/t1/*.json examples/*/*.json
gather wisdom wisdom/*.json

max_len() {
    case "$1" in
        cli_num) echo 64 ;;
        config) echo 512 ;;
        expr) echo 4096 ;;
        wisdom) echo 16384 ;;
        *) echo 8192 ;;
    esac
}

# --- run --------------------------------------------------------------------------------------
mkdir -p "$build/logs" "$build/artifacts"
failed=()
for t in "${targets[@]}"; do
    corpus="$build/corpus/$t"
    mkdir -p "$corpus"
    seeds=()
    [ -d "tests/fuzz/${t}_seeds" ] && seeds+=("tests/fuzz/${t}_seeds")
    [ -d "$build/seeds/$t" ] && seeds+=("$build/seeds/$t")
    dict=()
    [ -f "tests/fuzz/$t.dict" ] && dict=("-dict=tests/fuzz/$t.dict")
    log="$build/logs/$t.log"
    cmd=("$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -max_len="$(max_len "$t")"
         -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
         -artifact_prefix="$build/artifacts/$t-" "${dict[@]}" "${extra[@]}" "$corpus" "${seeds[@]}")
    echo "== fuzz_$t ($([ "$secs" = 0 ] && echo "no time limit" || echo "$secs s")): ${cmd[*]}"
    if "${cmd[@]}" >"$log" 2>&1; then
        grep -E '^(#[0-9]+ *DONE|stat::number_of_executed_units|stat::average_exec_per_sec)' "$log" || true
    else
        echo "fuzz_$t FAILED (see $root/$log):"
        grep -E 'ERROR|SUMMARY|check failed|Test unit written|mismatch|runtime error' "$log" | head -20 || true
        failed+=("$t")
    fi
done
if ((${#failed[@]})); then
    echo "run.sh: failures in: ${failed[*]} (inputs in $build/artifacts/)" >&2
    exit 1
fi
