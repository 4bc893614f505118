#!/usr/bin/env python3
"""The real-hardware path's own behaviour: resctrlfsd --backend msr with
resctrl-msrd, over resctrl-fakehw's emulation of /dev/cpu/N/{cpuid,msr} (the
harness's msr mode, forced on here whatever the label).

- The RDT evidence: with --rdt-from-cpuid the precondition check reads CPUID
  (through --hw-root), so a CPU whose CPUID has no RDT is refused with a
  clear message, and one that has it starts here although /proc/cpuinfo
  lists no RDT flag.
- The broker killed under a mounted daemon: commands fail with EIO and a
  message in info/last_cmd_status, nothing is applied, and once the broker
  is back the daemon reconnects by itself and writes every register again
  from its model (a cpus write accepted during the outage, a register a
  command left half-applied when the broker died in the middle of it).
- A slow machine: while a command waits on the broker, reads that need no
  register are answered, showing the configuration before the command.
- Batching: a command's register writes reach the broker as one request.
- Task-only groups (docs/hardware.md, "Tasks on real hardware"): a thread moved into a
  group without CPUs is listed in its tasks, no CPU's PQR_ASSOC changes, and
  its mon_data files read Unavailable.
- A peer that is not the allowed uid is refused by the broker, and a daemon
  the broker refuses does not mount.
- I/O RDT: the daemon reads the IRDT table resctrl-fakehw publishes under
  --hw-root, and a channel's tags reach its registers through resctrl-msrd
  and the emulated /dev/mem (read back there); rmdir puts them back to 0.
  The width of a register whose RCS has REGW clear (4 or 8 bytes: the
  specification says both) is probed by the broker on the machine and
  found by the daemon through it: the tags land at that width's offsets.
- Intel PMT telemetry: the daemon finds the aggregators resctrl-fakehw
  publishes as the intel_pmt driver does (sys/class/intel_pmt/telem<N>), and
  each read of a PERF_PKG file reads their telem files through resctrl-msrd
  at that moment; a telem file whose reads fail makes the counter read
  Unavailable, as one without data for the RMID, until it reads again.
"""

import errno
import json
import os
import signal
import socket
import struct
import subprocess
import threading
import unittest

import resctrlfs_test as rt

rt.MSR = True  # this file is about the msr path, under every label

NO_RDT_PROFILE = {
    "vendor": "GenuineIntel", "family": 6, "model": 85,
    "cpus": [{"cpu": c, "package": 0, "l2": c, "l3": 0} for c in range(4)],
}


def reg_map(regs):
    return {(r["cpu"], r["msr"]): r["value"] for r in regs}


