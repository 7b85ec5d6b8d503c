# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""@blocktune.autotune: triton.autotune's decorator, tuned by libblocktune (docs/triton.md,
"The Python decorator").

A call `kernel[grid](*args)` is looked up by its arguments (tensor addresses, sizes and dtypes,
integer values) in a dict; a hit launches the kernel's chosen config with one ctypes call,
bt_kernel_launch_ex on the caller's tensors (wrapped once) and torch's current stream. A miss
builds the call's spec (_spec.py), loads it into a bt_kernel (one per distinct spec), wraps the
tensors, and launches: the library looks the key up in memory, the store and wisdom and tunes it
when it finds nothing (model pruning, parallel compile, verification against the first valid
config, measurement, interleaved finalists), then launches the winner."""
import ctypes
import functools
import json
import os
import sys
import threading
import time

from . import _grid, _lib, _pool, _spec

_lib.after_load(_pool.install)  # the compile pool forked from this interpreter

_MAX_ENTRIES = 256  # cached calls (distinct addresses/sizes) before the cache starts over


def _torch_stream(ordinal):
    """torch's current stream of a device (what Triton's launcher reads), resolved once."""
    global current_stream
    import torch
    current_stream = torch._C._cuda_getCurrentRawStream
    return current_stream(ordinal)


# The caller's current CUDA stream of a device ordinal, as an integer (torch's, unless
# set_current_stream replaces it).
current_stream = _torch_stream


def set_current_stream(fn):
    """fn(ordinal) -> the CUstream (an int; 0 for the legacy default stream) to launch on, for
    callers whose streams are not torch's (CuPy, a test); None goes back to torch's."""
    global current_stream
    current_stream = fn or _torch_stream


_devices = {}
_devices_lock = threading.Lock()


def _device(ordinal):
    """The bt_device wrapping the primary context of a CUDA ordinal (torch's context)."""
    with _devices_lock:
        d = _devices.get(ordinal)
        if d is None:
            L, diag, out = _lib.lib(), _lib.Diag(), ctypes.c_void_p()
            _lib.check(L.bt_device_wrap_cuda(ordinal, None, ctypes.byref(out),
                                             ctypes.byref(diag)), diag)
            d = _devices[ordinal] = out
        return d


def _ordinal(t):
    dev = t.device
    if getattr(dev, "type", "cuda") != "cuda":
        raise _spec.SpecError(f"tensor on {dev}: blocktune launches on CUDA tensors")
    if dev.index is not None:
        return dev.index
    import torch
    return torch.cuda.current_device()


def _first_valid(kd, problem_vars, dtype, dev, configs):
    """The first config of the list that the model keeps (the verification's reference)."""
    L, diag = _lib.lib(), _lib.Diag()
    p = ctypes.c_void_p()
    _lib.check(L.bt_problem_create(kd, ctypes.byref(p)), diag)
    plan = ctypes.c_void_p()
    try:
        for n, v in problem_vars.items():
            _lib.check(L.bt_problem_set(p, n.encode(), v, ctypes.byref(diag)), diag)
        _lib.check(L.bt_problem_set_dtype(p, dtype.encode(), ctypes.byref(diag)), diag)
        gpu = L.bt_device_get_info(dev) + _props_offset()
        _lib.check(L.bt_plan_create(kd, p, ctypes.c_void_p(gpu), None, ctypes.byref(plan),
                                    ctypes.byref(diag)), diag)
        doc = _lib.write_json(L.bt_plan_write_json, plan)
    finally:
        L.bt_plan_destroy(plan)
        L.bt_problem_destroy(p)
    valid = [c["config"] for c in doc.get("candidates", [])]
    for c in configs:
        if c in valid:
            return c
    why = "; ".join(f"{e['config']}: {', '.join(e.get('reasons', []))}"
                    for e in doc.get("eliminated", [])[:8])
    raise _spec.SpecError(f"the model eliminates every config ({why})")


def _props_offset():
    """offsetof(bt_device_info, props): the fixed fields before it, aligned to 8."""
    head = [32, 16, 4, 128, 64, 128, 96, 64, 96, 40, 4, 4, 96]  # id ... table_row
    off = 0
    for size in head:
        if size == 4:
            off = (off + 3) & ~3
        off += size
    return (off + 7) & ~7


def _load_spec(spec):
    """A bt_kdesc of a spec (dict); the caller destroys it."""
    L, diag, kd = _lib.lib(), _lib.Diag(), ctypes.c_void_p()
    _lib.check(L.bt_kdesc_load_string(json.dumps(spec).encode(), f"{spec['name']}.json".encode(),
                                      ctypes.byref(kd), ctypes.byref(diag)), diag)
    return kd


class _Kernel:
    """One generated spec on one device: its bt_kdesc and bt_kernel."""

    def __init__(self, spec, dev, topts):
        L, diag = _lib.lib(), _lib.Diag()
        self.spec, self.dev = spec, dev
        self.kd, self.kn = _load_spec(spec), ctypes.c_void_p()
        st = L.bt_kernel_create(dev, self.kd, ctypes.byref(self.kn), ctypes.byref(diag))
        if st != _lib.BT_OK:
            L.bt_kdesc_destroy(self.kd)
            raise _lib.error(st, diag)
        L.bt_kernel_set_options(self.kn, topts)


class _Entry:
    """A cached call: its kernel, problem and wrapped tensors, launch options per stream (made
    once per stream, never changed, so that threads on different streams share nothing they
    write), and the chosen config (for the grid check and best_config)."""
    __slots__ = ("kn", "problem", "bufs", "nbufs", "streams", "ordinal", "grid", "chosen",
                 "best", "callable_grid", "source")

    def __init__(self, kernel, problem, bufs, ordinal):
        self.kn, self.problem = kernel.kn, problem
        self.bufs = (ctypes.c_void_p * max(1, len(bufs)))(*bufs)
        self.nbufs = ctypes.c_int(len(bufs))
        self.ordinal, self.streams = ordinal, {}

    def on(self, stream):
        """(options, diag) by reference for launches on a stream (torch's number for it)."""
        r = self.streams.get(stream)
        if r is None:
            opts, diag = _lib.LaunchOptions(), _lib.Diag()
            # torch's default stream is CUDA's legacy NULL stream; NULL in bt_launch_options
            # is the device's own stream, so the legacy one is named as cuda.h does
            opts.stream = stream or 1
            r = self.streams[stream] = (ctypes.byref(opts), ctypes.byref(diag), opts, diag)
        return r


class Autotuner:
    """What @blocktune.autotune returns: `kernel[grid](*args, **kwargs)` as with Triton."""

    def __init__(self, fn, configs, key, reset_to_zero=None, restore_value=None,
                 prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False,
                 do_bench=None, outputs=None, model=None):
        self.fn = fn
        self.jit = _spec.jit_function(fn)
        self.arg_names = self.jit.arg_names
        if do_bench is not None:
            raise _spec.SpecError("do_bench: blocktune measures in C (device events, cache flush, "
                                  "interleaved finalists); a Python benchmark cannot replace it")
        self.configs = list(configs) if configs else None
        self.keys = list(key)
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        prune = prune_configs_by or {}
        self.perf_model = prune.get("perf_model")
        self.configs_top_k = prune.get("top_k", 1.0)
        self.early_config_prune = prune.get("early_config_prune")
        self.outputs, self.model = outputs, model
        self.best_config, self.bench_time = None, None
        # the library is loaded at the first call, not here: the compile pool imports this
        # module's file to compile it and needs no libblocktune
        self._bench_opts, self._topts, self._launch = (warmup, rep, use_cuda_graph), None, None
        self._kernels, self._entries, self._wrappers, self._outputs = {}, {}, {}, {}
        self._retired = ([], [])
        self._lock = threading.Lock()

    def __getitem__(self, grid):
        return functools.partial(self.run, grid=grid)

    def run(self, *args, grid, warmup=False, **kwargs):
        # (warmup: what triton.heuristics above this decorator passes on; nothing to do)
        # the hot path: a dict lookup by the arguments, the grid checked, one ctypes call
        sig = tuple([a if a.__class__ is int else (a.data_ptr(), a.numel(), a.dtype)
                     if hasattr(a, "data_ptr") else a for a in args])
        if kwargs:
            sig += tuple(sorted(kwargs.items()))
        e = self._entries.get(sig)
        if e is not None:
            if e.callable_grid:
                meta = dict(zip(self.arg_names, args))
                if kwargs:
                    meta.update(kwargs)
                meta.update(e.chosen)
                ok = grid(meta) == e.grid
            else:
                ok = grid == e.grid
            if ok:
                r = e.on(current_stream(e.ordinal))
                st = self._launch(e.kn, e.problem, e.bufs, e.nbufs, r[0], r[1])
                if st:
                    raise _lib.error(st, r[3])
                self.best_config = e.best
                return
        with self._lock:
            self._slow(sig, grid, args, kwargs)

    # ---- the first call of a signature -------------------------------------------------------
    def _configs(self, call, kwargs):
        """Triton's prune_configs: early_config_prune, then perf_model's top_k."""
        import triton
        configs = self.configs or [triton.Config({}, num_warps=4, num_stages=3, num_ctas=1)]
        nargs = {k: v for k, v in call.bound.items() if k not in kwargs}
        if self.early_config_prune:
            configs = self.early_config_prune(configs, nargs, **kwargs)
            if not configs:
                raise _spec.SpecError("early_config_prune returned no config")
        if self.perf_model:
            k = self.configs_top_k
            if isinstance(k, float) and k <= 1.0:
                k = int(len(self.configs) * k)
            elif not isinstance(k, int):
                raise TypeError("top_k must be an int or a float <= 1.0")
            if len(configs) > k:
                est = [(self.perf_model(**nargs, **kwargs, **c.all_kwargs()), i)
                       for i, c in enumerate(configs)]
                configs = [configs[i] for _, i in sorted(est)[:k]]
        out = []
        for c in configs:
            d = _spec.config_dict(c)
            if d not in out:
                out.append(d)
        return out

    def _kernel(self, call, configs, grid, ordinal):
        outputs = self.outputs
        if outputs is None:  # the source's stores, found once per set of tensor arguments
            names = tuple(call.buffers)
            if names not in self._outputs:
                self._outputs[names] = _spec.written_pointers(self.jit, list(names))
            outputs = self._outputs[names]
        spec = _spec.build(self.jit, configs, call, self.keys, grid, self.reset_to_zero,
                           self.restore_value, outputs, self.model)
        ident = _spec.identity(spec)
        k = self._kernels.get((ident, ordinal))
        if k is None:
            dev = _device(ordinal)
            kd = _load_spec(spec)
            try:
                ref = _first_valid(kd, spec["problem"], spec["dtypes"][0], dev, configs)
            finally:
                _lib.lib().bt_kdesc_destroy(kd)
            spec["reference"] = {"config": ref}
            k = self._kernels[(ident, ordinal)] = _Kernel(spec, dev, self._topts)
        return k

    def _wrap(self, dev, t, dtype):
        L, diag = _lib.lib(), _lib.Diag()
        ptr, nbytes = t.data_ptr(), t.numel() * t.element_size()
        key = (dev.value, ptr, nbytes, dtype)
        w = self._wrappers.get(key)
        if w is None:
            w = ctypes.c_void_p()
            _lib.check(L.bt_buffer_wrap(dev, ptr, nbytes, ctypes.byref(w), ctypes.byref(diag)),
                       diag)
            _lib.check(L.bt_buffer_set_dtype(w, dtype.encode(), ctypes.byref(diag)), diag)
            self._wrappers[key] = w
        return w

    def _forget_entries(self):
        """Starts the call cache over. A launch of another thread may still be using an entry
        (ctypes lets go of the GIL during the call), so the entries and wrappers forgotten now
        are destroyed at the next start-over, 256 new calls later."""
        L = _lib.lib()
        old_entries, old_wrappers = self._retired
        for e in old_entries:
            L.bt_problem_destroy(e.problem)
        for w in old_wrappers:
            L.bt_buffer_destroy(w)
        self._retired = (list(self._entries.values()), list(self._wrappers.values()))
        self._entries, self._wrappers = {}, {}

    def _tune_options(self):
        L = _lib.lib()
        if self._topts is None:
            warmup, rep, graph = self._bench_opts
            o = ctypes.c_void_p()
            _lib.check(L.bt_tune_options_create(ctypes.byref(o)), _lib.Diag())
            if warmup is not None:
                L.bt_tune_options_set_warmup_ms(o, float(warmup))
            if rep is not None:
                L.bt_tune_options_set_rep_ms(o, float(rep))
            if graph:
                L.bt_tune_options_set_graph(o, 1)
            # the hot path's function: no argtypes (its arguments are ctypes objects already,
            # so nothing is converted)
            launch = L["bt_kernel_launch_ex"]
            launch.restype = ctypes.c_int
            self._topts, self._launch = o, launch
        return self._topts

    def _slow(self, sig, grid, args, kwargs):
        t0 = time.perf_counter()
        L, diag = _lib.lib(), _lib.Diag()
        self._tune_options()
        call = _spec.Call(self.jit, self._config_names(), args, kwargs)
        if not call.buffers:
            raise _spec.SpecError(f"{self.jit.fn.__name__}: no tensor argument to launch on")
        ordinal = _ordinal(next(iter(call.buffers.values())))
        configs = self._configs(call, kwargs)
        kernel = self._kernel(call, configs, grid, ordinal)
        if len(self._entries) >= _MAX_ENTRIES:
            self._forget_entries()
        bufs = [self._wrap(kernel.dev, call.buffers[n], call.dtype_of(n))
                for n in self.arg_names if n in call.buffers]
        p = ctypes.c_void_p()
        _lib.check(L.bt_problem_create(kernel.kd, ctypes.byref(p)), diag)
        e = _Entry(kernel, p, bufs, ordinal)
        try:
            for n, v in call.problem(self.keys).items():
                _lib.check(L.bt_problem_set(p, n.encode(), v, ctypes.byref(diag)), diag)
            _lib.check(L.bt_problem_set_dtype(p, kernel.spec["dtypes"][0].encode(),
                                              ctypes.byref(diag)), diag)
            self._first_launch(kernel, e, call, t0)
        except BaseException:
            L.bt_problem_destroy(p)
            raise
        e.callable_grid = callable(grid)
        meta = dict(call.bound)
        meta.update(e.chosen)
        _grid.concrete(grid, meta)  # checked once: 1 to 3 ints
        e.grid = grid(meta) if e.callable_grid else grid
        self._entries[sig] = e

    def _config_names(self):
        names = set()
        for c in self.configs or []:
            names.update(c.kwargs)
        return names

    def _lookup(self, e):
        """(source, config) of the key in memory, the store or wisdom; None when nowhere."""
        L, diag, ch = _lib.lib(), _lib.Diag(), ctypes.c_void_p()
        st = L.bt_kernel_lookup(e.kn, e.problem, 1, ctypes.byref(ch), ctypes.byref(diag))
        if st == _lib.BT_NOT_FOUND:
            return None
        _lib.check(st, diag)
        try:
            return (_lib.SOURCE_NAMES[L.bt_choice_source(ch)],
                    json.loads(L.bt_choice_config_json(ch).decode()))
        finally:
            L.bt_choice_destroy(ch)

    def _first_launch(self, kernel, e, call, t_call):
        L = _lib.lib()
        before = self._lookup(e)
        if before is None:  # it will tune: Triton's reset_to_zero before the winner's launch
            for n in self.reset_to_zero:
                call.buffers[n].zero_()
        tunes = L.bt_kernel_tune_count(e.kn)
        t0 = time.perf_counter()
        r = e.on(current_stream(e.ordinal))
        st = self._launch(e.kn, e.problem, e.bufs, e.nbufs, r[0], r[1])
        if st:
            raise _lib.error(st, r[3])
        elapsed = time.perf_counter() - t0
        tuned = L.bt_kernel_tune_count(e.kn) > tunes
        # found before the launch and not tuned by it: that config is what ran
        source, chosen = (before if before is not None and not tuned
                          else self._lookup(e) or (None, None))
        if chosen is None:
            raise _lib.BlocktuneError(-21, "BT_INTERNAL", "launched, but the kernel has no "
                                      "config for the key")
        e.source = "tuned" if tuned else (before or (source,))[0]
        e.chosen = chosen
        e.best = _triton_config(chosen)
        self.best_config = e.best
        if tuned:
            self.bench_time = elapsed
        if os.environ.get("BLOCKTUNE_LOG", "0") not in ("", "0"):
            key = tuple(call.bound[k] for k in self.keys if k in call.bound) + tuple(
                str(t.dtype) for t in call.buffers.values())
            how = f"finished after {elapsed:.2f}s" if tuned else f"found in {e.source}"
            how += f" (the call's set-up before it: {t0 - t_call:.3f}s)"
            print(f"blocktune autotuning for function {self.jit.fn.__name__},\n"
                  f"with key as {key},\n{how},\nbest config selected: "
                  + ", ".join(f"{k}: {v}" for k, v in chosen.items()) + ";", file=sys.stdout)


def _triton_config(chosen):
    """The chosen config as a triton.Config (Triton's best_config)."""
    import triton
    kw = {k: v for k, v in chosen.items() if k not in _spec.OPTIONS}
    opts = {k: v for k, v in chosen.items() if k in _spec.OPTIONS}
    return triton.Config(kw, **opts)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=False, outputs=None, model=None):
    """triton.autotune's decorator, tuned and dispatched by libblocktune. The arguments mean
    what they mean to triton.autotune; cache_results is always on (the store). Two more:
    outputs (the tensors to verify; default: those the source stores to) and model (a spec's
    "model" object, e.g. the GEMM shared-memory formula, for pruning before compiling).
    pre_hook, post_hook and do_bench are refused: blocktune runs and times in C."""
    if pre_hook is not None or post_hook is not None:
        raise _spec.SpecError("pre_hook/post_hook: blocktune runs the configs in C; use "
                              "reset_to_zero / restore_value")
    del cache_results

    def decorator(fn):
        return Autotuner(fn, configs, key, reset_to_zero=reset_to_zero,
                         restore_value=restore_value, prune_configs_by=prune_configs_by,
                         warmup=warmup, rep=rep, use_cuda_graph=use_cuda_graph,
                         do_bench=do_bench, outputs=outputs, model=model)
    return decorator
