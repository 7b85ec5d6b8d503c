# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""Row-wise softmax of an n_rows x n_cols matrix (fp32 math, output in out_ptr's type), for
blocktune's Triton examples and tests.

One program per row: the whole row is loaded into registers as one BLOCK-wide vector (BLOCK is a
power of two >= n_cols; lanes past n_cols read -inf so they add nothing), the row maximum is
subtracted before exp for range, and the row is scaled by the reciprocal of its sum.

Tuned by blocktune: num_warps (and BLOCK only in the sense that it must cover n_cols: the spec
sets it from the problem). Launch grid: (n_rows, 1, 1).
"""
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    inside = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=inside, other=-float("inf"))
    x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e * (1.0 / tl.sum(e, axis=0))
    tl.store(out_ptr + row * out_row_stride + cols, y.to(out_ptr.dtype.element_ty), mask=inside)
