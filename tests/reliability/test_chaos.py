#!/usr/bin/env python3
"""Chaos test: concurrent writers, kill -9 and restart on the journal, and a
model check of the tree after every step.

WRITERS threads issue random commands at a daemon started with
--state-dir (chaosmodel.py: mkdir/rmdir of CTRL_MON and MON groups, valid
and invalid schemata, cpus and cpus_list, tasks moves of a few live threads
with single ids, lists and invalid ids, MON group renames, modes,
max_threshold_occupancy). Each writer owns a part of the state, so that
the writers' commands commute and one model describes the tree whatever
order the daemon serialised them in; they contend for what the daemon
arbitrates (CLOSIDs, RMIDs, exclusive masks, the default group's CPUs and
threads). A writer records a command as in flight before its system call
and applies its acknowledged result (success, or a failure's partial
effect) to the model after.

The run is KILLS rounds of about STEPS / KILLS commands each. In a round:

  1. after a seeded number of commands the writers stop (quiesce) and the
     tree must equal the model exactly; in a quarter of the rounds one
     more command follows, then a kill at rest, and the restored tree must
     still equal the model;
  2. after a seeded number of further acknowledged commands, while the
     writers are still issuing them, the daemon gets SIGKILL; each writer
     stops at its first command that the dead daemon did not answer (its
     in-flight command); the daemon restarts on the same state directory;
  3. the restored tree must equal the model with some subset of the
     in-flight commands applied, each wholly or not at all (nothing
     acknowledged is lost, nothing in flight half-applied). At the middle
     kill two threads of the last writer die while the daemon is down:
     the restored tree must drop them.

After every step: every CPU in exactly one CTRL_MON group and MON groups'
CPUs within their parent's, every thread in exactly one CTRL_MON group and
at most one of its MON groups, unique CLOSIDs and RMIDs (debug ctrl_hw_id,
mon_hw_id), no exclusive group's mask overlapping another group's,
bit_usage and the simulated registers equal to the tree. A command whose
result is certain whatever the other writers do (a bad schemata line, a
move of the writer's own thread into its own group) must have that result.

Bounded by counts, never by time. Environment:
  RESCTRLFS_CHAOS_SEED            the seed (default: random); printed at the
                                  start and in every failure. The writers'
                                  interleaving is the machine's, so a seed
                                  fixes the commands and kill points, not
                                  the order the daemon saw them in.
  RESCTRLFS_CHAOS_STEPS           commands in all (default 8000)
  RESCTRLFS_CHAOS_KILLS           kill -9 rounds (default 30)
  RESCTRLFS_CHAOS_WRITERS         concurrent writers (default 3)
  RESCTRLFS_CHAOS_INVALID_IN_LIST 1 (the default): tasks lists with a
                                  nonexistent id after valid ones, whose
                                  moves before the bad id must be journaled
                                  before the error reply; 0: none
"""

import collections
import errno
import itertools
import os
import random
import subprocess
import sys
import threading
import unittest

import chaosmodel as cm
import reltree
from reltree import rt
from test_crash_restore import spawn_sleepers

SEED = int(os.environ.get("RESCTRLFS_CHAOS_SEED") or random.SystemRandom().randrange(1 << 31))
STEPS = int(os.environ.get("RESCTRLFS_CHAOS_STEPS", "8000"))
KILLS = max(1, int(os.environ.get("RESCTRLFS_CHAOS_KILLS", "30")))
WRITERS = int(os.environ.get("RESCTRLFS_CHAOS_WRITERS", "3"))
INVALID_IN_LIST = os.environ.get("RESCTRLFS_CHAOS_INVALID_IN_LIST", "1") == "1"
TIDS_PER_WRITER = 4
REST_KILLS = 0.25  # the odds of an extra kill at rest in a round
KILLER = ("import os, sys, time; print('ready', flush=True); d = float(sys.stdin.readline()); "
          "time.sleep(d); os.kill(int(sys.argv[1]), 9)")
# What a command gets from a daemon that died under it (and from its
# mount point once gone).
GONE = {errno.ENOTCONN, errno.ECONNABORTED, errno.ENODEV, errno.EIO, errno.ENOENT,
        errno.ESHUTDOWN}


def check_exclusive(snap):
    """An exclusive group's cache masks overlap no other group's."""
    errs = []
    groups = snap["groups"]
    for name, g in groups.items():
        if g["mode"] != "exclusive":
            continue
        for other, o in groups.items():
            if other == name:
                continue
            for res, vals in g["schemata"].items():
                if res not in ("L2", "L3", "L2CODE", "L2DATA", "L3CODE", "L3DATA"):
                    continue
                for dom, v in vals.items():
                    ov = o["schemata"].get(res, {}).get(dom)
                    if ov is not None and int(v, 16) & int(ov, 16):
                        errs.append("exclusive group %r %s:%d=%s overlaps %r's %s" %
                                    (name, res, dom, v, other, ov))
    return errs


