// Tests the decoding of AMD Lightweight Profiling enumeration (CPUID
// 8000_0001h ECX[15], leaf 8000_001Ch) on a real family-15h CPUID dump, the
// "lwp" /proc/cpuinfo flag, and that processors without LWP decode as
// absent.
//
// Test vectors: real dumps of every family-15h generation: the AMD FX-8150
// (Bulldozer) of the VirtualBox CPU database, and the FX-8350 (Piledriver),
// A10-7850K (Steamroller), A12-9800 (Excavator) and an Opteron 6344 of
// libcpuid's test corpus (see the source notes in tests/hw/data/). The
// field layout is the LWP
// specification's (AMD pub. 43724) as also tabulated by a second public
// source (the CPUID field table of the ccpuid.h header: LwpAvail..LwpInt in
// EAX/EDX, LwpCbSize/EventSize/MaxEvents/EventOffset in EBX, LwpLatencyMax,
// DataAddress, LatencyRnd, Version, MinBufferSize, BranchPrediction,
// IpFiltering, CacheLevels, CacheLatency in ECX); the decoded values are
// cross-checked against each other (the LWPCB size equals the first event
// slot's offset plus one 8-byte slot per event) and against the same
// part's MSR table (LWP_CFG reads 0, which is why EAX, the copy of its
// enable mask, is 0). A second public source for the decoded values: the
// shipped LWPCB as rr's LWP tick source lays it out (run on a Piledriver)
// has 3 event slots starting at byte 128, which is what this part's EBX
// says (LwpMaxEvents 3, LwpEventOffset 128, LwpCbSize 19 quadwords); it
// counted branches retired (event 3) with the threshold interrupt there,
// the EDX bits 3 and 31 these dumps show.
//
// Continuous mode and PTSC (8000_001Ch EDX bits 29 and 30, LwpCont and
// LwpPTSC) are set on Steamroller and Excavator and clear on Bulldozer and
// Piledriver. The libcpuid dumps are not the only source: InstLatX64's
// public collection of AIDA64 CPUID dumps (github.com/InstLatx64/
// InstLatx64, folder AuthenticAMD/, files AuthenticAMD0<signature>_K15_*
// _CPUID.txt) holds the same leaf, read on other machines, for every
// family-15h model: EDX 8000000Fh on all of models 00h-1Fh (FX-6100,
// FX-8150, FX-8350, A10-5800K, A10-6800K, Interlagos, Abu Dhabi) and
// E000000Fh on all of models 30h-7Fh (A10-7850K Kaveri, A10 Pro-7350B,
// Bald Eagle, Godavari, FX-8800P Carrizo, A12-9800 Bristol Ridge, Stoney
// Ridge), EBX 80032013h and ECX 00010200h on all. The test below checks
// our vectors' leaf against four of those dumps. The bit positions are
// also those of the x86-cpuid-db leaf tables that Linux's kcpuid reads
// (lwp_cont bit 29, lwp_ptsc bit 30). We found no AMD manual text (a
// family-15h BKDG) saying which models set the two bits; the model split
// above is what the dumps show.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <sstream>

#include "base/lwp_format.h"
#include "cpuid_dump.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/lwp_cpuid.h"
#include "hw/x86/registers.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;
using namespace resctrlfs::hw::x86;

namespace {

Topology one_cpu() {
  Topology t;
  t.nr_cpus = 1;
  t.online = CpuMask(1);
  t.online.set(0);
  t.package = {0};
  t.l2_id = {0};
  t.l3_id = {0};
  return t;
}

}  // namespace

