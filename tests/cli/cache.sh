#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# cache.sh — `blocktune cache`: import a wisdom file, list, show, export, forget, re-import (the
# same winners), verify, and a garbled file that imports nothing and says file:line:column; a
# store path that does not exist is never created by a command that reads; a damaged store is
# reported by verify and refused by the commands that write, with how to recover.
set -u
BT="$1"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
DB="$T/store.db"
fail() { echo "FAIL: $*"; exit 1; }

cat > "$T/w.json" <<'JSON'
{"format": "blocktune-wisdom", "format_version": 1, "blocktune_version": "0.1.0",
 "device": "NVIDIA H200", "uuid": "GPU-1234", "arch": "sm_90", "driver": "560.35",
 "compiler": "NVRTC 12.6",
 "entries": [
  {"kernel": "gemm", "source_hash": "00ff", "key": {"M": 256, "N": 4096, "K": 4096, "dtype": "fp16"},
   "config": {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3, "GROUP_M": 8},
   "rank": 0, "median_ms": 0.1234, "margin": 0.05},
  {"kernel": "gemm", "source_hash": "00ff", "key": {"M": 256, "N": 4096, "K": 4096, "dtype": "fp16"},
   "config": {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3, "GROUP_M": 8},
   "rank": 1, "median_ms": 0.1300},
  {"kernel": "softmax", "source_hash": "aa11", "key": {"rows": 4096, "cols": 1024, "dtype": "fp32"},
   "config": {"BLOCK": 1024, "num_warps": 4}, "rank": 0, "median_ms": 0.02}
 ]}
JSON

"$BT" cache --help | grep -q "forget SELECTOR" || fail "help does not teach forget"
"$BT" cache --db "$DB" import "$T/w.json" | grep -q "imported 3 entries" || fail "import"
"$BT" cache --db "$DB" list > "$T/list1" || fail "list"
grep -q "BLOCK_M\":64" "$T/list1" || fail "list lacks the gemm winner"
grep -q "softmax" "$T/list1" || fail "list lacks softmax"
"$BT" cache --db "$DB" show M=256 | grep -q "0.1300" || fail "show lacks the runner-up"
"$BT" cache --db "$DB" show nothing-like-this 2>/dev/null && fail "show of an unknown key succeeded"
"$BT" cache --db "$DB" verify | grep -q "^ok" || fail "verify"
"$BT" cache --db "$DB" export --top 2 "$T/out.json" || fail "export"
# vLLM's fused-MoE files are keyed by E and N: gemm's M, N, K winners have no place there
"$BT" cache --db "$DB" export --vllm "$T/vllm" 2> "$T/vllm.err" && fail "vllm export of keys without E"
grep -q "M, E and N" "$T/vllm.err" || fail "vllm export does not say what a key needs"
# forget all needs --yes
"$BT" cache --db "$DB" forget all | grep -q "would delete 3 measurements and 2 winners" || fail "forget all dry run"
"$BT" cache --db "$DB" list | grep -q "2 winners" || fail "forget all without --yes deleted"
"$BT" cache --db "$DB" forget gemm | grep -q "deleted 2 measurements and 1 winners" || fail "forget gemm"
"$BT" cache --db "$DB" forget all --yes >/dev/null || fail "forget all --yes"
"$BT" cache --db "$DB" import "$T/out.json" >/dev/null || fail "re-import"
"$BT" cache --db "$DB" list > "$T/list2"
diff <(grep -v "in $DB" "$T/list1") <(grep -v "in $DB" "$T/list2") || fail "round trip changed the winners"
# A garbled file: nothing imported, and the position named.
sed 's/"config"/"config" oops/' "$T/out.json" > "$T/bad.json"
"$BT" cache --db "$DB" forget all --yes >/dev/null
"$BT" cache --db "$DB" import "$T/bad.json" 2> "$T/err" && fail "garbled import succeeded"
grep -Eq "bad.json:[0-9]+:[0-9]+:" "$T/err" || { cat "$T/err"; fail "no file:line:column"; }
"$BT" cache --db "$DB" list | grep -q "^0 winners, 0 measurements" || fail "garbled import changed the store"
head -c 300 "$T/out.json" > "$T/trunc.json"
"$BT" cache --db "$DB" import "$T/trunc.json" 2> "$T/err" && fail "truncated import succeeded"
grep -Eq "trunc.json:[0-9]+:[0-9]+:" "$T/err" || { cat "$T/err"; fail "no position for truncation"; }
"$BT" cache --db "$DB" bogus 2>/dev/null; [ $? -eq 2 ] || fail "unknown subcommand is not a usage error"
# Reading never creates a store: a typo gives "no store at PATH" and leaves nothing behind.
for sub in "list" "show M=256" "export $T/x.json" "verify" \
           "export-kt --kernel gemm --device H200 --key M=1 $T/x.json" \
           "export-t4 --kernel gemm --device H200 --key M=1 $T/x.json"; do
    # shellcheck disable=SC2086
    "$BT" cache --db "$T/typo/store.db" $sub 2>"$T/err" && fail "cache $sub on a missing store succeeded"
    grep -q "no store at $T/typo/store.db" "$T/err" || { cat "$T/err"; fail "cache $sub: no 'no store at'"; }
    [ -e "$T/typo" ] && fail "cache $sub created $T/typo"
done
BLOCKTUNE_CACHE_DIR="$T/nocache" "$BT" cache list 2>/dev/null && fail "list of a missing default store succeeded"
[ -e "$T/nocache" ] && fail "list created the default cache directory"
# Reading leaves no SQLite side files behind.
"$BT" cache --db "$DB" import "$T/w.json" >/dev/null
"$BT" cache --db "$DB" list >/dev/null
ls "$DB"-* 2>/dev/null && fail "list left side files"
# A damaged store: verify names the damage, and writing commands refuse it with how to recover.
cp "$DB" "$T/damaged.db"
printf '\377\377\377\377\377\377\377\377' | dd of="$T/damaged.db" bs=1 seek=4096 conv=notrunc 2>/dev/null
"$BT" cache --db "$T/damaged.db" verify >"$T/out" 2>"$T/err" && fail "verify of a damaged store succeeded"
grep -q "^integrity:" "$T/out" || { cat "$T/out" "$T/err"; fail "verify does not report the damage"; }
grep -q "move it aside" "$T/err" || fail "verify does not say how to recover"
"$BT" cache --db "$T/damaged.db" import "$T/w.json" 2>"$T/err" && fail "import into a damaged store succeeded"
grep -q "quick_check" "$T/err" || { cat "$T/err"; fail "import does not say what is wrong"; }
grep -q "blocktune cache verify --db $T/damaged.db" "$T/err" || fail "import does not point at verify"
grep -q "mv $T/damaged.db $T/damaged.db.damaged" "$T/err" || fail "import does not say how to move it aside"
echo "cache CLI ok"
