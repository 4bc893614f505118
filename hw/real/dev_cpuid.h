// Defines DevCpuidSource: CPUID of a logical CPU read from the kernel's
// /dev/cpu/N/cpuid (pread of 16 bytes at offset leaf | subleaf << 32), with
// the CPUID instruction of the calling CPU as a fallback when the device is
// missing or unreadable (RDT/PQoS leaves are identical on every CPU); and
// what a machine's CPUID says of it before any backend is built.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "base/result.h"
#include "hw/x86/device.h"
#include "hw/x86/platform.h"

namespace resctrlfs::hw::real {

class DevCpuidSource final : public CpuidSource {
 public:
  // `instruction_fallback` false: a missing device reads as all-zero leaves
  // (an emulated /dev/cpu must not be mixed with this machine's CPUID).
  explicit DevCpuidSource(std::string dev_root = "/dev/cpu", bool instruction_fallback = true)
      : root_(std::move(dev_root)), fallback_(instruction_fallback) {}
  ~DevCpuidSource() override;
  CpuidRegs cpuid(unsigned cpu, uint32_t leaf, uint32_t subleaf) const override;

 private:
  std::string root_;
  bool fallback_ = true;
  mutable std::mutex mu_;
  mutable std::map<unsigned, int> fds_;  // lazily opened, -1 when unavailable
};

}  // namespace resctrlfs::hw::real

namespace resctrlfs::hw {

// A /proc/cpuinfo "flags" line holding the RDT/PQoS flags that the CPUID of
// the first online CPU under `hw_root` (see make_msr_backend) enumerates,
// before any rdt= option: the evidence resctrlfsd --rdt-from-cpuid checks
// instead of the kernel's /proc/cpuinfo.
Result<std::string> cpuinfo_flags_from_cpuid(const std::string& hw_root);

// The x86 identity (vendor, family, model, the cpuinfo RDT flags, before
// any rdt= option) that the CPUID of the CPUs under `hw_root` enumerates,
// on the topology of hw_root's sysfs, as cpuinfo_flags_from_cpuid() reads
// it: what /proc/cpuinfo would show on that machine. The sandbox shows it
// when the daemon it starts drives such a machine.
Result<x86::X86Platform> x86_platform_from_cpuid(const std::string& hw_root);

}  // namespace resctrlfs::hw
