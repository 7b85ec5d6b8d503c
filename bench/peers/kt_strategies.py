# SPDX-License-Identifier: Apache-2.0
"""Kernel Tuner's own search strategies on the recorded spaces, at blocktune's default budget.

A peer comparison for "winner quality at a budget" (issue 18 item 5; bench/NOTES.md 28, 32, 38):
each Kernel Tuner cache in tests/data/kt/ is replayed by Kernel Tuner's simulation mode as if it
were a device, and each of Kernel Tuner's strategies searches it with max_fevals = 128 (what
`blocktune tune` measures by default on a space without a model), over seeded runs. Per run it
records the best time found, whether it is within 5 % of the cache's best valid time, the unique
configs measured (failed ones included) and how many of them it took to get within 5 %.

How the replay is set up (Kernel Tuner 1.5.0; read from its interface.py, runners/simulation.py
and strategies/common.py):
  * the kernel source is an empty string and the argument list empty: simulation mode compiles
    and runs nothing, it looks every config up in the cache;
  * tune_params and problem_size come from the cache header; the only restriction admits exactly
    the configs the cache holds, failed ones included (what the original tune measured). Kernel
    Tuner's strategies ask the search space whether a config is valid before they hand it to the
    runner, so every config that is measured is one in the cache; a config the cache lacks would
    abort the run (simulation mode raises ValueError when a config passes the restrictions but is
    not in the cache), and this script also checks every measured key against the cache;
  * a config a strategy proposes outside the space is answered "invalid" without measuring it and
    does not count against max_fevals; a config measured twice counts once; a recorded failure
    (CompilationFailedConfig, RuntimeFailedConfig) counts as a measurement, as it does in
    blocktune simulate;
  * Kernel Tuner has no per-strategy seed option in 1.5.0 (tune_kernel's `seed` reaches only the
    pymoo strategies), so each run seeds Python's `random` and numpy's global generator, which the
    strategies, the search space's sampling and scipy/scikit-learn draw from. The one draw that
    neither reaches is scipy's Latin hypercube sampler, which bayes_opt (its initial sample) and
    diff_evo (its initial population, through the search space) construct without a generator,
    so that it takes fresh entropy; this script hands Kernel Tuner a sampler class whose
    generator is drawn from numpy's seeded global one (seeded_lhs below), which makes those two
    reproducible without changing how they sample.

usage: kt_strategies.py [--runs STRAT=N ...] [--default-runs N] [--seed S] [--budget B]
                        [--strategies a,b,...] [--spaces a,b,...] [--jsonl OUT] [--md OUT]
                        [--options STRAT=JSON ...] [--resume] [--time-one] [--valid-only]

--time-one runs seed S once per strategy and space and prints the wall time of each (to choose N).
--valid-only leaves the recorded failures out of the space (as Kernel Tuner's own tune_cache does).
--resume keeps the lines already in --jsonl and runs only the (space, strategy, seed) missing.
--md OUT writes the tables (markdown) to OUT.tables once all runs are done, from every line in
--jsonl whose strategy label is one of this call's. Run it with Kernel Tuner's venv, e.g.
~/.cache/blocktune-dev/kernel_tuner-1.5.0/bin/python (bench/results/simulation-kt-peers.md has the
commands that made the recorded results).
"""
import argparse
import datetime
import gzip
import hashlib
import json
import math
import os
import platform
import random
import shlex
import sys
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CACHES = os.path.join(ROOT, "tests", "data", "kt")
SPACES = [
    ("conv A100", "convolution_milo_A100.json.gz"),
    ("conv A4000", "convolution_milo_A4000.json.gz"),
    ("conv W6600", "convolution_milo_W6600.json.gz"),
    ("dedisp A100", "dedispersion_milo_A100.json.gz"),
    ("dedisp W6600", "dedispersion_milo_W6600.json.gz"),
]
# Kernel Tuner 1.5.0's single-objective strategies that run without extra packages, in the
# order of the table. Left out: brute_force (measures everything), skopt and pyatf_strategies
# (need scikit-optimize / pyATF, not dependencies of kernel_tuner), nsga2 / nsga3 (multi-objective).
STRATEGIES = [
    "random_sample", "genetic_algorithm", "simulated_annealing", "dual_annealing",
    "basinhopping", "greedy_ils", "mls", "pso", "firefly_algorithm", "bayes_opt",
    "greedy_mls", "ordered_greedy_mls", "diff_evo", "minimize", "hybrid_vndx",
    "adaptive_tabu_greywolf",
]
# blocktune's default (forest at 128) on seeds 1..300: bench/results/simulation.md, last section.
BLOCKTUNE_DEFAULT = {"conv A100": (61, 55, 66), "conv A4000": (72, 67, 77),
                     "conv W6600": (43, 38, 49), "dedisp A100": (100, 99, 100),
                     "dedisp W6600": (99, 97, 100)}
