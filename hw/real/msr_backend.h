// Defines the pieces of the real backend that tests reach directly:
// building an Arch from any CPUID source and topology over a broker socket.
#pragma once

#include <string>

#include "hw/backend.h"
#include "hw/x86/device.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/pmt_sysfs.h"

namespace resctrlfs::hw::real {

// make_msr_backend() with the CPUID source and topology given: refuses
// (ENODEV) a platform without RDT/PQoS, or one whose features `rdt` and
// Linux's model quirks all turn off, then connects to the broker. `pmt`:
// the machine's telemetry aggregators (read_pmt_aggregators()), whose
// counters are read through the broker; with none, no PERF_PKG.
Result<Backend> make_msr_backend_with(const CpuidSource& cpuid, const x86::Topology& topo,
                                      const std::string& broker_socket,
                                      const x86::RdtOptions& rdt = {},
                                      std::vector<x86::PmtAggregator> pmt = {});

}  // namespace resctrlfs::hw::real
