// Monitoring at the model level: mon_data sums and error outputs, limbo
// with the simulator's manual clock, MBM counts, ABMC counter assignment,
// BMEC configuration, the mba_MBps controller, and monitor-only platforms.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

using Clock = std::chrono::steady_clock;

uint64_t num(const std::string& s) { return std::stoull(s); }

std::string write_profile(const std::string& body) {
  char path[] = "/tmp/resctrlfs-fs-test-XXXXXX.json";
  int fd = mkstemps(path, 5);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << body;
  return path;
}

}  // namespace

TEST_CASE("limbo: freed RMIDs stay busy until occupancy drops (36)", "[limbo]") {
  const std::string profile = write_profile(R"({
    "vendor": "GenuineIntel", "family": 6, "model": 106, "stepping": 6,
    "cpus": [{"cpu": 0, "package": 0, "l2": 0, "l3": 0}, {"cpu": 1, "package": 0, "l2": 1, "l3": 0}],
    "l3_size_bytes": 8388608, "l2_size_bytes": 1048576,
    "l3_cat": {"cbm_len": 8, "num_closid": 4, "shareable_bits": 0, "sparse": false, "cdp": false},
    "l3_mon": {"num_rmids": 3, "scale": 65536, "counter_width": 24,
               "events": ["llc_occupancy", "mbm_total_bytes"]}
  })");
  MountOptions o;
  o.debug = true;
  SimFixture f(profile, o);
  std::remove(profile.c_str());
  Shell& sh = *f.sh;
  f.backend.sim->set_manual_clock(true);
  f.tasks.add(77);
  REQUIRE(f.backend.sim->attach_thread_workload(77, {4u << 20, 0, 1.0}).ok());
  REQUIRE(sh.mkdir("/mon_groups/a") == 0);
  CHECK(sh.echo("/mon_groups/a/tasks", "77") == 0);
  f.backend.sim->advance_ms(1000);
  CHECK(num(sh.cat("/mon_groups/a/mon_data/mon_L3_00/llc_occupancy")) > 1000000);
  REQUIRE(sh.mkdir("/mon_groups/b") == 0);
  CHECK(sh.mkdir("/mon_groups/c") == ENOSPC);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  REQUIRE(sh.rmdir("/mon_groups/a") == 0);
  CHECK(sh.mkdir("/mon_groups/c") == EBUSY);
  CHECK(sh.lcs() == "Out of RMIDs\n");
  const Clock::time_point t0 = Clock::now();
  f.fs->tick(t0);  // occupancy still far above the threshold
  CHECK(sh.mkdir("/mon_groups/c") == EBUSY);
  // Lines go only when something replaces them: a thread of the default
  // group fills the whole L3.
  f.tasks.add(78);
  REQUIRE(f.backend.sim->attach_thread_workload(78, {16u << 20, 0, 1.0}).ok());
  f.backend.sim->advance_ms(20000);
  f.fs->tick(t0 + std::chrono::milliseconds(500));  // too early: the worker runs every 1000 ms
  CHECK(sh.mkdir("/mon_groups/c") == EBUSY);
  f.fs->tick(t0 + std::chrono::milliseconds(1000));
  REQUIRE(sh.mkdir("/mon_groups/c") == 0);
  CHECK(sh.cat("/mon_groups/c/mon_hw_id") == "1\n");
}

TEST_CASE("limbo: raising max_threshold_occupancy releases RMIDs", "[limbo]") {
  hw::PlatformInfo p = FakeArch::base_platform();
  FakeArch::add_l3_mon(p, 2);
  FakeArch arch(p);
  FakeTasks tasks;
  FilesystemConfig cfg{&arch, &tasks, nullptr, 0, 0};
  auto fs = make_filesystem(cfg);
  REQUIRE(fs->mount({}).ok());
  Shell sh(*fs);
  // Monitor-only: mkdir at the root is refused, the root has the CTRL files.
  CHECK(sh.mkdir("/p0") == EPERM);
  CHECK(sh.cat("/schemata") == "");
  CHECK(sh.cat("/mode") == "shareable\n");
  CHECK(sh.ls("/info") == std::set<std::string>{"L3_MON", "last_cmd_status"});
  REQUIRE(sh.mkdir("/mon_groups/a") == 0);
  arch.values[{0, 1, hw::EventId::LLC_OCCUPANCY}] = {hw::ReadError::kNone, 8192};
  REQUIRE(sh.rmdir("/mon_groups/a") == 0);
  fs->tick(Clock::now());
  CHECK(sh.mkdir("/mon_groups/b") == EBUSY);
  CHECK(sh.echo("/info/L3_MON/max_threshold_occupancy", "16384") == 0);
  fs->tick(Clock::now() + std::chrono::seconds(2));
  CHECK(sh.mkdir("/mon_groups/b") == 0);
  CHECK(sh.echo("/mode", "exclusive") == EINVAL);
  CHECK(sh.lcs() == "Cannot be exclusive without CAT/CDP\n");
}

