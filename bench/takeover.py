#!/usr/bin/env python3
"""The pause a reader sees when resctrlfsd is replaced under the keeper
(`resctrlfsd --keeper`; docs/reliability.md): a reader thread preads one
counter file (mon_data/mon_L3_00/llc_occupancy, held open) in a loop while
the daemon is killed with SIGKILL (or, with --upgrade, the keeper is sent
SIGHUP) --takeovers times; each takeover's pause is the longest read that
was in flight between the signal and the new daemon's first answer. The
figures are the pauses' p50 and p99 and their ratio to a normal read's p50
measured in the same run (the same fd, no takeover).

Needs root and /dev/fuse, a kernel with FUSE_NOTIFY_RESEND (Linux 6.9) and
a build directory (RESCTRLFS_BUILD_DIR, default ./build).
Usage: bench/takeover.py [--takeovers N] [--upgrade] [--json FILE]
"""

import argparse
import json
import os
import signal
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
BUILD = os.path.abspath(os.environ.get("RESCTRLFS_BUILD_DIR", os.path.join(HERE, "..", "build")))
for env, rel in (("RESCTRLFSD", "daemon/resctrlfsd"), ("RESCTRLFSCTL", "daemon/resctrlfsctl")):
    os.environ.setdefault(env, os.path.join(BUILD, rel))

import resctrlfs_test as rt  # noqa: E402


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def child(keeper):
    with open("/proc/%d/task/%d/children" % (keeper, keeper)) as f:
        pids = f.read().split()
    return int(pids[0]) if pids else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--takeovers", type=int, default=20)
    ap.add_argument("--baseline-reads", type=int, default=5000)
    ap.add_argument("--upgrade", action="store_true",
                    help="SIGHUP to the keeper (an upgrade) instead of SIGKILL to the daemon")
    ap.add_argument("--json")
    args = ap.parse_args()

    m = rt.Mount(platform="intel-2s", args=["--keeper", "--task-model", "none"])
    out = {"takeovers": args.takeovers, "how": "upgrade" if args.upgrade else "sigkill"}
    try:
        fd = os.open(m.path("mon_data/mon_L3_00/llc_occupancy"), os.O_RDONLY)
        normal = []
        for _ in range(args.baseline_reads):
            t0 = time.perf_counter_ns()
            os.pread(fd, 4096, 0)
            normal.append(time.perf_counter_ns() - t0)
        reads = []  # (start, duration) in ns
        stop = threading.Event()

        def reader():
            while not stop.is_set():
                t0 = time.perf_counter_ns()
                os.pread(fd, 4096, 0)
                reads.append((t0, time.perf_counter_ns() - t0))

        t = threading.Thread(target=reader)
        t.start()
        pauses = []
        try:
            for _ in range(args.takeovers):
                n0 = len(reads)
                rt.wait_until(lambda: len(reads) > n0 + 100, "reads before a takeover")
                old = child(m.pid)
                t_sig = time.perf_counter_ns()
                if args.upgrade:
                    os.kill(m.pid, signal.SIGHUP)
                else:
                    os.kill(old, signal.SIGKILL)
                rt.wait_until(lambda: child(m.pid) not in (None, old), "a new daemon")
                n1 = len(reads)
                rt.wait_until(lambda: len(reads) > n1 + 100, "reads after a takeover")
                pauses.append(max(d for s, d in reads if s + d >= t_sig))
        finally:
            stop.set()
            t.join()
        os.close(fd)
    finally:
        m.cleanup()
    out["normal_read_p50_us"] = pct(normal, 50) / 1000
    out["normal_read_p99_us"] = pct(normal, 99) / 1000
    out["pause_p50_ms"] = pct(pauses, 50) / 1e6
    out["pause_p99_ms"] = pct(pauses, 99) / 1e6
    out["pause_p50_ratio"] = pct(pauses, 50) / pct(normal, 50)
    out["pause_p99_ratio"] = pct(pauses, 99) / pct(normal, 50)
    print("normal read: p50 %.1f us, p99 %.1f us" % (out["normal_read_p50_us"],
                                                    out["normal_read_p99_us"]))
    print("takeover pause (%s, %d): p50 %.1f ms (%.0fx a read), p99 %.1f ms (%.0fx)" %
          (out["how"], args.takeovers, out["pause_p50_ms"], out["pause_p50_ratio"],
           out["pause_p99_ms"], out["pause_p99_ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