TEST_CASE("FX-8150 (Bulldozer) LWP enumeration decodes field by field") {
  DumpSource src("amd-fx-8150-bulldozer.cpuid");
  LwpCaps c = decode_lwp(src, 0);
  REQUIRE(c.present);  // 8000_0001h ECX = 0x01c9bfff, bit 15 set
  // EAX: nothing enabled (LWP_CFG reads 0 on that machine).
  CHECK(c.enabled.raw == 0);
  CHECK_FALSE(c.enabled.avail);
  // EDX = 0x8000000f: available, LWPVAL, instructions and branches retired,
  // threshold interrupt; no DCache-miss event on this first part.
  CHECK(c.supported.avail);
  CHECK(c.supported.val);
  CHECK(c.supported.ire);
  CHECK(c.supported.bre);
  CHECK_FALSE(c.supported.dme);
  CHECK_FALSE(c.supported.cnh);
  CHECK_FALSE(c.supported.rnh);
  CHECK_FALSE(c.supported.cont);
  CHECK_FALSE(c.supported.ptsc);
  CHECK(c.supported.interrupt);
  // EBX = 0x80032013.
  CHECK(c.cb_size_bytes == 0x13 * 8);
  CHECK(c.event_size == 32);
  CHECK(c.max_events == 3);
  CHECK(c.event_offset == 0x80);
  CHECK(c.cb_size_bytes == c.event_offset + 8 * c.max_events);  // cross-check
  // The second source: the shipped LWPCB as software that ran LWP on these
  // parts lays it out (base/lwp_format.h) puts 3 slots at offset 128.
  CHECK(c.event_offset == lwp::kShippedEventOffset);
  CHECK(lwp::encode_shipped_lwpcb(lwp::ShippedLwpcb{.events = {{}, {}, {}}}, c.event_offset)
            ->size() == c.cb_size_bytes);
  // ECX = 0x00010200.
  CHECK(c.latency_max_bits == 0);
  CHECK_FALSE(c.data_address);
  CHECK(c.latency_rnd_bits == 0);
  CHECK(c.version == 1);
  CHECK(c.min_buffer_records == 32);
  CHECK_FALSE(c.branch_prediction);
  CHECK_FALSE(c.ip_filtering);
  CHECK_FALSE(c.cache_levels);
  CHECK_FALSE(c.cache_latency);
  // The encoder gives back the leaf as read.
  CHECK(c.encode() == c.raw);
  CHECK(c.raw == CpuidRegs{0x00000000, 0x80032013, 0x00010200, 0x8000000f});
}

TEST_CASE("FX-8150 shows the lwp cpuinfo flag and no RDT") {
  DumpSource src("amd-fx-8150-bulldozer.cpuid");
  X86Platform i = decode_platform(src, one_cpu());
  CHECK(i.vendor == "AuthenticAMD");
  CHECK(i.family == 0x15);
  CHECK(i.model == 0x01);
  CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"lwp"});
  CHECK_FALSE(i.res(ResourceId::L3).alloc_capable);
  CHECK_FALSE(i.res(ResourceId::L3).mon.capable);
}

// Piledriver, Steamroller and Excavator, from libcpuid's test corpus (see
// each file's source note). The same leaf on the FX-8150 in that corpus is
// byte for byte the VirtualBox database's, a second source for the
// Bulldozer vector above.
TEST_CASE("LWP enumeration of Piledriver, Steamroller and Excavator decodes field by field") {
  struct Part {
    const char* file;
    unsigned model;
    bool cont_ptsc;  // continuous mode and PTSC: EDX bits 29 and 30
  };
  const Part parts[] = {{"amd-fx-8350-piledriver.cpuid", 0x02, false},
                        {"amd-a10-7850k-steamroller.cpuid", 0x30, true},
                        {"amd-a12-9800-excavator.cpuid", 0x65, true}};
  for (const Part& p : parts) {
    CAPTURE(p.file);
    DumpSource src(p.file);
    X86Platform i = decode_platform(src, one_cpu());
    CHECK(i.family == 0x15);
    CHECK(i.model == p.model);
    CHECK(cpuinfo_rdt_flags(i) == std::vector<std::string>{"lwp"});
    LwpCaps c = decode_lwp(src, 0);
    REQUIRE(c.present);
    CHECK(c.enabled.raw == 0);  // the OS has not enabled it (Linux never does)
    CHECK(c.supported.avail);
    CHECK(c.supported.val);
    CHECK(c.supported.ire);
    CHECK(c.supported.bre);
    CHECK_FALSE(c.supported.dme);  // no shipped part counts DCache misses
    CHECK_FALSE(c.supported.cnh);
    CHECK_FALSE(c.supported.rnh);
    CHECK(c.supported.cont == p.cont_ptsc);
    CHECK(c.supported.ptsc == p.cont_ptsc);
    CHECK(c.supported.interrupt);
    // EBX and ECX are the same on every family-15h part: 3 slots at byte
    // 128 of a 152-byte LWPCB, 32-byte records, version 1, 32 records
    // minimum, no filtering or latency capabilities.
    CHECK(c.cb_size_bytes == 152);
    CHECK(c.event_size == 32);
    CHECK(c.max_events == 3);
    CHECK(c.event_offset == lwp::kShippedEventOffset);
    CHECK(c.version == 1);
    CHECK(c.min_buffer_records == 32);
    CHECK(c.latency_max_bits == 0);
    CHECK_FALSE(c.data_address);
    CHECK_FALSE(c.ip_filtering);
    CHECK(c.encode() == c.raw);
  }
}