TEST_CASE("mon_data: sums, Error/Unavailable, no thread tags", "[mon]") {
  hw::PlatformInfo p = FakeArch::base_platform();
  FakeArch::add_l3_cat(p, 8, 4);
  FakeArch::add_l3_mon(p, 8);
  FakeArch arch(p);
  FakeTasks tasks;
  FilesystemConfig cfg{&arch, &tasks, nullptr, 0, 0};
  auto fs = make_filesystem(cfg);
  REQUIRE(fs->mount({}).ok());
  Shell sh(*fs);
  REQUIRE(sh.mkdir("/p0") == 0);               // rmid 1
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);  // rmid 2
  REQUIRE(sh.mkdir("/mon_groups/r") == 0);     // rmid 3
  const auto T = hw::EventId::MBM_TOTAL;
  arch.values[{0, 0, T}] = {hw::ReadError::kNone, 5};
  arch.values[{0, 1, T}] = {hw::ReadError::kNone, 100};
  arch.values[{0, 2, T}] = {hw::ReadError::kNone, 20};
  arch.values[{0, 3, T}] = {hw::ReadError::kNone, 7};
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "120\n");
  CHECK(sh.cat("/p0/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes") == "20\n");
  CHECK(sh.cat("/mon_data/mon_L3_00/mbm_total_bytes") == "12\n");  // not p0's
  arch.values[{0, 2, T}] = {hw::ReadError::kError, 0};
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "100\n");
  CHECK(sh.cat("/p0/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes") == "Error\n");
  arch.values[{0, 1, T}] = {hw::ReadError::kUnavailable, 0};
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "Error\n");
  // A backend that cannot tag threads: groups without CPUs read Unavailable.
  arch.models_tags = false;
  arch.values[{0, 1, T}] = {hw::ReadError::kNone, 100};
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "Unavailable\n");
  CHECK(sh.echo("/p0/cpus_list", "1") == 0);
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "100\n");
  CHECK(sh.cat("/mon_data/mon_L3_00/mbm_total_bytes") == "5\n");
  // Monitoring reads clear last_cmd_status (group lock, tip).
  CHECK(sh.echo("/p0/mode", "bad") == EINVAL);
  CHECK(sh.cat("/mon_data/mon_L3_01/llc_occupancy") == "0\n");
  CHECK(sh.lcs() == "ok\n");
  // A failing control write is reported and leaves nothing behind.
  arch.fail_writes_ = 1;
  CHECK(sh.echo("/p0/schemata", "L3:0=3") == EIO);
  CHECK(sh.lcs() == "Hardware write failed\n");
  CHECK(sh.cat("/p0/schemata") == "L3:0=ff;1=ff\n");
}

TEST_CASE("MBM on the simulator: counts grow, CTRL_MON sums MON groups", "[mon]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  f.backend.sim->set_manual_clock(true);
  f.tasks.add(200);
  f.tasks.add(201);
  REQUIRE(sh.mkdir("/p0") == 0);
  REQUIRE(sh.mkdir("/p0/mon_groups/m") == 0);
  CHECK(sh.echo("/p0/tasks", "200,201") == 0);
  CHECK(sh.echo("/p0/mon_groups/m/tasks", "201") == 0);
  REQUIRE(f.backend.sim->attach_thread_workload(200, {1 << 20, 1000, 1.0}).ok());
  REQUIRE(f.backend.sim->attach_thread_workload(201, {1 << 20, 1000, 1.0}).ok());
  const std::string base = "/p0/mon_data/mon_L3_00/mbm_total_bytes";
  sh.cat(base);
  sh.cat("/p0/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes");
  auto t = Clock::now();
  for (int i = 0; i < 5; ++i) {
    f.backend.sim->advance_ms(1000);
    t += std::chrono::seconds(1);
    f.fs->tick(t);
  }
  uint64_t all = num(sh.cat(base));
  uint64_t mon = num(sh.cat("/p0/mon_groups/m/mon_data/mon_L3_00/mbm_total_bytes"));
  CHECK(mon > 0);
  CHECK(all > mon);
  CHECK(num(sh.cat("/p0/mon_data/mon_L3_00/mbm_local_bytes")) > 0);
}

