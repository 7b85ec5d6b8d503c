# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""blocktune's Python side. So far: the Triton compile pool the C engine runs
(python3 -m blocktune.triton_compile; docs/triton.md)."""
