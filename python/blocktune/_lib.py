# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""The ctypes binding of libblocktune's C API (include/blocktune.h, API 0.2) that the decorator
and blocktune.configs use: finding and loading the library, the signatures of the calls, bt_diag
and bt_launch_options, and BlocktuneError for a failed call. Nothing here knows Triton."""
import ctypes
import ctypes.util
import os
import threading

c_int, c_int64, c_size_t, c_void_p, c_char_p = (ctypes.c_int, ctypes.c_int64, ctypes.c_size_t,
                                               ctypes.c_void_p, ctypes.c_char_p)

BT_OK = 0
BT_NOT_FOUND = -4
BT_UNSUPPORTED = -7
BT_MODE_WISDOM_ONLY = 1
SOURCE_NAMES = ["memory", "store", "user wisdom", "shipped wisdom", "nearest size",
                "same architecture", "model", "tuned"]


class Diag(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("file", ctypes.c_char * 512), ("line", c_int),
                ("column", c_int), ("field", ctypes.c_char * 128), ("msg", ctypes.c_char * 1024)]

    def __init__(self):
        super().__init__()
        self.size = ctypes.sizeof(Diag)


class LaunchOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("stream", c_void_p), ("allow_tune_in_place", c_int),
                ("no_tune", c_int)]

    def __init__(self):
        super().__init__()
        self.size = ctypes.sizeof(LaunchOptions)


class BlocktuneError(RuntimeError):
    """A libblocktune call failed: `status` is the bt_status (negative), `name` its name
    ("BT_UNSUPPORTED") and the message the call's diagnostic."""

    def __init__(self, status, name, message):
        super().__init__(f"{name}: {message}")
        self.status, self.name, self.message = status, name, message


# name: (restype, argtypes)
_SIGNATURES = {
    "bt_version": (c_char_p, []),
    "bt_err_name": (c_char_p, [c_int]),
    "bt_strerror": (c_char_p, [c_int]),
    "bt_diag_format": (c_char_p, [ctypes.POINTER(Diag), c_char_p, c_size_t]),
    "bt_kdesc_load_string": (c_int, [c_char_p, c_char_p, ctypes.POINTER(c_void_p),
                                     ctypes.POINTER(Diag)]),
    "bt_kdesc_builtin": (c_int, [c_char_p, ctypes.POINTER(c_void_p), ctypes.POINTER(Diag)]),
    "bt_kdesc_destroy": (None, [c_void_p]),
    "bt_problem_create": (c_int, [c_void_p, ctypes.POINTER(c_void_p)]),
    "bt_problem_destroy": (None, [c_void_p]),
    "bt_problem_set": (c_int, [c_void_p, c_char_p, c_int64, ctypes.POINTER(Diag)]),
    "bt_problem_set_dtype": (c_int, [c_void_p, c_char_p, ctypes.POINTER(Diag)]),
    "bt_gpudb_load_default": (c_int, [ctypes.POINTER(c_void_p), ctypes.POINTER(Diag)]),
    "bt_gpudb_find": (c_int, [c_void_p, c_char_p, ctypes.POINTER(c_void_p), ctypes.POINTER(Diag)]),
    "bt_gpudb_destroy": (None, [c_void_p]),
    "bt_plan_create": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p, ctypes.POINTER(c_void_p),
                               ctypes.POINTER(Diag)]),
    "bt_plan_write_json": (c_int, [c_void_p, c_void_p]),
    "bt_plan_destroy": (None, [c_void_p]),
    "bt_device_wrap_cuda": (c_int, [c_int, c_void_p, ctypes.POINTER(c_void_p),
                                    ctypes.POINTER(Diag)]),
    "bt_device_get_info": (c_void_p, [c_void_p]),
    "bt_device_destroy": (None, [c_void_p]),
    "bt_buffer_wrap": (c_int, [c_void_p, ctypes.c_uint64, c_size_t, ctypes.POINTER(c_void_p),
                               ctypes.POINTER(Diag)]),
    "bt_buffer_set_dtype": (c_int, [c_void_p, c_char_p, ctypes.POINTER(Diag)]),
    "bt_buffer_destroy": (None, [c_void_p]),
    "bt_tune_options_create": (c_int, [ctypes.POINTER(c_void_p)]),
    "bt_tune_options_destroy": (None, [c_void_p]),
    "bt_tune_options_set_warmup_ms": (c_int, [c_void_p, ctypes.c_double]),
    "bt_tune_options_set_rep_ms": (c_int, [c_void_p, ctypes.c_double]),
    "bt_tune_options_set_graph": (c_int, [c_void_p, c_int]),
    "bt_kernel_create": (c_int, [c_void_p, c_void_p, ctypes.POINTER(c_void_p),
                                 ctypes.POINTER(Diag)]),
    "bt_kernel_destroy": (None, [c_void_p]),
    "bt_kernel_set_options": (None, [c_void_p, c_void_p]),
    "bt_kernel_tune_count": (c_int, [c_void_p]),
    "bt_kernel_launch_ex": (c_int, [c_void_p, c_void_p, ctypes.POINTER(c_void_p), c_int,
                                    ctypes.POINTER(LaunchOptions), ctypes.POINTER(Diag)]),
    "bt_kernel_lookup": (c_int, [c_void_p, c_void_p, c_int, ctypes.POINTER(c_void_p),
                                 ctypes.POINTER(Diag)]),
    "bt_choice_source": (c_int, [c_void_p]),
    "bt_choice_config_json": (c_char_p, [c_void_p]),
    "bt_choice_destroy": (None, [c_void_p]),
    "bt_store_open": (c_int, [c_char_p, ctypes.c_uint, ctypes.POINTER(c_void_p),
                              ctypes.POINTER(Diag)]),
    "bt_store_counts": (c_int, [c_void_p, ctypes.POINTER(c_int64), ctypes.POINTER(c_int64),
                                ctypes.POINTER(Diag)]),
    "bt_store_destroy": (None, [c_void_p]),
}

