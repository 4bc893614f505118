#!/usr/bin/env python3
"""Intel model-specific allocation through the mounted daemon (ours, Intel
RDT architecture specification, Appendix B):

- STLB QoS on intel-stlb: with `-o stlb` a schemata line `STLB` (one domain
  per physical core) and info/STLB with the kernel's cache files; masks
  validated like cache masks (the kernel's messages); the CLOSID pool is the
  smaller of the STLB's and the L3's. Without the option the tree is the
  kernel's, with no trace of the STLB.
- The non-enumerated L3 CAT of the Table B-8 TCC parts on intel-tcc: with
  `-o tccl3` an L3 of 4 CLOSIDs and 12 ways, every way shared with the GPU
  (shareable_bits, bit_usage, no exclusive group), no CDP. Without the
  option there is nothing a kernel would offer: the mount is refused."""

import errno
import json
import os
import subprocess
import unittest

import resctrlfs_test as rt

STLB_MASK_0 = 0x1A90
PQR_ASSOC = 0xC8F


def msr_skip_tcc():
    """The TCC cases run under the msr label too: the daemon's real-hardware
    start-up takes a TCC part (no RDT flag in /proc/cpuinfo) when `tccl3`
    or `stlb` is given."""


def refused_mount(test, platform, options, message):
    """Starts the daemon with `options` and checks it mounts nothing and
    exits with `message` on stderr."""
    m = rt.Mount(start=False, platform=platform, options=options)
    test.addCleanup(m.cleanup)
    r = subprocess.run(m.argv(), capture_output=True, text=True)
    test.assertFalse(rt.is_mounted(m.mnt), r.stderr)
    test.assertNotEqual(r.returncode, 0)
    test.assertIn(message, r.stderr)


class StlbDefaultTree(rt.ResctrlfsTestCase):
    PLATFORM = "intel-stlb"

    def test_no_stlb_without_the_option(self):
        self.assertEqual(sorted(self.listdir("info")), ["L3", "L3_MON", "last_cmd_status"])
        self.assertEqual(self.read("schemata"), "    L3:0=7fff\n")
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.read("g/schemata"), "    L3:0=7fff\n")
        self.assertEqual(self.write("g/schemata", "STLB:0=f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported resource name 'STLB'\n")
        # Sixteen CLOSIDs, the L3's: fifteen groups besides the default one.
        for i in range(14):
            self.assertEqual(self.mkdir("h%d" % i), 0)
        self.assertEqual(self.mkdir("full"), errno.ENOSPC)


class StlbOn(rt.ResctrlfsTestCase):
    PLATFORM = "intel-stlb"
    OPTIONS = ["stlb"]

    def test_info_and_schemata(self):
        # The L3 column is six wide (CDP capable, as the kernel pads it).
        self.assertEqual(sorted(self.listdir("info")),
                         ["L3", "L3_MON", "STLB", "last_cmd_status"])
        self.assertEqual(sorted(self.listdir("info/STLB")),
                         ["bit_usage", "cbm_mask", "min_cbm_bits", "num_closids",
                          "shareable_bits", "sparse_masks"])
        self.assertEqual(self.read("info/STLB/num_closids"), "8\n")
        self.assertEqual(self.read("info/STLB/cbm_mask"), "ff\n")
        self.assertEqual(self.read("info/STLB/min_cbm_bits"), "1\n")
        self.assertEqual(self.read("info/STLB/shareable_bits"), "0\n")
        self.assertEqual(self.read("info/STLB/sparse_masks"), "0\n")
        self.assertEqual(self.read("info/STLB/bit_usage"),
                         "0=SSSSSSSS;1=SSSSSSSS;2=SSSSSSSS;3=SSSSSSSS\n")
        self.assertEqual(self.read("info/L3/num_closids"), "16\n")
        self.assertEqual(self.read("schemata"), "  STLB:0=ff;1=ff;2=ff;3=ff\n    L3:0=7fff\n")

    def test_a_mask_reaches_the_core(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "STLB:1=f0\n"), 0)
        self.assertEqual(self.read("g/schemata"), "  STLB:0=ff;1=f0;2=ff;3=ff\n    L3:0=7fff\n")
        self.assertEqual(self.read("info/STLB/bit_usage"),
                         "0=SSSSSSSS;1=SSSSSSSS;2=SSSSSSSS;3=SSSSSSSS\n")
        self.assertEqual(self.write("g/cpus_list", "5\n"), 0)
        if rt.MSR:
            return  # the register dump is the simulated backend's
        regs = {(r["cpu"], r["msr"]): r["value"] for r in self.registers()}
        closid = regs[(5, PQR_ASSOC)] >> 32
        self.assertNotEqual(closid, 0)
        # Core 1 (CPUs 1 and 5) holds the mask; its first CPU is listed.
        self.assertEqual(regs[(1, STLB_MASK_0 + closid)], 0xF0)
        self.assertEqual(regs[(0, STLB_MASK_0 + closid)], 0xFF)

    def test_bad_masks(self):
        self.assertEqual(self.mkdir("g"), 0)
        before = self.read("g/schemata")
        for value, msg in (("5", "The mask 5 has non-consecutive 1-bits\n"),
                           ("1ff", "Mask out of range\n"),
                           ("0", "Mask out of range\n"),
                           ("xyz", "Non-hex character in the mask xyz\n")):
            self.assertEqual(self.write("g/schemata", "STLB:2=%s\n" % value), errno.EINVAL,
                             value)
            self.assertEqual(self.lcs(), msg)
        # All or nothing: a good L3 value next to a bad STLB one is not applied.
        self.assertEqual(self.write("g/schemata", "L3:0=ff\nSTLB:0=5\n"), errno.EINVAL)
        self.assertEqual(self.read("g/schemata"), before)

    def test_the_smaller_closid_count_wins(self):
        # Eight STLB CLOSIDs against sixteen L3 ones: seven groups.
        for i in range(7):
            self.assertEqual(self.mkdir("g%d" % i), 0)
        self.assertEqual(self.mkdir("full"), errno.ENOSPC)

    def test_exclusive_on_the_stlb(self):
        self.assertEqual(self.mkdir("a"), 0)
        self.assertEqual(self.mkdir("b"), 0)
        for g in ("a", "b"):
            self.assertEqual(self.write(g + "/schemata", "L3:0=7f\n"), 0)
        self.assertEqual(self.write("schemata", "L3:0=7f00\nSTLB:0=f0;1=f0;2=f0;3=f0\n"), 0)
        self.assertEqual(self.write("a/schemata", "STLB:0=3;1=3;2=3;3=3\n"), 0)
        self.assertEqual(self.write("b/schemata", "STLB:0=c;1=c;2=c;3=c\n"), 0)
        # The L3 masks of a and b overlap: a cannot be exclusive yet.
        self.assertEqual(self.write("a/mode", "exclusive\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Schemata overlaps\n")
        self.assertEqual(self.write("b/schemata", "L3:0=70\n"), 0)
        self.assertEqual(self.write("a/schemata", "L3:0=f\n"), 0)
        self.assertEqual(self.write("a/mode", "exclusive\n"), 0)
        self.assertEqual(self.read("info/STLB/bit_usage"),
                         "0=SSSSSSEE;1=SSSSSSEE;2=SSSSSSEE;3=SSSSSSEE\n")
        self.assertEqual(self.write("b/schemata", "STLB:3=6\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with exclusive group\n")


class StlbRestart(unittest.TestCase):
    def test_a_killed_daemon_restores_the_stlb_masks(self):
        m = rt.Mount(start=False, platform="intel-stlb", options=["stlb"])
        self.addCleanup(m.cleanup)
        m.start()
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "STLB:2=3c\n"), 0, m.lcs())
        schemata = m.read("g/schemata")
        self.assertIn("STLB:0=ff;1=ff;2=3c;3=ff", schemata)
        m.kill()
        m.start()
        self.assertEqual(m.read("g/schemata"), schemata)


