#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# t1_schema.sh — every T1 file in tests/data/t1/ (Kernel Tuner's two test files and ours) is valid
# against the T1 input schema that Kernel Tuner ships (tests/data/t1/input-schema.json), as
# jsonschema checks it (draft-07, as Kernel Tuner's get_input_file validates a T1 file before
# tuning it); the validator refuses one that is not. What
# blocktune reads of them: test_t1 and t1.sh. Without jsonschema this test is SKIPPED (exit 77),
# saying so; with $CI set it fails instead.
set -u
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib/check.bash"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$src/tests/need_python.sh"
need_python BT_KT_PYTHON "jsonschema" \
    "jsonschema (python) is not installed; ./dev.sh test installs it with Kernel Tuner, or set BT_KT_PYTHON"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
d="$src/tests/data/t1"
files=("$d/test_T1_input.json" "$d/test_cache_file_T1_input.json" "$d/conv.json" "$d/vadd.json")
validate() { # SCHEMA FILE...: 0 when every FILE is valid, else 1 naming the first fault
    "$py" - "$@" <<'PY'
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft7Validator.check_schema(schema)
for path in sys.argv[2:]:
    try:
        jsonschema.validate(json.load(open(path)), schema, cls=jsonschema.Draft7Validator)
    except jsonschema.ValidationError as e:
        sys.exit(f"{path}: {e.message} at {list(e.absolute_path)}")
PY
}
check "the T1 files are valid T1" validate "$d/input-schema.json" "${files[@]}"
sed 's/"KernelFile": "vadd.cl",//' "$d/vadd.json" >"$tmp/bad.json"
invalid() { ! validate "$@" 2>/dev/null; }
check "  ... and the validator refuses one without KernelFile" \
    invalid "$d/input-schema.json" "$tmp/bad.json"
exit $fail
