# SPDX-License-Identifier: Apache-2.0
"""triton_pool_diag.py — where the seconds of a cold Triton compile go on this machine (issue 15):
the bare start of Python, `import triton`, the import of blocktune's compile job, N imports at
once, one in-process compile (first and second: the first pays the compiler's own start), whether
a compile imports torch, and the compile pool (python/blocktune/triton_compile.py) end to end on
the seven configs of examples/triton/matmul_seed.json at 4096^3 fp16 for sm_90: the time to its
hello, each answer's arrival beside Triton's own compile_s, then the same again with the pool's
cache warm. One JSON line per measurement on stdout.

    python3 bench/experiments/triton_pool_diag.py [--workers N] [--target sm_90]
(run from the repository root; python3 must have Triton)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYDIR = os.path.join(ROOT, "python")


def emit(**kw):
    print(json.dumps(kw), flush=True)


def wall(cmd, env=None):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - t, 3)


def requests(target, size=4096):
    spec = json.load(open(os.path.join(ROOT, "examples", "triton", "matmul_seed.json")))
    out = []
    for i, c in enumerate(spec["configs"], 1):
        out.append({
            "id": i, "source": os.path.join(ROOT, "examples", "triton", "matmul.py"),
            "entry": "matmul_kernel", "target": target, "max_shared": 232448,
            "constexprs": {k: v for k, v in c.items() if k not in ("num_warps", "num_stages")},
            "num_warps": c["num_warps"], "num_stages": c["num_stages"],
            "signature": {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16"},
            "divisible_by_16": ["a_ptr", "b_ptr", "c_ptr"],
            "specialize": {"M": size, "N": size, "K": size, "stride_am": size, "stride_ak": 1,
                           "stride_bk": size, "stride_bn": 1, "stride_cm": size, "stride_cn": 1}})
    return out


def pool_run(workers, reqs, cache, label):
    env = dict(os.environ, PYTHONPATH=PYDIR, BLOCKTUNE_CACHE_DIR=cache)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "blocktune.triton_compile", "--workers", str(workers)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    hello = p.stdout.readline()
    t_hello = time.perf_counter() - t0
    for r in reqs:
        p.stdin.write(json.dumps(r) + "\n")
    p.stdin.flush()
    arrivals = []
    for _ in reqs:
        a = json.loads(p.stdout.readline())
        arrivals.append({"id": a.get("id"), "at_s": round(time.perf_counter() - t0, 3),
                         "ok": a.get("ok"), "cached": a.get("cached"),
                         "compile_s": a.get("compile_s"),
                         "error": (a.get("error") or {}).get("kind")})
    t_last = time.perf_counter() - t0
    p.stdin.close()
    p.wait()
    emit(what="pool", label=label, workers=workers, hello_s=round(t_hello, 3),
         hello=json.loads(hello), last_answer_s=round(t_last, 3),
         exit_s=round(time.perf_counter() - t0, 3), answers=arrivals)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--target", default="sm_90")
    a = ap.parse_args()
    py = sys.executable
    env = dict(os.environ, PYTHONPATH=PYDIR)
    emit(what="env", python=py, version=sys.version.split()[0], cpus=os.cpu_count())
    for name, code in (("python -c pass", "pass"), ("python -S -c pass", None),
                       ("import triton", "import triton"),
                       ("import triton + compiler + job",
                        "import triton, triton.compiler; from blocktune import triton_job"),
                       ("import torch", "import torch")):
        cmd = [py, "-S", "-c", "pass"] if code is None else [py, "-c", code]
        times = []
        for _ in range(3):
            try:
                times.append(wall(cmd, env))
            except subprocess.CalledProcessError:
                times.append(None)
        emit(what="start", case=name, wall_s=times)
    # N imports at once, as the pool's workers do
    t = time.perf_counter()
    procs = [subprocess.Popen([py, "-c", "import triton, triton.compiler"], env=env)
             for _ in range(a.workers)]
    for p in procs:
        p.wait()
    emit(what="parallel_import", n=a.workers, wall_s=round(time.perf_counter() - t, 3))
    # in-process: two compiles, and is torch imported by them?
    code = r"""
import json, sys, time, tempfile, os
os.environ["BLOCKTUNE_CACHE_DIR"] = tempfile.mkdtemp()
t = time.perf_counter(); import triton; from blocktune import triton_job; t_imp = time.perf_counter() - t
reqs = json.loads(sys.argv[1])
out = {"import_s": round(t_imp, 3)}
for i, r in enumerate(reqs[:3]):
    t = time.perf_counter(); a = triton_job.answer(r)
    out[f"compile{i}_s"] = round(time.perf_counter() - t, 3); out[f"compile{i}_triton_s"] = a.get("compile_s")
    out[f"ok{i}"] = a.get("ok")
out["torch_imported"] = "torch" in sys.modules
print(json.dumps(out))
"""
    r = subprocess.run([py, "-c", code, json.dumps(requests(a.target))], env=env,
                       capture_output=True, text=True)
    emit(what="in_process", result=(json.loads(r.stdout.strip().splitlines()[-1])
                                     if r.returncode == 0 else r.stderr[-800:]))
    cache = tempfile.mkdtemp(prefix="bt-pool-diag-")
    reqs = requests(a.target)
    pool_run(a.workers, reqs, cache, "cold")
    pool_run(a.workers, reqs, cache, "warm pool cache")
    pool_run(min(a.workers, len(reqs)), reqs, tempfile.mkdtemp(prefix="bt-pool-diag-"),
             f"cold, {min(a.workers, len(reqs))} workers")


if __name__ == "__main__":
    main()
