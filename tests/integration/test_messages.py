#!/usr/bin/env python3
"""Messages that say what to do: each program run as another
user than root says first that it must run as root; the exporter refuses a
--root that is no resctrl tree and takes localhost and [::1] in --listen;
the daemon says where its log goes and, detached without a syslog socket,
keeps logging to stderr; no program's --help shows CLI11's {false}.

The log test moves this process into a mount namespace of its own (where
/dev/log is made to be no socket if it is one), so nothing outside sees it."""

import ctypes
import os
import re
import subprocess
import tempfile
import unittest
import urllib.request

import exporter_harness as eh
import resctrlfs_test as rt

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def msrd_binary():
    return rt._find_binary("RESCTRL_MSRD", "hw/resctrl-msrd")


def sandbox_binary():
    # The sanitizer trees name a sandbox they do not build.
    p = rt._find_binary("RESCTRLFS_SANDBOX", "sandbox/resctrlfs-sandbox")
    if not os.access(p, os.X_OK):
        raise RuntimeError("%s is not built in this tree" % p)
    return p


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, **kw)


def exporter_exit(argv, test):
    """Runs the exporter until it exits or says it serves (then it is
    stopped and the test fails); asserts status 2 and returns its stderr."""
    with tempfile.TemporaryFile() as log:
        p = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)

        def output():
            log.seek(0)
            return log.read().decode(errors="replace")
        rt.wait_until(lambda: p.poll() is not None or "serving" in output(),
                      "resctrlfs-exporter to exit or serve", report=output)
        if p.poll() is None:
            rt.stop_process(p)
            test.fail("resctrlfs-exporter started serving: " + output())
        test.assertEqual(p.returncode, 2, output())
        return output()


