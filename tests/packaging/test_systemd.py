#!/usr/bin/env python3
"""The shipped unit under a real systemd (Debian 12's, 252): ctest entry
systemd.restart, label systemd.

tests/packaging/systemd_container.sh boots systemd as PID 1 of a container
made from a cached Debian 12 root; the unit is packaging/resctrlfsd.service.in
configured with the Debian package's paths (tests/packaging/CMakeLists.txt),
installed with the built resctrlfsd and resctrlfsctl and the sample
configuration, as the package installs them (no drop-in: the sample
configuration's simulated "host" platform and /sys/fs/resctrl are used as
shipped). This process reaches the container's tree through
/proc/<its PID 1>/root and runs systemctl there with nsenter.

  - `systemctl start` mounts /sys/fs/resctrl;
  - a reader holding counter and schemata files open and a writer of
    schemata, task moves and MON groups run while the daemon is killed
    KILLS times, alternately `systemctl kill -s KILL` and `kill -9` of its
    MainPID: each time Restart=on-failure starts it again, the new daemon
    takes the /dev/fuse connection over from the fd store (LISTEN_FDS=1,
    LISTEN_FDNAMES=fuse in its environment), and neither the reader nor
    the writer sees an error; every acknowledged write is in the tree and
    every inode number is the same afterwards;
  - `systemctl restart` (systemd 252 has no FileDescriptorStorePreserve=: a
    restart is a stop and a start): the daemon unmounts and empties the
    store, so a file held open across it fails with ENOTCONN; the new
    mount has the groups, schemata and inode numbers of before (the state
    journal), and there is one mount on /sys/fs/resctrl, not a dead one
    under a live one;
  - `systemctl stop` leaves no mount on /sys/fs/resctrl and the unit
    inactive (not failed, not restarted); the next start brings the groups
    back;
  - systemd's start limit (a drop-in makes its interval an hour, so that
    the count decides): the kill after the fifth start fails the unit,
    systemd releases the store and the mount is dead (ENOTCONN); after
    `systemctl reset-failed`, `systemctl start` detaches the dead mount and
    mounts afresh with the journal's groups.

Skipped (77), saying why, when systemd cannot boot here or the root cannot
be made (no mmdebstrap, no network on a cold cache), or on a kernel without
FUSE_NOTIFY_RESEND (Linux < 6.9; there a request in flight at a kill fails
with ECONNABORTED: reliability.test_takeover covers that path).
"""

import ctypes
import errno
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import resctrlfs_test as rt  # noqa: E402

KILLS = int(os.environ.get("SYSTEMD_KILLS", "6"))
SEED = int(os.environ.get("RELIABILITY_SEED", str(int(time.time()))))
SCRIPT = os.path.join(HERE, "systemd_container.sh")
SOURCE = os.path.dirname(os.path.dirname(HERE))
MNT = "/sys/fs/resctrl"
UNIT = "resctrlfsd"


def kernel_has_resend():
    parts = platform.release().split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (6, 9)
    except (ValueError, IndexError):
        return False


