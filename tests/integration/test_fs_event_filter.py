#!/usr/bin/env python3
"""info/L3_MON/event_configs/<event>/event_filter on AMD with assignable
counters (ABMC) is writable, as on Linux: fs/resctrl/rdtgroup.c registers
the file and fs/resctrl/monitor.c (resctrl_l3_mon_resource_init,
event_filter_write) makes it 0644 where the architecture says the counters
are configurable (resctrl_mon::mbm_cntr_configurable), which
arch/x86/kernel/cpu/resctrl/monitor.c (rdt_get_mon_l3_config) sets whenever
ABMC is present. A write changes which memory transactions the assigned
counters of that event count, and restarts them."""

import os
import stat

import resctrlfs_test as rt

EF = "info/L3_MON/event_configs/%s/event_filter"


class EventFilter(rt.ResctrlfsTestCase):
    PLATFORM = "amd-2s"
    MANUAL_CLOCK = True

    def mode(self, rel):
        return stat.S_IMODE(os.stat(self.path(rel)).st_mode)

    def test_writable_with_abmc(self):
        for ev in ("mbm_total_bytes", "mbm_local_bytes"):
            self.assertEqual(self.mode(EF % ev), 0o644, ev)
        self.assertEqual(self.write(EF % "mbm_total_bytes", "local_reads, remote_reads\n"), 0)
        self.assertEqual(self.read(EF % "mbm_total_bytes"), "local_reads,remote_reads\n")
        self.assertEqual(self.lcs(), "ok\n")

    def test_filter_selects_what_assigned_counters_count(self):
        self.assertEqual(self.mkdir("g"), 0)
        self.assertEqual(self.write("g/cpus_list", "1\n"), 0)
        self.workload(cpu=1, bandwidth_mbps=1000, local_fraction=0.25)
        self.advance(1000)
        f = "g/mon_data/mon_L3_00/mbm_total_bytes"
        self.assertAlmostEqual(int(self.read(f)), 1e9, delta=2e7)
        # Only the remote reads from now on; the counter restarts.
        self.assertEqual(self.write(EF % "mbm_total_bytes", "remote_reads\n"), 0)
        self.assertEqual(self.read(f), "0\n")
        self.advance(2000)
        self.assertAlmostEqual(int(self.read(f)), 1.5e9, delta=3e7)


class NoAbmc(rt.ResctrlfsTestCase):
    PLATFORM = "intel-2s"

    def test_no_event_configs_without_abmc(self):
        self.assertNotIn("event_configs", self.listdir("info/L3_MON"))


if __name__ == "__main__":
    rt.main()
