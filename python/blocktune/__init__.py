# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""blocktune's Python side: @blocktune.autotune (triton.autotune's decorator, tuned and
dispatched by libblocktune through ctypes), blocktune.configs (the config lists blocktune's model
proposes) and the Triton compile pool the C engine runs (python3 -m blocktune.triton_compile).
docs/triton.md and python/README.md. Importing it loads nothing: libblocktune is loaded at the
first call that needs it."""
from ._autotuner import Autotuner, autotune, set_current_stream  # noqa: F401
from ._lib import BlocktuneError  # noqa: F401
from ._spec import SpecError  # noqa: F401
from . import configs  # noqa: F401