// InstLatX64's AIDA64 dumps of the same four parts (see the header
// comment): a second, independent record of leaf 8000_001Ch on each.
TEST_CASE("leaf 8000_001Ch of every generation agrees with a second public dump collection") {
  struct Part {
    const char* file;
    const char* instlat;  // InstLatX64's file, AuthenticAMD/...
    CpuidRegs leaf;       // its "CPUID 8000001C" line
    bool cont_ptsc;
  };
  const Part parts[] = {
      {"amd-fx-8150-bulldozer.cpuid",
       "AuthenticAMD0600F12_K15_Zambezi8C_CPUID.txt",
       {0x00000000, 0x80032013, 0x00010200, 0x8000000F},
       false},
      {"amd-fx-8350-piledriver.cpuid",
       "AuthenticAMD0600F20_K15_Vishera_CPUID.txt",
       {0x00000000, 0x80032013, 0x00010200, 0x8000000F},
       false},
      {"amd-a10-7850k-steamroller.cpuid",
       "AuthenticAMD0630F01_K15_Kaveri_CPUID.txt",
       {0x00000000, 0x80032013, 0x00010200, 0xE000000F},
       true},
      {"amd-a12-9800-excavator.cpuid",
       "AuthenticAMD0660F51_K15_BristolRidge_CPUID.txt",
       {0x00000000, 0x80032013, 0x00010200, 0xE000000F},
       true},
  };
  for (const Part& p : parts) {
    CAPTURE(p.file, p.instlat);
    DumpSource src(p.file);
    const CpuidRegs ours = src.cpuid(0, 0x8000001c, 0);
    CHECK(ours.eax == p.leaf.eax);
    CHECK(ours.ebx == p.leaf.ebx);
    CHECK(ours.ecx == p.leaf.ecx);
    CHECK(ours.edx == p.leaf.edx);
    const LwpFeatureBits hw = LwpFeatureBits::decode(p.leaf.edx);
    CHECK(hw.cont == p.cont_ptsc);
    CHECK(hw.ptsc == p.cont_ptsc);
    CHECK(hw.interrupt);
  }
}

TEST_CASE(
    "an Opteron 6344 whose 8000_0001h ECX[15] is clear has no LWP, whatever 8000_001Ch says") {
  DumpSource src("amd-opteron-6344-piledriver.cpuid");
  LwpCaps c = decode_lwp(src, 0);
  CHECK_FALSE(c.present);
  CHECK(cpuinfo_rdt_flags(decode_platform(src, one_cpu())).empty());
}

TEST_CASE("LWP is absent without 8000_0001h ECX[15], below leaf 8000_001Ch, or off AMD") {
  SECTION("Zen (EPYC 7551) has no LWP") {
    DumpSource src("amd-epyc-7551-naples.cpuid");
    CHECK_FALSE(decode_lwp(src, 0).present);
    CHECK(cpuinfo_rdt_flags(decode_platform(src, one_cpu())).empty());
  }
  SECTION("the presence bit alone decides, whatever leaf 8000_001Ch holds") {
    DumpSource src("amd-fx-8150-bulldozer.cpuid");
    src.set(0x80000001, 0, CpuidRegs{0x00600f12, 0x10000000, 0x01c93fff, 0x2fd3fbff});
    LwpCaps c = decode_lwp(src, 0);
    CHECK_FALSE(c.present);
    CHECK(c.max_events == 0);
  }
  SECTION("extended leaves ending below 8000_001Ch") {
    DumpSource src("amd-fx-8150-bulldozer.cpuid");
    src.set(0x80000000, 0, CpuidRegs{0x8000001b, 0x68747541, 0x444d4163, 0x69746e65});
    CHECK_FALSE(decode_lwp(src, 0).present);
  }
  SECTION("an Intel part never has LWP") {
    DumpSource src("intel-xeon-gold-6252-cascadelake-sp.cpuid");
    src.set(0x80000001, 0, CpuidRegs{0, 0, 1U << 15, 0});
    CHECK_FALSE(decode_lwp(src, 0).present);
  }
}

TEST_CASE("LWP capability leaf encodes and decodes every field") {
  LwpCaps c;
  c.present = true;
  c.enabled = LwpFeatureBits::decode(0xE000007F);
  c.supported = LwpFeatureBits::decode(0xE000007F);
  c.cb_size_bytes = 0xA8;
  c.event_size = 32;
  c.max_events = 5;
  c.event_offset = 0x80;
  c.latency_max_bits = 12;
  c.data_address = true;
  c.latency_rnd_bits = 4;
  c.version = 1;
  c.min_buffer_records = 64;
  c.branch_prediction = true;
  c.ip_filtering = true;
  c.cache_levels = true;
  c.cache_latency = true;
  CpuidRegs r = c.encode();
  CHECK(r == CpuidRegs{0xE000007F, 0x800520'15, 0xF002'032C, 0xE000007F});
  for (unsigned id = 1; id <= 6; ++id) CHECK(c.supported.event(id));
  CHECK_FALSE(c.supported.event(7));
  CHECK(c.supported.encode() == 0xE000007F);
}
