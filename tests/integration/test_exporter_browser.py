#!/usr/bin/env python3
"""The exporter's allocation map in a real browser: Debian's headless
Chromium, driven through chromedriver's WebDriver HTTP interface (Python
standard library only), loads / against a mounted resctrlfs with three
groups (one exclusive). It checks the DOM (a grid per L3 domain with a
column per way, each group's cells set exactly where its mask has bits, the
legend), sees a schemata change on the page by its second refresh after the
write (the page refreshes once a second), and:
- group colours: every group's colour (row marker, plot line, plot legend)
  is outside the legend's state colours and far from each of them, the
  groups' colours are distinct up to the palette's size and then cycle
  through the palette (never onto a reserved colour);
- axes: every plot label renders at 11 px or more at the default zoom and
  carries its unit (B/KiB/MiB for occupancy, MB/s for bandwidth);
- units of the MB schema as the resource says: percent on Intel, MBps under
  the mba_MBps mount option, 1/8 GB/s on AMD;
- history: with the exporter scraped before the page opens, the plots hold
  the samples the exporter kept from those reads, right on load;
- a <noscript> line pointing to /metrics.
Screenshots are kept as test artifacts in <build>/Testing/exporter/
(exporter-map.png, exporter-map-amd.png; the test's working directory when
RESCTRLFS_BUILD_DIR is not set).

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


# Colours: the legend's state colours (backgrounds and the stripes of its
# gradients), and per group every colour the page gives it (row marker of the
# way grids, plot lines, plot legend); the page's palette and what it gives
# `n` made-up group names in turn.
COLOURS_JS = """
const rgb = (s) => (s || '').match(/rgba?\\([^)]*\\)/g) || [];
const legend = [];
for (const sw of document.querySelectorAll('#legend .swatch')) {
  const cs = getComputedStyle(sw);
  legend.push(...rgb(cs.backgroundColor), ...rgb(cs.backgroundImage));
}
const groups = {};
const add = (g, c) => { (groups[g] = groups[g] || []).push(...rgb(c)); };
for (const tr of document.querySelectorAll('table.map tbody tr[data-group]')) {
  if (tr.dataset.group.startsWith(':')) continue;
  add(tr.dataset.group, getComputedStyle(tr.querySelector('th')).borderLeftColor);
}
for (const p of document.querySelectorAll('#plots polyline[data-group]'))
  add(p.dataset.group, getComputedStyle(p).stroke);
for (const li of document.querySelectorAll('#plot-legend li[data-group]'))
  add(li.dataset.group, getComputedStyle(li.querySelector('.swatch')).backgroundColor);
const probe = document.createElement('span');
document.body.append(probe);
const css = (c) => { probe.style.color = c; return getComputedStyle(probe).color; };
const map = window.allocationMap || {palette: [], colour: () => 'transparent'};
const palette = map.palette.map(css);
const fresh = [];
for (let i = 0; i < arguments[0]; i++) fresh.push(css(map.colour('made-up group ' + i)));
probe.remove();
return {legend, groups, palette, fresh};
"""

# Every text of the plots: its rendered size in CSS pixels (font size times
# the SVG's scale) and its role.
AXES_JS = """
return [...document.querySelectorAll('#plots svg text')].map(t => ({
  plot: t.closest('svg').id, cls: t.getAttribute('class') || '', text: t.textContent,
  px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a}));
"""

# The plots' points per group and what the page took from the exporter's
# history on load.
POINTS_JS = """
const pts = {};
for (const p of document.querySelectorAll('#plot-occupancy polyline[data-group]'))
  pts[p.dataset.group] = p.getAttribute('points').trim().split(/\\s+/).length;
return {points: pts, history: document.body.dataset.historySamples,
        updates: Number(document.body.dataset.updates || 0)};
