// Tests the CPUID decoder on raw CPUID dumps of real processors (see the
// source notes in tests/hw/data/*.cpuid), asserting the values Linux shows
// under /sys/fs/resctrl/info for them, the MBM errata selection and the
// /proc/cpuinfo flags.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "cpuid_dump.h"
#include "hw/backend.h"
#include "hw/broker/policy.h"
#include "hw/real/msr_backend.h"
#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/registers.h"
#include "recording_msr.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;

namespace {

// Four CPUs sharing one L3 (id 0), one L2 each.
Topology four_cpus() {
  Topology t;
  t.nr_cpus = 4;
  t.online = CpuMask(4);
  for (unsigned c = 0; c < 4; ++c) t.online.set(c);
  t.package = {0, 0, 0, 0};
  t.l2_id = {0, 1, 2, 3};
  t.l3_id = {0, 0, 0, 0};
  return t;
}

const std::vector<EventId> kAllEvents = {EventId::LLC_OCCUPANCY, EventId::MBM_TOTAL,
                                         EventId::MBM_LOCAL};
const std::vector<std::string> kFullFlags = {"cat_l3",        "cdp_l3",        "mba",
                                             "cqm",           "rdt_a",         "cqm_llc",
                                             "cqm_occup_llc", "cqm_mbm_total", "cqm_mbm_local"};

}  // namespace

TEST_CASE("Xeon Gold 6252 (Cascade Lake-SP) by default: Linux's quirk turns L3 CAT off") {
  // Model 0x55 stepping 7 (> 4): Linux's Skylake-server quirk forces l3cat
  // off (rdt=l3cat turns it back on); monitoring and MBA stay.
  DumpSource src("intel-xeon-gold-6252-cascadelake-sp.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.stepping == 7);
  CHECK_FALSE(i.res(ResourceId::L3).alloc_capable);
  CHECK(i.res(ResourceId::MB).alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.event_ids() == kAllEvents);
  // /proc/cpuinfo still lists what CPUID enumerates: the quirk is
  // resctrl's, not the CPU feature table's.
  CHECK(cpuinfo_rdt_flags(i) == kFullFlags);
}

TEST_CASE("Xeon Gold 6252 (Cascade Lake-SP) with rdt=l3cat decodes as Linux shows it") {
  DumpSource src("intel-xeon-gold-6252-cascadelake-sp.cpuid");
  X86Platform i = decode_platform(src, four_cpus(), nullptr, RdtOptions::parse("l3cat"));
  CHECK(i.vendor == "GenuineIntel");
  CHECK(i.family == 6);
  CHECK(i.model == 0x55);
  CHECK(i.stepping == 7);
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.alloc_capable);
  CHECK(l3.cache.full_mask() == 0x7ff);     // info/L3/cbm_mask
  CHECK(l3.cache.min_cbm_bits == 1);        // info/L3/min_cbm_bits
  CHECK(l3.num_closid == 16);               // info/L3/num_closids
  CHECK(l3.cache.shareable_bits == 0x600);  // info/L3/shareable_bits
  CHECK_FALSE(l3.cache.sparse_masks);       // info/L3/sparse_masks
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 37486592);  // 11 ways x 53248 sets x 64
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  const Resource& mb = i.res(ResourceId::MB);
  CHECK(mb.alloc_capable);
  CHECK(mb.membw.min_bw == 10);  // info/MB/min_bandwidth
  CHECK(mb.membw.bw_gran == 10);
  CHECK(mb.membw.max_bw == 100);
  CHECK(mb.membw.delay_linear);
  CHECK(mb.num_closid == 8);
  CHECK(mb.membw.throttle_mode == ThrottleMode::MAX);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 208);
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 106496);
  CHECK(i.res(ResourceId::L3).mon.counter_width == 24);
  CHECK(i.res(ResourceId::L3).mon.event_ids() == kAllEvents);
  // 37486592 / 208 = 180224, rounded down to a multiple of 106496.
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 106496);
  CHECK_FALSE(i.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.cntr_assign.capable);
  // SKX99: 208 RMIDs -> threshold 191, factor 1.230921.
  MbmCorrection c = mbm_correction(i);
  CHECK(c.rmid_threshold == 191);
  CHECK(c.factor == Approx(1.230921));
  CHECK(cpuinfo_rdt_flags(i) == kFullFlags);
  HwLimits lim = decode_limits(src, 0);
  CHECK(lim.mba_max_delay == 90);
  CHECK(lim.max_rmid_any == 207);
  CHECK(lim.num_closid_any == 16);
  CHECK_FALSE(lim.amd);
}

TEST_CASE("Core i7-6900K (Broadwell-E, BDX die) decodes as Linux shows it") {
  DumpSource src("intel-core-i7-6900k-broadwell-e.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.family == 6);
  CHECK(i.model == 0x4F);
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.alloc_capable);
  CHECK(l3.cache.full_mask() == 0xfffff);
  CHECK(l3.cache.shareable_bits == 0xc0000);
  CHECK(l3.num_closid == 16);
  CHECK(l3.cache.min_cbm_bits == 1);
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 20u << 20);
  CHECK_FALSE(i.res(ResourceId::MB).alloc_capable);  // no MBA before Skylake-SP
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 64);
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 32768);
  CHECK(i.res(ResourceId::L3).mon.counter_width == 24);
  CHECK(i.res(ResourceId::L3).mon.event_ids() == kAllEvents);
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 327680);  // 20 MiB / 64
  // BDF102 applies to the model, but 64 RMIDs have factor 1.
  MbmCorrection c = mbm_correction(i);
  CHECK(c.factor == Approx(1.0));
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cat_l3", "cdp_l3", "cqm", "rdt_a",
                                                         "cqm_llc", "cqm_occup_llc",
                                                         "cqm_mbm_total", "cqm_mbm_local"});
}

