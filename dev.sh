#!/usr/bin/env bash
# dev.sh — one entry point that sets up a fresh Debian 12 machine, builds and runs blocktune.
#
#   ./dev.sh run [blocktune args...]   install what is missing, build, run build/blocktune ARGS
#   ./dev.sh test                      install, build plain + ASan/UBSan, run ctest in both, then
#                                      run each libFuzzer target for 20 s (tests/fuzz/run.sh)
#   ./dev.sh build                     install and build (plain) only
#
# Packages come from Debian (apt-get, only when run as root and only what is missing): a C
# compiler, CMake, pkg-config, jansson, SQLite, zlib, cmocka, and OpenCL (ICD loader, headers, PoCL so
# that the OpenCL backend runs on the CPU), python3-venv, clang with its libFuzzer runtime
# (libclang-rt-14-dev: a recommendation of clang on Debian 12, which --no-install-recommends
# leaves out) for the fuzz targets, and chromium-headless-shell (Chromium without a window, for
# the HTML report's browser test tests/cli/report_browser.sh: about 100 MB to download with
# chromium-common, 300 MB installed, ~40 s to install). CUDA is optional and found at run time.
#
# `test` also installs Kernel Tuner from PyPI (pip, a pinned version, into a virtual environment
# cached in $BT_KT_VENV, default ~/.cache/blocktune-dev/kernel_tuner-<version>; once) for the
# interoperability test cli_kt_python: Kernel Tuner's own simulation mode on our export-kt files,
# and our T4 output validated by its jsonschema. Without network that test is SKIPPED, visibly;
# when $CI is set an install that fails fails the run instead.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

packages=(build-essential cmake pkg-config libjansson-dev libsqlite3-dev libcmocka-dev zlib1g-dev
          ocl-icd-libopencl1 opencl-c-headers pocl-opencl-icd python3-venv
          clang libclang-rt-14-dev chromium-headless-shell)
kt_version=1.5.0
kt_venv="${BT_KT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/blocktune-dev/kernel_tuner-$kt_version}"

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

# Kernel Tuner for tests/cli/kt_python.sh, which finds it through BT_KT_PYTHON.
kernel_tuner() {
    if ! "$kt_venv/bin/python" -c "import kernel_tuner, jsonschema" 2>/dev/null; then
        echo "dev.sh: installing kernel_tuner==$kt_version from PyPI into $kt_venv (once)" >&2
        rm -rf "$kt_venv"
        if ! { python3 -m venv "$kt_venv" &&
               "$kt_venv/bin/pip" install -q --disable-pip-version-check \
                   "kernel_tuner==$kt_version" >&2; }; then
            rm -rf "$kt_venv"
            if [ -n "${CI:-}" ]; then
                echo "dev.sh: CI needs kernel_tuner for cli_kt_python, and pip could not install it" >&2
                exit 1
            fi
            echo "dev.sh: WARNING: kernel_tuner not installed: cli_kt_python will be SKIPPED" >&2
            return 0
        fi
    fi
    export BT_KT_PYTHON="$kt_venv/bin/python"
}

build() { # build DIR [cmake args...]
    local dir="$1"; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBT_WERROR=ON "$@" >/dev/null
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
        build build
        build build-asan -DBT_SANITIZE=ON
        echo "== tests (plain build) =="
        (cd build && ctest --output-on-failure -j "$(nproc)")
        echo "== tests (ASan + UBSan build) =="
        (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
            ctest --output-on-failure -j "$(nproc)")
        echo "== fuzz smoke (each target 20 s; docs/fuzzing.md) =="
        tests/fuzz/run.sh all 20 ;;
    *)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 2 ;;
esac
