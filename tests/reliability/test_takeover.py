#!/usr/bin/env python3
"""Live restart (ours; docs/reliability.md): under `resctrlfsd --keeper` the
/dev/fuse connection outlives the daemon, so a daemon killed with SIGKILL,
or replaced by another build (an upgrade: SIGHUP to the keeper), is a pause
for the processes using the tree, never an error:

  - a reader holding 100 counter files (mon_data) open reads them in a loop
    and a writer changes schemata, moves tasks and makes and removes MON
    groups in a loop, while the daemon is killed TAKEOVER_KILLS times (20)
    at random moments and started again by the keeper: neither sees a
    single error; every acknowledged write is in the tree afterwards; an
    mkdir or rmdir resent by the kernel after a kill is never applied
    twice (that would be EEXIST or ENOENT, an error the writer counts);
  - the same across upgrades to a different build of the daemon (a copy of
    the binary whose --version differs), alternating between the two;
  - node ids (st_ino) and file handles the first daemon gave out stay
    valid: a file opened before a takeover reads after it;
  - a runc container with the tree bind-mounted reads, writes and lists it
    in a loop across kills and upgrades without a failure;
  - a command the dead daemon had applied and journaled but not answered
    is answered from the journal when the kernel resends it, not applied
    again (the daemon's test aid RESCTRLFS_TEST_KILL_AFTER_COMMIT_FILE kills
    it between its journal record and its reply).

The kernel must have FUSE_NOTIFY_RESEND (Linux 6.9); the test is skipped on
an older one, where requests in flight at a kill fail (ECONNABORTED).
RELIABILITY_SEED seeds the kill moments.
"""

import errno
import os
import platform
import random
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import reltree
from reltree import rt

KILLS = int(os.environ.get("TAKEOVER_KILLS", "20"))
UPGRADES = int(os.environ.get("TAKEOVER_UPGRADES", "6"))
SEED = int(os.environ.get("RELIABILITY_SEED", str(int(time.time()))))
FDS = 100


def kernel_has_resend():
    parts = platform.release().split(".")
    try:
        return (int(parts[0]), int(parts[1].split("-")[0])) >= (6, 9)
    except (ValueError, IndexError):
        return False


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


def different_build(src, dst):
    """A copy of the daemon binary that reports another version: the same
    code, another file and another --version (an upgrade's new build,
    without a second build tree)."""
    with open(src, "rb") as f:
        data = f.read()
    old = b"\0%s\0" % version_of(src).encode()
    assert old in data, "no version string in " + src
    new = old[:-2] + (b"9" if old[-2:-1] != b"9" else b"8") + b"\0"
    with open(dst, "wb") as f:
        f.write(data.replace(old, new))
    os.chmod(dst, 0o755)


def version_of(path):
    out = subprocess.run([path, "--version"], capture_output=True, text=True, check=True).stdout
    return out.split()[-1]


