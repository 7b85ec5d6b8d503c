#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gemm_peers.py — the GEMM peers that bench/peers/gemm_h200.py records (gemm_peers.json) as a
blocktune peers file for `blocktune report --peers` (docs/report.md#peers).

    gemm_peers.py gemm_peers.json KERNEL [KERNEL ...] > peers.json

For each shape and dtype: cuBLAS (torch.matmul), and Triton's fastest of the configs the record
re-timed (the config in the note). Each time is the record's median_ms: the median over its runs
of triton.testing.do_bench medians. Rows the record marks not ok (a wrong result) are left out.
Each peer is written once per KERNEL (gemm_wgmma, gemm_mma: the same problem, M N K and dtype).
"""
import json
import sys


def main(path, kernels):
    a = json.load(open(path))
    best = {}  # (shape, dtype, peer family) -> row
    for r in a["rows"]:
        if not r.get("ok"):
            continue
        fam = "Triton" if r["peer"].startswith("Triton") else r["peer"]
        k = (tuple(r["shape"]), r["dtype"], fam)
        if k not in best or r["median_ms"] < best[k]["median_ms"]:
            best[k] = r
    out = []
    for kernel in kernels:
        for (shape, dtype, fam), r in best.items():
            m, n, k = shape
            name = "Triton (fastest re-timed config)" if fam == "Triton" else fam
            note = r["peer"][len("Triton "):] if fam == "Triton" else "torch %s" % a.get("torch", "")
            out.append({"name": name, "kernel": kernel,
                        "problem": {"M": m, "N": n, "K": k, "dtype": dtype},
                        "time_ms": r["median_ms"], "statistic": "median",
                        "device": a.get("device", ""), "note": note})
    json.dump({"schema": "blocktune-peers/1", "peers": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
