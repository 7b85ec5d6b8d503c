#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# h200_mma_u16.sh — issue 18 item 3 (odd shapes >= 95 % of cuBLAS): does gemm_mma's element path
# (VEC=0: rows not 16-byte aligned, as at 3001x2999x1031) get faster when a chunk of 8 elements is
# read as the aligned 16-byte words that hold it, shifted into place, instead of 32-bit words?
# bench/experiments/mma_u16.patch is that change to kernels/cuda/gemm_mma.cu; it is not applied to
# the built-in, whose source hash keys 284 entries of the shipped wisdom. Here, before the call:
#   mkdir -p .carry/mma_u16 && patch -s -o .carry/mma_u16/gemm_mma_u16.cu \
#       kernels/cuda/gemm_mma.cu bench/experiments/mma_u16.patch
# On the device (build/ and .carry/ carried): bash bench/experiments/h200_mma_u16.sh
# A/B on the same configs: gemm_mma and the variant (a copy of its spec naming the patched source)
# each tuned with --strategy model --budget 24 (the analytic model ranks both alike, so both
# measure the same configs, every one verified at the boundary sizes too), then cuBLAS
# (torch.matmul) at the same shapes, timed after the same kind of L2 flush (median of 50).
set -u
BT_RUN=mma . bench/device_env.sh
[ -f .carry/mma_u16/gemm_mma_u16.cu ] || { log "FAIL: no .carry/mma_u16/gemm_mma_u16.cu (see the header)"; exit 1; }
python3 - "$OUT/gemm_mma_u16.json" <<'PY'
import json, os, sys
here = os.path.abspath("kernels/specs")
s = json.load(open(os.path.join(here, "gemm_mma.json")))
s["name"] = "gemm_mma_u16"
src = [os.path.normpath(os.path.join(here, x)) for x in s["sources"]["cuda"]]
src[-1] = os.path.abspath(".carry/mma_u16/gemm_mma_u16.cu")
s["sources"]["cuda"] = src
s["prelude"] = {k: os.path.normpath(os.path.join(here, v)) for k, v in s["prelude"].items()}
json.dump(s, open(sys.argv[1], "w"), indent=1)
PY
shapes="3001x2999x1031 17x4097x63"
opts="--strategy model --budget 24 --store none --dtype fp16"
for s in $shapes; do
  IFS=x read -r m n k <<<"$s"
  tune "mma_$s" gemm_mma --m "$m" --n "$n" --k "$k" $opts
  tune "u16_$s" "$OUT/gemm_mma_u16.json" --m "$m" --n "$n" --k "$k" $opts
done
log "the same configs, the built-in against the variant (median us; ratio < 1: the variant is faster)"
python3 - "$OUT" "$shapes" <<'PY' | tee -a "$OUT/summary.txt"
import json, os, sys
out, shapes = sys.argv[1], sys.argv[2].split()
for s in shapes:
    try:
        a = json.load(open(os.path.join(out, f"mma_{s}.json")))
        b = json.load(open(os.path.join(out, f"u16_{s}.json")))
    except Exception as e:
        print(s, "no JSON:", e); continue
    key = lambda c: json.dumps(c["config"], sort_keys=True)
    ok = lambda j: {key(c): c for c in j["configs"] if c["status"] == "ok"}
    A, B = ok(a), ok(b)
    both = sorted(set(A) & set(B), key=lambda k: A[k]["median_ms"])
    rs = sorted(B[k]["median_ms"] / A[k]["median_ms"] for k in both)
    wa, wb = a.get("winner") or {}, b.get("winner") or {}
    print(f"{s}: {len(both)} configs ok in both (built-in {len(A)}, variant {len(B)}); "
          f"ratio median {rs[len(rs) // 2]:.3f}, min {rs[0]:.3f}, max {rs[-1]:.3f}" if rs else f"{s}: none in both")
    for name, w, j in (("built-in", wa, a), ("variant", wb, b)):
        if w:
            print(f"  {name} winner {json.dumps(w['config'])}: {w['median_ms'] * 1e3:.1f} us, "
                  f"{(j['roofline']['flops'] / (w['median_ms'] * 1e-3)) / 1e12:.1f} TFLOP/s")
PY
log "cuBLAS (torch.matmul) in the same run"
timeout 200 python3 bench/peers/cublas_shapes.py $shapes 2>&1 | tee -a "$OUT/summary.txt"