TEST_CASE("mba_MBps: the software controller converges on the simulator", "[mon]") {
  MountOptions o;
  o.mba_mbps = true;
  SimFixture f("intel-2s", o);
  Shell& sh = *f.sh;
  f.backend.sim->set_manual_clock(true);
  f.tasks.add(300);
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.echo("/p0/tasks", "300") == 0);
  REQUIRE(f.backend.sim->attach_thread_workload(300, {1 << 20, 8000, 1.0}).ok());
  CHECK(sh.echo("/p0/schemata", "MB:0=2000;1=2000") == 0);
  auto t = Clock::now();
  uint64_t prev = 0, bw = 0;
  for (int i = 0; i < 40; ++i) {
    f.backend.sim->advance_ms(1000);
    t += std::chrono::seconds(1);
    f.fs->tick(t);
    // The target is per domain: measure domain 0.
    uint64_t now = num(sh.cat("/p0/mon_data/mon_L3_00/mbm_local_bytes"));
    bw = (now - prev) >> 20;
    prev = now;
  }
  INFO("bandwidth MiB/s " << bw);
  CHECK(bw <= 2000);
  CHECK(bw > 1000);
  CHECK(sh.cat("/p0/schemata") == "    MB:0=2000;1=2000\n    L3:0=7ff;1=7ff\n");
}

TEST_CASE("ABMC on amd-2s: assignment, Unassigned, mode switch (43-46)", "[abmc]") {
  SimFixture f("amd-2s");
  Shell& sh = *f.sh;
  CHECK(sh.cat("/info/L3_MON/mbm_assign_mode") == "[mbm_event]\ndefault\n");
  CHECK(sh.cat("/info/L3_MON/num_mbm_cntrs") == "0=32;1=32\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=30;1=30\n");
  CHECK(sh.cat("/info/L3_MON/mbm_assign_on_mkdir") == "1\n");
  CHECK(sh.ls("/info/L3_MON/event_configs") ==
        std::set<std::string>{"mbm_local_bytes", "mbm_total_bytes"});
  CHECK(sh.cat("/info/L3_MON/event_configs/mbm_total_bytes/event_filter") ==
        "local_reads,remote_reads,local_non_temporal_writes,remote_non_temporal_writes,"
        "local_reads_slow_memory,remote_reads_slow_memory,dirty_victim_writes_all\n");
  CHECK(sh.cat("/info/L3_MON/event_configs/mbm_local_bytes/event_filter") ==
        "local_reads,local_non_temporal_writes,local_reads_slow_memory\n");
  CHECK(sh.ls("/info/L3_MON").count("mbm_total_bytes_config") == 0);
  CHECK(sh.cat("/info/L3_MON/mon_features") == "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.cat("/p0/mbm_L3_assignments") == "mbm_total_bytes:0=e;1=e\nmbm_local_bytes:0=e;1=e\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=28;1=28\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:0=_") == 0);
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "Unassigned\n");
  CHECK(sh.cat("/p0/mon_data/mon_L3_01/mbm_total_bytes") != "Unassigned\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:*=e;0=_") == 0);
  CHECK(sh.cat("/p0/mbm_L3_assignments") == "mbm_total_bytes:0=e;1=e\nmbm_local_bytes:0=e;1=e\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "bogus:0=e") == ENOENT);
  CHECK(sh.lcs() == "Invalid event bogus\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:0=x") == EINVAL);
  CHECK(sh.lcs() == "Assign operation 'mbm_total_bytes:0=x' failed\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:9=e") == EINVAL);
  CHECK(sh.lcs() == "Invalid domain id 9\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:a=e") == EINVAL);
  CHECK(sh.lcs() == "Missing domain id\n");
  // 46: counters run out; mkdir still succeeds with a message.
  for (int i = 0; i < 13; ++i) REQUIRE(sh.mkdir("/mon_groups/g" + std::to_string(i)) == 0);
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=2;1=2\n");
  REQUIRE(sh.mkdir("/mon_groups/h1") == 0);
  REQUIRE(sh.mkdir("/mon_groups/h2") == 0);
  CHECK(sh.lcs() ==
        "Failed to allocate counter for mbm_total_bytes in domain 0\n"
        "Failed to allocate counter for mbm_total_bytes in domain 1\n"
        "Failed to allocate counter for mbm_local_bytes in domain 0\n"
        "Failed to allocate counter for mbm_local_bytes in domain 1\n");
  CHECK(sh.echo("/mon_groups/h2/mbm_L3_assignments", "mbm_local_bytes:0=e") == ENOSPC);
  CHECK(sh.lcs() ==
        "Failed to allocate counter for mbm_local_bytes in domain 0\n"
        "Assign operation 'mbm_local_bytes:0=e' failed\n");
  // rmdir releases counters.
  REQUIRE(sh.rmdir("/mon_groups/h1") == 0);
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=2;1=2\n");
  // Switching to default: every counter released, BMEC files appear.
  CHECK(sh.echo("/info/L3_MON/mbm_assign_mode", "default") == 0);
  CHECK(sh.cat("/info/L3_MON/mbm_assign_mode") == "[default]\nmbm_event\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "ERRNO 22");
  CHECK(sh.lcs() == "mbm_event counter assignment mode is not enabled\n");
  CHECK(sh.cat("/p0/mbm_L3_assignments") == "ERRNO 22");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:0=e") == EINVAL);
  CHECK(sh.lcs() == "mbm_event mode is not enabled\n");
  CHECK(sh.echo("/info/L3_MON/mbm_assign_on_mkdir", "1") == EINVAL);
  CHECK(sh.ls("/info/L3_MON").count("mbm_total_bytes_config") == 1);
  CHECK(sh.cat("/info/L3_MON/mon_features") ==
        "llc_occupancy\nmbm_total_bytes\nmbm_total_bytes_config\nmbm_local_bytes\n"
        "mbm_local_bytes_config\n");
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") != "Unassigned\n");
  // 45: back to mbm_event: existing groups are Unassigned, new ones assigned.
  CHECK(sh.echo("/info/L3_MON/mbm_assign_mode", "mbm_event") == 0);
  CHECK(sh.cat("/p0/mon_data/mon_L3_00/mbm_total_bytes") == "Unassigned\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=32;1=32\n");
  CHECK(sh.echo("/info/L3_MON/mbm_assign_mode", "MBM_EVENT") == EINVAL);
  CHECK(sh.lcs() == "Unsupported assign mode\n");
  CHECK(sh.ls("/info/L3_MON").count("mbm_total_bytes_config") == 0);
  // Invalidation for the hidden/shown files was sent.
  CHECK_FALSE(f.inval.entries.empty());
}

