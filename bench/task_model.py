#!/usr/bin/env python3
"""The task model's cost: resctrlfsd's CPU time per second of wall time with
1000 real threads in a group, as a ratio to the same daemon's idle tick
measured in the same run.

Three figures, each the daemon's process CPU clock (utime + stime of all its
threads, in ns) over --seconds of wall time, divided by those seconds:
  idle        --task-model auto, no group, no thread in any group;
  tasks       the same daemon with a helper's 1000 threads in one CTRL_MON
              group (each thread touches 64 KiB and sleeps 20 ms, in a
              loop: every sample sees them run);
  tasks_none  a second daemon, --task-model none, the same 1000 threads in a
              group (what the tick costs without the model).
The verdict is tasks / idle; the task model's own last sample cost (its
status' last_sample_cpu_us) is reported too.

Needs root, /dev/fuse, gcc and a build directory (RESCTRLFS_BUILD_DIR,
default ./build). Usage: bench/task_model.py [--threads N] [--seconds S]
[--json FILE]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
BUILD = os.path.abspath(os.environ.get("RESCTRLFS_BUILD_DIR", os.path.join(HERE, "..", "build")))
for env, rel in (("RESCTRLFSD", "daemon/resctrlfsd"), ("RESCTRLFSCTL", "daemon/resctrlfsctl")):
    os.environ.setdefault(env, os.path.join(BUILD, rel))

import resctrlfs_test as rt  # noqa: E402

HERD = r"""
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void *run(void *arg) {
  (void)arg;
  printf("%ld\n", (long)syscall(SYS_gettid));
  fflush(stdout);
  static __thread char buf[65536];
  struct timespec ts = {0, 20 * 1000 * 1000};
  for (;;) {
    memset(buf, 1, sizeof buf);
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 65536 * 2);
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    if (pthread_create(&t, &a, run, NULL) != 0) return 1;
  }
  pause();
  return 0;
}
"""


def cpu_ns(pid):
    """The process CPU clock of `pid` (clock_getcpuclockid(3)), ns."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


def per_second(m, seconds):
    c0, t0 = cpu_ns(m.pid), time.monotonic()
    time.sleep(seconds)
    c1, t1 = cpu_ns(m.pid), time.monotonic()
    return (c1 - c0) / 1e6 / (t1 - t0)  # ms of CPU per s


class Herd:
    def __init__(self, binary, n):
        self.p = subprocess.Popen([binary, str(n)], stdout=subprocess.PIPE, text=True)
        self.tids = [int(self.p.stdout.readline()) for _ in range(n)]

    def close(self):
        self.p.kill()
        self.p.wait()


def move(m, group, tids):
    fd = os.open(m.path(group + "/tasks"), os.O_WRONLY)
    try:
        for t in tids:
            os.write(fd, b"%d\n" % t)
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--json")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="resctrlfs-bench-tm-")
    src = os.path.join(tmp, "herd.c")
    with open(src, "w") as f:
        f.write(HERD)
    herd_bin = os.path.join(tmp, "herd")
    subprocess.check_call(["gcc", "-O1", "-pthread", "-o", herd_bin, src])

    out = {"threads": args.threads, "seconds": args.seconds}
    m = rt.Mount(platform="intel-2s", args=["--task-model", "auto"])
    herd = None
    try:
        time.sleep(1)
        out["idle_cpu_ms_per_s"] = per_second(m, args.seconds)
        herd = Herd(herd_bin, args.threads)
        assert m.mkdir("g") == 0
        move(m, "g", herd.tids)
        rt.wait_until(lambda: m.status()["daemon"]["task_model"].get("active_threads", 0) >=
                      args.threads * 9 // 10, "the herd sampled and active")
        out["tasks_cpu_ms_per_s"] = per_second(m, args.seconds)
        st = m.status()["daemon"]["task_model"]
        out["task_model_status"] = st
    finally:
        m.cleanup()
    n = rt.Mount(platform="intel-2s", args=["--task-model", "none"])
    try:
        assert n.mkdir("g") == 0
        move(n, "g", herd.tids)
        time.sleep(1)
        out["tasks_none_cpu_ms_per_s"] = per_second(n, args.seconds)
    finally:
        n.cleanup()
        if herd is not None:
            herd.close()
    out["ratio_tasks_to_idle"] = out["tasks_cpu_ms_per_s"] / max(out["idle_cpu_ms_per_s"], 1e-6)
    out["ratio_none_to_idle"] = out["tasks_none_cpu_ms_per_s"] / max(out["idle_cpu_ms_per_s"],
                                                                     1e-6)
    out["loadavg"] = open("/proc/loadavg").read().split()[:3]
    print("daemon CPU, ms per s: idle %.3f, %d threads in a group %.3f (task model), "
          "%.3f (--task-model none)" % (out["idle_cpu_ms_per_s"], args.threads,
                                        out["tasks_cpu_ms_per_s"],
                                        out["tasks_none_cpu_ms_per_s"]))
    print("ratio to the idle tick: %.1fx (task model), %.1fx (none); last sample %s us" %
          (out["ratio_tasks_to_idle"], out["ratio_none_to_idle"],
           out["task_model_status"].get("last_sample_cpu_us")))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
