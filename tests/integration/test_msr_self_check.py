#!/usr/bin/env python3
"""resctrlfsd --self-check (ours) on simulated machines, through the same
seam as on hardware: resctrl-fakehw emulates /dev/cpu/N/{cpuid,msr} and the
sysfs topology of a simulated platform, resctrl-msrd serves its registers.
A resctrl tree mounted by resctrlfsd stands in for the kernel's.

- Matching: the "kernel" is resctrlfsd --backend msr on the same machine
  (so it programmed the registers): every info/ file, every group's
  schemata and the registers of every group's CLOSID match; by CLOSID when
  the tree is mounted with -o debug (ctrl_hw_id), by value otherwise; with
  CDP, both halves of each CLOSID; on an AMD machine (amd-2s: MBA and SMBA
  in AMD's registers and units, non-contiguous L3 masks).
- cpus: every group's cpus_list against the CLOSID (and, with mon_hw_id,
  the RMID) in its CPUs' PQR_ASSOC; a PQR_ASSOC changed behind the tree's
  back DIFFERs.
- Differing: a tree of another platform, and a tree of the same platform
  that never programmed this machine's registers.
- Could not check: no resctrl mounted, the broker refusing this process,
  no broker at all, one register whose read fails (resctrl-fakehw answers
  EIO for it): that CLOSID's registers are NOT CHECKED, never DIFFER or
  MATCH, and the other checks go on.
- Read-only: resctrl-fakehw counts every MSR write; the self-check makes none.
"""

import json
import os
import subprocess
import tempfile
import unittest

import resctrlfs_test as rt

rt.MSR = True  # Mounts run the msr path unless a test says otherwise

# Two sockets of 4 CPUs with L3 CAT and MBA and no monitoring: no daemon
# worker writes a register (QM_EVTSEL) while the self-check runs.
NO_MON_PROFILE = {
    "vendor": "GenuineIntel", "family": 6, "model": 143,
    "cpus": [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4} for c in range(8)],
    "l3_size_bytes": 1 << 25,
    "l3_cat": {"cbm_len": 11, "num_closid": 16},
    "mba": {"num_closid": 8, "max_delay": 90, "linear": True},
}


def self_check(hw, broker_sock, kernel, as_json=True):
    argv = [rt.daemon_binary(), "--self-check", "--broker", broker_sock, "--hw-root", hw.root,
            "--kernel-resctrl", kernel]
    if hw.rdt():
        argv += ["--rdt", hw.rdt()]
    if as_json:
        argv.append("--json")
    r = subprocess.run(argv, capture_output=True, text=True)
    if as_json:
        try:
            return r.returncode, json.loads(r.stdout), r
        except ValueError:
            raise AssertionError("not JSON (rc %d): %s\n%s" % (r.returncode, r.stdout, r.stderr))
    return r.returncode, r.stdout, r


def results(report, area=None, result=None):
    return [c for c in report["checks"]
            if (area is None or c["area"] == area) and (result is None or c["result"] == result)]


def find(report, area, item):
    for c in report["checks"]:
        if c["area"] == area and c["item"] == item:
            return c
    raise AssertionError("no check %s/%s in %s" % (area, item, json.dumps(report, indent=1)))


class SimMount(rt.Mount):
    """A resctrlfsd on the simulated backend (the stand-in for a kernel that
    did not program the machine under test)."""

    def __init__(self, platform):
        rt.MSR = False
        try:
            super().__init__(platform=platform)
        finally:
            rt.MSR = True


