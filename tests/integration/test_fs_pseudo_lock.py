#!/usr/bin/env python3
"""Cache pseudo-locking through the mounted daemon ("Cache Pseudo-Locking"
in Documentation/filesystems/resctrl.rst; edge cases 47-49 of
test_fs_edge_cases.py), on the transcript's model platform with the
Broadwell server model (0x4F) that Linux offers pseudo-locking on
(rt.model_platform(79)): the kernel's handling of an MB line needs MBA and
pseudo-locking together, which no product has (intel-bdx, Broadwell-EP, has
no MBA).

What a FUSE daemon cannot provide is not tested: /dev/pseudo_lock/<group>
(mmap of the locked memory) and the debugfs pseudo_lock_measure file.
"""

import errno
import os
import stat
import subprocess
import unittest

import resctrlfs_test as rt

MISC_FEATURE_CONTROL = 0x1A4
PQR_ASSOC = 0xC8F
L3_MASK_0 = 0xC90


class PseudoLock(rt.ResctrlfsTestCase):
    PLATFORM = rt.model_platform(79)

    def mode_of(self, rel):
        return stat.S_IMODE(os.stat(self.path(rel)).st_mode)

    def wait_mode(self, rel, want):
        """The daemon tells the kernel about a mode change it made on its
        own (not by chmod) right after replying; a stat racing that notice
        may still see the cached mode, so look again until the notice is in."""
        rt.wait_until(lambda: self.mode_of(rel) == want, "%s to have mode %o" % (rel, want),
                      interval=0.01)
        return self.mode_of(rel)

    def locksetup(self, name="p0"):
        self.assertEqual(self.mkdir(name), 0)
        self.assertEqual(self.write(name + "/mode", "pseudo-locksetup\n"), 0, self.lcs())

    def test_47_refusals(self):
        self.assertEqual(self.write("mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Cannot pseudo-lock default group\n")
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p0/mon_groups/m"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Monitoring in progress\n")
        self.assertEqual(self.rmdir("p0/mon_groups/m"), 0)
        sleeper = subprocess.Popen(["sleep", "300"])
        try:
            self.assertEqual(self.write("p0/tasks", "%d\n" % sleeper.pid), 0)
            self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
            self.assertEqual(self.lcs(), "Tasks assigned to resource group\n")
        finally:
            sleeper.kill()
            sleeper.wait()
        self.assertEqual(self.write("p0/cpus_list", "3\n"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "CPUs assigned to resource group\n")
        self.assertEqual(self.read("p0/mode"), "shareable\n")

    def test_48_mode_names(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locked\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported mode\n")
        self.assertEqual(self.write("p0/mode", "shareable\n"), 0)
        self.assertEqual(self.lcs(), "ok\n")

    def test_49_locksetup_group(self):
        self.locksetup()
        for f in ("tasks", "cpus", "cpus_list"):
            self.assertEqual(self.mode_of("p0/" + f), 0, f)
            self.assertEqual(self.read_errno("p0/" + f)[0], errno.EACCES, f)
            self.assertEqual(self.write("p0/" + f, "0\n"), errno.EACCES, f)
        self.assertEqual(self.mode_of("p0/mon_groups"), 0)
        self.assertEqual(self.read("p0/schemata"), "MB:uninitialized\nL3:uninitialized\n")
        self.assertEqual(self.read("p0/size"), "    MB:0=0;1=0\n    L3:0=0;1=0\n")
        self.assertEqual(self.read("p0/mode"), "pseudo-locksetup\n")
        self.assertEqual(self.mkdir("p0/mon_groups/m"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Pseudo-locking in progress\n")
        # Leaving locksetup opens everything again.
        self.assertEqual(self.write("p0/mode", "shareable\n"), 0)
        self.assertEqual(self.wait_mode("p0/tasks", 0o644), 0o644)
        self.assertEqual(self.wait_mode("p0/mon_groups", 0o755), 0o755)
        self.assertEqual(self.read("p0/tasks"), "")

    def test_lock_a_region(self):
        self.locksetup()
        self.assertEqual(self.write("p0/schemata", "MB:0=50\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Cannot pseudo-lock MBA resource\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with other group\n")
        self.assertEqual(self.write("schemata", "L3:0=7f8\n"), 0)
        # Three of eleven ways of 16 MiB: beyond the kernel's 4 MiB allocation.
        self.assertEqual(self.write("p0/schemata", "L3:0=7\n"), errno.E2BIG)
        self.assertEqual(self.lcs(), "Requested region exceeds maximum size\n")
        self.assertEqual(self.read("p0/mode"), "pseudo-locksetup\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=3;1=1\n"), 0, self.lcs())
        self.assertEqual(self.read("p0/mode"), "pseudo-locked\n")
        self.assertEqual(self.read("p0/schemata"), "L3:0=3\n")
        self.assertEqual(self.read("p0/size"), "    L3:0=3050402\n")
        self.assertEqual(self.read("p0/cpus"), "0f\n")
        self.assertEqual(self.read("p0/cpus_list"), "0-3\n")
        self.assertEqual(self.mode_of("p0/cpus"), 0o444)
        self.assertEqual(self.mode_of("p0/tasks"), 0)
        self.assertEqual(self.read("info/L3/bit_usage"), "0=SSSSSSSS0PP;1=SSSSSSSSSSS\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Resource group is pseudo-locked\n")
        self.assertEqual(self.write("p0/mode", "shareable\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Cannot change pseudo-locked group\n")
        self.assertEqual(self.write("p0/mode", "pseudo-locked\n"), 0)
        self.assertEqual(self.write("schemata", "L3:0=7ff\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "CBM overlaps with pseudo-locked region\n")
        self.assertEqual(self.mkdir("p1"), 0)
        self.assertEqual(self.read("p1/schemata"), "    MB:0=100;1=100\n    L3:0=7fc;1=7ff\n")
        self.locksetup("p2")
        self.assertEqual(self.write("p2/schemata", "L3:0=4\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Pseudo-locked region in hierarchy\n")
        # The registers: the region's mask stays in the freed CLOSID slot,
        # now p1's (reprogrammed without the region); prefetchers back on.
        regs = self.registers()
        misc = [r for r in regs if r["msr"] == MISC_FEATURE_CONTROL]
        self.assertEqual(len(misc), 8)
        self.assertTrue(all(r["value"] == 0 for r in misc))
        self.assertTrue(all(r["value"] == 0 for r in regs if r["msr"] == PQR_ASSOC))
        # rmdir releases the region.
        self.assertEqual(self.rmdir("p0"), 0)
        self.assertEqual(self.read("info/L3/bit_usage"), "0=SSSSSSSSS00;1=SSSSSSSSSSS\n")
        self.assertEqual(self.write("schemata", "L3:0=7ff\n"), 0)

    def test_hardware_failure_keeps_locksetup(self):
        self.assertEqual(self.write("schemata", "L3:1=7fc\n"), 0)
        # p0's CLOSID holds the mask already, so the locking sequence's first
        # write is the prefetcher register on CPU 4, which is made to fail.
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/schemata", "L3:1=3\n"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), 0)
        self.fail_writes(1, cpu=4)
        self.assertEqual(self.write("p0/schemata", "L3:1=3\n"), errno.EIO)
        self.assertEqual(self.lcs(), "Locking thread returned error -5\n")
        self.assertEqual(self.read("p0/mode"), "pseudo-locksetup\n")
        self.assertEqual(self.read("p0/schemata"), "MB:uninitialized\nL3:uninitialized\n")
        self.assertEqual(self.write("p0/schemata", "L3:1=3\n"), 0, self.lcs())
        self.assertEqual(self.read("p0/schemata"), "L3:1=3\n")
        self.assertEqual(self.read("p0/cpus_list"), "4-7\n")

    def test_restart_restores_locked_group(self):
        self.assertEqual(self.write("schemata", "L3:0=7fc\n"), 0)
        self.locksetup()
        self.assertEqual(self.write("p0/schemata", "L3:0=3\n"), 0)
        self.locksetup("p1")
        self.fs.stop()
        self.fs.start()
        self.assertEqual(self.read("p0/mode"), "pseudo-locked\n")
        self.assertEqual(self.read("p0/schemata"), "L3:0=3\n")
        self.assertEqual(self.read_errno("p0/tasks")[0], errno.EACCES)
        self.assertEqual(self.read("p1/mode"), "pseudo-locksetup\n")
        self.assertEqual(self.read_errno("p1/tasks")[0], errno.EACCES)
        self.assertEqual(self.write("schemata", "L3:0=7ff\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "CBM overlaps with pseudo-locked region\n")


class NotOffered(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    def test_47_not_supported(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Pseudo-locking not supported\n")


class WithCdp(rt.ResctrlfsTestCase):
    PLATFORM = "intel-bdx"
    OPTIONS = ["cdp"]

    def test_47_cdp_enabled(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "CDP enabled\n")


if __name__ == "__main__":
    rt.main()
