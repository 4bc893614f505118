// CPU and domain hotplug at the model level (mon_data domain directories,
// cpus/cpus_list, RMID limbo): the simulated machine powers CPUs down and up and
// fs::Filesystem follows, on intel-2s (two L3 domains: CPUs 0-3 and 4-7)
// and amd-2s (ABMC counters).
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "tests/fs/fake_arch.h"
#include "tests/fs/harness.h"

namespace resctrlfs::fs::testing {

namespace {

// The order the kernel's cpuhp callbacks run in: the OS lets go of the CPU
// before it powers down, and takes it after it powers up.
void offline(SimFixture& f, unsigned cpu) {
  REQUIRE(f.fs->cpu_offline(cpu).ok());
  REQUIRE(f.backend.sim->set_cpu_online(cpu, false).ok());
}

void online(SimFixture& f, unsigned cpu) {
  REQUIRE(f.backend.sim->set_cpu_online(cpu, true).ok());
  REQUIRE(f.fs->cpu_online(cpu).ok());
}

size_t count_inval(const RecordingInval& r, const std::string& name) {
  size_t n = 0;
  for (auto& [ino, nm] : r.entries) n += nm == name ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("offline CPUs leave their groups, the last one of a domain takes it away", "[hotplug]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);
  REQUIRE(sh.echo("/g/cpus_list", "4-5") == 0);
  REQUIRE(sh.echo("/g/mon_groups/m/cpus_list", "4") == 0);
  REQUIRE(sh.echo("/g/schemata", "L3:0=f;1=3") == 0);
  REQUIRE(sh.echo("/g/schemata", "MB:1=50") == 0);

  offline(f, 4);
  CHECK(sh.cat("/g/cpus_list") == "5\n");
  CHECK(sh.cat("/g/mon_groups/m/cpus_list") == "\n");
  CHECK(sh.cat("/cpus_list") == "0-3,6-7\n");
  // Domain 1 still has CPUs: everything of it stays.
  CHECK(sh.ls("/mon_data") == std::set<std::string>{"mon_L3_00", "mon_L3_01"});
  CHECK(sh.cat("/g/schemata") == "    MB:0=100;1=50\n    L3:0=f;1=3\n");

  for (unsigned c : {5U, 6U, 7U}) offline(f, c);
  for (const char* md : {"/mon_data", "/g/mon_data", "/g/mon_groups/m/mon_data"})
    CHECK(sh.ls(md) == std::set<std::string>{"mon_L3_00"});
  CHECK(count_inval(f.inval, "mon_L3_01") == 3);
  CHECK(sh.cat("/g/mon_data/mon_L3_01/llc_occupancy") == "ERRNO 2");
  CHECK(sh.cat("/schemata") == "    MB:0=100\n    L3:0=7ff\n");
  CHECK(sh.cat("/g/schemata") == "    MB:0=100\n    L3:0=f\n");
  CHECK(sh.cat("/g/size").find(";1=") == std::string::npos);
  CHECK(sh.cat("/info/L3/bit_usage").find(";1=") == std::string::npos);
  CHECK(sh.cat("/info/L3/bit_usage").find("0=") != std::string::npos);
  CHECK(sh.cat("/cpus") == "0f\n");
  CHECK(sh.cat("/cpus_list") == "0-3\n");
  CHECK(sh.cat("/g/cpus") == "00\n");
  // The absent domain cannot be written, nor its CPUs assigned.
  CHECK(sh.echo("/g/schemata", "L3:1=3") == EINVAL);
  CHECK(sh.echo("/g/cpus_list", "4") == EINVAL);
  CHECK(sh.lcs() == "Can only assign online CPUs\n");
  CHECK(sh.echo("/g/cpus", "10") == EINVAL);
  CHECK(sh.lcs() == "Can only assign online CPUs\n");
  // Domain 0 works as before.
  CHECK(sh.echo("/g/cpus_list", "2") == 0);
  CHECK(sh.cat("/g/mon_data/mon_L3_00/llc_occupancy") == "0\n");
}

TEST_CASE("a returning domain has default controls, fresh monitoring, CPUs in the default group",
          "[hotplug]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.mkdir("/g/mon_groups/m") == 0);
  REQUIRE(sh.echo("/g/cpus_list", "5") == 0);
  REQUIRE(sh.echo("/g/schemata", "L3:0=f;1=3") == 0);
  REQUIRE(sh.echo("/g/schemata", "MB:0=40;1=50") == 0);
  for (unsigned c : {4U, 5U, 6U, 7U}) offline(f, c);
  f.inval.entries.clear();

  online(f, 6);
  CHECK(sh.cat("/cpus_list") == "0-3,6\n");
  CHECK(sh.cat("/g/cpus_list") == "\n");
  for (const char* md : {"/mon_data", "/g/mon_data", "/g/mon_groups/m/mon_data"})
    CHECK(sh.ls(md) == std::set<std::string>{"mon_L3_00", "mon_L3_01"});
  CHECK(count_inval(f.inval, "mon_L3_01") == 3);
  CHECK(sh.ls("/g/mon_data/mon_L3_01") ==
        std::set<std::string>{"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes"});
  CHECK(sh.stat("/g/mon_data/mon_L3_01").mode == (S_IFDIR | 0755));
  CHECK(sh.cat("/g/mon_data/mon_L3_01/mbm_total_bytes") == "0\n");
  // Domain 1 at the defaults for every CLOSID; domain 0 as it was.
  CHECK(sh.cat("/schemata") == "    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n");
  CHECK(sh.cat("/g/schemata") == "    MB:0=40;1=100\n    L3:0=f;1=7ff\n");
  // And it can be programmed again.
  CHECK(sh.echo("/g/schemata", "L3:1=3") == 0);
  CHECK(sh.cat("/g/schemata") == "    MB:0=40;1=100\n    L3:0=f;1=3\n");
  CHECK(sh.echo("/g/cpus_list", "6") == 0);
  CHECK(sh.cat("/cpus_list") == "0-3\n");
  online(f, 4);
  CHECK(sh.cat("/cpus_list") == "0-4\n");
  CHECK(sh.cat("/g/cpus_list") == "6\n");
  // The CPUs carry the tags of their groups in the hardware.
  bool seen4 = false, seen6 = false;
  for (const hw::RegisterValue& r : f.backend.sim->dump_registers()) {
    if (r.msr != 0xC8F) continue;
    if (r.cpu == 4) seen4 = r.value == 0;
    if (r.cpu == 6) seen6 = (r.value >> 32) == 1;
  }
  CHECK(seen4);
  CHECK(seen6);
}

TEST_CASE("hotplug refusals change nothing", "[hotplug]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  CHECK(f.fs->cpu_offline(8).error().code == EINVAL);
  CHECK(f.fs->cpu_online(3).error().code == EINVAL);
  for (unsigned c : {1U, 2U, 3U, 4U, 5U, 6U, 7U}) offline(f, c);
  CHECK(f.fs->cpu_offline(0).error().code == EBUSY);
  CHECK(f.fs->cpu_offline(5).error().code == EINVAL);
  CHECK(sh.cat("/cpus_list") == "0\n");
  // Powering is the machine's business: the OS cannot take a CPU it has not.
  CHECK(f.fs->cpu_online(5).error().code == EIO);
  CHECK(sh.cat("/cpus_list") == "0\n");
  CHECK(sh.ls("/mon_data") == std::set<std::string>{"mon_L3_00"});
}

TEST_CASE("a domain going offline force-clears its limbo marks", "[hotplug][limbo]") {
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  // Threshold 0: an RMID is never clean, so it stays busy until its
  // domains go away.
  REQUIRE(sh.echo("/info/L3_MON/max_threshold_occupancy", "0") == 0);
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.rmdir("/g") == 0);
  f.fs->tick(std::chrono::steady_clock::now());
  CHECK(f.fs->status_json().find("\"busy_per_domain\":{\"0\":[1],\"1\":[1]}") != std::string::npos);
  for (unsigned c : {4U, 5U, 6U, 7U}) offline(f, c);
  CHECK(f.fs->status_json().find("\"busy_per_domain\":{\"0\":[1]}") != std::string::npos);
  online(f, 4);
  // A returning domain has nothing busy; RMIDs freed now are busy there too.
  CHECK(f.fs->status_json().find("\"busy_per_domain\":{\"0\":[1],\"1\":[]}") != std::string::npos);
  REQUIRE(sh.mkdir("/h") == 0);
  REQUIRE(sh.rmdir("/h") == 0);
  CHECK(f.fs->status_json().find("\"busy_per_domain\":{\"0\":[1,2],\"1\":[2]}") !=
        std::string::npos);
}

TEST_CASE("assigned counters go with their domain and are not re-assigned", "[hotplug][abmc]") {
  SimFixture f("amd-2s");
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/p0") == 0);
  CHECK(sh.cat("/p0/mbm_L3_assignments") == "mbm_total_bytes:0=e;1=e\nmbm_local_bytes:0=e;1=e\n");
  for (unsigned c : {4U, 5U, 6U, 7U}) offline(f, c);
  CHECK(sh.cat("/p0/mbm_L3_assignments") == "mbm_total_bytes:0=e\nmbm_local_bytes:0=e\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=28\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:1=e") == EINVAL);
  CHECK(sh.lcs() == "Invalid domain id 1\n");
  online(f, 7);
  CHECK(sh.cat("/p0/mbm_L3_assignments") == "mbm_total_bytes:0=e;1=_\nmbm_local_bytes:0=e;1=_\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=28;1=32\n");
  CHECK(sh.cat("/p0/mon_data/mon_L3_01/mbm_total_bytes") == "Unassigned\n");
  CHECK(sh.echo("/p0/mbm_L3_assignments", "mbm_total_bytes:1=e") == 0);
  CHECK(sh.cat("/p0/mon_data/mon_L3_01/mbm_total_bytes") == "0\n");
  CHECK(sh.cat("/info/L3_MON/available_mbm_cntrs") == "0=28;1=31\n");
}

TEST_CASE("CDP survives a domain's power cycle on a per-CPU QOS_CFG machine", "[hotplug]") {
  MountOptions o;
  o.cdp = true;
  SimFixture f("amd-2s", o);
  Shell& sh = *f.sh;
  REQUIRE(sh.mkdir("/g") == 0);
  REQUIRE(sh.echo("/g/schemata", "L3CODE:1=f0") == 0);
  for (unsigned c : {4U, 5U, 6U, 7U}) offline(f, c);
  CHECK(sh.cat("/g/schemata").find("L3CODE:0=ffff\n") != std::string::npos);
  online(f, 5);
  online(f, 6);
  CHECK(sh.cat("/g/schemata").find("L3CODE:0=ffff;1=ffff\n") != std::string::npos);
  for (const hw::RegisterValue& r : f.backend.sim->dump_registers())
    if (r.msr == 0xC81) CHECK(r.value == 1);  // IA32_L3_QOS_CFG: CDP on
}

TEST_CASE("state restore copes with domains and CPUs that are offline now", "[hotplug][state]") {
  std::string saved;
  {
    SimFixture f("intel-2s");
    Shell& sh = *f.sh;
    REQUIRE(sh.mkdir("/g") == 0);
    REQUIRE(sh.echo("/g/schemata", "L3:0=f;1=3") == 0);
    REQUIRE(sh.echo("/g/cpus_list", "2,5") == 0);
    saved = f.fs->save_state_json();
  }
  SimFixture f("intel-2s");
  Shell& sh = *f.sh;
  for (unsigned c : {4U, 5U, 6U, 7U}) offline(f, c);
  REQUIRE(f.fs->restore_state_json(saved).ok());
  CHECK(sh.cat("/g/schemata") == "    MB:0=100\n    L3:0=f\n");
  CHECK(sh.cat("/g/cpus_list") == "2\n");
  CHECK(sh.ls("/g/mon_data") == std::set<std::string>{"mon_L3_00"});
  online(f, 5);
  CHECK(sh.cat("/g/schemata") == "    MB:0=100;1=100\n    L3:0=f;1=7ff\n");
}

TEST_CASE("a hardware layer without hotplug refuses it", "[hotplug]") {
  hw::PlatformInfo p = FakeArch::base_platform(4);
  FakeArch::add_l3_cat(p, 8, 4);
  FakeFixture k(p);
  std::unique_ptr<Filesystem>& fs = k.fs;
  Shell& sh = *k.sh;
  CHECK(fs->cpu_offline(3).error().code == EOPNOTSUPP);
  CHECK(sh.cat("/cpus_list") == "0-3\n");
}

}  // namespace resctrlfs::fs::testing
