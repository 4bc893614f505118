// Defines how resctrl presents monitoring events to user space: the name of
// each event (the file names under mon_data, the lines of mon_features and
// the mba_MBps_event file) and how a fixed-point counter value is printed.
// The kernel keeps both in fs/resctrl, not in the architecture: an Arch
// reports event ids and raw values (hw/arch.h), fs/ names and prints them.
#pragma once

#include <cstdint>
#include <string>

#include "hw/arch.h"

namespace resctrlfs::fs {

// The event's name as resctrl prints it ("llc_occupancy",
// "mbm_total_bytes", "core_energy", ...).
const char* event_name(hw::EventId e);

// A fixed-point value with `binary_bits` fraction bits as resctrl prints it:
// "<integer>.<fraction>\n", the fraction rounded to nearest with
// ceil(binary_bits * log10(2)) digits (one digit when binary_bits is 0).
// More than hw::kMaxBinaryBits bits are treated as that many.
std::string format_fixed_point(uint64_t val, unsigned binary_bits);

}  // namespace resctrlfs::fs
