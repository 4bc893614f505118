"""Helpers of the reliability tests: read a mounted resctrlfs tree into a
plain snapshot, check its invariants (every CPU and thread in exactly one
CTRL_MON group, unique CLOSIDs/RMIDs) and compare the machine's registers
with what the tree says (schemata per CLOSID and domain, PQR_ASSOC per CPU).

The machine is the daemon's simulated one, or under the msr label
(RESCTRLFS_BACKEND=msr, ctest entries reliability_msr.*) the one
resctrl-fakehw emulates behind resctrl-msrd: registers() reads that
machine's own view (resctrl-fakehw's control socket), never the daemon's
idea of it, and faults are injected there too (the harness routes them).

Register numbers are the Intel SDM's (IA32_PQR_ASSOC 0xC8F,
IA32_L3_QOS_MASK_n 0xC90+n, IA32_L2_QOS_EXT_BW_THRTL_n 0xD50+n); the Intel
profiles' MBA is linear, so the register holds 100 - percent.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import resctrlfs_test as rt  # noqa: E402

PQR_ASSOC = 0xC8F
L3_MASK_0 = 0xC90
MBA_THRTL_0 = 0xD50
ROOT_FIXED = {"info", "mon_groups", "mon_data"}


def parse_schemata(text):
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        res, _, doms = line.partition(":")
        vals = {}
        for item in doms.split(";"):
            d, _, v = item.partition("=")
            vals[int(d)] = v.strip()
        out[res.strip()] = vals
    return out


def parse_cpu_list(text):
    cpus = set()
    text = text.strip()
    if not text:
        return cpus
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus.update(range(int(a), int(b) + 1))
        else:
            cpus.add(int(part))
    return cpus


def read_tasks(m, rel, only=None):
    tids = {int(x) for x in m.read(rel).split()}
    return tids & only if only is not None else tids


def snapshot(m, tids=None, debug=True):
    """The tree as {"groups": {name: {...}}, "threshold": int}; the default
    group is "". Task sets are restricted to `tids` when given."""
    groups = {}
    names = [""] + [n for n in m.listdir("")
                    if n not in ROOT_FIXED and os.path.isdir(m.path(n))]
    for name in names:
        base = (name + "/") if name else ""
        g = {
            "schemata": parse_schemata(m.read(base + "schemata")),
            "mode": m.read(base + "mode").strip(),
            "cpus": parse_cpu_list(m.read(base + "cpus_list")),
            "tasks": read_tasks(m, base + "tasks", tids),
            "mons": {},
        }
        if debug:
            g["closid"] = int(m.read(base + "ctrl_hw_id"))
            g["rmid"] = int(m.read(base + "mon_hw_id"))
        for mon in m.listdir(base + "mon_groups"):
            mb = base + "mon_groups/" + mon + "/"
            mg = {"cpus": parse_cpu_list(m.read(mb + "cpus_list")),
                  "tasks": read_tasks(m, mb + "tasks", tids)}
            if debug:
                mg["rmid"] = int(m.read(mb + "mon_hw_id"))
            g["mons"][mon] = mg
        groups[name] = g
    return {"groups": groups,
            "threshold": int(m.read("info/L3_MON/max_threshold_occupancy"))}


def check_invariants(snap, online, tids=None):
    """Returns a list of violated invariants (empty when consistent)."""
    errs = []
    groups = snap["groups"]
    seen_cpu = {}
    for name, g in groups.items():
        for c in g["cpus"]:
            if c in seen_cpu:
                errs.append("CPU %d in %r and %r" % (c, seen_cpu[c], name))
            seen_cpu[c] = name
        mon_cpus = set()
        for mn, mg in g["mons"].items():
            if not mg["cpus"] <= g["cpus"]:
                errs.append("MON group %s/%s has CPUs outside its parent" % (name, mn))
            if mon_cpus & mg["cpus"]:
                errs.append("MON groups of %r share CPUs" % name)
            mon_cpus |= mg["cpus"]
            if not mg["tasks"] <= g["tasks"]:
                errs.append("MON group %s/%s has tasks outside its parent" % (name, mn))
    if set(seen_cpu) != set(online):
        errs.append("CPUs without a group: %s" % sorted(set(online) - set(seen_cpu)))
    if tids is not None:
        for t in tids:
            owners = [n for n, g in groups.items() if t in g["tasks"]]
            if len(owners) != 1:
                errs.append("thread %d is in %d CTRL_MON groups: %s" % (t, len(owners), owners))
    if groups and "closid" in next(iter(groups.values())):
        closids = [g["closid"] for g in groups.values()]
        if len(set(closids)) != len(closids):
            errs.append("duplicate CLOSIDs %s" % closids)
        rmids = [g["rmid"] for g in groups.values()]
        rmids += [mg["rmid"] for g in groups.values() for mg in g["mons"].values()]
        if len(set(rmids)) != len(rmids):
            errs.append("duplicate RMIDs %s" % sorted(rmids))
    return errs


def check_bit_usage(m, snap):
    """info/L3/bit_usage must agree with the L3 masks of the groups."""
    errs = []
    usage = parse_schemata("L3:" + m.read("info/L3/bit_usage").strip())["L3"]
    cbm_len = len(format(int(m.read("info/L3/cbm_mask"), 16), "b"))
    for dom, text in usage.items():
        used = 0
        for g in snap["groups"].values():
            used |= int(g["schemata"]["L3"][dom], 16)
        for bit in range(cbm_len):
            ch = text[cbm_len - 1 - bit]
            if ((used >> bit) & 1) != (ch != "0"):
                errs.append("bit_usage %d=%s disagrees with masks (used %x)" % (dom, text, used))
                break
    return errs


def registers(m):
    """The machine's registers as [{"cpu", "msr", "value"}]: the simulated
    machine's (the daemon's control socket), or under the msr label
    resctrl-fakehw's, which outlives daemon restarts as hardware does."""
    if m.hw is not None:
        return m.hw.ctl({"cmd": "registers"})["registers"]
    return m.registers()


