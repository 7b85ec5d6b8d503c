# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""The spec (docs/spec.md) the decorator generates for one call of a @triton.jit function: its
file and name as the Triton source, each tensor a buffer of its dtype and size, each integer a
scalar problem variable, the constexprs the caller passes as problem variables in the key, the
configs as an explicit `configs` list, the grid as expressions (_grid.py), the outputs found in
the source (tl.store and atomics), reset_to_zero and restore_value as given. Nothing here calls
the library."""
import ast
import inspect
import json
import os
import textwrap

from . import _grid

# torch's dtypes (str(tensor.dtype)) as blocktune spells them
DTYPES = {"torch.float16": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32",
          "torch.float64": "fp64", "torch.int8": "int8", "torch.int32": "int32",
          "torch.int64": "int64", "torch.float8_e4m3fn": "fp8"}
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
JIT_VAR = "jit_specialization"
_WRITES = {"store", "atomic_add", "atomic_cas", "atomic_xchg", "atomic_max", "atomic_min",
           "atomic_and", "atomic_or", "atomic_xor"}


class SpecError(ValueError):
    """A call the generated spec cannot express (named argument and why)."""


def jit_function(fn):
    """The JITFunction under fn (through .fn, as triton.autotune and heuristics wrap it)."""
    seen = 0
    while not hasattr(fn, "arg_names") or not hasattr(fn, "params"):
        fn = getattr(fn, "fn", None)
        seen += 1
        if fn is None or seen > 8:
            raise SpecError("blocktune.autotune decorates a @triton.jit function")
    if type(fn).__name__ != "JITFunction":
        raise SpecError(f"blocktune.autotune needs a @triton.jit function directly under it, "
                        f"not {type(fn).__name__} (put @triton.heuristics above it instead)")
    return fn


def config_dict(cfg):
    """A triton.Config as {param: value} with num_warps/num_stages (and num_ctas, maxnreg when
    set); pre_hook and ir_override are refused."""
    if getattr(cfg, "pre_hook", None) is not None or getattr(cfg, "ir_override", None):
        raise SpecError(f"config {cfg}: pre_hook and ir_override are not supported by blocktune")
    d = dict(cfg.kwargs)
    d["num_warps"], d["num_stages"] = cfg.num_warps, cfg.num_stages
    if getattr(cfg, "num_ctas", 1) != 1:
        d["num_ctas"] = cfg.num_ctas
    if getattr(cfg, "maxnreg", None) is not None:
        d["maxnreg"] = cfg.maxnreg
    for k, v in d.items():
        if isinstance(v, bool) or not isinstance(v, int):
            raise SpecError(f"config {cfg}: {k}={v!r}: blocktune tunes integer parameters only")
    return d


def written_pointers(jit, pointers):
    """The pointer parameters the kernel's source stores to (tl.store, tl.atomic_*), following
    assignments (c_ptrs = c_ptr + ...)."""
    tree = ast.parse(textwrap.dedent(jit.src))
    deps = {}

    def names(node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in names(t):
                    deps.setdefault(n, set()).update(names(node.value))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _WRITES:
            arg = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "pointer"), None)
            if arg is not None:
                roots |= names(arg)
    out, todo = set(), list(roots)
    while todo:
        n = todo.pop()
        if n in out:
            continue
        out.add(n)
        todo.extend(deps.get(n, ()))
    return [p for p in pointers if p in out]


def int_type(v):
    """Triton's integer scalar type for a value: i32 in [-2^31, 2^31), else i64."""
    if -2 ** 31 <= v < 2 ** 31:
        return "int32"
    if -2 ** 63 <= v < 2 ** 64:
        return "int64"
    raise SpecError(f"integer {v} does not fit 64 bits")


def jit_class(v):
    """Triton's JIT specialization of an integer (what the compiled code assumes): 1, a multiple
    of 16, other; i32 or i64."""
    cls = 1 if v == 1 else 2 if v % 16 == 0 else 0
    return cls + (3 if int_type(v) == "int64" else 0)


