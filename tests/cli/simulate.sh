#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# simulate.sh — `blocktune simulate` on a recorded Kernel Tuner space: the table, JSON, the model
# row without a model, errors with file:line:column, and usage errors. $1 is the blocktune binary.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
space="$src/tests/data/kt/convolution_milo_A4000.json.gz"
[ -f "$space" ] || { echo "FAIL: the recorded space $space is missing from the tree"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bt" simulate --help >"$tmp/help" || fail "--help exits non-zero"
grep -q "strategy NAME|all" "$tmp/help" || fail "--help does not teach --strategy"
grep -q "forest" "$tmp/help" || fail "--help does not list the strategies"

"$bt" simulate "$space" --strategy all --runs 3 --budget 60 >"$tmp/out" 2>"$tmp/err" ||
    fail "simulate failed: $(cat "$tmp/err")"
for s in exhaustive random coordinate anneal forest; do
    grep -q "^| $s | " "$tmp/out" || fail "no row for $s"
done
grep -q "^| model | model: no performance model for this space" "$tmp/out" ||
    fail "model row does not say that there is no model"
grep -q "budget 60 measurements" "$tmp/out" || fail "the budget is not shown"
grep -q ">60" "$tmp/out" || fail "runs past the budget are not shown as >60"

"$bt" simulate "$space" --strategy forest --runs 2 --budget 40 --json >"$tmp/json" ||
    fail "--json failed"
grep -q '"name": "forest", "supported": true' "$tmp/json" || fail "json lacks the forest entry"
grep -q '"invalid_proposals": 0, "duplicate_proposals": 0' "$tmp/json" ||
    fail "json shows invalid or duplicate proposals"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/json" || fail "invalid JSON"
fi

# Deterministic per seed.
"$bt" simulate "$space" --strategy anneal --runs 2 --budget 50 --seed 9 >"$tmp/a1" || fail "a1"
"$bt" simulate "$space" --strategy anneal --runs 2 --budget 50 --seed 9 >"$tmp/a2" || fail "a2"
cmp -s "$tmp/a1" "$tmp/a2" || fail "two runs of one seed differ"

# A simulated time limit.
"$bt" simulate "$space" --strategy random --runs 2 --time-limit 30 >"$tmp/t" || fail "time limit"
grep -q "time limit 30 s simulated" "$tmp/t" || fail "the time limit is not shown"

# Errors: malformed JSON names file:line:column; unknown strategy and bad options are usage errors.
printf '{\n"tune_params_keys": [\n' >"$tmp/bad.json"
"$bt" simulate "$tmp/bad.json" 2>"$tmp/err" && fail "malformed JSON accepted"
grep -q "bad.json:3:" "$tmp/err" || fail "no file:line in: $(cat "$tmp/err")"
"$bt" simulate "$space" --strategy genetic 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown strategy is not a usage error"
grep -q "forest" "$tmp/err" || fail "unknown strategy does not list the strategies"
"$bt" simulate "$space" --runs zero 2>/dev/null
[ $? -eq 2 ] || fail "--runs zero is not a usage error"
# numbers are digits (and for --time-limit decimal notation) only; found by tests/fuzz/fuzz_cli_num:
# " -5" was read as 2^64-5 and "0x10" as 16
for bad in "--seed= -5" "--seed=+5" "--budget= 9" "--time-limit=0x10" "--time-limit= 1" \
           "--time-limit=-0"; do
    "$bt" simulate "$space" --runs 1 --budget 10 "${bad%%=*}" "${bad#*=}" 2>/dev/null
    [ $? -eq 2 ] || fail "simulate ${bad%%=*} '${bad#*=}' is not a usage error"
done
"$bt" simulate 2>/dev/null
[ $? -eq 2 ] || fail "no SPACE is not a usage error"
echo "ok"
