#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# dev.sh — one entry point that sets up a fresh Debian 12 machine, builds and runs blocktune.
#
#   ./dev.sh run [blocktune args...]   install what is missing, build, run build/blocktune ARGS
#   ./dev.sh test                      install, build plain + ASan/UBSan, run ctest in both, then
#                                      run each libFuzzer target for 5 s (tests/fuzz/run.sh)
#   ./dev.sh build                     install and build (plain) only
#
# Packages come from Debian (apt-get, only when run as root and only what is missing): a C
# compiler, CMake, pkg-config, jansson, SQLite, zlib, cmocka, and OpenCL (ICD loader, headers, PoCL so
# that the OpenCL backend runs on the CPU), python3-venv, clang with its libFuzzer runtime
# (libclang-rt-14-dev: a recommendation of clang on Debian 12, which --no-install-recommends
# leaves out) for the fuzz targets, and chromium-headless-shell (Chromium without a window, for
# the HTML report's browser test tests/cli/report_browser.sh: about 100 MB to download with
# chromium-common, 300 MB installed, ~40 s to install), Open MPI (openmpi-bin libopenmpi-dev: the
# builds here are -DBT_MPI=ON, docs/mpi.md; tests/cli/mpi.sh runs 2 to 4 ranks on PoCL) and the
# sqlite3 shell that test reads the store with. CUDA is optional and found at run time.
#
# `test` also installs Kernel Tuner from PyPI (pip, a pinned version, into a virtual environment
# cached in $BT_KT_VENV, default ~/.cache/blocktune-dev/kernel_tuner-<version>; once) for the
# interoperability test cli_kt_python: Kernel Tuner's own simulation mode on our export-kt files,
# and our T4 output validated by its jsonschema. It installs Triton the same way ($BT_TRITON_VENV,
# default ~/.cache/blocktune-dev/triton-<version>) for python_triton: Triton compiling
# examples/triton/ for sm_90 with no GPU (docs/triton.md). Without network those tests are
# SKIPPED, visibly; when $CI is set an install that fails fails the run instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

packages=(build-essential cmake pkg-config libjansson-dev libsqlite3-dev libcmocka-dev zlib1g-dev
          ocl-icd-libopencl1 opencl-c-headers pocl-opencl-icd python3-venv
          clang libclang-rt-14-dev chromium-headless-shell openmpi-bin libopenmpi-dev sqlite3)
kt_version=1.5.0
kt_venv="${BT_KT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/blocktune-dev/kernel_tuner-$kt_version}"
triton_version=3.6.0 # the H200 machine's version; docs/triton.md's calling convention is 3.6's
triton_venv="${BT_TRITON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/blocktune-dev/triton-$triton_version}"

setup() {
    local missing=()
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if ((${#missing[@]})); then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "dev.sh: installing ${missing[*]}" >&2
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
        else
            echo "dev.sh: missing packages: ${missing[*]} (run as root to install them)" >&2
            exit 1
        fi
    fi
}

# venv_install NAME DIR IMPORT PACKAGE TEST: PACKAGE from PyPI into the virtual environment DIR
# unless its python can already import IMPORT; 1 when that fails outside CI (TEST will skip).
venv_install() {
    local name="$1" venv="$2" import="$3" package="$4" test="$5"
    "$venv/bin/python" -c "import $import" 2>/dev/null && return 0
    echo "dev.sh: installing $package from PyPI into $venv (once)" >&2
    rm -rf "$venv"
    if python3 -m venv "$venv" &&
       "$venv/bin/pip" install -q --disable-pip-version-check "$package" >&2; then
        return 0
    fi
    rm -rf "$venv"
    if [ -n "${CI:-}" ]; then
        echo "dev.sh: CI needs $name for $test, and pip could not install it" >&2
        exit 1
    fi
    echo "dev.sh: WARNING: $name not installed: $test will be SKIPPED" >&2
    return 1
}

# Kernel Tuner for tests/cli/kt_python.sh, which finds it through BT_KT_PYTHON.
kernel_tuner() {
    if venv_install kernel_tuner "$kt_venv" "kernel_tuner, jsonschema" "kernel_tuner==$kt_version" \
        cli_kt_python; then
        export BT_KT_PYTHON="$kt_venv/bin/python"
    fi
}

# Triton for tests/python/triton.sh, which finds it through BT_TRITON_PYTHON.
triton() {
    if venv_install Triton "$triton_venv" triton "triton==$triton_version" python_triton; then
        export BT_TRITON_PYTHON="$triton_venv/bin/python"
    fi
}

build() { # build DIR [cmake args...]
    local dir="$1"; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBT_WERROR=ON -DBT_MPI=ON "$@" >/dev/null
    cmake --build "$dir" -j "$(nproc)"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
    run)
        setup
        build build >/dev/null
        exec ./build/blocktune "$@" ;;
    build)
        setup
        build build ;;
    test)
        setup
        kernel_tuner
        triton
        build build
        build build-asan -DBT_SANITIZE=ON
        # one test more than cores: many tests wait (timeouts, child processes, the browser),
        # so that the two suites fit ./dev.sh test's 10 minutes on two cores
        jobs=$(( $(nproc) + 1 ))
        echo "== tests (plain build) =="
        (cd build && ctest --output-on-failure -j "$jobs")
        echo "== tests (ASan + UBSan build) =="
        # LSan does not scan thread-local storage (its tracer crashes there now and then; see
        # tests/lsan.supp for why that is safe and what glibc keeps there)
        lsan="use_tls=0:suppressions=$PWD/tests/lsan.supp"
        (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
            LSAN_OPTIONS="$lsan" ctest --output-on-failure -j "$jobs")
        echo "== fuzz smoke (each target 5 s; docs/fuzzing.md) =="
        tests/fuzz/run.sh all 5 ;;
    *)
        sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'
        exit 2 ;;
esac
