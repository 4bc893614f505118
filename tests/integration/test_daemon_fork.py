#!/usr/bin/env python3
"""Task inheritance at fork: a child forked after its parent was moved into a
group appears in that group's tasks (the kernel's resctrl copies the CLOSID/RMID
of the thread that called clone), threads likewise, and threads that exit leave
every tasks file. The group comes from the creating *thread*, not from its
process's main thread, and a clone(CLONE_PARENT) child inherits from the thread
that cloned it, not from the parent it is given (the daemon reads the
sched:sched_process_fork tracepoint). Without perf the daemon falls back to
the proc connector's per-process view and says so."""

import os
import platform
import signal
import subprocess
import sys

import resctrlfs_test as rt

# Waits for "go" on stdin, forks a child that sleeps, prints the child's pid,
# then waits for stdin to close.
FORKER = r"""
import os, sys, time
sys.stdin.readline()
pid = os.fork()
if pid == 0:
    # Do not hold the test's pipes open after the test.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    time.sleep(60)
    os._exit(0)
print(pid, flush=True)
sys.stdin.readline()
os.kill(pid, 9)
os.waitpid(pid, 0)
"""

# Starts a thread after "go" and prints its thread id.
THREADER = r"""
import sys, threading
sys.stdin.readline()
ready = threading.Event()
stop = threading.Event()
tid = []
def run():
    tid.append(threading.get_native_id())
    ready.set()
    stop.wait()
t = threading.Thread(target=run)
t.start()
ready.wait()
print(tid[0], flush=True)
sys.stdin.readline()
stop.set()
t.join()
"""


# A process whose main thread and a worker thread can be put in different
# groups. Prints the worker's tid, then obeys one command per stdin line, run
# on the worker thread: "thread" creates a thread and prints its tid, "clone"
# makes a clone(CLONE_PARENT) child (so the child's parent is this process's
# parent, the test) and prints its pid, "chain" forks a child that at once
# forks a grandchild that at once creates a thread, and prints the three ids.
HELPER = r"""
import ctypes, os, platform, queue, sys, threading, time
SYS_CLONE = {"x86_64": 56, "aarch64": 220}[platform.machine()]
CLONE_PARENT = 0x00008000
SIGCHLD = 17
# PyDLL keeps the GIL across the call: the clone child returns holding it,
# alone in its copy of the interpreter, and only ever blocks in pause().
libc = ctypes.PyDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
cmds = queue.Queue()
stop = threading.Event()

def say(text):
    os.write(1, (text + "\n").encode())

def worker():
    while True:
        cmd = cmds.get()
        if cmd is None:
            return
        if cmd == "thread":
            tid = []
            ready = threading.Event()
            def run():
                tid.append(threading.get_native_id())
                ready.set()
                stop.wait()
            threading.Thread(target=run, daemon=True).start()
            ready.wait()
            say(str(tid[0]))
        elif cmd == "clone":
            pid = libc.syscall(ctypes.c_long(SYS_CLONE), ctypes.c_long(CLONE_PARENT | SIGCHLD),
                               ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(0),
                               ctypes.c_long(0))
            if pid == 0:
                while True:
                    libc.pause()
            say(str(pid) if pid > 0 else "error %d" % ctypes.get_errno())
        elif cmd == "chain":
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                # Child and grandchild report through the pipe, then wait to
                # be killed with their process group.
                os.close(r)
                gpid = os.fork()
                if gpid == 0:
                    ids = []
                    ready = threading.Event()
                    def run():
                        ids.append(threading.get_native_id())
                        ready.set()
                        time.sleep(600)
                    threading.Thread(target=run, daemon=True).start()
                    ready.wait()
                    os.write(w, ("%d %d\n" % (os.getpid(), ids[0])).encode())
                    time.sleep(600)
                    os._exit(0)
                time.sleep(600)
                os._exit(0)
            os.close(w)
            with os.fdopen(r) as f:
                gpid, gtid = f.readline().split()
            say("%d %s %s" % (pid, gpid, gtid))

t = threading.Thread(target=worker)
t.start()
say(str(t.native_id))
for line in sys.stdin:
    cmds.put(line.strip())
cmds.put(None)
stop.set()
t.join()
"""


