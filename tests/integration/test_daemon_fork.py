#!/usr/bin/env python3
"""Task events from the kernel's proc connector: a child forked after its
parent was moved into a group appears in that group's tasks (the kernel's
resctrl copies the parent's CLOSID/RMID at fork), threads likewise, and
threads that exit leave every tasks file."""

import os
import select
import subprocess
import sys
import time

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


def tasks(fs, group):
    return {int(t) for t in fs.read(os.path.join(group, "tasks")).split()}


class ForkInheritance(rt.ResctrlfsTestCase):
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

    def readline(self, p, timeout=10):
        r, _, _ = select.select([p.stdout], [], [], timeout)
        self.assertTrue(r, "helper process did not answer")
        return p.stdout.readline()

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
        p.wait(timeout=10)
        deadline = time.time() + 5
        while child in tasks(self, "g") and time.time() < deadline:
            time.sleep(0.05)
        self.assertNotIn(child, tasks(self, "g"), "an exited child stays listed")

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
        p.wait(timeout=10)
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


if __name__ == "__main__":
    rt.main()
