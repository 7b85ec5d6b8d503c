#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_report.py — loads a `blocktune report` page in a real headless browser (Chromium from
Debian, driven over the DevTools protocol on a pipe: Python's standard library only) and checks it
against the tune JSON files it was made from.

    check_report.py PAGE.html TUNE.json [TUNE.json ...] [-- PAGE.html TUNE.json ... ]
    check_report.py --browser      (prints the browser it would use; exits as below without one)

Several pages, each with its own JSON files and separated by `--`, are checked in one browser (a
browser's start is most of the time). Fails (exit 1, each problem on a line starting with its
page's name) when:
  - the page logs a console error, warning or assert, throws an uncaught exception, or the browser
    logs an error for it;
  - the page requests anything but itself (the page must be self-contained: no network, no CDN,
    no font, no image);
  - a chart does not hold the points it should: every parameter chart of a tune one circle with a
    data-status per measured config, with the JSON's count of each status; the roofline one per
    config that measured; the winner's point on the winner's config; the candidate and failed
    tables one row per config; the eliminated groups' counts equal to the JSON's grouped by the
    rule of each config's first reason, summing to the eliminated total; a sweep section one point
    per key with a winner;
  - the same counts differ with JavaScript off (the page must be useful without it);
  - dark mode (prefers-color-scheme: dark) does not give a dark background with light text.
Exit 77 (skipped) when no browser is installed, unless $CI is set: then 1.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BROWSERS = ["chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"]


def find_browser():
    if os.environ.get("BT_BROWSER"):
        return os.environ["BT_BROWSER"]
    for b in BROWSERS:
        p = shutil.which(b)
        if p:
            return p
    return None


class Browser:
    """A headless Chromium with the DevTools protocol on fds 3 (in) and 4 (out)."""

    def __init__(self, exe):
        self.profile = tempfile.mkdtemp(prefix="bt-browser-")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        fd_in, fd_out = os.dup(to_chrome_r), os.dup(from_chrome_w)

        def child_fds():
            os.dup2(fd_in, 3)
            os.dup2(fd_out, 4)

        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--remote-debugging-pipe",
                "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + self.profile,
                "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_chrome_r, from_chrome_w, fd_in, fd_out):
            os.close(fd)
        self.w = os.fdopen(to_chrome_w, "wb", buffering=0)
        self.r = os.fdopen(from_chrome_r, "rb", buffering=0)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def close(self):
        try:
            self.proc.kill()
            self.proc.wait(10)
        finally:
            shutil.rmtree(self.profile, ignore_errors=True)

    def _recv(self):
        while b"\0" not in self.buf:
            chunk = self.r.read(1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed the DevTools pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True):
        self.next_id += 1
        m = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            m["sessionId"] = self.session
        self.w.write(json.dumps(m).encode() + b"\0")
        while True:
            r = self._recv()
            if r.get("id") == self.next_id:
                if "error" in r:
                    raise RuntimeError("%s: %s" % (method, r["error"]))
                return r.get("result", {})
            self.events.append(r)

    def wait_event(self, name, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            for i, e in enumerate(self.events):
                if e.get("method") == name:
                    del self.events[i]
                    return e
            self.events.append(self._recv())
        raise RuntimeError("no %s within %d s" % (name, timeout))

    def open(self):
        t = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        a = self.call("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True},
                      session=False)
        self.session = a["sessionId"]
        for d in ("Runtime", "Page", "Log", "Network"):
            self.call(d + ".enable")

    def load(self, url, scripts=True):
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")
        # The page's own scripts, their errors and its requests all come before the load event;
        # a timer of 100 ms lets anything they deferred run too (messages arrive in order, so its
        # answer comes after their events). With scripts off, one round trip.
        self.call("Runtime.evaluate",
                  {"expression": "new Promise(function(r){ setTimeout(r, 100); })" if scripts
                   else "1", "awaitPromise": scripts})

    def eval(self, expr):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError("evaluating the checks failed: %s" % r["exceptionDetails"])
        return r["result"].get("value")


def page_problems(events, url):
    """Console errors, uncaught exceptions, browser errors, and requests for anything else."""
    out = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", []))
            out.append("console %s: %s" % (p["type"], text))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append("uncaught exception: %s %s" % (d.get("text", ""),
                                                      d.get("exception", {}).get("description", "")))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
            out.append("browser %s: %s" % (p["entry"]["level"], p["entry"].get("text", "")))
        elif m == "Network.requestWillBeSent":
            u = p.get("request", {}).get("url", "")
            if u != url and not u.startswith("data:") and not u.startswith("about:"):
                out.append("the page requested %s: it must be self-contained" % u)
    return out


# What the page holds, read in the page: per tune section, per chart, per table.
SURVEY = r"""
(function(){
  function cnt(root, sel){ return root ? root.querySelectorAll(sel).length : -1; }
  var tunes = [];
  document.querySelectorAll('section.tune').forEach(function(s){
    var t = {id: s.id, key: s.getAttribute('data-key'), params: [], roof: null,
             cands: cnt(s, 'table.cands tbody tr'), failed: cnt(s, 'table.failed tbody tr'),
             rules: {}, winners: []};
    s.querySelectorAll('svg.chart').forEach(function(svg){
      var st = {};
      svg.querySelectorAll('circle[data-status]').forEach(function(c){
        var k = c.getAttribute('data-status'); st[k] = (st[k] || 0) + 1; });
      var w = svg.querySelector('circle.winner');
      if (/-roof$/.test(svg.id)) t.roof = st; else t.params.push({id: svg.id, status: st});
      if (w) t.winners.push(w.getAttribute('data-cfg'));
    });
    s.querySelectorAll('table.elim tr[data-rule]').forEach(function(r){
      t.rules[r.getAttribute('data-rule')] = +r.getAttribute('data-count'); });
    tunes.push(t);
  });
  var sweeps = [];
  document.querySelectorAll('section.sweep').forEach(function(s){
    sweeps.push({keys: +s.getAttribute('data-keys'), points: cnt(s, 'circle.sweep')}); });
  return {tunes: tunes, sweeps: sweeps};
})()
"""

COLORS = r"""
(function(){
  var b = getComputedStyle(document.body);
  return [b.backgroundColor, b.color];
})()
"""


def reason_rule(reasons):
    """The rule of a config's first reason, as the report groups them (src/report/tunedoc.c)."""
    s = (reasons or "").split("\n", 1)[0]
    m = re.search(r"\(([a-z0-9_]+)\)$", s)
    if m:
        return m.group(1)
    m = re.match(r"(constraint '[^']*')", s)
    if m:
        return m.group(1)
    m = re.match(r"[^0-9:]*", s)
    cut = m.group(0).rstrip(" =")
    return cut if cut else ("other" if s else "no reason given")


def cfg_text(cfg):
    return " ".join("%s=%s" % (k, v) for k, v in cfg.items())


def count_status(configs):
    st = {}
    for c in configs:
        st[c["status"]] = st.get(c["status"], 0) + 1
    return st


def check_tune(doc, t, name):
    bad = []
    configs = doc["configs"]
    want = count_status(configs)
    nok = want.get("ok", 0)
    params = list(configs[0]["config"].keys()) if configs else []
    if len(t["params"]) != len(params):
        bad.append("%s: %d parameter charts, the JSON has %d parameters" %
                   (name, len(t["params"]), len(params)))
    for p in t["params"]:
        if p["status"] != want:
            bad.append("%s: chart %s holds %s circles by status, the JSON measured %s" %
                       (name, p["id"], p["status"], want))
    roof = doc.get("roofline") or {}
    if roof.get("flops", 0) > 0 and roof.get("bytes", 0) > 0:
        got = t["roof"] or {}
        if got != ({"ok": nok} if nok else {}):
            bad.append("%s: the roofline holds %s, the JSON has %d ok configs" % (name, got, nok))
    if t["cands"] != nok:
        bad.append("%s: %d candidate rows for %d ok configs" % (name, t["cands"], nok))
    nfail = len(configs) - nok
    if (t["failed"] if t["failed"] >= 0 else 0) != nfail:
        bad.append("%s: %d failed rows for %d failed configs" % (name, t["failed"], nfail))
    win = doc.get("winner")
    if win:
        w = cfg_text(win["config"])
        if any(x != w for x in t["winners"]) or len(t["winners"]) < len(params):
            bad.append("%s: winner points %s, the JSON's winner is %s" % (name, t["winners"], w))
    rules = {}
    for e in doc.get("eliminated", []):
        r = reason_rule(e.get("reasons"))
        rules[r] = rules.get(r, 0) + 1
    if doc.get("eliminated_not_listed"):
        rules["(not listed)"] = doc["eliminated_not_listed"]
    if t["rules"] != rules:
        bad.append("%s: eliminated groups %s, the JSON's %s" % (name, t["rules"], rules))
    return bad


def check_counts(survey, docs, names):
    bad = []
    if len(survey["tunes"]) != len(docs):
        return ["%d tune sections for %d JSON documents" % (len(survey["tunes"]), len(docs))]
    for doc, t, n in zip(docs, survey["tunes"], names):
        bad += check_tune(doc, t, n)
    for s in survey["sweeps"]:
        if s["points"] < 2 or s["points"] > s["keys"]:
            bad.append("a sweep of %d keys holds %d points" % (s["keys"], s["points"]))
    return bad


def luminance(css):
    m = re.match(r"rgba?\((\d+),\s*(\d+),\s*(\d+)", css)
    if not m:
        return None
    r, g, b = (int(x) / 255 for x in m.groups())
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def check_page(b, page, files):
    """The problems of one page against its JSON files, in the browser b."""
    docs = [json.load(open(f)) for f in files]
    url = "file://" + os.path.abspath(page)
    bad = []
    b.call("Emulation.setScriptExecutionDisabled", {"value": False})
    b.call("Emulation.setEmulatedMedia",
           {"features": [{"name": "prefers-color-scheme", "value": "light"}]})
    b.events = []
    b.load(url)
    bad += page_problems(b.events, url)
    survey = b.eval(SURVEY)
    bad += check_counts(survey, docs, files)
    light = b.eval(COLORS)
    b.call("Emulation.setEmulatedMedia",
           {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    dark = b.eval(COLORS)
    lb, db, dt = luminance(light[0]), luminance(dark[0]), luminance(dark[1])
    if lb is None or db is None or dt is None or not (lb > 0.7 and db < 0.3 and dt > 0.6):
        bad.append("dark mode: background %s and text %s (light: %s)" % (dark[0], dark[1], light[0]))
    b.call("Emulation.setScriptExecutionDisabled", {"value": True})
    b.events = []
    b.load(url, scripts=False)
    bad += page_problems(b.events, url)
    # with scripts off the DOM is read through the protocol, not by a script in the page
    root = b.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    n = len(b.call("DOM.querySelectorAll", {"nodeId": root,
                                            "selector": "circle[data-status]"})["nodeIds"])
    want = sum(sum(sum(p["status"].values()) for p in t["params"]) +
               sum((t["roof"] or {}).values()) for t in survey["tunes"])
    if n != want:
        bad.append("with JavaScript off the page holds %d status points, with it %d" % (n, want))
    return bad


def groups(args):
    """[(PAGE, [JSON ...]), ...] from PAGE JSON... [-- PAGE JSON...]..."""
    out, cur = [], []
    for a in args + ["--"]:
        if a != "--":
            cur.append(a)
            continue
        if len(cur) < 2:
            return None
        out.append((cur[0], cur[1:]))
        cur = []
    return out


def main(argv):
    pages = groups(argv[1:]) if argv[1:] != ["--browser"] else []
    if pages is None:
        print(__doc__)
        return 2
    exe = find_browser()
    if not exe:
        if os.environ.get("CI"):
            print("FAIL: CI needs a headless browser (chromium-headless-shell; dev.sh installs it)")
            return 1
        print("SKIP: no headless browser (%s); dev.sh installs chromium-headless-shell" %
              ", ".join(BROWSERS))
        return 77
    if not pages:
        print(exe)
        return 0

    def too_long(sig, frame):
        raise RuntimeError("the browser did not answer within 120 s")
    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(120)
    b = Browser(exe)
    nbad = 0
    try:
        b.open()
        b.call("DOM.enable")
        for page, files in pages:
            try:
                bad = check_page(b, page, files)
            except RuntimeError as e:
                bad = [str(e)]
            for x in bad:
                print("FAIL: %s: %s" % (page, x))
            if not bad:
                print("ok: %s loads in %s with no console error and no request, and its charts "
                      "hold every point of %s" % (page, os.path.basename(exe), ", ".join(files)))
            nbad += len(bad)
    except RuntimeError as e:
        print("FAIL: %s" % e)
        nbad += 1
    finally:
        signal.alarm(0)
        b.close()
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