# Runs the command in argv[1:] with perf_event_open(2) failing with EPERM (a
# seccomp filter, inherited across exec), as on a host where the daemon may
# not use perf: it must fall back to the proc connector's forks.
NO_PERF_LAUNCHER = r"""
import ctypes, os, platform, struct, sys
ARCH = {"x86_64": (0xC000003E, 298), "aarch64": (0xC00000B7, 241)}
audit_arch, nr = ARCH[platform.machine()]
def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
LD_ABS_W, JEQ_K, RET_K = 0x20, 0x15, 0x06
prog = b"".join([
    insn(LD_ABS_W, 0, 0, 4),            # seccomp_data.arch
    insn(JEQ_K, 0, 3, audit_arch),
    insn(LD_ABS_W, 0, 0, 0),            # seccomp_data.nr
    insn(JEQ_K, 0, 1, nr),
    insn(RET_K, 0, 0, 0x00050000 | 1),  # SECCOMP_RET_ERRNO | EPERM
    insn(RET_K, 0, 0, 0x7FFF0000),      # SECCOMP_RET_ALLOW
])
class Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]
fprog = Fprog(len(prog) // 8, prog)
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
    sys.exit("seccomp: errno %d" % ctypes.get_errno())
os.execv(sys.argv[1], sys.argv[1:])
"""


class NoPerfMount(rt.Mount):
    def argv(self):
        return [sys.executable, "-c", NO_PERF_LAUNCHER] + super().argv()


def private_tracefs_mounts():
    """tracefs mounts the daemon made for itself (it must not leave any)."""
    with open("/proc/self/mounts") as f:
        return [line for line in f
                if line.split()[2:3] == ["tracefs"] and "resctrlfsd-tracefs." in line]


def tasks(fs, group):
    return {int(t) for t in fs.read(os.path.join(group, "tasks")).split()}


class HelperProcesses(rt.ResctrlfsTestCase):
    def spawn(self, script):
        p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        self.addCleanup(self.reap, p)
        return p

    @staticmethod
    def reap(p):
        # Closing stdin makes the helper kill its child before it exits.
        try:
            p.stdin.close()
            p.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
            p.wait()

    def readline(self, p):
        # However long a busy machine makes the helper take: it answers, or
        # it exits and the line is empty.
        line = p.stdout.readline()
        self.assertTrue(line, "helper process exited without answering (status %s)" % p.poll())
        return line


class ForkInheritance(HelperProcesses):
    def test_forked_child_inherits_the_group(self):
        self.assertEqual(self.mkdir("g"), 0)
        p = self.spawn(FORKER)
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0, self.lcs())
        self.assertIn(p.pid, tasks(self, "g"))
        p.stdin.write("go\n")
        p.stdin.flush()
        child = int(self.readline(p))
        # No sleep: the fork event is consumed before a tasks file is opened.
        self.assertIn(child, tasks(self, "g"))
        self.assertNotIn(child, tasks(self, ""))
        p.stdin.close()
        p.wait()
        # The helper killed its child before exiting; the child's exit event
        # reaches the daemon some time later.
        rt.wait_until(lambda: child not in tasks(self, "g"),
                      "the exited child %d to leave g/tasks" % child, interval=0.05)

    def test_child_of_a_mon_group_member_inherits_the_mon_group(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        p = self.spawn(FORKER)
        # A task enters a MON group from its parent CTRL_MON group.
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0, self.lcs())
        self.assertEqual(self.write("g/mon_groups/m/tasks", "%d\n" % p.pid), 0, self.lcs())
        p.stdin.write("go\n")
        p.stdin.flush()
        child = int(self.readline(p))
        self.assertIn(child, tasks(self, "g/mon_groups/m"))
        self.assertIn(child, tasks(self, "g"))  # a CTRL_MON group lists its MON groups' tasks

    def test_new_thread_inherits_the_group(self):
        self.assertEqual(self.mkdir("g"), 0)
        p = self.spawn(THREADER)
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0, self.lcs())
        p.stdin.write("go\n")
        p.stdin.flush()
        tid = int(self.readline(p))
        self.assertIn(tid, tasks(self, "g"))
        p.stdin.write("stop\n")
        p.stdin.flush()
        p.wait()
        self.assertNotIn(tid, tasks(self, "g"))

    def test_child_forked_before_the_move_stays_behind(self):
        self.assertEqual(self.mkdir("g"), 0)
        p = self.spawn(FORKER)
        p.stdin.write("go\n")
        p.stdin.flush()
        child = int(self.readline(p))
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0, self.lcs())
        self.assertIn(p.pid, tasks(self, "g"))
        self.assertNotIn(child, tasks(self, "g"))
        self.assertIn(child, tasks(self, ""))


