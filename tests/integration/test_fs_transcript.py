#!/usr/bin/env python3
"""A worked shell transcript of the kernel's resctrl, reproduced byte for
byte on the transcript's model platform (rt.model_platform(): 16 L3 and
8 MBA CLOSIDs): every command runs in bash inside the mount
(LC_ALL=C, ls -C -T0 at 80 columns, as a terminal would lay it out) and its
standard output must equal the transcript's. Failing commands must fail the
way the transcript shows (the same strerror text)."""

import os
import subprocess

import resctrlfs_test as rt

# (command, expected stdout, expected end of stderr or None for no error)
TRANSCRIPT = [
    ("ls -C -T0", "cpus  cpus_list  info  mode  mon_data  mon_groups  schemata  size  tasks\n", None),
    ("ls -C -T0 info", "L3  L3_MON  MB  last_cmd_status\n", None),
    ("cat info/last_cmd_status", "ok\n", None),
    ("cat info/L3/cbm_mask info/L3/min_cbm_bits info/L3/num_closids info/L3/shareable_bits "
     "info/L3/sparse_masks", "7ff\n1\n16\n0\n0\n", None),
    ("cat info/L3/bit_usage", "0=SSSSSSSSSSS;1=SSSSSSSSSSS\n", None),
    ("cat info/MB/min_bandwidth info/MB/bandwidth_gran info/MB/delay_linear "
     "info/MB/num_closids info/MB/thread_throttle_mode", "10\n10\n1\n8\nmax\n", None),
    ("cat info/L3_MON/num_rmids info/L3_MON/mon_features",
     "224\nllc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n", None),
    ("cat info/L3_MON/max_threshold_occupancy        # 16 MiB / 224 = 74898 -> rounded down",
     "65536\n", None),
    ("cat schemata", "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n", None),
    ("cat size", "    MB:0=100;1=100\n    L3:0=16777211;1=16777211\n", None),
    ("cat cpus cpus_list mode", "ff\n0-7\nshareable\n", None),
    ("ls -C -T0 mon_data mon_data/mon_L3_00",
     "mon_data:\nmon_L3_00  mon_L3_01\n\nmon_data/mon_L3_00:\n"
     "llc_occupancy  mbm_local_bytes  mbm_total_bytes\n", None),
    ("mkdir p0", "", None),
    ("cat p0/schemata p0/cpus p0/cpus_list p0/mode",
     "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n00\n\nshareable\n", None),
    ('echo "L3:0=f7" > p0/schemata', "", "echo: write error: Invalid argument\n"),
    ("cat info/last_cmd_status", "The mask f7 has non-consecutive 1-bits\n", None),
    ('echo "L3:0=7;1=0x70" > p0/schemata; echo "MB:1=55" > p0/schemata', "", None),
    ("cat p0/schemata", "    MB:0=100;1=60\n    L3:0=7;1=70\n", None),
    ("echo 'L3:0=7f8;1=78f' > schemata       # root: non-contiguous on domain 1", "",
     "echo: write error: Invalid argument\n"),
    ("cat info/last_cmd_status", "The mask 78f has non-consecutive 1-bits\n", None),
    ("echo 'L3:0=7f8;1=7f8' > schemata", "", None),
    ("echo exclusive > p0/mode", "", "echo: write error: Invalid argument\n"),
    ("cat info/last_cmd_status", "Schemata overlaps\n", None),
    ("echo 'L3:1=7' > p0/schemata && echo exclusive > p0/mode && cat info/L3/bit_usage",
     "0=SSSSSSSSEEE;1=SSSSSSSSEEE\n", None),
    ("mkdir p1 && cat p1/schemata                  # new group avoids exclusive bits",
     "    MB:0=100;1=100\n    L3:0=7f8;1=7f8\n", None),
    ("echo 4-5 > p1/cpus_list && cat cpus p1/cpus", "cf\n30\n", None),
    ("mkdir p1/mon_groups/m1 && echo 4 > p1/mon_groups/m1/cpus_list", "", None),
    ("echo 4-5 > p1/cpus_list && cat p1/mon_groups/m1/cpus_list   # same mask again", "\n", None),
    ("mv p1 p2", "", "mv: cannot move 'p1' to 'p2': Operation not permitted\n"),
    ("cat info/last_cmd_status", "Source must be a MON group\n", None),
    ("rmdir p1 && cat cpus_list", "0-7\n", None),
]


class Transcript(rt.ResctrlfsTestCase):
    PLATFORM = rt.model_platform()

    def test_section_12_byte_for_byte(self):
        env = dict(os.environ, LC_ALL="C", COLUMNS="80")
        for cmd, want_out, want_err in TRANSCRIPT:
            p = subprocess.run(["bash", "-c", cmd], cwd=self.fs.mnt, env=env,
                               capture_output=True, text=True)
            self.assertEqual(p.stdout, want_out, "stdout of: %s\nstderr: %s" % (cmd, p.stderr))
            if want_err is None:
                self.assertEqual(p.stderr, "", "stderr of: %s" % cmd)
                self.assertEqual(p.returncode, 0, cmd)
            else:
                self.assertTrue(p.stderr.endswith(want_err),
                                "stderr of: %s is %r" % (cmd, p.stderr))
                self.assertNotEqual(p.returncode, 0, cmd)


if __name__ == "__main__":
    rt.main()