TEST_CASE("pseudo-locking is offered by vendor/family/model only") {
  struct Case {
    const char* vendor;
    unsigned family, model;
    uint64_t bits;
  };
  const Case cases[] = {
      {"GenuineIntel", 6, INTEL_FAM6_BROADWELL_X, 0xF},
      {"GenuineIntel", 6, INTEL_FAM6_ATOM_GOLDMONT, 0x5},
      {"GenuineIntel", 6, INTEL_FAM6_ATOM_GOLDMONT_PLUS, 0x5},
      {"GenuineIntel", 6, INTEL_FAM6_SKYLAKE_X, 0},
      {"GenuineIntel", 6, INTEL_FAM6_HASWELL_X, 0},
      {"GenuineIntel", 6, 0x6A, 0},
      {"GenuineIntel", 15, INTEL_FAM6_BROADWELL_X, 0},
      {"AuthenticAMD", 6, INTEL_FAM6_BROADWELL_X, 0},
  };
  for (const Case& c : cases) {
    INFO(c.vendor << " " << c.family << " 0x" << std::hex << c.model);
    CHECK(prefetch_disable_bits(c.vendor, c.family, c.model) == c.bits);
  }
  // Through the decoder: a real Broadwell-E (model 0x4F) dump is capable.
  CHECK(decode_platform(DumpSource("intel-core-i7-6900k-broadwell-e.cpuid"), four_cpus())
            .pseudo_lock_capable);
}

TEST_CASE("EPYC 7452 (Rome) decodes as Linux shows it") {
  DumpSource src("amd-epyc-7452-rome.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.vendor == "AuthenticAMD");
  CHECK(i.family == 0x17);
  CHECK(i.model == 0x31);
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.cache.full_mask() == 0xffff);
  CHECK(l3.cache.min_cbm_bits == 0);
  CHECK(l3.cache.shareable_bits == 0);
  CHECK(l3.cache.sparse_masks);
  CHECK(l3.num_closid == 16);
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 16u << 20);  // one CCX's L3
  const Resource& mb = i.res(ResourceId::MB);
  CHECK(mb.alloc_capable);
  CHECK(mb.num_closid == 16);
  CHECK(mb.membw.min_bw == 0);
  CHECK(mb.membw.bw_gran == 1);
  CHECK(mb.membw.max_bw == 2048);
  CHECK_FALSE(mb.membw.delay_linear);
  CHECK(mb.membw.throttle_mode == ThrottleMode::UNDEFINED);
  CHECK_FALSE(i.res(ResourceId::SMBA).alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 256);
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 64);
  CHECK(i.res(ResourceId::L3).mon.counter_width == 44);  // 24 + the AMD default offset 20
  CHECK(i.res(ResourceId::L3).mon.event_ids() == kAllEvents);
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 2048);  // Linux uses the 512 KiB L2 on AMD
  CHECK_FALSE(i.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.cntr_assign.capable);
  CHECK(mbm_correction(i).factor == 0);
  CHECK(cpuinfo_rdt_flags(i) == kFullFlags);
  HwLimits lim = decode_limits(src, 0);
  CHECK(lim.amd);
  CHECK(lim.amd_bw_len == 11);
}

TEST_CASE("EPYC 7742 (Rome, InstLatx64 dump) decodes as Linux shows it") {
  DumpSource src("amd-epyc-7742-rome.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  const Resource& l3 = i.res(ResourceId::L3);
  CHECK(l3.cache.full_mask() == 0xffff);
  CHECK(l3.num_closid == 16);
  CHECK(l3.cache.sparse_masks);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 256);
  CHECK(i.res(ResourceId::L3).mon.counter_width == 44);
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 2048);
  // The dump lacks CPUID 0x80000020.1: a zero bandwidth length enumerates no
  // usable MB resource (Linux would compute max_bw = 1 << 0 from it).
  CHECK_FALSE(i.res(ResourceId::MB).alloc_capable);
}

