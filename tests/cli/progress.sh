#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# progress.sh — the whole tune's progress line (docs/report.md#progress-on-a-terminal) on a real
# terminal (a pseudo-terminal from util-linux's `script`): one line redrawn in place (carriage
# return and erase, never a new line), configs measured of those planned, the round of those
# planned, elapsed and time left, cut to the terminal's width, cleared before the report; colour
# on a terminal, none with NO_COLOR (nothing when stderr is not a terminal: tests/cli/report.sh).
# $1 is the binary.
set -u
bt="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
command -v script >/dev/null || { echo "SKIPPED: no script(1) for a pseudo-terminal"; exit 77; }
tune=("$bt" tune vector_add --n 100000 --strategy random --budget 4 --finalists 2 --warmup-ms 2
      --rep-ms 8 --threads 2 --store none)

# On a 100-column terminal, colours allowed: stderr only (stdout to a file) inside the terminal.
cmd="stty cols 100; TERM=xterm ${tune[*]} >$tmp/out1"
env -u NO_COLOR script -qfec "$cmd" "$tmp/tty1" >/dev/null || fail "tune under a terminal failed"
python3 - "$tmp/tty1" "$tmp/out1" 100 color <<'PY' || fail "the progress line with colour"
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
width, color = int(sys.argv[3]), sys.argv[4] == "color"
draws = [d for d in raw.split("\r\x1b[K") if d.strip()]
lines = [d for d in draws if "configs" in d]
assert len(lines) >= 3, ("too few redraws", draws[:3])
for d in lines:
    assert "\n" not in d.strip("\r\n"), ("a new line inside the progress line", d)
    vis = re.sub(r"\x1b\[[0-9;]*m", "", d).rstrip("\r\n")
    assert len(vis) <= width - 1, ("wider than the terminal", len(vis), vis)
plain = [re.sub(r"\x1b\[[0-9;]*m", "", d) for d in lines]
assert any(re.match(r"vector_add: \d+/4 configs", p) for p in plain), plain[:3]
assert any("round 1/2" in p for p in plain), plain
assert any("elapsed" in p for p in plain) and any("left" in p for p in plain), plain
assert any("finals" in p for p in plain), plain
has_sgr = any(re.search(r"\x1b\[[0-9;]*m", d) for d in lines)
assert has_sgr == color, ("colour" if color else "no colour", lines[:2])
# cleared before the tune ends, and the report on stdout has none of it
assert raw.rstrip().endswith("\x1b[K") or "configs" not in raw.rsplit("\r\x1b[K", 1)[-1]
out = open(sys.argv[2]).read()
assert "WINNER" in out and "configs ·" not in out and "\x1b" not in out
PY

# NO_COLOR, on a 40-column terminal: the same line without colour, cut to the width.
cmd="stty cols 40; TERM=xterm NO_COLOR=1 ${tune[*]} >$tmp/out2"
script -qfec "$cmd" "$tmp/tty2" >/dev/null || fail "tune under a terminal with NO_COLOR failed"
python3 - "$tmp/tty2" <<'PY' || fail "the progress line with NO_COLOR"
import re, sys
raw = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
lines = [d.rstrip("\r\n") for d in raw.split("\r\x1b[K") if "configs" in d]
assert lines and not any("\x1b" in d for d in lines), lines[:2]
assert all(len(d) <= 39 for d in lines) and any(len(d) == 39 for d in lines), lines[:3]
PY

# Not a terminal: nothing (tests/cli/report.sh checks it on its tune, with no third tune here).
echo "ok"
