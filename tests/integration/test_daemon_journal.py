#!/usr/bin/env python3
"""The state journal under --state-dir (daemon/journal.h): a daemon stopped
by a signal or killed restores its groups at the next start (and programs
the hardware again); a user's unmount resets everything like the kernel's
unmount; an unusable journal is set aside and the tree starts fresh."""

import os
import signal
import subprocess
import unittest

import resctrlfs_test as rt


class Journal(unittest.TestCase):
    def setUp(self):
        self.m = rt.Mount(start=False)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def make_state(self):
        m = self.m
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=f\n"), 0, m.lcs())
        self.assertEqual(m.mkdir("g/mon_groups/m"), 0)
        self.assertEqual(m.write("g/cpus_list", "1\n"), 0, m.lcs())
        return m.read("g/schemata")

    def journal(self):
        return os.path.join(self.m.state_dir, "state.json")

    def test_restart_after_sigterm_restores_groups_and_hardware(self):
        schemata = self.make_state()
        self.assertEqual(self.m.stop(signal.SIGTERM), 0)
        self.assertTrue(os.path.exists(self.journal()))
        self.m.start()
        self.assertEqual(self.m.read("g/schemata"), schemata)
        self.assertTrue(os.path.isdir(self.m.path("g/mon_groups/m")))
        self.assertEqual(self.m.read("g/cpus_list"), "1\n")
        self.assertIn(0xf, [r["value"] for r in self.m.registers()])

    def test_kill_9_loses_no_acknowledged_command(self):
        schemata = self.make_state()
        self.m.kill()  # SIGKILL right after the last reply: no shutdown path at all
        self.m.start()
        self.assertEqual(self.m.read("g/schemata"), schemata)

    def test_user_unmount_resets_like_the_kernel(self):
        self.make_state()
        subprocess.check_call(["fusermount3", "-u", self.m.mnt])
        self.assertEqual(self.m.proc.wait(timeout=10), 0)
        self.assertFalse(os.path.exists(self.journal()))
        self.m.start()
        self.assertFalse(os.path.exists(self.m.path("g")))

    def test_unusable_journal_is_set_aside(self):
        self.make_state()
        self.m.stop()
        with open(self.journal(), "w") as f:
            f.write("{not json")
        self.m.start()
        self.assertFalse(os.path.exists(self.m.path("g")))
        self.assertTrue(os.path.exists(self.journal() + ".rejected"))
        self.assertEqual(self.m.lcs(), "ok\n")


if __name__ == "__main__":
    rt.main()
