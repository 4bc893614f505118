#!/usr/bin/env python3
"""Crash test of the state journal: a client streams mixed commands (mkdir
and rmdir of CTRL_MON and MON groups, schemata, mode, cpus_list, tasks moves
of live sleeper threads, MON group renames, max_threshold_occupancy) at a
daemon started with --state-dir, while a killer thread sends SIGKILL at
random moments (each after at least ACKED_PER_KILL acknowledged commands,
so that a busy machine cannot make a round too short). After each kill the
dead FUSE mount is detached, the daemon restarted on the same state
directory, and the restored tree compared with the client's log of
acknowledged commands:

  - every acknowledged command is there (nothing acknowledged is lost);
  - the one command in flight at the kill is either wholly applied or not
    at all;
  - CLOSIDs and RMIDs (debug ctrl_hw_id/mon_hw_id) are those acknowledged;
  - the invariants hold (each CPU and thread in one group, unique ids) and
    the machine holds exactly the registers the tree describes: the
    simulated one restarts with the daemon; under the msr label
    resctrl-fakehw's outlives it as hardware does, still holding what the
    killed daemon wrote, so the restarted daemon must write it again;
  - threads that died while the daemon was down are dropped.

RELIABILITY_KILLS (default 50) and RELIABILITY_SEED tune the run.
"""

import copy
import errno
import os
import random
import signal
import subprocess
import sys
import threading
import time
import unittest

import reltree
from reltree import rt

KILLS = int(os.environ.get("RELIABILITY_KILLS", "50"))
ACKED_PER_KILL = 20  # commands acknowledged before each kill, at least
SEED = int(os.environ.get("RELIABILITY_SEED", str(int(time.time()))))
CPUS = list(range(8))  # intel-2s
DOMAINS = [0, 1]
MAX_CTRL = 6  # MB has 8 CLOSIDs: root + 7; keep one spare for rejected mkdirs
SLEEPER = r"""
import os, sys, threading, time
n = int(sys.argv[1])
ev = threading.Event()
for _ in range(n):
    threading.Thread(target=ev.wait, daemon=True).start()
time.sleep(0.2)
print(" ".join(t for t in os.listdir("/proc/self/task") if int(t) != os.getpid()), flush=True)
ev.wait()
"""
GONE = {errno.ENOTCONN, errno.ECONNABORTED, errno.ENODEV, errno.EIO, errno.ENOENT,
        errno.ESHUTDOWN}


def spawn_sleepers(n):
    p = subprocess.Popen([sys.executable, "-c", SLEEPER, str(n)], stdout=subprocess.PIPE,
                         text=True)
    tids = {int(t) for t in p.stdout.readline().split()}
    return p, tids


class Model:
    """The acknowledged state, as the client believes it."""

    def __init__(self, snap):
        self.groups = copy.deepcopy(snap["groups"])
        self.threshold = snap["threshold"]

    def ctrl_of(self, tid):
        for n, g in self.groups.items():
            if tid in g["tasks"]:
                return n
        return ""