class NotRoot(unittest.TestCase):
    """As nobody, "must run as root" comes first, with what to do."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="resctrlfs-msgs-")
        os.chmod(self.dir, 0o755)
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)

    def assert_must_be_root(self, prog, r):
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        first = r.stderr.splitlines()[0] if r.stderr else ""
        self.assertTrue(first.startswith(prog + ": must run as root"), r.stderr)
        self.assertIn("sudo", r.stderr)

    def test_daemon(self):
        # Foreground and detached, with the default lock directory and with
        # a state directory: the same first line (it was a lock-file error).
        for extra in ([], ["-f"], ["--state-dir", os.path.join(self.dir, "state")]):
            with self.subTest(args=extra):
                r = run(NOBODY + [rt.daemon_binary(), "--platform", "intel-2s"] + extra +
                        [self.mnt])
                self.assert_must_be_root("resctrlfsd", r)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)  # nothing else
        self.assertFalse(rt.is_mounted(self.mnt))
        # --help and --version need nothing.
        self.assertEqual(run(NOBODY + [rt.daemon_binary(), "--version"]).returncode, 0)
        self.assertEqual(run(NOBODY + [rt.daemon_binary(), "--help"]).returncode, 0)

    def test_msr_broker(self):
        r = run(NOBODY + [msrd_binary(), "--socket", os.path.join(self.dir, "msrd.sock")])
        self.assert_must_be_root("resctrl-msrd", r)
        self.assertIn("/dev/cpu/N/msr", r.stderr)

    def test_sandbox(self):
        try:
            sb = sandbox_binary()
        except RuntimeError as e:
            self.skipTest(str(e))
        r = run(NOBODY + [sb, "--platform", "intel-2s", "--", "true"])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertTrue(r.stderr.startswith("resctrlfs-sandbox: must run as root"), r.stderr)
        self.assertIn("sudo", r.stderr)


class ExporterRoot(unittest.TestCase):
    """--root must be a resctrl tree: refused with status 2 and a message."""

    def refused(self, root):
        err = exporter_exit([eh.exporter_binary(), "--root", root, "--listen", "127.0.0.1:0"],
                            self)
        self.assertIn("point --root at a resctrl mount", err)
        return err

    def test_missing_root(self):
        d = tempfile.mkdtemp(prefix="resctrlfs-msgs-")
        err = self.refused(os.path.join(d, "nope"))
        self.assertIn("--root %s/nope: No such file or directory" % d, err)

    def test_plain_directory(self):
        d = tempfile.mkdtemp(prefix="resctrlfs-msgs-")
        err = self.refused(d)
        self.assertIn("--root %s is not a resctrl tree (no info/last_cmd_status)" % d, err)
        # The files alone do not make one.
        os.mkdir(os.path.join(d, "info"))
        for f in ("info/last_cmd_status", "tasks"):
            open(os.path.join(d, f), "w").close()
        err = self.refused(d)
        self.assertIn("is not a resctrl tree (a filesystem of type 0x", err)

    def test_mounted_tree_is_served(self):
        m = rt.Mount()
        self.addCleanup(m.cleanup)
        exp = eh.Exporter(m.mnt)
        self.addCleanup(exp.stop)
        self.assertIn("node_resctrl_up 1", exp.metrics())


class ExporterListen(unittest.TestCase):
    def setUp(self):
        self.m = rt.Mount()
        self.addCleanup(self.m.cleanup)

    def test_localhost(self):
        exp = eh.Exporter(self.m.mnt, listen="localhost:0")
        self.addCleanup(exp.stop)
        self.assertRegex(exp.url, r"^http://127\.0\.0\.1:\d+$")
        self.assertIn("node_resctrl_up 1", exp.metrics())

    def test_ipv6_loopback(self):
        if not os.path.exists("/proc/net/if_inet6"):
            self.skipTest("no IPv6 on this machine")
        exp = eh.Exporter(self.m.mnt, listen="[::1]:0")
        self.addCleanup(exp.stop)
        self.assertRegex(exp.url, r"^http://\[::1\]:\d+$")
        with urllib.request.urlopen(exp.url + "/metrics") as r:
            self.assertIn("node_resctrl_up 1", r.read().decode())

    def test_bad_address_lists_the_forms(self):
        for bad in ("localhost", "[::1:80", "1.2.3.4:x", "no-such-host.invalid:9835"):
            with self.subTest(listen=bad):
                err = exporter_exit([eh.exporter_binary(), "--root", self.m.mnt, "--listen",
                                     bad], self)
                self.assertIn("listen address '%s'" % bad, err)
                self.assertIn("localhost:9835", err)
                self.assertIn("[::1]:9835", err)


class LogDestination(unittest.TestCase):
    """Detached without a syslog socket, the daemon's messages still reach
    stderr; the line every start logs says where the log goes."""

    @classmethod
    def setUpClass(cls):
        libc = rt.private_mount_namespace()
        if os.path.exists("/dev/log"):
            # Here only: a /dev/log that is no socket, as on a machine
            # without a syslog daemon.
            if libc.mount(b"/dev/null", b"/dev/log", None, rt.MS_BIND, None) != 0:
                e = ctypes.get_errno()
                raise OSError(e, "bind /dev/null over /dev/log: " + os.strerror(e))

    def test_detached_without_syslog_logs_to_stderr(self):
        m = rt.Mount(foreground=False)
        self.addCleanup(m.cleanup)
        log = m.daemon_log()
        self.assertRegex(log, r"resctrl mounted at %s \(backend \w+, [^)]*\); "
                         r"log: stderr \(no syslog daemon at /dev/log\)" % re.escape(m.mnt))
        # A message logged after the detach (SIGTERM's) arrives there.
        m.stop()
        rt.wait_until(lambda: "unmounting" in m.daemon_log(), "the signal's log line",
                      report=m.daemon_log)
        self.assertRegex(m.daemon_log(), r"resctrlfsd\[%d\]: info: signal \w+: unmounting" % m.pid)

    def test_detached_with_stderr_a_pipe_lets_the_caller_go(self):
        # A caller that reads stderr to its end ($(...), a test's capture)
        # is not held for the daemon's lifetime; the start line says so.
        m = rt.Mount(foreground=False, start=False)
        self.addCleanup(m.cleanup)
        r = subprocess.run(m.argv(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("log: none once detached (no syslog daemon at /dev/log, and stderr is a "
                      "pipe): run with -f, or send stderr to a file", r.stderr)
        rt.wait_until(lambda: rt.is_mounted(m.mnt), "the detached daemon's mount")
        m.pid = m._pid_from_lock()
        m.stop()

    def test_foreground_says_stderr(self):
        m = rt.Mount()
        self.addCleanup(m.cleanup)
        self.assertRegex(m.daemon_log(), r"resctrl mounted at \S+ \([^)]*\); log: stderr\n")

    def test_help_says_where_the_log_goes(self):
        out = run([rt.daemon_binary(), "--help"]).stdout
        self.assertIn("syslog", out)
        self.assertIn("/dev/log", out)


class HelpTexts(unittest.TestCase):
    """--help of every program: exit 0, no value braces after a flag's name."""

    def test_no_flag_values_in_help(self):
        progs = [[rt.daemon_binary()], [rt.ctl_binary()], [rt.ctl_binary(), "fault"],
                 [msrd_binary()], [eh.exporter_binary()]]
        try:
            progs.append([sandbox_binary()])
        except RuntimeError:
            pass
        for p in progs:
            with self.subTest(prog=p):
                r = run(p + ["--help"])
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotRegex(r.stdout, r"-[\w-]+\{(true|false|[0-9]+)\}")
        out = run([rt.daemon_binary(), "--help"]).stdout
        self.assertRegex(out, r"\n  --journal-fsync,--no-journal-fsync\s+fsync each journal commit")


if __name__ == "__main__":
    rt.main()
