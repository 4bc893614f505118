#!/usr/bin/env python3
"""The exporter's allocation map in a real browser: Debian's headless
Chromium, driven through chromedriver's WebDriver HTTP interface (Python
standard library only), loads / against a mounted resctrlfs with three
groups (one exclusive). It checks the DOM (a grid per L3 domain with a
column per way, each group's cells set exactly where its mask has bits, the
legend), saves a screenshot as a test artifact (exporter-map.png in the
test's working directory), and sees a schemata change on the page by its
second refresh after the write (the page refreshes once a second).

Skips (exit 77) loudly when chromium or chromedriver is not installed."""

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request

import exporter_harness as eh
import resctrlfs_test as rt

CHROMIUM = "/usr/bin/chromium"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--window-size=1400,1500", "--hide-scrollbars"]


def browser_skip_reason():
    if not os.access(CHROMIUM, os.X_OK):
        return "chromium is not installed (Debian package chromium)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (Debian package chromium-driver)"
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class WebDriver:
    """A chromedriver process and one headless Chromium session."""

    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="exporter-chromium-")
        self.port = free_port()
        self.log = open(os.path.join(self.profile, "chromedriver.log"), "wb")
        self.proc = subprocess.Popen(["chromedriver", "--port=%d" % self.port],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % self.port
        rt.wait_until(self.answers, "chromedriver to answer", interval=0.1,
                      give_up=lambda: rt.exited(self.proc))
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM,
                                   "args": CHROME_ARGS + ["--user-data-dir=" + self.profile]}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def answers(self):
        try:
            self.call("GET", "/status")
            return True
        except OSError:
            return False

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:  # no timeout: a busy machine is slow
            return json.loads(r.read())["value"]

    def s(self, method, path, body=None):
        return self.call(method, "/session/%s%s" % (self.session, path), body)

    def go(self, url):
        self.s("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, path):
        png = base64.b64decode(self.s("GET", "/screenshot"))
        with open(path, "wb") as f:
            f.write(png)
        return len(png)

    def quit(self):
        try:
            self.s("DELETE", "")
        except OSError:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


# Returns, for every way grid, its schema, domain, way columns and for every
# group row the ways whose cell is set (and with which mode class).
GRID_JS = """
const out = [];
for (const t of document.querySelectorAll('table.map')) {
  const rows = {};
  for (const tr of t.querySelectorAll('tbody tr')) {
    const cells = [...tr.querySelectorAll('td.cell')];
    rows[tr.dataset.group] = {
      cells: cells.length,
      text: cells.map(c => c.textContent).join(''),
      on: cells.filter(c => c.classList.contains('on')).map(c => Number(c.dataset.way)),
      classes: cells.filter(c => c.classList.contains('on')).map(c => c.className)};
  }
  out.push({schema: t.dataset.schema, domain: Number(t.dataset.domain),
            ways: t.querySelectorAll('thead th').length - 1, rows});
}
return {grids: out, updates: Number(document.body.dataset.updates || 0),
        legend: [...document.querySelectorAll('#legend li')].map(l => l.dataset.kind),
        mb: [...document.querySelectorAll('table.bw[data-schema=MB] tbody tr')].map(
              tr => [tr.dataset.group, [...tr.querySelectorAll('td')].map(td => td.textContent)]),
        lines: document.querySelectorAll('#plot-occupancy polyline').length,
        status: document.getElementById('status').textContent};
"""


def mask_ways(hexmask):
    v = int(hexmask, 16)
    return sorted(w for w in range(64) if v >> w & 1)


class BrowserMap(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    def setUp(self):
        super().setUp()
        self.sleepers = []
        self.addCleanup(self._stop_sleepers)
        self.assertEqual(self.write("schemata", "L3:0=ff;1=ff\n"), 0)
        for g, l3, mb in (("web", "L3:0=f;1=3\n", "MB:0=70;1=100\n"),
                          ("batch", "L3:0=f0;1=c\n", "MB:0=30;1=20\n"),
                          ("db", "L3:0=700;1=700\n", "MB:0=100;1=100\n")):
            self.assertEqual(self.mkdir(g), 0)
            self.assertEqual(self.write(g + "/schemata", l3 + mb), 0)
        self.assertEqual(self.write("db/mode", "exclusive\n"), 0)
        for g, fp, bw in (("web", 3 << 20, 2000), ("batch", 6 << 20, 6000), ("db", 8 << 20, 1000)):
            p = subprocess.Popen(["sleep", "600"])
            self.sleepers.append(p)
            self.assertEqual(self.write(g + "/tasks", "%d\n" % p.pid), 0)
            self.workload(tid=p.pid, footprint_bytes=fp, bandwidth_mbps=bw, local_fraction=0.8)
        self.exp = eh.Exporter(self.fs.mnt)
        self.addCleanup(self.exp.stop)
        self.wd = WebDriver()
        self.addCleanup(self.wd.quit)

    def _stop_sleepers(self):
        for p in self.sleepers:
            p.kill()
            p.wait()

    def page(self, min_updates=1):
        """The page's state once it has refreshed min_updates times in all
        (each refresh is a timer in the page: however late, it comes)."""
        def updated():
            st = self.wd.js(GRID_JS)
            return st if st["updates"] >= min_updates else None
        return rt.wait_until(updated, "the page's update %d" % min_updates, interval=0.1,
                             report=self.exp.output)

    def check_grids(self, st):
        groups = ["/", "web", "batch", "db"]
        grids = [g for g in st["grids"] if g["schema"] == "L3"]
        self.assertEqual(sorted(g["domain"] for g in grids), [0, 1])
        for grid in grids:
            self.assertEqual(grid["ways"], 11)
            for g in groups:
                row = grid["rows"][g]
                self.assertEqual(row["cells"], 11)
                line = [l for l in self.read(("" if g == "/" else g + "/") + "schemata").split("\n")
                        if l.strip().startswith("L3:")][0]
                masks = dict(kv.split("=") for kv in line.split(":")[1].split(";"))
                self.assertEqual(sorted(row["on"]), mask_ways(masks[str(grid["domain"])]),
                                 (g, grid["domain"]))
                mode = self.read(("" if g == "/" else g + "/") + "mode").strip()
                for cls in row["classes"]:
                    self.assertIn(mode, cls.split())
            usage = dict(kv.split("=") for kv in self.read("info/L3/bit_usage").strip().split(";"))
            self.assertEqual(grid["rows"][":bit_usage"]["text"], usage[str(grid["domain"])])

    def test_map(self):
        self.wd.go(self.exp.url + "/")
        st = self.page(min_updates=1)
        self.check_grids(st)
        self.assertEqual(st["legend"], ["shareable", "exclusive", "pseudo-locked",
                                        "pseudo-locksetup", "io_alloc", "hardware", "unused"])
        mb = dict(st["mb"])
        self.assertEqual(mb["batch"], ["30", "20"])
        self.assertEqual(mb["web"], ["70", "100"])
        # Let the plots gather a few seconds (RESCTRLFS_EXPORTER_SCREENSHOT_WAIT
        # refreshes; docs/exporter.md's picture was taken with 120), then keep the picture.
        wait = int(os.environ.get("RESCTRLFS_EXPORTER_SCREENSHOT_WAIT", "4"))
        st = self.page(min_updates=st["updates"] + wait)
        self.assertGreaterEqual(st["lines"], 3)
        path = os.path.abspath("exporter-map.png")
        self.assertGreater(self.wd.screenshot(path), 10000)
        print("screenshot: " + path)

        # A schemata change shows by the page's second refresh after it.
        n = self.page()["updates"]
        self.assertEqual(self.write("web/schemata", "L3:0=3;1=1f\n"), 0)
        st = self.page(min_updates=n + 2)
        web = {g["domain"]: sorted(g["rows"]["web"]["on"]) for g in st["grids"]}
        self.assertEqual(web, {0: [0, 1], 1: [0, 1, 2, 3, 4]})
        self.check_grids(st)


if __name__ == "__main__":
    rt.require_fuse()
    reason = browser_skip_reason()
    if reason:
        sys.stderr.write("SKIP: %s: %s\n" % (os.path.basename(sys.argv[0]), reason))
        sys.stdout.write("SKIP: %s\n" % reason)
        sys.exit(rt.SKIP)
    rt.main()
