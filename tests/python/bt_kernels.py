# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""@blocktune.autotune kernels for tests/python/test_autotune.py: examples/triton's vector add
and matmul (the anchors' kernel, ../shared/anchors/triton_h200.py) under the decorator, with the
seed's configs, and a kernel with an atomic output and a caller constexpr."""
import os
import sys

import triton
import triton.language as tl

import blocktune

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples", "triton"))
import matmul  # noqa: E402
import vector_add  # noqa: E402

VADD_CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w)
                for b, w in ((256, 1), (1024, 4), (4096, 8), (4096, 4))]


vector_add_kernel = blocktune.autotune(configs=VADD_CONFIGS, key=["n"])(
    vector_add.vector_add_kernel)

# the end-to-end test compiles with Triton for real (about 5 s a config on two cores): two configs
vector_add_e2e = blocktune.autotune(configs=VADD_CONFIGS[:2], key=["n"])(
    vector_add.vector_add_kernel)


# the seven configs seed 000 proposes for a GEMM (BLOCK_M, BLOCK_N, BLOCK_K, num_warps,
# num_stages), as ../shared/anchors/triton_h200.py's SEED_LIST
SEED_LIST = [(128, 256, 64, 8, 3), (256, 128, 32, 8, 3), (128, 128, 32, 4, 4), (64, 128, 32, 4, 4),
             (128, 64, 32, 4, 4), (64, 64, 64, 4, 4), (32, 32, 32, 4, 2)]


def seed_configs():
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                          num_warps=w, num_stages=s) for bm, bn, bk, w, s in SEED_LIST]


GEMM_MODEL = blocktune.configs.gemm_model()


matmul_kernel = blocktune.autotune(configs=seed_configs(), key=["M", "N", "K"],
                                   model=GEMM_MODEL)(matmul.matmul_kernel)


@blocktune.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})],
                    key=["n"], reset_to_zero=["total"])
@triton.jit
def sum_kernel(x_ptr, total, n, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(total, tl.sum(x, axis=0) * SCALE)
