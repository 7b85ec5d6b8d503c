#!/usr/bin/env bash
# tune_checks.sh — `blocktune tune` refuses a problem or a budget it cannot honour before anything
# runs, with a message that names the input, and exits non-zero at once (through the supervisor's
# child process): an empty problem (--n 0), data beyond the device's memory (--n 2^40, the
# argument and the bytes named), a measurement budget of 1e9 ms (used to hang silently), NaN.
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
expect 2 "warmup_ms (--warmup-ms) is nan ms" --warmup-ms nan
exit $fail
