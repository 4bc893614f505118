#!/usr/bin/env python3
"""CPU and domain hotplug through the mounted daemon (mon_data domain
directories, cpus/cpus_list): on intel-2s (L3 domain 0 = CPUs 0-3, domain 1 = CPUs
4-7) offlining CPUs 4-7 with the control socket / resctrlfsctl (under the msr
label: resctrl-fakehw offlines them and changes sysfs's online list, which
the daemon follows) removes
mon_L3_01 from every group, drops domain 1 from schemata and the CPUs from
every cpus mask; onlining them brings the domain back with default controls,
its CPUs in the default group, and writable again."""

import errno
import json
import os
import subprocess

import resctrlfs_test as rt

GROUPS = ["", "g", "g/mon_groups/m"]


class Hotplug(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    def ctl_cli(self, *args):
        if rt.MSR:
            # The machine, not the daemon, hotplugs a CPU on the msr path
            # (the harness's ctl() sends it to resctrl-fakehw, whose sysfs
            # the daemon follows); resctrlfsctl's cpu command is the
            # simulated machine's.
            reply = self.cpu(int(args[2]), args[1] == "online")
            return (0 if reply.get("ok") else 1), reply
        r = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "--raw"] + list(args),
                           capture_output=True, text=True)
        return r.returncode, (json.loads(r.stdout) if r.stdout.strip() else None)

    def cpu(self, n, online):
        return self.ctl({"cmd": "cpu", "cpu": n, "online": online})

    def mon_data(self, group):
        return self.listdir(os.path.join(group, "mon_data"))

    def setup_groups(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/cpus_list", "4-5\n"), 0, self.lcs())
        self.assertEqual(self.write("g/mon_groups/m/cpus_list", "4\n"), 0, self.lcs())
        self.assertEqual(self.write("g/schemata", "L3:0=f;1=3\nMB:0=40;1=50\n"), 0, self.lcs())
        for grp in GROUPS:
            self.assertEqual(self.mon_data(grp), ["mon_L3_00", "mon_L3_01"])
            # Let the kernel cache a positive entry for the domain directory.
            self.assertTrue(os.path.isdir(self.path(os.path.join(grp, "mon_data/mon_L3_01"))))

    def offline_domain_1(self):
        # Through resctrlfsctl for two CPUs, raw JSON for the others.
        for n in (4, 5):
            rc, reply = self.ctl_cli("cpu", "offline", str(n))
            self.assertEqual(rc, 0, reply)
            self.assertTrue(reply["ok"])
            self.assertFalse(reply["online"])
        for n in (6, 7):
            reply = self.cpu(n, False)
            self.assertTrue(reply["ok"], reply)
        self.assertEqual(reply["online_cpus"], [0, 1, 2, 3])

    def test_offline_removes_domain_everywhere(self):
        self.setup_groups()
        # One CPU of the domain going leaves the domain in place.
        self.assertTrue(self.cpu(4, False)["ok"])
        self.assertEqual(self.read("g/cpus_list"), "5\n")
        self.assertEqual(self.read("g/mon_groups/m/cpus_list"), "\n")
        self.assertEqual(self.mon_data("g"), ["mon_L3_00", "mon_L3_01"])
        self.assertTrue(self.cpu(4, True)["ok"])
        self.assertEqual(self.read("cpus_list"), "0-4,6-7\n")

        self.offline_domain_1()
        for grp in GROUPS:
            self.assertEqual(self.mon_data(grp), ["mon_L3_00"])
            self.assertFalse(os.path.exists(self.path(os.path.join(grp, "mon_data/mon_L3_01"))))
        self.assertEqual(self.read("schemata"), "    MB:0=100\n    L3:0=7ff\n")
        self.assertEqual(self.read("g/schemata"), "    MB:0=40\n    L3:0=f\n")
        self.assertEqual(self.read("cpus"), "0f\n")
        self.assertEqual(self.read("cpus_list"), "0-3\n")
        self.assertEqual(self.read("g/cpus_list"), "\n")
        self.assertEqual(self.read("g/mon_groups/m/cpus"), "00\n")
        # Offline CPUs cannot be assigned; the absent domain cannot be written.
        self.assertEqual(self.write("g/cpus_list", "4\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Can only assign online CPUs\n")
        self.assertEqual(self.write("g/schemata", "L3:1=3\n"), errno.EINVAL)
        self.assertEqual(self.write("g/schemata", "L3:0=3\n"), 0, self.lcs())
        self.assertEqual(self.read("mon_data/mon_L3_00/llc_occupancy").strip().isdigit(), True)
        # The powered-down CPUs are gone from the hardware's view.
        self.assertFalse([r for r in self.registers() if r["cpu"] >= 4])

    def test_online_restores_domain_with_defaults(self):
        self.setup_groups()
        self.offline_domain_1()
        # Negative entries cached while the domain was away must not hide it.
        self.assertFalse(os.path.exists(self.path("g/mon_data/mon_L3_01")))
        for n in (4, 5, 6, 7):
            rc, reply = self.ctl_cli("cpu", "online", str(n))
            self.assertEqual(rc, 0, reply)
        self.assertEqual(reply["online_cpus"], list(range(8)))
        for grp in GROUPS:
            self.assertEqual(self.mon_data(grp), ["mon_L3_00", "mon_L3_01"])
            self.assertEqual(self.listdir(os.path.join(grp, "mon_data/mon_L3_01")),
                             ["llc_occupancy", "mbm_local_bytes", "mbm_total_bytes"])
        self.assertTrue(os.path.isdir(self.path("g/mon_data/mon_L3_01")))
        # (On real hardware g counts nothing: it has no CPUs, see
        # docs/hardware.md, "Tasks on real hardware".)
        self.assertEqual(self.read("g/mon_data/mon_L3_01/mbm_total_bytes"),
                         "Unavailable\n" if rt.MSR else "0\n")
        # The CPUs come back to the default group; domain 1 at its defaults.
        self.assertEqual(self.read("cpus_list"), "0-7\n")
        self.assertEqual(self.read("g/cpus_list"), "\n")
        self.assertEqual(self.read("schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(self.read("g/schemata"), "    MB:0=40;1=100\n    L3:0=f;1=7ff\n")
        # Writes to domain 1 work again and reach the hardware.
        self.assertEqual(self.write("g/schemata", "L3:1=3c\n"), 0, self.lcs())
        self.assertEqual(self.read("g/schemata"), "    MB:0=40;1=100\n    L3:0=f;1=3c\n")
        self.assertIn(0x3c, [r["value"] for r in self.registers()
                             if r["cpu"] >= 4 and 0xC90 <= r["msr"] < 0xCA0])
        self.assertEqual(self.write("g/cpus_list", "6\n"), 0, self.lcs())
        self.assertEqual(self.read("cpus_list"), "0-5,7\n")

    def test_bad_requests(self):
        if rt.MSR:
            # The daemon's cpu command is the simulated machine's: on the msr
            # path it is refused (the kernel, here resctrl-fakehw, hotplugs
            # and refuses bad requests in sysfs), and nothing changes.
            r = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "--raw", "cpu",
                                "offline", "4"], capture_output=True, text=True)
            self.assertNotEqual(r.returncode, 0)
            reply = json.loads(r.stdout)
            self.assertFalse(reply["ok"])
            self.assertIn("on real hardware the kernel takes CPUs offline", reply["error"])
            self.assertEqual(self.read("cpus_list"), "0-7\n")
            self.assertEqual(self.status()["daemon"]["online_cpus"], list(range(8)))
            return
        reply = self.cpu(8, False)
        self.assertFalse(reply["ok"])
        reply = self.cpu(3, True)
        self.assertFalse(reply["ok"])
        self.assertIn("already online", reply["error"])
        rc, reply = self.ctl_cli("cpu", "online", "9")
        self.assertNotEqual(rc, 0)
        self.assertFalse(reply["ok"])
        for n in range(1, 8):
            self.assertTrue(self.cpu(n, False)["ok"])
        reply = self.cpu(0, False)
        self.assertFalse(reply["ok"])
        self.assertIn("last online CPU", reply["error"])
        self.assertEqual(self.read("cpus_list"), "0\n")


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
        if rt.MSR:
            self.skipTest("the MPAM machine is simulated only")
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/cpus_list", "72-73\n"), 0, self.lcs())
        self.assertEqual(self.write("g/mon_groups/m/cpus_list", "72\n"), 0, self.lcs())
        self.assertEqual(self.write("g/schemata", "L3:0=f;1=3\nL2:72=3\n"), 0, self.lcs())
        for grp in GROUPS:
            self.assertEqual(self.listdir(os.path.join(grp, "mon_data")),
                             ["mon_L3_00", "mon_L3_01"])

        reply = self.cpus(72, 143, False)
        self.assertEqual(reply["online_cpus"], list(range(72)))
        for grp in GROUPS:
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
        for grp in GROUPS:
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
        if rt.MSR:
            self.skipTest("the MPAM machine is simulated only")
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


if __name__ == "__main__":
    rt.main()
