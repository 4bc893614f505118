#!/usr/bin/env python3
"""Damaged JSON from outside the daemon: the boot-state file, the
state journal's snapshot and a --platform profile, each given a wrong type,
truncated JSON, binary garbage, huge numbers and 100000 levels of nesting.

A damaged boot-state file or journal is set aside (*.rejected), the daemon
says why in its log, starts with a fresh tree and mounts: under systemd a
daemon that refused to start would never come back. A damaged profile is
the operator's command line: the daemon refuses it with a message on stderr
and exit status 1. Never an abort ("terminate called"), never a hang."""

import json
import os
import random
import subprocess
import unittest

import resctrlfs_test as rt

DEEP = 100000
PLATFORM = "intel-2s"


def crc32c(data):
    """CRC-32C (Castagnoli), as the journal's envelope uses."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def envelope(body, generation=1):
    """A journal snapshot whose envelope is intact: only its body is bad."""
    raw = body.encode()
    return ('{"format":"resctrlfs-state","version":1,"generation":%d,"length":%d,'
            '"crc32c":"%08x","body":%s}\n' % (generation, len(raw), crc32c(raw),
                                              _json_string(body))).encode()


def _json_string(s):
    return json.dumps(s)


def garbage(seed, n=4096):
    return bytes(random.Random(seed).getrandbits(8) for _ in range(n))


def deep_array():
    return "[" * DEEP + "]" * DEEP


def boot_state_name(mountpoint):
    """daemon/boot_state.h: the mount point with '/' as '_' and every byte
    other than [A-Za-z0-9.-] as %XX."""
    out = []
    for b in os.path.normpath(os.path.abspath(mountpoint)).encode():
        c = chr(b)
        if c == "/":
            out.append("_")
        elif c.isascii() and (c.isalnum() or c in ".-"):
            out.append(c)
        else:
            out.append("%%%02X" % b)
    return "".join(out) + ".json"


class BadJson(unittest.TestCase):
    def mount(self):
        m = rt.Mount(platform=PLATFORM, start=False)
        self.addCleanup(m.cleanup)
        return m

    def assert_fresh_and_usable(self, m):
        self.assertTrue(rt.is_mounted(m.mnt))
        self.assertNotIn("g", m.listdir(""))
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=f\n"), 0, m.lcs())
        self.assertEqual(m.lcs(), "ok\n")
        log = m.daemon_log()
        self.assertNotIn("terminate called", log)
        self.assertNotIn("fatal", log)

    # --- the boot-state file ------------------------------------------------

    def boot_cases(self, mnt):
        # The file names the platform the daemon runs on: "real" on the msr
        # path (a file of another platform is ignored, not parsed).
        platform = "real" if rt.MSR else PLATFORM
        head = '{"version":1,"platform":"%s","mountpoint":"%s",' % (platform, mnt)
        return {
            "wrong type (file)": (head + '"state":"x"}').encode(),
            "wrong type (version)": ('{"version":"clos:","state":{}}').encode(),
            "wrong type (state)": (head + '"state":{"version":1,'
                                   '"max_threshold_occupancy":"x"}}').encode(),
            "truncated": (head + '"state":{"version":1,"max_threshold_occu').encode(),
            "binary garbage": garbage(1),
            "huge numbers": (head + '"state":{"version":1,'
                             '"max_threshold_occupancy":18446744073709551616,'
                             '"rmids":{"free":[1e400]}}}').encode(),
            "huge numbers (in range of a double)": (
                head + '"state":{"version":1,"max_name_width":1e300}}').encode(),
            "deeply nested arrays": (head + '"state":{"version":1,"x":%s}}'
                                     % deep_array()).encode(),
        }

    def boot_state_file(self, m):
        """The daemon's boot-state file for m: its name starts with the
        mount namespace's identity (daemon/boot_state.h), so a first start
        and stop writes it, and it is found by the mount point's part."""
        m.start()
        m.stop()
        boot_dir = os.path.join(m.dir, "boot")
        names = [n for n in os.listdir(boot_dir) if n.endswith(boot_state_name(m.mnt))]
        self.assertEqual(len(names), 1, os.listdir(boot_dir))
        return os.path.join(boot_dir, names[0])

    def test_damaged_boot_state_is_set_aside_and_the_daemon_mounts(self):
        for what in self.boot_cases("/"):
            with self.subTest(what):
                m = self.mount()
                data = self.boot_cases(os.path.abspath(m.mnt))[what]
                path = self.boot_state_file(m)
                with open(path, "wb") as f:
                    f.write(data)
                m.start()
                self.assert_fresh_and_usable(m)
                with open(path + ".rejected", "rb") as f:
                    self.assertEqual(f.read(), data)
                self.assertIn("moved to " + path + ".rejected", m.daemon_log())
                # The next stop writes a good file again, and the next start
                # takes it.
                self.assertEqual(m.write("info/L3_MON/max_threshold_occupancy", "65536\n"), 0)
                m.stop()
                m.start()
                self.assertEqual(m.read("info/L3_MON/max_threshold_occupancy"), "65536\n")
                self.assertEqual(m.daemon_log().count("boot defaults"), 1, m.daemon_log())
                m.cleanup()

    # --- the journal's snapshot ---------------------------------------------

    def journal_cases(self):
        fs = '{"platform":"%s","fs":%%s}' % PLATFORM
        good_group = '{"version":1,"groups":[{"name":"","closid":0,"rmid":0},%s]}'
        return {
            # The document that once aborted the daemon (found by fuzz_fs_files).
            "wrong type (version)": envelope(fs % '{"version":"clos:"}'),
            "wrong type (closid)": envelope(fs % (good_group % '{"name":"g","closid":"1"}')),
            "wrong type (envelope)": b'{"format":"resctrlfs-state","version":1,'
                                     b'"generation":"1","length":2,"crc32c":"0","body":"{}"}',
            "truncated": envelope(fs % (good_group % '{"name":"g","closid":1}'))[:90],
            "binary garbage": garbage(2),
            "huge numbers": envelope(fs % (good_group %
                                           '{"name":"g","closid":18446744073709551616}')),
            "huge numbers (threads)": envelope(
                fs % '{"version":1,"threads":[[1e300,0,0]]}'),
            "huge numbers (envelope)": b'{"format":"resctrlfs-state","version":1,'
                                       b'"generation":1e400,"length":2,"crc32c":"0","body":"{}"}',
            "deeply nested arrays (body)": envelope(fs % ('{"version":1,"x":%s}' % deep_array())),
            "deeply nested arrays (file)": deep_array().encode(),
        }

    def test_damaged_journal_is_set_aside_and_the_daemon_mounts(self):
        for what, data in self.journal_cases().items():
            with self.subTest(what):
                m = self.mount()
                path = os.path.join(m.state_dir, "state.json")
                with open(path, "wb") as f:
                    f.write(data)
                m.start()
                self.assert_fresh_and_usable(m)
                with open(path + ".rejected", "rb") as f:
                    self.assertEqual(f.read(), data)
                self.assertIn("is NOT restored", m.daemon_log())
                m.cleanup()

    # --- a --platform profile -------------------------------------------------

    def profile_cases(self):
        cpus = '"cpus":[{"cpu":0,"package":0,"l2":0,"l3":0},{"cpu":1,"package":0,"l2":1,"l3":0}]'
        base = '{"vendor":"GenuineIntel","family":6,"model":106,%s,%%s}' % cpus
        cat = '"l3_size_bytes":8388608,"l3_cat":{"cbm_len":8,"num_closid":4}'
        return {
            "wrong type (package)": ('{"vendor":"GenuineIntel","cpus":[{"cpu":0,"package":"0"}]}'
                                     ).encode(),
            "wrong type (cat)": (base % '"l3_cat":{"cbm_len":8,"num_closid":4,"cdp":"yes"}').encode(),
            "wrong type (sim)": (base % (cat + ',"sim":{"mem_bandwidth_mbps":"fast"}')).encode(),
            "truncated": (base % cat).encode()[:70],
            "binary garbage": garbage(3),
            "huge numbers": (base % '"l3_size_bytes":18446744073709551615').encode(),
            "huge numbers (float)": (base % (cat + ',"sim":{"occupancy_fill_ms":1e300}')).encode(),
            "huge numbers (overflow)": (base % '"model":1e400').encode(),
            "deeply nested arrays": (base % ('"x":%s' % deep_array())).encode(),
        }

    def test_damaged_profile_is_refused_with_a_message(self):
        if rt.MSR:
            self.skipTest("msr label: inherent: with --backend msr the daemon reads no platform "
                          "profile (the machine is described by CPUID and sysfs)")
        for what, data in self.profile_cases().items():
            with self.subTest(what):
                m = self.mount()
                profile = os.path.join(m.dir, "profile.json")
                with open(profile, "wb") as f:
                    f.write(data)
                m.platform = profile
                p = subprocess.run(m.argv(), stdin=subprocess.DEVNULL, capture_output=True)
                err = p.stderr.decode(errors="replace")
                self.assertEqual(p.returncode, 1, err)
                self.assertIn("platform profile", err)
                self.assertNotIn("terminate called", err)
                self.assertFalse(rt.is_mounted(m.mnt))
                m.cleanup()

    def test_a_good_profile_still_mounts(self):
        m = self.mount()
        profile = os.path.join(m.dir, "profile.json")
        with open(profile, "w") as f:
            f.write('{"vendor":"GenuineIntel","family":6,"model":106,'
                    '"cpus":[{"cpu":0,"package":0,"l2":0,"l3":0},'
                    '{"cpu":1,"package":0,"l2":1,"l3":0}],'
                    '"l3_size_bytes":8388608,"l3_cat":{"cbm_len":"0x8","num_closid":4},'
                    '"sim":{"mem_bandwidth_mbps":1000.5}}')
        m.platform = profile
        m.start()
        self.assertEqual(m.read("schemata"), "L3:0=ff\n")

    def test_cpus_differing_in_an_rdt_cpuid_leaf_are_refused(self):
        if rt.MSR:
            self.skipTest("msr label: inherent: with --backend msr the daemon reads no platform "
                          "profile (hw_tests covers the msr path's refusal)")
        base = ('{"vendor":"GenuineIntel","family":6,"model":106,'
                '"cpus":[{"cpu":0,"package":0,"l2":0,"l3":0},'
                '{"cpu":1,"package":0,"l2":1,"l3":0}],'
                '"l3_size_bytes":8388608,"l3_cat":{"cbm_len":8,"num_closid":4},'
                '"cpuid_per_cpu":{"1":%s}}')
        m = self.mount()
        profile = os.path.join(m.dir, "profile.json")
        # CPU 1 enumerates a 16-bit L3 mask, CPU 0 an 8-bit one.
        with open(profile, "w") as f:
            f.write(base % '{"0x10.1":["0xf","0","0","3"]}')
        m.platform = profile
        p = subprocess.run(m.argv(), stdin=subprocess.DEVNULL, capture_output=True)
        err = p.stderr.decode(errors="replace")
        self.assertEqual(p.returncode, 1, err)
        self.assertIn("CPU 1 leaf 0x10.1: eax=0xf", err)
        self.assertIn("do not enumerate the same RDT/PQoS features", err)
        self.assertFalse(rt.is_mounted(m.mnt))
        m.cleanup()
        # A leaf outside RDT may differ: the machine mounts.
        m = self.mount()
        profile = os.path.join(m.dir, "profile.json")
        with open(profile, "w") as f:
            f.write(base % '{"0xb":["1","2","0x100","1"]}')
        m.platform = profile
        m.start()
        self.assertEqual(m.read("schemata"), "L3:0=ff\n")


if __name__ == "__main__":
    rt.main()
