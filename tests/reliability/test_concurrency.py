#!/usr/bin/env python3
"""Concurrency: N parallel shell-level writers (bash: mkdir/rmdir of
CTRL_MON and MON groups, schemata, tasks moves of live threads, cpus_list,
mode), with and without flock on the root, for a fixed number of commands
each. No crash, no deadlock (every writer ends, however long a busy machine
makes it take: a deadlock hangs until ctest's TIMEOUT, the daemon's log on
stderr before; and the daemon still answers), and the final tree is consistent: every thread in
exactly one CTRL_MON group, every CPU in exactly one, CLOSIDs and RMIDs
unique (debug ctrl_hw_id/mon_hw_id), bit_usage consistent with the
schemata, the simulated registers equal to what the tree says.

RELIABILITY_WRITERS (default 6) and RELIABILITY_OPS (default 400)."""

import os
import subprocess
import sys
import time
import unittest

import reltree
from reltree import rt
from test_crash_restore import spawn_sleepers

WRITERS = int(os.environ.get("RELIABILITY_WRITERS", "6"))
OPS = int(os.environ.get("RELIABILITY_OPS", "400"))
WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "concurrent_writer.sh")


class Concurrency(unittest.TestCase):
    def setUp(self):
        self.m = rt.Mount(platform="intel-2s", options=["debug"])
        self.addCleanup(self.m.cleanup)
        self.sleepers, self.tids = spawn_sleepers(16)
        self.addCleanup(self.sleepers.kill)

    def run_writers(self, use_flock):
        procs = []
        start = time.time()
        for i in range(WRITERS):
            # Half of the writers lock when asked, the others never do:
            # locking must not starve or deadlock against non-lockers.
            lock = "1" if use_flock and i % 2 == 0 else "0"
            procs.append(subprocess.Popen(
                ["bash", WRITER, self.m.mnt, str(OPS), str(1000 + i), lock] +
                [str(t) for t in sorted(self.tids)]))
        rt.wait_until(lambda: all(p.poll() is not None for p in procs),
                      "the %d writers to finish (a deadlock?)" % WRITERS, interval=0.1,
                      report=lambda: self.m.daemon_log()[-3000:])
        self.assertEqual([p.returncode for p in procs], [0] * WRITERS)
        elapsed = time.time() - start
        self.assertTrue(self.m.alive(), "the daemon died:\n" + self.m.daemon_log()[-3000:])
        print("%d writers x %d commands (flock=%s): %.1fs" % (WRITERS, OPS, use_flock, elapsed),
              flush=True)

    def check_tree(self):
        snap = reltree.snapshot(self.m, self.tids)
        errs = reltree.check_invariants(snap, list(range(8)), self.tids)
        errs += reltree.check_registers(self.m, snap)
        errs += reltree.check_bit_usage(self.m, snap)
        self.assertEqual(errs, [])
        return snap

    def test_parallel_writers_without_flock(self):
        self.run_writers(use_flock=False)
        self.check_tree()

    def test_parallel_writers_with_flock(self):
        self.run_writers(use_flock=True)
        self.check_tree()


if __name__ == "__main__":
    rt.main()
