#!/usr/bin/env python3
"""io_alloc (AMD SDCIAE) through the mounted daemon on the amd-io platform
(amd-2s plus SDCIAE): the io_alloc and io_alloc_cbm files' reads and
writes, when last_cmd_status is reset, bit_usage, edge cases 53/54 (see
test_fs_edge_cases.py), the hardware registers behind it, the journal keeping it
across a daemon restart and unmount resetting it."""

import errno
import json
import os
import signal
import subprocess
import tempfile

import resctrlfs_test as rt

L3_QOS_EXT_CFG = 0xC00003FF
SDCIAE_EN = 1 << 1
L3_MASK_0 = 0xC90


def ext_cfg_values(m):
    return {r["cpu"]: r["value"] for r in m.registers() if r["msr"] == L3_QOS_EXT_CFG}


def l3_mask(m, cpu, closid):
    for r in m.registers():
        if r["cpu"] == cpu and r["msr"] == L3_MASK_0 + closid:
            return r["value"]
    raise AssertionError("no L3 mask %d on CPU %d" % (closid, cpu))


def profile_file(test, body):
    """A JSON platform profile in a temporary file: AMD, two L3 domains."""
    base = {
        "vendor": "AuthenticAMD", "family": 25,
        "cpus": [{"cpu": c, "package": 0, "l2": c, "l3": c // 2} for c in range(4)],
        "l3_size_bytes": 33554432, "l2_size_bytes": 524288,
    }
    base.update(body)
    fd, path = tempfile.mkstemp(suffix=".json", prefix="resctrlfs-io-alloc-")
    with os.fdopen(fd, "w") as f:
        json.dump(base, f)
    test.addCleanup(os.unlink, path)
    return path


class IoAlloc(rt.ResctrlfsTestCase):
    PLATFORM = "amd-io"

    def test_files_and_disabled_state(self):
        names = self.listdir("info/L3")
        self.assertIn("io_alloc", names)
        self.assertIn("io_alloc_cbm", names)
        self.assertNotIn("io_alloc", self.listdir("info/MB"))
        self.assertEqual(os.stat(self.path("info/L3/io_alloc")).st_mode & 0o7777, 0o644)
        self.assertEqual(os.stat(self.path("info/L3/io_alloc_cbm")).st_mode & 0o7777, 0o644)
        self.assertEqual(self.read("info/L3/io_alloc"), "disabled\n")
        # Edge case 54: reading io_alloc_cbm while disabled.
        e, _ = self.read_errno("info/L3/io_alloc_cbm")
        self.assertEqual(e, errno.EINVAL)
        self.assertEqual(self.lcs(), "io_alloc is not enabled on L3\n")
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "io_alloc is not enabled on L3\n")
        # Not a boolean / no newline: EINVAL before the lock, LCS kept.
        self.assertEqual(self.write("info/L3/io_alloc", "maybe\n"), errno.EINVAL)
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=f"), errno.EINVAL)
        self.assertEqual(self.lcs(), "io_alloc is not enabled on L3\n")
        # Only ABMC (on by default: mbm_event mode) in the extended config.
        self.assertEqual(set(ext_cfg_values(self.fs).values()), {1})

    def test_enable_programs_sdciae_and_reserves_closid_15(self):
        self.assertEqual(self.write("schemata", "L3:0=ff00;1=ff00\n"), 0)
        self.assertEqual(self.write("info/L3/io_alloc", "1\n"), 0)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.read("info/L3/io_alloc"), "enabled\n")
        self.assertEqual(self.read("info/L3/io_alloc_cbm"), "0=ffff;1=ffff\n")
        ext = ext_cfg_values(self.fs)
        self.assertEqual(sorted(ext), [0, 4])  # the register dump shows each L3 domain's
        self.assertEqual(set(ext.values()), {1 | SDCIAE_EN})  # ABMC kept
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=ff;1=3f0\n"), 0)
        self.assertEqual(l3_mask(self.fs, 0, 15), 0xff)
        self.assertEqual(l3_mask(self.fs, 4, 15), 0x3f0)
        self.assertEqual(self.read("info/L3/bit_usage"), "0=SSSSSSSSHHHHHHHH;1=SSSSSSXXHHHH0000\n")
        self.assertEqual(self.read("info/L3/num_closids"), "16\n")
        # A new group does not get the bits only io_alloc uses.
        self.assertEqual(self.mkdir("p"), 0)
        self.assertEqual(self.read("p/schemata"),
                         "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=ff00;1=ff0f\n")
        # mkdir cannot get CLOSID 15: p has 1, 2..14 remain.
        for i in range(2, 15):
            self.assertEqual(self.mkdir("g%d" % i), 0, self.lcs())
        self.assertEqual(self.mkdir("g15"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of CLOSIDs\n")
        self.assertEqual(self.write("info/L3/io_alloc", "0\n"), 0)
        self.assertEqual(self.read("info/L3/io_alloc"), "disabled\n")
        self.assertTrue(all(v & SDCIAE_EN == 0 for v in ext_cfg_values(self.fs).values()))
        self.assertEqual(self.mkdir("g15"), 0)

    def test_case_53_closid_used_by_a_group(self):
        for i in range(1, 16):
            self.assertEqual(self.mkdir("g%d" % i), 0, self.lcs())
        self.assertEqual(self.write("info/L3/io_alloc", "1\n"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "CLOSID (ctrl_hw_id) 15 for io_alloc is used by g15 group\n")
        self.assertEqual(self.read("info/L3/io_alloc"), "disabled\n")
        self.assertEqual(self.rmdir("g15"), 0)
        self.assertEqual(self.write("info/L3/io_alloc", "1\n"), 0)

    def test_io_alloc_cbm_writes(self):
        self.assertEqual(self.write("info/L3/io_alloc", "1\n"), 0)
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "*=f0\n"), 0)
        self.assertEqual(self.read("info/L3/io_alloc_cbm"), "0=f0;1=f0\n")
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=1;2=f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Invalid domain 2\n")
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=10000\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Mask out of range\n")
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "1=q\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Non-hex character in the mask q\n")
        self.assertEqual(self.read("info/L3/io_alloc_cbm"), "0=f0;1=f0\n")
        self.assertEqual(self.lcs(), "ok\n")  # a successful read resets it
        # Exclusive groups keep their bits.
        self.assertEqual(self.write("schemata", "L3:0=f000;1=f000\n"), 0)
        self.assertEqual(self.mkdir("x"), 0)
        self.assertEqual(self.write("x/schemata", "L3:0=f00;1=f00\n"), 0)
        self.assertEqual(self.write("x/mode", "exclusive\n"), 0, self.lcs())
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=100\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with exclusive group\n")
        self.assertEqual(self.write("x/schemata", "L3:1=f8\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with other group\n")

    def test_restart_keeps_it_and_unmount_resets_it(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("info/L3/io_alloc", "1\n"), 0)
        self.assertEqual(self.write("info/L3/io_alloc_cbm", "0=f;1=f0\n"), 0)
        self.assertEqual(self.fs.stop(signal.SIGTERM), 0)
        self.fs.start()
        self.assertEqual(self.read("info/L3/io_alloc"), "enabled\n")
        self.assertEqual(self.read("info/L3/io_alloc_cbm"), "0=f;1=f0\n")
        self.assertTrue(all(v & SDCIAE_EN for v in ext_cfg_values(self.fs).values()))
        self.assertEqual(l3_mask(self.fs, 4, 15), 0xf0)
        for i in range(2, 15):
            self.assertEqual(self.mkdir("g%d" % i), 0, self.lcs())
        self.assertEqual(self.mkdir("g15"), errno.ENOSPC)
        # A user's unmount resets it like the kernel's teardown.
        subprocess.check_call(["fusermount3", "-u", self.fs.mnt])
        self.assertEqual(self.fs.proc.wait(), 0)
        self.fs.start()
        self.assertEqual(self.read("info/L3/io_alloc"), "disabled\n")
        self.assertTrue(all(v & SDCIAE_EN == 0 for v in ext_cfg_values(self.fs).values()))


class IoAllocCdp(rt.ResctrlfsTestCase):
    PLATFORM = "amd-io"
    OPTIONS = ["cdp"]

    def test_code_and_data_identical(self):
        for d in ("info/L3CODE", "info/L3DATA"):
            self.assertIn("io_alloc", self.listdir(d))
            self.assertIn("io_alloc_cbm", self.listdir(d))
        self.assertEqual(self.write("info/L3DATA/io_alloc", "1\n"), 0)
        self.assertEqual(self.read("info/L3CODE/io_alloc"), "enabled\n")
        self.assertEqual(self.write("info/L3CODE/io_alloc_cbm", "1=3c\n"), 0)
        self.assertEqual(self.read("info/L3DATA/io_alloc_cbm"), "0=ffff;1=3c\n")
        self.assertEqual(self.read("info/L3CODE/io_alloc_cbm"), "0=ffff;1=3c\n")
        # CLOSID 7: DATA at hardware index 14, CODE at 15.
        self.assertEqual(l3_mask(self.fs, 4, 14), 0x3c)
        self.assertEqual(l3_mask(self.fs, 4, 15), 0x3c)
        for i in range(1, 7):
            self.assertEqual(self.mkdir("g%d" % i), 0, self.lcs())
        self.assertEqual(self.mkdir("g7"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of CLOSIDs\n")


class IoAllocProfiles(rt.ResctrlfsTestCase):
    """JSON profiles with the high-level "io_alloc" key of "l3_cat"."""

    PLATFORM = "amd-2s"

    def test_not_supported_on_l2_case_54(self):
        path = profile_file(self, {
            "l3_cat": {"cbm_len": 16, "num_closid": 16, "sparse": True, "io_alloc": True},
            "l2_cat": {"cbm_len": 8, "num_closid": 16, "sparse": True},
        })
        m = rt.Mount(platform=path)
        self.addCleanup(m.cleanup)
        self.assertIn("io_alloc", m.listdir("info/L2"))
        self.assertEqual(m.read("info/L2/io_alloc"), "not supported\n")
        self.assertEqual(m.read("info/L3/io_alloc"), "disabled\n")
        self.assertEqual(m.write("info/L2/io_alloc", "1\n"), errno.ENODEV)
        self.assertEqual(m.lcs(), "io_alloc is not supported on L2\n")
        e, _ = m.read_errno("info/L2/io_alloc_cbm")
        self.assertEqual(e, errno.ENODEV)
        self.assertEqual(m.lcs(), "io_alloc is not supported on L2\n")

    def test_closid_not_available(self):
        path = profile_file(self, {
            "l3_cat": {"cbm_len": 16, "num_closid": 16, "sparse": True, "io_alloc": True},
            "mb": {"num_closid": 8, "bw_len": 11},
        })
        m = rt.Mount(platform=path)
        self.addCleanup(m.cleanup)
        self.assertEqual(m.write("info/L3/io_alloc", "1\n"), errno.EINVAL)
        self.assertEqual(m.lcs(), "io_alloc CLOSID (ctrl_hw_id) 15 is not available\n")
        self.assertEqual(m.read("info/L3/io_alloc"), "disabled\n")

    def test_amd_2s_has_no_io_alloc(self):
        self.assertNotIn("io_alloc", self.listdir("info/L3"))
        self.assertNotIn("io_alloc_cbm", self.listdir("info/L3"))


if __name__ == "__main__":
    rt.main()