TEST_CASE("EPYC 7551 (Naples) has no PQoS") {
  DumpSource src("amd-epyc-7551-naples.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.vendor == "AuthenticAMD");
  CHECK(i.family == 0x17);
  CHECK(i.model == 0x01);
  for (const auto& r : i.resources) CHECK_FALSE(r.alloc_capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.capable);
  CHECK(cpuinfo_rdt_flags(i).empty());
}

TEST_CASE("an EPYC guest without PQoS is refused by the real backend") {
  DumpSource src("amd-epyc-milan-kvm-guest.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.family == 0x19);
  CHECK_FALSE(i.res(ResourceId::L3).mon.capable);
  for (const auto& r : i.resources) CHECK_FALSE(r.alloc_capable);
  auto b = real::make_msr_backend_with(src, four_cpus(), "/nonexistent.sock");
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == ENODEV);
  CHECK(b.error().message.find("no RDT/PQoS") != std::string::npos);
}

TEST_CASE("MBM correction table rows (SKX99/BDF102)") {
  struct Row {
    unsigned model, rmids;
    uint32_t threshold;
    double factor;
  };
  const Row rows[] = {
      {0x55, 24, 15, 0.969650},   {0x55, 40, 31, 1.066667},   {0x4F, 56, 47, 1.142857},
      {0x4F, 88, 79, 1.454545},   {0x55, 176, 159, 1.454334}, {0x55, 192, 127, 0.969744},
      {0x55, 224, 191, 1.143118}, {0x55, 232, 0, 0.0},        {0x6A, 224, 0, 0.0},
  };
  for (const auto& r : rows) {
    X86Platform i;
    i.vendor = "GenuineIntel";
    i.family = 6;
    i.model = r.model;
    i.res(ResourceId::L3).mon.num_rmids = r.rmids;
    INFO("model " << r.model << " rmids " << r.rmids);
    MbmCorrection c = mbm_correction(i);
    CHECK(c.rmid_threshold == r.threshold);
    CHECK(c.factor == Approx(r.factor));
  }
}

TEST_CASE("Haswell server L3 CAT is found by probing IA32_L3_MASK_0") {
  // Haswell-EP (family 6 model 0x3F) does not enumerate CAT in CPUID.
  class Haswell final : public CpuidSource {
   public:
    CpuidRegs cpuid(unsigned, uint32_t leaf, uint32_t) const override {
      if (leaf == 0) return {0xF, 0x756e6547, 0x6c65746e, 0x49656e69};
      if (leaf == 1) return {0x000306f2, 0, 0, 0};
      return {};
    }
  } src;
  testing::RecordingMsr probe;
  X86Platform i = decode_platform(src, four_cpus(), &probe);
  const Resource& l3 = i.res(ResourceId::L3);
  REQUIRE(l3.alloc_capable);
  CHECK(l3.num_closid == 4);
  CHECK(l3.cache.cbm_len == 20);
  CHECK(l3.cache.shareable_bits == 0xc0000);
  CHECK(l3.cache.min_cbm_bits == 2);
  CHECK(probe.log.front() == testing::W(0, IA32_L3_MASK_0, 0xfffff));
  // Without a probe device (or on other models) nothing is assumed.
  CHECK_FALSE(decode_platform(src, four_cpus(), nullptr).res(ResourceId::L3).alloc_capable);
  testing::RecordingMsr failing;
  failing.fail_in = 0;
  CHECK_FALSE(decode_platform(src, four_cpus(), &failing).res(ResourceId::L3).alloc_capable);
}

TEST_CASE("I/O RDT enumeration bits") {
  CHECK_FALSE(
      decode_limits(DumpSource("intel-xeon-gold-6252-cascadelake-sp.cpuid"), 0).io_rdt_alloc);
  auto p = sim::parse_profile(R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}],
      "l3_size_bytes": 8388608,
      "l3_cat": {"cbm_len": 12, "num_closid": 16},
      "l3_mon": {"num_rmids": 128, "events": ["llc_occupancy"]},
      "cpuid": {"0x10.1": ["0xb", "0", "0x2", "0xf"], "0xf.1": ["0x200", "65536", "127", "1"]}})",
                              "io-rdt");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  CHECK(m.limits().io_rdt_alloc);
  CHECK(m.limits().io_rdt_mon);
  CHECK(m.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE | L3_IO_RDT_CFG_IRME).ok());
  CHECK_FALSE(m.write(0, IA32_L3_IO_RDT_CFG, 4).ok());
  broker::Policy pol(m.info(), m.limits());
  CHECK(pol.check(0, IA32_L3_IO_RDT_CFG, 3, broker::OpKind::kWrite).ok());
  CHECK_FALSE(pol.check(0, IA32_L3_IO_RDT_CFG, 4, broker::OpKind::kWrite).ok());
  auto plain = sim::load_profile("intel-2s");
  REQUIRE(plain.ok());
  sim::SimMachine m2(*plain);
  CHECK_FALSE(m2.limits().io_rdt_alloc);
  CHECK_FALSE(m2.write(0, IA32_L3_IO_RDT_CFG, 1).ok());
  CHECK_FALSE(broker::Policy(m2.info(), m2.limits())
                  .check(0, IA32_L3_IO_RDT_CFG, 0, broker::OpKind::kRead)
                  .ok());
}