class Run:
    """The writers, the model they share and the counts that end phases."""

    def __init__(self, test, m, model, writers):
        self.test = test
        self.m = m
        self.model = model
        self.writers = writers
        self.lock = threading.Condition()
        self.started = 0  # commands issued
        self.acked = 0  # commands answered
        self.stop_at = None  # stop issuing once `started` reaches this
        self.killing = threading.Event()
        self.in_flight = {}  # writer -> Op
        self.errors = []
        self.history = collections.deque(maxlen=60)
        self.stats = collections.Counter()

    def step(self, wr, op=None):
        """One command of writer `wr` (its own random one unless `op`);
        False when the dead daemon left it unanswered (it stays in
        self.in_flight)."""
        with self.lock:
            self.started += 1
            op = op or wr.gen(self.model)
            self.in_flight[wr.w] = op
        rc = op.perform(self.m)
        if rc in GONE and self.killing.is_set():
            with self.lock:
                self.stats["in flight: " + errno.errorcode.get(rc, str(rc))] += 1
            return False
        update = None
        if rc == 0 and op.learn:
            try:
                update = op.learn(self.m)
            except OSError:
                pass  # killed meanwhile: taken from the tree later
        with self.lock:
            del self.in_flight[wr.w]
            self.acked += 1
            self.history.append("w%d %s -> %s" % (wr.w, op.desc, errno.errorcode.get(
                rc, rc) if rc else "ok"))
            self.stats["ok" if rc == 0 else "failed"] += 1
            if op.must == "ok" and rc != 0 or op.must == "fail" and rc == 0:
                self.errors.append("w%d %s: %s, expected %s" % (
                    wr.w, op.desc, errno.errorcode.get(rc, rc) if rc else "success",
                    "success" if op.must == "ok" else "an error"))
            if rc == 0:
                op.ok(self.model)
                if update:
                    update(self.model)
            elif op.err:
                op.err(self.model)
            self.lock.notify_all()
        return True

    def writer(self, wr):
        try:
            while True:
                with self.lock:
                    if self.stop_at is not None and self.started >= self.stop_at:
                        return
                if not self.step(wr):
                    return
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            with self.lock:
                self.errors.append("w%d crashed: %r" % (wr.w, e))
                self.in_flight.pop(wr.w, None)
                self.lock.notify_all()
            raise

    def start_writers(self, stop_at):
        self.stop_at = stop_at
        threads = [threading.Thread(target=self.writer, args=(wr,)) for wr in self.writers]
        for t in threads:
            t.start()
        return threads

    def fail(self, what, details=""):
        self.test.fail("seed %d: %s\n%s\nlast commands:\n  %s\n--- daemon log (end) ---\n%s" % (
            SEED, what, details, "\n  ".join(self.history), self.m.daemon_log()[-4000:]))

    def check_errors(self, when):
        if self.errors:
            self.fail("%s: %d unexpected results" % (when, len(self.errors)),
                      "\n".join(self.errors[:20]))


