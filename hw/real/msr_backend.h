// Defines the real x86 backend: an Arch over the machine's MSRs through the
// resctrl-msrd broker, the CPUID evidence and preconditions resctrlfsd
// checks before it, and (for tests) building that Arch from any CPUID source
// and topology over a broker socket. hw/platform_factory.cc is its one user
// outside hw/ and the tests.
#pragma once

#include <string>
#include <string_view>

#include "hw/backend.h"
#include "hw/x86/cpuid_decode.h"
#include "hw/x86/device.h"
#include "hw/x86/platform.h"
#include "hw/x86/pmt_sysfs.h"

namespace resctrlfs::hw {

// Builds the real backend: CPUID from /dev/cpu/N/cpuid, MSRs through the
// broker listening on `broker_socket`. Refuses (ENODEV with a clear message)
// when the CPU has no RDT/PQoS. `rdt` is the kernel's rdt= boot parameter:
// like Linux, a Skylake/Cascade Lake server shows no L3 CAT without "l3cat".
// `hw_root` is where /dev/cpu and /sys/devices/system/cpu are found ("/"
// on a real machine; elsewhere, as in the tests' emulation of the CPU
// drivers, CPUID comes only from ROOT/dev/cpu, never from the instruction).
Result<Backend> make_msr_backend(const std::string& broker_socket, const std::string& rdt = "",
                                 const std::string& hw_root = "/");

// The real backend must not run next to a kernel resctrl (both would
// program the same registers) nor on a CPU without RDT/PQoS. Takes the text
// of /proc/mounts and /proc/cpuinfo.
Result<void> check_msr_preconditions(std::string_view proc_mounts, std::string_view cpuinfo);

}  // namespace resctrlfs::hw

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
