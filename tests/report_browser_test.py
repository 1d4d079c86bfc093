#!/usr/bin/env python3
"""Opens an `ixsubmit report` HTML file in headless Chromium and checks it.

report_browser_test.py REPORT.html [--charts N] [--series N] [--min-points N]
                       [--kinds KIND=N,...] [--screenshot PNG] [--timeout S]

Talks to chromedriver's WebDriver HTTP API (Python's standard library only):
starts /usr/bin/chromedriver on a free port, opens a session of headless
Chromium with a fresh profile under a temporary directory, loads the file,
and then, in the page:
- counts the charts (svg.ix-chart, by data-chart kind), the series
  (g.ix-series) and the points (.ix-point), and compares them with
  --charts (exact), --series (exact) and --min-points (at least), and the
  charts of each kind named in --kinds (exact; e.g. agentic-kv-usage=3,
  agentic-ttft-turn=1: the agentic-coding charts, report/agentic_charts.h);
- fails when a chart has an empty bounding box, a series has no point, a
  point has no <title> tooltip, or the page loaded any resource (the report
  must be self-contained);
- reads the browser's console log and fails on any SEVERE entry.
With --screenshot, sizes the window to the whole document and saves a PNG.

Prints "ok: N charts (KIND n, ...), M series, P points" and exits 0, or
prints "FAIL: ..." lines and exits 1 (2 for bad arguments). The session is
quit and chromedriver (with its browser) killed on every way out, and every
HTTP call, like the whole run (--timeout), has a deadline.
"""

import argparse
import base64
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CALL_TIMEOUT_S = 30
START_TIMEOUT_S = 20
MAX_SCREENSHOT_PX = 16384  # Chromium does not capture larger surfaces
SCREENSHOT_WIDTH_PX = 1500  # two 680-unit charts side by side

# What the page reports about itself (run by /execute/sync).
PROBE_SCRIPT = r"""
const charts = Array.from(document.querySelectorAll('svg.ix-chart'));
const kinds = [];
const counts = {};
for (const c of charts) {
  const k = c.getAttribute('data-chart') || '(none)';
  if (!(k in counts)) { kinds.push(k); counts[k] = 0; }
  counts[k] += 1;
}
const empty = charts.map((c, i) => [i, c.getAttribute('data-chart'), c.getBoundingClientRect()])
  .filter(([i, k, r]) => !(r.width > 0 && r.height > 0))
  .map(([i, k, r]) => `chart ${i} (${k}) is ${r.width}x${r.height}`);
const series = Array.from(document.querySelectorAll('g.ix-series'));
const bare = series.filter(s => s.querySelectorAll('.ix-point').length === 0)
  .map(s => s.getAttribute('data-series'));
const points = Array.from(document.querySelectorAll('.ix-point'));
const untitled = points.filter(p => !Array.from(p.children).some(c => c.tagName.toLowerCase() === 'title'));
const resources = performance.getEntriesByType('resource').map(r => r.name)
  .filter(n => !n.startsWith('data:'));
return {
  ready: document.readyState,
  kinds: kinds.map(k => [k, counts[k]]),
  charts: charts.length,
  empty_charts: empty,
  series: series.length,
  series_without_points: bare,
  points: points.length,
  points_without_title: untitled.length,
  resources: resources,
};
"""


class Failure(Exception):
    """A check or a step that failed; the message says which and why."""


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class WebDriver:
    """The few WebDriver calls this test makes, each with a deadline."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def call(self, method, path, body=None, timeout=CALL_TIMEOUT_S):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                reply = json.load(response)
        except urllib.error.HTTPError as e:
            try:
                reply = json.load(e)
            except ValueError:
                raise Failure(f"{method} {path}: HTTP {e.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise Failure(f"{method} {path}: {e}") from None
        value = reply.get("value") if isinstance(reply, dict) else None
        if isinstance(value, dict) and "error" in value:
            raise Failure(f"{method} {path}: {value['error']}: {value.get('message', '').splitlines()[0:1]}")
        return value

    def session_call(self, method, path, body=None, timeout=CALL_TIMEOUT_S):
        return self.call(method, f"/session/{self.session}{path}", body, timeout)

    def wait_ready(self, process, log_path):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise Failure(f"chromedriver exited with {process.returncode}: {read_tail(log_path)}")
            try:
                status = self.call("GET", "/status", timeout=2)
                if isinstance(status, dict) and status.get("ready"):
                    return
            except Failure:
                pass
            time.sleep(0.1)
        raise Failure(f"chromedriver not ready after {START_TIMEOUT_S}s: {read_tail(log_path)}")

    def start_session(self, profile_dir):
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile_dir}"]
        caps = {"browserName": "chrome",
                "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
                "goog:loggingPrefs": {"browser": "ALL"}}
        value = self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}}, timeout=60)
        self.session = value["sessionId"]

    def quit(self):
        if self.session is None:
            return
        try:
            self.call("DELETE", f"/session/{self.session}", timeout=10)
        except Failure as e:
            print(f"warning: quitting the session: {e}", file=sys.stderr)
        self.session = None


def read_tail(path, limit=2000):
    try:
        return pathlib.Path(path).read_text(errors="replace")[-limit:].strip()
    except OSError:
        return "(no log)"


def stop_process_group(process):
    """Ends chromedriver and whatever it started (its own process group)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the browser, if it outlived chromedriver
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


