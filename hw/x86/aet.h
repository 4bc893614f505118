// Defines Intel Application Energy Telemetry (AET) for the x86 Arch: the
// layouts of the per-RMID telemetry aggregators Linux knows (by GUID, from
// Intel's PMT XML descriptions), and AetTelemetry, which turns a machine's
// aggregators into the PERF_PKG monitor resource and reads its counters.
//
// Aggregator layout (every known GUID): num_rmids blocks of num_events
// 64-bit counters, block r holding RMID r's counters in the group's event
// order, followed by num_extra_status status words. Each counter word has a
// valid bit (set once the aggregator has data for that RMID) and 63 data
// bits; energy and activity are fixed point with binary_bits fraction bits.
#pragma once

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "hw/arch.h"
#include "hw/device.h"
#include "hw/x86/cpuid_decode.h"

namespace resctrlfs::hw::x86 {

inline constexpr uint64_t PMT_DATA_VALID = uint64_t{1} << 63;
inline constexpr uint64_t PMT_DATA_MASK = PMT_DATA_VALID - 1;

// GUIDs of the known per-RMID aggregators.
inline constexpr uint32_t AET_GUID_CWF_ENERGY = 0x26696143;  // Clearwater Forest
inline constexpr uint32_t AET_GUID_CWF_PERF = 0x26557651;
inline constexpr uint32_t AET_GUID_DMR_ENERGY = 0x47903099;  // Diamond Rapids
inline constexpr uint32_t AET_GUID_DMR_PERF = 0x1415910a;

// The GUID in an rdt= token's "perf:<guid>": up to 8 hex digits, "0x"
// optional; nothing for anything else.
std::optional<uint32_t> parse_aet_guid(std::string_view hex);

struct AetEventDesc {
  EventId id;
  unsigned idx;          // counter index within an RMID's block
  unsigned binary_bits;  // fixed-point fraction bits, 0 for counts
};

struct AetEventGroup {
  PmtFeature feature;
  uint32_t guid;
  unsigned num_rmids;  // RMIDs the layout has blocks for
  unsigned num_extra_status;
  std::vector<AetEventDesc> events;

  unsigned num_events() const { return static_cast<unsigned>(events.size()); }
  // Bytes of MMIO an aggregator with this layout has.
  uint64_t mmio_size() const {
    return (uint64_t{num_rmids} * num_events() + num_extra_status) * sizeof(uint64_t);
  }
  // Byte offset of RMID `rmid`'s counter with index `idx`.
  uint64_t counter_offset(uint32_t rmid, unsigned idx) const {
    return (uint64_t{rmid} * num_events() + idx) * sizeof(uint64_t);
  }
};

// The known layouts, in the order Linux tries them (energy groups first).
const std::vector<AetEventGroup>& aet_event_groups();
// The known layout with `guid`, or null.
const AetEventGroup* aet_event_group(uint32_t guid);

// The PERF_PKG resource of one machine.
class AetTelemetry {
 public:
  // Enumerates `dev`'s aggregators against the known layouts, as Linux
  // does: an aggregator is used only if its GUID is known, its package
  // exists and its size matches the layout; a layout is enabled only if
  // every usable aggregator tracks at least the layout's RMIDs, and then
  // enables those of its events no earlier layout enabled. Fills
  // info.res(ResourceId::PERF_PKG).mon (events in event-id order, num_rmids the smallest of the
  // enabled layouts', one monitor domain per package with online CPUs).
  // `rdt` is the rdt= boot parameter: "energy", "perf", "energy:<hex guid>"
  // force layouts on (then one with too few RMIDs is used with the RMIDs
  // its aggregators have) and "!energy", ... force them off.
  AetTelemetry(std::shared_ptr<PmtTelemetryDevice> dev, PlatformInfo& info,
               const RdtOptions& rdt = {});

  // Sum of the valid counters of `ev` for `rmid` over the aggregators of
  // `package_id` (see Arch::read_perf_pkg_event).
  CounterValue read(int package_id, uint32_t rmid, EventId ev);

 private:
  struct Enabled {
    const AetEventGroup* group;
    std::vector<size_t> regions;  // indexes into dev_->pmt_regions()
  };
  std::shared_ptr<PmtTelemetryDevice> dev_;
  std::vector<PmtRegion> regions_;
  std::vector<Enabled> enabled_;
  // For each event id: which enabled layout and which of its events.
  struct Owner {
    int enabled = -1;
    const AetEventDesc* desc = nullptr;
  };
  Owner owner_[static_cast<int>(EventId::PCNT) + 1];
};

}  // namespace resctrlfs::hw::x86
