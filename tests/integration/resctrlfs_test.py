#!/usr/bin/env python3
"""Integration test harness: the real resctrlfsd, mounted on a temporary
directory, used the way a shell would use /sys/fs/resctrl.

Python 3 standard library only. Typical test file (tests/integration/test_X.py,
registered automatically by CMake as ctest entry ``integration.test_X``)::

    import errno
    import resctrlfs_test as rt

    class Schemata(rt.ResctrlfsTestCase):
        PLATFORM = "intel-2s"         # --platform (built-in name or JSON file)
        OPTIONS = []                  # -o options, e.g. ["cdp", "debug"]
        MANUAL_CLOCK = False          # True: clock set to manual before the test

        def test_bad_mask(self):
            self.assertEqual(self.mkdir("g"), 0)
            self.assertEqual(self.write("g/schemata", "L3:0=0\\n"), errno.EINVAL)
            self.assertEqual(self.lcs(), "Mask can't be zero\\n")

    if __name__ == "__main__":
        rt.main()

Each test gets a fresh daemon (started in setUp with -f, a control socket and a
log file, stopped in tearDown with SIGTERM, killed and lazily unmounted if it
gets stuck). When a test fails, the daemon's log is printed.

Helpers on ResctrlfsTestCase (and on Mount, for tests that run several
daemons or start them differently):

    path(rel)                 absolute path inside the mount ("" is the root)
    read(rel) -> str          whole file (raises OSError)
    read_errno(rel)           (errno, text): (0, text) or (E..., None)
    write(rel, data) -> int   ONE os.write() of str/bytes on an fd opened
                              O_WRONLY|O_TRUNC; 0 on success, else the errno of
                              open() or write()
    lcs() -> str              info/last_cmd_status
    mkdir(rel, mode=0o755) / rmdir(rel) / rename(old, new)  -> errno (0 = ok)
    listdir(rel) -> sorted names
    ctl(dict) -> dict         one request on the control socket, the reply
    ctl_ok(dict) -> dict      the same, asserting "ok" is true
    stats() -> {OPCODE: n}    FUSE request counts; reset_stats()
    set_manual_clock(True) / advance(ms)    the simulated clock
    registers() -> [{"cpu","msr","value",...}]  the simulated RDT registers
    workload(tid=|cpu=, footprint_bytes=, bandwidth_mbps=, local_fraction=,
             write_fraction=)
    fail_writes(n, cpu=None)  make the next n configuration MSR writes fail
                              (counter reads' event selects are not counted)
    daemon_log() -> str

Waiting: wait_until(predicate, what) polls until predicate() is true and
returns its value. It has no deadline: how long an event takes depends on how
busy the machine is, so no verdict may hang on the clock; ctest's per-test
TIMEOUT is the only backstop, and a wait that lasts says on stderr what it
waits for (so a test killed by that TIMEOUT leaves its cause in the log).
Where a time bound is what a test checks (a product guarantee), the test
says so where it measures it.

Control socket requests ({"cmd": ...}): status, clock (mode manual|real, or
advance_ms N), workload, fault (fail_writes N [, cpu C]), registers, stats,
stats-reset. Errors come back as {"ok": false, "error": "..."}.

Each Mount passes --state-dir (self.state_dir, on /dev/shm when present), so
the state journal is active and a restart of the same Mount (stop()/kill()
then start()) restores the groups.

Environment: RESCTRLFSD and RESCTRLFSCTL name the binaries (CMake sets them;
without them build*/daemon/ of the repository is searched). RESCTRLFS_KEEP=1
keeps each test's temporary directories (log, socket, state). RESCTRLFS_LOG_LEVEL sets
the daemon's --log-level (default info).

The msr label (RESCTRLFS_BACKEND=msr): each Mount runs the real-hardware
path unchanged, resctrlfsd --backend msr --rdt-from-cpuid talking to
resctrl-msrd, both reading /dev/cpu/N/{cpuid,msr} and the sysfs topology from
resctrl-fakehw (a FUSE emulation of the kernel's CPU drivers over the
simulated PLATFORM; RESCTRL_MSRD and RESCTRLFS_FAKEHW name the binaries).
The simulated machine outlives restarts of the daemon and of the broker, as
hardware does. The knobs of the simulated machine (clock, workload, fault,
registers) go to resctrl-fakehw's control socket; what only the simulated
scheduler can do skips the test loudly (msr_skip()), as would what the msr
path does not do yet (msr_not_yet(); nothing is left there now). CPU hotplug ({"cmd": "cpu"}) goes to
resctrl-fakehw, which changes sysfs's online list as the kernel does; the
call returns once the daemon, which follows that file, agrees.
Mount.hw is the FakeHw, Mount.broker the Broker.

Skipping: main() exits 77 with a loud SKIP line when not root, when /dev/fuse
is unusable or fusermount3 is missing, and when a test skipped itself
(self.skipTest, its reason printed); ctest reports the file as skipped.
"""