TEST_CASE("Xeon E5-2699 v3 (Haswell-EP) decodes as Linux shows it") {
  DumpSource src("intel-xeon-e5-2699v3-haswell-ep.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.vendor == "GenuineIntel");
  CHECK(i.family == 6);
  CHECK(i.model == 0x3F);
  CHECK(i.stepping == 2);
  // CPUID enumerates no allocation (no leaf 0x10, CPUID.7.0:EBX[15] clear):
  // without the IA32_L3_MASK_0 probe there is no info/L3, no info/MB.
  for (const auto& r : i.resources) CHECK_FALSE(r.alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 72);  // info/L3_MON/num_rmids: CPUID.0xF.1:ECX + 1
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 73728);  // CPUID.0xF.1:EBX
  CHECK(i.res(ResourceId::L3).mon.counter_width == 24);       // CPUID.0xF.1:EAX[7:0] = 0
  // CPUID.0xF.1:EDX = 1: info/L3_MON/mon_features is llc_occupancy alone.
  CHECK(i.res(ResourceId::L3).mon.event_ids() == std::vector<EventId>{EventId::LLC_OCCUPANCY});
  // L3 from CPUID.4.3: 20 ways x 1 partition x 64 B x 36864 sets = 47185920
  // (45 MiB); 47185920 / 72 = 655360, rounded down to a multiple of 73728 (8 x 73728).
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 589824);
  CHECK_FALSE(i.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.cntr_assign.capable);
  // Neither SKX99 nor BDF102 covers model 0x3F (and there is no MBM).
  CHECK(mbm_correction(i).factor == 0);
  // /proc/cpuinfo: cqm from CPUID.7.0:EBX[12], cqm_llc from CPUID.0xF.0:EDX[1],
  // cqm_occup_llc from CPUID.0xF.1:EDX[0]; no rdt_a, and the probe below sets
  // no CPU flag, so no cat_l3 either.
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cqm", "cqm_llc", "cqm_occup_llc"});
  HwLimits lim = decode_limits(src, 0);
  CHECK(lim.max_rmid_any == 71);  // CPUID.0xF.0:EBX
  CHECK(lim.mba_max_delay == 0);
  CHECK_FALSE(lim.amd);
  CHECK_FALSE(lim.io_rdt_alloc);
  CHECK_FALSE(lim.io_rdt_mon);
}

TEST_CASE("Xeon E5-2699 v3 (Haswell-EP) gets L3 CAT from the IA32_L3_MASK_0 probe") {
  DumpSource src("intel-xeon-e5-2699v3-haswell-ep.cpuid");
  testing::RecordingMsr probe;
  X86Platform i = decode_platform(src, four_cpus(), &probe);
  const Resource& l3 = i.res(ResourceId::L3);
  REQUIRE(l3.alloc_capable);
  CHECK(probe.log.front() == testing::W(0, IA32_L3_MASK_0, 0xfffff));
  CHECK(l3.cache.full_mask() == 0xfffff);     // info/L3/cbm_mask
  CHECK(l3.cache.min_cbm_bits == 2);          // info/L3/min_cbm_bits
  CHECK(l3.num_closid == 4);                  // info/L3/num_closids
  CHECK(l3.cache.shareable_bits == 0xc0000);  // info/L3/shareable_bits
  CHECK_FALSE(l3.cache.sparse_masks);         // info/L3/sparse_masks
  CHECK_FALSE(l3.cache.cdp_capable);          // no CPUID.0x10.1:ECX[2]
  CHECK(l3.cache.cache_size_bytes == 47185920);
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  CHECK_FALSE(i.res(ResourceId::MB).alloc_capable);
  // Monitoring is unchanged by the probe.
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 72);
  CHECK(i.res(ResourceId::L3).mon.event_ids() == std::vector<EventId>{EventId::LLC_OCCUPANCY});
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 589824);
  // The probe sets no CPU flag: /proc/cpuinfo shows no cat_l3 (or rdt_a).
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cqm", "cqm_llc", "cqm_occup_llc"});
}

// Xeon Gold 6140 (Skylake-SP, CPUID.1:EAX = 0x50654: family 6, model 0x55,
// stepping 4). Expected values come from the raw registers of the dump:
//   CPUID.7.0:EBX = 0xd39ffffb: bit 12 (RDT-M) and bit 15 (RDT-A) set.
//   CPUID.0x10.0:EBX = 0xa: L3 CAT (bit 1) and MBA (bit 3); no L2 CAT.
//   CPUID.0x10.1 = 0xa 0x600 0x4 0xf: CBM length 0xa + 1 = 11 bits, shared
//     bits 0x600, ECX[2] CDP, ECX[3] (non-contiguous masks) clear, COS_MAX 15.
//   CPUID.0x10.3 = 0x59 0 0x4 0x7: max delay 0x59 + 1 = 90, ECX[2] linear,
//     ECX[0] (per-thread) clear, COS_MAX 7.
//   CPUID.0xF.0 = 0 0x8f 0 0x2: highest RMID 0x8f, EDX[1] L3 monitoring.
//   CPUID.0xF.1 = 0 0x12000 0x8f 0x7: width offset 0, upscale factor 73728,
//     0x8f + 1 = 144 RMIDs, EDX[0..2] occupancy, total and local MBM.
//   CPUID.4.3 = 0x7c0fc163 0x0280003f 0x8fff: 11 ways x 1 partition x 64 B
//     x 36864 sets = 25952256 bytes (24.75 MiB).
TEST_CASE("Xeon Gold 6140 (Skylake-SP stepping 4) by default: only MB, as Linux shows it") {
  DumpSource src("intel-xeon-gold-6140-skylake-sp.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.vendor == "GenuineIntel");
  CHECK(i.family == 6);
  CHECK(i.model == 0x55);
  CHECK(i.stepping == 4);
  // Linux's quirk for model 0x55 stepping <= 4 forces cmt, mbmtotal,
  // mbmlocal and l3cat off: no info/L3, no info/L3_MON.
  CHECK_FALSE(i.res(ResourceId::L3).alloc_capable);
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.events.empty());
  // MBA is not part of the quirk.
  const Resource& mb = i.res(ResourceId::MB);
  REQUIRE(mb.alloc_capable);
  CHECK(mb.num_closid == 8);                           // info/MB/num_closids: COS_MAX 7 + 1
  CHECK(mb.membw.min_bw == 10);                        // info/MB/min_bandwidth: 100 - 90
  CHECK(mb.membw.bw_gran == 10);                       // info/MB/bandwidth_gran: 100 - 90
  CHECK(mb.membw.max_bw == 100);                       // the default MB schemata value
  CHECK(mb.membw.delay_linear);                        // info/MB/delay_linear: 1
  CHECK(mb.membw.throttle_mode == ThrottleMode::MAX);  // info/MB/thread_throttle_mode: max
  CHECK(mb.ctrl_domains.size() == 1);                  // one L3 in four_cpus()
  HwLimits lim = decode_limits(src, 0);
  CHECK(lim.mba_max_delay == 90);
  CHECK(lim.max_rmid_any == 0x8f);
  CHECK(lim.num_closid_any == 16);
  CHECK_FALSE(lim.amd);
  CHECK_FALSE(lim.io_rdt_alloc);  // CPUID.0x10.1:ECX[1] clear
  CHECK_FALSE(lim.io_rdt_mon);    // CPUID.0xF.1:EAX[9,10] clear
  // No info/L3 or info/L3_MON, but /proc/cpuinfo lists every RDT flag the
  // CPU enumerates, as Linux's does on this part.
  CHECK(cpuinfo_rdt_flags(i) == kFullFlags);
}

