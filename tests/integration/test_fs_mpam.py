#!/usr/bin/env python3
"""The Arm MPAM built-ins (grace-2s, ampereone-2s) through the real daemon,
checked against what Linux v7.1's drivers/resctrl/mpam_resctrl.c and
Documentation/filesystems/resctrl.rst say the tree shows on MPAM:

- L2 and L3 are bitmaps of CPBM_WD bits with sparse masks allowed,
  min_cbm_bits 1 and the full mask shareable (devices use PARTID 0);
- MB is a percentage: min_bandwidth is the lowest band's percentage,
  bandwidth_gran ceil(100 / 2^BWA_WD), delay_linear 1, no
  thread_throttle_mode; a written value is rounded up to the granularity
  by the filesystem and then to the nearest hardware band, and schemata
  shows the band's percentage;
- num_closids is PARTID_MAX + 1; L3_MON's num_rmids is
  (PARTID_MAX + 1) << fls(PMG_MAX); llc_occupancy is the only event (no
  MBM files); max_threshold_occupancy defaults to the L3 size / num_rmids;
- the RMID is a PMG of the group's PARTID: a control group holds at most
  PMG_MAX + 1 monitoring groups (Out of RMIDs past them), and a MON group
  moved to another control group takes its PARTID;
- CDP is refused (Linux refuses it unless built with CONFIG_EXPERT);
- llc_occupancy follows a simulated workload under the group's PARTID+PMG;
- CPU hotplug removes and brings back an L3's domains as Linux's MPAM
  driver does (the MSC programmed again with what each PARTID held).
"""

import errno
import os
import subprocess

import resctrlfs_test as rt

GRACE_L3 = 114 << 20
MB = 1 << 20


def l2_line(n, mask="ff"):
    return "L2:" + ";".join("%d=%s" % (i, mask) for i in range(n))


