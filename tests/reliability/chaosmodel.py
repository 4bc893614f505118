"""The model and the operations of the chaos test (test_chaos.py).

Model: the tree as the writers' acknowledged commands made it, in
reltree.snapshot()'s layout ({"groups": {name: {...}}, "threshold"}; the
default group is ""), with the resctrl semantics of each command applied
(the kernel's Documentation/filesystems/resctrl.rst and
fs/resctrl/rdtgroup.c: tasks, cpus, rmdir, rename of MON groups).

Writer: one concurrent writer's random commands. Each writer owns a part of
the state that no other writer touches: its CTRL_MON groups (w<N>c<k>), its
MON groups (w<N>m<k>, under its own groups or the default group), its
threads and its CPUs (CPU c belongs to writer c % WRITERS); writer 0 also
owns the default group's schemata and mode and max_threshold_occupancy.
A command's effect therefore touches only its writer's part (the default
group's CPUs and tasks take back the writer's own CPUs and threads), so the
writers' commands commute: the final tree is the same whatever order the
daemon serialised them in, and a check needs no linearisation search.
Where the writers do interact is what the daemon must arbitrate: CLOSIDs and
RMIDs (mkdir may fail with ENOSPC), exclusive mode against other groups'
masks (writes may fail), the default group's CPUs and tasks.

An Op: desc, perform(mount) -> errno, ok(model) the effect of success,
err(model) the effect of a failure (the kernel keeps the threads a tasks
write moved before its first bad id), must ("ok", "fail" or None: whether
the result is certain whatever the other writers do), learn(mount) ->
updates of a new group's schemata and ids read after its mkdir.
"""

import copy
import random

import reltree

CPUS = list(range(8))  # intel-2s
DOMAINS = [0, 1]
CBM_LEN = 11
MB_GRAN = 10
SCALE = 65536  # max_threshold_occupancy's unit
L3_BYTES = 16777216
NO_TASK = 5000000  # above any pid_max (at most 2^22): "No task"


class Model:
    def __init__(self, snap):
        self.groups = copy.deepcopy(snap["groups"])
        self.threshold = snap["threshold"]

    def copy(self):
        return copy.deepcopy(self)

    def new_group(self):
        return {"schemata": {}, "mode": "shareable", "cpus": set(), "tasks": set(), "mons": {},
                "closid": None, "rmid": None}

    def mkdir(self, name):
        self.groups[name] = self.new_group()

    def rmdir(self, name):
        g = self.groups.pop(name)
        self.groups[""]["cpus"] |= g["cpus"]
        self.groups[""]["tasks"] |= g["tasks"]

    def mkdir_mon(self, parent, mon):
        self.groups[parent]["mons"][mon] = {"cpus": set(), "tasks": set(), "rmid": None}

    def rmdir_mon(self, parent, mon):
        # Its threads and CPUs stay with the parent, which lists them.
        self.groups[parent]["mons"].pop(mon)

    def rename_mon(self, parent, mon, new_parent, new):
        mg = self.groups[parent]["mons"].pop(mon)
        if new_parent != parent:
            self.groups[parent]["tasks"] -= mg["tasks"]
            self.groups[new_parent]["tasks"] |= mg["tasks"]
        self.groups[new_parent]["mons"][new] = mg

    def move_task(self, tid, name):
        for g in self.groups.values():
            g["tasks"].discard(tid)
            for mg in g["mons"].values():
                mg["tasks"].discard(tid)
        self.groups[name]["tasks"].add(tid)

    def forget_tasks(self, tids):
        for g in self.groups.values():
            g["tasks"] -= tids
            for mg in g["mons"].values():
                mg["tasks"] -= tids

    def move_task_mon(self, tid, parent, mon):
        for mg in self.groups[parent]["mons"].values():
            mg["tasks"].discard(tid)
        self.groups[parent]["mons"][mon]["tasks"].add(tid)

    def set_cpus(self, name, cpus):
        """A CTRL_MON group's new CPU set (not the default group's): dropped
        CPUs go to the default group, added ones leave their owner and its
        MON groups, and this group's MON groups lose all theirs."""
        g = self.groups[name]
        self.groups[""]["cpus"] |= g["cpus"] - cpus
        for o in self.groups.values():
            o["cpus"] -= cpus
            for mg in o["mons"].values():
                mg["cpus"] -= cpus
        g["cpus"] = set(cpus)
        for mg in g["mons"].values():
            mg["cpus"] = set()

    def set_mon_cpus(self, parent, mon, cpus):
        for mg in self.groups[parent]["mons"].values():
            mg["cpus"] -= cpus
        self.groups[parent]["mons"][mon]["cpus"] = set(cpus)

    def set_schemata(self, name, vals):
        s = self.groups[name]["schemata"]
        for res, doms in vals.items():
            s.setdefault(res, {}).update(doms)

    def fill_unknowns(self, snap):
        """What the writers could not read before a kill (a new group's
        initial schemata and ids) is taken from the tree."""
        for name, g in self.groups.items():
            t = snap["groups"].get(name)
            if t is None:
                continue
            for res, vals in t["schemata"].items():
                for dom, v in vals.items():
                    g["schemata"].setdefault(res, {}).setdefault(dom, v)
            for k in ("closid", "rmid"):
                if g[k] is None:
                    g[k] = t[k]
            for mn, mg in g["mons"].items():
                if mg["rmid"] is None and mn in t["mons"]:
                    mg["rmid"] = t["mons"][mn]["rmid"]

    def comparable(self):
        return comparable(self.groups, self.threshold)


