# SPDX-License-Identifier: Apache-2.0
"""smallm_peers.py — cuBLAS at issue 18's small-M shapes, timed the way blocktune times, beside
blocktune's tuned winners from the same run (bench/experiments/smallm.sh).

Usage: python3 bench/peers/smallm_peers.py RUN_FOLDER [--tuned-only]
RUN_FOLDER holds the tunes' JSON files: tune_<nt|kn>_<M>x<N>x<K>.json (the TMA kernels,
gemm_smallm_nt_tma / gemm_smallm_tma) and, where the bench tuned them too, tune_<nt|kn>reg_...json
(the register-streaming kernels, gemm_smallm_nt / gemm_smallm); the faster of the two is
blocktune's figure (nt: the (N, K) weight of torch.nn.functional.linear, kn: B as (K, N)). For
each shape and layout, cuBLAS is called as a user would: torch.nn.functional.linear(a, w) with w
(N, K), and torch.matmul(a, b) with b (K, N), fp16, inputs uniform in [-1, 1] (as the specs' are),
checked against an fp32 product first. The timing copies src/engine/bench.c: before every run the
cache is flushed exactly as the CUDA backend flushes it (cu_flush_cache: a buffer of twice the L2,
filled once, read by the backend's own read-sweep kernel, whose PTX is taken from
src/backends/cuda/cuda.c and launched through the driver API on torch's stream, so that L2 is left
full of clean lines; or, as BLOCKTUNE_CUDA_FLUSH=write does, filled with a changing 32-bit pattern,
which leaves it dirty), then the call is timed by a pair of CUDA events; one run to warm up, five
to estimate, then WARMUP_MS of runs discarded and REP_MS of runs kept; median, p20 and p80 with the
same interpolation. Writes RUN_FOLDER/smallm_peers.json and prints one table (also written to
RUN_FOLDER/smallm_table.md): time, effective bandwidth ((M·K + K·N + M·N) · 2 bytes over the
median) and TFLOP/s of both, their ratio, and issue 18's targets. Where RUN_FOLDER holds
flush_<read|write>_<layout>_<M>x<N>x<K>.json (one blocktune config measured under each flush),
cuBLAS is timed under both flushes too, and a second table compares them. With --tuned-only, only
the shape×layout rows that RUN_FOLDER has a tune for are timed and listed (bench/experiments/smallm3.sh).
"""
import ctypes
import json
import os
import re
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


def backend_ptx():
    """The PTX of the CUDA backend's read sweep (flush_ptx in src/backends/cuda/cuda.c)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    src = open(os.path.join(root, "src", "backends", "cuda", "cuda.c")).read()
    body = src[src.index("static const char flush_ptx[] ="):]
    body = body[:body.index(";\n")]
    text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))
    return text.encode().decode("unicode_escape").encode() + b"\0"


class ReadSweep:
    """cu_flush_cache's read sweep: bt_flush_read over the buffer, 4 blocks of 512 threads per SM,
    launched on torch's current stream through the driver API."""

    def __init__(self, buf, sms):
        cu = ctypes.CDLL("libcuda.so.1")
        cu.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
        cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p,
                                           ctypes.c_char_p]
        cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        torch.cuda.synchronize()  # torch's primary context is current on this thread
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        for call, r in (("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(mod), backend_ptx())),
                        ("cuModuleGetFunction",
                         cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"bt_flush_read"))):
            if r != 0:
                raise RuntimeError("%s failed: CUresult %d" % (call, r))
        self.cu, self.fn, self.grid = cu, fn, 4 * sms
        # buf, chunks of 16 bytes, sink (never written: the key is not the sweep's XOR), key
        self.args = [ctypes.c_uint64(buf.data_ptr()), ctypes.c_uint64(buf.numel() * 4 // 16),
                     ctypes.c_uint64(buf.data_ptr()), ctypes.c_uint32(1)]
        self.params = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p)
                                              for a in self.args])

    def __call__(self):
        r = self.cu.cuLaunchKernel(self.fn, self.grid, 1, 1, 512, 1, 1, 0,
                                   ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),
                                   self.params, None)
        if r != 0:
            raise RuntimeError("cuLaunchKernel (read sweep) failed: CUresult %d" % r)