TEST_CASE("Xeon Gold 6140 (Skylake-SP) with rdt=cmt,mbmtotal,mbmlocal,l3cat as Linux shows it") {
  DumpSource src("intel-xeon-gold-6140-skylake-sp.cpuid");
  X86Platform i =
      decode_platform(src, four_cpus(), nullptr, RdtOptions::parse("cmt,mbmtotal,mbmlocal,l3cat"));
  const Resource& l3 = i.res(ResourceId::L3);
  REQUIRE(l3.alloc_capable);
  CHECK(l3.cache.cbm_len == 11);
  CHECK(l3.cache.full_mask() == 0x7ff);     // info/L3/cbm_mask
  CHECK(l3.cache.min_cbm_bits == 1);        // info/L3/min_cbm_bits (Intel)
  CHECK(l3.num_closid == 16);               // info/L3/num_closids: COS_MAX 15 + 1
  CHECK(l3.cache.shareable_bits == 0x600);  // info/L3/shareable_bits
  CHECK_FALSE(l3.cache.sparse_masks);       // info/L3/sparse_masks: 0
  CHECK(l3.cache.cdp_capable);              // mount -o cdp works
  CHECK(l3.cache.cache_size_bytes == 25952256);
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  CHECK(i.res(ResourceId::MB).alloc_capable);
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 144);           // info/L3_MON/num_rmids
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 73728);   // CPUID.0xF.1:EBX
  CHECK(i.res(ResourceId::L3).mon.counter_width == 24);        // 24 + CPUID.0xF.1:EAX[7:0] (0)
  CHECK(i.res(ResourceId::L3).mon.event_ids() == kAllEvents);  // info/L3_MON/mon_features
  // info/L3_MON/max_threshold_occupancy: 25952256 / 144 = 180224, rounded
  // down to a multiple of 73728: 2 x 73728.
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 147456);
  CHECK_FALSE(i.res(ResourceId::L3).mon.evt_cfg.capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.cntr_assign.capable);
  // SKX99 correction table, row 144 / 8 - 1 = 17: RMIDs above 127 are
  // multiplied by 1.185255.
  MbmCorrection c = mbm_correction(i);
  CHECK(c.rmid_threshold == 127);
  CHECK(c.factor == Approx(1.185255));
  CHECK(cpuinfo_rdt_flags(i) == kFullFlags);
  // A user's rdt= entry beats the quirk only for the features it names.
  X86Platform only_cat = decode_platform(src, four_cpus(), nullptr, RdtOptions::parse("l3cat"));
  CHECK(only_cat.res(ResourceId::L3).alloc_capable);
  CHECK_FALSE(only_cat.res(ResourceId::L3).mon.capable);
  X86Platform only_occ = decode_platform(src, four_cpus(), nullptr, RdtOptions::parse("cmt"));
  CHECK(only_occ.res(ResourceId::L3).mon.capable);
  CHECK(only_occ.res(ResourceId::L3).mon.event_ids() ==
        std::vector<EventId>{EventId::LLC_OCCUPANCY});
  CHECK_FALSE(only_occ.res(ResourceId::L3).alloc_capable);
}

