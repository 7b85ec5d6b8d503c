# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""C = A @ B for row- or column-major fp16/bf16/fp32 matrices, fp32 accumulation, C in c_ptr's
type: the classic blocked Triton GEMM, written for blocktune's Triton examples and tests.

Each program computes one BLOCK_M x BLOCK_N tile of C. Programs are numbered so that GROUP_M
consecutive tile rows are walked column by column: neighbouring programs then share tiles of B
in L2. K is consumed BLOCK_K at a time; the tail of K is masked with zeros, and rows and columns
of A and B past M and N wrap around (modulo), so only the store needs a mask.

Tuned by blocktune: BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M (constexprs) and num_warps, num_stages.
Launch grid: (cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), 1, 1).
"""
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr):
    # Which tile of C: programs go down a band of GROUP_M tile rows before moving right.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    band_size = GROUP_M * tiles_n
    band = pid // band_size
    row0 = band * GROUP_M
    rows_in_band = min(tiles_m - row0, GROUP_M)
    tile_m = row0 + (pid % band_size) % rows_in_band
    tile_n = (pid % band_size) // rows_in_band

    rm = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b_tile = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_left = K - k0
        a = tl.load(a_tile, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_tile, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk

    cm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_tile = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))
