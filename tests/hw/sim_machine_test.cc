// Tests the simulated machine's register file: every #GP rule (the access
// fails as on hardware), fault injection and the register dump.
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;

namespace {

sim::SimMachine machine(const std::string& name) {
  auto p = sim::load_profile(name);
  REQUIRE(p.ok());
  return sim::SimMachine(*p);
}

struct WriteCase {
  const char* profile;
  const char* what;
  unsigned cpu;
  uint32_t msr;
  uint64_t value;
  bool ok;
};

}  // namespace

TEST_CASE("simulated writes obey the hardware's #GP rules") {
  const WriteCase cases[] = {
      {"intel-2s", "unknown MSR", 0, 0x123, 0, false},
      {"intel-2s", "IA32_LSTAR is not an RDT register", 0, IA32_LSTAR, 0, false},
      {"intel-2s", "last L3 mask", 0, IA32_L3_MASK_0 + 14, 0x7ff, true},
      {"intel-2s", "L3 mask beyond num_closid", 0, IA32_L3_MASK_0 + 15, 0x7ff, false},
      {"intel-2s", "L3 mask bit above cbm_len", 0, IA32_L3_MASK_0, 0xfff, false},
      {"intel-2s", "non-contiguous mask on Intel", 0, IA32_L3_MASK_0, 0x505, false},
      {"intel-2s", "empty mask on Intel", 0, IA32_L3_MASK_0, 0, false},
      {"intel-2s", "contiguous mask", 4, IA32_L3_MASK_0 + 1, 0x0f0, true},
      {"intel-2s", "no L2 CAT, no L2 masks", 0, IA32_L2_MASK_0, 0xff, false},
      {"intel-2s", "no L2 CAT, no L2_QOS_CFG", 0, IA32_L2_QOS_CFG, 0, false},
      {"intel-2s", "L3 CDP enable", 0, IA32_L3_QOS_CFG, 1, true},
      {"intel-2s", "L3_QOS_CFG reserved bit", 0, IA32_L3_QOS_CFG, 2, false},
      {"intel-2s", "PQR_ASSOC last CLOSID and RMID", 1, IA32_PQR_ASSOC, (14ULL << 32) | 223, true},
      {"intel-2s", "PQR_ASSOC CLOSID beyond maximum", 1, IA32_PQR_ASSOC, 16ULL << 32, false},
      {"intel-2s", "PQR_ASSOC RMID beyond maximum", 1, IA32_PQR_ASSOC, 224, false},
      // Intel takes an RMID beyond the maximum (QM_CTR then reads Error);
      // AMD #GPs (see sim_qos_rules_test.cc).
      {"intel-2s", "QM_EVTSEL RMID beyond maximum", 0, IA32_QM_EVTSEL, (224ULL << 32) | 1, true},
      {"amd-2s", "QM_EVTSEL RMID beyond maximum", 0, IA32_QM_EVTSEL, (256ULL << 32) | 1, false},
      {"intel-2s", "QM_EVTSEL reserved bits", 0, IA32_QM_EVTSEL, (1ULL << 8) | 1, false},
      {"intel-2s", "QM_EVTSEL extended event without ABMC", 0, IA32_QM_EVTSEL,
       QM_EVTSEL_EXTENDED_EVTID | 1, false},
      {"intel-2s", "QM_CTR is read-only", 0, IA32_QM_CTR, 0, false},
      {"intel-2s", "MBA delay", 0, IA32_L2_QOS_EXT_BW_THRTL_0 + 14, 90, true},
      {"intel-2s", "MBA register beyond MB CLOSIDs", 0, IA32_L2_QOS_EXT_BW_THRTL_0 + 15, 0, false},
      {"intel-2s", "MBA reserved bits", 0, IA32_L2_QOS_EXT_BW_THRTL_0, 1ULL << 16, false},
      {"intel-2s", "no AMD bandwidth registers on Intel", 0, L3QOS_BW_CONTROL_0, 0x800, false},
      {"intel-2s", "no BMEC on Intel", 0, QOS_EVT_CFG_0, 0x7f, false},
      {"intel-2s", "offline/nonexistent CPU", 8, IA32_PQR_ASSOC, 0, false},
      {"intel-l2", "L2 mask", 2, IA32_L2_MASK_0 + 7, 0x3c, true},
      {"intel-l2", "L2 mask beyond num_closid", 2, IA32_L2_MASK_0 + 8, 0x3c, false},
      {"intel-l2", "L2 non-contiguous mask", 2, IA32_L2_MASK_0, 0x81, false},
      {"intel-l2", "L3 not CDP capable", 0, IA32_L3_QOS_CFG, 1, false},
      {"intel-l2", "no monitoring: no QM_EVTSEL", 0, IA32_QM_EVTSEL, 1, false},
      {"intel-l2", "no monitoring: RMID must be 0", 0, IA32_PQR_ASSOC, 1, false},
      {"intel-cmt", "no CAT: no L3 masks", 0, IA32_L3_MASK_0, 0xff, false},
      {"intel-cmt", "no CAT: CLOSID must be 0", 0, IA32_PQR_ASSOC, 1ULL << 32, false},
      {"intel-cmt", "RMID 63", 0, IA32_PQR_ASSOC, 63, true},
      {"amd-2s", "non-contiguous mask on AMD", 0, IA32_L3_MASK_0, 0x5050, true},
      {"amd-2s", "empty mask on AMD", 0, IA32_L3_MASK_0, 0, true},
      {"amd-2s", "AMD mask bit above cbm_len", 0, IA32_L3_MASK_0, 0x10000, false},
      {"amd-2s", "AMD unlimited bandwidth", 0, L3QOS_BW_CONTROL_0 + 15, 0x800, true},
      {"amd-2s", "AMD bandwidth above the U bit", 0, L3QOS_BW_CONTROL_0, 0x1000, false},
      {"amd-2s", "AMD bandwidth beyond COS", 0, L3QOS_BW_CONTROL_0 + 16, 0, false},
      {"amd-2s", "SMBA limit", 4, L3QOS_SLOW_BW_CONTROL_0 + 3, 100, true},
      {"amd-2s", "SMBA above the U bit", 4, L3QOS_SLOW_BW_CONTROL_0, 0x1000, false},
      {"amd-2s", "no Intel MBA registers on AMD", 0, IA32_L2_QOS_EXT_BW_THRTL_0, 0, false},
      {"amd-2s", "BMEC config", 0, QOS_EVT_CFG_0 + 1, 0x15, true},
      {"amd-2s", "BMEC unsupported bit", 0, QOS_EVT_CFG_0, 0x80, false},
      {"amd-2s", "ABMC enable", 0, L3_QOS_EXT_CFG, 1, true},
      {"amd-2s", "L3_QOS_EXT_CFG reserved bit", 0, L3_QOS_EXT_CFG, 2, false},
      {"amd-io", "SDCIAE enable", 5, L3_QOS_EXT_CFG, L3_QOS_EXT_CFG_SDCIAE_EN, true},
      {"amd-io", "SDCIAE and ABMC enable", 0, L3_QOS_EXT_CFG, 3, true},
      {"amd-io", "L3_QOS_EXT_CFG reserved bit 2", 0, L3_QOS_EXT_CFG, 4, false},
      {"amd-io", "L3_QOS_EXT_CFG reserved high bit", 0, L3_QOS_EXT_CFG, 1ULL << 63, false},
      {"amd-io", "io_alloc mask of the highest CLOSID", 4, IA32_L3_MASK_0 + 15, 0x00ff, true},
      {"amd-2s", "ABMC counter 31", 0, L3_QOS_ABMC_CFG,
       ABMC_CFG_CFG_EN | ABMC_CFG_CTR_EN | (31ULL << 48) | (5ULL << 32) | 0x7f, true},
      {"amd-2s", "ABMC counter beyond count", 0, L3_QOS_ABMC_CFG, ABMC_CFG_CFG_EN | (32ULL << 48),
       false},
      {"amd-2s", "ABMC reserved bits", 0, L3_QOS_ABMC_CFG, ABMC_CFG_CFG_EN | (1ULL << 45), false},
      {"amd-2s", "ABMC RMID beyond maximum", 0, L3_QOS_ABMC_CFG, ABMC_CFG_CFG_EN | (256ULL << 32),
       false},
      {"amd-2s", "ABMC descriptor is read-only", 0, L3_QOS_ABMC_DSC, 0, false},
      {"amd-2s", "QM_EVTSEL extended event with ABMC", 0, IA32_QM_EVTSEL,
       (3ULL << 32) | QM_EVTSEL_EXTENDED_EVTID | ABMC_EVT_ID, true},
  };
  for (const auto& c : cases) {
    auto m = machine(c.profile);
    INFO(c.profile << ": " << c.what);
    auto r = m.write(c.cpu, c.msr, c.value);
    CHECK(r.ok() == c.ok);
    if (!r.ok()) CHECK(r.error().code == EIO);
    if (r.ok() && c.msr != L3_QOS_ABMC_CFG && c.msr != IA32_QM_EVTSEL) {
      auto back = m.read(c.cpu, c.msr);
      REQUIRE(back.ok());
      CHECK(*back == c.value);
    }
  }
}

