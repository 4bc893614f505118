#!/usr/bin/env python3
"""Security through the mounted daemon: a non-root user (nobody) cannot
write any control file or create/remove groups (EACCES, as on the kernel,
from the files' 0644/0755 root-owned modes), and cannot move another user's
task even where it may write the tasks file (EPERM, with the kernel's
messages in last_cmd_status); it may move its own. A second daemon for the
same mount point is refused while the first holds the instance lock.
resctrlfsd (root) refuses a --state-dir or --boot-state-dir that another
user owns or may write to (exit 1, a message saying what to do, nothing
mounted, nothing created in it), and never follows a symlink planted at its
lock file's name.

Covered elsewhere: the kernel-resctrl-mounted refusal of the MSR backend
(tests/daemon startup_test "MSR backend preconditions": /proc/mounts text
with a resctrl line) and resctrl-msrd's register policy and peer-uid check
(tests/hw broker_test)."""

import errno
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import unittest

import reltree
from reltree import rt
from test_crash_restore import SLEEPER

NOBODY = pwd.getpwnam("nobody")
# Runs as nobody: tries to open every path in argv for writing, then
# mkdir/rmdir; prints "<errno> <path>" per attempt.
PROBE = r"""
import os, sys
for p in sys.argv[2:]:
    try:
        fd = os.open(p, os.O_WRONLY)
        try:
            os.write(fd, b"0\n")
            print(0, p)
        except OSError as e:
            print(e.errno, p)
        finally:
            os.close(fd)
    except OSError as e:
        print(e.errno, p)
for fn, p in ((os.mkdir, sys.argv[1] + "/evil"), (os.rmdir, sys.argv[1] + "/g"),
              (os.mkdir, sys.argv[1] + "/g/mon_groups/evil")):
    try:
        fn(p)
        print(0, p)
    except OSError as e:
        print(e.errno, p)
"""


def as_nobody(argv, **kw):
    return subprocess.run(["setpriv", "--reuid=%d" % NOBODY.pw_uid,
                           "--regid=%d" % NOBODY.pw_gid, "--clear-groups"] + argv,
                          capture_output=True, text=True, **kw)


