# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""out = x + y over n elements, for blocktune's Triton examples and tests.

Each program adds one BLOCK-wide slice; the last slice is masked. Tuned by blocktune: BLOCK
(constexpr) and num_warps. Launch grid: (cdiv(n, BLOCK), 1, 1).
"""
import triton
import triton.language as tl


@triton.jit
def vector_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    inside = offs < n
    x = tl.load(x_ptr + offs, mask=inside)
    y = tl.load(y_ptr + offs, mask=inside)
    tl.store(out_ptr + offs, x + y, mask=inside)
