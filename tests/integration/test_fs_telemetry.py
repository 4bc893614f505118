#!/usr/bin/env python3
"""Intel telemetry monitoring (PERF_PKG) through the mounted daemon on the
intel-aet platform: the tree (mon_data and info/PERF_PKG_MON), the info
files, the value formats of counters that follow workloads driven through
the control socket on a manual clock, and the group limit (the
smaller of L3_MON's 1024 and PERF_PKG_MON's 576 RMIDs)."""

import errno
import os
import re
import stat

import resctrlfs_test as rt

EVENTS = ["core_energy", "activity", "stalls_llc_hit", "c1_res", "unhalted_core_cycles",
          "stalls_llc_miss", "c6_res", "unhalted_ref_cycles", "uops_retired"]
FLOAT = re.compile(r"^[0-9]+\.[0-9]{6}\n$")
INTEGER = re.compile(r"^[0-9]+\n$")


class Telemetry(rt.ResctrlfsTestCase):
    PLATFORM = "intel-aet"
    MANUAL_CLOCK = True

    def mode(self, rel):
        return stat.S_IMODE(os.stat(self.path(rel)).st_mode)

    def test_info_dirs(self):
        self.assertIn("PERF_PKG_MON", self.listdir("info"))
        self.assertIn("L3_MON", self.listdir("info"))
        self.assertEqual(self.listdir("info/PERF_PKG_MON"), ["mon_features", "num_rmids"])
        self.assertEqual(self.mode("info/PERF_PKG_MON"), 0o755)
        for f in ("num_rmids", "mon_features"):
            self.assertEqual(self.mode("info/PERF_PKG_MON/" + f), 0o444)
        self.assertEqual(self.read("info/PERF_PKG_MON/num_rmids"), "576\n")
        self.assertEqual(self.read("info/L3_MON/num_rmids"), "1024\n")
        # Only the events the aggregators provide, in event-id order: the
        # Diamond Rapids ones (inst_retired, pcnt) are absent.
        self.assertEqual(self.read("info/PERF_PKG_MON/mon_features"),
                         "".join(e + "\n" for e in EVENTS))
        self.assertEqual(self.read("info/L3_MON/mon_features"),
                         "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n")
        self.assertEqual(self.write("info/PERF_PKG_MON/num_rmids", "1\n"), errno.EACCES)

    def test_mon_data_of_every_group(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.mkdir("mon_groups/r"), 0)
        for group in ("", "g/", "g/mon_groups/m/", "mon_groups/r/"):
            md = group + "mon_data"
            self.assertEqual(self.listdir(md), ["mon_L3_00", "mon_L3_01", "mon_PERF_PKG_00",
                                                "mon_PERF_PKG_01"], md)
            for pkg in ("00", "01"):
                d = "%s/mon_PERF_PKG_%s" % (md, pkg)
                self.assertEqual(self.listdir(d), sorted(EVENTS), d)
                for e in EVENTS:
                    self.assertEqual(self.mode(d + "/" + e), 0o444)
        self.assertEqual(self.write("mon_data/mon_PERF_PKG_00/core_energy", "0\n"),
                         errno.EACCES)

    def test_cpu_workload_counts_on_its_package_only(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/cpus_list", "5\n"), 0, self.lcs())
        pkg1 = "g/mon_data/mon_PERF_PKG_01/"
        pkg0 = "g/mon_data/mon_PERF_PKG_00/"
        # Nothing has run with the group's RMID yet.
        for e in EVENTS:
            self.assertEqual(self.read(pkg1 + e), "Unavailable\n", e)
        self.workload(cpu=5, bandwidth_mbps=10000, footprint_bytes=4 << 20)
        self.advance(1000)
        first = {e: self.read(pkg1 + e) for e in EVENTS}
        for e in ("core_energy", "activity"):
            self.assertRegex(first[e], FLOAT)
        for e in EVENTS[2:]:
            self.assertRegex(first[e], INTEGER)
        # 2.5 W + 1.5 W per 10 GB/s, for one second.
        self.assertAlmostEqual(float(first["core_energy"]), 4.0, places=3)
        self.assertAlmostEqual(float(first["unhalted_core_cycles"]), 2.4e9, delta=2.4e6)
        self.assertEqual(first["c6_res"], "0\n")  # a busy CPU does not idle
        # CPU 5 is on package 1: the group never ran on package 0.
        for e in EVENTS:
            self.assertEqual(self.read(pkg0 + e), "Unavailable\n", e)
        self.advance(2000)
        later = {e: self.read(pkg1 + e) for e in EVENTS}
        self.assertAlmostEqual(float(later["core_energy"]), 12.0, places=3)
        for e in ("core_energy", "activity", "unhalted_core_cycles", "uops_retired",
                  "unhalted_ref_cycles", "stalls_llc_miss", "stalls_llc_hit"):
            self.assertGreater(float(later[e]), float(first[e]), e)
        # Stopped work stops the counts; they stay cumulative.
        self.workload(cpu=5)
        self.assertEqual(self.write("g/cpus_list", "\n"), 0, self.lcs())
        self.advance(1000)
        stopped = self.read(pkg1 + "core_energy")
        self.advance(1000)
        self.assertEqual(self.read(pkg1 + "core_energy"), stopped)

    def test_ctrl_mon_group_sums_its_mon_groups(self):
        # CPU 5 (package 1) belongs to the MON group m: the CTRL_MON group's
        # own RMID runs nowhere, so its counts are m's.
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/cpus_list", "5\n"), 0, self.lcs())
        self.assertEqual(self.write("g/mon_groups/m/cpus_list", "5\n"), 0, self.lcs())
        self.workload(cpu=5, bandwidth_mbps=2000)
        self.advance(2000)
        mon = "g/mon_groups/m/mon_data/mon_PERF_PKG_01/"
        ctrl = "g/mon_data/mon_PERF_PKG_01/"
        self.assertAlmostEqual(int(self.read(mon + "unhalted_ref_cycles")), 4.0e9, delta=4.0e6)
        for e in EVENTS:
            self.assertEqual(self.read(ctrl + e), self.read(mon + e), e)
        self.assertRegex(self.read(ctrl + "core_energy"), FLOAT)
        # Neither ran on package 0.
        for group in ("g/", "g/mon_groups/m/"):
            self.assertEqual(self.read(group + "mon_data/mon_PERF_PKG_00/core_energy"),
                             "Unavailable\n")
        self.workload(cpu=5)

    def test_groups_limited_by_perf_pkg_rmids(self):
        # RMID 0 is the root's: 575 more groups fit, whatever mix of kinds.
        self.assertEqual(self.mkdir("c"), 0)
        for i in range(574):
            self.assertEqual(self.mkdir("mon_groups/m%d" % i), 0, self.lcs())
        self.assertEqual(self.mkdir("mon_groups/full"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of RMIDs\n")
        self.assertEqual(self.mkdir("c/mon_groups/full"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of RMIDs\n")


if __name__ == "__main__":
    rt.main()