TEST_CASE("mbm_assign_mode on a non-ABMC system (43)", "[abmc]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  CHECK(sh.cat("/info/L3_MON/mbm_assign_mode") == "[default]\n");
  CHECK(sh.echo("/info/L3_MON/mbm_assign_mode", "mbm_event") == EINVAL);
  CHECK(sh.lcs() == "mbm_event mode is not supported\n");
  CHECK(sh.echo("/info/L3_MON/mbm_assign_mode", "default") == 0);
  CHECK(sh.write("/info/L3_MON/mbm_assign_mode", "default") == EINVAL);
  CHECK(sh.ls("/").count("mbm_L3_assignments") == 0);
}

TEST_CASE("BMEC configuration on amd-2s (42)", "[abmc]") {
  SimFixture f("amd-2s");
  Shell& sh = *f.sh;
  CHECK(sh.echo("/info/L3_MON/mbm_assign_mode", "default") == 0);
  CHECK(sh.cat("/info/L3_MON/mbm_total_bytes_config") == "0=0x7f;1=0x7f\n");
  CHECK(sh.cat("/info/L3_MON/mbm_local_bytes_config") == "0=0x15;1=0x15\n");
  CHECK(sh.echo("/info/L3_MON/mbm_total_bytes_config", "0=0x33;7=0x1") == EINVAL);
  CHECK(sh.lcs() == "ok\n");
  CHECK(sh.cat("/info/L3_MON/mbm_total_bytes_config") == "0=0x33;1=0x7f\n");
  CHECK(sh.echo("/info/L3_MON/mbm_total_bytes_config", "0=0x80") == EINVAL);
  CHECK(sh.lcs() == "Invalid event configuration: max valid mask is 0x7f\n");
  CHECK(sh.echo("/info/L3_MON/mbm_total_bytes_config", "x=1") == EINVAL);
  CHECK(sh.lcs() == "Missing '=' or non-numeric domain id\n");
  CHECK(sh.echo("/info/L3_MON/mbm_local_bytes_config", "0=zz") == EINVAL);
  CHECK(sh.lcs() == "Non-numeric event configuration value\n");
  CHECK(sh.write("/info/L3_MON/mbm_local_bytes_config", "0=1") == EINVAL);
  CHECK(sh.lcs() == "mbm_local_bytes_config: Invalid input\n");
  CHECK(sh.echo("/info/L3_MON/mbm_local_bytes_config", "0=0;1=0x15") == 0);
  CHECK(sh.cat("/info/L3_MON/mbm_local_bytes_config") == "0=0x00;1=0x15\n");
  // AMD units and no throttle mode file.
  CHECK(sh.cat("/info/MB/min_bandwidth") == "0\n");
  CHECK(sh.cat("/info/MB/bandwidth_gran") == "1\n");
  CHECK(sh.cat("/info/MB/delay_linear") == "0\n");
  CHECK(sh.ls("/info/MB").count("thread_throttle_mode") == 0);
  CHECK(sh.cat("/schemata") ==
        "  SMBA:0=2048;1=2048\n    MB:0=2048;1=2048\n    L3:0=ffff;1=ffff\n");
  CHECK(sh.echo("/schemata", "L3:0=0") == 0);
  CHECK(sh.echo("/schemata", "L3:0=f0f") == 0);
}

}  // namespace resctrlfs::fs::testing
