#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# precompile.sh — `blocktune precompile`: the help, usage errors named (a missing file, an
# unknown GPU, --prune without --out), a wisdom file of the repository built with no GPU (each
# distinct binary once, entries that share one counted), a second run that builds nothing,
# --prune removing what no entry uses, --all listing every entry, an entry of another source
# skipped with the reason, and a Triton winner precompiled, then tuned on the mock driver from
# that binary with no compile pool started. Needs NVRTC (the CUDA toolkit) and Triton, as CI has.
set -u
bt="$1"
src="${BT_SOURCE_DIR:?}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {
    "$bt" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}
has() { grep -q -- "$1" "$tmp/$2" || fail "'$1' not in $2 of: ${cmd:-}: $(cat "$tmp/$2")"; }
[ -n "${BT_SOURCE_DIR:-}" ] && export BLOCKTUNE_DATA_DIR="$BT_SOURCE_DIR/data"

cmd="--help"; run precompile --help
[ "$rc" = 0 ] || fail "--help exited $rc"
has "first launch" out
has "--prune" out
cmd="missing file"; run precompile --out "$tmp/o" "$tmp/nothere.json"
[ "$rc" = 2 ] || fail "a missing wisdom file exited $rc"
has "nothere.json: No such file" err
cmd="unknown gpu"; run precompile --out "$tmp/o" --gpu nosuchgpu "$src/wisdom"
[ "$rc" = 2 ] || fail "an unknown GPU exited $rc"
has "unknown GPU 'nosuchgpu'" err
cmd="--prune alone"; run precompile --prune
[ "$rc" = 2 ] || fail "--prune without --out exited $rc"
has "needs --out" err
cmd="--threads x"; run precompile --threads x
[ "$rc" = 2 ] || fail "--threads x exited $rc"

# The softmax, layernorm, reduce and vector_add winners of the shipped H200 wisdom, and one more
# entry of another source (a copy of the first, another size).
w="$tmp/w.json"
python3 - "$src/wisdom/NVIDIA_H200-45146283.json" "$w" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
e = dict(d["entries"][0]); e["source_hash"] = "00000000000000ff"; e["key"] = dict(e["key"], rows=7)
d["entries"].append(e)
json.dump(d, open(sys.argv[2], "w"))
PY
n=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['entries']))" "$w")
cmd="precompile w.json"; run precompile --out "$tmp/pre" "$w"
if grep -q "needs NVRTC" "$tmp/out"; then
    echo "SKIPPED: no NVRTC here to compile with: $(grep -m1 NVRTC "$tmp/out")"
    exit 77
fi
[ "$rc" = 0 ] || fail "precompile exited $rc: $(cat "$tmp/out" "$tmp/err")"
has "^$n wisdom winners: " out
has "1 skipped, 0 failed" out
has "tuned for another source of .* (hash 00000000000000ff" out
nbin=$(ls "$tmp/pre" | grep -c '\.bin$')
compiled=$(sed -n 's/.* winners: \([0-9]*\) compiled, \([0-9]*\) there.*/\1/p' "$tmp/out")
there=$(sed -n 's/.* winners: \([0-9]*\) compiled, \([0-9]*\) there.*/\2/p' "$tmp/out")
[ "$compiled" = "$nbin" ] || fail "$compiled compiled but $nbin binaries written"
[ "$nbin" -ge 4 ] || fail "only $nbin binaries for four kernels"
[ $((compiled + there + 1)) = "$n" ] || fail "$compiled + $there + 1 skipped != $n entries"
head -c 24 "$tmp/pre/$(ls "$tmp/pre" | head -1)" | od -An -tx1 | grep -q "43 4b 54 42 02 00 00 00" \
    || fail "a binary is not a compressed kernel-cache file (BTKC, version 2)"

# Again: nothing is built; --prune removes a stray binary and keeps the others; --all lists all.
touch "$tmp/pre/0123456789abcdef.bin" "$tmp/pre/notes.txt"
cmd="precompile again --prune --all"; run precompile --out "$tmp/pre" --prune --all "$w"
[ "$rc" = 0 ] || fail "the second precompile exited $rc"
has " 0 compiled, $((n - 1)) there already" out
has "1 binaries of no entry removed" out
[ -e "$tmp/pre/0123456789abcdef.bin" ] && fail "--prune left the stray binary"
[ -e "$tmp/pre/notes.txt" ] || fail "--prune removed a file that is not a binary"
[ "$(ls "$tmp/pre" | grep -c '\.bin$')" = "$nbin" ] || fail "--prune removed an entry's binary"
[ "$(grep -c '^present ' "$tmp/out")" = $((n - 1)) ] || fail "--all did not list every entry"

# A Triton kernel (Triton: $BT_TRITON_PYTHON, else python3; SKIPPED without it after the rest,
# FAIL under $CI): bench/experiments/precompile's one-config vector_add, its winner precompiled
# for the H200's row but for the mock driver's name, then tuned on the mock (which runs Triton's
# vector_add) with an empty kernel cache: the binary comes from the precompiled folder and no
# compile pool starts, though a python with Triton is there.
mock="$(dirname "$bt")/libbt_mock_cuda.so"
tpy=""
for c in "${BT_TRITON_PYTHON:-}" python3; do
    if [ -n "$c" ] && "$c" -c "import triton" 2>/dev/null; then tpy="$c"; break; fi
done
if [ -z "$tpy" ] || [ ! -f "$mock" ]; then
    msg="Triton (python: triton) or the mock driver is not there; ./dev.sh test installs Triton"
    [ "$fails" = 0 ] || exit 1
    if [ -n "${CI:-}" ]; then echo "FAIL: $msg"; exit 1; fi
    echo "SKIPPED (the Triton part): $msg"
    exit 77
fi
ex="$src/bench/experiments/precompile"
sed 's/"NVIDIA H200"/"blocktune mock GPU"/' "$ex/triton_wisdom.json" > "$tmp/tw.json"
cmd="precompile a Triton winner"
BLOCKTUNE_PYTHON="$tpy" run precompile --gpu h200 --out "$tmp/tpre" --spec "$ex/triton_vector_add_one.json" "$tmp/tw.json"
[ "$rc" = 0 ] || fail "the Triton precompile exited $rc: $(cat "$tmp/out" "$tmp/err")"
has "1 compiled, 0 there already .* 0 skipped, 0 failed" out
cmd="tune on the mock with the precompiled binary"
BLOCKTUNE_CACHE_DIR="$tmp/tcache" BLOCKTUNE_PRECOMPILED_DIR="$tmp/tpre" BLOCKTUNE_PYTHON="$tpy" \
    BLOCKTUNE_CUDA_LIBRARY="$mock" run tune "$ex/triton_vector_add_one.json" --n 16777216 \
    --dtype fp32 --device cuda:0 --no-boundary --store none
[ "$rc" = 0 ] || fail "the tune exited $rc: $(cat "$tmp/out" "$tmp/err")"
has "1 of 1 from the kernel cache, 1 of them precompiled" out
has "Triton: no compile pool started" out
has "WINNER" out
grep -q "WINNER, screening" "$tmp/out" && fail "the lone config kept its screening median"

[ "$fails" = 0 ] && echo "precompile: all checks passed"
exit $((fails > 0))
