# SPDX-License-Identifier: Apache-2.0
"""wisdom_sweep.py — the Python halves of bench/experiments/h200_wisdom_sweep.sh.

  python3 bench/wisdom_sweep.py cublas SHAPES MS OUT.jsonl
      cuBLAS through torch at every (M, N, K) of the sweep: torch.matmul(a (M×K), b (K×N)) — the
      layout `gemm` computes — and F.linear(a, w (N×K)) — a model's weight layout — each timed
      with CUDA events around one call after an L2 flush (a 512 MiB write), 5 warm-up calls,
      the median of 30. SHAPES "NxK NxK ...", MS "1,2,4,...". One JSON object per line.
      Without torch or a GPU it writes nothing and says so (the dry mode).
  python3 bench/wisdom_sweep.py table OUT.md SWEEP.json... [--cublas FILE.jsonl]
      The markdown table: per shape and M, the family `gemm` chose, its time (the front door's
      interleaved finals, else the family's own tune), cuBLAS's matmul and linear times, and
      cuBLAS matmul / blocktune (> 1: blocktune faster). Keys a sweep did not finish say so.
  python3 bench/wisdom_sweep.py missing WISDOM_DIR SHAPES MS
      The gemm keys (fp16) of SHAPES × MS that no wisdom file in WISDOM_DIR holds a winner
      (rank 0) for, one shape a line: "NxK m,m,..." (shapes with none left out) — what a
      sweep that completes the shipped wisdom tunes.
"""
import json
import sys


def cublas(shapes, ms, out):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"cublas: no torch ({e}): no peer timings")
        return 0
    if not torch.cuda.is_available():
        print("cublas: no CUDA device: no peer timings")
        return 0
    dev = "cuda"
    flush = torch.empty(512 * 1024 * 1024 // 4, dtype=torch.float32, device=dev)

    def bench(fn):
        for _ in range(5):
            fn()
        ts = []
        for _ in range(30):
            flush.zero_()
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            fn()
            e1.record()
            torch.cuda.synchronize()
            ts.append(e0.elapsed_time(e1))
        ts.sort()
        return ts[len(ts) // 2]

    with open(out, "w") as f:
        for s in shapes.split():
            n, k = map(int, s.split("x"))
            b = torch.randn(k, n, device=dev, dtype=torch.float16)
            w = b.t().contiguous()  # (N, K): nn.Linear's weight
            for m in map(int, ms.split(",")):
                a = torch.randn(m, k, device=dev, dtype=torch.float16)
                mm = bench(lambda: torch.matmul(a, b))
                lin = bench(lambda: F.linear(a, w))
                row = {"M": m, "N": n, "K": k, "dtype": "fp16", "matmul_ms": mm, "linear_ms": lin,
                       "matmul_tflops": 2 * m * n * k / mm / 1e9}
                f.write(json.dumps(row) + "\n")
            del b, w
    print(f"cublas: {out} written (torch {torch.__version__}, CUDA {torch.version.cuda})")
    return 0


def key_time(doc):
    """(family, ms) of a front-door key's tune document: the finals' median of the chosen
    family, else its own; a plain kernel's winner otherwise."""
    fam = doc.get("families")
    win = doc.get("winner") or {}
    if fam and fam.get("winner"):
        for e in fam.get("families", []):
            if e.get("family") == fam["winner"]:
                t = e.get("final_median_ms") or e.get("median_ms")
                return fam["winner"], t
    return doc.get("kernel"), win.get("median_ms")


def table(out, files, peers):
    cub = {}
    if peers:
        try:
            for line in open(peers):
                r = json.loads(line)
                cub[(r["M"], r["N"], r["K"])] = r
        except FileNotFoundError:
            pass
    rows, shapes = {}, []
    for path in files:
        try:
            sw = json.load(open(path))
        except (OSError, ValueError) as e:
            print(f"table: {path}: {e}")
            continue
        for doc in sw.get("sweep", [sw] if "problem" in sw else []):  # a one-size "sweep" is a tune
            p = doc["problem"]
            shape = (p["N"], p["K"])
            if shape not in shapes:
                shapes.append(shape)
            rows[(p["M"], p["N"], p["K"])] = key_time(doc)
    ms = sorted({m for (m, _, _) in rows} | {m for (m, _, _) in cub})
    lines = ["| M | N×K | gemm's family | blocktune µs | cuBLAS matmul µs | cuBLAS linear µs "
             "| matmul / blocktune |", "| --: | --- | --- | --: | --: | --: | --: |"]
    for (n, k) in shapes:
        for m in ms:
            fam, t = rows.get((m, n, k), (None, None))
            c = cub.get((m, n, k), {})
            mm, lin = c.get("matmul_ms"), c.get("linear_ms")
            us = lambda v: f"{v * 1e3:.1f}" if v else "—"
            ratio = f"{mm / t:.2f}" if mm and t else "—"
            lines.append(f"| {m} | {n}×{k} | {fam or 'not tuned'} | {us(t)} | {us(mm)} | {us(lin)} "
                         f"| {ratio} |")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    won = sum(1 for v in rows.values() if v[1])
    print(f"table: {won} key(s) with a winner in {len(files)} sweep file(s)")
    return 0


def missing(wdir, shapes, ms):
    import glob
    have = set()
    for path in sorted(glob.glob(wdir + "/*.json")):
        for e in json.load(open(path)).get("entries", []):
            k = e.get("key", {})
            if e.get("kernel") == "gemm" and e.get("rank", 0) == 0 and k.get("dtype") == "fp16":
                have.add((k.get("M"), k.get("N"), k.get("K")))
    for shape in shapes.split():
        n, k = (int(v) for v in shape.split("x"))
        left = [m for m in (int(v) for v in ms.split(",")) if (m, n, k) not in have]
        if left:
            print(f"{shape} {','.join(str(m) for m in sorted(left))}")
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "missing":
        return missing(argv[2], argv[3], argv[4])
    if len(argv) == 5 and argv[1] == "cublas":
        return cublas(argv[2], argv[3], argv[4])
    if len(argv) >= 3 and argv[1] == "table":
        peers = None
        files = argv[3:]
        if "--cublas" in files:
            i = files.index("--cublas")
            peers = files[i + 1] if i + 1 < len(files) else None
            files = files[:i] + files[i + 2:]
        return table(argv[2], files, peers)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
