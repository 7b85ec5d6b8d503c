#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# triton_plan.sh — Triton specs in `blocktune plan` (docs/triton.md, docs/spec.md#triton-kernels):
# examples/triton/matmul.json's 108 configs with every shared-memory overflow and every accumulator
# beyond a thread's registers eliminated by the model before anything compiles, with reasons;
# what a Triton spec refuses; the error naming a missing python. With Triton ($BT_TRITON_PYTHON, else python3), `plan --exact` compiles a few
# configs for the H200 with no GPU and checks the exact shared memory and registers; without it
# that part is SKIPPED (exit 77) after the rest passed, or FAILS under $CI.
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mm="$src/examples/triton/matmul.json"

# --- the model on the anchors' 108-config space (no Python involved) ---
json=$(BLOCKTUNE_PYTHON=/nonexistent/python "$bt" plan "$mm" --gpu h200 --json)
check "plan of matmul.json exits 0 without Python" test $? -eq 0
check "108 configs: 70 candidates, the 24 overflows and the 14 spilled accumulators eliminated with reasons" python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
assert j["space_size"] == 108, j["space_size"]
assert len(j["candidates"]) == 70 and len(j["eliminated"]) == 38, (len(j["candidates"]), len(j["eliminated"]))
def smem(c):
    return c["num_stages"] * (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"]) * 2
def acc_regs(c):
    return c["BLOCK_M"] * c["BLOCK_N"] // (32 * c["num_warps"])
n_smem = n_acc = 0
for e in j["eliminated"]:
    over, spills = smem(e["config"]) > 232448, acc_regs(e["config"]) > 255
    assert over or spills, e["config"]
    if over:
        n_smem += 1
        assert any("(smem_limit)" in r and "> 232448 B per block" in r for r in e["reasons"]), e["reasons"]
    if spills:
        n_acc += 1
        assert any("(accumulator_regs)" in r and "registers per thread" in r and "> 255" in r
                   for r in e["reasons"]), e["reasons"]
assert (n_smem, n_acc) == (24, 24), (n_smem, n_acc)  # 10 configs break both
for c in j["candidates"]:
    assert smem(c["config"]) <= 232448 and c["smem_bytes"] == smem(c["config"]), c
    assert acc_regs(c["config"]) <= 255, c
    assert c["threads_per_block"] == 32 * c["config"]["num_warps"], c
    assert "exact" not in c
' <<<"$json"
for f in softmax vector_add; do
    "$bt" plan "$src/examples/triton/$f.json" --gpu h200 >/dev/null
    check "plan of $f.json exits 0" test $? -eq 0
done

# --- what a Triton spec refuses, at the field ---
sed 's/"launch": {"grid": \(\[[^]]*\]\)}/"launch": {"grid": \1, "block": [128]}/' "$mm" >"$tmp/block.json"
cp "$src/examples/triton/matmul.py" "$tmp/"
out=$("$bt" plan "$tmp/block.json" --gpu h200 2>&1)
check "a block is refused" grep -q "block.json:[0-9]*:[0-9]*: launch.block: a Triton kernel runs 32 \* num_warps threads" <<<"$out"
sed 's/"sources": {"triton": "matmul.py"}/"sources": {"triton": "matmul.py", "cuda": "matmul.py"}/' "$mm" >"$tmp/mixed.json"
out=$("$bt" plan "$tmp/mixed.json" --gpu h200 2>&1)
check "a Triton source with another language is refused" grep -q "sources: a Triton source cannot be given with sources in other languages" <<<"$out"
sed 's/"sources": {"triton": "matmul.py"}/"sources": {"triton": "nothere.py"}/' "$mm" >"$tmp/missing.json"
out=$("$bt" plan "$tmp/missing.json" --gpu h200 2>&1)
check "a missing .py is named" grep -q "sources.triton: cannot read source '.*nothere.py'" <<<"$out"

# --- a tune with no usable python (and nothing cached): every config fails, naming it ---
# (the tune itself, with Triton, is test_triton's: tune, verify, store, relaunch with no Python)
mock="$(dirname "$bt")/libbt_mock_cuda.so"
if [ -f "$mock" ]; then
    out=$(BLOCKTUNE_CACHE_DIR="$tmp/nocache" BLOCKTUNE_PYTHON=/nonexistent/python BLOCKTUNE_CUDA_LIBRARY="$mock" \
          "$bt" tune "$src/examples/triton/vector_add.json" --device cuda:0 --n 4096 --budget 1 --graph 2>&1)
    check "tune of a Triton spec with no python fails" test $? -ne 0
    check "... each config's compile naming the python and BLOCKTUNE_PYTHON" grep -q "cannot run '/nonexistent/python' .*BLOCKTUNE_PYTHON" <<<"$out"
else
    echo "note: no mock driver beside $bt: the tune without a python is not checked"
fi

# --- --exact without a usable python: one clear line naming it ---
one="--config BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=3,GROUP_M=8"
out=$(BLOCKTUNE_PYTHON=/nonexistent/python "$bt" plan "$mm" --gpu h200 --exact $one 2>&1)
check "--exact with no python fails" test $? -ne 0
check "... naming the python and BLOCKTUNE_PYTHON" grep -q "cannot run '/nonexistent/python' .*BLOCKTUNE_PYTHON" <<<"$out"

if command -v python3 >/dev/null && ! python3 -c "import triton" 2>/dev/null; then
    out=$(BLOCKTUNE_PYTHON=python3 "$bt" plan "$mm" --gpu h200 --exact $one 2>&1)
    check "--exact with a python lacking Triton names it" grep -q "the Python package 'triton' is not importable by .*python3" <<<"$out"
fi

# --- --exact with Triton: a few configs compiled for sm_90, no GPU ---
py=""
for c in "${BT_TRITON_PYTHON:-}" python3; do
    if [ -n "$c" ] && "$c" -c "import triton" 2>/dev/null; then py="$c"; break; fi
done
if [ -z "$py" ]; then
    msg="Triton (python: triton) is not installed; ./dev.sh test installs it, or set BT_TRITON_PYTHON"
    if [ $fail -ne 0 ]; then exit 1; fi
    if [ -n "${CI:-}" ]; then echo "FAIL: $msg"; exit 1; fi
    echo "SKIPPED (plan --exact): $msg"
    exit 77
fi
echo "python: $py"
# four configs of the space: three that fit (smem exact per docs/triton.md's table), one over
python3 - "$mm" "$tmp/few.json" <<'PY'
import json, os, sys
j = json.load(open(sys.argv[1]))
j["sources"]["triton"] = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "matmul.py")
names = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "GROUP_M"]
rows = [(64, 64, 32, 4, 3, 8), (128, 128, 32, 4, 3, 8), (128, 256, 64, 8, 3, 8), (64, 256, 128, 4, 4, 8)]
j["configs"] = [dict(zip(names, r)) for r in rows]
json.dump(j, open(sys.argv[2], "w"), indent=1)
PY
for run in first second; do
    json=$(BLOCKTUNE_PYTHON="$py" "$bt" plan "$tmp/few.json" --gpu h200 --exact --json)
    check "--exact ($run run) exits 0" test $? -eq 0
    check "--exact ($run run): exact registers, spills and smem of the 3 that fit; the overflow not compiled" python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
assert len(j["candidates"]) == 3 and len(j["eliminated"]) == 1, j
assert j["eliminated"][0]["config"]["BLOCK_K"] == 128 and "exact" not in j["eliminated"][0]
want = {(64, 64, 32): 24576, (128, 128, 32): 49152, (128, 256, 64): 147456}
for c in j["candidates"]:
    k = c["config"]
    x = c["exact"]
    assert x["smem_bytes"] == want[(k["BLOCK_M"], k["BLOCK_N"], k["BLOCK_K"])] == c["smem_bytes"], (k, x)
    assert 32 <= x["regs_per_thread"] <= 255 and x["spill_bytes"] == 0, (k, x)
' <<<"$json"
done
text=$(BLOCKTUNE_PYTHON="$py" "$bt" plan "$tmp/few.json" --gpu h200 --exact)
check "the third run compiles nothing (the pool's cache)" grep -q "exact: 0 compiled with Triton for sm_90, 3 from the cache, 0 failed" <<<"$text"
exit $fail
