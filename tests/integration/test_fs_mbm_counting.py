#!/usr/bin/env python3
"""When MBM counts start and restart, through the mounted daemon with the
simulated machine's manual clock and CPU workloads of 1000 MB/s:

- a group's count starts when its RMID is allocated (mkdir records the
  counter's value as the baseline: Linux's mkdir_mondata_subdir reads every
  MBM event with rr.first set, and resctrl_arch_reset_rmid in
  arch/x86/kernel/cpu/resctrl/monitor.c keeps the value as prev_msr), so the
  traffic between mkdir and the first read counts, whoever read before;
- a MON group moved to another parent keeps its RMID and its count;
- under SNC each node's count and the L3's sum start at mkdir too;
- with assignable counters (ABMC) the count starts when the counter is
  assigned, and a re-assignment restarts it at 0;
- telemetry (PERF_PKG) counts are the aggregator's cumulative values;
- a BMEC configuration change (mbm_*_bytes_config) clears every MBM counter
  of every RMID in that domain, both events: each reads Unavailable once,
  then counts from 0 (Linux's mbm_config_write_domain calls
  resctrl_arch_reset_rmid_all; the AMD64 PQoS BMEC section says the hardware
  clears the counters and sets Unavailable)."""

import errno

import resctrlfs_test as rt

GB3 = 3e9  # 3 s of 1000 MB/s


class Counting(rt.ResctrlfsTestCase):
    MANUAL_CLOCK = True

    def num(self, rel):
        return int(self.read(rel))

    def assertAbout(self, got, want, rel=0.02):
        self.assertAlmostEqual(got, want, delta=max(want * rel, 1 << 17),
                               msg="%d is not about %d" % (got, want))

    def group_on_cpu(self, group, cpu):
        self.assertEqual(self.mkdir(group), 0)
        self.assertEqual(self.write(group + "/cpus_list", "%d\n" % cpu), 0)


class IntelCounting(Counting):
    PLATFORM = "intel-2s"

    def test_count_starts_at_mkdir_not_at_the_first_read(self):
        self.group_on_cpu("g", 1)
        self.workload(cpu=1, bandwidth_mbps=1000)
        # Three worker intervals pass (each reads every counter for
        # overflow) before anyone reads the file.
        self.advance(3000)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_total_bytes"), GB3)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_local_bytes"), GB3)

    def test_moved_mon_group_keeps_its_count(self):
        self.assertEqual(self.mkdir("a"), 0)
        self.assertEqual(self.mkdir("b"), 0)
        self.assertEqual(self.write("a/cpus_list", "2\n"), 0)
        self.assertEqual(self.mkdir("a/mon_groups/m"), 0)
        self.workload(cpu=2, bandwidth_mbps=1000)
        # m counts CPU 2 for 2 s; a MON group with CPUs cannot change
        # parents, so it gives them back before the move and counts CPU 3
        # (same L3) under its new parent for 1 s.
        self.assertEqual(self.write("a/mon_groups/m/cpus_list", "2\n"), 0)
        self.advance(2000)
        self.assertEqual(self.write("a/mon_groups/m/cpus_list", "\n"), 0)
        self.assertEqual(self.rename("a/mon_groups/m", "b/mon_groups/m"), 0)
        self.assertEqual(self.write("b/cpus_list", "3\n"), 0)
        self.assertEqual(self.write("b/mon_groups/m/cpus_list", "3\n"), 0)
        self.workload(cpu=3, bandwidth_mbps=1000)
        self.advance(1000)
        self.assertAbout(self.num("b/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes"), GB3)


class SncCounting(Counting):
    PLATFORM = "intel-snc"

    def test_node_and_l3_counts_start_at_mkdir(self):
        self.group_on_cpu("g", 2)  # node 1 of L3 0
        self.workload(cpu=2, bandwidth_mbps=1000)
        self.advance(3000)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mon_sub_L3_01/mbm_total_bytes"), GB3)
        self.assertEqual(self.num("g/mon_data/mon_L3_00/mon_sub_L3_00/mbm_total_bytes"), 0)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_total_bytes"), GB3)


class AbmcCounting(Counting):
    PLATFORM = "amd-2s"

    def test_assigned_at_mkdir_counts_from_mkdir_and_reassignment_restarts(self):
        self.assertEqual(self.read("info/L3_MON/mbm_assign_mode"), "[mbm_event]\ndefault\n")
        self.group_on_cpu("g", 1)
        self.workload(cpu=1, bandwidth_mbps=1000)
        self.advance(3000)
        f = "g/mon_data/mon_L3_00/mbm_total_bytes"
        self.assertAbout(self.num(f), GB3)
        self.assertEqual(self.write("g/mbm_L3_assignments", "mbm_total_bytes:0=_\n"), 0)
        self.assertEqual(self.read(f), "Unassigned\n")
        self.assertEqual(self.write("g/mbm_L3_assignments", "mbm_total_bytes:0=e\n"), 0)
        self.assertEqual(self.num(f), 0)
        self.advance(1000)
        self.assertAbout(self.num(f), 1e9)

    def test_default_mode_counts_from_mkdir(self):
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.group_on_cpu("g", 1)
        self.workload(cpu=1, bandwidth_mbps=1000)
        self.advance(1000)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_total_bytes"), 1e9)

    def test_bmec_change_clears_both_events_of_every_rmid_in_the_domain(self):
        self.assertEqual(self.write("info/L3_MON/mbm_assign_mode", "default\n"), 0)
        self.group_on_cpu("g", 1)  # L3 0
        self.group_on_cpu("h", 2)  # L3 0
        self.group_on_cpu("k", 5)  # L3 1
        for cpu in (1, 2, 5):
            self.workload(cpu=cpu, bandwidth_mbps=1000)
        self.advance(2000)
        files = ["%s/mon_data/mon_L3_%s/%s" % (g, d, ev)
                 for g, d in (("g", "00"), ("h", "00"))
                 for ev in ("mbm_total_bytes", "mbm_local_bytes")]
        for f in files:
            self.assertAbout(self.num(f), 2e9)
        # Only the local event's configuration of domain 0 changes.
        self.assertEqual(self.write("info/L3_MON/mbm_local_bytes_config", "0=0x5\n"), 0)
        for f in files:
            self.assertEqual(self.read(f), "Unavailable\n", f)
        for f in files:
            self.assertEqual(self.num(f), 0, f)
        # Domain 1 was not touched.
        self.assertAbout(self.num("k/mon_data/mon_L3_01/mbm_total_bytes"), 2e9)
        self.advance(1000)
        for f in files:
            self.assertAbout(self.num(f), 1e9)
        # Writing the value a domain already has changes nothing.
        self.assertEqual(self.write("info/L3_MON/mbm_local_bytes_config", "0=0x5\n"), 0)
        self.assertAbout(self.num(files[0]), 1e9)


class TelemetryCounting(Counting):
    PLATFORM = "intel-aet"

    def test_telemetry_counts_what_the_group_ran(self):
        self.group_on_cpu("g", 1)
        self.workload(cpu=1, bandwidth_mbps=1000)
        self.advance(3000)
        # A busy core counts 2.4 GHz of unhalted core cycles; nothing ran
        # with g's RMID before the mkdir.
        self.assertAbout(self.num("g/mon_data/mon_PERF_PKG_00/unhalted_core_cycles"), 7.2e9)
        self.assertAbout(self.num("g/mon_data/mon_L3_00/mbm_total_bytes"), GB3)


if __name__ == "__main__":
    rt.main()
