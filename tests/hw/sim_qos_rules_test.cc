// Tests register behaviours where Intel RDT and AMD PQoS differ, at the
// register level of the simulated machine: an RMID beyond the maximum in
// QM_EVTSEL (Intel: Error on read; AMD: #GP), an RMID beyond one resource's
// count (Intel: Unavailable; AMD: Error), Intel's optional Overflow bit,
// AMD's QM_EVTSEL shared by the QoS domain, AMD's L3_QOS_CFG (CDP) per
// logical processor, AMD clearing an RMID's count when it starts tracking
// it, AMD's minimum of tracked RMIDs (one per processor), AMD sharing a
// saturated domain without regard to the COS limits' ratio, and write
// traffic: AMD limits hold reads only, BMEC's write bits count the writes,
// Intel's MBA and mbm_total take reads and writes alike.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;
using Catch::Detail::Approx;

namespace {

std::unique_ptr<sim::SimMachine> machine(const std::string& name_or_json) {
  auto p = name_or_json.front() == '{' ? sim::parse_profile(name_or_json, "test")
                                       : sim::load_profile(name_or_json);
  REQUIRE(p.ok());
  auto m = std::make_unique<sim::SimMachine>(*p);
  m->set_manual_clock(true);
  return m;
}

uint64_t evtsel(uint64_t rmid, uint32_t evt) { return rmid << QM_EVTSEL_RMID_SHIFT | evt; }

uint64_t read_ctr(sim::SimMachine& m, unsigned cpu, uint64_t rmid, uint32_t evt) {
  REQUIRE(m.write(cpu, IA32_QM_EVTSEL, evtsel(rmid, evt)).ok());
  auto v = m.read(cpu, IA32_QM_CTR);
  REQUIRE(v.ok());
  return *v;
}

Workload demand(double mbps, uint64_t footprint = 0) {
  Workload w;
  w.bandwidth_mbps = mbps;
  w.cache_footprint_bytes = footprint;
  return w;
}

void assoc(sim::SimMachine& m, unsigned cpu, uint32_t closid, uint32_t rmid) {
  REQUIRE(m.write(cpu, IA32_PQR_ASSOC, uint64_t{closid} << PQR_ASSOC_CLOS_SHIFT | rmid).ok());
}

// One L3 of four CPUs whose CPUID.0xF.0:EBX (highest RMID of any resource)
// is 127 while the L3 has 64 RMIDs (CPUID.0xF.1:ECX = 63).
std::string two_counts(const char* vendor) {
  const bool amd = std::string(vendor) == "AuthenticAMD";
  return std::string(R"({"vendor": ")") + vendor + R"(", "family": )" + (amd ? "25" : "6") +
         R"(, "model": 1,
    "cpus": [{"cpu": 0}, {"cpu": 1}, {"cpu": 2}, {"cpu": 3}],
    "l3_size_bytes": 16777216, "l2_size_bytes": 1048576,
    "l3_mon": {"num_rmids": 64, "scale": 65536, "counter_width": )" +
         (amd ? "44" : "24") + R"(, "events": ["llc_occupancy", "mbm_total_bytes"]},
    "cpuid": {"0xf.0": ["0", "127", "0", "2"]}})";
}

}  // namespace

TEST_CASE("an RMID beyond the maximum: Intel reads Error, AMD #GPs at the select") {
  auto intel = machine("intel-2s");  // 224 RMIDs
  CHECK(intel->write(0, IA32_QM_EVTSEL, evtsel(224, QOS_L3_OCCUP_EVENT_ID)).ok());
  CHECK(*intel->read(0, IA32_QM_EVTSEL) == evtsel(224, QOS_L3_OCCUP_EVENT_ID));
  CHECK(*intel->read(0, IA32_QM_CTR) == QM_CTR_ERROR);
  // A valid selection clears the error.
  CHECK(read_ctr(*intel, 0, 223, QOS_L3_OCCUP_EVENT_ID) == 0);

  auto amd = machine("amd-2s");  // 256 RMIDs
  CHECK_FALSE(amd->write(0, IA32_QM_EVTSEL, evtsel(256, QOS_L3_OCCUP_EVENT_ID)).ok());
  CHECK(read_ctr(*amd, 0, 255, QOS_L3_OCCUP_EVENT_ID) == 0);
}

