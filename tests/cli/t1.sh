#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t1.sh — T1 input files as `blocktune plan` and `tune` read them (docs/t1.md): Kernel Tuner's own
# test files (CUDA: planned for the H200 with no device) with the spaces Kernel Tuner makes of
# them; ours (OpenCL) planned with the configs GlobalSize's divisibility removes, and tuned on the
# OpenCL CPU device — conv.json verified against its expected outputs, vadd.json checked for
# every output written; a broken T1 file refused at its field's line and column. The tune part is
# SKIPPED (exit 77) without an OpenCL device.
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
d="$src/tests/data/t1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
has() { grep -qF -- "$2" <<<"$1"; }

out=$("$bt" plan "$d/test_cache_file_T1_input.json" --gpu h200 2>&1)
check "Kernel Tuner's vector_add T1: its 15 configs" \
    has "$out" "space: 15 configs, 15 valid, 0 eliminated"
check "  ... ProblemSize 100 is the problem" \
    has "$out" "vector_add on H200-SXM (hopper, sm_90, 132 SMs), problem_size_x=100"
cfg=filter_width=17,filter_height=17,block_size_x=32,block_size_y=8,tile_size_x=2,tile_size_y=4
out=$("$bt" plan "$d/test_T1_input.json" --gpu h200 --config "$cfg,use_padding=0,read_only=1" 2>&1)
check "Kernel Tuner's convolution T1: a config planned" has "$out" "space: 1 configs, 1 valid"
check "  ... the grid its ProblemSize and GridDivX/Y give (64 x 128)" \
    grep -qE "use_padding=0 read_only=1 .* 8192 " <<<"$out"
out=$("$bt" plan "$d/test_T1_input.json" --gpu h200 --config "$cfg,use_padding=1,read_only=1" 2>&1)
check "  ... its Condition removes use_padding=1 with block_size_x=32" \
    has "$out" "constraint 'use_padding==0 or (block_size_x % 32 != 0)' is false"
out=$("$bt" plan "$d/vadd.json" --gpu h200 --all 2>&1)
check "vadd.json: 7 of 16 configs" has "$out" "space: 16 configs, 7 valid, 9 eliminated"
check "  ... LocalSize divides GlobalSize (work-items)" has "$out" \
    "constraint '(1024 // items) % (block_size_x) == 0' is false ((1024 // 1) % (96) == 0)"
sed 's/"block_size_x \* items <= 256"/"block_size_x * itmes <= 256"/' "$d/vadd.json" >"$tmp/bad.json"
cp "$d/vadd.cl" "$tmp/"
err=$("$bt" plan "$tmp/bad.json" --gpu h200 2>&1); rc=$?
check "a broken T1 file is refused" test $rc -ne 0
check "  ... at its field, line and column" has "$err" "bad.json:11:85: \
ConfigurationSpace.Conditions[0].Expression: in 'block_size_x * itmes <= 256': unknown name 'itmes'"

dev=$("$bt" devices --json 2>/dev/null | grep -o '"id": *"opencl:[0-9]*"' | head -1 |
      sed 's/.*"\(opencl:[0-9]*\)"/\1/')
if [ -z "$dev" ]; then
    [ $fail -eq 0 ] && { echo "SKIPPED: the tunes (no OpenCL device)"; exit 77; }
    exit $fail
fi
quick=(--device "$dev" --store none --strategy random --budget 3 --finalists 1 --rep-ms 2
       --warmup-ms 0 --threads 2)
out=$("$bt" tune "$d/conv.json" "${quick[@]}" --json "$tmp/conv.json" 2>&1); rc=$?
check "conv.json tunes" test $rc -eq 0
check "  ... verified against its ReferenceArguments" \
    has "$out" "verified: expected outputs (answer files), 2304 outputs match"
check "  ... 3 configs measured" test "$(grep -c '"status": "ok"' "$tmp/conv.json")" -eq 3
out=$("$bt" tune "$d/vadd.json" "${quick[@]}" 2>&1); rc=$?
check "vadd.json tunes" test $rc -eq 0
check "  ... every output written (no ReferenceArguments)" \
    has "$out" "1000 outputs written (no reference to compare with)"
exit $fail
