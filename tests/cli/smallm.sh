#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# smallm.sh — the small-M GEMM specs (kernels/specs/gemm_smallm*.json) without a GPU: the
# tensor-core fragment and operand mappings the kernels document, emulated on the host
# (kernels/cuda/gemm_smallm_frags.py), and `blocktune plan` on the specs: M's power-of-two class
# and the rows' alignment pin BLOCK_M and VEC, CUDA cores only up to M = 4, nothing above M = 64,
# the TMA specs only with 16-byte rows, and the grid and shared memory of one config as the
# kernels compute them. (test_cuda compiles the kernels with NVRTC.)
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
bt=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "${BT_SOURCE_DIR:?BT_SOURCE_DIR names the source tree}" || exit 1
fail=0
# values COLUMN < CSV: the column of every valid row of a `plan --csv` table, sorted, unique
values() { awk -F, -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                                $0 ~ /,valid,/ { print $k }' | sort -u | tr '\n' ' '; }
plan() { "$bt" plan "kernels/specs/$1.json" --gpu h200 --dtype fp16 --csv "${@:2}" 2>&1; }

if command -v python3 >/dev/null; then
    check "fragment mappings of both kernels (host emulation)" \
        python3 kernels/cuda/gemm_smallm_frags.py
else
    echo "note: python3 absent, the fragment mappings were not emulated"
fi

for spec in gemm_smallm gemm_smallm_nt; do
    csv=$(plan $spec --m 1 --n 8192 --k 8192)
    check "$spec 1x8192x8192: at least 100 valid configs" \
        test "$(grep -c ',valid,' <<<"$csv")" -ge 100
    check "$spec 1x8192x8192: BLOCK_M 1, VEC 1" \
        test "$(values BLOCK_M <<<"$csv")/$(values VEC <<<"$csv")" = "1 /1 "
    csv=$(plan $spec --m 3 --n 4096 --k 4096)
    check "$spec M=3: BLOCK_M 4, CUDA-core and tensor-core configs" \
        test "$(values BLOCK_M <<<"$csv")/$(values tensor_core <<<"$csv")" = "4 /0 1 "
    csv=$(plan $spec --m 13 --n 8192 --k 8192)
    check "$spec M=13: BLOCK_M 16, tensor cores only" \
        test "$(values BLOCK_M <<<"$csv")/$(values tensor_core <<<"$csv")" = "16 /1 "
    csv=$(plan $spec --m 63 --n 8192 --k 8192)
    check "$spec M=63: BLOCK_M 64, some configs" \
        test "$(values BLOCK_M <<<"$csv")" = "64 "
    csv=$(plan $spec --m 65 --n 8192 --k 8192)
    check "$spec M=65: no valid config" test "$(grep -c ',valid,' <<<"$csv")" -eq 0
done
check "gemm_smallm_nt K=8191: element loads (VEC 0)" \
    test "$(plan gemm_smallm_nt --m 2 --n 8192 --k 8191 | values VEC)" = "0 "
check "gemm_smallm N=8191: element loads (VEC 0)" \
    test "$(plan gemm_smallm --m 2 --n 8191 --k 8192 | values VEC)" = "0 "

# one config: grid cdiv(N, BN) x SPLIT_K with BN = num_warps / WARPS_K * WARP_N; shared memory
# max(A's slice BLOCK_M x (align_up(cdiv(K, SPLIT_K), 64) + 32) x 2, the WARPS_K sum, the cluster
# tile) + 16 for the ticket flag
cfg=BLOCK_M=16,WARP_N=32,DEPTH=2,num_warps=8,WARPS_K=2,SPLIT_K=8,CLUSTER=4,VEC=1
one=$(plan gemm_smallm_nt --m 16 --n 8192 --k 8192 --config $cfg)
check "gemm_smallm_nt: grid 8192 / (4 x 32) x 8 blocks" test "$(values grid_blocks <<<"$one")" = "512 "
# A: 16 x (1024 + 32) x 2 = 33792; sum: 1 x 4 x 32 x (2 x 2 x 4) x 4 = 8192; tile 16 x 128 x 4
check "gemm_smallm_nt: shared memory 33792 + 16" test "$(values smem_bytes <<<"$one")" = "33808 "

# the TMA specs (sm_90a): BLOCK_M is M rounded up to 8, 16, 32 or 64 (wgmma's N); rows must be
# 16-byte multiples (TMA); the grid is cdiv(N, BLOCK_N) x SPLIT_K, or with PERSIST > 0
# min(units, PERSIST x sm_count); shared memory is 1024 for
# alignment + num_stages x ((BLOCK_N + BLOCK_M) x BLOCK_K x 2 + 16 for the barriers) + 16
for spec in gemm_smallm_tma gemm_smallm_nt_tma; do
    for mc in "1 8" "3 8" "13 16" "29 32" "63 64"; do
        set -- $mc
        csv=$(plan $spec --m $1 --n 8192 --k 8192)
        check "$spec M=$1: BLOCK_M $2, some configs" \
            test "$(values BLOCK_M <<<"$csv")/$(grep -c ',valid,' <<<"$csv" | awk '$1 >= 5')" = "$2 /$(grep -c ',valid,' <<<"$csv")"
        # at most 16: one round of the exhaustive search measures the whole space (NOTES 26)
        check "$spec M=$1: at most 16 valid configs" test "$(grep -c ',valid,' <<<"$csv")" -le 16
    done
    check "$spec M=65: no valid config" \
        test "$(plan $spec --m 65 --n 8192 --k 8192 | grep -c ',valid,')" -eq 0
    check "$spec K=8191: no valid config (TMA needs 16-byte rows)" \
        test "$(plan $spec --m 1 --n 8192 --k 8191 | grep -c ',valid,')" -eq 0
    check "$spec: a device other than compute capability 9.0 has none" \
        test "$(plan $spec --m 1 --n 8192 --k 8192 --gpu a100 | grep -c ',valid,')" -eq 0
done
check "gemm_smallm_tma N=8191: no valid config" \
    test "$(plan gemm_smallm_tma --m 1 --n 8191 --k 8192 | grep -c ',valid,')" -eq 0
check "gemm_smallm_nt_tma N=8191: configs (only K needs 16-byte rows)" \
    test "$(plan gemm_smallm_nt_tma --m 1 --n 8191 --k 8192 | grep -c ',valid,')" -gt 0
cfg=BLOCK_M=16,num_stages=3,BLOCK_N=128,BLOCK_K=128,SPLIT_K=2,CLUSTER=2,PERSIST=0
one=$(plan gemm_smallm_nt_tma --m 13 --n 8192 --k 8192 --config $cfg)
check "gemm_smallm_nt_tma: grid 8192 / 128 x 2 blocks" test "$(values grid_blocks <<<"$one")" = "128 "
# 1040 + 3 x ((128 + 16) x 128 x 2 + 16)
check "gemm_smallm_nt_tma: shared memory 111680" test "$(values smem_bytes <<<"$one")" = "111680 "
# the persistent grid: PERSIST blocks per SM (units: 8192 / 64 tiles x SPLIT_K, 2 to 6 per
# block; at least 64 KB of B in flight per SM: num_stages 6 at one block per SM, 4 at two), and
# never more blocks than units
for p in "1 132 6 4" "2 264 4 8"; do
    set -- $p
    cfg=BLOCK_M=16,num_stages=$3,BLOCK_N=64,BLOCK_K=128,SPLIT_K=$4,CLUSTER=1,PERSIST=$1
    one=$(plan gemm_smallm_tma --m 13 --n 8192 --k 8192 --config $cfg)
    check "gemm_smallm_tma PERSIST=$1: grid $2 blocks" test "$(values grid_blocks <<<"$one")" = "$2 "
done
cfg=BLOCK_M=8,num_stages=6,BLOCK_N=64,BLOCK_K=128,SPLIT_K=4,CLUSTER=1,PERSIST=1
check "gemm_smallm_tma PERSIST=1 at N=1000: grid = the units (16 x 4)" \
    test "$(plan gemm_smallm_tma --m 1 --n 1000 --k 8192 --config $cfg | values grid_blocks)" = "64 "
check "gemm_smallm_nt_tma: persistent configs at M=1 and 16, 8192 x 8192" \
    test "$(plan gemm_smallm_nt_tma --m 1 --n 8192 --k 8192 | values PERSIST)/$(plan gemm_smallm_nt_tma --m 16 --n 8192 --k 8192 | values PERSIST)" = "0 1 2 /0 1 2 "
exit $fail
