#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# report.sh — `blocktune report`, `tune --html/--csv` and `cache list --json` end to end on the
# default OpenCL device (PoCL in CI), without a browser (tests/cli/report_browser.sh loads the
# pages in one): a quick tune of the planted spec (failures of two kinds) writes JSON, CSV and
# HTML; the CSV has one row per measured config with every column of the text table, RFC 4180
# quoting (Python's csv module reads it back); the tune's page and the page `report` makes from the
# JSON are the same; the store's page holds the same points; the pages are self-contained; the
# errors name file:line:column and the field; a failed report writes nothing. $1 is the binary.
set -u
bt="$1"
src="${BT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bt" report --help >"$tmp/help" || fail "report --help exits non-zero"
for w in "--store PATH" "--kernel K" "--key KEY" "--device D" "--peers FILE" "--title TEXT" \
         "-o, --output FILE" "docs/report.md"; do
    grep -q -- "$w" "$tmp/help" || fail "report --help lacks $w"
done
"$bt" --help | grep -q "^  report " || fail "blocktune --help does not list report"
"$bt" tune --help | grep -q -- "--html FILE" || fail "tune --help lacks --html"
"$bt" tune --help | grep -q -- "--csv FILE" || fail "tune --help lacks --csv"
"$bt" cache --help | grep -q "list \[--json\]" || fail "cache --help lacks list --json"

# Usage errors: exit 2, one line.
for args in "" "-o x.html" "r.json" "r.json --kernel softmax -o x.html" "--bogus -o x.html"; do
    # shellcheck disable=SC2086
    "$bt" report $args 2>"$tmp/err" >/dev/null
    [ $? -eq 2 ] || fail "report $args: not a usage error"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "report $args: not one line: $(cat "$tmp/err")"
done

# A quick tune with failures: random picks 8 of the planted spec's 24 configs.
"$bt" tune "$src/tests/data/planted.json" --strategy random --budget 8 --warmup-ms 2 --rep-ms 8 \
    --threads 2 --store "$tmp/s.db" --json "$tmp/r.json" --csv "$tmp/r.csv" --html "$tmp/r.html" \
    >"$tmp/out" 2>"$tmp/err" || fail "tune failed: $(cat "$tmp/err")"
grep -q "WINNER" "$tmp/out" || fail "the tune has no winner"
# Not a terminal: no progress line on stderr.
grep -q "configs measured\|configs ·" "$tmp/err" && fail "a progress line on a non-terminal stderr"
grep -q $'\033' "$tmp/err" && fail "escape sequences on a non-terminal stderr"

python3 - "$tmp/r.json" "$tmp/r.csv" "$tmp/out" <<'PY' || fail "the CSV"
import csv, json, sys
j = json.load(open(sys.argv[1]))
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
assert len(rows) == len(j["configs"]) == 8, (len(rows), len(j["configs"]))
for col in ["rank", "config", "BLOCK", "MODE", "WORK", "PAD", "status", "smem_bytes", "regs_per_thread",
            "regs_estimate", "blocks_per_sm", "occupancy_pct", "median_us", "p20_us", "p80_us",
            "reps", "gbps", "tflops", "efficiency_pct", "error"]:
    assert col in rows[0], col
ok = [r for r in rows if r["rank"]]
bad = [r for r in rows if not r["rank"]]
assert ok and bad, "the tune had both ok and failed configs"
assert [int(r["rank"]) for r in ok] == list(range(1, len(ok) + 1))
assert sorted(float(r["median_us"]) for r in ok) == [float(r["median_us"]) for r in ok]
assert ok[0]["status"] == "WINNER"
# the text table's rows: the same configs, medians and statuses
text = open(sys.argv[3]).read()
# (the text prints the median to 0.01 us from the double, the CSV to 0.001: 4011.845 in the CSV
# may be 4011.85 in the text, so the two agree within half a hundredth)
for r in ok:
    line = [l for l in text.splitlines() if l.strip().startswith(r["rank"] + " " + r["config"])]
    assert line, (r["config"], "no text row")
    cells = line[0].split()
    med = [float(c) for c in cells if "." in c and c.replace(".", "", 1).isdigit()]
    assert any(abs(m - float(r["median_us"])) <= 0.0051 for m in med), (r["config"], line)
# a failure's error with a comma or a quote survives the quoting
errs = {json.dumps(c["config"], sort_keys=True): c.get("error", "") for c in j["configs"]}
for r in bad:
    key = json.dumps({k: int(r[k]) for k in ("BLOCK", "MODE", "WORK", "PAD")}, sort_keys=True)
    assert r["error"] == errs[key], (r["error"], errs[key])
assert any("," in r["error"] for r in bad), "no error with a comma to test the quoting"
PY

# The tune's page and the one `report` makes from the JSON are the same but for the source line.
"$bt" report "$tmp/r.json" -o "$tmp/j.html" 2>/dev/null || fail "report from JSON"
diff <(grep -v "<dt>from</dt>" "$tmp/r.html") <(grep -v "<dt>from</dt>" "$tmp/j.html") >/dev/null ||
    fail "tune --html and report r.json differ"
# -o - writes the page to standard output.
"$bt" report "$tmp/r.json" -o - >"$tmp/stdout.html" 2>/dev/null || fail "report -o -"
cmp -s "$tmp/j.html" "$tmp/stdout.html" || fail "report -o - differs from the file"

