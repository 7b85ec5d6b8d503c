#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# triton.sh — the Triton compile pool's tests (tests/python/test_triton_compile.py): Triton
# compiles examples/triton/ for sm_90 with no GPU; metadata, typed errors, the cache, the pool.
# Triton comes from $BT_TRITON_PYTHON (./dev.sh test installs it and sets it), else python3.
# Without it this test is SKIPPED (exit 77), saying so; with $CI set it fails instead.
set -u
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$src/tests/need_python.sh"
need_python BT_TRITON_PYTHON triton \
    "Triton (python: triton) is not installed; ./dev.sh test installs it, or set BT_TRITON_PYTHON"
echo "python: $py (triton $("$py" -c 'import triton; print(triton.__version__)'))"
cd "$src" && exec "$py" -m unittest -v tests/python/test_triton_compile.py
