#!/usr/bin/env python3
"""The cost of the real-hardware path against the simulated backend, in one
run: resctrlfsd --backend msr through resctrl-msrd over resctrl-fakehw's
emulated /dev/cpu/N/msr, and resctrlfsd --backend sim, on the same generated
256-CPU two-socket Intel machine (one L3, MB and L3 monitoring per socket).

For each command (`echo > schemata` changing both domains, a `cpus_list`
write moving 128 CPUs, mkdir of a CTRL_MON group) it reports the median time
per command on each backend and their ratio, and on the msr path the median
broker round trips (the daemon's status) and MSR operations (reads + writes
the emulated msr driver served) per command. Medians, because the daemon's
1 s monitoring worker reads counters in the background.

Needs root, /dev/fuse and a build directory (RESCTRLFS_BUILD_DIR, default
./build). Usage: bench/msr_path.py [--iters N] [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
BUILD = os.path.abspath(os.environ.get("RESCTRLFS_BUILD_DIR", os.path.join(HERE, "..", "build")))
for env, rel in (("RESCTRLFSD", "daemon/resctrlfsd"), ("RESCTRLFSCTL", "daemon/resctrlfsctl"),
                 ("RESCTRL_MSRD", "hw/resctrl-msrd"),
                 ("RESCTRLFS_FAKEHW", "tests/hw/resctrl-fakehw")):
    os.environ.setdefault(env, os.path.join(BUILD, rel))

import resctrlfs_test as rt  # noqa: E402

CPUS = 256


def profile():
    per = CPUS // 2
    return {
        "vendor": "GenuineIntel", "family": 6, "model": 143, "stepping": 8,
        "cpus": [{"cpu": i, "package": i // per, "l2": i, "l3": i // per} for i in range(CPUS)],
        "l3_size_bytes": 1 << 30, "l2_size_bytes": 2097152,
        "l3_cat": {"cbm_len": 15, "num_closid": 15, "shareable_bits": 0, "sparse": False,
                   "cdp": True},
        "mba": {"num_closid": 15, "max_delay": 90, "linear": True, "per_thread": False},
        "l3_mon": {"num_rmids": 4096, "scale": 65536, "counter_width": 24,
                   "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
    }


def counts(m):
    """(broker round trips, MSR operations) so far; zeros on the sim backend."""
    if not rt.MSR:
        return 0, 0
    trips = m.status()["daemon"]["broker"]["round_trips"]
    c = m.hw.ctl({"cmd": "counts"})
    return trips, c["reads"] + c["writes"]


def measure(m, iters, one):
    times, trips, ops = [], [], []
    for i in range(iters):
        t0, o0 = counts(m)
        start = time.perf_counter()
        one(i)
        times.append(time.perf_counter() - start)
        t1, o1 = counts(m)
        trips.append(t1 - t0)
        ops.append(o1 - o0)
    return {"us": statistics.median(times) * 1e6, "round_trips": statistics.median(trips),
            "msr_ops": statistics.median(ops)}


def run(backend, path, iters):
    rt.MSR = backend == "msr"
    m = rt.Mount(platform=path)
    try:
        def check(rc):
            if rc != 0:
                raise RuntimeError("command failed: %s" % m.lcs())

        check(m.mkdir("g"))
        sch = ["L3:0=3;1=3\n", "L3:0=7fff;1=7fff\n"]
        cpus = ["%d-%d\n" % (CPUS // 2, CPUS - 1), "0-%d\n" % (CPUS // 2 - 1)]
        out = {
            "schemata": measure(m, iters, lambda i: check(m.write("g/schemata", sch[i % 2]))),
            "cpus": measure(m, iters, lambda i: check(m.write("g/cpus_list", cpus[i % 2]))),
        }
        n = min(iters, 12)  # 15 CLOSIDs
        out["mkdir"] = measure(m, n, lambda i: check(m.mkdir("c%d" % i)))
        return out
    finally:
        m.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json")
    args = ap.parse_args()
    if rt.skip_reason():
        print("msr_path: cannot run here: %s" % rt.skip_reason(), file=sys.stderr)
        return 77
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "256cpu-2s.json")
        with open(path, "w") as f:
            json.dump(profile(), f)
        res = {b: run(b, path, args.iters) for b in ("sim", "msr")}
    print("%-9s %10s %10s %7s %12s %9s" % ("command", "sim us", "msr us", "ratio",
                                           "round trips", "MSR ops"))
    report = {"cpus": CPUS, "iters": args.iters, "commands": {}}
    for cmd in ("schemata", "cpus", "mkdir"):
        s, r = res["sim"][cmd], res["msr"][cmd]
        ratio = r["us"] / s["us"] if s["us"] > 0 else float("nan")
        print("%-9s %10.1f %10.1f %7.2f %12g %9g" % (cmd, s["us"], r["us"], ratio,
                                                    r["round_trips"], r["msr_ops"]))
        report["commands"][cmd] = {"sim_us": s["us"], "msr_us": r["us"], "ratio": ratio,
                                   "round_trips": r["round_trips"], "msr_ops": r["msr_ops"]}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