// Xeon E5-2699 v4 (Broadwell-EP, CPUID.1:EAX = 0x406f1: family 6, model
// 0x4F, stepping 1). Expected values from the raw registers of the dump:
//   CPUID.7.0:EBX = 0x021cbfbb: bit 12 (RDT-M) and bit 15 (RDT-A) set.
//   CPUID.0x10.0:EBX = 0x2: L3 CAT only (no MBA on this generation).
//   CPUID.0x10.1 = 0x13 0xc0000 0x4 0xf: 0x13 + 1 = 20-bit CBM, shared bits
//     0xc0000, ECX[2] CDP, contiguous masks only, 16 CLOSIDs.
//   CPUID.0xF.1 = 0 0x16000 0xaf 0x7: upscale 90112, 0xaf + 1 = 176 RMIDs,
//     all three events, width offset 0.
//   CPUID.4.3 = 0x7c0fc163 0x04c0003f 0xafff: 20 ways x 64 B x 45056 sets
//     = 57671680 bytes (55 MiB).
TEST_CASE("Xeon E5-2699 v4 (Broadwell-EP) decodes as Linux shows it") {
  DumpSource src("intel-xeon-e5-2699v4-broadwell-ep.cpuid");
  X86Platform i = decode_platform(src, four_cpus());
  CHECK(i.vendor == "GenuineIntel");
  CHECK(i.family == 6);
  CHECK(i.model == 0x4F);
  CHECK(i.stepping == 1);
  const Resource& l3 = i.res(ResourceId::L3);
  REQUIRE(l3.alloc_capable);                  // no rdt= quirk for model 0x4F
  CHECK(l3.cache.full_mask() == 0xfffff);     // info/L3/cbm_mask
  CHECK(l3.cache.min_cbm_bits == 1);          // info/L3/min_cbm_bits
  CHECK(l3.num_closid == 16);                 // info/L3/num_closids
  CHECK(l3.cache.shareable_bits == 0xc0000);  // info/L3/shareable_bits
  CHECK_FALSE(l3.cache.sparse_masks);         // info/L3/sparse_masks
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.cache.cache_size_bytes == 57671680);
  CHECK_FALSE(i.res(ResourceId::L2).alloc_capable);
  CHECK_FALSE(i.res(ResourceId::MB).alloc_capable);  // CPUID.0x10.0:EBX[3] clear
  CHECK(i.res(ResourceId::L3).mon.capable);
  CHECK(i.res(ResourceId::L3).mon.num_rmids == 176);          // info/L3_MON/num_rmids
  CHECK(i.res(ResourceId::L3).mon.occupancy_scale == 90112);  // CPUID.0xF.1:EBX
  CHECK(i.res(ResourceId::L3).mon.counter_width == 24);
  CHECK(i.res(ResourceId::L3).mon.event_ids() == kAllEvents);  // info/L3_MON/mon_features
  // info/L3_MON/max_threshold_occupancy: 57671680 / 176 = 327680, rounded
  // down to a multiple of 90112: 3 x 90112.
  CHECK(i.res(ResourceId::L3).mon.default_threshold == 270336);
  // BDF102 (same table as SKX99), row 176 / 8 - 1 = 21: RMIDs above 159 are
  // multiplied by 1.454334.
  MbmCorrection c = mbm_correction(i);
  CHECK(c.rmid_threshold == 159);
  CHECK(c.factor == Approx(1.454334));
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"cat_l3", "cdp_l3", "cqm", "rdt_a",
                                                         "cqm_llc", "cqm_occup_llc",
                                                         "cqm_mbm_total", "cqm_mbm_local"});
  HwLimits lim = decode_limits(src, 0);
  CHECK(lim.max_rmid_any == 0xaf);
  CHECK(lim.num_closid_any == 16);
  CHECK(lim.mba_max_delay == 0);
  CHECK_FALSE(lim.io_rdt_alloc);
  CHECK_FALSE(lim.io_rdt_mon);
  // rdt=!l3cdp hides CDP, rdt=!mbmlocal one event.
  X86Platform j = decode_platform(src, four_cpus(), nullptr, RdtOptions::parse("!l3cdp,!mbmlocal"));
  CHECK(j.res(ResourceId::L3).alloc_capable);
  CHECK_FALSE(j.res(ResourceId::L3).cache.cdp_capable);
  CHECK(j.res(ResourceId::L3).mon.event_ids() ==
        std::vector<EventId>{EventId::LLC_OCCUPANCY, EventId::MBM_TOTAL});
}

TEST_CASE("rdt= option lists parse as the kernel's boot parameter") {
  RdtOptions o = RdtOptions::parse("cmt,!mba,,bogus,!l3cat,l3cat");
  CHECK(o.forced_on("cmt"));
  CHECK(o.forced_off("mba"));
  CHECK_FALSE(o.forced_on("mba"));
  // Both given: the force-on wins, as in the kernel.
  CHECK(o.forced_on("l3cat"));
  CHECK(o.forced_off("l3cat"));
  CHECK(RdtOptions::parse("").force_on.empty());
  // rdt=!mba hides info/MB.
  DumpSource clx("intel-xeon-gold-6252-cascadelake-sp.cpuid");
  CHECK_FALSE(decode_platform(clx, four_cpus(), nullptr, RdtOptions::parse("!mba"))
                  .res(ResourceId::MB)
                  .alloc_capable);
  // Haswell server: rdt=!l3cat skips the probe (no MSR write at all).
  DumpSource hsw("intel-xeon-e5-2699v3-haswell-ep.cpuid");
  testing::RecordingMsr probe;
  X86Platform h = decode_platform(hsw, four_cpus(), &probe, RdtOptions::parse("!l3cat"));
  CHECK_FALSE(h.res(ResourceId::L3).alloc_capable);
  CHECK(probe.log.empty());
}