class InheritanceFromTheCreatingThread(HelperProcesses):
    """The main thread of the helper is in group "b", its worker thread in
    group "a": whatever the worker creates belongs to "a"."""

    def setUp(self):
        super().setUp()
        if platform.machine() not in ("x86_64", "aarch64"):
            self.skipTest("clone syscall number unknown for " + platform.machine())
        self.assertEqual(self.mkdir("a"), 0)
        self.assertEqual(self.mkdir("b"), 0)
        self.helper = self.spawn(HELPER)
        self.worker = int(self.readline(self.helper))
        self.assertEqual(self.write("b/tasks", "%d\n" % self.helper.pid), 0, self.lcs())
        self.assertEqual(self.write("a/tasks", "%d\n" % self.worker), 0, self.lcs())
        self.assertEqual(tasks(self, "a"), {self.worker})
        self.assertEqual(tasks(self, "b"), {self.helper.pid})

    def command(self, cmd):
        self.helper.stdin.write(cmd + "\n")
        self.helper.stdin.flush()
        return self.readline(self.helper).split()

    def test_new_thread_inherits_the_group_of_the_thread_that_created_it(self):
        tid = int(self.command("thread")[0])
        self.assertIn(tid, tasks(self, "a"))
        self.assertNotIn(tid, tasks(self, "b"))
        self.assertNotIn(tid, tasks(self, ""))

    def test_clone_parent_child_inherits_the_cloner_not_its_parent(self):
        reply = self.command("clone")
        self.assertNotEqual(reply[0], "error", reply)
        child = int(reply[0])
        self.addCleanup(self.kill_clone_child, child)
        # The child's parent is this test process (root group); the kernel
        # still copies the group of the thread that called clone.
        self.assertEqual(os.waitpid(child, os.WNOHANG), (0, 0), "the child is not ours")
        self.assertIn(child, tasks(self, "a"))
        self.assertNotIn(child, tasks(self, ""))
        self.assertNotIn(child, tasks(self, "b"))

    def test_descendants_created_in_quick_succession_all_inherit(self):
        # Each creation runs at once on whichever CPU the new task got: the
        # events of the child, the grandchild and its thread may sit in
        # different per-CPU buffers.
        pid, gpid, gtid = (int(x) for x in self.command("chain"))
        self.addCleanup(self.kill_tasks, pid, gpid)
        members = tasks(self, "a")
        for t in (pid, gpid, gtid):
            self.assertIn(t, members)
        self.assertFalse({pid, gpid, gtid} & tasks(self, ""))

    def test_no_tracefs_mount_is_left_behind(self):
        self.assertEqual(private_tracefs_mounts(), [])
        with open("/proc/%d/mounts" % self.fs.pid) as f:
            self.assertNotIn("resctrlfsd-tracefs.", f.read())
        self.assertNotIn("inheritance is per process", self.fs.daemon_log())

    @staticmethod
    def kill_clone_child(pid):
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass

    @staticmethod
    def kill_tasks(*pids):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


# Starts a thread, prints its id; on "go" that thread (not the main one)
# calls exec, and the new program prints its pid and waits for stdin to close.
EXEC_FROM_THREAD = r"""
import os, sys, threading
go = threading.Event()
def run():
    print(threading.get_native_id(), flush=True)
    go.wait()
    os.execv(sys.executable, [sys.executable, "-c",
             "import os, sys; print(os.getpid(), flush=True); sys.stdin.read()"])
threading.Thread(target=run).start()
sys.stdin.readline()
go.set()
threading.Event().wait()
"""


