// Implements the presentation of monitoring events (fs/events.h).
#include "fs/events.h"

#include <cstdio>

namespace resctrlfs::fs {

const char* event_name(hw::EventId e) {
  using hw::EventId;
  switch (e) {
    case EventId::LLC_OCCUPANCY:
      return "llc_occupancy";
    case EventId::MBM_TOTAL:
      return "mbm_total_bytes";
    case EventId::MBM_LOCAL:
      return "mbm_local_bytes";
    case EventId::CORE_ENERGY:
      return "core_energy";
    case EventId::ACTIVITY:
      return "activity";
    case EventId::STALLS_LLC_HIT:
      return "stalls_llc_hit";
    case EventId::C1_RES:
      return "c1_res";
    case EventId::UNHALTED_CORE_CYCLES:
      return "unhalted_core_cycles";
    case EventId::STALLS_LLC_MISS:
      return "stalls_llc_miss";
    case EventId::AUTO_C6_RES:
      return "c6_res";
    case EventId::UNHALTED_REF_CYCLES:
      return "unhalted_ref_cycles";
    case EventId::UOPS_RETIRED:
      return "uops_retired";
    case EventId::INST_RETIRED:
      return "inst_retired";
    case EventId::PCNT:
      return "pcnt";
  }
  return "unknown";
}

namespace {

// Decimal places shown for a value with `bits` binary fraction bits:
// ceil(bits * log10(2)), and one place for an integer shown as a fraction.
constexpr unsigned kDecPlaces[hw::kMaxBinaryBits + 1] = {1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4,
                                                         5, 5, 5, 6, 6, 6, 7, 7, 7, 7, 8, 8, 8, 9};

}  // namespace

std::string format_fixed_point(uint64_t val, unsigned bits) {
  if (bits > hw::kMaxBinaryBits) bits = hw::kMaxBinaryBits;
  const unsigned places = kDecPlaces[bits];
  uint64_t frac = 0;
  if (bits != 0) {
    // The fraction scaled to `places` decimal digits, rounded to nearest.
    // It never reaches 10^places because 10^places >= 2^bits.
    uint64_t pow10 = 1;
    for (unsigned i = 0; i < places; ++i) pow10 *= 10;
    frac = (val & ((uint64_t{1} << bits) - 1)) * pow10;
    frac += uint64_t{1} << (bits - 1);
    frac >>= bits;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%llu.%0*llu\n", static_cast<unsigned long long>(val >> bits),
                static_cast<int>(places), static_cast<unsigned long long>(frac));
  return buf;
}

}  // namespace resctrlfs::fs
