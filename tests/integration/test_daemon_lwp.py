#!/usr/bin/env python3
"""AMD Lightweight Profiling of a simulated thread through the mounted
daemon (ours: `resctrlfsctl lwp` and the control socket's lwp request), with
a manual clock: a thread with an instruction rate and memory traffic is
armed for instructions retired and DCache misses of at least 64 cycles;
records drained into a file and decoded to JSON lines by resctrlfsctl show
  - more such misses per 1000 instructions and a higher mean latency after
    the thread moves from a group with an 11-way L3 mask to a 1-way one;
  - a higher mean latency under MB 10 than under MB 100.
Bad requests and bad record files are refused with a message. LWP exists
only in the simulator, so the msr label skips (inherent)."""

import json
import os
import subprocess
import tempfile

import resctrlfs_test as rt

MiB = 1 << 20


class Lwp(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"  # 11-way L3 of 16 MiB per socket, MBA
    MANUAL_CLOCK = True

    def setUp(self):
        if rt.MSR:
            self.skipTest("msr label: inherent: LWP exists only in the simulator "
                          "(no kernel enables it, no current processor has it)")
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="resctrlfs-lwp-")

    def run_ctl(self, *args, ok=True):
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock] + list(args),
                             capture_output=True, text=True)
        if ok:
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return out

    def thread_in(self, group):
        p = subprocess.Popen(["sleep", "1000"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(self.write(group + "/tasks", "%d\n" % p.pid), 0)
        self.ctl_ok({"cmd": "workload", "tid": p.pid, "cpu": 0, "footprint_bytes": 12 * MiB,
                     "bandwidth_mbps": 2000.0, "instructions_per_sec": 1e9})
        return p.pid

    def measure(self, tid, name):
        """Arms, empties the ring, runs 200 ms, drains to a file, decodes it."""
        self.run_ctl("lwp", "arm", "--tid", str(tid), "--instructions", "99999", "--dcache",
                     "9999", "--min-latency", "4", "--buffer", str(MiB))
        self.run_ctl("lwp", "drain", "--tid", str(tid), "--out", os.path.join(self.tmp, "x"))
        self.advance(200)
        path = os.path.join(self.tmp, name)
        out = self.run_ctl("lwp", "drain", "--tid", str(tid), "--out", path)
        summary = json.loads(out.stdout)
        self.assertEqual(summary["missed"], 0, summary)
        self.assertEqual(os.path.getsize(path), 32 * summary["records"])
        lines = self.run_ctl("lwp", "decode", path).stdout.splitlines()
        self.assertEqual(len(lines), summary["records"])
        instr = misses = latency = 0
        for line in lines:
            r = json.loads(line)
            if r["event"] == "instructions_retired":
                instr += 100000
            elif r["event"] == "dcache_miss":
                self.assertGreaterEqual(r["latency"], 64)
                self.assertEqual(r["latency"] % 16, 0)
                self.assertEqual(r["core_id"], 0)
                misses += 10000
                latency += r["latency"] * 10000
        self.assertGreater(instr, 0)
        self.assertGreater(misses, 0)
        m = (misses * 1000.0 / instr, latency / misses)
        print("%s: %.1f misses >= 64 cycles per 1000 instructions, mean latency %.0f cycles"
              % (name, m[0], m[1]))
        return m

    def test_records_respond_to_the_cache_mask(self):
        self.assertEqual(self.mkdir("wide"), 0)
        self.assertEqual(self.mkdir("narrow"), 0)
        self.assertEqual(self.write("wide/schemata", "L3:0=7ff;1=7ff\n"), 0)
        self.assertEqual(self.write("narrow/schemata", "L3:0=1;1=1\n"), 0)
        tid = self.thread_in("wide")
        wide = self.measure(tid, "11-way")
        self.assertEqual(self.write("narrow/tasks", "%d\n" % tid), 0)
        narrow = self.measure(tid, "1-way")
        self.assertGreater(narrow[0], 2 * wide[0])
        self.assertGreater(narrow[1], 1.2 * wide[1])

    def test_mb_10_raises_the_latency(self):
        self.assertEqual(self.mkdir("g"), 0)
        tid = self.thread_in("g")
        self.assertEqual(self.write("g/schemata", "MB:0=100;1=100\n"), 0)
        fast = self.measure(tid, "MB 100")
        self.assertEqual(self.write("g/schemata", "MB:0=10;1=10\n"), 0)
        slow = self.measure(tid, "MB 10")
        self.assertGreater(slow[1], 3 * fast[1])

    def test_status_disarm_and_refusals(self):
        self.assertEqual(self.mkdir("g"), 0)
        tid = self.thread_in("g")
        r = self.ctl({"cmd": "lwp", "action": "arm", "tid": tid})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("at least one of", r.get("error", ""))
        r = self.ctl({"cmd": "lwp", "action": "arm", "tid": tid, "instructions": 10,
                      "buffer_bytes": 1000})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("BufferSize", r.get("error", ""))
        r = self.ctl({"cmd": "lwp", "action": "drain", "tid": tid})
        self.assertFalse(r.get("ok"), r)  # never armed
        out = self.run_ctl("lwp", "arm", "--tid", str(tid), "--branches", "999", "--threshold",
                           "3200", "--buffer", "65536")
        st = json.loads(out.stdout)
        self.assertTrue(st["active"])
        self.assertEqual(st["flags"], (1 << 0) | (1 << 3) | (1 << 31))  # EN, BRE, INT
        self.advance(10)  # 2e6 branches: 2000 records, the threshold of 100 crossed
        st = json.loads(self.run_ctl("lwp", "status", "--tid", str(tid)).stdout)
        self.assertEqual(st["pending_records"], 2000)
        self.assertEqual(st["interrupts"], 1)
        st = json.loads(self.run_ctl("lwp", "disarm", "--tid", str(tid)).stdout)
        self.assertFalse(st["active"])
        path = os.path.join(self.tmp, "b")
        self.run_ctl("lwp", "drain", "--tid", str(tid), "--out", path)
        for line in self.run_ctl("lwp", "decode", path).stdout.splitlines():
            r = json.loads(line)
            self.assertEqual(r["event"], "branches_retired")
            self.assertTrue(r["prediction_valid"])
        # A file that is not LWP records: refused, naming the record.
        bad = os.path.join(self.tmp, "bad")
        with open(bad, "wb") as f:
            f.write(open(path, "rb").read()[:64] + bytes(32))
        out = self.run_ctl("lwp", "decode", bad, ok=False)
        self.assertEqual(out.returncode, 1)
        self.assertIn("record 2 (offset 64): event id 0 is invalid", out.stderr)
        with open(bad, "wb") as f:
            f.write(bytes(33))
        out = self.run_ctl("lwp", "decode", bad, ok=False)
        self.assertIn("not a multiple of 32", out.stderr)

    def lwp_usage(self):
        return self.status()["daemon"]["lwp"]

    def sleeper(self):
        p = subprocess.Popen(["sleep", "1000"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        return p

    def test_units_only_for_live_threads_freed_and_capped(self):
        self.assertEqual(self.lwp_usage()["units"], 0)
        # An id no thread has (beyond any pid_max): refused, nothing held.
        for tid in (2 ** 31 - 1, 4194305):
            r = self.ctl({"cmd": "lwp", "action": "arm", "tid": tid, "instructions": 10})
            self.assertFalse(r.get("ok"), r)
            self.assertIn("no thread %d" % tid, r.get("error", ""))
        self.assertEqual(self.lwp_usage(), {"units": 0, "bytes": 0, "limit_bytes": 64 * MiB})
        # A disarm with nothing to drain frees the unit and its ring.
        a = self.sleeper()
        self.run_ctl("lwp", "arm", "--tid", str(a.pid), "--instructions", "999",
                     "--buffer", str(MiB))
        self.assertEqual(self.lwp_usage()["units"], 1)
        self.assertEqual(self.lwp_usage()["bytes"], MiB)
        self.run_ctl("lwp", "disarm", "--tid", str(a.pid))
        self.assertEqual(self.lwp_usage()["units"], 0)
        # The thread's exit frees it.
        self.run_ctl("lwp", "arm", "--tid", str(a.pid), "--instructions", "999",
                     "--buffer", str(MiB))
        a.kill()
        a.wait()
        rt.wait_until(lambda: self.lwp_usage()["units"] == 0, "the exited thread's unit to go")
        # The cap: 64 MiB of rings, four of the largest; a fifth is refused
        # with the limit named and nothing held for it.
        threads = [self.sleeper() for _ in range(5)]
        for p in threads[:4]:
            self.run_ctl("lwp", "arm", "--tid", str(p.pid), "--instructions", "999",
                         "--buffer", str(16 * MiB))
        self.assertEqual(self.lwp_usage(), {"units": 4, "bytes": 64 * MiB,
                                            "limit_bytes": 64 * MiB})
        r = self.ctl({"cmd": "lwp", "action": "arm", "tid": threads[4].pid, "instructions": 999,
                      "buffer_bytes": 65536})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("over the simulator's limit of 67108864", r.get("error", ""))
        self.assertEqual(self.lwp_usage()["units"], 4)


if __name__ == "__main__":
    rt.main()
