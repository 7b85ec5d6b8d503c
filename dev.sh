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
# that the OpenCL backend runs on the CPU), and clang with its libFuzzer runtime (libclang-rt-14-dev:
# a recommendation of clang on Debian 12, which --no-install-recommends leaves out) for the fuzz
# targets. CUDA is optional and found at run time.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

packages=(build-essential cmake pkg-config libjansson-dev libsqlite3-dev libcmocka-dev zlib1g-dev
          ocl-icd-libopencl1 opencl-c-headers pocl-opencl-icd clang libclang-rt-14-dev)

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

build() { # build DIR [cmake args...]
    local dir="$1"; shift
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
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
