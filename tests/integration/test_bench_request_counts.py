#!/usr/bin/env python3
"""Exact FUSE request counts per user-visible operation.

Each operation a shell or a monitoring agent performs on resctrlfs must cost
exactly the FUSE requests listed below: these counts decide the latency of
a FUSE filesystem (each request is a round trip to the daemon), and unlike
latencies they are deterministic, so they are asserted here while the
benchmark (bench/run.sh) only reports times.

    cat FILE                     OPEN + GETATTR + 2 READ (+ RELEASE)
    open + read to EOF + close   OPEN + 2 READ (+ RELEASE)
    pread on a held fd           READ
    stat (attributes cached)     nothing
    readdir (warm)               nothing
    echo TEXT > FILE             OPEN + WRITE (+ RELEASE); no SETATTR, no FLUSH

The counts come from the daemon's own counters on its control socket
({"cmd":"stats-reset"} / {"cmd":"stats"}). The same table is checked on
floor_fs, the benchmark's minimal FUSE filesystem, which shares resctrlfsd's
libfuse settings: if the floor breaks, the kernel or libfuse changed; if only
resctrlfsd breaks, resctrlfsd did.

Needs root and /dev/fuse; exits 77 (skip) without them.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# The daemon engineer's harness knows how to find and mount resctrlfsd, how
# to wait without a deadline and how to count an action's requests.
sys.path.insert(0, HERE)
import resctrlfs_test  # noqa: E402


def find_binary(env_name, rel_path):
    """A built binary: $ENV, $RESCTRLFS_BUILD_DIR/rel, the ctest build tree, build*/rel."""
    if os.environ.get(env_name):
        return os.environ[env_name]
    candidates = []
    if os.environ.get("RESCTRLFS_BUILD_DIR"):
        candidates.append(os.path.join(os.environ["RESCTRLFS_BUILD_DIR"], rel_path))
    # ctest runs in <build>/tests/integration.
    candidates.append(os.path.join(os.getcwd(), "..", "..", rel_path))
    candidates.append(os.path.join(REPO, "build", rel_path))
    for c in candidates:
        if os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


def control(sock_path, cmd):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)  # blocking: a busy machine answers late
    s.sendall((json.dumps(cmd) + "\n").encode())
    buf = b""
    while b"\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    return json.loads(buf.split(b"\n")[0])


def find_counters(obj):
    """The object of per-opcode counters inside a stats reply (the one with READ)."""
    if isinstance(obj, dict):
        if any(k.upper() == "READ" and isinstance(v, int) for k, v in obj.items()):
            return {k.upper(): v for k, v in obj.items() if isinstance(v, int)}
        for v in obj.values():
            found = find_counters(v)
            if found is not None:
                return found
    return None


class Daemon:
    """A FUSE daemon mounted on a temporary directory, with a control socket."""

    def __init__(self, name, argv_prefix):
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="reqcount-%s-" % name)
        self.mnt = os.path.join(self.dir, "mnt")
        self.sock = os.path.join(self.dir, "control.sock")
        os.mkdir(self.mnt)
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.proc = subprocess.Popen(
            argv_prefix + ["-f", "--control", self.sock, self.mnt],
            stdout=self.log, stderr=subprocess.STDOUT)
        try:
            resctrlfs_test.wait_until(
                lambda: os.path.ismount(self.mnt) and resctrlfs_test.socket_listens(self.sock),
                "%s to mount" % name, interval=0.05,
                give_up=lambda: resctrlfs_test.exited(self.proc))
        except RuntimeError as e:
            self.log.seek(0)
            log = self.log.read()
            self.close()
            raise RuntimeError("%s did not mount (%s):\n%s" % (name, e, log))

    def reset(self):
        control(self.sock, {"cmd": "stats-reset"})

    def counts(self):
        c = find_counters(control(self.sock, {"cmd": "stats"}))
        if c is None:
            raise RuntimeError("%s: no opcode counters in the stats reply" % self.name)
        return {k: v for k, v in c.items() if v}

    def close(self):
        if os.path.ismount(self.mnt):
            subprocess.call(["fusermount3", "-u", self.mnt])
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class HarnessDaemon:
    """resctrlfsd through the integration harness (resctrlfs_test.Mount)."""

    def __init__(self, platform):
        self.name = "resctrlfsd"
        self.m = resctrlfs_test.Mount(platform=platform)
        self.mnt = self.m.mnt

    def reset(self):
        self.m.reset_stats()

    def counts(self):
        return {k.upper(): v for k, v in self.m.stats().items() if v}

    def close(self):
        self.m.cleanup()


def check_daemon(d, schemata_line):
    failures = []
    # RELEASE is asynchronous: the counter waits for every closed file's
    # RELEASE before the reset and after the action (resctrlfs_test).
    counter = resctrlfs_test.RequestCounter(d.counts, d.reset)

    def measure(action):
        return counter.measure(action)
    schemata = os.path.join(d.mnt, "schemata")
    mon_dir = os.path.join(d.mnt, "mon_data")
    counter_file = None
    if os.path.isdir(mon_dir):
        dom = sorted(os.listdir(mon_dir))[0]
        counter_file = os.path.join(mon_dir, dom,
                                    sorted(os.listdir(os.path.join(mon_dir, dom)))[0])

    def expect(what, got, want):
        if got != want:
            failures.append("%s: %s: got %s, want %s" % (d.name, what, got, want))
        else:
            print("ok   %s: %s: %s" % (d.name, what, got))

    def read_close(path):
        fd = os.open(path, os.O_RDONLY)
        while os.read(fd, 4096):
            pass
        os.close(fd)

    def echo(path, text):
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.write(fd, text.encode())
        os.close(fd)

    # Warm the dentry and attribute caches: the counts below are steady state.
    for p in [schemata] + ([counter_file] if counter_file else []):
        os.stat(p)
        read_close(p)
    os.listdir(d.mnt)
    os.listdir(d.mnt)
    # The first write after mounting also asks for security.capability
    # (GETXATTR); the daemon answers ENOSYS and the kernel never asks again.
    echo(schemata, schemata_line)

    for path in [schemata] + ([counter_file] if counter_file else []):
        rel = os.path.relpath(path, d.mnt)
        expect("cat %s" % rel,
               measure(lambda: subprocess.check_call(["cat", path], stdout=subprocess.DEVNULL)),
               {"OPEN": 1, "GETATTR": 1, "READ": 2, "RELEASE": 1})
        expect("open+read+close %s" % rel, measure(lambda: read_close(path)),
               {"OPEN": 1, "READ": 2, "RELEASE": 1})
        fd = os.open(path, os.O_RDONLY)
        counter.held += 1
        expect("pread on a held fd of %s" % rel, measure(lambda: os.pread(fd, 4096, 0)),
               {"READ": 1})
        os.close(fd)
        counter.held -= 1
        # A read marks the inode's atime stale, so the first stat after it
        # asks the daemon (that is cat's GETATTR above); repeated stats of an
        # unchanged file must all be served from the kernel's cache.
        os.stat(path)
        expect("stat %s (cached)" % rel, measure(lambda: os.stat(path)), {})

    expect("readdir of the root (warm)", measure(lambda: os.listdir(d.mnt)), {})
    expect("echo > schemata", measure(lambda: echo(schemata, schemata_line)),
           {"OPEN": 1, "WRITE": 1, "RELEASE": 1})
    # The shell's redirection adds O_CREAT; with the dentry cached it is the same.
    expect("sh -c 'echo > schemata'",
           measure(lambda: subprocess.check_call(
               ["sh", "-c", "echo '%s' > '%s'" % (schemata_line.strip(), schemata)]),
),
           {"OPEN": 1, "WRITE": 1, "RELEASE": 1})

    # A group: its listing is cached like the root's, a tasks write is one command.
    group = os.path.join(d.mnt, "reqcount_grp")
    os.mkdir(group)
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        # The first listing fills the kernel's cache and marks the directory's
        # atime stale; the second refreshes the attributes (one GETATTR). From
        # then on a listing costs no request.
        os.listdir(group)
        os.listdir(group)
        expect("readdir of a group (warm)", measure(lambda: os.listdir(group)), {})
        tasks = os.path.join(group, "tasks")
        os.stat(tasks)
        expect("echo PID > tasks",
               measure(lambda: echo(tasks, "%d\n" % sleeper.pid)),
               {"OPEN": 1, "WRITE": 1, "RELEASE": 1})
    finally:
        sleeper.kill()
        sleeper.wait()
        os.rmdir(group)
    return failures


def main():
    if os.geteuid() != 0 or not os.access("/dev/fuse", os.R_OK | os.W_OK):
        print("SKIP: needs root and /dev/fuse")
        return SKIP
    if not shutil.which("fusermount3"):
        print("SKIP: fusermount3 not installed")
        return SKIP

    floor = find_binary("FLOOR_FS", "bench/floor_fs")
    resctrlfsd = find_binary("RESCTRLFSD", "daemon/resctrlfsd")
    if not floor:
        print("FAIL: floor_fs not built (build the floor_fs target)")
        return 1
    if not resctrlfsd:
        print("FAIL: resctrlfsd not built (build the resctrlfsd target)")
        return 1
    os.environ.setdefault("RESCTRLFSD", resctrlfsd)

    # intel-2s: an 11-bit L3 mask, so L3:0=7ff is a valid command.
    def start_floor():
        return Daemon("floor", [floor, "--domains", "2"])

    def start_resctrlfsd():
        return HarnessDaemon("intel-2s")

    failures = []
    for start in (start_floor, start_resctrlfsd):
        line = "L3:0=7ff\n"
        try:
            d = start()
        except RuntimeError as e:
            failures.append(str(e))
            continue
        try:
            failures += check_daemon(d, line)
        finally:
            d.close()
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
