#!/usr/bin/env python3
"""tasks files and pid namespaces: the kernel reads an id written to tasks
in the writer's pid namespace and lists ids as the reader sees them,
leaving out the threads the reader cannot see. Processes in a new pid
namespace (`unshare -p -f --mount-proc`) read and write the mounted tree:
  - a reader there sees only its namespace's threads, with their ids there;
  - a writer there writing its namespace's id moves that thread (the host
    thread whose innermost NSpid is that id), not the host's thread of
    that number; `0` is the writer;
  - an id its namespace lacks (though the host has it) is ESRCH with the
    kernel's "No task <n>" text, naming the id as written.
A caller in the daemon's own namespace keeps its ids (the other tests)."""

import os
import subprocess

import resctrlfs_test as rt


def nspid(pid):
    """The NSpid line of host pid `pid`, as ints."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("NSpid:"):
                return [int(x) for x in line.split()[1:]]
    return []


class PidNamespace(rt.ResctrlfsTestCase):
    def setUp(self):
        probe = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            self.skipTest("unshare -p -f --mount-proc fails: " + probe.stderr.strip())
        super().setUp()

    def in_new_namespace(self, script):
        """Runs `script` (sh) as pid 1 of a new pid namespace, with $M the
        mount point; returns (returncode, stdout, stderr)."""
        out = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "sh", "-c", script],
                             capture_output=True, text=True, env=dict(os.environ, M=self.fs.path()))
        return out.returncode, out.stdout, out.stderr

    def test_reader_sees_its_namespace_with_its_ids(self):
        self.assertEqual(self.mkdir("g"), 0)
        # The shell (1) and a sleep in its namespace; the sleep moves to g.
        rc, out, err = self.in_new_namespace(
            'sleep 1000 & s=$!; echo "$s" > "$M/g/tasks" || exit 3; echo "sleep $s"; '
            'echo root; cat "$M/tasks"; echo g; cat "$M/g/tasks"; kill $s')
        self.assertEqual(rc, 0, err)
        lines = out.split()
        sleep = int(lines[1])
        root = [int(x) for x in lines[lines.index("root") + 1:lines.index("g")]]
        g = [int(x) for x in lines[lines.index("g") + 1:]]
        self.assertEqual(g, [sleep])
        # The namespace's own threads only: its init (1), the cat reading,
        # not the host's hundreds nor the sleep in g; ascending.
        self.assertIn(1, root)
        self.assertNotIn(sleep, root)
        self.assertEqual(root, sorted(root))
        self.assertLessEqual(len(root), 4, root)
        self.assertTrue(all(0 < t < 100 for t in root), root)

    def test_writer_moves_the_thread_its_id_names(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("h"), 0)
        # The namespace stays until the test closes its stdin.
        p = subprocess.Popen(
            ["unshare", "-p", "-f", "--mount-proc", "sh", "-c",
             'sleep 1000 & s=$!; echo "$s" > "$M/g/tasks" || exit 3; '
             'echo 1 > "$M/h/tasks" || exit 4; echo "$s"; read x; kill $s'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=dict(os.environ, M=self.fs.path()))
        self.addCleanup(p.wait)
        self.addCleanup(p.stdin.close)
        line = p.stdout.readline()
        self.assertTrue(line.strip(), p.stderr.read() if p.poll() is not None else "no output")
        sleep_ns = int(line)
        g = [int(x) for x in self.read("g/tasks").split()]
        h = [int(x) for x in self.read("h/tasks").split()]
        self.assertEqual(len(g), 1, g)
        self.assertEqual(len(h), 1, h)
        # Host threads in a deeper namespace, whose ids there are the ones
        # written: the sleep's, and the namespace's init (1).
        self.assertEqual(nspid(g[0])[-1], sleep_ns)
        self.assertEqual(len(nspid(g[0])), len(nspid(os.getpid())) + 1)
        self.assertEqual(nspid(h[0])[-1], 1)
        self.assertEqual(len(nspid(h[0])), len(nspid(os.getpid())) + 1)
        self.assertNotIn(1, h)

    def test_writer_id_missing_in_its_namespace_is_esrch(self):
        self.assertEqual(self.mkdir("g"), 0)
        host = os.getpid()  # exists on the host, not in the new namespace
        rc, out, err = self.in_new_namespace(
            'echo %d > "$M/g/tasks" && exit 3; cat "$M/info/last_cmd_status"' % host)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "No task %d\nError while processing task %d\n" % (host, host))
        self.assertEqual(self.read("g/tasks"), "")
        # 0 is the writer itself (the shell, 1 there; the cat it forks
        # afterwards inherits its group).
        rc, out, err = self.in_new_namespace('echo 0 > "$M/g/tasks" || exit 3; cat "$M/g/tasks"')
        self.assertEqual(rc, 0, err)
        ids = [int(x) for x in out.split()]
        self.assertEqual(ids[0], 1, out)
        self.assertTrue(all(0 < t < 100 for t in ids), out)


if __name__ == "__main__":
    rt.main()
