#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""anchor_peers.py — the peers' timings that bench/peers/triton_h200_mem.py records
(triton_h200_mem.json) as a blocktune peers file for `blocktune report --peers`
(docs/report.md#peers).

    anchor_peers.py triton_h200_mem.json DEVICE > peers.json

Every time is a median of triton.testing.do_bench (return_mode="median"), as the anchor script
measured it. The script keeps Triton's times in ms; torch's only as GB/s, so torch's time is
recovered by inverting the script's own byte count (softmax: 2 * 4 * M * N; layer norm:
(2 * M * N + 2 * N) * 4; sum: 4 * n; vector add: 3 * 4 * n).
"""
import json
import sys


def peer(name, kernel, problem, ms, device, note):
    return {"name": name, "kernel": kernel, "problem": problem, "time_ms": ms,
            "statistic": "median", "device": device, "note": note}


def main(path, device):
    a = json.load(open(path))
    out = []
    for shape, s in a.get("softmax", {}).items():
        m, n = (int(x) for x in shape.split("x"))
        prob = {"rows": m, "cols": n, "dtype": "fp32"}
        if s.get("best"):
            out.append(peer("Triton (best of its grid)", "softmax", prob, s["best"]["ms"], device,
                            "num_warps=%d, the tutorial kernel" % s["best"]["warps"]))
        if s.get("torch_gbps"):
            out.append(peer("torch.softmax", "softmax", prob,
                            2 * 4 * m * n / (s["torch_gbps"] * 1e9) * 1e3, device,
                            "time from the GB/s the anchor script recorded"))
    for shape, s in a.get("layernorm", {}).items():
        m, n = (int(x) for x in shape.split("x"))
        if s.get("torch_gbps"):
            out.append(peer("torch layer_norm", "layernorm", {"rows": m, "cols": n, "dtype": "fp32"},
                            (2 * m * n + 2 * n) * 4 / (s["torch_gbps"] * 1e9) * 1e3, device,
                            "time from the GB/s the anchor script recorded"))
    r = a.get("reduce")
    if r and r.get("torch_sum_gbps"):
        out.append(peer("torch.sum", "reduce", {"n": r["n"], "dtype": "fp32"},
                        4 * r["n"] / (r["torch_sum_gbps"] * 1e9) * 1e3, device,
                        "time from the GB/s the anchor script recorded"))
    v = a.get("vector_add")
    if v and v.get("best"):
        n = v["n"]
        out.append(peer("Triton (best of its grid)", "vector_add", {"n": n, "dtype": "fp32"},
                        v["best"][0]["ms"], device, "BLOCK=%d, num_warps=%d" %
                        (v["best"][0]["block"], v["best"][0]["warps"])))
        out.append(peer("torch.add", "vector_add", {"n": n, "dtype": "fp32"},
                        3 * 4 * n / (v["torch_add_gbps"] * 1e9) * 1e3, device,
                        "time from the GB/s the anchor script recorded"))
    json.dump({"schema": "blocktune-peers/1", "source": path, "peers": out}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
