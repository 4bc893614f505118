#!/usr/bin/env python3
"""Intel I/O RDT in the tree (ours, mount option `iordt`): info/IO/<channel>
lists a channel's devices, a group's `channels` file moves a channel into
the group, whose CLOSID and RMID then tag the channel's device traffic, so
the group's cache mask confines the device's fills and its counters count
them. Without the option the tree is the kernel's; on a machine without
I/O RDT channels the option is refused.

Under the msr label the same tests run on the real path: resctrl-fakehw
publishes the machine's ACPI IRDT table and serves the channels' registers
through its /dev/mem, which resctrl-msrd serves to resctrlfsd --backend msr
as on hardware; the device workloads run in resctrl-fakehw."""

import errno
import json
import os
import subprocess
import tempfile
import unittest

import resctrlfs_test as rt

L3_BYTES = 301989888  # intel-gnr-io: 15 ways
WAY_BYTES = L3_BYTES // 15
CHANNELS = ["0x100", "0x101", "0x102", "0x10200"]

# intel-gnr-io as the built-in profile has it, with one PCIe link whose
# channels carry an RMID and no CLOSID.
GNR_IO_NO_CLOS = {
    "vendor": "GenuineIntel", "family": 6, "model": 173, "stepping": 1,
    "cpus": [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4} for c in range(8)],
    "l3_size_bytes": L3_BYTES, "l2_size_bytes": 2097152,
    "l3_cat": {"cbm_len": 15, "num_closid": 15, "shareable_bits": 0, "sparse": False,
               "cdp": True},
    "mba": {"num_closid": 15, "max_delay": 90, "linear": True, "per_thread": True},
    "l3_mon": {"num_rmids": 512, "scale": 131072, "counter_width": 32,
               "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
    "io_rdt": {"cat": True, "cmt": True, "mbm": True, "wide_reg_bytes": 8,
               "blocks": [
                   {"segment": 0, "package": 0,
                    "links": [{"id": 1, "type": "pcie", "channels": 8, "regw": True,
                               "clos_tagging": False,
                               "mmio": "0xfed10000", "clos_offset": 0, "rmid_offset": 256}],
                    "devices": [{"bdf": "16:00.0", "type": "root-port",
                                 "chms": [{"link": 1, "vcs": [0, 1]}]}]}]},
    "sim": {"mem_bandwidth_mbps": 40000},
}


class IoRdtCase(rt.ResctrlfsTestCase):
    PLATFORM = "intel-gnr-io"
    OPTIONS = ["iordt"]
    MANUAL_CLOCK = True
    PROFILE = None  # a profile dict to mount instead of PLATFORM

    def setUp(self):
        if self.PROFILE is not None:
            d = tempfile.TemporaryDirectory(prefix="resctrlfs-iordt-")
            self.addCleanup(d.cleanup)
            self.PLATFORM = os.path.join(d.name, "profile.json")
            with open(self.PLATFORM, "w") as f:
                json.dump(self.PROFILE, f)
        super().setUp()

    def channel_workload(self, channel, footprint=0, mbps=0):
        if rt.MSR:
            # The device traffic is the machine's: resctrl-fakehw runs it.
            r = self.fs.hw.ctl({"cmd": "workload", "channel": int(channel, 16),
                                "footprint_bytes": footprint, "bandwidth_mbps": float(mbps)})
            self.assertTrue(r.get("ok"), r)
            return
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload",
                              "--channel", channel, "--footprint", str(footprint),
                              "--bandwidth", str(mbps)], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)

    def mbm(self, group, l3=0):
        return int(self.read(os.path.join(group, "mon_data/mon_L3_%02d/mbm_total_bytes" % l3)))

    def occupancy(self, group, l3=0):
        return int(self.read(os.path.join(group, "mon_data/mon_L3_%02d/llc_occupancy" % l3)))