TEST_CASE("an RMID beyond the L3's own count: Intel Unavailable, AMD Error") {
  auto intel = machine(two_counts("GenuineIntel"));
  CHECK(read_ctr(*intel, 0, 63, QOS_L3_OCCUP_EVENT_ID) == 0);
  CHECK(read_ctr(*intel, 0, 64, QOS_L3_OCCUP_EVENT_ID) == QM_CTR_UNAVAILABLE);
  CHECK(read_ctr(*intel, 0, 127, QOS_L3_MBM_TOTAL_EVENT_ID) == QM_CTR_UNAVAILABLE);
  CHECK(intel->write(0, IA32_QM_EVTSEL, evtsel(128, QOS_L3_OCCUP_EVENT_ID)).ok());
  CHECK(*intel->read(0, IA32_QM_CTR) == QM_CTR_ERROR);

  auto amd = machine(two_counts("AuthenticAMD"));
  CHECK(read_ctr(*amd, 0, 63, QOS_L3_OCCUP_EVENT_ID) == 0);
  CHECK(read_ctr(*amd, 0, 64, QOS_L3_OCCUP_EVENT_ID) == QM_CTR_ERROR);
  CHECK_FALSE(amd->write(0, IA32_QM_EVTSEL, evtsel(128, QOS_L3_OCCUP_EVENT_ID)).ok());
}

TEST_CASE("Intel's Overflow bit: set when a counter wrapped since its last read") {
  // 24-bit counter of 64-byte units: it wraps every 2^30 bytes.
  auto profile = [](bool overflow) {
    return std::string(R"({"vendor": "GenuineIntel", "family": 6, "model": 106,
      "cpus": [{"cpu": 0}, {"cpu": 1}], "l3_size_bytes": 16777216,
      "l3_mon": {"num_rmids": 16, "scale": 64, "counter_width": 24,
                 "events": ["mbm_total_bytes"], "overflow_bit": )") +
           (overflow ? "true" : "false") + "}}";
  };
  auto m = machine(profile(true));
  CHECK((m->cpuid(0, CPUID_LEAF_PQM, 1).eax & CPUID_F_1_EAX_OVERFLOW) != 0);
  CHECK(m->info().res(ResourceId::L3).mon.counter_width ==
        24);  // the bit does not change the width
  assoc(*m, 0, 0, 3);
  REQUIRE(m->attach_cpu_workload(0, demand(500)).ok());
  m->advance_ms(1000);  // 5e8 bytes: no wrap yet
  const uint64_t first = read_ctr(*m, 0, 3, QOS_L3_MBM_TOTAL_EVENT_ID);
  CHECK((first & QM_CTR_OVERFLOW) == 0);
  m->advance_ms(2000);  // 1e9 bytes more, 1.5e9 in all: one wrap
  const uint64_t v = read_ctr(*m, 0, 3, QOS_L3_MBM_TOTAL_EVENT_ID);
  CHECK((v & QM_CTR_OVERFLOW) != 0);
  // The count is the low 24 bits. Relative to the first read: the model
  // moves in steps of at least 1 ms, so the microseconds between the clock
  // switch and the attach may count into the first step.
  CHECK((v & ((1ULL << 24) - 1)) == (first + 1000000000ULL / 64) % (1ULL << 24));
  // The read cleared it.
  CHECK((read_ctr(*m, 0, 3, QOS_L3_MBM_TOTAL_EVENT_ID) & QM_CTR_OVERFLOW) == 0);

  auto plain = machine(profile(false));
  assoc(*plain, 0, 0, 3);
  REQUIRE(plain->attach_cpu_workload(0, demand(500)).ok());
  plain->advance_ms(3000);
  CHECK((read_ctr(*plain, 0, 3, QOS_L3_MBM_TOTAL_EVENT_ID) & QM_CTR_OVERFLOW) == 0);

  CHECK_FALSE(sim::parse_profile(R"({"vendor": "AuthenticAMD", "cpus": [{"cpu": 0}],
      "l3_mon": {"num_rmids": 16, "counter_width": 44, "overflow_bit": true}})",
                                 "t")
                  .ok());
}