TEST_CASE("simulated reads of absent registers fail") {
  auto m = machine("intel-2s");
  CHECK_FALSE(m.read(0, IA32_LSTAR).ok());
  CHECK_FALSE(m.read(0, IA32_L2_MASK_0).ok());
  CHECK_FALSE(m.read(0, IA32_L3_MASK_0 + 15).ok());  // 15 CLOS on Ice Lake-SP
  CHECK(m.read(0, IA32_L3_MASK_0 + 14).ok());
  CHECK(*m.read(4, IA32_L3_MASK_0) == 0x7ff);  // reset value: all ones
  auto amd = machine("amd-2s");
  CHECK(*amd.read(0, L3QOS_BW_CONTROL_0) == 0x800);  // reset value: unlimited
  CHECK(*amd.read(0, QOS_EVT_CFG_0) == 0x7f);
  CHECK(*amd.read(0, QOS_EVT_CFG_0 + 1) == 0x15);
}

TEST_CASE("QM_CTR reports Error for an unsupported event") {
  auto m = machine("intel-cmt");
  REQUIRE(m.write(0, IA32_QM_EVTSEL, (3ULL << 32) | QOS_L3_MBM_TOTAL_EVENT_ID).ok());
  CHECK((*m.read(0, IA32_QM_CTR) & QM_CTR_ERROR) != 0);
  REQUIRE(m.write(0, IA32_QM_EVTSEL, (3ULL << 32) | QOS_L3_OCCUP_EVENT_ID).ok());
  CHECK(*m.read(0, IA32_QM_CTR) == 0);
  auto amd = machine("amd-2s");
  // ABMC counter read while ABMC is disabled.
  REQUIRE(amd.write(0, IA32_QM_EVTSEL, QM_EVTSEL_EXTENDED_EVTID | ABMC_EVT_ID).ok());
  CHECK((*amd.read(0, IA32_QM_CTR) & QM_CTR_ERROR) != 0);
}

