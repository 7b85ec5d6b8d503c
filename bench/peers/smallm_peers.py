"""smallm_peers.py — cuBLAS at issue 18's small-M shapes, timed the way blocktune times, beside
blocktune's tuned winners from the same run (bench/experiments/smallm.sh).

Usage: python3 bench/peers/smallm_peers.py RUN_FOLDER
RUN_FOLDER holds the tunes' JSON files, tune_<nt|kn>_<M>x<N>x<K>.json (nt: gemm_smallm_nt, the
(N, K) weight of torch.nn.functional.linear; kn: gemm_smallm, B as (K, N)). For each shape and
layout, cuBLAS is called as a user would: torch.nn.functional.linear(a, w) with w (N, K), and
torch.matmul(a, b) with b (K, N), fp16, inputs uniform in [-1, 1] (as the specs' are), checked
against an fp32 product first. The timing copies src/engine/bench.c: before every run the cache
is flushed by filling a buffer of twice the L2 size with a 32-bit pattern (the CUDA backend's
cuMemsetD32Async), then the call is timed by a pair of CUDA events; one run to warm up, five to
estimate, then WARMUP_MS of runs discarded and REP_MS of runs kept; median, p20 and p80 with the
same interpolation. Writes RUN_FOLDER/smallm_peers.json and prints one table (also written to
RUN_FOLDER/smallm_table.md): time, effective bandwidth ((M·K + K·N + M·N) · 2 bytes over the
median) and TFLOP/s of both, their ratio, and issue 18's targets.
"""
import glob
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

WARMUP_MS, REP_MS = 25.0, 100.0
SHAPES = [(1, 4096, 4096), (1, 8192, 28672), (1, 28672, 8192)] + \
    [(m, 8192, 8192) for m in (1, 2, 4, 8, 16, 32, 64)]
# issue 18: (kind, value): TB/s effective, TFLOP/s, or a multiple of cuBLAS's speed
TARGETS = {(1, 4096, 4096): ("TB/s", 3.0), (1, 8192, 8192): ("TB/s", 4.0),
           (1, 8192, 28672): ("TB/s", 4.2), (1, 28672, 8192): ("TB/s", 4.2),
           (16, 8192, 8192): ("TFLOP/s", 65.0), (64, 8192, 8192): ("x cuBLAS", 1.2)}
LAYOUTS = {"nt": "F.linear, W (N,K)", "kn": "torch.matmul, B (K,N)"}


def quantile(s, q):
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


class Flush:
    """Twice the L2 (at least 2 MiB, at most an eighth of the memory), filled before each run."""

    def __init__(self):
        p = torch.cuda.get_device_properties(0)
        l2 = getattr(p, "L2_cache_size", 0) or 50 << 20
        n = max(2 * l2, 2 << 20)
        n = min(n, p.total_memory // 8) // 4
        self.buf = torch.empty(n, dtype=torch.int32, device="cuda")
        self.count = 0

    def __call__(self):
        self.count += 1
        self.buf.fill_((0x9E3779B9 * self.count) & 0x7FFFFFFF)


def bench(fn, flush):
    def runs(n):
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(n)]
        for s, e in ev:
            flush()
            s.record()
            fn()
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in ev]

    runs(1)
    t0 = time.perf_counter()
    est = runs(5)
    wall = (time.perf_counter() - t0) * 1e3 / 5
    e = max(statistics.median(est), wall, 1e-6)
    nwarm = min(max(int(WARMUP_MS / e), 1), 100000)
    nrep = min(max(int(REP_MS / e), 5), 100000)
    for i in range(0, nwarm, 1000):
        runs(min(1000, nwarm - i))
    t = []
    for i in range(0, nrep, 1000):
        t += runs(min(1000, nrep - i))
    t.sort()
    return {"median_ms": quantile(t, 0.5), "p20_ms": quantile(t, 0.2), "p80_ms": quantile(t, 0.8),
            "min_ms": t[0], "reps": len(t)}


def cublas(M, N, K, layout, flush):
    torch.manual_seed(1)
    a = torch.rand(M, K, device="cuda", dtype=torch.float16) * 2 - 1
    if layout == "nt":
        w = torch.rand(N, K, device="cuda", dtype=torch.float16) * 2 - 1
        fn = lambda: F.linear(a, w)
        ref = a.float() @ w.float().t()
    else:
        b = torch.rand(K, N, device="cuda", dtype=torch.float16) * 2 - 1
        fn = lambda: torch.matmul(a, b)
        ref = a.float() @ b.float()
    got = fn().float()
    err = ((got - ref).norm() / ref.norm()).item()
    ok = err < 5e-3 and not torch.isnan(got).any().item()
    r = bench(fn, flush) if ok else {"median_ms": float("nan")}
    r.update({"rel_err": err, "ok": ok})
    return r