class GraceInfo(rt.ResctrlfsTestCase):
    PLATFORM = "grace-2s"

    def test_info_has_l2_l3_mb_and_l3_mon_only(self):
        self.assertEqual(sorted(self.listdir("info")),
                         ["L2", "L3", "L3_MON", "MB", "last_cmd_status"])

    def test_cache_info_files(self):
        for res, mask, bits in (("L3", "ffff", 16), ("L2", "ff", 8)):
            self.assertEqual(sorted(self.listdir("info/" + res)),
                             ["bit_usage", "cbm_mask", "min_cbm_bits", "num_closids",
                              "shareable_bits", "sparse_masks"], res)
            self.assertEqual(self.read("info/%s/num_closids" % res), "64\n")
            self.assertEqual(self.read("info/%s/cbm_mask" % res), mask + "\n")
            self.assertEqual(self.read("info/%s/min_cbm_bits" % res), "1\n")
            self.assertEqual(self.read("info/%s/shareable_bits" % res), mask + "\n")
            self.assertEqual(self.read("info/%s/sparse_masks" % res), "1\n")
        # Every bit is hardware-shareable and used by the default group.
        self.assertEqual(self.read("info/L3/bit_usage"), "0=%s;1=%s\n" % ("X" * 16, "X" * 16))

    def test_mb_info_is_a_percentage_without_throttle_mode(self):
        self.assertEqual(sorted(self.listdir("info/MB")),
                         ["bandwidth_gran", "delay_linear", "min_bandwidth", "num_closids"])
        self.assertEqual(self.read("info/MB/bandwidth_gran"), "7\n")  # ceil(100 / 2^4)
        self.assertEqual(self.read("info/MB/min_bandwidth"), "6\n")  # round(100 / 16)
        self.assertEqual(self.read("info/MB/delay_linear"), "1\n")
        self.assertEqual(self.read("info/MB/num_closids"), "64\n")
        self.assertEqual(self.read_errno("info/MB/thread_throttle_mode")[0], 2)

    def test_l3_mon_has_llc_occupancy_only(self):
        self.assertEqual(self.read("info/L3_MON/num_rmids"), "128\n")  # (1 + 1) x (63 + 1)
        self.assertEqual(self.read("info/L3_MON/mon_features"), "llc_occupancy\n")
        self.assertEqual(self.read("info/L3_MON/max_threshold_occupancy"),
                         "%d\n" % (GRACE_L3 // 128))
        # No MBM: no event configuration, no assignable counters.
        self.assertEqual(sorted(self.listdir("info/L3_MON")),
                         ["max_threshold_occupancy", "mbm_assign_mode", "mon_features",
                          "num_rmids"])
        self.assertEqual(self.read("info/L3_MON/mbm_assign_mode"), "[default]\n")

    def test_default_schemata(self):
        # Names are padded to the widest schema name, counting the CODE/DATA
        # suffix of the CDP-capable caches ("L3CODE"), as Linux pads them;
        # lines in Linux's schema list order.
        self.assertEqual(self.read("schemata"),
                         "    MB:0=100;1=100\n    " + l2_line(144) + "\n    L3:0=ffff;1=ffff\n")

    def test_size(self):
        self.assertEqual(self.read("size"),
                         "    MB:0=100;1=100\n    " + l2_line(144, "1048576") +
                         "\n    L3:0=%d;1=%d\n" % (GRACE_L3, GRACE_L3))

    def test_no_exclusive_no_pseudo_locking(self):
        # Every bit is hardware-shareable, so an exclusive group always
        # overlaps it; MPAM has no pseudo-locking.
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/mode", "exclusive\n"), 22)
        self.assertEqual(self.lcs(), "Schemata overlaps\n")
        self.assertEqual(self.write("g/mode", "pseudo-locksetup\n"), 22)
        self.assertEqual(self.lcs(), "Pseudo-locking not supported\n")
        self.assertEqual(self.read("g/mode"), "shareable\n")

    def test_monitoring_tree(self):
        self.assertEqual(sorted(self.listdir("mon_data")), ["mon_L3_00", "mon_L3_01"])
        self.assertEqual(self.listdir("mon_data/mon_L3_00"), ["llc_occupancy"])
        self.assertEqual(self.mkdir("mon_groups/m"), 0)
        self.assertEqual(self.listdir("mon_groups/m/mon_data/mon_L3_01"), ["llc_occupancy"])
        self.assertEqual(self.read("mon_groups/m/mon_data/mon_L3_01/llc_occupancy"), "0\n")


class GraceSchemata(rt.ResctrlfsTestCase):
    PLATFORM = "grace-2s"

    def setUp(self):
        super().setUp()
        self.assertEqual(self.mkdir("g"), 0)

    def line(self, res):
        for l in self.read("g/schemata").splitlines():
            if l.strip().startswith(res + ":"):
                return l.strip()
        self.fail("no %s line" % res)

    def test_sparse_masks_are_accepted(self):
        self.assertEqual(self.write("g/schemata", "L3:0=f0f\n"), 0)
        self.assertEqual(self.line("L3"), "L3:0=f0f;1=ffff")
        self.assertEqual(self.write("g/schemata", "L2:5=81\n"), 0)
        self.assertTrue(self.line("L2").startswith("L2:0=ff;1=ff;2=ff;3=ff;4=ff;5=81;6=ff"))
        self.assertEqual(self.write("g/schemata", "L3:1=1\n"), 0)  # one bit is enough
        self.assertEqual(self.line("L3"), "L3:0=f0f;1=1")

    def test_bad_masks(self):
        for text, msg in (("L3:0=0\n", "Mask out of range\n"),
                          ("L3:0=1ffff\n", "Mask out of range\n"),
                          ("L2:0=100\n", "Mask out of range\n"),
                          ("L3:0=xyz\n", "Non-hex character in the mask xyz\n"),
                          ("L3:2=f\n", "ok\n")):  # an unknown domain: EINVAL, no text
            self.assertEqual(self.write("g/schemata", text), 22, text)
            self.assertEqual(self.lcs(), msg, text)
        self.assertEqual(self.line("L3"), "L3:0=ffff;1=ffff")

    def test_mb_granularity_and_bands(self):
        # 30 -> 35 (a multiple of 7) -> band 6 of 16 -> its upper bound 37.5% -> 38.
        self.assertEqual(self.write("g/schemata", "MB:0=30\n"), 0)
        self.assertEqual(self.line("MB"), "MB:0=38;1=100")
        # 50 -> 56 -> band 9 -> 56.25% -> 56.
        self.assertEqual(self.write("g/schemata", "MB:1=50\n"), 0)
        self.assertEqual(self.line("MB"), "MB:0=38;1=56")
        self.assertEqual(self.write("g/schemata", "MB:0=6\n"), 0)
        self.assertEqual(self.line("MB"), "MB:0=6;1=56")
        # 100 -> 105 (a multiple of 7): the top band, 100.
        self.assertEqual(self.write("g/schemata", "MB:0=100\n"), 0)
        self.assertEqual(self.line("MB"), "MB:0=100;1=56")
        self.assertEqual(self.write("g/schemata", "MB:0=99\n"), 0)
        self.assertEqual(self.line("MB"), "MB:0=100;1=56")

    def test_mb_out_of_range(self):
        for v in ("5", "101", "0"):
            self.assertEqual(self.write("g/schemata", "MB:0=%s\n" % v), 22, v)
            self.assertEqual(self.lcs(), "MB value %s out of range [6,100]\n" % v)
        self.assertEqual(self.write("g/schemata", "MB:0=5%\n"), 22)
        self.assertEqual(self.lcs(), "Invalid MB value 5%\n")

    def test_closids_run_out_at_partid_max(self):
        for i in range(62):  # 64 PARTIDs: the default group, g and 62 more
            self.assertEqual(self.mkdir("c%d" % i), 0, i)
        self.assertEqual(self.mkdir("full"), 28)  # ENOSPC
        self.assertEqual(self.lcs(), "Out of CLOSIDs\n")


class GracePmgsPerClosid(rt.ResctrlfsTestCase):
    """MPAM's monitors are keyed by PARTID+PMG, so Linux's MPAM driver makes
    the RMID depend on the CLOSID (CONFIG_RESCTRL_RMID_DEPENDS_ON_CLOSID):
    the RMID index is CLOSID << fls(PMG_MAX) | PMG, a group's RMID is one of
    its CLOSID's PMGs, and a control group holds at most PMG_MAX + 1
    monitoring groups, its own included; the next mkdir fails as
    alloc_rmid() fails: ENOSPC, "Out of RMIDs". On grace-2s PMG_MAX is 1."""
    PLATFORM = "grace-2s"
    OPTIONS = ["debug"]

    def sleeper(self):
        p = subprocess.Popen(["sleep", "1000"])
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        return p.pid

    def test_mon_groups_limited_to_pmgs(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.read("g/mon_hw_id"), "0\n")  # PMG 0 of g's PARTID
        self.assertEqual(self.mkdir("g/mon_groups/m1"), 0)
        self.assertEqual(self.read("g/mon_groups/m1/mon_hw_id"), "1\n")
        self.assertEqual(self.mkdir("g/mon_groups/m2"), 28)  # ENOSPC
        self.assertEqual(self.lcs(), "Out of RMIDs\n")
        self.assertNotIn("m2", self.listdir("g/mon_groups"))
        # The default group's PARTID has its own PMGs; so has every other.
        self.assertEqual(self.mkdir("mon_groups/a"), 0)
        self.assertEqual(self.read("mon_groups/a/mon_hw_id"), "1\n")
        self.assertEqual(self.mkdir("mon_groups/b"), 28)
        self.assertEqual(self.lcs(), "Out of RMIDs\n")
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.mkdir("h/mon_groups/m1"), 0)
        self.assertEqual(self.read("h/mon_groups/m1/mon_hw_id"), "1\n")
        # A freed PMG comes back to its PARTID once out of limbo.
        self.assertEqual(self.rmdir("g/mon_groups/m1"), 0)
        rt.wait_until(lambda: self.mkdir("g/mon_groups/m2") == 0,
                      "g's PMG 1 to leave limbo")
        self.assertEqual(self.read("g/mon_groups/m2/mon_hw_id"), "1\n")

    def test_ampereone_has_four_pmgs(self):
        m = rt.Mount(platform="ampereone-2s", options=["debug"])
        self.addCleanup(m.cleanup)
        self.assertEqual(m.mkdir("g"), 0)
        for i in range(3):
            self.assertEqual(m.mkdir("g/mon_groups/m%d" % i), 0, i)
            self.assertEqual(m.read("g/mon_groups/m%d/mon_hw_id" % i), "%d\n" % (i + 1))
        self.assertEqual(m.mkdir("g/mon_groups/m3"), 28)
        self.assertEqual(m.lcs(), "Out of RMIDs\n")

    def test_same_pmg_in_two_partids_keeps_tasks_apart(self):
        # g/mon_groups/m and mon_groups/a both have PMG 1, under PARTIDs 1
        # and 0: their tasks files and monitors are their own.
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.mkdir("mon_groups/a"), 0)
        t1, t2 = self.sleeper(), self.sleeper()
        self.assertEqual(self.write("g/tasks", "%d\n" % t1), 0)  # a MON group takes its parent's
        self.assertEqual(self.write("g/mon_groups/m/tasks", "%d\n" % t1), 0)
        self.assertEqual(self.write("mon_groups/a/tasks", "%d\n" % t2), 0)
        self.assertEqual(self.read("g/mon_groups/m/tasks"), "%d\n" % t1)
        self.assertEqual(self.read("mon_groups/a/tasks"), "%d\n" % t2)
        self.assertEqual(self.read("g/tasks"), "%d\n" % t1)

    def test_move_keeps_the_pmg_when_free_in_the_new_partid(self):
        # Linux's mongrp_reparent keeps the group's RMID (its PMG) and gives
        # it the new parent's CLOSID; its threads take the new PARTID.
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        t = self.sleeper()
        self.assertEqual(self.write("g/tasks", "%d\n" % t), 0)
        self.assertEqual(self.write("g/mon_groups/m/tasks", "%d\n" % t), 0)
        self.assertEqual(self.rename("g/mon_groups/m", "h/mon_groups/m"), 0)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.read("h/mon_groups/m/mon_hw_id"), "1\n")
        self.assertEqual(self.read("h/mon_groups/m/tasks"), "%d\n" % t)
        self.assertEqual(self.read("h/tasks"), "%d\n" % t)
        self.assertEqual(self.read("g/tasks"), "")
        # The group now holds h's PMG 1: h is full, and g's PMG 1 comes back.
        self.assertEqual(self.mkdir("h/mon_groups/x"), 28)
        self.assertEqual(self.lcs(), "Out of RMIDs\n")
        rt.wait_until(lambda: self.mkdir("g/mon_groups/y") == 0,
                      "g's PMG 1 to leave limbo")

    def test_move_into_a_full_parent_is_refused(self):
        # Ours: Linux would give the group the new PARTID with a PMG another
        # group of it already uses (two groups on one monitor). We refuse,
        # as mkdir there would be refused, and nothing moves.
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.mkdir("h/mon_groups/n"), 0)
        self.assertEqual(self.rename("g/mon_groups/m", "h/mon_groups/m"), 28)
        self.assertEqual(self.lcs(), "Out of RMIDs\n")
        self.assertEqual(self.listdir("g/mon_groups"), ["m"])
        self.assertEqual(self.listdir("h/mon_groups"), ["n"])
        self.assertEqual(self.read("g/mon_groups/m/mon_hw_id"), "1\n")
        # Renaming within the parent needs no PMG.
        self.assertEqual(self.rename("g/mon_groups/m", "g/mon_groups/m2"), 0)
        self.assertEqual(self.read("g/mon_groups/m2/mon_hw_id"), "1\n")