TEST_CASE("fault injection fails the next writes, optionally on one CPU") {
  auto m = machine("intel-2s");
  m.fail_next_writes(1, 4u);
  CHECK(m.write(0, IA32_L3_MASK_0, 0x3).ok());
  Result<void> failed = m.write(4, IA32_L3_MASK_0, 0x3);
  REQUIRE_FALSE(failed.ok());
  // The #GP text is for the log: the kernel's resctrl shows no text of its
  // own for a faulting MSR access, so no user may read this one.
  CHECK(failed.error().code == EIO);
  CHECK_FALSE(failed.error().for_user);
  CHECK(failed.error().user_text().empty());
  CHECK(*m.read(4, IA32_L3_MASK_0) == 0x7ff);  // the failed write changed nothing
  CHECK(m.write(4, IA32_L3_MASK_0, 0x3).ok());
  m.fail_next_writes(2, std::nullopt);
  CHECK_FALSE(m.write(1, IA32_PQR_ASSOC, 0).ok());
  CHECK_FALSE(m.write(5, IA32_PQR_ASSOC, 0).ok());
  CHECK(m.write(5, IA32_PQR_ASSOC, 0).ok());
}

TEST_CASE("an access to an offline CPU fails with log text only") {
  auto m = machine("intel-2s");
  REQUIRE(m.set_cpu_online(3, false).ok());
  Result<void> w = m.write(3, IA32_PQR_ASSOC, 0);
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().code == EIO);
  CHECK(w.error().user_text().empty());
  CHECK_FALSE(m.read(3, IA32_PQR_ASSOC).ok());
  CHECK_FALSE(m.read(3, IA32_PQR_ASSOC).error().for_user);
}

TEST_CASE("the register dump covers per-CPU and per-domain registers") {
  auto m = machine("intel-2s");
  REQUIRE(m.write(6, IA32_PQR_ASSOC, (2ULL << 32) | 9).ok());
  REQUIRE(m.write(5, IA32_L3_MASK_0 + 2, 0x0f).ok());
  auto dump = m.dump_registers();
  auto find = [&](unsigned cpu, uint32_t msr) -> std::optional<uint64_t> {
    for (const auto& r : dump)
      if (r.cpu == cpu && r.msr == msr) return r.value;
    return std::nullopt;
  };
  CHECK(find(6, IA32_PQR_ASSOC) == ((2ULL << 32) | 9));
  CHECK(find(4, IA32_L3_MASK_0 + 2) == 0x0fULL);  // shown on the domain's first CPU
  CHECK(find(0, IA32_L3_MASK_0 + 2) == 0x7ffULL);
  CHECK(find(0, IA32_L2_QOS_EXT_BW_THRTL_0 + 7) == 0ULL);
  CHECK_FALSE(find(5, IA32_L3_MASK_0 + 2).has_value());
}

