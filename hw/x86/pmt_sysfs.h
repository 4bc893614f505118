// Finds this machine's Intel PMT per-RMID telemetry aggregators where
// Linux's intel_pmt class driver publishes them: one directory
// ROOT/sys/class/intel_pmt/telem<N> per aggregator, with `guid` (text,
// "0x%x"), `size` (bytes, decimal), `offset` and `telem`, the aggregator's
// counters as a binary file read with pread at byte offsets (root only).
// Used by the real backend (which reads only the world-readable
// attributes and asks the broker for the counters) and by the MSR broker
// (whose policy serves reads of exactly these aggregators).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hw/x86/cpuid_decode.h"
#include "hw/x86/device.h"

namespace resctrlfs::hw::x86 {

struct PmtAggregator {
  unsigned telem = 0;     // N of telem<N>
  PmtRegion region;       // its layout's feature and RMIDs, its GUID, size, package
  std::string data_path;  // ROOT/sys/class/intel_pmt/telem<N>/telem
};

// Every telem<N> under `root` (empty or "/": the machine's own sysfs) whose
// GUID is a known AET layout (hw/x86/aet.h) and whose size is that
// layout's, in ascending N, with the physical package it belongs to (from
// `topo`). An aggregator of another GUID (platform telemetry that is not
// per RMID) is passed over silently; one whose attributes cannot be read or
// make no sense, whose size does not match its layout, or whose package
// cannot be told, is left out with a line to `log`. Never fails: a machine
// without the driver has no aggregators.
std::vector<PmtAggregator> read_pmt_aggregators(const std::string& root, const Topology& topo,
                                                const std::function<void(const std::string&)>& log);

}  // namespace resctrlfs::hw::x86
