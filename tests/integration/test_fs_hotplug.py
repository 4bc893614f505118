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


if __name__ == "__main__":
    rt.main()
