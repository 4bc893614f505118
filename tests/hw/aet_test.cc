// Tests Intel telemetry (AET, PERF_PKG) in hw/: the aggregator layouts,
// enumeration against a scripted PMT device (Linux's rules for unknown
// packages, wrong sizes, insufficient RMIDs and events an earlier layout
// already provides), counter reads (valid bit, summing aggregators of a
// package), the intel-aet platform and the simulated aggregators' model on
// a manual clock.
#include <catch2/catch.hpp>
#include <cmath>
#include <map>

#include "hw/backend.h"
#include "hw/sim/machine.h"
#include "hw/x86/aet.h"
#include "hw/x86/arch_x86.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;

namespace {

// A PMT device with scripted regions and words; unscripted words read 0.
struct ScriptedPmt : PmtTelemetryDevice {
  std::vector<PmtRegion> regions;
  std::map<std::pair<size_t, uint64_t>, uint64_t> words;
  std::vector<std::pair<size_t, uint64_t>> reads;
  std::vector<PmtRegion> pmt_regions() const override { return regions; }
  Result<uint64_t> pmt_read64(size_t region, uint64_t offset) override {
    reads.emplace_back(region, offset);
    if (region >= regions.size() || offset + 8 > regions[region].size) return Error::make(EIO);
    auto it = words.find({region, offset});
    return it == words.end() ? uint64_t{0} : it->second;
  }
  void add(uint32_t guid, int pkg) {
    const AetEventGroup* g = aet_event_group(guid);
    REQUIRE(g != nullptr);
    regions.push_back(PmtRegion{g->feature, guid, pkg, g->num_rmids, g->mmio_size()});
  }
};

PlatformInfo two_packages() {
  PlatformInfo p;
  p.nr_cpus = 4;
  p.online = CpuMask(4);
  for (unsigned c = 0; c < 4; ++c) p.online.set(c);
  p.cpu_ids(Scope::PACKAGE) = {0, 0, 1, 1};
  return p;
}

std::vector<EventId> ids(const MonCaps& c) {
  std::vector<EventId> out;
  for (const auto& e : c.events) out.push_back(e.id);
  return out;
}

const std::vector<EventId> kCwfEvents = {
    EventId::CORE_ENERGY,          EventId::ACTIVITY,
    EventId::STALLS_LLC_HIT,       EventId::C1_RES,
    EventId::UNHALTED_CORE_CYCLES, EventId::STALLS_LLC_MISS,
    EventId::AUTO_C6_RES,          EventId::UNHALTED_REF_CYCLES,
    EventId::UOPS_RETIRED};

}  // namespace

TEST_CASE("AET layouts: sizes and counter offsets of the known GUIDs") {
  const AetEventGroup* e = aet_event_group(AET_GUID_CWF_ENERGY);
  const AetEventGroup* p = aet_event_group(AET_GUID_CWF_PERF);
  REQUIRE(e != nullptr);
  REQUIRE(p != nullptr);
  CHECK(e->mmio_size() == (576 * 2 + 3) * 8);
  CHECK(p->mmio_size() == (576 * 7 + 3) * 8);
  CHECK(aet_event_group(AET_GUID_DMR_ENERGY)->mmio_size() == (256 * 2 + 3) * 8);
  CHECK(aet_event_group(AET_GUID_DMR_PERF)->mmio_size() == (256 * 4 + 3) * 8);
  CHECK(p->counter_offset(3, 2) == (3 * 7 + 2) * 8);
  CHECK(aet_event_group(0x12345678) == nullptr);
  CHECK(event_is_floating_point(EventId::CORE_ENERGY));
  CHECK(event_is_floating_point(EventId::ACTIVITY));
  CHECK_FALSE(event_is_floating_point(EventId::UOPS_RETIRED));
  CHECK(is_perf_pkg_event(EventId::PCNT));
  CHECK_FALSE(is_perf_pkg_event(EventId::MBM_LOCAL));
}