// Every register the platform's specifications define, each under its
// feature: IA32_L3_IO_QOS_CFG (0xC83, IRAE/IRME) and the IO_PQR_CLOSn /
// IO_PQR_RMIDn MMIO tag registers of I/O RDT (RDT architecture
// specification, 4.4 and chapter 6), MBA_CFG (the second-generation and
// Resource-Aware MBA), QM_EVTSEL (the monitoring event select, per CPU on
// Intel), STLB_QOS_INFO and IA32_CORE_CAPABILITIES (STLB QoS, Appendix B).
TEST_CASE("the register dump shows every register the platform has, by feature") {
  auto has = [](const std::vector<RegisterValue>& dump, unsigned cpu, uint32_t msr,
                const std::string& group) -> std::optional<uint64_t> {
    for (const auto& r : dump)
      if (r.mmio_bytes == 0 && r.cpu == cpu && r.msr == msr) {
        CHECK(r.group == group);
        return r.value;
      }
    return std::nullopt;
  };
  auto gnr = machine("intel-gnr-io");
  REQUIRE(gnr.write(0, IA32_L3_IO_RDT_CFG, L3_IO_RDT_CFG_IRAE | L3_IO_RDT_CFG_IRME).ok());
  REQUIRE(gnr.write(1, IA32_QM_EVTSEL, (5ULL << 32) | 2).ok());
  REQUIRE(gnr.mmio_write(0xfed10000 + 2, 2, 3).ok());  // IO_PQR_CLOS1 of the NIC's link
  auto dump = gnr.dump_all_registers();
  CHECK(has(dump, 0, IA32_PQR_ASSOC, "pqr") == 0ULL);
  CHECK(has(dump, 0, IA32_L3_MASK_0, "l3_cat") == 0x7fffULL);
  CHECK(has(dump, 0, IA32_L3_IO_RDT_CFG, "io_rdt") == 3ULL);
  CHECK(has(dump, 4, IA32_L3_IO_RDT_CFG, "io_rdt") == 0ULL);
  CHECK(has(dump, 1, IA32_QM_EVTSEL, "monitoring") == ((5ULL << 32) | 2));
  CHECK(has(dump, 0, MBA_CFG, "mba").has_value());
  unsigned mmio = 0;
  bool clos1 = false;
  for (const auto& r : dump) {
    if (r.mmio_bytes == 0) continue;
    ++mmio;
    CHECK(std::string(r.group) == "io_rdt");
    if (r.mmio_addr == 0xfed10002) clos1 = r.value == 3 && r.mmio_bytes == 2;
  }
  CHECK(mmio > 4);
  CHECK(clos1);
  auto stlb = machine("intel-stlb");
  dump = stlb.dump_all_registers();
  CHECK(has(dump, 0, STLB_QOS_INFO, "stlb") == 0x60070007ULL);
  CHECK(has(dump, 0, IA32_CORE_CAPABILITIES, "stlb") == 1ULL);
  CHECK(has(dump, 0, STLB_QOS_MASK_0, "stlb") == 0xffULL);
  // Absent where the platform has none of it.
  auto two = machine("intel-2s");
  dump = two.dump_all_registers();
  CHECK_FALSE(has(dump, 0, IA32_L3_IO_RDT_CFG, "io_rdt").has_value());
  CHECK_FALSE(has(dump, 0, STLB_QOS_INFO, "stlb").has_value());
  CHECK(has(dump, 0, IA32_QM_EVTSEL, "monitoring").has_value());
  // The controls-only dump the tests compare with the tree keeps its set.
  for (const auto& r : two.dump_registers()) CHECK(r.msr != IA32_QM_EVTSEL);
}

TEST_CASE("raw CPUID leaves in a profile override the synthesised ones") {
  auto p = sim::parse_profile(R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}, {"cpu": 1}],
      "l3_size_bytes": 8388608,
      "cpuid": {"0x7.0": ["0", "0x8000", "0", "0"], "0x10.0": ["0", "0x2", "0", "0"],
                "0x10.1": ["0x0000000a", "0x00000600", "0x00000004", "0x0000000f"]}})",
                              "raw");
  REQUIRE(p.ok());
  sim::SimMachine m(*p);
  const Resource& l3 = m.info().res(ResourceId::L3);
  CHECK(l3.alloc_capable);
  CHECK(l3.cache.cbm_len == 11);
  CHECK(l3.cache.shareable_bits == 0x600);
  CHECK(l3.cache.cdp_capable);
  CHECK(l3.num_closid == 16);
  CHECK(l3.cache.cache_size_bytes == 8u << 20);
}