python3 - "$tmp/r.json" "$tmp/j.html" <<'PY' || fail "the page's points"
import json, re, sys
j = json.load(open(sys.argv[1]))
h = open(sys.argv[2]).read()
n, params = len(j["configs"]), len(j["configs"][0]["config"])
pts = re.findall(r'<circle class="pt [^"]*"[^>]* data-status="([a-z_]+)" data-cfg', h)
nok = sum(c["status"] == "ok" for c in j["configs"])
assert len(pts) == n * params + nok, (len(pts), n, params, nok)
for s in set(c["status"] for c in j["configs"]):
    want = sum(c["status"] == s for c in j["configs"]) * params + (nok if s == "ok" else 0)
    assert pts.count(s) == want, (s, pts.count(s), want)
# self-contained: nothing that a browser would fetch
for bad in ("http://", "https://", "<link", " src=", "@import", "url("):
    assert bad not in h, bad
PY

# The store's page: the same configs, from the store's rows, and the plan made again.
"$bt" report --store "$tmp/s.db" --kernel planted -o "$tmp/s.html" 2>"$tmp/err" ||
    fail "report --store: $(cat "$tmp/err")"
[ "$(grep -c '<section class="tune"' "$tmp/s.html")" -eq 1 ] || fail "report --store: not one tune"
python3 - "$tmp/j.html" "$tmp/s.html" <<'PY' || fail "the store's page holds other points"
import re, sys
def charts(path):  # the points of each parameter chart, by status and config
    h = open(path).read()
    out = {}
    for cid, body in re.findall(r'<svg class="chart" id="(t1-p\d+)"(.*?)</svg>', h, re.S):
        out[cid] = sorted(re.findall(r'data-status="([a-z_]+)" data-cfg="([^"]*)"', body))
    return out
a, b = charts(sys.argv[1]), charts(sys.argv[2])
assert a and a == b, (a, b)
PY
# a spec kernel's plan cannot be made again from the store: the page says so
grep -q "not a built-in kernel" "$tmp/s.html" || fail "the store's page does not say why it has no roofline"
grep -q "store:$tmp/s.db" "$tmp/s.html" || fail "the store's page does not say where it is from"
"$bt" report --store "$tmp/s.db" --kernel nothing -o "$tmp/none.html" 2>"$tmp/err" &&
    fail "a store report of nothing succeeded"
grep -q "no measurements in" "$tmp/err" || fail "an empty selection is not explained"
[ -e "$tmp/none.html" ] && fail "a failed report wrote a file"
# --db (as 'cache' spells it) and --key: the same key's page; a key the store lacks is no page
"$bt" report --db "$tmp/s.db" --key n=100000 -o "$tmp/k.html" 2>"$tmp/err" ||
    fail "report --db --key: $(cat "$tmp/err")"
[ "$(grep -c 'data-status=' "$tmp/k.html")" -eq "$(grep -c 'data-status=' "$tmp/s.html")" ] ||
    fail "report --db --key holds other points than --store --kernel"
"$bt" report --db "$tmp/s.db" --kernel planted --key n=7 -o "$tmp/none.html" 2>/dev/null &&
    fail "a store report of a missing key succeeded"

# cache list --json
"$bt" cache --db "$tmp/s.db" list --json >"$tmp/list.json" || fail "cache list --json"
python3 - "$tmp/list.json" "$tmp/r.json" <<'PY' || fail "cache list --json"
import json, sys
l, j = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert l["schema"] == "blocktune-cache-list/1" and l["measurements"] == 8, l
(w,) = l["winners"]
assert w["kernel"] == "planted" and w["config"] == j["winner"]["config"], w
assert abs(w["median_ms"] - j["winner"]["median_ms"]) < 1e-9 and w["problem"]["n"] == 100000
assert w["timestamp"].endswith("Z")
PY
"$bt" cache --db "$tmp/s.db" list --yaml 2>/dev/null; [ $? -eq 2 ] || fail "list --yaml is not a usage error"

# Bad inputs: file:line:column and the field; nothing written.
printf '{"schema": "blocktune-tune/1", "kernel": "k", "problem": {},\n "configs": [{"config": {"B": 1},\n  "status": "ok", "median_ms": "fast"}]}\n' >"$tmp/bad.json"
"$bt" report "$tmp/bad.json" -o "$tmp/bad.html" 2>"$tmp/err" && fail "a bad median was accepted"
grep -q "bad.json:3:[0-9]*: configs\[0\].median_ms" "$tmp/err" || fail "bad median: $(cat "$tmp/err")"
[ -e "$tmp/bad.html" ] && fail "a failed report wrote a file"
printf '{"schema": "blocktune-tune/1",\n "kernel": }' >"$tmp/trunc.json"
"$bt" report "$tmp/trunc.json" -o "$tmp/bad.html" 2>"$tmp/err" && fail "broken JSON was accepted"
grep -q "trunc.json:2:" "$tmp/err" || fail "broken JSON: $(cat "$tmp/err")"
printf '{"schema": "blocktune-peers/1", "peers": [\n {"name": "x", "kernel": "planted", "problem": {}, "time_ms": -1}]}' >"$tmp/peers.json"
"$bt" report "$tmp/r.json" --peers "$tmp/peers.json" -o "$tmp/bad.html" 2>"$tmp/err" &&
    fail "a bad peers file was accepted"
grep -q "peers.json:2:[0-9]*: peers\[0\].time_ms" "$tmp/err" || fail "bad peers: $(cat "$tmp/err")"
"$bt" report "$tmp/missing.json" -o "$tmp/bad.html" 2>"$tmp/err" && fail "a missing file was accepted"
grep -q "missing.json" "$tmp/err" || fail "a missing file is not named"
echo "ok"
