#!/usr/bin/env python3
"""FUSE requests per operation (the request counts bench/README.md gives), counted
by the daemon itself: they prove the libfuse settings (direct_io, long
timeouts, cached listings, no flush, atomic_o_trunc) are in effect.

    cat FILE          OPEN + GETATTR + 2 READ (+ RELEASE)
    stat (cached)     0
    readdir (warm)    0
    echo > FILE       OPEN + WRITE (+ RELEASE); never FLUSH or SETATTR
"""

import os
import subprocess

import resctrlfs_test as rt


class RequestCounts(rt.ResctrlfsTestCase):
    def setUp(self):
        super().setUp()
        self.counter = rt.RequestCounter(self.stats, self.reset_stats)

    def counts_of(self, action):
        """The non-zero request counts `action` causes, once the RELEASEs
        of every file it closed have arrived (they are asynchronous)."""
        return self.counter.measure(action)

    def warm(self, rel):
        """Dentries and attributes cached; the last access was a read (which
        leaves the atime stale, as in a loop of cats)."""
        os.stat(self.path(rel))
        self.read(rel)

    def test_cat(self):
        for rel in ("schemata", "mon_data/mon_L3_00/llc_occupancy", "info/L3/cbm_mask"):
            self.warm(rel)
            got = self.counts_of(lambda: subprocess.check_call(
                ["cat", self.path(rel)], stdout=subprocess.DEVNULL))
            self.assertEqual(got, {"OPEN": 1, "GETATTR": 1, "READ": 2, "RELEASE": 1}, rel)

    def test_cached_stat_costs_nothing(self):
        deep = "mon_data/mon_L3_01/mbm_total_bytes"
        self.warm(deep)
        os.stat(self.path(deep))  # refreshes the atime the read invalidated
        self.assertEqual(self.counts_of(lambda: [os.stat(self.path(deep)) for _ in range(5)]), {})
        os.stat(self.path("info/L3"))
        self.assertEqual(self.counts_of(lambda: os.stat(self.path("info/L3"))), {})

    def test_warm_readdir_costs_nothing(self):
        for rel in ("", "info", "mon_data/mon_L3_00"):
            os.listdir(self.path(rel))
            os.listdir(self.path(rel))  # refreshes the atime-invalidated attributes
            self.assertEqual(self.counts_of(lambda: os.listdir(self.path(rel))), {}, rel)

    def test_echo(self):
        self.warm("schemata")
        # The first truncating open of a mount asks for security.capability
        # once (GETXATTR); the ENOSYS answer stops the kernel from asking again.
        self.assertEqual(self.write("schemata", "L3:0=7ff\n"), 0)

        def echo():
            fd = os.open(self.path("schemata"), os.O_WRONLY | os.O_TRUNC | os.O_CREAT)
            os.write(fd, b"L3:0=7ff\n")
            os.close(fd)
        got = self.counts_of(echo)
        self.assertEqual(got, {"OPEN": 1, "WRITE": 1, "RELEASE": 1})
        got = self.counts_of(lambda: subprocess.check_call(
            ["sh", "-c", "echo 'L3:0=7ff' > '%s'" % self.path("schemata")]))
        self.assertEqual(got, {"OPEN": 1, "WRITE": 1, "RELEASE": 1})

    def test_pread_on_a_held_fd_is_one_read(self):
        fd = os.open(self.path("schemata"), os.O_RDONLY)
        self.counter.held += 1
        try:
            os.pread(fd, 4096, 0)
            self.assertEqual(self.counts_of(lambda: os.pread(fd, 4096, 0)), {"READ": 1})
        finally:
            os.close(fd)
            self.counter.held -= 1

    def test_mkdir_rmdir(self):
        os.listdir(self.path())
        got = self.counts_of(lambda: (os.mkdir(self.path("g")), os.rmdir(self.path("g"))))
        self.assertEqual(got.get("MKDIR"), 1)
        self.assertEqual(got.get("RMDIR"), 1)
        self.assertNotIn("FLUSH", got)
        self.assertNotIn("SETATTR", got)

    def test_stats_reset_and_unknown_names_are_zero(self):
        self.reset_stats()
        s = self.stats()
        for name in ("LOOKUP", "GETATTR", "OPEN", "READ", "WRITE", "RELEASE", "FLUSH", "SETATTR",
                     "OPENDIR", "READDIR", "MKDIR", "RMDIR", "FORGET"):
            self.assertEqual(s[name], 0, name)


if __name__ == "__main__":
    rt.main()
