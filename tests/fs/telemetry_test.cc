// Telemetry monitoring (PERF_PKG):
// info/PERF_PKG_MON, mon_PERF_PKG_XX in every group's mon_data, the
// kernel's fixed-point printing, CTRL_MON summing, Unavailable/Error, the
// RMID limit shared with L3, and counts that follow a workload on the
// intel-aet simulated platform.
#include <sys/stat.h>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <regex>

#include "fs/events.h"
#include "fs/impl.h"
#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

using hw::EventId;
using hw::MonEvent;
using hw::ReadError;

const std::vector<MonEvent> kEvents = {{EventId::CORE_ENERGY, 18},
                                       {EventId::ACTIVITY, 18},
                                       {EventId::UNHALTED_CORE_CYCLES, 0},
                                       {EventId::UOPS_RETIRED, 0}};

hw::PlatformInfo telemetry_platform(unsigned l3_rmids, unsigned pkg_rmids,
                                    std::vector<MonEvent> events) {
  hw::PlatformInfo p = FakeArch::base_platform(4);
  FakeArch::add_l3_cat(p, 8, 4);
  FakeArch::add_l3_mon(p, l3_rmids);
  FakeArch::add_perf_pkg(p, pkg_rmids, std::move(events), {0, 3});
  return p;
}

struct TelemetryFixture : FakeFixture {
  explicit TelemetryFixture(unsigned l3_rmids = 16, unsigned pkg_rmids = 16,
                            std::vector<MonEvent> events = kEvents)
      : FakeFixture(telemetry_platform(l3_rmids, pkg_rmids, std::move(events))) {}
  void set(int pkg, uint32_t rmid, EventId ev, uint64_t v, ReadError err = ReadError::kNone) {
    arch.values[{pkg, rmid, ev}] = hw::CounterValue{err, v};
  }
};

uint64_t fixed(uint64_t whole, double frac, unsigned bits) {
  return (whole << bits) + static_cast<uint64_t>(frac * static_cast<double>(1ULL << bits));
}

}  // namespace

TEST_CASE("telemetry events are named as the kernel names them", "[telemetry]") {
  // The hardware's "automatic C6 residency" counter is the file c6_res.
  CHECK(std::string(fs::event_name(hw::EventId::AUTO_C6_RES)) == "c6_res");
}

TEST_CASE("fixed-point values print as the kernel prints them", "[telemetry]") {
  using fs::format_fixed_point;
  // 18 fraction bits (energy, activity): 6 decimal places, rounded.
  CHECK(format_fixed_point(0, 18) == "0.000000\n");
  CHECK(format_fixed_point(fixed(5, 0.5, 18), 18) == "5.500000\n");
  CHECK(format_fixed_point(fixed(12, 0.25, 18) + 1, 18) == "12.250004\n");
  CHECK(format_fixed_point((1ULL << 18) - 1, 18) == "0.999996\n");
  CHECK(format_fixed_point((7ULL << 18) | 1, 18) == "7.000004\n");
  // Zero fraction bits: the integer with ".0".
  CHECK(format_fixed_point(42, 0) == "42.0\n");
  // The number of places follows ceil(bits * log10 2).
  CHECK(format_fixed_point(3, 1) == "1.5\n");
  CHECK(format_fixed_point(1, 2) == "0.3\n");  // 0.25 rounds to one place
  CHECK(format_fixed_point(1, 3) == "0.1\n");  // 0.125
  CHECK(format_fixed_point(1, 4) == "0.06\n");
  CHECK(format_fixed_point(1, 7) == "0.008\n");
  CHECK(format_fixed_point(1, 10) == "0.0010\n");
  CHECK(format_fixed_point(1, 14) == "0.00006\n");
  CHECK(format_fixed_point(1, 17) == "0.000008\n");
  CHECK(format_fixed_point(1, 20) == "0.0000010\n");
  CHECK(format_fixed_point(1, 24) == "0.00000006\n");
  CHECK(format_fixed_point((1ULL << 27) - 1, 27) == "0.999999993\n");
  CHECK(format_fixed_point(UINT64_MAX >> 1, 18) == "35184372088831.999996\n");
}

