# SPDX-License-Identifier: Apache-2.0
# need_python.sh — sourced by the tests that run a Python package (tests/cli/kt_python.sh,
# tests/python/triton.sh):
#   need_python VAR "IMPORTS" "MESSAGE"
# sets py to the python named by $VAR, else python3, the first that can `import IMPORTS`. With
# neither it prints "SKIPPED: MESSAGE" and exits 77 (ctest's skip), or, with $CI set, prints
# "FAIL: MESSAGE" and exits 1: CI installs what its tests need.
need_python() {
    local var="$1" imports="$2" msg="$3" c
    py=""
    for c in "${!var:-}" python3; do
        if [ -n "$c" ] && "$c" -c "import $imports" 2>/dev/null; then py="$c"; return 0; fi
    done
    if [ -n "${CI:-}" ]; then echo "FAIL: $msg"; exit 1; fi
    echo "SKIPPED: $msg"
    exit 77
}
