#!/usr/bin/env bash
# triton.sh — the Triton compile pool's tests (tests/python/test_triton_compile.py): Triton
# compiles examples/triton/ for sm_90 with no GPU; metadata, typed errors, the cache, the pool.
# Triton comes from $BT_TRITON_PYTHON (./dev.sh test installs it and sets it), else python3.
# Without it this test is SKIPPED (exit 77), saying so; with $CI set it fails instead.
set -u
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
py=""
for c in "${BT_TRITON_PYTHON:-}" python3; do
    if [ -n "$c" ] && "$c" -c "import triton" 2>/dev/null; then py="$c"; break; fi
done
if [ -z "$py" ]; then
    msg="Triton (python: triton) is not installed; ./dev.sh test installs it, or set BT_TRITON_PYTHON"
    if [ -n "${CI:-}" ]; then echo "FAIL: $msg"; exit 1; fi
    echo "SKIPPED: $msg"
    exit 77
fi
echo "python: $py (triton $("$py" -c 'import triton; print(triton.__version__)'))"
cd "$src" && exec "$py" -m unittest -v tests/python/test_triton_compile.py