TEST_CASE("AET enumeration: both CWF groups on two packages") {
  auto dev = std::make_shared<ScriptedPmt>();
  for (int pkg : {0, 1}) {
    dev->add(AET_GUID_CWF_ENERGY, pkg);
    dev->add(AET_GUID_CWF_PERF, pkg);
  }
  PlatformInfo info = two_packages();
  AetTelemetry aet(dev, info);
  const MonCaps& c = info.res(ResourceId::PERF_PKG).mon;
  CHECK(c.capable);
  CHECK(c.num_rmids == 576);
  CHECK(ids(c) == kCwfEvents);
  CHECK(c.events[0].binary_bits == 18);
  CHECK(c.events[1].binary_bits == 18);
  CHECK(c.events[2].binary_bits == 0);
  REQUIRE(c.mon_domains.size() == 2);
  CHECK(c.mon_domains[0].id == 0);
  CHECK(c.mon_domains[0].cpus.cpus() == std::vector<unsigned>{0, 1});
  CHECK(c.mon_domains[1].id == 1);
  CHECK(c.mon_domains[1].cpus.cpus() == std::vector<unsigned>{2, 3});
}

TEST_CASE("AET enumeration skips unusable aggregators and layouts") {
  PlatformInfo info = two_packages();
  auto dev = std::make_shared<ScriptedPmt>();

  SECTION("no aggregators: no PERF_PKG") {
    AetTelemetry aet(dev, info);
    CHECK_FALSE(info.res(ResourceId::PERF_PKG).mon.capable);
    CHECK(info.res(ResourceId::PERF_PKG).mon.events.empty());
    CHECK(num_rmid_idx(info) == 0);
  }
  SECTION("wrong size or unknown package: the aggregator is not used") {
    dev->add(AET_GUID_CWF_ENERGY, 0);
    dev->regions.back().size -= 8;
    dev->add(AET_GUID_CWF_PERF, 7);
    AetTelemetry aet(dev, info);
    CHECK_FALSE(info.res(ResourceId::PERF_PKG).mon.capable);
  }
  SECTION("an aggregator tracking fewer RMIDs than its layout disables the layout") {
    dev->add(AET_GUID_CWF_ENERGY, 0);
    dev->add(AET_GUID_CWF_ENERGY, 1);
    dev->regions.back().num_rmids = 500;
    dev->add(AET_GUID_CWF_PERF, 0);
    AetTelemetry aet(dev, info);
    CHECK(info.res(ResourceId::PERF_PKG).mon.capable);
    CHECK(ids(info.res(ResourceId::PERF_PKG).mon) ==
          std::vector<EventId>(kCwfEvents.begin() + 2, kCwfEvents.end()));
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 576);
  }
  SECTION("a layout whose events are all provided already is not enabled") {
    dev->add(AET_GUID_CWF_ENERGY, 0);
    dev->add(AET_GUID_DMR_ENERGY, 0);
    AetTelemetry aet(dev, info);
    CHECK(ids(info.res(ResourceId::PERF_PKG).mon) ==
          std::vector<EventId>{EventId::CORE_ENERGY, EventId::ACTIVITY});
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids ==
          576);  // the DMR layout's 256 do not count
  }
  SECTION("a second layout with new events lowers num_rmids to the smaller") {
    dev->add(AET_GUID_CWF_PERF, 0);
    dev->add(AET_GUID_DMR_PERF, 0);
    AetTelemetry aet(dev, info);
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 256);
    CHECK(ids(info.res(ResourceId::PERF_PKG).mon) ==
          std::vector<EventId>{EventId::STALLS_LLC_HIT, EventId::C1_RES,
                               EventId::UNHALTED_CORE_CYCLES, EventId::STALLS_LLC_MISS,
                               EventId::AUTO_C6_RES, EventId::UNHALTED_REF_CYCLES,
                               EventId::UOPS_RETIRED, EventId::INST_RETIRED, EventId::PCNT});
  }
}