_lib = None
_lock = threading.Lock()
_after_load = []  # fn(handle) to run once the library is loaded


def after_load(fn):
    """Runs fn(handle) when the library is loaded (at once when it is)."""
    with _lock:
        if _lib is None:
            _after_load.append(fn)
            return
    fn(_lib)


def _candidates():
    env = os.environ.get("BLOCKTUNE_LIBRARY")
    if env:
        return [env]  # named: that one or an error, never another
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "libblocktune.so")]  # a wheel that bundles it
    found = ctypes.util.find_library("blocktune")
    if found:
        out.append(found)
    out.append(os.path.join(here, "..", "..", "build", "libblocktune.so"))  # the source tree
    return out


def lib():
    """libblocktune, loaded once: $BLOCKTUNE_LIBRARY, else one beside the package, else the one
    the system finds (cmake --install), else the source tree's build/."""
    global _lib
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            tried = []
            for path in _candidates():
                try:
                    handle = ctypes.CDLL(path)
                except OSError as e:
                    tried.append(f"{path}: {e}")
                    continue
                for name, (res, args) in _SIGNATURES.items():
                    f = getattr(handle, name)
                    f.restype, f.argtypes = res, args
                for fn in _after_load:
                    fn(handle)
                _lib = handle
                break
            if _lib is None:
                raise BlocktuneError(-8, "BT_NO_BACKEND",
                                     "cannot load libblocktune (set BLOCKTUNE_LIBRARY to its path, "
                                     "or install it with cmake --install); tried: "
                                     + "; ".join(tried))
    return _lib


def error(status, diag):
    """A BlocktuneError for a failed call, with its diag as one line."""
    L = lib()
    buf = ctypes.create_string_buffer(2048)
    text = L.bt_diag_format(ctypes.byref(diag), buf, len(buf)).decode(errors="replace")
    return BlocktuneError(status, L.bt_err_name(status).decode(),
                          text or L.bt_strerror(status).decode())


def check(status, diag):
    if status != BT_OK:
        raise error(status, diag)


def write_json(writer, obj):
    """What a bt_*_write_json(obj, FILE *) call writes, parsed (through open_memstream)."""
    import json
    libc = ctypes.CDLL(None)
    libc.open_memstream.restype = c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(c_void_p), ctypes.POINTER(c_size_t)]
    libc.fclose.argtypes = [c_void_p]
    libc.free.argtypes = [c_void_p]
    buf, size = c_void_p(), c_size_t()
    f = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
    if not f:
        raise MemoryError("open_memstream failed")
    st = writer(obj, f)
    libc.fclose(f)
    try:
        text = ctypes.string_at(buf, size.value).decode()
    finally:
        libc.free(buf)
    if st != BT_OK:
        raise error(st, Diag())
    return json.loads(text)


def store_counts(path=None):
    """(measurements, winners) rows of the results store (the default one when path is None);
    (0, 0) when there is no store yet."""
    L, diag, st = lib(), Diag(), c_void_p()
    rc = L.bt_store_open(path.encode() if path else None, 1, ctypes.byref(st), ctypes.byref(diag))
    if rc == BT_NOT_FOUND:
        return 0, 0
    check(rc, diag)
    try:
        m, w = c_int64(), c_int64()
        check(L.bt_store_counts(st, ctypes.byref(m), ctypes.byref(w), ctypes.byref(diag)), diag)
        return m.value, w.value
    finally:
        L.bt_store_destroy(st)