WITHIN = 0.05


class Space:
    """One recorded space: a plain-JSON copy of the cache for Kernel Tuner, and what it holds."""

    def __init__(self, label, fname, tmpdir, valid_only=False):
        self.label, self.fname, self.valid_only = label, fname, valid_only
        with gzip.open(os.path.join(CACHES, fname), "rb") as f:
            raw = f.read()
        self.path = os.path.join(tmpdir, fname[:-3])  # Kernel Tuner wants a name ending in .json
        with open(self.path, "wb") as f:
            f.write(raw)
        self.header = json.loads(raw)
        keys = self.header["tune_params_keys"]
        entries = self.header["cache"].values()
        self.recorded = {tuple(e[k] for k in keys) for e in entries
                         if not (valid_only and isinstance(e["time"], str))}
        self.keys = {",".join(str(v) for v in t) for t in self.recorded}
        times = [e["time"] for e in entries if not isinstance(e["time"], str)]
        self.best = min(times)
        self.configs, self.valid = len(self.recorded), len(times)
        self.near = sum(t <= self.best * (1 + WITHIN) for t in times)


def seeded_lhs():
    """Make the Latin hypercube sampler that Kernel Tuner builds take a seeded generator."""
    import scipy.stats.qmc as qmc
    import kernel_tuner.strategies.bayes_opt as bo

    base = getattr(qmc.LatinHypercube, "_kt_peers_base", qmc.LatinHypercube)

    class SeededLatinHypercube(base):
        _kt_peers_base = base

        def __init__(self, d, **kw):
            if kw.get("rng") is None and kw.get("seed") is None:
                kw["rng"] = int(np.random.randint(0, 2**31 - 1))
            super().__init__(d, **kw)

    qmc.LatinHypercube = SeededLatinHypercube  # searchspace.get_LHS_sample imports it at call time
    bo.LatinHypercube = SeededLatinHypercube  # bayes_opt imported it when it was loaded


