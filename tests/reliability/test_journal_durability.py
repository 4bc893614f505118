#!/usr/bin/env python3
"""What the state journal promises when a command fails or the journal
cannot be written, and what a restarted daemon does with threads that went
away while it was down:

  - a tasks (or, under -o iordt, channels) write that fails part way keeps
    what it moved before the failure, as the kernel does, and that part is
    journaled before the error reply: kill -9 right after it and a restart
    show exactly what the tree showed;
  - while the state directory's filesystem is full, a command either is
    journaled before its reply or fails with the journal's errno (ENOSPC)
    and a line in info/last_cmd_status, leaving nothing of itself in the
    tree; kill -9 and a restart show exactly what the tree showed; once
    there is room again commands succeed without a restart;
  - a thread restored from the journal that exited (and was reaped) while
    the daemon was down, or whose exit the restarted daemon could not see,
    is listed in no group.

The full-filesystem case needs root: a small tmpfs is mounted for the state
directory in a private mount namespace of this test process.
"""

import errno
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import reltree
from reltree import rt


def spawn_sleeper():
    return subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)


def all_tasks(m):
    """Every id listed in any tasks file of the tree."""
    out = set()
    for g in reltree.snapshot(m, debug=False)["groups"].values():
        out |= g["tasks"]
        for mg in g["mons"].values():
            out |= mg["tasks"]
    return out


class FailedWriteIsJournaled(unittest.TestCase):
    OPTIONS = ()
    PLATFORM = "intel-2s"

    def setUp(self):
        self.m = rt.Mount(start=False, platform=self.PLATFORM, options=self.OPTIONS)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def test_tasks_write_failing_part_way_survives_kill_9(self):
        m = self.m
        a, b = spawn_sleeper(), spawn_sleeper()
        for p in (a, b):
            self.addCleanup(p.wait)
            self.addCleanup(p.kill)
        self.assertEqual(m.mkdir("g"), 0)
        # The kernel moves ids one at a time and stops at the first bad one:
        # a and b moved, then ESRCH.
        self.assertEqual(m.write("g/tasks", "%d,%d,999999\n" % (a.pid, b.pid)), errno.ESRCH)
        self.assertTrue(m.lcs().startswith("No task 999999\n"), m.lcs())
        tids = {a.pid, b.pid}
        before = reltree.snapshot(m, tids, debug=False)
        self.assertEqual(before["groups"]["g"]["tasks"], tids)
        # At once: the error reply came after the journal record, whatever
        # the tick does.
        m.kill()
        m.start()
        self.assertEqual(reltree.snapshot(m, tids, debug=False), before)


class FailedChannelsWriteIsJournaled(unittest.TestCase):
    def setUp(self):
        self.m = rt.Mount(start=False, platform="intel-gnr-io", options=["iordt"])
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def test_channels_write_failing_part_way_survives_kill_9(self):
        m = self.m
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/channels", "0x101,0x102,0x7\n"), errno.EINVAL)
        self.assertEqual(m.lcs(), "Unknown channel 0x7\n")
        self.assertEqual(m.read("g/channels"), "0x101\n0x102\n")
        root = m.read("channels")
        m.kill()
        m.start()
        self.assertEqual(m.read("g/channels"), "0x101\n0x102\n")
        self.assertEqual(m.read("channels"), root)