TEST_CASE("AET enumeration honours the rdt= options for telemetry") {
  PlatformInfo info = two_packages();
  auto dev = std::make_shared<ScriptedPmt>();
  dev->add(AET_GUID_CWF_ENERGY, 0);
  dev->add(AET_GUID_CWF_PERF, 0);
  dev->regions.back().num_rmids = 100;  // too few for the layout's 576

  SECTION("default: the perf layout stays off") {
    AetTelemetry aet(dev, info, RdtOptions::parse(""));
    CHECK(ids(info.res(ResourceId::PERF_PKG).mon) ==
          std::vector<EventId>{EventId::CORE_ENERGY, EventId::ACTIVITY});
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 576);
  }
  SECTION("perf forced on: used with the RMIDs its aggregators have") {
    AetTelemetry aet(dev, info, RdtOptions::parse("perf"));
    CHECK(ids(info.res(ResourceId::PERF_PKG).mon) == kCwfEvents);
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 100);
  }
  SECTION("forced on by GUID, with or without 0x") {
    AetTelemetry a(dev, info, RdtOptions::parse("perf:26557651"));
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 100);
    AetTelemetry b(dev, info, RdtOptions::parse("perf:0x26557651"));
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 100);
    AetTelemetry c(dev, info, RdtOptions::parse("perf:1415910a,energy:zz"));
    CHECK(info.res(ResourceId::PERF_PKG).mon.num_rmids == 576);
  }
  SECTION("energy forced off") {
    AetTelemetry aet(dev, info, RdtOptions::parse("!energy,perf"));
    CHECK(ids(info.res(ResourceId::PERF_PKG).mon) ==
          std::vector<EventId>(kCwfEvents.begin() + 2, kCwfEvents.end()));
  }
  SECTION("everything off: no PERF_PKG") {
    AetTelemetry aet(dev, info, RdtOptions::parse("!energy:0x26696143"));
    CHECK_FALSE(info.res(ResourceId::PERF_PKG).mon.capable);
  }
}

TEST_CASE("AET reads: valid bit, summing a package's aggregators, fixed point passed through") {
  auto dev = std::make_shared<ScriptedPmt>();
  dev->add(AET_GUID_CWF_ENERGY, 0);  // region 0
  dev->add(AET_GUID_CWF_ENERGY, 0);  // region 1: a second aggregator of package 0
  dev->add(AET_GUID_CWF_ENERGY, 1);  // region 2
  dev->add(AET_GUID_CWF_PERF, 1);    // region 3
  PlatformInfo info = two_packages();
  AetTelemetry aet(dev, info);
  const AetEventGroup* e = aet_event_group(AET_GUID_CWF_ENERGY);
  const AetEventGroup* p = aet_event_group(AET_GUID_CWF_PERF);

  // RMID 5's activity (index 1) on package 0: one valid, one not yet.
  const uint64_t off = e->counter_offset(5, 1);
  dev->words[{0, off}] = PMT_DATA_VALID | (3ULL << 18 | 1ULL << 17);  // 3.5 F
  dev->words[{1, off}] = 7;                                           // no valid bit
  CounterValue v = aet.read(0, 5, EventId::ACTIVITY);
  CHECK(v.err == ReadError::kNone);
  CHECK(v.bytes == (3ULL << 18 | 1ULL << 17));
  CHECK(dev->reads == std::vector<std::pair<size_t, uint64_t>>{{0, off}, {1, off}});

  dev->words[{1, off}] = PMT_DATA_VALID | (1ULL << 18);
  v = aet.read(0, 5, EventId::ACTIVITY);
  CHECK(v.bytes == (4ULL << 18 | 1ULL << 17));

  // Package 1 has no data for RMID 5 yet.
  CHECK(aet.read(1, 5, EventId::ACTIVITY).err == ReadError::kUnavailable);
  // Perf events only on package 1; package 0 has no aggregator for them.
  dev->words[{3, p->counter_offset(9, 6)}] = PMT_DATA_VALID | 123456789;
  v = aet.read(1, 9, EventId::UOPS_RETIRED);
  CHECK(v.err == ReadError::kNone);
  CHECK(v.bytes == 123456789);
  CHECK(aet.read(0, 9, EventId::UOPS_RETIRED).err == ReadError::kUnavailable);
  // An RMID beyond the layout, or an event no aggregator provides: Error.
  CHECK(aet.read(1, 576, EventId::UOPS_RETIRED).err == ReadError::kError);
  CHECK(aet.read(1, 1, EventId::INST_RETIRED).err == ReadError::kError);
  CHECK(aet.read(1, 1, EventId::LLC_OCCUPANCY).err == ReadError::kError);
}

