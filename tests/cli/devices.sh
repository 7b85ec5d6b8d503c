#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# devices.sh — `blocktune devices`: lists the devices with the default marked, --json is valid
# JSON with every field, --help teaches, and with the OpenCL or CUDA library missing
# (BLOCKTUNE_OPENCL_LIBRARY / BLOCKTUNE_CUDA_LIBRARY pointing nowhere) the command still exits 0
# and says why. With the mock CUDA driver built beside the binary, CUDA devices come first and
# the GPU is the default.
set -u
bin="$1"
fail() { echo "FAIL: $*" >&2; exit 1; }

# JSON validation: python3 where there is one, else a structural grep.
check_json() {
    if command -v python3 >/dev/null; then
        python3 -m json.tool >/dev/null <<<"$1" || fail "invalid JSON: $1"
    else
        grep -q '"devices"' <<<"$1" && grep -q '"unavailable"' <<<"$1" ||
            fail "not the JSON shape: $1"
    fi
}

out="$("$bin" devices --help)" || fail "--help exited $?"
grep -q "usage: blocktune devices" <<<"$out" || fail "--help has no usage line"
grep -q -- "--json" <<<"$out" || fail "--help does not explain --json"

"$bin" devices --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown option must exit 2"

# Without OpenCL and CUDA: nothing listed, exit 0, and the reasons name the libraries tried.
missing=/nonexistent/libOpenCL-blocktune-cli-test.so
nocuda=/nonexistent/libcuda-blocktune-cli-test.so.1
export BLOCKTUNE_CUDA_LIBRARY=$nocuda
out="$(BLOCKTUNE_OPENCL_LIBRARY=$missing "$bin" devices)" || fail "devices without OpenCL exited $?"
grep -q "^no devices: " <<<"$out" || fail "expected 'no devices: ...', got: $out"
grep -q "opencl: .*$missing" <<<"$out" || fail "the reason does not name the library: $out"
grep -q "cuda: .*$nocuda" <<<"$out" || fail "the reason does not name the CUDA library: $out"
grep -q "opencl:0" <<<"$out" && fail "opencl:0 listed without OpenCL"
out="$(BLOCKTUNE_OPENCL_LIBRARY=$missing "$bin" devices --json)" ||
    fail "--json without OpenCL exited $?"
check_json "$out"
grep -q '"devices": \[\]' <<<"$out" || fail "--json without OpenCL must list no device: $out"
grep -q '"backend": "opencl"' <<<"$out" || fail "--json must say opencl is unavailable: $out"
grep -q '"backend": "cuda"' <<<"$out" || fail "--json must say cuda is unavailable: $out"

# Without CUDA only: whatever else there is is listed, and why CUDA is missing is said.
out="$("$bin" devices)" || fail "devices without CUDA exited $?"
grep -q "cuda.*$nocuda" <<<"$out" || fail "devices without CUDA does not say why: $out"
grep -q "cuda:0" <<<"$out" && fail "cuda:0 listed without CUDA"
unset BLOCKTUNE_CUDA_LIBRARY

# The mock CUDA driver (built with the tests): cuda:0 first, a GPU, the default.
mock="$(dirname "$bin")/libbt_mock_cuda.so"
if [ -f "$mock" ]; then
    out="$(BLOCKTUNE_CUDA_LIBRARY=$mock "$bin" devices)" || fail "devices with the mock exited $?"
    head -n1 <<<"$out" | grep -q "^\* cuda:0 .*GPU.*blocktune mock GPU" \
        || fail "cuda:0 must come first and be the default: $out"
    grep -q "compute capability 9.0" <<<"$out" || fail "no compute capability: $out"
    grep -q "NVRTC\|not found" <<<"$out" || fail "no compiler version: $out"
    json="$(BLOCKTUNE_CUDA_LIBRARY=$mock "$bin" devices --json)" || fail "--json with the mock exited $?"
    check_json "$json"
    grep -q '"id": "cuda:0"' <<<"$json" || fail "--json lacks cuda:0: $json"
    grep -q '"arch": "hopper"' <<<"$json" || fail "--json lacks the arch: $json"
fi

# With whatever this machine has.
out="$("$bin" devices)" || fail "devices exited $?"
if grep -q "^no devices: " <<<"$out"; then
    echo "SKIP (rest): no device on this machine: $out"
    exit 77
fi
grep -q "^\* " <<<"$out" || fail "no default marked: $out"
[ "$(grep -c '^\* ' <<<"$out")" -eq 1 ] || fail "more than one default: $out"
json="$("$bin" devices --json)" || fail "devices --json exited $?"
check_json "$json"
for field in '"id"' '"name"' '"vendor"' '"platform"' '"api_version"' '"driver_version"' \
             '"compiler_version"' '"is_gpu"' '"is_default": true' '"props"' '"sm_count"' \
             '"max_threads_per_block"' '"smem_per_block"' '"l2_bytes"' '"mem_bytes"' \
             '"clock_mhz"' '"warp_size"'; do
    grep -q "$field" <<<"$json" || fail "--json lacks $field"
done
if grep -q "opencl:0" <<<"$out"; then
    grep -q '"id": "opencl:0"' <<<"$json" || fail "--json lacks opencl:0"
fi
echo "ok"
