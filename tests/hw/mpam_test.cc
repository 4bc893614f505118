// Tests hw/mpam/: the simulated MSC register file (IHI 0099 layouts and
// rules), the MBW_MAX <-> percentage conversion of Linux's mpam_resctrl.c,
// the MPAM Arch's discovery of the built-in platforms, its control and
// monitor register sequences, and the occupancy model keyed by PARTID+PMG.
#include <catch2/catch.hpp>

#include "hw/backend.h"
#include "hw/mpam/arch_mpam.h"
#include "hw/mpam/machine.h"
#include "hw/mpam/msc.h"
#include "hw/mpam/platforms.h"
#include "hw/mpam/registers.h"
#include "hw/platform_factory.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::mpam;

namespace {

struct Fixture {
  std::shared_ptr<MpamMachine> machine;
  std::unique_ptr<MpamArch> arch;
  explicit Fixture(const std::string& name) {
    auto p = mpam_platform(name);
    REQUIRE(p.has_value());
    REQUIRE(p->ok());
    machine = std::make_shared<MpamMachine>(std::move(*p).value());
    auto a = MpamArch::create(*machine, *machine, machine->platform().topology);
    REQUIRE(a.ok());
    arch = std::move(a).value();
  }
  // The MSC of cache `level` with id `id`.
  size_t msc(unsigned level, int id) const {
    for (size_t m = 0; m < machine->mscs().size(); ++m)
      if (machine->mscs()[m].level == level && machine->mscs()[m].id == id) return m;
    FAIL("no such MSC");
    return 0;
  }
  uint32_t reg(size_t m, uint32_t partid, uint32_t off) {
    REQUIRE(machine->write32(m, MPAMCFG_PART_SEL, partid).ok());
    return machine->read32(m, off).value();
  }
};

uint64_t occ_fixed(uint16_t partid, std::optional<uint8_t> pmg) {
  return 1000u * partid + (pmg ? *pmg : 7u);
}

}  // namespace

TEST_CASE("MSC ID registers carry PARTID_MAX, PMG_MAX and the HAS_* bits") {
  MscModel m(MscParams{63, 1, 16, 4, true, 16}, occ_fixed);
  const uint64_t idr = m.read32(MPAMF_IDR) | (static_cast<uint64_t>(m.read32(MPAMF_IDR + 4)) << 32);
  CHECK((idr & MPAMF_IDR_PARTID_MAX) == 63);
  CHECK(((idr & MPAMF_IDR_PMG_MAX) >> 16) == 1);
  CHECK((idr & MPAMF_IDR_HAS_CPOR_PART) != 0);
  CHECK((idr & MPAMF_IDR_HAS_MBW_PART) != 0);
  CHECK((idr & MPAMF_IDR_HAS_MSMON) != 0);
  CHECK((idr & MPAMF_IDR_HAS_CCAP_PART) == 0);
  CHECK(m.read32(MPAMF_CPOR_IDR) == 16);
  CHECK((m.read32(MPAMF_MBW_IDR) & MPAMF_MBW_IDR_BWA_WD) == 4);
  CHECK((m.read32(MPAMF_MBW_IDR) & MPAMF_MBW_IDR_HAS_MAX) != 0);
  CHECK((m.read32(MPAMF_MSMON_IDR) & MPAMF_MSMON_IDR_MSMON_CSU) != 0);
  CHECK((m.read32(MPAMF_MSMON_IDR) & MPAMF_MSMON_IDR_MSMON_MBWU) == 0);
  CHECK(m.read32(MPAMF_CSUMON_IDR) == 16);
  // Read-only: a write changes nothing.
  m.write32(MPAMF_CPOR_IDR, 3);
  CHECK(m.read32(MPAMF_CPOR_IDR) == 16);

  MscModel bare(MscParams{15, 0, 8, 0, false, 0}, occ_fixed);
  const uint32_t lo = bare.read32(MPAMF_IDR);
  CHECK((lo & MPAMF_IDR_HAS_MBW_PART) == 0);
  CHECK((lo & MPAMF_IDR_HAS_MSMON) == 0);
  CHECK(bare.read32(MPAMF_MBW_IDR) == 0);
  CHECK(bare.read32(MPAMF_CSUMON_IDR) == 0);
}

