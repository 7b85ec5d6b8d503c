# SPDX-License-Identifier: Apache-2.0
# check.bash — sourced by the CLI tests of tests/cli/ (not a test itself: the tests are the *.sh
# files there): check NAME COND... runs COND and prints "ok   NAME" or "FAIL NAME", setting
# fail=1 on a failure (the script sets fail=0 first and exits with $fail).
check() {
    local name="$1"; shift
    if "$@"; then echo "ok   $name"; else echo "FAIL $name"; fail=1; fi
}
