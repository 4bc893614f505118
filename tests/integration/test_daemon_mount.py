#!/usr/bin/env python3
"""resctrlfsd start-up and shutdown: the mount as /proc/mounts shows it,
SIGTERM/SIGINT/external unmount, the hardware reset on unmount, the instance
lock, detaching, and the errors that must fail the start cleanly."""

import errno
import os
import signal
import subprocess
import json
import unittest

import resctrlfs_test as rt

# Simulated RDT registers (SDM names): PQR_ASSOC and the L3/MBA mask ranges.
IA32_PQR_ASSOC = 0xC8F


def reg_map(regs):
    return {(r["cpu"], r["msr"]): r["value"] for r in regs}


class MountTable(rt.ResctrlfsTestCase):
    def test_proc_mounts_shows_fuse_resctrl(self):
        with open("/proc/mounts") as f:
            lines = [l.split() for l in f if l.split()[1] == os.path.realpath(self.fs.mnt)]
        self.assertEqual(len(lines), 1)
        source, _, fstype, opts = lines[0][:4]
        self.assertEqual(source, "resctrl")
        self.assertEqual(fstype, "fuse.resctrl")
        self.assertIn("default_permissions", opts.split(","))
        self.assertIn("allow_other", opts.split(","))

    def test_status_names_the_platform(self):
        st = self.fs.status()
        # On the real-hardware path the platform is the machine itself.
        self.assertEqual(st["daemon"]["platform"], "real" if rt.MSR else "intel-2s")
        self.assertEqual(st["daemon"]["backend"], "msr" if rt.MSR else "sim")
        self.assertEqual(st["daemon"]["mountpoint"], os.path.realpath(self.fs.mnt))


class MixedOptions(rt.ResctrlfsTestCase):
    """-o mixes resctrl flags (debug) with FUSE options (noatime, max_read)."""
    OPTIONS = ["noatime", "debug", "max_read=8192"]

    def test_fuse_options_reach_the_mount_and_resctrl_flags_the_tree(self):
        with open("/proc/mounts") as f:
            opts = [l.split()[3] for l in f if l.split()[1] == os.path.realpath(self.fs.mnt)]
        self.assertEqual(len(opts), 1)
        self.assertIn("noatime", opts[0].split(","))
        self.assertNotIn("debug", opts[0].split(","))
        self.assertTrue(os.path.exists(self.path("ctrl_hw_id")))  # resctrl's debug files
        self.assertEqual(self.read("ctrl_hw_id"), "0\n")
        self.assertIn("L3:", self.read("schemata"))


