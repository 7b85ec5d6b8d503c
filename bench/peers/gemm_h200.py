# SPDX-License-Identifier: Apache-2.0
"""gemm_h200.py — the GEMM peers in the same run as blocktune: cuBLAS (torch.matmul) and Triton.

For each shape and dtype: cuBLAS, and Triton at the configs that won its brute-force search of
shared/anchors (the best of a 108-config grid per shape; re-timed here, not re-searched). Every
figure is the median over RUNS calls of triton.testing.do_bench (events, its own cache flush),
with the spread (min..max of the medians). Inputs are random normal, outputs checked against an
fp32 torch reference before timing. Writes $OUT/gemm_peers.json and prints one table.
GEMM_PEER_SHAPES (e.g. "3001x2999x1031,17x4097x63") keeps those shapes only.
"""
import json
import os
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

RUNS = int(os.environ.get("GEMM_PEER_RUNS", "5"))
OUT = os.environ.get("OUT", ".")
SHAPES = [  # (M, N, K, dtypes, Triton configs (BM, BN, BK, warps, stages) from the anchors)
    (4096, 4096, 4096, ("fp16", "bf16"), [(128, 256, 64, 8, 4), (128, 256, 64, 8, 3)]),
    (8192, 8192, 8192, ("fp16", "bf16"), [(128, 256, 64, 8, 3), (128, 256, 64, 8, 4)]),
    (16, 8192, 8192, ("fp16",), [(32, 64, 256, 4, 3), (16, 64, 128, 4, 5)]),
    (3001, 2999, 1031, ("fp16", "bf16"), [(128, 64, 32, 4, 4)]),
    (17, 4097, 63, ("fp16",), []),  # issue 18's second odd shape: cuBLAS only (no anchor)
]
DT = {"fp16": torch.float16, "bf16": torch.bfloat16}


@triton.jit
def mm(a, b, c, M, N, K, s_am, s_ak, s_bk, s_bn, s_cm, s_cn,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GM: tl.constexpr):
    # one program per BM x BN tile of C, tiles grouped GM rows at a time for L2 reuse
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GM * tiles_n)
    rows = min(tiles_m - group * GM, GM)
    tm = group * GM + (pid % (GM * tiles_n)) % rows
    tn = (pid % (GM * tiles_n)) // rows
    rm = tm * BM + tl.arange(0, BM)
    rn = tn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + (rm % M)[:, None] * s_am + rk[None, :] * s_ak
    pb = b + rk[:, None] * s_bk + (rn % N)[None, :] * s_bn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        x = tl.load(pa, mask=(k0 + rk)[None, :] < K, other=0.0)
        y = tl.load(pb, mask=(k0 + rk)[:, None] < K, other=0.0)
        acc = tl.dot(x, y, acc)
        pa += BK * s_ak
        pb += BK * s_bk
    pc = c + rm[:, None] * s_cm + rn[None, :] * s_cn
    tl.store(pc, acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_call(a, b, c, cfg):
    bm, bn, bk, w, s = cfg
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
    return lambda: mm[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1), BM=bm, BN=bn, BK=bk, GM=8, num_warps=w,
                            num_stages=s)


def timed(fn):
    meds = [triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") for _ in range(RUNS)]
    return statistics.median(meds), min(meds), max(meds)


def main():
    dev = torch.cuda.get_device_properties(0)
    res = {"device": dev.name, "torch": torch.__version__, "triton": triton.__version__,
           "runs": RUNS, "started": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": []}
    print(f"{'shape':>18} {'dtype':>5} {'peer':>34} {'median us':>10} {'min..max us':>17} {'TFLOP/s':>8}")
    only = [s for s in os.environ.get("GEMM_PEER_SHAPES", "").split(",") if s]
    for M, N, K, dts, cfgs in SHAPES:
        if only and "%dx%dx%d" % (M, N, K) not in only:
            continue
        for dt in dts:
            torch.manual_seed(1)
            a = torch.randn(M, K, device="cuda", dtype=DT[dt])
            b = torch.randn(K, N, device="cuda", dtype=DT[dt])
            ref = a.float() @ b.float()
            scale = ref.norm().item()
            peers = [("cuBLAS (torch.matmul)", lambda: torch.matmul(a, b), None)]
            for cfg in cfgs:
                c = torch.full((M, N), float("nan"), device="cuda", dtype=DT[dt])
                peers.append(("Triton BM%d BN%d BK%d w%d s%d" % cfg, triton_call(a, b, c, cfg), c))
            for name, fn, out in peers:
                t0 = time.time()
                got = fn()
                torch.cuda.synchronize()
                got = out if out is not None else got
                err = (got.float() - ref).norm().item() / scale
                first_s = time.time() - t0
                ok = err < (2e-2 if dt == "bf16" else 5e-3) and not torch.isnan(got).any().item()
                med, lo, hi = timed(fn) if ok else (float("nan"),) * 3
                tf = 2 * M * N * K / (med * 1e-3) / 1e12
                res["rows"].append({"shape": [M, N, K], "dtype": dt, "peer": name, "median_ms": med,
                                    "min_ms": lo, "max_ms": hi, "tflops": tf, "rel_err": err,
                                    "first_call_s": first_s, "ok": ok})
                print(f"{'%dx%dx%d' % (M, N, K):>18} {dt:>5} {name:>34} {med * 1e3:10.1f} "
                      f"{lo * 1e3:8.1f}..{hi * 1e3:<8.1f} {tf:8.1f}{'' if ok else '  WRONG'}", flush=True)
                with open(os.path.join(OUT, "gemm_peers.json"), "w") as f:
                    json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
