#!/usr/bin/env python3
"""Real processors' raw CPUID leaves (tests/hw/data) through the mounted
daemon: a Xeon Gold 6140 (Skylake-SP stepping 4) shows only MB on a plain
boot, as Linux does, and the whole L3 with --rdt, the kernel's rdt= boot
parameter."""

import os

import resctrlfs_test as rt

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hw", "data")
GOLD_6140 = os.path.join(DATA, "profile-xeon-gold-6140.json")


class Gold6140PlainBoot(rt.ResctrlfsTestCase):
    PLATFORM = GOLD_6140

    def test_only_mb(self):
        # Linux's quirk for model 0x55 stepping <= 4: !cmt,!mbmtotal,!mbmlocal,!l3cat.
        self.assertEqual(self.listdir("info"), ["MB", "last_cmd_status"])
        self.assertEqual(self.listdir(), ["cpus", "cpus_list", "info", "mode", "schemata",
                                          "size", "tasks"])
        # CPUID.0x10.3 = 0x59 0 0x4 0x7: 100 - (0x59 + 1), linear, 8 CLOSIDs.
        self.assertEqual(self.read("info/MB/min_bandwidth"), "10\n")
        self.assertEqual(self.read("info/MB/bandwidth_gran"), "10\n")
        self.assertEqual(self.read("info/MB/delay_linear"), "1\n")
        self.assertEqual(self.read("info/MB/num_closids"), "8\n")
        self.assertEqual(self.read("info/MB/thread_throttle_mode"), "max\n")
        # Names are padded to the longest alloc-capable name: MB alone, none.
        self.assertEqual(self.read("schemata"), "MB:0=100;1=100\n")


class Gold6140AllFeatures(rt.ResctrlfsTestCase):
    PLATFORM = GOLD_6140
    ARGS = ["--rdt", "cmt,mbmtotal,mbmlocal,l3cat"]

    def test_l3_and_monitoring(self):
        self.assertEqual(self.listdir("info"), ["L3", "L3_MON", "MB", "last_cmd_status"])
        # CPUID.0x10.1 = 0xa 0x600 0x4 0xf.
        self.assertEqual(self.read("info/L3/cbm_mask"), "7ff\n")
        self.assertEqual(self.read("info/L3/min_cbm_bits"), "1\n")
        self.assertEqual(self.read("info/L3/num_closids"), "16\n")
        self.assertEqual(self.read("info/L3/shareable_bits"), "600\n")
        self.assertEqual(self.read("info/L3/sparse_masks"), "0\n")
        # CPUID.0xF.1 = 0 0x12000 0x8f 0x7; L3 24.75 MiB from CPUID.4.3.
        self.assertEqual(self.read("info/L3_MON/num_rmids"), "144\n")
        self.assertEqual(self.read("info/L3_MON/mon_features"),
                         "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n")
        self.assertEqual(self.read("info/L3_MON/max_threshold_occupancy"), "147456\n")
        self.assertEqual(self.read("schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")


if __name__ == "__main__":
    rt.main()