class GraceOccupancy(rt.ResctrlfsTestCase):
    PLATFORM = "grace-2s"
    MANUAL_CLOCK = True

    def occ(self, rel):
        return int(self.read(rel))

    def test_llc_occupancy_follows_a_workload(self):
        if rt.MSR:
            self.skipTest("no workload knob on real hardware")
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/cpus_list", "3-4\n"), 0)
        self.assertEqual(self.write("g/mon_groups/m/cpus_list", "4\n"), 0)
        self.workload(cpu=3, footprint_bytes=8 * MB)
        self.workload(cpu=4, footprint_bytes=4 * MB)
        self.assertEqual(self.occ("g/mon_data/mon_L3_00/llc_occupancy"), 0)
        self.advance(2000)
        own = self.occ("g/mon_data/mon_L3_00/llc_occupancy")
        mon = self.occ("g/mon_groups/m/mon_data/mon_L3_00/llc_occupancy")
        # The control group's file sums its own PARTID+PMG and its monitor group's.
        self.assertGreater(mon, int(3.9 * MB))
        self.assertLessEqual(mon, 4 * MB)
        self.assertGreater(own, int(11.9 * MB))
        self.assertLessEqual(own, 12 * MB)
        self.assertEqual(self.occ("g/mon_data/mon_L3_01/llc_occupancy"), 0)

    def test_portions_bound_occupancy(self):
        if rt.MSR:
            self.skipTest("no workload knob on real hardware")
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=1\n"), 0)  # 1/16 of 114 MB
        self.assertEqual(self.write("g/cpus_list", "2\n"), 0)
        self.workload(cpu=2, footprint_bytes=64 * MB)
        self.advance(5000)
        got = self.occ("g/mon_data/mon_L3_00/llc_occupancy")
        self.assertGreater(got, int(0.95 * GRACE_L3 / 16))
        self.assertLessEqual(got, GRACE_L3 // 16 + 1)


class GraceCdpRefused(rt.ResctrlfsTestCase):
    PLATFORM = "grace-2s"

    def test_cdp_mount_fails(self):
        for opt in ("cdp", "cdpl2"):
            with self.assertRaises(RuntimeError) as e:
                m = rt.Mount(platform="grace-2s", options=[opt])
                self.addCleanup(m.cleanup)
            self.assertIn("CDP not supported", str(e.exception), opt)


class GraceOnHost(rt.ResctrlfsTestCase):
    PLATFORM = "grace-2s@host"

    def test_fitted_to_this_machine(self):
        self.assertEqual(self.read("info/L3/cbm_mask"), "ffff\n")
        lines = self.read("schemata").splitlines()
        self.assertIn("L3:0=ffff;1=ffff", [l.strip() for l in lines])
        self.assertEqual(self.read("cpus_list"), "0-%d\n" % (os.cpu_count() - 1))


class AmpereOne(rt.ResctrlfsTestCase):
    PLATFORM = "ampereone-2s"

    def test_tree(self):
        self.assertEqual(sorted(self.listdir("info")),
                         ["L3", "L3_MON", "MB", "last_cmd_status"])
        self.assertEqual(self.read("info/L3/num_closids"), "32\n")
        self.assertEqual(self.read("info/MB/bandwidth_gran"), "13\n")  # ceil(100 / 8)
        self.assertEqual(self.read("info/MB/min_bandwidth"), "13\n")  # round(12.5)
        self.assertEqual(self.read("info/L3_MON/num_rmids"), "128\n")  # (3 + 1) x (31 + 1)
        self.assertEqual(sorted(l.strip() for l in self.read("schemata").splitlines()),
                         ["L3:0=ffff;1=ffff", "MB:0=100;1=100"])

    def test_mb_rounding(self):
        self.assertEqual(self.mkdir("g"), 0)
        # 30 -> 39 (a multiple of 13) -> band 3 of 8 -> 37.5% -> 38.
        self.assertEqual(self.write("g/schemata", "MB:1=30\n"), 0)
        self.assertIn("MB:0=100;1=38", [l.strip() for l in self.read("g/schemata").splitlines()])
        self.assertEqual(self.write("g/schemata", "MB:1=12\n"), 22)
        self.assertEqual(self.lcs(), "MB value 12 out of range [13,100]\n")


HOTPLUG_GROUPS = ["", "g", "g/mon_groups/m"]

class MpamHotplug(rt.ResctrlfsTestCase):
    """grace-2s (Arm MPAM): L3 0 = CPUs 0-71, L3 1 = CPUs 72-143, an L2 per
    CPU. As Linux's mpam_resctrl_offline_cpu/online_cpu do, offlining an
    L3's CPUs removes its control and monitor domains (and each CPU's L2
    domain) and powers its MSC down; onlining them brings them back, the
    MSC programmed again with what each PARTID held (mpam_devices.c's
    mpam_reprogram_msc), so schemata comes back as it was, not at the
    defaults as on x86; the monitor domain comes back empty."""
    PLATFORM = "grace-2s"

    def cpus(self, first, last, online):
        for n in range(first, last + 1):
            reply = self.ctl({"cmd": "cpu", "cpu": n, "online": online})
            self.assertTrue(reply.get("ok"), reply)
        return reply

    def line(self, group, res):
        for l in self.read(os.path.join(group, "schemata")).splitlines():
            if l.strip().startswith(res + ":"):
                return l.strip()
        return None

    def l3_1_cpor(self):
        # The MSC of L3 1: the second MSC page (our layout, 64 KiB apart).
        groups = self.ctl_ok({"cmd": "registers"})["groups"]
        return [r for r in groups.get("l3_cpor", []) if r["addr"] >> 16 == 0x2001]

    def test_offline_and_online_an_l3(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/cpus_list", "72-73\n"), 0, self.lcs())
        self.assertEqual(self.write("g/mon_groups/m/cpus_list", "72\n"), 0, self.lcs())
        self.assertEqual(self.write("g/schemata", "L3:0=f;1=3\nL2:72=3\n"), 0, self.lcs())
        for grp in HOTPLUG_GROUPS:
            self.assertEqual(self.listdir(os.path.join(grp, "mon_data")),
                             ["mon_L3_00", "mon_L3_01"])

        reply = self.cpus(72, 143, False)
        self.assertEqual(reply["online_cpus"], list(range(72)))
        for grp in HOTPLUG_GROUPS:
            self.assertEqual(self.listdir(os.path.join(grp, "mon_data")), ["mon_L3_00"])
        self.assertEqual(self.line("", "L3"), "L3:0=ffff")
        self.assertEqual(self.line("", "MB"), "MB:0=100")
        self.assertEqual(self.line("g", "L3"), "L3:0=f")
        self.assertEqual(self.line("g", "L2"), "L2:" + ";".join("%d=ff" % i for i in range(72)))
        self.assertEqual(self.read("cpus_list"), "0-71\n")
        self.assertEqual(self.read("g/cpus_list"), "\n")
        self.assertEqual(self.read("g/mon_groups/m/cpus_list"), "\n")
        self.assertEqual(self.write("g/schemata", "L3:1=3\n"), errno.EINVAL)
        self.assertEqual(self.write("g/cpus_list", "72\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Can only assign online CPUs\n")
        # The powered-down MSCs are gone from the hardware's view.
        self.assertEqual(self.l3_1_cpor(), [])

        reply = self.cpus(72, 143, True)
        self.assertEqual(reply["online_cpus"], list(range(144)))
        for grp in HOTPLUG_GROUPS:
            self.assertEqual(self.listdir(os.path.join(grp, "mon_data")),
                             ["mon_L3_00", "mon_L3_01"])
        self.assertEqual(self.read("g/mon_data/mon_L3_01/llc_occupancy"), "0\n")
        self.assertEqual(self.read("cpus_list"), "0-143\n")
        self.assertEqual(self.read("g/cpus_list"), "\n")
        # Each PARTID's configuration is back in the MSC.
        self.assertEqual(self.line("g", "L3"), "L3:0=f;1=3")
        self.assertIn("72=3;73=ff", self.line("g", "L2"))
        self.assertEqual(self.line("", "L3"), "L3:0=ffff;1=ffff")
        self.assertIn(3, [r["value"] for r in self.l3_1_cpor()])
        # The domain takes writes again.
        self.assertEqual(self.write("g/schemata", "L3:1=3c\n"), 0, self.lcs())
        self.assertEqual(self.line("g", "L3"), "L3:0=f;1=3c")
        self.assertIn(0x3c, [r["value"] for r in self.l3_1_cpor()])
        self.assertEqual(self.write("g/cpus_list", "100\n"), 0, self.lcs())

    def test_limbo_of_a_domain_that_goes_away(self):
        self.set_manual_clock(True)
        self.assertEqual(self.mkdir("mon_groups/a"), 0)
        self.assertEqual(self.write("mon_groups/a/cpus_list", "80\n"), 0, self.lcs())
        self.workload(cpu=80, footprint_bytes=64 << 20)
        self.advance(2000)
        self.assertGreater(int(self.read("mon_groups/a/mon_data/mon_L3_01/llc_occupancy")),
                           int(self.read("info/L3_MON/max_threshold_occupancy")))
        # Nothing fills L3 1 from now on: a's lines stay there.
        self.workload(cpu=80, footprint_bytes=0)
        self.assertEqual(self.rmdir("mon_groups/a"), 0)
        # Its PMG, dirty in L3 1, is the default group's only other one: it
        # stays in limbo, clean in L3 0 after a limbo pass, dirty in L3 1 ...
        self.advance(1000)
        self.assertEqual(self.mkdir("mon_groups/b"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of RMIDs\n")
        # ... until L3 1 goes away with its limbo marks.
        self.cpus(72, 143, False)
        self.assertEqual(self.mkdir("mon_groups/b"), 0, self.lcs())
        self.cpus(72, 143, True)
        self.assertEqual(self.read("mon_groups/b/mon_data/mon_L3_01/llc_occupancy"), "0\n")


class MpamSandbox(rt.unittest.TestCase):
    """The sandbox shows an MPAM platform's arm64 /proc/cpuinfo and its
    caches in sysfs, fitted to this machine's CPUs."""

    def test_sandbox_shows_arm64_cpuinfo(self):
        if rt.MSR:
            self.skipTest("the sandbox's --backend msr shows the machine itself")
        sb = rt._find_binary("RESCTRLFS_SANDBOX", "sandbox/resctrlfs-sandbox")
        if not os.access(sb, os.X_OK):
            self.skipTest("%s is not built in this tree" % sb)
        script = ("cat /proc/cpuinfo; echo ==; cat /sys/fs/resctrl/info/L3/cbm_mask; "
                  "cat /sys/devices/system/cpu/cpu0/cache/index3/size")
        out = subprocess.run([sb, "--daemon", rt.daemon_binary(), "--platform", "grace-2s",
                              "--", "sh", "-c", script],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 0, out.stderr)
        cpuinfo, _, rest = out.stdout.partition("==\n")
        blocks = [b for b in cpuinfo.split("\n\n") if b.strip()]
        self.assertEqual(len(blocks), os.cpu_count())
        for i, b in enumerate(blocks):
            self.assertIn("processor\t: %d\n" % i, b)
            self.assertIn("CPU implementer\t: 0x41\n", b)
            self.assertIn("CPU part\t: 0xd4f\n", b)
            self.assertIn("CPU architecture: 8\n", b)
            self.assertNotIn("vendor_id", b)
            self.assertNotIn("cat_l3", b)
        self.assertEqual(rest, "ffff\n%dK\n" % (GRACE_L3 >> 10))

    def test_sandbox_virtual_cpus(self):
        if rt.MSR:
            self.skipTest("the sandbox's --backend msr shows the machine itself")
        sb = rt._find_binary("RESCTRLFS_SANDBOX", "sandbox/resctrlfs-sandbox")
        if not os.access(sb, os.X_OK):
            self.skipTest("%s is not built in this tree" % sb)
        script = ("nproc; grep -c ^processor /proc/cpuinfo; "
                  "cat /sys/devices/system/cpu/cpu200/cache/index3/id")
        out = subprocess.run([sb, "--daemon", rt.daemon_binary(), "--platform", "ampereone-2s",
                              "--cpus", "platform", "--", "sh", "-c", script],
                             capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, "384\n384\n1\n")


if __name__ == "__main__":
    rt.main()
