# SPDX-License-Identifier: Apache-2.0
"""Kernel Tuner's own simulation mode on a cache file that blocktune exported.

usage: kt_simulate.py ORIGINAL EXPORTED

ORIGINAL is a Kernel Tuner cache (plain or gzip) and EXPORTED what `blocktune cache export-kt`
wrote after importing it. Kernel Tuner replays EXPORTED with the original's parameters and a
restriction that admits exactly the configs ORIGINAL holds (failed ones included): in simulation
mode a config that passes the restrictions but is missing from the cache is an error, so a dropped
failure fails this. Every config must come back as ORIGINAL recorded it (the same time or the same
failure, the same compile, verification and benchmark times), under a brute-force search (every
config) and, when ORIGINAL records those three timings on every entry, under a random search with
a simulated time limit (which Kernel Tuner refuses unless every entry has them). Exit 0 when all holds, 1 with the first difference otherwise.
"""
import gzip
import json
import sys
import warnings

import kernel_tuner
from constraint import FunctionConstraint


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode()


def simulate(cache_path, header, strategy, options):
    keys = header["tune_params_keys"]
    recorded = {tuple(e[k] for k in keys) for e in header["cache"].values()}
    only_recorded = FunctionConstraint(lambda *values: values in recorded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            header["kernel_name"], "", tuple(header["problem_size"]), [], header["tune_params"],
            restrictions=[only_recorded], cache=cache_path, simulation_mode=True,
            strategy=strategy, strategy_options=options, quiet=True)
    out = {}
    for r in results:
        key = ",".join(str(r[k]) for k in keys)
        err = r.get("__error__")
        out[key] = (str(err) if err is not None else r["time"], r.get("compile_time"),
                    r.get("verification_time"), r.get("benchmark_time"))
    return out


TIMINGS = ("compile_time", "verification_time", "benchmark_time")


def expected(header):
    """What each config's result must be: its time or failure and timings, as recorded."""
    keys = header["tune_params_keys"]
    out = {}
    for e in header["cache"].values():
        key = ",".join(str(e[k]) for k in keys)
        out[key] = (e["time"], e.get("compile_time"), e.get("verification_time"),
                    e.get("benchmark_time"))
    return out


def main():
    original, exported = sys.argv[1], sys.argv[2]
    header = json.loads(load(original))
    want = expected(header)
    runs = [("brute_force", None)]
    timed = all(all(k in e for k in TIMINGS) for e in header["cache"].values())
    if timed:
        runs.append(("random_sample", {"time_limit": 30, "fraction": 0.2}))
    else:  # e.g. rows blocktune measured itself: it records the compile time only
        print("note: the original lacks compile, verification or benchmark times on some "
              "entries, so a time-limited replay is not possible for either")
    for strategy, options in runs:
        got = simulate(exported, header, strategy, options)
        if strategy == "brute_force" and len(got) != len(want):
            print(f"FAIL: brute force visited {len(got)} of the {len(want)} recorded configs")
            return 1
        diff = sorted(k for k in got if got[k] != want.get(k))
        if diff:
            k = diff[0]
            print(f"FAIL: {strategy}: {len(diff)} configs differ from the original, e.g. {k}: "
                  f"recorded {want.get(k)}, simulated from the export {got[k]}")
            return 1
        failed = sum(isinstance(v[0], str) for v in got.values())
        print(f"ok   Kernel Tuner {kernel_tuner.__version__} {strategy} on the export: "
              f"{len(got)} configs ({failed} failed), each as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
