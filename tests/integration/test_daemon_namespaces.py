#!/usr/bin/env python3
"""Instances per (mount namespace, mount point): daemons in several mount
namespaces serve the same path at once, each with its own tree and boot
state, without a lock error; a remount in the same namespace keeps the boot
state (what the kernel keeps outside the mount), a new namespace (even one that gets a dead namespace's inode
number) starts from boot defaults; and `fusermount3 -u M; resctrlfsd M`
back to back waits for the exiting daemon instead of failing.

These daemons run without --state-dir, so their instance lock is the
per-namespace one in /run/resctrlfs (removed again at the end).
"""

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

import resctrlfs_test as rt

LOCK_DIR = "/run/resctrlfs"
THRESHOLD = "info/L3_MON/max_threshold_occupancy"


def ns_inode(pid):
    return os.stat("/proc/%d/ns/mnt" % pid).st_ino


class Holder:
    """A process in a new private mount namespace (`unshare -m`) that keeps
    it alive; commands run in it through nsenter."""

    def __init__(self):
        self.proc = subprocess.Popen(["unshare", "-m", "--propagation", "private",
                                      "sleep", "3600"])
        rt.wait_until(lambda: ns_inode(self.proc.pid) != ns_inode(os.getpid()),
                      "unshare to enter a new mount namespace", interval=0.01,
                      give_up=lambda: rt.exited(self.proc))
        self.inode = ns_inode(self.proc.pid)

    def argv(self, cmd):
        return ["nsenter", "-t", str(self.proc.pid), "-m", "--"] + cmd

    def run(self, cmd, **kw):
        return subprocess.run(self.argv(cmd), capture_output=True, text=True, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Namespaces(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="resctrlfs-ns-")
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)
        self.boot = os.path.join(self.dir, "boot")
        self.logs = []
        self.holders = []
        self.addCleanup(self.cleanup)

    def cleanup(self):
        for h in self.holders:
            # Killing the namespace's last process unmounts its FUSE mount;
            # its daemon sees the unmount and exits.
            subprocess.run(h.argv(["fusermount3", "-uz", self.mnt]), capture_output=True)
            h.stop()
        if rt.is_mounted(self.mnt):
            subprocess.call(["fusermount3", "-uz", self.mnt])
        for path in glob.glob(os.path.join(LOCK_DIR, "mnt-*." + glob.escape(self.lock_suffix()))):
            # A daemon of this test still holding its lock (a failed test).
            try:
                with open(path) as f:
                    pid = int(f.read().strip() or 0)
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    if self.boot.encode() in f.read():
                        os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError):
                pass
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass  # the daemon, exiting just now, removed its own lock file
        if not os.environ.get("RESCTRLFS_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def lock_suffix(self):
        """The daemon's lock file name for self.mnt, after "mnt-<inode>."."""
        out = ""
        for c in self.mnt.strip("/"):
            if c == "/":
                out += "-"
            elif c.isascii() and (c.isalnum() or c in "_."):
                out += c
            else:
                out += "%%%02X" % ord(c)
        return out + ".lock"

    def daemon_argv(self, platform="intel-2s", foreground=False):
        a = [os.path.abspath(rt.daemon_binary())]
        if foreground:
            a.append("-f")
        return a + ["--platform", platform, "--boot-state-dir", self.boot, self.mnt]

    def start_in(self, holder, platform="intel-2s"):
        """Starts a detached daemon in `holder`'s namespace (None: this
        one); returns the result of the starting command."""
        argv = self.daemon_argv(platform)
        r = holder.run(argv) if holder else subprocess.run(
            argv, capture_output=True, text=True)
        self.logs.append(r.stderr)
        return r

    def cat(self, holder, rel):
        path = os.path.join(self.mnt, rel)
        if holder is None:
            with open(path) as f:
                return f.read()
        r = holder.run(["cat", path])
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def write(self, holder, rel, text):
        path = os.path.join(self.mnt, rel)
        if holder is None:
            with open(path, "w") as f:
                f.write(text)
            return
        r = holder.run(["sh", "-c", 'printf "%s" "$1" > "$2"', "sh", text, path])
        self.assertEqual(r.returncode, 0, r.stderr)

    def unmount(self, holder):
        argv = ["fusermount3", "-u", self.mnt]
        r = holder.run(argv) if holder else subprocess.run(argv, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def holder(self):
        h = Holder()
        self.holders.append(h)
        return h

    def test_three_namespaces_at_once_on_one_path(self):
        a, b = self.holder(), self.holder()
        self.assertNotEqual(a.inode, b.inode)
        for h, platform in ((a, "intel-2s"), (b, "amd-2s"), (None, "intel-l2")):
            r = self.start_in(h, platform)
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.cat(a, "info/L3/cbm_mask"), "7ff\n")
        self.assertEqual(self.cat(b, "info/L3/cbm_mask"), "ffff\n")
        self.assertEqual(self.cat(None, "info/L3/cbm_mask"), "fff\n")
        default = self.cat(b, THRESHOLD)
        self.write(a, THRESHOLD, "131072\n")
        self.assertEqual(self.cat(a, THRESHOLD), "131072\n")
        self.assertEqual(self.cat(b, THRESHOLD), default)
        locks = sorted(os.path.basename(p) for p in glob.glob(
            os.path.join(LOCK_DIR, "mnt-*." + glob.escape(self.lock_suffix()))))
        want = sorted("mnt-%d.%s" % (i, self.lock_suffix())
                      for i in (a.inode, b.inode, ns_inode(os.getpid())))
        self.assertEqual(locks, want)
        # A second daemon in a namespace that has one is still refused.
        r = self.start_in(a)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already serves", r.stderr)
        self.unmount(None)

    def test_boot_state_follows_the_namespace(self):
        a = self.holder()
        self.assertEqual(self.start_in(a).returncode, 0, self.logs[-1])
        default = self.cat(a, THRESHOLD)
        self.write(a, THRESHOLD, "131072\n")
        # A remount in the same namespace keeps it, as the kernel's does.
        self.unmount(a)
        self.assertEqual(self.start_in(a).returncode, 0, self.logs[-1])
        self.assertEqual(self.cat(a, THRESHOLD), "131072\n")
        # Another namespace, alive at the same time, does not see it.
        b = self.holder()
        self.assertEqual(self.start_in(b).returncode, 0, self.logs[-1])
        self.assertEqual(self.cat(b, THRESHOLD), default)
        # Namespaces that die and are replaced (the kernel hands out their
        # inode numbers again) never pass their boot state on.
        reused = 0
        for i in range(5):
            self.unmount(a)
            gone = a.inode
            a.stop()
            a = self.holder()
            reused += a.inode == gone
            r = self.start_in(a)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.cat(a, THRESHOLD), default, "round %d" % i)
            self.write(a, THRESHOLD, "%d\n" % (131072 + 65536 * (i + 1)))
        print("new namespaces that got a dead one's inode number: %d of 5" % reused)
        self.unmount(a)
        self.unmount(b)

    def test_unmount_then_mount_back_to_back_20_times(self):
        r = self.start_in(None)
        self.assertEqual(r.returncode, 0, r.stderr)
        value = int(self.cat(None, THRESHOLD))
        waited = 0
        for i in range(20):
            value += 65536
            self.write(None, THRESHOLD, "%d\n" % value)
            # No wait between the two: the old daemon is still saving its
            # boot state and exiting when the new one starts.
            r = subprocess.run(["sh", "-c", 'm=$1; shift; fusermount3 -u "$m" && exec "$@"', "sh",
                                self.mnt] + self.daemon_argv(),
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, "round %d: %s" % (i, r.stderr))
            self.assertNotIn("already serves", r.stderr)
            waited += "waiting for the previous resctrlfsd" in r.stderr
            # The new daemon started after the old one saved: a remount.
            self.assertEqual(self.cat(None, THRESHOLD), "%d\n" % value, "round %d" % i)
        print("rounds in which the new daemon waited for the old one: %d of 20" % waited)
        self.unmount(None)


if __name__ == "__main__":
    rt.require_fuse()
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            print("SKIP: %s is missing (util-linux)" % tool)
            raise SystemExit(rt.SKIP)
    rt.main()
