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

With --growth it runs instead the machine-scale growth checks on the msr
path: for generated machines of 8, 64 and 512 CPUs (two packages, 4096 RMIDs,
15 CLOSIDs) with 200, 2000 and 4000 MON groups, laid out as the machine-scale
benchmark does (a CTRL_MON group `big` owning the upper half of the CPUs, the
MON groups alternately under the default group and under `big`), it measures
mkdir and rmdir of a MON group, `echo > big/schemata`, a MON group's `cpus`
write taking one CPU from its sibling, and `big`'s `cpus` write giving one CPU
to the default group and taking it back: median time, broker round trips and
MSR operations per command, and their growth from the smallest configuration
to the largest.

Needs root, /dev/fuse and a build directory (RESCTRLFS_BUILD_DIR, default
./build). Usage: bench/msr_path.py [--iters N] [--json FILE]
       bench/msr_path.py --growth [--iters N] [--configs 8/200,512/4000] [--json FILE]
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
GROWTH_CONFIGS = "8/200,8/4000,64/4000,512/200,512/2000,512/4000"
GROWTH_COMMANDS = ("mkdir", "rmdir", "schemata_write", "cpus_write_mon", "cpus_write_ctrl")


def profile(cpus=CPUS):
    per = cpus // 2
    return {
        "vendor": "GenuineIntel", "family": 6, "model": 143, "stepping": 8,
        "cpus": [{"cpu": i, "package": i // per, "l2": i, "l3": i // per} for i in range(cpus)],
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


def run_growth_config(path, cpus, groups, iters):
    """The machine-scale commands on the msr path, one configuration."""
    rt.MSR = True
    m = rt.Mount(platform=path)
    try:
        def check(rc):
            if rc != 0:
                raise RuntimeError("command failed: %s" % m.lcs())

        half = cpus // 2
        check(m.mkdir("big"))
        check(m.write("big/cpus_list", "%d-%d\n" % (half, cpus - 1)))
        for i in range(groups):
            check(m.mkdir(("mon_groups/m%d" if i % 2 == 0 else "big/mon_groups/m%d") % i))
        # The first MON groups of `big` monitor one CPU each.
        check(m.write("big/mon_groups/m1/cpus_list", "%d\n" % half))
        check(m.write("big/mon_groups/m3/cpus_list", "%d\n" % (half + 1)))
        # The background: what the daemon's 1 s workers (MBM overflow pass,
        # limbo check) send to the broker with no command running.
        t0, o0 = counts(m)
        time.sleep(2.0)
        t1, o1 = counts(m)
        idle = {"round_trips_per_s": (t1 - t0) / 2.0, "msr_ops_per_s": (o1 - o0) / 2.0}
        n = min(iters, 4096 - groups - 2 - 4)  # the free RMIDs left
        out = {
            "idle": idle,
            "mkdir": measure(m, n, lambda i: check(m.mkdir("mon_groups/x%d" % i))),
            "rmdir": measure(m, n, lambda i: check(m.rmdir("mon_groups/x%d" % i))),
        }
        sch = ["L3:0=3;1=3\n", "L3:0=7fff;1=7fff\n"]
        out["schemata_write"] = measure(m, iters,
                                        lambda i: check(m.write("big/schemata", sch[i % 2])))
        # m1 and m3 trade CPU half back and forth: one CPU changes owner.
        mon = ["big/mon_groups/m3/cpus_list", "big/mon_groups/m1/cpus_list"]
        out["cpus_write_mon"] = measure(
            m, iters, lambda i: check(m.write(mon[i % 2], "%d\n" % half)))
        ctrl = ["%d-%d\n" % (half, cpus - 2), "%d-%d\n" % (half, cpus - 1)]
        out["cpus_write_ctrl"] = measure(m, iters,
                                         lambda i: check(m.write("big/cpus_list", ctrl[i % 2])))
        return out
    finally:
        m.cleanup()


def growth(args):
    configs = [tuple(int(x) for x in c.split("/")) for c in args.configs.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for cpus, groups in configs:
            path = os.path.join(d, "%dcpu-2s.json" % cpus)
            with open(path, "w") as f:
                json.dump(profile(cpus), f)
            start = time.perf_counter()
            results[(cpus, groups)] = run_growth_config(path, cpus, groups, args.iters)
            print("%d CPUs, %d groups: %.1f s" % (cpus, groups, time.perf_counter() - start),
                  file=sys.stderr)
    small, large = configs[0], configs[-1]
    print("%-16s %s" % ("command", " ".join("%16s" % ("%d/%d" % c) for c in configs)) +
          "   growth (time, trips, ops)")
    report = {"iters": args.iters, "configs": ["%d/%d" % c for c in configs], "commands": {}}
    for cmd in GROWTH_COMMANDS:
        cells = []
        for c in configs:
            r = results[c][cmd]
            cells.append("%7.1f %3g/%-4g" % (r["us"], r["round_trips"], r["msr_ops"]))
        s, r = results[small][cmd], results[large][cmd]
        g_us = r["us"] / s["us"] if s["us"] > 0 else float("nan")
        g_trips = r["round_trips"] / s["round_trips"] if s["round_trips"] else float("nan")
        g_ops = r["msr_ops"] / s["msr_ops"] if s["msr_ops"] else float("nan")
        print("%-16s %s   %.2fx %.2fx %.2fx" % (cmd, " ".join("%16s" % c for c in cells), g_us,
                                                 g_trips, g_ops))
        report["commands"][cmd] = {
            "per_config": {"%d/%d" % c: results[c][cmd] for c in configs},
            "growth": {"us": g_us, "round_trips": g_trips, "msr_ops": g_ops,
                       "target": 1.5, "met": g_us <= 1.5},
        }
    print("(cells: median us, broker round trips / MSR operations per command)")
    print("%-16s %s" % ("idle trips/ops/s", " ".join(
        "%16s" % ("%g/%g" % (results[c]["idle"]["round_trips_per_s"],
                             results[c]["idle"]["msr_ops_per_s"])) for c in configs)))
    report["idle_per_s"] = {"%d/%d" % c: results[c]["idle"] for c in configs}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--growth", action="store_true",
                    help="the machine-scale growth checks on the msr path")
    ap.add_argument("--configs", default=GROWTH_CONFIGS,
                    help="with --growth: CPUS/GROUPS,... (first = smallest, last = largest)")
    args = ap.parse_args()
    if rt.skip_reason():
        print("msr_path: cannot run here: %s" % rt.skip_reason(), file=sys.stderr)
        return 77
    if args.growth:
        return growth(args)
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
