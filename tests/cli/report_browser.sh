#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# report_browser.sh — the HTML report in a real headless browser (Chromium from Debian, driven by
# tests/browser/check_report.py over the DevTools protocol): pages made from recorded tunes (an
# H200 softmax sweep with its peers: the roof, the sweep and the peers drawn; PoCL tunes with
# failures and eliminations), from a tune run here (`tune --html`) and from the results store load
# with no console error and no request, in light and dark mode and with JavaScript off, and their
# charts hold every point of the JSON. Then the check is shown to fail when it should: a planted
# console error, an uncaught exception, a fetched resource and a missing point are each caught.
# One browser start for all the pages (its start is most of the time).
# Skipped (77) without a browser, unless $CI is set (then the check fails). $1 is the binary.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
check="$src/tests/browser/check_report.py"
h2="$src/bench/results/h200-2026-11-29"   # recorded on the H200 (its README says how)
pc="$src/bench/results/pocl-2026-12-01"   # recorded here by bench/report_pocl.sh
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

run_check() { # run_check ARGS...: the checker's status (77: the whole test is skipped)
    python3 "$check" "$@" >"$tmp/check.out" 2>&1
    local rc=$?
    cat "$tmp/check.out"
    [ $rc -eq 77 ] && exit 77
    return $rc
}

# 0. The browser, first: without one the test says so and is skipped (or fails under $CI) at once.
run_check --browser || exit 1

# 1. A recorded H200 sweep with peers: roof lines, sweep chart, peers on every chart.
h200=("$h2"/run-final/softmax_32768x1024.json "$h2"/run-final/softmax_8192x8192.json
      "$h2"/run-final/softmax_4096x30000.json)
"$bt" report "${h200[@]}" --peers "$h2/report/peers.json" -o "$tmp/h200.html" 2>/dev/null ||
    fail "report of the H200 sweep"
grep -q 'class="roof"' "$tmp/h200.html" || fail "the H200 page has no roof"
grep -q 'class="sweep" id="s1" data-keys="3"' "$tmp/h200.html" || fail "no sweep section of 3 keys"
grep -q 'data-peer="Triton (best of its grid)"' "$tmp/h200.html" || fail "no Triton peer"

# 2. Recorded PoCL tunes: failures by status, eliminations by rule, a sweep without a roof.
pocl=("$pc"/planted.json "$pc"/softmax_64x256.json "$pc"/softmax_64x1024.json)
"$bt" report "${pocl[@]}" -o "$tmp/pocl.html" 2>/dev/null || fail "report of the PoCL tunes"

# 3. A tune run here: its own page, and the store's.
"$bt" tune "$src/tests/data/planted.json" --strategy random --budget 6 --warmup-ms 2 --rep-ms 8 \
    --threads 2 --store "$tmp/s.db" --json "$tmp/r.json" --html "$tmp/r.html" >/dev/null \
    2>"$tmp/err" || fail "tune: $(cat "$tmp/err")"
"$bt" report --db "$tmp/s.db" --kernel planted -o "$tmp/s.html" 2>/dev/null || fail "report --db"
# the store's page: the same parameter charts; no roofline (a spec kernel's plan is not stored)
python3 - "$tmp/r.json" "$tmp/r2.json" <<'PY' || fail "the store's comparison document"
import json, sys
j = json.load(open(sys.argv[1]))
del j["roofline"]
j["eliminated"] = []
json.dump(j, open(sys.argv[2], "w"))
PY

# 4. Pages with a planted fault each, made from the H200 page: the check must catch every one.
python3 - "$tmp/h200.html" "$tmp" <<'PY'
import re, sys
h = open(sys.argv[1]).read()
d = sys.argv[2]
open(d + "/p_console.html", "w").write(h.replace("</body>", "<script>console.error('planted');</script></body>"))
open(d + "/p_throw.html", "w").write(h.replace("</body>", "<script>noSuchFunction();</script></body>"))
open(d + "/p_fetch.html", "w").write(h.replace("</main>", "<img src='https://cdn.example.com/x.png' alt=''></main>"))
m = re.search(r'<circle class="pt st-ok"[^>]*data-status="ok"[^>]*>.*?</circle>\n', h)
open(d + "/p_point.html", "w").write(h[:m.start()] + h[m.end():])
PY

# All eight pages in one browser (its start is most of the time): the four good ones pass, each
# planted one fails with its fault named.
args=("$tmp/h200.html" "${h200[@]}" -- "$tmp/pocl.html" "${pocl[@]}" -- "$tmp/r.html" "$tmp/r.json"
      -- "$tmp/s.html" "$tmp/r2.json")
for name in console throw fetch point; do args+=(-- "$tmp/p_$name.html" "${h200[@]}"); done
run_check "${args[@]}" && fail "the check passed the planted pages"
for page in h200 pocl r s; do
    grep -q "^ok: $tmp/$page.html " "$tmp/check.out" || fail "the page $page.html"
    grep -q "^FAIL: $tmp/$page.html: " "$tmp/check.out" && fail "the page $page.html"
done
for p in console:"console error: planted" throw:"uncaught exception" \
         fetch:"requested https://cdn.example.com" point:"holds"; do
    name="${p%%:*}" want="${p#*:}"
    grep -q "^FAIL: $tmp/p_$name.html: .*$want" "$tmp/check.out" || fail "planted $name not caught"
    grep -q "^ok: $tmp/p_$name.html" "$tmp/check.out" && fail "planted $name: the page passed"
done
echo "ok"
