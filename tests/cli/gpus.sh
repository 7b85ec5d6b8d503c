#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# gpus.sh — `blocktune gpus`: the table, one GPU in full, loose names, --json round trip through
# --gpu-file, an overlay that replaces a row, and one clear stderr line with exit 2 for bad input.
set -u
bt="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Run: out, err and rc of "$bt" "$@".
run() {
    "$bt" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}
has() { grep -q -- "$1" "$tmp/$2" || fail "'$1' not in $2 of: ${cmd:-}"; }

# The source tree's table, so that an older installed gpus.json cannot shadow it.
[ -n "${BT_SOURCE_DIR:-}" ] && export BLOCKTUNE_DATA_DIR="$BT_SOURCE_DIR/data"

cmd="gpus"; run gpus
[ "$rc" = 0 ] || fail "gpus exited $rc"
for n in H200-SXM H100-SXM H100-PCIe A100-SXM4-40GB A100-SXM4-80GB A100-PCIe-40GB \
         A100-PCIe-80GB L4 L40S A10 RTX-4090 RTX-3090 T4 V100-SXM2; do
    grep -q "^$n " "$tmp/out" || fail "row $n missing from the table"
done
has "fp16 TC" out
[ -s "$tmp/err" ] && fail "gpus wrote to stderr: $(cat "$tmp/err")"
# A100-SXM4-80GB: 108 SMs, 164 KiB/SM, 163 KiB opt-in, 40 MiB L2, 2039 GB/s, 19.5, 312, 312, no fp8.
grep -Eq '^A100-SXM4-80GB +ampere +8\.0 +108 +164 +163 +40 +2039 +19\.5 +312 +312 +-$' "$tmp/out" \
    || fail "A100-SXM4-80GB row: $(grep '^A100-SXM4-80GB' "$tmp/out")"

cmd="gpus 'nvidia h200'"; run gpus "nvidia h200"
[ "$rc" = 0 ] || fail "gpus 'nvidia h200' exited $rc"
has "^H200-SXM " out
has "62914560 B (60 MiB)" out
has "233472 B (228 KiB)" out
has "4800 GB/s" out
has "H200 Tensor Core GPU datasheet" out
has "fp16_tc *989.4 *206.1" out

cmd="gpus NVIDIA GeForce RTX 4090"; run gpus NVIDIA GeForce RTX 4090
[ "$rc" = 0 ] || fail "unquoted multi-word name exited $rc"
has "^RTX-4090 " out

cmd="gpus h300"; run gpus h300
[ "$rc" = 2 ] || fail "unknown name exited $rc, want 2"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "unknown name: want one stderr line, got: $(cat "$tmp/err")"
has "unknown GPU 'h300'; closest: H200-SXM, H100-SXM" err
[ -s "$tmp/out" ] && fail "unknown name wrote to stdout"

cmd="gpus a100-sxm4"; run gpus a100-sxm4
[ "$rc" = 2 ] || fail "ambiguous name exited $rc, want 2"
has "ambiguous" err

# --json round trip: the output is a table blocktune reads back.
cmd="gpus --json"; run gpus --json
[ "$rc" = 0 ] || fail "--json exited $rc"
cp "$tmp/out" "$tmp/all.json"
has '"format": "blocktune-gpus"' out
cmd="gpus --gpu-file all.json"; run gpus --gpu-file "$tmp/all.json"
[ "$rc" = 0 ] || fail "reading back --json output exited $rc: $(cat "$tmp/err")"
has "from: $tmp/all.json" out

# Overlay: one row, exported, edited, read back; it replaces H100-SXM.
cmd="gpus --json h100"; run gpus --json h100
[ "$rc" = 0 ] || fail "--json h100 exited $rc"
sed 's/"sm_count": 132/"sm_count": 120/' "$tmp/out" >"$tmp/mine.json"
cmd="gpus --gpu-file=mine.json H100-SXM"; run gpus --gpu-file="$tmp/mine.json" H100-SXM
[ "$rc" = 0 ] || fail "overlay exited $rc: $(cat "$tmp/err")"
has "SMs *120$" out
has "defined in *$tmp/mine.json" out
cmd="gpus --gpu-file mine.json"; run gpus --gpu-file "$tmp/mine.json"
[ "$(grep -c '^H100-SXM ' "$tmp/out")" = 1 ] || fail "overlay: H100-SXM listed other than once"

# A malformed gpu file: exit 2, one line naming file:line:column.
printf '{"format": "blocktune-gpus", "version": 1,\n  "gpus": [ {"name": "X",, } ]}\n' >"$tmp/bad.json"
cmd="gpus --gpu-file bad.json"; run gpus --gpu-file "$tmp/bad.json"
[ "$rc" = 2 ] || fail "malformed gpu file exited $rc, want 2"
[ "$(wc -l <"$tmp/err")" = 1 ] || fail "malformed file: want one stderr line, got: $(cat "$tmp/err")"
has "$tmp/bad.json:2:[0-9]*: invalid JSON" err

sed 's/"sm_count": 120/"sm_count": -1/' "$tmp/mine.json" >"$tmp/neg.json"
cmd="gpus --gpu-file neg.json"; run gpus --gpu-file "$tmp/neg.json"
[ "$rc" = 2 ] || fail "negative sm_count exited $rc, want 2"
has "neg.json:[0-9]*:[0-9]*: gpus\[0\].sm_count: expected a positive integer, got -1" err

cmd="gpus --gpu-file missing.json"; run gpus --gpu-file "$tmp/missing.json"
[ "$rc" = 2 ] || fail "missing gpu file exited $rc, want 2"
has "missing.json" err

cmd="gpus --help"; run gpus --help
[ "$rc" = 0 ] || fail "--help exited $rc"
has "--gpu-file FILE" out
has "docs/gpus.md" out

cmd="gpus --bogus"; run gpus --bogus
[ "$rc" = 2 ] || fail "unknown option exited $rc, want 2"
has "unknown option '--bogus'" err
cmd="gpus --gpu-file"; run gpus --gpu-file
[ "$rc" = 2 ] || fail "--gpu-file without a file exited $rc, want 2"

if [ "$fails" -gt 0 ]; then
    echo "$fails failure(s)"
    exit 1
fi
echo "gpus: all checks passed"
