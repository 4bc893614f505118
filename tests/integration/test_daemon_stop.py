#!/usr/bin/env python3
"""What stopping the daemon means for its groups, and that the shipped
systemd units agree:

- SIGTERM, SIGINT and SIGHUP stop the *service* (systemctl stop/restart,
  Ctrl-C, a closed terminal): the daemon journals the state, resets the
  hardware as the kernel's unmount does (nothing stays enforced without a
  resctrl tree), unmounts and exits 0; the next start on the same
  --state-dir restores the groups, their schemata and CPUs;
- an unmount by a user (fusermount3 -u, umount) is the kernel's unmount:
  the groups are gone for good, the next start is a fresh tree;
- packaging/resctrlfsd.service(.in) stops with one of those signals and keeps
  the runtime directory (where the sample configuration puts the journal)
  across a stop, not only across a restart."""

import os
import signal
import subprocess

import resctrlfs_test as rt

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class Stop(rt.unittest.TestCase):
    def setUp(self):
        rt.require_fuse()
        self.m = rt.Mount(platform="intel-2s")
        self.addCleanup(self.m.cleanup)

    def make_state(self):
        self.assertEqual(self.m.mkdir("g"), 0)
        self.assertEqual(self.m.write("g/schemata", "L3:0=3\n"), 0)
        self.assertEqual(self.m.write("g/cpus_list", "2\n"), 0)
        self.assertEqual(self.m.mkdir("g/mon_groups/m"), 0)

    def assert_restored(self):
        self.assertEqual(self.m.listdir("g/mon_groups"), ["m"])
        self.assertEqual(self.m.read("g/schemata"), "    MB:0=100;1=100\n    L3:0=3;1=7ff\n")
        self.assertEqual(self.m.read("g/cpus_list"), "2\n")

    def assert_fresh(self):
        self.assertNotIn("g", self.m.listdir())
        self.assertEqual(self.m.read("schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(self.m.read("cpus_list"), "0-7\n")

    def stop_and_start(self, sig):
        self.make_state()
        self.assertEqual(self.m.stop(sig), 0, self.m.daemon_log())
        self.assertFalse(rt.is_mounted(self.m.mnt))
        self.m.start()

    def test_sigterm_keeps_the_groups(self):
        self.stop_and_start(signal.SIGTERM)
        self.assert_restored()

    def test_sigint_keeps_the_groups(self):
        self.stop_and_start(signal.SIGINT)
        self.assert_restored()

    def test_sighup_keeps_the_groups(self):
        self.stop_and_start(signal.SIGHUP)
        self.assert_restored()

    def unmount_and_start(self, argv):
        self.make_state()
        subprocess.check_call(argv + [self.m.mnt])
        self.m._wait_gone("resctrlfsd to exit after the unmount")
        self.m.start()

    def test_fusermount_unmount_clears_the_groups(self):
        self.unmount_and_start(["fusermount3", "-u"])
        self.assert_fresh()

    def test_umount_clears_the_groups(self):
        self.unmount_and_start(["umount"])
        self.assert_fresh()


class Units(rt.unittest.TestCase):
    @staticmethod
    def unit(name):
        keys = {}
        with open(os.path.join(REPO, "packaging", name)) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    k, v = line.split("=", 1)
                    keys.setdefault(k, []).append(v)
        return keys

    def test_service_stop_keeps_the_journal(self):
        u = self.unit("resctrlfsd.service.in")  # the template the build fills in
        self.assertIn(u.get("KillSignal", ["SIGTERM"])[-1], ("SIGTERM", "SIGINT", "SIGHUP"))
        # systemd's default is to remove the runtime directory at stop.
        self.assertEqual(u.get("RuntimeDirectoryPreserve"), ["yes"])
        self.assertEqual(u.get("RuntimeDirectory"), ["resctrlfs"])
        # The sample configuration keeps the journal there.
        with open(os.path.join(REPO, "packaging", "resctrlfsd.conf")) as f:
            conf = [l for l in f if l.startswith("RESCTRLFSD_OPTS=")]
        self.assertTrue(conf)
        self.assertIn("--state-dir /run/resctrlfs", conf[0])


if __name__ == "__main__":
    rt.main()
