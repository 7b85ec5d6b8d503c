#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vllm_lookup.py DIR SWEEP.json E N DTYPE — reads the files of `blocktune cache export --vllm`
the way vLLM's fused-MoE config lookup does (vllm/model_executor/layers/fused_moe/fused_moe.py:
get_config_file_name, get_moe_configs, try_get_optimal_moe_config; written from reading it, not
copied): the file name from E, N, the device name with spaces as '_', ',dtype=' when vLLM has a
dtype string (none for fp16/bf16: pass ''), then json.load with the keys turned into ints, and the
config of the M closest by absolute difference. Checks that each tuned M gives the sweep's winner,
and that untuned Ms give the nearest tuned one. Exits 1 after saying what is wrong."""
import json
import os
import sys

NAMES = ["BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps",
         "num_stages"]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def file_name(E, N, device, dtype):
    selector = ",dtype=" + dtype if dtype else ""
    return "E=%d,N=%d,device_name=%s%s.json" % (E, N, device.replace(" ", "_"), selector)


def main():
    folder, sweep_path, E, N, dtype = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        int(sys.argv[4]), sys.argv[5]
    with open(sweep_path) as f:
        sweep = json.load(f)
    docs = sweep["sweep"]
    device = docs[0]["provenance"]["device"]
    path = os.path.join(folder, file_name(E, N, device, dtype))
    if not os.path.exists(path):
        fail("vLLM would open %s; the folder holds %s" % (path, sorted(os.listdir(folder))))
    with open(path) as f:
        configs = {int(k): v for k, v in json.load(f).items()}
    winners = {d["problem"]["M"]: d["winner"]["config"] for d in docs if d["winner"]}
    if sorted(configs) != sorted(winners):
        fail("the file's M keys %s are not the sweep's %s" % (sorted(configs), sorted(winners)))
    for m, cfg in configs.items():
        if sorted(cfg) != sorted(NAMES) or not all(type(cfg[n]) is int for n in NAMES):
            fail("M=%d: %s is not vLLM's six integer fields" % (m, cfg))
        if any(cfg[n] != winners[m][n] for n in NAMES):
            fail("M=%d: %s is not the winner %s" % (m, cfg, winners[m]))
    # the look-up of try_get_optimal_moe_config: the closest M by absolute difference, a tie
    # to the first key of the file: ours are in increasing M, so a tie goes to the smaller M
    order = list(configs)
    if order != sorted(order):
        fail("the file's M keys are not in increasing order: %s" % order)
    for m in range(1, 2 * order[-1] + 1):
        chosen = min(configs.keys(), key=lambda x: abs(x - m))
        expect = min(order, key=lambda x: (abs(x - m), x))
        if chosen != expect:
            fail("M=%d: vLLM's look-up chose M=%d, the nearest (the smaller on a tie) is %d"
                 % (m, chosen, expect))
    print("ok: %s: %d batch sizes, vLLM's look-up reads each winner" % (os.path.basename(path),
                                                                       len(configs)))


main()