def load(driver, report):
    driver.session_call("POST", "/url", {"url": report.as_uri()}, timeout=60)
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
        page = driver.session_call("POST", "/execute/sync", {"script": PROBE_SCRIPT, "args": []})
        if page["ready"] == "complete":
            return page
        if time.monotonic() > deadline:
            raise Failure(f"the page is still {page['ready']!r} after {CALL_TIMEOUT_S}s")
        time.sleep(0.1)


def check(page, logs, args):
    """Every problem with the page as one line each."""
    problems = []
    if args.charts is not None and page["charts"] != args.charts:
        problems.append(f"{page['charts']} charts, expected {args.charts}")
    if args.series is not None and page["series"] != args.series:
        problems.append(f"{page['series']} series, expected {args.series}")
    if args.min_points is not None and page["points"] < args.min_points:
        problems.append(f"{page['points']} points, expected at least {args.min_points}")
    seen = dict(page["kinds"])
    for kind, n in (args.kinds or {}).items():
        if seen.get(kind, 0) != n:
            problems.append(f"{seen.get(kind, 0)} charts of kind {kind!r}, expected {n}")
    problems += page["empty_charts"]
    problems += [f"series {name!r} has no point" for name in page["series_without_points"]]
    if page["points_without_title"]:
        problems.append(f"{page['points_without_title']} points have no <title> tooltip")
    problems += [f"the page loaded {url} (it must be self-contained)" for url in page["resources"]]
    for entry in logs:
        if entry.get("level") == "SEVERE":
            problems.append(f"console: SEVERE: {entry.get('message', '')}")
    return problems


def screenshot(driver, path):
    """Sizes the window to the whole document (wide enough for two charts
    side by side), then saves the screenshot."""
    size_script = {"script": "return [window.innerWidth, window.innerHeight, "
                             "document.documentElement.scrollWidth, document.documentElement.scrollHeight];",
                   "args": []}
    driver.session_call("POST", "/window/rect", {"width": SCREENSHOT_WIDTH_PX, "height": 900})
    for _ in range(2):  # twice: the window's frame, if any, takes from the viewport
        inner_w, inner_h, doc_w, doc_h = driver.session_call("POST", "/execute/sync", size_script)
        if inner_w >= doc_w and inner_h >= doc_h:
            break
        rect = driver.session_call("GET", "/window/rect")
        width = min(rect["width"] + max(doc_w - inner_w, 0), MAX_SCREENSHOT_PX)
        height = min(rect["height"] + max(doc_h - inner_h, 0), MAX_SCREENSHOT_PX)
        driver.session_call("POST", "/window/rect", {"width": width, "height": height})
    png = base64.b64decode(driver.session_call("GET", "/screenshot", timeout=60))
    pathlib.Path(path).write_bytes(png)


def run(args, work_dir):
    report = pathlib.Path(args.report).resolve()
    if not report.is_file():
        raise Failure(f"{args.report}: not a file")
    for tool in (CHROMIUM, CHROMEDRIVER):
        if not os.access(tool, os.X_OK):
            raise Failure(f"{tool} is not installed")
    port = free_port()
    log_path = os.path.join(work_dir, "chromedriver.log")
    with open(log_path, "wb") as log:
        process = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    driver = WebDriver(port)
    try:
        driver.wait_ready(process, log_path)
        driver.start_session(os.path.join(work_dir, "profile"))
        page = load(driver, report)
        logs = driver.session_call("POST", "/se/log", {"type": "browser"}) or []
        if args.screenshot:
            screenshot(driver, args.screenshot)
        return page, check(page, logs, args)
    finally:
        driver.quit()
        stop_process_group(process)


def kind_counts(text):
    """--kinds' value: "KIND=N,KIND=N" as {KIND: N}."""
    counts = {}
    for part in filter(None, text.split(",")):
        kind, sep, n = part.partition("=")
        if not sep or not kind or not n.isdigit():
            raise argparse.ArgumentTypeError(f"{part!r} is not KIND=N")
        counts[kind] = int(n)
    return counts


def on_alarm(signum, frame):
    raise Failure("the whole run took longer than --timeout")


def on_terminate(signum, frame):
    raise Failure(f"stopped by signal {signum}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", metavar="REPORT.html")
    parser.add_argument("--charts", type=int, help="exact number of svg.ix-chart")
    parser.add_argument("--series", type=int, help="exact number of g.ix-series")
    parser.add_argument("--min-points", type=int, help="least number of .ix-point")
    parser.add_argument("--kinds", type=kind_counts, metavar="KIND=N,...",
                        help="exact number of charts of each kind (data-chart) named")
    parser.add_argument("--screenshot", metavar="PNG", help="save a full-page screenshot")
    parser.add_argument("--timeout", type=int, default=180, help="seconds for the whole run (default 180)")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, on_alarm)
    signal.signal(signal.SIGTERM, on_terminate)
    signal.signal(signal.SIGINT, on_terminate)
    signal.alarm(max(args.timeout, 1))
    work_dir = tempfile.mkdtemp(prefix="ix-report-browser.")
    try:
        page, problems = run(args, work_dir)
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        return 1
    finally:
        signal.alarm(0)
        shutil.rmtree(work_dir, ignore_errors=True)
    kinds = ", ".join(f"{kind} {n}" for kind, n in page["kinds"])
    summary = f"{page['charts']} charts ({kinds}), {page['series']} series, {page['points']} points"
    if problems:
        for p in problems:
            print(f"FAIL: {p}", file=sys.stderr)
        print(f"seen: {summary}", file=sys.stderr)
        return 1
    print(f"ok: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