class Matching(unittest.TestCase):
    def mount(self, profile, options=()):
        m = rt.Mount(start=False, options=options)
        self.addCleanup(m.cleanup)
        if isinstance(profile, dict):
            path = os.path.join(m.dir, "profile.json")
            with open(path, "w") as f:
                json.dump(profile, f)
            profile = path
        m.platform = profile
        m.start()
        return m

    def test_same_machine_by_closid(self):
        m = self.mount(NO_MON_PROFILE, options=["debug"])
        self.assertEqual(m.mkdir("g1"), 0)
        self.assertEqual(m.mkdir("g2"), 0)
        self.assertEqual(m.write("g1/schemata", "L3:0=f;1=3\nMB:0=50;1=70\n"), 0, m.lcs())
        self.assertEqual(m.write("g2/schemata", "L3:0=70;1=7f0\n"), 0, m.lcs())
        self.assertEqual(m.write("g2/cpus_list", "1,5\n"), 0, m.lcs())
        before = m.hw.ctl({"cmd": "counts"})

        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        after = m.hw.ctl({"cmd": "counts"})
        self.assertEqual(after["writes"], before["writes"], "the self-check wrote a register")
        self.assertGreater(after["reads"], before["reads"], "no register was read")
        self.assertEqual(rep["msr_writes"], 0)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        self.assertEqual(rep["summary"]["differ"], 0)
        self.assertEqual(rep["cpu"]["cpus_checked"], 8)
        self.assertIn("cat_l3", rep["cpu"]["cpuid_flags"])
        self.assertEqual(find(rep, "cpuid", "every CPU")["result"], "match")
        for f in ("info/L3/cbm_mask", "info/L3/num_closids", "info/L3/bit_usage",
                  "info/MB/bandwidth_gran", "info/MB/min_bandwidth"):
            self.assertEqual(find(rep, "info", f)["result"], "match", f)
        self.assertEqual(find(rep, "info", "info/last_cmd_status")["result"], "not_checked")
        for g in ("/", "g1", "g2"):
            self.assertEqual(find(rep, "schemata", g)["result"], "match", g)
            reg = find(rep, "registers", g)
            self.assertEqual(reg["result"], "match", reg)
            self.assertIn("ctrl_hw_id", reg["detail"])
        self.assertEqual(find(rep, "cpus", "g2")["result"], "match")
        self.assertIn("PQR_ASSOC of CPU(s) 1,5 holds CLOSID", find(rep, "cpus", "g2")["detail"])
        self.assertEqual(results(rep, "cpus", "not_checked"), [])  # no monitoring: no RMID line

        # The text form says the same.
        rc, text, _ = self_check(m.hw, m.broker.sock, m.mnt, as_json=False)
        self.assertEqual(rc, 0, text)
        self.assertIn("MATCH       schemata: g1", text)
        self.assertIn("0 differ", text)
        self.assertIn(" 0 writes)", text)
        self.assertEqual(m.hw.ctl({"cmd": "counts"})["writes"], before["writes"])

    def test_cba_registers(self):
        """CBA (ours, -o cba): the throttle level of each CLOSID is its byte
        of a register shared by eight CLOSIDs, on every CPU of the domain;
        compared byte for byte, CPU by CPU."""
        m = self.mount("intel-cba", options=["debug", "cba"])
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.mkdir("h"), 0)
        self.assertEqual(m.write("g/schemata", "CB:0=30\n"), 0, m.lcs())
        self.assertEqual(m.write("h/schemata", "CB:0=50\n"), 0, m.lcs())
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        for g in ("/", "g", "h"):
            self.assertEqual(find(rep, "schemata", g)["result"], "match", g)
            self.assertEqual(find(rep, "registers", g)["result"], "match", g)
        g, h = int(m.read("g/ctrl_hw_id")), int(m.read("h/ctrl_hw_id"))
        self.assertEqual(g // 8, h // 8, "g and h share a CBA register")

        # Another tool zeroes the register holding g's and h's bytes on one
        # CPU of domain 0 only: both throttles are gone there, the default
        # group's byte (level 0, unthrottled) is what it was.
        cpu = 1  # intel-cba's L3 domain 0 is package 0's CPUs, from CPU 0 on
        self.assertTrue(m.hw.ctl({"cmd": "write", "cpu": cpu, "msr": 0xE00 + g // 8,
                                  "value": 0})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        for name, closid in (("g", g), ("h", h)):
            reg = find(rep, "registers", name)
            self.assertEqual(reg["result"], "differ", reg)
            self.assertIn("CB domain 0 CLOSID %d (byte %d, CPU %d)" % (closid, closid % 8, cpu),
                          reg["detail"])
        self.assertEqual(find(rep, "registers", "/")["result"], "match")

    def test_stlb_registers(self):
        """STLB QoS (ours, -o stlb): one mask register per CLOSID and core,
        found from the tree (a FUSE mount's options do not show -o stlb)."""
        m = self.mount("intel-stlb", options=["debug", "stlb"])
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "STLB:0=3\n"), 0, m.lcs())
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        self.assertEqual(find(rep, "info", "info/STLB/cbm_mask")["result"], "match")
        for g in ("/", "g"):
            self.assertEqual(find(rep, "schemata", g)["result"], "match", g)
            self.assertEqual(find(rep, "registers", g)["result"], "match", g)
        g = int(m.read("g/ctrl_hw_id"))
        self.assertTrue(m.hw.ctl({"cmd": "write", "cpu": 0, "msr": 0x1A90 + g,
                                  "value": 1})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        reg = find(rep, "registers", "g")
        self.assertEqual(reg["result"], "differ", reg)
        self.assertIn("STLB domain 0 CLOSID %d" % g, reg["detail"])
        self.assertEqual(find(rep, "registers", "/")["result"], "match")

    def test_telemetry_aggregators(self):
        """Intel telemetry (PERF_PKG): the self-check finds the aggregators
        in sysfs as the daemon does, reads one counter of each through the
        broker, and its model has the PERF_PKG resource, so the tree's
        info/PERF_PKG_MON compares; a broker that cannot read them says
        NOT CHECKED, never MATCH."""
        m = self.mount("intel-aet")
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        telem = results(rep, "telemetry")
        self.assertEqual(len(telem), 4, telem)  # energy and perf on each of two packages
        for c in telem:
            self.assertEqual(c["result"], "match", c)
            self.assertRegex(c["item"], r"^telem\d+: GUID 0x[0-9a-f]+, package [01]$")
        for f in ("info/PERF_PKG_MON/mon_features", "info/PERF_PKG_MON/num_rmids"):
            self.assertEqual(find(rep, "info", f)["result"], "match", f)

        self.assertTrue(m.hw.ctl({"cmd": "fail_pmt", "fail": True})["ok"])
        try:
            rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        finally:
            self.assertTrue(m.hw.ctl({"cmd": "fail_pmt", "fail": False})["ok"])
        telem = results(rep, "telemetry")
        self.assertEqual(len(telem), 4, telem)
        for c in telem:
            self.assertEqual(c["result"], "not_checked", c)
            self.assertIn("did not serve a read", c["detail"])
        self.assertEqual(find(rep, "info", "info/PERF_PKG_MON/mon_features")["result"], "match")

    def test_same_machine_by_value(self):
        m = self.mount("intel-2s")
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=3;1=7\nMB:0=30\n"), 0, m.lcs())
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        reg = find(rep, "registers", "g")
        self.assertEqual(reg["result"], "match", reg)
        self.assertIn("matched by value", reg["detail"])
        self.assertEqual(find(rep, "registers", "L3 CDP (QOS_CFG)")["result"], "match")
        self.assertEqual(find(rep, "info", "info/L3_MON/num_rmids")["result"], "match")

    def test_same_machine_with_cdp(self):
        m = self.mount("intel-2s", options=["cdp", "debug"])
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3CODE:0=3;1=7\nL3DATA:0=30\n"), 0, m.lcs())
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        self.assertIn("cdp=on", find(rep, "kernel", "mount options")["detail"])
        self.assertEqual(find(rep, "registers", "L3 CDP (QOS_CFG)")["detail"],
                         "machine on, mount on")
        self.assertEqual(find(rep, "info", "info/L3CODE/cbm_mask")["result"], "match")
        reg = find(rep, "registers", "g")
        self.assertEqual(reg["result"], "match", reg)
        # CODE and DATA on two L3 domains, and MB on two.
        self.assertTrue(reg["detail"].startswith("6 registers of CLOSID "), reg)

    def test_amd_machine(self):
        """AMD's registers are not Intel's: MBA and SMBA limits in their
        own MSR ranges (L3QOS_BW_CONTROL, L3QOS_SLOWMEM_BW_CONTROL) in
        1/8 GB/s, and L3 masks that need not be contiguous."""
        m = self.mount("amd-2s", options=["debug"])
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.mkdir("h"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=f0f;1=3\nMB:0=512;1=64\n"), 0, m.lcs())
        self.assertEqual(m.write("h/schemata", "L3:0=f000;1=ff00\nSMBA:0=128;1=256\n"), 0,
                         m.lcs())
        self.assertEqual(m.write("h/cpus_list", "2,6\n"), 0, m.lcs())
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        self.assertEqual(rep["summary"]["differ"], 0)
        self.assertEqual(rep["cpu"]["cpus_checked"], 8)
        self.assertEqual(find(rep, "cpuid", "every CPU")["result"], "match")
        for f in ("info/L3/cbm_mask", "info/L3/sparse_masks", "info/MB/bandwidth_gran",
                  "info/SMBA/min_bandwidth"):
            self.assertEqual(find(rep, "info", f)["result"], "match", f)
        for g in ("/", "g", "h"):
            self.assertEqual(find(rep, "schemata", g)["result"], "match", g)
            reg = find(rep, "registers", g)
            self.assertEqual(reg["result"], "match", reg)
            self.assertIn("ctrl_hw_id", reg["detail"])
            # L3, MB and SMBA on two domains.
            self.assertTrue(reg["detail"].startswith("6 registers of CLOSID "), reg)
        self.assertIn("PQR_ASSOC of CPU(s) 2,6 holds CLOSID", find(rep, "cpus", "h")["detail"])

        # The check can fail here too: another tool lowers g's MB limit on
        # the second domain behind the tree's back.
        closid = int(m.read("g/ctrl_hw_id"))
        self.assertTrue(m.hw.ctl({"cmd": "write", "cpu": 4, "msr": 0xC0000200 + closid,
                                  "value": 1})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        self.assertEqual(find(rep, "registers", "g")["result"], "differ")
        self.assertEqual(find(rep, "registers", "h")["result"], "match")


class Differing(unittest.TestCase):
    def machine(self, platform="intel-2s"):
        d = tempfile.mkdtemp(prefix="resctrlfs-it-selfcheck-")
        hw = rt.FakeHw(platform, d)
        self.addCleanup(hw.stop)
        broker = rt.Broker(hw, d)
        self.addCleanup(broker.stop)
        return hw, broker

    def test_other_platform(self):
        hw, broker = self.machine("intel-2s")
        k = SimMount("intel-l2")
        self.addCleanup(k.cleanup)
        rc, rep, r = self_check(hw, broker.sock, k.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        self.assertGreater(rep["summary"]["differ"], 0)
        self.assertEqual(find(rep, "info", "info/L2/cbm_mask")["detail"],
                         "only in the kernel's tree")
        # Snow Ridge's L3 is not Ice Lake-SP's.
        self.assertEqual(find(rep, "info", "info/L3/cbm_mask")["detail"],
                         "kernel: fff; resctrlfs: 7ff")
        root = find(rep, "schemata", "/")
        self.assertEqual(root["result"], "differ")
        self.assertIn("refuses the kernel's schemata", root["detail"])
        self.assertEqual(hw.ctl({"cmd": "counts"})["writes"], 0)

    def test_registers_not_programmed(self):
        """Same platform, so every info/ file matches; but that tree never
        programmed this machine, so no CLOSID holds its group's masks."""
        hw, broker = self.machine("intel-2s")
        k = SimMount("intel-2s")
        self.addCleanup(k.cleanup)
        self.assertEqual(k.mkdir("g"), 0)
        self.assertEqual(k.write("g/schemata", "L3:0=3;1=3\n"), 0, k.lcs())
        rc, rep, r = self_check(hw, broker.sock, k.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        self.assertEqual(results(rep, "info", "differ"), [])
        self.assertEqual(find(rep, "info", "info/L3/cbm_mask")["result"], "match")
        self.assertEqual(find(rep, "schemata", "g")["result"], "match")
        self.assertEqual(find(rep, "registers", "/")["result"], "match")
        reg = find(rep, "registers", "g")
        self.assertEqual(reg["result"], "differ")
        self.assertIn("no CLOSID on the machine", reg["detail"])
        self.assertEqual(hw.ctl({"cmd": "counts"})["writes"], 0)


class Cpus(unittest.TestCase):
    """Each group's cpus_list against the CPUs' PQR_ASSOC."""

    def mount(self, profile, options=()):
        return Matching.mount(self, profile, options)

    def setup_groups(self, m):
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.mkdir("h"), 0)
        self.assertEqual(m.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=3;1=7\n"), 0, m.lcs())
        self.assertEqual(m.write("h/schemata", "L3:0=c;1=30\n"), 0, m.lcs())
        self.assertEqual(m.write("g/cpus_list", "2-3\n"), 0, m.lcs())
        self.assertEqual(m.write("g/mon_groups/m/cpus_list", "3\n"), 0, m.lcs())
        self.assertEqual(m.write("h/cpus_list", "5\n"), 0, m.lcs())

    def test_by_ids(self):
        m = self.mount("intel-2s", options=["debug"])
        self.setup_groups(m)
        g, h = int(m.read("g/ctrl_hw_id")), int(m.read("h/ctrl_hw_id"))
        g_rmid = int(m.read("g/mon_hw_id"))
        m_rmid = int(m.read("g/mon_groups/m/mon_hw_id"))
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        c = find(rep, "cpus", "g")
        self.assertEqual(c["result"], "match", c)
        self.assertEqual(c["detail"], "PQR_ASSOC of CPU(s) 2,3 holds CLOSID %d (the kernel's "
                         "ctrl_hw_id)" % g)
        self.assertIn("CPU(s) 5 holds CLOSID %d" % h, find(rep, "cpus", "h")["detail"])
        root = find(rep, "cpus", "/")
        self.assertEqual(root["result"], "match", root)
        self.assertIn("holds CLOSID 0 (the default group's)", root["detail"])
        self.assertNotIn(",2,", root["detail"])
        self.assertIn("CPU(s) 2 holds RMID %d" % g_rmid, find(rep, "cpus", "g RMID")["detail"])
        mm = find(rep, "cpus", "g/mon_groups/m RMID")
        self.assertEqual(mm["result"], "match", mm)
        self.assertIn("CPU(s) 3 holds RMID %d" % m_rmid, mm["detail"])
        self.assertEqual(find(rep, "cpus", "/ RMID")["result"], "match")

        # Another tool moves CPU 2 back to CLOSID 0, RMID 0 behind the tree.
        self.assertTrue(m.hw.ctl({"cmd": "write", "cpu": 2, "msr": 0xC8F, "value": 0})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        c = find(rep, "cpus", "g")
        self.assertEqual(c["result"], "differ", c)
        self.assertIn("in PQR_ASSOC: CPU 2 has CLOSID 0", c["detail"])
        c = find(rep, "cpus", "g RMID")
        self.assertEqual(c["result"], "differ", c)
        self.assertIn("CPU 2 has RMID 0", c["detail"])
        self.assertEqual(find(rep, "cpus", "g/mon_groups/m RMID")["result"], "match")
        self.assertEqual(find(rep, "cpus", "h")["result"], "match")
        rc, text, _ = self_check(m.hw, m.broker.sock, m.mnt, as_json=False)
        self.assertIn("DIFFER      cpus: g: cpus_list 2,3, the group's CLOSID %d" % g, text)

    def test_by_value(self):
        m = self.mount("intel-2s")
        self.setup_groups(m)
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        c = find(rep, "cpus", "g")
        self.assertEqual(c["result"], "match", c)
        self.assertIn("(matched by value)", c["detail"])
        # Without mon_hw_id the RMIDs cannot be told apart.
        self.assertEqual(find(rep, "cpus", "RMIDs")["result"], "not_checked")
        self.assertEqual(results(rep, "cpus", "differ"), [])
        # CPU 5 taken to g's CLOSID behind the tree: h's CPU differs.
        pqr = [x for x in m.hw.ctl({"cmd": "registers"})["registers"]
               if x["msr"] == 0xC8F and x["cpu"] == 2][0]["value"]
        self.assertTrue(m.hw.ctl({"cmd": "write", "cpu": 5, "msr": 0xC8F, "value": pqr})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 1, r.stdout + r.stderr)
        c = find(rep, "cpus", "h")
        self.assertEqual(c["result"], "differ", c)
        self.assertIn("CPU 5 has CLOSID %d" % (pqr >> 32), c["detail"])

    def test_unread_pqr_assoc(self):
        m = self.mount("intel-2s", options=["debug"])
        self.setup_groups(m)
        self.assertTrue(m.hw.ctl({"cmd": "fail_reads", "msr": 0xC8F, "cpu": 3})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        c = find(rep, "cpus", "g")
        self.assertEqual(c["result"], "not_checked", c)
        self.assertIn("PQR_ASSOC not read on CPU(s) 3", c["detail"])
        self.assertEqual(find(rep, "cpus", "g RMID")["result"], "match")


class OneRegisterUnread(unittest.TestCase):
    """One register's read fails through the broker (EIO, as for a register
    the CPU does not implement): the checks that need it say NOT CHECKED
    and why; nothing else changes."""

    def mount(self, profile, options=()):
        return Matching.mount(self, profile, options)

    def test_by_closid(self):
        m = self.mount(NO_MON_PROFILE, options=["debug"])
        self.assertEqual(m.mkdir("g1"), 0)
        self.assertEqual(m.write("g1/schemata", "L3:0=f;1=3\n"), 0, m.lcs())
        hc = int(m.read("g1/ctrl_hw_id"))
        msr = 0xC90 + hc  # IA32_L3_QOS_MASK_n of g1's CLOSID
        self.assertTrue(m.hw.ctl({"cmd": "fail_reads", "msr": msr, "cpu": 0})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        self.assertEqual(rep["summary"]["differ"], 0)
        reads = find(rep, "registers", "read through resctrl-msrd")
        self.assertEqual(reads["result"], "not_checked", reads)
        self.assertIn("1 reads failed, first: CPU 0 MSR 0x%x: read failed" % msr, reads["detail"])
        g1 = find(rep, "registers", "g1")
        self.assertEqual(g1["result"], "not_checked", g1)
        self.assertIn("not read: L3 domain 0 CLOSID %d" % hc, g1["detail"])
        # The root group's registers and every file are still compared.
        self.assertEqual(find(rep, "registers", "/")["result"], "match")
        self.assertEqual(find(rep, "schemata", "g1")["result"], "match")
        self.assertEqual(find(rep, "info", "info/L3/cbm_mask")["result"], "match")
        # The text form says it too.
        rc, text, _ = self_check(m.hw, m.broker.sock, m.mnt, as_json=False)
        self.assertEqual(rc, 0, text)
        self.assertIn("NOT CHECKED registers: g1: not read: L3 domain 0 CLOSID %d" % hc, text)
        # Readable again: the same group matches.
        self.assertTrue(m.hw.ctl({"cmd": "fail_reads", "clear": True})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(find(rep, "registers", "g1")["result"], "match")

    def test_by_value(self):
        """Without ctrl_hw_id the group is matched by value: a CLOSID with an
        unread register is neither a match nor proof that none holds it."""
        m = self.mount(NO_MON_PROFILE)
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=f;1=3\nMB:0=50;1=70\n"), 0, m.lcs())
        # resctrlfs gives the first group CLOSID 1; its L3 mask on domain 1 (CPU 4).
        self.assertTrue(m.hw.ctl({"cmd": "fail_reads", "msr": 0xC91, "cpu": 4})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        g = find(rep, "registers", "g")
        self.assertEqual(g["result"], "not_checked", g)
        self.assertIn("CLOSID(s) 1 may hold", g["detail"])
        self.assertEqual(find(rep, "registers", "/")["result"], "match")

    def test_qos_cfg(self):
        m = self.mount("intel-2s")
        self.assertTrue(m.hw.ctl({"cmd": "fail_reads", "msr": 0xC81})["ok"])
        rc, rep, r = self_check(m.hw, m.broker.sock, m.mnt)
        self.assertEqual(rc, 0, json.dumps(results(rep, result="differ"), indent=1) + r.stderr)
        cdp = find(rep, "registers", "L3 CDP (QOS_CFG)")
        self.assertEqual(cdp["result"], "not_checked", cdp)
        self.assertIn("could not be read", cdp["detail"])


class NotChecked(unittest.TestCase):
    def machine(self, allow_uid=None):
        d = tempfile.mkdtemp(prefix="resctrlfs-it-selfcheck-")
        hw = rt.FakeHw("intel-2s", d)
        self.addCleanup(hw.stop)
        broker = rt.Broker(hw, d)
        self.addCleanup(broker.stop)
        if allow_uid is not None:
            broker.stop()
            broker.start(allow_uid=allow_uid)
        return d, hw, broker

    def test_no_resctrl_mounted(self):
        d, hw, broker = self.machine()
        rc, rep, r = self_check(hw, broker.sock, os.path.join(d, "nothing"))
        self.assertEqual(rc, 0, r.stdout + r.stderr)
        k = find(rep, "kernel", "resctrl at " + os.path.join(d, "nothing"))
        self.assertEqual(k["result"], "not_checked")
        self.assertIn("not mounted", k["detail"])
        self.assertEqual(results(rep, "info"), [])
        # CLOSID 0 holds the power-on defaults resctrlfs would program.
        self.assertEqual(results(rep, "registers", "differ"), [])
        self.assertEqual(find(rep, "registers", "read through resctrl-msrd")["result"], "match")
        self.assertGreater(rep["msr_reads"], 0)
        counts = hw.ctl({"cmd": "counts"})
        self.assertGreater(counts["reads"], 0)
        self.assertEqual(counts["writes"], 0)

    def test_broker_refuses(self):
        d, hw, broker = self.machine(allow_uid=12345)
        rc, rep, r = self_check(hw, broker.sock, os.path.join(d, "nothing"))
        self.assertEqual(rc, 0, r.stdout + r.stderr)
        c = find(rep, "registers", "read through resctrl-msrd")
        self.assertEqual(c["result"], "not_checked")
        self.assertIn("did not serve this process", c["detail"])
        self.assertEqual(hw.ctl({"cmd": "counts"})["reads"], 0)
        self.assertEqual(hw.ctl({"cmd": "counts"})["writes"], 0)

    def test_no_broker(self):
        d, hw, broker = self.machine()
        broker.stop()
        rc, text, r = self_check(hw, os.path.join(d, "none.sock"), os.path.join(d, "x"),
                                 as_json=False)
        self.assertEqual(rc, 0, text + r.stderr)
        self.assertIn("NOT CHECKED registers: read through resctrl-msrd: cannot reach the MSR "
                      "broker", text)
        self.assertIn("MATCH       cpuid: every CPU", text)


if __name__ == "__main__":
    rt.main()
