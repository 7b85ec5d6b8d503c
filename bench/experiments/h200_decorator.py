# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""@blocktune.autotune against @triton.autotune in one process (bench/experiments/
h200_decorator.sh runs it): examples/triton/matmul.py (the anchors' tutorial matmul) with the
seed's 7 configs at M=N=K (default 4096), fp16, on torch tensors and torch's current stream.

    python3 h200_decorator.py RUN [--size 4096] [--only blocktune|triton]

Prints one JSON line per implementation: the whole first call (seconds, synchronised), the
winner, where blocktune's came from, the files the kernel caches gained (compiles) and the rows
the store gained (measurements), the host cost of a cached call (µs, 200 calls not synchronised:
fewer than the launch queue holds), the winner's time by triton.testing.do_bench (median ms,
TFLOP/s) and whether C matches torch.matmul. A failure is a line with "error"."""
import argparse
import json
import os
import sys
import time
import traceback

import torch
import triton

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "triton")]
import blocktune  # noqa: E402
from blocktune import _lib  # noqa: E402
import matmul  # noqa: E402

SEED_LIST = [(128, 256, 64, 8, 3), (256, 128, 32, 8, 3), (128, 128, 32, 4, 4), (64, 128, 32, 4, 4),
             (128, 64, 32, 4, 4), (64, 64, 64, 4, 4), (32, 32, 32, 4, 2)]
GEMM_MODEL = blocktune.configs.gemm_model()


def configs():
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8},
                          num_warps=w, num_stages=s) for bm, bn, bk, w, s in SEED_LIST]


def cache_files():
    """Files in blocktune's cache folder other than the store, and in Triton's."""
    n = 0
    for d in (os.environ["BLOCKTUNE_CACHE_DIR"], os.environ.get("TRITON_CACHE_DIR", "")):
        for root, _, files in os.walk(d) if d else ():
            n += sum(1 for f in files if not f.startswith("blocktune.db"))
    return n


def winner(cfg):
    k = cfg.kwargs
    return [k["BLOCK_M"], k["BLOCK_N"], k["BLOCK_K"], cfg.num_warps, cfg.num_stages]


def run_one(impl, size, args):
    M = N = K = size
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    if impl == "triton":
        kern = triton.autotune(configs=configs(), key=["M", "N", "K"])(
            triton.jit(matmul.matmul_kernel.fn))
    else:
        kern = blocktune.autotune(configs=configs(), key=["M", "N", "K"], model=GEMM_MODEL)(
            matmul.matmul_kernel)
    grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]) * triton.cdiv(N, META["BLOCK_N"]),)  # noqa
    call = lambda: kern[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0),  # noqa
                              b.stride(1), c.stride(0), c.stride(1))
    files0, rows0 = cache_files(), _lib.store_counts()[0]
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    out = {"run": args.run, "impl": impl, "size": size, "first_call_s": round(first, 4),
           "winner": winner(kern.best_config), "compiles": cache_files() - files0}
    if impl == "blocktune":
        e = next(iter(kern._entries.values()))
        out["source"] = e.source
        out["measurements"] = _lib.store_counts()[0] - rows0
        out["tunes"] = _lib.lib().bt_kernel_tune_count(e.kn)
    ref = torch.matmul(a, b)
    out["correct"] = bool(torch.allclose(c.float(), ref.float(), rtol=1e-2, atol=1e-1))
    host = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            call()
        host.append((time.perf_counter() - t0) / 200 * 1e6)
        torch.cuda.synchronize()
    out["host_us_per_cached_call"] = round(sorted(host)[2], 2)
    ms = triton.testing.do_bench(call, warmup=25, rep=100, return_mode="median")
    out["winner_ms"] = round(ms, 5)
    out["tflops"] = round(2.0 * M * N * K / (ms * 1e-3) / 1e12, 1)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--only", choices=["blocktune", "triton"])
    args = ap.parse_args()
    for impl in ("blocktune", "triton"):
        if args.only and impl != args.only:
            continue
        try:
            out = run_one(impl, args.size, args)
        except Exception as e:  # a failure is a result too
            out = {"run": args.run, "impl": impl, "error": f"{type(e).__name__}: {e}"}
            traceback.print_exc(file=sys.stderr)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
