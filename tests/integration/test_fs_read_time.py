#!/usr/bin/env python3
"""File contents are generated when the file is read, as the kernel's
seq_file generates them: at the first read(2) of an open file and again at
every read at offset 0, never at open(2). A read past offset 0 continues the
rendering the last read at offset 0 (or the first read) made. A file of a
group removed after open reads ENODEV. Opening a group file does not touch
info/last_cmd_status (the kernel's open takes no lock); reading it does (tip:
the group lock clears it). (Kernel: fs/kernfs/file.c kernfs_fop_open and
kernfs_seq_start, fs/seq_file.c seq_read_iter.)"""

import errno
import os

import resctrlfs_test as rt


class ReadTime(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"
    MANUAL_CLOCK = True

    def open_ro(self, rel):
        fd = os.open(self.path(rel), os.O_RDONLY)
        self.addCleanup(os.close, fd)
        return fd

    @staticmethod
    def read_all(fd):
        out = b""
        while True:
            chunk = os.read(fd, 4096)
            if not chunk:
                return out.decode()
            out += chunk

    def test_tasks_fd_opened_before_a_move_reads_the_move(self):
        self.assertEqual(self.mkdir("g"), 0)
        fd = self.open_ro("g/tasks")
        me = os.getpid()
        self.assertEqual(self.write("g/tasks", "%d\n" % me), 0)
        self.addCleanup(self.write, "tasks", "%d\n" % me)
        self.assertIn(str(me), self.read_all(fd).split())

    def test_schemata_fd_opened_before_a_write_reads_the_new_masks(self):
        self.assertEqual(self.mkdir("g"), 0)
        fd = self.open_ro("g/schemata")
        self.assertEqual(self.write("g/schemata", "L3:0=3\n"), 0)
        self.assertIn("L3:0=3;1=7ff", self.read_all(fd))

    def test_mon_data_fd_reads_the_count_of_the_read_not_of_the_open(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/cpus_list", "1\n"), 0)
        self.workload(cpu=1, bandwidth_mbps=1000)
        fd = self.open_ro("g/mon_data/mon_L3_00/mbm_total_bytes")
        self.advance(3000)
        got = int(self.read_all(fd))
        # 3 s of 1000 MB/s, counted in 64 KiB units.
        self.assertAlmostEqual(got, 3e9, delta=3e9 * 0.02)

    def test_removed_group_file_reads_enodev(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)
        fds = [self.open_ro(f) for f in
               ("g/cpus", "g/schemata", "g/mon_groups/m/tasks",
                "g/mon_data/mon_L3_00/llc_occupancy")]
        self.assertEqual(self.rmdir("g"), 0)
        for fd in fds:
            with self.assertRaises(OSError) as cm:
                os.read(fd, 4096)
            self.assertEqual(cm.exception.errno, errno.ENODEV)

    def test_reads_past_offset_0_continue_the_rendering(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "L3:0=1\n"), 0)
        fd = self.open_ro("g/schemata")
        first = os.read(fd, 6).decode()  # renders; returns "    MB"
        self.assertEqual(self.write("g/schemata", "L3:0=3\n"), 0)
        rest = self.read_all(fd)  # continues the first rendering
        self.assertEqual(first + rest, "    MB:0=100;1=100\n    L3:0=1;1=7ff\n")
        # A read at offset 0 renders again.
        self.assertEqual(os.pread(fd, 4096, 0).decode(),
                         "    MB:0=100;1=100\n    L3:0=3;1=7ff\n")
        # A first read past offset 0 renders too (a fresh fd).
        fd2 = self.open_ro("g/schemata")
        self.assertEqual(os.pread(fd2, 4096, 4).decode(), "MB:0=100;1=100\n    L3:0=3;1=7ff\n")

    def test_open_leaves_last_cmd_status_the_read_clears_it(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/schemata", "XX:0=1\n"), errno.EINVAL)
        bad = "Unknown or unsupported resource name 'XX'\n"
        self.assertEqual(self.lcs(), bad)
        fd = self.open_ro("g/tasks")
        self.assertEqual(self.lcs(), bad)
        self.read_all(fd)
        self.assertEqual(self.lcs(), "ok\n")


class ReadTimeAbmc(rt.ResctrlfsTestCase):
    PLATFORM = "amd-2s"

    def test_available_mbm_cntrs_opens_and_fails_at_read_outside_mbm_event_mode(self):
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        fd = os.open(self.path("info/L3_MON/available_mbm_cntrs"), os.O_RDONLY)
        try:
            with self.assertRaises(OSError) as cm:
                os.read(fd, 4096)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
            self.assertEqual(self.lcs(),
                             "mbm_event counter assignment mode is not enabled\n")
            # The same fd reads once the mode allows it.
            self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "mbm_event\n"), 0)
            self.assertEqual(os.pread(fd, 4096, 0).decode(), "0=32;1=32\n")
        finally:
            os.close(fd)


if __name__ == "__main__":
    rt.main()
