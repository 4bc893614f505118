#!/usr/bin/env python3
"""The task model (ours): real processes in groups move their groups'
llc_occupancy and mbm_total_bytes on the simulated machine, with no
`resctrlfsctl workload`.

A tiny C program built by the test touches N MiB (toucher.c below) and is
driven over its stdin: "r" re-reads its buffer in a busy loop, "s" stops
(it sleeps in read(2)), "q" quits; each command is acknowledged on stdout.
This host has no PMU (a VM), so bandwidth comes from the model (CPU time,
page faults and the share of the footprint that misses the cache); the
PMU path is unit-tested against recorded counts (daemon.task_model).

Nothing here depends on time: every step waits for a count or for the
daemon's task-model status (its samples, its active threads)."""

import os
import shutil
import subprocess
import tempfile

import exporter_harness as eh
import resctrlfs_test as rt

TOUCHER = r"""
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
  size_t bytes = (size_t)atol(argv[1]) << 20;
  volatile unsigned char *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return 1;
  for (size_t i = 0; i < bytes; i += 4096) buf[i] = 1;
  printf("ready\n");
  fflush(stdout);
  char cmd = 's';
  unsigned long sum = 0;
  for (;;) {
    struct pollfd p = {0, POLLIN, 0};
    if (poll(&p, 1, cmd == 'r' ? 0 : -1) > 0) {
      char c;
      if (read(0, &c, 1) != 1 || c == 'q') return 0;
      if (c == '\n') continue;
      cmd = c;
      printf("%c\n", cmd);
      fflush(stdout);
    }
    if (cmd == 'r')
      for (size_t i = 0; i < bytes; i += 64) sum += buf[i];
  }
  return (int)(sum & 1);
}
"""

MIB = 1 << 20
# The footprint is the process's resident anonymous memory: the buffer
# plus what libc and the stack hold (a few hundred KiB), quantised to the
# 64 KiB counter unit; 10 % is ample for that and more than the model's
# fill needs once settled.
TOLERANCE = 0.10