# Each command: (description, perform(m) -> errno, apply(model)).
def gen_command(rnd, model, tids):
    ctrl = [n for n in model.groups if n]
    kind = rnd.choice(["mkdir", "mkdir", "rmdir", "schemata", "schemata", "mode", "cpus",
                       "tasks", "tasks", "tasks", "monmk", "monrm", "moncpus", "montask",
                       "rename", "threshold"])
    if kind == "mkdir" or (not ctrl and kind not in ("threshold", "tasks")):
        name = "g%d" % rnd.randrange(1000)
        if name in model.groups or len(ctrl) >= MAX_CTRL:
            kind = "threshold"
        else:
            def apply(md, name=name):
                md.groups[name] = {"schemata": None, "mode": "shareable", "cpus": set(),
                                   "tasks": set(), "mons": {}, "closid": None, "rmid": None}
            return ("mkdir " + name, lambda m: m.mkdir(name), apply, name)
    if kind == "rmdir":
        name = rnd.choice(ctrl)

        def apply(md, name=name):
            g = md.groups.pop(name)
            md.groups[""]["cpus"] |= g["cpus"]
            md.groups[""]["tasks"] |= g["tasks"]
        return ("rmdir " + name, lambda m: m.rmdir(name), apply, None)
    if kind == "schemata":
        name = rnd.choice([""] + ctrl)
        vals = {}
        parts = []
        if rnd.random() < 0.7:
            l3 = {}
            for d in DOMAINS:
                lo = rnd.randrange(11)
                hi = rnd.randrange(lo, 11)
                l3[d] = "%x" % (((1 << (hi - lo + 1)) - 1) << lo)
            vals["L3"] = l3
            parts.append("L3:" + ";".join("%d=%s" % (d, v) for d, v in l3.items()))
        if rnd.random() < 0.6 or not parts:
            mb = {d: str(rnd.randrange(1, 11) * 10) for d in DOMAINS}
            vals["MB"] = mb
            parts.append("MB:" + ";".join("%d=%s" % (d, v) for d, v in mb.items()))
        text = "\n".join(parts) + "\n"
        path = (name + "/" if name else "") + "schemata"

        def apply(md, name=name, vals=vals):
            if md.groups[name]["schemata"] is None:
                md.groups[name]["schemata"] = {}
            for res, v in vals.items():
                md.groups[name]["schemata"][res] = dict(v)
        return ("schemata %r %r" % (name, text), lambda m: m.write(path, text), apply, None)
    if kind == "mode":
        name = rnd.choice(ctrl)
        mode = rnd.choice(["shareable", "exclusive"])

        def apply(md, name=name, mode=mode):
            md.groups[name]["mode"] = mode
        return ("mode %s %s" % (name, mode),
                lambda m: m.write(name + "/mode", mode + "\n"), apply, None)
    if kind == "cpus":
        name = rnd.choice(ctrl)
        cpus = {c for c in CPUS if rnd.random() < 0.25}
        text = ",".join(str(c) for c in sorted(cpus)) + "\n"

        def apply(md, name=name, cpus=cpus):
            g = md.groups[name]
            md.groups[""]["cpus"] |= g["cpus"] - cpus
            for o in md.groups.values():
                o["cpus"] -= cpus
                for mg in o["mons"].values():
                    mg["cpus"] -= cpus
            g["cpus"] = set(cpus)
            for mg in g["mons"].values():
                mg["cpus"] = set()
        return ("cpus %s %r" % (name, text),
                lambda m: m.write(name + "/cpus_list", text), apply, None)
    if kind == "tasks":
        name = rnd.choice([""] + ctrl)
        tid = rnd.choice(sorted(tids))
        path = (name + "/" if name else "") + "tasks"

        def apply(md, name=name, tid=tid):
            for g in md.groups.values():
                g["tasks"].discard(tid)
                for mg in g["mons"].values():
                    mg["tasks"].discard(tid)
            md.groups[name]["tasks"].add(tid)
        return ("tasks %r %d" % (name, tid), lambda m: m.write(path, "%d\n" % tid), apply, None)
    parents = [""] + ctrl
    if kind == "monmk":
        parent = rnd.choice(parents)
        mon = "m%d" % rnd.randrange(100)
        rel = (parent + "/" if parent else "") + "mon_groups/" + mon
        if mon in model.groups[parent]["mons"]:
            kind = "threshold"
        else:
            def apply(md, parent=parent, mon=mon):
                md.groups[parent]["mons"][mon] = {"cpus": set(), "tasks": set(), "rmid": None}
            return ("monmk " + rel, lambda m: m.mkdir(rel), apply, (parent, mon))
    withmons = [p for p in parents if model.groups[p]["mons"]]
    if kind in ("monrm", "moncpus", "montask", "rename") and withmons:
        parent = rnd.choice(withmons)
        mon = rnd.choice(sorted(model.groups[parent]["mons"]))
        base = (parent + "/" if parent else "") + "mon_groups/"
        rel = base + mon
        if kind == "monrm":
            def apply(md, parent=parent, mon=mon):
                md.groups[parent]["mons"].pop(mon)
            return ("monrm " + rel, lambda m: m.rmdir(rel), apply, None)
        if kind == "moncpus":
            pc = sorted(model.groups[parent]["cpus"])
            cpus = {c for c in pc if rnd.random() < 0.5}
            text = ",".join(str(c) for c in sorted(cpus)) + "\n"

            def apply(md, parent=parent, mon=mon, cpus=cpus):
                for o in md.groups[parent]["mons"].values():
                    o["cpus"] -= cpus
                md.groups[parent]["mons"][mon]["cpus"] = set(cpus)
            return ("moncpus %s %r" % (rel, text),
                    lambda m: m.write(rel + "/cpus_list", text), apply, None)
        if kind == "montask":
            cand = sorted(model.groups[parent]["tasks"]) or sorted(tids)
            tid = rnd.choice(cand)

            def apply(md, parent=parent, mon=mon, tid=tid):
                for o in md.groups[parent]["mons"].values():
                    o["tasks"].discard(tid)
                md.groups[parent]["mons"][mon]["tasks"].add(tid)
            return ("montask %s %d" % (rel, tid),
                    lambda m: m.write(rel + "/tasks", "%d\n" % tid), apply, None)
        if kind == "rename":
            new = "r%d" % rnd.randrange(100)
            if new in model.groups[parent]["mons"]:
                new = mon

            def apply(md, parent=parent, mon=mon, new=new):
                mg = md.groups[parent]["mons"].pop(mon)
                md.groups[parent]["mons"][new] = mg
            return ("rename %s -> %s" % (rel, new),
                    lambda m: m.rename(rel, base + new), apply, None)
    value = rnd.randrange(0, 256) * 65536

    def apply(md, value=value):
        md.threshold = value
    return ("threshold %d" % value,
            lambda m: m.write("info/L3_MON/max_threshold_occupancy", "%d\n" % value), apply, None)


