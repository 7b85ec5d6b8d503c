#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tune_checks.sh — `blocktune tune` refuses a problem or a budget it cannot honour before anything
# runs, with a message that names the input, and exits non-zero at once (through the supervisor's
# child process): an empty problem (--n 0), data beyond the device's memory (--n 2^40, the
# argument and the bytes named), a measurement budget of 1e9 ms (used to hang silently), NaN and
# infinities, numbers out of range, sizes in octal or hexadecimal, negative sizes.
set -u
bt="$1"
dev=$("$bt" devices --json 2>/dev/null | grep -o '"id": *"opencl:[0-9]*"' | head -1 | sed 's/.*"\(opencl:[0-9]*\)"/\1/')
if [ -z "$dev" ]; then echo "SKIPPED: no OpenCL device"; exit 77; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# expect WANT_RC NEEDLE ARGS...: the tune exits WANT_RC within 60 s, its stderr holding NEEDLE and
# its stdout empty
expect() {
    local want="$1" needle="$2"
    shift 2
    timeout 60 "$bt" tune vector_add --device "$dev" --store none "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$? out err
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    echo "$* -> exit $rc: $err"
    [ "$rc" -eq "$want" ] || { echo "FAIL: $*: exit $rc, want $want"; fail=1; }
    grep -qF -- "$needle" <<<"$err" || { echo "FAIL: $*: no '$needle'"; fail=1; }
    [ -z "$out" ] || { echo "FAIL: $*: a report on stdout"; fail=1; }
}
expect 2 "argument 'x' would have 0 elements (size 'n' with n=0)" --n 0
expect 1 "the largest, argument 'x', 4398046511104 bytes (size 'n' with n=1099511627776)" \
    --n 1099511627776
expect 2 "rep_ms (--rep-ms) is 1e+09 ms: the measurement budget per config is at least 0 ms and at most 60000 ms" \
    --rep-ms 1e9
expect 2 "--warmup-ms needs a non-negative decimal number, got 'nan'" --warmup-ms nan
expect 2 "--seed needs a non-negative decimal number, got 'nan'" --seed nan
expect 2 "--seed needs a whole number from 0 to 2^64-1, got '1.5'" --seed 1.5
expect 2 "--threads needs a whole number from 0 (all cores) to 1024, got '1e30'" --threads 1e30
expect 2 "--time-limit needs a non-negative decimal number, got 'inf'" --time-limit inf
expect 2 "size --n needs a decimal integer, got '0x10'" --n 0x10
expect 2 "--n: problem size n must be >= 0 (got -5)" --n -5
# "010" is ten (decimal), not octal eight (plan shares the size parsing)
"$bt" plan vector_add --gpu h200 --n 010 2>&1 | grep -q "n=10 " || { echo "FAIL: plan --n 010 is not n=10"; fail=1; }
exit $fail