class RdtEvidence(unittest.TestCase):
    def test_cpuid_without_rdt_is_refused(self):
        m = rt.Mount(start=False)
        self.addCleanup(m.cleanup)
        profile = os.path.join(m.dir, "no-rdt.json")
        with open(profile, "w") as f:
            json.dump(NO_RDT_PROFILE, f)
        hw = rt.FakeHw(profile, m.dir)
        self.addCleanup(hw.stop)
        # The broker itself refuses such a machine; the daemon must say why
        # before it ever needs one.
        argv = [rt.daemon_binary(), "-f", "--backend", "msr", "--hw-root", hw.root,
                "--rdt-from-cpuid", "--broker", os.path.join(m.dir, "none.sock"),
                "--state-dir", m.state_dir, m.mnt]
        r = subprocess.run(argv, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no RDT/PQoS", r.stderr)
        self.assertFalse(rt.is_mounted(m.mnt))
        b = subprocess.run([rt._find_binary("RESCTRL_MSRD", "hw/resctrl-msrd"), "--socket",
                            os.path.join(m.dir, "b.sock"), "--hw-root", hw.root],
                           capture_output=True, text=True)
        self.assertEqual(b.returncode, 3, b.stderr)
        self.assertIn("enumerates no RDT/PQoS", b.stderr)

    def test_cpuid_with_rdt_starts_without_cpuinfo_flags(self):
        with open("/proc/cpuinfo") as f:
            host_has_rdt = any(w in f.read().split() for w in ("rdt_a", "cat_l3", "cqm", "mba"))
        m = rt.Mount(platform="intel-2s", start=False)
        self.addCleanup(m.cleanup)
        argv = m.argv()
        if not host_has_rdt:
            # Without --rdt-from-cpuid, /proc/cpuinfo is the evidence: refused.
            plain = [a for a in argv if a != "--rdt-from-cpuid"]
            r = subprocess.run(plain, capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("/proc/cpuinfo", r.stderr)
            self.assertFalse(rt.is_mounted(m.mnt))
        m.start()
        self.assertEqual(m.read("info/L3/num_closids"), "15\n")  # Ice Lake-SP's 15
        self.assertEqual(m.status()["daemon"]["backend"], "msr")


class BrokerFaults(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    def regs(self):
        return reg_map(self.registers())

    def test_broker_killed_and_restarted(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=f\n"), 0, self.lcs())
        before_regs = self.regs()
        before = self.read("g/schemata")

        self.fs.broker.stop(signal.SIGKILL)
        self.assertEqual(self.write("g/schemata", "L3:0=3;1=3\n"), errno.EIO)
        self.assertNotEqual(self.lcs(), "ok\n")
        self.assertTrue(self.lcs().strip(), "no message in last_cmd_status")
        self.assertEqual(self.read("g/schemata"), before)  # nothing half-applied
        self.assertEqual(self.regs(), before_regs)
        # A cpus write cannot fail on the kernel (PQR_ASSOC is written by
        # IPI); here too it changes the model, and the CPU whose register
        # could not be written is re-programmed by the next change.
        self.assertEqual(self.write("g/cpus_list", "2\n"), 0)
        self.assertEqual(self.read("g/cpus_list"), "2\n")
        self.assertEqual(self.regs(), before_regs)
        # Files that need no register still read.
        self.assertEqual(self.read("info/L3/cbm_mask"), "7ff\n")

        self.fs.broker.start()
        # Without any command the daemon reconnects (its 1 s monitoring
        # worker reads counters) and writes every register again from its
        # model: CPU 2, missed during the outage, now runs with g's CLOSID.
        after = self.wait_for_registers(lambda r: r[(2, 0xC8F)] >> 32 != 0)
        g_assoc = after[(2, 0xC8F)]
        self.assertEqual({k: v for k, v in after.items() if k != (2, 0xC8F)},
                         {k: v for k, v in before_regs.items() if k != (2, 0xC8F)})
        self.assertEqual(self.read("g/schemata"), before)
        self.assertEqual(self.write("g/schemata", "L3:0=3;1=3\n"), 0, self.lcs())
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.write("g/cpus_list", "2-3\n"), 0, self.lcs())
        self.assertIn("L3:0=3;1=3", self.read("g/schemata"))
        after = self.regs()
        self.assertNotEqual(after, before_regs)
        # CPUs 2 (missed during the outage) and 3 run with g's CLOSID.
        self.assertEqual(after[(2, 0xC8F)], g_assoc)
        self.assertEqual(after[(3, 0xC8F)], g_assoc)

    def wait_for_registers(self, pred):
        """The registers once pred() holds for them: the daemon re-programs
        them on its tick after the broker is back, however late."""
        def matching():
            regs = self.regs()
            return (regs,) if pred(regs) else None
        return rt.wait_until(matching, "the daemon to re-program the registers", interval=0.2,
                             report=lambda: self.fs.daemon_log()[-2000:] + "\n" +
                             self.fs.broker.log()[-2000:])[0]

    def test_broker_killed_in_the_middle_of_a_command(self):
        """The broker dies while it holds a batch: the first register of the
        command reached the machine, the second never did. The command
        fails with EIO, the files keep the old configuration, and once the
        broker is back the daemon puts the register that changed back."""
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=f;1=f\n"), 0, self.lcs())
        before = self.read("g/schemata")
        before_regs = self.regs()
        self.fs.hw.ctl({"cmd": "delay", "us": 600 * 1000 * 1000})
        result = {}

        def writer():
            result["rc"] = self.write("g/schemata", "L3:0=3;1=3\n")

        t = threading.Thread(target=writer)
        t.start()
        try:
            rt.wait_until(lambda: self.fs.hw.ctl({"cmd": "counts"})["waiting"] != 0,
                          "the write to reach the machine", interval=0.05)
            # The broker dies as soon as its access returns (a process in
            # a FUSE request the file system has taken waits for the answer).
            self.fs.broker.proc.send_signal(signal.SIGKILL)
        finally:
            # The access held back completes: the first register is written.
            self.fs.hw.ctl({"cmd": "delay", "us": 0})
            t.join(120)
        self.fs.broker.stop(signal.SIGKILL)
        self.assertEqual(result.get("rc"), errno.EIO)
        self.assertTrue(self.lcs().strip() and self.lcs() != "ok\n", self.lcs())
        self.assertEqual(self.read("g/schemata"), before)
        half = self.regs()
        changed = {k for k in half if half[k] != before_regs[k]}
        self.assertEqual(len(changed), 1, "not one register half-applied: %s" % changed)

        self.fs.broker.start()
        self.wait_for_registers(lambda r: r == before_regs)
        self.assertEqual(self.read("g/schemata"), before)
        self.assertEqual(self.write("g/schemata", "L3:0=3;1=3\n"), 0, self.lcs())
        self.assertIn("L3:0=3;1=3", self.read("g/schemata"))

    def test_slow_broker_leaves_reads_answered(self):
        self.assertEqual(self.mkdir("g"), 0)
        schemata = self.read("g/schemata")
        self.fs.hw.ctl({"cmd": "delay", "us": 600 * 1000 * 1000})
        result = {}

        def writer():
            result["rc"] = self.write("g/schemata", "L3:0=1\n")

        t = threading.Thread(target=writer)
        t.start()
        try:
            # The write is now waiting on the machine; these need no register.
            for _ in range(20):
                self.assertEqual(self.read("info/L3/cbm_mask"), "7ff\n")
                self.assertEqual(self.read("schemata").count("\n"), 2)
                self.assertEqual(self.listdir("info"), ["L3", "L3_MON", "MB", "last_cmd_status"])
                self.assertEqual(self.read("g/schemata"), schemata)
            self.assertTrue(t.is_alive(), "the write did not wait for the slow machine")
        finally:
            self.fs.hw.ctl({"cmd": "delay", "us": 0})
            t.join(120)
        self.assertEqual(result.get("rc"), 0, self.lcs())
        self.assertIn("L3:0=1;", self.read("g/schemata"))


# Two sockets of 4 CPUs with L3 CAT and MBA and no monitoring, so that no
# worker touches the broker between commands.
NO_MON_PROFILE = {
    "vendor": "GenuineIntel", "family": 6, "model": 143,
    "cpus": [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4} for c in range(8)],
    "l3_size_bytes": 1 << 25,
    "l3_cat": {"cbm_len": 11, "num_closid": 16},
    "mba": {"num_closid": 8, "max_delay": 90, "linear": True},
}


class Batching(unittest.TestCase):
    """A command's register accesses reach the broker as one request."""

    def test_one_round_trip_per_command(self):
        m = rt.Mount(start=False)
        self.addCleanup(m.cleanup)
        profile = os.path.join(m.dir, "no-mon.json")
        with open(profile, "w") as f:
            json.dump(NO_MON_PROFILE, f)
        m.platform = profile
        m.start()
        self.assertNotIn("L3_MON", m.listdir("info"))

        def cost(fn):
            t0 = m.status()["daemon"]["broker"]
            w0 = m.hw.ctl({"cmd": "counts"})["writes"]
            self.assertEqual(fn(), 0, m.lcs())
            t1 = m.status()["daemon"]["broker"]
            w1 = m.hw.ctl({"cmd": "counts"})["writes"]
            return t1["round_trips"] - t0["round_trips"], t1["ops"] - t0["ops"], w1 - w0

        # mkdir: the new CLOSID's registers already hold the defaults.
        self.assertEqual(cost(lambda: m.mkdir("g")), (0, 0, 0))
        # Two domains, two resources: four registers, one request.
        self.assertEqual(cost(lambda: m.write("g/schemata", "L3:0=3;1=3\nMB:0=50;1=50\n")),
                         (1, 4, 4))
        # Six CPUs change group: six PQR_ASSOC writes, one request.
        self.assertEqual(cost(lambda: m.write("g/cpus_list", "1-6\n")), (1, 6, 6))
        # Nothing changes: no request at all.
        self.assertEqual(cost(lambda: m.write("g/cpus_list", "1-6\n")), (0, 0, 0))
        regs = reg_map(m.registers())
        for cpu in range(8):
            self.assertEqual(regs[(cpu, 0xC8F)] >> 32 != 0, 1 <= cpu <= 6, cpu)


class IoRdtChannels(rt.ResctrlfsTestCase):
    PLATFORM = "intel-gnr-io"
    OPTIONS = ["iordt"]

    def mem(self, addr, width=2):
        fd = os.open(os.path.join(self.fs.hw.root, "dev/mem"), os.O_RDONLY)
        try:
            return int.from_bytes(os.pread(fd, width, addr), "little")
        finally:
            os.close(fd)

    def test_a_move_reaches_the_channel_registers(self):
        self.assertEqual(self.read("channels"), "0x100\n0x101\n0x102\n0x10200\n")
        before = self.fs.hw.ctl({"cmd": "counts"})["mmio_writes"]
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/mon_groups/m/channels", "0x100\n"), 0, self.lcs())
        self.assertGreater(self.fs.hw.ctl({"cmd": "counts"})["mmio_writes"], before)
        # intel-gnr-io's NIC link: 2-byte IO_PQR_CLOS0 / IO_PQR_RMID0.
        self.assertNotEqual(self.mem(0xfed10000), 0)
        self.assertNotEqual(self.mem(0xfed10100), 0)
        self.assertEqual(self.mem(0xfed10002), 0)  # channel 0x101 stays in the default group
        self.assertEqual(self.rmdir("g"), 0)
        self.assertEqual(self.mem(0xfed10000), 0)
        self.assertEqual(self.mem(0xfed10100), 0)


class PmtTelemetry(rt.ResctrlfsTestCase):
    PLATFORM = "intel-aet"
    MANUAL_CLOCK = True

    def test_counters_come_through_the_broker_and_a_failing_read_is_unavailable(self):
        self.assertIn("serving 4 PMT telemetry aggregators", self.fs.broker.log())
        self.assertEqual(sorted(os.listdir(os.path.join(self.fs.hw.root, "sys/class/intel_pmt"))),
                         ["telem0", "telem1", "telem2", "telem3"])
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/cpus_list", "2\n"), 0, self.lcs())
        self.workload(cpu=2, bandwidth_mbps=1000)
        self.advance(1000)
        f = "g/mon_data/mon_PERF_PKG_00/unhalted_core_cycles"
        before = self.fs.hw.ctl({"cmd": "counts"})["pmt_reads"]
        first = int(self.read(f))
        self.assertAlmostEqual(first, 2.4e9, delta=2.4e6)
        self.assertGreater(self.fs.hw.ctl({"cmd": "counts"})["pmt_reads"], before)
        self.fs.hw.ctl({"cmd": "fail_pmt", "fail": True})
        self.assertEqual(self.read(f), "Unavailable\n")
        self.assertEqual(self.read("g/mon_data/mon_PERF_PKG_00/core_energy"), "Unavailable\n")
        self.fs.hw.ctl({"cmd": "fail_pmt", "fail": False})
        self.advance(1000)
        self.assertAlmostEqual(int(self.read(f)), 4.8e9, delta=4.8e6)
        self.workload(cpu=2)


def regw_clear_profile(wide):
    """intel-gnr-io's shape with one PCIe link of 8 channels whose RCS has
    REGW clear, its registers `wide` bytes wide."""
    return {
        "vendor": "GenuineIntel", "family": 6, "model": 173, "stepping": 1,
        "cpus": [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4} for c in range(8)],
        "l3_size_bytes": 301989888, "l2_size_bytes": 2097152,
        "l3_cat": {"cbm_len": 15, "num_closid": 15, "shareable_bits": 0, "sparse": False},
        "mba": {"num_closid": 15, "max_delay": 90, "linear": True, "per_thread": True},
        "l3_mon": {"num_rmids": 512, "scale": 131072, "counter_width": 32,
                   "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
        "io_rdt": {"cat": True, "cmt": True, "mbm": True, "wide_reg_bytes": wide,
                   "blocks": [
                       {"segment": 0, "package": 0,
                        "links": [{"id": 1, "type": "pcie", "channels": 8, "regw": False,
                                   "mmio": "0xfed10000", "clos_offset": 0,
                                   "rmid_offset": 256}],
                        "devices": [{"bdf": "16:00.0", "type": "root-port",
                                     "chms": [{"link": 1, "vcs": [0, 1]}]}]}]},
    }


class RegwProbe(unittest.TestCase):
    def mount(self, wide):
        m = rt.Mount(start=False, options=["iordt"])
        self.addCleanup(m.cleanup)
        m.platform = os.path.join(m.dir, "regw-clear-%d.json" % wide)
        with open(m.platform, "w") as f:
            json.dump(regw_clear_profile(wide), f)
        m.hw = rt.FakeHw(m.platform, m.dir)
        m.broker = rt.Broker(m.hw, m.dir)
        m.broker.stop()
        m.broker.start(probe_irdt_width=True)  # no --irdt-wide-bytes: the broker probes
        m.start()
        return m

    def check(self, wide):
        m = self.mount(wide)
        self.assertIn("REGW clear are %d bytes wide (probed)" % wide, m.broker.log())
        self.assertEqual(m.read("channels"), "0x100\n0x101\n")
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/channels", "0x101\n"), 0, m.lcs())
        fd = os.open(os.path.join(m.hw.root, "dev/mem"), os.O_RDONLY)
        try:
            clos1 = int.from_bytes(os.pread(fd, wide, 0xfed10000 + wide), "little")
            rmid1 = int.from_bytes(os.pread(fd, wide, 0xfed10100 + wide), "little")
            clos0 = int.from_bytes(os.pread(fd, wide, 0xfed10000), "little")
        finally:
            os.close(fd)
        self.assertNotEqual(clos1, 0, "IO_PQR_CLOS1 at +%d" % wide)
        self.assertNotEqual(rmid1, 0, "IO_PQR_RMID1 at +%d" % wide)
        self.assertEqual(clos0, 0)

    def test_four_byte_registers(self):
        self.check(4)

    def test_eight_byte_registers(self):
        self.check(8)


SLEEPER = ("import os, threading, time\n"
           "t = threading.Thread(target=time.sleep, args=(3600,), daemon=True)\n"
           "t.start()\n"
           "print(t.native_id, flush=True)\n"
           "t.join()\n")


class TaskOnlyGroups(rt.ResctrlfsTestCase):
    """docs/hardware.md, "Tasks on real hardware": a user-space daemon cannot retag a
    thread at each context switch, so a group that holds threads but no CPU
    is bookkeeping. Its tasks file lists the thread as on the kernel, no
    CPU's PQR_ASSOC changes (read in resctrl-fakehw's registers, the
    machine's own view), and its mon_data files read Unavailable rather
    than a count of nothing."""

    PLATFORM = "intel-2s"

    def pqr_assoc(self):
        return {r["cpu"]: r["value"] for r in self.fs.hw.ctl({"cmd": "registers"})["registers"]
                if r["msr"] == 0xC8F}

    def test_moved_thread_is_listed_but_not_enforced(self):
        p = subprocess.Popen(["python3", "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        tid = int(p.stdout.readline())
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        before = self.pqr_assoc()
        self.assertEqual(sorted(before), list(range(8)))
        self.assertEqual(self.write("g/tasks", "%d\n" % tid), 0, self.lcs())
        self.assertEqual(self.lcs(), "ok\n")
        self.assertIn(tid, [int(t) for t in self.read("g/tasks").split()])
        self.assertNotIn(tid, [int(t) for t in self.read("tasks").split()])
        self.assertEqual(self.write("g/mon_groups/m/tasks", "%d\n" % tid), 0, self.lcs())
        self.assertEqual(self.read("g/mon_groups/m/tasks").split(), [str(tid)])
        self.assertEqual(self.pqr_assoc(), before)
        events = ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes")
        for base in ("g/", "g/mon_groups/m/"):
            for dom in ("mon_L3_00", "mon_L3_01"):
                for ev in events:
                    f = base + "mon_data/%s/%s" % (dom, ev)
                    self.assertEqual(self.read(f), "Unavailable\n", f)
        # The comparison can fail: a CPU given to the group is enforced and
        # counted.
        self.assertEqual(self.write("g/cpus_list", "3\n"), 0, self.lcs())
        after = self.pqr_assoc()
        self.assertNotEqual(after[3] >> 32, 0)
        self.assertEqual({c: v for c, v in after.items() if c != 3},
                         {c: v for c, v in before.items() if c != 3})
        self.assertTrue(self.read("g/mon_data/mon_L3_00/llc_occupancy").strip().isdigit())


class PeerRefused(unittest.TestCase):
    def test_other_uid_is_refused(self):
        m = rt.Mount(start=False)
        self.addCleanup(m.cleanup)
        m._ensure_hw()
        sock = m.broker.sock

        def as_nobody():
            os.setgid(65534)
            os.setuid(65534)

        # A client of another uid: the broker closes the connection without
        # serving the request.
        code = ("import socket,struct,sys\n"
                "s=socket.socket(socket.AF_UNIX);s.connect(sys.argv[1])\n"
                "try:\n"
                " s.sendall(struct.pack('<II',0x52534D31,1)+struct.pack('<IIQII',0,0xC90,0,0,0))\n"
                " print(len(s.recv(64)))\n"
                "except (ConnectionResetError, BrokenPipeError):\n print(0)\n")
        os.chmod(m.dir, 0o755)
        os.chmod(sock, 0o777)
        r = subprocess.run(["python3", "-c", code, sock], preexec_fn=as_nobody,
                           capture_output=True, text=True)
        self.assertEqual(r.stdout.strip(), "0", r.stderr)  # EOF, no reply
        self.assertIn("refused connection from", m.broker.log())
        self.assertIn("uid 65534", m.broker.log())

    def test_daemon_refused_by_the_broker_does_not_mount(self):
        m = rt.Mount(start=False)
        self.addCleanup(m.cleanup)
        m._ensure_hw()
        m.broker.stop()
        m.broker.start(allow_uid=12345)
        r = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertFalse(rt.is_mounted(m.mnt))
        self.assertIn("broker", r.stderr)
        self.assertIn("refused connection from", m.broker.log())


if __name__ == "__main__":
    rt.main()
