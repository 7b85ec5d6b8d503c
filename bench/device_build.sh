#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# device_build.sh — makes what a device call carries, here on the development machine:
#   build-dev/    the tree built as ./dev.sh builds it (RelWithDebInfo, -DBT_MPI=ON), then without
#                 debug sections, static libraries, CMake's own files, generated sources and the
#                 test programs that need no GPU (all but $BT_DEVICE_TESTS, default test_cuda
#                 test_engine test_embed_cuda test_devcmp), so that it fits the device tool's
#                 64 MiB beside the tracked files (about 39 MB, bench/results most of it; build/
#                 is 126 MB)
#   .carry/lib/   every shared library those binaries load but glibc's own (cmocka, Open MPI and
#                 its dependencies, jansson, SQLite, zlib): the H200 machine has no -dev packages
#                 and no Open MPI
# A device call then carries build-dev and .carry and begins with `bash bench/device_build.sh
# link`, which points build/ at build-dev/ (the binaries' run paths name /work/main/build-dev,
# and bench/device_env.sh makes /work/main the repository root there).
#   bash bench/device_build.sh         build here (cmake --build build-dev), strip, collect libraries
#   bash bench/device_build.sh link    on the device machine: build -> build-dev
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [ "${1:-}" = link ]; then
    rm -rf build && ln -s build-dev build
    mkdir -p /work && { [ -e /work/main ] || ln -s "$PWD" /work/main; }
    exit 0
fi
[ "$PWD" = /work/main ] || { echo "device_build.sh: run it in /work/main (the path the binaries name)" >&2; exit 1; }
cmake -S . -B build-dev -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBT_WERROR=ON -DBT_MPI=ON >/dev/null
cmake --build build-dev -j "$(nproc)" >/dev/null
keep=" ${BT_DEVICE_TESTS:-test_cuda test_engine test_embed_cuda test_devcmp} "
rm -rf build-dev/CMakeFiles build-dev/*.a build-dev/examples/*/CMakeFiles build-dev/generated \
       build-dev/abi-* build-dev/abi_consumer_*
for t in build-dev/test_*; do
    case $keep in *" ${t#build-dev/} "*) ;; *) rm -f "$t" ;; esac
done
find build-dev -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
    while IFS= read -r -d '' f; do
        file -b "$f" | grep -q ELF && strip --strip-debug "$f"
    done
mkdir -p .carry/lib
find build-dev -type f \( -perm -u+x -o -name '*.so*' \) -print0 | xargs -0 ldd 2>/dev/null |
    awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' | grep -v build-dev |
    while read -r so; do cp -L "$so" .carry/lib/; done
du -sh build-dev .carry/lib
echo "tracked: $(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1) bytes; the device tool takes 67108864 in all"
