#!/usr/bin/env python3
"""The work the daemon does per command on the msr path, counted in
instructions rather than timed: the companion of `msr_path.py --growth`
that does not depend on the load of the machine.

resctrlfsd runs under valgrind's callgrind with collection only inside its
FUSE request handlers (FuseBridge::Impl::op_*: every request, the commands
they queue as the command thread runs them, with the journal commit after a
command) and in flushing invalidations, and only while a batch of commands
runs (callgrind_control). Background work (the 1 s tick's journal compaction and
boot-state write, the proc connector's events from other processes, the MBM
overflow pass) is outside those functions and not counted; libfuse's own
request parsing and the kernel's copy are not counted either. The layout is
msr_path.py --growth's (a CTRL_MON group `big` with the upper half of the
CPUs, the MON groups alternately under the default group and under `big`,
MON groups m1 and m3 of `big` with one CPU each); per configuration and
command it reports instructions per command (per id for the listing and the
move, per counter for the sweep) and the growth from the first
configuration to the last. Instruction counts are deterministic up to the
daemon's own choices (a compaction at once when the log passes 1 MiB), so a
growth here is work, not noise.

With --all-threads every function of every daemon thread is counted while
a batch runs, the tick's work included (its journal compaction, the MBM
overflow pass, the boot-state write: whatever of it lands in the batch),
and each command also reports the part inside StateJournal::compact
(inclusive, per item, "<command>.compaction") and inside
Daemon::save_boot_state ("<command>.boot_state"). It adds a paced command,
schemata_write_paced: --paced writes 0.5 s apart (longer than the tick, so
the tick's work between commands is in the count), per command.

Needs root, /dev/fuse, valgrind and a build directory (RESCTRLFS_BUILD_DIR,
default ./build). Usage:
  bench/msr_path_work.py [--configs 8/200,512/4000] [--iters N] [--threads N]
                         [--all-threads] [--paced N] [--json FILE]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import msr_path as mp  # noqa: E402

rt = mp.rt
# With --all-threads: the parts of the tick's work reported apart, inclusive,
# per item ("<command>.<part>").
PARTS = (("compaction", "resctrlfs::daemon::StateJournal::compact("),
         ("boot_state", "resctrlfs::daemon::Daemon::save_boot_state("))
COMMANDS = ("mkdir", "rmdir", "schemata_write", "cpus_write_mon", "cpus_write_ctrl",
            "sweep_per_counter", "tasks_move_per_id", "tasks_list_after_move_per_id",
            "tasks_list_per_id")


def handlers(daemon):
    """The functions to count in, by their names in the daemon's symbols:
    every FUSE request handler (FuseBridge::Impl::op_*) as the FUSE thread
    calls it, every command it queues as the command thread runs it (the
    std::function invoker of the handler's lambda, which the compiler may
    have inlined the lambda into), and Daemon::flush_invalidations. Exact
    names, so that no counted function runs inside another (a toggle would
    turn collection off inside it)."""
    out = subprocess.run(["nm", "-C", daemon], check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 3 or parts[1] not in "tTwW":
            continue
        name = parts[2]
        if name.startswith("resctrlfs::daemon::FuseBridge::Impl::op_") and "lambda" not in name:
            names.add(name)
        elif (name.startswith("std::_Function_handler<void (), resctrlfs::daemon::FuseBridge::"
                              "Impl::op_") and name.endswith("::_M_invoke(std::_Any_data const&)")):
            names.add(name)
        elif name == "resctrlfs::daemon::Daemon::flush_invalidations()":
            names.add(name)
    if not any("op_write(" in n for n in names):
        raise RuntimeError("no FuseBridge::Impl::op_write in %s's symbols" % daemon)
    return sorted(names)


def wrapper(directory, daemon, all_threads=False):
    """A resctrlfsd that is the daemon under callgrind, collecting nothing
    until told and then only inside the request handlers (everywhere with
    all_threads)."""
    path = os.path.join(directory, "resctrlfsd-callgrind")
    toggles = "" if all_threads else " ".join("'--toggle-collect=%s'" % n
                                              for n in handlers(daemon))
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind --instr-atstart=no %s "
                "--callgrind-out-file=\"$RESCTRLFS_CALLGRIND_OUT\" %s \"$@\"\n" % (
                    toggles, daemon))
    os.chmod(path, 0o755)
    return path


def counted(pid, out, label, n, op):
    """Instructions per item of op(), run with collection on; n items."""
    def ctl(*a):
        subprocess.run(["callgrind_control"] + list(a) + [str(pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ctl("-z")
    ctl("-i", "on")
    op()
    ctl("-i", "off")
    ctl("--dump=" + label)
    # callgrind numbers its dumps: the newest file is this one.
    dumps = [f for f in os.listdir(os.path.dirname(out))
             if f.startswith(os.path.basename(out) + ".")]
    newest = os.path.join(os.path.dirname(out),
                          max(dumps, key=lambda f: int(f.rsplit(".", 1)[1])))
    with open(newest) as f:
        for line in f:
            if line.startswith("totals:"):
                return int(line.split()[1]) / n, newest
    raise RuntimeError("no totals in " + newest)


def inclusive(dump, function, n):
    """Instructions per item inside `function` (a prefix of its demangled
    name, with its callees) in a callgrind dump; 0 when it did not run."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
                          check=True, capture_output=True, text=True).stdout
    pattern = re.compile(r"\s*([\d,]+)\s.*[:\s]" + re.escape(function))
    for line in text.splitlines():
        m = pattern.match(line)
        if m:
            return int(m.group(1).replace(",", "")) / n
    return 0.0