TEST_CASE("AMD's QM_EVTSEL is shared by the QoS domain, Intel's is per CPU") {
  auto amd = machine("amd-2s");  // L3 0: CPUs 0-3, L3 1: CPUs 4-7
  REQUIRE(amd->write(0, IA32_QM_EVTSEL, evtsel(9, QOS_L3_MBM_TOTAL_EVENT_ID)).ok());
  CHECK(*amd->read(3, IA32_QM_EVTSEL) == evtsel(9, QOS_L3_MBM_TOTAL_EVENT_ID));
  CHECK(*amd->read(4, IA32_QM_EVTSEL) == 0);
  // A select on a sibling CPU changes what the first CPU's QM_CTR reads.
  assoc(*amd, 1, 0, 9);
  REQUIRE(amd->attach_cpu_workload(1, demand(0, 4u << 20)).ok());
  amd->advance_ms(1000);
  REQUIRE(amd->write(0, IA32_QM_EVTSEL, evtsel(8, QOS_L3_OCCUP_EVENT_ID)).ok());
  REQUIRE(amd->write(2, IA32_QM_EVTSEL, evtsel(9, QOS_L3_OCCUP_EVENT_ID)).ok());
  CHECK(*amd->read(0, IA32_QM_CTR) > 0);  // RMID 9's occupancy, not RMID 8's

  auto intel = machine("intel-2s");
  REQUIRE(intel->write(0, IA32_QM_EVTSEL, evtsel(9, QOS_L3_MBM_TOTAL_EVENT_ID)).ok());
  CHECK(*intel->read(1, IA32_QM_EVTSEL) == 0);
}

TEST_CASE("AMD's CDP enable is per logical processor, Intel's per L3") {
  auto amd = machine("amd-2s");
  REQUIRE(amd->write(0, IA32_L3_QOS_CFG, QOS_CFG_CDP_ENABLE).ok());
  CHECK(*amd->read(0, IA32_L3_QOS_CFG) == QOS_CFG_CDP_ENABLE);
  CHECK(*amd->read(1, IA32_L3_QOS_CFG) == 0);
  // CLOS 1 fills mask 1 (4 of 16 ways) without CDP, mask 2 (its DATA mask,
  // 8 of 16 ways) with it: CPU 0 has CDP on, CPU 1 off.
  REQUIRE(amd->write(0, IA32_L3_MASK_0 + 1, 0x000f).ok());
  REQUIRE(amd->write(0, IA32_L3_MASK_0 + 2, 0x00ff).ok());
  assoc(*amd, 0, 1, 10);
  assoc(*amd, 1, 1, 11);
  REQUIRE(amd->attach_cpu_workload(0, demand(0, 64u << 20)).ok());
  REQUIRE(amd->attach_cpu_workload(1, demand(0, 64u << 20)).ok());
  amd->advance_ms(5000);
  // Each footprint exceeds the L3: each fills what its mask allows.
  const double with_cdp = amd->occupancy_bytes(0, 10), without = amd->occupancy_bytes(0, 11);
  CHECK(without > 0);
  CHECK(with_cdp / without == Approx(2).epsilon(0.01));

  auto intel = machine("intel-2s");
  REQUIRE(intel->write(0, IA32_L3_QOS_CFG, QOS_CFG_CDP_ENABLE).ok());
  CHECK(*intel->read(1, IA32_L3_QOS_CFG) == QOS_CFG_CDP_ENABLE);
  CHECK(*intel->read(4, IA32_L3_QOS_CFG) == 0);
}

TEST_CASE("AMD clears an RMID's count when it starts tracking it again") {
  auto amd = machine("amd-2s");  // 32 counters per L3
  const double unit = 64;
  assoc(*amd, 0, 0, 5);
  REQUIRE(amd->attach_cpu_workload(0, demand(1000)).ok());
  amd->advance_ms(1000);
  CHECK(read_ctr(*amd, 0, 5, QOS_L3_MBM_TOTAL_EVENT_ID) * unit == Approx(1e9).epsilon(0.001));
  // RMID 5 goes idle while 32 others are in use: it loses its counter.
  assoc(*amd, 0, 0, 6);
  for (int t = 0; t < 32; ++t) amd->set_thread_tags(1000 + t, 0, 100 + t);
  amd->advance_ms(10);
  CHECK(read_ctr(*amd, 0, 5, QOS_L3_MBM_TOTAL_EVENT_ID) == QM_CTR_UNAVAILABLE);
  for (int t = 0; t < 32; ++t) amd->thread_exited(1000 + t);
  // Back in use: counted from 0, not from the 1e9 bytes before.
  assoc(*amd, 0, 0, 5);
  amd->advance_ms(1000);
  CHECK(read_ctr(*amd, 0, 5, QOS_L3_MBM_TOTAL_EVENT_ID) * unit == Approx(1e9).epsilon(0.01));
}

