#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cublas_shapes.py — cuBLAS (torch.matmul, fp16, B as K×N) at the given shapes, the quick way the
bench scripts time it beside a tune in the same run: 5 warm-up calls, then 50 calls each after a
512 MB write of the cache flush buffer, each timed by a pair of CUDA events; the median, p20 and
p80 (bench/peers/smallm_peers.py times the way blocktune times, for the small-M tables).

    python3 bench/peers/cublas_shapes.py 3001x2999x1031 17x4097x63 ...
"""
import sys

import torch


def main(shapes):
    flush = torch.empty(512 * 1024 * 1024 // 4, dtype=torch.float32, device="cuda")
    for s in shapes:
        m, n, k = map(int, s.split("x"))
        a = torch.randn(m, k, device="cuda", dtype=torch.float16)
        b = torch.randn(k, n, device="cuda", dtype=torch.float16)
        for _ in range(5):
            torch.matmul(a, b)
        ts = []
        for _ in range(50):
            flush.zero_()
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            torch.matmul(a, b)
            e1.record()
            torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1))
        ts.sort()
        med = ts[len(ts) // 2]
        byt = (m * k + k * n + m * n) * 2
        print(f"cuBLAS {s} fp16: {med * 1e3:.1f} us = {2 * m * n * k / med / 1e9:.1f} TFLOP/s, "
              f"{byt / med / 1e6:.0f} GB/s (p20 {ts[10] * 1e3:.1f}, p80 {ts[40] * 1e3:.1f} us)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