def values(schemata):
    """Schemata values as numbers (cache masks are hex, however padded)."""
    return {res: {d: int(v, 10 if res in ("MB", "SMBA") else 16) for d, v in doms.items()}
            for res, doms in schemata.items()}


def comparable(groups, threshold):
    return {"threshold": threshold,
            "groups": {n: {"schemata": values(g["schemata"]), "mode": g["mode"],
                           "cpus": sorted(g["cpus"]), "tasks": sorted(g["tasks"]),
                           "closid": g["closid"], "rmid": g["rmid"],
                           "mons": {mn: {"cpus": sorted(mg["cpus"]),
                                         "tasks": sorted(mg["tasks"]), "rmid": mg["rmid"]}
                                    for mn, mg in g["mons"].items()}}
                       for n, g in groups.items()}}


def diff(a, b, path=""):
    """The differences between two comparable() values, as lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a:
                out.append("%s/%s: only in the tree: %s" % (path, k, b[k]))
            elif k not in b:
                out.append("%s/%s: only in the model: %s" % (path, k, a[k]))
            else:
                out += diff(a[k], b[k], "%s/%s" % (path, k))
        return out
    return [] if a == b else ["%s: model %s, tree %s" % (path, a, b)]


class Op:
    def __init__(self, desc, perform, ok=None, err=None, must=None, learn=None):
        self.desc = desc
        self.perform = perform
        self.ok = ok or (lambda md: None)
        self.err = err
        self.must = must
        self.learn = learn

    def outcomes(self):
        """The effects an unanswered command may have had: none, or all of
        it (for a command that fails part way, what it does up to the
        failure)."""
        return [lambda md: None, self.err if self.err else self.ok]


def cpu_text(rnd, cpus):
    if rnd.random() < 0.3:
        return "cpus", "%x\n" % sum(1 << c for c in cpus)
    return "cpus_list", ",".join(str(c) for c in sorted(cpus)) + "\n"


def gpath(name, rel):
    return (name + "/" if name else "") + rel


def mpath(parent, mon, rel=""):
    return gpath(parent, "mon_groups/" + mon + ("/" + rel if rel else ""))


class Writer:
    """Writer `w` of `n`: its random generator, threads and CPUs."""

    def __init__(self, w, n, seed, tids, invalid_in_list):
        self.w = w
        self.rnd = random.Random(seed * 1000 + w)
        self.tids = sorted(tids)
        self.cpus = [c for c in CPUS if c % n == w]
        self.invalid_in_list = invalid_in_list
        self.prefix = "w%d" % w

    def own_groups(self, md):
        return sorted(n for n in md.groups if n.startswith(self.prefix + "c"))

    def own_mons(self, md):
        return [(p, mn) for p in [""] + self.own_groups(md)
                for mn in sorted(md.groups[p]["mons"]) if mn.startswith(self.prefix + "m")]

    def l3_mask(self):
        r = self.rnd
        if r.random() < 0.7:
            # A region of its own, so that exclusive groups are possible.
            lo = 3 + (3 * self.w) % (CBM_LEN - 3)
            hi = min(CBM_LEN - 1, lo + r.randrange(3))
            lo = r.randrange(lo, hi + 1)
        else:
            lo = r.randrange(CBM_LEN)
            hi = r.randrange(lo, CBM_LEN)
        return "%x" % (((1 << (hi - lo + 1)) - 1) << lo)

    def gen(self, md):
        r = self.rnd
        kinds = ["mkdir", "mkdir", "rmdir", "schemata", "schemata", "schemata", "mode", "cpus",
                 "cpus", "tasks", "tasks", "tasks", "tasks", "monmk", "monmk", "monrm",
                 "moncpus", "montask", "montask", "rename"]
        if self.w == 0:
            kinds += ["rootschemata", "rootschemata", "threshold"]
        return getattr(self, "op_" + r.choice(kinds))(md)

    # ---- CTRL_MON groups ----

    def op_mkdir(self, md):
        name = "%sc%d" % (self.prefix, self.rnd.randrange(4))
        if name in md.groups:
            return Op("mkdir %s (exists)" % name, lambda m: m.mkdir(name), must="fail")

        def learn(m):
            s = reltree.parse_schemata(m.read(name + "/schemata"))
            closid = int(m.read(name + "/ctrl_hw_id"))
            rmid = int(m.read(name + "/mon_hw_id"))

            def upd(md2):
                g = md2.groups[name]
                g["schemata"] = s
                g["closid"], g["rmid"] = closid, rmid
            return upd
        # ENOSPC when the other writers hold the CLOSIDs.
        return Op("mkdir " + name, lambda m: m.mkdir(name), ok=lambda md2: md2.mkdir(name),
                  learn=learn)

    def op_rmdir(self, md):
        own = self.own_groups(md)
        if not own or self.rnd.random() < 0.1:
            name = "%sc9" % self.prefix
            return Op("rmdir %s (absent)" % name, lambda m: m.rmdir(name), must="fail")
        name = self.rnd.choice(own)
        return Op("rmdir " + name, lambda m: m.rmdir(name), ok=lambda md2: md2.rmdir(name),
                  must="ok")

    def schemata_op(self, name, l3):
        r = self.rnd
        vals, parts = {}, []
        if r.random() < 0.7:
            doms = DOMAINS if r.random() < 0.7 else [r.choice(DOMAINS)]
            vals["L3"] = {d: l3() for d in doms}
            parts.append("L3:" + ";".join("%d=%s" % (d, v) for d, v in vals["L3"].items()))
        if r.random() < 0.5 or not parts:
            doms = DOMAINS if r.random() < 0.7 else [r.choice(DOMAINS)]
            # Values off the 10 % granularity are rounded up.
            written = {d: r.randrange(1, 21) * 5 for d in doms}
            vals["MB"] = {d: str(-(-v // MB_GRAN) * MB_GRAN) for d, v in written.items()}
            parts.append("MB:" + ";".join("%d=%d" % (d, v) for d, v in written.items()))
        path = gpath(name, "schemata")
        if r.random() < 0.25:
            # One bad line rejects the whole write: nothing of it applies.
            bad = r.choice(["L3:0=0", "L3:1=5", "L3:0=fff", "L3:2=1", "L3:0=zz", "MB:0=5",
                            "MB:1=110", "MB:0=abc", "XY:0=1", "L3:0=1;0=3"])
            parts.insert(r.randrange(len(parts) + 1), bad)
            text = "\n".join(parts) + "\n"
            return Op("schemata %r %r (bad)" % (name, text), lambda m: m.write(path, text),
                      must="fail")
        text = "\n".join(parts) + "\n"
        # May fail: another writer's exclusive group may hold the bits.
        return Op("schemata %r %r" % (name, text), lambda m: m.write(path, text),
                  ok=lambda md2: md2.set_schemata(name, vals))

    def op_schemata(self, md):
        own = self.own_groups(md)
        if not own:
            return self.op_mkdir(md)
        return self.schemata_op(self.rnd.choice(own), self.l3_mask)

    def op_rootschemata(self, md):
        def low():
            n = self.rnd.randrange(1, 4) if self.rnd.random() < 0.8 else CBM_LEN
            return "%x" % ((1 << n) - 1)
        return self.schemata_op("", low)

    def op_mode(self, md):
        r = self.rnd
        own = self.own_groups(md)
        name = r.choice(own) if own and r.random() < 0.9 else ""
        if name == "" and self.w != 0:
            return self.op_tasks(md)
        path = gpath(name, "mode")
        mode = r.choice(["shareable", "exclusive", "exclusive", "Exclusive"])
        if mode == "Exclusive":
            return Op("mode %r Exclusive" % name, lambda m: m.write(path, "Exclusive\n"),
                      must="fail")

        def ok(md2):
            md2.groups[name]["mode"] = mode
        # exclusive fails when the group's masks overlap another group's.
        return Op("mode %r %s" % (name, mode), lambda m: m.write(path, mode + "\n"), ok=ok,
                  must="ok" if mode == "shareable" else None)

    def op_cpus(self, md):
        r = self.rnd
        own = self.own_groups(md)
        if not own or r.random() < 0.15:
            if self.w == 0 and r.random() < 0.3:
                # The default group cannot drop CPUs; when the other groups
                # hold them all, it has none to drop.
                return Op("cpus_list '' '\\n'", lambda m: m.write("cpus_list", "\n"))
            name, f, text = r.choice(own or [""]), "cpus_list", r.choice(["99\n", "x\n"])
            return Op("%s %r %r (bad)" % (f, name, text),
                      lambda m: m.write(gpath(name, f), text), must="fail")
        name = r.choice(own)
        cpus = {c for c in self.cpus if r.random() < 0.5}
        f, text = cpu_text(r, cpus)
        return Op("%s %s %r" % (f, name, text), lambda m: m.write(gpath(name, f), text),
                  ok=lambda md2: md2.set_cpus(name, cpus), must="ok")

    # ---- tasks ----

    def last_before_rest_kill(self, md):
        """The command before a kill at rest: a tasks list with a bad id
        when those are on (their partial effect has no reply to ride on),
        else any."""
        return self.op_tasks(md, bad_list=True) if self.invalid_in_list else self.gen(md)

    def op_tasks(self, md, bad_list=False):
        r = self.rnd
        name = r.choice([""] + self.own_groups(md))
        path = gpath(name, "tasks")
        x = 0.2 if bad_list else r.random()
        if x < 0.1:
            text = r.choice(["%d\n" % NO_TASK, "abc\n", "%d %d\n" % (self.tids[0], self.tids[1])])
            return Op("tasks %r %r (bad)" % (name, text), lambda m: m.write(path, text),
                      must="fail")
        if x < 0.35:
            ids = r.sample(self.tids, r.randrange(2, min(4, len(self.tids)) + 1))
            bad_at = None
            if self.invalid_in_list and (bad_list or r.random() < 0.4):
                bad_at = r.randrange(1, len(ids) + 1)
                ids.insert(bad_at, NO_TASK)
            text = ",".join(str(t) for t in ids) + "\n"

            def moved(md2, upto):
                for t in ids[:upto]:
                    md2.move_task(t, name)
            if bad_at is None:
                return Op("tasks %r %r" % (name, text), lambda m: m.write(path, text),
                          ok=lambda md2: moved(md2, len(ids)), must="ok")
            # The threads before the bad id stay moved; the write fails.
            return Op("tasks %r %r (bad id at %d)" % (name, text, bad_at),
                      lambda m: m.write(path, text), err=lambda md2: moved(md2, bad_at),
                      must="fail")
        tid = r.choice(self.tids)
        return Op("tasks %r %d" % (name, tid), lambda m: m.write(path, "%d\n" % tid),
                  ok=lambda md2: md2.move_task(tid, name), must="ok")

    # ---- MON groups ----

    def op_monmk(self, md):
        parent = self.rnd.choice([""] + self.own_groups(md))
        mon = "%sm%d" % (self.prefix, self.rnd.randrange(6))
        rel = mpath(parent, mon)
        if mon in md.groups[parent]["mons"]:
            return Op("mkdir %s (exists)" % rel, lambda m: m.mkdir(rel), must="fail")

        def learn(m):
            rmid = int(m.read(rel + "/mon_hw_id"))

            def upd(md2):
                md2.groups[parent]["mons"][mon]["rmid"] = rmid
            return upd
        # ENOSPC when out of RMIDs (or the parent's CLOSID... never: it exists).
        return Op("mkdir " + rel, lambda m: m.mkdir(rel),
                  ok=lambda md2: md2.mkdir_mon(parent, mon), learn=learn)

    def pick_mon(self, md):
        mons = self.own_mons(md)
        return self.rnd.choice(mons) if mons else None

    def op_monrm(self, md):
        pm = self.pick_mon(md)
        if pm is None:
            return self.op_monmk(md)
        parent, mon = pm
        rel = mpath(parent, mon)
        return Op("rmdir " + rel, lambda m: m.rmdir(rel),
                  ok=lambda md2: md2.rmdir_mon(parent, mon), must="ok")

    def op_moncpus(self, md):
        r = self.rnd
        pm = self.pick_mon(md)
        if pm is None:
            return self.op_monmk(md)
        parent, mon = pm
        mine = set(self.cpus)
        inside = sorted(md.groups[parent]["cpus"] & mine)
        outside = sorted(mine - md.groups[parent]["cpus"])
        rel = mpath(parent, mon)
        if outside and r.random() < 0.2:
            cpus = {r.choice(outside)}
            f, text = cpu_text(r, cpus)
            return Op("%s %s %r (not the parent's)" % (f, rel, text),
                      lambda m: m.write(rel + "/" + f, text), must="fail")
        cpus = {c for c in inside if r.random() < 0.6}
        f, text = cpu_text(r, cpus)
        return Op("%s %s %r" % (f, rel, text), lambda m: m.write(rel + "/" + f, text),
                  ok=lambda md2: md2.set_mon_cpus(parent, mon, cpus), must="ok")

    def op_montask(self, md):
        r = self.rnd
        pm = self.pick_mon(md)
        if pm is None:
            return self.op_monmk(md)
        parent, mon = pm
        rel = mpath(parent, mon, "tasks")
        tid = r.choice(self.tids)
        if tid not in md.groups[parent]["tasks"]:
            return Op("tasks %s %d (not the parent's)" % (rel, tid),
                      lambda m: m.write(rel, "%d\n" % tid), must="fail")
        return Op("tasks %s %d" % (rel, tid), lambda m: m.write(rel, "%d\n" % tid),
                  ok=lambda md2: md2.move_task_mon(tid, parent, mon), must="ok")

    def op_rename(self, md):
        r = self.rnd
        pm = self.pick_mon(md)
        if pm is None:
            return self.op_monmk(md)
        parent, mon = pm
        new_parent = r.choice([parent, parent, ""] + self.own_groups(md))
        new = "%sm%d" % (self.prefix, r.randrange(6))
        old_rel, new_rel = mpath(parent, mon), mpath(new_parent, new)
        desc = "rename %s %s" % (old_rel, new_rel)
        if new in md.groups[new_parent]["mons"]:
            # Onto itself: a no-op that succeeds; onto another: EEXIST.
            if (new_parent, new) == (parent, mon):
                return Op(desc + " (itself)", lambda m: m.rename(old_rel, new_rel), must="ok")
            return Op(desc + " (exists)", lambda m: m.rename(old_rel, new_rel), must="fail")
        if new_parent != parent and md.groups[parent]["mons"][mon]["cpus"]:
            return Op(desc + " (monitors CPUs)", lambda m: m.rename(old_rel, new_rel),
                      must="fail")
        return Op(desc, lambda m: m.rename(old_rel, new_rel),
                  ok=lambda md2: md2.rename_mon(parent, mon, new_parent, new), must="ok")

    # ---- global: writer 0 ----

    def op_threshold(self, md):
        r = self.rnd
        path = "info/L3_MON/max_threshold_occupancy"
        if r.random() < 0.2:
            text = r.choice(["%d\n" % (L3_BYTES + SCALE), "abc\n"])
            return Op("threshold %r (bad)" % text, lambda m: m.write(path, text), must="fail")
        value = r.randrange(0, L3_BYTES // SCALE + 1) * SCALE
        written = value + (r.randrange(SCALE) if value < L3_BYTES and r.random() < 0.3 else 0)

        def ok(md2):
            md2.threshold = value  # rounded down to the scale
        return Op("threshold %d" % written, lambda m: m.write(path, "%d\n" % written), ok=ok,
                  must="ok")