TEST_CASE("intel-aet platform: PERF_PKG next to L3 monitoring with more RMIDs") {
  auto b = make_sim_backend("intel-aet");
  REQUIRE(b.ok());
  const PlatformInfo& i = b->arch->info();
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 1024);
  CHECK(i.res(ResourceId::PERF_PKG).mon.capable);
  CHECK(i.res(ResourceId::PERF_PKG).mon.num_rmids == 576);
  CHECK(num_rmid_idx(i) == 576);
  CHECK(ids(i.res(ResourceId::PERF_PKG).mon) == kCwfEvents);
  REQUIRE(i.res(ResourceId::PERF_PKG).mon.mon_domains.size() == 2);
  CHECK(i.res(ResourceId::PERF_PKG).mon.mon_domains[1].cpus.cpus() ==
        std::vector<unsigned>{4, 5, 6, 7});
  CHECK(std::string(resource_name(ResourceId::PERF_PKG)) == "PERF_PKG");
  CHECK_FALSE(i.res(ResourceId::PERF_PKG).alloc_capable);
  // Other platforms have no telemetry.
  auto o = make_sim_backend("intel-2s");
  REQUIRE(o.ok());
  CHECK_FALSE(o->arch->info().res(ResourceId::PERF_PKG).mon.capable);
  CHECK(num_rmid_idx(o->arch->info()) == 224);
  CHECK(o->arch->read_counter(ResourceId::PERF_PKG, 0, 0, 0, EventId::CORE_ENERGY, nullptr).err ==
        ReadError::kError);
  // --rdt reaches the telemetry enumeration.
  auto off = make_sim_backend("intel-aet", "!perf");
  REQUIRE(off.ok());
  CHECK(ids(off->arch->info().res(ResourceId::PERF_PKG).mon) ==
        std::vector<EventId>{EventId::CORE_ENERGY, EventId::ACTIVITY});
}

namespace {
struct RecordingEvents : ArchEvents {
  std::vector<std::string> log;
  void ctrl_domain_online(ResourceId, int) override {}
  void ctrl_domain_offline(ResourceId, int) override {}
  void mon_domain_online(ResourceId rid, int id) override {
    log.push_back((rid == ResourceId::PERF_PKG ? "pkg+" : "l3+") + std::to_string(id));
  }
  void mon_domain_offline(ResourceId rid, int id) override {
    log.push_back((rid == ResourceId::PERF_PKG ? "pkg-" : "l3-") + std::to_string(id));
  }
};
}  // namespace

TEST_CASE("PERF_PKG domains follow CPU hotplug") {
  auto b = make_sim_backend("intel-aet");
  REQUIRE(b.ok());
  Arch& a = *b->arch;
  RecordingEvents ev;
  for (unsigned cpu : {4, 5, 6}) {
    REQUIRE(a.offline_cpu(cpu, &ev).ok());
    REQUIRE(b->sim->set_cpu_online(cpu, false).ok());
  }
  CHECK(ev.log.empty());
  CHECK(a.info().res(ResourceId::PERF_PKG).mon.mon_domains[1].cpus.cpus() ==
        std::vector<unsigned>{7});
  REQUIRE(a.offline_cpu(7, &ev).ok());
  CHECK(ev.log == std::vector<std::string>{"l3-1", "pkg-1"});
  REQUIRE(a.info().res(ResourceId::PERF_PKG).mon.mon_domains.size() == 1);
  CHECK(a.info().res(ResourceId::PERF_PKG).mon.mon_domains[0].id == 0);
  ev.log.clear();
  REQUIRE(b->sim->set_cpu_online(6, true).ok());
  REQUIRE(a.online_cpu(6, &ev).ok());
  CHECK(ev.log == std::vector<std::string>{"l3+1", "pkg+1"});
  REQUIRE(a.info().res(ResourceId::PERF_PKG).mon.mon_domains.size() == 2);
  CHECK(a.info().res(ResourceId::PERF_PKG).mon.mon_domains[1].cpus.cpus() ==
        std::vector<unsigned>{6});
}