@unittest.skipUnless(kernel_has_resend(), "the kernel lacks FUSE_NOTIFY_RESEND (Linux < 6.9)")
class Takeover(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="resctrlfs-takeover-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        # --task-model none: the sleepers the writer moves fill no cache, so
        # a removed MON group's RMID is free at once (no limbo: EBUSY).
        # The keeper runs the daemon from this path, read again at each
        # start: an upgrade replaces the file.
        self.exe = os.path.join(self.tmp, "resctrlfsd")
        shutil.copy(rt.daemon_binary(), self.exe)
        self.env_kill_file = os.path.join(self.tmp, "kill-after-commit")

    def start(self, platform="intel-2s"):
        os.environ["RESCTRLFS_TEST_KILL_AFTER_COMMIT_FILE"] = self.env_kill_file
        self.addCleanup(os.environ.pop, "RESCTRLFS_TEST_KILL_AFTER_COMMIT_FILE", None)
        real = rt.daemon_binary
        rt.daemon_binary = lambda: self.exe
        try:
            m = rt.Mount(platform=platform, args=["--keeper", "--task-model", "none"], start=False)
            self.addCleanup(m.cleanup)
            m.start()
        finally:
            rt.daemon_binary = real
        self.keeper = m.pid
        self.m = m
        return m

    def daemon_pid(self):
        return rt.wait_until(lambda: (children(self.keeper) or [None])[0],
                             "the keeper's daemon", report=self.m.daemon_log)

    def wait_served_by_new(self, old):
        """Waits until a daemon other than `old` serves (it answers the
        control socket, which it opens after taking the connection over)."""
        def served():
            pids = children(self.keeper)
            if not pids or pids[0] == old:
                return None
            try:
                st = rt.control_request(self.m.sock, {"cmd": "status"})
            except (OSError, ValueError):
                return None
            return pids[0] if isinstance(st, dict) else None
        return rt.wait_until(served, "a new daemon to take over", report=self.m.daemon_log)

    # ---- the loop ------------------------------------------------------

    def run_loop(self, restarts, restart, allow=()):
        """Errors whose errno is in `allow` are counted in self.allowed, not
        failures."""
        m = self.start()
        self.allowed = []
        rnd = random.Random(SEED)
        print("seed", SEED)
        for g in ("g1", "g2", "g3"):
            m.mkdir(g)
        sleepers = [subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
                    for _ in range(4)]
        self.addCleanup(lambda: [rt.stop_process(p, signal.SIGKILL) for p in sleepers])
        counter_files = []
        for g in ("", "g1", "g2", "g3"):
            for d in ("mon_L3_00", "mon_L3_01"):
                for ev in ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"):
                    counter_files.append(os.path.join(g, "mon_data", d, ev))
        fds = [os.open(m.path(counter_files[i % len(counter_files)]), os.O_RDONLY)
               for i in range(FDS)]
        self.addCleanup(lambda: [os.close(fd) for fd in fds])
        inos = {f: os.stat(m.path(f)).st_ino for f in counter_files}
        stop = threading.Event()
        errors = []
        reads = [0]
        acked = {"schemata": {}, "tasks": {}, "mon": None}
        writes = [0]

        def reader():
            while not stop.is_set():
                for fd in fds:
                    try:
                        text = os.pread(fd, 4096, 0).decode()
                        if text.strip() != "Unavailable":
                            int(text)
                    except (OSError, ValueError) as e:
                        if getattr(e, "errno", None) in allow:
                            self.allowed.append(e.errno)
                        else:
                            errors.append("read: %r" % e)
                    reads[0] += 1

        def writer():
            wr = random.Random(SEED + 1)
            n = 0
            while not stop.is_set():
                n += 1
                g = wr.choice(["g1", "g2", "g3"])
                # MON groups one write in 20: a removed one's RMID waits in
                # limbo (EBUSY for new ones, as in the kernel) until the
                # next limbo pass.
                kind = wr.randrange(2) if n % 20 else 2
                op = ""
                try:
                    if kind == 0:
                        mask = "%x" % ((1 << wr.randrange(1, 12)) - 1)
                        m.write(g + "/schemata", "L3:0=%s;1=%s\n" % (mask, mask))
                        acked["schemata"][g] = int(mask, 16)
                    elif kind == 1:
                        p = wr.choice(sleepers).pid
                        m.write(g + "/tasks", "%d\n" % p)
                        acked["tasks"][p] = g
                    else:
                        # One MON group at a time (RMIDs are few): the new
                        # one, then the last one goes.
                        name = g + "/mon_groups/m%d" % n
                        op = "mkdir " + name
                        os.mkdir(m.path(name))
                        last, acked["mon"] = acked["mon"], name
                        if last:
                            op = "rmdir " + last
                            os.rmdir(m.path(last))
                    writes[0] += 1
                except OSError as e:
                    if e.errno in allow:
                        self.allowed.append(e.errno)
                        continue
                    errors.append("write %s (kind %d %s): %r: %s" % (g, kind, op, e, m.lcs().strip()))

        threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
        for t in threads:
            t.start()
        try:
            for i in range(restarts):
                # Some progress of both between two restarts (counts, not
                # time), then a random moment.
                r0, w0 = reads[0], writes[0]
                rt.wait_until(lambda: reads[0] > r0 + FDS and writes[0] > w0 + 5 or errors,
                              "reads and writes to go on", report=m.daemon_log)
                time.sleep(rnd.random() * 0.05)
                old = self.daemon_pid()
                restart(i, old)
                self.wait_served_by_new(old)
                if errors:
                    break
            r0, w0 = reads[0], writes[0]
            rt.wait_until(lambda: reads[0] > r0 + FDS and writes[0] > w0 + 5 or errors,
                          "reads and writes after the last restart", report=m.daemon_log)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertEqual(errors[:10], [], m.daemon_log()[-4000:])
        if allow:
            return m  # a write that failed may or may not have been applied
        # Every acknowledged write is there; the ids are those of before.
        for g, mask in acked["schemata"].items():
            s = reltree.parse_schemata(m.read(g + "/schemata"))
            self.assertEqual(s["L3"], {0: "%x" % mask, 1: "%x" % mask}, g)
        for p, g in acked["tasks"].items():
            self.assertIn(str(p), m.read(g + "/tasks").split(), (p, g))
        if acked["mon"]:
            self.assertTrue(os.path.isdir(m.path(acked["mon"])), acked["mon"])
        for g in ("g1", "g2", "g3"):
            mons = os.listdir(m.path(g + "/mon_groups"))
            self.assertLessEqual(len(mons), 1, (g, mons))  # none made twice, none left
        for f, ino in inos.items():
            self.assertEqual(os.stat(m.path(f)).st_ino, ino, f)
        return m

    def test_sigkill_loop(self):
        def kill(i, pid):
            os.kill(pid, signal.SIGKILL)
        self.run_loop(KILLS, kill)
        self.assertGreaterEqual(self.m.daemon_log().count("(takeover)"), KILLS)

    def test_sigkill_loop_without_resend(self):
        # What a kernel older than 6.9 gets: each daemon serves its own clone
        # of the connection; a request it had read when it died fails with
        # ECONNABORTED (never hangs: ctest's timeout would end a hang), and
        # everything else goes on.
        os.environ["RESCTRLFS_KEEPER_CLONE"] = "1"
        self.addCleanup(os.environ.pop, "RESCTRLFS_KEEPER_CLONE", None)

        def kill(i, pid):
            os.kill(pid, signal.SIGKILL)
        self.run_loop(5, kill, allow=(errno.ECONNABORTED,))
        print("requests aborted by the kills:", len(self.allowed))
        self.assertIn("has no FUSE_NOTIFY_RESEND", self.m.daemon_log())
        # A request surely in flight at the kill: the daemon dies between
        # the mkdir's journal record and its reply.
        old = self.daemon_pid()
        open(self.env_kill_file, "w").close()
        with self.assertRaises(OSError) as cm:
            os.mkdir(self.m.path("aborted"))
        self.assertEqual(cm.exception.errno, errno.ECONNABORTED)
        self.wait_served_by_new(old)
        self.assertTrue(os.path.isdir(self.m.path("aborted")))  # journaled before the kill

    def test_upgrade_loop(self):
        builds = [os.path.join(self.tmp, "build-a"), os.path.join(self.tmp, "build-b")]
        shutil.copy(self.exe, builds[0])
        different_build(self.exe, builds[1])
        versions = {version_of(builds[0]), version_of(builds[1])}
        self.assertEqual(len(versions), 2)
        seen = set()

        def upgrade(i, pid):
            src = builds[(i + 1) % 2]
            tmp = self.exe + ".new"
            shutil.copy(src, tmp)
            os.rename(tmp, self.exe)  # what a package upgrade does
            seen.add(version_of(self.exe))
            os.kill(self.keeper, signal.SIGHUP)
        self.run_loop(UPGRADES, upgrade)
        self.assertEqual(seen, versions)

    # ---- counters across takeovers ----------------------------------------

    def test_counters_continue(self):
        """A reader holding mbm_*_bytes and llc_occupancy fds of groups with
        traffic, across SIGKILLs and upgrades: the bandwidth counts never go
        back and the occupancy never falls to 0 (the simulated machine's
        counters and the running totals outlive the daemon in the state
        directory). Workloads are the dead daemon's own: each new daemon is
        read before they are given again, so nothing refills the cache."""
        m = self.start()
        builds = [os.path.join(self.tmp, "build-a"), os.path.join(self.tmp, "build-b")]
        shutil.copy(self.exe, builds[0])
        different_build(self.exe, builds[1])
        for g, cpu in (("g1", 1), ("g2", 5)):
            m.mkdir(g)
            m.write(g + "/cpus_list", "%d\n" % cpu)
        m.mkdir("g1/mon_groups/m1")
        m.write("g1/mon_groups/m1/cpus_list", "1\n")
        files = []
        for g, d in (("g1", "mon_L3_00"), ("g1/mon_groups/m1", "mon_L3_00"),
                     ("g2", "mon_L3_01"), ("", "mon_L3_00")):
            for ev in ("llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"):
                files.append(os.path.join(g, "mon_data", d, ev))

        def open_all():
            fds = [os.open(m.path(f), os.O_RDONLY) for f in files]
            self.addCleanup(lambda: [os.close(fd) for fd in fds])
            return fds
        main_fds, reader_fds = open_all(), open_all()

        def traffic():
            m.workload(cpu=1, footprint_bytes=4 << 20, bandwidth_mbps=2000)
            m.workload(cpu=5, footprint_bytes=2 << 20, bandwidth_mbps=1000)
            m.workload(cpu=0, footprint_bytes=1 << 20, bandwidth_mbps=500)  # the default group

        def values(fds):
            return [int(os.pread(fd, 64, 0)) for fd in fds]

        stop = threading.Event()
        errors = []
        reads = [0]

        def reader():
            # The same fds, read in a loop through the takeovers: what any
            # reader of the tree sees.
            last = [0] * len(files)
            while not stop.is_set():
                try:
                    now = values(reader_fds)
                except (OSError, ValueError) as e:
                    errors.append("read: %r" % e)
                    return
                for i, f in enumerate(files):
                    if f.endswith("llc_occupancy"):
                        if last[i] > 0 and now[i] == 0:
                            errors.append("%s fell to 0" % f)
                    elif now[i] < last[i]:
                        errors.append("%s went back: %d -> %d" % (f, last[i], now[i]))
                last = now
                reads[0] += 1
                if errors:
                    return

        traffic()
        t = threading.Thread(target=reader)
        t.start()
        try:
            before = values(main_fds)
            restarts = 0
            for i in range(5):
                # Until every counter moved (counts, not time).
                rt.wait_until(lambda: all(
                    v > b for v, b, f in zip(values(main_fds), before, files)
                    if not f.endswith("llc_occupancy")) or errors,
                    "the counters to move", report=m.daemon_log)
                r0 = reads[0]
                rt.wait_until(lambda: reads[0] > r0 + 2 or errors, "the reader to go on")
                before = values(main_fds)
                old = self.daemon_pid()
                if i % 2 == 0:
                    os.kill(old, signal.SIGKILL)
                else:
                    # An upgrade: the other build, then back.
                    tmp = self.exe + ".new"
                    shutil.copy(builds[(i // 2 + 1) % 2], tmp)
                    os.rename(tmp, self.exe)
                    os.kill(self.keeper, signal.SIGHUP)
                self.wait_served_by_new(old)
                restarts += 1
                after = values(main_fds)  # before any new traffic
                for f, b, a in zip(files, before, after):
                    if f.endswith("llc_occupancy"):
                        if b > 0:
                            self.assertGreater(a, 0, "%s fell to 0 after restart %d" % (f, i))
                    else:
                        self.assertGreaterEqual(a, b, "%s went back after restart %d" % (f, i))
                self.assertEqual(errors, [])
                traffic()
        finally:
            stop.set()
            t.join()
        self.assertEqual(errors[:10], [], m.daemon_log()[-4000:])
        self.assertGreaterEqual(m.daemon_log().count("(takeover)"), restarts)
        self.assertIn("counters carried over", m.daemon_log())

    def kill_and_read(self, m, files, kills=2):
        """SIGKILLs the keeper's daemon `kills` times; after each takeover
        the counters in `files` are read before anything else (no traffic
        is given again): none may be below what was read before the kill."""
        def values():
            return [int(m.read(f)) for f in files]
        for i in range(kills):
            before = values()
            old = self.daemon_pid()
            os.kill(old, signal.SIGKILL)
            self.wait_served_by_new(old)
            after = values()
            for f, b, a in zip(files, before, after):
                self.assertGreaterEqual(a, b, "%s went back after kill %d" % (f, i))
        self.assertIn("counters carried over", m.daemon_log())

    def wait_moving(self, m, files):
        start = [int(m.read(f)) for f in files]
        rt.wait_until(lambda: all(int(m.read(f)) > s for f, s in zip(files, start)),
                      "the counters to move", report=m.daemon_log)

    def test_assigned_counters_continue(self):
        """mbm_event mode (ABMC, amd-2s): the counts of assigned counters go
        on across kills; the restore finds the assignment in the hardware
        and does not assign (and so clear) it again."""
        m = self.start(platform="amd-2s")
        self.assertEqual(m.read("info/L3_MON/mbm_assign_mode").splitlines()[0], "[mbm_event]")
        m.mkdir("g")
        m.write("g/cpus_list", "1\n")
        m.mkdir("g/mon_groups/m")
        m.write("g/mon_groups/m/cpus_list", "1\n")
        files = ["g/mon_data/mon_L3_00/mbm_total_bytes", "g/mon_data/mon_L3_00/mbm_local_bytes",
                 "g/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes"]
        m.workload(cpu=1, footprint_bytes=1 << 20, bandwidth_mbps=2000)
        self.wait_moving(m, files)
        self.kill_and_read(m, files)

    def test_event_config_counts_continue(self):
        """A domain whose BMEC event configuration is not the default
        (mbm_total_bytes_config, default mode, amd-2s) keeps its counts
        across kills: the restored configuration is the hardware's, so it is
        not written again (which clears every count of the domain)."""
        m = self.start(platform="amd-2s")
        m.write("info/L3_MON/mbm_assign_mode", "default\n")
        m.write("info/L3_MON/mbm_total_bytes_config", "0=0x15;1=0x15\n")
        m.write("info/L3_MON/mbm_local_bytes_config", "0=0x5\n")
        m.mkdir("g")
        m.write("g/cpus_list", "1\n")
        files = ["g/mon_data/mon_L3_00/mbm_total_bytes", "g/mon_data/mon_L3_00/mbm_local_bytes"]
        m.workload(cpu=1, footprint_bytes=1 << 20, bandwidth_mbps=2000)
        self.wait_moving(m, files)
        if "backend sim" in m.daemon_log():
            self.kill_and_read(m, files)
        else:
            # Behind the msr path, as on real hardware, a new daemon turns
            # counter assignment on before its restore turns it off again
            # (docs/reliability.md, "Not continued"): the counts restart.
            for i in range(2):
                old_pid = self.daemon_pid()
                os.kill(old_pid, signal.SIGKILL)
                self.wait_served_by_new(old_pid)
        self.assertEqual(m.read("info/L3_MON/mbm_total_bytes_config"), "0=0x15;1=0x15\n")
        self.assertEqual(m.read("info/L3_MON/mbm_local_bytes_config"), "0=0x05;1=0x15\n")

    def test_workloads_kept(self):
        """Declared workloads outlive a kill: the counters of a group with
        traffic still grow after each takeover without the workload being
        given again."""
        m = self.start()
        m.mkdir("g")
        m.write("g/cpus_list", "1\n")
        files = ["g/mon_data/mon_L3_00/mbm_total_bytes"]
        m.workload(cpu=1, footprint_bytes=1 << 20, bandwidth_mbps=2000)
        self.wait_moving(m, files)
        for i in range(2):
            old = self.daemon_pid()
            os.kill(old, signal.SIGKILL)
            self.wait_served_by_new(old)
            self.wait_moving(m, files)
        if "backend sim" in m.daemon_log():  # else the msr path's machine keeps them
            self.assertIn("1 declared workload(s) given again", m.daemon_log())

    # ---- a container with the tree bind-mounted ------------------------

    def test_container_keeps_working(self):
        if shutil.which("runc") is None:
            self.skipTest("runc is not installed")
        if not os.path.exists("/bin/busybox") or b"statically linked" not in subprocess.run(
                ["file", "-L", "/bin/busybox"], capture_output=True).stdout:
            self.skipTest("no static /bin/busybox (Debian package busybox-static)")
        m = self.start()
        m.mkdir("g")
        bundle = os.path.join(self.tmp, "bundle")
        for d in ("bin", "proc", "dev", "sys", "r"):
            os.makedirs(os.path.join(bundle, "rootfs", d))
        shutil.copy("/bin/busybox", os.path.join(bundle, "rootfs/bin/busybox"))
        for a in ("sh", "cat", "echo", "ls"):
            os.symlink("busybox", os.path.join(bundle, "rootfs/bin", a))
        subprocess.run(["runc", "spec"], cwd=bundle, check=True)
        cfg_path = os.path.join(bundle, "config.json")
        with open(cfg_path) as f:
            cfg = rt.json.load(f)
        cfg["process"]["terminal"] = False
        # The container reads and writes the bind-mounted tree in a loop
        # until told to stop (the file "stop" in its /r/..): every failure
        # is printed.
        ctl = os.path.join(self.tmp, "ctl")
        os.mkdir(ctl)
        cfg["process"]["args"] = ["sh", "-c",
                                  "n=0; while [ ! -e /ctl/stop ]; do "
                                  "cat /r/g/schemata >/dev/null || echo FAIL read; "
                                  "echo 'L3:0=3;1=3' > /r/g/schemata || echo FAIL write; "
                                  "ls /r/g/mon_data >/dev/null || echo FAIL ls; "
                                  "n=$((n+1)); echo $n > /ctl/count; done; echo DONE $n"]
        cfg["mounts"].append({"destination": "/r", "type": "bind", "source": m.mnt,
                              "options": ["rbind", "rw"]})
        os.makedirs(os.path.join(bundle, "rootfs/ctl"))
        cfg["mounts"].append({"destination": "/ctl", "type": "bind", "source": ctl,
                              "options": ["rbind", "rw"]})
        with open(cfg_path, "w") as f:
            rt.json.dump(cfg, f)
        out_path = os.path.join(self.tmp, "container.out")
        state = os.path.join(self.tmp, "runc-state")
        name = "takeover%d" % os.getpid()
        with open(out_path, "wb") as out:
            ctr = subprocess.Popen(["runc", "--root", state, "run", "-b", bundle, name],
                                   stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        self.addCleanup(subprocess.call, ["runc", "--root", state, "delete", "-f", name],
                        stderr=subprocess.DEVNULL)

        def output():
            with open(out_path, errors="replace") as f:
                return f.read()

        def count():
            try:
                with open(os.path.join(ctl, "count")) as f:
                    return int(f.read() or 0)
            except (OSError, ValueError):
                return 0
        builds = [self.exe, os.path.join(self.tmp, "build-b")]
        different_build(self.exe, builds[1])
        shutil.copy(self.exe, os.path.join(self.tmp, "build-a"))
        builds[0] = os.path.join(self.tmp, "build-a")
        for i in range(6):
            c0 = count()
            rt.wait_until(lambda: count() > c0 + 5 or ctr.poll() is not None,
                          "the container's loop", report=output)
            self.assertIsNone(ctr.poll(), output())
            old = self.daemon_pid()
            if i % 2:
                # An upgrade to the other build.
                shutil.copy(builds[i // 2 % 2], self.exe + ".new")
                os.rename(self.exe + ".new", self.exe)
                os.kill(self.keeper, signal.SIGHUP)
            else:
                os.kill(old, signal.SIGKILL)
            self.wait_served_by_new(old)
        c0 = count()
        rt.wait_until(lambda: count() > c0 + 5 or ctr.poll() is not None, "the container's loop")
        open(os.path.join(ctl, "stop"), "w").close()
        ctr.wait()
        text = output()
        self.assertIn("DONE", text)
        self.assertNotIn("FAIL", text)

    # ---- idempotent replay ----------------------------------------------

    def test_resent_command_applied_once(self):
        m = self.start()
        sleeper = subprocess.Popen(["sleep", "1000"], stdin=subprocess.DEVNULL)
        self.addCleanup(rt.stop_process, sleeper, signal.SIGKILL)
        steps = [
            ("mkdir g", lambda: os.mkdir(m.path("g"))),
            ("mkdir MON", lambda: os.mkdir(m.path("g/mon_groups/m"))),
            ("schemata", lambda: m.write("g/schemata", "L3:0=f;1=f0\n")),
            ("tasks", lambda: m.write("g/tasks", "%d\n" % sleeper.pid)),
            ("rename MON", lambda: os.rename(m.path("g/mon_groups/m"),
                                             m.path("mon_groups/m"))),
            ("rmdir MON", lambda: os.rmdir(m.path("mon_groups/m"))),
            ("rmdir g", lambda: os.rmdir(m.path("g"))),
        ]
        for what, step in steps:
            old = self.daemon_pid()
            open(self.env_kill_file, "w").close()
            step()  # an error here is a command applied twice
            self.wait_served_by_new(old)
            self.assertFalse(os.path.exists(self.env_kill_file), what)
        log = m.daemon_log()
        self.assertEqual(log.count("test aid: killed after journaling"), len(steps), log)
        self.assertEqual(log.count("was applied before: answered, not run again"), len(steps),
                         log)
        self.assertFalse(os.path.exists(m.path("g")))
        self.assertIn(str(sleeper.pid), m.read("tasks").split())


FNV_OFFSET = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3
HASH_BITS = 36
HASH_MASK = (1 << HASH_BITS) - 1
ROOT_INO = 1
MOUNT_OPTIONS = ("cdp", "cdpl2", "mba_MBps", "debug", "iordt", "cba", "stlb", "tccl3")


def fnv_child(h, name):
    for b in b"/" + name.encode():
        h = ((h ^ b) * FNV_PRIME) & ((1 << 64) - 1)
    return h


class NodeIds(unittest.TestCase):
    """Node ids (docs/reliability.md, "Node ids"): a file's inode number is
    its group's node base in the top 28 bits and the low 36 bits of FNV-1a
    of its path below the group's directory; two paths of one group whose
    hashes agreed would be told apart by probing, in creation order, and
    could swap numbers across a restore. A group's paths are not chosen by
    users: a group directory (CTRL_MON or MON, whatever its name) starts a
    numbering of its own, and below it are only the file table's names and
    the platform's mon_data names. So this enumerates them: on every
    built-in platform, with every mount option it takes, in each monitoring
    mode it has, with a CTRL_MON group and a MON group, every inode number is
    the unprobed one (no collision happened) and the union of the paths seen
    in groups (and in the default group with info/) has no two paths with
    one hash. A platform added later is covered by this test."""

    def walk(self, m):
        """{kind: {relative path}} of every node, checking each number."""
        seen = {"root": set(), "group": set()}

        def visit(path, base, h, rel, kind):
            for e in os.scandir(path):
                ino = e.inode()
                if e.is_dir(follow_symlinks=False) and ino >> HASH_BITS not in (0, base) and \
                        ino & HASH_MASK == FNV_OFFSET & HASH_MASK:
                    visit(e.path, ino >> HASH_BITS, FNV_OFFSET, "", "group")  # a group
                    continue
                ch = fnv_child(h, e.name)
                low = ch & HASH_MASK
                if base == 0 and low <= ROOT_INO:
                    low += 2
                r = rel + "/" + e.name
                self.assertEqual(ino, (base << HASH_BITS) | low,
                                 "%s: probed (a collision in its group)" % e.path)
                seen[kind].add(r)
                if e.is_dir(follow_symlinks=False):
                    visit(e.path, base, ch, r, kind)
        visit(m.path(""), 0, FNV_OFFSET, "", "root")
        return seen

    def test_no_collision_in_any_group(self):
        platforms = subprocess.run([rt.daemon_binary(), "--list-platforms"], capture_output=True,
                                   text=True, check=True).stdout.split()
        self.assertIn("intel-2s", platforms)
        if rt.MSR:
            # Node ids are fs/'s, the same on every backend: one machine
            # through the msr path is enough there (no skip: ctest would
            # report the whole file skipped).
            platforms = ["intel-2s"]
        checked = 0
        for platform in platforms:
            union = {"root": set(), "group": set()}
            for opt in (None,) + MOUNT_OPTIONS:
                try:
                    m = rt.Mount(platform=platform, options=[opt] if opt else [],
                                 args=["--task-model", "none"])
                except RuntimeError:
                    continue  # an option the platform lacks (intel-tcc needs tccl3)
                try:
                    # A CTRL_MON group with a MON group, and a MON group of
                    # the default group, where the platform has them.
                    if m.mkdir("g") == 0 and os.path.isdir(m.path("g/mon_groups")):
                        self.assertEqual(m.mkdir("g/mon_groups/m"), 0)
                    if os.path.isdir(m.path("mon_groups")):
                        self.assertEqual(m.mkdir("mon_groups/r"), 0)
                    for what, seen in self.walk(m).items():
                        union[what] |= seen
                    mode = "info/L3_MON/mbm_assign_mode"
                    if os.path.exists(m.path(mode)) and "mbm_event" in m.read(mode):
                        m.write("info/L3_MON/mbm_assign_mode", "mbm_event\n")
                        for what, seen in self.walk(m).items():
                            union[what] |= seen
                finally:
                    m.cleanup()
                checked += 1
            self.assertTrue(union["group"], platform + ": never mounted")
            for what, paths in union.items():
                by_hash = {}
                for p in paths:
                    h = FNV_OFFSET
                    for name in p.strip("/").split("/"):
                        h = fnv_child(h, name)
                    low = h & HASH_MASK
                    if what == "root" and low <= ROOT_INO:
                        low += 2
                    by_hash.setdefault(low, []).append(p)
                clashes = [v for v in by_hash.values() if len(v) > 1]
                self.assertEqual(clashes, [], (platform, what))
            print(platform, {k: len(v) for k, v in union.items()})
        self.assertGreater(checked, len(platforms))


@unittest.skipUnless(kernel_has_resend(), "the kernel lacks FUSE_NOTIFY_RESEND (Linux < 6.9)")
class FdStore(unittest.TestCase):
    """--fd-store against a stand-in for systemd: the daemon hands its
    connection over NOTIFY_SOCKET (FDSTORE=1, FDNAME=fuse, SCM_RIGHTS); after
    a kill -9 a daemon started with it in LISTEN_FDS takes the mount over; a
    stop unmounts and removes it from the store (FDSTOREREMOVE=1)."""

    def test_restart_from_the_fd_store(self):
        import socket
        tmp = tempfile.mkdtemp(prefix="resctrlfs-fdstore-")
        self.addCleanup(shutil.rmtree, tmp, True)
        sock_path = os.path.join(tmp, "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(sock_path)
        self.addCleanup(notify.close)
        stored = []

        def receive(what):
            while True:
                msg, fds, _, _ = socket.recv_fds(notify, 4096, 4)
                stored.extend(fds)
                if what in msg.decode():
                    return msg.decode(), fds
        os.environ["NOTIFY_SOCKET"] = sock_path
        self.addCleanup(os.environ.pop, "NOTIFY_SOCKET", None)
        m = rt.Mount(platform="intel-2s", args=["--fd-store", "--task-model", "none"],
                     start=False)
        self.addCleanup(m.cleanup)
        m.start()
        msg, fds = receive("FDSTORE=1")
        self.assertIn("FDNAME=fuse", msg)
        self.assertEqual(len(fds), 1)
        receive("READY=1")
        m.mkdir("g")
        m.write("g/schemata", "L3:0=f;1=f\n")
        fd = os.open(m.path("g/schemata"), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        ino = os.stat(m.path("g/schemata")).st_ino
        os.kill(m.pid, signal.SIGKILL)
        m.proc.wait()
        # systemd's restart: the stored descriptor as fd 3, LISTEN_PID the
        # new process's own pid.
        argv = m.argv()
        env = dict(os.environ, LISTEN_FDS="1", LISTEN_FDNAMES="fuse")
        store_fd = fds[0]

        def as_fd3():
            os.dup2(store_fd, 3)
            os.set_inheritable(3, True)
        with open(m.log_path, "ab") as log:
            m.proc = subprocess.Popen(
                ["/bin/sh", "-c", 'export LISTEN_PID=$$; exec "$0" "$@"'] + argv, env=env,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                preexec_fn=as_fd3, close_fds=False)
        m.pid = m.proc.pid
        rt.wait_until(lambda: rt.socket_listens(m.sock), "the restarted daemon",
                      give_up=lambda: rt.exited(m.proc), report=m.daemon_log)
        self.assertIn("took over the FUSE connection", m.daemon_log())
        self.assertEqual(os.pread(fd, 4096, 0).decode(), m.read("g/schemata"))
        self.assertIn("L3:0=f;1=f", m.read("g/schemata").replace(" ", ""))
        self.assertEqual(os.stat(m.path("g/schemata")).st_ino, ino)
        self.assertEqual(m.stop(), 0)
        receive("FDSTOREREMOVE=1")
        self.assertFalse(rt.is_mounted(m.mnt))
        for f in stored:
            os.close(f)


if __name__ == "__main__":
    rt.main()
