# SPDX-License-Identifier: Apache-2.0
"""gemm_table.py — issue 6's table from one bench/experiments/h200_gemm.sh run: blocktune's tuned winner per
shape and dtype (the faster of the two families, with the tune's wall time), beside cuBLAS and
Triton from the same run, against the targets. Usage: python3 bench/gemm_table.py RUN_FOLDER
"""
import glob
import json
import os
import sys

TARGETS = {  # shape: (v1 mma.sync target, wgmma target) in TFLOP/s, from issue 6
    (4096, 4096, 4096): (350, 700), (8192, 8192, 8192): (350, 720),
    (16, 8192, 8192): (45, 50), (3001, 2999, 1031): (80, 100),
}


def main(folder):
    tunes = {}
    for path in sorted(glob.glob(os.path.join(folder, "tune_*.json"))):
        try:
            t = json.load(open(path))
        except (OSError, ValueError):
            continue
        p = t["problem"]
        shape = (p["M"], p["N"], p["K"])
        w = t.get("winner") or {}
        if not w.get("median_ms"):
            continue
        tf = 2 * shape[0] * shape[1] * shape[2] / (w["median_ms"] * 1e-3) / 1e12
        fam = t["kernel"].replace("gemm_", "")
        tunes.setdefault((shape, p["dtype"]), {})[fam] = (tf, w, t["time"]["total_s"])
    peers = {}
    try:
        for r in json.load(open(os.path.join(folder, "gemm_peers.json")))["rows"]:
            key = (tuple(r["shape"]), r["dtype"])
            kind = "cublas" if r["peer"].startswith("cuBLAS") else "triton"
            if r["ok"] and r["tflops"] > peers.get(key, {}).get(kind, (0, ""))[0]:
                peers.setdefault(key, {})[kind] = (r["tflops"], r["peer"], r["min_ms"], r["max_ms"])
    except (OSError, ValueError, KeyError):
        pass
    print("| shape | dtype | blocktune wgmma | blocktune mma.sync | tune s (wgmma / mma) | cuBLAS | "
          "Triton (anchor's best config) | v1 target (mma.sync) | target (wgmma) |")
    print("| --- | --- | --: | --: | --: | --: | --: | --: | --: |")
    for key in sorted(set(tunes) | set(peers), key=lambda k: (-k[0][0] * k[0][1] * k[0][2], k[1])):
        shape, dt = key
        fams = tunes.get(key, {})
        pr = peers.get(key, {})
        v1, wg = TARGETS.get(shape, ("", ""))

        def cell(f, target):
            if f not in fams:
                return "—"
            tf = fams[f][0]
            mark = "" if not target else (" ✓" if tf >= target else " ✗ %.0f%%" % (100 * tf / target))
            return "%.1f%s" % (tf, mark)

        times = " / ".join("%.1f" % fams[f][2] if f in fams else "—" for f in ("wgmma", "mma"))
        peer = lambda k: "%.1f" % pr[k][0] if k in pr else "—"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "×".join(map(str, shape)), dt, cell("wgmma", wg), cell("mma", v1), times,
            peer("cublas"), peer("triton"), v1, wg))
    print("\nWinners:")
    for key in sorted(tunes):
        for f, (tf, w, ts) in sorted(tunes[key].items()):
            cfg = " ".join("%s=%s" % kv for kv in w["config"].items())
            print("- %s %s %s: %.1f TFLOP/s (%.1f us), %s; margin %.1f%% (%s)" % (
                "×".join(map(str, key[0])), key[1], f, tf, w["median_ms"] * 1e3, cfg,
                100 * w.get("margin", 0), "tie within noise" if w.get("tie") else "beyond noise"))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