def die_with_parent():
    # The container (and with it its mounts) ends when this test does, even
    # when ctest kills it: unshare gets SIGKILL, and its --kill-child sends
    # the container's PID 1 another.
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Container:
    """A booted systemd with the resctrlfs package's files installed."""

    def __init__(self, test, root, extra=None):
        self.tmp = tempfile.mkdtemp(prefix="resctrlfs-systemd-", dir="/var/tmp")
        test.addCleanup(shutil.rmtree, self.tmp, True)
        stage = os.path.join(self.tmp, "stage")
        self.work = os.path.join(self.tmp, "work")
        os.makedirs(self.work)
        # What the resctrlfs package installs, at its paths.
        files = {
            "usr/sbin/resctrlfsd": rt.daemon_binary(),
            "usr/bin/resctrlfsctl": rt.ctl_binary(),
            "lib/systemd/system/resctrlfsd.service": os.environ["RESCTRLFS_DEBIAN_UNIT"],
            "etc/resctrlfs/resctrlfsd.conf": os.path.join(SOURCE, "packaging/resctrlfsd.conf"),
        }
        for dst, src in files.items():
            os.makedirs(os.path.dirname(os.path.join(stage, dst)), exist_ok=True)
            shutil.copy(src, os.path.join(stage, dst))
        for dst, text in (extra or {}).items():
            os.makedirs(os.path.dirname(os.path.join(stage, dst)), exist_ok=True)
            with open(os.path.join(stage, dst), "w") as f:
                f.write(text)
        # No console getty: the container's console is a log file.
        os.makedirs(os.path.join(stage, "etc/systemd/system"), exist_ok=True)
        os.symlink("/dev/null", os.path.join(stage, "etc/systemd/system/console-getty.service"))
        self.log_path = os.path.join(self.tmp, "boot.log")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([SCRIPT, "boot", root, self.work, stage],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        test.addCleanup(self.shutdown)

        def not_booted():
            # Before systemd is up, a container that ended is a machine
            # where it cannot boot (systemd in a container exits on a fatal
            # error; the script exits 77 saying what it could not set up).
            if self.proc.poll() is None:
                return None
            log = self.boot_log().strip()
            if self.proc.returncode == rt.SKIP:
                raise unittest.SkipTest(log.splitlines()[-1])
            raise unittest.SkipTest("systemd could not boot here (the container exited with %d): %s"
                                    % (self.proc.returncode, log[-1500:]))

        def pid1():
            try:
                with open(os.path.join(self.work, "pid1")) as f:
                    return int(f.read())
            except OSError:
                return None
        self.pid1 = rt.wait_until(pid1, "the container's PID 1", give_up=not_booted)

        # systemd answers once its private socket is there, "initializing"
        # or "starting" until its start-up is over (is-system-running's
        # --wait needs D-Bus, which the root does not have).
        def booted():
            r = self.run("systemctl", "is-system-running", check=False)
            state = r.stdout.strip()
            return state if state not in ("", "offline", "initializing", "starting") else None
        state = rt.wait_until(booted, "systemd to boot", give_up=not_booted,
                              report=self.boot_log)
        if state not in ("running", "degraded"):
            raise unittest.SkipTest("systemd did not boot here (%s): %s" % (
                state, self.run("systemctl", "--failed", "--no-pager", check=False).stdout))
        self.state = state

    def gone(self):
        """Why the container is no longer there, or None."""
        if self.proc.poll() is None:
            return None
        return "the container exited (%d): %s" % (self.proc.returncode, self.boot_log())

    def boot_log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-3000:]

    def run(self, *cmd, check=True):
        """Runs cmd in the container (its namespaces and root)."""
        r = subprocess.run(["nsenter", "-t", str(self.pid1), "-m", "-p", "-u", "-i", "-r", "-w",
                            "--", *cmd], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise AssertionError("%s: exit %d: %s%s\n%s" % (" ".join(cmd), r.returncode, r.stdout,
                                                            r.stderr, self.journal()))
        return r

    def path(self, rel=""):
        return "/proc/%d/root%s/%s" % (self.pid1, MNT, rel) if rel else \
            "/proc/%d/root%s" % (self.pid1, MNT)

    def show(self):
        out = self.run("systemctl", "show", "-p", "MainPID,NRestarts,ActiveState,Result",
                       UNIT).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def journal(self, unit=UNIT, tail=4000):
        r = subprocess.run(["nsenter", "-t", str(self.pid1), "-m", "-p", "-r", "-w", "--",
                            "journalctl", "--no-pager", "-o", "cat", "-u", unit],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        return r.stdout[-tail:] if tail else r.stdout

    def mounts(self):
        """The container's mounts on /sys/fs/resctrl (fstype per mount)."""
        with open("/proc/%d/mountinfo" % self.pid1) as f:
            lines = f.read().splitlines()
        out = []
        for line in lines:
            fields = line.split()
            if fields[4] == MNT:
                out.append(fields[fields.index("-") + 1])
        return out

    def shutdown(self):
        if self.proc.poll() is None:
            self.run("systemctl", "poweroff", check=False)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.kill(self.pid1, signal.SIGKILL)
                self.proc.wait()
        # The container's cgroup, which systemd filled with its slices.
        try:
            with open(os.path.join(self.work, "cgroup")) as f:
                cg = f.read().strip()
        except OSError:
            return
        for d, _, _ in sorted(os.walk(cg), key=lambda e: -len(e[0])):
            try:
                os.rmdir(d)
            except OSError:
                pass


@unittest.skipUnless(kernel_has_resend(), "the kernel lacks FUSE_NOTIFY_RESEND (Linux < 6.9)")
class SystemdUnit(unittest.TestCase):
    def setUp(self):
        # In setUp, not setUpClass: a skip there would count as no test run
        # (rt.main fails a file that ran none).
        for tool in ("unshare", "nsenter", "pivot_root"):
            if shutil.which(tool) is None:
                self.skipTest("%s is not installed (package util-linux)" % tool)
        r = subprocess.run([SCRIPT, "root"], capture_output=True, text=True)
        sys.stderr.write(r.stderr)
        if r.returncode == rt.SKIP:
            self.skipTest(r.stderr.strip().splitlines()[-1])
        if r.returncode != 0:
            raise AssertionError("%s root: exit %d" % (SCRIPT, r.returncode))
        self.root = r.stdout.strip()

    def boot(self, extra=None):
        c = Container(self, self.root, extra)
        missing = c.run("ldd", "/usr/sbin/resctrlfsd").stdout
        if "not found" in missing:
            self.skipTest("the built resctrlfsd needs libraries a Debian 12 system with the "
                          "package's dependencies lacks (a sanitizer build?):\n" + missing)
        c.run("systemctl", "start", UNIT)
        self.assertEqual(c.mounts(), ["fuse.resctrl"], c.journal())
        return c

    def wait_restarted(self, c, old_pid, restarts=1):
        """Waits until systemd has started the daemon again (Restart=, the
        restart counter at `restarts`) and the new one is ready
        (Type=notify: active after its READY=1, which it sends once it
        serves the connection)."""
        def up():
            s = c.show()
            if (s["ActiveState"] == "active" and s["NRestarts"] == str(restarts) and
                    s["MainPID"] not in ("0", str(old_pid))):
                return s
            return None

        def not_restarted():
            # A restart passes through "inactive" too (the restart job's
            # stop half, its start half queued): given up only when the
            # unit is down with no job queued for it, and still down after
            # that was looked at.
            if c.show()["ActiveState"] not in ("inactive", "failed"):
                return c.gone()
            jobs = c.run("systemctl", "list-jobs", "--no-legend", UNIT + ".service").stdout
            s = c.show()
            if not jobs.strip() and s["ActiveState"] in ("inactive", "failed"):
                return "systemd did not start it again: %s\n%s" % (s, c.journal())
            return c.gone()
        return rt.wait_until(up, "systemd to start resctrlfsd again", give_up=not_restarted,
                             report=c.journal)

    def test_kill_restart_stop(self):
        c = self.boot()
        rnd = random.Random(SEED)
        print("seed", SEED, "systemd", c.run("systemctl", "--version").stdout.split("\n")[0])
        groups = ("g1", "g2", "g3")
        for g in groups:
            os.mkdir(c.path(g))
        schemata = c.path("schemata")
        with open(schemata) as f:
            l3 = [line.strip() for line in f if line.strip().startswith("L3:")][0]
        domains = [d.split("=")[0] for d in l3[3:].split(";")]
        with open(c.path("info/L3/cbm_mask")) as f:
            cbm_bits = bin(int(f.read(), 16)).count("1")
        mon_domains = sorted(os.listdir(c.path("mon_data")))
        # Sleepers in the container's PID namespace, moved between groups
        # by their ids there.
        sleepers = []
        for _ in range(3):
            p = subprocess.Popen(["nsenter", "-t", str(c.pid1), "-p", "-r", "-w", "--",
                                  "/bin/sh", "-c", "echo $$; exec sleep 100000"],
                                 stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
            sleepers.append(int(p.stdout.readline()))
            self.addCleanup(p.stdout.close)
            self.addCleanup(rt.stop_process, p, signal.SIGKILL)
        counter_files = [os.path.join(g, "mon_data", d, ev)
                         for g in ("",) + groups for d in mon_domains
                         for ev in sorted(os.listdir(c.path(os.path.join("mon_data", d))))]
        held = counter_files + [os.path.join(g, "schemata") for g in ("",) + groups]
        fds = [os.open(c.path(f), os.O_RDONLY) for f in held]
        self.addCleanup(lambda: [os.close(fd) for fd in fds])
        inos = {f: os.stat(c.path(f)).st_ino for f in held}

        stop = threading.Event()
        errors = []
        reads = [0]
        writes = [0]
        acked = {"schemata": {}, "tasks": {}, "mon": None}

        def reader():
            while not stop.is_set():
                for f, fd in zip(held, fds):
                    try:
                        text = os.pread(fd, 4096, 0).decode()
                        if f.endswith("schemata"):
                            if "L3:" not in text:
                                errors.append("read %s: %r" % (f, text))
                                stop.set()
                        elif text.strip() != "Unavailable":
                            int(text)
                    except (OSError, ValueError) as e:
                        errors.append("read %s: %r" % (f, e))
                        stop.set()
                    reads[0] += 1

        def writer():
            wr = random.Random(SEED + 1)
            n = 0
            while not stop.is_set():
                n += 1
                g = wr.choice(groups)
                kind = wr.randrange(2) if n % 10 else 2
                try:
                    if kind == 0:
                        mask = "%x" % ((1 << wr.randrange(1, cbm_bits + 1)) - 1)
                        with open(c.path(g + "/schemata"), "w") as f:
                            f.write("L3:%s\n" % ";".join("%s=%s" % (d, mask) for d in domains))
                        acked["schemata"][g] = mask
                    elif kind == 1:
                        p = wr.choice(sleepers)
                        with open(c.path(g + "/tasks"), "w") as f:
                            f.write("%d\n" % p)
                        acked["tasks"][p] = g
                    else:
                        # Empty MON groups: their RMIDs are free again at once.
                        name = "%s/mon_groups/m%d" % (g, n)
                        os.mkdir(c.path(name))
                        last, acked["mon"] = acked["mon"], name
                        if last:
                            os.rmdir(c.path(last))
                    writes[0] += 1
                except OSError as e:
                    errors.append("write %s (kind %d): %r" % (g, kind, e))
                    stop.set()

        def progress(what):
            r0, w0 = reads[0], writes[0]
            rt.wait_until(lambda: reads[0] > r0 + len(fds) and writes[0] > w0 + 5 or errors,
                          what, report=c.journal)

        threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
        for t in threads:
            t.start()
        try:
            for i in range(KILLS):
                progress("reads and writes to go on")
                time.sleep(rnd.random() * 0.05)  # a random moment, not a verdict
                old = int(c.show()["MainPID"])
                # Kills this close together would hit systemd's start limit
                # (StartLimitBurst=5 in StartLimitIntervalSec=10 s, the
                # defaults: then it gives up, docs/reliability.md);
                # reset-failed resets that count and NRestarts.
                c.run("systemctl", "reset-failed", UNIT)
                if i % 2:
                    c.run("/bin/sh", "-c", "kill -9 %d" % old)
                else:
                    c.run("systemctl", "kill", "-s", "KILL", UNIT)
                new = self.wait_restarted(c, old)["MainPID"]
                # systemd handed it the stored connection, by name.
                with open("/proc/%d/root/proc/%s/environ" % (c.pid1, new), "rb") as f:
                    env = f.read().split(b"\0")
                self.assertIn(b"LISTEN_FDS=1", env)
                self.assertIn(b"LISTEN_FDNAMES=fuse", env)
                if errors:
                    break
            progress("reads and writes after the last restart")
        finally:
            stop.set()
            for t in threads:
                t.join()
        journal = c.journal(tail=None)
        self.assertEqual(errors[:10], [], journal[-4000:])
        self.assertEqual(journal.count("took over the FUSE connection of " + MNT), KILLS,
                         journal[-4000:])

        def restarts():
            return c.journal(tail=None).count("Scheduled restart job")
        self.assertEqual(restarts(), KILLS)
        self.assertEqual(c.mounts(), ["fuse.resctrl"])

        def check_tree(what):
            for g, mask in acked["schemata"].items():
                with open(c.path(g + "/schemata")) as f:
                    line = [x.strip() for x in f if x.strip().startswith("L3:")][0]
                self.assertEqual(line, "L3:" + ";".join("%s=%s" % (d, mask) for d in domains),
                                 (what, g))
            for p, g in acked["tasks"].items():
                with open(c.path(g + "/tasks")) as f:
                    self.assertIn(str(p), f.read().split(), (what, p, g))
            if acked["mon"]:
                self.assertTrue(os.path.isdir(c.path(acked["mon"])), (what, acked["mon"]))
            for g in groups:
                self.assertLessEqual(len(os.listdir(c.path(g + "/mon_groups"))), 1, (what, g))
            for f, ino in inos.items():
                self.assertEqual(os.stat(c.path(f)).st_ino, ino, (what, f))
        check_tree("after the kills")

        # A deliberate restart: stop (the daemon journals, unmounts, removes
        # its descriptor from the store) and start (a new mount, the
        # journal restored).
        before = c.show()
        c.run("systemctl", "restart", UNIT)
        after = c.show()
        self.assertEqual(after["ActiveState"], "active")
        self.assertEqual(restarts(), KILLS)  # not a restart by Restart=
        self.assertNotEqual(after["MainPID"], before["MainPID"])
        with self.assertRaises(OSError) as cm:
            os.pread(fds[0], 4096, 0)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN, "a file held across the restart")
        self.assertEqual(c.mounts(), ["fuse.resctrl"], "one mount, no dead one below it")
        check_tree("after systemctl restart")

        # A stop: nothing left on the mount point; the next start restores.
        c.run("systemctl", "stop", UNIT)
        s = c.show()
        self.assertEqual((s["ActiveState"], s["Result"]), ("inactive", "success"), c.journal())
        self.assertEqual(restarts(), KILLS)
        self.assertEqual(c.mounts(), [], "a mount left after systemctl stop")
        self.assertEqual(os.listdir(c.path()), [])
        c.run("systemctl", "start", UNIT)
        self.assertEqual(c.mounts(), ["fuse.resctrl"])
        check_tree("after systemctl stop and start")

    def test_start_limit(self):
        """systemd's start limit ends a crash loop: the unit fails, the store
        is released and the mount is dead (ENOTCONN); the next start
        detaches the dead mount and mounts afresh with the journal's
        groups. A drop-in stretches the limit's interval (the burst stays
        the default 5) so that the count of starts decides, not how fast
        this machine runs the kills."""
        c = self.boot(extra={"etc/systemd/system/resctrlfsd.service.d/test-start-limit.conf":
                             "[Unit]\nStartLimitIntervalSec=1h\n"})
        os.mkdir(c.path("g"))
        ino = os.stat(c.path("g/schemata")).st_ino
        fd = os.open(c.path("g/schemata"), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        # The first start and 4 restarts: the 5 starts the limit allows.
        for i in range(4):
            old = int(c.show()["MainPID"])
            c.run("systemctl", "kill", "-s", "KILL", UNIT)
            self.wait_restarted(c, old, restarts=i + 1)
            self.assertIn("L3:", os.pread(fd, 4096, 0).decode())
        c.run("systemctl", "kill", "-s", "KILL", UNIT)
        rt.wait_until(lambda: c.show()["ActiveState"] == "failed", "the unit to fail",
                      report=c.journal)
        self.assertIn("Start request repeated too quickly", c.journal())
        with self.assertRaises(OSError) as cm:
            os.pread(fd, 4096, 0)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN, "the mount after the store's release")
        self.assertEqual(c.mounts(), ["fuse.resctrl"])  # dead, still there
        c.run("systemctl", "reset-failed", UNIT)
        c.run("systemctl", "start", UNIT)
        self.assertEqual(c.mounts(), ["fuse.resctrl"], "the dead mount detached, one new")
        self.assertEqual(os.stat(c.path("g/schemata")).st_ino, ino)


if __name__ == "__main__":
    rt.main()
