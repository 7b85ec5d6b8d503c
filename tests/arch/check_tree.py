#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_tree.py ROOT [OBJECT...] — the structure rules of the tree, checked from its sources and
(when given) its compiled objects. Exits 1 naming every breach, 0 when there is none.

1. Layers (docs/architecture.md): core <- platform <- store <- search | backends | report <- engine <- tools.
   A file includes only headers of its own folder and of the layers below it; search and
   backends, side by side, include nothing of each other. A backend's own folder
   (src/backends/NAME/) is known only to itself: nothing outside it includes its headers (the
   rest of the tree sees a backend through the vtable of src/backends/backend.h).
2. No circles: no header includes itself through others, and — from the objects, by the symbols
   each one defines and uses (nm) — no two files of src/ use each other, directly or around a
   ring, and no file uses a symbol defined in a higher layer (the registry, backend.c, naming a
   backend's vtable bt__backend_NAME is its one allowed reference into a backend folder).
3. Function length: no function in src/ or tools/ over 120 lines, except the expression evaluator's
   dispatch switch (src/core/expr.c: bt__expr_eval). Lines are counted from the line that names
   the function to its closing brace (clang-format puts both braces of a body in column 0).
4. Licence: every C, CUDA, OpenCL, Python and shell file of ours (src, tools, include, kernels,
   tests except the third-party files of tests/data and the released headers kept as released
   in tests/abi, examples, bench, python) carries
   "SPDX-License-Identifier: Apache-2.0" in its first two lines. (A kernel's licence line is left
   out of its source hash: src/core/kdesc.c.)
"""
import collections, os, re, subprocess, sys

LAYER = {"core": 0, "platform": 1, "store": 2, "search": 3, "backends": 3, "report": 3, "engine": 4,
         "tools": 5}
MAX_LINES = 120
LONG_OK = {("src/core/expr.c", "bt__expr_eval")}
# A tools/ file includes only blocktune.h and tools/ headers: the CLI stands on the public API
# (issue 13 item 4), every file of it.
TOOLS_PUBLIC_ONLY = True

root = os.path.abspath(sys.argv[1])
objects = sys.argv[2:]
errors = []


def area(rel):
    """('core', None) for src/core/x.c; ('backends', 'cuda') for src/backends/cuda/x.c."""
    parts = rel.split("/")
    if parts[0] == "tools":
        return "tools", None
    if parts[0] == "src" and len(parts) >= 3:
        sub = parts[2] if parts[1] == "backends" and len(parts) >= 4 else None
        return parts[1], sub
    return None, None


def sources():
    for top in ("src", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def resolve(rel, inc):
    """The tree path an #include "inc" in file rel means, or None (blocktune.h, system)."""
    here = os.path.join(os.path.dirname(rel), inc)
    for cand in (here, os.path.join("src", inc)):
        if os.path.isfile(os.path.join(root, cand)):
            return os.path.normpath(cand)
    return None


# --- 1. includes ------------------------------------------------------------------------------
graph = collections.defaultdict(set)
for rel in sources():
    a, sub = area(rel)
    if a not in LAYER:
        errors.append(f"{rel}: a folder the layers do not know ({a}); name it in check_tree.py")
        continue
    for n, line in enumerate(open(os.path.join(root, rel), errors="replace"), 1):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if not m:
            continue
        inc = m.group(1)
        if inc == "blocktune.h":
            continue
        tgt = resolve(rel, inc)
        if tgt is None:
            errors.append(f"{rel}:{n}: includes \"{inc}\", which is not in the tree")
            continue
        graph[rel].add(tgt)
        b, bsub = area(tgt)
        where = f"{rel}:{n}: includes {tgt}"
        if a == "tools" and TOOLS_PUBLIC_ONLY and b != "tools":
            errors.append(f"{where}: a tools/ file includes only blocktune.h and tools/ headers")
        if LAYER[b] > LAYER[a]:
            errors.append(f"{where}: {a} (layer {LAYER[a]}) includes from {b} (layer {LAYER[b]}), "
                          "a higher layer")
        elif LAYER[b] == LAYER[a] and b != a:
            errors.append(f"{where}: {a} and {b} sit side by side and know nothing of each other")
        if bsub and (a != "backends" or sub != bsub):
            errors.append(f"{where}: only src/backends/{bsub}/ includes its own headers; the rest "
                          "of the tree knows a backend through the vtable (backends/backend.h)")


def rings(g):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in list(g):
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(g.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


for ring in rings(graph):
    errors.append("include circle: " + " -> ".join(ring))

# --- 2. symbols -------------------------------------------------------------------------------
if objects:
    defs, uses = {}, collections.defaultdict(set)
    for o in objects:
        m = re.search(r"((?:src|tools)/.*)\.o$", o)
        if not m:
            continue
        rel = m.group(1)
        out = subprocess.run([os.environ.get("NM") or "nm", o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRC":
                defs[p[2]] = rel
            elif len(p) == 2 and p[0] == "U":
                uses[rel].add(p[1])
    calls = collections.defaultdict(set)
    for rel, syms in uses.items():
        a, sub = area(rel)
        for s in sorted(syms):
            tgt = defs.get(s)
            if not tgt or tgt == rel:
                continue
            b, bsub = area(tgt)
            if rel == "src/backends/backend.c" and s.startswith("bt__backend_"):
                continue  # the registry's one line per backend
            calls[rel].add(tgt)
            where = f"{rel} uses {s} of {tgt}"
            if LAYER[b] > LAYER[a]:
                errors.append(f"{where}: a call into a higher layer ({b} above {a})")
            elif LAYER[b] == LAYER[a] and b != a:
                errors.append(f"{where}: {a} and {b} sit side by side")
            if bsub and (a != "backends" or sub != bsub):
                errors.append(f"{where}: a backend's functions are reached through its vtable")
    for ring in rings(calls):
        errors.append("files that use each other (a circle): " + " -> ".join(ring))

# --- 3. function length -----------------------------------------------------------------------
longest = []
for rel in sources():
    if not rel.startswith(("src/", "tools/")) or not rel.endswith(".c"):
        continue
    lines = open(os.path.join(root, rel), errors="replace").read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            # the signature: back to the line that starts in column 0 with the name
            s = i - 1
            while s > 0 and (lines[s].startswith((" ", "\t")) or lines[s] == ""):
                s -= 1
            m = re.search(r"(\w+)\s*\(", lines[s])
            name = m.group(1) if m else "?"
            e = i + 1
            while e < len(lines) and lines[e] != "}":
                e += 1
            n = e - s + 1
            longest.append((n, rel, name))
            if n > MAX_LINES and (rel, name) not in LONG_OK:
                errors.append(f"{rel}:{s + 1}: {name} is {n} lines (at most {MAX_LINES})")
            i = e
        i += 1
longest.sort(reverse=True)

# --- 4. licence lines -------------------------------------------------------------------------
OURS = (".c", ".h", ".cu", ".cuh", ".cl", ".py", ".sh")
nlicensed = 0
for top in ("src", "tools", "include", "kernels", "tests", "examples", "bench", "python"):
    for d, dirs, files in os.walk(os.path.join(root, top)):
        rel_d = os.path.relpath(d, root)
        if rel_d.startswith(os.path.join("tests", "data")):
            continue
        dirs[:] = [x for x in dirs if not x.startswith((".", "__pycache__", "build"))]
        for f in sorted(files):
            if not f.endswith(OURS) or (rel_d == os.path.join("tests", "abi") and f.startswith("blocktune-")):
                continue
            rel = os.path.join(rel_d, f)
            with open(os.path.join(root, rel), errors="replace") as fh:
                head = fh.readline() + fh.readline()
            if "SPDX-License-Identifier: Apache-2.0" not in head:
                errors.append(f"{rel}:1: no 'SPDX-License-Identifier: Apache-2.0' in its first two lines")
            nlicensed += 1

for e in errors:
    print("FAIL:", e)
print(f"checked: the includes of {sum(1 for _ in sources())} files, "
      f"{len(objects)} objects' symbols, {len(longest)} functions of src/ and tools/, "
      f"the licence lines of {nlicensed} files "
      f"(longest: {', '.join(f'{n} {r}:{f}' for n, r, f in longest[:3])})")
sys.exit(1 if errors else 0)