TEST_CASE("MSC configuration is per PARTID through MPAMCFG_PART_SEL, reset to no limit") {
  MscModel m(MscParams{7, 1, 12, 3, true, 0}, occ_fixed);
  m.write32(MPAMCFG_PART_SEL, 3);
  CHECK(m.read32(MPAMCFG_CPBM) == 0xfff);
  CHECK(m.read32(MPAMCFG_MBW_MAX) == 0xe000);  // all ones in the BWA_WD implemented bits
  m.write32(MPAMCFG_CPBM, 0xf0f0f);            // bits at or beyond CPBM_WD are RES0
  CHECK(m.read32(MPAMCFG_CPBM) == 0xf0f);
  m.write32(MPAMCFG_MBW_MAX, 0x5fff);  // only the top BWA_WD fraction bits exist
  CHECK(m.read32(MPAMCFG_MBW_MAX) == 0x4000);
  m.write32(MPAMCFG_PART_SEL, 2);
  CHECK(m.read32(MPAMCFG_CPBM) == 0xfff);
  CHECK(m.cpbm(3) == 0xf0f);
  m.reset();
  CHECK(m.cpbm(3) == 0xfff);
}

TEST_CASE("MSC PART_SEL beyond PARTID_MAX reports PARTID_SEL_RANGE and ignores the access") {
  MscModel m(MscParams{7, 1, 12, 0, false, 0}, occ_fixed);
  m.write32(MPAMCFG_PART_SEL, 8);
  CHECK(((m.read32(MPAMF_ESR) >> MPAMF_ESR_ERRCODE_SHIFT) & 0xf) == MPAM_ERRCODE_PARTID_SEL_RANGE);
  m.write32(MPAMCFG_CPBM, 1);
  CHECK(m.read32(MPAMCFG_CPBM) == 0);
  for (unsigned p = 0; p <= 7; ++p) CHECK(m.cpbm(static_cast<uint16_t>(p)) == 0xfff);
}

TEST_CASE("MSC CSU monitor: NRDY until enabled, then the filter's PARTID+PMG bytes") {
  MscModel m(MscParams{7, 3, 12, 0, false, 2}, occ_fixed);
  m.write32(MSMON_CFG_MON_SEL, 1);
  m.write32(MSMON_CFG_CSU_FLT, 5 | (2u << MSMON_CFG_x_FLT_PMG_SHIFT));
  CHECK((m.read32(MSMON_CSU) & MSMON___NRDY) != 0);
  m.write32(MSMON_CFG_CSU_CTL, MSMON_CFG_CSU_CTL_TYPE_CSU | MSMON_CFG_x_CTL_MATCH_PARTID |
                                   MSMON_CFG_x_CTL_MATCH_PMG | MSMON_CFG_x_CTL_EN);
  CHECK(m.read32(MSMON_CSU) == 5002);
  m.write32(MSMON_CFG_CSU_CTL,
            MSMON_CFG_CSU_CTL_TYPE_CSU | MSMON_CFG_x_CTL_MATCH_PARTID | MSMON_CFG_x_CTL_EN);
  CHECK(m.read32(MSMON_CSU) == 5007);
  // A monitor beyond NUM_MON, a filter beyond the ranges: errors in ESR.
  m.write32(MSMON_CFG_MON_SEL, 2);
  CHECK(((m.read32(MPAMF_ESR) >> MPAMF_ESR_ERRCODE_SHIFT) & 0xf) == MPAM_ERRCODE_MONITOR_RANGE);
  m.write32(MSMON_CFG_MON_SEL, 0);
  m.write32(MSMON_CFG_CSU_FLT, 8);
  CHECK(((m.read32(MPAMF_ESR) >> MPAMF_ESR_ERRCODE_SHIFT) & 0xf) == MPAM_ERRCODE_MSMONCFG_ID_RANGE);
  CHECK(m.read32(MSMON_CFG_CSU_FLT) == 0);
}