TEST_CASE("info/PERF_PKG_MON has only num_rmids and mon_features", "[telemetry]") {
  TelemetryFixture f(32, 24);
  Shell& sh = *f.sh;
  CHECK(sh.ls("/info").count("PERF_PKG_MON") == 1);
  CHECK(sh.ls("/info").count("L3_MON") == 1);
  CHECK(sh.ls("/info/PERF_PKG_MON") == std::set<std::string>{"num_rmids", "mon_features"});
  CHECK((sh.stat("/info/PERF_PKG_MON").mode & 07777) == 0755);
  CHECK((sh.stat("/info/PERF_PKG_MON/num_rmids").mode & 07777) == 0444);
  CHECK((sh.stat("/info/PERF_PKG_MON/mon_features").mode & 07777) == 0444);
  CHECK(sh.cat("/info/PERF_PKG_MON/num_rmids") == "24\n");
  CHECK(sh.cat("/info/PERF_PKG_MON/mon_features") ==
        "core_energy\nactivity\nunhalted_core_cycles\nuops_retired\n");
  CHECK(sh.cat("/info/L3_MON/num_rmids") == "32\n");
  CHECK(sh.cat("/info/L3_MON/mon_features") == "llc_occupancy\nmbm_total_bytes\n");
  CHECK(sh.write("/info/PERF_PKG_MON/num_rmids", "1\n") == EACCES);
}

TEST_CASE("mon_PERF_PKG_XX in the mon_data of every group", "[telemetry]") {
  TelemetryFixture f;
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m0") == 0);
  REQUIRE(sh.mkdir("/mon_groups/r0") == 0);
  const std::set<std::string> doms = {"mon_L3_00", "mon_L3_01", "mon_PERF_PKG_00",
                                      "mon_PERF_PKG_03"};
  const std::set<std::string> events = {"core_energy", "activity", "unhalted_core_cycles",
                                        "uops_retired"};
  for (const char* g : {"", "/p0", "/p0/mon_groups/m0", "/mon_groups/r0"}) {
    INFO(g);
    const std::string md = std::string(g) + "/mon_data";
    CHECK(sh.ls(md) == doms);
    CHECK(sh.ls(md + "/mon_PERF_PKG_03") == events);
    CHECK(sh.ls(md + "/mon_L3_00") == std::set<std::string>{"llc_occupancy", "mbm_total_bytes"});
    CHECK((sh.stat(md + "/mon_PERF_PKG_00/core_energy").mode & 07777) == 0444);
    CHECK(S_ISDIR(sh.stat(md + "/mon_PERF_PKG_00").mode));
  }
  CHECK(sh.write("/mon_data/mon_PERF_PKG_00/core_energy", "0\n") == EACCES);
}

