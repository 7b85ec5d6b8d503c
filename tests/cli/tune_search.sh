#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tune_search.sh — `blocktune tune` driven by a search strategy on the default OpenCL device (PoCL
# in CI): --strategy/--budget/--time-limit/--exhaustive-max and their errors, the report and the
# JSON "search" object, and `blocktune simulate store:PATH` replaying what the tune stored (the
# exhaustive replay finds exactly the stored best). $1 is the blocktune binary.
set -u
bt="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
quick=(--m 67 --n 45 --k 33 --warmup-ms 2 --rep-ms 8 --threads 2)

"$bt" tune --help >"$tmp/help" || fail "--help exits non-zero"
for w in "--strategy NAME" "--budget N" "--time-limit S" "--exhaustive-max N" "--max-configs N" \
         "--target-ms T" "--within P" "--finalists N"; do
    grep -q -- "$w" "$tmp/help" || fail "--help lacks $w"
done
for s in exhaustive random model coordinate anneal forest; do
    grep -qE "^ +$s +[a-z]" "$tmp/help" || fail "--help does not list strategy $s with its summary"
done
grep -q "seeds the random inputs and the strategy" "$tmp/help" || fail "--help: --seed and the strategy"

# Errors: one line, exit 2, before any device work.
"$bt" tune gemm --strategy genetic 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown strategy is not a usage error"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "unknown strategy: not one line: $(cat "$tmp/err")"
for s in exhaustive random model coordinate anneal forest; do
    grep -q "$s" "$tmp/err" || fail "unknown strategy does not list $s"
done
"$bt" tune gemm --budget many 2>/dev/null
[ $? -eq 2 ] || fail "--budget many is not a usage error"
"$bt" tune gemm --budget 2.5 2>/dev/null
[ $? -eq 2 ] || fail "--budget 2.5 is not a usage error"
"$bt" tune gemm --time-limit -1 2>/dev/null
[ $? -eq 2 ] || fail "--time-limit -1 is not a usage error"
for f in 0 17 2.5; do
    "$bt" tune gemm --finalists $f 2>"$tmp/err"
    [ $? -eq 2 ] || fail "--finalists $f is not a usage error"
    grep -q "1 to 16" "$tmp/err" || fail "--finalists $f: $(cat "$tmp/err")"
done

# A budget: random proposes 6 distinct valid configs, and the report says so.
"$bt" tune gemm "${quick[@]}" --strategy random --budget 6 --store "$tmp/s.db" \
    --json "$tmp/r.json" >"$tmp/out" 2>"$tmp/err" || fail "tune failed: $(cat "$tmp/err")"
grep -q "6 measured of 200 valid, 194 not measured" "$tmp/out" || fail "measured/valid: $(head -3 "$tmp/out")"
grep -q "search: strategy random, stopped on measurement budget" "$tmp/out" ||
    fail "the report does not say the strategy and why it stopped"
grep -q "budget 6 measurements, time limit none" "$tmp/out" || fail "the budget is not shown"
if command -v python3 >/dev/null; then
    python3 - "$tmp/r.json" <<'PY' || fail "the JSON search object"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["search"]
assert s["strategy"] == "random" and s["stop"] == "measurement budget", s
assert s["measured"] == 6 == len(j["configs"]) and s["valid"] == 200 and s["not_measured"] == 194, s
assert s["budget"] == 6 and s["time_limit_s"] is None and s["round_size"] == 2 and s["rounds"] == 3, s
cfgs = [json.dumps(c["config"], sort_keys=True) for c in j["configs"]]
assert len(set(cfgs)) == 6, cfgs
PY
fi

# --max-configs is --budget; --exhaustive-max picks the default strategy.
"$bt" tune gemm "${quick[@]}" --max-configs 2 --store none >"$tmp/out" 2>&1 || fail "--max-configs"
grep -q "2 measured of 200 valid" "$tmp/out" || fail "--max-configs 2 did not measure 2"
grep -q "search: strategy forest" "$tmp/out" || fail "200 valid configs: the default is not forest"
"$bt" tune gemm "${quick[@]}" --budget 2 --exhaustive-max 500 --store none >"$tmp/out" 2>&1 ||
    fail "--exhaustive-max"