TEST_CASE("AMD tracks at least as many RMIDs as the domain has processors") {
  auto m = machine(R"({"vendor": "AuthenticAMD", "family": 25, "model": 1,
    "cpus": [{"cpu": 0}, {"cpu": 1}, {"cpu": 2}, {"cpu": 3}],
    "l3_size_bytes": 33554432, "l2_size_bytes": 524288,
    "l3_mon": {"num_rmids": 16, "scale": 64, "counter_width": 44,
               "events": ["mbm_total_bytes"]},
    "sim": {"mbm_hw_counters": 1}})");
  for (unsigned c = 0; c < 4; ++c) {
    assoc(*m, c, 0, 1 + c);
    REQUIRE(m->attach_cpu_workload(c, demand(100)).ok());
  }
  m->advance_ms(1000);
  for (unsigned c = 0; c < 4; ++c) {
    INFO("RMID " << 1 + c);
    CHECK(read_ctr(*m, 0, 1 + c, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1e8).epsilon(0.01));
  }
}

TEST_CASE("AMD shares a saturated domain by demand, not in proportion to the limits") {
  // The AMD64 PQoS example: COS 1 limited to A, COS 2 to 2A, the domain
  // delivers 2A: COS 1 is held to A, COS 2 gets the rest, not 4/3 A.
  auto m = machine(R"({"vendor": "AuthenticAMD", "family": 25, "model": 1,
    "cpus": [{"cpu": 0}, {"cpu": 1}], "l3_size_bytes": 33554432, "l2_size_bytes": 524288,
    "mb": {"num_closid": 4, "bw_len": 11},
    "l3_mon": {"num_rmids": 16, "scale": 64, "counter_width": 44,
               "events": ["mbm_total_bytes"]},
    "sim": {"mem_bandwidth_mbps": 2000}})");
  REQUIRE(m->write(0, L3QOS_BW_CONTROL_0 + 1, 8).ok());   // 1000 MB/s
  REQUIRE(m->write(0, L3QOS_BW_CONTROL_0 + 2, 16).ok());  // 2000 MB/s
  assoc(*m, 0, 1, 1);
  assoc(*m, 1, 2, 2);
  REQUIRE(m->attach_cpu_workload(0, demand(4000)).ok());
  REQUIRE(m->attach_cpu_workload(1, demand(4000)).ok());
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 0, 1, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1e9).epsilon(0.001));
  CHECK(read_ctr(*m, 0, 2, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1e9).epsilon(0.001));
  // Neither held by its limit: both get the same share of their demand
  // (500 and 4000 MB/s of 2000: 222.2 and 1777.8).
  REQUIRE(m->attach_cpu_workload(0, demand(500)).ok());
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 0, 1, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 ==
        Approx(1e9 + 2000e6 * 500 / 4500).epsilon(0.001));
  CHECK(read_ctr(*m, 0, 2, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 ==
        Approx(1e9 + 2000e6 * 4000 / 4500).epsilon(0.001));
}

namespace {

Workload writes(double mbps, double write_fraction, double local_fraction = 1.0) {
  Workload w;
  w.bandwidth_mbps = mbps;
  w.write_fraction = write_fraction;
  w.local_fraction = local_fraction;
  return w;
}

}  // namespace

