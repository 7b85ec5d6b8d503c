#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mpi.sh — `mpirun -np N blocktune tune` (docs/mpi.md) on PoCL, each rank its own CPU device, on
# tests/data/mpi_scale.json (8 configs, exhaustive):
#  1. 2 ranks: the store holds what one process stores (the same configs, each once, the same
#     statuses, a winner), the rows measured by both ranks (extra_json names each row's rank);
#  2. 4 ranks, a sweep of n: every key as one process would store it;
#  3. 3 ranks, rank 1 killed (kill -9) mid-tune: rank 0 says so, its configs run elsewhere, and
#     the store ends as in 1;
#  4. a build without MPI started by a launcher says how to get MPI and exits 2.
# Skipped (77) without mpirun or without an OpenCL CPU device.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(dirname "$0")/../..}"
spec="$src/tests/data/mpi_scale.json"
if OMPI_COMM_WORLD_SIZE=2 "$bt" tune "$spec" --store none >/dev/null 2>&1; [ $? -eq 2 ]; then
    out=$(OMPI_COMM_WORLD_SIZE=2 "$bt" tune "$spec" --store none 2>&1)
    echo "$out" | grep -q "built without MPI.*openmpi-bin libopenmpi-dev.*-DBT_MPI=ON" \
        || { echo "FAIL: no MPI build, and the message does not say how: $out"; exit 1; }
    echo "SKIPPED: built without MPI (the launcher check passed)"; exit 77
fi
command -v mpirun >/dev/null || { echo "SKIPPED: no mpirun"; exit 77; }
dev=$("$bt" devices --json 2>/dev/null | grep -o '"id": *"opencl:[0-9]*"' | head -1 | sed 's/.*"\(opencl:[0-9]*\)"/\1/')
if [ -z "$dev" ] || "$bt" devices --json 2>/dev/null | grep -A12 "\"$dev\"" | grep -q '"is_gpu": *true'; then
    echo "SKIPPED: no OpenCL CPU device"; exit 77
fi
export POCL_MAX_PTHREAD_COUNT=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
q=(--warmup-ms 1 --rep-ms 3 --threads 3 --finalists 2)
# the sweep and the kill need no finals: a CPU device's cache flush (twice the host's last-level
# cache) dominates each measurement, and the test must stay cheap in CI
q1=(--warmup-ms 1 --rep-ms 3 --threads 3 --finalists 1)
rows() { sqlite3 "$1" "SELECT key, config_json, status FROM measurements ORDER BY key, config_json"; }
run() { # run NP OUT ARGS...: mpirun with recovery
    local np=$1 out=$2; shift 2
    timeout 120 mpirun --enable-recovery -np "$np" "$bt" tune "$spec" "$@" >"$out" 2>"$out.err"
}

# the reference: one process
"$bt" tune "$spec" --device "$dev" "${q[@]}" --store "$tmp/one.db" >"$tmp/o1" 2>&1 \
    || fail "one process: $(tail -3 "$tmp/o1")"
[ "$(sqlite3 "$tmp/one.db" "SELECT count(*) FROM measurements")" = 8 ] || fail "one process: not 8 rows"

# 1. two ranks
t0=$(date +%s)
run 2 "$tmp/o2" "${q[@]}" --store "$tmp/two.db" || fail "2 ranks: $(tail -5 "$tmp/o2.err")"
[ "$(rows "$tmp/two.db")" = "$(rows "$tmp/one.db")" ] || fail "2 ranks: the store differs from one process's"
[ "$(sqlite3 "$tmp/two.db" "SELECT count(DISTINCT extra_json) FROM measurements WHERE extra_json LIKE '{\"mpi\": {\"rank\": _, \"host\": %'")" = 2 ] \
    || fail "2 ranks: the rows do not name both ranks: $(sqlite3 "$tmp/two.db" "SELECT extra_json FROM measurements")"
[ "$(sqlite3 "$tmp/two.db" "SELECT count(*) FROM winners")" = 1 ] || fail "2 ranks: no winner stored"
grep -q "^Winner" "$tmp/o2" || fail "2 ranks: no report"
[ "$(grep -c "^Winner" "$tmp/o2")" = 1 ] || fail "2 ranks: more than rank 0 reported"
echo "ok: 2 ranks store what one process does ($(( $(date +%s) - t0 )) s)"

# 2. four ranks, a sweep of n (n=4096 as above, n=1000 also)
t0=$(date +%s)
run 4 "$tmp/o4" "${q1[@]}" --n 1000,4096 --store "$tmp/four.db" || fail "4 ranks sweep: $(tail -5 "$tmp/o4.err")"
[ "$(rows "$tmp/four.db" | grep -c 'n=4096')" = 8 ] && [ "$(rows "$tmp/four.db" | grep -c 'n=1000')" = 8 ] \
    || fail "4 ranks sweep: not 8 rows per key: $(rows "$tmp/four.db")"
[ "$(rows "$tmp/four.db" | grep 'n=4096')" = "$(rows "$tmp/one.db")" ] || fail "4 ranks sweep: key n=4096 differs"
[ "$(sqlite3 "$tmp/four.db" "SELECT count(*) FROM winners")" = 2 ] || fail "4 ranks sweep: not 2 winners"
[ "$(sqlite3 "$tmp/four.db" "SELECT count(DISTINCT extra_json) FROM measurements")" -ge 3 ] \
    || fail "4 ranks sweep: the work was not spread"
echo "ok: 4 ranks sweep ($(( $(date +%s) - t0 )) s)"

# 3. three ranks, rank 1 killed once the first round is stored
t0=$(date +%s)
timeout 240 mpirun --enable-recovery -np 3 "$bt" tune "$spec" "${q1[@]}" --rep-ms 150 \
    --store "$tmp/kill.db" >"$tmp/ok" 2>"$tmp/ok.err" &
mp=$!
victim=
for _ in $(seq 600); do
    n=$(sqlite3 "$tmp/kill.db" "SELECT count(*) FROM measurements" 2>/dev/null || echo 0)
    if [ "${n:-0}" -ge 2 ]; then
        for p in $(pgrep -f -- "--store $tmp/kill.db"); do
            tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$p
        done
        break
    fi
    sleep 0.05
done
[ -n "$victim" ] || { wait $mp; fail "rank 1 was not found to kill"; }
kill -9 "$victim"
wait $mp
rc=$?
# 124: the timeout's (a hang); else mpirun's own status. Rank 0's output says how far it got.
[ $rc = 0 ] || fail "killed rank: mpirun failed (status $rc$([ $rc = 124 ] && echo ', timed out after 240 s')): $(tail -12 "$tmp/ok.err"); rank 0's output: $(tail -8 "$tmp/ok")"
grep -q "MPI rank 1 .* died" "$tmp/ok.err" || fail "killed rank: rank 0 did not notice: $(cat "$tmp/ok.err")"
[ "$(rows "$tmp/kill.db")" = "$(rows "$tmp/one.db")" ] || fail "killed rank: the store differs: $(rows "$tmp/kill.db")"
grep -q "^Winner" "$tmp/ok" || fail "killed rank: no winner"
echo "ok: rank 1 killed mid-tune, the store as with one process ($(( $(date +%s) - t0 )) s)"
