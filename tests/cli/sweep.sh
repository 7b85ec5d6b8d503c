#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# sweep.sh — `blocktune tune` over several sizes (tools/sweep.c): bad lists are refused; a sweep of
# M = 1,3,16 of tests/data/moe_gemm.json stores each key as a normal winner, shares the compiled
# binaries between keys (M is no define), prints one table row per key, and writes a sweep JSON
# document (which `blocktune report` reads; a bad member is named) and an HTML page with the
# sweep drawn; a kernel that crashes the process in a sweep costs a restart, not the sweep; Ctrl-C (SIGINT to the process group) ends it
# with the table of the keys finished, which the store keeps; `cache export --vllm` writes the
# file vLLM's fused-MoE look-up opens, read back the way vLLM reads it (vllm_lookup.py; skipped,
# visibly, without python3).
set -u
BT="$1"
SRC="${BT_SOURCE_DIR:-$(dirname "$0")/../..}"
SPEC="$SRC/tests/data/moe_gemm.json"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export BLOCKTUNE_CACHE_DIR="$T/cache"
FAST=(--warmup-ms 1 --rep-ms 2 --device opencl)

"$BT" tune --help | grep -q "pow2:1..4096" || fail "--help does not teach sweeps"
for bad in "pow2:0..4" "5..1" "1,,x" "pow2:3"; do
    "$BT" tune "$SPEC" --M "$bad" --store none > "$T/out" 2>&1
    [ $? -eq 2 ] || fail "--M $bad was not refused as a usage error"
    grep -q -- "--M" "$T/out" || fail "--M $bad: the message does not name the option"
done
"$BT" tune "$SPEC" --Q 1,2 --store none > "$T/out" 2>&1
[ $? -eq 2 ] && grep -q "no problem variable 'Q'" "$T/out" || fail "a swept name the kernel lacks: $(cat "$T/out")"
"$BT" tune "$SPEC" --M 1,2 --csv "$T/x.csv" --store none 2>&1 | grep -q "not with a sweep" \
    || fail "--csv with a sweep"

# one key first: the sweep after it compiles nothing new
"$BT" tune "$SPEC" --M 1 "${FAST[@]}" --store "$T/s.db" > "$T/one" 2>&1 || fail "one key: $(tail -3 "$T/one")"
nbin=$(ls "$T/cache/kernels" | wc -l)
[ "$nbin" -gt 0 ] || fail "no compiled binaries cached"
"$BT" tune "$SPEC" --M 1,3,16 "${FAST[@]}" --store "$T/s.db" --json "$T/sw.json" \
    --html "$T/sw.html" > "$T/out" 2> "$T/err" || fail "sweep: $(tail -5 "$T/err")"
cat "$T/out"
grep -q "Sweep: moe_gemm on .*3 of 3 key(s) tuned (M: 3 value(s))" "$T/out" || fail "sweep header"
for m in 1 3 16; do
    grep -Eq "^  M=$m +BLOCK_SIZE_M=[0-9]+ .* +[0-9.]+  " "$T/out" || fail "no row for M=$m"
done
[ "$(ls "$T/cache/kernels" | wc -l)" -eq "$nbin" ] || fail "the sweep compiled binaries anew"
n=$("$BT" cache --db "$T/s.db" list | grep -c "moe_gemm .*M=[0-9]*,N=64,K=32,E=2")
[ "$n" -eq 3 ] || fail "the store holds $n moe_gemm winners, not 3"
grep -q '"schema": "blocktune-sweep/1"' "$T/sw.json" || fail "sweep JSON schema"
[ "$(grep -c '"schema": "blocktune-tune/1"' "$T/sw.json")" -eq 3 ] || fail "3 tune documents"
grep -q 'class="sweep"' "$T/sw.html" || fail "the HTML page draws no sweep"
"$BT" report "$T/sw.json" -o "$T/r.html" 2>&1 | grep -q "(3 tunes)" || fail "report of the sweep JSON"
grep -q 'class="sweep"' "$T/r.html" || fail "report of the sweep JSON draws no sweep"
printf '{"schema": "blocktune-sweep/1", "sweep": [{"schema": "blocktune-tune/1", "kernel": "k",\n "problem": {}, "configs": [{"config": {"B": 1}, "status": "ok"}]}]}\n' > "$T/bad.json"
"$BT" report "$T/bad.json" -o "$T/bad.html" 2>&1 | grep -q "bad.json:.*sweep\[0\].configs\[0\].median_ms" \
    || fail "a bad sweep member is not named"