def fill_unknowns(model, snap):
    """Fields the client could not read before a kill are taken from the
    tree (a group's initial schemata and ids)."""
    for name, g in model.groups.items():
        t = snap["groups"].get(name)
        if t is None:
            continue
        if g["schemata"] is None:
            g["schemata"] = copy.deepcopy(t["schemata"])
        else:
            for res, v in t["schemata"].items():
                g["schemata"].setdefault(res, dict(v))
        for k in ("closid", "rmid"):
            if g[k] is None:
                g[k] = t[k]
        for mn, mg in g["mons"].items():
            if mg["rmid"] is None and mn in t["mons"]:
                mg["rmid"] = t["mons"][mn]["rmid"]


def as_comparable(groups):
    return {n: {"schemata": g["schemata"], "mode": g["mode"], "cpus": sorted(g["cpus"]),
                "tasks": sorted(g["tasks"]), "closid": g["closid"], "rmid": g["rmid"],
                "mons": {mn: {"cpus": sorted(mg["cpus"]), "tasks": sorted(mg["tasks"]),
                              "rmid": mg["rmid"]} for mn, mg in g["mons"].items()}}
            for n, g in groups.items()}


def matches(model, snap):
    trial = copy.deepcopy(model)
    fill_unknowns(trial, snap)
    return (as_comparable(trial.groups) == as_comparable(snap["groups"]) and
            trial.threshold == snap["threshold"]), trial