class Chaos(unittest.TestCase):
    def test_chaos(self):
        print("chaos: seed %d (RESCTRLFS_CHAOS_SEED), %d steps, %d kills, %d writers, "
              "invalid ids in tasks lists %s" % (SEED, STEPS, KILLS, WRITERS,
                                                "ON" if INVALID_IN_LIST else
                                                "OFF (RESCTRLFS_CHAOS_INVALID_IN_LIST=0)"),
              flush=True)
        rnd = random.Random(SEED)
        sleepers, tids = spawn_sleepers(WRITERS * TIDS_PER_WRITER)
        self.addCleanup(sleepers.stdout.close)
        self.addCleanup(sleepers.wait)
        self.addCleanup(sleepers.kill)
        # Threads of their own for the last writer, which die while the
        # daemon is down after the middle kill: the restored tree drops them.
        victim, victim_tids = spawn_sleepers(2)
        self.addCleanup(victim.stdout.close)
        self.addCleanup(victim.wait)
        self.addCleanup(victim.kill)
        ordered = sorted(tids)
        writers = [cm.Writer(w, WRITERS, SEED, ordered[w::WRITERS], INVALID_IN_LIST)
                   for w in range(WRITERS)]
        writers[-1].tids += sorted(victim_tids)
        tids = tids | victim_tids
        m = rt.Mount(platform="intel-2s", options=["debug"])
        self.addCleanup(m.cleanup)
        run = Run(self, m, cm.Model(reltree.snapshot(m, tids)), writers)
        per_round = max(2, STEPS // KILLS)
        in_flight_applied = 0
        for kill_no in range(KILLS):
            where = "kill %d of %d" % (kill_no + 1, KILLS)
            # 1. Quiesce after a counted number of commands, then check.
            first = rnd.randint(per_round // 3, 2 * per_round // 3)
            quiet = run.started + first
            for t in run.start_writers(quiet):
                t.join()
            run.check_errors(where + ", before it")
            self.check_tree(run, [run.model], tids, where + ", quiesced before it")
            if rnd.random() < REST_KILLS:
                # 1b. One more command, then a kill at rest: what it did
                # must be journaled once it is answered, whether it
                # succeeded or failed part way (a tasks list whose threads
                # before a bad id stay moved).
                wr = rnd.choice(writers)
                op = wr.last_before_rest_kill(run.model)
                run.step(wr, op)
                run.check_errors(where + ", before it")
                m.kill()
                m.pid = None
                m.start()
                run.model = self.check_tree(run, [run.model], tids, "%s, at rest after w%d %s" %
                                            (where, wr.w, op.desc))
            # 2. Kill once enough more commands are acknowledged, with the
            # writers still issuing theirs.
            kill_at = run.acked + rnd.randint(per_round // 6,
                                              max(per_round // 6, per_round - first))
            # The SIGKILL comes from another process, after a seeded
            # delay of up to a few milliseconds: sent from this one it
            # would wait for the interpreter lock, which a writer releases
            # as it enters a system call, and so land at the start of a
            # command almost always.
            killer = subprocess.Popen([sys.executable, "-c", KILLER, str(m.pid)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            killer.stdout.readline()
            threads = run.start_writers(None)
            with run.lock:
                run.lock.wait_for(lambda: run.acked >= kill_at or
                                  not any(t.is_alive() for t in threads))
            run.killing.set()
            killer.stdin.write("%.6f\n" % rnd.uniform(0, 0.005))
            killer.stdin.close()
            killer.wait()
            killer.stdout.close()
            m.proc.wait()
            # The writers stop at their first unanswered command; only
            # then is the dead mount detached (a command on the bare
            # mount point would act on the directory underneath).
            for t in threads:
                t.join()
            m.pid = None
            m._force_unmount()
            run.killing.clear()
            run.check_errors(where)
            dead = set()
            if kill_no == KILLS // 2:
                victim.kill()
                victim.wait()
                dead = victim_tids
                tids = tids - dead
                writers[-1].tids = [t for t in writers[-1].tids if t not in dead]
            m.start()
            # 3. The restored tree: the model plus some of the in-flight
            # commands, each whole.
            pending = sorted(run.in_flight.items())
            run.in_flight.clear()
            run.model, applied = self.check_tree(run, self.candidates(run.model, pending, dead),
                                                 tids, where + ", restarted (in flight: %s)" %
                                                 ["w%d %s" % (w, op.desc) for w, op in pending])
            in_flight_applied += applied
        print("chaos: %d commands (%d succeeded, %d failed), %d kills, %d in-flight commands "
              "found applied; in flight at the kills: %s" % (
                  run.acked, run.stats["ok"], run.stats["failed"], KILLS, in_flight_applied,
                  ", ".join("%s %d" % (k[11:], v) for k, v in sorted(run.stats.items())
                            if k.startswith("in flight: "))), flush=True)
        self.assertGreaterEqual(run.acked, STEPS // 2)

    @staticmethod
    def candidates(model, pending, dead):
        """(model, number applied) for each choice of in-flight outcomes,
        without the `dead` threads."""
        out = []
        for choice in itertools.product(*[enumerate(op.outcomes()) for _, op in pending]):
            trial = model.copy()
            try:
                for _, effect in choice:
                    effect(trial)
            except KeyError:
                continue  # its group is not in this trial
            trial.forget_tasks(dead)
            out.append((trial, sum(1 for i, _ in choice if i)))
        return out

    def check_tree(self, run, candidates, tids, where):
        """The tree must equal one candidate model and hold the invariants;
        returns that candidate (with what the tree told of unknowns)."""
        m = run.m
        snap = reltree.snapshot(m, tids)
        best = None
        for cand in candidates:
            trial, applied = cand if isinstance(cand, tuple) else (cand, 0)
            trial = trial.copy()
            trial.fill_unknowns(snap)
            d = cm.diff(trial.comparable(), cm.comparable(snap["groups"], snap["threshold"]))
            if not d:
                best = (trial, applied)
                break
            if best is None or len(d) < len(best[1]):
                best = (None, d)
        if best[0] is None:
            run.fail("%s: the tree differs from the model (the closest candidate of %d):" %
                     (where, len(candidates)), "\n".join(best[1]))
        errs = reltree.check_invariants(snap, cm.CPUS, tids)
        for name, g in snap["groups"].items():
            for t in tids:
                mons = [mn for mn, mg in g["mons"].items() if t in mg["tasks"]]
                if len(mons) > 1:
                    errs.append("thread %d in MON groups %s of %r" % (t, mons, name))
        errs += check_exclusive(snap)
        errs += reltree.check_registers(m, snap)
        errs += reltree.check_bit_usage(m, snap)
        if errs:
            run.fail("%s: invariants violated" % where, "\n".join(errs))
        if isinstance(candidates[0], tuple):
            return best
        return best[0]


if __name__ == "__main__":
    rt.main()