def run_config(path, cpus, groups, iters, herd, out, all_threads=False, paced=0):
    rt.MSR = True
    os.environ["RESCTRLFS_CALLGRIND_OUT"] = out
    m = rt.Mount(platform=path)  # waits for the mount without a deadline (callgrind is slow)
    try:
        def check(rc):
            if rc != 0:
                raise RuntimeError("command failed: %s" % m.lcs())

        half = cpus // 2
        names = mp.growth_layout(m, cpus, groups, check)
        pid = m.pid
        res = {}

        def batch(label, n, op):
            res[label], dump = counted(pid, out, label, n, op)
            if all_threads:
                for part, function in PARTS:
                    res[label + "." + part] = inclusive(dump, function, n)

        batch("mkdir", iters, lambda: [check(m.mkdir("mon_groups/x%d" % i))
                                       for i in range(iters)])
        batch("rmdir", iters, lambda: [check(m.rmdir("mon_groups/x%d" % i))
                                       for i in range(iters)])
        sch = ["L3:0=3;1=3\n", "L3:0=7fff;1=7fff\n"]
        batch("schemata_write", iters,
              lambda: [check(m.write("big/schemata", sch[i % 2])) for i in range(iters)])
        if paced > 0:
            def paced_writes():
                for i in range(paced):
                    check(m.write("big/schemata", sch[i % 2]))
                    time.sleep(0.5)
            batch("schemata_write_paced", paced, paced_writes)
        mon = ["big/mon_groups/m3/cpus_list", "big/mon_groups/m1/cpus_list"]
        batch("cpus_write_mon", iters,
              lambda: [check(m.write(mon[i % 2], "%d\n" % half)) for i in range(iters)])
        ctrl = ["%d-%d\n" % (half, cpus - 2), "%d-%d\n" % (half, cpus - 1)]
        batch("cpus_write_ctrl", iters,
              lambda: [check(m.write("big/cpus_list", ctrl[i % 2])) for i in range(iters)])
        fds = [os.open(m.path(g + "/mon_data/mon_L3_00/mbm_total_bytes"), os.O_RDONLY)
               for g in names]
        try:
            def sweep():
                for fd in fds:
                    os.pread(fd, 64, 0)
            sweep()
            batch("sweep_per_counter", len(fds), sweep)
        finally:
            mp.close_settled(m, fds)
        if herd is not None:
            tids = herd.tids
            tasks = m.path(names[0] + "/tasks")
            batch("tasks_move_per_id", len(tids), lambda: mp.move_ids(tasks, tids))
            batch("tasks_list_after_move_per_id", len(tids), lambda: mp.read_listing(tasks))
            batch("tasks_list_per_id", len(tids) * iters,
                  lambda: [mp.read_listing(tasks) for _ in range(iters)])
            mp.move_ids(m.path("tasks"), tids)
        return res
    finally:
        m.cleanup()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", default=mp.GROWTH_CONFIGS,
                    help="CPUS/GROUPS,... (first = smallest, last = largest)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1000)
    ap.add_argument("--all-threads", action="store_true",
                    help="count every daemon thread while a batch runs, the tick included")
    ap.add_argument("--paced", type=int, default=0,
                    help="also N schemata writes 0.5 s apart (with --all-threads)")
    ap.add_argument("--json")
    args = ap.parse_args()
    if rt.skip_reason():
        print("msr_path_work: cannot run here: %s" % rt.skip_reason(), file=sys.stderr)
        return 77
    if not shutil.which("valgrind") or not shutil.which("callgrind_control"):
        print("msr_path_work: cannot run here: valgrind (callgrind) is not installed",
              file=sys.stderr)
        return 77
    configs = [tuple(int(x) for x in c.split("/")) for c in args.configs.split(",")]
    herd = mp.Herd(args.threads) if args.threads > 0 else None
    results = {}
    with tempfile.TemporaryDirectory() as d:
        daemon = os.environ["RESCTRLFSD"]
        os.environ["RESCTRLFSD"] = wrapper(d, daemon, args.all_threads)
        try:
            for cpus, groups in configs:
                path = os.path.join(d, "%dcpu-2s.json" % cpus)
                with open(path, "w") as f:
                    json.dump(mp.profile(cpus), f)
                start = time.perf_counter()
                out = os.path.join(d, "callgrind-%d-%d.out" % (cpus, groups))
                results[(cpus, groups)] = run_config(path, cpus, groups, args.iters, herd, out,
                                                     args.all_threads, args.paced)
                print("%d CPUs, %d groups: %.1f s" % (cpus, groups,
                                                      time.perf_counter() - start),
                      file=sys.stderr)
        finally:
            os.environ["RESCTRLFSD"] = daemon
    if herd is not None:
        herd.close()
    names = ["%d/%d" % c for c in configs]
    small, large = configs[0], configs[-1]
    print("%-18s %s   growth" % ("instructions", " ".join("%10s" % n for n in names)))
    report = {"iters": args.iters, "threads": args.threads, "configs": names,
              "counted": ("instructions in every daemon thread while the batch ran, "
                          "per command (per id, per counter); <command>.compaction and "
                          "<command>.boot_state: the parts inside StateJournal::compact and "
                          "Daemon::save_boot_state" if args.all_threads else
                          "instructions in FuseBridge::Impl::op_* and "
                          "Daemon::flush_invalidations per command (per id, per counter)"),
              "commands": {}}
    cmds = list(COMMANDS) + ["schemata_write_paced"]
    if args.all_threads:
        cmds = [c + s for c in cmds for s in [""] + ["." + p for p, _ in PARTS]]
    for cmd in cmds:
        if cmd not in results[small]:
            continue
        row = [results[c][cmd] for c in configs]
        g = results[large][cmd] / results[small][cmd] if results[small][cmd] else float("nan")
        print("%-18s %s   %.2fx" % (cmd, " ".join("%10.0f" % v for v in row), g))
        report["commands"][cmd] = {"per_config": dict(zip(names, row)), "growth": g}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