TEST_CASE("MBW_MAX converts to and from percentages as Linux's mpam_resctrl.c does") {
  // bwa_wd 3: eight bands of 12.5%; a band reads as its upper bound.
  CHECK(mbw_max_to_percent(0, 3) == 13);
  CHECK(mbw_max_to_percent(0xffff, 3) == 100);
  CHECK(percent_to_mbw_max(100, 3) == 0xe000);
  CHECK(percent_to_mbw_max(50, 3) == 0x6000);
  CHECK(mbw_max_to_percent(percent_to_mbw_max(50, 3), 3) == 50);
  CHECK(mbw_max_to_percent(percent_to_mbw_max(39, 3), 3) == 38);
  CHECK(percent_to_mbw_max(1, 3) == 0);
  // bwa_wd 4: sixteen bands of 6.25%.
  CHECK(mbw_max_to_percent(0, 4) == 6);
  CHECK(mbw_max_to_percent(percent_to_mbw_max(14, 4), 4) == 13);
  CHECK(mbw_max_to_percent(percent_to_mbw_max(100, 4), 4) == 100);
}

TEST_CASE("grace-2s is discovered as Linux presents it: L2 and L3 bitmaps, MB, llc_occupancy") {
  Fixture f("grace-2s");
  const PlatformInfo& i = f.arch->info();
  CHECK(i.nr_cpus == 144);
  CHECK(f.arch->partid_max() == 63);
  CHECK(f.arch->pmg_max() == 1);
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.alloc_capable);
  CHECK(l3.num_closid == 64);
  CHECK(l3.cache.cbm_len == 16);
  CHECK(l3.cache.shareable_bits == 0xffff);
  CHECK(l3.cache.min_cbm_bits == 1);
  CHECK(l3.cache.sparse_masks);
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 114ULL << 20);
  REQUIRE(l3.ctrl_domains.size() == 2);
  CHECK(l3.ctrl_domains[1].id == 1);
  CHECK(l3.ctrl_domains[1].cpus.cpus().front() == 72);
  const Resource& l2 = i.res(ResourceId::L2);
  CHECK(l2.alloc_capable);
  CHECK(l2.cache.cbm_len == 8);
  CHECK(l2.cache.shareable_bits == 0xff);
  CHECK(l2.ctrl_domains.size() == 144);
  const Resource& mb = i.res(ResourceId::MB);
  CHECK(mb.alloc_capable);
  CHECK(mb.membw.min_bw == 6);
  CHECK(mb.membw.bw_gran == 7);
  CHECK(mb.membw.max_bw == 100);
  CHECK(mb.membw.delay_linear);
  CHECK(mb.membw.throttle_mode == ThrottleMode::UNDEFINED);
  CHECK(mb.ctrl_domains.size() == 2);
  CHECK_FALSE(i.res(ResourceId::SMBA).alloc_capable);
  const MonCaps& mon = i.res(ResourceId::L3).mon;
  CHECK(mon.capable);
  CHECK(mon.scope == Scope::L3_CACHE);
  CHECK(mon.num_rmids == 128);
  CHECK(mon.event_ids() == std::vector<EventId>{EventId::LLC_OCCUPANCY});
  CHECK(mon.occupancy_scale == 1);
  CHECK(mon.realloc_limit_bytes == 114ULL << 20);
  CHECK(mon.default_threshold == (114U << 20) / 128);
  CHECK(mon.mon_domains.size() == 2);
  CHECK_FALSE(mon.cntr_assign.capable);
  CHECK_FALSE(mon.evt_cfg.capable);
  CHECK_FALSE(i.res(ResourceId::PERF_PKG).mon.capable);
  CHECK(i.res(ResourceId::MB).schema_fmt == SchemaFormat::PERCENT);
  CHECK(i.res(ResourceId::L2).ctrl_scope == Scope::L2_CACHE);
  CHECK_FALSE(i.pseudo_lock_capable);
}