TEST_CASE("the real backend refuses a CPU whose every feature rdt= and the quirks turn off") {
  // Gold 6140 on a plain boot keeps only MB; rdt=!mba leaves nothing, and
  // Linux would register no resctrl at all.
  DumpSource src("intel-xeon-gold-6140-skylake-sp.cpuid");
  auto b =
      real::make_msr_backend_with(src, four_cpus(), "/nonexistent.sock", RdtOptions::parse("!mba"));
  REQUIRE_FALSE(b.ok());
  CHECK(b.error().code == ENODEV);
  CHECK(b.error().message.find("turn every RDT/PQoS feature off") != std::string::npos);
  // With MB left on it gets as far as the (absent) broker.
  auto c = real::make_msr_backend_with(src, four_cpus(), "/nonexistent.sock");
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().message.find("RDT/PQoS") == std::string::npos);
}

TEST_CASE("SDCIAE: CPUID.0x80000020.0:EBX bit 6 makes L3 io_alloc capable") {
  // Rome's dump has no SDCIAE.
  DumpSource rome("amd-epyc-7452-rome.cpuid");
  CHECK_FALSE(decode_platform(rome, four_cpus()).res(ResourceId::L3).cache.io_alloc_capable);
  const char* base = R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}, {"cpu": 1}],
      "l3_size_bytes": 33554432, "l2_size_bytes": 524288, %s})";
  auto decode = [&](const std::string& extra) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), base, extra.c_str());
    auto p = sim::parse_profile(buf, "sdciae");
    REQUIRE(p.ok());
    sim::SimMachine m(*p);
    return m.info();
  };
  // The raw bit, and the high-level key that sets it.
  X86Platform raw = decode(R"("l3_cat": {"cbm_len": 16, "num_closid": 16},
      "cpuid": {"0x80000020.0": ["0", "0x40", "0", "0"]})");
  CHECK(raw.res(ResourceId::L3).cache.io_alloc_capable);
  CHECK_FALSE(raw.res(ResourceId::L2).cache.io_alloc_capable);
  X86Platform key = decode(R"("l3_cat": {"cbm_len": 16, "num_closid": 16, "io_alloc": true})");
  CHECK(key.res(ResourceId::L3).cache.io_alloc_capable);
  {
    // The kernel's rdt=!sdciae turns it off.
    auto p = sim::parse_profile(R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}],
        "l3_cat": {"cbm_len": 16, "num_closid": 16, "io_alloc": true}})",
                                "sdciae-off");
    REQUIRE(p.ok());
    sim::SimMachine m(*p);
    CHECK(decode_platform(m, p->topology()).res(ResourceId::L3).cache.io_alloc_capable);
    CHECK_FALSE(decode_platform(m, p->topology(), nullptr, RdtOptions::parse("!sdciae"))
                    .res(ResourceId::L3)
                    .cache.io_alloc_capable);
  }
  X86Platform off = decode(R"("l3_cat": {"cbm_len": 16, "num_closid": 16, "io_alloc": false})");
  CHECK_FALSE(off.res(ResourceId::L3).cache.io_alloc_capable);
  // Without L3 CAT there is no io_alloc, whatever the bit says.
  X86Platform no_cat = decode(R"("mb": {"num_closid": 16, "bw_len": 11},
      "cpuid": {"0x80000020.0": ["0", "0x42", "0", "0"]})");
  CHECK_FALSE(no_cat.res(ResourceId::L3).cache.io_alloc_capable);
  // Intel has no SDCIAE: the key is refused.
  CHECK_FALSE(sim::parse_profile(R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}],
      "l3_cat": {"cbm_len": 11, "num_closid": 16, "io_alloc": true}})",
                                 "intel-sdciae")
                  .ok());
}

TEST_CASE("profiles enumerating more CLOSIDs or RMIDs than the architecture can name are refused") {
  // Found by fuzz_profile: an AMD "mb" with 168888888888888888 CLOSIDs made
  // the simulated machine allocate gigabytes per domain.
  auto huge_mb = sim::parse_profile(R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}],
      "mb": {"num_closid": 168888888888888888, "bw_len": 11}})",
                                    "huge-mb");
  REQUIRE_FALSE(huge_mb.ok());
  CHECK(huge_mb.error().message.find("num_closid must be 1..65536") != std::string::npos);
  CHECK(sim::parse_profile(R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}],
      "mb": {"num_closid": 65536, "bw_len": 11}})",
                           "max-mb")
            .ok());
  // Raw leaves: 0xffffffff must not wrap to 0 CLOSIDs or RMIDs.
  auto raw_bw = sim::parse_profile(R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}],
      "cpuid": {"0x80000020.1": ["0xb", "0", "0", "0xffffffff"]}})",
                                   "raw-bw");
  REQUIRE_FALSE(raw_bw.ok());
  CHECK(raw_bw.error().message.find("more than 65536 CLOSIDs") != std::string::npos);
  auto raw_rmid = sim::parse_profile(R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}],
      "cpuid": {"0xf.1": ["0", "0x10000", "0x7fffffff", "0x7"]}})",
                                     "raw-rmid");
  REQUIRE_FALSE(raw_rmid.ok());
  CHECK(raw_rmid.error().message.find("more than 65536 RMIDs") != std::string::npos);
}

// ---- CPUID per logical processor.

namespace {

// intel-2s with CPU `cpu` answering `leaf`.`sub` with `r`.
sim::Profile intel_with_cpu_leaf(unsigned cpu, uint32_t leaf, uint32_t sub, CpuidRegs r) {
  auto p = sim::load_profile("intel-2s");
  REQUIRE(p.ok());
  p->cpuid_per_cpu[cpu][{leaf, sub}] = r;
  return std::move(p).value();
}

}  // namespace

