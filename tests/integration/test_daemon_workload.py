#!/usr/bin/env python3
"""`resctrlfsctl workload` and the control socket's workload request for
threads: an unknown thread id is refused with an error; `--tid T --cpu C`
pins the thread's workload to CPU C; an unpinned thread's workload follows
the thread's real affinity (sched_getaffinity): restricted to some of this
machine's CPUs, it runs on those CPUs of the simulated machine; free to run
anywhere, it spreads over every L3 domain, and its telemetry (PERF_PKG)
over every package."""

import os
import subprocess

import resctrlfs_test as rt

L3_0 = "g/mon_data/mon_L3_00/mbm_total_bytes"
L3_1 = "g/mon_data/mon_L3_01/mbm_total_bytes"


class ThreadWorkloads(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"  # CPUs 0-3 share L3 0, CPUs 4-7 L3 1
    MANUAL_CLOCK = True

    def sleeper(self, cpus=None):
        def pin():
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
        p = subprocess.Popen(["sleep", "1000"], preexec_fn=pin)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0)
        return p.pid

    def num(self, rel):
        return int(self.read(rel))

    def assertAbout(self, got, want):
        self.assertAlmostEqual(got, want, delta=max(want * 0.02, 1 << 17),
                               msg="%d is not about %d" % (got, want))

    def test_unknown_tid_is_refused(self):
        p = subprocess.Popen(["true"])
        p.wait()  # reaped: its id names no thread now
        r = self.ctl({"cmd": "workload", "tid": p.pid, "bandwidth_mbps": 100})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("no thread %d" % p.pid, r.get("error", ""))
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload", "--tid",
                              str(p.pid), "--bandwidth", "100"],
                             capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0, out.stdout)
        self.assertIn("no thread", out.stdout + out.stderr)

    def test_tid_and_cpu_pins_the_thread(self):
        tid = self.sleeper()
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload", "--tid",
                              str(tid), "--cpu", "5", "--bandwidth", "1000"],
                             capture_output=True, text=True)
        if rt.MSR:
            # Inherent: real hardware has no workload knob; the daemon says so.
            self.assertNotEqual(out.returncode, 0, out.stdout)
            self.assertIn("the backend is not simulated", out.stdout + out.stderr)
            self.skipTest("msr label: inherent: thread workloads need the simulated scheduler "
                          "(the refusal above is what the msr backend answers)")
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.advance(2000)
        self.assertEqual(self.num(L3_0), 0)
        self.assertAbout(self.num(L3_1), 2e9)

    def test_unpinned_thread_spreads_over_every_domain(self):
        tid = self.sleeper()
        self.workload(tid=tid, bandwidth_mbps=1000)
        self.advance(2000)
        self.assertAbout(self.num(L3_0), 1e9)
        self.assertAbout(self.num(L3_1), 1e9)

    def test_unpinned_thread_follows_its_affinity(self):
        if len(os.sched_getaffinity(0)) < 2:
            self.skipTest("one CPU: no affinity can leave one out")
        tid = self.sleeper(cpus={0})
        self.workload(tid=tid, bandwidth_mbps=1000)
        self.advance(2000)
        self.assertAbout(self.num(L3_0), 2e9)
        self.assertEqual(self.num(L3_1), 0)


class TelemetryThreadWorkloads(rt.ResctrlfsTestCase):
    PLATFORM = "intel-aet"  # CPUs 0-3 in package 0, CPUs 4-7 in package 1
    MANUAL_CLOCK = True

    def test_unpinned_thread_counts_on_every_package(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        p = subprocess.Popen(["sleep", "60"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0, self.lcs())
        self.assertEqual(self.write("g/mon_groups/m/tasks", "%d\n" % p.pid), 0, self.lcs())
        self.workload(tid=p.pid, bandwidth_mbps=2000)
        self.advance(2000)
        for pkg in ("00", "01"):
            mon = self.read("g/mon_groups/m/mon_data/mon_PERF_PKG_%s/unhalted_ref_cycles" % pkg)
            ctrl = self.read("g/mon_data/mon_PERF_PKG_%s/unhalted_ref_cycles" % pkg)
            # Half of two seconds on each package.
            self.assertAlmostEqual(int(mon), 2.0e9, delta=2.0e6)
            # The CTRL_MON group's own RMID never ran: the sum is the MON group's.
            self.assertEqual(ctrl, mon)
            self.assertRegex(self.read("g/mon_data/mon_PERF_PKG_%s/core_energy" % pkg),
                             r"^[0-9]+\.[0-9]{6}\n$")
        self.workload(tid=p.pid)


if __name__ == "__main__":
    rt.main()
