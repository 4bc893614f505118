#!/usr/bin/env python3
"""resctrlfs-exporter against a mounted resctrlfs on a manual clock: the
scraped values equal the files, cumulative counters stay monotonic across a
hardware counter wrap and across counters that start again (a domain that
goes offline and comes back), and `promtool check metrics` accepts the
output on every platform shape (Intel with CDP, SNC, telemetry, AMD with
assignable counters and io_alloc), and with more idle connections than
descriptors the exporter neither spins nor stops serving."""

import os
import shutil
import socket
import subprocess

import exporter_harness as eh
import resctrlfs_test as rt

MON_EVENTS = ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes")


def group_dir(group, mon_group):
    d = "" if group == "/" else group + "/"
    if mon_group:
        d += "mon_groups/" + mon_group + "/"
    return d


class ExporterTest(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"
    MANUAL_CLOCK = True

    def setUp(self):
        super().setUp()
        self.exp = eh.Exporter(self.fs.mnt)
        self.addCleanup(self._stop_exporter)
        self.sleepers = []
        self.addCleanup(self._stop_sleepers)

    def _stop_exporter(self):
        if self._outcome_failed():
            print("--- exporter log ---\n" + self.exp.output())
        self.exp.stop()

    def _stop_sleepers(self):
        for p in self.sleepers:
            p.kill()
            p.wait()

    def sleeper_in(self, tasks_file, **workload):
        p = subprocess.Popen(["sleep", "600"])
        self.sleepers.append(p)
        if "/mon_groups/" in tasks_file:
            # A task joins a MON group from its parent CTRL_MON group.
            parent = tasks_file.split("/mon_groups/")[0] + "/tasks"
            self.assertEqual(self.write(parent, "%d\n" % p.pid), 0)
        self.assertEqual(self.write(tasks_file, "%d\n" % p.pid), 0)
        self.workload(tid=p.pid, **workload)
        return p

    def make_groups(self):
        self.assertEqual(self.write("schemata", "L3:0=ff;1=ff\n"), 0)
        self.assertEqual(self.mkdir("g1"), 0)
        self.assertEqual(self.mkdir("g2"), 0)
        self.assertEqual(self.mkdir("g1/mon_groups/m1"), 0)
        self.assertEqual(self.write("g1/schemata", "L3:0=f;1=3f\nMB:0=50\n"), 0)
        self.assertEqual(self.write("g2/schemata", "L3:0=700;1=400\n"), 0)
        self.assertEqual(self.write("g2/mode", "exclusive\n"), 0)
        self.sleeper_in("g1/mon_groups/m1/tasks", footprint_bytes=2 << 20, bandwidth_mbps=3000,
                        local_fraction=0.75)
        self.sleeper_in("g2/tasks", footprint_bytes=1 << 20, bandwidth_mbps=1000,
                        local_fraction=1.0)

    def test_values_equal_the_files(self):
        self.make_groups()
        self.advance(2000)
        s = eh.parse(self.exp.metrics())
        self.assertEqual(eh.one(s, "node_resctrl_up"), 1)
        # Every monitoring file of every group is either a sample equal to
        # the file (the manual clock stands still) or an omission.
        groups = [("/", ""), ("g1", ""), ("g1", "m1"), ("g2", "")]
        nonzero = 0
        for g, m in groups:
            for dom in ("mon_L3_00", "mon_L3_01"):
                for ev in MON_EVENTS:
                    text = self.read(group_dir(g, m) + "mon_data/%s/%s" % (dom, ev)).strip()
                    labels = {"group": g, "mon_group": m, "domain": dom}
                    if ev == "llc_occupancy":
                        got = eh.select(s, "node_resctrl_llc_occupancy_bytes", **labels)
                    else:
                        got = eh.select(s, "node_resctrl_mbm_bytes_total",
                                        scope="total" if ev == "mbm_total_bytes" else "local",
                                        **labels)
                    if text.isdigit():
                        self.assertEqual(len(got), 1, (g, m, dom, ev))
                        self.assertEqual(got[0][2], int(text), (g, m, dom, ev))
                        nonzero += int(text) > 0
                    else:
                        self.assertEqual(got, [], (g, m, dom, ev, text))
        self.assertGreater(nonzero, 4)
        # Controls equal schemata and mode.
        self.assertEqual(eh.one(s, "node_resctrl_group_cache_ways", group="g1", schema="L3",
                                domain="1"), 6)
        self.assertEqual(eh.one(s, "node_resctrl_group_cache_mask", group="g2", schema="L3",
                                domain="0"), 0x700)
        self.assertEqual(eh.one(s, "node_resctrl_group_bandwidth", group="g1", schema="MB",
                                domain="0"), 50)
        self.assertEqual(eh.one(s, "node_resctrl_group_mode", group="g2", mode="exclusive"), 1)
        usage = self.read("info/L3/bit_usage").strip()
        self.assertEqual(eh.one(s, "node_resctrl_bit_usage_ways", schema="L3", domain="0",
                                usage="exclusive"), usage.split(";")[0].count("E"))
        # Info: CLOSIDs (15 for L3 and MB on Ice Lake-SP), RMIDs (224), groups.
        self.assertEqual(eh.one(s, "node_resctrl_closids", schema="MB"),
                         int(self.read("info/MB/num_closids")))
        self.assertEqual(eh.one(s, "node_resctrl_closids_in_use"), 3)
        self.assertEqual(eh.one(s, "node_resctrl_closids_free"), 12)
        self.assertEqual(eh.one(s, "node_resctrl_rmids_in_use", resource="L3"), 4)
        self.assertEqual(eh.one(s, "node_resctrl_rmids_free", resource="L3"),
                         int(self.read("info/L3_MON/num_rmids")) - 4)
        # A new group shows on the next scrape, a removed one goes.
        self.assertEqual(self.mkdir("g3"), 0)
        s = eh.parse(self.exp.metrics())
        self.assertEqual(len(eh.select(s, "node_resctrl_group_mode", group="g3")), 4)
        self.assertEqual(self.rmdir("g3"), 0)
        s = eh.parse(self.exp.metrics())
        self.assertEqual(eh.select(s, "node_resctrl_group_mode", group="g3"), [])

    def mbm_total(self, s, group, dom):
        return eh.one(s, "node_resctrl_mbm_bytes_total", group=group, mon_group="",
                      domain=dom, scope="total")

    def test_counters_monotonic_across_a_wrap(self):
        # intel-2s counts MBM in 24-bit counters of 64 KiB: the hardware
        # counter wraps every 2^40 bytes, about 110 s at 10 GB/s. Steps of
        # 30 s keep each step below one wrap, as the kernel's once-a-second
        # overflow reads do.
        self.assertEqual(self.mkdir("g1"), 0)
        self.sleeper_in("g1/tasks", footprint_bytes=1 << 20, bandwidth_mbps=10000)
        files = ["g1/mon_data/mon_L3_0%d/mbm_total_bytes" % d for d in (0, 1)]
        prev = None
        for _ in range(10):
            self.advance(30000)
            s = eh.parse(self.exp.metrics())
            vals = [self.mbm_total(s, "g1", "mon_L3_0%d" % d) for d in (0, 1)]
            self.assertEqual(vals, [int(self.read(f)) for f in files])
            if prev:
                self.assertTrue(all(v >= p for v, p in zip(vals, prev)), (prev, vals))
            prev = vals
        self.assertGreater(sum(prev), 2 * (1 << 40))  # wrapped twice at least
        self.assertEqual(eh.one(s, "node_resctrl_mon_data_resets_total"), 0)

    def test_counters_monotonic_when_a_domain_starts_again(self):
        # g1 owns CPU 0 and CPU 4 (one per domain), each running traffic.
        self.assertEqual(self.mkdir("g1"), 0)
        self.assertEqual(self.write("g1/cpus_list", "0,4\n"), 0)
        for cpu in (0, 4):
            self.workload(cpu=cpu, footprint_bytes=1 << 20, bandwidth_mbps=4000)
        self.advance(5000)
        s = eh.parse(self.exp.metrics())
        before = [self.mbm_total(s, "g1", "mon_L3_0%d" % d) for d in (0, 1)]
        self.assertGreater(before[1], 0)
        # Domain 1 (CPUs 4-7) goes offline and comes back with fresh counters.
        for cpu in (4, 5, 6, 7):
            self.ctl_ok({"cmd": "cpu", "cpu": cpu, "online": False})
        s = eh.parse(self.exp.metrics())
        self.assertEqual(eh.select(s, "node_resctrl_mbm_bytes_total", domain="mon_L3_01"), [])
        for cpu in (4, 5, 6, 7):
            self.ctl_ok({"cmd": "cpu", "cpu": cpu, "online": True})
        self.advance(1000)
        files = [int(self.read("g1/mon_data/mon_L3_0%d/mbm_total_bytes" % d)) for d in (0, 1)]
        self.assertLess(files[1], before[1])  # the file started again
        s = eh.parse(self.exp.metrics())
        after = [self.mbm_total(s, "g1", "mon_L3_0%d" % d) for d in (0, 1)]
        self.assertEqual(after[0], files[0])
        self.assertGreater(after[0], before[0])
        # The exported total went on from where it was.
        self.assertEqual(after[1], before[1] + files[1])
        # (the default group's domain-1 counters started again too)
        self.assertGreaterEqual(eh.one(s, "node_resctrl_mon_data_resets_total"), 1)

    def test_http(self):
        status, ctype, body = self.exp.get("/metrics")
        self.assertEqual(status, 200)
        self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8")
        status, ctype, body = self.exp.get("/")
        self.assertEqual(ctype, "text/html; charset=utf-8")
        self.assertIn('id="legend"', body)
        import urllib.error
        import urllib.request
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(self.exp.url + "/missing")
        self.assertEqual(e.exception.code, 404)
        req = urllib.request.Request(self.exp.url + "/metrics", data=b"x", method="POST")
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        self.assertIn(e.exception.code, (405, 413))
        # Hostile requests get a status, and the exporter goes on serving.
        for raw, want in ((b"GET / HTTP/1.1\r\nX: " + b"a" * 20000 + b"\r\n\r\n", b" 413 "),
                          (b"NONSENSE\r\n\r\n", b" 400 "),
                          (b"GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", b" 413 ")):
            host, port = self.exp.url[len("http://"):].split(":")
            with socket.create_connection((host, int(port))) as c:
                c.sendall(raw)
                reply = c.recv(4096)
            self.assertIn(want, reply.split(b"\r\n")[0], raw[:40])
        self.assertEqual(self.exp.get("/metrics")[0], 200)
        # The exporter keeps serving after the tree goes away, and says so.
        self.fs.stop()
        s = eh.parse(self.exp.metrics())
        self.assertEqual(eh.one(s, "node_resctrl_up"), 0)


class OutOfDescriptors(rt.ResctrlfsTestCase):
    """64 descriptors and 150 idle connections from one client: the
    exporter closes the connections that would take its last descriptors
    (a scrape needs some) instead of running out, and does not spin (a
    server retrying a failed accept() at once burns 100 % CPU); once the
    connections close it serves."""

    def test_idle_connections_past_the_fd_limit(self):
        exp = eh.Exporter(self.fs.mnt, wrapper=["prlimit", "--nofile=64:64", "--"])
        self.addCleanup(exp.stop)
        self.assertEqual(exp.get("/metrics")[0], 200)  # the tree's descriptors are held
        ticks, conns = rt.idle_cpu_ticks_past_fd_limit(
            exp.proc.pid, lambda: socket.create_connection(exp.address(), timeout=30), 150)
        try:
            # A spin burns up to 500 ticks in those 5 s (about 100 at nice 19
            # on a loaded machine); shedding a connection every 100 ms burns
            # next to none.
            self.assertLess(ticks, 50, exp.output())
            self.assertLessEqual(rt.open_fds(exp.proc.pid), 64)
        finally:
            for c in conns:
                c.close()
        s = eh.parse(exp.metrics())
        self.assertEqual(eh.one(s, "node_resctrl_up"), 1)
        self.assertEqual(eh.one(s, "node_resctrl_samples_omitted_total", reason="read_failed"), 0)
        self.assertIn("connection(s) closed as soon as accepted", exp.output())


class Promtool(rt.ResctrlfsTestCase):
    """promtool (Debian package prometheus) lints the output of every shape."""

    def test_promtool_accepts_every_platform(self):
        promtool = shutil.which("promtool")
        if promtool is None:
            self.fail("promtool is missing: install the Debian package prometheus (dev.sh DEPS)")
        for platform, options in (("intel-2s", []), ("intel-2s", ["cdp", "mba_MBps"]),
                                  ("intel-snc", []), ("intel-aet", []), ("amd-io", []),
                                  ("intel-bdx", [])):
            with self.subTest(platform=platform, options=options):
                m = rt.Mount(platform=platform, options=options)
                self.addCleanup(m.cleanup)
                m.set_manual_clock(True)
                self.assertEqual(m.mkdir("g1"), 0)
                self.assertEqual(m.mkdir("g1/mon_groups/m\"1\\x"), 0)
                exp = eh.Exporter(m.mnt)
                try:
                    p = subprocess.Popen(["sleep", "60"])
                    self.assertEqual(m.write("g1/tasks", "%d\n" % p.pid), 0)
                    m.workload(tid=p.pid, footprint_bytes=1 << 20, bandwidth_mbps=100)
                    m.advance(1500)
                    text = exp.metrics()
                    p.kill()
                    p.wait()
                    r = subprocess.run([promtool, "check", "metrics"], input=text, text=True,
                                       capture_output=True)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr + "\n" + text)
                    s = eh.parse(text)
                    self.assertEqual(eh.one(s, "node_resctrl_up"), 1)
                    self.assertTrue(eh.select(s, "node_resctrl_llc_occupancy_bytes",
                                              mon_group='m"1\\x'))
                    if platform == "intel-snc":
                        self.assertTrue(eh.select(s, "node_resctrl_llc_occupancy_bytes",
                                                  domain="mon_sub_L3_01"))
                    if platform == "intel-aet":
                        self.assertTrue([x for x in s if x[0].startswith("node_resctrl_perf_pkg_")])
                finally:
                    exp.stop()
                    m.cleanup()


if __name__ == "__main__":
    rt.main()
