#!/usr/bin/env python3
"""The state journal under --state-dir (daemon/journal.h): a daemon stopped
by a signal or killed restores its groups at the next start (and programs
the hardware again); a user's unmount resets everything like the kernel's
unmount; an unusable journal is set aside and the tree starts fresh. A
command appends a small record to state.log instead of rewriting the
snapshot; the tick folds the log into a new snapshot."""

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

    def log(self):
        return os.path.join(self.m.state_dir, "state.log")

    def size(self, path):
        try:
            return os.stat(path).st_size
        except FileNotFoundError:
            return 0

    def used(self, path):
        """Bytes of records in a log: on tmpfs the daemon allocates the file
        whole and maps it, and it is zeros after its last record."""
        try:
            with open(path, "rb") as f:
                return len(f.read().rstrip(b"\0"))
        except FileNotFoundError:
            return 0

    def wait_compacted(self):
        # The compaction runs on the daemon's own thread after the reply.
        rt.wait_until(lambda: os.path.exists(self.journal()) and self.used(self.log()) == 0,
                      "the log to be compacted", interval=0.05, report=self.m.daemon_log)

    def logged(self, commands, attempts=5):
        """Runs commands (callables taking the attempt number, returning 0)
        right after a compaction, so that their records are still in the log
        (the tick compacts once the log's oldest record is a few seconds old
        or the log has grown to half the snapshot; an attempt during which
        it did is repeated). Returns the bytes each appended and the attempt."""
        for k in range(attempts):
            self.wait_compacted()
            ino = os.stat(self.journal()).st_ino
            sizes = []
            for c in commands:
                before = self.used(self.log())
                self.assertEqual(c(k), 0, self.m.lcs())
                sizes.append(self.used(self.log()) - before)
            if os.stat(self.journal()).st_ino == ino:
                return sizes, k
        self.fail("the log was compacted during every attempt")

    def test_commands_append_small_records_and_the_tick_compacts(self):
        m = self.m
        self.make_state()
        for i in range(40):  # a model of some size
            self.assertEqual(m.mkdir("mon_groups/m%d" % i), 0, m.lcs())
        self.wait_compacted()
        snapshot = self.size(self.journal())
        pid = os.getpid()
        sizes, k = self.logged([lambda k: m.write("g/schemata", "L3:0=%x\n" % (k + 3)),
                                lambda k: m.write("g/tasks", "%d\n" % pid),
                                lambda k: m.write("tasks", "%d\n" % pid),
                                lambda k: m.mkdir("g/mon_groups/x%d" % k)])
        self.assertGreater(snapshot, 4000)
        for n in sizes:  # appended, not the snapshot rewritten
            self.assertGreater(n, 0)
            self.assertLess(n, 400)
        self.wait_compacted()
        self.assertTrue(os.path.isdir(m.path("g/mon_groups/x%d" % k)))

    def test_kill_9_replays_the_log(self):
        m = self.m
        self.make_state()
        pid = os.getpid()
        _, k = self.logged([lambda k: m.write("g/schemata", "L3:0=%x\n" % (k + 3)),
                            lambda k: m.mkdir("g/mon_groups/n%d" % k),
                            lambda k: m.write("g/tasks", "%d\n" % pid),
                            lambda k: m.write("g/mon_groups/n%d/tasks" % k, "%d\n" % pid)])
        self.assertGreater(self.used(self.log()), 0)
        schemata = m.read("g/schemata")
        m.kill()
        m.start()
        self.assertEqual(m.read("g/schemata"), schemata)
        self.assertIn("%d\n" % pid, m.read("g/mon_groups/n%d/tasks" % k).splitlines(True))
        self.assertEqual(m.read("g/cpus_list"), "1\n")

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
        self.assertEqual(self.m.proc.wait(), 0)
        self.assertFalse(os.path.exists(self.journal()))
        self.m.start()
        self.assertFalse(os.path.exists(self.m.path("g")))

    def test_unusable_journal_is_set_aside(self):
        self.make_state()
        self.m.stop()
        with open(self.journal(), "w") as f:
            f.write("{not json")
        self.m.start()
        if os.path.exists(self.log() + ".rejected") or os.path.exists(self.log()):
            self.assertEqual(self.used(self.log()), 0)
        self.assertFalse(os.path.exists(self.m.path("g")))
        self.assertTrue(os.path.exists(self.journal() + ".rejected"))
        self.assertEqual(self.m.lcs(), "ok\n")


if __name__ == "__main__":
    rt.main()
