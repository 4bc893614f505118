#!/usr/bin/env python3
"""Where info/last_cmd_status is cleared, operation by operation, through
the mounted daemon (§3.1 of the behaviour reference; newest kernel: the
group lock helper clears it too, so reads of group files and rmdir do).

Each case first leaves an error in last_cmd_status (a bad schemata line),
then performs one operation and checks that the status reads `ok` (cleared)
or still holds the error (not cleared). A failing operation that clears
shows its own message instead.

rename: Linux's rdtgroup_rename (fs/resctrl/rdtgroup.c) takes the lock and
clears the status before it refuses a file with `Source and destination must
be directories` (no newline); a node without private data (info, its direct
subdirectories, the files of info/ itself) fails with ENOENT first, leaving
the status alone."""

import errno
import os

import resctrlfs_test as rt

BAD = "Unknown or unsupported resource name 'XX'\n"


class LcsCase(rt.ResctrlfsTestCase):
    def setUp(self):
        super().setUp()
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.mkdir("g/mon_groups/m"), 0)

    def dirty(self):
        self.assertEqual(self.write("g/schemata", "XX:0=1\n"), errno.EINVAL)
        self.assertEqual(self.lcs(), BAD)

    def check(self, what, op, cleared=True, expect=0, message=None):
        self.dirty()
        got = op()
        self.assertEqual(got, expect, what)
        if message is not None:
            want = message
        else:
            want = "ok\n" if cleared else BAD
        self.assertEqual(self.lcs(), want, what)

    def read_rc(self, rel):
        try:
            with open(self.path(rel)) as f:
                f.read()
            return 0
        except OSError as e:
            return e.errno


class IntelLcs(LcsCase):
    PLATFORM = "intel-2s"

    def test_rename_of_a_file_clears_then_fails(self):
        msg = "Source and destination must be directories"
        self.check("mv g/tasks g/tasks2", lambda: self.rename("g/tasks", "g/tasks2"),
                   expect=errno.EPERM, message=msg)
        self.check("mv g/mon_groups/m/cpus g/x",
                   lambda: self.rename("g/mon_groups/m/cpus", "g/x"),
                   expect=errno.EPERM, message=msg)
        self.check("mv g/mon_data/mon_L3_00/llc_occupancy g/x",
                   lambda: self.rename("g/mon_data/mon_L3_00/llc_occupancy", "g/x"),
                   expect=errno.EPERM, message=msg)
        # info/L3's files have their schema as private data.
        self.check("mv info/L3/cbm_mask g/x", lambda: self.rename("info/L3/cbm_mask", "g/x"),
                   expect=errno.EPERM, message=msg)
        # Nothing behind info/ itself and its direct subdirectories.
        self.check("mv info/last_cmd_status g/x",
                   lambda: self.rename("info/last_cmd_status", "g/x"),
                   expect=errno.ENOENT, cleared=False)
        self.check("mv info/L3 g/mon_groups/x", lambda: self.rename("info/L3", "g/mon_groups/x"),
                   expect=errno.ENOENT, cleared=False)
        self.check("mv g/tasks info/L3/x", lambda: self.rename("g/tasks", "info/L3/x"),
                   expect=errno.ENOENT, cleared=False)

    def test_rename_of_directories(self):
        self.check("mv g/mon_groups/m g/mon_groups/n",
                   lambda: self.rename("g/mon_groups/m", "g/mon_groups/n"))
        self.check("mv g h", lambda: self.rename("g", "h"), expect=errno.EPERM,
                   message="Source must be a MON group\n")

    def test_group_file_writes_clear(self):
        me = os.getpid()
        self.check("tasks", lambda: self.write("g/tasks", "%d\n" % me))
        self.check("MON group tasks", lambda: self.write("g/mon_groups/m/tasks", "%d\n" % me))
        self.addCleanup(self.write, "tasks", "%d\n" % me)
        self.check("cpus", lambda: self.write("g/cpus", "1\n"))
        self.check("cpus_list", lambda: self.write("g/cpus_list", "1\n"))
        self.check("schemata", lambda: self.write("g/schemata", "L3:0=3\n"))
        self.check("mode", lambda: self.write("g/mode", "shareable\n"))
        # Rejected before the lock: the status keeps its text.
        self.check("empty schemata", lambda: self.write("g/schemata", "L3:0=3"),
                   expect=errno.EINVAL, cleared=False)
        self.check("E2BIG", lambda: self.write("g/schemata", "L3:0=3\n" * 700),
                   expect=errno.E2BIG, cleared=False)
        self.check("open for write of a read-only file",
                   lambda: self.write("info/L3/cbm_mask", "1\n"),
                   expect=errno.EACCES, cleared=False)

    def test_mkdir_and_rmdir_clear(self):
        self.check("mkdir CTRL_MON", lambda: self.mkdir("h"))
        self.check("mkdir MON", lambda: self.mkdir("h/mon_groups/n"))
        self.check("rmdir MON (tip)", lambda: self.rmdir("h/mon_groups/n"))
        self.check("rmdir CTRL_MON (tip)", lambda: self.rmdir("h"))

    def test_group_file_reads_clear_info_reads_do_not(self):
        for f in ("g/tasks", "g/cpus", "g/cpus_list", "g/schemata", "g/mode", "g/size",
                  "g/mon_groups/m/tasks", "g/mon_data/mon_L3_00/llc_occupancy",
                  "g/mon_groups/m/mon_data/mon_L3_01/mbm_total_bytes"):
            self.check("read " + f, lambda f=f: self.read_rc(f))
        for f in ("info/L3/cbm_mask", "info/L3/bit_usage", "info/L3_MON/num_rmids",
                  "info/L3_MON/max_threshold_occupancy", "info/MB/min_bandwidth",
                  "info/L3_MON/mbm_assign_mode"):
            self.check("read " + f, lambda f=f: self.read_rc(f), cleared=False)

    def test_info_writes_clear(self):
        self.check("max_threshold_occupancy",
                   lambda: self.write("info/L3_MON/max_threshold_occupancy", "65536\n"))
        self.check("mbm_assign_mode", lambda: self.write("info/L3_MON/mbm_assign_mode",
                                                         "default\n"))