class Security(unittest.TestCase):
    def setUp(self):
        self.m = rt.Mount(platform="intel-2s", options=["debug"])
        self.addCleanup(self.m.cleanup)
        # nobody must reach the mount point: only the files' own modes may
        # refuse it (mkdtemp makes the directory 0700).
        os.chmod(self.m.dir, 0o755)
        self.assertEqual(self.m.mkdir("g"), 0)
        self.assertEqual(self.m.mkdir("g/mon_groups/m"), 0)

    def writable_files(self):
        out = []
        for d, dirs, files in os.walk(self.m.mnt):
            for f in files:
                p = os.path.join(d, f)
                if os.stat(p).st_mode & 0o222:
                    out.append(p)
        return out

    def test_non_root_cannot_write_or_create(self):
        files = self.writable_files()
        self.assertGreater(len(files), 10)
        # Readable by nobody, so refusals below are about writing.
        r = as_nobody(["cat", self.m.path("g/schemata")])
        self.assertEqual(r.returncode, 0, r.stderr)
        before = {p: self.m.read(os.path.relpath(p, self.m.mnt)) for p in files
                  if "last_cmd_status" not in p}
        r = as_nobody([sys.executable, "-c", PROBE, self.m.mnt] + files)
        self.assertEqual(r.returncode, 0, r.stderr)
        results = [line.split(" ", 1) for line in r.stdout.splitlines()]
        self.assertEqual(len(results), len(files) + 3)
        for code, path in results:
            self.assertEqual(int(code), errno.EACCES, path)
        after = {p: self.m.read(os.path.relpath(p, self.m.mnt)) for p in before}
        # Monitoring counters move by themselves, and the default group's
        # tasks lists every thread of the machine, which other processes
        # start and end meanwhile (this failed under load); control files
        # must not change. A thread moved by a write would show in g's or
        # m's tasks, which are compared.
        changed = [p for p in before if before[p] != after[p] and "/mon_data/" not in p
                   and p != self.m.path("tasks")]
        self.assertEqual(changed, [])
        self.assertTrue(os.path.isdir(self.m.path("g")))
        self.assertFalse(os.path.exists(self.m.path("evil")))

    def test_cannot_move_another_users_task(self):
        m = self.m
        root_sleeper = subprocess.Popen([sys.executable, "-c", SLEEPER, "1"],
                                        stdout=subprocess.PIPE, text=True)
        self.addCleanup(root_sleeper.kill)
        root_tid = int(root_sleeper.stdout.readline().split()[0])
        own = subprocess.Popen(["setpriv", "--reuid=%d" % NOBODY.pw_uid,
                                "--regid=%d" % NOBODY.pw_gid, "--clear-groups",
                                sys.executable, "-c", SLEEPER, "1"],
                               stdout=subprocess.PIPE, text=True)
        self.addCleanup(own.kill)
        own_tid = int(own.stdout.readline().split()[0])
        # The administrator delegates the group to nobody (as on the kernel).
        for rel in ("g", "g/tasks"):
            os.chown(m.path(rel), NOBODY.pw_uid, NOBODY.pw_gid)
        write = ("import os,sys\nfd=os.open(sys.argv[1],os.O_WRONLY)\n"
                 "try:\n os.write(fd,sys.argv[2].encode()); print(0)\n"
                 "except OSError as e: print(e.errno)\n")
        r = as_nobody([sys.executable, "-c", write, m.path("g/tasks"), "%d\n" % root_tid])
        self.assertEqual(r.stdout.strip(), str(errno.EPERM), r.stderr)
        self.assertEqual(m.lcs(), "No permission to move task %d\n"
                                  "Error while processing task %d\n" % (root_tid, root_tid))
        self.assertNotIn(root_tid, reltree.read_tasks(m, "g/tasks"))
        r = as_nobody([sys.executable, "-c", write, m.path("g/tasks"), "%d\n" % own_tid])
        self.assertEqual(r.stdout.strip(), "0", r.stderr)
        self.assertIn(own_tid, reltree.read_tasks(m, "g/tasks"))
        # Still no write access to the files it was not given.
        r = as_nobody([sys.executable, "-c", write, m.path("g/schemata"), "L3:0=1\n"])
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("PermissionError", r.stderr)

    def test_second_instance_is_refused(self):
        argv = self.m.argv()
        r = subprocess.run(argv, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(str(self.m.pid), r.stdout + r.stderr)
        self.assertTrue(self.m.alive())
        self.assertEqual(self.m.read("g/mode"), "shareable\n")


def lock_file_name(abs_mountpoint):
    """daemon/startup.h's lock_file_name() without a namespace key (the
    name a --state-dir's lock has)."""
    p = abs_mountpoint.strip("/")
    if not p:
        return "-.lock"
    out = ""
    for c in p.encode():
        ch = chr(c)
        if ch == "/":
            out += "-"
        elif (ch.isascii() and ch.isalnum()) or ch in "_.":
            out += ch
        else:
            out += "%%%02X" % c
    return out + ".lock"


class StateDirectories(unittest.TestCase):
    """Directories another user prepared for root's daemon."""

    def setUp(self):
        # Removed after the daemon's cleanup (cleanups run last first): a
        # daemon that wrongly started may still write there until stopped.
        self.dirs = []
        self.addCleanup(lambda: [shutil.rmtree(d, ignore_errors=True) for d in self.dirs])
        self.m = rt.Mount(platform="intel-2s", start=False, control=False)
        self.addCleanup(self.m.cleanup)
        self.victim_dir = tempfile.mkdtemp(prefix="resctrlfs-victim-")
        self.dirs.append(self.victim_dir)
        self.victim = os.path.join(self.victim_dir, "shadow")
        self.victim_text = "root:secret:19000:0:99999:7:::\n"
        with open(self.victim, "w") as f:
            f.write(self.victim_text)

    def planted_dir(self, owner=None, mode=0o700):
        d = tempfile.mkdtemp(prefix="resctrlfs-planted-")
        self.dirs.append(d)
        if owner is not None:
            os.chown(d, owner, owner)
        os.chmod(d, mode)
        return d

    def start_refused(self, argv_edit=None):
        """Runs the daemon in the foreground; returns (status, output). A
        daemon that mounts instead is stopped by the cleanup and fails."""
        argv = self.m.argv()
        if argv_edit:
            argv = argv_edit(argv)
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True)
        self.m.proc, self.m.pid = proc, proc.pid
        # Either event ends the wait (no time limit: a refusal is an exit,
        # however late it comes on a busy machine).
        rt.wait_until(lambda: proc.poll() is not None or rt.is_mounted(self.m.mnt),
                      "resctrlfsd to exit (refusing) or to mount")
        if proc.poll() is None:
            self.fail("resctrlfsd started (mounted: %s) instead of refusing"
                      % rt.is_mounted(self.m.mnt))
        out, _ = proc.communicate()
        self.assertFalse(rt.is_mounted(self.m.mnt))
        return proc.returncode, out

    def use_state_dir(self, d):
        os.rmdir(self.m.state_dir)
        self.m.state_dir = d

    def test_state_dir_owned_by_nobody_is_refused(self):
        d = self.planted_dir(owner=NOBODY.pw_uid)
        self.use_state_dir(d)
        rc, out = self.start_refused()
        self.assertEqual(rc, 1, out)
        self.assertIn("--state-dir %s: owned by uid %d, not by root" % (d, NOBODY.pw_uid), out)
        self.assertIn("chown root, chmod 0700", out)
        self.assertEqual(os.listdir(d), [])

    def test_world_writable_state_dir_is_refused(self):
        d = self.planted_dir(mode=0o1777)
        self.use_state_dir(d)
        rc, out = self.start_refused()
        self.assertEqual(rc, 1, out)
        self.assertIn("--state-dir %s: mode 1777 lets others write to it" % d, out)
        self.assertEqual(os.listdir(d), [])

    def test_boot_state_dir_owned_by_nobody_is_refused(self):
        d = self.planted_dir(owner=NOBODY.pw_uid)

        def edit(argv):
            i = argv.index("--boot-state-dir")
            return argv[:i + 1] + [d] + argv[i + 2:]
        rc, out = self.start_refused(edit)
        self.assertEqual(rc, 1, out)
        self.assertIn("--boot-state-dir %s: owned by uid %d" % (d, NOBODY.pw_uid), out)
        self.assertEqual(os.listdir(d), [])

    def test_symlink_at_the_lock_name_is_not_followed(self):
        lock = os.path.join(self.m.state_dir, lock_file_name(os.path.abspath(self.m.mnt)))
        os.symlink(self.victim, lock)
        rc, out = self.start_refused()
        self.assertEqual(rc, 1, out)
        self.assertIn("lock file", out)
        with open(self.victim) as f:
            self.assertEqual(f.read(), self.victim_text)
        self.assertTrue(os.path.islink(lock))

    def test_created_state_dir_is_private(self):
        d = os.path.join(self.planted_dir(mode=0o755), "new", "state")
        self.use_state_dir(d)
        old = os.umask(0)
        try:
            self.m.start()
        finally:
            os.umask(old)
        self.assertEqual(os.stat(d).st_mode & 0o7777, 0o700)
        self.assertEqual(os.stat(os.path.dirname(d)).st_mode & 0o7777, 0o755)
        self.m.stop()
        self.assertEqual(os.stat(os.path.join(self.m.dir, "boot")).st_mode & 0o7777, 0o700)


if __name__ == "__main__":
    rt.main()