class Refused(unittest.TestCase):
    def test_stlb_on_a_machine_without_it(self):
        refused_mount(self, "intel-2s", ["stlb"], "stlb: this machine has no STLB QoS")

    def test_tccl3_on_a_machine_without_it(self):
        refused_mount(self, "intel-stlb", ["tccl3"],
                      "tccl3: this machine has no model-specific L3 CAT")

    def test_tcc_part_without_the_option(self):
        msr_skip_tcc()
        # CPUID enumerates no RDT: like the kernel, there is nothing to mount
        # (on the msr path the start-up check says so first).
        refused_mount(self, "intel-tcc", [],
                      "this CPU has no RDT/PQoS" if rt.MSR
                      else "no RDT allocation or monitoring capability")
        if not rt.MSR:
            # Ours: the refusal names the option that would show the L3.
            refused_mount(self, "intel-tcc", [], "mount with -o tccl3")

    def test_tcc_l3_has_no_cdp(self):
        msr_skip_tcc()
        refused_mount(self, "intel-tcc", ["tccl3", "cdp"], "cdp: L3 is not CDP capable")


class TccOn(rt.ResctrlfsTestCase):
    PLATFORM = "intel-tcc"
    OPTIONS = ["tccl3"]

    def setUp(self):
        msr_skip_tcc()
        super().setUp()

    def test_l3_every_way_shared(self):
        self.assertEqual(sorted(self.listdir("info")), ["L3", "last_cmd_status"])
        self.assertEqual(self.read("info/L3/num_closids"), "4\n")
        self.assertEqual(self.read("info/L3/cbm_mask"), "fff\n")
        self.assertEqual(self.read("info/L3/shareable_bits"), "fff\n")
        self.assertEqual(self.read("info/L3/min_cbm_bits"), "1\n")
        self.assertEqual(self.read("info/L3/bit_usage"), "0=XXXXXXXXXXXX\n")
        self.assertEqual(self.read("schemata"), "L3:0=fff\n")
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=f\n"), 0)
        self.assertEqual(self.write("schemata", "L3:0=ff0\n"), 0)
        self.assertEqual(self.read("info/L3/bit_usage"), "0=XXXXXXXXXXXX\n")
        # No way can be exclusive: the GPU may use every one.
        self.assertEqual(self.write("g/mode", "exclusive\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Schemata overlaps\n")
        self.assertEqual(self.write("g/schemata", "L3:0=5\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "The mask 5 has non-consecutive 1-bits\n")
        self.assertEqual(self.write("g/schemata", "L3:0=1fff\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Mask out of range\n")
        # Four CLOSIDs: three groups.
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.mkdir("i"), 0)
        self.assertEqual(self.mkdir("j"), errno.ENOSPC)
        if rt.MSR:
            return
        regs = {(r["cpu"], r["msr"]): r["value"] for r in self.registers()}
        self.assertEqual(regs[(0, 0xC90)], 0xFF0)  # the default group's L3 mask


class TccAndStlb(rt.ResctrlfsTestCase):
    PLATFORM = "intel-tcc"
    OPTIONS = ["tccl3", "stlb"]

    def setUp(self):
        msr_skip_tcc()
        super().setUp()

    def test_both(self):
        self.assertEqual(self.read("schemata"), "STLB:0=ff;1=ff;2=ff;3=ff\n  L3:0=fff\n")
        self.assertEqual(self.read("info/STLB/num_closids"), "4\n")


# An Atom x7425E (Table B-8: 16 L3 CLOS, 12-bit masks) whose STLB has 4 CLOS.
ATOM_X7425E = {
    "vendor": "GenuineIntel", "family": 6, "model": 190, "stepping": 0,
    "brand": "Intel(R) Atom(TM) x7425E Processor",
    "cpus": [{"cpu": c, "package": 0, "core": c, "l2": c, "l3": 0} for c in range(4)],
    "l3_size_bytes": 6291456,
    "stlb": {"num_closid": 4, "cbm_len": 8, "fill": False, "alias": True},
}


def profile_mount(test, profile, options):
    m = rt.Mount(start=False, options=options)
    test.addCleanup(m.cleanup)
    m.platform = os.path.join(m.dir, "profile.json")
    with open(m.platform, "w") as f:
        json.dump(profile, f)
    m.start()
    return m


def pqr_assoc(m, cpu):
    for r in m.registers():
        if r["cpu"] == cpu and r["msr"] == PQR_ASSOC:
            return r["value"]
    raise AssertionError("no PQR_ASSOC of CPU %d" % cpu)


class TccAssociation(unittest.TestCase):
    """Appendix B of the RDT specification, model-specific L3 CAT: the
    part's CLOS count is Table B-8's, and PQR_ASSOC follows IA32_PQR_ASSOC
    for every one of them. A CPU given to a group runs with its CLOSID; an
    association write that keeps failing is counted in status and logged,
    while the cpus write itself succeeds as the kernel's does."""

    def closid(self, m, path):
        return [g["closid"] for g in m.status()["groups"] if g["path"] == path][0]

    def test_every_table_clos_reaches_the_cpu(self):
        m = profile_mount(self, ATOM_X7425E, ["tccl3"])
        self.assertEqual(m.read("info/L3/num_closids"), "16\n")
        for n in range(1, 7):
            self.assertEqual(m.mkdir("g%d" % n), 0)
        self.assertEqual(m.write("g5/cpus_list", "1\n"), 0)
        self.assertEqual(m.lcs(), "ok\n")
        self.assertEqual(m.write("g6/cpus_list", "2\n"), 0)
        self.assertEqual(pqr_assoc(m, 1) >> 32, self.closid(m, "/g5"))
        self.assertEqual(pqr_assoc(m, 2) >> 32, self.closid(m, "/g6"))
        self.assertGreaterEqual(self.closid(m, "/g5"), 4)
        self.assertEqual(m.status()["cpu_association"], {"writes_failed": 0, "failing_cpus": ""})

    def test_a_failing_association_write_is_seen(self):
        m = profile_mount(self, ATOM_X7425E, ["tccl3"])
        self.assertEqual(m.mkdir("g1"), 0)
        m.fail_writes(1000, cpu=1)
        self.assertEqual(m.write("g1/cpus_list", "1\n"), 0)  # the kernel's interface: no error
        self.assertEqual(m.lcs(), "ok\n")
        st = m.status()["cpu_association"]
        self.assertGreaterEqual(st["writes_failed"], 1)
        self.assertEqual(st["failing_cpus"], "1")
        rt.wait_until(lambda: "write of 0x100000000 to IA32_PQR_ASSOC (0xc8f) failed"
                      in m.daemon_log(), "the failure in the daemon's log",
                      report=lambda: m.daemon_log()[-2000:])
        self.assertIn("CPU 1: write of", m.daemon_log())
        # Fixed: the next change writes it again.
        m.fail_writes(0)
        self.assertEqual(m.mkdir("g2"), 0)
        self.assertEqual(m.write("g2/cpus_list", "2\n"), 0)
        self.assertEqual(m.status()["cpu_association"]["failing_cpus"], "")
        self.assertEqual(pqr_assoc(m, 1) >> 32, self.closid(m, "/g1"))


if __name__ == "__main__":
    rt.main()