def run_one(kt, space, strategy, seed, budget, options=None):
    """One seeded Kernel Tuner run; returns its record. options: strategy options beyond
    max_fevals (None: the strategy's defaults); the record's strategy is then labelled with them."""
    from constraint import FunctionConstraint

    h = space.header
    recorded = space.recorded
    only_recorded = FunctionConstraint(lambda *values: values in recorded)
    random.seed(seed)
    np.random.seed(seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results, env = kt.tune_kernel(
            h["kernel_name"], "", tuple(h["problem_size"]), [], h["tune_params"],
            restrictions=[only_recorded], cache=space.path, simulation_mode=True,
            strategy=strategy, strategy_options={"max_fevals": budget, **(options or {})},
            quiet=True)
    wall = time.perf_counter() - t0
    not_in_cache = sum("not in cache" in str(w.message) for w in caught)
    keys = h["tune_params_keys"]
    seen, order = set(), []
    best, best_key, failed, to5 = math.inf, None, 0, None
    for r in results:
        key = ",".join(str(r[k]) for k in keys)
        if key not in space.keys:
            raise RuntimeError(f"{strategy} measured {key}, which {space.fname} does not hold")
        if key in seen:
            continue
        seen.add(key)
        order.append(key)
        t = r.get("time")
        if "__error__" in r or isinstance(t, str) or t is None:
            failed += 1
            continue
        if t < best:
            best, best_key = t, key
        if to5 is None and t <= space.best * (1 + WITHIN):
            to5 = len(order)
    return {
        "space": space.label, "cache": space.fname,
        "strategy": label(strategy, options, space.valid_only), "kt_strategy": strategy,
        "options": options or {}, "valid_only": space.valid_only, "seed": seed,
        "budget": budget, "fevals": len(order), "failed": failed, "evaluations": len(results),
        "best_ms": best if best < math.inf else None, "best_config": best_key,
        "ratio": best / space.best if best < math.inf else None,
        "within5": best <= space.best * (1 + WITHIN), "to5": to5,
        "space_configs": len(space.recorded), "not_in_cache_warnings": not_in_cache, "wall_s": round(wall, 3),
        "first": order[:3],
        "trace_sha1": hashlib.sha1("\n".join(order).encode()).hexdigest()[:16],
    }


def label(strategy, options, valid_only=False):
    """How a strategy's runs are named in the JSON lines and the tables."""
    out = strategy
    if options:
        out += " " + ",".join(f"{k}={v}" for k, v in sorted(options.items()))
    if valid_only:
        out += " (valid-only space)"
    return out


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    w = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (max(0.0, c - w), min(1.0, c + w))


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    if n == 0:
        return None
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def fmt_num(x):
    return "—" if x is None else (f"{x:g}" if isinstance(x, (int, float)) else str(x))


def table(records, spaces, strategies):
    """Markdown: per strategy and space, share within 5 % (95 % Wilson) and median fevals."""
    by = {}
    for r in records:
        by.setdefault((r["strategy"], r["space"]), []).append(r)
    labels = [s.label for s in spaces]
    out = ["| strategy | runs | " + " | ".join(labels) + " | mean | median fevals |",
           "|---|--:|" + "--:|" * len(labels) + "--:|--:|"]
    for strat in strategies:
        cells, shares, fev, runs = [], [], [], set()
        for lab in labels:
            rs = by.get((strat, lab), [])
            runs.add(len(rs))
            if not rs:
                cells.append("—")
                continue
            k = sum(r["within5"] for r in rs)
            lo, hi = wilson(k, len(rs))
            shares.append(k / len(rs))
            cells.append(f"{100 * k / len(rs):.0f} % ({100 * lo:.0f}–{100 * hi:.0f})")
            fev.append(f"{fmt_num(median([r['fevals'] for r in rs]))}")
        if not shares:
            continue
        mean = f"{100 * sum(shares) / len(shares):.0f} %" if len(shares) == len(labels) else "—"
        nrun = "/".join(str(n) for n in sorted(runs)) if len(runs) > 1 else str(runs.pop())
        fevs = fev[0] if len(set(fev)) == 1 else " / ".join(fev)
        out.append(f"| {strat} | {nrun} | " + " | ".join(cells) + f" | {mean} | {fevs} |")
    bt = [BLOCKTUNE_DEFAULT[lab] for lab in labels]
    mean = sum(b[0] for b in bt) / len(bt)
    out.append("| **blocktune default (forest)** | 300 | " +
               " | ".join(f"**{b[0]} % ({b[1]}–{b[2]})**" for b in bt) + f" | **{mean:.0f} %** | 128 |")
    return "\n".join(out)


def detail(records, spaces, strategies):
    """Markdown: per strategy and space, median best/recorded-best, median measurements to 5 %."""
    by = {}
    for r in records:
        by.setdefault((r["strategy"], r["space"]), []).append(r)
    labels = [s.label for s in spaces]
    out = ["| strategy | " + " | ".join(labels) + " |", "|---|" + "--:|" * len(labels)]
    for strat in strategies:
        cells = []
        for lab in labels:
            rs = by.get((strat, lab), [])
            if not rs:
                cells.append("—")
                continue
            ratio = median([r["ratio"] if r["ratio"] is not None else math.inf for r in rs])
            hits = [r["to5"] for r in rs if r["to5"] is not None]
            m = median(hits)
            fe = sorted({r["fevals"] for r in rs})
            ferange = f"{fe[0]}" if len(fe) == 1 else f"{fe[0]}–{fe[-1]}"
            cells.append(f"{100 * (ratio - 1):.1f} % / {fmt_num(m)} / {ferange}")
        if any(c != "—" for c in cells):
            out.append(f"| {strat} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def load_jsonl(path):
    recs = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    recs.append(json.loads(line))
    return recs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", action="append", default=[], help="STRATEGY=N (repeatable)")
    ap.add_argument("--default-runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1, help="first seed; run i uses seed + i")
    ap.add_argument("--budget", type=int, default=128)
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--spaces", default=",".join(f for _, f in SPACES))
    ap.add_argument("--jsonl", default=os.path.join(ROOT, "bench/results/simulation-kt-peers.jsonl"))
    ap.add_argument("--md", default=None, help="write the tables (markdown) to this path + .tables")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--time-one", action="store_true")
    ap.add_argument("--options", action="append", default=[],
                    help="STRATEGY=JSON: strategy options beyond max_fevals (repeatable); the "
                         "runs are labelled 'STRATEGY k=v'")
    ap.add_argument("--valid-only", action="store_true",
                    help="the space holds only the configs that did not fail (what Kernel Tuner's "
                         "tune_cache infers), not every recorded one")
    args = ap.parse_args()

    import kernel_tuner as kt
    seeded_lhs()

    runs = {s: args.default_runs for s in STRATEGIES}
    for spec in args.runs:
        name, n = spec.split("=")
        runs[name] = int(n)
    strategies = [s for s in args.strategies.split(",") if s]
    opts = {}
    for spec in args.options:
        name, js = spec.split("=", 1)
        opts[name] = json.loads(js)
    labels = [label(s, opts.get(s), args.valid_only) for s in strategies]
    wanted = [s for s in args.spaces.split(",") if s]
    tmp = tempfile.mkdtemp(prefix="kt-peers-")
    spaces = [Space(lab, f, tmp, args.valid_only) for lab, f in SPACES if f in wanted]

    if args.time_one:
        for strat in strategies:
            for sp in spaces:
                try:
                    r = run_one(kt, sp, strat, args.seed, args.budget, opts.get(strat))
                    print(f"{strat:24s} {sp.label:12s} {r['wall_s']:7.2f} s  fevals {r['fevals']}"
                          f" failed {r['failed']} evals {r['evaluations']} ratio {r['ratio']:.3f}",
                          flush=True)
                except Exception as e:  # report and go on: the point is to see which ones run
                    print(f"{strat:24s} {sp.label:12s} FAILED: {type(e).__name__}: {e}", flush=True)
        return 0

    done = set()
    if args.resume:
        for r in load_jsonl(args.jsonl):
            done.add((r["cache"], r["strategy"], r["seed"]))
    else:
        with open(args.jsonl, "w") as f:
            f.write("")
    t_start = time.time()
    with open(args.jsonl, "a") as out:
        for strat in strategies:
            for sp in spaces:
                t0 = time.time()
                for i in range(runs[strat]):
                    seed = args.seed + i
                    if (sp.fname, label(strat, opts.get(strat), args.valid_only), seed) in done:
                        continue
                    r = run_one(kt, sp, strat, seed, args.budget, opts.get(strat))
                    out.write(json.dumps(r) + "\n")
                    out.flush()
                print(f"{strat:24s} {sp.label:12s} {runs[strat]} runs in {time.time() - t0:7.1f} s"
                      f" (total {time.time() - t_start:7.0f} s)", flush=True)

    if args.md:
        recs = [r for r in load_jsonl(args.jsonl) if r["strategy"] in labels]
        seeds = {}
        for r in recs:
            seeds.setdefault(r["strategy"], set()).add(r["seed"])
        with open(args.md + ".tables", "w") as f:
            f.write("## Within 5 % at 128\n\n" + table(recs, spaces, labels) + "\n\n")
            f.write("## Median best over the recorded best / median measurements to 5 % "
                    "(runs that got there) / fevals range\n\n" + detail(recs, spaces, labels) + "\n\n")
            f.write("seeds: " + "; ".join(f"{s} {min(v)}..{max(v)}" for s, v in seeds.items()) + "\n")
            f.write(f"\nspaces: " + "; ".join(
                f"{s.label}: {s.configs} configs, {s.valid} valid, best {s.best:.4g} ms, "
                f"{s.near} within 5 %" for s in spaces) + "\n")
            f.write(f"\nKernel Tuner {kt.__version__}, Python {platform.python_version()}, "
                    f"numpy {np.__version__}, {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}, "
                    f"command: {' '.join(shlex.quote(a) for a in sys.argv)}, "
                    f"{time.time() - t_start:.0f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