TEST_CASE("ampereone-2s: L3 and MB only, PARTIDs and PMGs as its MSCs give them") {
  Fixture f("ampereone-2s");
  const PlatformInfo& i = f.arch->info();
  CHECK(i.nr_cpus == 384);
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  CHECK(i.res(ResourceId::L3).num_closid == 32);
  CHECK(i.res(ResourceId::MB).membw.bw_gran == 13);
  CHECK(i.res(ResourceId::MB).membw.min_bw == 13);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 128);  // (3 + 1) x (31 + 1)
}

TEST_CASE("MPAM Arch programs CPBM and MBW_MAX through PART_SEL and reads back percentages") {
  Fixture f("grace-2s");
  const size_t l3 = f.msc(3, 1);
  REQUIRE(f.arch
              ->update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 5, 0x0f0f},
                              {ResourceId::MB, ConfType::NONE, 1, 5, 30}})
              .ok());
  CHECK(f.reg(l3, 5, MPAMCFG_CPBM) == 0x0f0f);
  CHECK(f.reg(l3, 5, MPAMCFG_MBW_MAX) == percent_to_mbw_max(30, 4));
  CHECK(f.reg(f.msc(3, 0), 5, MPAMCFG_CPBM) == 0xffff);
  CHECK(f.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 1, 5) == 0x0f0f);
  CHECK(f.arch->get_ctrl(ResourceId::MB, ConfType::NONE, 1, 5) == 31);
  CHECK(f.arch->get_ctrl(ResourceId::MB, ConfType::NONE, 0, 5) == 100);
  REQUIRE(f.arch->update_ctrls({{ResourceId::L2, ConfType::NONE, 100, 2, 0x81}}).ok());
  CHECK(f.reg(f.msc(2, 100), 2, MPAMCFG_CPBM) == 0x81);
  REQUIRE(f.arch->reset_all_ctrls().ok());
  CHECK(f.reg(l3, 5, MPAMCFG_CPBM) == 0xffff);
  CHECK(f.reg(l3, 5, MPAMCFG_MBW_MAX) == 0xf000);  // 0xffff in the implemented bits
  CHECK(f.arch->get_ctrl(ResourceId::MB, ConfType::NONE, 1, 5) == 100);
}

// An MscBus over the machine whose write number `fail_at` (from 1) fails.
struct FailingBus : MscBus {
  MpamMachine& m;
  unsigned fail_at = 0, writes = 0;
  explicit FailingBus(MpamMachine& mm) : m(mm) {}
  const std::vector<MscInfo>& mscs() const override { return m.mscs(); }
  Result<uint32_t> read32(size_t msc, uint32_t off) override { return m.read32(msc, off); }
  Result<void> write32(size_t msc, uint32_t off, uint32_t v) override {
    if (++writes == fail_at) return Error::make(EIO, "bus error");
    return m.write32(msc, off, v);
  }
};

TEST_CASE("MPAM Arch: a failed write restores what the batch changed") {
  Fixture f("grace-2s");
  FailingBus bus(*f.machine);
  auto a = MpamArch::create(bus, *f.machine, f.machine->platform().topology);
  REQUIRE(a.ok());
  MpamArch& arch = **a;
  const size_t l3 = f.msc(3, 0);
  REQUIRE(arch.update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 1, 0x3},
                             {ResourceId::L3, ConfType::NONE, 0, 2, 0x7}})
              .ok());
  // Two controls are four writes (PART_SEL, CPBM each): the fourth fails.
  bus.writes = 0;
  bus.fail_at = 4;
  auto r = arch.update_ctrls(
      {{ResourceId::L3, ConfType::NONE, 0, 1, 0x1}, {ResourceId::L3, ConfType::NONE, 0, 2, 0x1}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EIO);
  // The contract's write failure, which fs/ words for the user.
  CHECK(is_write_failure(r.error()));
  CHECK(arch.get_ctrl(ResourceId::L3, ConfType::NONE, 0, 1) == 0x3);
  CHECK(arch.get_ctrl(ResourceId::L3, ConfType::NONE, 0, 2) == 0x7);
  CHECK(f.reg(l3, 1, MPAMCFG_CPBM) == 0x3);
  CHECK(f.reg(l3, 2, MPAMCFG_CPBM) == 0x7);
}

