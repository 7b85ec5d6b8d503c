#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kt_interop.sh — a Kernel Tuner cache (tests/data/kt/) imported into the store (every recorded
# config, failures included, its fastest the winner), exported back as a Kernel Tuner cache with
# every entry (4362, the 161 failures as Kernel Tuner spells them), re-imported with the same
# winner; export-t4 writes one result per row; a damaged cache imports nothing and says where.
# (Kernel Tuner itself reading our export, and the T4 schema: kt_python.sh.)
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
bt="$1"
src="${BT_SOURCE_DIR:-$(dirname "$0")/../..}"
kt="$src/tests/data/kt/convolution_milo_A4000.json.gz"
[ -f "$kt" ] || { echo "FAIL: the recorded space $kt is missing from the tree"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
key="dim0=4096,dim1=4096"
dev="NVIDIA RTX A4000"
out=$("$bt" cache --db "$tmp/a.db" import "$kt")
check "import reads all 4362 configs" grep -q "imported 4362 measurements" <<<"$out"
list=$("$bt" cache --db "$tmp/a.db" list)
check "one winner, 4362 measurements" grep -q "1 winners, 4362 measurements" <<<"$list"
win=$(grep -o '{"block_size_x".*}' <<<"$list" | head -1)
check "the winner is the recorded best" grep -q '"block_size_x":256,"block_size_y":1,"tile_size_x":2,"tile_size_y":4' <<<"$win"
"$bt" cache --db "$tmp/a.db" show "$key" >"$tmp/show"
check "show keeps Kernel Tuner's failure strings" grep -q "launch_failed .*RuntimeFailedConfig" "$tmp/show"
"$bt" cache --db "$tmp/a.db" export-kt --kernel convolution_kernel --device "$dev" --key "$key" \
    "$tmp/out.json" >"$tmp/msg"
check "export-kt writes every config" grep -q "wrote 4362 configs" "$tmp/msg"
check "  ... a Kernel Tuner cache" grep -q '"tune_params_keys"' "$tmp/out.json"
check "  ... with the 155 runtime failures" test "$(grep -c '"time": "RuntimeFailedConfig"' "$tmp/out.json")" -eq 155
check "  ... and the 6 compile failures" test "$(grep -c '"time": "CompilationFailedConfig"' "$tmp/out.json")" -eq 6
check "  ... with the runs (times) of every ok config" test "$(grep -c '"times": \[' "$tmp/out.json")" -eq 4201
check "  ... closed as Kernel Tuner closes one" test "$(tail -c 5 "$tmp/out.json" | od -An -c | tr -d ' ')" = '}}\n}\n'
"$bt" cache --db "$tmp/a.db" export-kt --kernel convolution_kernel --device "$dev" --key "$key" \
    "$tmp/out.json.gz" >/dev/null
check "export-kt to .gz gives the same cache" cmp -s "$tmp/out.json" <(gzip -dc "$tmp/out.json.gz")
"$bt" cache --db "$tmp/b.db" import "$tmp/out.json" >/dev/null
win2=$("$bt" cache --db "$tmp/b.db" list | grep -o '{"block_size_x".*}' | head -1)
check "round trip keeps the winner" test "$win" = "$win2"
"$bt" cache --db "$tmp/b.db" export-kt --kernel convolution_kernel --device "$dev" --key "$key" \
    "$tmp/out2.json" >/dev/null
check "a second round trip writes the same file" cmp -s "$tmp/out.json" "$tmp/out2.json"
"$bt" cache --db "$tmp/a.db" export-t4 --kernel convolution_kernel --device "$dev" --key "$key" \
    "$tmp/t4.json" >"$tmp/msg"
check "export-t4 writes one result per row" grep -q "wrote 4362 results" "$tmp/msg"
check "  ... schema 1.0.0" grep -q '"schema_version": "1.0.0"' "$tmp/t4.json"
check "  ... failures as T4 spells them" grep -q '"invalidity": "compile"' "$tmp/t4.json"
"$bt" cache --db "$tmp/a.db" export-kt --kernel nope --device "$dev" --key "$key" "$tmp/x.json" 2>"$tmp/err"
check "export-kt of an unknown kernel fails" grep -q "holds no measurements of nope" "$tmp/err"
head -c 2000 "$tmp/out.json" > "$tmp/cut.json"
err=$("$bt" cache --db "$tmp/c.db" import "$tmp/cut.json" 2>&1); rc=$?
check "a truncated cache fails" test $rc -ne 0
check "  ... naming line and column" grep -qE "cut.json:[0-9]+:[0-9]+" <<<"$err"
check "  ... and imports nothing" grep -q "0 winners, 0 measurements" <<<"$("$bt" cache --db "$tmp/c.db" list)"
exit $fail
