# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""blocktune's Python side: @blocktune.autotune (triton.autotune's decorator, tuned and
dispatched by libblocktune through ctypes), blocktune.configs (the config lists blocktune's model
proposes) and the Triton compile pool the C engine runs (python3 -m blocktune.triton_compile).
docs/triton.md and python/README.md. Importing it loads nothing: the names below are imported at
their first use (the compile pool's processes, which import this package too, need none of them),
and libblocktune at the first call that needs it."""
import importlib

# name -> the module that defines it
_LAZY = {"Autotuner": "_autotuner", "autotune": "_autotuner", "set_current_stream": "_autotuner",
         "BlocktuneError": "_lib", "SpecError": "_spec", "configs": None}
__all__ = sorted(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'blocktune' has no attribute {name!r}")
    module = importlib.import_module(f".{_LAZY[name] or name}", __name__)
    value = module if _LAZY[name] is None else getattr(module, name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