class TasksListing(HelperProcesses):
    """What the tasks files list comes from the daemon's thread table, kept
    from the proc connector's fork, exec and exit events (read from /proc
    once at start): a thread is listed as soon as it exists and gone as soon
    as it exited, moves are seen by the next read, and an exec from a
    non-leader thread leaves the process with one id."""

    LISTING = "thread table"

    def setUp(self):
        super().setUp()
        if self.LISTING == "thread table" and NO_CONNECTOR in self.fs.daemon_log():
            self.skipTest("the proc connector cannot be opened here (daemon log)")

    def test_the_listing_comes_from_where_it_should(self):
        self.assertEqual(self.status()["tasks_listing"], self.LISTING)

    def test_a_new_thread_is_listed_and_an_exited_one_is_not(self):
        p = self.spawn(THREADER)
        self.assertIn(p.pid, tasks(self, ""))
        p.stdin.write("go\n")
        p.stdin.flush()
        tid = int(self.readline(p))
        self.assertIn(tid, tasks(self, ""))
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/tasks", "%d\n" % tid), 0, self.lcs())
        self.assertEqual(tasks(self, "g"), {tid})
        self.assertNotIn(tid, tasks(self, ""))
        self.assertEqual(self.write("tasks", "%d\n" % tid), 0, self.lcs())
        self.assertEqual(tasks(self, "g"), set())
        self.assertIn(tid, tasks(self, ""))
        p.stdin.write("stop\n")
        p.stdin.flush()
        p.wait()
        listed = tasks(self, "")
        self.assertNotIn(tid, listed)
        self.assertNotIn(p.pid, listed)

    def test_exec_from_a_thread_leaves_one_id(self):
        self.assertEqual(self.mkdir("g"), 0)
        p = self.spawn(EXEC_FROM_THREAD)
        tid = int(self.readline(p))
        self.assertEqual(self.write("g/tasks", "%d\n" % p.pid), 0, self.lcs())
        self.assertEqual(tasks(self, "g"), {p.pid})
        self.assertIn(tid, tasks(self, ""))
        p.stdin.write("go\n")
        p.stdin.flush()
        self.assertEqual(int(self.readline(p)), p.pid)
        # The exec'ing thread took the process id; its old id is gone. (The
        # kernel keeps the exec'ing thread's own group; the table cannot
        # tell which thread it was, so only the id set is checked.)
        listed = tasks(self, "") | tasks(self, "g")
        self.assertIn(p.pid, listed)
        self.assertNotIn(tid, listed)

    def test_the_default_group_lists_every_thread_of_the_system(self):
        def all_threads():
            found = set()
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        found |= {int(t) for t in os.listdir("/proc/%s/task" % entry)}
                    except OSError:
                        pass
            return found
        before = all_threads()
        listed = tasks(self, "")
        after = all_threads()
        # Threads come and go meanwhile (other builds); those that were there
        # before and after the listing were there throughout.
        self.assertIn(os.getpid(), listed)
        self.assertEqual((before & after) - listed, set())

    def test_an_exited_process_is_listed_until_it_is_reaped(self):
        # A process that exited is a zombie until its parent waits for it:
        # the kernel's tasks files and /proc list it meanwhile (its exit was
        # reported when it exited, not when it was reaped).
        self.assertEqual(self.mkdir("g"), 0)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        os.close(r)
        try:
            self.assertEqual(self.write("g/tasks", "%d\n" % pid), 0, self.lcs())
        finally:
            os.close(w)  # the child exits
        def zombie():
            with open("/proc/%d/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        rt.wait_until(zombie, "child %d to exit" % pid, interval=0.01)
        try:
            self.assertEqual(tasks(self, "g"), {pid})
            self.assertNotIn(pid, tasks(self, ""))
        finally:
            os.waitpid(pid, 0)
        self.assertEqual(tasks(self, "g"), set())
        self.assertNotIn(pid, tasks(self, ""))


# What the daemon logs when it cannot open the proc connector.
NO_CONNECTOR = "tasks files walk /proc at each listing"

# Forks N children that exit at once: 2 connector events each.
FLOOD = r"""
import os, sys
for _ in range(int(sys.argv[1])):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
"""


class TasksListingAfterLostEvents(HelperProcesses):
    """When the connector's socket overflows (events lost while the daemon
    did not read them), the daemon reads the thread table again from /proc:
    a thread born and one dead while events were being dropped are listed
    right afterwards."""

    def setUp(self):
        super().setUp()
        if NO_CONNECTOR in self.fs.daemon_log():
            self.skipTest("the proc connector cannot be opened here (daemon log)")

    def test_overflow_rereads_the_table(self):
        self.assertEqual(self.status()["tasks_listing"], "thread table")
        self.assertEqual(self.mkdir("g"), 0)
        dying = self.spawn(THREADER)
        dying.stdin.write("go\n")
        dying.stdin.flush()
        dead_tid = int(self.readline(dying))
        self.assertEqual(self.write("g/tasks", "%d\n" % dead_tid), 0, self.lcs())
        self.assertEqual(tasks(self, "g"), {dead_tid})
        os.kill(self.fs.pid, signal.SIGSTOP)
        try:
            # Fill the connector's socket buffer, then make the events that
            # matter: they are dropped.
            # A bounded count, not a time: 12000 forks take what they take
            # on a busy machine (the daemon is stopped meanwhile, so it can
            # only overflow).
            subprocess.run([sys.executable, "-c", FLOOD, "12000"], check=True)
            dying.stdin.write("stop\n")
            dying.stdin.flush()
            dying.wait()
            born = self.spawn(THREADER)
            born.stdin.write("go\n")
            born.stdin.flush()
            born_tid = int(self.readline(born))
        finally:
            os.kill(self.fs.pid, signal.SIGCONT)
        listed = tasks(self, "")
        self.assertGreaterEqual(self.status()["thread_table_rescans"], 1,
                                "the connector did not overflow")
        self.assertIn(born_tid, listed)
        self.assertIn(born.pid, listed)
        self.assertEqual(tasks(self, "g"), set())
        self.assertNotIn(dead_tid, listed)


class TasksListingWalkingProc(TasksListing):
    """The same with --tasks-from-proc: every listing walks /proc, as the
    daemon does when the proc connector cannot be opened."""

    ARGS = ["--tasks-from-proc"]
    LISTING = "proc walk"


class FallbackToTheProcConnector(InheritanceFromTheCreatingThread):
    """Without perf (perf_event_open fails) the daemon says that inheritance
    is per process and takes forks from the proc connector: children of a
    process still inherit, a new thread gets its main thread's group."""

    def setUp(self):
        if platform.machine() not in ("x86_64", "aarch64"):
            self.skipTest("seccomp filter written for x86_64 and aarch64 only")
        self.fs = NoPerfMount(platform=self.PLATFORM)
        self.addCleanup(self._stop_daemon)
        self.assertIn("inheritance is per process", self.fs.daemon_log())
        self.assertEqual(self.mkdir("a"), 0)
        self.assertEqual(self.mkdir("b"), 0)
        self.helper = self.spawn(HELPER)
        self.worker = int(self.readline(self.helper))
        self.assertEqual(self.write("b/tasks", "%d\n" % self.helper.pid), 0, self.lcs())
        self.assertEqual(self.write("a/tasks", "%d\n" % self.worker), 0, self.lcs())

    def test_new_thread_inherits_the_group_of_the_thread_that_created_it(self):
        # The connector names the process, not the creating thread.
        tid = int(self.command("thread")[0])
        self.assertIn(tid, tasks(self, "b"))
        self.assertNotIn(tid, tasks(self, "a"))

    def test_clone_parent_child_inherits_the_cloner_not_its_parent(self):
        # The connector names the real parent (this test, in the root group).
        child = int(self.command("clone")[0])
        self.addCleanup(self.kill_clone_child, child)
        self.assertIn(child, tasks(self, ""))
        self.assertNotIn(child, tasks(self, "a"))

    def test_no_tracefs_mount_is_left_behind(self):
        # perf_event_open failed after tracefs was mounted and read.
        self.assertEqual(private_tracefs_mounts(), [])


if __name__ == "__main__":
    rt.main()
