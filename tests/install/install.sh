#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# install.sh BUILD_DIR SOURCE_DIR — `cmake --install` into a temporary prefix (the precompiled
# binaries the build made among what it installs), then a consumer outside the tree built
# against it four ways (pkg-config shared and --static, find_package shared and static), each
# run; then the prefix is moved and the consumer must read the moved install's own data folder
# (a row added to its gpus.json), not the configured one.
set -eu
if [ -n "${BT_SANITIZED:-}" ]; then
    # the consumers are an outside program's builds, without the sanitizer runtime that this
    # tree's library needs first in the link; what is checked is the packaging, which the plain
    # tree's run of this test checks
    echo "SKIPPED in the sanitizer tree: the consumers do not link ASan's runtime (the plain tree runs this test)"
    exit 77
fi
BUILD=$1
SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cmake --install "$BUILD" --prefix "$T/prefix" >/dev/null || fail "cmake --install"
P=$T/prefix
LIBDIR=$(dirname "$(find "$P" -name 'libblocktune.so' | head -1)")
[ -f "$LIBDIR/pkgconfig/blocktune.pc" ] || fail "no lib/pkgconfig/blocktune.pc"
[ -f "$LIBDIR/cmake/blocktune/blocktuneConfig.cmake" ] || fail "no CMake package"
grep -q "Requires.private: jansson sqlite3 zlib" "$LIBDIR/pkgconfig/blocktune.pc" || fail "pc lacks Requires.private"
# the shipped wisdom's binaries that the build made (BT_PRECOMPILE) are installed beside it
if [ -d "$BUILD/precompiled" ]; then
    nb=$(find "$BUILD/precompiled" -name '*.bin' | wc -l)
    ni=$(find "$P" -path '*/share/blocktune/precompiled/*.bin' | wc -l)
    [ "$nb" = "$ni" ] || fail "$nb precompiled binaries built, $ni installed"
fi
CC=${CC:-cc}
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
# pkg-config, shared
$CC -o "$T/pc_shared" "$SRC/tests/install/consumer.c" $(pkg-config --cflags --libs blocktune) \
    -Wl,-rpath,"$LIBDIR" || fail "pkg-config shared build"
"$T/pc_shared" | grep -q "plan ok" || fail "pkg-config shared run"
# pkg-config, static: the archive itself, and what --static says it needs
$CC -o "$T/pc_static" "$SRC/tests/install/consumer.c" $(pkg-config --cflags blocktune) \
    "$LIBDIR/libblocktune.a" $(pkg-config --static --libs-only-other --libs-only-l blocktune | sed 's/-lblocktune//') \
    || fail "pkg-config static build"
"$T/pc_static" | grep -q "plan ok" || fail "pkg-config static run"
# find_package
cmake -S "$SRC/tests/install" -B "$T/cm" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_BUILD_TYPE=Release >/dev/null \
    || fail "find_package configure"
cmake --build "$T/cm" >/dev/null || fail "find_package build"
"$T/cm/consumer_shared" | grep -q "plan ok" || fail "find_package shared run"
"$T/cm/consumer_static" | grep -q "plan ok" || fail "find_package static run"
# examples/engine against the install, with find_package and with pkg-config (shared and
# static): the OpenCL twin runs (PoCL here), the CUDA engine must compile and link
cmake -S "$SRC/examples/engine" -B "$T/eng" -DCMAKE_PREFIX_PATH="$P" >/dev/null || fail "examples/engine configure"
cmake --build "$T/eng" >/dev/null || fail "examples/engine build (find_package)"
[ -x "$T/eng/engine_opencl" ] || fail "examples/engine: engine_opencl not built (no OpenCL?)"
if [ -d /usr/local/cuda/include ]; then
    [ -x "$T/eng/engine_cuda" ] || fail "examples/engine: engine_cuda not built with a CUDA toolkit here"
fi
for v in shared static; do
    static=0
    [ $v = static ] && static=1
    mkdir -p "$T/eng_pc_$v"
    targets=$T/eng_pc_$v/engine_opencl
    [ -d /usr/local/cuda/include ] && targets="$targets $T/eng_pc_$v/engine_cuda"
    make -s -C "$SRC/examples/engine" -f Makefile.pkg-config STATIC=$static CC="$CC" \
        CFLAGS="-O2 -Wall -Wextra -Werror" O="$T/eng_pc_$v" $targets >/dev/null \
        || fail "examples/engine build (pkg-config, $v)"
done
"$T/eng_pc_static/engine_opencl" 8 64 32 > "$T/eng_static.out" 2>&1 || { rc=$?; [ $rc = 77 ] || { cat "$T/eng_static.out"; fail "engine_opencl (pkg-config, static)"; }; }
rc=0
"$T/eng/engine_opencl" > "$T/eng.out" 2>&1 || rc=$?
if [ $rc = 77 ]; then echo "install.sh: no OpenCL device, engine_opencl skipped"
elif [ $rc != 0 ]; then cat "$T/eng.out"; fail "engine_opencl"
else grep -q "engine_opencl: ok" "$T/eng.out" || fail "engine_opencl output"; cat "$T/eng.out"; fi

# the installed spec files work as files (their sources and preludes found beside them): a tune
# of the installed vector_add.json on the OpenCL device compiles and verifies
SPECS=$(dirname "$(find "$P" -path '*kernels/specs/vector_add.json' | head -1)")
if "$P/bin/blocktune" devices 2>/dev/null | grep -q "opencl:0"; then
    "$P/bin/blocktune" tune "$SPECS/vector_add.json" --device opencl:0 --n 4096 --budget 2 \
        --rep-ms 1 --warmup-ms 0 --store none > "$T/spec.out" 2>&1 || { cat "$T/spec.out"; fail "the installed vector_add.json as a file"; }
    grep -q "WINNER" "$T/spec.out" || { cat "$T/spec.out"; fail "the installed spec found no winner"; }
fi

# relocation: move the prefix; its own gpus.json (with a row only it has) must be read
mv "$P" "$T/moved"
M=$T/moved
MLIB=${LIBDIR/#$P/$M}
DATA=$(dirname "$(find "$M" -name gpus.json | head -1)")
python3 - "$DATA/gpus.json" <<'PY' || fail "could not edit the moved gpus.json"
import json, sys
p = sys.argv[1]
doc = json.load(open(p))
rows = doc["gpus"] if isinstance(doc, dict) else doc
row = dict(rows[0]); row["name"] = "Relocated-Test-GPU"; row["aliases"] = []
rows.append(row)
json.dump(doc, open(p, "w"))
PY
LD_LIBRARY_PATH=$MLIB "$T/pc_shared" Relocated-Test-GPU | grep -q "Relocated-Test-GPU" \
    || fail "the moved install's library did not read its own gpus.json"
cp "$T/pc_static" "$M/bin/consumer_static"
"$M/bin/consumer_static" Relocated-Test-GPU | grep -q "Relocated-Test-GPU" \
    || fail "a program linked statically in the moved bin/ did not read the moved data"
echo "install.sh: installed, built 4 ways, relocated: ok"