TEST_CASE("malformed profiles are refused with a message") {
  const char* bad[] = {
      "not json",
      R"({"cpus": [{"cpu": 0}]})",
      R"({"vendor": "GenuineIntel"})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}, {"cpu": 0}]})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "l3_cat": {"cbm_len": 40, "num_closid": 4}})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "mb": {"num_closid": 4, "bw_len": 11}})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "l3_mon": {"num_rmids": 8, "events": ["x"]}})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], "cpuid": {"zz.0": [1, 2, 3, 4]}})",
  };
  for (const char* text : bad) {
    INFO(text);
    auto p = sim::parse_profile(text, "bad");
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == EINVAL);
    CHECK_FALSE(p.error().message.empty());
  }
}

// A profile is outside input. json::value() once threw on a key of
// another type ("package": "0"), and numbers were cast without a range check.
TEST_CASE("profiles with wrong types, huge numbers or deep nesting are refused", "[profile]") {
  const std::string cpu0 = R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}], )";
  const std::string bad[] = {
      R"({"vendor": 7, "cpus": [{"cpu": 0}]})",
      R"({"vendor": "GenuineIntel", "cpus": {"cpu": 0}})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0, "package": "0"}]})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0, "l3": -1}]})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0, "node": 1e300}]})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 18446744073709551615}]})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": " 1"}]})",
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": "-1"}]})",
      cpu0 + R"("family": 99999999999999999999})",
      cpu0 + R"("model": 256})",
      cpu0 + R"("l3_size_bytes": 18446744073709551615})",
      cpu0 + R"("l3_cat": [])",
      cpu0 + R"("l3_cat": {"cbm_len": 11, "num_closid": 4, "cdp": "yes"}})",
      cpu0 + R"("l3_cat": {"cbm_len": 11, "num_closid": 4, "shareable_bits": 4294967296}})",
      cpu0 + R"("mba": {"num_closid": 8, "linear": 1}})",
      cpu0 + R"("l3_mon": {"num_rmids": 8, "events": "llc_occupancy"}})",
      cpu0 + R"("l3_mon": {"num_rmids": 8, "events": [7]}})",
      cpu0 + R"("l3_mon": {"num_rmids": 8, "scale": 4294967296}})",
      cpu0 + R"("cpuid": {"0x10.1": [1, 2, 3, 4294967296]}})",
      cpu0 + R"("cpuid": {"0x100000000.0": [1, 2, 3, 4]}})",
      cpu0 + R"("cpuid": {"0x10.1": [1, 2, 3]}})",
      cpu0 + R"("cpuid": {"0x10.-1": [1, 2, 3, 4]}})",
      cpu0 + R"("sim": []})",
      cpu0 + R"("sim": {"mem_bandwidth_mbps": "fast"}})",
      cpu0 + R"("sim": {"occupancy_fill_ms": 1e300}})",
      cpu0 + R"("sim": {"mbm_hw_counters": -1}})",
      cpu0 + R"("telemetry": [{"guid": "0x26696143", "package": 99999}]})",
      cpu0 + R"("x": )" + std::string(100000, '[') + "}",
      std::string(100000, '['),
      cpu0.substr(0, 30),  // truncated
      std::string("\x00\x01\xfe\xff", 4),
      R"({"vendor": "Genuine\u00ffntel", "cpus": [{"cpu": 0}], "rdt": "\xff"})",
  };
  for (const std::string& text : bad) {
    INFO(text.substr(0, 200));
    Result<sim::Profile> p = Error::make(0);
    REQUIRE_NOTHROW(p = sim::parse_profile(text, "bad"));
    REQUIRE_FALSE(p.ok());
    CHECK(p.error().code == EINVAL);
    CHECK(p.error().message.rfind("platform profile: ", 0) == 0);
  }
  // The message names the value.
  auto p = sim::parse_profile(
      R"({"vendor": "GenuineIntel", "cpus": [{"cpu": 0}, {"cpu": 1, "package": "0"}]})", "bad");
  REQUIRE_FALSE(p.ok());
  CHECK(p.error().message ==
        "platform profile: $.cpus[1].package: must be an integer in 0..4095, not a string");
  // Hex strings stay accepted where numbers are.
  CHECK(sim::parse_profile(cpu0 + R"("l3_cat": {"cbm_len": "0xb", "num_closid": 4}})", "ok").ok());
}