TEST_CASE("simulated aggregators count per package and RMID with the clock") {
  auto b = make_sim_backend("intel-aet");
  REQUIRE(b.ok());
  Arch& a = *b->arch;
  auto* m = dynamic_cast<sim::SimMachine*>(b->sim);
  REQUIRE(m != nullptr);
  m->set_manual_clock(true);
  m->advance_ms(10);
  REQUIRE(a.set_cpu_assoc(1, 0, 5).ok());
  // A never-used RMID has no data on any package.
  CHECK(a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::CORE_ENERGY, nullptr).err ==
        ReadError::kUnavailable);
  CHECK(a.read_counter(ResourceId::PERF_PKG, 0, 0, 7, EventId::UOPS_RETIRED, nullptr).err ==
        ReadError::kUnavailable);

  Workload w;
  w.bandwidth_mbps = 10000;
  REQUIRE(m->attach_cpu_workload(1, w).ok());
  m->advance_ms(1000);
  CounterValue e = a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::CORE_ENERGY, nullptr);
  REQUIRE(e.err == ReadError::kNone);
  // 2.5 W + 1.5 W for 10 GB/s, for one second, with 18 fraction bits.
  CHECK(std::ldexp(static_cast<double>(e.bytes), -18) == Approx(4.0).epsilon(1e-4));
  CounterValue cyc =
      a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::UNHALTED_CORE_CYCLES, nullptr);
  REQUIRE(cyc.err == ReadError::kNone);
  CHECK(static_cast<double>(cyc.bytes) == Approx(2.4e9).epsilon(1e-4));
  CounterValue miss =
      a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::STALLS_LLC_MISS, nullptr);
  CHECK(static_cast<double>(miss.bytes) == Approx(2.4e9 * 0.3).epsilon(1e-4));
  // The busy CPU does not idle; RMID 5 never ran on package 1.
  CounterValue c6 = a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::AUTO_C6_RES, nullptr);
  CHECK((c6.err == ReadError::kNone && c6.bytes == 0));
  CHECK(a.read_counter(ResourceId::PERF_PKG, 1, 0, 5, EventId::CORE_ENERGY, nullptr).err ==
        ReadError::kUnavailable);
  // The idle CPUs of package 0 idle under RMID 0.
  CounterValue idle = a.read_counter(ResourceId::PERF_PKG, 0, 0, 0, EventId::AUTO_C6_RES, nullptr);
  REQUIRE(idle.err == ReadError::kNone);
  CHECK(idle.bytes > 0);

  // Counts are cumulative and stop when the work stops.
  REQUIRE(m->attach_cpu_workload(1, Workload{}).ok());
  REQUIRE(a.set_cpu_assoc(1, 0, 0).ok());
  m->advance_ms(1000);
  CHECK(
      a.read_counter(ResourceId::PERF_PKG, 0, 0, 5, EventId::UNHALTED_CORE_CYCLES, nullptr).bytes ==
      cyc.bytes);

  // An unpinned thread is spread evenly over the two packages.
  REQUIRE(a.thread_tagger() != nullptr);
  a.thread_tagger()->set_thread_tags(4242, 0, 9);
  Workload t;
  t.bandwidth_mbps = 0;
  t.cache_footprint_bytes = 1 << 20;
  REQUIRE(m->attach_thread_workload(4242, t).ok());
  m->advance_ms(2000);
  for (int pkg : {0, 1}) {
    CounterValue c =
        a.read_counter(ResourceId::PERF_PKG, pkg, 0, 9, EventId::UNHALTED_REF_CYCLES, nullptr);
    REQUIRE(c.err == ReadError::kNone);
    CHECK(static_cast<double>(c.bytes) == Approx(2.0e9).epsilon(1e-4));
  }
}