class Flush:
    """The CUDA backend's cache flush: a buffer of twice the L2 (at least 2 MiB, at most an eighth
    of the memory, whole 16-byte chunks), read by the backend's sweep (mode "read", the default)
    or filled with a pattern that changes at every flush (mode "write")."""

    def __init__(self, mode="read"):
        p = torch.cuda.get_device_properties(0)
        l2 = getattr(p, "L2_cache_size", 0) or 50 << 20
        n = max(2 * l2, 2 << 20)
        n = min(n, p.total_memory // 8) // 16 * 16
        self.buf = torch.empty(n // 4, dtype=torch.int32, device="cuda")
        self.mode, self.count, self.sweep = mode, 0, None
        if mode == "read":
            self.buf.fill_(0x9E3779B9 - (1 << 32))  # once, as the backend's first flush does
            self.sweep = ReadSweep(self.buf, p.multi_processor_count)

    def __call__(self):
        if self.sweep:
            self.sweep()
        else:
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


def tune_file(path):
    """A tune's winner from its JSON: the finals' median, the first measurement's p20/p80."""
    try:
        t = json.load(open(path))
    except (OSError, ValueError):
        return None
    w = t.get("winner") or {}
    if not w.get("median_ms"):
        return None
    first = next((c for c in t.get("configs", []) if c.get("config") == w["config"]), {})
    return {"median_ms": w["median_ms"], "p20_ms": first.get("p20_ms"), "p80_ms": first.get("p80_ms"),
            "config": w["config"], "kernel": t.get("kernel"),
            "tune_s": t.get("time", {}).get("total_s"), "tie": w.get("tie"),
            "margin": w.get("margin")}


def tuned(folder, M, N, K, layout):
    """blocktune's figure: the faster winner of tune_<layout>_MxNxK.json (TMA kernels) and
    tune_<layout>reg_MxNxK.json (register kernels, where the bench tuned them); both in
    "candidates"."""
    found = [r for r in (tune_file(os.path.join(folder, "tune_%s%s_%dx%dx%d.json" % (
        layout, kind, M, N, K))) for kind in ("", "reg")) if r]
    if not found:
        return None
    best = dict(min(found, key=lambda r: r["median_ms"]))
    best["candidates"] = found
    return best


def rates(M, N, K, ms):
    return (M * K + K * N + M * N) * 2 / (ms * 1e-3) / 1e12, 2 * M * N * K / (ms * 1e-3) / 1e12


def flush_compare(folder, out, lines):
    """cuBLAS under both flushes at the shapes where the bench measured one blocktune config under
    each (flush_<mode>_<layout>_MxNxK.json), and the table of the four."""
    pairs = sorted({m.groups() for m in (re.match(r"flush_(?:read|write)_(nt|kn)_(\d+)x(\d+)x(\d+)"
                                                    r"\.json$", f) for f in os.listdir(folder)) if m})
    if not pairs:
        return
    lines += ["", "The cache flush (both timed with it: blocktune's winner above, measured again as "
              "one config, and cuBLAS): µs, median (p20–p80)", "",
              "| shape M×N×K | layout | flush | blocktune | cuBLAS | cuBLAS / ours |",
              "| --- | --- | --- | --: | --: | --: |"]
    out["flush_compare"] = []
    for mode in ("read", "write"):
        flush = Flush(mode)
        for layout, M, N, K in pairs:
            M, N, K = int(M), int(N), int(K)
            b = tune_file(os.path.join(folder, "flush_%s_%s_%dx%dx%d.json" % (mode, layout, M, N, K)))
            c = cublas(M, N, K, layout, flush)
            out["flush_compare"].append({"shape": [M, N, K], "layout": layout, "flush": mode,
                                         "blocktune": b, "cublas": c})
            cell = lambda r: ("%.1f (%.1f–%.1f)" % (r["median_ms"] * 1e3, r["p20_ms"] * 1e3,
                                                    r["p80_ms"] * 1e3)
                              if r and r.get("p20_ms") is not None and r["median_ms"] == r["median_ms"]
                              else "—")
            ratio = c["median_ms"] / b["median_ms"] if b and c.get("ok") else float("nan")
            lines.append("| %d×%d×%d | %s | %s | %s | %s | %s |" % (
                M, N, K, layout, {"read": "read sweep (clean L2)", "write": "fill (dirty L2)"}[mode],
                cell(b), cell(c), "%.2f×" % ratio if ratio == ratio else "—"))
        del flush
        torch.cuda.empty_cache()


def main(folder, tuned_only=False):
    dev = torch.cuda.get_device_properties(0)
    flush = Flush("read")
    out = {"device": dev.name, "torch": torch.__version__, "cuda": torch.version.cuda,
           "flush": "read sweep of twice the L2 (the CUDA backend's default)",
           "flush_bytes": flush.buf.numel() * 4, "warmup_ms": WARMUP_MS, "rep_ms": REP_MS,
           "started": time.strftime("%Y-%m-%d %H:%M:%S"), "rows": []}
    lines = ["| shape M×N×K | layout (cuBLAS call) | blocktune µs (p20–p80) | TB/s | TFLOP/s | "
             "cuBLAS µs (p20–p80) | TB/s | TFLOP/s | cuBLAS time / ours | target |",
             "| --- | --- | --: | --: | --: | --: | --: | --: | --: | --- |"]
    print("\n".join(lines), flush=True)
    for M, N, K in SHAPES:
        for layout in ("nt", "kn"):
            b = tuned(folder, M, N, K, layout)
            if tuned_only and b is None:
                continue
            c = cublas(M, N, K, layout, flush)
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
            other = ["%s %.1f µs" % (r["kernel"], r["median_ms"] * 1e3)
                     for r in b["candidates"] if r is not b and r["kernel"] != b["kernel"]]
            lines.append("- %s %s: %s %s (tune %.1f s, margin %.1f%%%s)%s" % (
                "×".join(map(str, row["shape"])), row["layout"], b["kernel"], cfg,
                b["tune_s"] or 0, 100 * (b["margin"] or 0), ", tie" if b["tie"] else "",
                "; also " + ", ".join(other) if other else ""))
    del flush
    torch.cuda.empty_cache()
    flush_compare(folder, out, lines)
    with open(os.path.join(folder, "smallm_peers.json"), "w") as f:
        json.dump(out, f, indent=1)
    with open(os.path.join(folder, "smallm_table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines[table_end:]))
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--tuned-only"]
    sys.exit(main(args[0] if args else os.environ.get("OUT", "."), "--tuned-only" in sys.argv[1:]))
