#!/usr/bin/env python3
"""A long `clock advance` (up to 7 days of simulated time, one tick per
simulated second) runs in slices on the command thread: requests queued
meanwhile run between two slices instead of after the whole advance.
  - While a 7-day advance runs, a control request sent after it started is
    answered with a clock between the start and the end (the advance is
    still running), and a FUSE schemata write (a command, which waits for
    the command thread) completes before the advance's reply. Events and
    their order are observed, never durations.
  - The counters after an advance in slices are those of the same time
    advanced one second per request (the advance makes the same ticks)."""

import threading

import resctrlfs_test as rt

DAY_MS = 24 * 3600 * 1000
MiB = 1 << 20


class ClockAdvance(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"
    MANUAL_CLOCK = True

    def setUp(self):
        if rt.MSR:
            self.skipTest("msr label: inherent: the clock is the simulated machine's")
        super().setUp()

    def now(self):
        return self.status()["daemon"]["clock"]["now_ms"]

    def test_a_fuse_write_completes_while_a_long_advance_runs(self):
        self.assertEqual(self.mkdir("g0"), 0)
        for i in range(8):
            self.assertEqual(self.mkdir("g0/mon_groups/m%d" % i), 0)
        start = self.now()
        end = start + 7 * DAY_MS
        events = []
        replies = []

        def advance():
            replies.append(rt.control_request(self.fs.sock,
                                              {"cmd": "clock", "advance_ms": 7 * DAY_MS}))
            events.append("advance replied")

        t = threading.Thread(target=advance)
        t.start()
        try:
            # A status sent once the advance has begun: it is answered
            # between two slices, with the clock part of the way.
            seen = []
            rt.wait_until(lambda: seen.append(self.now()) or seen[-1] != start,
                          "the advance to begin", interval=0.001)
            self.assertLess(seen[-1], end,
                            "a status request waited for the whole advance: not sliced")
            self.assertEqual(self.write("g0/schemata", "L3:0=f;1=f\n"), 0)
            events.append("write done")
            self.assertIn("L3:0=f;1=f", self.read("g0/schemata"))
        finally:
            t.join()
        self.assertEqual(events, ["write done", "advance replied"])
        self.assertTrue(replies[0].get("ok"), replies)
        self.assertEqual(replies[0]["now_ms"], end)
        self.assertEqual(self.now(), end)

    def counters(self, fs):
        out = {}
        for g in ("", "g/"):
            for d in ("mon_L3_00", "mon_L3_01"):
                for f in ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"):
                    path = "%smon_data/%s/%s" % (g, d, f)
                    out[path] = fs.read(path)
        return out

    def test_counts_after_a_sliced_advance_are_those_of_single_ticks(self):
        other = rt.Mount(platform=self.PLATFORM)
        self.addCleanup(other.cleanup)
        other.set_manual_clock(True)
        for fs in (self.fs, other):
            self.assertEqual(fs.mkdir("g"), 0)
            self.assertEqual(fs.write("g/cpus_list", "1\n"), 0)
            self.assertEqual(fs.write("g/schemata", "L3:0=3;1=3\nMB:0=30;1=30\n"), 0)
            fs.workload(cpu=0, footprint_bytes=12 * MiB, bandwidth_mbps=3000.0)
            fs.workload(cpu=1, footprint_bytes=12 * MiB, bandwidth_mbps=9000.0)
        # (The clocks started real: each daemon's manual time starts where
        # its real time was.)
        mine_start = self.now()
        theirs_start = other.status()["daemon"]["clock"]["now_ms"]
        seconds = 250  # more than two slices of 100 s
        self.advance(seconds * 1000)
        for _ in range(seconds):
            other.advance(1000)
        self.assertEqual(self.now() - mine_start, seconds * 1000)
        self.assertEqual(other.status()["daemon"]["clock"]["now_ms"] - theirs_start,
                         seconds * 1000)
        mine, theirs = self.counters(self.fs), self.counters(other)
        self.assertEqual(mine, theirs)
        self.assertTrue(any(v != "0\n" for k, v in mine.items() if k.startswith("g/")
                            and k.endswith("mbm_total_bytes")), mine)


if __name__ == "__main__":
    rt.main()