class FullStateDirectory(unittest.TestCase):
    """The state directory on a 4 MiB tmpfs, filled up by another file."""

    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (a tmpfs in a private mount namespace)")
        rt.private_mount_namespace()

    def setUp(self):
        self.m = rt.Mount(start=False)
        self.addCleanup(self.m.cleanup)
        self.tmpfs = tempfile.mkdtemp(prefix="resctrlfs-full-")
        self.addCleanup(shutil.rmtree, self.tmpfs, True)
        subprocess.check_call(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs",
                               self.tmpfs])
        self.addCleanup(subprocess.call, ["umount", "-l", self.tmpfs])
        self.m.state_dir = self.tmpfs
        self.filler = os.path.join(self.tmpfs, "filler")
        self.m.start()

    def fill(self):
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for size in (1 << 16, 4096, 1):
                while True:
                    try:
                        os.write(fd, b"x" * size)
                    except OSError as e:
                        self.assertEqual(e.errno, errno.ENOSPC)
                        break
        finally:
            os.close(fd)

    def refused(self, rc, what):
        if rc == 0:
            return False
        self.assertEqual(rc, errno.ENOSPC, what)
        self.assertEqual(self.m.lcs(), "State journal not writable: No space left on device\n",
                         what)
        return True

    def test_commands_fail_whole_or_are_journaled(self):
        m = self.m
        sleeper = spawn_sleeper()
        self.addCleanup(sleeper.wait)
        self.addCleanup(sleeper.kill)
        tids = {sleeper.pid}
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=f\n"), 0, m.lcs())
        self.fill()
        # The journal keeps the room it holds: commands that do not grow the
        # model go on being journaled. MON groups grow it (log records), a
        # cpus_list write is journaled as a whole snapshot: sooner or later
        # the journal needs more than the full filesystem has, and from
        # then on commands are refused, whole.
        refused = 0
        for i in range(150):
            name = "g/mon_groups/m%d" % i
            if self.refused(m.mkdir(name), name):
                refused += 1
                self.assertFalse(os.path.exists(m.path(name)), "refused, yet made")
            cpus = m.read("g/cpus_list")
            if self.refused(m.write("g/cpus_list", "%d\n" % (i % 4 + 1)), "cpus_list"):
                refused += 1
                self.assertEqual(m.read("g/cpus_list"), cpus, "refused, yet changed")
            tasks = m.read("g/tasks")
            if self.refused(m.write("g/tasks", "%d\n" % sleeper.pid), "tasks"):
                refused += 1
                self.assertEqual(m.read("g/tasks"), tasks, "refused, yet moved")
            if refused >= 3:
                break
        self.assertGreater(refused, 0)
        shown = reltree.snapshot(m, tids, debug=False)
        m.kill()
        # The restart writes a snapshot: room for it first.
        os.unlink(self.filler)
        m.start()
        self.assertEqual(reltree.snapshot(m, tids, debug=False), shown)

    def test_commands_succeed_again_once_there_is_room(self):
        m = self.m
        # Full before the first command: the journal has no room yet.
        self.fill()
        self.assertTrue(self.refused(m.mkdir("g"), "mkdir"))
        self.assertFalse(os.path.exists(m.path("g")))
        os.unlink(self.filler)
        self.assertEqual(m.mkdir("g"), 0, m.lcs())
        self.assertEqual(m.write("g/cpus_list", "4\n"), 0, m.lcs())
        m.kill()
        m.start()
        self.assertEqual(m.read("g/cpus_list"), "4\n")


class RestoredThreadsAreChecked(unittest.TestCase):
    def setUp(self):
        self.m = rt.Mount(start=False)
        self.addCleanup(self.m.cleanup)
        self.m.start()

    def test_thread_reaped_while_the_daemon_was_down_is_not_listed(self):
        m = self.m
        child = spawn_sleeper()
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/tasks", "%d\n" % child.pid), 0, m.lcs())
        m.kill()
        # It exits while the daemon is down; its parent (this process) has
        # not waited for it yet, so it is a zombie the restored journal
        # finds in /proc: it belongs in g until it is reaped.
        child.send_signal(signal.SIGKILL)
        rt.wait_until(lambda: open("/proc/%d/stat" % child.pid).read().split(")")[-1].split()[0]
                      == "Z", "the child to become a zombie")
        m.start()
        self.assertIn(child.pid, reltree.read_tasks(m, "g/tasks"))
        child.wait()  # reaped: no event tells the daemon
        self.assertNotIn(child.pid, all_tasks(m))

    def test_thread_gone_before_the_restart_is_not_restored(self):
        m = self.m
        child = spawn_sleeper()
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/tasks", "%d\n" % child.pid), 0, m.lcs())
        m.kill()
        child.kill()
        child.wait()
        m.start()
        self.assertNotIn(child.pid, all_tasks(m))


if __name__ == "__main__":
    rt.main()
