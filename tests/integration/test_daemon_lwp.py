#!/usr/bin/env python3
"""AMD Lightweight Profiling of a simulated thread through the mounted
daemon (ours: `resctrlfsctl lwp` and the control socket's lwp request), with
a manual clock, on a platform whose CPUID has LWP (an AMD profile with
"lwp": no built-in has it): a thread with an instruction rate and memory
traffic is armed for instructions retired and DCache misses of at least 64
cycles; records drained into a file and decoded to JSON lines by
resctrlfsctl show
  - more such misses per 1000 instructions and a higher mean latency after
    the thread moves from a group with an 11-way L3 mask to a 1-way one;
  - a higher mean latency under a bandwidth limit of 250 MB/s than without.
LWPVAL and LWPINS run through `lwp val` / `lwp ins` (the shipped
specification's event ids 1 and 255, as Microsoft's __lwpval / __lwpins
documentation gives them); LWP_CFG and LWP_CBADDR show among the registers.
The 2007 proposal's generation (a profile asking for it) writes the ids of
its Table 1 (1 instructions, 2 branches, 3 DCache misses) and Flags of its
Figure 6, and has neither instruction. A platform without LWP in CPUID
(intel-2s) refuses to arm. Bad requests and bad record files are refused
with a message. LWP exists only in the simulator, so the msr label skips
(inherent)."""

import atexit
import json
import os
import shutil
import subprocess
import tempfile

import resctrlfs_test as rt

MiB = 1 << 20

_PROFILES = tempfile.mkdtemp(prefix="resctrlfs-lwp-profiles-")
atexit.register(shutil.rmtree, _PROFILES, True)


def lwp_profile(name, lwp):
    """An AMD part with two 11-way L3s of 16 MiB, bandwidth limits, and LWP
    as `lwp` says; the path of its JSON file."""
    path = os.path.join(_PROFILES, name + ".json")
    cpus = [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4} for c in range(8)]
    with open(path, "w") as f:
        json.dump({"vendor": "AuthenticAMD", "family": 25, "model": 1, "stepping": 1,
                   "cpus": cpus, "l3_size_bytes": 16 * MiB, "l2_size_bytes": 512 * 1024,
                   "l3_cat": {"cbm_len": 11, "num_closid": 16},
                   "mb": {"num_closid": 16, "bw_len": 11},
                   "sim": {"mem_bandwidth_mbps": 20000}, "lwp": lwp}, f)
    return path


class Lwp(rt.ResctrlfsTestCase):
    PLATFORM = lwp_profile("shipped", {})  # 11-way L3 of 16 MiB per socket, MB
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

    def test_a_bandwidth_limit_raises_the_latency(self):
        self.assertEqual(self.mkdir("g"), 0)
        tid = self.thread_in("g")
        self.assertEqual(self.write("g/schemata", "MB:0=2048;1=2048\n"), 0)  # unlimited
        fast = self.measure(tid, "unlimited")
        self.assertEqual(self.write("g/schemata", "MB:0=2;1=2\n"), 0)  # 2 x 1/8 GB/s
        slow = self.measure(tid, "250 MBps")
        self.assertGreater(slow[1], 3 * fast[1])

    def test_lwpval_and_lwpins(self):
        self.assertEqual(self.mkdir("g"), 0)
        tid = self.thread_in("g")
        # LWPVAL's event with interval 9: a record every 10 executions.
        st = json.loads(self.run_ctl("lwp", "arm", "--tid", str(tid), "--value", "9").stdout)
        self.assertEqual(st["flags"], (1 << 0) | (1 << 1) | (1 << 31))  # EN, LWPVAL (id 1), INT
        self.assertEqual(st["generation"], "shipped")
        out = json.loads(self.run_ctl("lwp", "val", "--tid", str(tid), "--count", "100",
                                      "--data2", "4660", "--data1", "86", "--flags",
                                      "7").stdout)
        self.assertEqual(out["written"], 10)
        out = json.loads(self.run_ctl("lwp", "ins", "--tid", str(tid), "--data2", "1",
                                      "--data1", "2", "--flags", "3").stdout)
        self.assertEqual(out["written"], 1)
        self.assertEqual(out["full"], 0)
        path = os.path.join(self.tmp, "v")
        self.run_ctl("lwp", "drain", "--tid", str(tid), "--out", path)
        recs = [json.loads(l) for l in self.run_ctl("lwp", "decode", path).stdout.splitlines()]
        self.assertEqual([r["event_id"] for r in recs], [1] * 10 + [255])
        self.assertEqual((recs[0]["event"], recs[0]["data2"], recs[0]["data1"],
                          recs[0]["flags"]), ("programmed_value", "0x1234", 86, 7))
        self.assertEqual((recs[10]["event"], recs[10]["data2"], recs[10]["data1"],
                          recs[10]["flags"]), ("programmed_event", "0x1", 2, 3))
        r = self.ctl({"cmd": "lwp", "action": "ins", "tid": tid, "count": 0})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("'count' must be positive", r.get("error", ""))

    def test_lwp_registers(self):
        groups = self.ctl({"cmd": "registers"})["groups"]
        lwp = groups["lwp"]
        cfg = [r for r in lwp if r["msr"] == 0xC0000105]
        self.assertEqual(len(cfg), 8)
        # Booted with everything CPUID 8000_001Ch EDX offers (LWPVAL,
        # instructions, branches, DCache misses, interrupt), vector 0xEF,
        # COREID the CPU.
        for r in cfg:
            self.assertEqual(r["value"], (0xEF << 40) | (r["cpu"] << 32) | 0x8000001F)
        self.assertEqual({r["value"] for r in lwp if r["msr"] == 0xC0000106}, {0})

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
        self.assertEqual(st["flags"], (1 << 0) | (1 << 3) | (1 << 31))  # EN, BRE (id 3), INT
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
            with open(path, "rb") as g:
                f.write(g.read()[:64] + bytes(32))
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