TEST_CASE("telemetry reads: formats, Unavailable, Error, CTRL_MON sums", "[telemetry]") {
  TelemetryFixture f;
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m1") == 0);
  // RMIDs: root 0, p0 1, m0 2, m1 3 (lowest free first).
  f.set(0, 0, EventId::CORE_ENERGY, fixed(5, 0.5, 18));
  f.set(0, 0, EventId::UOPS_RETIRED, 123456789);
  f.set(3, 0, EventId::ACTIVITY, 0, ReadError::kError);
  CHECK(sh.cat("/mon_data/mon_PERF_PKG_00/core_energy") == "5.500000\n");
  CHECK(sh.cat("/mon_data/mon_PERF_PKG_00/uops_retired") == "123456789\n");
  CHECK(sh.cat("/mon_data/mon_PERF_PKG_03/core_energy") == "Unavailable\n");
  CHECK(sh.cat("/mon_data/mon_PERF_PKG_03/activity") == "Error\n");

  // A CTRL_MON group: its own RMID plus its MON groups; failures of some
  // are ignored when one read succeeds.
  f.set(0, 1, EventId::ACTIVITY, fixed(1, 0.25, 18));
  f.set(0, 2, EventId::ACTIVITY, fixed(2, 0.5, 18));
  f.set(0, 3, EventId::ACTIVITY, 0, ReadError::kError);
  CHECK(sh.cat("/p0/mon_data/mon_PERF_PKG_00/activity") == "3.750000\n");
  CHECK(sh.cat("/p0/mon_groups/m0/mon_data/mon_PERF_PKG_00/activity") == "2.500000\n");
  CHECK(sh.cat("/p0/mon_groups/m1/mon_data/mon_PERF_PKG_00/activity") == "Error\n");
  f.set(0, 1, EventId::UNHALTED_CORE_CYCLES, 1000);
  f.set(0, 3, EventId::UNHALTED_CORE_CYCLES, 24);
  CHECK(sh.cat("/p0/mon_data/mon_PERF_PKG_00/unhalted_core_cycles") == "1024\n");
  // The root covers RMID 0 and its own MON groups, not other CTRL_MON groups.
  CHECK(sh.cat("/mon_data/mon_PERF_PKG_00/unhalted_core_cycles") == "Unavailable\n");
  // When every read fails, the last failure is shown.
  f.set(3, 1, EventId::UOPS_RETIRED, 0, ReadError::kError);
  CHECK(sh.cat("/p0/mon_data/mon_PERF_PKG_03/uops_retired") == "Unavailable\n");
  // Zero fraction bits print as "<n>.0".
  TelemetryFixture z(16, 16, {{EventId::CORE_ENERGY, 0}});
  z.set(0, 0, EventId::CORE_ENERGY, 77);
  CHECK(z.sh->cat("/mon_data/mon_PERF_PKG_00/core_energy") == "77.0\n");
  CHECK(z.sh->ls("/mon_data/mon_PERF_PKG_00") == std::set<std::string>{"core_energy"});
}

TEST_CASE("groups are limited by the smaller num_rmids of L3 and PERF_PKG", "[telemetry]") {
  auto fill = [](TelemetryFixture& f, unsigned expect_ok) {
    Shell& sh = *f.sh;
    for (unsigned i = 1; i < expect_ok; ++i)
      REQUIRE(sh.mkdir("/mon_groups/m" + std::to_string(i)) == 0);
    CHECK(sh.mkdir("/mon_groups/full") == ENOSPC);
    CHECK(sh.lcs() == "Out of RMIDs\n");
  };
  SECTION("PERF_PKG has fewer") {
    TelemetryFixture f(8, 4);
    fill(f, 4);
  }
  SECTION("L3 has fewer") {
    TelemetryFixture f(3, 8);
    fill(f, 3);
  }
}

TEST_CASE("telemetry on intel-aet follows a task's workload", "[telemetry]") {
  SimFixture f("intel-aet");
  Shell& sh = *f.sh;
  f.backend.sim->set_manual_clock(true);
  CHECK(sh.cat("/info/PERF_PKG_MON/num_rmids") == "576\n");
  CHECK(sh.cat("/info/L3_MON/num_rmids") == "1024\n");
  CHECK(sh.cat("/info/PERF_PKG_MON/mon_features") ==
        "core_energy\nactivity\nstalls_llc_hit\nc1_res\nunhalted_core_cycles\n"
        "stalls_llc_miss\nc6_res\nunhalted_ref_cycles\nuops_retired\n");
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);
  const std::string e0 = "/g/mon_groups/m/mon_data/mon_PERF_PKG_00/core_energy";
  CHECK(sh.cat(e0) == "Unavailable\n");
  f.tasks.add(501);
  CHECK(sh.echo("/g/tasks", "501") == 0);
  CHECK(sh.echo("/g/mon_groups/m/tasks", "501") == 0);
  hw::Workload w;
  w.bandwidth_mbps = 5000;
  w.cpu = 2;
  REQUIRE(f.backend.sim->attach_thread_workload(501, w).ok());
  f.backend.sim->advance_ms(1000);
  const std::regex fmt("^[0-9]+\\.[0-9]{6}\n$");
  const std::string a = sh.cat(e0);
  CHECK(std::regex_match(a, fmt));
  CHECK(std::stod(a) == Approx(3.25).epsilon(1e-3));  // 2.5 W + 0.75 W for 1 s
  CHECK(std::regex_match(sh.cat("/g/mon_data/mon_PERF_PKG_00/activity"), fmt));
  CHECK(std::stoull(sh.cat("/g/mon_data/mon_PERF_PKG_00/unhalted_core_cycles")) ==
        std::stoull(sh.cat("/g/mon_groups/m/mon_data/mon_PERF_PKG_00/unhalted_core_cycles")));
  CHECK(sh.cat("/g/mon_groups/m/mon_data/mon_PERF_PKG_01/core_energy") == "Unavailable\n");
  f.backend.sim->advance_ms(1000);
  CHECK(std::stod(sh.cat(e0)) == Approx(6.5).epsilon(1e-3));
}