class MbpsLcs(LcsCase):
    PLATFORM = "intel-2s"
    OPTIONS = ["mba_MBps"]

    def test_mba_mbps_event_write_clears(self):
        self.check("mba_MBps_event",
                   lambda: self.write("g/mba_MBps_event", "mbm_total_bytes\n"))
        self.check("empty mba_MBps_event", lambda: self.write("g/mba_MBps_event", "x"),
                   expect=errno.EINVAL, cleared=False)


class AmdLcs(LcsCase):
    PLATFORM = "amd-io"

    def test_counter_assignment_files(self):
        self.check("mbm_L3_assignments write",
                   lambda: self.write("g/mbm_L3_assignments", "mbm_total_bytes:0=_\n"))
        self.check("mbm_L3_assignments read", lambda: self.read_rc("g/mbm_L3_assignments"))
        self.check("available_mbm_cntrs read",
                   lambda: self.read_rc("info/L3_MON/available_mbm_cntrs"))
        self.check("num_mbm_cntrs read", lambda: self.read_rc("info/L3_MON/num_mbm_cntrs"),
                   cleared=False)
        self.check("mbm_assign_on_mkdir read",
                   lambda: self.read_rc("info/L3_MON/mbm_assign_on_mkdir"))
        self.check("mbm_assign_on_mkdir write",
                   lambda: self.write("info/L3_MON/mbm_assign_on_mkdir", "1\n"))
        self.check("mbm_assign_on_mkdir bad boolean",
                   lambda: self.write("info/L3_MON/mbm_assign_on_mkdir", "x\n"),
                   expect=errno.EINVAL, cleared=False)
        ef = "info/L3_MON/event_configs/mbm_total_bytes/event_filter"
        self.check("event_filter read", lambda: self.read_rc(ef))
        self.check("event_filter write", lambda: self.write(ef, "local_reads\n"))
        self.check("mbm_assign_mode write",
                   lambda: self.write("info/L3_MON/mbm_assign_mode", "default\n"))
        self.check("mbm_total_bytes_config write",
                   lambda: self.write("info/L3_MON/mbm_total_bytes_config", "0=0x33\n"))
        self.check("mbm_local_bytes_config write",
                   lambda: self.write("info/L3_MON/mbm_local_bytes_config", "1=0x5\n"))

    def test_io_alloc_files(self):
        self.check("io_alloc write", lambda: self.write("info/L3/io_alloc", "1\n"))
        self.check("io_alloc bad boolean", lambda: self.write("info/L3/io_alloc", "x\n"),
                   expect=errno.EINVAL, cleared=False)
        self.check("io_alloc_cbm read", lambda: self.read_rc("info/L3/io_alloc_cbm"))
        self.check("io_alloc_cbm write", lambda: self.write("info/L3/io_alloc_cbm", "0=f\n"))
        self.check("io_alloc read", lambda: self.read_rc("info/L3/io_alloc"), cleared=False)


if __name__ == "__main__":
    rt.main()
