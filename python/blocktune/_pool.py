# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""The Triton compile pool started from this interpreter (bt_triton_pool_starter, docs/triton.md
"The compile pool"): when libblocktune first needs a Triton compile it calls start(), which forks
this process, where Triton and its compiler are already imported, and the fork serves the pool
(triton_compile.run_pool) on the socket the library gave, forking its workers from itself. That
saves the seconds of a new Python that starts and imports Triton (the library's default). The
fork touches nothing of this process's: it never uses CUDA or torch, points every descriptor it
inherited at /dev/null, replaces the standard streams' objects (whatever they buffered is never
written) and ends with os._exit. BLOCKTUNE_POOL_FORK=0 keeps the library's own spawn."""
import ctypes
import os
import warnings

START_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
_kept = []  # the callback (ctypes must not collect it)
started = []  # the pids of the pools start() forked


def install(L):
    """Makes L (libblocktune) start its Triton compile pool with start()."""
    if os.environ.get("BLOCKTUNE_POOL_FORK", "1") == "0":
        return
    try:
        L.bt_triton_pool_starter.restype = None
    except AttributeError:  # a libblocktune older than the call: it spawns its pool
        return
    L.bt_triton_pool_starter.argtypes = [START_FN, ctypes.c_void_p]
    cb = START_FN(start)
    _kept.append(cb)
    L.bt_triton_pool_starter(cb, None)


def start(fd, workers, _ctx):
    """The pool's process: a fork of this one serving on fd. Its pid, or -1 (the library then
    spawns one)."""
    try:
        with warnings.catch_warnings():  # 3.12+ warns of fork in a process with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        return -1
    if pid == 0:
        serve(fd, workers)  # never returns
    started.append(pid)
    return pid


def serve(fd, workers):
    rc = 1
    try:
        from . import triton_compile
        triton_compile.become_child(fd, fd)
        rc = triton_compile.run_pool(workers, events=True)
    except BaseException:
        try:
            import traceback
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        os._exit(rc)
