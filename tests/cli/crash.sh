#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crash.sh — kernels that crash the process on a CPU device (tests/data/crash.cl writes far out
# of bounds when CRASH > 0; PoCL runs kernels in-process, so blocktune dies by SIGSEGV):
#  1. with a store, the supervisor names the config that crashed, which is recorded as
#     launch_failed, and resumes past it to a verified winner; a rerun crashes no more;
#  2. with --store none it says that nothing carries over and exits non-zero;
#  3. the time limit is a deadline across restarts: a restarted process gets what is left of it
#     (or, when nothing is, reports what the store holds, saying so);
#  4. when the restarts give up (16), the report is still printed, with the reason, exit 1.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(dirname "$0")/../..}"
dev=$("$bt" devices --json 2>/dev/null | grep -o '"id": *"opencl:[0-9]*"' | head -1 | sed 's/.*"\(opencl:[0-9]*\)"/\1/')
if [ -z "$dev" ]; then echo "SKIPPED: no OpenCL device"; exit 77; fi
if "$bt" devices --json 2>/dev/null | grep -A12 "\"$dev\"" | grep -q '"is_gpu": *true'; then
    echo "SKIPPED: $dev is a GPU (kernels do not run in-process)"; exit 77
fi
# Under AddressSanitizer (build-asan) a SIGSEGV is caught by the sanitizer, which reports it and
# exits 1; here the signal must end the process as it does in a plain build (the supervisor
# tells a crash by it).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
quick=(--device "$dev" --rep-ms 1 --warmup-ms 0 --finalists 1)

# 1. crash, record, resume
"$bt" tune "$src/tests/data/crash.json" "${quick[@]}" --store "$tmp/s.db" >"$tmp/o1" 2>"$tmp/e1"
rc=$?
cat "$tmp/e1"
[ $rc -eq 0 ] || { echo "FAIL 1: exit $rc"; fail=1; }
[ "$(grep -c 'died (signal 11, Segmentation fault) while running config BLOCK=[0-9]* CRASH=1' "$tmp/e1")" -eq 2 ] \
    || { echo "FAIL 1: both CRASH=1 configs should be named as crashing"; fail=1; }
grep -q "restarting (2) to resume from the store" "$tmp/e1" || { echo "FAIL 1: no restart"; fail=1; }
[ "$(grep -c 'CRASH=1 .*launch_failed: the process died while running this config' "$tmp/o1")" -eq 2 ] \
    || { echo "FAIL 1: the CRASH=1 configs should be reported as launch_failed"; fail=1; }
grep -q "CRASH=0 .*WINNER" "$tmp/o1" || { echo "FAIL 1: no winner among the CRASH=0 configs"; fail=1; }
"$bt" tune "$src/tests/data/crash.json" "${quick[@]}" --store "$tmp/s.db" >"$tmp/o1b" 2>"$tmp/e1b"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL 1: the rerun exits $rc"; cat "$tmp/e1b"; fail=1; }
grep -q "died" "$tmp/e1b" && { echo "FAIL 1: the rerun crashed again"; fail=1; }
grep -q "REPLAYED FROM THE STORE: the key's winner and 4 configs" "$tmp/o1b" || { echo "FAIL 1: the rerun did not replay the store"; fail=1; }

# 2. --store none: nothing to resume from
"$bt" tune "$src/tests/data/crash.json" "${quick[@]}" --store none >"$tmp/o2" 2>"$tmp/e2"
rc=$?
cat "$tmp/e2"
[ $rc -ne 0 ] || { echo "FAIL 2: exit 0 after a crash with --store none"; fail=1; }
grep -q "while running config BLOCK=[0-9]* CRASH=1" "$tmp/e2" || { echo "FAIL 2: the config is not named"; fail=1; }
grep -q "with --store none nothing carries over" "$tmp/e2" || { echo "FAIL 2: no word that nothing carries over"; fail=1; }

# 3. a time limit of 4 s across restarts: each crash costs a new process (and, with SPIN, a
#    busy loop, crash_slow.json), so that the 17 crashes before the restarts give up take longer than that on any
#    machine; a restarted process gets what is left of the limit (its search stops on it), and
#    once it has passed the report of what the store holds says so (without the deadline, each process would get 4 s
#    again and the restarts would give up)
t0=$(date +%s.%N)
"$bt" tune "$src/tests/data/crash_slow.json" "${quick[@]}" --store "$tmp/m.db" --time-limit 4 >"$tmp/o3" 2>"$tmp/e3"
rc=$?
t=$(echo "$(date +%s.%N) - $t0" | bc)
tail -3 "$tmp/e3"
echo "time-limited tune: $t s"
[ $rc -eq 0 ] || { echo "FAIL 3: exit $rc"; fail=1; }
[ "$(echo "$t < 30" | bc)" -eq 1 ] || { echo "FAIL 3: a 4 s time limit took $t s"; fail=1; }
grep -q "restarted 16 times" "$tmp/e3" && { echo "FAIL 3: the restarts gave up before the time limit"; fail=1; }
grep -Eq "stopped on time limit .*time limit 4 s|MEASURED NOTHING NEW: the time limit of 4 s passed after [0-9]* restart" "$tmp/o3" \
    || { echo "FAIL 3: the report does not say the time limit stopped it"; fail=1; }
grep -q "launch_failed: the process died while running this config" "$tmp/o3" \
    || { echo "FAIL 3: the report does not show the crashed configs"; fail=1; }
grep -q "CRASH=0 .*WINNER" "$tmp/o3" || { echo "FAIL 3: the stored winner is not reported"; fail=1; }

# 4. restarts give up: the report of what was measured, with the reason
"$bt" tune "$src/tests/data/crash_many.json" "${quick[@]}" --store "$tmp/m4.db" >"$tmp/o4" 2>"$tmp/e4"
rc=$?
tail -2 "$tmp/e4"
[ $rc -eq 1 ] || { echo "FAIL 4: exit $rc, want 1"; fail=1; }
grep -q "restarting (16)" "$tmp/e4" || { echo "FAIL 4: not 16 restarts"; fail=1; }
grep -q "MEASURED NOTHING NEW: the tune was restarted 16 times (the last after a crash) and gave up" "$tmp/o4" \
    || { echo "FAIL 4: no report with the reason"; fail=1; }
grep -q "CRASH=0 .*WINNER" "$tmp/o4" || { echo "FAIL 4: the stored winner is not reported"; fail=1; }
exit $fail