[ -e "$T/bad.html" ] && fail "a page was written from a bad sweep document"

# Ctrl-C: the keys finished are reported and kept
setsid "$BT" tune "$SPEC" --M 1..40 "${FAST[@]}" --store "$T/i.db" > "$T/int" 2> "$T/interr" &
pid=$!
# (M=3's winner in the store means M=2 was recorded as finished: a key's winner is stored inside
# its tune, before the sweep records the key, so waiting for M=2's row alone raced that step)
for _ in $(seq 600); do
    "$BT" cache --db "$T/i.db" list 2>/dev/null | grep -q "M=3,N=64" && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.5
done
kill -INT -- -$pid
wait $pid
rc=$?
[ $rc -eq 130 ] || fail "an interrupted sweep ended with $rc, not 130: $(tail -3 "$T/interr")"
grep -Eq "^  M=2 +BLOCK_SIZE_M" "$T/int" || fail "the interrupted sweep's table lacks M=2"
grep -Eq "^  M=40 +not tuned" "$T/int" || fail "the interrupted sweep's table lacks 'not tuned'"
grep -q "resumes the sweep" "$T/int" || fail "the interrupted sweep does not say it resumes"
"$BT" cache --db "$T/i.db" list | grep -q "M=1,N=64" || fail "the store lost M=1"

# a crash inside a sweep (a CPU device runs kernels in-process): the supervisor restarts the
# child, which resumes the same key past the config recorded as failed, then the next key
if "$BT" devices --json 2>/dev/null | grep -A12 '"opencl:0"' | grep -q '"is_gpu": *false'; then
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0" "$BT" tune \
        "$SRC/tests/data/crash.json" --n 4096,8192 "${FAST[@]}" --finalists 1 \
        --store "$T/c.db" > "$T/crash" 2> "$T/crasherr" || fail "a sweep with crashes: $(tail -3 "$T/crasherr")"
    [ "$(grep -c 'died (signal 11' "$T/crasherr")" -eq 4 ] || fail "not 4 crashes named: $(cat "$T/crasherr")"
    for n in 4096 8192; do
        grep -Eq "^  n=$n +BLOCK=[0-9]+ CRASH=0 " "$T/crash" || fail "no CRASH=0 winner for n=$n"
    done
else
    echo "note: opencl:0 is a GPU: the crash in a sweep is not checked"
fi

# a key for which no config is valid says so (not "no config passed"): BLOCK_SIZE_N <= N leaves
# nothing at N = 8, and the tune's own report names the reason
sed 's/"entry": "moe_gemm",/"entry": "moe_gemm", "constraints": ["BLOCK_SIZE_N <= N"],/' "$SPEC" > "$T/moe_c.json"
cp "$SRC/tests/data/moe_gemm.cl" "$T/"
"$BT" tune "$T/moe_c.json" --N 8,64 "${FAST[@]}" --store none > "$T/nv" 2>&1
grep -q "N=8  *no winner: no valid config" "$T/nv" || fail "a key with no valid config: $(cat "$T/nv")"
grep -q "N=64  *BLOCK_SIZE_M=" "$T/nv" || fail "the valid key beside it: $(cat "$T/nv")"
"$BT" tune "$T/moe_c.json" --N 8 "${FAST[@]}" --store none > "$T/nv1" 2>&1
grep -q "none: no config is valid for this problem" "$T/nv1" || fail "one key, none valid: $(cat "$T/nv1")"

# vLLM's layout, read the way vLLM reads it
"$BT" cache --db "$T/s.db" export --vllm "$T/vllm" > "$T/vout" 2>&1 || fail "export --vllm: $(cat "$T/vout")"
ls "$T/vllm"
ls "$T/vllm" | grep -q "^E=2,N=64,device_name=.*,dtype=float32.json$" || fail "vLLM file name"
if ! command -v python3 > /dev/null; then
    echo "SKIPPED: python3 is not installed: vLLM's look-up of the exported file was not checked"
    exit 77
fi
python3 "$SRC/tests/cli/vllm_lookup.py" "$T/vllm" "$T/sw.json" 2 64 float32 || exit 1
echo "ok"