class Call:
    """One call's arguments, classified: buffers (name -> tensor), integer scalars and the
    caller's constexprs (name -> int)."""

    def __init__(self, jit, config_names, args, kwargs):
        names = jit.arg_names
        if len(args) > len(names):
            raise SpecError(f"{jit.fn.__name__} takes {len(names)} arguments, {len(args)} given")
        bound = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise SpecError(f"{jit.fn.__name__} has no argument '{k}'")
            if k in bound:
                raise SpecError(f"argument '{k}' given twice")
            bound[k] = v
        self.bound, self.buffers, self.scalars, self.constexprs = bound, {}, {}, {}
        for p in jit.params:
            n = p.name
            if n in config_names:
                if n in bound:
                    raise SpecError(f"argument '{n}' is tuned by the configs; do not pass it")
                continue
            if n not in bound:
                if p.default is inspect.Parameter.empty:
                    raise SpecError(f"missing argument '{n}'")
                bound[n] = p.default
            self._classify(n, bound[n], p.is_constexpr)

    def _classify(self, n, v, constexpr):
        if hasattr(v, "data_ptr"):
            if constexpr:
                raise SpecError(f"argument '{n}' is a tl.constexpr but a tensor was given")
            dt = DTYPES.get(str(v.dtype))
            if dt is None:
                raise SpecError(f"argument '{n}': dtype {v.dtype} is not supported by blocktune "
                                f"({', '.join(sorted(DTYPES))})")
            if v.data_ptr() % 16:
                raise SpecError(f"argument '{n}': tensor at {v.data_ptr():#x} is not 16-byte "
                                f"aligned; blocktune compiles Triton kernels for aligned pointers "
                                f"(as Triton's JIT does for cudaMalloc'd tensors)")
            self.buffers[n] = v
        elif isinstance(v, int):  # bool too: passed as 0/1
            (self.constexprs if constexpr else self.scalars)[n] = int(v)
        elif constexpr:
            raise SpecError(f"constexpr '{n}' = {v!r}: blocktune passes integer and bool "
                            f"constexprs only")
        else:
            raise SpecError(f"argument '{n}' = {v!r} ({type(v).__name__}): blocktune passes "
                            f"tensors and integers only (a float scalar cannot be a problem "
                            f"variable in API 0.2)")

    def dtype_of(self, n):
        return DTYPES[str(self.buffers[n].dtype)]

    def numel_var(self, n):
        return f"numel_{n}"

    def problem(self, key):
        """Problem variables -> values for this call (scalars, constexprs, buffer sizes and the
        JIT specialization of the integers outside the key)."""
        out = dict(self.scalars)
        out.update(self.constexprs)
        for n, t in self.buffers.items():
            out[self.numel_var(n)] = int(t.numel())
        spec, digit = 0, 1
        for n, v in self.scalars.items():
            if n not in key:
                spec += jit_class(v) * digit
                digit *= 6
        if digit > 1:
            out[JIT_VAR] = spec
        return out


def build(jit, configs, call, key, grid, reset_to_zero, restore_value, outputs, model,
          reference=None):
    """The spec (a dict) for this call. configs: dicts from config_dict, deduplicated."""
    params = {}
    for c in configs:
        if set(c) != set(configs[0]):
            raise SpecError(f"every config must set the same parameters: {c} vs {configs[0]}")
        for k, v in c.items():
            params.setdefault(k, set()).add(v)
    params = {k: sorted(v) for k, v in params.items()}
    problem = call.problem(key)
    if len(problem) > 16:
        raise SpecError(f"{len(problem)} problem variables (scalars, constexprs, one size per "
                        f"tensor) are more than a spec holds (16): {', '.join(problem)}")
    dtypes = [call.dtype_of(n) for n in call.buffers]
    T = dtypes[0] if dtypes else "fp32"
    name = jit.fn.__name__
    if len(set(dtypes)) > 1:  # the key's dtype is the first tensor's: the others go in the name
        name += "__" + "_".join(dtypes)
    if len(name) > 47:
        raise SpecError(f"kernel name '{name}' is longer than 47 characters")
    args = []
    for n in jit.arg_names:
        if n in call.buffers:
            dt = call.dtype_of(n)
            args.append({"name": n, "dtype": "T" if dt == T else dt, "size": call.numel_var(n)})
        elif n in call.scalars:
            args.append({"name": n, "kind": "scalar", "dtype": int_type(call.scalars[n]),
                         "value": n})
    metas = [dict(call.bound, **c) for c in configs]
    grid_ex = _grid.expressions(grid, metas, list(params), call.scalars)
    if outputs is None:
        outputs = written_pointers(jit, list(call.buffers))
    for what, lst in (("outputs", outputs), ("reset_to_zero", reset_to_zero),
                      ("restore_value", restore_value)):
        for n in lst:
            if n not in call.buffers:
                raise SpecError(f"{what}: '{n}' is not a tensor argument of {jit.fn.__name__}")
    keyvars = [n for n in key if n in call.scalars]
    for n in key:
        if n in call.buffers:
            raise SpecError(f"key: '{n}' is a tensor; a key names integer arguments")
    keyvars += list(call.constexprs) + (["dtype"] if dtypes else [])
    if JIT_VAR in problem:
        keyvars.append(JIT_VAR)
    spec = {
        "blocktune_spec": 1, "name": name,
        "description": f"generated by blocktune.autotune from {jit.fn.__name__} "
                       f"({os.path.basename(inspect.getsourcefile(jit.fn))})",
        "sources": {"triton": os.path.abspath(inspect.getsourcefile(jit.fn))},
        "entry": jit.fn.__name__, "dtypes": [T], "problem": problem, "params": params,
        "configs": configs, "rules": "triton", "launch": {"grid": grid_ex}, "args": args,
        "key": keyvars,
    }
    if call.constexprs:
        spec["defines"] = {n: n for n in call.constexprs}
    for field, lst in (("outputs", outputs), ("reset_to_zero", reset_to_zero),
                       ("restore_value", restore_value)):
        if lst:
            spec[field] = list(lst)
    if model:
        spec["model"] = model
    if reference is not None:
        spec["reference"] = {"config": reference}
    return spec


def identity(spec):
    """What makes two calls' specs the same kernel: the spec without its problem values."""
    s = dict(spec, problem=sorted(spec["problem"]))
    return json.dumps(s, sort_keys=True)