TEST_CASE("cpuid_per_cpu: one CPU answers its own leaves, the others the profile's") {
  auto p = sim::parse_profile(R"({"vendor": "GenuineIntel", "family": 6, "model": 106,
    "cpus": [{"cpu": 0}, {"cpu": 1}, {"cpu": 2}, {"cpu": 3}],
    "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
    "l3_cat": {"cbm_len": 11, "num_closid": 16},
    "cpuid_per_cpu": {"2": {"0x10.1": ["0xa", "0x600", "0x4", "0xf"], "0xb": ["1", "2", "3", "4"]}}})",
                              "test");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  CHECK(m.cpuid(2, CPUID_LEAF_PQE, 1) == CpuidRegs{0xa, 0x600, 0x4, 0xf});
  CHECK(m.cpuid(2, 0xb, 0) == CpuidRegs{1, 2, 3, 4});
  CHECK(m.cpuid(0, CPUID_LEAF_PQE, 1) == p->cpuid.at({CPUID_LEAF_PQE, 1}));
  CHECK(m.cpuid(1, 0xb, 0) == CpuidRegs{});
  // The decoder compares every online CPU's RDT leaves with the first's.
  const auto d = rdt_cpuid_differences(m, p->topology());
  REQUIRE(d.size() == 1);
  CHECK(d[0].rfind("CPU 2 leaf 0x10.1: eax=0xa ebx=0x600 ecx=0x4 edx=0xf, CPU 0: ", 0) == 0);
}

TEST_CASE("CPUs that differ in an RDT leaf are refused, other leaves are not compared") {
  SECTION("a different L3 CAT mask length on one CPU") {
    sim::Profile p = intel_with_cpu_leaf(5, CPUID_LEAF_PQE, 1, CpuidRegs{0x9, 0, 0x4, 0xf});
    sim::SimMachine m(p);
    auto r = check_rdt_cpuid_uniform(m, p.topology());
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    CHECK(r.error().message.find("CPU 5 leaf 0x10.1") != std::string::npos);
    CHECK(r.error().message.find("do not enumerate the same RDT/PQoS features") !=
          std::string::npos);
    // Offline, it does not count (the decoder reads online CPUs only).
    Topology t = p.topology();
    t.online.reset(5);
    CHECK(check_rdt_cpuid_uniform(m, t).ok());
    // The real-hardware path refuses before it talks to any broker.
    auto b = hw::real::make_msr_backend_with(m, p.topology(), "/nonexistent/broker.sock",
                                             RdtOptions::all());
    REQUIRE_FALSE(b.ok());
    CHECK(b.error().message.find("CPU 5 leaf 0x10.1") != std::string::npos);
  }
  SECTION("leaf 7 without PQM/PQE differs only in bits the decoder ignores") {
    const auto base = sim::load_profile("intel-2s");
    REQUIRE(base.ok());
    CpuidRegs l7 = sim::SimMachine(*base).cpuid(0, CPUID_LEAF_EXT_FEATURES, 0);
    l7.ebx ^= 1U;  // FSGSBASE: not an RDT bit
    l7.edx ^= 1U << 4;
    sim::Profile p = intel_with_cpu_leaf(3, CPUID_LEAF_EXT_FEATURES, 0, l7);
    sim::SimMachine m(p);
    CHECK(check_rdt_cpuid_uniform(m, p.topology()).ok());
    l7.ebx ^= 1U << 15;  // PQE
    p = intel_with_cpu_leaf(3, CPUID_LEAF_EXT_FEATURES, 0, l7);
    sim::SimMachine m2(p);
    CHECK_FALSE(check_rdt_cpuid_uniform(m2, p.topology()).ok());
  }
  SECTION("every built-in platform agrees with itself") {
    for (const auto& name : sim::builtin_profile_names()) {
      INFO(name);
      auto p = sim::load_profile(name);
      REQUIRE(p.ok());
      sim::SimMachine m(*p);
      CHECK(check_rdt_cpuid_uniform(m, p->topology()).ok());
    }
  }
}

TEST_CASE("cpuid_per_cpu: bad entries are refused with a message") {
  const std::string head = R"({"vendor": "GenuineIntel", "family": 6, "model": 106,
    "cpus": [{"cpu": 0}, {"cpu": 1}], "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
    "cpuid_per_cpu": )";
  struct Case {
    const char* json;
    const char* msg;
  };
  for (const Case& c : {
           Case{R"({"2": {"0x10.1": ["0", "0", "0", "0"]}})", "is not a CPU of the profile"},
           Case{R"({"-1": {}})", "is not a CPU of the profile"},
           Case{R"({"one": {}})", "is not a CPU of the profile"},
           Case{R"({"1": {"0x10.1": ["0", "0", "0"]}})", "needs 4 values"},
           Case{R"({"1": {"leaf": ["0", "0", "0", "0"]}})", "bad cpuid key"},
           Case{R"({"1": ["0x10.1"]})", "must be an object"},
           Case{R"(["1"])", "must be an object"},
       }) {
    INFO(c.json);
    auto p = sim::parse_profile(head + c.json + "}", "test");
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().message.find(c.msg) != std::string::npos);
  }
}
