# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""blocktune.configs: the config lists blocktune's model proposes for common kernels, as
triton.Config lists for @blocktune.autotune or @triton.autotune: the built-in specs
(kernels/specs/gemm.json, softmax.json, vector_add.json) planned by libblocktune for a problem and
a GPU, and their recommended configs (what `blocktune plan` says is worth measuring) or the first
`top` candidates by the model's rank."""
import ctypes

from . import _lib


def _gpu(gpu):
    """A const bt_gpu * (and what keeps it alive): a hardware-table row by name, or with None
    the properties of CUDA device 0 as the library reads them."""
    L, diag = _lib.lib(), _lib.Diag()
    if gpu is None:
        from ._autotuner import _device, _props_offset
        dev = _device(0)
        return ctypes.c_void_p(L.bt_device_get_info(dev) + _props_offset()), dev
    db, row = ctypes.c_void_p(), ctypes.c_void_p()
    _lib.check(L.bt_gpudb_load_default(ctypes.byref(db), ctypes.byref(diag)), diag)
    st = L.bt_gpudb_find(db, gpu.encode(), ctypes.byref(row), ctypes.byref(diag))
    if st != _lib.BT_OK:
        L.bt_gpudb_destroy(db)
        raise _lib.error(st, diag)
    return row, _Owner(db)


class _Owner:
    def __init__(self, db):
        self.db = db

    def __del__(self):
        _lib.lib().bt_gpudb_destroy(self.db)


def plan(kernel, problem, dtype, gpu=None):
    """The plan of a built-in kernel (docs/plan-json.md) as a dict: candidates ranked by the
    model, eliminated configs with reasons, recommended configs."""
    L, diag = _lib.lib(), _lib.Diag()
    kd, p, pl = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    g, keep = _gpu(gpu)
    _lib.check(L.bt_kdesc_builtin(kernel.encode(), ctypes.byref(kd), ctypes.byref(diag)), diag)
    try:
        _lib.check(L.bt_problem_create(kd, ctypes.byref(p)), diag)
        for n, v in problem.items():
            _lib.check(L.bt_problem_set(p, n.encode(), int(v), ctypes.byref(diag)), diag)
        _lib.check(L.bt_problem_set_dtype(p, dtype.encode(), ctypes.byref(diag)), diag)
        _lib.check(L.bt_plan_create(kd, p, g, None, ctypes.byref(pl), ctypes.byref(diag)), diag)
        return _lib.write_json(L.bt_plan_write_json, pl)
    finally:
        L.bt_plan_destroy(pl)
        L.bt_problem_destroy(p)
        L.bt_kdesc_destroy(kd)
        del keep


def _pick(doc, top):
    if top is None:
        return list(doc.get("recommended") or [c["config"] for c in doc["candidates"][:8]])
    return [c["config"] for c in doc["candidates"][:top]]


def _to_triton(dicts, keep, names):
    import triton
    out, seen = [], set()
    for d in dicts:
        kw = {names.get(k, k): v for k, v in d.items() if k in keep}
        opts = {k: d[k] for k in ("num_warps", "num_stages") if k in d}
        ident = (tuple(sorted(kw.items())), tuple(sorted(opts.items())))
        if ident not in seen:
            seen.add(ident)
            out.append(triton.Config(kw, **opts))
    return out


def gemm(M=4096, N=4096, K=4096, dtype="fp16", gpu=None, top=None, names=None):
    """GEMM tiles (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages) for C[M,N] =
    A[M,K] B[K,N]: the model's recommended configs, or its first `top` candidates. names renames
    the parameters for your kernel ({"BLOCK_M": "BLOCK_SIZE_M", ...}, Triton's tutorial)."""
    doc = plan("gemm", {"M": M, "N": N, "K": K}, dtype, gpu)
    return _to_triton(_pick(doc, top), {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"},
                      names or {})


def softmax(rows=4096, cols=4096, dtype="fp16", gpu=None, top=None, names=None):
    """Row softmax: num_warps for a kernel whose block covers a row (Triton's tutorial computes
    BLOCK_SIZE from n_cols itself), in the model's order."""
    doc = plan("softmax", {"rows": rows, "cols": cols}, dtype, gpu)
    return _to_triton(_pick(doc, top), set(), names or {})


def vector_add(n=1 << 24, dtype="fp32", gpu=None, top=None, names=None):
    """Element-wise add: BLOCK_SIZE and num_warps (blocktune's CUDA VEC is left to Triton's own
    vectorization)."""
    doc = plan("vector_add", {"n": n}, dtype, gpu)
    return _to_triton(_pick(doc, top), {"BLOCK_SIZE"}, names or {})


def gemm_model(names=None):
    """The spec "model" of a tiled GEMM kernel (Triton's tutorial matmul and its kin), for
    @blocktune.autotune(model=...): the tiles of M, N and K, tensor cores, and the shared memory
    of a software pipeline, num_stages * (BLOCK_M*BLOCK_K + BLOCK_K*BLOCK_N) * elem_bytes (what
    Triton 3.6 allocates for 64-wide and larger tiles: docs/triton.md), so that the configs over
    the GPU's shared memory are eliminated before anything compiles. names renames the
    parameters ({"BLOCK_M": "BLOCK_SIZE_M", ...})."""
    n = {p: (names or {}).get(p, p) for p in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    return {
        "kind": "gemm", "unit": "tensor",
        "tiles": [{"param": n["BLOCK_M"], "dim": "M"}, {"param": n["BLOCK_N"], "dim": "N"},
                  {"param": n["BLOCK_K"], "dim": "K", "reduction": True}],
        "inner": n["BLOCK_N"],
        "smem": f"num_stages * ({n['BLOCK_M']}*{n['BLOCK_K']} + {n['BLOCK_K']}*{n['BLOCK_N']})"
                f" * elem_bytes",
    }
