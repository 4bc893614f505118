#!/usr/bin/env python3
"""MBA generations on SMT siblings, through the mounted daemon: two groups
on the two threads of one core, MB 10 and MB 100, each thread demanding
1000 MB/s for one simulated second.

- Without per-thread MBA (info/MB/thread_throttle_mode `max`: MBA 1.0/2.0,
  an Ice Lake-SP profile) the core applies the larger delay to both
  threads, so the MB 100 group is throttled to ~100 MB/s as well; a third
  group on the other core keeps its 1000 MB/s (RDT architecture
  specification, 3.2.3.1 and 3.2.3.2).
- With per-thread MBA (`per-thread`: MBA 3.0, a Granite Rapids profile)
  each thread gets its own group's delay: 100 vs 1000 MB/s.

The numbers are docs/platforms.md's measured example ("MBA on SMT siblings")."""

import atexit
import json
import os
import shutil
import tempfile

import resctrlfs_test as rt

_DIR = tempfile.mkdtemp(prefix="resctrlfs-mba-smt-")
atexit.register(shutil.rmtree, _DIR, True)


def smt_profile(name, model, per_thread):
    """Two cores of two SMT threads (CPUs 0,1 and 2,3) on one L3."""
    doc = {
        "vendor": "GenuineIntel", "family": 6, "model": model, "stepping": 1,
        "cpus": [{"cpu": 0, "core": 0}, {"cpu": 1, "core": 0},
                 {"cpu": 2, "core": 1}, {"cpu": 3, "core": 1}],
        "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
        "l3_cat": {"cbm_len": 11, "num_closid": 16, "cdp": False},
        "mba": {"num_closid": 8, "max_delay": 90, "linear": True, "per_thread": per_thread},
        "l3_mon": {"num_rmids": 64, "scale": 65536, "counter_width": 24,
                   "events": ["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]},
        "sim": {"mem_bandwidth_mbps": 100000},
    }
    path = os.path.join(_DIR, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


MBA2 = smt_profile("icx-smt", 0x6A, False)
MBA3 = smt_profile("gnr-smt", 0xAD, True)
TOTAL = "mon_data/mon_L3_00/mbm_total_bytes"


class SmtSiblings(rt.ResctrlfsTestCase):
    MANUAL_CLOCK = True

    def measure(self):
        """MB counted in one second by g10 (CPU 0), g100 (CPU 1, CPU 0's
        sibling) and other (CPU 2, the other core)."""
        for g, mb, cpu in (("g10", 10, 0), ("g100", 100, 1), ("other", 100, 2)):
            self.assertEqual(self.mkdir(g), 0)
            self.assertEqual(self.write(g + "/schemata", "MB:0=%d\n" % mb), 0)
            self.assertEqual(self.write(g + "/cpus_list", "%d\n" % cpu), 0)
            self.workload(cpu=cpu, bandwidth_mbps=1000)
        before = {g: int(self.read(g + "/" + TOTAL)) for g in ("g10", "g100", "other")}
        self.advance(1000)
        return {g: (int(self.read(g + "/" + TOTAL)) - before[g]) / 1e6 for g in before}

    def assertAbout(self, got, want):
        self.assertAlmostEqual(got, want, delta=want * 0.02,
                               msg="%.1f MB is not about %.1f MB" % (got, want))


class Mba2(SmtSiblings):
    PLATFORM = MBA2

    def test_the_unthrottled_sibling_is_throttled(self):
        self.assertEqual(self.read("info/MB/thread_throttle_mode"), "max\n")
        got = self.measure()
        self.assertAbout(got["g10"], 100)
        self.assertAbout(got["g100"], 100)
        self.assertAbout(got["other"], 1000)


class Mba3(SmtSiblings):
    PLATFORM = MBA3

    def test_each_thread_gets_its_own_delay(self):
        self.assertEqual(self.read("info/MB/thread_throttle_mode"), "per-thread\n")
        got = self.measure()
        self.assertAbout(got["g10"], 100)
        self.assertAbout(got["g100"], 1000)
        self.assertAbout(got["other"], 1000)


if __name__ == "__main__":
    rt.main()