def tuned(folder, M, N, K, layout):
    """blocktune's winner from tune_<layout>_MxNxK.json: the finals' median, the first p20/p80."""
    path = os.path.join(folder, "tune_%s_%dx%dx%d.json" % (layout, M, N, K))
    try:
        t = json.load(open(path))
    except (OSError, ValueError):
        return None
    w = t.get("winner") or {}
    if not w.get("median_ms"):
        return None
    first = next((c for c in t.get("configs", []) if c.get("config") == w["config"]), {})
    return {"median_ms": w["median_ms"], "p20_ms": first.get("p20_ms"), "p80_ms": first.get("p80_ms"),
            "config": w["config"], "tune_s": t.get("time", {}).get("total_s"),
            "tie": w.get("tie"), "margin": w.get("margin")}


def rates(M, N, K, ms):
    return (M * K + K * N + M * N) * 2 / (ms * 1e-3) / 1e12, 2 * M * N * K / (ms * 1e-3) / 1e12


def main(folder):
    dev = torch.cuda.get_device_properties(0)
    flush = Flush()
    out = {"device": dev.name, "torch": torch.__version__, "cuda": torch.version.cuda,
           "flush_bytes": flush.buf.numel() * 4, "warmup_ms": WARMUP_MS, "rep_ms": REP_MS,
           "started": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": []}
    lines = ["| shape M×N×K | layout (cuBLAS call) | blocktune µs (p20–p80) | TB/s | TFLOP/s | "
             "cuBLAS µs (p20–p80) | TB/s | TFLOP/s | cuBLAS time / ours | target |",
             "| --- | --- | --: | --: | --: | --: | --: | --: | --: | --- |"]
    print("\n".join(lines), flush=True)
    for M, N, K in SHAPES:
        for layout in ("nt", "kn"):
            c = cublas(M, N, K, layout, flush)
            b = tuned(folder, M, N, K, layout)
            row = {"shape": [M, N, K], "layout": layout, "cublas": c, "blocktune": b}
            out["rows"].append(row)
            with open(os.path.join(folder, "smallm_peers.json"), "w") as f:
                json.dump(out, f, indent=1)

            def cells(r):
                if not r or r["median_ms"] != r["median_ms"]:
                    return ["—", "—", "—"]
                bw, tf = rates(M, N, K, r["median_ms"])
                spread = ("%.1f–%.1f" % (r["p20_ms"] * 1e3, r["p80_ms"] * 1e3)
                          if r.get("p20_ms") is not None else "")
                return ["%.1f (%s)" % (r["median_ms"] * 1e3, spread), "%.2f" % bw, "%.1f" % tf]

            ratio = (c["median_ms"] / b["median_ms"]) if b and c.get("ok") else float("nan")
            tgt = TARGETS.get((M, N, K))
            mark = "≥ 1.0× cuBLAS"
            if b and tgt:
                bw, tf = rates(M, N, K, b["median_ms"])
                have = {"TB/s": bw, "TFLOP/s": tf, "x cuBLAS": ratio}[tgt[0]]
                mark = "%s ≥ %g: %s" % (tgt[0], tgt[1], "met" if have >= tgt[1] else "missed")
            if ratio == ratio and ratio < 1.0:
                mark += " (slower than cuBLAS)"
            lines.append("| %d×%d×%d | %s | %s | %s | %s | %s |" % (
                M, N, K, LAYOUTS[layout], " | ".join(cells(b)), " | ".join(cells(c)),
                "%.2f×" % ratio if ratio == ratio else "—", mark))
            print(lines[-1], flush=True)
    table_end = len(lines)
    lines.append("")
    lines.append("Winners (blocktune; median of the interleaved finals, p20–p80 of the config's "
                 "first measurement):")
    for row in out["rows"]:
        b = row["blocktune"]
        if b:
            cfg = " ".join("%s=%s" % kv for kv in b["config"].items())
            lines.append("- %s %s: %s (tune %.1f s, margin %.1f%%%s)" % (
                "×".join(map(str, row["shape"])), row["layout"], cfg, b["tune_s"] or 0,
                100 * (b["margin"] or 0), ", tie" if b["tie"] else ""))
    with open(os.path.join(folder, "smallm_table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[table_end:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", ".")))