class LwpProposal(rt.ResctrlfsTestCase):
    """A platform whose CPUID 8000_001Ch has the proposal's layout."""
    PLATFORM = lwp_profile("proposal", {"generation": "proposal"})
    MANUAL_CLOCK = True

    def setUp(self):
        if rt.MSR:
            self.skipTest("msr label: inherent: LWP exists only in the simulator")
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="resctrlfs-lwp-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def run_ctl(self, *args, ok=True):
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock] + list(args),
                             capture_output=True, text=True)
        if ok:
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        return out

    def test_the_proposals_ids_flags_and_no_instructions(self):
        p = subprocess.Popen(["sleep", "1000"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.ctl_ok({"cmd": "workload", "tid": p.pid, "cpu": 0, "footprint_bytes": 12 * MiB,
                     "bandwidth_mbps": 2000.0, "instructions_per_sec": 1e9})
        st = json.loads(self.run_ctl("lwp", "arm", "--tid", str(p.pid), "--instructions",
                                     "99999", "--branches", "99999", "--dcache", "9999",
                                     "--buffer", str(MiB)).stdout)
        self.assertEqual(st["generation"], "proposal")
        # Figure 6: EN bit 0, IRE 1, BRE 2, DME 3, INT 31.
        self.assertEqual(st["flags"], 0x8000000F)
        self.advance(20)
        path = os.path.join(self.tmp, "p")
        out = json.loads(self.run_ctl("lwp", "drain", "--tid", str(p.pid), "--out",
                                      path).stdout)
        self.assertEqual(out["generation"], "proposal")
        lines = self.run_ctl("lwp", "decode", "--generation", "proposal", path).stdout
        ids = {}
        for line in lines.splitlines():
            r = json.loads(line)
            ids[r["event_id"]] = r["event"]
        # Table 1: 1 instructions retired, 2 branches retired, 3 DCache misses.
        self.assertEqual(ids, {1: "instructions_retired", 2: "branches_retired",
                               3: "dcache_miss"})
        # Neither LWPVAL's event nor the instructions exist here.
        r = self.ctl({"cmd": "lwp", "action": "arm", "tid": p.pid, "value": 9})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("LWPVAL", r.get("error", ""))
        out = self.run_ctl("lwp", "ins", "--tid", str(p.pid), ok=False)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("proposal", out.stdout + out.stderr)
        # LWPMSR0 in the registers: EN, IRE, BRE, DME, INT; no upper bits.
        cfg = [r for r in self.ctl({"cmd": "registers"})["groups"]["lwp"]
               if r["msr"] == 0xC0000105]
        self.assertEqual({r["value"] for r in cfg}, {0x8000000F})


class LwpWithoutCpuid(rt.ResctrlfsTestCase):
    """intel-2s: its CPUID has no LWP, so there is no unit to arm."""
    PLATFORM = "intel-2s"
    MANUAL_CLOCK = True

    def test_arm_is_refused(self):
        if rt.MSR:
            self.skipTest("msr label: inherent: LWP exists only in the simulator")
        r = self.ctl({"cmd": "lwp", "action": "arm", "tid": os.getpid(), "instructions": 999})
        self.assertFalse(r.get("ok"), r)
        self.assertIn("no LWP", r.get("error", ""))
        self.assertIn("8000_0001h ECX[15]", r.get("error", ""))
        self.assertNotIn("lwp", self.ctl({"cmd": "registers"})["groups"])


if __name__ == "__main__":
    rt.main()
