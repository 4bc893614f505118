#!/usr/bin/env python3
"""Cache Bandwidth Allocation through the mounted daemon (ours: Linux has no
CBA interface): on the built-in intel-cba platform, mounted with `-o cba`,
the CB resource has MB's info files and value syntax (a percentage of the
unthrottled bandwidth, min_bandwidth..100 in steps of bandwidth_gran). A CB
throttle on one group lowers the bandwidth its mbm files count; the
effective throttle is the stricter of CB and MB (RDT architecture
specification 3.2.4). Bad values get kernel-style messages naming CB;
rmdir/mkdir starts a group from 100; a restart restores the values. Without
the option the tree is the kernel's (no CB); a machine without CBA refuses
the option.

The numbers are docs/extensions.md's measured example ("Cache Bandwidth
Allocation")."""

import errno
import signal
import subprocess
import unittest

import resctrlfs_test as rt

TOTAL = "mon_data/mon_L3_00/mbm_total_bytes"


def schema_line(text, name):
    for line in text.splitlines():
        if line.strip().startswith(name + ":"):
            return line.strip()
    return None


class Cba(rt.ResctrlfsTestCase):
    PLATFORM = "intel-cba"
    OPTIONS = ["cba"]
    MANUAL_CLOCK = True

    def setUp(self):
        super().setUp()
        for g, cpu in (("fast", 0), ("slow", 1)):
            self.assertEqual(self.mkdir(g), 0)
            self.assertEqual(self.write(g + "/cpus_list", "%d\n" % cpu), 0, self.lcs())
            self.workload(cpu=cpu, bandwidth_mbps=1000)

    def measure(self):
        """MB counted in one simulated second by each group."""
        before = {g: int(self.read(g + "/" + TOTAL)) for g in ("fast", "slow")}
        self.advance(1000)
        return {g: (int(self.read(g + "/" + TOTAL)) - before[g]) / 1e6 for g in before}

    def assertAbout(self, got, want):
        self.assertAlmostEqual(got, want, delta=want * 0.03,
                               msg="%.1f MB is not about %.1f MB" % (got, want))

    def test_info_files_follow_mb(self):
        self.assertIn("CB", self.listdir("info"))
        self.assertEqual(self.listdir("info/CB"), self.listdir("info/MB"))
        self.assertEqual(self.read("info/CB/num_closids"), "15\n")
        self.assertEqual(self.read("info/CB/min_bandwidth"), "10\n")
        self.assertEqual(self.read("info/CB/bandwidth_gran"), "10\n")
        self.assertEqual(self.read("info/CB/delay_linear"), "1\n")
        self.assertEqual(self.read("info/CB/thread_throttle_mode"), "per-thread\n")
        self.assertEqual(schema_line(self.read("schemata"), "CB"), "CB:0=100;1=100")
        self.assertEqual(schema_line(self.read("fast/schemata"), "CB"), "CB:0=100;1=100")

    def test_a_cb_throttle_lowers_the_groups_bandwidth(self):
        got = self.measure()
        self.assertAbout(got["fast"], 1000)
        self.assertAbout(got["slow"], 1000)
        self.assertEqual(self.write("slow/schemata", "CB:0=30\n"), 0, self.lcs())
        self.assertEqual(schema_line(self.read("slow/schemata"), "CB"), "CB:0=30;1=100")
        got = self.measure()
        self.assertAbout(got["fast"], 1000)
        self.assertAbout(got["slow"], 300)
        # Level 7 of 0..9 in the group's byte, on every CPU of L3 domain 0
        # (CPUs 0-3), on none of domain 1.
        regs = {(r["cpu"], r["msr"]): r["value"] for r in self.registers()}
        values = {regs[(c, 0xE00)] for c in range(4)}
        self.assertEqual(len(values), 1, regs)
        value = values.pop()
        self.assertEqual(bin(value).count("1"), 3, hex(value))  # 7 = 0b111 in one byte
        self.assertEqual([b for b in value.to_bytes(8, "little") if b], [7])
        self.assertEqual({regs[(c, 0xE00)] for c in range(4, 8)}, {0})

    def test_the_stricter_of_cb_and_mb_wins(self):
        self.assertEqual(self.write("slow/schemata", "CB:0=50\nMB:0=20\n"), 0, self.lcs())
        self.assertAbout(self.measure()["slow"], 200)  # MB is stricter
        self.assertEqual(self.write("slow/schemata", "MB:0=80\n"), 0, self.lcs())
        self.assertAbout(self.measure()["slow"], 500)  # now CB is
        self.assertEqual(self.write("slow/schemata", "CB:0=100\n"), 0, self.lcs())
        self.assertAbout(self.measure()["slow"], 800)  # MB alone

    def test_bad_values_get_kernel_style_messages(self):
        for text, status in (("CB:0=5\n", "CB value 5 out of range [10,100]\n"),
                             ("CB:0=101\n", "CB value 101 out of range [10,100]\n"),
                             ("CB:0=abc\n", "Invalid CB value abc\n"),
                             ("CB:0=\n", "Invalid CB value \n"),
                             # no domain 7: EINVAL without a message, as the
                             # kernel answers for MB
                             ("CB:7=50\n", "ok\n")):
            self.assertEqual(self.write("slow/schemata", text), errno.EINVAL, text)
            self.assertEqual(self.lcs(), status, text)
        # MB's own messages stay the kernel's.
        self.assertEqual(self.write("slow/schemata", "MB:0=5\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "MB value 5 out of range [10,100]\n")
        # Nothing was applied; a value between steps rounds up like MB's.
        self.assertEqual(schema_line(self.read("slow/schemata"), "CB"), "CB:0=100;1=100")
        self.assertEqual(self.write("slow/schemata", "CB:1=44\n"), 0, self.lcs())
        self.assertEqual(schema_line(self.read("slow/schemata"), "CB"), "CB:0=100;1=50")

    def test_rmdir_and_mkdir_start_from_100(self):
        self.assertEqual(self.write("slow/schemata", "CB:0=20;1=40\n"), 0, self.lcs())
        self.assertEqual(self.rmdir("slow"), 0)
        self.assertEqual(self.mkdir("slow"), 0)
        self.assertEqual(schema_line(self.read("slow/schemata"), "CB"), "CB:0=100;1=100")


class Restart(unittest.TestCase):
    def test_a_restart_restores_cb_values(self):
        m = rt.Mount(start=False, platform="intel-cba", options=["cba"])
        self.addCleanup(m.cleanup)
        m.start()
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "CB:0=30;1=60\n"), 0, m.lcs())
        schemata = m.read("g/schemata")
        self.assertEqual(m.stop(signal.SIGTERM), 0)
        m.start()
        self.assertEqual(m.read("g/schemata"), schemata)
        self.assertEqual(schema_line(schemata, "CB"), "CB:0=30;1=60")
        values = [r["value"] for r in m.registers() if r["msr"] == 0xE00]
        self.assertIn(7, {b for v in values for b in v.to_bytes(8, "little")})


class WithoutTheOption(rt.ResctrlfsTestCase):
    PLATFORM = "intel-cba"

    def test_the_tree_is_the_kernels(self):
        self.assertNotIn("CB", self.listdir("info"))
        self.assertIsNone(schema_line(self.read("schemata"), "CB"))
        self.assertEqual(self.mkdir("g"), 0)
        self.assertIsNone(schema_line(self.read("g/schemata"), "CB"))
        self.assertEqual(self.write("g/schemata", "CB:0=50\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported resource name 'CB'\n")


class Refused(unittest.TestCase):
    def test_platform_without_cba_refuses_the_option(self):
        m = rt.Mount(start=False, platform="intel-gnr-io", options=["cba"])
        self.addCleanup(m.cleanup)
        r = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertFalse(rt.is_mounted(m.mnt), r.stderr)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cba: this machine has no Cache Bandwidth Allocation", r.stderr)


if __name__ == "__main__":
    rt.main()
