#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# precompile.sh — `blocktune precompile`: the help, usage errors named (a missing file, an
# unknown GPU, --prune without --out), a wisdom file of the repository built with no GPU (each
# distinct binary once, entries that share one counted), a second run that builds nothing,
# --prune removing what no entry uses, --all listing every entry, and an entry of another
# source skipped with the reason. Needs NVRTC (the CUDA toolkit), as CI has.
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

[ "$fails" = 0 ] && echo "precompile: all checks passed"
exit $((fails > 0))