TEST_CASE("MPAM Arch refuses CDP as Linux does without CONFIG_EXPERT") {
  Fixture f("grace-2s");
  auto r = f.arch->set_cdp_enabled(ResourceId::L3, true);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EOPNOTSUPP);
  CHECK(f.arch->set_cdp_enabled(ResourceId::L3, false).ok());
  CHECK_FALSE(f.arch->cdp_enabled(ResourceId::L3));
}

TEST_CASE("MPAM RMIDs are PMGs of the CLOSID: index CLOSID << fls(PMG_MAX) | PMG") {
  Fixture g("grace-2s");  // PARTID_MAX 63, PMG_MAX 1
  CHECK(g.arch->info().rmid_depends_on_closid);
  CHECK(g.arch->info().res(ResourceId::L3).mon.num_rmids == 64u << 1);
  CHECK(g.arch->rmid_idx_encode(0, 0) == 0);
  CHECK(g.arch->rmid_idx_encode(3, 1) == 7);
  CHECK(g.arch->rmid_idx_decode(7) == std::pair<uint32_t, uint32_t>{3, 1});
  CHECK(g.arch->rmid_idx_decode(127) == std::pair<uint32_t, uint32_t>{63, 1});
  Fixture a("ampereone-2s");  // PARTID_MAX 31, PMG_MAX 3
  CHECK(a.arch->info().res(ResourceId::L3).mon.num_rmids == 32u << 2);
  CHECK(a.arch->rmid_idx_encode(5, 2) == 22);
  CHECK(a.arch->rmid_idx_decode(22) == std::pair<uint32_t, uint32_t>{5, 2});
  for (uint32_t idx = 0; idx < 128; ++idx) {
    const auto [closid, rmid] = a.arch->rmid_idx_decode(idx);
    CHECK(a.arch->rmid_idx_encode(closid, rmid) == idx);
  }
  // A PMG past PMG_MAX is no monitor: refused, and reads Error.
  auto r = g.arch->set_cpu_assoc(1, 3, 2);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == EINVAL);
  CHECK(g.arch->read_counter(ResourceId::L3, 0, 3, 2, EventId::LLC_OCCUPANCY, nullptr).err ==
        ReadError::kError);
}

TEST_CASE("CPUs get PARTID = CLOSID and PMG = RMID, and occupancy follows PARTID+PMG") {
  Fixture f("grace-2s");
  f.machine->set_manual_clock(true);
  REQUIRE(f.arch->set_cpu_assoc(1, 3, 1).ok());
  REQUIRE(f.arch->set_cpu_assoc(2, 3, 0).ok());
  CHECK(f.machine->cpu_label(1) == MpamLabel{3, 3, 1, 1});
  CHECK(f.machine->cpu_label(2) == MpamLabel{3, 3, 0, 0});
  REQUIRE(f.machine->attach_cpu_workload(1, Workload{8 << 20}).ok());
  // Before time moves nothing is held.
  auto v0 = f.arch->read_counter(ResourceId::L3, 0, 3, 1, EventId::LLC_OCCUPANCY, nullptr);
  CHECK(v0.err == ReadError::kNone);
  CHECK(v0.bytes == 0);
  f.machine->advance_ms(1000);
  auto v1 = f.arch->read_counter(ResourceId::L3, 0, 3, 1, EventId::LLC_OCCUPANCY, nullptr);
  CHECK(v1.err == ReadError::kNone);
  CHECK(v1.bytes > (7u << 20));
  CHECK(v1.bytes <= (8u << 20));
  CHECK(f.arch->read_counter(ResourceId::L3, 0, 3, 0, EventId::LLC_OCCUPANCY, nullptr).bytes == 0);
  // The same PMG under another PARTID is another monitor.
  CHECK(f.arch->read_counter(ResourceId::L3, 0, 4, 1, EventId::LLC_OCCUPANCY, nullptr).bytes == 0);
  CHECK(f.arch->read_counter(ResourceId::L3, 1, 3, 1, EventId::LLC_OCCUPANCY, nullptr).bytes ==
        0);  // other socket
  // A PARTID's portions bound what it fills: 1 of 16 portions of 114 MB.
  REQUIRE(f.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 0, 6, 0x1}}).ok());
  REQUIRE(f.arch->set_cpu_assoc(5, 6, 1).ok());
  REQUIRE(f.machine->attach_cpu_workload(5, Workload{64ULL << 20}).ok());
  f.machine->advance_ms(5000);
  auto v2 = f.arch->read_counter(ResourceId::L3, 0, 6, 1, EventId::LLC_OCCUPANCY, nullptr);
  CHECK(v2.bytes > (114ULL << 20) / 17);
  CHECK(v2.bytes <= (114ULL << 20) / 16 + 1);
  CHECK(f.arch->read_counter(ResourceId::L3, 0, 3, 1, EventId::MBM_TOTAL, nullptr).err ==
        ReadError::kError);
}