class Shutdown(unittest.TestCase):
    def setUp(self):
        self.m = None

    def tearDown(self):
        if self.m:
            self.m.cleanup()

    def start(self, **kw):
        self.m = rt.Mount(**kw)
        return self.m

    def test_sigterm_unmounts_and_resets_the_hardware(self):
        m = self.start(start=False)
        dump = os.path.join(m.dir, "regs.json")
        m.args = ["--dump-registers-on-exit", dump]
        m.start()
        before = reg_map(m.registers())
        self.assertEqual(m.mkdir("g"), 0)
        self.assertEqual(m.write("g/schemata", "L3:0=f\n"), 0, m.lcs())
        self.assertEqual(m.write("g/cpus_list", "1\n"), 0, m.lcs())
        during = reg_map(m.registers())
        changed = {k for k in before if before[k] != during.get(k)}
        self.assertTrue(changed, "writing schemata and cpus changed no register")
        self.assertIn((1, IA32_PQR_ASSOC), changed)

        self.assertEqual(m.stop(signal.SIGTERM), 0, m.daemon_log())
        self.assertFalse(rt.is_mounted(m.mnt))
        self.assertFalse(os.path.exists(m.sock), "control socket left behind")
        with open(dump) as f:
            after = reg_map(json.load(f)["registers"])
        for k in changed:
            self.assertEqual(after[k], before[k],
                             "register 0x%x of CPU %d not reset by unmount" % (k[1], k[0]))

    def test_sigint_unmounts(self):
        m = self.start()
        self.assertEqual(m.stop(signal.SIGINT), 0, m.daemon_log())
        self.assertFalse(rt.is_mounted(m.mnt))

    def test_sighup_unmounts(self):
        # A foreground daemon whose terminal closes must not leave a dead mount.
        m = self.start()
        self.assertEqual(m.stop(signal.SIGHUP), 0, m.daemon_log())
        self.assertFalse(rt.is_mounted(m.mnt))

    def test_external_unmount_ends_the_daemon(self):
        m = self.start()
        subprocess.check_call(["fusermount3", "-u", m.mnt])
        self.assertEqual(m.proc.wait(), 0, m.daemon_log())
        self.assertFalse(os.path.exists(m.sock))

    def test_second_instance_for_the_same_mount_point_is_refused(self):
        m = self.start()
        r = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("another resctrlfsd (pid %d) already serves" % m.pid, r.stderr)
        # The first one is untouched.
        self.assertTrue(m.alive())
        self.assertEqual(m.read("info/last_cmd_status"), "ok\n")

    def test_second_instance_with_another_state_dir_is_refused_too(self):
        m = self.start()
        argv = m.argv()
        other = os.path.join(m.dir, "other-state")
        argv[argv.index("--state-dir") + 1] = other
        argv[argv.index("--control") + 1] = os.path.join(m.dir, "other.sock")
        r = subprocess.run(argv, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("resctrl is already mounted at", r.stderr)
        self.assertTrue(m.alive())

    def test_start_detaches_a_dead_mount_whose_root_was_just_read(self):
        # A daemon killed where nothing else holds its connection (no
        # keeper, no fd store, or systemd released the store) leaves a dead
        # mount, whose root's attributes the kernel still has in its cache
        # (attr_timeout): a stat of the mount point succeeds there. The next
        # start must still see the mount as dead, detach it and mount.
        m = self.start()
        self.assertEqual(m.mkdir("g"), 0)
        os.stat(m.mnt)
        m.proc.kill()
        m.proc.wait()
        with self.assertRaises(OSError) as cm:
            os.listdir(m.mnt)
        self.assertEqual(cm.exception.errno, errno.ENOTCONN)
        os.stat(m.mnt)  # from the attribute cache: no error
        m.start()
        self.assertEqual(m.read("info/last_cmd_status"), "ok\n")
        self.assertTrue(os.path.isdir(m.path("g")))  # the journal's
        with open("/proc/self/mountinfo") as f:
            mounts = [line for line in f if line.split()[4] == os.path.realpath(m.mnt)]
        self.assertEqual(len(mounts), 1, mounts)

    def test_detached_parent_exits_once_mounted(self):
        m = self.start(foreground=False)
        self.assertEqual(m.proc.returncode, 0)
        self.assertTrue(rt.is_mounted(m.mnt))
        self.assertNotEqual(m.pid, m.proc.pid)
        self.assertTrue(m.alive())
        self.assertEqual(m.read("info/last_cmd_status"), "ok\n")
        m.stop()
        self.assertFalse(rt.is_mounted(m.mnt))

    def test_detached_start_failure_is_reported_by_the_parent(self):
        if rt.MSR:
            # The hardware is what it is; a broker that is not there fails instead.
            m = self.start(start=False, foreground=False)
            m.args = ["--broker", os.path.join(m.dir, "no-such-broker.sock")]
        else:
            m = self.start(start=False, foreground=False, platform="no-such-platform")
        r = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("resctrlfsd:", r.stderr)
        self.assertFalse(rt.is_mounted(m.mnt))


class StartErrors(unittest.TestCase):
    """Each of these must exit non-zero with a message and leave nothing mounted."""

    def run_daemon(self, **kw):
        m = rt.Mount(start=False, **kw)
        self.addCleanup(m.cleanup)
        r = subprocess.run(m.argv(), capture_output=True, text=True)
        self.assertFalse(rt.is_mounted(m.mnt), r.stderr)
        self.assertNotEqual(r.returncode, 0)
        return r.stderr

    def test_mount_option_the_platform_cannot_honour_fails_with_einval(self):
        # intel-cmt has monitoring only: no CAT, so no CDP.
        err = self.run_daemon(platform="intel-cmt", options=["cdp"])
        self.assertIn(os.strerror(22), err)  # EINVAL

    def test_resctrl_flag_with_a_value(self):
        err = self.run_daemon(options=["cdp=1"])
        self.assertIn("cdp", err)

    def test_unknown_fuse_option(self):
        err = self.run_daemon(options=["no_such_option"])
        self.assertIn("no_such_option", err)

    def test_msr_backend_refuses_without_rdt(self):
        # (Under the msr label every mount is --backend msr; test_msr_path
        # covers a CPU without RDT through its CPUID.)
        rt.msr_skip("a second --backend msr on top of the label's")
        with open("/proc/cpuinfo") as f:
            cpuinfo = f.read()
        if any(f in cpuinfo.split() for f in ("rdt_a", "cat_l3", "cqm", "mba")):
            self.skipTest("this CPU has RDT")
        err = self.run_daemon(args=["--backend", "msr"])
        self.assertIn("no RDT/PQoS", err)

    def test_missing_mount_point(self):
        m = rt.Mount(start=False)
        self.addCleanup(m.cleanup)
        argv = m.argv()
        argv[-1] = os.path.join(m.dir, "missing")
        r = subprocess.run(argv, capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("No such file or directory", r.stderr)


if __name__ == "__main__":
    rt.main()
