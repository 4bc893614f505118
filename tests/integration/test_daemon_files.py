#!/usr/bin/env python3
"""VFS behaviour of the mount that the FUSE bridge is responsible for
(the generic kernfs properties and forbidden operations the kernel's
resctrl has): flock on the root, reads at any offset
from the per-open snapshot, fresh content for pread at offset 0, O_TRUNC,
forbidden operations and their errno, E2BIG, rename flags."""

import ctypes
import errno
import fcntl
import os
import stat
import subprocess
import time

import resctrlfs_test as rt

AT_FDCWD = -100
RENAME_NOREPLACE = 1


def renameat2(old, new, flags):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.renameat2(AT_FDCWD, old.encode(), AT_FDCWD, new.encode(), flags) == 0:
        return 0
    return ctypes.get_errno()


class Locking(rt.ResctrlfsTestCase):
    def test_flock_command_on_the_root(self):
        r = subprocess.run(["flock", self.path(), "true"])
        self.assertEqual(r.returncode, 0)

    def test_flock_excludes_another_process(self):
        fd = os.open(self.path(), os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # pqos and libvirt take this lock; a second taker must wait/fail.
            r = subprocess.run(["flock", "-n", self.path(), "true"])
            self.assertEqual(r.returncode, 1)
            fcntl.flock(fd, fcntl.LOCK_UN)
            r = subprocess.run(["flock", "-n", self.path(), "true"])
            self.assertEqual(r.returncode, 0)
        finally:
            os.close(fd)

    def test_shared_locks_coexist(self):
        fd = os.open(self.path(), os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            r = subprocess.run(["flock", "-s", "-n", self.path(), "true"])
            self.assertEqual(r.returncode, 0)
        finally:
            os.close(fd)


class Reads(rt.ResctrlfsTestCase):
    MANUAL_CLOCK = True

    def test_small_chunks_and_lseek(self):
        whole = self.read("schemata").encode()
        self.assertGreater(len(whole), 8)
        fd = os.open(self.path("schemata"), os.O_RDONLY)
        try:
            got = b""
            while True:
                chunk = os.read(fd, 3)
                if not chunk:
                    break
                got += chunk
            self.assertEqual(got, whole)
            self.assertEqual(os.lseek(fd, 0, os.SEEK_SET), 0)
            self.assertEqual(os.read(fd, 4096), whole)
            self.assertEqual(os.lseek(fd, 5, os.SEEK_SET), 5)
            self.assertEqual(os.read(fd, 4), whole[5:9])
        finally:
            os.close(fd)

    def test_pread_on_a_held_fd(self):
        whole = self.read("schemata").encode()
        fd = os.open(self.path("schemata"), os.O_RDONLY)
        try:
            for _ in range(3):
                self.assertEqual(os.pread(fd, 4096, 0), whole)
            self.assertEqual(os.pread(fd, 4, 2), whole[2:6])
            self.assertEqual(os.pread(fd, 4096, len(whole)), b"")
            self.assertEqual(os.pread(fd, 4096, len(whole) + 100), b"")
        finally:
            os.close(fd)

    def test_pread_at_zero_renders_again_and_other_offsets_continue_the_snapshot(self):
        # The root group's RMID counts the traffic of CPU 0's workload.
        self.workload(cpu=0, bandwidth_mbps=1000, footprint_bytes=1 << 20)
        counter = "mon_data/mon_L3_00/mbm_total_bytes"
        fd = os.open(self.path(counter), os.O_RDONLY)
        try:
            start = os.pread(fd, 4096, 0)
            self.advance(1000)
            first = os.pread(fd, 4096, 0)
            self.assertGreater(int(first), int(start))
            self.advance(2000)
            # Offset > 0: the same snapshot (like seq_file continuing).
            self.assertEqual(os.pread(fd, 4096, 1), first[1:])
            # Offset 0 again: rendered anew, like seq_file restarting.
            second = os.pread(fd, 4096, 0)
            self.assertGreater(int(second), int(first))
        finally:
            os.close(fd)

    def test_stat_reports_size_zero(self):
        self.assertEqual(os.stat(self.path("schemata")).st_size, 0)
        self.assertGreater(len(self.read("schemata")), 0)


class Writes(rt.ResctrlfsTestCase):
    def test_o_trunc_open_of_an_existing_file_is_accepted(self):
        flags = os.O_WRONLY | os.O_TRUNC
        self.assertEqual(self.write("schemata", "L3:0=7ff\n", flags), 0, self.lcs())
        self.assertEqual(self.write("schemata", "L3:0=7ff\n", flags | os.O_CREAT), 0)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertIn("L3:0=7ff", self.read("schemata"))

    def test_each_write_is_one_command_whatever_the_offset(self):
        fd = os.open(self.path("schemata"), os.O_WRONLY)
        try:
            os.write(fd, b"L3:0=7ff\n")
            os.write(fd, b"L3:1=7ff\n")  # at offset 9: still a whole command
        finally:
            os.close(fd)
        self.assertEqual(self.lcs(), "ok\n")

    def test_write_larger_than_a_page_is_e2big_and_leaves_lcs(self):
        self.assertEqual(self.write("schemata", "L3:0=zz\n"), errno.EINVAL)
        before = self.lcs()
        self.assertNotEqual(before, "ok\n")
        self.assertEqual(self.write("schemata", "L3:0=7ff\n" + " " * 4100), errno.E2BIG)
        self.assertEqual(self.lcs(), before)
        # A page exactly is parsed (and here refused by the parser, not E2BIG).
        self.assertNotEqual(self.write("schemata", " " * 4095 + "\n"), errno.E2BIG)

    def test_chmod_then_write_of_a_file_without_write_handler_is_einval(self):
        os.chmod(self.path("size"), 0o644)
        self.assertEqual(stat.S_IMODE(os.stat(self.path("size")).st_mode), 0o644)
        self.assertEqual(self.write("size", "1\n"), errno.EINVAL)

    def test_opening_a_read_only_file_for_write_is_eacces_even_for_root(self):
        self.assertEqual(self.write("size", "1\n"), errno.EACCES)

    def test_chown_and_utimes(self):
        os.chown(self.path("tasks"), 1234, 5678)
        st = os.stat(self.path("tasks"))
        self.assertEqual((st.st_uid, st.st_gid), (1234, 5678))
        os.utime(self.path("tasks"), (1000000000, 1000000000))  # accepted


class ForbiddenOperations(rt.ResctrlfsTestCase):
    def test_create_is_eacces(self):
        self.assertEqual(self.write("newfile", "x", os.O_WRONLY | os.O_CREAT), errno.EACCES)
        self.assertEqual(self.write("info/newfile", "x", os.O_WRONLY | os.O_CREAT), errno.EACCES)
        r = subprocess.run(["touch", self.path("touched")], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(self.path("touched")))

    def test_unlink_is_eperm(self):
        with self.assertRaises(OSError) as cm:
            os.unlink(self.path("tasks"))
        self.assertEqual(cm.exception.errno, errno.EPERM)
        self.assertTrue(os.path.exists(self.path("tasks")))

    def test_mknod_symlink_link_are_eperm(self):
        for fn in (lambda: os.mknod(self.path("node"), stat.S_IFREG | 0o644),
                   lambda: os.mknod(self.path("fifo"), stat.S_IFIFO | 0o644),
                   lambda: os.symlink("tasks", self.path("sym")),
                   lambda: os.link(self.path("tasks"), self.path("hard"))):
            with self.assertRaises(OSError) as cm:
                fn()
            self.assertEqual(cm.exception.errno, errno.EPERM)

    def test_rename_with_flags_is_einval(self):
        self.assertEqual(self.mkdir("mon_groups/a"), 0)
        self.assertEqual(renameat2(self.path("mon_groups/a"), self.path("mon_groups/b"),
                                   RENAME_NOREPLACE), errno.EINVAL)
        self.assertTrue(os.path.isdir(self.path("mon_groups/a")))
        self.assertEqual(self.rename("mon_groups/a", "mon_groups/b"), 0)

    def test_rmdir_of_the_root_is_ebusy(self):
        self.assertEqual(self.rmdir(""), errno.EBUSY)


class Directories(rt.ResctrlfsTestCase):
    def test_listing_has_dot_entries_and_follows_mkdir_rmdir(self):
        names = set(os.listdir(self.path()))
        self.assertIn("schemata", names)
        self.assertNotIn("g", names)
        self.assertEqual(self.mkdir("g"), 0)
        self.assertIn("g", os.listdir(self.path()))  # the cached listing was dropped
        self.assertEqual(self.rmdir("g"), 0)
        self.assertNotIn("g", os.listdir(self.path()))
        r = subprocess.run(["ls", "-a", self.path()], capture_output=True, text=True)
        self.assertIn(".", r.stdout.split())
        self.assertIn("..", r.stdout.split())

    def test_deleted_group_disappears_for_stat_at_once(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertTrue(os.path.isdir(self.path("g")))
        self.assertEqual(self.rmdir("g"), 0)
        self.assertFalse(os.path.exists(self.path("g")))
        self.assertEqual(self.mkdir("g"), 0)
        self.assertTrue(os.path.isfile(self.path("g/schemata")))


class Invalidation(rt.ResctrlfsTestCase):
    """Files fs/ adds or removes by itself reach the kernel's caches."""
    PLATFORM = "amd-2s"  # BMEC config files exist only outside mbm_event mode

    def test_listing_follows_files_appearing_and_vanishing(self):
        mon = "info/L3_MON"
        before = self.listdir(mon)
        self.listdir(mon)  # cached by the kernel from now on
        self.assertNotIn("mbm_total_bytes_config", before)
        self.assertEqual(self.write(mon + "/mbm_assign_mode", "default\n"), 0, self.lcs())
        now = self.listdir(mon)  # no sleep: the invalidation precedes the next request
        self.assertIn("mbm_total_bytes_config", now)
        self.assertIn("mbm_local_bytes_config", now)
        self.assertTrue(os.path.isfile(self.path(mon + "/mbm_total_bytes_config")))
        self.assertEqual(self.write(mon + "/mbm_assign_mode", "mbm_event\n"), 0, self.lcs())
        self.assertEqual(self.listdir(mon), before)
        self.assertFalse(os.path.exists(self.path(mon + "/mbm_total_bytes_config")))


if __name__ == "__main__":
    rt.main()
