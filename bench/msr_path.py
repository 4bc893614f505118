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
to the largest; and, per item, a held-fd sweep of one mbm_total_bytes fd per
MON group, a tasks move of a helper's threads into a MON group (one write per
id) and that group's listing (read like cat, right after the move and then
served), with the same growth check; the move and the listing right after it
are sampled MOVES (5) times per configuration, each time moved back after.

With --repeat N (with --growth) every configuration is measured N times,
the order reversed on every other round, so that a burst of load elsewhere
on the machine or a warm-up lands on different configurations in different
rounds; each figure is the median over the rounds, the per-round values are
kept in the JSON, and the growth is also given per round (largest against
smallest in the same round). Next to the wall time every command reports the
CPU time the daemon spent during it (`daemon_cpu_us`, its process CPU clock:
utime + stime of all its threads, in ns rather than /proc's 10 ms ticks) and
the CPU time of the hardware side, resctrl-msrd and resctrl-fakehw together
(`hw_cpu_us`): work grows with the CPU time, machine noise with the wall
time alone. The load average (/proc/loadavg) is recorded before and after
the run and around every configuration.

Needs root, /dev/fuse and a build directory (RESCTRLFS_BUILD_DIR, default
./build). Usage: bench/msr_path.py [--iters N] [--json FILE]
       bench/msr_path.py --growth [--iters N] [--repeat N] [--configs 8/200,512/4000]
                                  [--threads N] [--json FILE]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
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
GROWTH_COMMANDS = ("mkdir", "rmdir", "schemata_write", "cpus_write_mon", "cpus_write_ctrl",
                   "sweep_per_counter", "tasks_move_per_id", "tasks_list_per_id",
                   "tasks_list_after_move_per_id")
LIST_BUF = 1 << 20  # one read(2) per MiB, like the machine-scale benchmark
MOVES = 5  # tasks moves per configuration and round (each with its listing)


class Herd:
    """`count` threads of this process, parked until close()."""

    def __init__(self, count):
        self.stop = threading.Event()
        self.tids = []
        lock = threading.Lock()
        threading.stack_size(65536)

        def park():
            with lock:
                self.tids.append(threading.get_native_id())
            self.stop.wait()

        self.threads = [threading.Thread(target=park, daemon=True) for _ in range(count)]
        for t in self.threads:
            t.start()
        while len(self.tids) < count:
            time.sleep(0.01)

    def close(self):
        self.stop.set()
        for t in self.threads:
            t.join()


def cpu_ns(pid):
    """Process `pid`'s CPU time so far (utime + stime of all its threads), ns.

    Its process CPU clock (clock_getcpuclockid(3): the clock id is
    ((~pid) << 3) | CPUCLOCK_SCHED on Linux) counts in ns what /proc/PID/stat's
    utime and stime count in 10 ms ticks, too coarse for a command of a few
    hundred microseconds; /proc/PID/stat is the fallback."""
    if pid is None:
        return 0
    try:
        return time.clock_gettime_ns(((~pid) << 3) | 2)
    except OSError:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 10**9 // os.sysconf("SC_CLK_TCK")


def cpu_pair(m):
    """(the daemon's CPU ns, resctrl-msrd's + resctrl-fakehw's CPU ns) so far."""
    hw = 0
    for holder in (m.broker, m.hw):
        proc = getattr(holder, "proc", None)
        if proc is not None:
            hw += cpu_ns(proc.pid)
    return cpu_ns(m.pid), hw


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def timed(m, op):
    """op() once: wall us, daemon CPU us, hw-side CPU us, round trips, MSR ops."""
    t0, o0 = counts(m)
    d0, h0 = cpu_pair(m)
    start = time.perf_counter()
    op()
    us = (time.perf_counter() - start) * 1e6
    d1, h1 = cpu_pair(m)
    t1, o1 = counts(m)
    return {"us": us, "daemon_cpu_us": (d1 - d0) / 1e3, "hw_cpu_us": (h1 - h0) / 1e3,
            "round_trips": t1 - t0, "msr_ops": o1 - o0}


def per_item(m, n, op):
    """op() once: time, CPU time, round trips and MSR operations divided by n items."""
    return {k: v / n for k, v in timed(m, op).items()}


def close_settled(m, fds):
    """Closes fds and waits until the daemon has served their RELEASEs.

    close(2) on a FUSE file does not wait for its RELEASE: after the sweep's
    fds are closed, thousands of RELEASEs (queued on the command thread for
    these register-reading files) would otherwise be served during the next
    timed command, whose cost would then grow with the number of groups."""
    want = m.stats().get("RELEASE", 0) + len(fds)
    for fd in fds:
        os.close(fd)
    deadline = time.time() + 30
    while m.stats().get("RELEASE", 0) < want and time.time() < deadline:
        time.sleep(0.02)
    # Counted as they arrive: a read of a register-reading file is queued on
    # the command thread behind the last of them.
    fd = os.open(m.path("mon_groups/m0/mon_data/mon_L3_00/mbm_total_bytes"), os.O_RDONLY)
    try:
        os.pread(fd, 64, 0)
    finally:
        os.close(fd)


def median_of(runs):
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def move_ids(path, tids):
    fd = os.open(path, os.O_WRONLY)
    try:
        for tid in tids:
            os.write(fd, b"%d\n" % tid)
    finally:
        os.close(fd)


def read_listing(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        out = []
        while True:
            b = os.read(fd, LIST_BUF)
            if not b:
                return b"".join(out)
            out.append(b)
    finally:
        os.close(fd)


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
    # From `stats`, not `status`: status lists every group, so asking it
    # between commands made the daemon's work around each timed command
    # grow with the groups (4000 paths rendered, parsed and freed).
    stats = m.ctl_ok({"cmd": "stats"})
    if "broker" in stats:
        trips = stats["broker"]["round_trips"]
    else:  # a daemon from before stats had the broker's counts
        trips = m.status()["daemon"]["broker"]["round_trips"]
    c = m.hw.ctl({"cmd": "counts"})
    return trips, c["reads"] + c["writes"]


def measure(m, iters, one):
    """one(i) for i < iters: the median of each figure (timed()) over them."""
    return median_of([timed(m, lambda: one(i)) for i in range(iters)])


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


def growth_layout(m, cpus, groups, check):
    """The tree the growth checks run in: a CTRL_MON group `big` with the
    upper half of the CPUs, `groups` MON groups alternating between the
    default group and `big`, and big's first two MON groups monitoring one
    CPU each. Returns the MON groups' paths."""
    half = cpus // 2
    check(m.mkdir("big"))
    check(m.write("big/cpus_list", "%d-%d\n" % (half, cpus - 1)))
    names = [("mon_groups/m%d" if i % 2 == 0 else "big/mon_groups/m%d") % i
             for i in range(groups)]
    for g in names:
        check(m.mkdir(g))
    check(m.write("big/mon_groups/m1/cpus_list", "%d\n" % half))
    check(m.write("big/mon_groups/m3/cpus_list", "%d\n" % (half + 1)))
    return names


def run_growth_config(path, cpus, groups, iters, herd):
    """The machine-scale commands on the msr path, one configuration."""
    rt.MSR = True
    m = rt.Mount(platform=path)
    try:
        def check(rc):
            if rc != 0:
                raise RuntimeError("command failed: %s" % m.lcs())

        half = cpus // 2
        names = growth_layout(m, cpus, groups, check)
        # The background: what the daemon's 1 s workers (MBM overflow pass,
        # limbo check) send to the broker with no command running.
        t0, o0 = counts(m)
        d0, _ = cpu_pair(m)
        time.sleep(2.0)
        d1, _ = cpu_pair(m)
        t1, o1 = counts(m)
        idle = {"round_trips_per_s": (t1 - t0) / 2.0, "msr_ops_per_s": (o1 - o0) / 2.0,
                "daemon_cpu_us_per_s": (d1 - d0) / 2e3}
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
        # A held-fd sweep: one mbm_total_bytes fd per MON group, pread in
        # turn; at least ~2000 reads, the first sweep untimed.
        fds = [os.open(m.path(g + "/mon_data/mon_L3_00/mbm_total_bytes"), os.O_RDONLY)
               for g in names]
        try:
            def sweep():
                for fd in fds:
                    os.pread(fd, 64, 0)
            sweep()
            out["sweep_per_counter"] = median_of(
                [per_item(m, len(fds), sweep) for _ in range(max(1, 2000 // len(fds)))])
        finally:
            close_settled(m, fds)
        # The helper's threads into a MON group (one write per id), the
        # listing right after (rendered) and then served, and back.
        if herd is not None:
            tids = herd.tids
            tasks = m.path(names[0] + "/tasks")
            # A listing right after a move is one sample per move: the move,
            # that listing and the move back, MOVES times (the median of
            # each), the served listing in the last of them.
            moves, after = [], []
            for i in range(MOVES):
                moves.append(per_item(m, len(tids), lambda: move_ids(tasks, tids)))
                after.append(per_item(m, len(tids), lambda: read_listing(tasks)))
                if i == MOVES - 1:
                    out["tasks_list_per_id"] = median_of(
                        [per_item(m, len(tids), lambda: read_listing(tasks)) for _ in range(5)])
                listed = read_listing(tasks).count(b"\n")
                if listed != len(tids):
                    raise RuntimeError("the listing shows %d of %d ids" % (listed, len(tids)))
                move_ids(m.path("tasks"), tids)
            out["tasks_move_per_id"] = median_of(moves)
            out["tasks_list_after_move_per_id"] = median_of(after)
        return out
    finally:
        m.cleanup()


FIGURES = ("us", "daemon_cpu_us", "hw_cpu_us", "round_trips", "msr_ops")


def ratio(large, small):
    return large / small if small > 0 else float("nan")


def growth(args):
    configs = [tuple(int(x) for x in c.split("/")) for c in args.configs.split(",")]
    names = ["%d/%d" % c for c in configs]
    rounds = {c: [] for c in configs}  # per configuration: one result per round
    loads = []
    herd = Herd(args.threads) if args.threads > 0 else None
    load_before = loadavg()
    with tempfile.TemporaryDirectory() as d:
        for c in configs:
            with open(os.path.join(d, "%dcpu-2s.json" % c[0]), "w") as f:
                json.dump(profile(c[0]), f)
        # Every configuration `repeat` times, the order reversed on every
        # other round, so a burst of load or a warm-up does not land on the
        # same configuration every time.
        for rnd in range(args.repeat):
            order = configs if rnd % 2 == 0 else configs[::-1]
            for cpus, groups in order:
                path = os.path.join(d, "%dcpu-2s.json" % cpus)
                before = loadavg()
                start = time.perf_counter()
                rounds[(cpus, groups)].append(
                    run_growth_config(path, cpus, groups, args.iters, herd))
                secs = time.perf_counter() - start
                loads.append({"round": rnd + 1, "config": "%d/%d" % (cpus, groups),
                              "loadavg_before": before, "loadavg_after": loadavg(),
                              "seconds": secs})
                print("round %d: %d CPUs, %d groups: %.1f s, load %.2f" %
                      (rnd + 1, cpus, groups, secs, loads[-1]["loadavg_after"][0]),
                      file=sys.stderr)
    load_after = loadavg()
    if herd is not None:
        herd.close()
    # The median over the rounds of each figure of each command.
    results = {c: {} for c in configs}
    for c in configs:
        for key in rounds[c][0]:
            results[c][key] = median_of([r[key] for r in rounds[c]])
    small, large = configs[0], configs[-1]
    print("%-16s %s" % ("command", " ".join("%22s" % n for n in names)) +
          "   growth: time, daemon CPU, trips, ops; time per round")
    report = {"iters": args.iters, "repeat": args.repeat, "threads": args.threads,
              "configs": names, "loadavg_before": load_before, "loadavg_after": load_after,
              "loadavg_per_config_run": loads, "commands": {}}
    for cmd in GROWTH_COMMANDS:
        if cmd not in results[small]:
            continue
        cells = []
        for c in configs:
            r = results[c][cmd]
            fmt = "%7.1f %6.1f %3.3g/%-4.3g" if r["us"] >= 10 else "%7.4f %6.4f %3.3g/%-4.3g"
            cells.append(fmt % (r["us"], r["daemon_cpu_us"], r["round_trips"], r["msr_ops"]))
        s, r = results[small][cmd], results[large][cmd]
        g = {k: ratio(r[k], s[k]) for k in FIGURES}
        per_round = [ratio(rounds[large][i][cmd]["us"], rounds[small][i][cmd]["us"])
                     for i in range(args.repeat)]
        per_round_cpu = [ratio(rounds[large][i][cmd]["daemon_cpu_us"],
                               rounds[small][i][cmd]["daemon_cpu_us"])
                         for i in range(args.repeat)]
        print("%-16s %s   %.2fx %.2fx %.2fx %.2fx; %s" % (
            cmd, " ".join("%22s" % c for c in cells), g["us"], g["daemon_cpu_us"],
            g["round_trips"], g["msr_ops"], " ".join("%.2f" % x for x in per_round)))
        report["commands"][cmd] = {
            "per_config": {n: results[c][cmd] for n, c in zip(names, configs)},
            "per_round": {n: [r[cmd] for r in rounds[c]] for n, c in zip(names, configs)},
            "growth": dict(g, target=1.5, met=g["us"] <= 1.5, us_per_round=per_round,
                           daemon_cpu_us_per_round=per_round_cpu),
        }
    print("(cells: median us, daemon CPU us, broker round trips / MSR operations per command"
          " or item; medians over %d round(s))" % args.repeat)
    print("%-16s %s" % ("idle trips/ops/s", " ".join(
        "%22s" % ("%g/%g" % (results[c]["idle"]["round_trips_per_s"],
                             results[c]["idle"]["msr_ops_per_s"])) for c in configs)))
    print("load average before %s, after %s" % (load_before, load_after))
    report["idle_per_s"] = {n: results[c]["idle"] for n, c in zip(names, configs)}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--threads", type=int, default=1000,
                    help="with --growth: helper threads for the tasks move and listing (0: none)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --growth: rounds over the configurations, the order reversed on"
                    " every other round; medians over the rounds reported")
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
