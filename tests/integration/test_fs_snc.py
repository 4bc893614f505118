#!/usr/bin/env python3
"""Sub-NUMA Clustering through the mounted daemon on the intel-snc platform
(two Sapphire Rapids packages in SNC2: nodes 0,1 share L3 0 and nodes 2,3
share L3 1): the mon_data tree with mon_sub_L3_YY per node, the L3 files
summing their nodes under CPU workloads driven by the control socket's
manual clock, the divided num_rmids and occupancy scale, RMID sharing mode
in the registers, and the mba_MBps mount option refused."""

import os
import subprocess

import resctrlfs_test as rt

EVENTS = ["llc_occupancy", "mbm_local_bytes", "mbm_total_bytes"]
MSR_RMID_SNC_CONFIG = 0xCA0


class IntelSnc(rt.ResctrlfsTestCase):
    PLATFORM = "intel-snc"
    MANUAL_CLOCK = True

    def num(self, rel):
        return int(self.read(rel))

    def test_tree(self):
        self.assertEqual(self.listdir("mon_data"), ["mon_L3_00", "mon_L3_01"])
        self.assertEqual(self.listdir("mon_data/mon_L3_00"),
                         EVENTS + ["mon_sub_L3_00", "mon_sub_L3_01"])
        self.assertEqual(self.listdir("mon_data/mon_L3_01"),
                         EVENTS + ["mon_sub_L3_02", "mon_sub_L3_03"])
        for sub in ["mon_L3_00/mon_sub_L3_00", "mon_L3_01/mon_sub_L3_03"]:
            self.assertEqual(self.listdir("mon_data/" + sub), EVENTS)
        self.assertEqual(self.mkdir("p0", 0o750), 0)
        self.assertEqual(self.mkdir("p0/mon_groups/m"), 0)
        self.assertEqual(self.mkdir("mon_groups/r"), 0)
        for g in ["p0", "p0/mon_groups/m", "mon_groups/r"]:
            self.assertEqual(self.listdir(g + "/mon_data/mon_L3_01"),
                             EVENTS + ["mon_sub_L3_02", "mon_sub_L3_03"])
        st = os.stat(self.path("p0/mon_data/mon_L3_00/mon_sub_L3_01"))
        self.assertEqual(st.st_mode & 0o7777, 0o750)
        self.assertEqual(st.st_nlink, 2)
        self.assertEqual(os.stat(self.path("p0/mon_data/mon_L3_00")).st_nlink, 4)
        f = os.stat(self.path("p0/mon_data/mon_L3_00/mon_sub_L3_01/mbm_total_bytes"))
        self.assertEqual(f.st_mode & 0o7777, 0o444)
        self.assertFalse(os.path.exists(self.path("mon_data/mon_L3_00/mon_sub_L3_02")))

    def test_info_and_controls(self):
        self.assertEqual(self.read("info/L3_MON/num_rmids"), "128\n")  # 256 / 2 nodes
        self.assertEqual(self.read("info/L3_MON/mon_features"),
                         "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n")
        # 30 MiB / 128 RMIDs = 245760, rounded down to the 32768-byte scale.
        self.assertEqual(self.read("info/L3_MON/max_threshold_occupancy"), "229376\n")
        self.assertEqual(self.write("info/L3_MON/max_threshold_occupancy", "40000\n"), 0)
        self.assertEqual(self.read("info/L3_MON/max_threshold_occupancy"), "32768\n")
        # Controls keep the L3 scope and size counts the whole cache.
        self.assertEqual(self.read("schemata"), "    MB:0=100;1=100\n    L3:0=7fff;1=7fff\n")
        self.assertEqual(self.read("info/L3/cbm_mask"), "7fff\n")
        # Sapphire Rapids has second-generation MBA, per core (the RDT
        # specification's product table lists per-thread MBA from Granite
        # Rapids on).
        self.assertEqual(self.read("info/MB/thread_throttle_mode"), "max\n")
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/schemata", "L3:1=7f\n"), 0)
        self.assertEqual(self.read("p0/size"),
                         "    MB:0=100;1=100\n    L3:0=31457280;1=14680064\n")
        # The daemon put every L3 in RMID sharing mode.
        snc = {r["cpu"]: r["value"] for r in self.registers()
               if r["msr"] == MSR_RMID_SNC_CONFIG}
        self.assertEqual(snc, {0: 0, 4: 0})

    def test_sums_follow_the_nodes(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/cpus_list", "0,2-3\n"), 0)
        self.assertEqual(self.mkdir("p0/mon_groups/m"), 0)
        self.assertEqual(self.write("p0/mon_groups/m/cpus_list", "3\n"), 0)
        # CPUs 0 (node 0) and 2 (node 1) run p0, CPU 3 (node 1) runs m, CPU 4
        # (node 2) the default group.
        self.workload(cpu=0, footprint_bytes=4 << 20, bandwidth_mbps=3000)
        self.workload(cpu=2, bandwidth_mbps=1000, local_fraction=0.5)
        self.workload(cpu=3, bandwidth_mbps=500)
        self.workload(cpu=4, bandwidth_mbps=2000)
        files = ["p0/mon_data/mon_L3_00/mbm_total_bytes",
                 "p0/mon_data/mon_L3_00/mon_sub_L3_00/mbm_total_bytes",
                 "p0/mon_data/mon_L3_00/mon_sub_L3_01/mbm_total_bytes",
                 "p0/mon_data/mon_L3_00/mbm_local_bytes",
                 "p0/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes",
                 "mon_data/mon_L3_01/mbm_total_bytes",
                 "mon_data/mon_L3_01/mon_sub_L3_02/mbm_total_bytes"]
        for f in files:
            self.assertEqual(self.read(f), "0\n", f)  # baselines before time moves
        self.advance(1000)
        p0 = "p0/mon_data/mon_L3_00/"
        n0 = self.num(p0 + "mon_sub_L3_00/mbm_total_bytes")
        n1 = self.num(p0 + "mon_sub_L3_01/mbm_total_bytes")
        self.assertAlmostEqual(n0, 3e9, delta=3e6)
        self.assertAlmostEqual(n1, 1.5e9, delta=3e6)  # own CPU 2 + m's CPU 3
        self.assertEqual(self.num(p0 + "mbm_total_bytes"), n0 + n1)
        self.assertEqual(n0 % 32768, 0)
        self.assertAlmostEqual(self.num(p0 + "mbm_local_bytes"), 4e9, delta=4e6)
        m = "p0/mon_groups/m/mon_data/mon_L3_00/"
        self.assertEqual(self.read(m + "mon_sub_L3_00/mbm_total_bytes"), "0\n")
        self.assertAlmostEqual(self.num(m + "mbm_total_bytes"), 0.5e9, delta=1e6)
        self.assertEqual(self.num(m + "mbm_total_bytes"),
                         self.num(m + "mon_sub_L3_01/mbm_total_bytes"))
        self.assertEqual(self.read("p0/mon_data/mon_L3_01/mbm_total_bytes"), "0\n")
        # The default group: RMID 0 on node 2 only.
        self.assertAlmostEqual(self.num("mon_data/mon_L3_01/mbm_total_bytes"), 2e9, delta=2e6)
        self.assertEqual(self.num("mon_data/mon_L3_01/mbm_total_bytes"),
                         self.num("mon_data/mon_L3_01/mon_sub_L3_02/mbm_total_bytes"))
        self.assertEqual(self.read("mon_data/mon_L3_01/mon_sub_L3_03/mbm_total_bytes"), "0\n")
        self.assertEqual(self.read("mon_data/mon_L3_00/mbm_total_bytes"), "0\n")
        # Occupancy: node 0 holds CPU 0's 4 MiB, in units of the divided scale.
        occ = self.num(p0 + "mon_sub_L3_00/llc_occupancy")
        self.assertEqual(occ % 32768, 0)
        self.assertAlmostEqual(occ, 4 << 20, delta=32768)
        self.assertEqual(self.num(p0 + "llc_occupancy"),
                         occ + self.num(p0 + "mon_sub_L3_01/llc_occupancy"))

    def test_limbo_waits_for_every_node(self):
        rt.msr_skip("the daemon's manual clock (on hardware the limbo worker runs on real time)")
        self.assertEqual(self.mkdir("mon_groups/a"), 0)
        self.assertEqual(self.write("mon_groups/a/cpus_list", "6\n"), 0)  # node 3
        self.workload(cpu=6, footprint_bytes=4 << 20)
        self.advance(2000)
        self.assertGreater(self.num("mon_groups/a/mon_data/mon_L3_01/mon_sub_L3_03/"
                                    "llc_occupancy"), 229376)
        self.workload(cpu=6)  # the workload stops; its lines stay
        self.assertEqual(self.rmdir("mon_groups/a"), 0)
        self.assertEqual(self.status()["rmids"]["limbo"], 1)
        self.advance(10000)
        self.assertEqual(self.status()["rmids"]["limbo"], 1)
        # The default group's fills on node 3 replace them.
        self.workload(cpu=6, footprint_bytes=1 << 30)
        self.advance(2000)
        self.assertEqual(self.status()["rmids"]["limbo"], 0)


class IntelSncMbaMbps(rt.ResctrlfsTestCase):
    PLATFORM = "intel-snc"

    def test_mba_mbps_is_refused(self):
        m = rt.Mount(platform="intel-snc", options=["mba_MBps"], start=False)
        self.addCleanup(m.cleanup)
        p = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("mba_MBps requires MBM (mbm_event mode not supported) and linear scale "
                      "MBA at L3 scope", p.stderr)
        self.assertFalse(rt.is_mounted(m.mnt))
        # The same platform mounts without it.
        self.assertEqual(self.read("info/last_cmd_status"), "ok\n")
        self.assertNotIn("mba_MBps_event", self.listdir())


if __name__ == "__main__":
    rt.main()