"""


def rgb_tuple(css):
    """(r, g, b) of 'rgb(r, g, b)'; None for a transparent 'rgba(..., 0)'."""
    nums = [float(x) for x in css[css.index("(") + 1:-1].split(",")]
    if len(nums) == 4 and nums[3] == 0:
        return None
    return tuple(int(round(x)) for x in nums[:3])


def distance(a, b):
    return sum((x - y) ** 2 for x, y in zip(a, b)) ** 0.5


# The least RGB distance between a group colour and a legend colour, and
# between two group colours, for them to read as different.
MIN_LEGEND_DISTANCE = 60
MIN_GROUP_DISTANCE = 45


def artifact_path(name):
    """Where a screenshot is kept: <build>/Testing/exporter/ (the test's
    working directory without RESCTRLFS_BUILD_DIR)."""
    build = os.environ.get("RESCTRLFS_BUILD_DIR")
    d = os.path.join(build, "Testing", "exporter") if build else os.getcwd()
    os.makedirs(d, exist_ok=True)
    return os.path.join(d, name)


class BrowserCase(rt.ResctrlfsTestCase):
    """A mounted tree with groups that have tasks and a workload, the
    exporter on it, and a browser."""
    GROUPS = (("web", "L3:0=f;1=3\n", "MB:0=70;1=100\n"),
              ("batch", "L3:0=f0;1=c\n", "MB:0=30;1=20\n"),
              ("db", "L3:0=700;1=700\n", "MB:0=100;1=100\n"))
    EXTRA_GROUPS = 0  # more groups, no tasks, default schemata

    def setUp(self):
        super().setUp()
        self.sleepers = []
        self.addCleanup(self._stop_sleepers)
        self.assertEqual(self.write("schemata", "L3:0=ff;1=ff\n"), 0)
        for g, l3, mb in self.GROUPS:
            self.assertEqual(self.mkdir(g), 0)
            self.assertEqual(self.write(g + "/schemata", l3 + mb), 0)
        self.assertEqual(self.write("db/mode", "exclusive\n"), 0)
        for i in range(self.EXTRA_GROUPS):
            self.assertEqual(self.mkdir("extra%02d" % i), 0)
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

    def check_colours(self, min_groups):
        st = self.wd.js(COLOURS_JS, 40)
        legend = {rgb_tuple(c) for c in st["legend"]} - {None}
        # shareable, exclusive, pseudo-locked, the pseudo-locksetup stripes,
        # io_alloc, hardware, unused (white)
        self.assertGreaterEqual(len(legend), 6, st["legend"])
        # The groups on the page: one colour each, none of the legend's nor
        # close to one of them.
        self.assertGreaterEqual(len(st["groups"]), min_groups, st["groups"])
        colour = {}
        for g, cs in st["groups"].items():
            seen = {rgb_tuple(c) for c in cs} - {None}
            self.assertEqual(len(seen), 1, "group %s has colours %s" % (g, cs))
            colour[g] = seen.pop()
            for b in legend:
                self.assertGreaterEqual(distance(colour[g], b), MIN_LEGEND_DISTANCE,
                                        "group %s has colour %s, the legend has %s" %
                                        (g, colour[g], b))
        # The palette (window.allocationMap.palette): distinct colours, far
        # from the legend's and from one another.
        palette = [rgb_tuple(c) for c in st["palette"]]
        self.assertGreaterEqual(len(palette), 8)
        self.assertEqual(len(set(palette)), len(palette), "the palette repeats a colour")
        for i, a in enumerate(palette):
            for b in legend:
                self.assertGreaterEqual(distance(a, b), MIN_LEGEND_DISTANCE,
                                        "palette colour %s is close to legend colour %s" % (a, b))
            for b in palette[i + 1:]:
                self.assertGreaterEqual(distance(a, b), MIN_GROUP_DISTANCE,
                                        "palette colours %s and %s look alike" % (a, b))
        # Groups past the palette's size cycle through it, in order.
        fresh = [rgb_tuple(c) for c in st["fresh"]]
        start = palette.index(fresh[0])
        self.assertEqual(fresh, [palette[(start + i) % len(palette)] for i in range(len(fresh))])
        # The page's groups take palette colours, distinct while it lasts.
        for g in colour:
            self.assertIn(colour[g], palette, g)
        self.assertEqual(len(set(colour.values())), min(len(colour), len(palette)), colour)

    def check_axes(self, min_points=1):
        texts = self.wd.js(AXES_JS)
        self.assertTrue(texts)
        for t in texts:
            self.assertGreaterEqual(t["px"], 11, t)
        ticks = {p: [t["text"] for t in texts if t["plot"] == p and t["cls"] == "tick"]
                 for p in ("plot-occupancy", "plot-bandwidth")}
        self.assertGreaterEqual(len(ticks["plot-occupancy"]), 3, texts)
        for t in ticks["plot-occupancy"]:
            self.assertRegex(t, r"^\d+(\.\d+)? (B|KiB|MiB|GiB)$")
        self.assertGreaterEqual(len(ticks["plot-bandwidth"]), 3, texts)
        for t in ticks["plot-bandwidth"]:
            self.assertRegex(t, r"^\d+(\.\d+)? (k|M|G)?B/s$")
        self.assertTrue(any(t.endswith(" MB/s") for t in ticks["plot-bandwidth"]), ticks)
        titles = [t["text"] for t in texts if t["cls"] == "axis-title"]
        self.assertTrue(any("bytes" in t for t in titles), titles)
        self.assertTrue(any("MB/s" in t for t in titles), titles)

    def check_noscript(self):
        status, ctype, body = self.exp.get("/")
        self.assertEqual(status, 200)
        start, end = body.find("<noscript>"), body.find("</noscript>")
        self.assertGreaterEqual(start, 0, "no <noscript> on the page")
        self.assertIn('href="/metrics"', body[start:end])
        self.assertIn("JavaScript", body[start:end])

    def mb_cells(self, st):
        return dict(st["mb"])


class BrowserMap(BrowserCase):
    PLATFORM = "intel-2s"

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
        # Intel's MB values are percent of the maximum bandwidth.
        mb = self.mb_cells(st)
        self.assertEqual(mb["batch"], ["30 %", "20 %"])
        self.assertEqual(mb["web"], ["70 %", "100 %"])
        self.check_noscript()
        # Let the plots gather a few seconds (RESCTRLFS_EXPORTER_SCREENSHOT_WAIT
        # refreshes; docs/exporter.md's picture was taken with 120), then keep the picture.
        wait = int(os.environ.get("RESCTRLFS_EXPORTER_SCREENSHOT_WAIT", "4"))
        st = self.page(min_updates=st["updates"] + wait)
        self.assertGreaterEqual(st["lines"], 3)
        self.check_colours(min_groups=4)
        self.check_axes()
        path = artifact_path("exporter-map.png")
        self.assertGreater(self.wd.screenshot(path), 10000)
        print("screenshot: " + path)

        # A schemata change shows by the page's second refresh after it.
        n = self.page()["updates"]
        self.assertEqual(self.write("web/schemata", "L3:0=3;1=1f\n"), 0)
        st = self.page(min_updates=n + 2)
        web = {g["domain"]: sorted(g["rows"]["web"]["on"]) for g in st["grids"]}
        self.assertEqual(web, {0: [0, 1], 1: [0, 1, 2, 3, 4]})
        self.check_grids(st)

    def test_history_on_load(self):
        """The exporter keeps a sample of every read of the tree (here
        scrapes of /metrics; on its own it reads every 5 s); a page opened
        later draws those samples at once, before it has gathered any."""
        want = 8

        def sampled():
            self.exp.metrics()
            h = json.loads(self.exp.get("/api/history")[2])
            n = sum(1 for s in h["samples"]
                    if any(g["label"] == "web" and g["occupancy_bytes"] is not None
                           for g in s["groups"]))
            return n >= want
        rt.wait_until(sampled, "the exporter's history to hold %d samples" % want,
                      interval=0.2, report=self.exp.output)
        self.wd.go(self.exp.url + "/")

        def drawn():
            st = self.wd.js(POINTS_JS)
            return st if st["history"] is not None and st["points"].get("web") else None
        st = rt.wait_until(drawn, "the page to draw the history", interval=0.1,
                           report=self.exp.output)
        self.assertGreaterEqual(int(st["history"]), want, st)
        # Each live refresh adds one point: the rest came from the history.
        self.assertGreaterEqual(st["points"]["web"] - st["updates"], want, st)
        for g in ("web", "batch", "db"):
            self.assertGreaterEqual(st["points"][g] - st["updates"], want, (g, st))


class BrowserMapMbps(BrowserCase):
    """Under mba_MBps the MB values are MBps targets."""
    PLATFORM = "intel-2s"
    OPTIONS = ["mba_MBps"]
    GROUPS = (("web", "L3:0=f;1=3\n", "MB:0=500;1=1000\n"),
              ("batch", "L3:0=f0;1=c\n", "MB:0=2000;1=300\n"),
              ("db", "L3:0=700;1=700\n", "MB:0=100;1=100\n"))

    def test_units(self):
        self.wd.go(self.exp.url + "/")
        st = self.page(min_updates=2)
        mb = self.mb_cells(st)
        self.assertEqual(mb["web"], ["500 MBps", "1000 MBps"])
        self.assertEqual(mb["batch"], ["2000 MBps", "300 MBps"])


class BrowserMapAmd(BrowserCase):
    """AMD: MB (and SMBA) values in 1/8 GB/s; more groups than the palette
    has colours."""
    PLATFORM = "amd-2s"
    GROUPS = (("web", "L3:0=f;1=3\n", "MB:0=16;1=2048\n"),
              ("batch", "L3:0=f0;1=c\n", "MB:0=8;1=20\n"),
              ("db", "L3:0=700;1=700\n", "MB:0=2048;1=2048\n"))
    EXTRA_GROUPS = 8

    def test_units_and_colours(self):
        self.wd.go(self.exp.url + "/")
        st = self.page(min_updates=3)
        mb = self.mb_cells(st)
        self.assertEqual(mb["web"], ["16 (2 GB/s)", "2048 (256 GB/s)"])
        self.assertEqual(mb["batch"], ["8 (1 GB/s)", "20 (2.5 GB/s)"])
        heads = self.wd.js("return [...document.querySelectorAll('#bandwidth h2')]"
                           ".map(h => h.textContent);")
        self.assertTrue(any(h.startswith("MB ") and "1/8 GB/s" in h for h in heads), heads)
        self.check_colours(min_groups=12)
        self.check_axes()
        self.check_noscript()
        path = artifact_path("exporter-map-amd.png")
        self.assertGreater(self.wd.screenshot(path), 10000)
        print("screenshot: " + path)


if __name__ == "__main__":
    rt.require_fuse()
    reason = browser_skip_reason()
    if reason:
        sys.stderr.write("SKIP: %s: %s\n" % (os.path.basename(sys.argv[0]), reason))
        sys.stdout.write("SKIP: %s\n" % reason)
        sys.exit(rt.SKIP)
    rt.main()