TEST_CASE("An idle label keeps its lines until others fill (limbo)") {
  Fixture f("grace-2s");
  f.machine->set_manual_clock(true);
  REQUIRE(f.arch->set_cpu_assoc(1, 2, 1).ok());
  REQUIRE(f.machine->attach_cpu_workload(1, Workload{16 << 20}).ok());
  f.machine->advance_ms(2000);
  const uint64_t held =
      f.arch->read_counter(ResourceId::L3, 0, 2, 1, EventId::LLC_OCCUPANCY, nullptr).bytes;
  CHECK(held > (15u << 20));
  REQUIRE(f.machine->attach_cpu_workload(1, Workload{}).ok());
  f.machine->advance_ms(10000);
  CHECK(f.arch->read_counter(ResourceId::L3, 0, 2, 1, EventId::LLC_OCCUPANCY, nullptr).bytes ==
        held);
  REQUIRE(f.arch->set_cpu_assoc(2, 4, 1).ok());
  REQUIRE(f.machine->attach_cpu_workload(2, Workload{114ULL << 20}).ok());
  f.machine->advance_ms(10000);
  CHECK(f.arch->read_counter(ResourceId::L3, 0, 2, 1, EventId::LLC_OCCUPANCY, nullptr).bytes <
        held / 10);
}

namespace {
struct Recorder : ArchEvents {
  std::vector<std::string> log;
  void ctrl_domain_online(ResourceId r, int id) override { add("ctrl+", r, id); }
  void ctrl_domain_offline(ResourceId r, int id) override { add("ctrl-", r, id); }
  void mon_domain_online(ResourceId r, int id) override { add("mon+", r, id); }
  void mon_domain_offline(ResourceId r, int id) override { add("mon-", r, id); }
  void add(const char* what, ResourceId r, int id) {
    log.push_back(std::string(what) + std::to_string(static_cast<int>(r)) + ":" +
                  std::to_string(id));
  }
};
}  // namespace