class Toucher:
    def __init__(self, binary, mib):
        self.p = subprocess.Popen([binary, str(mib)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline() == "ready\n"
        self.pid = self.p.pid

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        assert self.p.stdout.readline() == c + "\n"

    def stop(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.p.stdin.close()
        self.p.stdout.close()


class Base(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    @classmethod
    def setUpClass(cls):
        if shutil.which("gcc") is None:
            raise rt.unittest.SkipTest("gcc is needed to build the toucher")
        cls.tmp = tempfile.mkdtemp(prefix="resctrlfs-toucher-")
        src = os.path.join(cls.tmp, "toucher.c")
        with open(src, "w") as f:
            f.write(TOUCHER)
        cls.toucher = os.path.join(cls.tmp, "toucher")
        subprocess.check_call(["gcc", "-O1", "-o", cls.toucher, src])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        rt.msr_skip("the simulated machine's task model (real hardware counts real tasks)")
        super().setUp()

    def spawn(self, mib):
        t = Toucher(self.toucher, mib)
        self.addCleanup(t.stop)
        return t

    def model(self):
        return self.status()["daemon"]["task_model"]

    def total(self, group, event):
        base = self.path(group + "/mon_data") if group else self.path("mon_data")
        total = 0
        for d in sorted(os.listdir(base)):
            with open(os.path.join(base, d, event)) as f:
                total += int(f.read())
        return total

    def occupancy(self, group):
        return self.total(group, "llc_occupancy")

    def mbm(self, group):
        return self.total(group, "mbm_total_bytes")

    def samples_pass(self, n):
        """Waits until n more samples of the task model have been taken."""
        start = self.model()["samples"]
        rt.wait_until(lambda: self.model()["samples"] >= start + n,
                      "%d task-model samples" % n)

    def near(self, value, expected):
        return abs(value - expected) <= TOLERANCE * expected


class TaskModel(Base):
    ARGS = ["--task-model", "auto"]

    def test_status_shows_the_task_model(self):
        m = self.model()
        self.assertEqual(m["mode"], "auto")
        self.assertIn("bandwidth_source", m)
        self.assertEqual(m["threads"], 0)

    def test_occupancy_follows_touched_memory_stays_and_is_evicted(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        a = self.spawn(8)
        self.assertEqual(self.write("g/tasks", "%d\n" % a.pid), 0, self.lcs())
        a.cmd("r")
        rt.wait_until(lambda: self.near(self.occupancy("g"), 8 * MIB),
                      "g's llc_occupancy near 8 MiB")
        # It stops: once a sample saw it idle, two more samples leave its
        # lines where they are (nothing else fills the cache).
        a.cmd("s")
        rt.wait_until(lambda: self.model()["active_threads"] == 0, "g's thread seen idle")
        self.samples_pass(2)
        self.assertTrue(self.near(self.occupancy("g"), 8 * MIB), self.occupancy("g"))
        # Another group's process needs more than the 16 MiB L3: its fills
        # replace g's lines.
        b = self.spawn(32)
        self.assertEqual(self.write("h/tasks", "%d\n" % b.pid), 0, self.lcs())
        b.cmd("r")
        rt.wait_until(lambda: self.occupancy("g") < MIB, "g's lines replaced by h's")
        self.assertGreater(self.occupancy("h"), 8 * MIB)

    def test_the_exporter_shows_a_real_process(self):
        # What cAdvisor-like tools scrape: the exporter's occupancy of g, a
        # group with one real process touching 8 MiB, and its MBM total
        # growing while the process streams.
        self.assertEqual(self.mkdir("g"), 0)
        exp = eh.Exporter(self.fs.mnt)
        self.addCleanup(exp.stop)
        a = self.spawn(8)
        self.assertEqual(self.write("g/tasks", "%d\n" % a.pid), 0, self.lcs())
        a.cmd("r")

        def scraped(name, **labels):
            return sum(v for _, _, v in eh.select(eh.parse(exp.metrics()), name, group="g",
                                                  mon_group="", **labels))
        rt.wait_until(lambda: self.near(scraped("node_resctrl_llc_occupancy_bytes"), 8 * MIB),
                      "the exporter's occupancy of g near 8 MiB")
        a.cmd("s")
        b = self.spawn(64)
        self.assertEqual(self.write("g/tasks", "%d\n" % b.pid), 0, self.lcs())
        start = scraped("node_resctrl_mbm_bytes_total", scope="total")
        b.cmd("r")
        rt.wait_until(lambda: scraped("node_resctrl_mbm_bytes_total", scope="total") > start,
                      "the exporter's MBM total of g growing")

    def test_bandwidth_grows_while_streaming_and_stops_with_it(self):
        self.assertEqual(self.mkdir("g"), 0)
        a = self.spawn(64)  # four times the L3: most of each pass misses
        self.assertEqual(self.write("g/tasks", "%d\n" % a.pid), 0, self.lcs())
        a.cmd("r")
        first = rt.wait_until(lambda: self.mbm("g") or None, "g's mbm_total_bytes moving")
        rt.wait_until(lambda: self.mbm("g") > first, "g's mbm_total_bytes growing")
        a.cmd("s")
        rt.wait_until(lambda: self.model()["active_threads"] == 0, "g's thread seen idle")
        stopped = self.mbm("g")
        self.samples_pass(2)
        self.assertEqual(self.mbm("g"), stopped)

    def test_declared_workloads_keep_working_alongside(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("w"), 0)
        a = self.spawn(4)
        self.assertEqual(self.write("g/tasks", "%d\n" % a.pid), 0, self.lcs())
        self.assertEqual(self.write("w/cpus_list", "5\n"), 0, self.lcs())
        self.workload(cpu=5, footprint_bytes=2 * MIB)
        a.cmd("r")
        rt.wait_until(lambda: self.near(self.occupancy("g"), 4 * MIB), "g near 4 MiB")
        rt.wait_until(lambda: self.near(self.occupancy("w"), 2 * MIB), "w near 2 MiB")


class NoTaskModel(Base):
    ARGS = ["--task-model", "none"]

    def test_status_shows_the_task_model(self):
        self.assertEqual(self.model(), {"mode": "none"})

    def test_real_processes_move_nothing(self):
        self.assertEqual(self.mkdir("g"), 0)
        a = self.spawn(8)
        self.assertEqual(self.write("g/tasks", "%d\n" % a.pid), 0, self.lcs())
        a.cmd("r")
        # Wait until the process has run a while and two of the daemon's
        # 1 s ticks have passed (its clock) since it started.
        start = self.status()["daemon"]["clock"]["now_ms"]

        def cpu_ticks():
            with open("/proc/%d/stat" % a.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])
        rt.wait_until(lambda: cpu_ticks() >= 20 and
                      self.status()["daemon"]["clock"]["now_ms"] >= start + 2000,
                      "the toucher running across two daemon ticks")
        self.assertEqual(self.occupancy("g"), 0)
        self.assertEqual(self.mbm("g"), 0)


if __name__ == "__main__":
    rt.main()