import atexit
import errno
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

SKIP = 77
MSR = os.environ.get("RESCTRLFS_BACKEND") == "msr"
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def skip_reason():
    """Why mounting FUSE cannot work here, or None."""
    if os.geteuid() != 0:
        return "needs root (FUSE mounts with allow_other, the proc connector)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    try:
        fd = os.open("/dev/fuse", os.O_RDWR)
        os.close(fd)
    except OSError as e:
        return "/dev/fuse is unusable: %s" % e.strerror
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed"
    return None


_MODEL_DIR = []


def model_platform(model=106):
    """The path of a JSON profile of the kernel-behaviour transcript's model
    platform ("a worked transcript for a model platform"): Intel-like, two
    L3 domains of 4 CPUs, 11-bit masks, 16 MiB, CDP, 16 L3 CLOSIDs, MBA
    (linear, min 10, gran 10) with 8 CLOSIDs, 224 RMIDs, 24-bit counters.
    No built-in is that platform (intel-2s has Ice Lake-SP's 15 + 15
    CLOSIDs and 32-bit counters): a test profile, family 6 `model` (79:
    Broadwell-EP's, where Linux offers pseudo-locking, to have it with MBA)."""
    if not _MODEL_DIR:
        _MODEL_DIR.append(tempfile.mkdtemp(prefix="resctrlfs-model-platform-"))
        atexit.register(shutil.rmtree, _MODEL_DIR[0], True)
    path = os.path.join(_MODEL_DIR[0], "model-%d.json" % model)
    if not os.path.exists(path):
        with open(path, "w") as f:
            json.dump({
                "vendor": "GenuineIntel", "family": 6, "model": model, "stepping": 1,
                "cpus": [{"cpu": c, "package": c // 4, "l2": c, "l3": c // 4}
                         for c in range(8)],
                "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
                "l3_cat": {"cbm_len": 11, "num_closid": 16, "shareable_bits": 0,
                           "sparse": False, "cdp": True},
                "mba": {"num_closid": 8, "max_delay": 90, "linear": True,
                        "per_thread": False},
                "l3_mon": {"num_rmids": 224, "scale": 65536, "counter_width": 24,
                           "events": ["llc_occupancy", "mbm_total_bytes",
                                      "mbm_local_bytes"]},
                "sim": {"mem_bandwidth_mbps": 20000}}, f)
    return path


def require_fuse():
    """Exits 77 (ctest: skipped) with a loud message when FUSE is unusable."""
    reason = skip_reason()
    if reason:
        sys.stderr.write("SKIP: %s: %s\n" % (os.path.basename(sys.argv[0]), reason))
        sys.stdout.write("SKIP: %s\n" % reason)
        sys.exit(SKIP)


def _find_binary(env, rel):
    if os.environ.get(env):
        return os.environ[env]
    candidates = [os.path.join(REPO, "build", rel)]
    for d in sorted(os.listdir(REPO)):
        if d.startswith("build"):
            candidates.append(os.path.join(REPO, d, rel))
    for c in candidates:
        if os.access(c, os.X_OK):
            return c
    raise RuntimeError("%s not found: set %s or build it" % (rel, env))


# unshare(2) and mount(2) flags for private_mount_namespace().
CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_BIND = 4096


def private_mount_namespace():
    """Moves this (single-threaded) process into a mount namespace of its
    own, every mount private, so that mounts it makes next are seen by it and
    its children only. Returns libc (ctypes) for those mounts."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "unshare(CLONE_NEWNS): " + os.strerror(e))
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "mount --make-rprivate /: " + os.strerror(e))
    return libc


def daemon_binary():
    return _find_binary("RESCTRLFSD", "daemon/resctrlfsd")


def ctl_binary():
    return _find_binary("RESCTRLFSCTL", "daemon/resctrlfsctl")


def msr_skip(what):
    """Under the msr label, skips the calling test: `what` needs the simulated
    backend (the simulated scheduler, the manual clock), which real hardware and
    so the msr path do not have."""
    if MSR:
        raise unittest.SkipTest("msr label: %s is inherent to the simulated backend "
                                "(real hardware has no such knob)" % what)


def msr_not_yet(what):
    """Under the msr label, skips the calling test: `what` is missing from
    the msr path but not inherent to it (docs/limitations.md)."""
    if MSR:
        raise unittest.SkipTest("msr label: NOT YET: %s" % what)


# After this long, a wait_until that is still waiting says so on stderr, once
# (the test goes on waiting: this is a diagnostic, never a verdict).
WAIT_REPORT_S = 60


def wait_until(predicate, what, interval=0.02, give_up=None, report=None):
    """Calls predicate() every `interval` seconds until it returns a true
    value, and returns that value.

    There is no deadline: an event awaited here comes late on a busy machine,
    not never, and ctest's per-test TIMEOUT ends a test that truly hangs.
    After WAIT_REPORT_S seconds without it the wait says on stderr that it
    is still waiting for `what` (with report()'s text, e.g. a daemon's log),
    so that such a test's output names what never came.

    give_up: called when predicate() was false; a true value means the event
    can no longer come (e.g. the process that would make it exited): the
    wait raises RuntimeError naming `what` and that value."""
    start = time.monotonic()
    reported = False
    while True:
        value = predicate()
        if value:
            return value
        if give_up is not None:
            why = give_up()
            if why:
                raise RuntimeError("gave up waiting for %s: %s" % (what, why))
        if not reported and time.monotonic() - start > WAIT_REPORT_S:
            reported = True
            extra = report() if report is not None else ""
            sys.stderr.write("still waiting for %s after %d s%s\n" % (
                what, WAIT_REPORT_S, (":\n" + extra) if extra else ""))
            sys.stderr.flush()
        time.sleep(interval)


class RequestCounter:
    """The FUSE requests an action causes, as a daemon counts them: counts()
    returns {OPCODE: n} since the last reset() (both callables given).

    RELEASE reaches the daemon asynchronously, after close() returned, as
    late as the machine's load makes it. So the counter keeps the balance of
    file opens and releases across resets and waits for events,
    not for quiet: before the reset, until every file the test does not hold
    open (`held`) was released (an earlier action's RELEASE must not be
    counted for this one); after the action, likewise (its own RELEASEs
    must be). Create it before the first reset (the counts then start at the
    daemon's start). Directories are not balanced: the daemon answers the
    first OPENDIR with ENOSYS (zero-message opendir), which has no
    RELEASEDIR, and the kernel sends neither from then on."""

    OPENS = ("OPEN", "CREATE")
    RELEASES = ("RELEASE",)

    def __init__(self, counts, reset):
        self._counts = counts
        self._reset = reset
        self.held = 0  # files the test keeps open across a measure()
        self._unreleased = 0  # opens minus releases counted before the last reset

    def _unreleased_in(self, counts):
        return (self._unreleased + sum(counts.get(k, 0) for k in self.OPENS) -
                sum(counts.get(k, 0) for k in self.RELEASES))

    def settled(self):
        """The counts since the last reset once every file but the held
        ones was released (no deadline)."""
        def balanced():
            c = self._counts()
            return (c,) if self._unreleased_in(c) <= self.held else None
        return wait_until(balanced, "the RELEASEs of closed files (%d held open)" % self.held,
                          interval=0.01)[0]

    def measure(self, action):
        """The non-zero request counts `action` causes, its RELEASEs included."""
        self._unreleased = self._unreleased_in(self.settled())
        self._reset()
        action()
        self.settled()
        time.sleep(0.05)  # a request nobody waits for (a FORGET) would show up now
        return {k: v for k, v in self._counts().items() if v}


def stop_process(proc, sig=signal.SIGTERM, timeout=10):
    """Sends `sig` to a child still running and waits `timeout` seconds for
    it, then kills it."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def exited(proc):
    """For wait_until's give_up: why waiting on what `proc` would do is
    pointless ("exited with status N"), or None while it runs."""
    rc = proc.poll()
    return None if rc is None else "exited with status %d" % rc


def read_log(path):
    """A log file's text, or "" when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# Every FakeHw and Broker this process started, stopped at exit: a test that
# expects a daemon to refuse to mount never calls cleanup(), and its
# emulated devices must not outlive it.
_STARTED = []


@atexit.register
def _stop_started():
    for thing in reversed(_STARTED):
        try:
            thing.stop()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


class FakeHw:
    """resctrl-fakehw serving a simulated PLATFORM's /dev/cpu, sysfs (and,
    with I/O RDT, /dev/mem and the IRDT table) under root/, its knobs on a
    control socket."""

    def __init__(self, platform, directory):
        _STARTED.append(self)
        self.root = os.path.join(directory, "hw")
        self.sock = os.path.join(directory, "hw.sock")
        self.log_path = os.path.join(directory, "fakehw.log")
        os.makedirs(self.root, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [_find_binary("RESCTRLFS_FAKEHW", "tests/hw/resctrl-fakehw"), "--platform",
                 platform, "--root", self.root, "--control", self.sock],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        dev = os.path.join(self.root, "dev")  # the FUSE mount: dev/cpu/N, dev/mem
        try:
            wait_until(lambda: is_mounted(dev) and socket_listens(self.sock),
                       "resctrl-fakehw to mount %s and listen" % dev,
                       give_up=lambda: exited(self.proc), report=self.log)
        except RuntimeError as e:
            self.stop()
            raise RuntimeError("resctrl-fakehw did not start (%s):\n%s" % (e, self.log()))

    def rdt(self):
        with open(os.path.join(self.root, "proc/cmdline")) as f:
            for word in f.read().split():
                if word.startswith("rdt="):
                    return word[4:]
        return ""

    def ctl(self, request):
        return control_request(self.sock, request)

    def log(self):
        return read_log(self.log_path)

    def stop(self):
        dev = os.path.join(self.root, "dev")
        stop_process(self.proc)
        if is_mounted(dev):
            subprocess.call(["fusermount3", "-uz", dev], stderr=subprocess.DEVNULL)


class Broker:
    """resctrl-msrd over a FakeHw's devices (its real /dev/cpu path)."""

    def __init__(self, hw, directory):
        self.hw = hw
        self.sock = os.path.join(directory, "msrd.sock")
        self.log_path = os.path.join(directory, "msrd.log")
        self.proc = None
        _STARTED.append(self)
        self.start()

    def start(self, allow_uid=None, probe_irdt_width=False):
        uid = os.getuid() if allow_uid is None else allow_uid
        argv = [_find_binary("RESCTRL_MSRD", "hw/resctrl-msrd"), "--socket", self.sock,
                "--hw-root", self.hw.root, "--allow-uid", str(uid)]
        # I/O RDT: the operator tells the width of registers whose RCS has
        # REGW clear (a single-channel RCS cannot be probed), unless the test
        # is about the broker's probe.
        wide = os.path.join(self.hw.root, "irdt_wide_bytes")
        if os.path.exists(wide) and not probe_irdt_width:
            with open(wide) as f:
                argv += ["--irdt-wide-bytes", f.read().strip()]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                argv,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_until(lambda: socket_listens(self.sock), "resctrl-msrd to listen",
                       give_up=lambda: exited(self.proc), report=self.log)
        except RuntimeError as e:
            raise RuntimeError("resctrl-msrd did not start (%s):\n%s" % (e, self.log()))

    def stop(self, sig=signal.SIGTERM):
        stop_process(self.proc, sig)
        if sig == signal.SIGKILL and os.path.exists(self.sock):
            os.unlink(self.sock)  # what systemd's RuntimeDirectory would clean

    def log(self):
        return read_log(self.log_path)


# Control requests that drive the simulated machine; under the msr label they
# go to resctrl-fakehw, which holds it.
HW_COMMANDS = ("clock", "workload", "fault", "registers", "delay", "counts", "fail_reads",
               "write")


def socket_listens(path):
    """True once a process accepts connections on the Unix socket at path.

    A file's existence is not enough: a daemon killed with SIGKILL leaves
    its socket behind, and its successor mounts before it replaces it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def cpu_ticks(pid):
    """utime + stime of process `pid`, all its threads, in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def idle_cpu_ticks_past_fd_limit(pid, connect, connections, seconds=5):
    """Opens `connections` idle connections with `connect()` to a server
    that has fewer descriptors left, and returns the CPU ticks process `pid`
    spent in the next `seconds` while they stay idle, with the connections
    (the caller closes them). A server that retries a failed accept() at
    once spins: about 100 ticks a second. Wall-clock time is not measured,
    only the CPU that a spin would burn."""
    conns = [connect() for _ in range(connections)]
    time.sleep(0.5)  # the accepts that can succeed
    before = cpu_ticks(pid)
    time.sleep(seconds)
    return cpu_ticks(pid) - before, conns


def control_request(sock_path, request):
    """Sends one JSON request line to a control socket; returns the reply.

    Blocking, without a timeout: a busy daemon (or machine) answers late, and
    a connect() with the listen backlog full waits for a place in it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except BaseException:
        s.close()
        raise
    try:
        s.sendall((json.dumps(request) + "\n").encode())
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    return json.loads(buf.split(b"\n")[0])


def is_mounted(path):
    """True when `path` is a mount point in /proc/mounts (never touches it)."""
    path = os.path.realpath(path)
    with open("/proc/mounts") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 1 and fields[1].replace("\\040", " ") == path:
                return True
    return False


class Mount:
    """One resctrlfsd process serving a fresh temporary mount point.

    platform: --platform; options: list of -o options; args: extra arguments;
    foreground: pass -f (the default; without it the daemon detaches and
    self.proc is the short-lived parent).
    Starting and stopping wait for the daemon's mount and exit without a
    deadline (wait_until).
    """

    def __init__(self, platform="intel-2s", options=(), args=(), foreground=True,
                 control=True, start=True):
        self.platform = platform
        self.options = list(options)
        self.args = list(args)
        self.foreground = foreground
        self.dir = tempfile.mkdtemp(prefix="resctrlfs-it-")
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)
        self.sock = os.path.join(self.dir, "control.sock") if control else None
        # The journal commits before each reply; on tmpfs that costs ~0.1 ms
        # instead of milliseconds of ext4 writeback per command.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.state_dir = tempfile.mkdtemp(prefix="resctrlfs-it-state-", dir=shm)
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.proc = None
        self.pid = None  # the serving process (differs from proc.pid when detached)
        self.hw = None
        self.broker = None
        if start:
            self.start()

    def argv(self):
        a = [daemon_binary()]
        if self.foreground:
            a.append("-f")
        # What outlives an unmount (max_threshold_occupancy, ...) is kept per
        # mount point; inside the test's directory it goes away with it.
        if MSR:
            self._ensure_hw()
            # What the test passes itself wins (an option given twice is a
            # usage error).
            for opt, value in (("--backend", "msr"), ("--broker", self.broker.sock),
                               ("--hw-root", self.hw.root), ("--rdt", self.hw.rdt())):
                if opt not in self.args and value:
                    a += [opt, value]
            a.append("--rdt-from-cpuid")
        else:
            a += ["--platform", self.platform]
        a += ["--state-dir", self.state_dir,
              "--boot-state-dir", os.path.join(self.dir, "boot"),
              "--log-level", os.environ.get("RESCTRLFS_LOG_LEVEL", "info")]
        if self.options:
            a += ["-o", ",".join(self.options)]
        if self.sock:
            a += ["--control", self.sock]
        args = list(self.args)
        if MSR and "--dump-registers-on-exit" in args:
            # The daemon has no simulated machine to dump; the registers are
            # resctrl-fakehw's, written by stop() once the daemon is gone.
            i = args.index("--dump-registers-on-exit")
            self._dump_on_exit = args[i + 1]
            del args[i:i + 2]
        return a + args + [self.mnt]

    def _ensure_hw(self):
        if MSR and self.hw is None:
            self.hw = FakeHw(self.platform, self.dir)
            self.broker = Broker(self.hw, self.dir)

    def start(self):
        self._ensure_hw()
        log = open(self.log_path, "ab")
        try:
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        finally:
            log.close()
        if not self.foreground:
            # The parent exits once the daemon has detached.
            rc = self.proc.wait()
            if rc != 0:
                raise RuntimeError("resctrlfsd exited %d:\n%s" % (rc, self.daemon_log()))
        try:
            wait_until(lambda: is_mounted(self.mnt) and
                       (not self.sock or socket_listens(self.sock)),
                       "resctrlfsd to mount %s" % self.mnt,
                       give_up=lambda: self.foreground and exited(self.proc),
                       report=self.daemon_log)
        except RuntimeError as e:
            raise RuntimeError("resctrlfsd %s before mounting:\n%s" %
                               (exited(self.proc), self.daemon_log())) from e
        self.pid = self.proc.pid if self.foreground else self._pid_from_lock()
        return self

    def _pid_from_lock(self):
        for name in os.listdir(self.state_dir):
            if name.endswith(".lock"):
                with open(os.path.join(self.state_dir, name)) as f:
                    return int(f.read().strip())
        raise RuntimeError("no lock file in " + self.state_dir)

    def alive(self):
        if self.pid is None:
            return False
        if self.foreground:
            return self.proc.poll() is None
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        # A zombie is not alive (the detached daemon is not our child).
        try:
            with open("/proc/%d/stat" % self.pid) as f:
                return f.read().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False

    def _wait_gone(self, what="resctrlfsd to exit"):
        """Waits (no deadline) until the daemon has exited; True."""
        return wait_until(lambda: not self.alive(), what, report=self.daemon_log)

    def stop(self, sig=signal.SIGTERM):
        """Signals the daemon and waits for it to exit (no deadline: a
        daemon that ignores the signal hangs the test until ctest's TIMEOUT,
        its log on stderr after WAIT_REPORT_S); returns its exit status (None
        if detached), then unmounts lazily whatever is left mounted."""
        rc = None
        if self.alive():
            os.kill(self.pid, sig)
            self._wait_gone("resctrlfsd to exit on signal %d" % sig)
            if self.foreground:
                rc = self.proc.wait()
        elif self.foreground and self.proc is not None:
            rc = self.proc.wait()
        self._force_unmount()
        if MSR and getattr(self, "_dump_on_exit", None):
            with open(self._dump_on_exit, "w") as f:
                json.dump({"registers": self.hw.ctl({"cmd": "registers"})["registers"]}, f)
        return rc

    def kill(self):
        if self.alive():
            os.kill(self.pid, signal.SIGKILL)
            if self.foreground:
                self.proc.wait()
            else:
                self._wait_gone("resctrlfsd to die of SIGKILL")
        self._force_unmount()

    def _force_unmount(self):
        if is_mounted(self.mnt):
            subprocess.call(["fusermount3", "-uz", self.mnt], stderr=subprocess.DEVNULL)
        if is_mounted(self.mnt):
            subprocess.call(["umount", "-l", self.mnt], stderr=subprocess.DEVNULL)

    def cleanup(self):
        """Stops the daemon if needed and removes the temporary directory
        (never while something is still mounted there)."""
        try:
            if self.alive():
                self.stop()
        finally:
            self._force_unmount()
            if self.broker:
                self.broker.stop()
            if self.hw:
                self.hw.stop()
            if not is_mounted(self.mnt) and not os.environ.get("RESCTRLFS_KEEP"):
                shutil.rmtree(self.dir, ignore_errors=True)
                shutil.rmtree(self.state_dir, ignore_errors=True)

    def daemon_log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        if self.broker:
            text += "--- resctrl-msrd ---\n" + self.broker.log()
        if self.hw:
            text += "--- resctrl-fakehw ---\n" + self.hw.log()
        return text

    # --- the shell's view -------------------------------------------------

    def path(self, rel=""):
        return os.path.join(self.mnt, rel) if rel else self.mnt

    def read(self, rel):
        with open(self.path(rel)) as f:
            return f.read()

    def read_errno(self, rel):
        try:
            return 0, self.read(rel)
        except OSError as e:
            return e.errno, None

    def write(self, rel, data, flags=os.O_WRONLY | os.O_TRUNC):
        if isinstance(data, str):
            data = data.encode()
        try:
            fd = os.open(self.path(rel), flags)
        except OSError as e:
            return e.errno
        try:
            os.write(fd, data)
            return 0
        except OSError as e:
            return e.errno
        finally:
            os.close(fd)

    def lcs(self):
        return self.read("info/last_cmd_status")

    @staticmethod
    def _errno_of(fn, *args):
        try:
            fn(*args)
            return 0
        except OSError as e:
            return e.errno

    def mkdir(self, rel, mode=0o755):
        return self._errno_of(os.mkdir, self.path(rel), mode)

    def rmdir(self, rel):
        return self._errno_of(os.rmdir, self.path(rel))

    def rename(self, old, new):
        return self._errno_of(os.rename, self.path(old), self.path(new))

    def listdir(self, rel=""):
        return sorted(os.listdir(self.path(rel)))

    # --- the control socket -----------------------------------------------

    def ctl(self, request):
        if MSR and request.get("cmd") in HW_COMMANDS:
            if request.get("cmd") == "workload" and "tid" in request:
                msr_skip("a thread workload (tagging threads needs the simulated scheduler)")
            return self.hw.ctl(request)
        if MSR and request.get("cmd") == "cpu":
            return self._hotplug(request)
        if not self.sock:
            raise RuntimeError("started without a control socket")
        return control_request(self.sock, request)

    def _hotplug(self, request):
        """Under the msr label: resctrl-fakehw takes the CPU away or brings it
        back and says so in sysfs's online list, as the kernel does; the
        daemon follows that file on its 1 s tick. Returns the machine's reply
        once the daemon's online CPUs (status) are the machine's (however
        many ticks a busy machine takes)."""
        reply = self.hw.ctl(request)
        if not reply.get("ok"):
            return reply
        wait_until(lambda: self.status()["daemon"].get("online_cpus") == reply["online_cpus"],
                   "the daemon to follow CPU %d %s" % (
                       request["cpu"], "online" if request["online"] else "offline"),
                   interval=0.05, report=lambda: self.daemon_log()[-3000:])
        return reply

    def ctl_ok(self, request):
        r = self.ctl(request)
        if not r.get("ok"):
            raise AssertionError("control request %s failed: %s" % (request, r))
        return r

    def stats(self):
        return self.ctl_ok({"cmd": "stats"})["requests"]

    def reset_stats(self):
        self.ctl_ok({"cmd": "stats-reset"})

    def set_manual_clock(self, manual=True):
        return self.ctl_ok({"cmd": "clock", "mode": "manual" if manual else "real"})

    def advance(self, ms):
        return self.ctl_ok({"cmd": "clock", "advance_ms": int(ms)})

    def registers(self):
        return self.ctl_ok({"cmd": "registers"})["registers"]

    def workload(self, tid=None, cpu=None, footprint_bytes=0, bandwidth_mbps=0.0,
                 local_fraction=1.0, write_fraction=None):
        req = {"cmd": "workload", "footprint_bytes": int(footprint_bytes),
               "bandwidth_mbps": float(bandwidth_mbps), "local_fraction": float(local_fraction)}
        if write_fraction is not None:
            req["write_fraction"] = float(write_fraction)
        if tid is not None:
            req["tid"] = int(tid)
        if cpu is not None:
            req["cpu"] = int(cpu)
        return self.ctl_ok(req)

    def fail_writes(self, n, cpu=None):
        req = {"cmd": "fault", "fail_writes": int(n)}
        if cpu is not None:
            req["cpu"] = int(cpu)
        return self.ctl_ok(req)

    def status(self):
        return self.ctl_ok({"cmd": "status"})


class ResctrlfsTestCase(unittest.TestCase):
    """A test with its own freshly mounted daemon in self.fs (a Mount).

    Class attributes choose the daemon: PLATFORM, OPTIONS (-o list), ARGS
    (extra arguments), MANUAL_CLOCK. The Mount helpers are available directly
    on the test (self.write(...), self.lcs(), ...).
    """

    PLATFORM = "intel-2s"
    OPTIONS = []
    ARGS = []
    MANUAL_CLOCK = False

    def setUp(self):
        self.fs = Mount(platform=self.PLATFORM, options=self.OPTIONS, args=self.ARGS)
        self.addCleanup(self._stop_daemon)
        if self.MANUAL_CLOCK:
            self.fs.set_manual_clock(True)

    def _stop_daemon(self):
        failed = self._outcome_failed()
        if failed:
            sys.stderr.write("\n--- resctrlfsd log (%s) ---\n%s--- end of log ---\n" %
                             (self.id(), self.fs.daemon_log()))
        self.fs.cleanup()

    def _outcome_failed(self):
        outcome = getattr(self, "_outcome", None)
        return outcome is not None and not getattr(outcome, "success", True)

    def __getattr__(self, name):
        # Delegate the Mount helpers (path, read, write, lcs, mkdir, ctl, ...).
        if name != "fs" and "fs" in self.__dict__ and hasattr(self.fs, name):
            return getattr(self.fs, name)
        raise AttributeError(name)


def main():
    """Entry point of a test file: skip loudly (77) without FUSE, else run.

    Exits 1 if a test failed or none ran; else 77 (ctest: Skipped) if any
    test skipped itself (self.skipTest), each reason printed, so that a file
    whose tests did not all run is never reported as Passed; else 0."""
    require_fuse()
    result = unittest.main(verbosity=2, exit=False).result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun == 0:
        sys.stderr.write("FAIL: %s ran no tests\n" % os.path.basename(sys.argv[0]))
        sys.exit(1)
    if result.skipped:
        for test, reason in result.skipped:
            sys.stderr.write("SKIP: %s: %s\n" % (test.id(), reason))
        sys.stdout.write("SKIP: %d of %d tests skipped themselves (reasons above)\n"
                         % (len(result.skipped), result.testsRun))
        sys.exit(SKIP)
    sys.exit(0)


if __name__ == "__main__":
    require_fuse()
    print("resctrlfs_test.py is a library; run the test_*.py files")
