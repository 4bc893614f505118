#!/usr/bin/env python3
"""Write traffic in the simulated workload (the control socket's
write_fraction, resctrlfsctl workload --write-share), seen through the
mounted daemon:

- AMD (amd-2s): an MB limit (schemata `MB:0=8`, 8/8 GB/s) holds the group's
  reads only; the AMD64 PQoS specification defines L3QOS_BW_CONTROL as a
  limit on the cacheable read bandwidth. BMEC decides what each event counts:
  with only the read bits (mbm_total_bytes_config 0x3) the group shows its
  limit, with reads and non-temporal writes (mbm_local_bytes_config 0x15,
  the kernel's default) the writes as well;
- Intel (intel-2s): MBA delays reads and writes alike, and mbm_total_bytes
  and mbm_local_bytes count both.
- a write share outside 0..1 is refused with a message, through resctrlfsctl
  too."""

import subprocess

import resctrlfs_test as rt


class WriteShare(rt.ResctrlfsTestCase):
    MANUAL_CLOCK = True

    def num(self, rel):
        return int(self.read(rel))

    def assertAbout(self, got, want, rel=0.02):
        self.assertAlmostEqual(got, want, delta=max(want * rel, 1 << 17),
                               msg="%d is not about %d" % (got, want))


class AmdWriteShare(WriteShare):
    PLATFORM = "amd-2s"

    def test_limit_holds_reads_and_bmec_write_bits_count_writes(self):
        # BMEC configuration files exist outside mbm_event mode only.
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/cpus_list", "1\n"), 0)
        self.assertEqual(self.write("g/schemata", "MB:0=8\n"), 0)  # 1000 MB/s
        total = "g/mon_data/mon_L3_00/mbm_total_bytes"
        local = "g/mon_data/mon_L3_00/mbm_local_bytes"
        # 4000 MB/s, three quarters writes: 1000 of reads (at the limit) and
        # 3000 of writes, all local.
        self.workload(cpu=1, bandwidth_mbps=4000, write_fraction=0.75)
        self.advance(1000)
        self.assertAbout(self.num(total), 4e9)  # default 0x7f: everything
        self.assertAbout(self.num(local), 4e9)  # default 0x15: local reads and writes
        # Reads only on mbm_total_bytes; both restart (Unavailable once).
        self.assertEqual(self.write("info/L3_MON/mbm_total_bytes_config", "0=0x3\n"), 0)
        self.assertEqual(self.read(total), "Unavailable\n")
        self.assertEqual(self.read(local), "Unavailable\n")
        self.advance(1000)
        self.assertAbout(self.num(total), 1e9)  # the reads: held to the limit
        self.assertAbout(self.num(local), 4e9)  # reads plus the unlimited writes
        # The same demand as reads only is held to the limit as a whole.
        self.workload(cpu=1, bandwidth_mbps=4000, write_fraction=0)
        before_t, before_l = self.num(total), self.num(local)
        self.advance(1000)
        self.assertAbout(self.num(total) - before_t, 1e9)
        self.assertAbout(self.num(local) - before_l, 1e9)

    def test_bad_write_share_is_refused(self):
        for bad in (1.5, -0.25):
            r = self.ctl({"cmd": "workload", "cpu": 1, "bandwidth_mbps": 10.0,
                          "write_fraction": bad})
            self.assertFalse(r.get("ok"), r)
            self.assertIn("write_fraction", r.get("error", ""))
        # resctrlfsctl passes the value on; the daemon's refusal is its output.
        if rt.MSR:
            return  # the msr path's control requests go to the emulation, not the daemon
        p = subprocess.run([rt.ctl_binary(), "--socket", self.fs.sock, "workload", "--cpu", "1",
                            "--bandwidth", "10", "--write-share", "2"],
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("write_fraction", p.stdout + p.stderr)


class IntelWriteShare(WriteShare):
    PLATFORM = "intel-2s"

    def test_mba_delays_writes_and_mbm_counts_them(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/cpus_list", "1\n"), 0)
        self.assertEqual(self.write("g/schemata", "MB:0=50\n"), 0)
        self.workload(cpu=1, bandwidth_mbps=1000, local_fraction=0.5, write_fraction=0.75)
        self.advance(1000)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_total_bytes"), 5e8)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_local_bytes"), 2.5e8)


if __name__ == "__main__":
    rt.main()
