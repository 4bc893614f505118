#!/usr/bin/env python3
"""Platform-specific resctrl behaviour through the mounted daemon: CDP and
L2 CAT on intel-l2, a monitor-only intel-cmt, AMD units, BMEC and ABMC on
amd-2s, limbo and MBM overflow driven by the control socket's manual clock,
and fork inheritance with a real forked child (proc connector)."""

import errno
import os
import subprocess

import resctrlfs_test as rt


def spawn_sleeper():
    return subprocess.Popen(["sleep", "300"])


class IntelL2(rt.ResctrlfsTestCase):
    PLATFORM = "intel-l2"

    def test_tree_without_monitoring(self):
        self.assertEqual(self.listdir(), ["cpus", "cpus_list", "info", "mode", "schemata",
                                          "size", "tasks"])
        self.assertEqual(self.listdir("info"), ["L2", "L3", "last_cmd_status"])
        self.assertEqual(self.read("schemata"), "    L2:0=ff;2=ff\n    L3:0=fff\n")
        self.assertEqual(self.read("size"), "    L2:0=1048576;2=1048576\n    L3:0=8388600\n")
        self.assertEqual(self.read("info/L3/shareable_bits"), "c00\n")
        self.assertEqual(self.read("info/L3/bit_usage"), "0=XXSSSSSSSSSS\n")
        self.assertEqual(self.read("info/L2/cbm_mask"), "ff\n")
        # No monitoring: mon_groups is an ordinary name for a CTRL_MON group.
        self.assertEqual(self.mkdir("mon_groups"), 0)
        self.assertIn("schemata", self.listdir("mon_groups"))
        self.assertEqual(self.mkdir("mon_groups/x"), errno.EPERM)

    def test_l2_masks_and_exclusive_against_shareable_bits(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/schemata", "L2:0=3;2=c\n"), 0)
        self.assertEqual(self.read("p0/schemata"), "    L2:0=3;2=c\n    L3:0=fff\n")
        self.assertEqual(self.write("p0/schemata", "L2:1=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.write("schemata", "L2:0=fc;2=f3\nL3:0=ff0\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "The mask f3 has non-consecutive 1-bits\n")
        self.assertEqual(self.write("schemata", "L2:0=fc;2=f0\nL3:0=ff0\n"), 0)
        self.assertEqual(self.write("p0/schemata", "L3:0=f\n"), 0)
        self.assertEqual(self.write("p0/mode", "exclusive\n"), 0)
        self.assertEqual(self.read("info/L2/bit_usage"), "0=SSSSSSEE;2=SSSSEE00\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=c0f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "The mask c0f has non-consecutive 1-bits\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=3f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with other group\n")


class IntelL2Cdp(rt.ResctrlfsTestCase):
    PLATFORM = "intel-l2"
    OPTIONS = ["cdpl2"]

    def test_cdpl2(self):
        self.assertEqual(self.listdir("info"), ["L2CODE", "L2DATA", "L3", "last_cmd_status"])
        self.assertEqual(self.read("schemata"),
                         "L2DATA:0=ff;2=ff\nL2CODE:0=ff;2=ff\n    L3:0=fff\n")
        self.assertEqual(self.read("info/L2CODE/num_closids"), "4\n")
        self.assertEqual(self.read("info/L3/num_closids"), "8\n")
        # The CLOSID pool is the smallest schema's: 4 (3 groups).
        for i in range(3):
            self.assertEqual(self.mkdir("g%d" % i), 0)
        self.assertEqual(self.mkdir("g3"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of CLOSIDs\n")
        self.assertEqual(self.write("g0/schemata", "L2CODE:0=f\nL2DATA:0=f0\n"), 0)
        self.assertEqual(self.read("g0/schemata"),
                         "L2DATA:0=f0;2=ff\nL2CODE:0=f;2=ff\n    L3:0=fff\n")
        self.assertEqual(self.write("g0/schemata", "L2:0=f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported resource name 'L2'\n")

    def test_cdp_on_l3_is_refused(self):
        m = rt.Mount(platform="intel-l2", options=["cdp"], start=False)
        self.addCleanup(m.cleanup)
        p = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertFalse(rt.is_mounted(m.mnt))


class IntelCmt(rt.ResctrlfsTestCase):
    PLATFORM = "intel-cmt"
    MANUAL_CLOCK = True

    def test_monitor_only(self):
        self.assertEqual(self.listdir(), ["cpus", "cpus_list", "info", "mode", "mon_data",
                                          "mon_groups", "schemata", "size", "tasks"])
        self.assertEqual(self.listdir("info"), ["L3_MON", "last_cmd_status"])
        self.assertEqual(self.read("schemata"), "")
        self.assertEqual(self.read("mode"), "shareable\n")
        self.assertEqual(self.read("info/L3_MON/mon_features"), "llc_occupancy\n")
        self.assertEqual(self.read("info/L3_MON/num_rmids"), "64\n")
        self.assertEqual(self.read("info/L3_MON/mbm_assign_mode"), "[default]\n")
        self.assertEqual(self.listdir("mon_data/mon_L3_00"), ["llc_occupancy"])
        self.assertEqual(self.mkdir("p0"), errno.EPERM)
        self.assertEqual(self.mkdir("mon_groups/m0"), 0)
        self.assertEqual(self.write("mode", "exclusive\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Cannot be exclusive without CAT/CDP\n")

    def test_occupancy_of_a_cpu_workload(self):
        self.assertEqual(self.mkdir("mon_groups/m0"), 0)
        self.assertEqual(self.write("mon_groups/m0/cpus_list", "2\n"), 0)
        self.workload(cpu=2, footprint_bytes=2 << 20)
        self.advance(2000)
        occ = int(self.read("mon_groups/m0/mon_data/mon_L3_00/llc_occupancy"))
        self.assertGreater(occ, 1 << 20)
        self.assertEqual(occ % 65536, 0)
        # The default group's file covers RMID 0 and its MON groups.
        self.assertGreaterEqual(int(self.read("mon_data/mon_L3_00/llc_occupancy")), occ)


class Amd(rt.ResctrlfsTestCase):
    PLATFORM = "amd-2s"

    def test_units_and_info(self):
        self.assertEqual(self.listdir("info"), ["L3", "L3_MON", "MB", "SMBA", "last_cmd_status"])
        self.assertEqual(self.read("info/MB/min_bandwidth"), "0\n")
        self.assertEqual(self.read("info/MB/bandwidth_gran"), "1\n")
        self.assertEqual(self.read("info/MB/delay_linear"), "0\n")
        self.assertNotIn("thread_throttle_mode", self.listdir("info/MB"))
        self.assertEqual(self.read("info/L3/cbm_mask"), "ffff\n")
        self.assertEqual(self.read("info/L3/min_cbm_bits"), "0\n")
        self.assertEqual(self.read("info/L3/sparse_masks"), "1\n")
        self.assertEqual(self.read("schemata"),
                         "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=ffff;1=ffff\n")
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/schemata", "MB:0=16\nSMBA:1=3\nL3:0=f0f\n"), 0)
        self.assertEqual(self.read("p0/schemata"),
                         "  SMBA:0=2048;1=3\n    MB:0=16;1=2048\n    L3:0=f0f;1=ffff\n")
        self.assertEqual(self.write("p0/schemata", "MB:0=2049\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "MB value 2049 out of range [0,2048]\n")
        self.assertEqual(self.read("p0/size"),
                         "  SMBA:0=2048;1=3\n    MB:0=16;1=2048\n    L3:0=16777216;1=33554432\n")

    def test_abmc_defaults(self):
        self.assertEqual(self.read("info/L3_MON/mbm_assign_mode"), "[mbm_event]\ndefault\n")
        self.assertEqual(self.read("info/L3_MON/available_mbm_cntrs"), "0=30;1=30\n")
        self.assertEqual(self.read("info/L3_MON/mbm_assign_on_mkdir"), "1\n")
        self.assertEqual(self.read("mbm_L3_assignments"),
                         "mbm_total_bytes:0=e;1=e\nmbm_local_bytes:0=e;1=e\n")
        self.assertNotIn("mbm_total_bytes_config", self.listdir("info/L3_MON"))
        self.assertEqual(self.read("info/L3_MON/event_configs/mbm_local_bytes/event_filter"),
                         "local_reads,local_non_temporal_writes,local_reads_slow_memory\n")
        self.assertEqual(self.write("info/L3_MON/mbm_assign_on_mkdir", "0"), 0)
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.read("p0/mbm_L3_assignments"),
                         "mbm_total_bytes:0=_;1=_\nmbm_local_bytes:0=_;1=_\n")
        self.assertEqual(self.read("p0/mon_data/mon_L3_01/mbm_local_bytes"), "Unassigned\n")
        self.assertEqual(self.write("p0/mbm_L3_assignments", "mbm_local_bytes:1=e\n"), 0)
        value = self.read("p0/mon_data/mon_L3_01/mbm_local_bytes")
        if rt.MSR:
            # Real hardware counts what a group's CPUs run; p0 has none.
            self.assertEqual(value, "Unavailable\n")
        else:
            self.assertTrue(value.strip().isdigit())

    def test_bmec_in_default_mode(self):
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.assertEqual(self.read("info/L3_MON/mon_features"),
                         "llc_occupancy\nmbm_total_bytes\nmbm_total_bytes_config\n"
                         "mbm_local_bytes\nmbm_local_bytes_config\n")
        self.assertEqual(self.read("info/L3_MON/mbm_local_bytes_config"), "0=0x15;1=0x15\n")
        self.assertEqual(self.write("info/L3_MON/mbm_local_bytes_config", "1=0x80\n"),
                         errno.EINVAL)
        self.assertEqual(self.lcs(), "Invalid event configuration: max valid mask is 0x7f\n")
        self.assertEqual(self.write("info/L3_MON/mbm_local_bytes_config", "1=0x3\n"), 0)
        self.assertEqual(self.read("info/L3_MON/mbm_local_bytes_config"), "0=0x15;1=0x03\n")
        e, _ = self.read_errno("info/L3_MON/available_mbm_cntrs")
        self.assertEqual(e, errno.EINVAL)
        self.assertEqual(self.lcs(), "mbm_event counter assignment mode is not enabled\n")

    def test_mba_mbps_is_refused_on_abmc(self):
        m = rt.Mount(platform="amd-2s", options=["mba_MBps"], start=False)
        self.addCleanup(m.cleanup)
        p = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)


class Clocked(rt.ResctrlfsTestCase):
    """Limbo and MBM overflow with the control socket's manual clock."""
    MANUAL_CLOCK = True

    def test_limbo_releases_after_eviction(self):
        s = spawn_sleeper()
        self.addCleanup(lambda: (s.kill(), s.wait()))
        self.workload(tid=s.pid, footprint_bytes=4 << 20)
        self.assertEqual(self.mkdir("mon_groups/a"), 0)
        self.assertEqual(self.write("mon_groups/a/tasks", "%d\n" % s.pid), 0)
        self.advance(2000)
        self.assertEqual(self.rmdir("mon_groups/a"), 0)
        st = self.status()["rmids"]
        self.assertEqual(st["limbo"], 1)
        self.advance(1000)
        self.assertEqual(self.status()["rmids"]["limbo"], 1)  # still ~2 MiB per domain
        # Nothing else fills the cache: the lines stay (AMD64 PQoS, "L3
        # Cache Occupancy Monitoring": until normal replacement removes them).
        self.advance(10000)
        self.assertEqual(self.status()["rmids"]["limbo"], 1)
        # Fills of the default group that need the whole L3 replace them.
        for cpu in (0, 4):  # one CPU of each L3
            self.workload(cpu=cpu, footprint_bytes=1 << 30)
        self.advance(2000)
        self.assertEqual(self.status()["rmids"]["limbo"], 0)
        # The released RMID went to the tail of the free list: the next
        # group gets a never-used RMID.
        m = rt.Mount(platform="intel-2s", options=["debug"])
        self.addCleanup(m.cleanup)
        self.assertEqual(m.mkdir("mon_groups/a"), 0)
        self.assertEqual(m.mkdir("mon_groups/b"), 0)
        self.assertEqual(m.rmdir("mon_groups/a"), 0)
        self.assertEqual(m.mkdir("mon_groups/c"), 0)
        self.assertEqual(m.read("mon_groups/c/mon_hw_id"), "3\n")



class ClockedWrap(rt.ResctrlfsTestCase):
    """MBM overflow with 24-bit counters (intel-bdx, Broadwell-EP; from Ice
    Lake-SP on they are 32 bits wide) and the manual clock."""
    PLATFORM = "intel-bdx"
    MANUAL_CLOCK = True

    def test_mbm_overflow_is_folded(self):
        s = spawn_sleeper()
        self.addCleanup(lambda: (s.kill(), s.wait()))
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/tasks", "%d\n" % s.pid), 0)
        self.workload(tid=s.pid, footprint_bytes=1 << 20, bandwidth_mbps=10000)
        files = ["p0/mon_data/mon_L3_0%d/mbm_total_bytes" % d for d in (0, 1)]
        for f in files:
            self.read(f)
        seconds = 150
        self.advance(seconds * 1000)
        total = sum(int(self.read(f)) for f in files)
        # 24-bit counters of 64 KiB chunks wrap every 2^40 bytes; 150 s at
        # 10 GB/s is more than that.
        self.assertGreater(total, 1 << 40)
        self.assertAlmostEqual(total / (seconds * 10000e6), 1.0, delta=0.1)


class Faults(rt.ResctrlfsTestCase):
    def test_failed_register_write_changes_nothing(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.fail_writes(1)
        e = self.write("p0/schemata", "L3:0=3;1=3\n")
        self.assertEqual(e, errno.EIO)
        self.assertNotEqual(self.lcs(), "ok\n")
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=3;1=3\n"), 0)
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=3;1=3\n")


class Fork(rt.ResctrlfsTestCase):
    def test_child_inherits_and_exit_forgets(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p0/mon_groups/m"), 0)
        parent = subprocess.Popen(["bash", "-c", "read x; sleep 300 & echo $!; read y"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(parent.stdout.close)
        self.addCleanup(parent.stdin.close)
        self.addCleanup(parent.wait)
        self.addCleanup(parent.kill)
        self.assertEqual(self.write("p0/tasks", "%d\n" % parent.pid), 0)
        self.assertEqual(self.write("p0/mon_groups/m/tasks", "%d\n" % parent.pid), 0)
        parent.stdin.write("go\n")
        parent.stdin.flush()
        child = int(parent.stdout.readline())
        self.addCleanup(lambda: os.path.exists("/proc/%d" % child) and os.kill(child, 9))
        # The fork event reaches the daemon asynchronously.
        rt.wait_until(lambda: str(child) in self.read("p0/mon_groups/m/tasks").split(),
                      "child %d in p0/mon_groups/m/tasks" % child, interval=0.05)
        self.assertIn(str(child), self.read("p0/mon_groups/m/tasks").split())
        self.assertIn(str(child), self.read("p0/tasks").split())
        self.assertNotIn(str(child), self.read("tasks").split())
        os.kill(child, 9)
        rt.wait_until(lambda: str(child) not in self.read("p0/tasks").split(),
                      "the killed child %d to leave p0/tasks" % child, interval=0.05)
        self.assertNotIn(str(child), self.read("p0/tasks").split())


if __name__ == "__main__":
    rt.main()
