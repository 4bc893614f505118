#!/usr/bin/env python3
"""Unmount then mount again (edge case 51 of test_fs_edge_cases.py): for a
daemon a remount is a new daemon on the same mount point. All groups are
gone and the controls are back to defaults, but what the kernel keeps in
memory until reboot survives: max_threshold_occupancy, the RMID free-list
order and limbo, mbm_assign_mode, mbm_assign_on_mkdir and the BMEC
configurations. Another mount point does not see any of it.
"""

import errno
import json
import os
import subprocess
import time
import unittest

import resctrlfs_test as rt


class Remount(unittest.TestCase):
    PLATFORM = "intel-2s"
    OPTIONS = ["debug"]

    def setUp(self):
        self.m = rt.Mount(platform=self.PLATFORM, options=self.OPTIONS)
        self.addCleanup(self.m.cleanup)

    def remount(self, m=None):
        m = m or self.m
        subprocess.check_call(["fusermount3", "-u", m.mnt])
        self.assertEqual(m.proc.wait(), 0, m.daemon_log())
        m.start()

    def test_51_groups_gone_threshold_kept(self):
        m = self.m
        self.assertEqual(m.write("info/L3_MON/max_threshold_occupancy", "131072\n"), 0)
        self.assertEqual(m.mkdir("g1"), 0)
        self.assertEqual(m.read("g1/mon_hw_id"), "1\n")
        self.assertEqual(m.write("schemata", "L3:0=f\n"), 0)
        self.remount()
        self.assertFalse(os.path.exists(m.path("g1")))
        self.assertEqual(m.read("schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(m.read("info/L3_MON/max_threshold_occupancy"), "131072\n")
        self.assertEqual(m.lcs(), "ok\n")
        # RMID 1 went to limbo at the unmount, so the LRU free list hands out
        # 2 next, as the kernel's would (a fresh one would give 1 again).
        self.assertEqual(m.mkdir("g2"), 0)
        self.assertEqual(m.read("g2/mon_hw_id"), "2\n")

    def test_limbo_ages_while_unmounted(self):
        # The kernel's limbo worker goes on while resctrl is unmounted: a
        # remount a second or more later finds the RMIDs that were clean
        # freed (here the pass runs at the new daemon's start, before its
        # own 1 s worker could).
        m = self.m
        self.assertEqual(m.mkdir("g1"), 0)
        self.assertEqual(m.mkdir("g1/mon_groups/m"), 0)
        subprocess.check_call(["fusermount3", "-u", m.mnt])
        self.assertEqual(m.proc.wait(), 0, m.daemon_log())
        boot = os.path.join(m.dir, "boot")
        [name] = [n for n in os.listdir(boot) if n.endswith(".json")]
        with open(os.path.join(boot, name)) as f:
            doc = json.load(f)
        self.assertEqual(sorted(set(sum(doc["state"]["rmids"]["limbo"].values(), []))), [1, 2])
        saved = doc["saved_boottime_ms"]
        # At least one worker interval on CLOCK_BOOTTIME, the file's clock.
        while time.clock_gettime(time.CLOCK_BOOTTIME) * 1000 < saved + 1000:
            time.sleep(0.1)
        m.start()
        st = m.status()
        self.assertTrue(st["daemon"]["boot_state"]["limbo_pass"], st["daemon"])
        self.assertGreaterEqual(st["daemon"]["boot_state"]["unmounted_ms"], 1000)
        self.assertEqual(st["rmids"]["limbo"], 0)

    def test_other_mount_point_starts_from_boot_defaults(self):
        self.assertEqual(self.m.write("info/L3_MON/max_threshold_occupancy", "131072\n"), 0)
        self.remount()
        # A daemon on another mount point, sharing the boot-state directory.
        other = rt.Mount(platform=self.PLATFORM, options=self.OPTIONS, start=False)
        self.addCleanup(other.cleanup)
        own, shared = os.path.join(other.dir, "boot"), os.path.join(self.m.dir, "boot")
        argv = other.argv
        other.argv = lambda: [shared if a == own else a for a in argv()]
        other.start()
        self.assertEqual(self.m.read("info/L3_MON/max_threshold_occupancy"), "131072\n")
        self.assertEqual(other.read("info/L3_MON/max_threshold_occupancy"), "65536\n")


class RemountAmd(unittest.TestCase):
    """What outlives an unmount for counter assignment and BMEC, on amd-2s
    (ABMC, BMEC)."""

    def setUp(self):
        self.m = rt.Mount(platform="amd-2s")
        self.addCleanup(self.m.cleanup)

    def test_assignment_settings_and_bmec_kept(self):
        m = self.m
        self.assertEqual(m.write("info/L3_MON/mbm_assign_on_mkdir", "0\n"), 0)
        self.assertEqual(m.read("info/L3_MON/mbm_assign_mode"), "[mbm_event]\ndefault\n")
        subprocess.check_call(["fusermount3", "-u", m.mnt])
        self.assertEqual(m.proc.wait(), 0, m.daemon_log())
        m.start()
        self.assertEqual(m.read("info/L3_MON/mbm_assign_on_mkdir"), "0\n")
        self.assertEqual(m.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.assertEqual(m.write("info/L3_MON/mbm_total_bytes_config", "1=0x33\n"), 0)
        subprocess.check_call(["fusermount3", "-u", m.mnt])
        self.assertEqual(m.proc.wait(), 0, m.daemon_log())
        m.start()
        self.assertEqual(m.read("info/L3_MON/mbm_assign_mode"), "[default]\nmbm_event\n")
        self.assertEqual(m.read("info/L3_MON/mbm_total_bytes_config"), "0=0x7f;1=0x33\n")


if __name__ == "__main__":
    rt.main()