class CrashRestore(unittest.TestCase):
    def test_kill9_loses_nothing_acknowledged(self):
        rnd = random.Random(SEED)
        print("seed %d, %d kills" % (SEED, KILLS), flush=True)
        sleepers, tids = spawn_sleepers(12)
        victim, victim_tids = spawn_sleepers(3)
        self.addCleanup(sleepers.kill)
        self.addCleanup(victim.kill)
        all_tids = tids | victim_tids
        m = rt.Mount(platform="intel-2s", options=["debug"])
        self.addCleanup(m.cleanup)
        model = Model(reltree.snapshot(m, all_tids))
        acked = 0
        in_flight_applied = 0
        kills_with_log = 0
        for kill_no in range(KILLS):
            killing = threading.Event()
            # The kill comes at a random time, but not before this round
            # has had ACKED_PER_KILL commands acknowledged: a count, which a
            # busy machine only makes take longer (a time alone gave it
            # fewer commands to lose).
            enough = threading.Event()
            round_acked = 0
            delay = rnd.uniform(0.0, 1.2)

            def killer():
                time.sleep(delay)
                enough.wait()
                killing.set()
                os.kill(m.pid, signal.SIGKILL)

            kt = threading.Thread(target=killer)
            kt.start()
            pending = None
            while pending is None:
                desc, perform, apply, extra = gen_command(rnd, model, tids)
                rc = perform(m)
                if rc == 0:
                    apply(model)
                    acked += 1
                    round_acked += 1
                    if round_acked >= ACKED_PER_KILL:
                        enough.set()
                    # Learn what the daemon chose for a new group (if it is
                    # still there to ask).
                    try:
                        if desc.startswith("mkdir "):
                            g = model.groups[extra]
                            g["schemata"] = reltree.parse_schemata(m.read(extra + "/schemata"))
                            g["closid"] = int(m.read(extra + "/ctrl_hw_id"))
                            g["rmid"] = int(m.read(extra + "/mon_hw_id"))
                        elif desc.startswith("monmk "):
                            parent, mon = extra
                            rel = (parent + "/" if parent else "") + "mon_groups/" + mon
                            model.groups[parent]["mons"][mon]["rmid"] = int(
                                m.read(rel + "/mon_hw_id"))
                    except OSError:
                        pass
                elif killing.is_set():
                    pending = (desc, apply)
                # else: rejected by a live daemon, nothing changed.
                if killing.is_set() and pending is None and not m.alive():
                    pending = ("nothing", lambda md: None)
            kt.join()
            m.proc.wait()
            m.pid = None
            m._force_unmount()
            # The journal is a snapshot plus a log of per-command records,
            # folded into the snapshot by the tick (when the log reaches half
            # the snapshot's size or its oldest record a few seconds of age):
            # count the kills that left records to replay.
            log = os.path.join(m.state_dir, "state.log")
            # (On tmpfs the log file is allocated whole and mapped: zeros
            # after its last record.)
            if os.path.exists(log):
                with open(log, "rb") as f:
                    if f.read().rstrip(b"\0"):
                        kills_with_log += 1
            if kill_no == KILLS // 2:
                # Threads that die while the daemon is down must be dropped.
                victim.kill()
                victim.wait()
                for g in model.groups.values():
                    g["tasks"] -= victim_tids
                    for mg in g["mons"].values():
                        mg["tasks"] -= victim_tids
                all_tids -= victim_tids
            m.start()
            snap = reltree.snapshot(m, all_tids)
            ok, trial = matches(model, snap)
            if not ok:
                with_pending = copy.deepcopy(model)
                try:
                    pending[1](with_pending)
                    ok, trial = matches(with_pending, snap)
                except KeyError:
                    ok = False
                if ok:
                    in_flight_applied += 1
            if not ok:
                self.fail("kill %d: restored tree differs from the acknowledged commands "
                          "(in flight: %s)\nmodel: %s\ntree:  %s\n%s" %
                          (kill_no, pending[0], as_comparable(model.groups),
                           as_comparable(snap["groups"]), m.daemon_log()[-3000:]))
            model = trial
            errs = reltree.check_invariants(snap, CPUS, all_tids)
            errs += reltree.check_registers(m, snap)
            errs += reltree.check_bit_usage(m, snap)
            self.assertEqual(errs, [], "kill %d" % kill_no)
        print("%d kills (%d with log records to replay), %d acknowledged commands, %d in-flight "
              "commands found applied" % (KILLS, kills_with_log, acked, in_flight_applied),
              flush=True)
        self.assertGreaterEqual(acked, KILLS * ACKED_PER_KILL)
        self.assertGreater(kills_with_log, 0)
        # A clean unmount clears the journal: the next start is fresh.
        subprocess.check_call(["fusermount3", "-u", m.mnt])
        m.proc.wait()
        m.start()
        self.assertEqual([n for n in m.listdir("") if n not in reltree.ROOT_FIXED and
                          os.path.isdir(m.path(n))], [])


if __name__ == "__main__":
    rt.main()
