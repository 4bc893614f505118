// Tests CPU hotplug in hw/: the simulated machine powering CPUs and their
// domains down and up (register access, power-on values), and the x86
// Arch following it (online CPUs, domain lists, ArchEvents up-calls,
// default controls and CDP state for a returning domain, PQR_ASSOC 0/0).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "hw/backend.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;

namespace {

struct Fixture {
  Fixture() {
    auto b = make_sim_backend("intel-2s");
    REQUIRE(b.ok());
    backend = std::move(b).value();
    machine = std::static_pointer_cast<sim::SimMachine>(backend.keepalive);
  }
  Arch& arch() { return *backend.arch; }
  Backend backend;
  std::shared_ptr<sim::SimMachine> machine;
};

// Records the up-calls as text, in order.
struct Recorder final : ArchEvents {
  void ctrl_domain_online(ResourceId rid, int id) override {
    log.push_back(std::string("+") + resource_name(rid) + ":" + std::to_string(id));
  }
  void ctrl_domain_offline(ResourceId rid, int id) override {
    log.push_back(std::string("-") + resource_name(rid) + ":" + std::to_string(id));
  }
  void mon_domain_online(ResourceId rid, int id) override {
    if (rid == ResourceId::L3) log.push_back("+mon:" + std::to_string(id));
  }
  void mon_domain_offline(ResourceId rid, int id) override {
    if (rid == ResourceId::L3) log.push_back("-mon:" + std::to_string(id));
  }
  std::vector<std::string> log;
};

std::vector<int> ids(const std::vector<CtrlDomain>& ds) {
  std::vector<int> out;
  for (const auto& d : ds) out.push_back(d.id);
  return out;
}

std::vector<int> ids(const std::vector<MonDomain>& ds) {
  std::vector<int> out;
  for (const auto& d : ds) out.push_back(d.id);
  return out;
}

}  // namespace

TEST_CASE("sim: an offline CPU's MSRs cannot be accessed, it comes back with PQR_ASSOC 0/0") {
  Fixture f;
  sim::SimMachine& m = *f.machine;
  REQUIRE(m.write(5, IA32_PQR_ASSOC, (3ULL << 32) | 7).ok());
  REQUIRE(m.set_cpu_online(5, false).ok());
  CHECK_FALSE(m.cpu_online(5));
  CHECK(m.read(5, IA32_PQR_ASSOC).error().code == EIO);
  CHECK(m.write(5, IA32_PQR_ASSOC, 0).error().code == EIO);
  for (const RegisterValue& r : m.dump_registers()) CHECK(r.cpu != 5);
  // Another CPU of the domain still reaches the domain's registers.
  CHECK(m.read(4, IA32_L3_MASK_0).ok());
  REQUIRE(m.set_cpu_online(5, true).ok());
  CHECK(m.cpu_online(5));
  CHECK(*m.read(5, IA32_PQR_ASSOC) == 0);
  CHECK(m.set_cpu_online(8, false).error().code == EINVAL);
  CHECK(m.set_cpu_online(5, true).ok());  // already online: nothing to do
}

TEST_CASE("sim: a domain keeps its registers while one CPU is up, loses them when all go") {
  Fixture f;
  sim::SimMachine& m = *f.machine;
  REQUIRE(m.write(4, IA32_L3_MASK_0 + 2, 0x3).ok());
  REQUIRE(m.write(4, IA32_L2_QOS_EXT_BW_THRTL_0 + 2, 50).ok());
  REQUIRE(m.write(4, IA32_L3_QOS_CFG, QOS_CFG_CDP_ENABLE).ok());
  for (unsigned c : {5U, 6U, 7U}) REQUIRE(m.set_cpu_online(c, false).ok());
  CHECK(*m.read(4, IA32_L3_MASK_0 + 2) == 0x3);
  REQUIRE(m.set_cpu_online(4, false).ok());
  // Domain 0 is untouched by domain 1's power cycle.
  REQUIRE(m.write(0, IA32_L3_MASK_0 + 2, 0x1).ok());
  REQUIRE(m.set_cpu_online(6, true).ok());
  CHECK(*m.read(6, IA32_L3_MASK_0 + 2) == 0x7ff);
  CHECK(*m.read(6, IA32_L2_QOS_EXT_BW_THRTL_0 + 2) == 0);
  CHECK(*m.read(6, IA32_L3_QOS_CFG) == 0);
  CHECK(*m.read(0, IA32_L3_MASK_0 + 2) == 0x1);
}