TEST_CASE("mon_PERF_PKG_XX follows its package through CPU hotplug", "[telemetry]") {
  // Package 0 holds two L3 domains (0: CPUs 0-1, 1: CPUs 2-3); package 1
  // one (2: CPUs 4-5).
  char path[] = "/tmp/resctrlfs-telemetry-XXXXXX.json";
  int fd = mkstemps(path, 5);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << R"({
    "vendor": "GenuineIntel", "family": 6, "model": 221,
    "cpus": [{"cpu": 0, "package": 0, "l3": 0}, {"cpu": 1, "package": 0, "l3": 0},
             {"cpu": 2, "package": 0, "l3": 1}, {"cpu": 3, "package": 0, "l3": 1},
             {"cpu": 4, "package": 1, "l3": 2}, {"cpu": 5, "package": 1, "l3": 2}],
    "l3_size_bytes": 8388608, "l2_size_bytes": 1048576,
    "l3_cat": {"cbm_len": 8, "num_closid": 4},
    "l3_mon": {"num_rmids": 64, "scale": 65536, "events": ["llc_occupancy"]},
    "telemetry": [{"guid": "0x26696143", "package": 0}, {"guid": "0x26696143", "package": 1}]
  })";
  SimFixture f(path);
  std::remove(path);
  Shell& sh = *f.sh;
  auto offline = [&](unsigned cpu) {
    REQUIRE(f.fs->cpu_offline(cpu).ok());
    REQUIRE(f.backend.sim->set_cpu_online(cpu, false).ok());
  };
  auto online = [&](unsigned cpu) {
    REQUIRE(f.backend.sim->set_cpu_online(cpu, true).ok());
    REQUIRE(f.fs->cpu_online(cpu).ok());
  };
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);
  CHECK(sh.ls("/g/mon_data") == std::set<std::string>{"mon_L3_00", "mon_L3_01", "mon_L3_02",
                                                      "mon_PERF_PKG_00", "mon_PERF_PKG_01"});
  // An L3 domain going away leaves its package's telemetry (and the
  // package with the same id as that L3 domain) alone.
  offline(2);
  offline(3);
  CHECK(sh.ls("/g/mon_data") ==
        std::set<std::string>{"mon_L3_00", "mon_L3_02", "mon_PERF_PKG_00", "mon_PERF_PKG_01"});
  // The last CPU of package 1 takes mon_PERF_PKG_01 away from every group.
  offline(4);
  offline(5);
  for (const char* g : {"", "/g", "/g/mon_groups/m"}) {
    INFO(g);
    CHECK(sh.ls(std::string(g) + "/mon_data") ==
          std::set<std::string>{"mon_L3_00", "mon_PERF_PKG_00"});
  }
  CHECK(sh.cat("/mon_data/mon_PERF_PKG_01/core_energy") == "ERRNO 2");
  // Back with its first CPU, with every event file.
  online(5);
  CHECK(sh.ls("/g/mon_groups/m/mon_data") ==
        std::set<std::string>{"mon_L3_00", "mon_L3_02", "mon_PERF_PKG_00", "mon_PERF_PKG_01"});
  CHECK(sh.ls("/g/mon_data/mon_PERF_PKG_01") == std::set<std::string>{"core_energy", "activity"});
  f.backend.sim->set_manual_clock(true);
  f.backend.sim->advance_ms(1000);
  CHECK(std::regex_match(sh.cat("/mon_data/mon_PERF_PKG_01/core_energy"),
                         std::regex("^[0-9]+\\.[0-9]{6}\n$")));
}

}  // namespace resctrlfs::fs::testing