grep -q "search: strategy exhaustive" "$tmp/out" || fail "--exhaustive-max 500 did not pick exhaustive"

# --finalists: that many of the best are re-measured interleaved (challengers may join them).
"$bt" tune gemm "${quick[@]}" --strategy random --budget 6 --finalists 5 --store none \
    --json "$tmp/f.json" >"$tmp/out" 2>&1 || fail "--finalists"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; w=json.load(open(sys.argv[1]))["winner"]; assert 5 <= w["finalists"] <= 6 and w["rounds"] == 8, w' \
        "$tmp/f.json" || fail "--finalists 5: $(grep -i finalist "$tmp/out")"
fi

# A time limit: the search stops after the round in flight.
"$bt" tune gemm "${quick[@]}" --strategy anneal --time-limit 0.001 --store none >"$tmp/out" 2>&1 ||
    fail "--time-limit"
grep -q "stopped on time limit after 1 round" "$tmp/out" || fail "time limit: $(grep search: "$tmp/out")"
grep -q "time limit 0.001 s" "$tmp/out" || fail "the time limit is not shown"

# A target: any config within 5 % of 10 s stops the search after its first round.
"$bt" tune gemm "${quick[@]}" --strategy random --budget 20 --target-ms 10000 --within 5 \
    --store none --json "$tmp/t.json" >"$tmp/out" 2>&1 || fail "--target-ms"
grep -q "stopped on target reached after 1 round" "$tmp/out" || fail "target: $(grep search: "$tmp/out")"
grep -q "target 1e+04 ms (+5 %)" "$tmp/out" || fail "the target is not shown: $(grep search: "$tmp/out")"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["search"]; assert s["stop"] == "target reached" and s["target_ms"] == 10000 and s["within_pct"] == 5 and s["measured"] == 2, s' \
        "$tmp/t.json" || fail "the JSON target"
fi
# An unreachable target changes nothing: the budget stops it.
"$bt" tune gemm "${quick[@]}" --strategy random --budget 4 --target-ms 0.000001 --store none \
    >"$tmp/out" 2>&1 || fail "--target-ms tiny"
grep -q "stopped on measurement budget" "$tmp/out" || fail "tiny target: $(grep search: "$tmp/out")"
"$bt" tune gemm --target-ms fast 2>/dev/null
[ $? -eq 2 ] || fail "--target-ms fast is not a usage error"

# simulate replays the store: exhaustive finds exactly the stored best.
key="M=67,N=45,K=33,dtype=fp32"
"$bt" simulate "store:$tmp/s.db" --kernel gemm --key "$key" --strategy exhaustive --runs 1 --json \
    >"$tmp/sim.json" 2>"$tmp/err" || fail "simulate store: $(cat "$tmp/err")"
if command -v python3 >/dev/null; then
    python3 - "$tmp/sim.json" "$tmp/r.json" <<'PY' || fail "the replay of the store"
import json, sys
sim = json.load(open(sys.argv[1]))["spaces"][0]
tune = json.load(open(sys.argv[2]))
best = min(c["median_ms"] for c in tune["configs"] if c["status"] == "ok")
assert sim["kernel"] == "gemm" and sim["recorded"] == 6, sim
assert abs(sim["best_ms"] - best) <= 1e-6 * best, (sim["best_ms"], best)
st = sim["strategies"][0]
assert st["name"] == "exhaustive" and st["success"] == [1.0, 1.0, 1.0], st
PY
fi
"$bt" simulate "store:$tmp/s.db" --strategy random 2>/dev/null
[ $? -eq 2 ] || fail "store: without --kernel/--key is not a usage error"
"$bt" simulate "store:$tmp/s.db" --kernel gemm --key "M=1,N=1,K=1,dtype=fp32" 2>"$tmp/err" &&
    fail "a key with no measurements replayed"
grep -q "no measurements of gemm" "$tmp/err" || fail "missing key: $(cat "$tmp/err")"
"$bt" simulate "store:$tmp/none.db" --kernel gemm --key "$key" 2>"$tmp/err" && fail "missing store"
grep -q "no results store" "$tmp/err" || fail "missing store: $(cat "$tmp/err")"
echo "ok"