class Files(IoRdtCase):
    def test_info_lists_channels_and_their_devices(self):
        self.assertIn("IO", self.listdir("info"))
        self.assertEqual(self.listdir("info/IO"), sorted(CHANNELS))
        self.assertEqual(self.read("info/IO/0x100"), "0000:16:00.0.VC0\n")
        self.assertEqual(self.read("info/IO/0x101"), "0000:16:00.0.VC1\n")
        self.assertEqual(self.read("info/IO/0x102"), "0000:30:01.0.VC0\n")
        self.assertEqual(self.read("info/IO/0x10200"), "0000:80:00.0.VC0\n")
        self.assertEqual(self.write("info/IO/0x100", "x\n"), errno.EACCES)

    def test_registers_show_device_tagging(self):
        """`resctrlfsctl registers` lists every register by feature: the
        I/O RDT enable (IA32_L3_IO_QOS_CFG, 0xC83: IRAE bit 0, IRME bit 1,
        RDT architecture specification 4.4) on each L3 and the links' MMIO
        tag registers (IO_PQR_CLOSn / IO_PQR_RMIDn, chapter 6)."""
        groups = self.fs.ctl_ok({"cmd": "registers"})["groups"]
        cfg = [r for r in groups["io_rdt"] if r.get("msr") == 0xC83]
        self.assertEqual(len(cfg), 2)  # two L3s
        self.assertTrue(all(r["value"] == 3 for r in cfg), cfg)
        for feature in ("pqr", "l3_cat", "mba", "monitoring"):
            self.assertIn(feature, groups)
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), 0, self.lcs())
        closid = [g["closid"] for g in self.fs.status()["groups"] if g["path"] == "/g"][0]
        groups = self.fs.ctl_ok({"cmd": "registers"})["groups"]
        mmio = {r["addr"]: r for r in groups["io_rdt"] if "addr" in r}
        self.assertEqual(mmio[0xfed10000]["value"], closid)  # IO_PQR_CLOS0 of channel 0x100
        self.assertEqual(mmio[0xfed10000]["bytes"], 2)

    def test_every_channel_starts_in_the_default_group(self):
        self.assertEqual(self.read("channels"), "".join(c + "\n" for c in CHANNELS))
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.mkdir("mon_groups/r"), 0)
        for d in ("g", "g/mon_groups/m", "mon_groups/r"):
            self.assertEqual(self.read(d + "/channels"), "")

    def test_move_a_channel_between_groups(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), 0)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.read("g/channels"), "0x100\n")
        self.assertEqual(self.read("channels"), "0x101\n0x102\n0x10200\n")
        # A list, as tasks takes pids; decimal works too (258 = 0x102).
        self.assertEqual(self.write("h/channels", "0x100, 258\n"), 0)
        self.assertEqual(self.read("g/channels"), "")
        self.assertEqual(self.read("h/channels"), "0x100\n0x102\n")
        self.assertEqual(self.write("channels", "0x100\n"), 0)
        self.assertEqual(self.read("channels"), "0x100\n0x101\n0x10200\n")

    def test_errors(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/channels", "0x109\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown channel 0x109\n")
        self.assertEqual(self.write("g/channels", "nic\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Invalid channel nic\n")
        # The first failure stops the list; what came before it moved.
        self.assertEqual(self.write("g/channels", "0x101,0x7\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown channel 0x7\n")
        self.assertEqual(self.read("g/channels"), "0x101\n")

    def test_rmdir_returns_the_channels_to_the_parent(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/channels", "0x100,0x102\n"), 0)
        self.assertEqual(self.write("g/mon_groups/m/channels", "0x101\n"), 0)
        self.assertEqual(self.read("g/channels"), "0x100\n0x102\n")
        self.assertEqual(self.rmdir("g/mon_groups/m"), 0)
        self.assertEqual(self.read("g/channels"), "0x100\n0x101\n0x102\n")
        self.assertEqual(self.mkdir("g/mon_groups/m2"), 0)
        self.assertEqual(self.write("g/mon_groups/m2/channels", "0x10200\n"), 0)
        self.assertEqual(self.rmdir("g"), 0)
        self.assertEqual(self.read("channels"), "".join(c + "\n" for c in CHANNELS))


class DeviceTraffic(IoRdtCase):
    def test_nic_in_a_two_way_group_is_confined_and_counted_there(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=3\n"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), 0)
        self.channel_workload("0x100", footprint=200 << 20, mbps=1000)
        self.advance(2000)
        occ = self.occupancy("g")
        self.assertGreater(occ, WAY_BYTES)  # it fills what it may...
        self.assertLessEqual(occ, 2 * WAY_BYTES)  # ...and not beyond the group's 2 ways
        self.assertAlmostEqual(self.mbm("g"), 2e9, delta=2e9 * 0.02)
        self.assertEqual(self.mbm(""), 0)
        self.assertEqual(self.occupancy(""), 0)

    def test_in_the_default_group_it_may_fill_the_whole_cache(self):
        self.channel_workload("0x100", footprint=200 << 20, mbps=1000)
        self.advance(2000)
        self.assertGreater(self.occupancy(""), 2 * WAY_BYTES)
        self.assertAlmostEqual(self.mbm(""), 2e9, delta=2e9 * 0.02)

    def test_mon_group_channel_counts_in_it_and_its_parent(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/mon_groups/m/channels", "0x100\n"), 0)
        self.channel_workload("0x100", mbps=1000)
        self.advance(2000)
        self.assertAlmostEqual(self.mbm("g/mon_groups/m"), 2e9, delta=2e9 * 0.02)
        self.assertAlmostEqual(self.mbm("g"), 2e9, delta=2e9 * 0.02)
        self.assertEqual(self.mbm(""), 0)

    def test_a_mon_group_moved_to_another_parent_takes_its_closid(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.write("h/schemata", "L3:0=3\n"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.write("g/mon_groups/m/channels", "0x100\n"), 0)
        self.assertEqual(self.rename("g/mon_groups/m", "h/mon_groups/m"), 0)
        self.assertEqual(self.read("h/mon_groups/m/channels"), "0x100\n")
        self.channel_workload("0x100", footprint=200 << 20, mbps=1000)
        self.advance(2000)
        self.assertLessEqual(self.occupancy("h/mon_groups/m"), 2 * WAY_BYTES)
        self.assertGreater(self.occupancy("h/mon_groups/m"), WAY_BYTES)
        self.assertAlmostEqual(self.mbm("h"), 2e9, delta=2e9 * 0.02)

    def test_after_rmdir_the_traffic_counts_in_the_parent(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), 0)
        self.channel_workload("0x100", mbps=1000)
        self.advance(1000)
        self.assertEqual(self.rmdir("g"), 0)
        before = self.mbm("")
        self.advance(2000)
        self.assertAlmostEqual(self.mbm("") - before, 2e9, delta=2e9 * 0.02)


class Journal(IoRdtCase):
    def test_kill_9_keeps_the_channel_assignments(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=3\n"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        self.assertEqual(self.write("g/mon_groups/m/channels", "0x100\n"), 0)
        self.assertEqual(self.write("h/channels", "0x102,0x10200\n"), 0)
        self.assertEqual(self.write("g/channels", "0x101\n"), 0)
        self.assertEqual(self.rmdir("h"), 0)  # 0x102 and 0x10200 back in the default group
        self.assertEqual(self.mkdir("k"), 0)
        self.assertEqual(self.write("k/channels", "0x10200\n"), 0)
        self.fs.kill()
        self.fs.start()
        self.fs.set_manual_clock(True)
        self.assertEqual(self.read("channels"), "0x102\n")
        self.assertEqual(self.read("g/channels"), "0x101\n")
        self.assertEqual(self.read("g/mon_groups/m/channels"), "0x100\n")
        self.assertEqual(self.read("k/channels"), "0x10200\n")
        # The hardware has the tags again: the NIC is confined and counted in m.
        self.channel_workload("0x100", footprint=200 << 20, mbps=1000)
        self.advance(2000)
        self.assertLessEqual(self.occupancy("g/mon_groups/m"), 2 * WAY_BYTES)
        self.assertAlmostEqual(self.mbm("g/mon_groups/m"), 2e9, delta=2e9 * 0.02)
        self.assertEqual(self.mbm(""), 0)


class ChannelsWithoutClos(IoRdtCase):
    PROFILE = GNR_IO_NO_CLOS

    def test_channel_without_clos_tagging(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Channel 0x100 has no CLOS tagging\n")
        self.assertEqual(self.read("channels"), "0x100\n0x101\n")
        # A MON group of the default group needs only the RMID.
        self.assertEqual(self.mkdir("mon_groups/m"), 0)
        self.assertEqual(self.write("mon_groups/m/channels", "0x100\n"), 0)
        self.assertEqual(self.read("mon_groups/m/channels"), "0x100\n")


# intel-snc (a Sapphire Rapids-class part, two SNC nodes per L3) with one
# I/O block on package 0, whose L3 nodes 0 and 1 share.
SNC_IO = {
    "vendor": "GenuineIntel", "family": 6, "model": 143, "stepping": 8,
    "cpus": [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4, "node": c // 2}
             for c in range(8)],
    "l3_size_bytes": 31457280, "l2_size_bytes": 2097152,
    "l3_cat": {"cbm_len": 15, "num_closid": 16, "shareable_bits": 0, "sparse": False,
               "cdp": True},
    "l3_mon": {"num_rmids": 256, "scale": 65536, "counter_width": 32,
               "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
    "io_rdt": {"cat": True, "cmt": True, "mbm": True, "wide_reg_bytes": 8,
               "blocks": [
                   {"segment": 0, "package": 0,
                    "links": [{"id": 1, "type": "pcie", "channels": 8, "regw": True,
                               "mmio": "0xfed10000", "clos_offset": 0, "rmid_offset": 256}],
                    "devices": [{"bdf": "16:00.0", "type": "root-port",
                                 "chms": [{"link": 1, "vcs": [0, 1]}]}]}]},
    "sim": {"mem_bandwidth_mbps": 40000},
}


class SubNumaClustering(IoRdtCase):
    """Under SNC a device's traffic belongs to the node its DMA targets
    (`workload --channel C --node N`, ours): that node's mon_sub_L3_YY counts
    it, and mon_L3_XX, the sum of its nodes, does too, whichever node it
    is. The specification (appendix B.1.2.7) advises tagging with an RMID of
    the target's node; in the RMID sharing mode Linux selects, a group's
    RMID counts on every node, so the group sees it either way."""

    PROFILE = SNC_IO

    def sub_mbm(self, group, node):
        return int(self.read(os.path.join(
            group, "mon_data/mon_L3_00/mon_sub_L3_%02d/mbm_total_bytes" % node)))

    def run_workload(self, *extra, ok=True):
        if rt.MSR:
            # The device traffic is the machine's: resctrl-fakehw runs it.
            req = {"cmd": "workload", "channel": 0x100, "bandwidth_mbps": 1000.0}
            if extra:
                req["node"] = int(extra[1])
            r = self.fs.hw.ctl(req)
            self.assertEqual(bool(r.get("ok")), ok, r)
            return r.get("error", "")
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload",
                              "--channel", "0x100", "--bandwidth", "1000"] + list(extra),
                             capture_output=True, text=True)
        self.assertEqual(out.returncode == 0, ok, out.stdout + out.stderr)
        return out.stdout + out.stderr

    def test_dma_to_the_second_node_counts_there_and_in_the_l3_sum(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), 0)
        self.run_workload("--node", "1")
        self.advance(2000)
        self.assertEqual(self.sub_mbm("g", 0), 0)
        self.assertAlmostEqual(self.sub_mbm("g", 1), 2e9, delta=2e9 * 0.02)
        self.assertAlmostEqual(self.mbm("g"), 2e9, delta=2e9 * 0.02)
        self.assertEqual(self.mbm(""), 0)

    def test_without_a_node_the_first_node_of_the_l3_counts_it(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/channels", "0x100\n"), 0)
        self.run_workload()
        self.advance(2000)
        self.assertAlmostEqual(self.sub_mbm("g", 0), 2e9, delta=2e9 * 0.02)
        self.assertEqual(self.sub_mbm("g", 1), 0)

    def test_a_node_of_another_l3_is_refused(self):
        out = self.run_workload("--node", "2", ok=False)
        self.assertIn("node 2 is not a NUMA node of the L3 of I/O RDT channel 256", out)
        if rt.MSR:
            return  # the rest is resctrlfsctl's
        out = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload", "--cpu", "0",
                              "--node", "1"], capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)


class WithoutTheOption(rt.ResctrlfsTestCase):
    PLATFORM = "intel-gnr-io"

    def test_the_tree_is_the_kernels(self):
        self.assertNotIn("IO", self.listdir("info"))
        self.assertNotIn("channels", self.listdir(""))
        self.assertEqual(self.mkdir("g"), 0)
        self.assertNotIn("channels", self.listdir("g"))


class Refused(unittest.TestCase):
    def test_platform_without_io_rdt_refuses_the_option(self):
        m = rt.Mount(start=False, platform="intel-2s", options=["iordt"])
        self.addCleanup(m.cleanup)
        r = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertFalse(rt.is_mounted(m.mnt), r.stderr)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("iordt: this machine has no I/O RDT channels", r.stderr)


if __name__ == "__main__":
    rt.main()