TEST_CASE("sim: counts of a powered-down domain start from zero") {
  Fixture f;
  sim::SimMachine& m = *f.machine;
  m.set_manual_clock(true);
  REQUIRE(m.write(4, IA32_PQR_ASSOC, 5).ok());
  Workload w;
  w.cache_footprint_bytes = 1 << 20;
  w.bandwidth_mbps = 1000;
  REQUIRE(m.attach_cpu_workload(4, w).ok());
  m.advance_ms(3000);
  CHECK(m.occupancy_bytes(1, 5) > 0);
  for (unsigned c : {4U, 5U, 6U, 7U}) REQUIRE(m.set_cpu_online(c, false).ok());
  // The workload went with its CPU.
  CHECK(m.attach_cpu_workload(4, w).error().code == EINVAL);
  REQUIRE(m.set_cpu_online(4, true).ok());
  CHECK(m.occupancy_bytes(1, 5) == 0);
  REQUIRE(m.write(4, IA32_QM_EVTSEL, (5ULL << 32) | QOS_L3_MBM_TOTAL_EVENT_ID).ok());
  CHECK(*m.read(4, IA32_QM_CTR) == 0);
}

TEST_CASE("arch: the last CPU of a domain takes the domain away, announced first") {
  Fixture f;
  Arch& a = f.arch();
  Recorder ev;
  for (unsigned c : {4U, 5U, 6U}) {
    REQUIRE(a.offline_cpu(c, &ev).ok());
    REQUIRE(f.machine->set_cpu_online(c, false).ok());
  }
  CHECK(ev.log.empty());
  CHECK(a.info().res(ResourceId::L3).ctrl_domains[1].cpus.cpus() == std::vector<unsigned>{7});
  REQUIRE(a.offline_cpu(7, &ev).ok());
  REQUIRE(f.machine->set_cpu_online(7, false).ok());
  CHECK(ev.log == std::vector<std::string>{"-L3:1", "-MB:1", "-mon:1"});
  CHECK(a.info().online.cpus() == std::vector<unsigned>{0, 1, 2, 3});
  CHECK(ids(a.info().res(ResourceId::L3).ctrl_domains) == std::vector<int>{0});
  CHECK(ids(a.info().res(ResourceId::MB).ctrl_domains) == std::vector<int>{0});
  CHECK(ids(a.info().res(ResourceId::L3).mon.mon_domains) == std::vector<int>{0});
  // The absent domain cannot be programmed or read; domain 0 still works.
  CHECK(a.update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 1, 0x3}}).error().code == EINVAL);
  CHECK(a.read_counter(ResourceId::L3, 1, 0, 0, EventId::LLC_OCCUPANCY, nullptr).err ==
        ReadError::kError);
  REQUIRE(a.update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 1, 0x3}}).ok());
  CHECK(a.get_ctrl(ResourceId::L3, ConfType::NONE, 0, 1) == 0x3);
  CHECK(a.set_cpu_assoc(5, 1, 1).error().code == EINVAL);
  // Refusals.
  CHECK(a.offline_cpu(7, &ev).error().code == EINVAL);
  CHECK(a.offline_cpu(8, &ev).error().code == EINVAL);
  for (unsigned c : {1U, 2U, 3U}) REQUIRE(a.offline_cpu(c, nullptr).ok());
  CHECK(a.offline_cpu(0, &ev).error().code == EBUSY);
}

