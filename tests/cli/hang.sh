#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hang.sh — configs whose kernel never finishes (tests/data/hang.json, HANG=1) are recorded as
# timed out by the watchdog, the tune restarts itself past them and ends with a verified winner.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(dirname "$0")/../..}"
dev=$("$bt" devices --json 2>/dev/null | grep -o '"id": *"[a-z]*:[0-9]*"' | head -1 | sed 's/.*"\([a-z]*:[0-9]*\)"/\1/')
if [ -z "$dev" ]; then echo "SKIPPED: no device"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(timeout 300 "$bt" tune "$src/tests/data/hang.json" --device "$dev" --store "$tmp/s.db" --timeout 2 \
      --rep-ms 5 --warmup-ms 1 2>&1)
rc=$?
echo "$out" | grep -E "restart|hung|WINNER|timed_out"
fail=0
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fail=1; }
grep -q "WINNER" <<<"$out" || { echo "FAIL: no winner"; fail=1; }
[ "$(grep -c 'HANG=1 .*timed_out' <<<"$out")" -eq 2 ] || { echo "FAIL: both hanging configs should be timed out"; fail=1; }
grep -q "restarting" <<<"$out" || { echo "FAIL: no restart"; fail=1; }
exit $fail
