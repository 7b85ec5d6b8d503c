#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# autotune.sh — @blocktune.autotune and blocktune.configs (tests/python/test_autotune.py) on the
# mock CUDA driver with fake tensors: no GPU, no torch. Needs the build's libblocktune and
# libbt_mock_cuda ($BT_BUILD_DIR, set by ctest; else build/) and Triton ($BT_TRITON_PYTHON, else
# python3). Without Triton this test is SKIPPED (exit 77), saying so; with $CI set it fails.
set -u
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
build="${BT_BUILD_DIR:-$src/build}"
. "$src/tests/need_python.sh"
need_python BT_TRITON_PYTHON triton \
    "Triton (python: triton) is not installed; ./dev.sh test installs it, or set BT_TRITON_PYTHON"
for f in libblocktune.so libbt_mock_cuda.so; do
    if [ ! -e "$build/$f" ]; then echo "FAIL: $build/$f is not built"; exit 1; fi
done
export BLOCKTUNE_LIBRARY="$build/libblocktune.so" BLOCKTUNE_CUDA_LIBRARY="$build/libbt_mock_cuda.so"
export BLOCKTUNE_PYTHON="$py" BLOCKTUNE_CACHE_DIR="${BLOCKTUNE_CACHE_DIR:-$(mktemp -d)}"
# a fresh store (the second-process check) and kernel cache (the Triton end-to-end test compiles)
rm -rf "$BLOCKTUNE_CACHE_DIR" && mkdir -p "$BLOCKTUNE_CACHE_DIR"
echo "python: $py (triton $("$py" -c 'import triton; print(triton.__version__)')); library: $BLOCKTUNE_LIBRARY"
cd "$src" && exec "$py" -m unittest -v tests/python/test_autotune.py