TEST_CASE("arch: a returning domain has default controls, CDP as mounted, PQR_ASSOC 0/0") {
  Fixture f;
  Arch& a = f.arch();
  sim::SimMachine& m = *f.machine;
  REQUIRE(a.set_cdp_enabled(ResourceId::L3, true).ok());
  REQUIRE(a.update_ctrls({{ResourceId::L3, ConfType::DATA, 1, 2, 0x3},
                          {ResourceId::MB, ConfType::NONE, 1, 2, 30}})
              .ok());
  REQUIRE(a.set_cpu_assoc(6, 2, 9).ok());
  Recorder ev;
  for (unsigned c : {4U, 5U, 6U, 7U}) {
    REQUIRE(a.offline_cpu(c, &ev).ok());
    REQUIRE(m.set_cpu_online(c, false).ok());
  }
  ev.log.clear();
  // The OS cannot bring up a CPU the machine has not powered.
  CHECK(a.online_cpu(6, &ev).error().code == EIO);
  CHECK_FALSE(a.info().online.test(6));
  CHECK(ev.log.empty());
  REQUIRE(m.set_cpu_online(6, true).ok());
  REQUIRE(a.online_cpu(6, &ev).ok());
  CHECK(ev.log == std::vector<std::string>{"+L3:1", "+MB:1", "+mon:1"});
  CHECK(a.info().online.test(6));
  CHECK(ids(a.info().res(ResourceId::L3).ctrl_domains) == std::vector<int>{0, 1});
  CHECK(a.info().res(ResourceId::L3).mon.mon_domains[1].cpus.cpus() == std::vector<unsigned>{6});
  CHECK(a.get_ctrl(ResourceId::L3, ConfType::DATA, 1, 2) == 0x7ff);
  CHECK(a.get_ctrl(ResourceId::MB, ConfType::NONE, 1, 2) == 100);
  for (uint32_t i = 0; i < 15; ++i) CHECK(*m.read(6, IA32_L3_MASK_0 + i) == 0x7ff);
  for (uint32_t i = 0; i < 15; ++i) CHECK(*m.read(6, IA32_L2_QOS_EXT_BW_THRTL_0 + i) == 0);
  CHECK(*m.read(6, IA32_L3_QOS_CFG) == QOS_CFG_CDP_ENABLE);
  CHECK(*m.read(6, IA32_PQR_ASSOC) == 0);
  // A second CPU joins the existing domain without an announcement, and
  // the domain is programmable again.
  ev.log.clear();
  REQUIRE(m.set_cpu_online(4, true).ok());
  REQUIRE(a.online_cpu(4, &ev).ok());
  CHECK(ev.log.empty());
  CHECK(a.info().res(ResourceId::L3).ctrl_domains[1].cpus.cpus() == std::vector<unsigned>{4, 6});
  REQUIRE(a.update_ctrls({{ResourceId::L3, ConfType::CODE, 1, 2, 0xc}}).ok());
  CHECK(*m.read(4, IA32_L3_MASK_0 + 5) == 0xc);
  CHECK(a.online_cpu(4, &ev).error().code == EINVAL);
  CHECK(a.online_cpu(9, &ev).error().code == EINVAL);
}

TEST_CASE("arch: MBM state of a returning domain is fresh") {
  Fixture f;
  Arch& a = f.arch();
  sim::SimMachine& m = *f.machine;
  m.set_manual_clock(true);
  REQUIRE(a.set_cpu_assoc(4, 0, 3).ok());
  Workload w;
  w.bandwidth_mbps = 1000;
  REQUIRE(m.attach_cpu_workload(4, w).ok());
  (void)a.read_counter(ResourceId::L3, 1, 0, 3, EventId::MBM_TOTAL, nullptr);
  m.advance_ms(2000);
  CHECK(a.read_counter(ResourceId::L3, 1, 0, 3, EventId::MBM_TOTAL, nullptr).bytes > 0);
  for (unsigned c : {4U, 5U, 6U, 7U}) {
    REQUIRE(a.offline_cpu(c, nullptr).ok());
    REQUIRE(m.set_cpu_online(c, false).ok());
  }
  REQUIRE(m.set_cpu_online(4, true).ok());
  REQUIRE(a.online_cpu(4, nullptr).ok());
  CounterValue v = a.read_counter(ResourceId::L3, 1, 0, 3, EventId::MBM_TOTAL, nullptr);
  CHECK(v.err == ReadError::kNone);
  CHECK(v.bytes == 0);
}
