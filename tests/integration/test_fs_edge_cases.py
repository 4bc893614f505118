#!/usr/bin/env python3
"""The kernel resctrl's tricky edge cases that apply to resctrlfs,
checked through the mounted daemon: syscall errno plus the exact
info/last_cmd_status text.

Each test is numbered (test_NN_*); other tests refer to a case by that
number. Not covered here, and why:
  47-49  pseudo-locking on a capable platform: test_fs_pseudo_lock.py;
  51     unmount then remount (a new daemon on the same mount point):
         test_fs_remount.py;
  53, 54 io_alloc: no built-in platform profile is io_alloc capable.
"""

import errno
import os
import pwd
import signal
import subprocess
import sys
import time
import unittest

import resctrlfs_test as rt


def spawn_sleeper():
    p = subprocess.Popen(["sleep", "300"])
    return p


def unused_pid():
    pid = 999999
    while os.path.exists("/proc/%d" % pid):
        pid += 1
    return pid


class Schemata(rt.ResctrlfsTestCase):
    """1-15 on intel-2s (11-bit L3, CDP capable, MBA 10/10)."""

    def setUp(self):
        super().setUp()
        self.assertEqual(self.mkdir("p0"), 0)

    def test_01_no_newline_keeps_lcs(self):
        self.assertEqual(self.write("p0/mode", "bogus\n"), errno.EINVAL)
        self.assertEqual(self.write("p0/schemata", "L3:0=3"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported mode\n")

    def test_02_blank_last_line(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=3\n\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Missing ':'\n")
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")

    def test_03_trailing_semicolon(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=3;\n"), 0)
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=3;1=7ff\n")

    def test_04_ids_not_trimmed_names_and_values_trimmed(self):
        self.assertEqual(self.write("p0/schemata", "L3: 0=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Missing '=' or non-numeric domain\n")
        self.assertEqual(self.write("p0/schemata", " L3 :0= 3 \n"), 0)

    def test_05_unknown_domain_no_message(self):
        self.assertEqual(self.write("p0/schemata", "L3:7=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "ok\n")

    def test_06_hex_prefix_and_case(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=0x3\n"), 0)
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=3;1=7ff\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=FF\n"), 0)
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=ff;1=7ff\n")

    def test_07_zero_mask_on_intel(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=0\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Mask out of range\n")

    def test_08_non_consecutive(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=f7\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "The mask f7 has non-consecutive 1-bits\n")

    def test_09_out_of_range(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=1000\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Mask out of range\n")

    def test_10_resource_name_case(self):
        self.assertEqual(self.write("p0/schemata", "l3:0=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported resource name 'l3'\n")

    def test_11_duplicate_domain(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=3;0=7\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Duplicate domain 0\n")
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")

    def test_12_all_or_nothing(self):
        self.assertEqual(self.write("p0/schemata", "L3:0=3\nMB:0=5\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "MB value 5 out of range [10,100]\n")
        self.assertEqual(self.read("p0/schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")

    def test_13_mb_rounding(self):
        self.assertEqual(self.write("p0/schemata", "MB:0=15\n"), 0)
        self.assertEqual(self.read("p0/schemata"), "    MB:0=20;1=100\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(self.write("p0/schemata", "MB:0=100\n"), 0)
        self.assertEqual(self.write("p0/schemata", "MB:0=9\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "MB value 9 out of range [10,100]\n")

    def test_14_mb_not_hex(self):
        self.assertEqual(self.write("p0/schemata", "MB:0=0x32\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Invalid MB value 0x32\n")

    def test_15_padding_and_order(self):
        self.assertEqual(self.read("schemata"), "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n")

    def test_56_group_file_read_clears_lcs(self):
        self.assertEqual(self.write("p0/schemata", "bad\n"), errno.EINVAL)
        self.read("p0/schemata")
        self.assertEqual(self.lcs(), "ok\n")

    def test_57_empty_cpus(self):
        self.assertEqual(self.read("p0/cpus_list"), "\n")
        self.assertEqual(self.read("p0/cpus"), "00\n")

    def test_58_size_zero(self):
        self.assertEqual(os.stat(self.path("p0/schemata")).st_size, 0)
        self.assertEqual(os.stat(self.path("p0")).st_nlink, 4)


class Cdp(rt.ResctrlfsTestCase):
    PLATFORM = rt.model_platform()  # 16 L3 CLOSIDs, halved by CDP to 8
    OPTIONS = ["cdp"]

    def test_16_cdp_lines_and_names(self):
        self.assertEqual(self.read("schemata"),
                         "    MB:0=100;1=100\nL3DATA:0=7ff;1=7ff\nL3CODE:0=7ff;1=7ff\n")
        self.assertEqual(self.write("schemata", "L3:0=3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported resource name 'L3'\n")
        self.assertEqual(self.read("info/L3DATA/num_closids"), "8\n")

    def test_47_pseudo_locksetup_with_cdp(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "CDP enabled\n")


class MbaMbps(rt.ResctrlfsTestCase):
    OPTIONS = ["mba_MBps"]

    def test_17_targets_stored_even_on_failure(self):
        self.assertEqual(self.read("schemata"),
                         "    MB:0=4294967295;1=4294967295\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(self.write("schemata", "MB:0=0\n"), 0)
        self.assertEqual(self.write("schemata", "MB:0=500\nL3:0=zz\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Non-hex character in the mask zz\n")
        self.assertEqual(self.read("schemata"),
                         "    MB:0=500;1=4294967295\n    L3:0=7ff;1=7ff\n")
        self.assertEqual(self.read("mba_MBps_event"), "mbm_local_bytes\n")


class Modes(rt.ResctrlfsTestCase):
    def test_18_exclusive_overlapping_root(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "exclusive\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Schemata overlaps\n")

    def test_19_root_exclusive_then_no_space(self):
        self.assertEqual(self.write("mode", "exclusive\n"), 0)
        self.assertEqual(self.mkdir("p1"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "No space on L3:0\n")
        self.assertNotIn("p1", self.listdir())

    def test_20_overlap_messages(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p1"), 0)
        self.assertEqual(self.write("schemata", "L3:0=7f0;1=7f0\n"), 0)
        self.assertEqual(self.write("p1/schemata", "L3:0=7f0;1=7f0\n"), 0)
        self.assertEqual(self.write("p0/schemata", "L3:0=f;1=f\n"), 0)
        self.assertEqual(self.write("p0/mode", "exclusive\n"), 0)
        self.assertEqual(self.write("p1/schemata", "L3:0=18\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with exclusive group\n")
        self.assertEqual(self.write("p0/schemata", "L3:0=1f\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Overlaps with other group\n")

    def test_47_pseudo_locking(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Pseudo-locking not supported\n")
        self.assertEqual(self.write("mode", "pseudo-locksetup\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Cannot pseudo-lock default group\n")

    def test_48_unknown_mode_and_noop(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mode", "pseudo-locked\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unknown or unsupported mode\n")
        self.assertEqual(self.write("p0/mode", "shareable\n"), 0)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.write("p0/mode", "shareable"), errno.EINVAL)
        self.assertEqual(self.lcs(), "mode: Invalid input\n")


class Tasks(rt.ResctrlfsTestCase):
    def setUp(self):
        super().setUp()
        self.procs = [spawn_sleeper() for _ in range(3)]
        self.addCleanup(self._reap)
        self.a, self.b, self.c = [p.pid for p in self.procs]
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p1"), 0)

    def _reap(self):
        for p in self.procs:
            p.kill()
            p.wait()

    def tasks(self, rel):
        return [int(x) for x in self.read(rel).split()]

    def test_21_separators(self):
        self.assertEqual(self.write("p0/tasks", "%d %d\n" % (self.a, self.b)), errno.EINVAL)
        self.assertEqual(self.lcs(), "Task list parsing error pid %d %d\n" % (self.a, self.b))
        self.assertEqual(self.write("p0/tasks", "%d,%d\n" % (self.a, self.b)), 0)
        self.assertEqual(self.write("p1/tasks", " %d , %d ,\n" % (self.a, self.c)), 0)
        self.assertEqual(sorted(self.tasks("p1/tasks")), sorted([self.a, self.c]))
        self.assertEqual(self.tasks("p0/tasks"), [self.b])

    def test_22_octal_hex_and_self(self):
        self.assertEqual(self.write("p0/tasks", "0%o\n" % self.a), 0)
        self.assertEqual(self.write("p0/tasks", "0x%x\n" % self.b), 0)
        self.assertEqual(sorted(self.tasks("p0/tasks")), sorted([self.a, self.b]))
        out = subprocess.run(["bash", "-c", "echo 0 > p1/tasks && echo $$"], cwd=self.fs.mnt,
                             capture_output=True, text=True).stdout
        # The shell itself was moved (it has exited by now, so it is gone).
        self.assertTrue(out.strip().isdigit(), out)

    def test_22_self_listed_while_alive(self):
        script = "echo 0 > p1/tasks && grep -qx $$ p1/tasks && echo moved"
        out = subprocess.run(["bash", "-c", script], cwd=self.fs.mnt,
                             capture_output=True, text=True).stdout
        self.assertEqual(out, "moved\n")

    def test_23_no_such_task(self):
        pid = unused_pid()
        self.assertEqual(self.write("p0/tasks", "%d\n" % pid), errno.ESRCH)
        self.assertEqual(self.lcs(), "No task %d\nError while processing task %d\n" % (pid, pid))

    def test_24_partial_moves_stay(self):
        pid = unused_pid()
        self.assertEqual(self.write("p0/tasks", "%d,%d,%d\n" % (self.a, pid, self.b)), errno.ESRCH)
        self.assertEqual(self.tasks("p0/tasks"), [self.a])
        self.assertIn(self.b, self.tasks("tasks"))

    def test_25_mon_group_of_other_control_group(self):
        self.assertEqual(self.mkdir("p0/mon_groups/m0"), 0)
        self.assertEqual(self.write("p1/tasks", "%d\n" % self.a), 0)
        self.assertEqual(self.write("p0/mon_groups/m0/tasks", "%d\n" % self.a), errno.EINVAL)
        self.assertEqual(self.lcs(), "Can't move task to different control group\n"
                                     "Error while processing task %d\n" % self.a)

    def test_26_listing_rules(self):
        self.assertEqual(self.mkdir("p0/mon_groups/m0"), 0)
        self.assertEqual(self.mkdir("mon_groups/r0"), 0)
        self.assertEqual(self.write("p0/tasks", "%d\n" % self.a), 0)
        self.assertEqual(self.write("p0/mon_groups/m0/tasks", "%d\n" % self.a), 0)
        self.assertEqual(self.write("mon_groups/r0/tasks", "%d\n" % self.b), 0)
        self.assertEqual(self.tasks("p0/tasks"), [self.a])
        self.assertEqual(self.tasks("p0/mon_groups/m0/tasks"), [self.a])
        root = self.tasks("tasks")
        self.assertIn(self.b, root)
        self.assertIn(self.c, root)
        self.assertNotIn(self.a, root)
        self.assertEqual(self.tasks("mon_groups/r0/tasks"), [self.b])

    def test_other_users_task_needs_root(self):
        # The fd is opened by root; the write comes from a process that then
        # dropped to nobody, so the daemon sees nobody's uid on the write.
        nobody = pwd.getpwnam("nobody")
        fd = os.open(self.path("p0/tasks"), os.O_WRONLY)
        self.addCleanup(os.close, fd)
        script = ("import os,sys; os.setgid(%d); os.setuid(%d)\n"
                  "try:\n os.write(%d, sys.argv[1].encode()); print(0)\n"
                  "except OSError as e: print(e.errno)\n") % (nobody.pw_gid, nobody.pw_uid, fd)
        out = subprocess.run([sys.executable, "-c", script, "%d\n" % self.a], pass_fds=[fd],
                             capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), str(errno.EPERM), out.stderr)
        self.assertEqual(self.lcs(), "No permission to move task %d\n"
                                     "Error while processing task %d\n" % (self.a, self.a))

    def test_40_too_large_write(self):
        # Enough copies to pass 4096 bytes whatever the pid's width (pids
        # wrap to three digits on a busy machine).
        pid = str(self.a)
        data = ",".join([pid] * (5000 // (len(pid) + 1))) + "\n"
        self.assertGreater(len(data), 4096)
        self.assertEqual(self.write("p0/tasks", "bad\n"), errno.EINVAL)
        self.assertEqual(self.write("p0/tasks", data), errno.E2BIG)
        self.assertEqual(self.lcs(), "Task list parsing error pid bad\n")
        self.assertEqual(self.tasks("p0/tasks"), [])


class Cpus(rt.ResctrlfsTestCase):
    def test_27_empty_mask(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/cpus", "0f\n"), 0)
        self.assertEqual(self.read("cpus_list"), "4-7\n")
        self.assertEqual(self.write("p0/cpus", "\n"), 0)
        self.assertEqual(self.read("cpus_list"), "0-7\n")
        self.assertEqual(self.write("cpus", "\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Can't drop CPUs from default group\n")

    def test_28_same_mask_clears_mon_groups(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p0/mon_groups/m"), 0)
        self.assertEqual(self.write("p0/cpus_list", "1-2\n"), 0)
        self.assertEqual(self.write("p0/mon_groups/m/cpus_list", "2\n"), 0)
        self.assertEqual(self.write("p0/cpus_list", "1-2\n"), 0)
        self.assertEqual(self.read("p0/mon_groups/m/cpus_list"), "\n")

    def test_29_bad_masks(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/cpus", "0x3\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Bad CPU list/mask\n")
        self.assertEqual(self.write("p0/cpus", "100\n"), errno.EOVERFLOW)
        self.assertEqual(self.lcs(), "Bad CPU list/mask\n")
        self.assertEqual(self.write("p0/cpus_list", "100-200\n"), errno.ERANGE)
        self.assertEqual(self.lcs(), "Bad CPU list/mask\n")
        self.assertEqual(self.write("p0/cpus", "03,\n"), 0)  # pqos style
        self.assertEqual(self.read("p0/cpus"), "03\n")

    def test_30_mon_subset(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p0/mon_groups/m"), 0)
        self.assertEqual(self.write("p0/cpus_list", "1\n"), 0)
        self.assertEqual(self.write("p0/mon_groups/m/cpus_list", "1-2\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Can only add CPUs to mongroup that belong to parent\n")


class Rename(rt.ResctrlfsTestCase):
    def setUp(self):
        super().setUp()
        self.sleeper = spawn_sleeper()
        self.addCleanup(lambda: (self.sleeper.kill(), self.sleeper.wait()))
        for d in ("p0", "p1", "p0/mon_groups/m1"):
            self.assertEqual(self.mkdir(d), 0)

    def test_31_ctrl_mon_groups_cannot_be_renamed(self):
        self.assertEqual(self.rename("p0", "px"), errno.EPERM)
        self.assertEqual(self.lcs(), "Source must be a MON group\n")

    def test_32_mon_group_with_cpus_and_without(self):
        self.assertEqual(self.write("p0/cpus_list", "1\n"), 0)
        self.assertEqual(self.write("p0/mon_groups/m1/cpus_list", "1\n"), 0)
        self.assertEqual(self.rename("p0/mon_groups/m1", "p1/mon_groups/m1"), errno.EPERM)
        self.assertEqual(self.lcs(), "Cannot move a MON group that monitors CPUs\n")
        self.assertEqual(self.write("p0/mon_groups/m1/cpus", "\n"), 0)
        pid = self.sleeper.pid
        self.assertEqual(self.write("p0/tasks", "%d\n" % pid), 0)
        self.assertEqual(self.write("p0/mon_groups/m1/tasks", "%d\n" % pid), 0)
        self.assertEqual(self.rename("p0/mon_groups/m1", "p1/mon_groups/m1"), 0)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.read("p1/tasks"), "%d\n" % pid)
        self.assertEqual(self.read("p0/tasks"), "")
        self.assertEqual(self.listdir("p1/mon_groups"), ["m1"])

    def test_33_rename_of_a_file(self):
        self.assertEqual(self.rename("tasks", "foo"), errno.EPERM)
        self.assertEqual(self.lcs(), "Source and destination must be directories")

    def test_destination_rules(self):
        self.assertEqual(self.rename("p0/mon_groups/m1", "p1/m1"), errno.EPERM)
        self.assertEqual(self.lcs(), "Destination must be a mon_groups subdirectory\n")


class MkdirRmdir(rt.ResctrlfsTestCase):
    PLATFORM = rt.model_platform()  # MB's 8 CLOSIDs bound the groups

    def test_34_where_mkdir_fails(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.mkdir("p0/foo"), errno.EPERM)
        self.assertEqual(self.mkdir("info/x"), errno.ENODEV)
        self.assertEqual(self.mkdir("p0/mon_groups/mon_groups"), errno.EPERM)
        self.assertEqual(self.mkdir("a\nb"), errno.EINVAL)

    def test_35_out_of_closids(self):
        for i in range(1, 8):
            self.assertEqual(self.mkdir("g%d" % i), 0)
        self.assertEqual(self.mkdir("g8"), errno.ENOSPC)
        self.assertEqual(self.lcs(), "Out of CLOSIDs\n")
        self.assertEqual(self.read("info/L3/num_closids"), "16\n")

    def test_37_rmdir_refusals(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.rmdir("info"), errno.EPERM)
        self.assertEqual(self.rmdir("p0/mon_groups"), errno.EPERM)
        self.assertEqual(self.rmdir(""), errno.EBUSY)

    def test_38_no_file_creation_or_removal(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/newfile", "x", os.O_WRONLY | os.O_CREAT), errno.EACCES)
        try:
            os.unlink(self.path("p0/tasks"))
            self.fail("unlink succeeded")
        except OSError as e:
            self.assertEqual(e.errno, errno.EPERM)

    def test_39_read_only_files(self):
        self.assertEqual(self.write("info/L3/num_closids", "1\n"), errno.EACCES)
        os.chmod(self.path("info/L3/num_closids"), 0o644)
        self.assertEqual(self.write("info/L3/num_closids", "1\n"), errno.EINVAL)
        self.assertEqual(self.write("mon_data/mon_L3_00/llc_occupancy", "1\n"), errno.EACCES)

    def test_40_e2big_leaves_lcs(self):
        self.assertEqual(self.write("schemata", "bogus:\n"), errno.EINVAL)
        before = self.lcs()
        self.assertEqual(self.write("schemata", "L3:0=7ff;" * 500 + "\n"), errno.E2BIG)
        self.assertEqual(self.lcs(), before)

    def test_55_mode_zero_group(self):
        old = os.umask(0)
        try:
            self.assertEqual(self.mkdir("z", 0), 0)
        finally:
            os.umask(old)
        self.assertEqual(os.stat(self.path("z")).st_mode & 0o7777, 0)
        self.assertEqual(os.stat(self.path("z/mon_groups")).st_mode & 0o7777, 0)
        self.assertEqual(os.stat(self.path("z/tasks")).st_mode & 0o7777, 0o644)

    def test_removed_group_fd_enodev(self):
        self.assertEqual(self.mkdir("p0"), 0)
        fd = os.open(self.path("p0/tasks"), os.O_WRONLY)
        try:
            self.assertEqual(self.rmdir("p0"), 0)
            with self.assertRaises(OSError) as cm:
                os.write(fd, b"1\n")
            self.assertEqual(cm.exception.errno, errno.ENODEV)
        finally:
            os.close(fd)


class Monitoring(rt.ResctrlfsTestCase):
    MANUAL_CLOCK = True

    def test_36_rmids_in_limbo(self):
        profile = os.path.join(self.fs.dir, "few-rmids.json")
        with open(profile, "w") as f:
            f.write('''{"vendor": "GenuineIntel", "family": 6, "model": 106, "stepping": 6,
              "cpus": [{"cpu": 0, "package": 0, "l2": 0, "l3": 0},
                       {"cpu": 1, "package": 0, "l2": 1, "l3": 0}],
              "l3_size_bytes": 8388608, "l2_size_bytes": 1048576,
              "l3_cat": {"cbm_len": 8, "num_closid": 4, "shareable_bits": 0, "sparse": false,
                         "cdp": false},
              "l3_mon": {"num_rmids": 3, "scale": 65536, "counter_width": 24,
                         "events": ["llc_occupancy", "mbm_total_bytes"]}}''')
        m = rt.Mount(platform=profile)
        self.addCleanup(m.cleanup)
        m.set_manual_clock(True)
        # With 3 RMIDs the default threshold (L3 size / num_rmids) is large.
        self.assertEqual(m.write("info/L3_MON/max_threshold_occupancy", "65536\n"), 0)
        sleeper = spawn_sleeper()
        self.addCleanup(lambda: (sleeper.kill(), sleeper.wait()))
        m.workload(tid=sleeper.pid, footprint_bytes=4 << 20)
        self.assertEqual(m.mkdir("mon_groups/a"), 0)
        self.assertEqual(m.write("mon_groups/a/tasks", "%d\n" % sleeper.pid), 0)
        m.advance(1000)
        self.assertGreater(int(m.read("mon_groups/a/mon_data/mon_L3_00/llc_occupancy")), 1 << 20)
        self.assertEqual(m.mkdir("mon_groups/b"), 0)
        self.assertEqual(m.mkdir("mon_groups/c"), errno.ENOSPC)
        self.assertEqual(m.lcs(), "Out of RMIDs\n")
        self.assertEqual(m.rmdir("mon_groups/a"), 0)
        self.assertEqual(m.mkdir("mon_groups/c"), errno.EBUSY)
        self.assertEqual(m.lcs(), "Out of RMIDs\n")
        self.assertEqual(m.status()["rmids"]["limbo"], 1)
        m.advance(1000)
        self.assertEqual(m.mkdir("mon_groups/c"), errno.EBUSY)
        # Raising the threshold lets the next limbo pass release it.
        self.assertEqual(m.write("info/L3_MON/max_threshold_occupancy", "8388608\n"), 0)
        m.advance(1000)
        self.assertEqual(m.mkdir("mon_groups/c"), 0)

    def test_41_ctrl_mon_sums_mon_groups(self):
        sleepers = [spawn_sleeper() for _ in range(2)]
        for s in sleepers:
            self.addCleanup(lambda s=s: (s.kill(), s.wait()))
        a, b = [s.pid for s in sleepers]
        for d in ("p0", "p0/mon_groups/m"):
            self.assertEqual(self.mkdir(d), 0)
        self.assertEqual(self.write("p0/tasks", "%d,%d\n" % (a, b)), 0)
        self.assertEqual(self.write("p0/mon_groups/m/tasks", "%d\n" % b), 0)
        self.workload(tid=a, footprint_bytes=1 << 20, bandwidth_mbps=1000)
        self.workload(tid=b, footprint_bytes=1 << 20, bandwidth_mbps=500)
        self.advance(3000)
        f = "mon_data/mon_L3_00/mbm_local_bytes"
        total = int(self.read("p0/" + f))
        mon = int(self.read("p0/mon_groups/m/" + f))
        self.assertGreater(mon, 0)
        self.assertGreater(total, mon)
        self.assertLess(int(self.read(f)), total)  # the root does not include p0


class Info(rt.ResctrlfsTestCase):
    def test_52_max_threshold_occupancy(self):
        self.assertEqual(self.write("info/L3_MON/max_threshold_occupancy", "4096\n"), 0)
        self.assertEqual(self.read("info/L3_MON/max_threshold_occupancy"), "0\n")
        self.assertEqual(self.write("info/L3_MON/max_threshold_occupancy", "99999999\n"),
                         errno.EINVAL)
        self.assertEqual(self.lcs(), "max_threshold_occupancy: Exceeds limit (before "
                                     "adjustment) of 16777216 bytes\n")

    def test_43_assign_mode_without_abmc(self):
        self.assertEqual(self.read("info/L3_MON/mbm_assign_mode"), "[default]\n")
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "mbm_event\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "mbm_event mode is not supported\n")
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "MBM_EVENT\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), "Unsupported assign mode\n")

    def test_50_mount_options(self):
        for platform, opts in (("intel-cmt", ["cdp"]), ("intel-2s", ["foo"])):
            m = rt.Mount(platform=platform, options=opts, start=False)
            self.addCleanup(m.cleanup)
            p = subprocess.run(m.argv(), capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0, (platform, opts))
            self.assertFalse(rt.is_mounted(m.mnt))


class Amd(rt.ResctrlfsTestCase):
    PLATFORM = "amd-2s"

    def test_07_zero_mask_on_amd(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/schemata", "L3:0=0\n"), 0)
        self.assertEqual(self.read("p0/schemata"),
                         "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=0;1=ffff\n")

    def test_42_bmec_reset_and_partial_apply(self):
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.assertEqual(self.read("info/L3_MON/mbm_total_bytes_config"), "0=0x7f;1=0x7f\n")
        self.read("mon_data/mon_L3_00/mbm_total_bytes")
        self.assertEqual(self.write("info/L3_MON/mbm_total_bytes_config", "0=0x33;7=0x1\n"),
                         errno.EINVAL)
        self.assertEqual(self.lcs(), "ok\n")
        self.assertEqual(self.read("info/L3_MON/mbm_total_bytes_config"), "0=0x33;1=0x7f\n")
        self.assertEqual(self.read("mon_data/mon_L3_00/mbm_total_bytes"), "Unavailable\n")
        self.assertTrue(self.read("mon_data/mon_L3_00/mbm_total_bytes").strip().isdigit())

    def test_44_assignments_syntax(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("p0/mbm_L3_assignments", "mbm_total_bytes:*=e;0=_\n"), 0)
        self.assertEqual(self.read("p0/mbm_L3_assignments"),
                         "mbm_total_bytes:0=e;1=e\nmbm_local_bytes:0=e;1=e\n")
        self.assertEqual(self.write("p0/mbm_L3_assignments", "bogus:0=e\n"), errno.ENOENT)
        self.assertEqual(self.lcs(), "Invalid event bogus\n")
        self.assertEqual(self.write("p0/mbm_L3_assignments", "mbm_total_bytes:0=x\n"),
                         errno.EINVAL)
        self.assertEqual(self.lcs(), "Assign operation 'mbm_total_bytes:0=x' failed\n")

    def test_45_switching_modes(self):
        self.assertEqual(self.mkdir("p0"), 0)
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "mbm_event\n"), 0)
        self.assertEqual(self.read("p0/mon_data/mon_L3_00/mbm_total_bytes"), "Unassigned\n")
        self.assertEqual(self.mkdir("p1"), 0)
        self.assertNotEqual(self.read("p1/mon_data/mon_L3_00/mbm_total_bytes"), "Unassigned\n")

    def test_46_counters_exhausted(self):
        for i in range(15):
            self.assertEqual(self.mkdir("mon_groups/g%d" % i), 0)
        self.assertEqual(self.read("info/L3_MON/available_mbm_cntrs"), "0=0;1=0\n")
        self.assertEqual(self.mkdir("mon_groups/x"), 0)
        self.assertTrue(self.lcs().startswith(
            "Failed to allocate counter for mbm_total_bytes in domain 0\n"))


if __name__ == "__main__":
    rt.main()
