#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wgmma_ldg.sh — gemm_wgmma_ldg (wgmma fed by ordinary loads, for rows that are not 16-byte
# multiples) without a GPU: its producer emulated on the host against the stage a 128-byte-swizzled
# TMA copy leaves (kernels/cuda/gemm_wgmma_ldg_check.py: every misalignment, zeros past the edges,
# no read of a block outside a row), and `blocktune plan` on the spec: configs only where TMA
# cannot copy (K or N not a multiple of 8), none at 16-byte rows, and the `gemm` front door
# sending the odd shapes to it beside gemm_mma. (test_cuda compiles every config with NVRTC; the
# GPU run is in bench/NOTES.md.)
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
bt=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "${BT_SOURCE_DIR:?BT_SOURCE_DIR names the source tree}" || exit 1
fail=0
valid() { "$bt" plan gemm_wgmma_ldg --gpu h200 --dtype fp16 --csv "$@" 2>&1 | grep -c ',valid,'; }

if command -v python3 >/dev/null; then
    check "producer chunks fill a stage as TMA would (host emulation)" \
        python3 kernels/cuda/gemm_wgmma_ldg_check.py
else
    echo "note: python3 absent, the producer was not emulated"
fi
check "3001x2999x1031: at least 40 valid configs" test "$(valid --m 3001 --n 2999 --k 1031)" -ge 40
check "K a multiple of 8, N not: configs" test "$(valid --m 512 --n 4097 --k 4096)" -gt 0
check "N a multiple of 8, K not: configs" test "$(valid --m 512 --n 4096 --k 4097)" -gt 0
check "16-byte rows: none (gemm_wgmma's TMA copies them)" \
    test "$(valid --m 4096 --n 4096 --k 4096)" -eq 0
check "no config on an A100 (sm_90a only)" \
    test "$("$bt" plan gemm_wgmma_ldg --gpu a100-sxm4-80gb --m 3001 --n 2999 --k 1031 --dtype fp16 --csv 2>&1 | grep -c ',valid,')" -eq 0
fam=$("$bt" plan gemm --gpu h200 --m 3001 --n 2999 --k 1031 --dtype fp16 2>&1 | sed -n '/^Families/,$p')
check "front door 3001x2999x1031: gemm_wgmma_ldg and gemm_mma measured" \
    test "$(grep -cE '^  (gemm_wgmma_ldg|gemm_mma) +measure' <<<"$fam")" -eq 2
check "front door 3001x2999x1031: SIMT ruled out for fp16" \
    grep -q 'cannot win: fp16 on CUDA cores' <<<"$fam"
exit $fail