def check_registers(m, snap):
    """Compares the machine's registers with the tree; returns mismatches.
    Needs the debug ids (snapshot(debug=True))."""
    regs = registers(m)
    errs = []
    pqr = {r["cpu"]: r["value"] for r in regs if r["msr"] == PQR_ASSOC}
    for name, g in snap["groups"].items():
        for cpu in g["cpus"]:
            rmid = g["rmid"]
            for mg in g["mons"].values():
                if cpu in mg["cpus"]:
                    rmid = mg["rmid"]
            got = pqr.get(cpu)
            if got is None or (got >> 32) != g["closid"] or (got & 0x3FF) != rmid:
                errs.append("CPU %d PQR_ASSOC %s, tree says closid %d rmid %d" %
                            (cpu, hex(got) if got is not None else None, g["closid"], rmid))
    # Domain registers: one CPU per domain, domains in id order.
    dom_cpus = sorted({r["cpu"] for r in regs if r["msr"] == L3_MASK_0})
    bank = {(r["cpu"], r["msr"]): r["value"] for r in regs}
    for name, g in snap["groups"].items():
        for res, vals in g["schemata"].items():
            for i, dom in enumerate(sorted(vals)):
                if i >= len(dom_cpus):
                    errs.append("no register CPU for %s domain %d" % (res, dom))
                    continue
                cpu = dom_cpus[i]
                if res == "L3":
                    got = bank.get((cpu, L3_MASK_0 + g["closid"]))
                    want = int(vals[dom], 16)
                elif res == "MB":
                    got = bank.get((cpu, MBA_THRTL_0 + g["closid"]))
                    want = 100 - int(vals[dom])
                else:
                    continue
                if got != want:
                    errs.append("group %r %s:%d register %s, tree says %s" %
                                (name, res, dom, got, vals[dom]))
    return errs
