#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""spec_variant.py — a copy of a built-in spec with some parameter lists replaced, for experiments
and profiles (bench/ncu_one.sh, bench/experiments/h200_gemm_exp.sh):
    python3 bench/spec_variant.py SPEC OUT.json 'P=v,P=v1|v2,...' ['CONSTRAINT' ...]
writes OUT.json, named after its file: each P's list becomes the given values ('|' between
several; P may be a parameter the spec does not list, passed to the kernel as a -D define like
any other), each CONSTRAINT is added to the spec's constraints, and the sources point back to the
repository's kernels (and its prelude) by absolute path, so that OUT.json may live anywhere and
compiles what the built-in does."""
import json
import os
import sys

spec, out, cfg = sys.argv[1], sys.argv[2], sys.argv[3]
here = os.path.abspath("kernels/specs")
s = json.load(open(os.path.join(here, spec + ".json")))
s["name"] = os.path.splitext(os.path.basename(out))[0]
for kv in filter(None, cfg.split(",")):
    k, v = kv.split("=")
    s["params"][k] = [int(x) for x in v.split("|")]
s["constraints"] = s.get("constraints", []) + sys.argv[4:]


def absolute(src):
    if isinstance(src, list):
        return [absolute(x) for x in src]
    if isinstance(src, str):
        return os.path.normpath(os.path.join(here, src))
    return src  # {"inline": ...}


for field in ("sources", "prelude"):
    if field in s:
        s[field] = {lang: absolute(src) for lang, src in s[field].items()}
json.dump(s, open(out, "w"), indent=1)
