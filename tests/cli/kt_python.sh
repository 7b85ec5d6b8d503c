#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# kt_python.sh — Kernel Tuner itself (the kernel_tuner package from PyPI) on what blocktune writes:
# its simulation mode replays an export-kt of each recorded convolution space (every config,
# failures included, each as recorded; tests/kt/kt_simulate.py) and of rows blocktune wrote
# itself; and our export-t4 output validates against the T4 results schema (tests/data/t4/).
# Kernel Tuner comes from $BT_KT_PYTHON (./dev.sh test installs it and sets it), else python3.
# Without it this test is SKIPPED (exit 77), saying so; with $CI set it fails instead.
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$src/tests/need_python.sh"
need_python BT_KT_PYTHON "kernel_tuner, jsonschema" \
    "Kernel Tuner (python: kernel_tuner, jsonschema) is not installed; ./dev.sh test installs it, or set BT_KT_PYTHON"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# The recorded spaces through the store and back, replayed by Kernel Tuner.
for f in convolution_milo_A4000 convolution_milo_W6600; do
    kt="$src/tests/data/kt/$f.json.gz"
    "$bt" cache --db "$tmp/$f.db" import "$kt" >/dev/null || { echo "FAIL import $f"; fail=1; continue; }
    dev=$(gzip -dc "$kt" | sed -n 's/^"device_name": "\(.*\)",$/\1/p')
    "$bt" cache --db "$tmp/$f.db" export-kt --kernel convolution_kernel --device "$dev" \
        --key dim0=4096,dim1=4096 "$tmp/$f.json" >/dev/null
    check "Kernel Tuner replays our export of $f" "$py" "$src/tests/kt/kt_simulate.py" "$kt" "$tmp/$f.json"
    "$bt" cache --db "$tmp/$f.db" export-t4 --kernel convolution_kernel --device "$dev" \
        --key dim0=4096,dim1=4096 "$tmp/$f.t4.json" >/dev/null
done

# Rows blocktune wrote itself (a wisdom import: blocktune's columns, no Kernel Tuner entry).
cat >"$tmp/w.json" <<'JSON'
{"format": "blocktune-wisdom", "format_version": 1, "device": "Test GPU",
 "entries": [
  {"kernel": "vector_add", "source_hash": "00ff", "key": {"n": 4096}, "config": {"BLOCK": 64, "VEC": 1},
   "rank": 0, "median_ms": 0.0123, "p20_ms": 0.012, "p80_ms": 0.0125, "reps": 40, "compile_ms": 120.5},
  {"kernel": "vector_add", "source_hash": "00ff", "key": {"n": 4096}, "config": {"BLOCK": 128, "VEC": 1},
   "rank": 1, "median_ms": 0.0150, "compile_ms": 130.0},
  {"kernel": "vector_add", "source_hash": "00ff", "key": {"n": 4096}, "config": {"BLOCK": 64, "VEC": 4},
   "rank": 2, "median_ms": 0.0160, "compile_ms": 110.0},
  {"kernel": "vector_add", "source_hash": "00ff", "key": {"n": 4096}, "config": {"BLOCK": 128, "VEC": 4},
   "rank": 3, "median_ms": 0.0170}
 ]}
JSON
"$bt" cache --db "$tmp/own.db" import "$tmp/w.json" >/dev/null || { echo "FAIL wisdom import"; fail=1; }
"$bt" cache --db "$tmp/own.db" export-kt --kernel vector_add --device "Test GPU" --key n=4096 \
    "$tmp/own.json" >/dev/null
check "Kernel Tuner replays blocktune's own rows" "$py" "$src/tests/kt/kt_simulate.py" "$tmp/own.json" "$tmp/own.json"
"$bt" cache --db "$tmp/own.db" export-t4 --kernel vector_add --device "Test GPU" --key n=4096 \
    "$tmp/own.t4.json" >/dev/null

check "export-t4 output is valid T4" "$py" "$src/tests/kt/t4_validate.py" \
    "$src/tests/data/t4/results-schema.json" "$tmp"/*.t4.json
sed 's/"invalidity": "correct"/"invalidity": "fine"/' "$tmp/own.t4.json" >"$tmp/bad.t4"
check "  ... and the validator refuses what is not" \
    bash -c '! "$1" "$2" "$3" "$4" >/dev/null' _ "$py" "$src/tests/kt/t4_validate.py" \
    "$src/tests/data/t4/results-schema.json" "$tmp/bad.t4"
exit $fail