TEST_CASE("AMD limits hold a COS's reads, its writes pass and BMEC's write bits count them") {
  auto m = machine("amd-2s");                            // BMEC, 40000 MB/s per domain, scale 64
  REQUIRE(m->write(0, L3QOS_BW_CONTROL_0 + 1, 8).ok());  // 1000 MB/s
  assoc(*m, 1, 1, 3);
  // 4000 MB/s, half of it writes: 2000 of reads held to 1000, 2000 of writes.
  REQUIRE(m->attach_cpu_workload(1, writes(4000, 0.5)).ok());
  m->advance_ms(1000);
  // Power-on configuration: total = every class, local = local reads and
  // local non-temporal writes.
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(3e9).epsilon(0.001));
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_LOCAL_EVENT_ID) * 64.0 == Approx(3e9).epsilon(0.001));
  // Reads only on event 0, writes only on event 1 (both restart).
  REQUIRE(m->write(1, QOS_EVT_CFG_0, BMEC_READS_TO_LOCAL_MEM | BMEC_READS_TO_REMOTE_MEM).ok());
  REQUIRE(m->write(1, QOS_EVT_CFG_0 + 1,
                   BMEC_NON_TEMP_WRITE_TO_LOCAL_MEM | BMEC_NON_TEMP_WRITE_TO_REMOTE_MEM)
              .ok());
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) == QM_CTR_UNAVAILABLE);
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_LOCAL_EVENT_ID) == QM_CTR_UNAVAILABLE);
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1e9).epsilon(0.001));
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_LOCAL_EVENT_ID) * 64.0 == Approx(2e9).epsilon(0.001));
  // Dirty victims (bit 6) and slow-memory reads (bits 4, 5) match none of
  // the modelled traffic.
  REQUIRE(m->write(1, QOS_EVT_CFG_0,
                   BMEC_DIRTY_VICTIMS_TO_ALL_MEM | BMEC_READS_TO_LOCAL_S_MEM |
                       BMEC_READS_TO_REMOTE_S_MEM)
              .ok());
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) == QM_CTR_UNAVAILABLE);
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) == 0);
  // Local and remote classes split by local_fraction: a quarter local.
  REQUIRE(m->write(1, QOS_EVT_CFG_0, BMEC_NON_TEMP_WRITE_TO_REMOTE_MEM).ok());
  REQUIRE(m->attach_cpu_workload(1, writes(4000, 0.5, 0.25)).ok());
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) == QM_CTR_UNAVAILABLE);
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1.5e9).epsilon(0.001));
}

TEST_CASE("AMD: another COS's writes can keep a COS below its read limit") {
  // The AMD64 PQoS specification's fifth case of a limit not reached:
  // writes share the memory with the reads.
  auto m = machine(R"({"vendor": "AuthenticAMD", "family": 25, "model": 1,
    "cpus": [{"cpu": 0}, {"cpu": 1}], "l3_size_bytes": 33554432, "l2_size_bytes": 524288,
    "mb": {"num_closid": 4, "bw_len": 11},
    "l3_mon": {"num_rmids": 16, "scale": 64, "counter_width": 44,
               "events": ["mbm_total_bytes"]},
    "sim": {"mem_bandwidth_mbps": 2000}})");
  REQUIRE(m->write(0, L3QOS_BW_CONTROL_0 + 1, 8).ok());  // 1000 MB/s
  assoc(*m, 0, 1, 1);
  assoc(*m, 1, 2, 2);
  REQUIRE(m->attach_cpu_workload(0, writes(1000, 0)).ok());
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 0, 1, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1e9).epsilon(0.001));
  // COS 2 (unlimited) writes 3000 MB/s: the 2000 MB/s domain is shared by
  // demand, COS 1 gets 500 of its 1000.
  REQUIRE(m->attach_cpu_workload(1, writes(3000, 1.0)).ok());
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 0, 1, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1.5e9).epsilon(0.001));
  CHECK(read_ctr(*m, 0, 2, QOS_L3_MBM_TOTAL_EVENT_ID) * 64.0 == Approx(1.5e9).epsilon(0.001));
}

TEST_CASE("Intel: MBA delays reads and writes alike, mbm_total and mbm_local count both") {
  auto m = machine("intel-2s");
  const double unit = 65536;  // intel-2s upscaling factor
  REQUIRE(m->write(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 1, 50).ok());
  assoc(*m, 1, 1, 3);
  assoc(*m, 2, 0, 4);
  REQUIRE(m->attach_cpu_workload(1, writes(1000, 0.75, 0.5)).ok());
  REQUIRE(m->attach_cpu_workload(2, writes(1000, 0.0, 0.5)).ok());
  m->advance_ms(1000);
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_TOTAL_EVENT_ID) * unit == Approx(5e8).epsilon(0.01));
  CHECK(read_ctr(*m, 1, 3, QOS_L3_MBM_LOCAL_EVENT_ID) * unit == Approx(2.5e8).epsilon(0.01));
  CHECK(read_ctr(*m, 2, 4, QOS_L3_MBM_TOTAL_EVENT_ID) * unit == Approx(1e9).epsilon(0.01));
  CHECK(read_ctr(*m, 2, 4, QOS_L3_MBM_LOCAL_EVENT_ID) * unit == Approx(5e8).epsilon(0.01));
}

TEST_CASE("a write share outside 0..1 is refused") {
  auto m = machine("amd-2s");
  for (double bad : {-0.1, 1.5, std::nan("")}) {
    auto r = m->attach_cpu_workload(1, writes(100, bad));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == EINVAL);
    CHECK(r.error().message == "write_fraction must be within 0..1");
  }
}
