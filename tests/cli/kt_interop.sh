#!/usr/bin/env bash
# kt_interop.sh — a Kernel Tuner cache imported into the store (every recorded config, its fastest
# the winner), exported back as a Kernel Tuner cache, and re-imported with the same winner; a
# damaged cache imports nothing and says where.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(dirname "$0")/../..}"
kt="$src/../shared/data/kernel_tuner_caches/convolution_milo_A4000.json.gz"
if [ ! -f "$kt" ]; then echo "SKIPPED: $kt is absent"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { local name="$1"; shift; if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fail=1; fi; }
out=$("$bt" cache --db "$tmp/a.db" import "$kt")
check "import reads all 4362 configs" grep -q "imported 4362 measurements" <<<"$out"
list=$("$bt" cache --db "$tmp/a.db" list)
check "one winner, 4362 measurements" grep -q "1 winners, 4362 measurements" <<<"$list"
win=$(grep -o '{"block_size_x".*}' <<<"$list" | head -1)
check "the winner is the recorded best" grep -q '"block_size_x":256,"block_size_y":1,"tile_size_x":2,"tile_size_y":4' <<<"$win"
"$bt" cache --db "$tmp/a.db" export-kt --kernel convolution_kernel --device "NVIDIA RTX A4000" \
    --key "dim0=4096,dim1=4096" "$tmp/out.json" >/dev/null
check "export-kt wrote a cache" grep -q '"tune_params_keys"' "$tmp/out.json"
"$bt" cache --db "$tmp/b.db" import "$tmp/out.json" >/dev/null
win2=$("$bt" cache --db "$tmp/b.db" list | grep -o '{"block_size_x".*}' | head -1)
check "round trip keeps the winner" test "$win" = "$win2"
head -c 2000 "$tmp/out.json" > "$tmp/cut.json"
err=$("$bt" cache --db "$tmp/c.db" import "$tmp/cut.json" 2>&1); rc=$?
check "a truncated cache fails" test $rc -ne 0
check "  ... naming line and column" grep -qE "cut.json:[0-9]+:[0-9]+" <<<"$err"
check "  ... and imports nothing" grep -q "0 winners, 0 measurements" <<<"$("$bt" cache --db "$tmp/c.db" list)"
exit $fail