TEST_CASE("MPAM hotplug: domains follow their CPUs, an MSC back gets its PARTIDs' controls") {
  Fixture f("grace-2s");
  f.machine->set_manual_clock(true);
  const size_t l3_1 = f.msc(3, 1);
  REQUIRE(f.arch->update_ctrls({{ResourceId::L3, ConfType::NONE, 1, 5, 0x3}}).ok());
  REQUIRE(f.arch->set_cpu_assoc(80, 5, 1).ok());
  REQUIRE(f.machine->attach_cpu_workload(80, Workload{4 << 20}).ok());
  f.machine->advance_ms(1000);
  CHECK(f.machine->occupancy_bytes(l3_1, 5, 1) > 0);
  Recorder ev;
  // The OS lets go of CPUs 72-143 (L3 1, and each its own L2), then the
  // machine powers them down.
  for (unsigned c = 72; c < 144; ++c) {
    REQUIRE(f.arch->offline_cpu(c, &ev).ok());
    REQUIRE(f.machine->set_cpu_online(c, false).ok());
  }
  const Resource& l3 = f.arch->info().res(ResourceId::L3);
  REQUIRE(l3.ctrl_domains.size() == 1);
  CHECK(l3.ctrl_domains[0].id == 0);
  REQUIRE(l3.mon.mon_domains.size() == 1);
  CHECK(f.arch->info().res(ResourceId::L2).ctrl_domains.size() == 72);
  CHECK(f.arch->info().res(ResourceId::MB).ctrl_domains.size() == 1);
  CHECK(f.arch->info().online.count() == 72);
  CHECK(std::count(ev.log.begin(), ev.log.end(), "ctrl-0:1") == 1);  // L3 1
  CHECK(std::count(ev.log.begin(), ev.log.end(), "mon-0:1") == 1);
  CHECK(std::count(ev.log.begin(), ev.log.end(), "ctrl-1:143") == 1);  // L2 143
  // The powered-down MSC is at reset and its cache empty.
  CHECK(f.reg(l3_1, 5, MPAMCFG_CPBM) == 0xffff);
  CHECK(f.machine->occupancy_bytes(l3_1, 5, 1) == 0);
  CHECK_FALSE(f.machine->cpu_online(100));
  CHECK(f.arch->offline_cpu(100, &ev).error().code == EINVAL);
  for (unsigned c = 1; c < 72; ++c) REQUIRE(f.arch->offline_cpu(c, nullptr).ok());
  CHECK(f.arch->offline_cpu(0, nullptr).error().code == EBUSY);  // the last one
  REQUIRE(f.arch->online_cpu(1, nullptr).ok());

  ev.log.clear();
  REQUIRE(f.machine->set_cpu_online(100, true).ok());
  REQUIRE(f.arch->online_cpu(100, &ev).ok());
  CHECK(f.arch->online_cpu(100, &ev).error().code == EINVAL);
  CHECK(std::count(ev.log.begin(), ev.log.end(), "ctrl+0:1") == 1);
  CHECK(std::count(ev.log.begin(), ev.log.end(), "mon+0:1") == 1);
  CHECK(std::count(ev.log.begin(), ev.log.end(), "ctrl+1:100") == 1);
  REQUIRE(l3.ctrl_domains.size() == 2);
  CHECK(l3.ctrl_domains[1].id == 1);
  CHECK(l3.ctrl_domains[1].cpus.count() == 1);
  // PARTID 5's portions are programmed again, as Linux's
  // mpam_reprogram_msc restores them.
  CHECK(f.reg(l3_1, 5, MPAMCFG_CPBM) == 0x3);
  CHECK(f.arch->get_ctrl(ResourceId::L3, ConfType::NONE, 1, 5) == 0x3);
  CHECK(f.machine->cpu_label(100) == MpamLabel{});
}

TEST_CASE("MPAM built-ins are listed and made by the platform factory, with @host fitting") {
  auto names = platform_names();
  CHECK(std::find(names.begin(), names.end(), "grace-2s") != names.end());
  CHECK(std::find(names.begin(), names.end(), "ampereone-2s") != names.end());
  PlatformOptions opts;
  opts.platform = "grace-2s";
  auto b = make_platform(opts);
  REQUIRE(b.ok());
  CHECK(!b->cpu.has_value());
  CHECK(b->facts.has_value());
  CHECK(b->sim != nullptr);
  CHECK(b->arch->thread_tagger() != nullptr);
  auto p = mpam_platform("grace-2s@host", 4u);
  REQUIRE(p.has_value());
  REQUIRE(p->ok());
  const auto& cpus = (*p)->topology.cpus;
  REQUIRE(cpus.size() == 4);
  CHECK(cpus[0].l3 == 0);
  CHECK(cpus[3].l3 == 1);
  auto small = mpam_platform("grace-2s@host", 1u);
  REQUIRE(small.has_value());
  CHECK_FALSE(small->ok());
  opts.rdt = "l3cat";
  CHECK(make_platform(opts).error().code == EINVAL);
}

TEST_CASE("arm64 /proc/cpuinfo of an MPAM platform") {
  auto p = mpam_platform("grace-2s");
  const std::string s = arm64_cpuinfo(**p, {0, 1});
  CHECK(s.find("processor\t: 1\n") != std::string::npos);
  CHECK(s.find("CPU implementer\t: 0x41\n") != std::string::npos);
  CHECK(s.find("CPU part\t: 0xd4f\n") != std::string::npos);
  CHECK(s.find("Features\t: fp asimd") != std::string::npos);
}
